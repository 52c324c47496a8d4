//! The `mcp` provider against real MCP servers over stdio: results, unicode, pagination,
//! list_changed, stderr forwarding, and a timed-out call cancelled upstream.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

#[tokio::test]
async fn tools_results_and_unicode_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "providers:\n{}{}{}",
        everything_provider("everything"),
        time_provider("time"),
        memory_provider("memory", dir.path())
    );
    let gw = Gateway::start("bridge", &extra).await;

    let tools = get(&gw, "/tools").await;
    tools.assert_envelope();
    assert_eq!(tools.body["data"]["service"], "bridge");
    let names: Vec<&str> = tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are sorted by name");
    for expected in [
        "echo",
        "get-sum",
        "get_current_time",
        "convert_time",
        "create_entities",
        "read_graph",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    for tool in tools.body["data"]["tools"].as_array().unwrap() {
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
    }
    let echo = tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "echo")
        .unwrap();
    assert_eq!(echo["annotations"]["readOnlyHint"], true);

    // Unicode in, unicode out, byte for byte.
    let text = "héllo ✓ 日本語 🎉 \u{0}-ctrl \"quoted\"";
    let a = call(&gw, "echo", json!({"message": text})).await;
    a.assert_envelope();
    assert_eq!(
        a.body["data"]["content"][0]["text"],
        format!("Echo: {text}")
    );
    let a = post_json(&gw, "/tools/echo", &json!({"message": text})).await;
    assert_eq!(
        a.body["data"]["content"][0]["text"],
        format!("Echo: {text}")
    );
    assert_eq!(a.body["meta"]["tool"], "echo");

    // A single JSON-object text block becomes `data` itself.
    let a = call(&gw, "get_current_time", json!({"timezone": "Asia/Tokyo"})).await;
    assert_eq!(a.body["data"]["timezone"], "Asia/Tokyo", "{}", a.body);
    // structuredContent wins.
    let a = call(
        &gw,
        "get-structured-content",
        json!({"location": "New York"}),
    )
    .await;
    assert!(a.body["data"].get("content").is_none(), "{}", a.body);
    assert!(a.body["data"]["temperature"].is_number(), "{}", a.body);
    // Stateful server: what one call writes the next reads, non-ASCII included.
    let a = call(
        &gw,
        "create_entities",
        json!({"entities": [{"name": "Zoë", "entityType": "person", "observations": ["likes ☕"]}]}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a = call(&gw, "read_graph", json!({})).await;
    assert!(
        a.body["data"].to_string().contains("likes ☕"),
        "{}",
        a.body
    );

    // An empty body on /tools/{name} means no arguments.
    let response = reqwest::Client::new()
        .post(gw.url("/tools/read_graph"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    // The children's stderr lands in our log, tagged.
    let line = eventually(
        Duration::from_secs(10),
        "stderr of server-everything in the log",
        || async {
            gw.log_lines()
                .into_iter()
                .find(|l| l["target"] == "upstream_stderr" && l["provider"] == "everything")
        },
    )
    .await;
    assert_eq!(line["service"], "bridge");
}

#[tokio::test]
async fn every_page_is_listed_and_list_changed_refreshes() {
    let extra = format!(
        "providers:\n  - {{ name: paged, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
        venv_python(),
        fixture("paged_dynamic_server.py")
    );
    let gw = Gateway::start("paged", &extra).await;
    let names = |a: &Answer| -> Vec<String> {
        a.body["data"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let tools = get(&gw, "/tools").await;
    assert_eq!(
        names(&tools),
        vec![
            "add_tool", "sleep", "tool_a", "tool_b", "tool_c", "tool_d", "tool_e"
        ]
    );

    let a = call(&gw, "add_tool", json!({"name": "tool_new"})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let tools = eventually(Duration::from_secs(10), "tool_new listed", || async {
        let tools = get(&gw, "/tools").await;
        names(&tools)
            .contains(&"tool_new".to_owned())
            .then_some(tools)
    })
    .await;
    assert_eq!(names(&tools).len(), 8);
    let a = call(&gw, "tool_new", json!({"text": "ça marche"})).await;
    assert_eq!(a.body["data"]["content"][0]["text"], "tool_new:ça marche");
    // The per-service document follows the tool list.
    let doc: Value = reqwest::get(gw.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["paths"]["/tools/tool_new"]["post"].is_object());
    // Its validator is compiled from the new schema.
    let a = call(&gw, "tool_new", json!({"text": "x", "extra": 1})).await;
    assert_eq!(a.code(), "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_upstream() {
    let extra = format!(
        "limits: {{ call_timeout_ms: 1000 }}\nproviders:\n  - {{ name: paged, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
        venv_python(),
        fixture("paged_dynamic_server.py")
    );
    let gw = Gateway::start("cancels", &extra).await;
    let a = call(&gw, "sleep", json!({"seconds": 30})).await;
    a.assert_envelope();
    assert_eq!((a.status.as_u16(), a.code()), (504, "TIMEOUT"));
    // The server itself says its handler was cancelled (its stderr is in our log).
    eventually(
        Duration::from_secs(10),
        "the upstream's cancellation report",
        || async {
            gw.logs()
                .contains("fixture: sleep cancelled by the client")
                .then_some(())
        },
    )
    .await;
    // The connection is still good.
    assert_eq!(call(&gw, "sleep", json!({"seconds": 0})).await.status, 200);
}
