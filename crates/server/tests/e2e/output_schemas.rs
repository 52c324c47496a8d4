//! Typed tools end to end, against a fixture written with the official MCP Python SDK
//! (`fixtures/typed_server.py`: nested pydantic models, a recursive one, enums, typed results,
//! one result that violates its own schema): output schemas are listed by GET /tools and MCP
//! `tools/list`, nested argument violations come back with JSON pointers, results are checked
//! against the output schema (`validate_output: strict`, the default, refuses; `warn` logs and
//! answers), and http/cypher tools may declare an `output_schema` in YAML.

use serde_json::json;

use crate::harness::*;

fn typed_provider(name: &str, extra: &str) -> String {
    format!(
        "  - {{ name: {name}, kind: mcp, command: \"{}\", args: [\"{}\"]{extra} }}\n",
        venv_python(),
        fixture("typed_server.py")
    )
}

#[tokio::test]
async fn typed_tools_are_listed_validated_and_their_results_checked() {
    let gw = Gateway::start(
        "typed",
        &format!("providers:\n{}", typed_provider("typed", "")),
    )
    .await;

    let tools = get(&gw, "/tools").await;
    tools.assert_envelope();
    let listed = tools.body["data"]["tools"].as_array().unwrap();
    let tool = |name: &str| listed.iter().find(|t| t["name"] == name).unwrap().clone();
    let register = tool("register_person");
    // The upstream's schemas as it wrote them: $defs kept, output schema passed through.
    assert!(
        register["input_schema"]["$defs"]["Address"].is_object(),
        "{register}"
    );
    assert_eq!(register["output_schema"]["title"], "Registration");
    assert_eq!(
        tool("summarize_tree")["output_schema"]["required"],
        json!(["nodes", "depth", "labels"])
    );

    // Nested constraint violations, each with its JSON pointer.
    let bad = call(
        &gw,
        "register_person",
        json!({"person": {"name": "Ada", "age": -1, "address": {"street": "Rue", "city": "Paris", "postcode": "75OO1"}}}),
    )
    .await;
    bad.assert_envelope();
    assert_eq!(bad.status, 400);
    assert_eq!(bad.code(), "INVALID_ARGUMENTS");
    let paths: Vec<&str> = bad.body["meta"]["validation_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/person/age"), "{paths:?}");
    assert!(paths.contains(&"/person/address/postcode"), "{paths:?}");
    let enum_bad = call(
        &gw,
        "register_person",
        json!({"person": {"name": "Ada", "age": 36, "address": {"street": "Rue", "city": "Paris", "postcode": "75001"}}, "priority": "urgent"}),
    )
    .await;
    assert_eq!(enum_bad.code(), "INVALID_ARGUMENTS", "{}", enum_bad.body);

    // Valid calls answer typed results; a recursive argument goes through.
    let ok = call(
        &gw,
        "register_person",
        json!({"person": {"name": "Ada", "age": 36, "address": {"street": "Rue", "city": "Paris", "postcode": "75001"}}, "priority": "high"}),
    )
    .await;
    ok.assert_envelope();
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["data"]["letters"], 3);
    assert_eq!(ok.body["data"]["priority"], "high");
    let tree = call(
        &gw,
        "summarize_tree",
        json!({"tree": {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}, {"label": "d"}]}}),
    )
    .await;
    assert_eq!(tree.status, 200, "{}", tree.body);
    assert_eq!(
        tree.body["data"],
        json!({"nodes": 4, "depth": 3, "labels": ["a", "b", "c", "d"]})
    );

    // A result that violates the declared output schema is refused, naming where and why.
    let broken = call(&gw, "broken_measurement", json!({})).await;
    broken.assert_envelope();
    assert_eq!(broken.status, 500, "{}", broken.body);
    assert_eq!(broken.code(), "EXECUTION_ERROR");
    let message = broken.body["error"].as_str().unwrap();
    assert!(
        message.contains("output schema") && message.contains("'/value'"),
        "{message}"
    );
    assert!(message.contains("number"), "{message}");

    // MCP clients see the same output schemas.
    let session = McpSession::open(&gw).await;
    let listed = session
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let mcp_tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "summarize_tree")
        .unwrap()
        .clone();
    assert_eq!(
        mcp_tool["outputSchema"]["title"], "TreeSummary",
        "{mcp_tool}"
    );
}

