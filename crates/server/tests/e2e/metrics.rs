//! GET /metrics against real components: the gateway in front of real MCP servers, its
//! text checked by `promtool check metrics`, and scraped by a real Prometheus whose PromQL
//! answers the calls the test made. Off, /metrics is an unknown route; on, it needs the API key
//! like the tool routes, and each service of a process shows only its own series.

use std::cell::RefCell;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::{Killed, until};

use crate::harness::*;

/// `prometheus` or `promtool`, which scripts/install-test-tools.sh installs: a test that needs
/// one fails saying so rather than skipping.
fn prometheus_tool(name: &str) -> String {
    let found = Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "`{name}` is not installed: run scripts/install-test-tools.sh (Debian package `prometheus`)"
    );
    name.to_owned()
}

async fn scrape(gw: &Gateway) -> reqwest::Response {
    reqwest::get(gw.url("/metrics")).await.unwrap()
}

/// The value of the sample of `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, rest) = series.split_once('{').unwrap_or((series, "}"));
            let all = labels
                .iter()
                .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
            (series_name == name && all).then(|| value.parse().ok())?
        })
}

/// A series by name and some of its labels, and its value.
type Expected<'a> = (&'a str, &'a [(&'a str, &'a str)], f64);

/// `promtool check metrics` on `text`: its verdict and what it said.
fn promtool_check(text: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = Command::new(prometheus_tool("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success() && said.trim().is_empty(), said)
}

/// A Prometheus on a free loopback port scraping `target` every second, with its storage in
/// a temporary folder; killed when dropped.
struct Prometheus {
    _process: Killed,
    port: u16,
    dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: u16) -> Prometheus {
        let binary = prometheus_tool("prometheus");
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global: {{ scrape_interval: 1s, evaluation_interval: 1s }}\n\
                 scrape_configs:\n  - job_name: gateway\n    scrape_interval: 1s\n    \
                 scrape_timeout: 1s\n    static_configs:\n      - targets: [\"127.0.0.1:{target}\"]\n"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let process = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        Prometheus {
            _process: Killed(process),
            port,
            dir,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    async fn api(&self, path: &str, query: &[(&str, &str)]) -> Option<Value> {
        let url = format!("http://127.0.0.1:{}/api/v1/{path}", self.port);
        let answer: Value = reqwest::Client::new()
            .get(url)
            .query(query)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (answer["status"] == "success").then(|| answer["data"].clone())
    }

    /// Waits until the one target has been scraped and is up; panics with Prometheus's log
    /// and the target's last error if it does not come.
    async fn wait_target_up(&self) {
        let last = RefCell::new(Value::Null);
        let up = until(Duration::from_secs(60), || async {
            let data = self.api("targets", &[]).await?;
            let target = data["activeTargets"].get(0)?.clone();
            *last.borrow_mut() = target.clone();
            (target["health"] == "up").then_some(())
        })
        .await;
        assert!(
            up.is_some(),
            "the gateway target never came up in Prometheus: {}\n{}",
            last.borrow(),
            self.log()
        );
    }

    /// Runs `query` until its result satisfies `wanted`; the last result when it never does.
    async fn query_until(
        &self,
        query: &str,
        wanted: impl Fn(&Value) -> bool,
    ) -> Result<Value, Value> {
        let last = RefCell::new(Value::Null);
        let found = until(Duration::from_secs(30), || async {
            let data = self.api("query", &[("query", query)]).await?;
            *last.borrow_mut() = data["result"].clone();
            wanted(&data["result"]).then(|| data["result"].clone())
        })
        .await;
        found.ok_or(last.into_inner())
    }
}

#[tokio::test]
async fn scraped_by_a_real_prometheus_and_clean_for_promtool() {
    let extra = format!(
        "monitoring: {{ metrics_enabled: true }}\nlimits: {{ call_timeout_ms: 1500 }}\nproviders:\n{}{}",
        everything_provider("everything"),
        time_provider("time")
    );
    let gw = Gateway::start("metered", &extra).await;

    // Calls that succeed, fail in the tool, time out, and never reach a tool; one over MCP.
    for i in 0..3 {
        let a = call(&gw, "echo", json!({"message": format!("m{i}")})).await;
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let a = call(&gw, "get_current_time", json!({"timezone": "Not/AZone"})).await;
    assert_eq!(a.code(), "EXECUTION_ERROR");
    let a = call(
        &gw,
        "trigger-long-running-operation",
        json!({"duration": 10, "steps": 2}),
    )
    .await;
    assert_eq!(a.code(), "TIMEOUT");
    let a = call(&gw, "echo", json!({"message": 7})).await;
    assert_eq!(a.code(), "INVALID_ARGUMENTS");
    let a = call(&gw, "no_such_tool", json!({})).await;
    assert_eq!(a.code(), "TOOL_NOT_FOUND");
    let session = McpSession::open(&gw).await;
    let answer = session
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "over mcp"}}}))
        .await;
    assert_eq!(
        answer["result"]["content"][0]["text"], "Echo: over mcp",
        "{answer}"
    );

    let response = scrape(&gw).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"),
        "{:?}",
        response.headers()
    );
    assert!(response.headers().contains_key("x-request-id"));
    let text = response.text().await.unwrap();

    let echo = [("tool", "echo"), ("provider", "everything")];
    let calls = "mcp_http_gateway_tool_calls_total";
    let expectations: &[Expected] = &[
        (calls, &[echo[0], echo[1], ("outcome", "ok")], 4.0),
        (calls, &[echo[0], ("outcome", "INVALID_ARGUMENTS")], 1.0),
        (
            calls,
            &[
                ("tool", "get_current_time"),
                ("provider", "time"),
                ("outcome", "EXECUTION_ERROR"),
            ],
            1.0,
        ),
        (
            calls,
            &[
                ("tool", "trigger-long-running-operation"),
                ("outcome", "TIMEOUT"),
            ],
            1.0,
        ),
        (
            "mcp_http_gateway_tool_call_timeouts_total",
            &[("tool", "trigger-long-running-operation")],
            1.0,
        ),
        (
            "mcp_http_gateway_tool_call_duration_seconds_count",
            &echo,
            4.0,
        ),
        (
            "mcp_http_gateway_http_requests_total",
            &[
                ("route", "/call-tool"),
                ("status", "504"),
                ("code", "TIMEOUT"),
            ],
            1.0,
        ),
        (
            "mcp_http_gateway_http_requests_total",
            &[
                ("route", "/call-tool"),
                ("status", "404"),
                ("code", "TOOL_NOT_FOUND"),
            ],
            1.0,
        ),
        (
            "mcp_http_gateway_upstream_connected",
            &[("provider", "everything")],
            1.0,
        ),
        (
            "mcp_http_gateway_upstream_restarts_total",
            &[("provider", "time")],
            0.0,
        ),
        (
            "mcp_http_gateway_mcp_sessions",
            &[("transport", "streamable-http")],
            1.0,
        ),
        ("mcp_http_gateway_tool_calls_in_flight", &[], 0.0),
        (
            "mcp_http_gateway_build_info",
            &[
                ("version", env!("CARGO_PKG_VERSION")),
                ("service", "metered"),
            ],
            1.0,
        ),
    ];
    for (name, labels, value) in expectations {
        assert_eq!(
            sample(&text, name, labels),
            Some(*value),
            "{name} {labels:?}:\n{text}"
        );
    }
    assert!(
        !text.contains("no_such_tool"),
        "a name a client sent is never a label"
    );
    // Durations are real: the timed-out call took its 1.5 s.
    let timed = sample(
        &text,
        "mcp_http_gateway_tool_call_duration_seconds_sum",
        &[("tool", "trigger-long-running-operation")],
    )
    .unwrap();
    assert!((1.5..10.0).contains(&timed), "{timed}");

    let (clean, said) = promtool_check(&text);
    assert!(clean, "promtool check metrics:\n{said}\n{text}");

    // A real Prometheus scrapes the gateway; PromQL sees the calls made above.
    let prometheus = Prometheus::start(gw.port);
    prometheus.wait_target_up().await;
    let query = "mcp_http_gateway_tool_calls_total{tool=\"echo\",outcome=\"ok\"}";
    let result = prometheus
        .query_until(query, |result| {
            result
                .as_array()
                .is_some_and(|r| r.len() == 1 && r[0]["value"][1] == "4")
        })
        .await
        .unwrap_or_else(|last| panic!("{query} never answered 4: {last}"));
    let series = &result[0]["metric"];
    assert_eq!(series["service"], "metered", "{series}");
    assert_eq!(series["provider"], "everything", "{series}");
    assert_eq!(series["job"], "gateway", "{series}");
    // A call made now shows in the next scrapes.
    call(&gw, "echo", json!({"message": "after"})).await;
    prometheus
        .query_until(query, |result| result[0]["value"][1] == "5")
        .await
        .unwrap_or_else(|last| panic!("{query} never answered 5: {last}"));
    let p95 = "histogram_quantile(0.95, sum by (le) (mcp_http_gateway_tool_call_duration_seconds_bucket{tool=\"echo\"}))";
    prometheus
        .query_until(p95, |result| {
            result[0]["value"][1]
                .as_str()
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|v| v > 0.0 && v < 1.5)
        })
        .await
        .unwrap_or_else(|last| panic!("{p95}: {last}"));
}

