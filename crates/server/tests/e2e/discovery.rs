//! Tool discovery against the real binary and real servers (server-everything and
//! mcp-server-time): GET /tools?q= ranks the tools for a need in plain words, with a score
//! each, refuses a malformed search with a clear 400, and never finds a tool outside the
//! caller's key; with `mcp.discovery` the MCP Python SDK lists only the two meta-tools, finds a
//! tool with `find_tools` and calls it with `call_tool`, which keeps every check of a direct call.

use serde_json::{Value, json};

use crate::harness::*;

const KEY: &str = "reader-secret-value";

fn two_servers(extra: &str) -> String {
    format!(
        "{extra}providers:\n{}{}",
        everything_provider("everything"),
        time_provider("time")
    )
}

fn names(answer: &Answer) -> Vec<String> {
    answer.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn get_as(gw: &Gateway, path: &str, key: Option<&str>) -> Answer {
    let mut request = reqwest::Client::new().get(gw.url(path));
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    Answer::from(request.send().await.unwrap()).await
}

#[tokio::test]
async fn a_search_of_get_tools_ranks_the_tools_for_a_need_and_refuses_a_malformed_one() {
    let gw = Gateway::start("discovery", &two_servers("")).await;
    let found = get(
        &gw,
        "/tools?q=what%20is%20the%20current%20time%20in%20Tokyo",
    )
    .await;
    found.assert_envelope();
    assert_eq!(found.status, 200, "{}", found.body);
    let tools = names(&found);
    assert_eq!(tools[0], "get_current_time", "{tools:?}");
    let scores: Vec<f64> = found.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(found.body["data"]["tools"][0]["input_schema"].is_object());
    let one = get(&gw, "/tools?q=add%20two%20numbers&limit=1").await;
    assert_eq!(names(&one), ["get-sum"], "{}", one.body);
    // Without q: every tool, no scores, as before.
    let all = get(&gw, "/tools").await;
    assert!(all.body["data"]["tools"].as_array().unwrap().len() > 10);
    assert!(all.body["data"]["tools"][0].get("score").is_none());
    // A limit alone: the first tools by name.
    let first = get(&gw, "/tools?limit=3").await;
    let mut all_names = names(&all);
    all_names.truncate(3);
    assert_eq!(names(&first), all_names);
    for (path, says) in [
        ("/tools?q=", "q must hold 1 to 1000 bytes"),
        ("/tools?q=time&limit=0", "limit must be from 1 to 100"),
        ("/tools?q=time&limit=101", "limit must be from 1 to 100"),
        ("/tools?q=time&limit=two", "Invalid query"),
        ("/tools?query=time", "Invalid query"),
    ] {
        let refused = get(&gw, path).await;
        refused.assert_envelope();
        assert_eq!(refused.status, 400, "{path}: {}", refused.body);
        assert_eq!(refused.code(), "INVALID_REQUEST");
        let message = refused.body["error"].as_str().unwrap();
        assert!(message.contains(says), "{path}: {message}");
    }
}

/// A key scoped to `echo` finds nothing else, however well another tool matches.
#[tokio::test]
async fn a_scoped_key_never_finds_a_tool_outside_its_scope() {
    let gw = Gateway::start_env(
        "discovery-keys",
        &two_servers(
            "security:\n  api_keys:\n    - { name: reader, value_env: MHG_READER_KEY, tools: [echo] }\n",
        ),
        &[("MHG_READER_KEY", KEY)],
    )
    .await;
    let found = get_as(
        &gw,
        "/tools?q=current%20time%20in%20a%20timezone",
        Some(KEY),
    )
    .await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert!(names(&found).is_empty(), "{}", found.body);
    let echo = get_as(&gw, "/tools?q=echo%20a%20message%20back", Some(KEY)).await;
    assert_eq!(names(&echo), ["echo"]);
    assert_eq!(get_as(&gw, "/tools?q=time", None).await.status, 401);
}

/// `mcp.discovery`: the SDK's client sees two tools, finds get-sum for "add two numbers" and
/// calls it through `call_tool`; a call with bad arguments is refused as a direct call is.
#[tokio::test]
async fn the_mcp_sdk_finds_and_calls_a_tool_through_the_meta_tools() {
    let gw = Gateway::start("discovery-mcp", &two_servers("mcp: { discovery: true }\n")).await;
    let seen = run_python(vec![
        fixture("discovery_client.py"),
        gw.url("/mcp"),
        "add two numbers together and give me the total".into(),
        json!({"a": 2, "b": 40}).to_string(),
    ])
    .await;
    assert_eq!(seen["tools"], json!(["call_tool", "find_tools"]), "{seen}");
    assert_eq!(seen["find_is_error"], false, "{seen}");
    assert_eq!(seen["found"][0], "get-sum", "{seen}");
    assert_eq!(seen["found_have_schemas"], true);
    assert_eq!(seen["call_is_error"], false, "{seen}");
    assert!(seen["call_text"].as_str().unwrap().contains("42"), "{seen}");
    assert_eq!(seen["invalid_is_error"], true, "{seen}");
    let invalid = seen["invalid_text"].as_str().unwrap_or_default();
    assert!(invalid.contains("input schema"), "{seen}");
    // REST is unchanged by the MCP option.
    assert!(names(&get(&gw, "/tools").await).len() > 10);
}

/// With a scoped key over MCP, `find_tools` never answers a tool outside the scope and
/// `call_tool` refuses one, as a direct call is refused.
#[tokio::test]
async fn meta_tools_keep_the_key_s_scope() {
    let gw = Gateway::start_env(
        "discovery-mcp-keys",
        &two_servers(
            "mcp: { discovery: true }\nsecurity:\n  api_keys:\n    - { name: reader, value_env: MHG_READER_KEY, tools: [echo] }\n",
        ),
        &[("MHG_READER_KEY", KEY)],
    )
    .await;
    let seen: Value = run_python(vec![
        fixture("discovery_client.py"),
        gw.url("/mcp"),
        "add two numbers together and give me the total".into(),
        json!({"a": 2, "b": 40}).to_string(),
        KEY.into(),
    ])
    .await;
    assert!(
        seen["found"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n == "echo"),
        "{seen}"
    );
    assert_eq!(seen["invalid_is_error"], true, "{seen}");
    assert!(
        seen["invalid_text"]
            .as_str()
            .unwrap_or_default()
            .contains("outside the scope"),
        "{seen}"
    );
}

/// `discovery.model` (all-MiniLM-L6-v2, as `scripts/install-discovery-model.sh` installs it):
/// a need that shares no word with the tool that does it finds that tool, over REST and through
/// the MCP SDK's `find_tools`, which by words alone it does not; a need of nothing the service
/// does finds nothing.
#[tokio::test]
async fn with_a_model_a_need_in_other_words_finds_its_tool_over_rest_and_mcp() {
    let model = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.deps/models/all-MiniLM-L6-v2")
        .canonicalize()
        .expect("the discovery model is installed (scripts/install-discovery-model.sh)");
    let need = "add up 17 and 25";
    let path = format!("/tools?q={}&limit=5", need.replace(' ', "%20"));
    let by_words = Gateway::start("discovery-words", &two_servers("")).await;
    let found = names(&get(&by_words, &path).await);
    assert!(!found.contains(&"get-sum".to_owned()), "{found:?}");
    drop(by_words);

    let config = two_servers(&format!(
        "mcp: {{ discovery: true }}\ndiscovery:\n  model: {}\n",
        model.display()
    ));
    let gw = Gateway::start("discovery-model", &config).await;
    let found = get(&gw, &path).await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_eq!(names(&found)[0], "get-sum", "{}", found.body);
    let nothing = get(&gw, "/tools?q=bake%20sourdough%20bread").await;
    assert!(names(&nothing).is_empty(), "{}", nothing.body);
    let seen = run_python(vec![
        fixture("discovery_client.py"),
        gw.url("/mcp"),
        need.into(),
        json!({"a": 17, "b": 25}).to_string(),
    ])
    .await;
    assert_eq!(seen["found"][0], "get-sum", "{seen}");
    assert!(seen["call_text"].as_str().unwrap().contains("42"), "{seen}");
}

/// A model that cannot be read stops the service at start, naming the setting and the file.
#[tokio::test]
async fn a_discovery_model_that_cannot_be_read_is_refused_at_start() {
    let mut gw = Gateway::spawn(
        "discovery-no-model",
        "discovery:\n  model: /nonexistent/model\nproviders: []\n",
    );
    let status = gw.wait_exit(std::time::Duration::from_secs(60)).await;
    assert_eq!(status.code(), Some(1));
    let logs = gw.logs();
    assert!(
        logs.contains("discovery.model /nonexistent/model")
            && logs.contains("/nonexistent/model/config.json"),
        "{logs}"
    );
}