#[tokio::test]
async fn warn_answers_a_violating_result_and_logs_it() {
    let gw = Gateway::start(
        "typed-warn",
        &format!(
            "providers:\n{}",
            typed_provider("typed", ", validate_output: warn")
        ),
    )
    .await;
    let broken = call(&gw, "broken_measurement", json!({"unit": "s"})).await;
    assert_eq!(broken.status, 200, "{}", broken.body);
    assert_eq!(
        broken.body["data"],
        json!({"value": "not a number", "unit": "s"})
    );
    assert!(
        gw.logs().contains("does not match its output schema"),
        "{}",
        gw.logs()
    );
}

#[tokio::test]
async fn declared_http_tools_may_declare_an_output_schema() {
    // The upstream API is another gateway: its GET /health is a real JSON answer.
    let upstream = Gateway::start("upstream-api", "").await;
    let extra = format!(
        r#"dependencies:
  api: {{ kind: http, base_url: "http://127.0.0.1:{port}", health_path: /health }}
providers:
  - name: declared
    kind: http
    dependency: api
    tools:
      - name: health_status
        description: the upstream's status
        input_schema: {{ type: object }}
        path: /health
        result: /data
        output_schema: {{ type: object, required: [status, service], properties: {{ status: {{ enum: [healthy, degraded] }} }} }}
      - name: health_wrongly_typed
        description: the same answer, declared with a schema it does not meet
        input_schema: {{ type: object }}
        path: /health
        result: /data
        output_schema: {{ type: object, required: [uptime_hours] }}
"#,
        port = upstream.port
    );
    let gw = Gateway::start("typed-http", &extra).await;
    let listed = get(&gw, "/tools").await;
    assert!(
        listed.body["data"]["tools"][0]["output_schema"].is_object(),
        "{}",
        listed.body
    );
    let ok = call(&gw, "health_status", json!({})).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["data"]["service"], "upstream-api");
    let wrong = call(&gw, "health_wrongly_typed", json!({})).await;
    assert_eq!(wrong.status, 500, "{}", wrong.body);
    assert!(
        wrong.body["error"]
            .as_str()
            .unwrap()
            .contains("uptime_hours"),
        "{}",
        wrong.body
    );
}

#[tokio::test]
async fn cypher_tools_are_typed_by_default_and_may_declare_their_own() {
    let db = BoltDb::start();
    let extra = format!(
        r#"dependencies:
  graph: {{ kind: bolt, uri: "{uri}", user: root, password_env: TYPED_BOLT_PASSWORD }}
providers:
  - name: graph
    kind: cypher
    dependency: graph
    tools:
      - name: count_functions
        description: how many functions the graph has
        input_schema: {{ type: object }}
        query: "MATCH (f:Function) RETURN count(f) AS n"
      - name: count_functions_typed_wrong
        description: the same count, declared with a result key it does not have
        input_schema: {{ type: object }}
        query: "MATCH (f:Function) RETURN count(f) AS n"
        output_schema: {{ type: object, required: [functions] }}
"#,
        uri = db.uri()
    );
    let mut gw = Gateway::spawn_env(
        "typed-cypher",
        &extra,
        &[("TYPED_BOLT_PASSWORD", "code-graph-rag")],
    );
    gw.wait_running().await;
    let tools = get(&gw, "/tools").await;
    let listed = tools.body["data"]["tools"].as_array().unwrap();
    let count = listed
        .iter()
        .find(|t| t["name"] == "count_functions")
        .unwrap();
    assert_eq!(
        count["output_schema"]["required"],
        json!(["rows", "count"]),
        "{count}"
    );
    let ok = call(&gw, "count_functions", json!({})).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["data"]["count"], 1);
    let wrong = call(&gw, "count_functions_typed_wrong", json!({})).await;
    assert_eq!(wrong.status, 500, "{}", wrong.body);
    assert!(
        wrong.body["error"].as_str().unwrap().contains("functions"),
        "{}",
        wrong.body
    );
}
