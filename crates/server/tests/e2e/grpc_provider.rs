//! The `grpc` provider against the example providers as real processes on loopback ports
//! (`hello-provider` in Rust; `hello-py` in Python for the core tests): tools listed and called, the error table, deadlines, the status
//! machine (a killed provider is ERROR and fails fast, restarted on its port it is CONNECTED
//! again; past `max_retries` it is DISCONNECTED and still comes back), output schemas, the
//! correlation id in the provider's own log, CloudEvents counted and sent to MCP sessions.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{Killed, workspace_bin};

use crate::harness::*;

/// Which example provider: the two behave the same.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Rust,
    Python,
}

impl Kind {
    /// The name it gives itself (`provider` in echo's answer).
    fn name(self) -> &'static str {
        match self {
            Kind::Rust => "hello-rs",
            Kind::Python => "hello-py",
        }
    }

    fn command(self) -> Command {
        match self {
            Kind::Rust => Command::new(workspace_bin("hello-provider")),
            Kind::Python => {
                // Installed by examples/hello-py/install.sh (scripts/install-test-tools.sh).
                let python = repo().join(".deps/hello-py/bin/python");
                assert!(
                    python.exists(),
                    "{} is missing: run examples/hello-py/install.sh",
                    python.display()
                );
                let mut command = Command::new(python);
                command.arg(repo().join("examples/hello-py/hello_py.py"));
                command
            }
        }
    }
}

/// One example provider process, killed with the test.
pub(crate) struct HelloProvider {
    kind: Kind,
    pub(crate) port: u16,
    log: PathBuf,
    process: Option<Killed>,
}

impl HelloProvider {
    /// Starts it on a free port (port 0: it picks and says), logging to `log`.
    pub(crate) fn start(kind: Kind, log: &Path) -> HelloProvider {
        let mut provider = HelloProvider {
            kind,
            port: 0,
            log: log.to_owned(),
            process: None,
        };
        provider.run_on(0);
        provider
    }

