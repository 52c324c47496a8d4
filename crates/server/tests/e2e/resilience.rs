//! Containment of upstreams that fail without dying (`resilience`), each mechanism shown with
//! real faults, without it and with it: an HTTP API that hangs or answers 5xx on command
//! (tests/fixtures/fault_api.py), an MCP server written with the official SDK whose children
//! die or slow down on command (tests/fixtures/fault_mcp_server.py), a pool child stopped with
//! SIGSTOP, and a port that refuses connections.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::Killed;

use crate::harness::*;

/// fault_api.py on a free port.
struct FaultApi {
    port: u16,
    _process: Killed,
}

impl FaultApi {
    async fn start() -> FaultApi {
        let mut child = Command::new(venv_python())
            .args([fixture("fault_api.py").as_str(), "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start fault_api.py");
        let stdout = child.stdout.take().unwrap();
        let first = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        let line = tokio::time::timeout(Duration::from_secs(30), first)
            .await
            .expect("fault_api.py said nothing within 30 s")
            .unwrap()
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("fault_api.py said {line:?}"));
        FaultApi {
            port,
            _process: Killed(child),
        }
    }

    async fn set(&self, fault: Value) {
        let answer = reqwest::Client::new()
            .post(format!("http://127.0.0.1:{}/control", self.port))
            .json(&fault)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    }

    async fn calls(&self) -> u64 {
        let stats: Value = reqwest::get(format!("http://127.0.0.1:{}/stats", self.port))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        stats["calls"].as_u64().unwrap()
    }
}

