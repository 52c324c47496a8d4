//! The `mcp` provider against remote MCP servers: a Streamable HTTP upstream goes down and
//! comes back; an upstream session that expires is re-initialized, and only a call the
//! upstream refused (404) is sent again — never one that may have run; a legacy HTTP+SSE
//! upstream (`url` ending in `/sse`) is bridged, lost and found again.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

/// The `mcp_session` records the upstream gateway logged for sessions our gateway opened.
fn upstream_sessions(upstream: &Gateway, state: &str) -> Vec<String> {
    upstream
        .log_lines()
        .into_iter()
        .filter(|l| {
            l["target"] == "mcp_session"
                && l["client_name"] == "mcp-http-gateway"
                && l["state"] == state
        })
        .map(|l| l["session_id"].as_str().unwrap().to_owned())
        .collect()
}

/// The upstream's invocation records of `tool` (one per tools/call it ran).
fn upstream_runs(upstream: &Gateway, tool: &str) -> Vec<Value> {
    upstream
        .log_lines()
        .into_iter()
        .filter(|l| l["transport"] == "mcp" && l["tool"] == tool)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_upstream_session_is_reinitialized_and_only_unsent_calls_are_retried() {
    // The upstream is a gateway (its /mcp) whose sessions expire after 1 s idle.
    let upstream = Gateway::start(
        "upstream",
        &format!(
            "mcp: {{ session_ttl_secs: 1 }}\nproviders:\n  - {{ name: paged, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
            venv_python(),
            fixture("paged_dynamic_server.py")
        ),
    )
    .await;
    // Ours pings rarely, so its upstream session idles out between calls.
    let gw = Gateway::start(
        "downstream",
        &format!(
            "monitoring: {{ health_check_interval: 3600 }}\nlimits: {{ call_timeout_ms: 5000 }}\nproviders:\n  - {{ name: remote, kind: mcp, url: \"{}\" }}\n",
            upstream.url("/mcp")
        ),
    )
    .await;
    let first = call(&gw, "tool_a", json!({"text": "one"})).await;
    assert_eq!(
        first.body["data"]["content"][0]["text"], "tool_a:one",
        "{}",
        first.body
    );
    let session = upstream_sessions(&upstream, "initialized").pop().unwrap();
    eventually(
        Duration::from_secs(10),
        "the upstream session expires",
        || async {
            upstream_sessions(&upstream, "expired")
                .contains(&session)
                .then_some(())
        },
    )
    .await;

    // The next call meets a 404, re-initializes once and is sent again: it runs exactly once.
    let second = call(&gw, "tool_a", json!({"text": "two"})).await;
    assert_eq!(
        second.body["data"]["content"][0]["text"], "tool_a:two",
        "{}",
        second.body
    );
    let runs: Vec<Value> = upstream_runs(&upstream, "tool_a")
        .into_iter()
        .filter(|r| r["session_id"] != session.as_str())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["status"], "ok");
    let renewed = runs[0]["session_id"].as_str().unwrap().to_owned();
    assert_ne!(renewed, session);
    // Renewed inside the transport: the connection was never reported lost.
    assert!(
        !gw.logs().contains("MCP server unavailable"),
        "{}",
        gw.logs()
    );

    // A call that reached the tool is never sent again: end its session mid-call.
    let pending = {
        let url = gw.url("/call-tool");
        tokio::spawn(async move {
            let answer = reqwest::Client::new()
                .post(url)
                .json(&json!({"tool": "sleep", "arguments": {"seconds": 3}}))
                .send()
                .await
                .unwrap();
            Answer::from(answer).await
        })
    };
    eventually(
        Duration::from_secs(10),
        "the call runs upstream",
        || async {
            (get(&upstream, "/health").await.body["data"]["active_calls"] == 1).then_some(())
        },
    )
    .await;
    let ended = reqwest::Client::new()
        .delete(upstream.url("/mcp"))
        .header("mcp-session-id", &renewed)
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success());
    let cut = pending.await.unwrap();
    assert!(!cut.body["success"].as_bool().unwrap(), "{}", cut.body);
    assert_eq!(
        upstream_runs(&upstream, "sleep").len(),
        1,
        "the interrupted call ran once and was not retried"
    );
    // And the provider recovers for the next call.
    eventually(Duration::from_secs(20), "calls work again", || async {
        let again = call(&gw, "tool_a", json!({"text": "three"})).await;
        (again.body["data"]["content"][0]["text"] == "tool_a:three").then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_sse_upstream_is_bridged_lost_and_found_again() {
    let port = free_port();
    let upstream = start_everything_on("sse", port).await;
    let gw = Gateway::start(
        "via-sse",
        &format!(
            "monitoring: {{ health_check_interval: 10 }}\nproviders:\n  - {{ name: legacy, kind: mcp, url: \"http://127.0.0.1:{port}/sse\" }}\n"
        ),
    )
    .await;
    let health = get(&gw, "/health").await;
    assert_eq!(
        health.body["data"]["dependencies"]["legacy"]["status"], "connected",
        "{}",
        health.body
    );
    let echo = call(&gw, "echo", json!({"message": "über SSE ✓"})).await;
    echo.assert_envelope();
    assert_eq!(echo.body["data"]["content"][0]["text"], "Echo: über SSE ✓");
    let sum = call(&gw, "get-sum", json!({"a": 2, "b": 40})).await;
    assert!(
        sum.body["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42"),
        "{}",
        sum.body
    );
    let tools = get(&gw, "/tools").await;
    assert!(tools.body["data"]["tools"].as_array().unwrap().len() > 5);

    // Down: the dependency says so, naming the transport; calls fail fast.
    drop(upstream);
    let down = until_dependency(&gw, "legacy", "unavailable", Duration::from_secs(20))
        .await
        .report()["dependencies"]["legacy"]
        .clone();
    assert!(
        down["error"]
            .as_str()
            .unwrap()
            .contains(&format!("sse: http://127.0.0.1:{port}/sse")),
        "{down}"
    );
    // Back: the supervisor reconnects.
    let _upstream = start_everything_on("sse", port).await;
    eventually(Duration::from_secs(30), "calls work again", || async {
        let echo = call(&gw, "echo", json!({"message": "again"})).await;
        (echo.body["data"]["content"][0]["text"] == "Echo: again").then_some(())
    })
    .await;
}

#[tokio::test]
async fn streamable_http_upstream_down_and_back() {
    let port = free_port();
    let mut upstream = start_everything_on("streamableHttp", port).await;
    let extra = format!(
        "monitoring: {{ health_check_interval: 10 }}\nproviders:\n  - {{ name: remote, kind: mcp, url: \"http://127.0.0.1:{port}/mcp\", headers: {{ X-Trace: \"${{MHG_UNSET_VAR:-gateway}}\" }} }}\n"
    );
    let gw = Gateway::start("remote", &extra).await;
    let health = get(&gw, "/health").await;
    assert_eq!(
        health.body["data"]["dependencies"]["remote"]["status"], "connected",
        "{}",
        health.body
    );
    let a = call(&gw, "echo", json!({"message": "över http"})).await;
    a.assert_envelope();
    assert_eq!(a.body["data"]["content"][0]["text"], "Echo: över http");
    let a = call(&gw, "get-sum", json!({"a": 2, "b": 40})).await;
    assert!(
        a.body["data"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42")
    );

    // The upstream goes away: a call fails with EXECUTION_ERROR, health turns unavailable
    // (at the latest at the next periodic ping).
    let _ = upstream.0.kill();
    let _ = upstream.0.wait();
    let a = call(&gw, "echo", json!({"message": "anyone?"})).await;
    a.assert_envelope();
    assert_eq!(a.code(), "EXECUTION_ERROR", "{}", a.body);
    until_dependency(&gw, "remote", "unavailable", Duration::from_secs(30)).await;
    // It comes back on the same address: the gateway reconnects by itself.
    upstream = start_everything_on("streamableHttp", port).await;
    eventually(
        Duration::from_secs(60),
        "calls through the restarted upstream",
        || async {
            (call(&gw, "echo", json!({"message": "again"})).await.status == 200).then_some(())
        },
    )
    .await;
    // The reconnect is pushed to /health by the provider: no periodic check to wait for.
    eventually(Duration::from_secs(2), "healthy again", || async {
        (get(&gw, "/health").await.body["data"]["status"] == "healthy").then_some(())
    })
    .await;
    drop(upstream);
}
