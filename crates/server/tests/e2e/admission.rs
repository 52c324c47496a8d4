//! Admission control and rate limits against a real MCP server (server-everything): calls
//! beyond the slots wait in a bounded queue, beyond it they get 503 + Retry-After at once,
//! a queued call waits no longer than the queue timeout, per-tool limits hold one tool back
//! and not the others, REST and MCP calls share the limits; requests per minute per client,
//! with the RateLimit headers and `meta.rate_limit_remaining`, and per-tool rate limits.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// server-everything's operation that takes `seconds` to answer.
fn slow(seconds: u64) -> Value {
    json!({"duration": seconds, "steps": 1})
}

const SLOW_TOOL: &str = "trigger-long-running-operation";

/// Starts a slow call in the background; its answer and how long it took.
pub(crate) fn call_in_background(
    gw: &Gateway,
    seconds: u64,
) -> tokio::task::JoinHandle<(Answer, Duration)> {
    let url = gw.url("/call-tool");
    tokio::spawn(async move {
        let started = Instant::now();
        let body = json!({"tool": SLOW_TOOL, "arguments": slow(seconds)});
        let answer = Answer::from(
            reqwest::Client::new()
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await;
        (answer, started.elapsed())
    })
}

/// Polls /health until `active` calls run and `queued` wait.
pub(crate) async fn until_calls(gw: &Gateway, active: u64, queued: u64) {
    eventually(
        Duration::from_secs(10),
        &format!("{active} calls running and {queued} queued"),
        || async {
            let data = get(gw, "/health").await.body["data"].clone();
            (data["active_calls"] == active && data["queued_calls"] == queued).then_some(())
        },
    )
    .await;
}

fn assert_not_admitted(a: &Answer) {
    a.assert_envelope();
    assert_eq!(
        (a.status.as_u16(), a.code()),
        (503, "SERVICE_UNAVAILABLE"),
        "{}",
        a.body
    );
    assert_eq!(a.headers["retry-after"], "1");
}

#[tokio::test]
async fn beyond_the_slots_calls_queue_and_beyond_the_queue_they_get_503_at_once() {
    let extra = format!(
        "limits: {{ max_concurrent_calls: 2, queue_depth: 2, queue_timeout_ms: 30000 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("admitted", &extra).await;
    let running: Vec<_> = (0..2).map(|_| call_in_background(&gw, 3)).collect();
    until_calls(&gw, 2, 0).await;
    let queued: Vec<_> = (0..2).map(|_| call_in_background(&gw, 1)).collect();
    until_calls(&gw, 2, 2).await;

    // Slots and queue are full: a REST call is refused at once, not held.
    let started = Instant::now();
    let refused = call(&gw, "echo", json!({"message": "x"})).await;
    assert_not_admitted(&refused);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused at once, took {:?}",
        started.elapsed()
    );
    assert!(
        refused.body["error"]
            .as_str()
            .unwrap()
            .contains("queue is full")
    );
    // So is an MCP call: a tool error the model can read, with the same code and retry_after.
    let mcp = McpSession::open(&gw).await;
    let answer = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": "x"}}}))
        .await;
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let data = &result["_meta"]["mcp-http-gateway/error"];
    assert_eq!(data["code"], "SERVICE_UNAVAILABLE", "{answer}");
    assert_eq!(data["retry_after"], 1, "{answer}");
    // /health is never queued.
    let health = get(&gw, "/health").await;
    assert_eq!(health.status, 200);

    // None is lost: the running and the queued calls all finish.
    for handle in running.into_iter().chain(queued) {
        let (a, _) = handle.await.unwrap();
        assert_eq!(a.status, 200, "{}", a.body);
    }
    until_calls(&gw, 0, 0).await;
    assert_eq!(call(&gw, "echo", json!({"message": "x"})).await.status, 200);
}

#[tokio::test]
async fn a_queued_call_waits_no_longer_than_the_queue_timeout() {
    let extra = format!(
        "limits: {{ max_concurrent_calls: 1, queue_timeout_ms: 400 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("queue-timeout", &extra).await;
    let running = call_in_background(&gw, 3);
    until_calls(&gw, 1, 0).await;
    let started = Instant::now();
    let refused = call(&gw, "echo", json!({"message": "x"})).await;
    let waited = started.elapsed();
    assert_not_admitted(&refused);
    assert!(
        refused.body["error"]
            .as_str()
            .unwrap()
            .contains("no free slot of the service within"),
        "{}",
        refused.body
    );
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_millis(2500),
        "waited {waited:?}, the queue timeout is 400 ms and the running call takes 3 s"
    );
    assert_eq!(running.await.unwrap().0.status, 200);
}

#[tokio::test]
async fn a_tool_limit_holds_that_tool_back_and_no_other() {
    let extra = format!(
        "limits: {{ queue_timeout_ms: 300 }}\nproviders:\n  - {{ name: everything, kind: mcp, command: node, args: [\"{}\", stdio], limits: {{ tools: [{{ tool: 'trigger-long-*', max_concurrent: 1, timeout_ms: 1500 }}] }} }}\n",
        everything_js()
    );
    let gw = Gateway::start("tool-limit", &extra).await;
    let running = call_in_background(&gw, 1);
    until_calls(&gw, 1, 0).await;
    let second = call(&gw, SLOW_TOOL, slow(1)).await;
    assert_not_admitted(&second);
    assert!(
        second.body["error"]
            .as_str()
            .unwrap()
            .contains("slot of the tool"),
        "{}",
        second.body
    );
    // Another tool of the same provider goes through while the limited one is busy.
    let started = Instant::now();
    let echo = call(&gw, "echo", json!({"message": "x"})).await;
    assert_eq!(echo.status, 200, "{}", echo.body);
    assert!(started.elapsed() < Duration::from_millis(300));
    assert_eq!(running.await.unwrap().0.status, 200);
    // The tool's own timeout (1.5 s) applies, not the service's 30 s.
    let started = Instant::now();
    let late = call(&gw, SLOW_TOOL, slow(10)).await;
    late.assert_envelope();
    assert_eq!(
        (late.status.as_u16(), late.code()),
        (504, "TIMEOUT"),
        "{}",
        late.body
    );
    assert!(
        late.body["error"].as_str().unwrap().contains("1500 ms"),
        "{}",
        late.body
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_provider_limit_bounds_all_its_tools_together() {
    let extra = format!(
        "limits: {{ queue_timeout_ms: 300 }}\nproviders:\n  - {{ name: everything, kind: mcp, command: node, args: [\"{}\", stdio], limits: {{ max_concurrent: 1 }} }}\n",
        everything_js()
    );
    let gw = Gateway::start("provider-limit", &extra).await;
    let running = call_in_background(&gw, 2);
    until_calls(&gw, 1, 0).await;
    let echo = call(&gw, "echo", json!({"message": "x"})).await;
    assert_not_admitted(&echo);
    assert!(
        echo.body["error"]
            .as_str()
            .unwrap()
            .contains("slot of the provider")
    );
    assert_eq!(running.await.unwrap().0.status, 200);
    assert_eq!(call(&gw, "echo", json!({"message": "x"})).await.status, 200);
}

/// `RateLimit: "per-client";r=<remaining>;t=<seconds>` → remaining.
fn remaining_in_header(a: &Answer) -> u64 {
    let value = a.headers["ratelimit"].to_str().unwrap();
    let r = value.split(';').find_map(|p| p.strip_prefix("r=")).unwrap();
    r.parse().unwrap()
}

#[tokio::test]
async fn requests_per_minute_per_client_with_headers_and_remaining() {
    let extra = format!(
        "security: {{ rate_limit: 10, api_keys_enabled: true, api_keys_env: MHG_TEST_KEYS }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let mut gw = Gateway::spawn_env("per-client", &extra, &[("MHG_TEST_KEYS", "k-one,k-two")]);
    gw.wait_running().await;
    let client = reqwest::Client::new();
    let as_key = |key: &'static str| {
        let request = client.get(gw.url("/tools")).header("x-api-key", key);
        async move { Answer::from(request.send().await.unwrap()).await }
    };
    for expected in (0..10).rev() {
        let a = as_key("k-one").await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.body["meta"]["rate_limit_remaining"], expected);
        assert_eq!(remaining_in_header(&a), expected);
        assert_eq!(a.headers["ratelimit-policy"], "\"per-client\";q=10;w=60");
    }
    let limited = as_key("k-one").await;
    limited.assert_envelope();
    assert_eq!(
        (limited.status.as_u16(), limited.code()),
        (429, "RATE_LIMITED")
    );
    // 10 per minute: the next request is allowed 6 s later.
    let retry: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((5..=6).contains(&retry), "Retry-After {retry}");
    assert_eq!(limited.body["meta"]["rate_limit_remaining"], 0);
    assert!(limited.body["error"].as_str().unwrap().contains("key-1"));
    // The other key is another client with its own allowance.
    let other = as_key("k-two").await;
    assert_eq!(other.status, 200);
    assert_eq!(other.body["meta"]["rate_limit_remaining"], 9);
    // /health is neither counted nor limited.
    for _ in 0..5 {
        let health = get(&gw, "/health").await;
        assert_eq!(health.status, 200);
        assert!(health.headers.get("ratelimit").is_none());
    }
    // Neither key reaches the log; their names do.
    let logs = gw.logs();
    assert!(!logs.contains("k-one") && !logs.contains("k-two"));
    assert!(logs.contains("key-1"));
}

#[tokio::test]
async fn a_tool_rate_limit_applies_per_client_over_rest_and_mcp() {
    let extra = format!(
        "providers:\n  - {{ name: everything, kind: mcp, command: node, args: [\"{}\", stdio], limits: {{ tools: [{{ tool: echo, rate_limit: 2 }}] }} }}\n",
        everything_js()
    );
    let gw = Gateway::start("tool-rate", &extra).await;
    for _ in 0..2 {
        assert_eq!(call(&gw, "echo", json!({"message": "x"})).await.status, 200);
    }
    let limited = call(&gw, "echo", json!({"message": "x"})).await;
    limited.assert_envelope();
    assert_eq!(
        (limited.status.as_u16(), limited.code()),
        (429, "RATE_LIMITED"),
        "{}",
        limited.body
    );
    // 2 per minute: one every 30 s.
    assert_eq!(limited.headers["retry-after"], "30");
    assert_eq!(limited.body["meta"]["tool"], "echo");
    // Other tools are not limited by echo's rule.
    assert_eq!(
        call(&gw, "get-sum", json!({"a": 1, "b": 2})).await.status,
        200
    );
    // The same client over MCP has used up echo too.
    let mcp = McpSession::open(&gw).await;
    let answer = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": "x"}}}))
        .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let data = &answer["result"]["_meta"]["mcp-http-gateway/error"];
    assert_eq!(data["code"], "RATE_LIMITED", "{answer}");
    assert_eq!(data["retry_after"], 30, "{answer}");
}
