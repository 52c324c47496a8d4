//! W3C Trace Context through the real binary: a caller's `traceparent` reaches an HTTP API
//! (as a header, with the gateway's span as the parent) and an MCP server (in `_meta`, read
//! back by a server written with the official Python SDK); an invalid one starts a new trace
//! rather than failing; the access log has the request id and the trace id together; and with
//! an OTLP endpoint configured, the server and client spans arrive at a real OTLP/HTTP
//! receiver with the right parents, ids and semantic-convention attributes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::get;
use serde_json::{Value, json};

use crate::harness::*;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const STATE: &str = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

fn traceparent(trace: &str, parent: &str) -> String {
    format!("00-{trace}-{parent}-01")
}

/// A real HTTP API on loopback that answers `{"ok": true}` on GET /echo and keeps the
/// headers of every request it got there.
struct Upstream {
    port: u16,
    seen: Arc<Mutex<Vec<HeaderMap>>>,
}

impl Upstream {
    async fn start() -> Upstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
        let record = seen.clone();
        let app = Router::new()
            .route("/health", get(|| async { "ok" }))
            .route(
                "/echo",
                get(move |headers: HeaderMap| async move {
                    record.lock().unwrap().push(headers);
                    axum::Json(json!({"ok": true}))
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Upstream { port, seen }
    }

    /// The `traceparent` and `tracestate` of the last request, split into their fields.
    fn last(&self) -> (Vec<String>, Option<String>) {
        let seen = self.seen.lock().unwrap();
        let headers = seen.last().expect("the upstream was called");
        let parent = headers["traceparent"].to_str().unwrap();
        let state = headers
            .get("tracestate")
            .map(|v| v.to_str().unwrap().to_owned());
        (parent.split('-').map(str::to_owned).collect(), state)
    }
}

/// The HTTP tool `ping` on `upstream` and the MCP tool `echo_meta` (stdio).
fn providers(upstream: &Upstream) -> String {
    format!(
        r#"dependencies:
  api: {{ kind: http, base_url: "http://127.0.0.1:{port}", health_path: /health }}
providers:
  - name: api
    kind: http
    dependency: api
    tools:
      - {{ name: ping, description: calls GET /echo, input_schema: {{ type: object }}, path: /echo }}
  - {{ name: meta, kind: mcp, command: "{python}", args: ["{fixture}"] }}
"#,
        port = upstream.port,
        python = venv_python(),
        fixture = fixture("meta_echo_server.py"),
    )
}

/// The API key of the exported-spans test.
const TRACE_KEY: &str = "trace-key-value-3c1f";

async fn call_with(gw: &Gateway, tool: &str, headers: &[(&str, &str)]) -> Answer {
    let mut request = reqwest::Client::new()
        .post(gw.url("/call-tool"))
        .json(&json!({"tool": tool, "arguments": {}}));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    Answer::from(request.send().await.unwrap()).await
}

/// Checks a `traceparent` split into its fields: version 00, `trace`, a parent id that is
/// valid and not the caller's (the gateway's own span), sampled.
fn assert_continues(fields: &[String], trace: &str) {
    assert_eq!(fields.len(), 4, "{fields:?}");
    assert_eq!(fields[0], "00");
    assert_eq!(fields[1], trace, "same trace id");
    assert_eq!(fields[2].len(), 16);
    assert_ne!(
        fields[2], CALLER_SPAN,
        "the gateway's span is the new parent"
    );
    assert_ne!(fields[2], "0000000000000000");
    assert_eq!(fields[3], "01");
}

#[tokio::test]
async fn a_traceparent_reaches_http_and_mcp_upstreams_and_the_access_log() {
    let upstream = Upstream::start().await;
    let gw = Gateway::start("traces", &providers(&upstream)).await;
    let incoming = traceparent(TRACE, CALLER_SPAN);
    let request_id = "7d1f9a0e-3b2c-4d5e-8f6a-1b2c3d4e5f60";

    // HTTP upstream: traceparent with the gateway's span as parent, tracestate unchanged.
    let a = call_with(
        &gw,
        "ping",
        &[
            ("traceparent", &incoming),
            ("tracestate", STATE),
            ("x-request-id", request_id),
        ],
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(
        a.headers.get("traceparent").is_none(),
        "not echoed (a request header only)"
    );
    let (fields, state) = upstream.last();
    assert_continues(&fields, TRACE);
    assert_eq!(state.as_deref(), Some(STATE));

    // MCP upstream: the same in params._meta.
    let a = call_with(
        &gw,
        "echo_meta",
        &[("traceparent", &incoming), ("tracestate", STATE)],
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let meta = &a.body["data"]["meta"];
    let fields: Vec<String> = meta["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent in _meta: {}", a.body))
        .split('-')
        .map(str::to_owned)
        .collect();
    assert_continues(&fields, TRACE);
    assert_eq!(meta["tracestate"], STATE);

    // The access log line has both ids.
    let line = eventually(Duration::from_secs(10), "the access log line", || async {
        gw.log_lines()
            .into_iter()
            .find(|l| l["target"] == "mcp_http_gateway::access" && l["request_id"] == request_id)
    })
    .await;
    assert_eq!(line["trace_id"], TRACE, "{line}");

    // An invalid traceparent (upper case, version ff, zero ids) is ignored: a new trace, no error.
    for invalid in [
        traceparent(&TRACE.to_uppercase(), CALLER_SPAN),
        format!("ff-{TRACE}-{CALLER_SPAN}-01"),
        traceparent(TRACE, "0000000000000000"),
    ] {
        let a = call_with(
            &gw,
            "ping",
            &[("traceparent", &invalid), ("tracestate", STATE)],
        )
        .await;
        assert_eq!(a.status, 200, "{invalid}: {}", a.body);
        let (fields, state) = upstream.last();
        assert_eq!(fields.len(), 4);
        assert_ne!(
            fields[1].to_lowercase(),
            TRACE,
            "{invalid} started a new trace"
        );
        assert_eq!(state, None, "no tracestate without a valid traceparent");
    }
    // None at all: a new trace all the same.
    let a = call_with(&gw, "ping", &[]).await;
    assert_eq!(a.status, 200);
    let (first, _) = upstream.last();
    call_with(&gw, "ping", &[]).await;
    let (second, _) = upstream.last();
    assert_ne!(first[1], second[1], "each request its own trace");
    assert_eq!(first[1].len(), 32);

    // Over MCP: the trace in the request's _meta (SEP-414) wins; the header works without it.
    let session = McpSession::open(&gw).await;
    let other = "0af7651916cd43dd8448eb211c80319c";
    let answer = session
        .ask(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "echo_meta", "arguments": {},
            "_meta": {"traceparent": traceparent(other, CALLER_SPAN), "tracestate": "k=v"}}}),
        )
        .await;
    let meta = &answer["result"]["structuredContent"]["meta"];
    let fields: Vec<String> = meta["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .split('-')
        .map(str::to_owned)
        .collect();
    assert_continues(&fields, other);
    assert_eq!(meta["tracestate"], "k=v");
    let line = eventually(
        Duration::from_secs(10),
        "the MCP access log line",
        || async {
            gw.log_lines().into_iter().find(|l| {
                l["target"] == "mcp_http_gateway::access"
                    && l["transport"] == "mcp"
                    && l["jsonrpc_id"] == "7"
            })
        },
    )
    .await;
    assert_eq!(line["trace_id"], other, "{line}");
    assert!(line["request_id"].is_string(), "{line}");

    let headed = session
        .client
        .post(&session.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &session.id)
        .header("traceparent", &incoming)
        .json(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "ping", "arguments": {}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(headed.status(), 200);
    let _ = headed.text().await;
    let (fields, _) = upstream.last();
    assert_continues(&fields, TRACE);
}

#[tokio::test]
async fn spans_reach_a_real_otlp_receiver_with_their_parents() {
    let upstream = Upstream::start().await;
    let receiver = OtlpReceiver::start().await;
    // Keyed: the server spans name the caller (enduser.id).
    let extra = format!(
        "{}security: {{ api_keys: [{{ name: tracer, value_env: MHG_TRACE_KEY }}] }}\n{}",
        receiver.monitoring(),
        providers(&upstream)
    );
    let mut gw = Gateway::spawn_env("traced", &extra, &[("MHG_TRACE_KEY", TRACE_KEY)]);
    gw.wait_running().await;
    let incoming = traceparent(TRACE, CALLER_SPAN);
    let a = call_with(
        &gw,
        "ping",
        &[
            ("traceparent", &incoming),
            ("tracestate", STATE),
            ("x-api-key", TRACE_KEY),
        ],
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let (sent, _) = upstream.last();
    let a = call_with(
        &gw,
        "echo_meta",
        &[("traceparent", &incoming), ("x-api-key", TRACE_KEY)],
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let meta_parent = a.body["data"]["meta"]["traceparent"]
        .as_str()
        .unwrap()
        .split('-')
        .nth(2)
        .unwrap()
        .to_owned();

    // Stopped at once: the batch (sent every 5 s otherwise) is flushed on shutdown.
    gw.signal(libc::SIGTERM);
    gw.wait_exit(Duration::from_secs(30)).await;
    let spans = receiver.at_least(4).await;
    let find = |pred: &dyn Fn(&Value) -> bool| -> Vec<&Value> {
        spans.iter().filter(|s| pred(s)).collect()
    };

    // The server spans: children of the caller's span, HTTP semantic conventions.
    let servers = find(&|s| s["kind"] == "SPAN_KIND_SERVER" && s["name"] == "POST /call-tool");
    assert_eq!(servers.len(), 2, "{spans:#?}");
    for server in &servers {
        assert_eq!(server["trace_id"], TRACE);
        assert_eq!(server["parent_span_id"], CALLER_SPAN);
        let attrs = &server["attributes"];
        assert_eq!(attrs["http.request.method"], "POST");
        assert_eq!(attrs["http.route"], "/call-tool");
        assert_eq!(attrs["http.response.status_code"], 200);
        assert_eq!(
            attrs["enduser.id"], "tracer",
            "the key's name, never the key"
        );
        assert!(!server.to_string().contains(TRACE_KEY));
        assert_eq!(server["resource"]["service.name"], "traced");
        assert_eq!(server["scope"], "mcp-http-gateway");
    }
    let server_ids: Vec<&str> = servers
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();

    // The HTTP client span: under a server span, and the parent the upstream was sent.
    let http = find(&|s| s["kind"] == "SPAN_KIND_CLIENT" && s["name"] == "GET");
    assert_eq!(http.len(), 1, "{spans:#?}");
    let http = http[0];
    assert_eq!(http["trace_id"], TRACE);
    assert!(server_ids.contains(&http["parent_span_id"].as_str().unwrap()));
    assert_eq!(
        http["span_id"],
        sent[2].as_str(),
        "the upstream's parent is this span"
    );
    assert_eq!(http["attributes"]["http.request.method"], "GET");
    assert_eq!(http["attributes"]["http.response.status_code"], 200);
    assert_eq!(http["attributes"]["server.address"], "127.0.0.1");
    assert_eq!(http["attributes"]["server.port"], upstream.port);

    // The MCP client span: the parent the MCP server saw in _meta.
    let mcp = find(&|s| s["kind"] == "SPAN_KIND_CLIENT" && s["name"] == "tools/call echo_meta");
    assert_eq!(mcp.len(), 1, "{spans:#?}");
    let mcp = mcp[0];
    assert_eq!(mcp["trace_id"], TRACE);
    assert!(server_ids.contains(&mcp["parent_span_id"].as_str().unwrap()));
    assert_eq!(mcp["span_id"], meta_parent.as_str());
    assert_eq!(mcp["attributes"]["mcp.method.name"], "tools/call");
    assert_eq!(mcp["attributes"]["gen_ai.tool.name"], "echo_meta");
    assert_ne!(
        http["parent_span_id"], mcp["parent_span_id"],
        "each call under its own request's span"
    );
}

#[tokio::test]
async fn a_streamable_http_mcp_upstream_gets_the_trace_in_meta_and_headers() {
    let port = free_port();
    let _server = testkit::Killed(
        std::process::Command::new(venv_python())
            .args([
                fixture("meta_echo_server.py"),
                "--http".into(),
                port.to_string(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    eventually(
        Duration::from_secs(30),
        "the MCP server listening",
        || async {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()
        },
    )
    .await;
    let gw = Gateway::start(
        "traces-http",
        &format!(
            "providers:\n  - {{ name: remote, kind: mcp, url: \"http://127.0.0.1:{port}/mcp\" }}\n"
        ),
    )
    .await;
    let incoming = traceparent(TRACE, CALLER_SPAN);
    let a = call_with(
        &gw,
        "echo_meta",
        &[("traceparent", &incoming), ("tracestate", STATE)],
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let data = &a.body["data"];
    let in_meta = data["meta"]["traceparent"].as_str().unwrap();
    let fields: Vec<String> = in_meta.split('-').map(str::to_owned).collect();
    assert_continues(&fields, TRACE);
    assert_eq!(
        data["headers"]["traceparent"], in_meta,
        "the HTTP request carries the same context: {data}"
    );
    assert_eq!(data["headers"]["tracestate"], STATE);
    assert_eq!(data["meta"]["tracestate"], STATE);
}
