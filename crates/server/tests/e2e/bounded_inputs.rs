//! Inputs past their bounds, each answered as the contract says and the service still up
//! afterwards: too many or too large header fields (431), nesting, long strings, too many
//! members and duplicate keys at any depth (400, REST and MCP), a slow-header attack (closed
//! after the header read timeout) and connections past `limits.max_connections` (they wait).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::*;

async fn gateway(name: &str, limits: &str) -> Gateway {
    Gateway::start(
        name,
        &format!(
            "limits: {{ {limits} }}\nproviders:\n{}",
            everything_provider("everything")
        ),
    )
    .await
}

/// A normal call answers: the service survived what came before.
async fn still_serves(gw: &Gateway) {
    let answer = call(gw, "echo", json!({"message": "still here"})).await;
    answer.assert_envelope();
    assert_eq!(answer.status, 200, "{}", answer.body);
}

async fn post_raw(gw: &Gateway, path: &str, body: String) -> Answer {
    Answer::from(
        reqwest::Client::new()
            .post(gw.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

fn refused(answer: &Answer, status: u16, code: &str, says: &str) {
    answer.assert_envelope();
    assert_eq!(answer.status, status, "{}", answer.body);
    assert_eq!(answer.code(), code, "{}", answer.body);
    let message = answer.body["error"].as_str().unwrap();
    assert!(message.contains(says), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn too_many_or_too_large_header_fields_are_431_envelopes() {
    let gw = gateway("headers", "").await;
    let client = reqwest::Client::new();
    // The report's case: one header of 100 KB.
    let big = client
        .get(gw.url("/tools"))
        .header("x-filler", "a".repeat(100_000))
        .send()
        .await
        .unwrap();
    let big = Answer::from(big).await;
    refused(
        &big,
        431,
        "HEADERS_TOO_LARGE",
        "more than the limit of 32768",
    );
    let mut many = client.get(gw.url("/tools"));
    for i in 0..150 {
        many = many.header(format!("x-h{i}"), "1");
    }
    let many = Answer::from(many.send().await.unwrap()).await;
    refused(
        &many,
        431,
        "HEADERS_TOO_LARGE",
        "more than the limit of 100",
    );
    // Past hyper's hard bound (4 × the limit) hyper answers before any layer runs: 431 with an
    // empty body, and the connection closed.
    let mut stream = TcpStream::connect(("127.0.0.1", gw.port)).await.unwrap();
    let request = format!(
        "GET /tools HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: {}\r\n\r\n",
        "a".repeat(200_000)
    );
    // The server may answer and close before it has read everything: a failed write is fine.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
        "{answer}"
    );
    still_serves(&gw).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn json_bodies_past_a_bound_or_with_a_duplicate_key_are_400_rest_and_mcp() {
    let gw = gateway(
        "jsonbounds",
        "max_string_bytes: 1000, max_body_bytes: 4194304",
    )
    .await;
    // Duplicate keys: at the top level, inside arguments, inside an array inside arguments.
    let top = post_raw(
        &gw,
        "/call-tool",
        r#"{"tool":"echo","tool":"echo","arguments":{}}"#.into(),
    )
    .await;
    refused(
        &top,
        400,
        "INVALID_REQUEST",
        "key 'tool' twice in the object at ''",
    );
    let inner = post_raw(
        &gw,
        "/call-tool",
        r#"{"tool":"echo","arguments":{"message":"a","message":"b"}}"#.into(),
    )
    .await;
    refused(
        &inner,
        400,
        "INVALID_REQUEST",
        "key 'message' twice in the object at '/arguments'",
    );
    let by_name = post_raw(
        &gw,
        "/tools/echo",
        r#"{"message":"a","x":[{"k":1,"k":2}]}"#.into(),
    )
    .await;
    refused(
        &by_name,
        400,
        "INVALID_REQUEST",
        "key 'k' twice in the object at '/x/0'",
    );
    // Nesting past 64 levels.
    let deep = format!(
        r#"{{"tool":"echo","arguments":{{"message":"a","n":{}1{}}}}}"#,
        "[".repeat(70),
        "]".repeat(70)
    );
    let deep = post_raw(&gw, "/call-tool", deep).await;
    refused(&deep, 400, "INVALID_REQUEST", "deeper than 64 levels");
    // A string past max_string_bytes.
    let long = call(&gw, "echo", json!({"message": "x".repeat(1001)})).await;
    refused(
        &long,
        400,
        "INVALID_REQUEST",
        "string longer than 1000 bytes at '/arguments/message'",
    );
    // The report's case: a body of 100,000 keys is not forwarded.
    let keys: Vec<String> = (0..100_000).map(|i| format!("\"k{i}\":0")).collect();
    let wide = format!(
        r#"{{"tool":"echo","arguments":{{"message":"a",{}}}}}"#,
        keys.join(",")
    );
    let wide = post_raw(&gw, "/call-tool", wide).await;
    refused(
        &wide,
        400,
        "INVALID_REQUEST",
        "more than 10000 members in the object or array at '/arguments'",
    );
    // MCP: the same reading, before any session logic; a JSON-RPC error with our code.
    let mcp = reqwest::Client::new()
        .post(gw.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"capabilities":{}}}"#,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(mcp.status(), 400);
    let mcp: Value = mcp.json().await.unwrap();
    assert_eq!(mcp["error"]["code"], -32600, "{mcp}");
    assert_eq!(mcp["error"]["data"]["code"], "INVALID_REQUEST", "{mcp}");
    assert_eq!(mcp["error"]["data"]["pointer"], "/params", "{mcp}");
    // The legacy transport's /messages reads its bodies the same way, before the session.
    let legacy = reqwest::Client::new()
        .post(gw.url("/messages?sessionId=any"))
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[{"b":1,"b":1}]}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(legacy.status(), 400);
    let legacy: Value = legacy.json().await.unwrap();
    assert_eq!(
        legacy["error"]["data"]["pointer"], "/params/a/0",
        "{legacy}"
    );
    still_serves(&gw).await;
}

/// One connection of the attack: the start of a request, then one more header byte a second
/// (the attack's pace), until the server closes it; how long that took.
async fn slow_header(port: u16) -> Duration {
    let started = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream
        .write_all(b"GET /tools HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    let mut pace = tokio::time::interval(Duration::from_secs(1));
    let mut buf = [0u8; 1024];
    loop {
        tokio::select! {
            read = stream.read(&mut buf) => match read {
                Ok(0) | Err(_) => return started.elapsed(),
                Ok(_) => {} // an answer (hyper sends none on a timeout); keep reading to the close
            },
            _ = pace.tick() => {
                if stream.write_all(b"a").await.is_err() {
                    return started.elapsed();
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_header_connections_are_closed_after_the_header_read_timeout() {
    let gw = gateway("slowloris", "header_read_timeout_ms: 2000").await;
    let attack: Vec<_> = (0..50)
        .map(|_| tokio::spawn(slow_header(gw.port)))
        .collect();
    // While they trickle, others are served.
    still_serves(&gw).await;
    let deadline = Duration::from_secs(15);
    let closed = tokio::time::timeout(deadline, futures::future::join_all(attack))
        .await
        .unwrap_or_else(|_| panic!("slow connections still open after {deadline:?}"));
    for after in closed {
        let after = after.unwrap();
        assert!(
            after >= Duration::from_millis(1900) && after < Duration::from_secs(10),
            "closed after {after:?}, the timeout is 2 s"
        );
    }
    still_serves(&gw).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_past_max_connections_wait_until_one_closes() {
    let gw = gateway("maxconn", "max_connections: 2").await;
    // Two connections hold both slots (a keep-alive connection keeps its slot).
    let mut first = RawConnection::open(&gw).await;
    let (status, _) = first.get("/health").await;
    assert_eq!(status, 200);
    let mut second = RawConnection::open(&gw).await;
    let (status, _) = second.get("/health").await;
    assert_eq!(status, 200);
    // A third connects (the backlog takes it) but is not served while both are held.
    let mut third = tokio::spawn({
        let url = gw.url("/health");
        async move {
            reqwest::Client::new()
                .get(url)
                .send()
                .await
                .map(|r| r.status())
        }
    });
    // Nothing may happen for a while: the one wait here that cannot be a poll for an event.
    let early = tokio::time::timeout(Duration::from_millis(1500), &mut third).await;
    assert!(
        early.is_err(),
        "a third connection was served past max_connections: 2: {early:?}"
    );
    drop(first);
    let status = tokio::time::timeout(Duration::from_secs(10), third)
        .await
        .expect("the waiting connection was served once a slot was free")
        .unwrap()
        .unwrap();
    assert_eq!(status, 200);
    drop(second);
    still_serves(&gw).await;
}
