//! Resources, prompts and completions over MCP go through the service, as REST's do (issue
//! 32): a `resources/read` waits for a slot behind `limits.max_concurrent_calls` like a call,
//! a prompt is found by its qualified name, a gRPC provider's resources and prompts reach MCP
//! clients, and an MCP server's items arrive as it sent them.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::admission::{call_in_background, until_calls};
use crate::grpc_provider::{HelloProvider, Kind, config};
use crate::harness::*;

const DOCUMENT: &str = "demo://resource/static/document/architecture.md";

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn an_mcp_resource_read_waits_for_a_slot_like_a_call() {
    let extra = format!(
        "limits: {{ max_concurrent_calls: 1, queue_depth: 4, queue_timeout_ms: 30000 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("mcp-admitted", &extra).await;
    let mcp = McpSession::open(&gw).await;
    // Free, it is read at once.
    let read = mcp
        .ask(request(2, "resources/read", json!({"uri": DOCUMENT})))
        .await;
    assert_eq!(read["result"]["contents"][0]["uri"], DOCUMENT, "{read}");

    let running = call_in_background(&gw, 2);
    until_calls(&gw, 1, 0).await;
    let queued = tokio::spawn({
        let mcp = mcp.clone();
        async move {
            let answer = mcp
                .ask(request(3, "resources/read", json!({"uri": DOCUMENT})))
                .await;
            (answer, Instant::now())
        }
    });
    // The read waits in the service's queue, as a call would.
    until_calls(&gw, 1, 1).await;
    let (call, _) = running.await.unwrap();
    let call_ended = Instant::now();
    assert_eq!(call.status, 200, "{}", call.body);
    let (read, read_ended) = queued.await.unwrap();
    assert_eq!(read["result"]["contents"][0]["uri"], DOCUMENT, "{read}");
    assert!(
        read_ended + Duration::from_millis(50) >= call_ended,
        "the read answered before the call that held the only slot ended"
    );
}

#[tokio::test]
async fn a_full_queue_refuses_an_mcp_read_with_the_same_code_as_a_call() {
    let extra = format!(
        "limits: {{ max_concurrent_calls: 1, queue_timeout_ms: 300 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("mcp-refused", &extra).await;
    let mcp = McpSession::open(&gw).await;
    let running = call_in_background(&gw, 2);
    until_calls(&gw, 1, 0).await;
    let refused = mcp
        .ask(request(2, "resources/read", json!({"uri": DOCUMENT})))
        .await;
    let error = &refused["error"];
    assert_eq!(error["code"], -32603, "{refused}");
    assert_eq!(error["data"]["code"], "SERVICE_UNAVAILABLE", "{refused}");
    assert_eq!(error["data"]["retry_after"], 1, "{refused}");
    assert!(error["data"]["request_id"].is_string(), "{refused}");
    assert_eq!(running.await.unwrap().0.status, 200);
}

/// Two server-everything children with the same prompts: the qualified name picks one, over
/// MCP as over REST; the served name is the first's; arguments are checked by the gateway.
#[tokio::test]
async fn prompts_over_mcp_take_qualified_names_and_checked_arguments() {
    let providers = format!(
        "providers:\n{}{}",
        everything_provider("ev"),
        everything_provider("ev2").replace(" }\n", ", tool_prefix: ev2_ }\n")
    );
    let gw = Gateway::start("mcp-prompts", &providers).await;
    let mcp = McpSession::open(&gw).await;
    let listed = mcp.ask(request(2, "prompts/list", json!({}))).await;
    let prompts = listed["result"]["prompts"].as_array().unwrap().clone();
    let args = prompts
        .iter()
        .find(|p| p["name"] == "args-prompt")
        .unwrap_or_else(|| panic!("{listed}"));
    // An MCP server's prompt arrives as it sent it.
    assert_eq!(args["arguments"][0]["name"], "city", "{args}");
    for name in ["args-prompt", "ev.args-prompt", "ev2.args-prompt"] {
        let got = mcp
            .ask(request(
                3,
                "prompts/get",
                json!({"name": name, "arguments": {"city": "Lisboa"}}),
            ))
            .await;
        let text = got["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {got}"));
        assert!(text.contains("Lisboa"), "{name}: {text}");
    }
    let missing = mcp
        .ask(request(
            4,
            "prompts/get",
            json!({"name": "ev3.args-prompt"}),
        ))
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert_eq!(
        missing["error"]["data"]["code"], "PROMPT_NOT_FOUND",
        "{missing}"
    );
    // `city` is required: refused by the gateway with the details REST gives.
    let refused = mcp
        .ask(request(
            5,
            "prompts/get",
            json!({"name": "ev2.args-prompt", "arguments": {}}),
        ))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["data"]["code"], "INVALID_ARGUMENTS",
        "{refused}"
    );
    assert!(
        refused["error"]["data"]["validation_errors"].is_array(),
        "{refused}"
    );
    // A completion of a prompt named by its qualified name reaches the right server.
    let completed = mcp
        .ask(request(
            6,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "ev2.completable-prompt"},
                   "argument": {"name": "department", "value": "E"}}),
        ))
        .await;
    let values = completed["result"]["completion"]["values"]
        .as_array()
        .unwrap_or_else(|| panic!("{completed}"));
    assert!(!values.is_empty(), "{completed}");
}

