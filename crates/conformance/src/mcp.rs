//! Check `mcp`: the same tools over MCP. `initialize` then `tools/list` at `/mcp` (Streamable
//! HTTP, JSON-RPC over POST) must list the same tools and schemas as GET /tools, and one
//! `tools/call` per tool must agree with POST /call-tool on success or failure.

use serde_json::{Value, json};

use crate::client::{Exchange, Request};
use crate::tester::Tester;

const PROTOCOL_VERSION: &str = "2025-11-25";

pub fn run(t: &mut Tester, tools: &[Value]) {
    t.progress("MCP at /mcp");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "mcp-http-gateway-conformance", "version": env!("CARGO_PKG_VERSION")}
    }});
    let Some(ex) = rpc(t, &init, None) else {
        return;
    };
    let Some(result) = message(&ex).filter(|m| m.get("result").is_some()) else {
        let curl = t.curl(&ex);
        t.report.fail(
            "mcp",
            format!(
                "initialize at /mcp answered {}: {}",
                ex.status,
                crate::tester::excerpt(&ex.body)
            ),
            Some(curl),
        );
        return;
    };
    t.report.pass("mcp");
    let session = ex.header("mcp-session-id").map(str::to_owned);
    let version = result["result"]["protocolVersion"]
        .as_str()
        .unwrap_or(PROTOCOL_VERSION)
        .to_owned();
    let _ = rpc(
        t,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        session.as_deref(),
    );

    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 2.. {
        let mut params = json!({});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let Some(ex) = rpc(
            t,
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}),
            session.as_deref(),
        ) else {
            return;
        };
        let Some(page) = message(&ex)
            .map(|m| m["result"].clone())
            .filter(|r| r.is_object())
        else {
            let curl = t.curl(&ex);
            t.report.fail(
                "mcp",
                format!("tools/list answered {}", crate::tester::excerpt(&ex.body)),
                Some(curl),
            );
            return;
        };
        listed.extend(page["tools"].as_array().cloned().unwrap_or_default());
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        if cursor.is_none() || id > 1000 {
            break;
        }
    }
    let _ = version;
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default();
        match listed.iter().find(|m| m["name"] == name) {
            Some(m) if m["inputSchema"] == tool["input_schema"] => t.report.pass("mcp"),
            Some(_) => t.report.fail(
                "mcp",
                format!("tool '{name}': inputSchema over MCP differs from GET /tools"),
                None,
            ),
            None => t.report.fail(
                "mcp",
                format!("tool '{name}' is in GET /tools but not in tools/list"),
                None,
            ),
        }
    }
    if listed.len() != tools.len() {
        t.report.fail(
            "mcp",
            format!(
                "tools/list has {} tools, GET /tools {}",
                listed.len(),
                tools.len()
            ),
            None,
        );
    }
    // One call per tool, with empty arguments: both surfaces must agree on success or failure.
    for (i, tool) in tools.iter().enumerate() {
        let name = tool["name"].as_str().unwrap_or_default();
        if t.options.skip_tools.iter().any(|s| s == name)
            || (tool["annotations"]["destructiveHint"] == true && !t.options.allow_destructive)
            || (tool["annotations"]["openWorldHint"] == true && !t.options.allow_open_world)
            || t.options.no_call
        {
            continue;
        }
        let rest = t.exchange(Request::post_json(
            "/call-tool",
            &json!({"tool": name, "arguments": {}}),
        ));
        let call = json!({"jsonrpc": "2.0", "id": 10_000 + i, "method": "tools/call", "params": {"name": name, "arguments": {}}});
        let Some(ex) = rpc(t, &call, session.as_deref()) else {
            continue;
        };
        let Some(rest) = rest else { continue };
        let over_mcp = message(&ex)
            .map(|m| m.get("result").is_some_and(|r| r["isError"] != true))
            .unwrap_or(false);
        let over_rest = rest.json()["success"] == true;
        if over_mcp == over_rest {
            t.report.pass("mcp");
        } else {
            let curl = t.curl(&ex);
            t.report.fail(
                "mcp",
                format!("tool '{name}' with {{}}: POST /call-tool success={over_rest}, tools/call success={over_mcp}"),
                Some(curl),
            );
        }
    }
}

fn rpc(t: &mut Tester, body: &Value, session: Option<&str>) -> Option<Exchange> {
    let mut request =
        Request::post_json("/mcp", body).header("Accept", "application/json, text/event-stream");
    if let Some(s) = session {
        request = request.header("Mcp-Session-Id", s);
    }
    let curl = request.curl(&t.client.base);
    match t.client.send(request) {
        Ok(ex) => Some(ex),
        Err(e) => {
            t.report
                .fail("mcp", format!("no answer from /mcp: {e}"), Some(curl));
            None
        }
    }
}

/// The JSON-RPC message of an answer that is plain JSON or a one-event SSE stream.
fn message(ex: &Exchange) -> Option<Value> {
    if let Some(v) = &ex.json {
        return Some(v.clone());
    }
    ex.body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("result").is_some() || m.get("error").is_some())
}
