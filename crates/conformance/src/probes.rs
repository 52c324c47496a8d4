//! Requests built to provoke each error code the contract lets a client provoke, and the
//! request-id echo: check `status-codes` and the echo half of check `request-id`.

use serde_json::{Value, json};

use crate::client::Request;
use crate::tester::Tester;

/// A tool name no service has.
fn missing_tool() -> String {
    format!("conformance-no-such-tool-{}", uuid::Uuid::new_v4().simple())
}

pub fn status_codes(t: &mut Tester) {
    t.progress("status codes");
    let probes: Vec<(&str, Request, u16, &str)> = vec![
        (
            "an unknown tool",
            Request::post_json(
                "/call-tool",
                &json!({"tool": missing_tool(), "arguments": {}}),
            ),
            404,
            "TOOL_NOT_FOUND",
        ),
        (
            "an unknown tool by path",
            Request::post_json(&format!("/tools/{}", missing_tool()), &json!({})),
            404,
            "TOOL_NOT_FOUND",
        ),
        (
            "malformed JSON",
            Request::post_raw("/call-tool", "application/json", b"{\"tool\": ".to_vec()),
            400,
            "INVALID_REQUEST",
        ),
        (
            "a wrong Content-Type",
            Request::post_raw(
                "/call-tool",
                "text/plain",
                br#"{"tool":"x","arguments":{}}"#.to_vec(),
            ),
            400,
            "INVALID_REQUEST",
        ),
        (
            "a missing `tool`",
            Request::post_json("/call-tool", &json!({"arguments": {}})),
            400,
            "INVALID_REQUEST",
        ),
        (
            "a body request_id that is not a UUID v4",
            Request::post_json(
                "/call-tool",
                &json!({"tool": missing_tool(), "request_id": "not-a-uuid"}),
            ),
            400,
            "INVALID_REQUEST",
        ),
        (
            "an X-Request-Id that is not a UUID v4",
            Request::get("/tools").header("X-Request-Id", "not-a-uuid"),
            400,
            "INVALID_REQUEST",
        ),
        (
            "an unknown route",
            Request::get("/conformance/no-such-route"),
            404,
            "NOT_FOUND",
        ),
        (
            "DELETE /call-tool",
            Request::get("/call-tool").method("DELETE"),
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (
            "POST /tools",
            Request::post_json("/tools", &json!({})),
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (
            "PUT /health",
            Request::get("/health").method("PUT"),
            405,
            "METHOD_NOT_ALLOWED",
        ),
    ];
    for (what, request, status, code) in probes {
        expect(t, what, request, status, code);
    }
    match advertised_limit(t) {
        Some(limit) => {
            // A valid call request whose body is one byte over the limit.
            let skeleton = br#"{"tool":"x","arguments":{"pad":""}}"#.len() as u64;
            let pad = " ".repeat((limit + 1).saturating_sub(skeleton) as usize);
            let body = format!(r#"{{"tool":"x","arguments":{{"pad":"{pad}"}}}}"#).into_bytes();
            let what = format!("a body of {} bytes (limit {limit})", body.len());
            expect(t, &what, Request::post_raw("/call-tool", "application/json", body), 413, "PAYLOAD_TOO_LARGE");
        }
        None => t.report.skip(
            "status-codes",
            "413 not probed: the service publishes no x-limits.max_body_bytes and --max-body-bytes was not given",
        ),
    }
}

fn advertised_limit(t: &mut Tester) -> Option<u64> {
    if let Some(limit) = t.options.max_body_bytes {
        return Some(limit);
    }
    let doc = t.fetch(Request::get("/openapi.json"))?;
    doc.json()["x-limits"]["max_body_bytes"].as_u64()
}

fn expect(t: &mut Tester, what: &str, request: Request, status: u16, code: &str) {
    let Some(ex) = t.exchange(request) else {
        return;
    };
    let got_code = ex.code().unwrap_or("(none)");
    if ex.status == status && got_code == code {
        t.report.pass("status-codes");
    } else {
        let curl = t.curl(&ex);
        t.report.fail(
            "status-codes",
            format!(
                "{what}: expected {status} {code}, got {} {got_code}",
                ex.status
            ),
            Some(curl),
        );
    }
}

/// A request id the client sends comes back, from the header and from the body.
pub fn request_id_echo(t: &mut Tester) {
    t.progress("request id echo");
    let header_id = uuid::Uuid::new_v4().to_string();
    let body_id = uuid::Uuid::new_v4().to_string();
    let probes = [
        (
            Request::get("/tools").header("X-Request-Id", &header_id),
            header_id.clone(),
        ),
        (
            Request::get("/health").header("X-Request-Id", &header_id),
            header_id.clone(),
        ),
        (
            Request::post_json(
                "/call-tool",
                &json!({"tool": missing_tool(), "arguments": {}, "request_id": body_id}),
            ),
            body_id.clone(),
        ),
    ];
    for (request, sent) in probes {
        let Some(ex) = t.exchange(request) else {
            continue;
        };
        let got = ex.json()["request_id"].clone();
        if got == Value::String(sent.clone()) && ex.header("x-request-id") == Some(sent.as_str()) {
            t.report.pass("request-id");
        } else {
            let curl = t.curl(&ex);
            t.report.fail(
                "request-id",
                format!(
                    "sent request id {sent}, got {got} (X-Request-Id: {:?})",
                    ex.header("x-request-id")
                ),
                Some(curl),
            );
        }
    }
}

/// Methods a route may be sent that it does not declare.
const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "TRACE"];

/// Every path of the document, with every method it does not declare: 405
/// METHOD_NOT_ALLOWED with an `Allow` header naming the declared ones, judged before the
/// content (the probe carries an invalid `X-Request-Id` and a body that is not JSON).
pub fn methods(t: &mut Tester, tools: &[Value]) {
    t.progress("undeclared methods");
    let tool = tools
        .first()
        .and_then(|t| t["name"].as_str())
        .unwrap_or("conformance-probe")
        .to_owned();
    let paths: Vec<(String, Vec<String>)> = t.spec.document["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(path, item)| {
            let declared = item
                .as_object()
                .into_iter()
                .flatten()
                .map(|(m, _)| m.to_ascii_uppercase())
                .filter(|m| METHODS.contains(&m.as_str()) || m == "HEAD")
                .collect();
            (path.replace("{name}", &tool), declared)
        })
        .collect();
    for (path, declared) in paths {
        for method in METHODS.iter().filter(|m| !declared.iter().any(|d| d == *m)) {
            let request = Request::post_raw(&path, "text/plain", b"{not json".to_vec())
                .method(method)
                .header("X-Request-Id", "not-a-uuid");
            let Some(ex) = t.exchange(request) else {
                continue;
            };
            let allow = ex.header("allow").unwrap_or_default().to_ascii_uppercase();
            let lists_declared = declared
                .iter()
                .all(|d| allow.split(',').any(|a| a.trim() == d));
            if ex.status == 405 && ex.code() == Some("METHOD_NOT_ALLOWED") && lists_declared {
                t.report.pass("methods");
            } else {
                let curl = t.curl(&ex);
                t.report.fail(
                    "methods",
                    format!(
                        "{method} {path} answered {} {} with Allow '{allow}'; expected 405 METHOD_NOT_ALLOWED with Allow listing {}",
                        ex.status,
                        ex.code().unwrap_or("(none)"),
                        declared.join(", ")
                    ),
                    Some(curl),
                );
            }
        }
    }
}
