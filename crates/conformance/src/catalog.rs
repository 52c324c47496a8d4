//! Check `resources-prompts`: the resource and prompt routes of a service that offers any —
//! the lists, a read of each of a few listed resources (text or base64 blob), a render of each
//! of a few prompts with arguments its `args_schema` accepts and with arguments it refuses,
//! and the not-found codes. Every answer also passes through the tester's envelope and
//! response-schema checks. A service that offers none is "not run", not passed.

use serde_json::{Value, json};

use crate::client::Request;
use crate::tester::Tester;

const CHECK: &str = "resources-prompts";
/// How many listed resources and prompts are exercised (a service may list thousands).
const SAMPLE: usize = 3;

/// Percent-encodes a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `data[key]` of a 200 list answer, or why there is none.
fn list(t: &mut Tester, path: &str, key: &str) -> Result<Vec<Value>, String> {
    let ex = t
        .exchange(Request::get(path))
        .ok_or_else(|| format!("GET {path}: no answer"))?;
    if ex.status != 200 {
        return Err(format!(
            "GET {path} answered {} {}",
            ex.status,
            ex.code().unwrap_or("")
        ));
    }
    ex.json()["data"][key]
        .as_array()
        .cloned()
        .ok_or_else(|| format!("GET {path}: data.{key} is not an array"))
}

/// Arguments the schema should accept: a string for every required property (MCP prompt
/// arguments are strings), the schema's own example or default when it has one.
fn valid_arguments(schema: &Value) -> Option<Value> {
    let mut args = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let name = name.as_str()?;
        let property = &schema["properties"][name];
        let value = property
            .get("default")
            .or_else(|| property["examples"].get(0))
            .cloned()
            .or_else(|| {
                let kind = property["type"].as_str().unwrap_or("string");
                (kind == "string").then(|| json!("conformance"))
            })?;
        args.insert(name.to_owned(), value);
    }
    Some(Value::Object(args))
}

pub fn run(t: &mut Tester) {
    t.progress("resources and prompts");
    let probe = t.exchange(Request::get("/resources"));
    if probe.as_ref().is_some_and(|ex| ex.status == 404) {
        t.report.skip(
            CHECK,
            "the service has no resource routes (404 on GET /resources)",
        );
        return;
    }
    let resources = list(t, "/resources", "resources");
    let templates = list(t, "/resource-templates", "resource_templates");
    let prompts = list(t, "/prompts", "prompts");
    let mut offered = false;
    for outcome in [&resources, &templates, &prompts] {
        match outcome {
            Ok(items) => offered |= !items.is_empty(),
            Err(e) => t.report.fail(CHECK, e.clone(), None),
        }
    }
    if !offered {
        t.report.skip(
            CHECK,
            "the service offers no resources, templates or prompts",
        );
        return;
    }
    for item in resources.iter().chain(templates.iter()).flatten() {
        named(t, item, &["name", "provider", "qualified_name"]);
    }
    for resource in resources.unwrap_or_default().iter().take(SAMPLE) {
        read(t, resource);
    }
    let unknown = format!("conformance-no-such://{}", uuid::Uuid::new_v4().simple());
    expect_code(
        t,
        Request::get(&format!("/resources/read?uri={}", encode(&unknown))),
        404,
        "RESOURCE_NOT_FOUND",
    );
    expect_code(t, Request::get("/resources/read"), 400, "INVALID_REQUEST");
    for prompt in prompts.unwrap_or_default().iter().take(SAMPLE) {
        render(t, prompt);
    }
    let missing = format!(
        "conformance-no-such-prompt-{}",
        uuid::Uuid::new_v4().simple()
    );
    expect_code(
        t,
        Request::post_json(&format!("/prompts/{missing}"), &json!({})),
        404,
        "PROMPT_NOT_FOUND",
    );
}

