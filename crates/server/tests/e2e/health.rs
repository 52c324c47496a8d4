//! GET /health: a provider that cannot start degrades the service and the other providers'
//! tools still work; no tool that can run makes it unavailable (503, the report in
//! `meta.health`); per-tool statistics after known calls; answers come at once from the last
//! background checks (`checked_at`), even with every dependency down or never answering, and a
//! provider's change of state shows without waiting for the periodic check.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

#[tokio::test]
async fn a_provider_that_cannot_start_degrades_the_service_and_fails_fast() {
    let extra = format!(
        "providers:\n{}  - {{ name: ghost, kind: mcp, command: /nonexistent/mcp-server }}\n",
        everything_provider("everything")
    );
    let gw = Gateway::start("degraded", &extra).await;
    let health = get(&gw, "/health").await;
    health.assert_envelope();
    assert_eq!(health.status, 200);
    assert_eq!(health.body["data"]["status"], "degraded");
    assert_eq!(health.body["data"]["state"], "DEGRADED");
    assert_eq!(
        health.body["data"]["dependencies"]["everything"]["status"],
        "connected"
    );
    let ghost = &health.body["data"]["dependencies"]["ghost"];
    assert_eq!(ghost["status"], "unavailable");
    assert!(
        ghost["error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/mcp-server"),
        "{ghost}"
    );
    // Tools of the live provider still work, and are healthy.
    assert_eq!(call(&gw, "echo", json!({"message": "x"})).await.status, 200);
    assert_eq!(
        get(&gw, "/health").await.body["data"]["tools"]["echo"]["status"],
        "healthy"
    );
}

/// A Bolt dependency on a port nobody listens on, with one query tool.
fn dead_bolt_provider(dependency: &str, provider: &str, tool: &str) -> (String, String) {
    let port = free_port();
    (
        format!("  {dependency}: {{ kind: bolt, uri: \"bolt://127.0.0.1:{port}\" }}\n"),
        format!(
            "  - name: {provider}\n    kind: cypher\n    dependency: {dependency}\n    tools:\n      - {{ name: {tool}, description: one row, input_schema: {{ type: object }}, query: \"RETURN 1 AS one\" }}\n"
        ),
    )
}

