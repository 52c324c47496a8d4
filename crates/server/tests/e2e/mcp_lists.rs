//! What MCP lists carry besides their items (issue 33): a tool's `icons` kept through the
//! gateway (in `tools/list` and in GET /tools), and the 2026-07-28 cache hints on every list —
//! `ttlMs` and `cacheScope`, `private` when API keys are on (a key's scope filters what is
//! listed) and for the lists asked as the session, `public` for the tool list otherwise.

use serde_json::{Value, json};

use crate::harness::*;

fn meta_echo() -> String {
    format!(
        "providers:\n  - {{ name: meta, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
        venv_python(),
        fixture("meta_echo_server.py")
    )
}

fn list(method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": {}})
}

#[tokio::test]
async fn icons_pass_through_and_lists_carry_cache_hints() {
    let gw = Gateway::start("mcp-lists", &meta_echo()).await;
    let rest = get(&gw, "/tools").await;
    let iconic = rest.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "with_icon")
        .unwrap_or_else(|| panic!("{}", rest.body))
        .clone();
    let icon = json!([{"src": "https://example.invalid/echo.png", "mimeType": "image/png", "sizes": ["48x48"]}]);
    assert_eq!(iconic["icons"], icon, "{iconic}");

    let mcp = McpSession::open(&gw).await;
    let tools = mcp.ask(list("tools/list")).await;
    let listed = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "with_icon")
        .unwrap_or_else(|| panic!("{tools}"))
        .clone();
    assert_eq!(listed["icons"], icon, "{listed}");
    assert_eq!(tools["result"]["ttlMs"], 0, "{tools}");
    assert_eq!(tools["result"]["cacheScope"], "public", "{tools}");
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let answer = mcp.ask(list(method)).await;
        assert_eq!(
            answer["result"]["cacheScope"], "private",
            "{method}: {answer}"
        );
        assert_eq!(answer["result"]["ttlMs"], 0, "{method}: {answer}");
    }
}

#[tokio::test]
async fn with_api_keys_the_tool_list_is_private() {
    // `printf %s ci-secret-value | sha256sum`, as in api_keys.rs.
    let key = "ci-secret-value";
    let digest = "a611a47919fdcf6c91feb448c21023d8c56b2738757f0563d5a70b246e004f66";
    let config = format!(
        "security:\n  api_keys:\n    - {{ name: k, sha256: {digest} }}\n{}",
        meta_echo()
    );
    let gw = Gateway::start("mcp-lists-keys", &config).await;
    let client = reqwest::Client::builder()
        .default_headers(
            [(
                reqwest::header::HeaderName::from_static("x-api-key"),
                reqwest::header::HeaderValue::from_static(key),
            )]
            .into_iter()
            .collect(),
        )
        .build()
        .unwrap();
    let mcp = McpSession::open_on(client, &gw.url("/mcp"), "t", json!({})).await;
    let tools = mcp.ask(list("tools/list")).await;
    assert_eq!(tools["result"]["cacheScope"], "private", "{tools}");
}

/// Every answer a 2026-07-28 client gets says it is complete (`resultType`, a MUST of that
/// era's schema): the catalog's lists, reads, prompts and completions too, whose upstream (of
/// the handshake era) does not say.
#[tokio::test]
async fn every_answer_to_a_2026_client_says_it_is_complete() {
    let gw = Gateway::start(
        "mcp-lists-complete",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientInfo": {"name": "by-hand", "version": "1"},
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let asks = [
        ("tools/list", "", json!({})),
        ("prompts/list", "", json!({})),
        ("resources/list", "", json!({})),
        ("resources/templates/list", "", json!({})),
        (
            "resources/read",
            "demo://resource/static/document/architecture.md",
            json!({"uri": "demo://resource/static/document/architecture.md"}),
        ),
        (
            "prompts/get",
            "args-prompt",
            json!({"name": "args-prompt", "arguments": {"city": "Lisboa"}}),
        ),
        (
            "completion/complete",
            "",
            json!({"ref": {"type": "ref/prompt", "name": "completable-prompt"},
                   "argument": {"name": "department", "value": "E"}}),
        ),
        (
            "tools/call",
            "echo",
            json!({"name": "echo", "arguments": {"message": "done"}}),
        ),
    ];
    for (method, name, mut params) in asks {
        params["_meta"] = meta.clone();
        let mut request = reqwest::Client::new()
            .post(gw.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method);
        if !name.is_empty() {
            request = request.header("mcp-name", name);
        }
        let text = request
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let answer = jsonrpc_answer(&text);
        assert_eq!(
            answer["result"]["resultType"], "complete",
            "{method}: {answer}"
        );
    }
}
