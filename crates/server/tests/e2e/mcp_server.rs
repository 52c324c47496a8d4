//! The gateway's own MCP server, at /mcp (Streamable HTTP) and /sse (legacy SSE): a real MCP
//! client (the official Python SDK) and the MCP Inspector list and call the tools and see each
//! error row; the conformance tester's MCP check agrees with the REST surface; foreign Host and
//! Origin headers are refused; a client's cancellation reaches the upstream server; a request
//! id still running is refused; a reload notifies clients; sessions past `mcp.max_sessions`
//! and bodies over the limit are refused; resources and prompts are advertised only when an
//! upstream has them.
//!
//! Longer than 500 lines: one scenario per behaviour of the MCP surface, all on the same
//! fixtures; the session rules have their own file (`mcp_server_sessions.rs`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_real_mcp_client_lists_and_calls_the_tools() {
    for transport in ["/mcp", "/sse"] {
        real_client_round(transport).await;
    }
}

/// The official Python SDK over one transport: Streamable HTTP (/mcp) or legacy SSE (/sse).
async fn real_client_round(transport: &str) {
    let gw = Gateway::start(
        "over-mcp",
        &format!(
            "providers:\n{}{}",
            everything_provider("everything"),
            time_provider("time")
        ),
    )
    .await;
    let url = gw.url(transport);
    let (seen, stderr) = run_python_with_stderr(vec![fixture("mcp_client.py"), url]).await;
    assert_eq!(seen["server_name"], "over-mcp");
    // Ending the session at exit is answered as the SDK expects (no warning).
    assert!(!stderr.contains("Session termination failed"), "{stderr}");
    let rest: Vec<String> = get(&gw, "/tools").await.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        seen["tools"],
        serde_json::json!(rest),
        "the same tools as GET /tools"
    );
    assert_eq!(seen["echo_is_error"], false);
    assert_eq!(
        seen["echo_text"], "Echo: héllo ✓ 日本",
        "the upstream's own content blocks, unicode intact"
    );
    // Invalid arguments are a tool result with isError (SEP-1303), unknown tools JSON-RPC
    // invalid params, both with our code and request id.
    assert_eq!(seen["invalid_args"]["result_is_error"], true, "{seen}");
    assert_eq!(
        seen["invalid_args"]["structured"]["code"],
        "INVALID_ARGUMENTS"
    );
    assert_eq!(
        seen["invalid_args"]["structured"]["validation_errors"][1]["path"],
        "/a"
    );
    assert!(
        seen["invalid_args"]["text"]
            .as_str()
            .unwrap()
            .contains("/a: \"one\" is not of type \"number\""),
        "{seen}"
    );
    assert_eq!(seen["unknown_tool"]["error_code"], -32602);
    assert_eq!(seen["unknown_tool"]["data"]["code"], "TOOL_NOT_FOUND");
    // Resources and prompts of the upstream (server-everything) pass through.
    assert_eq!(
        seen["capabilities"],
        serde_json::json!({"resources": true, "prompts": true}),
        "{seen}"
    );
    assert!(seen["resources"].as_u64().unwrap() >= 1);
    assert_eq!(seen["read_resource"]["contents"], 1, "{seen}");
    assert!(
        seen["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "simple-prompt")
    );
    assert_eq!(seen["get_prompt"]["messages"], 1);
    // Progress of the upstream's long-running tool reaches the client, with its own token.
    assert_eq!(
        seen["progress"],
        serde_json::json!([[1.0, 2.0], [2.0, 2.0]]),
        "{seen}"
    );
    // Each tools/call over MCP logs the same access line fields as REST.
    let line = eventually(Duration::from_secs(10), "the MCP access line", || async {
        gw.log_lines()
            .into_iter()
            .find(|l| l["transport"] == "mcp" && l["tool"] == "echo")
    })
    .await;
    assert_eq!(line["status"], "ok");
    assert!(line["request_id"].is_string() && line["execution_time_ms"].is_u64());
}

