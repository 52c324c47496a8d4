//! Proof that the tester can fail: a small HTTP server, written here on purpose, breaks the
//! contract once for each check, and the tester must report every one and exit non-zero.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

#[derive(Default)]
struct Counters {
    tools: AtomicU64,
    health: AtomicU64,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A well-formed envelope with a fresh request id, unless the caller breaks it.
fn envelope(status: u16, mut body: Value, request_id: Option<String>) -> Response {
    let id = request_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    body["request_id"] = json!(id);
    if body.get("timestamp").is_none() {
        body["timestamp"] = json!(now());
    }
    let mut response = (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert("x-request-id", HeaderValue::from_str(&id).unwrap());
    response
}

fn error(status: u16, code: &str, message: &str) -> Response {
    envelope(
        status,
        json!({"success": false, "error": message, "code": code, "meta": {"execution_time_ms": 0}}),
        None,
    )
}

fn tool(name: &str, schema: Value) -> Value {
    json!({"name": name, "description": format!("broken fixture tool {name}"), "input_schema": schema, "qualified_name": format!("broken.{name}")})
}

fn tools_list(n: u64) -> Vec<Value> {
    let mut strict = tool(
        "strict",
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}}, "required": ["n"]}),
    );
    // tool-output: its results ({n}) never have the `doubled` it declares.
    strict["output_schema"] = json!({"type": "object", "required": ["doubled"]});
    let mut tools = vec![
        strict,
        tool(
            "lenient",
            json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"], "additionalProperties": false}),
        ),
        tool(
            "mangle",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        ),
        // tools-list: an input schema that is not an object schema.
        tool("arrayish", json!({"type": "array"})),
        // response-schema: a tool without the required `description`.
        json!({"name": "nodesc", "input_schema": {"type": "object"}, "qualified_name": "broken.nodesc"}),
    ];
    // tools-list: unstable between calls.
    if n % 2 == 1 {
        tools.push(tool("sometimes", json!({"type": "object"})));
    }
    tools
}

async fn list_tools(State(c): State<Arc<Counters>>, headers: HeaderMap) -> Response {
    // response-schema: a bad X-Request-Id gets 422, a status GET /tools does not document.
    if headers
        .get("x-request-id")
        .is_some_and(|v| v.as_bytes() == b"not-a-uuid")
    {
        return envelope(
            422,
            json!({"success": false, "error": "bad id", "code": "INVALID_REQUEST"}),
            None,
        );
    }
    let n = c.tools.fetch_add(1, Ordering::SeqCst);
    envelope(
        200,
        json!({"success": true, "data": {"service": "broken", "version": "0", "tools": tools_list(n)}, "meta": {}}),
        None,
    )
}

async fn health(State(c): State<Arc<Counters>>) -> Response {
    let n = c.health.fetch_add(1, Ordering::SeqCst);
    // health: "unavailable" with 200, and uptime going backwards.
    let report = json!({"status": "unavailable", "service": "broken", "version": "0", "state": "HEALTHY",
        "uptime_seconds": 1000 - n, "active_calls": 0, "dependencies": {}});
    // request-id: the same "generated" id every time.
    envelope(
        200,
        json!({"success": true, "data": report}),
        Some("3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c".into()),
    )
}

async fn openapi() -> Response {
    // openapi-tools: only one of the tools has its operation.
    let mut doc =
        serde_saphyr::from_str::<Value>(include_str!("../../../openapi/openapi.yaml")).unwrap();
    doc["paths"]["/tools/lenient"] = json!({"post": {"requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}}}});
    // openapi-refs: a reference to a schema the document does not have.
    doc["paths"]["/tools/lenient"]["post"]["responses"] = json!({"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Missing"}}}}});
    axum::Json(doc).into_response()
}