/// Two providers of one `lookup` tool on the same API (served as `{name}_lookup`), each with
/// its own `resilience` (YAML flow), and the tool's timeout.
fn two_providers(port: u16, a: (&str, &str), b: (&str, &str), timeout_ms: u64) -> String {
    let provider = |(name, resilience): (&str, &str)| {
        format!(
            "  - name: {name}
    kind: http
    dependency: api
    tool_prefix: {name}_
    limits: {{ timeout_ms: {timeout_ms} }}
    resilience: {resilience}
    tools:
      - {{ name: lookup, description: looks a key up, input_schema: {{ type: object, properties: {{ key: {{ type: string }} }} }}, path: /lookup, query: {{ key: \"{{{{ key }}}}\" }} }}
"
        )
    };
    format!(
        "monitoring: {{ metrics_enabled: true }}\ndependencies:\n  api: {{ kind: http, base_url: \"http://127.0.0.1:{port}\", health_path: /health }}\nproviders:\n{}{}",
        provider(a),
        provider(b)
    )
}

/// Calls `tool` once with `key` on a kept-alive connection (as every client library keeps
/// one), timing it.
async fn timed(
    client: &reqwest::Client,
    gw: &Gateway,
    tool: &str,
    key: &str,
) -> (Answer, Duration) {
    let request = client
        .post(gw.url("/call-tool"))
        .json(&json!({"tool": tool, "arguments": {"key": key}}));
    let started = Instant::now();
    let response = request.send().await.unwrap();
    let answer = Answer::from(response).await;
    (answer, started.elapsed())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The breaker: against an API that hangs, every call of the unguarded provider waits its
/// full timeout; the guarded one's circuit opens after `min_calls` and its calls are refused
/// at once (503 with Retry-After naming the provider, isError over MCP), /health and
/// /metrics show it open, and once the API answers again a probe closes it.
#[tokio::test]
async fn an_open_circuit_answers_at_once_where_an_unguarded_call_waits_its_timeout() {
    let api = FaultApi::start().await;
    let gw = Gateway::start(
        "breaker",
        &two_providers(
            api.port,
            (
                "bare",
                "{ breaker: { enabled: false }, retry: { enabled: false } }",
            ),
            (
                "guarded",
                "{ breaker: { min_calls: 3, open_ms: 5000, probes: 1 } }",
            ),
            400,
        ),
    )
    .await;
    let client = reqwest::Client::new();
    assert_eq!(
        call(&gw, "guarded_lookup", json!({"key": "a"}))
            .await
            .status,
        200
    );
    api.set(json!({"mode": "hang", "hang_ms": 60000})).await;
    // One success and two timeouts are 3 calls, 2 failed: past 50 %, the circuit opens.
    for k in 0..2 {
        let (answer, _) = timed(&client, &gw, "guarded_lookup", &format!("g{k}")).await;
        assert_eq!(answer.code(), "TIMEOUT", "{:?}", answer.body);
    }
    let mut bare = Vec::new();
    let mut guarded = Vec::new();
    for k in 0..5 {
        let (answer, took) = timed(&client, &gw, "bare_lookup", &format!("b{k}")).await;
        assert_eq!(answer.code(), "TIMEOUT", "{:?}", answer.body);
        bare.push(took);
        let (answer, took) = timed(&client, &gw, "guarded_lookup", &format!("o{k}")).await;
        assert_eq!(answer.status, 503, "{:?}", answer.body);
        assert_eq!(answer.code(), "SERVICE_UNAVAILABLE");
        let message = answer.body["error"].as_str().unwrap();
        assert!(
            message.contains("circuit of provider 'guarded' is open"),
            "{message}"
        );
        assert!(
            answer.headers.get("retry-after").is_some(),
            "{:?}",
            answer.headers
        );
        guarded.push(took);
    }
    let (bare, guarded) = (median(bare), median(guarded));
    eprintln!("median while the API hangs: unguarded {bare:?}, circuit open {guarded:?}");
    assert!(bare >= Duration::from_millis(400), "{bare:?}");
    // Against the unguarded calls measured in the same test, not the wall clock: an open
    // circuit that waited for the upstream would take as long as they do.
    assert!(
        guarded * 10 < bare,
        "an open circuit took {guarded:?}, a tenth of the unguarded {bare:?} at most"
    );

    let health = get(&gw, "/health").await;
    let report = health.report();
    assert_eq!(
        report["providers"]["guarded"]["resilience"]["circuit"], "open",
        "{report}"
    );
    assert_eq!(
        report["providers"]["bare"]["resilience"]["circuit"],
        "closed"
    );
    assert_eq!(report["tools"]["guarded_lookup"]["status"], "unavailable");
    let metrics = reqwest::get(gw.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("mcp_http_gateway_circuit_state{provider=\"guarded\",service=\"breaker\",state=\"open\"} 1"),
        "{metrics}"
    );
    assert!(gw.logs().contains("circuit open"), "{}", gw.logs());

    // Over MCP the refusal is the tool's error result.
    let session = McpSession::open(&gw).await;
    let answer = session
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "guarded_lookup", "arguments": {"key": "m"}}}))
        .await;
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(
        answer
            .to_string()
            .contains("circuit of provider 'guarded' is open"),
        "{answer}"
    );

    // The API answers again: after the interval a probe goes through and closes the circuit.
    api.set(json!({"mode": "ok"})).await;
    eventually(
        Duration::from_secs(30),
        "a probe closing the circuit",
        || async {
            (call(&gw, "guarded_lookup", json!({"key": "p"}))
                .await
                .status
                == 200)
                .then_some(())
        },
    )
    .await;
    let report = get(&gw, "/health").await.report().clone();
    assert_eq!(
        report["providers"]["guarded"]["resilience"]["circuit"], "closed",
        "{report}"
    );
    assert!(gw.logs().contains("circuit closed"));
}

/// A port that refuses connections is a failure of the upstream too: the circuit opens on it.
#[tokio::test]
async fn a_port_that_refuses_connections_opens_the_circuit() {
    let refused = free_port();
    let gw = Gateway::start(
        "refused",
        &two_providers(
            refused,
            ("bare", "{ breaker: { enabled: false } }"),
            ("guarded", "{ breaker: { min_calls: 3, open_ms: 60000 } }"),
            2000,
        ),
    )
    .await;
    // The GET tool is read-only, so each call is tried 3 times: the first call's attempts
    // are the 3 failures that open the circuit.
    let answer = call(&gw, "guarded_lookup", json!({"key": "1"})).await;
    assert_eq!(answer.code(), "EXECUTION_ERROR", "{:?}", answer.body);
    // The open circuit answers by itself: the refusal names it (an attempt that reached the
    // port would be an EXECUTION_ERROR), not a time, which a busy machine moves.
    let answer = call(&gw, "guarded_lookup", json!({"key": "2"})).await;
    assert_eq!(answer.code(), "SERVICE_UNAVAILABLE", "{:?}", answer.body);
    let message = answer.body["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("circuit of provider 'guarded' is open"),
        "{message}"
    );
    let answer = call(&gw, "bare_lookup", json!({"key": "x"})).await;
    assert_eq!(answer.code(), "EXECUTION_ERROR", "{:?}", answer.body);
}

/// The retry budget: while the API answers 503 to everything, a provider without a budget
/// sends every read-only call three times; one with the default budget (20 % of calls) adds
/// at most a fifth, so the outage does not double the upstream's load.
#[tokio::test]
async fn the_retry_budget_keeps_an_outage_from_doubling_the_upstream_s_load() {
    let api = FaultApi::start().await;
    let gw = Gateway::start(
        "budget",
        &two_providers(
            api.port,
            (
                "unbudgeted",
                "{ breaker: { enabled: false }, retry: { attempts: 3, backoff_ms: 1, max_backoff_ms: 2, budget_percent: 100, min_per_second: 1000 } }",
            ),
            (
                "budgeted",
                "{ breaker: { enabled: false }, retry: { attempts: 3, backoff_ms: 1, max_backoff_ms: 2, min_per_second: 0 } }",
            ),
            5000,
        ),
    )
    .await;
    api.set(json!({"mode": "status", "status": 503})).await;
    let mut sent = Vec::new();
    for provider in ["unbudgeted", "budgeted"] {
        let before = api.calls().await;
        for k in 0..50 {
            let answer = call(
                &gw,
                &format!("{provider}_lookup"),
                json!({"key": format!("{provider}{k}")}),
            )
            .await;
            assert_eq!(answer.code(), "EXECUTION_ERROR", "{:?}", answer.body);
        }
        sent.push(api.calls().await - before);
    }
    eprintln!(
        "upstream calls for 50 callers during the outage: without a budget {}, with {}",
        sent[0], sent[1]
    );
    assert_eq!(sent[0], 150, "without a budget every call is tried 3 times");
    assert!(
        sent[1] <= 60,
        "the budget let {} upstream calls through for 50",
        sent[1]
    );
    let report = get(&gw, "/health").await.report().clone();
    assert!(
        report["providers"]["budgeted"]["resilience"]["retry_budget_exhausted"]
            .as_u64()
            .unwrap()
            >= 40,
        "{report}"
    );
}

/// An MCP fault server behind a pool of `instances` children; `control` is the fault file
/// (JSON) it reads at each call and `log` the file it writes each call it receives into.
fn fault_pool(
    name: &str,
    instances: u32,
    dir: &std::path::Path,
    resilience: &str,
    timeout_ms: u64,
) -> String {
    format!(
        "monitoring: {{ metrics_enabled: true }}
providers:
  - name: {name}
    kind: mcp
    command: \"{}\"
    args: [\"{}\"]
    env: {{ FAULT_CONTROL: \"{}\", FAULT_LOG: \"{}\" }}
    instances: {instances}
    limits: {{ timeout_ms: {timeout_ms} }}
    resilience: {resilience}
",
        venv_python(),
        fixture("fault_mcp_server.py"),
        dir.join("control.json").display(),
        dir.join("calls.log").display(),
    )
}

/// Writes the fault file at once (a temporary file renamed over it, as the fixture asks).
fn set_faults(dir: &std::path::Path, faults: Value) {
    let next = dir.join("control.json.next");
    std::fs::write(&next, faults.to_string()).unwrap();
    std::fs::rename(next, dir.join("control.json")).unwrap();
}

/// The calls the fault server received, by tool.
fn received(dir: &std::path::Path, tool: &str) -> usize {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["tool"] == tool)
        .count()
}

/// Retries: every other call kills the child that receives it before it answers. A read-only
/// tool's callers never see it (the call is sent again, to the other child); a write's callers
/// see every one, since a write is never sent twice.
#[tokio::test]
async fn a_child_dying_before_it_answers_is_hidden_from_read_only_calls_and_never_from_writes() {
    let dir = tempfile::tempdir().unwrap();
    set_faults(
        dir.path(),
        json!({"lookup": {"mode": "die", "every": 2}, "record": {"mode": "die", "every": 2}}),
    );
    let gw = Gateway::start(
        "retries",
        &fault_pool("faulty", 2, dir.path(), "{ breaker: { enabled: false }, retry: { attempts: 4, backoff_ms: 50, max_backoff_ms: 400 } }", 10000),
    )
    .await;
    let mut failed = std::collections::BTreeMap::new();
    for tool in ["lookup", "record"] {
        let mut errors = 0;
        for k in 0..6 {
            // Each call finds both children up: the one it kills is restarted before the next.
            eventually(
                Duration::from_secs(30),
                "both children connected",
                || async {
                    let report = get(&gw, "/health").await.report().clone();
                    let children = report["providers"]["faulty"]["instances"]
                        .as_array()?
                        .clone();
                    children
                        .iter()
                        .all(|c| c["status"] == "connected")
                        .then_some(())
                },
            )
            .await;
            let answer = call(&gw, tool, json!({"key": format!("{tool}{k}")})).await;
            if answer.status != 200 {
                eprintln!("{tool}: {}", answer.body);
                errors += 1;
            }
        }
        failed.insert(tool, errors);
    }
    eprintln!("callers' errors while every other call kills its child: {failed:?}");
    assert_eq!(
        failed["lookup"], 0,
        "a read-only caller saw the dying child"
    );
    assert_eq!(
        failed["record"], 3,
        "every other write died with its child: {failed:?}"
    );
    assert_eq!(received(dir.path(), "record"), 6, "a write was sent twice");
    let report = get(&gw, "/health").await.report().clone();
    // One retry per dying call at least (one more when it found the other child restarting).
    assert!(
        report["providers"]["faulty"]["resilience"]["retries"].as_u64() >= Some(3),
        "{report}"
    );
}

/// Outlier ejection: one child of a pool stopped with SIGSTOP times out every call it is
/// given. Without ejection it keeps its share of the calls; with it, it is left out of
/// rotation after a few failures, and /health and /metrics say so.
#[tokio::test]
async fn a_stopped_child_loses_its_share_of_calls_once_ejected() {
    let mut timeouts = Vec::new();
    for (name, resilience) in [
        ("kept", "{ outlier: { enabled: false } }"),
        (
            "ejected",
            "{ outlier: { consecutive_failures: 2, ejection_ms: 60000 } }",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let gw = Gateway::start(name, &fault_pool("pool", 2, dir.path(), resilience, 300)).await;
        let pids = gw.child_pids();
        assert_eq!(pids.len(), 2, "{pids:?}");
        // SAFETY: kill(2) on the gateway's own child.
        unsafe { libc::kill(pids[0] as i32, libc::SIGSTOP) };
        let mut timed_out = 0;
        for k in 0..20 {
            let answer = call(&gw, "lookup", json!({"key": format!("{name}{k}")})).await;
            match answer.code() {
                "TIMEOUT" => timed_out += 1,
                _ => assert_eq!(answer.status, 200, "{:?}", answer.body),
            }
        }
        if name == "ejected" {
            let report = get(&gw, "/health").await.report().clone();
            let children = report["providers"]["pool"]["instances"]
                .as_array()
                .unwrap()
                .clone();
            assert!(
                children.iter().any(|c| c["ejections"].as_u64() >= Some(1)
                    && c["ejected_for_ms"].as_u64().is_some()),
                "{children:?}"
            );
            let metrics = reqwest::get(gw.url("/metrics"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(
                metrics.contains(
                    "mcp_http_gateway_pool_ejections_total{provider=\"pool\",service=\"ejected\"} 1"
                ),
                "{metrics}"
            );
            assert!(gw.logs().contains("child left out of rotation"));
        }
        // SAFETY: as above.
        unsafe { libc::kill(pids[0] as i32, libc::SIGCONT) };
        timeouts.push(timed_out);
    }
    eprintln!(
        "timeouts of 20 calls with one child stopped: kept in rotation {}, ejected {}",
        timeouts[0], timeouts[1]
    );
    assert!(
        timeouts[0] >= 8,
        "without ejection the stopped child had {} calls",
        timeouts[0]
    );
    assert!(
        timeouts[1] <= 3,
        "with ejection the stopped child still had {} calls",
        timeouts[1]
    );
}

/// One provider of `lookup` (a GET: read-only) on an API served at every one of `base_urls`
/// (its dependency's endpoints), with `resilience` (YAML flow) and the tool's timeout.
fn endpoints_provider(base_urls: &[String], resilience: &str, timeout_ms: u64) -> String {
    format!(
        "monitoring: {{ metrics_enabled: true }}
dependencies:
  api: {{ kind: http, base_urls: [{}], health_path: /health }}
providers:
  - name: api
    kind: http
    dependency: api
    limits: {{ timeout_ms: {timeout_ms} }}
    resilience: {resilience}
    tools:
      - {{ name: lookup, description: looks a key up, input_schema: {{ type: object, properties: {{ key: {{ type: string }} }} }}, path: /lookup, query: {{ key: \"{{{{ key }}}}\" }} }}
",
        base_urls
            .iter()
            .map(|u| format!("\"{u}\""))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The resilience of the API's endpoints with outlier detection off (`KEPT`) and on
/// (`EJECTING`): the breaker and retries off, so that what is seen is the rotation alone.
const KEPT: &str =
    "{ breaker: { enabled: false }, retry: { enabled: false }, outlier: { enabled: false } }";
const EJECTING: &str = "{ breaker: { enabled: false }, retry: { enabled: false }, outlier: { consecutive_failures: 2, ejection_ms: 60000 } }";

/// The base URL of an API on `port` of this machine.
fn endpoint_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// Outlier ejection across the endpoints of one HTTP API (`base_urls`), each fault real:
/// an endpoint that hangs, one whose port refuses connections (and, in the next tests, one
/// that answers slowly). Kept in rotation, each takes about half the calls (and fails or slows
/// them); ejected, its share falls to the few calls that found it out. /health shows each
/// endpoint, its ejections and its time left out; /metrics counts them; the log says it once.
#[tokio::test]
async fn an_endpoint_that_hangs_or_refuses_loses_its_share_of_calls_once_ejected() {
    let good = FaultApi::start().await;
    let bad = FaultApi::start().await;
    let refused = free_port();
    // The fault, the endpoints, what a call that met it answers, and the most calls it may
    // still meet when ejection is on (the ones that found it out).
    for (fault, bad_url, met) in [
        ("hangs", endpoint_url(bad.port), "TIMEOUT"),
        (
            "refuses connections",
            endpoint_url(refused),
            "EXECUTION_ERROR",
        ),
    ] {
        bad.set(json!({"mode": "hang"})).await;
        let mut failed = Vec::new();
        for (name, resilience) in [("kept", KEPT), ("ejecting", EJECTING)] {
            let gw = Gateway::start(
                name,
                &endpoints_provider(&[bad_url.clone(), endpoint_url(good.port)], resilience, 300),
            )
            .await;
            let mut count = 0;
            for k in 0..20 {
                let answer = call(&gw, "lookup", json!({"key": format!("{name}{k}")})).await;
                if answer.status == 200 {
                    assert_eq!(answer.body["data"]["key"], format!("{name}{k}"));
                } else {
                    assert_eq!(answer.code(), met, "{fault}: {:?}", answer.body);
                    count += 1;
                }
            }
            if name == "ejecting" {
                let report = get(&gw, "/health").await.report().clone();
                let endpoints = report["providers"]["api"]["endpoints"].clone();
                assert_eq!(
                    endpoints[0]["address"],
                    bad_url.trim_start_matches("http://")
                );
                assert!(endpoints[0]["ejections"].as_u64() >= Some(1), "{endpoints}");
                assert!(
                    endpoints[0]["ejected_for_ms"].as_u64().is_some(),
                    "{endpoints}"
                );
                assert_eq!(endpoints[1]["ejections"], 0, "{endpoints}");
                let metrics = reqwest::get(gw.url("/metrics"))
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap();
                assert!(
                    metrics.contains(
                        "mcp_http_gateway_pool_ejections_total{provider=\"api\",service=\"ejecting\"} 1"
                    ),
                    "{metrics}"
                );
                assert_eq!(
                    gw.logs().matches("endpoint left out of rotation").count(),
                    1
                );
            }
            failed.push(count);
        }
        eprintln!(
            "failed calls of 20 with one endpoint that {fault}: kept in rotation {}, ejected {}",
            failed[0], failed[1]
        );
        assert!(
            failed[0] >= 8,
            "{fault}: without ejection only {} failed",
            failed[0]
        );
        assert!(
            failed[1] <= 3,
            "{fault}: with ejection {} still failed",
            failed[1]
        );
    }
}

/// Retries and hedges of a read-only call go to the other endpoint: with the defaults, a call
/// that found a refusing endpoint is retried there; hedged, a call on a hanging one is sent
/// again there and answered.
#[tokio::test]
async fn a_read_only_call_is_retried_or_hedged_on_the_other_endpoint() {
    let good = FaultApi::start().await;
    let bad = FaultApi::start().await;
    let refused = free_port();
    // No caller sees the refusing endpoint.
    let gw = Gateway::start(
        "defaults",
        &endpoints_provider(&[endpoint_url(refused), endpoint_url(good.port)], "{}", 300),
    )
    .await;
    for k in 0..10 {
        let answer = call(&gw, "lookup", json!({"key": format!("d{k}")})).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
    }
    // Hedged, with no ejection: a call on the hanging endpoint is sent again after 50 ms, to
    // the other (the least loaded), and answered from there.
    bad.set(json!({"mode": "hang"})).await;
    let gw = Gateway::start(
        "hedged",
        &endpoints_provider(
            &[endpoint_url(bad.port), endpoint_url(good.port)],
            "{ retry: { enabled: false }, outlier: { enabled: false }, hedge: { enabled: true, after_ms: 50 } }",
            2000,
        ),
    )
    .await;
    for k in 0..10 {
        let answer = call(&gw, "lookup", json!({"key": format!("h{k}")})).await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
    }
    let hedges = get(&gw, "/health").await.report()["providers"]["api"]["resilience"]["hedges"]
        .as_u64()
        .unwrap();
    assert!(hedges >= 3, "{hedges} hedges");
}

/// A slow endpoint (200 ms against a few) is ejected on its mean latency once it has 10
/// samples: kept in rotation it takes about half the calls, ejected a few.
#[tokio::test]
async fn a_slow_endpoint_loses_its_share_of_calls_once_ejected() {
    let good = FaultApi::start().await;
    let bad = FaultApi::start().await;
    bad.set(json!({"mode": "slow", "delay_ms": 200})).await;
    let mut shares = Vec::new();
    for (name, resilience) in [("slow-kept", KEPT), ("slow-ejecting", EJECTING)] {
        let gw = Gateway::start(
            name,
            &endpoints_provider(
                &[endpoint_url(bad.port), endpoint_url(good.port)],
                resilience,
                5000,
            ),
        )
        .await;
        let before = bad.calls().await;
        for k in 0..60 {
            let answer = call(&gw, "lookup", json!({"key": format!("{name}{k}")})).await;
            assert_eq!(answer.status, 200, "{:?}", answer.body);
        }
        shares.push(bad.calls().await - before);
    }
    eprintln!(
        "calls of 60 the slow endpoint took: kept in rotation {}, ejected {}",
        shares[0], shares[1]
    );
    assert!(
        shares[0] >= 25,
        "without ejection the slow endpoint took {}",
        shares[0]
    );
    assert!(
        shares[1] <= 15,
        "with ejection the slow endpoint took {}",
        shares[1]
    );
}

/// Coalescing: 100 identical read-only calls at once reach the upstream once, each caller
/// getting the answer (`meta.cache`: one miss, the rest coalesced); the same for a write
/// reaches it every time. A cache rule then answers the next identical call itself.
#[tokio::test]
async fn a_hundred_identical_read_only_calls_at_once_reach_the_upstream_once() {
    let dir = tempfile::tempdir().unwrap();
    set_faults(
        dir.path(),
        json!({"lookup": {"mode": "slow", "delay_ms": 1500}, "record": {"mode": "slow", "delay_ms": 1500}}),
    );
    let gw = Gateway::start(
        "coalescing",
        &format!(
            "limits: {{ max_concurrent_calls: 200, queue_depth: 200 }}\n{}",
            fault_pool(
                "faulty",
                1,
                dir.path(),
                "{ cache: { coalesce: true, tools: [ { tool: lookup, ttl_ms: 60000 } ] } }",
                20000
            )
        ),
    )
    .await;
    let at_once = |tool: &'static str, n: usize| {
        let url = gw.url("/call-tool");
        async move {
            let client = reqwest::Client::new();
            let calls = (0..n).map(|_| {
                let (client, url) = (client.clone(), url.clone());
                async move {
                    Answer::from(
                        client
                            .post(url)
                            .json(&json!({"tool": tool, "arguments": {"key": "same"}}))
                            .send()
                            .await
                            .unwrap(),
                    )
                    .await
                }
            });
            futures::future::join_all(calls).await
        }
    };
    let answers = at_once("lookup", 100).await;
    let mut statuses = std::collections::BTreeMap::new();
    for answer in &answers {
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        assert_eq!(answer.body["data"]["key"], "same");
        *statuses
            .entry(
                answer.body["meta"]["cache"]
                    .as_str()
                    .unwrap_or("none")
                    .to_owned(),
            )
            .or_insert(0) += 1;
    }
    assert_eq!(received(dir.path(), "lookup"), 1, "{statuses:?}");
    assert_eq!(statuses.get("miss"), Some(&1), "{statuses:?}");
    assert_eq!(statuses.get("coalesced"), Some(&99), "{statuses:?}");
    let writes = at_once("record", 20).await;
    assert!(
        writes
            .iter()
            .all(|a| a.status == 200 && a.body["meta"].get("cache").is_none())
    );
    assert_eq!(received(dir.path(), "record"), 20);
    // Kept: the next identical call is answered without the upstream.
    let again = call(&gw, "lookup", json!({"key": "same"})).await;
    assert_eq!(again.body["meta"]["cache"], "hit", "{:?}", again.body);
    assert_eq!(received(dir.path(), "lookup"), 1);
    let metrics = reqwest::get(gw.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("mcp_http_gateway_cache_results_total{provider=\"faulty\",result=\"coalesced\",service=\"coalescing\"} 99"), "{metrics}");
}
