//! Every bound holds when requests arrive together, not only one after another: many
//! `initialize` (or `GET /sse`, or `GET /mcp`) released at one barrier from one client, or
//! from several near their share, are granted exactly as many places as the bounds leave —
//! never one more — and every other answer is 429 or 503 with `Retry-After`. A place is taken
//! when it is granted and given back when no session comes of it (docs/mcp.md, "Bounds").

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::harness::*;

fn from(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

fn config(mcp: &str) -> String {
    format!(
        "mcp: {{ {mcp} }}\nmonitoring: {{ metrics_enabled: true }}\nproviders:\n{}",
        everything_provider("everything")
    )
}

fn http_from(address: IpAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(address)
        .build()
        .unwrap()
}

fn initialize(http: &reqwest::Client, url: &str, i: usize) -> reqwest::RequestBuilder {
    http.post(url)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": i, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "flooder", "version": "1"}}}),
        )
}

/// What a request sent together with others was answered: its status, and whether a refusal
/// said when to retry.
#[derive(Debug)]
struct Answered {
    status: u16,
    retry_after: bool,
    /// The answer itself, kept open (a stream holds its place while it is read).
    _held: Option<reqwest::Response>,
}

/// `n` requests from `address`, built by `request`, released together at one barrier; a
/// granted answer (200) is kept open.
async fn together(
    address: IpAddr,
    n: usize,
    request: impl Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder,
) -> Vec<Answered> {
    let http = http_from(address);
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let sent: Vec<_> = (0..n)
        .map(|i| {
            let (request, barrier) = (request(&http, i), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let response = request.send().await.unwrap();
                let status = response.status().as_u16();
                let retry_after = response.headers().get("retry-after").is_some();
                Answered {
                    status,
                    retry_after,
                    _held: (status == 200).then_some(response),
                }
            })
        })
        .collect();
    let mut answers = Vec::new();
    for one in sent {
        answers.push(one.await.unwrap());
    }
    answers
}

/// How many were granted; every other answer is `refused` with Retry-After.
fn granted(answers: &[Answered], refused: u16) -> usize {
    for a in answers {
        assert!(
            a.status == 200 || (a.status == refused && a.retry_after),
            "{a:?}"
        );
    }
    answers.iter().filter(|a| a.status == 200).count()
}

/// A service whose table holds 40 sessions, any client up to all of them.
async fn table_of_40() -> Gateway {
    Gateway::start(
        "together",
        &config("max_sessions: 40, max_sessions_per_client: 40"),
    )
    .await
}

/// The sessions ended to make room so far (each logged once, state `evicted`).
fn evicted(gw: &Gateway) -> usize {
    gw.log_lines()
        .into_iter()
        .filter(|l| l["state"] == "evicted")
        .count()
}

async fn live_sessions(gw: &Gateway) -> u64 {
    get(gw, "/health").await.body["data"]["clients"]["sessions"]
        .as_u64()
        .unwrap()
}

/// `n` sessions of the client at `address`, opened one after another.
async fn hold_sessions(gw: &Gateway, address: IpAddr, n: usize) {
    let http = http_from(address);
    for i in 0..n {
        let answer = initialize(&http, &gw.url("/mcp"), i).send().await.unwrap();
        assert_eq!(answer.status(), 200);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn initialize_sent_together_by_one_client_gets_exactly_its_bound() {
    // The defaults: 1000 sessions, 100 per client.
    let gw = Gateway::start("together", &config("")).await;
    let url = gw.url("/mcp");
    let answers = together(from(2), 300, |http, i| initialize(http, &url, i)).await;
    assert_eq!(granted(&answers, 429), 100);
    assert_eq!(live_sessions(&gw).await, 100);
    // A client holding 99 sends 40 at the same instant: one more, not two.
    hold_sessions(&gw, from(3), 99).await;
    let answers = together(from(3), 40, |http, i| initialize(http, &url, i)).await;
    assert_eq!(granted(&answers, 429), 1);
    assert_eq!(live_sessions(&gw).await, 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_last_place_of_the_table_asked_for_together_is_granted_once() {
    let gw = table_of_40().await;
    let url = gw.url("/mcp");
    // Four clients near their share (40 ÷ 4 = 10): 39 of 40 places held.
    for (last, n) in [(2, 10), (3, 10), (4, 10), (5, 9)] {
        hold_sessions(&gw, from(last), n).await;
    }
    let asking = [2u8, 3, 4, 5].map(|last| {
        let url = url.clone();
        tokio::spawn(async move {
            together(from(last), 8, move |http, i| initialize(http, &url, i)).await
        })
    });
    let mut won = 0;
    for one in asking {
        won += granted(&one.await.unwrap(), 503);
    }
    // One place was free; any other was made by ending a session of a client that came to
    // hold more than its share meanwhile (answered 404 `evicted` from then on).
    let evicted = evicted(&gw);
    assert_eq!(won, 1 + evicted, "{won} granted, {evicted} evicted");
    assert_eq!(live_sessions(&gw).await, 40);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_client_flooding_a_table_its_own_size_fills_it_and_is_refused_not_churned() {
    let gw = table_of_40().await;
    let url = gw.url("/mcp");
    let answers = together(from(2), 300, |http, i| initialize(http, &url, i)).await;
    assert_eq!(granted(&answers, 503), 40);
    // Again, now that it is full: every one refused, none of its own sessions ended for it.
    let answers = together(from(2), 60, |http, i| initialize(http, &url, i)).await;
    assert_eq!(granted(&answers, 503), 0);
    assert_eq!(live_sessions(&gw).await, 40);
    assert_eq!(evicted(&gw), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn legacy_sse_sessions_and_streams_opened_together_hold_their_bounds() {
    // Each GET /sse is a session and its stream: whichever bound is the lower holds, and with
    // the stream bound the lower, the session places of the refused are given back.
    let mut gateways = Vec::new();
    for bounds in [
        "max_sessions_per_client: 3, max_streams_per_client: 5",
        "max_sessions_per_client: 5, max_streams_per_client: 3",
    ] {
        let gw = Gateway::start("together", &config(bounds)).await;
        let sse = gw.url("/sse");
        let open = |http: &reqwest::Client, _| http.get(&sse).header("accept", "text/event-stream");
        let answers = together(from(2), 30, open).await;
        assert_eq!(granted(&answers, 429), 3, "{bounds}");
        assert_eq!(live_sessions(&gw).await, 3, "{bounds}");
        drop(answers);
        gateways.push(gw);
    }
    let gw = gateways.pop().unwrap();
    eventually(
        Duration::from_secs(10),
        "the streams given back",
        || async { (live_sessions(&gw).await == 0).then_some(()) },
    )
    .await;
    // Streamable HTTP: five sessions, each asking for its standing stream at once.
    let http = http_from(from(3));
    let mut sessions = Vec::new();
    for _ in 0..5 {
        let session =
            McpSession::open_on(http.clone(), &gw.url("/mcp"), "streams", json!({})).await;
        sessions.push(session.id);
    }
    let url = gw.url("/mcp");
    let answers = together(from(3), 5, |http, i| {
        http.get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sessions[i])
    })
    .await;
    assert_eq!(granted(&answers, 429), 3);
    let clients = get(&gw, "/health").await.body["data"]["clients"].clone();
    assert_eq!(clients["top"][0]["streams"], 3, "{clients}");
}