fn run_tool(name: &str, args: &Value) -> Response {
    let ok = |data: Value| {
        // envelope: timestamp without milliseconds on every successful call.
        envelope(
            200,
            json!({"success": true, "data": data, "timestamp": "2026-01-01T00:00:00Z", "meta": {"execution_time_ms": 1}}),
            None,
        )
    };
    match name {
        // tool-valid-inputs: refuses n > 5 although the schema allows up to 10;
        // tool-output: answers {n} where its output_schema requires `doubled`.
        "strict" => match args["n"].as_i64() {
            Some(n) if (0..=5).contains(&n) => ok(json!({"n": n})),
            Some(n) if n <= 10 => error(400, "INVALID_ARGUMENTS", "n too big"),
            _ => error(400, "INVALID_ARGUMENTS", "n missing"),
        },
        // tool-invalid-inputs: accepts anything.
        "lenient" => ok(json!({"got": args})),
        // unicode: non-ASCII becomes '?'.
        "mangle" => {
            let text: String = args["text"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .map(|c| if c.is_ascii() { c } else { '?' })
                .collect();
            ok(json!({"echo": text}))
        }
        "arrayish" | "nodesc" | "sometimes" => ok(json!({})),
        // status-codes: an unknown tool answers 500 instead of 404.
        _ => error(500, "EXECUTION_ERROR", "no such tool"),
    }
}

async fn call_tool(headers: HeaderMap, body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return error(400, "INVALID_REQUEST", "bad json");
    };
    if !headers
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
    {
        return error(400, "INVALID_REQUEST", "content type");
    }
    let Some(name) = request["tool"].as_str() else {
        return error(400, "INVALID_REQUEST", "missing tool");
    };
    // request-id: a client's body request_id is ignored (a new id is generated instead).
    run_tool(name, &request["arguments"])
}

async fn call_by_name(Path(name): Path<String>, body: Bytes) -> Response {
    let args: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    run_tool(&name, &args)
}

async fn mcp(body: Bytes) -> Response {
    let message: Value = serde_json::from_slice(&body).unwrap_or_default();
    let id = message["id"].clone();
    let result = match message["method"].as_str() {
        Some("initialize") => {
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "broken", "version": "0"}})
        }
        // mcp: lists one tool where GET /tools lists several.
        Some("tools/list") => {
            json!({"tools": [{"name": "strict", "inputSchema": {"type": "object"}}]})
        }
        Some("tools/call") => json!({"content": [], "isError": true}),
        _ => return StatusCode::ACCEPTED.into_response(),
    };
    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
}

/// status-codes: every unknown route and wrong method answers 404 NOT_FOUND (no 405), and no
/// body is ever too large.
async fn fallback() -> Response {
    error(404, "NOT_FOUND", "nothing here")
}

/// resources-prompts: a resource whose qualified_name is not `{provider}.{name}` (and the
/// unknown URI is the fallback's 404 NOT_FOUND, not RESOURCE_NOT_FOUND).
async fn resources() -> Response {
    envelope(
        200,
        json!({"success": true, "data": {"service": "broken", "resources": [
            {"uri": "broken://r", "name": "r", "provider": "p", "qualified_name": "r"}
        ]}, "meta": {"execution_time_ms": 0}}),
        None,
    )
}

async fn no_templates() -> Response {
    envelope(
        200,
        json!({"success": true, "data": {"service": "broken", "resource_templates": []}, "meta": {"execution_time_ms": 0}}),
        None,
    )
}

async fn no_prompts() -> Response {
    envelope(
        200,
        json!({"success": true, "data": {"service": "broken", "prompts": []}, "meta": {"execution_time_ms": 0}}),
        None,
    )
}

fn start() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let app = Router::new()
                .route("/tools", get(list_tools))
                .route("/health", get(health))
                .route("/openapi.json", get(openapi))
                .route("/call-tool", post(call_tool))
                .route("/tools/{name}", post(call_by_name))
                .route("/mcp", post(mcp))
                .route("/resources", get(resources))
                .route("/resource-templates", get(no_templates))
                .route("/prompts", get(no_prompts))
                .method_not_allowed_fallback(fallback)
                .fallback(fallback)
                .with_state(Arc::new(Counters::default()));
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    port
}