#[tokio::test(flavor = "multi_thread")]
async fn conformance_mcp_check_passes_and_foreign_hosts_are_refused() {
    let gw = Gateway::start(
        "mcp-conform",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let mut options = conformance::Options::new(&gw.url(""));
    options.cases = 16;
    options.seed = 5;
    options.mcp = true;
    // get-resource-links: its server refuses counts outside 1-10 that its schema allows.
    // simulate-research-query: a task-only tool that waits 4-5 s by design at each call (its
    // 17 calls took 75 of this test's 80 s); tasks.rs runs it, a plain call and as a task.
    options.skip_tools = vec![
        "trigger-long-running-operation".into(),
        "get-resource-links".into(),
        "simulate-research-query".into(),
    ];
    let report = tokio::task::spawn_blocking(move || conformance::run(options))
        .await
        .unwrap()
        .unwrap();
    assert!(report.ok(), "{}", report.render());
    let mcp = report.checks.iter().find(|c| c.name == "mcp").unwrap();
    assert!(mcp.cases > 10, "{}", report.render());

    let refused = reqwest::Client::new()
        .post(gw.url("/mcp"))
        .header("host", "evil.example")
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
        .send()
        .await
        .unwrap();
    assert!(
        refused.status().is_client_error(),
        "Host evil.example was accepted: {}",
        refused.status()
    );
}

/// The MCP Inspector CLI, as a user would run it against a service.
fn inspector(url: &str, args: &[&str]) -> Value {
    let out = std::process::Command::new("node")
        .arg(inspector_cli())
        .args(["--cli", url, "--transport", "http"])
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "inspector {args:?}: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_mcp_inspector_lists_and_calls_and_sees_each_error_row() {
    let extra = format!(
        "limits: {{ call_timeout_ms: 1500 }}\nproviders:\n{}{}",
        everything_provider("everything"),
        time_provider("time")
    );
    let gw = Gateway::start("inspected", &extra).await;
    let url = gw.url("/mcp");
    let (listed, echo, failed, slow) = tokio::task::spawn_blocking(move || {
        (
            inspector(&url, &["--method", "tools/list"]),
            inspector(
                &url,
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "echo",
                    "--tool-arg",
                    "message=ça ✓",
                ],
            ),
            inspector(
                &url,
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "get_current_time",
                    "--tool-arg",
                    "timezone=Not/AZone",
                ],
            ),
            inspector(
                &url,
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "trigger-long-running-operation",
                    "--tool-arg",
                    "duration=5",
                    "--tool-arg",
                    "steps=1",
                ],
            ),
        )
    })
    .await
    .unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"get_current_time"),
        "{names:?}"
    );
    assert_eq!(echo["content"][0]["text"], "Echo: ça ✓");
    // EXECUTION_ERROR row: a tool result with isError, our code, retryable.
    assert_eq!(failed["isError"], true, "{failed}");
    assert_eq!(
        failed["_meta"]["mcp-http-gateway/error"]["code"],
        "EXECUTION_ERROR"
    );
    assert_eq!(failed["_meta"]["mcp-http-gateway/error"]["retryable"], true);
    // TIMEOUT row: the same shape, code TIMEOUT.
    assert_eq!(slow["isError"], true, "{slow}");
    assert_eq!(slow["_meta"]["mcp-http-gateway/error"]["code"], "TIMEOUT");
    // One invocation record per call, with the session it came in.
    let records: Vec<Value> = gw
        .log_lines()
        .into_iter()
        .filter(|l| l["transport"] == "mcp")
        .collect();
    assert_eq!(records.len(), 3, "{records:#?}");
    for r in &records {
        for field in [
            "invocation_id",
            "session_id",
            "request_id",
            "jsonrpc_id",
            "tool",
            "status",
            "started_at",
            "finished_at",
            "execution_time_ms",
        ] {
            assert!(
                r.get(field).is_some_and(|v| !v.is_null()),
                "{field} missing in {r}"
            );
        }
    }
    assert_eq!(records.iter().filter(|r| r["code"] == "TIMEOUT").count(), 1);
}

