//! The load suite has teeth: the `loadtest` binary against the real gateway binary, whose one
//! tool (an `http` provider) calls a tiny real upstream (`loadtest::upstream`) — healthy, then
//! with a fault injected there, never in the gateway: an 8× slower upstream, an upstream that
//! serves one call at a time, an upstream that drops one connection. Each healthy run passes
//! with margin; each fault fails the verdict meant to catch it. Runs are 2 s per phase and one
//! at a time (they measure latency on a shared machine).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use loadtest::upstream::{Faults, Upstream};
use serde_json::Value;
use testkit::{Killed, free_port, poll, workspace_bin};

/// One load run at a time: they measure latency.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The service's admission limits, as the overload run is told them.
const LIMIT: usize = 2;
const QUEUE: usize = 2;
const QUEUE_TIMEOUT_MS: u64 = 1000;

struct Gateway {
    _process: Killed,
    url: String,
    _work: tempfile::TempDir,
}

fn config(port: u16, upstream: u16, limits: &str) -> String {
    format!(
        r#"service: {{ name: teeth, port: {port} }}
security: {{ rate_limit: 1000000 }}
limits: {{ call_timeout_ms: 10000{limits} }}
dependencies:
  up: {{ kind: http, base_url: "http://127.0.0.1:{upstream}", health_path: /health }}
providers:
  - name: up
    kind: http
    dependency: up
    tools:
      - name: slow
        description: Answers after the upstream's delay
        input_schema: {{ type: object }}
        method: POST
        path: /slow
"#
    )
}

/// A gateway in front of `upstream` with the default admission limits (64 at once), which the
/// load runs stay under.
fn gateway(upstream: &Upstream) -> Gateway {
    gateway_with(upstream, "")
}

/// A gateway in front of `upstream` with the small admission limits the overload runs are told.
fn admitting_gateway(upstream: &Upstream) -> Gateway {
    gateway_with(
        upstream,
        &format!(
            ", max_concurrent_calls: {LIMIT}, queue_depth: {QUEUE}, queue_timeout_ms: {QUEUE_TIMEOUT_MS}"
        ),
    )
}

fn gateway_with(upstream: &Upstream, limits: &str) -> Gateway {
    let work = tempfile::tempdir().unwrap();
    let port = free_port();
    let file = work.path().join("teeth.yaml");
    std::fs::write(&file, config(port, upstream.port, limits)).unwrap();
    let gateway = workspace_bin("mcp-http-gateway");
    let process = Killed(
        Command::new(gateway)
            .args(["serve", "--config"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}");
    poll(Duration::from_secs(30), "the gateway to be healthy", || {
        let body: Value = reqwest::blocking::get(format!("{url}/health"))
            .ok()?
            .json()
            .ok()?;
        (body["data"]["status"] == "healthy").then_some(())
    });
    Gateway {
        _process: process,
        url,
        _work: work,
    }
}

fn upstream(delay_ms: u64, serial: bool, drop_nth: Option<u64>) -> Upstream {
    Upstream::spawn(
        0,
        Faults {
            delay: Duration::from_millis(delay_ms),
            serial,
            drop_nth,
        },
    )
    .unwrap()
}

/// Runs the binary; its exit code and summary.json.
fn loadtest(url: &str, args: &[&str]) -> (i32, Value) {
    let report = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_loadtest"))
        .args(["--url", url, "--scenario", "call", "--run-time", "2s"])
        .args(args)
        .arg("--report")
        .arg(report.path())
        .output()
        .unwrap();
    let code = out.status.code().unwrap();
    let summary = read_summary(report.path()).unwrap_or_else(|| {
        panic!(
            "no summary.json (exit {code}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    for v in summary["verdicts"].as_array().into_iter().flatten() {
        eprintln!("{} — {}: {}", v["name"], v["passed"], v["detail"]);
    }
    (code, summary)
}

fn read_summary(dir: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).ok()?).ok()
}

fn verdict(summary: &Value, i: usize) -> (bool, String) {
    let v = &summary["verdicts"][i];
    (
        v["passed"].as_bool().unwrap(),
        format!("{}: {}", v["name"], v["detail"]),
    )
}

/// 20 clients at 100 calls/s; the upstream takes 5 ms, so a call's p95 is ~10 ms through the
/// debug gateway and ~23 ms through the coverage-instrumented one CI runs: the 38 ms budget (an
/// absolute one, which CI's load test no longer sets) holds with room for a busy machine, and
/// 8× slower (40 ms, above the budget by the upstream's time alone) can never meet it.
const LOAD: &[&str] = &[
    "--users",
    "20",
    "--rate",
    "100",
    "--no-saturation",
    "--budget-p95-ms",
    "38",
];

#[test]
fn load_passes_and_an_8x_slowdown_fails_the_budget() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let fast = upstream(5, false, None);
    let (code, summary) = loadtest(&gateway(&fast).url, LOAD);
    assert_eq!(code, 0, "{summary:#}");
    let open = &summary["phases"][1];
    assert_eq!(open["phase"], "open loop");
    assert_eq!(open["lost"], 0);
    assert!(open["sent"].as_u64().unwrap() >= 190, "{open:#}");

    let slow = upstream(40, false, None);
    let (code, summary) = loadtest(&gateway(&slow).url, LOAD);
    assert_eq!(code, 1, "{summary:#}");
    // The verdicts: no failure, the ratio to the baseline, the budget.
    let (failures, budget) = (verdict(&summary, 0), verdict(&summary, 2));
    assert!(failures.0, "nothing failed: {}", failures.1);
    assert!(!budget.0, "the budget must fail: {}", budget.1);
}

#[test]
fn an_upstream_that_serves_one_call_at_a_time_fails_the_2x_verdict() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 5 ms one at a time carries 200 calls/s; 300/s piles up behind it.
    let serial = upstream(5, true, None);
    let (code, summary) = loadtest(
        &gateway(&serial).url,
        &[
            "--users",
            "20",
            "--rate",
            "300",
            "--no-saturation",
            "--budget-p95-ms",
            "10000",
        ],
    );
    assert_eq!(code, 1, "{summary:#}");
    let (passed, detail) = verdict(&summary, 1);
    assert!(!passed, "the 2× verdict must fail: {detail}");
}

