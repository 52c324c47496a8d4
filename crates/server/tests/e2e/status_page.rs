//! GET /status, the page for people, against the real binary and server-everything: the page in
//! headless Chromium (tests/fixtures/status_page.mjs) lists every tool, its charts move while a
//! load runs, axe finds no serious violation and nothing leaves loopback; with API keys on the
//! page asks for one and works with it, while its report alone is refused without; and the
//! report over HTTP names a failure by code and request id, never by its message.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

/// A timeline sample every second (the default is 10 s), so the charts move within the
/// fixture's watch; `trigger-long-*` times out after 300 ms, so a failure is easy to make.
fn config(security: &str) -> String {
    format!(
        "monitoring: {{ status_interval_ms: 1000 }}\n{security}providers:\n  - {{ name: everything, kind: mcp, command: node, args: [\"{}\", stdio], limits: {{ tools: [{{ tool: 'trigger-long-*', timeout_ms: 300 }}] }} }}\n",
        everything_js()
    )
}

const KEY: &str = "status-page-key-value";

/// Keys on (and the rate limit raised: a page polls, and a test is one client).
fn keyed() -> String {
    config(&format!(
        "security:\n  rate_limit: {}\n  api_keys:\n    - {{ name: ops, value_env: MHG_STATUS_KEY }}\n",
        testkit::BULK_RATE_LIMIT
    ))
}

/// What the browser fixture printed, and how it ended.
pub(crate) struct Seen {
    pub success: bool,
    code: Option<i32>,
    pub report: Value,
    pub output: String,
}