#[tokio::test]
async fn browser_origins_are_checked() {
    let gw = Gateway::start(
        "origins",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let post = |origin: &'static str| {
        reqwest::Client::new()
            .post(gw.url("/mcp"))
            .header("origin", origin)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
    };
    assert!(
        post("https://evil.example")
            .await
            .unwrap()
            .status()
            .is_client_error()
    );
    let ok = post("http://localhost:5173").await.unwrap();
    assert!(ok.status().is_success(), "{}", ok.status());
}

fn sleep_call(id: u64, seconds: u64) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "sleep", "arguments": {"seconds": seconds}}})
}

async fn paged_gateway(name: &str) -> Gateway {
    let extra = format!(
        "providers:\n  - {{ name: paged, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
        venv_python(),
        fixture("paged_dynamic_server.py")
    );
    Gateway::start(name, &extra).await
}

async fn one_call_in_flight(gw: &Gateway) {
    eventually(Duration::from_secs(10), "the call in flight", || async {
        (get(gw, "/health").await.body["data"]["active_calls"] == 1).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_client_cancellation_reaches_the_upstream_server() {
    let gw = paged_gateway("cancel-over-mcp").await;
    let session = Arc::new(McpSession::open(&gw).await);
    let pending = tokio::spawn({
        let session = session.clone();
        async move { session.post(sleep_call(7, 30)).await.status() }
    });
    one_call_in_flight(&gw).await;
    session
        .post(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "test"}}))
        .await;
    eventually(
        Duration::from_secs(10),
        "the upstream's own report of the cancellation",
        || async {
            gw.logs()
                .contains("fixture: sleep cancelled by the client")
                .then_some(())
        },
    )
    .await;
    let record = eventually(
        Duration::from_secs(10),
        "the cancelled invocation record",
        || async {
            gw.log_lines()
                .into_iter()
                .find(|l| l["transport"] == "mcp" && l["status"] == "cancelled")
        },
    )
    .await;
    assert_eq!(record["tool"], "sleep");
    pending.abort();
}

