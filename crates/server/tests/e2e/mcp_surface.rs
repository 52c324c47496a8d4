//! The tools over MCP at /mcp: a real MCP client (the official Python SDK) lists and calls
//! them, the conformance tester's MCP check agrees with the REST surface, and a foreign Host
//! header is refused (DNS-rebinding protection).

use std::time::Duration;

use serde_json::Value;

use crate::harness::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_real_mcp_client_lists_and_calls_the_tools() {
    let gw = Gateway::start(
        "over-mcp",
        &format!(
            "providers:\n{}{}",
            everything_provider("everything"),
            time_provider("time")
        ),
    )
    .await;
    let url = gw.url("/mcp");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(venv_python())
            .arg(fixture("mcp_client.py"))
            .arg(url)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(seen["server_name"], "over-mcp");
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
    // Invalid arguments and unknown tools are JSON-RPC invalid params, with our code and request id.
    assert_eq!(seen["invalid_args"]["error_code"], -32602, "{seen}");
    assert_eq!(seen["invalid_args"]["data"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(
        seen["invalid_args"]["data"]["validation_errors"][1]["path"],
        "/a"
    );
    assert_eq!(seen["unknown_tool"]["error_code"], -32602);
    assert_eq!(seen["unknown_tool"]["data"]["code"], "TOOL_NOT_FOUND");
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
    options.skip_tools = vec!["trigger-long-running-operation".into()];
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