#[test]
fn a_single_lost_call_fails_the_load_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dropping = upstream(5, false, Some(50));
    let (code, summary) = loadtest(&gateway(&dropping).url, LOAD);
    assert_eq!(code, 1, "{summary:#}");
    let (passed, detail) = verdict(&summary, 0);
    assert!(!passed, "{detail}");
    let failed: u64 = summary["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["total"]["failures"].as_u64().unwrap())
        .sum();
    assert_eq!(failed, 1, "{detail}");
}

/// Overload: 5 × the limit of 2 calling a tool whose upstream takes 100 ms.
fn overload(url: &str, tool_delay_ms: u64) -> (i32, Value) {
    loadtest(
        url,
        &[
            "--mode",
            "overload",
            "--admission-limit",
            &LIMIT.to_string(),
            "--queue-depth",
            &QUEUE.to_string(),
            "--queue-timeout-ms",
            &QUEUE_TIMEOUT_MS.to_string(),
            "--tool-delay-ms",
            &tool_delay_ms.to_string(),
        ],
    )
}

#[test]
fn overload_passes_and_fails_on_a_slow_or_lost_call() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let upstream_ok = upstream(100, false, None);
    let service = admitting_gateway(&upstream_ok);
    let (code, summary) = overload(&service.url, 100);
    assert_eq!(code, 0, "{summary:#}");
    let run = &summary["phases"][0];
    assert_eq!(run["users"], 10);
    assert_eq!(run["lost"], 0);
    let refused = run["refused"].as_u64().unwrap();
    assert!(refused > 0, "10 callers, 2 running, 2 queued: {run:#}");

    // The upstream 5× slower than the run was told: the admitted p99 is out of bounds, and the
    // admitted rate a fifth of the ceiling the run was told.
    let (code, summary) = overload(&service.url, 20);
    assert_eq!(code, 1, "{summary:#}");
    assert!(verdict(&summary, 0).0 && verdict(&summary, 1).0 && verdict(&summary, 2).0);
    for (i, what) in [(3, "calls/s"), (4, "p99")] {
        let (passed, detail) = verdict(&summary, i);
        assert!(!passed && detail.contains(what), "{detail}");
    }

    // One call's connection dropped upstream: the gateway answers it with an error, which is
    // neither 200 nor 503 + Retry-After.
    let dropping = upstream(100, false, Some(5));
    let (code, summary) = overload(&admitting_gateway(&dropping).url, 100);
    assert_eq!(code, 1, "{summary:#}");
    let (passed, detail) = verdict(&summary, 0);
    assert!(!passed, "{detail}");
    assert!(detail.contains(", 1 other"), "{detail}");
}
