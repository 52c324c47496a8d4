//! Named API keys (`security.api_keys`) against the real binary and server-everything: keys
//! from an environment variable and from a SHA-256 in the file, tool scopes over REST, MCP
//! (Streamable HTTP and legacy SSE) and the per-service document, `public_routes`, the key's
//! name (never its value) in logs and metrics, and one rate-limit allowance per key.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

const OPS_KEY: &str = "ops-secret-value";
const CI_KEY: &str = "ci-secret-value";
const READER_KEY: &str = "reader-secret-value";
/// `printf %s ci-secret-value | sha256sum`
const CI_SHA256: &str = "a611a47919fdcf6c91feb448c21023d8c56b2738757f0563d5a70b246e004f66";

/// `ops` (from the environment, every tool), `ci` (from its digest: `get-*` and `echo`, not
/// `get-env`) and `reader` (`echo` only: a second scope, so the per-scope cache must tell
/// scopes apart).
fn keyed(extra_security: &str) -> String {
    format!(
        "monitoring: {{ metrics_enabled: true }}\nsecurity:\n{extra_security}  api_keys:\n    - {{ name: ops, value_env: MHG_OPS_KEY }}\n    - {{ name: ci, sha256: {CI_SHA256}, tools: ['get-*', echo], deny_tools: [get-env] }}\n    - {{ name: reader, value_env: MHG_READER_KEY, tools: [echo] }}\nproviders:\n{}",
        everything_provider("everything")
    )
}

async fn start_keyed(name: &str, extra_security: &str) -> Gateway {
    let mut gw = Gateway::spawn_env(
        name,
        &keyed(extra_security),
        &[("MHG_OPS_KEY", OPS_KEY), ("MHG_READER_KEY", READER_KEY)],
    );
    gw.wait_running().await;
    gw
}

fn get_request(gw: &Gateway, path: &str, key: Option<&str>) -> reqwest::RequestBuilder {
    let request = reqwest::Client::new().get(gw.url(path));
    match key {
        Some(key) => request.header("x-api-key", key),
        None => request,
    }
}

async fn get_as(gw: &Gateway, path: &str, key: Option<&str>) -> Answer {
    Answer::from(get_request(gw, path, key).send().await.unwrap()).await
}

/// The body of `GET path` with `key`, as text.
async fn text_as(gw: &Gateway, path: &str, key: Option<&str>) -> String {
    let answer = get_request(gw, path, key).send().await.unwrap();
    answer.text().await.unwrap()
}

async fn call_as(gw: &Gateway, key: &str, tool: &str, arguments: Value) -> Answer {
    let request = reqwest::Client::new()
        .post(gw.url("/call-tool"))
        .bearer_auth(key)
        .json(&json!({"tool": tool, "arguments": arguments}));
    Answer::from(request.send().await.unwrap()).await
}

fn names(tools: &Value) -> BTreeSet<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// What `ci`'s globs allow, judged here independently of the gateway's matcher.
fn ci_may_use(tool: &str) -> bool {
    (tool.starts_with("get-") || tool == "echo") && tool != "get-env"
}

/// An MCP session at /mcp whose every request carries `key`.
async fn mcp_as(gw: &Gateway, key: &str) -> McpSession {
    let client = reqwest::Client::builder()
        .default_headers(
            [(
                reqwest::header::HeaderName::from_static("x-api-key"),
                key.parse().unwrap(),
            )]
            .into_iter()
            .collect(),
        )
        .build()
        .unwrap();
    McpSession::open_on(client, &gw.url("/mcp"), "keyed", json!({})).await
}