#[tokio::test]
async fn off_it_is_an_unknown_route_and_on_it_needs_the_key() {
    let gw = Gateway::start("unmetered", "").await;
    let response = scrape(&gw).await;
    assert_eq!(response.status(), 404);
    let answer = Answer::from(response).await;
    answer.assert_envelope();
    assert_eq!(answer.code(), "NOT_FOUND");
    assert_eq!(answer.body["error"], "No route for GET /metrics");
    drop(gw);

    let keyed = "monitoring: { metrics_enabled: true }\nsecurity: { api_keys_enabled: true, api_keys_env: MHG_TEST_KEYS }\n";
    let mut gw = Gateway::spawn_env("keyed", keyed, &[("MHG_TEST_KEYS", "k-one")]);
    gw.wait_running().await;
    assert_eq!(scrape(&gw).await.status(), 401);
    let response = reqwest::Client::new()
        .get(gw.url("/metrics"))
        .bearer_auth("k-one")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    // The refused scrape was counted too.
    assert_eq!(
        sample(
            &text,
            "mcp_http_gateway_http_requests_total",
            &[
                ("route", "/metrics"),
                ("status", "401"),
                ("code", "UNAUTHORIZED")
            ]
        ),
        Some(1.0),
        "{text}"
    );
}

#[tokio::test]
async fn each_service_of_a_process_shows_only_its_own_series() {
    let dir = tempfile::tempdir().unwrap();
    let (p1, p2) = (free_port(), free_port());
    let on = "monitoring: { metrics_enabled: true }\n";
    std::fs::write(dir.path().join("one.yaml"), service_yaml("one", p1, on)).unwrap();
    std::fs::write(dir.path().join("two.yaml"), service_yaml("two", p2, on)).unwrap();
    std::fs::write(dir.path().join("services.yaml"), "services: []\n").unwrap();
    let args = vec![
        "serve".into(),
        "--config-dir".into(),
        dir.path().to_string_lossy().into_owned(),
    ];
    let config = dir.path().join("one.yaml");
    let mut gw = Gateway::spawn_with(args, p1, tempfile::tempdir().unwrap(), config, &[]);
    gw.wait_running().await;
    let two = format!("http://127.0.0.1:{p2}");
    eventually(Duration::from_secs(30), "service two ready", || async {
        let h = reqwest::get(format!("{two}/health")).await.ok()?;
        (h.status() == 200).then_some(())
    })
    .await;
    reqwest::get(format!("{two}/tools")).await.unwrap();
    let one_text = scrape(&gw).await.text().await.unwrap();
    let two_text = reqwest::get(format!("{two}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(one_text.contains("service=\"one\""), "{one_text}");
    assert!(!one_text.contains("service=\"two\""), "{one_text}");
    assert!(!two_text.contains("service=\"one\""), "{two_text}");
    assert_eq!(
        sample(
            &two_text,
            "mcp_http_gateway_http_requests_total",
            &[("route", "/tools"), ("service", "two")]
        ),
        Some(1.0),
        "{two_text}"
    );
    assert_eq!(
        sample(
            &one_text,
            "mcp_http_gateway_http_requests_total",
            &[("route", "/tools")]
        ),
        None,
        "{one_text}"
    );
    // Both carry the process's build info.
    for text in [&one_text, &two_text] {
        assert!(text.contains("mcp_http_gateway_build_info{"), "{text}");
    }
}