/// A listed entry names its provider, and its qualified name is `{provider}.{name}`.
fn named(t: &mut Tester, item: &Value, fields: &[&str]) {
    if let Some(missing) = fields.iter().find(|f| !item[**f].is_string()) {
        t.report.fail(
            CHECK,
            format!("an entry has no string '{missing}': {item}"),
            None,
        );
        return;
    }
    let expected = format!(
        "{}.{}",
        item["provider"].as_str().unwrap_or_default(),
        item["name"].as_str().unwrap_or_default()
    );
    if item["qualified_name"] == expected.as_str() {
        t.report.pass(CHECK);
    } else {
        t.report.fail(
            CHECK,
            format!("qualified_name is not '{expected}': {item}"),
            None,
        );
    }
}

fn read(t: &mut Tester, resource: &Value) {
    let Some(uri) = resource["uri"].as_str() else {
        t.report
            .fail(CHECK, format!("a resource without a uri: {resource}"), None);
        return;
    };
    let path = format!(
        "/resources/read?uri={}&provider={}",
        encode(uri),
        encode(resource["provider"].as_str().unwrap_or_default())
    );
    let Some(ex) = t.exchange(Request::get(&path)) else {
        return;
    };
    let curl = Some(t.curl(&ex));
    if ex.status != 200 {
        // A listed resource that cannot be read now (its backend down) proves nothing.
        if !matches!(ex.code(), Some("EXECUTION_ERROR" | "TIMEOUT")) {
            t.report.fail(
                CHECK,
                format!(
                    "reading listed resource {uri} answered {} {}",
                    ex.status,
                    ex.code().unwrap_or("")
                ),
                curl,
            );
        }
        return;
    }
    let data = &ex.json()["data"];
    let contents = data["contents"].as_array().cloned().unwrap_or_default();
    let one_form = contents
        .iter()
        .all(|c| c["text"].is_string() != c["blob"].is_string());
    if data["uri"] == uri && one_form {
        t.report.pass(CHECK);
    } else {
        t.report.fail(
            CHECK,
            format!("reading {uri}: data.uri must be the URI asked for and each part text or blob, not both: {data}"),
            curl,
        );
    }
}

fn render(t: &mut Tester, prompt: &Value) {
    let (Some(name), Some(qualified)) =
        (prompt["name"].as_str(), prompt["qualified_name"].as_str())
    else {
        return;
    };
    let schema = &prompt["args_schema"];
    if contract::ArgumentValidator::compile(schema).is_err() || schema["type"] != "object" {
        t.report.fail(
            CHECK,
            format!(
                "prompt {qualified}: args_schema is not a JSON Schema of type object: {schema}"
            ),
            None,
        );
        return;
    }
    if let Some(args) = valid_arguments(schema) {
        let path = format!("/prompts/{}", encode(qualified));
        if let Some(ex) = t.exchange(Request::post_json(&path, &args)) {
            let curl = Some(t.curl(&ex));
            let messages = ex.json()["data"]["messages"].as_array().cloned();
            match (ex.status, messages) {
                (200, Some(messages)) if messages.iter().all(|m| m["role"].is_string()) => {
                    t.report.pass(CHECK)
                }
                (_, _) if matches!(ex.code(), Some("EXECUTION_ERROR" | "TIMEOUT")) => {}
                _ => t.report.fail(
                    CHECK,
                    format!(
                        "prompt {name} with {args} answered {} {}",
                        ex.status,
                        ex.code().unwrap_or("")
                    ),
                    curl,
                ),
            }
        }
    }
    // Arguments the schema refuses never reach the provider.
    if schema["required"].as_array().is_some_and(|r| !r.is_empty()) {
        expect_code(
            t,
            Request::post_json(&format!("/prompts/{}", encode(qualified)), &json!({})),
            400,
            "INVALID_ARGUMENTS",
        );
    }
}

fn expect_code(t: &mut Tester, request: Request, status: u16, code: &str) {
    let Some(ex) = t.exchange(request) else {
        return;
    };
    if ex.status == status && ex.code() == Some(code) {
        t.report.pass(CHECK);
    } else {
        let curl = Some(t.curl(&ex));
        t.report.fail(
            CHECK,
            format!(
                "{} {} answered {} {}; expected {status} {code}",
                ex.request.method,
                ex.request.path,
                ex.status,
                ex.code().unwrap_or("(none)")
            ),
            curl,
        );
    }
}