#[tokio::test]
async fn named_keys_are_identified_and_scoped_over_rest() {
    let gw = start_keyed("named-keys", "").await;
    // Missing, wrong, and a digest sent as the key: 401.
    for key in [None, Some("wrong"), Some(CI_SHA256)] {
        let a = get_as(&gw, "/tools", key).await;
        a.assert_envelope();
        assert_eq!(
            (a.status.as_u16(), a.code()),
            (401, "UNAUTHORIZED"),
            "{key:?}"
        );
    }
    let all = get_as(&gw, "/tools", Some(OPS_KEY)).await;
    assert_eq!(all.status, 200, "{}", all.body);
    let all = names(&all.body["data"]["tools"]);
    assert!(all.contains("get-env") && all.contains("echo"), "{all:?}");
    let ci = get_as(&gw, "/tools", Some(CI_KEY)).await;
    assert_eq!(ci.status, 200, "{}", ci.body);
    let ci = names(&ci.body["data"]["tools"]);
    let expected: BTreeSet<String> = all.iter().filter(|t| ci_may_use(t)).cloned().collect();
    assert_eq!(ci, expected);
    assert!(ci.len() >= 3 && ci.len() < all.len(), "{ci:?}");
    let reader = get_as(&gw, "/tools", Some(READER_KEY)).await;
    assert_eq!(
        names(&reader.body["data"]["tools"]),
        BTreeSet::from(["echo".to_owned()])
    );
    let again = get_as(&gw, "/tools", Some(CI_KEY)).await;
    assert_eq!(
        names(&again.body["data"]["tools"]),
        ci,
        "each scope its own list"
    );

    // Calls: inside the scope they run; outside it 403, whether or not the tool exists (a
    // key cannot probe for tools outside its scope); in scope but missing, 404.
    let echo = call_as(&gw, CI_KEY, "echo", json!({"message": "hi"})).await;
    assert_eq!(echo.status, 200, "{}", echo.body);
    for tool in ["get-env", "toggle-simulated-logging", "no-such-tool"] {
        let refused = call_as(&gw, CI_KEY, tool, json!({})).await;
        refused.assert_envelope();
        assert_eq!(
            (refused.status.as_u16(), refused.code()),
            (403, "FORBIDDEN"),
            "{tool}: {}",
            refused.body
        );
        assert!(
            refused.body["error"].as_str().unwrap().contains("'ci'"),
            "{}",
            refused.body
        );
    }
    let by_name = reqwest::Client::new()
        .post(gw.url("/tools/get-env"))
        .header("x-api-key", CI_KEY)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(by_name.status(), 403);
    let missing = call_as(&gw, CI_KEY, "get-no-such", json!({})).await;
    assert_eq!(
        (missing.status.as_u16(), missing.code()),
        (404, "TOOL_NOT_FOUND")
    );
    let sum = call_as(&gw, OPS_KEY, "toggle-simulated-logging", json!({})).await;
    assert_eq!(sum.status, 200, "ops may use every tool: {}", sum.body);

    // The per-service document: each key sees its own tools; without a key it is closed.
    let doc = get_as(&gw, "/openapi.json", None).await;
    assert_eq!(
        doc.status, 401,
        "/openapi.json is not a default public route"
    );
    let paths = |doc: &Value| -> BTreeSet<String> {
        doc["paths"]
            .as_object()
            .unwrap()
            .keys()
            .filter_map(|p| p.strip_prefix("/tools/").map(str::to_owned))
            .collect()
    };
    let ops_doc = get_as(&gw, "/openapi.json", Some(OPS_KEY)).await;
    assert_eq!(paths(&ops_doc.body), all);
    let ci_doc = get_as(&gw, "/openapi.json", Some(CI_KEY)).await;
    assert_eq!(paths(&ci_doc.body), ci);
    let reader_doc = get_as(&gw, "/openapi.json", Some(READER_KEY)).await;
    assert_eq!(paths(&reader_doc.body), BTreeSet::from(["echo".to_owned()]));
    let mapping = ci_doc.body["paths"]["/call-tool"]["post"]["requestBody"]["content"]
        ["application/json"]["schema"]["discriminator"]["mapping"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect::<BTreeSet<String>>();
    assert_eq!(mapping, ci, "/call-tool's body names only ci's tools");
    assert!(ci_doc.body["components"]["securitySchemes"].is_object());
    // /health and only /health is open.
    assert_eq!(get_as(&gw, "/health", None).await.status, 200);
    assert_eq!(get_as(&gw, "/docs/", None).await.status, 401);
    assert_eq!(get_as(&gw, "/metrics", None).await.status, 401);

    // Names in the access log and in the metrics; values nowhere.
    let metrics = reqwest::Client::new()
        .get(gw.url("/metrics"))
        .header("x-api-key", OPS_KEY)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "mcp_http_gateway_api_key_requests_total{code=\"FORBIDDEN\",key=\"ci\",service=\"named-keys\"} 4"
        ),
        "{metrics}"
    );
    let forbidden = eventually(
        Duration::from_secs(10),
        "the FORBIDDEN access line",
        || async {
            gw.log_lines()
                .into_iter()
                .find(|l| l["target"] == "mcp_http_gateway::access" && l["code"] == "FORBIDDEN")
        },
    )
    .await;
    assert_eq!(forbidden["client"], "ci", "{forbidden}");
    assert_eq!(forbidden["status"], 403, "{forbidden}");
    eventually(Duration::from_secs(10), "an access line of ops", || async {
        gw.log_lines().into_iter().find(|l| {
            l["target"] == "mcp_http_gateway::access"
                && l["client"] == "ops"
                && l["path"] == "/tools"
        })
    })
    .await;
    let logs = gw.logs();
    for secret in [OPS_KEY, CI_KEY, READER_KEY] {
        assert!(!logs.contains(secret), "a key's value reached the log");
    }
}

