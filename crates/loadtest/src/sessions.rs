//! The session-flood run (`--mode sessions`): MCP session bounds under concurrent floods.
//! Several flooding clients, each from its own loopback address (127.0.0.2 on), send
//! `initialize` at `/mcp` from many connections at once, released together at one barrier,
//! and never end a session; beside them one well-behaved client (127.0.0.1) opens a session,
//! finishes the handshake, calls the tool and ends the session (DELETE), again and again.
//! `/health` is read throughout. Verdicts: every well-behaved step answered as it should; the
//! table never held more than `--max-sessions` live sessions, nor a flooder more than
//! `--max-sessions-per-client`; every flood answer 200, or 429/503 with Retry-After; none lost.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::attack::PhaseResult;
use crate::drive::stats;
use crate::plan::Plan;
use crate::target::Target;
use crate::verdict::Verdict;

/// How one request of the run ended.
enum Ending {
    Granted,
    /// 429 or 503 with Retry-After.
    Refused,
    Failed(String),
}

#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    refused: usize,
    failures: BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, took: Duration, ending: Ending) {
        match ending {
            Ending::Granted => self.latencies.push(took),
            Ending::Refused => self.refused += 1,
            Ending::Failed(why) => *self.failures.entry(why).or_default() += 1,
        }
    }

    fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.refused += other.refused;
        for (why, n) in other.failures {
            *self.failures.entry(why).or_default() += n;
        }
    }

    fn failed(&self) -> usize {
        self.failures.values().sum()
    }
}

fn initialize(i: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": i, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "loadtest", "version": env!("CARGO_PKG_VERSION")}}})
}

fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .timeout(Duration::from_secs(10))
        .json(body);
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request
}

/// One flooding `initialize`: granted (200 with a session id), refused with Retry-After, or
/// failed.
async fn flood_once(http: &reqwest::Client, url: &str, i: u64) -> Ending {
    let answer = match post(http, url, None, &initialize(i)).send().await {
        Ok(answer) => answer,
        Err(e) => return Ending::Failed(format!("initialize lost: {e}")),
    };
    let status = answer.status().as_u16();
    let retry_after = answer.headers().contains_key("retry-after");
    let session = answer.headers().contains_key("mcp-session-id");
    let _ = answer.bytes().await;
    match status {
        200 if session => Ending::Granted,
        429 | 503 if retry_after => Ending::Refused,
        429 | 503 => Ending::Failed(format!("initialize {status} without Retry-After")),
        other => Ending::Failed(format!("initialize answered {other}")),
    }
}

/// The JSON-RPC answer in a body (JSON, or the first `data:` of an SSE stream).
fn answer_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("id").is_some())
            .unwrap_or(Value::Null)
    })
}

