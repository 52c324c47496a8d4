//! One client cannot lock every other out of a service's MCP sessions: a client that opens
//! sessions with `initialize` and never ends them is refused past `mcp.max_sessions_per_client`
//! (429, Retry-After, the bound named), while another client — the official MCP Python SDK —
//! initializes, lists and calls tools throughout. Clients are told apart by API key, else by
//! IP address (the flooder connects from 127.0.0.2, the SDK client from 127.0.0.1). A full
//! table makes room by ending the least recently used session of the client over its share,
//! which then answers 404 `evicted`.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

const FLOODER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

fn config(mcp: &str, security: &str) -> String {
    format!(
        "mcp: {{ {mcp} }}\nmonitoring: {{ metrics_enabled: true }}\n{security}providers:\n{}",
        everything_provider("everything")
    )
}

/// `initialize` sent `n` times from `from` (with `key`), never ended: the answers' statuses,
/// and the first refusal's Retry-After and message.
async fn flood(mcp_url: String, from: IpAddr, key: Option<&str>, n: usize) -> (Vec<u16>, Value) {
    let http = reqwest::Client::builder()
        .local_address(from)
        .build()
        .unwrap();
    let mut statuses = Vec::new();
    let mut refusal = Value::Null;
    for i in 0..n {
        let mut request = http
            .post(&mcp_url)
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": i, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "flooder", "version": "1"}}}),
            );
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        statuses.push(status);
        if status == 429 && refusal.is_null() {
            let retry_after = response.headers().get("retry-after").cloned();
            let body: Value = response.json().await.unwrap();
            refusal = json!({"retry_after": retry_after.map(|v| v.to_str().unwrap().to_owned()),
                "body": body});
        }
    }
    (statuses, refusal)
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|s| **s == status).count()
}

async fn sdk_client(gw: &Gateway, key: Option<&str>) -> Value {
    let mut args = vec![fixture("mcp_bounded_client.py"), gw.url("/mcp")];
    args.extend(key.map(str::to_owned));
    run_python(args).await
}

