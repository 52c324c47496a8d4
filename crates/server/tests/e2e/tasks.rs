//! Tool calls as tasks (issue 33), against server-everything's `simulate-research-query`, a
//! tool its server runs only as a task (2025-11-25 `taskSupport: required`): a plain call works
//! on both surfaces (the gateway runs it as an upstream task and waits), `Prefer:
//! respond-async` answers 202 with `Location: /tasks/{id}` for it and for a tool that knows
//! nothing of tasks, the task is read until it ends and can be cancelled, and a call the
//! service would refuse is refused at once, not accepted.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

const RESEARCH: &str = "simulate-research-query";

async fn start(gw: &Gateway, tool: &str, arguments: Value) -> Answer {
    Answer::from(
        reqwest::Client::new()
            .post(gw.url("/call-tool"))
            .header("prefer", "respond-async")
            .json(&json!({"tool": tool, "arguments": arguments}))
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn delete(gw: &Gateway, path: &str) -> Answer {
    Answer::from(
        reqwest::Client::new()
            .delete(gw.url(path))
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// Reads the task at `location` until it has ended; its last answer.
async fn ended(gw: &Gateway, location: &str) -> Value {
    eventually(Duration::from_secs(30), "the task ended", || async {
        let read = get(gw, location).await;
        assert_eq!(read.status, 200, "{}", read.body);
        (read.body["data"]["status"] != "working").then(|| read.body["data"].clone())
    })
    .await
}

#[tokio::test]
async fn a_task_only_tool_answers_a_plain_call_on_both_surfaces() {
    let gw = Gateway::start(
        "tasks-plain",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let answered = call(&gw, RESEARCH, json!({"topic": "python"})).await;
    assert_eq!(answered.status, 200, "{}", answered.body);
    let text = answered.body["data"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Research Report"), "{text}");

    let mcp = McpSession::open(&gw).await;
    let answer = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": RESEARCH, "arguments": {"topic": "rust"}}}))
        .await;
    let result = &answer["result"];
    assert_ne!(result["isError"], true, "{answer}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Research Report")),
        "{answer}"
    );
}

#[tokio::test]
async fn respond_async_answers_202_then_the_task_is_read_until_it_ends() {
    let gw = Gateway::start(
        "tasks-async",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let accepted = start(&gw, RESEARCH, json!({"topic": "python"})).await;
    accepted.assert_envelope();
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    assert_eq!(accepted.headers["preference-applied"], "respond-async");
    let task = &accepted.body["data"];
    assert_eq!(task["status"], "working", "{task}");
    assert_eq!(task["tool"], RESEARCH);
    let location = accepted.headers["location"].to_str().unwrap().to_owned();
    assert_eq!(
        location,
        format!("/tasks/{}", task["task_id"].as_str().unwrap())
    );

    let done = ended(&gw, &location).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Research Report")),
        "{done}"
    );

    // A tool that knows nothing of tasks runs as one too.
    let echo = start(&gw, "echo", json!({"message": "later"})).await;
    assert_eq!(echo.status, 202, "{}", echo.body);
    let location = echo.headers["location"].to_str().unwrap().to_owned();
    let done = ended(&gw, &location).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Echo: later",
        "{done}"
    );

    // What the call would refuse is refused at once.
    let refused = start(&gw, "echo", json!({"message": 7})).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.code(), "INVALID_ARGUMENTS");
    let unknown = start(&gw, "no_such_tool", json!({})).await;
    assert_eq!(unknown.code(), "TOOL_NOT_FOUND", "{}", unknown.body);
    let missing = get(&gw, "/tasks/no-such-task").await;
    missing.assert_envelope();
    assert_eq!(
        (missing.status.as_u16(), missing.code()),
        (404, "NOT_FOUND")
    );
}

#[tokio::test]
async fn a_task_is_cancelled_and_stays_cancelled() {
    let gw = Gateway::start(
        "tasks-cancel",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let accepted = start(&gw, RESEARCH, json!({"topic": "slow"})).await;
    assert_eq!(accepted.status, 202, "{}", accepted.body);
    let location = accepted.headers["location"].to_str().unwrap().to_owned();
    let cancelled = delete(&gw, &location).await;
    cancelled.assert_envelope();
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.body["data"]["status"], "cancelled");
    // A later research call runs to its end on the same server; the cancelled task is still
    // cancelled after it, with no result (the first end of a task is its end).
    let after = call(&gw, RESEARCH, json!({"topic": "after"})).await;
    assert_eq!(after.status, 200, "{}", after.body);
    let read = get(&gw, &location).await;
    assert_eq!(read.body["data"]["status"], "cancelled", "{}", read.body);
    assert!(read.body["data"].get("result").is_none());
    let again = delete(&gw, &location).await;
    assert_eq!(again.body["data"]["status"], "cancelled");
}

/// A client of the 2026-07-28 tasks extension (SEP-2663) gets a long call as a task, reads it
/// with `tasks/get` until it completes, and cancels another with `tasks/cancel`; a short call
/// is answered at once.
#[tokio::test]
async fn an_mcp_client_of_the_tasks_extension_gets_long_calls_as_tasks() {
    let gw = Gateway::start(
        "tasks-mcp",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let mcp = McpSession::open_on(
        reqwest::Client::new(),
        &gw.url("/mcp"),
        "tasks-client",
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
    .await;
    let call = |id: u64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
    };
    let short = mcp.ask(call(2, "echo", json!({"message": "now"}))).await;
    assert_eq!(
        short["result"]["content"][0]["text"], "Echo: now",
        "{short}"
    );

    let created = mcp.ask(call(3, RESEARCH, json!({"topic": "python"}))).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert_eq!(created["result"]["status"], "working", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let done = eventually(Duration::from_secs(30), "the task completed", || {
        let mcp = mcp.clone();
        let task_id = task_id.clone();
        async move {
            let got = mcp
                .ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/get",
                            "params": {"taskId": task_id}}))
                .await;
            (got["result"]["status"] != "working").then_some(got)
        }
    })
    .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert!(
        done["result"]["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Research Report")),
        "{done}"
    );

    let other = mcp.ask(call(5, RESEARCH, json!({"topic": "rust"}))).await;
    let other_id = other["result"]["taskId"].as_str().unwrap().to_owned();
    let cancelled = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 6, "method": "tasks/cancel",
                    "params": {"taskId": other_id}}))
        .await;
    assert!(cancelled.get("error").is_none(), "{cancelled}");
    let read = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/get",
                    "params": {"taskId": other_id}}))
        .await;
    assert_eq!(read["result"]["status"], "cancelled", "{read}");
    let unknown = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 8, "method": "tasks/get",
                    "params": {"taskId": "no-such-task"}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// What a task's upstream asks while it runs waits for the client of the tasks extension:
/// `tasks/get` shows the task `input_required` with the elicitation as the server sent it,
/// `tasks/update` answers it (an answer to nothing asked is left out, one of the wrong kind
/// refused), and the task completes with what the tool made of the answer.
#[tokio::test]
async fn a_tasks_upstream_asks_its_client_through_tasks_get_and_update() {
    let gw = Gateway::start(
        "tasks-asks",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let mcp = McpSession::open_on(
        reqwest::Client::new(),
        &gw.url("/mcp"),
        "tasks-asked",
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}}),
    )
    .await;
    let created = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "trigger-elicitation-request", "arguments": {}}}))
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let get = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": {"taskId": task_id}});
    let asked = eventually(Duration::from_secs(10), "the task asks", || {
        let mcp = mcp.clone();
        let get = get(3);
        async move {
            let got = mcp.ask(get).await;
            (got["result"]["status"] == "input_required").then_some(got)
        }
    })
    .await;
    let (key, request) = asked["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .map(|(k, r)| (k.clone(), r.clone()))
        .unwrap();
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    assert!(
        request["params"]["requestedSchema"]["properties"].is_object(),
        "{asked}"
    );
    let unasked = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/update",
                    "params": {"taskId": task_id, "inputResponses": {"nothing-asked": {}}}}))
        .await;
    assert!(unasked.get("error").is_none(), "left out: {unasked}");
    let wrong = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tasks/update",
                    "params": {"taskId": task_id, "inputResponses": {&key: {"roots": "none"}}}}))
        .await;
    assert_eq!(
        wrong["error"]["code"], -32602,
        "not an elicitation's answer: {wrong}"
    );
    let updated = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 5, "method": "tasks/update",
                    "params": {"taskId": task_id, "inputResponses": {key: {"action": "decline"}}}}))
        .await;
    assert!(updated.get("error").is_none(), "{updated}");
    let done = eventually(Duration::from_secs(10), "the task completed", || {
        let mcp = mcp.clone();
        let get = get(6);
        async move {
            let got = mcp.ask(get).await;
            (got["result"]["status"] == "completed").then_some(got)
        }
    })
    .await;
    assert!(
        done["result"]["result"].to_string().contains("declined"),
        "the tool saw the answer: {done}"
    );
}

/// A task whose call fails (here its timeout, not the tool reporting an error of its own)
/// ends `failed` with the JSON-RPC error the call would have given, as the tasks extension
/// asks; the tool's own `isError` result would complete it.
#[tokio::test]
async fn a_task_whose_call_fails_ends_failed_with_its_error() {
    let gw = Gateway::start(
        "tasks-failed",
        &format!(
            "limits: {{ call_timeout_ms: 1500 }}\nproviders:\n{}",
            everything_provider("everything")
        ),
    )
    .await;
    let mcp = McpSession::open_on(
        reqwest::Client::new(),
        &gw.url("/mcp"),
        "tasks-failed",
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}),
    )
    .await;
    let created = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "trigger-long-running-operation",
                               "arguments": {"duration": 5, "steps": 5}}}))
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let ended = eventually(Duration::from_secs(15), "the task ended", || {
        let mcp = mcp.clone();
        let task_id = task_id.clone();
        async move {
            let got = mcp
                .ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
                            "params": {"taskId": task_id}}))
                .await;
            (got["result"]["status"] != "working").then_some(got)
        }
    })
    .await;
    assert_eq!(ended["result"]["status"], "failed", "{ended}");
    assert_eq!(
        ended["result"]["error"]["data"]["code"], "TIMEOUT",
        "{ended}"
    );
    assert!(ended["result"]["error"]["code"].is_i64(), "{ended}");
}