#[tokio::test]
async fn scopes_hold_over_mcp() {
    let gw = start_keyed("mcp-keys", "").await;
    let rest = names(&get_as(&gw, "/tools", Some(CI_KEY)).await.body["data"]["tools"]);
    let ci = mcp_as(&gw, CI_KEY).await;
    let listed = ci
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(names(&listed["result"]["tools"]), rest, "{listed}");
    let refused = ci
        .ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "get-env", "arguments": {}}}))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["code"], "FORBIDDEN", "{refused}");
    let echo = ci
        .ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": "hi"}}}))
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "Echo: hi", "{echo}");
    let ops = mcp_as(&gw, OPS_KEY).await;
    let all = ops
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert!(names(&all["result"]["tools"]).contains("get-env"), "{all}");
    // Without a key /mcp is closed like every route but /health.
    let anonymous = McpSession::send(
        &reqwest::Client::new(),
        &gw.url("/mcp"),
        None,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}),
    )
    .await;
    assert_eq!(anonymous.status(), 401);
    // The MCP call line names the client.
    let call = eventually(Duration::from_secs(10), "the tools/call line", || async {
        gw.log_lines()
            .into_iter()
            .find(|l| l["message"] == "tools/call" && l["code"] == "FORBIDDEN")
    })
    .await;
    assert_eq!(call["client"], "ci", "{call}");
    assert_eq!(call["transport"], "mcp", "{call}");
}