#[tokio::test]
async fn a_grpc_providers_resources_and_prompts_reach_mcp_clients() {
    let dir = tempfile::tempdir().unwrap();
    let provider = HelloProvider::start(Kind::Rust, &dir.path().join("hello.log"));
    let gw = Gateway::start("grpc-mcp", &config(provider.port, "")).await;
    let mcp = McpSession::open(&gw).await;

    let resources = mcp.ask(request(2, "resources/list", json!({}))).await;
    let greeting = resources["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{resources}"))
        .iter()
        .find(|r| r["uri"] == "hello://greeting")
        .unwrap_or_else(|| panic!("{resources}"))
        .clone();
    assert_eq!(greeting["mimeType"], "text/plain", "{greeting}");
    let read = mcp
        .ask(request(
            3,
            "resources/read",
            json!({"uri": "hello://greeting/ada"}),
        ))
        .await;
    assert_eq!(
        read["result"]["contents"][0]["text"], "Hello, ada! (from hello-rs)",
        "{read}"
    );

    let prompts = mcp.ask(request(4, "prompts/list", json!({}))).await;
    let plan = prompts["result"]["prompts"]
        .as_array()
        .unwrap_or_else(|| panic!("{prompts}"))
        .iter()
        .find(|p| p["name"] == "hello-plan")
        .unwrap_or_else(|| panic!("{prompts}"))
        .clone();
    assert!(
        plan["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "goal" && a["required"] == true),
        "{plan}"
    );
    let rendered = mcp
        .ask(request(
            5,
            "prompts/get",
            json!({"name": "hello.hello-plan", "arguments": {"goal": "ship it"}}),
        ))
        .await;
    let text = rendered["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{rendered}"));
    assert!(text.contains("ship it"), "{text}");

    // The session was told it can ask for them.
    let init = McpSession::send(
        &reqwest::Client::new(),
        &gw.url("/mcp"),
        None,
        request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}),
        ),
    )
    .await;
    let text = init.text().await.unwrap();
    let init: Value = serde_json::from_str(&text)
        .ok()
        .or_else(|| {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .find_map(|d| serde_json::from_str(d.trim()).ok())
        })
        .unwrap_or_else(|| panic!("no answer to initialize: {text}"));
    let capabilities = &init["result"]["capabilities"];
    assert!(
        capabilities["resources"].is_object() && capabilities["prompts"].is_object(),
        "{init}"
    );
}