#[tokio::test]
async fn no_tool_that_can_run_is_503_with_the_report_and_some_is_degraded() {
    let (dependency, provider) = dead_bolt_provider("graphdb", "graph", "one_row");
    let gw = Gateway::start(
        "nothing-runs",
        &format!("dependencies:\n{dependency}providers:\n{provider}"),
    )
    .await;
    let health = get(&gw, "/health").await;
    health.assert_envelope();
    assert_eq!(
        (health.status.as_u16(), health.code()),
        (503, "SERVICE_UNAVAILABLE")
    );
    assert!(
        health.headers.contains_key("retry-after"),
        "{:?}",
        health.headers
    );
    let report = &health.body["meta"]["health"];
    assert_eq!(report["status"], "unavailable", "{report}");
    assert_eq!(report["state"], "UNAVAILABLE");
    assert_eq!(report["dependencies"]["graphdb"]["status"], "unavailable");
    assert_eq!(report["tools"]["one_row"]["status"], "unavailable");
    // The gateway still serves: the call fails at once, naming the database.
    let a = call(&gw, "one_row", json!({})).await;
    assert_eq!(a.code(), "EXECUTION_ERROR", "{}", a.body);

    // The same dead database next to a live MCP server: some tools can run.
    let (dependency, provider) = dead_bolt_provider("graphdb", "graph", "one_row");
    let gw = Gateway::start(
        "some-run",
        &format!(
            "dependencies:\n{dependency}providers:\n{provider}{}",
            everything_provider("everything")
        ),
    )
    .await;
    let health = get(&gw, "/health").await;
    assert_eq!(health.status, 200, "{}", health.body);
    let report = &health.body["data"];
    assert_eq!(report["status"], "degraded");
    assert_eq!(report["tools"]["one_row"]["status"], "unavailable");
    assert_eq!(report["tools"]["echo"]["status"], "healthy");
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_statistics_after_known_calls() {
    // 1.5 s per call: the long-running operation below is made to time out.
    let extra = format!(
        "limits: {{ call_timeout_ms: 1500 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("tool-stats", &extra).await;
    for i in 0..5 {
        assert_eq!(
            call(&gw, "echo", json!({"message": i.to_string()}))
                .await
                .status,
            200
        );
    }
    // The caller's mistake: refused before the tool runs, not the tool's failure.
    assert_eq!(
        call(&gw, "echo", json!({})).await.code(),
        "INVALID_ARGUMENTS"
    );
    // One more through the MCP surface: both surfaces count.
    let mcp = McpSession::open(&gw).await;
    let answer = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "over mcp"}}}))
        .await;
    assert!(answer["result"].is_object(), "{answer}");
    // A slow tool: two calls go through, two time out.
    let slow = |seconds: f64| json!({"duration": seconds, "steps": 1});
    for _ in 0..2 {
        let a = call(&gw, "trigger-long-running-operation", slow(0.2)).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    for _ in 0..2 {
        let a = call(&gw, "trigger-long-running-operation", slow(10.0)).await;
        assert_eq!(a.code(), "TIMEOUT", "{}", a.body);
    }

    let health = get(&gw, "/health").await;
    let tools = &health.body["data"]["tools"];
    let echo = &tools["echo"];
    assert_eq!(echo["calls"], 6, "{echo}");
    assert_eq!(echo["error_rate"], 0.0);
    assert_eq!(echo["queries_per_minute"], 6);
    assert_eq!(echo["status"], "healthy");
    assert!(echo["last_success"].is_string(), "{echo}");
    assert!(echo.get("last_error").is_none(), "{echo}");
    let p50 = echo["p50_ms"].as_f64().unwrap();
    let p95 = echo["p95_ms"].as_f64().unwrap();
    assert!(0.0 < p50 && p50 <= p95 && p95 < 1500.0, "{echo}");

    let slow = &tools["trigger-long-running-operation"];
    assert_eq!(slow["calls"], 4, "{slow}");
    assert_eq!(slow["error_rate"], 0.5);
    // Half its recent calls failed: degraded; the service stays healthy, every tool can run.
    assert_eq!(slow["status"], "degraded");
    assert_eq!(slow["last_error"]["code"], "TIMEOUT", "{slow}");
    assert!(slow["last_error"]["at"].is_string());
    assert!(
        slow["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains("1500 ms"),
        "{slow}"
    );
    // Nearest rank: of 200, 200, 1500, 1500 ms, the median is a quick one, p95 a timeout.
    let p50 = slow["p50_ms"].as_f64().unwrap();
    let p95 = slow["p95_ms"].as_f64().unwrap();
    assert!((150.0..1400.0).contains(&p50), "{slow}");
    assert!((1400.0..3000.0).contains(&p95), "{slow}");
    // A tool never called is listed with zeros.
    assert_eq!(tools["get-sum"]["calls"], 0, "{tools}");
    assert_eq!(tools["get-sum"]["status"], "healthy");
    assert_eq!(health.body["data"]["status"], "healthy");
}

/// A TCP listener that accepts connections and never answers; held open for the test.
fn blackhole() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn health_answers_at_once_with_every_dependency_down_or_silent() {
    let (silent_bolt, silent_http) = (blackhole(), blackhole());
    let (dead, dead_provider) = dead_bolt_provider("closed", "on-closed", "closed_row");
    let extra = format!(
        "dependencies:
{dead}  silent: {{ kind: bolt, uri: \"bolt://127.0.0.1:{silent_bolt}\" }}
  mute: {{ kind: http, base_url: \"http://127.0.0.1:{silent_http}\", health_path: /health }}
providers:
{dead_provider}  - name: on-silent
    kind: cypher
    dependency: silent
    tools:
      - {{ name: silent_row, description: one row, input_schema: {{ type: object }}, query: \"RETURN 1 AS one\" }}
  - name: quiet
    kind: http
    dependency: mute
    tools:
      - {{ name: ask, description: a GET, input_schema: {{ type: object }}, path: /x }}
  - {{ name: ghost, kind: mcp, command: /nonexistent/mcp-server }}
"
    );
    let gw = Gateway::start("all-down", &extra).await;
    // The check that outlived its budget was logged when it happened, before anyone asked.
    assert!(
        gw.logs()
            .contains("no answer to the health check within 1000 ms"),
        "{}",
        gw.logs()
    );
    let client = reqwest::Client::new();
    let mut slowest = Duration::ZERO;
    let mut last = Value::Null;
    for _ in 0..50 {
        let started = Instant::now();
        let answer = Answer::from(client.get(gw.url("/health")).send().await.unwrap()).await;
        slowest = slowest.max(started.elapsed());
        last = answer.report().clone();
    }
    // Inline checks took a full check budget (1000 ms) per request; a generous bound for a
    // debug build on a busy machine (the release figure is in docs/performance.md).
    assert!(
        slowest < Duration::from_millis(200),
        "slowest /health: {slowest:?}"
    );

    let deps = &last["dependencies"];
    assert_eq!(deps["closed"]["status"], "unavailable", "{deps}");
    assert_eq!(deps["ghost"]["status"], "unavailable", "{deps}");
    assert_eq!(deps["mute"]["status"], "unknown", "{deps}");
    assert_ne!(deps["silent"]["status"], "connected", "{deps}");
    for (name, dep) in deps.as_object().unwrap() {
        let at = dep["checked_at"].as_str().unwrap_or_default();
        assert!(
            chrono::DateTime::parse_from_rfc3339(at).is_ok() && at.ends_with('Z'),
            "{name}: checked_at {at:?}"
        );
    }
    // The silent ones may run: degraded, not unavailable.
    assert_eq!(last["status"], "degraded", "{last}");
    assert_eq!(last["tools"]["closed_row"]["status"], "unavailable");
    assert_eq!(last["tools"]["ask"]["status"], "degraded");
}

#[tokio::test]
async fn a_change_of_state_shows_at_once_not_at_the_next_periodic_check() {
    // No periodic check within the test: only the provider's own report can change /health.
    let extra = format!(
        "monitoring: {{ health_check_interval: 3600 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("pushed", &extra).await;
    let first = get(&gw, "/health").await;
    let everything = &first.body["data"]["dependencies"]["everything"];
    assert_eq!(everything["status"], "connected");
    let checked_at = everything["checked_at"].as_str().unwrap().to_owned();
    // Answered from the last check: asking again does not check again.
    let again = get(&gw, "/health").await;
    assert_eq!(
        again.body["data"]["dependencies"]["everything"]["checked_at"],
        checked_at.as_str()
    );

    let child = gw.child_pids()[0];
    // SAFETY: kill(2) on the gateway's child.
    unsafe { libc::kill(child as i32, libc::SIGKILL) };
    let down = until_dependency(&gw, "everything", "unavailable", Duration::from_secs(5)).await;
    let at = down.report()["dependencies"]["everything"]["checked_at"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(at > checked_at, "{at} after {checked_at}");
    // And back, once the restarted child has finished its handshake.
    until_dependency(&gw, "everything", "connected", Duration::from_secs(10)).await;
    assert_eq!(
        call(&gw, "echo", json!({"message": "back"})).await.status,
        200
    );
}
