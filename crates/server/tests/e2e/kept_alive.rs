//! No per-call floor on a kept-alive connection: one client calls `echo` again and again on one
//! open connection, on every listener and answer shape the gateway has — REST `POST
//! /call-tool` (the reference), Streamable HTTP in both protocol eras (2025-11-25 sessions
//! answered as JSON and, for a client that offers roots, as an SSE stream; a stateless
//! 2026-07-28 request, answered as JSON) and the legacy SSE transport (`POST /messages`,
//! answered on the `GET /sse` stream). The shapes take turns call by call, so that a busy
//! machine slows them alike, and each shape's median must stay within a few REST calls. A
//! floor (Nagle's algorithm holding a streamed answer's second write until the client's
//! delayed ACK, 40 ms a call) is many times any call's own cost here; this test failed at 11×
//! the REST call with it (docs/performance.md, "The per-call floor on kept-alive
//! connections").

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// Calls per shape: enough for a steady median, few enough for a debug build.
const CALLS: usize = 25;
/// How many REST calls' time an MCP call may take (the median of each). The SSE shapes do more
/// per call than REST (a stream, a JSON-RPC envelope, rmcp's session task); the floor is far
/// beyond this.
const MAX_RATIO: f64 = 5.0;

/// The answers of a legacy SSE session's stream, one JSON-RPC answer at a time.
struct SseStream {
    response: reqwest::Response,
    buffer: String,
}

impl SseStream {
    /// The next answer on the stream, past the notifications before it (log messages the
    /// server behind sends every session).
    async fn next_answer(&mut self) -> Value {
        loop {
            let message = self.next_message().await;
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    async fn next_message(&mut self) -> Value {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim)
                    .collect();
                if let Ok(message) = serde_json::from_str::<Value>(&data) {
                    return message;
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.response.chunk())
                .await
                .expect("an SSE event within 10 s")
                .unwrap()
                .expect("the stream stays open");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

fn echo_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"message": "kept"}}})
}

fn holds_echo(answer: &Value) -> bool {
    answer["result"]["content"][0]["text"] == "Echo: kept"
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_on_a_kept_alive_connection_pay_no_floor_on_any_transport() {
    let gw = Gateway::start(
        "kept-alive",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    // One connection per shape, kept open: each client's pool holds at most one idle
    // connection, and its calls are made one after another.
    let client = || {
        reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()
            .unwrap()
    };
    let rest = client();
    let mcp = gw.url("/mcp");
    let session = McpSession::open_on(client(), &mcp, "t", json!({})).await;
    // A client that offers roots is answered as an SSE stream (mcp/direct.rs).
    let streamed = McpSession::open_on(client(), &mcp, "t", json!({"roots": {}})).await;
    let stateless = client();
    let legacy = client();
    let (stream, endpoint) = open_sse(&gw).await;
    let mut stream = SseStream {
        response: stream,
        buffer: String::new(),
    };
    let messages = gw.url(&endpoint);
    let post_legacy = |body: Value| legacy.post(&messages).json(&body).send();
    post_legacy(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
    .await
    .unwrap();
    assert!(stream.next_answer().await.get("result").is_some());
    post_legacy(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();

    let mut times: [Vec<Duration>; 5] = Default::default();
    for n in 1..=CALLS as u64 {
        let started = Instant::now();
        let answer: Value = rest
            .post(gw.url("/call-tool"))
            .json(&json!({"tool": "echo", "arguments": {"message": "kept"}}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        times[0].push(started.elapsed());
        assert_eq!(
            answer["data"]["content"][0]["text"], "Echo: kept",
            "{answer}"
        );

        let started = Instant::now();
        let answer = session.ask(echo_call(n)).await;
        times[1].push(started.elapsed());
        assert!(holds_echo(&answer), "{answer}");

        let started = Instant::now();
        let response = streamed.post(echo_call(n)).await;
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let text = response.text().await.unwrap();
        times[4].push(started.elapsed());
        assert!(text.contains("Echo: kept"), "{text}");

        let mut call = echo_call(n);
        call["params"]["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}});
        let started = Instant::now();
        let answer: Value = stateless
            .post(gw.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo")
            .json(&call)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .expect("a 2026-07-28 call is answered as JSON");
        times[2].push(started.elapsed());
        assert!(holds_echo(&answer), "{answer}");

        let started = Instant::now();
        let accepted = post_legacy(echo_call(n)).await.unwrap();
        assert_eq!(accepted.status(), 202);
        let answer = stream.next_answer().await;
        times[3].push(started.elapsed());
        assert!(holds_echo(&answer), "{answer}");
    }
    let [rest, session, stateless, legacy, streamed] = times.map(median);
    let report = format!(
        "medians of {CALLS} calls: REST {rest:?}, MCP session (JSON) {session:?}, MCP session (SSE) {streamed:?}, MCP 2026-07-28 {stateless:?}, legacy SSE {legacy:?}"
    );
    eprintln!("{report}");
    for (shape, time) in [
        ("MCP session (JSON)", session),
        ("MCP session (SSE)", streamed),
        ("MCP 2026-07-28", stateless),
        ("legacy SSE", legacy),
    ] {
        let ratio = time.as_secs_f64() / rest.as_secs_f64();
        assert!(
            ratio <= MAX_RATIO,
            "{shape} calls take {ratio:.1}× a REST call on a kept-alive connection (at most {MAX_RATIO}×): a per-call floor. {report}"
        );
    }
}
