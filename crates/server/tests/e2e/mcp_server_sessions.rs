//! The MCP server's session records on both transports: the handshake before any request, the
//! record's fields and states (created → initialized → closed | expired) in the log, 404 with
//! the reason after DELETE or the idle TTL, and one bound on live sessions across transports.

use std::time::Duration;

use contract::envelope::is_millisecond_utc;
use serde_json::{Value, json};

use crate::harness::*;

/// The `mcp_session` log lines of one session, in order.
fn records(gw: &Gateway, session: &str) -> Vec<Value> {
    gw.log_lines()
        .into_iter()
        .filter(|l| l["target"] == "mcp_session" && l["session_id"] == session)
        .collect()
}

fn states(gw: &Gateway, session: &str) -> Vec<String> {
    records(gw, session)
        .iter()
        .map(|r| r["state"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn list_tools(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
}

async fn session_gateway(name: &str, ttl_secs: u64) -> Gateway {
    Gateway::start(
        name,
        &format!(
            "mcp: {{ session_ttl_secs: {ttl_secs} }}\nproviders:\n{}",
            everything_provider("everything")
        ),
    )
    .await
}

#[tokio::test]
async fn a_session_is_created_then_initialized_then_closed_and_gone() {
    let gw = session_gateway("session-life", 1800).await;
    let session = McpSession::initialize(&gw, "claude-code").await;
    // No request before the handshake is done.
    let early = session.post(list_tools(2)).await;
    assert_eq!(early.status(), 400);
    let early: Value = early.json().await.unwrap();
    assert_eq!(early["error"]["code"], -32600, "{early}");
    assert_eq!(early["error"]["data"]["code"], "INVALID_REQUEST");
    assert!(
        early["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Session not initialized"),
        "{early}"
    );
    // ping is allowed.
    let pong = session
        .ask(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .await;
    assert!(pong.get("result").is_some(), "{pong}");
    let done = session
        .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    assert!(done.status().is_success());
    let listed = session.ask(list_tools(4)).await;
    assert!(listed["result"]["tools"].as_array().unwrap().len() > 3);

    let ended = session
        .client
        .delete(&session.url)
        .header("mcp-session-id", &session.id)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    let gone = session.post(list_tools(5)).await;
    assert_eq!(gone.status(), 404);
    let gone: Value = gone.json().await.unwrap();
    assert_eq!(gone["error"]["data"]["session_state"], "closed", "{gone}");
    assert_eq!(gone["error"]["data"]["code"], "NOT_FOUND");
    assert_eq!(gone["id"], 5);

    assert_eq!(
        states(&gw, &session.id),
        ["created", "initialized", "closed"]
    );
    let record = records(&gw, &session.id).pop().unwrap();
    assert_eq!(record["transport"], "streamable-http");
    assert_eq!(record["client_name"], "claude-code");
    assert_eq!(record["client_version"], "0.9");
    for field in ["created_at", "last_activity_at", "expires_at"] {
        assert!(
            is_millisecond_utc(record[field].as_str().unwrap()),
            "{field}: {record}"
        );
    }
    let at = |f: &str| chrono::DateTime::parse_from_rfc3339(record[f].as_str().unwrap()).unwrap();
    assert_eq!(
        (at("expires_at") - at("last_activity_at")).num_seconds(),
        1800
    );
    assert!(at("last_activity_at") >= at("created_at"));
}

#[tokio::test]
async fn an_idle_session_expires_and_answers_404_on_both_transports() {
    let gw = session_gateway("session-ttl", 1).await;
    let session = McpSession::open(&gw).await;
    assert!(session.ask(list_tools(2)).await.get("result").is_some());
    // The sweep expires it once idle past the TTL (watched in the log, not by touching it).
    eventually(Duration::from_secs(10), "the session expires", || async {
        states(&gw, &session.id)
            .contains(&"expired".to_owned())
            .then_some(())
    })
    .await;
    let late = session.post(list_tools(3)).await;
    assert_eq!(late.status(), 404);
    let late: Value = late.json().await.unwrap();
    assert_eq!(late["error"]["data"]["session_state"], "expired", "{late}");
    assert!(
        late["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired after 1 s without activity"),
        "{late}"
    );
    // A new session works: the client re-initializes.
    let again = McpSession::open(&gw).await;
    assert!(again.ask(list_tools(2)).await.get("result").is_some());

    // Legacy SSE: the expired session's stream ends and its message URL answers 404.
    let client = reqwest::Client::new();
    let (mut stream, endpoint) = open_sse(&gw).await;
    let sse_id = endpoint.rsplit('=').next().unwrap().to_owned();
    let before = client
        .post(gw.url(&endpoint))
        .json(&list_tools(1))
        .send()
        .await
        .unwrap();
    assert_eq!(before.status(), 400, "no request before initialize");
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await;
    assert!(closed.is_ok(), "the expired session's stream ends");
    let late = client
        .post(gw.url(&endpoint))
        .json(&list_tools(2))
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), 404);
    assert_eq!(states(&gw, &sse_id), ["created", "expired"]);
    assert_eq!(records(&gw, &sse_id)[0]["transport"], "sse");
}

#[tokio::test]
async fn the_session_bound_counts_both_transports() {
    let extra = format!(
        // One client holds them all here: its own bound is the table's.
        "mcp: {{ max_sessions: 2, max_sessions_per_client: 2 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("bound", &extra).await;
    let first = McpSession::open(&gw).await;
    let client = reqwest::Client::new();
    let sse = client.get(gw.url("/sse")).send().await.unwrap();
    assert_eq!(sse.status(), 200);
    let refused = client.get(gw.url("/sse")).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["data"]["code"], "SERVICE_UNAVAILABLE");
    // Closing the SSE stream ends that session and makes room.
    drop(sse);
    eventually(
        Duration::from_secs(10),
        "room after the stream closed",
        || async {
            let next = client.get(gw.url("/sse")).send().await.unwrap();
            (next.status() == 200).then_some(())
        },
    )
    .await;
    assert!(first.ask(list_tools(2)).await.get("result").is_some());
}