#[test]
fn every_violation_is_reported_and_the_exit_code_says_so() {
    let port = start();
    let dir = tempfile::tempdir().unwrap();
    let json_report = dir.path().join("report.json");
    let junit = dir.path().join("junit.xml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args([
            "--url",
            &format!("http://127.0.0.1:{port}"),
            "--cases",
            "32",
            "--seed",
            "7",
            "--mcp",
            "--quiet",
        ])
        .args([
            "--max-body-bytes",
            "100",
            "--json",
            json_report.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json_report).unwrap()).unwrap();
    let failures = |check: &str| -> Vec<String> {
        let c = report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == check)
            .unwrap();
        c["failures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["message"].as_str().unwrap().to_owned())
            .collect()
    };
    let has = |check: &str, needle: &str| {
        let found = failures(check);
        assert!(
            found.iter().any(|m| m.contains(needle)),
            "{check}: no failure mentions {needle:?}; failures: {found:#?}\n{stdout}"
        );
    };
    has("response-schema", "description");
    has("response-schema", "a status the spec does not document");
    has("envelope", "timestamp '2026-01-01T00:00:00Z'");
    has(
        "status-codes",
        "an unknown tool: expected 404 TOOL_NOT_FOUND, got 500 EXECUTION_ERROR",
    );
    has(
        "status-codes",
        "DELETE /call-tool: expected 405 METHOD_NOT_ALLOWED, got 404 NOT_FOUND",
    );
    has(
        "status-codes",
        "(limit 100): expected 413 PAYLOAD_TOO_LARGE",
    );
    has(
        "tool-valid-inputs",
        "tool 'strict': valid arguments {\"n\":6} answered 400 INVALID_ARGUMENTS",
    );
    has("tool-invalid-inputs", "tool 'lenient': invalid arguments");
    has(
        "request-id",
        "generated request id 3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c given twice",
    );
    has("request-id", "sent request id");
    has(
        "tools-list",
        "two GET /tools in a row listed different tools",
    );
    has(
        "tools-list",
        "tool 'arrayish': input_schema.type is \"array\"",
    );
    has("openapi-tools", "no operation POST /tools/strict");
    has(
        "openapi-tools",
        "POST /tools/lenient: the documented request body requires null where the tool's input_schema requires",
    );
    // The broken server lets axum answer undeclared methods: 405 with no envelope code.
    has(
        "methods",
        "expected 405 METHOD_NOT_ALLOWED with Allow listing",
    );
    has(
        "health",
        "GET /health answered 200 with status 'unavailable'",
    );
    has("health", "uptime_seconds went back");
    has("unicode", "tool 'mangle' echoed");
    has("mcp", "is in GET /tools but not in tools/list");
    has(
        "openapi-refs",
        "$ref '#/components/schemas/Missing' does not resolve",
    );
    has("tool-output", "tool 'strict': the result of");
    has("resources-prompts", "qualified_name is not 'p.r'");
    // Every check of the list failed at least once: none can pass silently.
    for check in report["checks"].as_array().unwrap() {
        assert!(
            check["failed"].as_u64().unwrap() > 0,
            "{} did not fail",
            check["name"]
        );
    }
    // Each failure comes with a request to paste, and the reports say the same.
    assert!(stdout.contains("reproduce: curl -sS -i"), "{stdout}");
    assert!(stdout.contains("replay with --seed 7"));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(
        xml.matches("<failure ").count(),
        report["checks"].as_array().unwrap().len()
    );
}

#[test]
fn no_call_and_only_tool_limit_what_is_called() {
    let port = start();
    let run = |extra: &[&str]| -> Value {
        let dir = tempfile::tempdir().unwrap();
        let json_report = dir.path().join("report.json");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
            .args([
                "--url",
                &format!("http://127.0.0.1:{port}"),
                "--cases",
                "8",
                "--seed",
                "1",
                "--quiet",
            ])
            .args(["--json", json_report.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "the server is still broken");
        serde_json::from_str(&std::fs::read_to_string(&json_report).unwrap()).unwrap()
    };
    let check = |report: &Value, name: &str| {
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()
            .clone()
    };

    let report = run(&["--no-call"]);
    for name in ["tool-valid-inputs", "tool-invalid-inputs", "unicode"] {
        let c = check(&report, name);
        assert_eq!(c["cases"], 0, "{name}");
        assert_eq!(c["skipped"], "--no-call", "{name}");
    }
    assert_eq!(check(&report, "mcp")["skipped"], "not asked (--mcp)");

    // Only `lenient` is called: `strict`'s refusal of n > 5 goes unseen.
    let report = run(&["--only-tool", "lenient"]);
    assert_eq!(check(&report, "tool-valid-inputs")["failed"], 0);
    assert!(
        check(&report, "tool-invalid-inputs")["failed"]
            .as_u64()
            .unwrap()
            > 0
    );
    // And a skipped tool is not called either.
    let report = run(&[
        "--skip-tool",
        "strict",
        "--skip-tool",
        "lenient",
        "--skip-tool",
        "mangle",
    ]);
    assert_eq!(check(&report, "tool-valid-inputs")["failed"], 0);
    assert_eq!(check(&report, "tool-invalid-inputs")["failed"], 0);
    assert_eq!(check(&report, "unicode")["failed"], 0);
}