#[tokio::test]
async fn a_request_id_still_running_in_the_session_is_refused() {
    let gw = paged_gateway("duplicate-ids").await;
    let session = Arc::new(McpSession::open(&gw).await);
    let first = tokio::spawn({
        let session = session.clone();
        async move { session.ask(sleep_call(9, 3)).await }
    });
    one_call_in_flight(&gw).await;
    let duplicate = session.ask(sleep_call(9, 0)).await;
    assert_eq!(duplicate["error"]["code"], -32600, "{duplicate}");
    assert!(
        duplicate["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Duplicate request id 9"),
        "{duplicate}"
    );
    assert_eq!(duplicate["error"]["data"]["code"], "INVALID_REQUEST");
    // The first one is unharmed, and once it has finished its id may be used again.
    let first = first.await.unwrap();
    assert_eq!(first["result"]["content"][0]["text"], "slept", "{first}");
    let again = session.ask(sleep_call(9, 0)).await;
    assert_eq!(again["result"]["content"][0]["text"], "slept", "{again}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reload_notifies_mcp_clients_that_the_tools_changed() {
    use tokio::io::AsyncBufReadExt;
    let mut gw = Gateway::start(
        "notifying",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let mut client = tokio::process::Command::new(venv_python())
        .arg(fixture("mcp_list_changed.py"))
        .arg(gw.url("/mcp"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(client.stdout.take().unwrap()).lines();
    let ready: Value =
        serde_json::from_str(&lines.next_line().await.unwrap().expect("ready line")).unwrap();
    assert!(
        !ready["ready"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "get_current_time")
    );

    let port = gw.port;
    std::fs::write(
        &gw.config,
        service_yaml(
            "notifying",
            port,
            &format!(
                "providers:\n{}{}",
                everything_provider("everything"),
                time_provider("time")
            ),
        ),
    )
    .unwrap();
    gw.signal(libc::SIGHUP);
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("notified in time")
        .unwrap()
        .expect("a line");
    let after: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(after["notified"], true);
    assert!(
        after["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "get_current_time"),
        "{after}"
    );
    let _ = client.wait().await;
    gw.signal(libc::SIGTERM);
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(0));
}

#[tokio::test]
async fn legacy_sse_sessions_are_checked() {
    let gw = Gateway::start(
        "legacy",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let client = reqwest::Client::new();
    let unknown = client
        .post(gw.url("/messages?sessionId=nope"))
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    let foreign = client
        .get(gw.url("/sse"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let origin = client
        .get(gw.url("/sse"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(origin.status(), 403);
    // A real stream starts with the endpoint event naming the session's message URL.
    let _ = open_sse(&gw).await;
}

#[tokio::test]
async fn sessions_past_max_sessions_are_refused_until_one_ends() {
    let extra = format!(
        // One client holds them all here: its own bound is the table's.
        "mcp: {{ max_sessions: 2, max_sessions_per_client: 2 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("few-sessions", &extra).await;
    let first = McpSession::open(&gw).await;
    let _second = McpSession::open(&gw).await;
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let client = reqwest::Client::new();
    let third = McpSession::send(&client, &gw.url("/mcp"), None, initialize.clone()).await;
    assert_eq!(third.status(), 503);
    assert!(third.headers().contains_key("retry-after"));
    let body: Value = third.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Too many MCP sessions (mcp.max_sessions is 2)"),
        "{body}"
    );
    // Ending one (DELETE) makes room; its id is gone (404).
    let ended = client
        .delete(gw.url("/mcp"))
        .header("mcp-session-id", &first.id)
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    eventually(
        Duration::from_secs(10),
        "room for a new session",
        || async {
            (McpSession::send(&client, &gw.url("/mcp"), None, initialize.clone())
                .await
                .status()
                == 200)
                .then_some(())
        },
    )
    .await;
    let gone = first
        .post(serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}))
        .await;
    assert_eq!(gone.status(), 404);
    // The legacy transport has the same bound.
    let _a = client.get(gw.url("/sse")).send().await.unwrap();
    let _b = client.get(gw.url("/sse")).send().await.unwrap();
    let c = client.get(gw.url("/sse")).send().await.unwrap();
    assert_eq!(c.status(), 503);
}

#[tokio::test]
async fn resources_and_prompts_are_advertised_only_when_an_upstream_has_them() {
    // The paged fixture server offers tools only (mcp-server-time also offers the others).
    let gw = paged_gateway("tools-only").await;
    let client = reqwest::Client::new();
    let init = McpSession::send(&client, &gw.url("/mcp"), None, serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
    .await;
    let text = init.text().await.unwrap();
    let answer: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("result").is_some())
        .unwrap_or_else(|| panic!("{text}"));
    let capabilities = &answer["result"]["capabilities"];
    assert!(capabilities["tools"].is_object());
    assert!(
        capabilities.get("resources").is_none() && capabilities.get("prompts").is_none(),
        "{capabilities}"
    );
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_at_mcp_too() {
    let extra = format!(
        "limits: {{ max_body_bytes: 2048 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("small-bodies", &extra).await;
    let session = McpSession::open(&gw).await;
    let big = serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "x".repeat(4096)}}});
    let refused = session.post(big).await;
    assert_eq!(refused.status(), 413);
    let refused: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(
        refused["error"]["data"]["code"], "PAYLOAD_TOO_LARGE",
        "{refused}"
    );
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let small = session
        .ask(
            serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "ok"}}}),
        )
        .await;
    assert_eq!(small["result"]["content"][0]["text"], "Echo: ok", "{small}");
}