    /// Starts it (again) on `port`; returns once it listens.
    fn run_on(&mut self, port: u16) {
        let mut child = self
            .kind
            .command()
            .args([
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--name",
                self.kind.name(),
                "--log-file",
                &self.log.to_string_lossy(),
                "--metric-interval-ms",
                "200",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start hello-provider");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let said = first
            .trim()
            .strip_prefix("listening on 127.0.0.1:")
            .unwrap_or_else(|| panic!("first line: {first}"));
        self.port = said.parse().unwrap();
        self.process = Some(Killed(child));
    }

    fn kill(&mut self) {
        self.process.take();
    }

    fn restart(&mut self) {
        self.kill();
        self.run_on(self.port);
    }

    /// The provider's JSON log lines.
    fn log_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// A service with one grpc provider `hello` at `port`; `fields` are added to its entry.
pub(crate) fn config(port: u16, fields: &str) -> String {
    format!(
        "monitoring: {{ metrics_enabled: true }}\nproviders:\n  - {{ name: hello, kind: grpc, address: \"127.0.0.1:{port}\", heartbeat_interval_ms: 200, retry_backoff_ms: 100, metadata: {{ version: \"1.0.0\" }}{fields} }}\n"
    )
}

/// The name `GET /tools` serves the provider's tool `upstream` under (the naming rule may
/// keep `echo.v1` or map it).
async fn served(gw: &Gateway, upstream: &str) -> String {
    let tools = get(gw, "/tools").await;
    let candidates = [upstream.to_owned(), upstream.replace(['.', '-'], "_")];
    tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .find(|n| {
            candidates
                .iter()
                .any(|c| n == c || n.ends_with(&format!("_{c}")))
        })
        .unwrap_or_else(|| panic!("no tool for {upstream}: {}", tools.body))
        .to_owned()
}

/// The provider's entry in /health `providers`.
async fn provider_state(gw: &Gateway) -> Value {
    get(gw, "/health").await.report()["providers"]["hello"].clone()
}

async fn until_state(gw: &Gateway, state: &str, within: Duration) -> Value {
    eventually(within, &format!("hello {state}"), || async {
        let entry = provider_state(gw).await;
        (entry["state"] == state).then_some(entry)
    })
    .await
}

/// The value of a series of /metrics whose line starts with `series` (labels in the order
/// rendered: alphabetical).
async fn metric(gw: &Gateway, series: &str) -> Option<f64> {
    let text = reqwest::get(gw.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
}

#[tokio::test]
async fn grpc_tools_are_listed_and_called_with_errors_mapped_and_outputs_checked() {
    tools_listed_called_errors_mapped_outputs_checked(Kind::Rust).await;
}

#[tokio::test]
async fn hello_py_tools_are_listed_and_called_with_errors_mapped_and_outputs_checked() {
    tools_listed_called_errors_mapped_outputs_checked(Kind::Python).await;
}

async fn tools_listed_called_errors_mapped_outputs_checked(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let provider = HelloProvider::start(kind, &dir.path().join("hello.log"));
    // The invocation flow is at debug level under its own target.
    let mut gw = Gateway::spawn_env(
        "grpc",
        &config(provider.port, ", deadline_ms: 1000"),
        &[("RUST_LOG", "info,invocation=debug")],
    );
    gw.wait_running().await;

    let tools = get(&gw, "/tools").await;
    let echo = served(&gw, "echo.v1").await;
    let listed = tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == echo.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        listed["input_schema"]["required"],
        json!(["message"]),
        "{listed}"
    );
    assert!(listed["output_schema"].is_object(), "{listed}");

    // A call, its correlation id and traceparent in the provider's own log.
    let request_id = uuid::Uuid::new_v4().to_string();
    let answer = Answer::from(
        reqwest::Client::new()
            .post(gw.url("/call-tool"))
            .header("x-request-id", &request_id)
            .json(&json!({"tool": echo, "arguments": {"message": "hi"}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    answer.assert_envelope();
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.body["data"]["message"], "hi");
    assert_eq!(answer.body["data"]["provider"], kind.name());
    let seen = eventually(
        Duration::from_secs(5),
        "the call in the provider's log",
        || async {
            provider
                .log_lines()
                .into_iter()
                .find(|l| l["correlation_id"] == request_id.as_str())
        },
    )
    .await;
    let flow: Vec<String> = gw
        .log_lines()
        .iter()
        .filter(|l| l["request_id"] == request_id.as_str() && l["target"] == "invocation")
        .filter_map(|l| l["state"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        flow,
        ["created", "validating", "routing", "executing", "completed"],
        "the invocation flow of the call"
    );
    let traceparent = seen["traceparent"].as_str().unwrap_or_default();
    assert!(
        traceparent.starts_with("00-") && traceparent.len() == 55,
        "a W3C traceparent: {seen}"
    );

    // The provider's INTERNAL → EXECUTION_ERROR with its message.
    let fail = call(&gw, &served(&gw, "fail.v1").await, json!({})).await;
    assert_eq!(
        (fail.status.as_u16(), fail.code()),
        (500, "EXECUTION_ERROR")
    );
    assert!(
        fail.body["error"].as_str().unwrap().contains("INTERNAL"),
        "{}",
        fail.body
    );

    // Past the deadline (deadline_ms 1000) → TIMEOUT, well before the 5 s the tool asked for.
    let slow = served(&gw, "slow.v1").await;
    let started = Instant::now();
    let late = call(&gw, &slow, json!({"ms": 5000})).await;
    assert_eq!(
        (late.status.as_u16(), late.code()),
        (504, "TIMEOUT"),
        "{}",
        late.body
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let quick = call(&gw, &slow, json!({"ms": 10})).await;
    assert_eq!(quick.body["data"]["slept_ms"], 10, "{}", quick.body);

    // A result that violates the tool's output schema is refused.
    let bad = call(&gw, &served(&gw, "bad_output.v1").await, json!({})).await;
    assert_eq!((bad.status.as_u16(), bad.code()), (500, "EXECUTION_ERROR"));
    assert!(
        bad.body["error"]
            .as_str()
            .unwrap()
            .contains("output schema"),
        "{}",
        bad.body
    );

    // Arguments the input schema refuses never reach the provider.
    let invalid = call(&gw, &echo, json!({})).await;
    assert_eq!(
        (invalid.status.as_u16(), invalid.code()),
        (400, "INVALID_ARGUMENTS")
    );

    let health = provider_state(&gw).await;
    assert_eq!(health["state"], "CONNECTED", "{health}");
    assert_eq!(health["kind"], "grpc");
    assert_eq!(health["metadata"]["version"], "1.0.0");
    assert_eq!(
        metric(&gw, "mcp_http_gateway_provider_state{provider=\"hello\",service=\"grpc\",state=\"CONNECTED\"}").await,
        Some(1.0)
    );
}

#[tokio::test]
async fn a_killed_provider_is_error_and_fails_fast_then_connected_again_on_its_port() {
    killed_then_restarted(Kind::Rust).await;
}

#[tokio::test]
async fn hello_py_killed_is_error_and_fails_fast_then_connected_again_on_its_port() {
    killed_then_restarted(Kind::Python).await;
}

async fn killed_then_restarted(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let mut provider = HelloProvider::start(kind, &dir.path().join("hello.log"));
    let gw = Gateway::start("grpc", &config(provider.port, ", max_retries: 1000")).await;
    let echo = served(&gw, "echo.v1").await;
    assert_eq!(call(&gw, &echo, json!({"message": "a"})).await.status, 200);

    provider.kill();
    let entry = until_state(&gw, "ERROR", Duration::from_secs(10)).await;
    assert!(entry["last_error"].is_string(), "{entry}");
    let started = Instant::now();
    let refused = call(&gw, &echo, json!({"message": "b"})).await;
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "fails fast: {:?}",
        started.elapsed()
    );
    assert_eq!(refused.code(), "EXECUTION_ERROR", "{}", refused.body);
    let error = refused.body["error"].as_str().unwrap();
    assert!(error.contains("ERROR since"), "names the state: {error}");
    let health = get(&gw, "/health").await;
    assert_eq!(
        health.report()["dependencies"]["hello"]["status"],
        "unavailable"
    );
    assert_eq!(
        metric(
            &gw,
            "mcp_http_gateway_provider_state{provider=\"hello\",service=\"grpc\",state=\"ERROR\"}"
        )
        .await,
        Some(1.0)
    );

    provider.restart();
    let entry = until_state(&gw, "CONNECTED", Duration::from_secs(10)).await;
    assert_eq!(entry["reconnects"], 1, "{entry}");
    let again = call(&gw, &echo, json!({"message": "c"})).await;
    assert_eq!(again.status, 200, "{}", again.body);
    until_dependency(&gw, "hello", "connected", Duration::from_secs(5)).await;
}

#[tokio::test]
async fn past_max_retries_the_provider_is_disconnected_and_a_call_brings_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut provider = HelloProvider::start(Kind::Rust, &dir.path().join("hello.log"));
    let gw = Gateway::start("grpc", &config(provider.port, ", max_retries: 2")).await;
    let echo = served(&gw, "echo.v1").await;

    provider.kill();
    let entry = until_state(&gw, "DISCONNECTED", Duration::from_secs(10)).await;
    assert_eq!(entry["failed_attempts"], 2, "{entry}");
    assert_eq!(
        metric(&gw, "mcp_http_gateway_provider_state{provider=\"hello\",service=\"grpc\",state=\"DISCONNECTED\"}").await,
        Some(1.0)
    );
    // Given up: it stays DISCONNECTED (the slow probe is 30 s away).
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(provider_state(&gw).await["state"], "DISCONNECTED");

    provider.restart();
    let refused = call(&gw, &echo, json!({"message": "x"})).await;
    assert!(
        refused.body["error"]
            .as_str()
            .unwrap()
            .contains("DISCONNECTED"),
        "{}",
        refused.body
    );
    // The refused call asked for a probe: back without waiting for the slow one.
    until_state(&gw, "CONNECTED", Duration::from_secs(5)).await;
    assert_eq!(call(&gw, &echo, json!({"message": "y"})).await.status, 200);
}

#[tokio::test]
async fn cloudevents_are_counted_and_reach_mcp_sessions_as_log_messages() {
    let dir = tempfile::tempdir().unwrap();
    let provider = HelloProvider::start(Kind::Rust, &dir.path().join("hello.log"));
    let gw = Gateway::start("grpc", &config(provider.port, "")).await;
    let echo = served(&gw, "echo.v1").await;

    let session = McpSession::open(&gw).await;
    let mut stream = session
        .client
        .get(&session.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session.id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);

    assert_eq!(call(&gw, &echo, json!({"message": "e"})).await.status, 200);
    eventually(Duration::from_secs(10), "events counted by type", || async {
        let executed = metric(&gw, "mcp_http_gateway_provider_events_total{provider=\"hello\",service=\"grpc\",type=\"provider.tool.executed\"}").await?;
        let reported = metric(&gw, "mcp_http_gateway_provider_events_total{provider=\"hello\",service=\"grpc\",type=\"provider.metric.reported\"}").await?;
        (executed >= 1.0 && reported >= 1.0).then_some(())
    })
    .await;

    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let event = loop {
        let found = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m["method"] == "notifications/message");
        if let Some(message) = found {
            break message;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, stream.chunk())
            .await
            .expect("a log notification within 10 s")
            .unwrap()
            .expect("the stream stays open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    };
    assert_eq!(event["params"]["logger"], "hello", "{event}");
    assert_eq!(event["params"]["data"]["specversion"], "1.0", "{event}");
    assert!(
        event["params"]["data"]["type"]
            .as_str()
            .unwrap()
            .starts_with("provider."),
        "{event}"
    );
    assert!(
        gw.log_lines()
            .iter()
            .any(|l| l["event_type"] == "provider.tool.executed" && l["provider"] == "hello"),
        "a structured line per event"
    );
}

#[tokio::test]
async fn grpc_resources_are_listed_and_read_and_prompts_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let provider = HelloProvider::start(Kind::Rust, &dir.path().join("hello.log"));
    let gw = Gateway::start("grpc", &config(provider.port, "")).await;

    let listed = get(&gw, "/resources").await;
    let greeting = listed.body["data"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "hello://greeting")
        .unwrap_or_else(|| panic!("{}", listed.body))
        .clone();
    assert_eq!(greeting["provider"], "hello", "{greeting}");
    assert_eq!(greeting["mime_type"], "text/plain", "{greeting}");
    let templates = get(&gw, "/resource-templates").await;
    assert!(
        templates.body["data"]["resource_templates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uri_template"] == "hello://greeting/{name}"),
        "{}",
        templates.body
    );

    // A read carries the correlation id to the provider like a call.
    let request_id = uuid::Uuid::new_v4().to_string();
    let read = Answer::from(
        reqwest::Client::new()
            .get(gw.url("/resources/read?uri=hello://greeting"))
            .header("x-request-id", &request_id)
            .send()
            .await
            .unwrap(),
    )
    .await;
    read.assert_envelope();
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(
        read.body["data"]["contents"][0]["text"],
        "Hello from hello-rs!"
    );
    eventually(
        Duration::from_secs(5),
        "the read in the provider's log",
        || async {
            provider
                .log_lines()
                .into_iter()
                .find(|l| l["correlation_id"] == request_id.as_str())
        },
    )
    .await;
    let by_template = get(&gw, "/resources/read?uri=hello://greeting/ada").await;
    assert_eq!(
        by_template.body["data"]["contents"][0]["text"], "Hello, ada! (from hello-rs)",
        "{}",
        by_template.body
    );
    // The provider's NOT_FOUND for a URI it was asked about.
    let unknown = get(&gw, "/resources/read?uri=hello://nothing&provider=hello").await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(unknown.code(), "RESOURCE_NOT_FOUND", "{}", unknown.body);

    let prompts = get(&gw, "/prompts").await;
    let plan = prompts.body["data"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["qualified_name"] == "hello.hello-plan")
        .unwrap_or_else(|| panic!("{}", prompts.body))
        .clone();
    assert_eq!(plan["args_schema"]["required"], json!(["goal"]), "{plan}");
    let name = plan["name"].as_str().unwrap();
    let rendered = post_json(
        &gw,
        &format!("/prompts/{name}"),
        &json!({"goal": "ship it", "steps": 3}),
    )
    .await;
    assert_eq!(rendered.status, 200, "{}", rendered.body);
    let text = rendered.body["data"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("ship it") && text.contains('3'), "{text}");
    // Checked by the gateway against args_schema before the call.
    for bad in [json!({}), json!({"goal": "x", "steps": 11})] {
        let refused = post_json(&gw, &format!("/prompts/{name}"), &bad).await;
        assert_eq!(
            refused.code(),
            "INVALID_ARGUMENTS",
            "{bad}: {}",
            refused.body
        );
    }
}
