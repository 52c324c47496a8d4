//! The access log: one JSON line per request, with its request id and the facts of its
//! handling (method, path, tool, status, code, time).

use serde_json::json;

use crate::harness::*;

#[tokio::test]
async fn one_log_line_per_request_with_its_facts() {
    let gw = Gateway::start(
        "logs",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let id = "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f";
    let a = Answer::from(
        reqwest::Client::new()
            .post(gw.url("/call-tool"))
            .header("x-request-id", id)
            .json(&json!({"tool": "get-sum", "arguments": {"a": "x"}}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, 400);
    let line = eventually(
        std::time::Duration::from_secs(10),
        "the access log line",
        || async {
            gw.log_lines()
                .into_iter()
                .find(|l| l["target"] == "mcp_http_gateway::access" && l["request_id"] == id)
        },
    )
    .await;
    assert_eq!(line["method"], "POST");
    assert_eq!(line["path"], "/call-tool");
    assert_eq!(line["tool"], "get-sum");
    assert_eq!(line["status"], 400);
    assert_eq!(line["code"], "INVALID_ARGUMENTS");
    assert!(line["execution_time_ms"].as_u64().is_some());
    assert_eq!(line["level"], "INFO");
    // Exactly one access line for that request.
    let count = gw
        .log_lines()
        .iter()
        .filter(|l| l["target"] == "mcp_http_gateway::access" && l["request_id"] == id)
        .count();
    assert_eq!(count, 1);
}