/// One whole session of the well-behaved client: each step timed, the first that fails says
/// why.
async fn behave_once(
    http: &reqwest::Client,
    url: &str,
    call: &Value,
    steps: &mut BTreeMap<&'static str, Tally>,
) {
    let started = Instant::now();
    let opened = post(http, url, None, &initialize(1)).send().await;
    let session = match opened {
        Ok(answer) if answer.status() == 200 => {
            let id = answer
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let _ = answer.bytes().await;
            id
        }
        Ok(answer) => {
            let why = format!("initialize answered {}", answer.status());
            steps
                .entry("initialize")
                .or_default()
                .add(started.elapsed(), Ending::Failed(why));
            return;
        }
        Err(e) => {
            let why = format!("initialize lost: {e}");
            steps
                .entry("initialize")
                .or_default()
                .add(started.elapsed(), Ending::Failed(why));
            return;
        }
    };
    let Some(session) = session else {
        let why = "initialize without a session id".to_owned();
        steps
            .entry("initialize")
            .or_default()
            .add(started.elapsed(), Ending::Failed(why));
        return;
    };
    steps
        .entry("initialize")
        .or_default()
        .add(started.elapsed(), Ending::Granted);
    let started = Instant::now();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ending = match post(http, url, Some(&session), &done).send().await {
        Ok(a) if a.status().is_success() => Ending::Granted,
        Ok(a) => Ending::Failed(format!("notifications/initialized answered {}", a.status())),
        Err(e) => Ending::Failed(format!("notifications/initialized lost: {e}")),
    };
    steps
        .entry("initialized")
        .or_default()
        .add(started.elapsed(), ending);
    let started = Instant::now();
    let ending = match post(http, url, Some(&session), call).send().await {
        Ok(a) if a.status() == 200 => {
            let answer = answer_of(&a.text().await.unwrap_or_default());
            if answer["result"]["isError"] == false && answer["result"]["content"].is_array() {
                Ending::Granted
            } else {
                Ending::Failed(format!("tools/call answered {answer}"))
            }
        }
        Ok(a) => Ending::Failed(format!("tools/call answered {}", a.status())),
        Err(e) => Ending::Failed(format!("tools/call lost: {e}")),
    };
    steps
        .entry("tools/call")
        .or_default()
        .add(started.elapsed(), ending);
    let started = Instant::now();
    let ending = match http
        .delete(url)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .timeout(Duration::from_secs(10))
        .send()
        .await
    {
        Ok(a) if a.status().is_success() => Ending::Granted,
        Ok(a) => Ending::Failed(format!("DELETE answered {}", a.status())),
        Err(e) => Ending::Failed(format!("DELETE lost: {e}")),
    };
    steps
        .entry("DELETE")
        .or_default()
        .add(started.elapsed(), ending);
}

/// The most live sessions, and the most of one client, `/health` reported while it was read.
#[derive(Default)]
struct Watched {
    table: AtomicU64,
    one_client: AtomicU64,
    reads: AtomicU64,
}