/// Runs the browser fixture against `gw`'s page with `args`, within 120 s.
pub(crate) async fn browse(gw: &Gateway, args: &[&str]) -> Seen {
    let run = tokio::process::Command::new("node")
        .arg(fixture("status_page.mjs"))
        .args(["--url", &gw.url("/status"), "--timeout-ms", "30000"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the browser done within 120 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    Seen {
        success: out.status.success(),
        code: out.status.code(),
        report,
        output: format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// Every tool GET /tools lists (with `key` when keys are on).
async fn tool_names(gw: &Gateway, key: Option<&str>) -> Vec<String> {
    let mut request = reqwest::Client::new().get(gw.url("/tools"));
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let body: Value = request.send().await.unwrap().json().await.unwrap();
    body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Calls echo over and over (a pause between calls, so the machine is shared) until `stop`.
fn load(gw: &Gateway, stop: Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<u64>> {
    (0..2)
        .map(|worker| {
            let url = gw.url("/call-tool");
            let stop = stop.clone();
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut ok = 0;
                while !stop.load(Ordering::Relaxed) {
                    let body =
                        json!({"tool": "echo", "arguments": {"message": format!("load {worker}")}});
                    if let Ok(answer) = client.post(&url).json(&body).send().await
                        && answer.status() == 200
                    {
                        ok += 1;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                ok
            })
        })
        .collect()
}

fn assert_clean(seen: &Seen) {
    let report = &seen.report;
    assert_eq!(report["offsite_requests"], json!([]), "{}", seen.output);
    assert_eq!(report["console_errors"], json!([]), "{}", seen.output);
    assert_eq!(report["missing_tools"], json!([]), "{}", seen.output);
}

#[tokio::test]
async fn the_page_lists_every_tool_and_its_charts_move_under_load() {
    let gw = Gateway::start("status-page", &config("")).await;
    let tools = tool_names(&gw, None).await;
    assert!(tools.len() > 3 && tools.contains(&"echo".to_owned()));
    let stop = Arc::new(AtomicBool::new(false));
    let workers = load(&gw, stop.clone());
    let seen = browse(
        &gw,
        &[
            "--expect-tools",
            &tools.join(","),
            "--watch-seconds",
            "12",
            "--axe",
        ],
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let mut calls = 0;
    for worker in workers {
        calls += worker.await.unwrap();
    }
    assert!(seen.success, "{}", seen.output);
    assert!(seen.report.get("error").is_none(), "{}", seen.output);
    assert_clean(&seen);
    assert!(calls > 10, "the load ran: {calls} calls");
    let report = &seen.report;
    assert_eq!(report["moved"], true, "{}", seen.output);
    assert_eq!(report["axe"]["critical"], 0, "{}", seen.output);
    assert_eq!(report["axe"]["serious"], 0, "{}", seen.output);
    assert_eq!(report["asked_for_key"], false, "{}", seen.output);
    assert_eq!(report["horizontal_overflow"], false, "{}", seen.output);
    let listed: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for tool in &tools {
        assert!(listed.contains(&tool.as_str()), "{tool}: {}", seen.output);
    }
}

#[tokio::test]
async fn with_keys_on_the_page_asks_for_one_and_only_its_report_is_refused_without() {
    let gw = Gateway::start_env("status-keys", &keyed(), &[("MHG_STATUS_KEY", KEY)]).await;
    // Over plain HTTP first: the page and its assets are public, the report is not.
    let client = reqwest::Client::new();
    let page = client.get(gw.url("/status")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let asset = client
        .get(gw.url("/status/assets/status.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(asset.status(), 200);
    let refused = Answer::from(client.get(gw.url("/status/data")).send().await.unwrap()).await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    refused.assert_envelope();
    assert_eq!(refused.code(), "UNAUTHORIZED");
    let tools = tool_names(&gw, Some(KEY)).await;

    let without = browse(&gw, &["--expect-tools", &tools.join(",")]).await;
    assert_eq!(without.code, Some(1), "{}", without.output);
    assert_eq!(without.report["asked_for_key"], true, "{}", without.output);
    assert_eq!(without.report["key_sent"], false, "{}", without.output);

    let with = browse(
        &gw,
        &["--key", KEY, "--expect-tools", &tools.join(","), "--axe"],
    )
    .await;
    assert!(with.success, "{}", with.output);
    assert_clean(&with);
    assert_eq!(with.report["asked_for_key"], true, "{}", with.output);
    assert_eq!(with.report["key_sent"], true, "{}", with.output);
    assert_eq!(with.report["axe"]["serious"], 0, "{}", with.output);
    assert_eq!(with.report["axe"]["critical"], 0, "{}", with.output);
    assert!(!with.output.contains(KEY), "the key is never printed");
}

/// Every string anywhere in `value`.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

#[tokio::test]
async fn the_report_names_the_last_failure_by_its_request_id_and_never_its_message() {
    let gw = Gateway::start("status-data", &config("")).await;
    let client = reqwest::Client::new();
    assert_eq!(
        call(&gw, "echo", json!({"message": "hi"})).await.status,
        200
    );
    let failed = call(
        &gw,
        "trigger-long-running-operation",
        json!({"duration": 2, "steps": 1}),
    )
    .await;
    assert_eq!(failed.code(), "TIMEOUT", "{}", failed.body);
    let request_id = failed.headers["x-request-id"].to_str().unwrap().to_owned();
    let message = failed.body["error"].as_str().unwrap().to_owned();

    // Two samples at least (one a second after the baseline), so every series has points.
    let data = eventually(Duration::from_secs(15), "two timeline samples", || {
        let request = client.get(gw.url("/status/data")).send();
        async move {
            let answer = request.await.ok()?;
            assert_eq!(answer.headers()["cache-control"], "no-store");
            assert_eq!(answer.headers()["x-content-type-options"], "nosniff");
            let body: Value = answer.json().await.ok()?;
            assert_eq!(body["success"], true, "{body}");
            let data = body["data"].clone();
            (data["timeline"]["t"].as_array()?.len() >= 2).then_some(data)
        }
    })
    .await;

    for field in [
        "service",
        "version",
        "state",
        "status",
        "uptime_seconds",
        "generated_at",
        "active_calls",
        "queued_calls",
        "dependencies",
        "providers",
        "cluster",
        "tools",
        "timeline",
    ] {
        assert!(data.get(field).is_some(), "{field}: {data}");
    }
    assert_eq!(data["service"], "status-data");
    assert_eq!(data["cluster"], Value::Null);
    assert_eq!(data["dependencies"]["everything"]["status"], "connected");
    assert_eq!(data["providers"]["everything"]["kind"], "mcp");

    let tools = data["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted by name");
    assert_eq!(names, tool_names(&gw, None).await);
    for tool in tools {
        assert_eq!(tool["provider"], "everything", "{tool}");
        let keys: Vec<&String> = tool.as_object().unwrap().keys().collect();
        assert!(
            !keys.iter().any(|k| *k == "error" || *k == "message"),
            "{tool}"
        );
        if let Some(last) = tool["last_error"].as_object() {
            let keys: Vec<&String> = last.keys().collect();
            assert_eq!(keys, ["at", "code", "request_id"], "{tool}");
        }
    }
    for text in strings(&data["tools"]) {
        assert_ne!(text, message, "no error message in tools");
    }
    assert!(!data.to_string().contains(&message), "{data}");
    let slow = tools
        .iter()
        .find(|t| t["name"] == "trigger-long-running-operation")
        .unwrap();
    assert_eq!(slow["last_error"]["code"], "TIMEOUT", "{slow}");
    assert_eq!(
        slow["last_error"]["request_id"],
        request_id.as_str(),
        "{slow}"
    );
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["calls"], 1);
    assert_eq!(echo["status"], "healthy");
    assert_eq!(echo["last_error"], Value::Null);
    assert!(echo["p95_ms"].is_number(), "{echo}");

    let timeline = &data["timeline"];
    assert_eq!(timeline["interval_seconds"], 1.0);
    let n = timeline["t"].as_array().unwrap().len();
    assert!(n <= 360);
    for series in ["queue_depth", "active_calls", "refusals_per_s"] {
        assert_eq!(timeline[series].as_array().unwrap().len(), n, "{series}");
    }
    let series = timeline["tools"].as_object().unwrap();
    assert_eq!(
        series.len(),
        names.len(),
        "every tool listed has its series"
    );
    for (name, s) in series {
        for field in ["calls_per_s", "errors_per_s", "p95_ms"] {
            assert_eq!(s[field].as_array().unwrap().len(), n, "{name} {field}");
        }
    }
    let t: Vec<i64> = timeline["t"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "oldest first: {t:?}");
}