/// Reads the SSE stream until the JSON-RPC answer with `id`.
async fn answer_on(stream: &mut reqwest::Response, seen: &mut String, id: u64) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(found) = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .find(|m| m["id"] == id)
        {
            return found;
        }
        let chunk = tokio::time::timeout_at(deadline, stream.chunk())
            .await
            .expect("answer within 20 s")
            .unwrap()
            .expect("stream open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn a_legacy_sse_session_has_its_openers_scope() {
    let gw = start_keyed("sse-keys", "").await;
    let client = reqwest::Client::new();
    let (mut stream, endpoint) = open_sse_at(&gw.url("/sse"), Some(CI_KEY)).await;
    let mut seen = String::new();
    let post = |key: &'static str, body: Value| {
        client
            .post(gw.url(&endpoint))
            .header("x-api-key", key)
            .json(&body)
            .send()
    };
    // Another key cannot use this session.
    let hijack = post(OPS_KEY, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}))
    .await
    .unwrap();
    assert_eq!(hijack.status(), 403);
    let init = post(CI_KEY, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}))
    .await
    .unwrap();
    assert_eq!(init.status(), 202);
    answer_on(&mut stream, &mut seen, 1).await;
    post(
        CI_KEY,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await
    .unwrap();
    post(
        CI_KEY,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await
    .unwrap();
    let listed = answer_on(&mut stream, &mut seen, 2).await;
    let listed = names(&listed["result"]["tools"]);
    assert!(
        !listed.is_empty() && listed.iter().all(|t| ci_may_use(t)),
        "{listed:?}"
    );
    post(
        CI_KEY,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get-env", "arguments": {}}}),
    )
    .await
    .unwrap();
    let refused = answer_on(&mut stream, &mut seen, 3).await;
    assert_eq!(refused["error"]["data"]["code"], "FORBIDDEN", "{refused}");
}

#[tokio::test]
async fn public_routes_decide_what_needs_no_key() {
    let gw = start_keyed(
        "public-keys",
        "  public_routes: [/health, '/docs*', /openapi.json]\n",
    )
    .await;
    let docs = reqwest::Client::new()
        .get(gw.url("/docs/"))
        .send()
        .await
        .unwrap();
    assert_eq!(docs.status(), 200);
    let open = get_as(&gw, "/openapi.json", None).await;
    assert_eq!(open.status, 200);
    assert!(open.body["paths"]["/tools/get-env"].is_object());
    // A key sent to a public route is still honoured: ci sees its own document.
    let scoped = get_as(&gw, "/openapi.json", Some(CI_KEY)).await;
    assert!(scoped.body["paths"]["/tools/get-env"].is_null());
    assert!(scoped.body["paths"]["/tools/echo"].is_object());
    assert_eq!(get_as(&gw, "/tools", None).await.status, 401);
    assert_eq!(get_as(&gw, "/health", None).await.status, 200);
}

#[tokio::test]
async fn each_key_has_its_own_rate_limit_allowance() {
    let gw = start_keyed("keys-rate", "  rate_limit: 10\n").await;
    for _ in 0..10 {
        assert_eq!(get_as(&gw, "/tools", Some(CI_KEY)).await.status, 200);
    }
    let limited = get_as(&gw, "/tools", Some(CI_KEY)).await;
    assert_eq!(
        (limited.status.as_u16(), limited.code()),
        (429, "RATE_LIMITED")
    );
    assert!(
        limited.body["error"].as_str().unwrap().contains("'ci'"),
        "{}",
        limited.body
    );
    let other = get_as(&gw, "/tools", Some(OPS_KEY)).await;
    assert_eq!(other.status, 200);
    assert_eq!(other.body["meta"]["rate_limit_remaining"], 9);
    assert!(!gw.logs().contains(CI_KEY));
}

#[tokio::test]
async fn the_older_form_still_names_its_keys_by_position() {
    let extra = format!(
        "security: {{ api_keys_enabled: true, api_keys_env: MHG_OLD_KEYS, api_keys: [{{ name: ci, sha256: {CI_SHA256}, tools: [echo] }}] }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let mut gw = Gateway::spawn_env("old-keys", &extra, &[("MHG_OLD_KEYS", "old-one,old-two")]);
    gw.wait_running().await;
    assert_eq!(get_as(&gw, "/tools", Some("old-two")).await.status, 200);
    let ci = get_as(&gw, "/tools", Some(CI_KEY)).await;
    assert_eq!(
        names(&ci.body["data"]["tools"]),
        BTreeSet::from(["echo".to_owned()])
    );
    eventually(
        Duration::from_secs(10),
        "an access line of key-2",
        || async {
            gw.log_lines()
                .into_iter()
                .find(|l| l["client"] == "key-2" && l["path"] == "/tools")
        },
    )
    .await;
    assert!(!gw.logs().contains("old-two"));
}

/// The reports name only what a caller may call: a public /health shows how many tools there
/// are and none of their names, a key's /health and /status/data only its own tools, and
/// /metrics (every tool's series) is refused to a key limited to some.
#[tokio::test]
async fn reports_name_only_the_tools_a_caller_may_call() {
    let gw = start_keyed("visible-keys", "").await;
    let all = get_as(&gw, "/tools", Some(OPS_KEY)).await.body["data"]["tools"].clone();
    let every = names(&all);
    assert!(every.len() > 5 && every.contains("get-env"), "{every:?}");
    let anonymous = text_as(&gw, "/health", None).await;
    let health: Value = serde_json::from_str(&anonymous).unwrap();
    assert_eq!(health["data"]["tool_count"], every.len(), "{health}");
    assert_eq!(health["data"]["tools"], json!({}), "{health}");
    for tool in &every {
        assert!(
            !anonymous.contains(&format!("\"{tool}\"")),
            "{tool} named on the public /health"
        );
    }
    let reader = get_as(&gw, "/health", Some(READER_KEY)).await;
    let seen: BTreeSet<String> = reader.body["data"]["tools"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(seen, BTreeSet::from(["echo".to_owned()]));
    assert_eq!(reader.body["data"]["tool_count"], every.len());
    let ops = get_as(&gw, "/health", Some(OPS_KEY)).await;
    assert_eq!(
        ops.body["data"]["tools"].as_object().unwrap().len(),
        every.len()
    );
    let status = text_as(&gw, "/status/data", Some(CI_KEY)).await;
    let report: Value = serde_json::from_str(&status).unwrap();
    let listed = names(&report["data"]["tools"]);
    assert!(listed.iter().all(|t| ci_may_use(t)), "{listed:?}");
    assert!(
        listed.contains("echo") && listed.contains("get-sum"),
        "{listed:?}"
    );
    assert_eq!(report["data"]["tool_count"], every.len());
    assert!(
        report["data"]["timeline"]["tools"]
            .as_object()
            .unwrap()
            .keys()
            .all(|t| ci_may_use(t))
    );
    for tool in every.iter().filter(|t| !ci_may_use(t)) {
        assert!(
            !status.contains(&format!("\"{tool}\"")),
            "{tool} named in ci's /status/data"
        );
    }
    let metrics = get_as(&gw, "/metrics", Some(CI_KEY)).await;
    assert_eq!(metrics.status, 403);
    assert_eq!(metrics.code(), "FORBIDDEN");
    let metrics = text_as(&gw, "/metrics", Some(OPS_KEY)).await;
    assert!(metrics.contains("mcp_http_gateway_"), "{metrics}");
}