async fn watch(http: reqwest::Client, url: String, until: Instant, seen: Arc<Watched>) {
    while Instant::now() < until {
        if let Ok(answer) = http.get(&url).timeout(Duration::from_secs(5)).send().await
            && let Ok(body) = answer.json::<Value>().await
        {
            let clients = &body["data"]["clients"];
            if let Some(live) = clients["sessions"].as_u64() {
                seen.table.fetch_max(live, Ordering::AcqRel);
                seen.reads.fetch_add(1, Ordering::AcqRel);
            }
            for top in clients["top"].as_array().into_iter().flatten() {
                if let Some(n) = top["sessions"].as_u64() {
                    seen.one_client.fetch_max(n, Ordering::AcqRel);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn address(i: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + i as u8))
}

/// Runs the flood and judges it.
pub async fn run(plan: &Plan, target: &Target) -> (Vec<PhaseResult>, Vec<Verdict>, Vec<String>) {
    let flood = plan
        .sessions
        .clone()
        .expect("a sessions plan has its bounds");
    let url = format!("{}/mcp", target.url);
    let tool = target.tool.clone().unwrap_or_default();
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": tool, "arguments": plan.args}});
    let started = Instant::now();
    let until = started + plan.run_time;
    let seen = Arc::new(Watched::default());
    let watcher = tokio::spawn(watch(
        reqwest::Client::new(),
        format!("{}/health", target.url),
        until,
        seen.clone(),
    ));
    let barrier = Arc::new(tokio::sync::Barrier::new(
        flood.flooders * flood.connections + 1,
    ));
    let mut flooding = Vec::new();
    for f in 0..flood.flooders {
        let http = reqwest::Client::builder()
            .local_address(address(f))
            .build()
            .expect("a client");
        for c in 0..flood.connections {
            let (http, url, barrier) = (http.clone(), url.clone(), barrier.clone());
            flooding.push(tokio::spawn(async move {
                let mut tally = Tally::default();
                barrier.wait().await;
                let mut i = (c as u64) << 32;
                while Instant::now() < until {
                    let sent = Instant::now();
                    let ending = flood_once(&http, &url, i).await;
                    tally.add(sent.elapsed(), ending);
                    i += 1;
                }
                tally
            }));
        }
    }
    let behaving = {
        let http = reqwest::Client::builder()
            .local_address(IpAddr::V4(Ipv4Addr::LOCALHOST))
            .build()
            .expect("a client");
        let (url, barrier) = (url.clone(), barrier.clone());
        tokio::spawn(async move {
            let mut steps: BTreeMap<&'static str, Tally> = BTreeMap::new();
            barrier.wait().await;
            while Instant::now() < until {
                behave_once(&http, &url, &call, &mut steps).await;
            }
            steps
        })
    };
    let mut floods = Tally::default();
    for one in flooding {
        floods.merge(one.await.expect("a flooding task"));
    }
    let steps = behaving.await.expect("the well-behaved client");
    let _ = watcher.await;
    let seconds = started.elapsed().as_secs_f64();
    let table = seen.table.load(Ordering::Acquire);
    let one_client = seen.one_client.load(Ordering::Acquire);
    let reads = seen.reads.load(Ordering::Acquire);

    let flood_phase = phase(
        &format!(
            "flood: {} clients × {} connections, initialize",
            flood.flooders, flood.connections
        ),
        flood.flooders * flood.connections,
        seconds,
        vec![("initialize", floods)],
    );
    let cycles = steps.get("DELETE").map_or(0, |t| t.latencies.len());
    let behaved_failures: usize = steps.values().map(Tally::failed).sum();
    let behaved_refused: usize = steps.values().map(|t| t.refused).sum();
    let behaved_phase = phase(
        "well-behaved client: initialize, initialized, tools/call, DELETE",
        1,
        seconds,
        steps.into_iter().collect(),
    );
    let verdicts = vec![
        Verdict {
            name: "the well-behaved client is served throughout".into(),
            passed: behaved_failures + behaved_refused == 0 && cycles > 0,
            detail: format!(
                "{cycles} whole sessions, {behaved_failures} steps failed, {behaved_refused} refused"
            ),
        },
        Verdict {
            name: format!(
                "never more than mcp.max_sessions ({}) live",
                flood.max_sessions
            ),
            passed: table <= flood.max_sessions && reads > 0,
            detail: format!("at most {table} live in {reads} reads of /health"),
        },
        Verdict {
            name: format!(
                "never more than mcp.max_sessions_per_client ({}) of one client",
                flood.max_per_client
            ),
            passed: one_client <= flood.max_per_client && reads > 0,
            detail: format!("at most {one_client} of one client"),
        },
        Verdict {
            name: "every flood answer 200, or 429/503 with Retry-After; none lost".into(),
            passed: flood_phase.total.failures == 0 && flood_phase.refused.unwrap_or(0) > 0,
            detail: format!(
                "{} granted, {} refused, {} failed or lost",
                flood_phase.total.requests,
                flood_phase.refused.unwrap_or(0),
                flood_phase.total.failures
            ),
        },
    ];
    let notes = vec![format!(
        "The flooders ignore Retry-After and never end a session, as an attacker would; the \
         table is read from /health every 20 ms ({reads} reads)."
    )];
    (vec![flood_phase, behaved_phase], verdicts, notes)
}

fn phase(name: &str, users: usize, seconds: f64, tallies: Vec<(&str, Tally)>) -> PhaseResult {
    let mut all = Tally::default();
    let mut endpoints = Vec::new();
    for (step, tally) in tallies {
        endpoints.push(stats(
            step,
            tally.latencies.clone(),
            tally.failed(),
            seconds,
        ));
        all.merge(tally);
    }
    let failed = all.failed();
    PhaseResult {
        phase: name.to_owned(),
        users,
        pacing: "closed loop, all released at one barrier".into(),
        seconds,
        total: stats("all", all.latencies.clone(), failed, seconds),
        endpoints,
        errors: all.failures.into_iter().collect(),
        // A lost request is a failure here, named in `errors`.
        sent: None,
        lost: None,
        refused: Some(all.refused),
        drained_ms: None,
        send_lag_ms: None,
    }
}
