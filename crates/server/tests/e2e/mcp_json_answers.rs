//! A plain `tools/call` in a Streamable HTTP session is answered as one JSON body, and says
//! exactly what the same call answered as an SSE stream says: results, tool errors and refused
//! arguments alike. A call that may need the stream keeps it: one with a progress token, and
//! every call of a client that offers something a server may ask (roots here). A call answered
//! as JSON is cancelled by the client's notifications/cancelled, as a streamed one is.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// A session whose client declares `capabilities`, the handshake done and seen through:
/// the gateway takes a session's calls as JSON once it has handled `notifications/initialized`
/// (which it acknowledges before handling), so a client offering nothing is polled until an
/// echo comes back as JSON.
async fn session_with(gw: &Gateway, capabilities: Value) -> McpSession {
    let asks_back = capabilities != json!({});
    let session =
        McpSession::open_on(reqwest::Client::new(), &gw.url("/mcp"), "t", capabilities).await;
    if !asks_back {
        let deadline = Instant::now() + Duration::from_secs(10);
        while answer(&session, call(1, "echo", json!({"message": "ready"})))
            .await
            .0
            != "application/json"
        {
            assert!(
                Instant::now() < deadline,
                "calls of a plain session never came back as JSON"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    session
}

/// The content type of the answer to `body`, and its JSON-RPC message.
async fn answer(session: &McpSession, body: Value) -> (String, Value) {
    let response = session.post(body).await;
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    let text = response.text().await.unwrap();
    let message = serde_json::from_str::<Value>(&text).ok().or_else(|| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
    });
    (
        kind,
        message.unwrap_or_else(|| panic!("no answer in {text}")),
    )
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

/// What differs between two answers to the same call whatever way they came: the request id
/// the gateway gave each call, in `_meta` of a failure.
fn without_request_ids(mut message: Value) -> Value {
    for at in [
        "/result/_meta/mcp-http-gateway~1error",
        "/error/data",
        "/result/structuredContent",
    ] {
        if let Some(object) = message.pointer_mut(at).and_then(Value::as_object_mut) {
            object.remove("request_id");
        }
    }
    message
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_call_is_answered_as_json_with_what_the_stream_would_say() {
    let gw = Gateway::start(
        "json-answers",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let plain = session_with(&gw, json!({})).await;
    let asks = session_with(&gw, json!({"roots": {"listChanged": true}})).await;
    let calls = [
        ("echo", json!({"message": "same"})),
        ("get-sum", json!({"a": 2, "b": 3})),
        ("get-sum", json!({"a": "two"})),
        ("no-such-tool", json!({})),
        ("get-structured-content", json!({"location": "New York"})),
    ];
    for (n, (tool, arguments)) in calls.into_iter().enumerate() {
        let (kind, direct) = answer(&plain, call(n as u64 + 10, tool, arguments.clone())).await;
        assert_eq!(kind, "application/json", "{tool}: {direct}");
        let (kind, streamed) = answer(&asks, call(n as u64 + 10, tool, arguments)).await;
        assert_eq!(
            kind, "text/event-stream",
            "{tool}: a client with roots keeps its stream"
        );
        assert_eq!(
            without_request_ids(direct),
            without_request_ids(streamed),
            "{tool}: the same answer either way"
        );
    }
    // A progress token asks for the stream.
    let mut with_progress = call(30, "echo", json!({"message": "p"}));
    with_progress["params"]["_meta"] = json!({"progressToken": "t1"});
    let (kind, message) = answer(&plain, with_progress).await;
    assert_eq!(kind, "text/event-stream");
    assert_eq!(message["result"]["content"][0]["text"], "Echo: p");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_answered_as_json_is_cancelled_by_its_client() {
    let gw = Gateway::start(
        "json-cancel",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let session = session_with(&gw, json!({})).await;
    let long = call(
        7,
        "trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    );
    let started = Instant::now();
    let pending = tokio::spawn({
        let session = session.clone();
        async move { answer(&session, long).await }
    });
    // The cancellation may come before the call is under way; it is sent until the call ends.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pending.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the call did not end on notifications/cancelled"
        );
        session
            .post(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 7, "reason": "test"}}),
            )
            .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (kind, message) = pending.await.unwrap();
    assert_eq!(kind, "application/json");
    assert_eq!(message["error"]["code"], -32800, "{message}");
    assert!(started.elapsed() < Duration::from_secs(30));
}