fn served(seen: &Value) {
    assert_eq!(seen["echo"], "Echo: still served", "{seen}");
    assert_eq!(seen["echo_is_error"], false, "{seen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_flooding_initialize_is_refused_past_its_share_and_another_works_throughout() {
    // The defaults: 1000 sessions, a tenth of them per client.
    let gw = Gateway::start("bounds", &config("", "")).await;
    let flooding = tokio::spawn(flood(gw.url("/mcp"), FLOODER, None, 150));
    served(&sdk_client(&gw, None).await);
    let (statuses, refusal) = flooding.await.unwrap();
    assert_eq!(count(&statuses, 200), 100, "{statuses:?}");
    assert_eq!(count(&statuses, 429), 50, "{statuses:?}");
    assert_eq!(refusal["retry_after"], "5", "{refusal}");
    let message = refusal["body"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("mcp.max_sessions_per_client is 100"),
        "{message}"
    );
    assert_eq!(refusal["body"]["error"]["data"]["code"], "RATE_LIMITED");
    // And after the flood, still.
    served(&sdk_client(&gw, None).await);
    // One log line for the 50 refusals; the metrics count each.
    let refused: Vec<Value> = gw
        .log_lines()
        .into_iter()
        .filter(|l| l["bound"] == "sessions_per_client")
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    let metrics = get_text(&gw, "/metrics").await;
    assert!(
        metrics.contains("mcp_http_gateway_mcp_client_refusals_total{bound=\"sessions_per_client\",service=\"bounds\"} 50"),
        "{metrics}"
    );
    assert!(metrics.contains("mcp_http_gateway_mcp_top_client_sessions{service=\"bounds\"} 100"));
}

#[tokio::test(flavor = "multi_thread")]
async fn two_api_keys_from_one_address_are_two_clients() {
    let security = "security:\n  api_keys:\n    - { name: noisy, value_env: MHG_NOISY_KEY }\n    - { name: quiet, value_env: MHG_QUIET_KEY }\n";
    let gw = Gateway::start_env(
        "bounds",
        &config("max_sessions: 20, max_sessions_per_client: 5", security),
        &[
            ("MHG_NOISY_KEY", "noisy-key"),
            ("MHG_QUIET_KEY", "quiet-key"),
        ],
    )
    .await;
    let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let (statuses, _) = flood(gw.url("/mcp"), localhost, Some("noisy-key"), 30).await;
    assert_eq!((count(&statuses, 200), count(&statuses, 429)), (5, 25));
    served(&sdk_client(&gw, Some("quiet-key")).await);
    // /health is public: a key's name shows (it is configuration), never a secret.
    let clients = get(&gw, "/health").await.body["data"]["clients"].clone();
    assert_eq!(clients["top"][0]["client"], "key:noisy", "{clients}");
    assert_eq!(clients["top"][0]["sessions"], 5, "{clients}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_table_ends_the_oldest_session_of_the_client_over_its_share() {
    let gw = Gateway::start(
        "bounds",
        &config("max_sessions: 4, max_sessions_per_client: 4", ""),
    )
    .await;
    let http = reqwest::Client::builder()
        .local_address(FLOODER)
        .build()
        .unwrap();
    let mut sessions = Vec::new();
    for i in 0..4 {
        let answer = http
            .post(gw.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": i, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "hoarder", "version": "1"}}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        sessions.push(
            answer.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    // The table is full; another client still gets in, in the hoarder's oldest place.
    served(&sdk_client(&gw, None).await);
    let gone = http
        .post(gw.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &sessions[0])
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    let body: Value = gone.json().await.unwrap();
    assert_eq!(body["error"]["data"]["session_state"], "evicted", "{body}");
}

/// A slow call from `from`, started in the background: its status, body and when it ended.
fn slow_call_from(
    gw: &Gateway,
    from: IpAddr,
    tool: &'static str,
    arguments: Value,
) -> tokio::task::JoinHandle<(u16, Value, std::time::Instant)> {
    let url = gw.url("/call-tool");
    tokio::spawn(async move {
        let http = reqwest::Client::builder()
            .local_address(from)
            .build()
            .unwrap();
        let answer = http
            .post(url)
            .json(&json!({"tool": tool, "arguments": arguments}))
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        (
            status,
            answer.json().await.unwrap(),
            std::time::Instant::now(),
        )
    })
}

/// `n` calls of 2 s from [`FLOODER`], sent one at a time (each running or queued before the
/// next is sent, so the newest queued call is the last sent).
async fn flood_of_slow_calls(
    gw: &Gateway,
    n: u64,
) -> Vec<tokio::task::JoinHandle<(u16, Value, std::time::Instant)>> {
    let mut flood = Vec::new();
    for expected in 1..=n {
        flood.push(slow_call_from(
            gw,
            FLOODER,
            "trigger-long-running-operation",
            json!({"duration": 2, "steps": 1}),
        ));
        eventually(Duration::from_secs(10), "the flood's call in", || async {
            let data = get(gw, "/health").await.body["data"].clone();
            let seen =
                data["active_calls"].as_u64().unwrap() + data["queued_calls"].as_u64().unwrap();
            (seen == expected).then_some(())
        })
        .await;
    }
    flood
}

/// One client holds both call slots and fills the queue; another client's call is not
/// refused and does not wait behind that queue: the newest of the flood's queued calls gives
/// its place (503, saying so), and the next freed slot goes to the client holding none.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_flooding_calls_waits_behind_its_own_calls_not_another_clients() {
    let gw = Gateway::start(
        "bounds",
        &format!(
            "limits: {{ max_concurrent_calls: 2, queue_depth: 3, queue_timeout_ms: 20000 }}\nproviders:\n{}",
            everything_provider("everything")
        ),
    )
    .await;
    let flood = flood_of_slow_calls(&gw, 5).await;
    // Slots (2) and queue (3) are the flood's. Another client:
    let quiet = slow_call_from(
        &gw,
        IpAddr::V4(Ipv4Addr::LOCALHOST),
        "echo",
        json!({"message": "not behind the flood"}),
    );
    let (status, body, quiet_done) = quiet.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let mut ends = Vec::new();
    for call in flood {
        let (status, body, done) = call.await.unwrap();
        ends.push((status, body, done));
    }
    let yielded: Vec<&Value> = ends.iter().filter(|e| e.0 == 503).map(|e| &e.1).collect();
    assert_eq!(yielded.len(), 1, "{ends:?}");
    assert!(
        yielded[0]["error"]
            .as_str()
            .unwrap()
            .contains("gave its place"),
        "{}",
        yielded[0]
    );
    // The quiet call ran in the first slot freed: before the flood's queued calls ended (in
    // arrival order it would have run after them, and been refused first, the queue full).
    let later = ends
        .iter()
        .filter(|e| e.0 == 200 && e.2 > quiet_done)
        .count();
    assert!(
        later >= 2,
        "the two queued flood calls end after it: {ends:?}"
    );
}

/// A client past `mcp.max_streams_per_client` is refused another stream (429, the bound
/// named), and /health names the clients holding the most: an address as it is without keys.
#[tokio::test(flavor = "multi_thread")]
async fn streams_are_bounded_per_client_and_health_names_who_holds_the_most() {
    let gw = Gateway::start("bounds", &config("max_streams_per_client: 1", "")).await;
    let http = reqwest::Client::builder()
        .local_address(FLOODER)
        .build()
        .unwrap();
    let open = || {
        http.get(gw.url("/sse"))
            .header("accept", "text/event-stream")
            .send()
    };
    let first = open().await.unwrap();
    assert_eq!(first.status(), 200);
    let second = open().await.unwrap();
    assert_eq!(second.status(), 429);
    assert_eq!(second.headers()["retry-after"], "5");
    let body: Value = second.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp.max_streams_per_client is 1"),
        "{body}"
    );
    let health = get(&gw, "/health").await.body["data"]["clients"].clone();
    assert_eq!(health["top"][0]["client"], "ip:127.0.0.2", "{health}");
    assert_eq!(health["top"][0]["sessions"], 1, "{health}");
    assert_eq!(health["top"][0]["streams"], 1, "{health}");
    assert_eq!(health["max_streams_per_client"], 1);
    assert_eq!(health["max_sessions_per_client"], 100);
    drop(first);
    eventually(Duration::from_secs(10), "the stream given back", || async {
        let clients = get(&gw, "/health").await.body["data"]["clients"].clone();
        (clients["clients"] == 0).then_some(())
    })
    .await;
}

/// A resource read (GET /resources/read) takes a call slot as its sender's: while one client
/// holds the only slot and the queue (two), its own read is refused (it can displace none of
/// its own calls), and another client's read is not (the flood's newest queued call gives its
/// place) and is answered.
#[tokio::test(flavor = "multi_thread")]
async fn a_resource_read_waits_as_its_sender_not_as_a_client_of_its_own() {
    let gw = Gateway::start(
        "bounds-catalog",
        &format!(
            "limits: {{ max_concurrent_calls: 1, queue_depth: 2, queue_timeout_ms: 20000 }}\nproviders:\n{}",
            everything_provider("everything")
        ),
    )
    .await;
    let flood = flood_of_slow_calls(&gw, 3).await;
    let read = |from: IpAddr| {
        let url = gw.url("/resources/read?uri=demo%3A%2F%2Fresource%2Fdynamic%2Ftext%2F1");
        async move {
            let http = reqwest::Client::builder()
                .local_address(from)
                .build()
                .unwrap();
            Answer::from(http.get(url).send().await.unwrap()).await
        }
    };
    // The flooder's own read: refused, the queue being its own.
    let own = read(FLOODER).await;
    assert_eq!(own.status, 503, "{}", own.body);
    // Another client's: the flood's queued call gives its place, and the read is answered.
    let other = read(IpAddr::V4(Ipv4Addr::LOCALHOST)).await;
    assert_eq!(other.status, 200, "{}", other.body);
    assert!(other.body["data"]["contents"].is_array(), "{}", other.body);
    let ends: Vec<(u16, Value)> = futures::future::join_all(flood)
        .await
        .into_iter()
        .map(|e| {
            let (status, body, _) = e.unwrap();
            (status, body)
        })
        .collect();
    let statuses: Vec<u16> = ends.iter().map(|e| e.0).collect();
    assert_eq!(statuses, [200, 200, 503], "{ends:?}");
    assert!(
        ends[2].1["error"]
            .as_str()
            .unwrap()
            .contains("gave its place"),
        "{ends:?}"
    );
}
