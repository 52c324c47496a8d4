//! Qualified names (`{provider}.{name}`) and the identifier mapping, against real MCP servers:
//! every tool's `qualified_name` in GET /tools and in MCP `tools/list` `_meta`, calls by the
//! qualified name over REST (POST /call-tool, POST /tools/{name}) and not over MCP, unknown
//! qualified names answering TOOL_NOT_FOUND, and versioned upstream names (`echo.v1`) served
//! as identifiers with a clash of two names mapped onto one refused at start.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

const META_KEY: &str = "io.github.mcp-http-gateway/qualified_name";

/// server-everything as `ev` and the versioned-names fixture as `ver` (its `echo_v1` hidden
/// unless `clash`), every bridged name mapped.
fn config(clash: bool) -> String {
    let hide = if clash {
        ""
    } else {
        ", expose: { exclude: [echo_v1] }"
    };
    format!(
        "providers:\n  - {{ name: ev, kind: mcp, command: node, args: [\"{}\", stdio], expose: {{ include: [echo, get-sum] }} }}\n  - {{ name: ver, kind: mcp, command: \"{}\", args: [\"{}\"]{hide} }}\n",
        everything_js(),
        venv_python(),
        fixture("versioned_names_server.py")
    )
}

fn spawn(clash: bool) -> Gateway {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("names.yaml");
    let text = service_yaml("names", port, &config(clash)).replacen(
        &format!("port: {port} }}"),
        &format!("port: {port}, identifier_names: true }}"),
        1,
    );
    std::fs::write(&file, text).unwrap();
    let args = vec![
        "serve".into(),
        "--config".into(),
        file.to_string_lossy().into_owned(),
    ];
    Gateway::spawn_with(args, port, dir, file, &[])
}

/// (served name, qualified name) of every tool GET /tools lists.
fn listed(tools: &Answer) -> Vec<(String, String)> {
    tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let name = t["name"].as_str().unwrap().to_owned();
            let qualified = t["qualified_name"]
                .as_str()
                .unwrap_or_else(|| panic!("no qualified_name: {t}"))
                .to_owned();
            (name, qualified)
        })
        .collect()
}

#[tokio::test]
async fn every_tool_has_its_qualified_name_and_rest_calls_take_it() {
    let mut gw = spawn(false);
    gw.wait_running().await;

    let tools = get(&gw, "/tools").await;
    assert_eq!(tools.status, 200, "{}", tools.body);
    let expected = [
        ("echo", "ev.echo"),
        ("echo_v1", "ver.echo.v1"),
        ("echo_v2", "ver.echo.v2"),
        ("get_sum", "ev.get-sum"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    assert_eq!(listed(&tools), expected);

    // By the qualified name: the upstream's own name, mapped or not.
    let a = call(&gw, "ver.echo.v1", json!({"message": "hi"})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["data"], json!({"message": "hi", "version": "v1"}));
    assert_eq!(
        a.body["meta"]["tool"], "echo_v1",
        "meta.tool: the served name"
    );
    let a = call(&gw, "echo_v2", json!({"message": "hi"})).await;
    assert_eq!(a.body["data"]["version"], "v2", "{}", a.body);
    let a = call(&gw, "ev.get-sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body["data"].to_string().contains('5'), "{}", a.body);
    let a = post_json(&gw, "/tools/ev.echo", &json!({"message": "by path"})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.body["data"]["content"][0]["text"], "Echo: by path");
    // Arguments are checked against the same schema whatever the name.
    let a = call(&gw, "ver.echo.v2", json!({})).await;
    assert_eq!(a.code(), "INVALID_ARGUMENTS", "{}", a.body);

    // Names that name no served tool: an unknown tool of a known provider, an unknown provider,
    // a hidden tool, and the upstream name of a mapped tool without its provider.
    for unknown in [
        "ev.nope",
        "nope.echo",
        "ver.echo_v1",
        "ev.get-env",
        "echo.v1",
    ] {
        let a = call(&gw, unknown, json!({"message": "x"})).await;
        assert_eq!(a.status, 404, "{unknown}: {}", a.body);
        assert_eq!(a.code(), "TOOL_NOT_FOUND", "{unknown}");
        assert!(
            a.body["error"]
                .as_str()
                .unwrap()
                .contains(&format!("Tool '{unknown}' not found")),
            "{}",
            a.body
        );
    }

    // MCP: the qualified name in each tool's _meta; tools/call takes served names only.
    let mcp = McpSession::open(&gw).await;
    let answer = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let mut over_mcp: Vec<(String, String)> = answer["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|t: &Value| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["_meta"][META_KEY].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    over_mcp.sort();
    assert_eq!(over_mcp, expected);
    let by_served = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "echo_v1", "arguments": {"message": "m"}}}))
        .await;
    assert_eq!(
        by_served["result"]["structuredContent"]["version"], "v1",
        "{by_served}"
    );
    let by_qualified = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                    "params": {"name": "ver.echo.v1", "arguments": {"message": "m"}}}))
        .await;
    assert!(
        by_qualified["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("ver.echo.v1")),
        "{by_qualified}"
    );
}

#[tokio::test]
async fn two_upstream_names_mapped_onto_one_refuse_the_start() {
    let mut gw = spawn(true);
    let status = gw.wait_exit(Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(1));
    let logs = gw.logs();
    assert!(
        logs.contains("tool 'echo_v1' is offered twice by provider 'ver' (after renaming)"),
        "{logs}"
    );
}
