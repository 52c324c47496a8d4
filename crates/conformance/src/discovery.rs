//! The discovery endpoints: GET /tools (stable, valid schemas), GET /openapi.json (one typed
//! operation per tool), GET /health (status agrees with HTTP status, uptime never decreases).

use serde_json::Value;

use crate::client::Request;
use crate::tester::Tester;

/// Checks GET /tools and returns the tools it lists.
pub fn tools_list(t: &mut Tester) -> Vec<Value> {
    t.progress("GET /tools");
    let Some(first) = t.exchange(Request::get("/tools")) else {
        return Vec::new();
    };
    let Some(second) = t.exchange(Request::get("/tools")) else {
        return Vec::new();
    };
    let curl = t.curl(&first);
    if first.status != 200 {
        t.report.fail(
            "tools-list",
            format!("GET /tools answered {}", first.status),
            Some(curl),
        );
        return Vec::new();
    }
    if first.json()["data"] == second.json()["data"] {
        t.report.pass("tools-list");
    } else {
        t.report.fail(
            "tools-list",
            "two GET /tools in a row listed different tools".into(),
            Some(curl.clone()),
        );
    }
    let tools = first.json()["data"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap_or("(unnamed)");
        let schema = &tool["input_schema"];
        let outcome = if schema["type"] != "object" {
            Err(format!(
                "tool '{name}': input_schema.type is {}, not \"object\"",
                schema["type"]
            ))
        } else if let Err(e) = jsonschema::validator_for(schema) {
            Err(format!(
                "tool '{name}': input_schema is not a usable JSON Schema: {e}"
            ))
        } else if !jsonschema::meta::is_valid(schema) {
            Err(format!(
                "tool '{name}': input_schema does not validate against its meta-schema"
            ))
        } else {
            Ok(())
        };
        match outcome {
            Ok(()) => t.report.pass("tools-list"),
            Err(message) => t.report.fail("tools-list", message, Some(curl.clone())),
        }
    }
    tools
}

/// Every tool has `POST /tools/<name>` with its input schema; no operation for a tool that is
/// not listed.
pub fn openapi_tools(t: &mut Tester, tools: &[Value]) {
    t.progress("GET /openapi.json");
    let Some(ex) = t.fetch(Request::get("/openapi.json")) else {
        return;
    };
    let curl = t.curl(&ex);
    let doc = ex.json().clone();
    if ex.status != 200 || !doc["paths"].is_object() {
        t.report.fail(
            "openapi-tools",
            format!(
                "GET /openapi.json answered {} without an OpenAPI document",
                ex.status
            ),
            Some(curl),
        );
        return;
    }
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default();
        let op = &doc["paths"][format!("/tools/{name}")]["post"];
        let schema = &op["requestBody"]["content"]["application/json"]["schema"];
        if op.is_null() {
            t.report.fail(
                "openapi-tools",
                format!("no operation POST /tools/{name} for tool '{name}'"),
                Some(curl.clone()),
            );
        } else if let Err(why) = accepts_the_same(&doc, schema, &tool["input_schema"]) {
            t.report.fail(
                "openapi-tools",
                format!("POST /tools/{name}: the documented request body {why}"),
                Some(curl.clone()),
            );
        } else {
            t.report.pass("openapi-tools");
        }
    }
    let listed: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for path in doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(p, _)| p)
    {
        if let Some(name) = path.strip_prefix("/tools/").filter(|n| !n.starts_with('{'))
            && !listed.contains(&name)
        {
            t.report.fail(
                "openapi-tools",
                format!("operation {path} for a tool GET /tools does not list"),
                Some(curl.clone()),
            );
        }
    }
}

/// Whether the document's body schema (its `$ref`s resolved in the document) says what the
/// tool's input schema says: the same schema, or one that accepts the inputs generated from
/// the tool's schema and requires the same properties. Documents may hoist `$defs` into
/// `components`, so equality alone would be too strict.
fn accepts_the_same(doc: &Value, documented: &Value, input: &Value) -> Result<(), String> {
    use proptest::strategy::{Strategy, ValueTree};
    if documented == input {
        return Ok(());
    }
    let validator =
        crate::spec::compile(doc, documented).map_err(|e| format!("does not compile: {e}"))?;
    let target = documented["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|p| doc.pointer(p))
        .unwrap_or(documented);
    if target["required"] != input["required"]
        && !(target["required"].is_null()
            && input["required"].as_array().is_some_and(Vec::is_empty))
    {
        return Err(format!(
            "requires {} where the tool's input_schema requires {}",
            target["required"], input["required"]
        ));
    }
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = crate::schema_gen::valid(input, input);
    for _ in 0..16 {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            break;
        };
        let sample = tree.current();
        let refused = crate::spec::violations(&validator, &sample);
        if !refused.is_empty() {
            return Err(format!(
                "refuses {sample}, which the tool's input_schema accepts: {}",
                refused.join("; ")
            ));
        }
    }
    Ok(())
}

/// Every `$ref` of the served document resolves within it (a JSON pointer after `#`); a
/// reference to another document cannot be checked offline and fails too.
pub fn openapi_refs(t: &mut Tester) {
    t.progress("$refs of GET /openapi.json");
    let Some(ex) = t.fetch(Request::get("/openapi.json")) else {
        return;
    };
    let curl = t.curl(&ex);
    let doc = ex.json().clone();
    let mut refs = Vec::new();
    collect_refs(&doc, "", &mut refs);
    if refs.is_empty() {
        t.report.skip("openapi-refs", "the document has no $ref");
    }
    for (at, target) in refs {
        let resolved = target
            .strip_prefix('#')
            .and_then(|pointer| doc.pointer(&pointer.replace("%7B", "{").replace("%7D", "}")));
        if resolved.is_some() {
            t.report.pass("openapi-refs");
        } else {
            t.report.fail(
                "openapi-refs",
                format!("{at}: $ref '{target}' does not resolve within the document"),
                Some(curl.clone()),
            );
        }
    }
}

/// Every `$ref` string under `value`, with the JSON pointer where it stands.
fn collect_refs(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                match (key.as_str(), child) {
                    ("$ref", Value::String(target)) => out.push((at.to_owned(), target.clone())),
                    _ => collect_refs(child, &here, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_refs(child, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// GET /health twice: status agrees with the HTTP status, uptime does not go back.
pub fn health(t: &mut Tester) {
    t.progress("GET /health");
    let mut uptimes = Vec::new();
    for _ in 0..2 {
        let Some(ex) = t.exchange(Request::get("/health")) else {
            return;
        };
        let curl = t.curl(&ex);
        let body = ex.json();
        let report = if ex.status == 503 {
            &body["meta"]["health"]
        } else {
            &body["data"]
        };
        let status = report["status"].as_str().unwrap_or("(none)");
        let agrees = match ex.status {
            200 => status == "healthy" || status == "degraded",
            503 => status == "unavailable" && ex.code() == Some("SERVICE_UNAVAILABLE"),
            _ => false,
        };
        if agrees {
            t.report.pass("health");
        } else {
            t.report.fail(
                "health",
                format!("GET /health answered {} with status '{status}'", ex.status),
                Some(curl.clone()),
            );
        }
        if let Some(uptime) = report["uptime_seconds"].as_u64() {
            uptimes.push((uptime, curl));
        }
    }
    if let [(a, _), (b, curl)] = uptimes.as_slice() {
        if b >= a {
            t.report.pass("health");
        } else {
            t.report.fail(
                "health",
                format!("uptime_seconds went back from {a} to {b}"),
                Some(curl.clone()),
            );
        }
    }
}
