//! The per-service document built from real tool schemas: the typed MCP fixture's
//! (`testdata/typed_fixture_tools.json`: nested models with `$defs`, a recursive model, enums,
//! output schemas, captured from `crates/server/tests/fixtures/typed_server.py`) and
//! server-everything's with mcp-server-time's (`benches/everything_tools.json`, with
//! `$schema`). Each rule has a checker that lists what breaks it; each checker is also shown
//! a document that breaks its rule, so none of them can pass by not looking.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::*;
use crate::ToolSchema;

fn tools_of(json: &str) -> Vec<ToolSchema> {
    let file: Value = serde_json::from_str(json).unwrap();
    serde_json::from_value(file["tools"].clone()).unwrap()
}

/// MCP servers' tools (a fixture's and server-everything's), as their provider lists them, and
/// one HTTP tool without an output schema.
fn real_tools() -> Vec<ToolSchema> {
    let mut tools = tools_of(include_str!("../../testdata/typed_fixture_tools.json"));
    tools.extend(tools_of(include_str!(
        "../../benches/everything_tools.json"
    )));
    for tool in &mut tools {
        tool.untyped_result = crate::UntypedResult::McpContent;
    }
    tools.push(ToolSchema {
        qualified_name: None,
        name: "http_status".into(),
        title: None,
        description: "An HTTP API's status, as it answers it.".into(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        untyped_result: crate::UntypedResult::AnyJson,
        annotations: None,
        icons: None,
        score: None,
    });
    tools
}

fn publication(api_keys_enabled: bool) -> Publication<'static> {
    Publication {
        service: "typed",
        version: "1.2.3",
        server_url: "http://127.0.0.1:8004".into(),
        api_keys_enabled,
        oauth: None,
        limits: Limits {
            max_body_bytes: 10,
            call_timeout_ms: 20,
            json: crate::strict_json::JsonLimits::default(),
            max_header_bytes: 30,
            max_headers: 40,
        },
    }
}

/// server-everything's prompts as GET /prompts lists them, and one of a second provider with
/// the same served name (the first keeps it).
fn real_prompts() -> Vec<crate::PromptInfo> {
    let prompt = |name: &str, provider: &str, properties: Value, required: Value| {
        serde_json::from_value(json!({
            "name": name, "description": format!("{name} of {provider}"), "arguments": [],
            "args_schema": {"type": "object", "properties": properties, "required": required},
            "provider": provider, "qualified_name": format!("{provider}.{name}"),
        }))
        .unwrap()
    };
    let mut simple: crate::PromptInfo = prompt("simple-prompt", "everything", json!({}), json!([]));
    simple.description = Some(String::new());
    vec![
        simple,
        prompt(
            "args-prompt",
            "everything",
            json!({"city": {"type": "string", "description": "Name of the city"}, "state": {"type": "string"}}),
            json!(["city"]),
        ),
        prompt(
            "resource-prompt",
            "everything",
            json!({"resourceType": {"type": "string"}, "resourceId": {"type": "string"}}),
            json!(["resourceType", "resourceId"]),
        ),
        prompt("args-prompt", "other", json!({}), json!([])),
    ]
}

fn document() -> Value {
    service_document(&publication(false), &real_tools(), &real_prompts())
}

/// Every `$ref` of `node` (anywhere in the document), with its JSON pointer.
fn refs(node: &Value, at: String, out: &mut Vec<(String, String)>) {
    match node {
        Value::Object(object) => {
            for (key, value) in object {
                if key == "$ref"
                    && let Some(target) = value.as_str()
                {
                    out.push((at.clone(), target.to_owned()));
                }
                refs(value, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                refs(item, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The `$ref`s of `doc` that do not resolve within it.
fn unresolved(doc: &Value) -> Vec<(String, String)> {
    let mut all = Vec::new();
    refs(doc, String::new(), &mut all);
    assert!(!all.is_empty());
    all.into_iter()
        .filter(|(_, target)| {
            let pointer = target.strip_prefix('#').unwrap_or("not local");
            doc.pointer(pointer).is_none()
        })
        .collect()
}

/// A validator of `schema` read inside `doc` (its `#/components/…` references resolve).
fn validator_in(doc: &Value, schema: &Value) -> jsonschema::Validator {
    let mut root = schema.clone();
    root["components"] = doc["components"].clone();
    jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{e}: {schema}"))
}

fn named(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn operations(doc: &Value) -> Vec<(&str, &Value)> {
    doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(path, _)| path.starts_with("/tools/"))
        .map(|(path, item)| (path.as_str(), &item["post"]))
        .collect()
}

#[test]
fn every_ref_resolves_recursive_included() {
    let doc = document();
    assert_eq!(unresolved(&doc), Vec::<(String, String)>::new());
    // The recursive model names itself.
    let tree = &doc["components"]["schemas"]["tool__summarize_tree__TreeNode"];
    assert_eq!(
        tree["properties"]["children"]["items"]["$ref"],
        "#/components/schemas/tool__summarize_tree__TreeNode"
    );
    // The checker sees the old, inline form: a tool schema with `$defs` copied into an
    // operation keeps `#/$defs/…`, which the document's root does not have.
    let mut inline = doc.clone();
    inline["paths"]["/tools/register_person"]["post"]["requestBody"]["content"]["application/json"]
        ["schema"] = real_tools()[0].input_schema.clone();
    let broken = unresolved(&inline);
    assert!(
        broken.iter().any(|(_, t)| t == "#/$defs/Person"),
        "{broken:?}"
    );
}

#[test]
fn no_schema_keyword_is_left() {
    fn keywords(node: &Value, found: &mut usize) {
        match node {
            Value::Object(object) => {
                *found += usize::from(object.contains_key("$schema"));
                object.values().for_each(|v| keywords(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| keywords(v, found)),
            _ => {}
        }
    }
    let tools = real_tools();
    let mut upstream = 0;
    for tool in &tools {
        keywords(&tool.input_schema, &mut upstream);
    }
    assert!(upstream > 0, "the upstream schemas have `$schema`");
    let mut published = 0;
    keywords(&document(), &mut published);
    assert_eq!(published, 0);
}

#[test]
fn call_tool_is_one_of_the_tools_by_discriminator() {
    let doc = document();
    let tools = real_tools();
    let body =
        &doc["paths"]["/call-tool"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let problems = |body: &Value| {
        let mut problems = Vec::new();
        let mapping = body["discriminator"]["mapping"].as_object().unwrap();
        let one_of: BTreeSet<&str> = body["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["$ref"].as_str().unwrap())
            .collect();
        let mapped: BTreeSet<&str> = mapping.values().map(|v| v.as_str().unwrap()).collect();
        if one_of != mapped {
            problems.push(format!("oneOf {one_of:?} is not the mapping {mapped:?}"));
        }
        for tool in &tools {
            match mapping.get(&tool.name).and_then(Value::as_str) {
                None => problems.push(format!("{} is not mapped", tool.name)),
                Some(target) => {
                    let branch = doc.pointer(target.strip_prefix('#').unwrap()).unwrap();
                    if branch["properties"]["tool"]["const"] != tool.name.as_str() {
                        problems.push(format!("{target} is not the branch of {}", tool.name));
                    }
                }
            }
        }
        problems
    };
    assert_eq!(body["discriminator"]["propertyName"], "tool");
    assert_eq!(problems(body), Vec::<String>::new());
    let mut short = body.clone();
    short["discriminator"]["mapping"]
        .as_object_mut()
        .unwrap()
        .remove("echo");
    assert_eq!(problems(&short).len(), 2, "{:?}", problems(&short));
    // The template POST /tools/{name} ("any object, any name") is replaced by the tools'
    // own paths; the static contract keeps both generic forms.
    assert!(doc["paths"].get("/tools/{name}").is_none());
    let contract = crate::openapi::document_json();
    assert!(contract["paths"]["/tools/{name}"].is_object());
    assert_eq!(
        contract["paths"]["/call-tool"]["post"]["requestBody"]["content"]["application/json"]["schema"],
        named("ToolRequest")
    );
}

/// A body the document accepts is one the gateway accepts: the document's schema for a call
/// and the gateway's check of the arguments agree on the examples, the refused arguments and
/// the call without `arguments` (which the gateway reads as `{}`).
#[test]
fn a_body_valid_by_the_document_is_accepted() {
    let doc = document();
    let body = validator_in(
        &doc,
        &doc["paths"]["/call-tool"]["post"]["requestBody"]["content"]["application/json"]["schema"],
    );
    let mut tried = 0;
    for tool in real_tools() {
        let gateway = crate::ArgumentValidator::compile(&tool.input_schema).unwrap();
        let mut cases = vec![None, Some(json!({})), Some(json!({"zz_unknown": 1}))];
        if let Some(valid) = example::example(&tool.input_schema, &gateway) {
            if let Some((wrong, _)) = example::refused(&tool.input_schema, &gateway, &valid) {
                cases.push(Some(wrong));
            }
            cases.push(Some(valid));
        }
        for arguments in cases {
            let mut call = json!({"tool": tool.name});
            if let Some(arguments) = &arguments {
                call["arguments"] = arguments.clone();
            }
            let by_document = body.is_valid(&call);
            let by_gateway = gateway.check(&arguments.unwrap_or(json!({}))).is_ok();
            assert_eq!(by_document, by_gateway, "{call}");
            tried += 1;
        }
    }
    assert!(tried > 40, "{tried}");
    // Unknown members and tools are refused by the document, as by the gateway.
    assert!(!body.is_valid(&json!({"tool": "echo", "arguments": {"message": "x"}, "x": 1})));
    assert!(!body.is_valid(&json!({"tool": "no_such_tool"})));
}

#[test]
fn examples_are_of_each_tools_own_shape_and_valid() {
    let doc = document();
    let tools = real_tools();
    let envelope_error = validator_in(&doc, &named("ErrorEnvelope"));
    let mut checked = 0;
    for (path, op) in operations(&doc) {
        let tool = tools
            .iter()
            .find(|t| format!("/tools/{}", t.name) == path)
            .unwrap();
        assert_eq!(
            op["summary"],
            tool.title.as_deref().unwrap_or(&tool.name),
            "{path}"
        );
        assert_eq!(op["description"], tool.description, "{path}");
        let request = &op["requestBody"]["content"]["application/json"];
        let example = request
            .get("example")
            .unwrap_or_else(|| panic!("{path}: no request example"));
        assert!(
            validator_in(&doc, &request["schema"]).is_valid(example),
            "{path}: {example}"
        );
        assert!(
            crate::ArgumentValidator::compile(&tool.input_schema)
                .unwrap()
                .check(example)
                .is_ok()
        );
        let ok = &op["responses"]["200"]["content"]["application/json"];
        let answer = ok
            .get("example")
            .unwrap_or_else(|| panic!("{path}: no 200 example"));
        let result = validator_in(&doc, &ok["schema"]);
        assert!(result.is_valid(answer), "{path}: {answer}");
        assert_eq!(answer["meta"]["tool"], tool.name.as_str());
        for (status, response) in op["responses"].as_object().unwrap() {
            for (code, example) in response["content"]["application/json"]["examples"]
                .as_object()
                .into_iter()
                .flatten()
            {
                let value = &example["value"];
                assert!(envelope_error.is_valid(value), "{path} {status} {code}");
                if let Some(named) = value["meta"]["tool"].as_str() {
                    assert_eq!(named, tool.name, "{path} {code}");
                }
                assert!(
                    !value["error"].as_str().unwrap().contains("'echo'") || tool.name == "echo"
                );
            }
        }
        let invalid = &op["responses"]["400"]["content"]["application/json"]["examples"]["INVALID_ARGUMENTS"]
            ["value"];
        if tool.input_schema["properties"]
            .as_object()
            .is_some_and(|p| !p.is_empty())
        {
            let issues = invalid["meta"]["validation_errors"].as_array().unwrap();
            assert!(!issues.is_empty(), "{path}");
            for issue in issues {
                let pointer = issue["path"].as_str().unwrap();
                let field = pointer.split('/').nth(1).unwrap_or_default();
                assert!(
                    pointer.is_empty() || tool.input_schema["properties"].get(field).is_some(),
                    "{path}: {pointer} is not a field of {}",
                    tool.name
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, tools.len());
    // And /call-tool's example is a call the document accepts, answered in its own shape.
    let call = &doc["paths"]["/call-tool"]["post"];
    let body = &call["requestBody"]["content"]["application/json"];
    assert!(validator_in(&doc, &body["schema"]).is_valid(&body["example"]));
    assert_eq!(
        call["responses"]["200"]["content"]["application/json"]["example"]["meta"]["tool"],
        body["example"]["tool"]
    );
}

/// The hoisted schemas judge values as the originals do (the same examples and the same
/// refused arguments on both), so rewriting the references changed no rule.
#[test]
fn hoisted_schemas_judge_as_the_originals() {
    let doc = document();
    for (path, op) in operations(&doc) {
        let tool = real_tools()
            .into_iter()
            .find(|t| format!("/tools/{}", t.name) == path)
            .unwrap();
        let hoisted = validator_in(
            &doc,
            &op["requestBody"]["content"]["application/json"]["schema"],
        );
        let original = crate::ArgumentValidator::compile(&tool.input_schema).unwrap();
        let valid = example::example(&tool.input_schema, &original).unwrap();
        let mut values = vec![valid.clone(), json!({}), json!([]), json!("x")];
        if let Some((wrong, _)) = example::refused(&tool.input_schema, &original, &valid) {
            values.push(wrong);
        }
        for value in values {
            assert_eq!(
                hoisted.is_valid(&value),
                original.check(&value).is_ok(),
                "{path}: {value}"
            );
        }
    }
}

#[test]
fn data_is_typed_with_the_output_schema_or_the_generic_result() {
    let doc = document();
    let result = |tool: &str| {
        let op = &doc["paths"][format!("/tools/{tool}")]["post"];
        let name = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_owned();
        doc["components"]["schemas"][name]["properties"]["data"]["$ref"].clone()
    };
    assert_eq!(
        result("register_person"),
        "#/components/schemas/tool__register_person__Output"
    );
    assert_eq!(result("echo"), "#/components/schemas/McpToolResult");
    assert_eq!(result("http_status"), "#/components/schemas/ToolResult");
    // An MCP tool's untyped result accepts what the MCP mapping answers, and always has its
    // content blocks (issue 31: a typed client reads `data.content[0]` without a guard).
    let mcp = validator_in(&doc, &named("McpToolResult"));
    for data in [
        json!({"content": [{"type": "text", "text": "hi"}]}),
        json!({"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
        json!({"content": [{"type": "resource", "resource": {"uri": "test://x", "text": "t"}}]}),
        json!({"content": [{"type": "resource_link", "uri": "test://x", "name": "x"}]}),
        json!({"a": [1, "é"], "content": [{"type": "text", "text": "{\"a\": [1, \"é\"]}"}]}),
    ] {
        assert!(mcp.is_valid(&data), "{data}");
    }
    for data in [
        json!({"content": [{"type": "text"}]}),
        json!({"a": [1, "é"]}),
        json!([1]),
    ] {
        assert!(!mcp.is_valid(&data), "{data}");
    }
    // Another tool's: any JSON.
    let any = validator_in(&doc, &named("ToolResult"));
    for data in [
        json!({"content": "not blocks"}),
        json!([1]),
        json!("text"),
        json!(null),
    ] {
        assert!(any.is_valid(&data), "{data}");
    }
}

#[test]
fn servers_and_security_follow_the_settings() {
    let off = document();
    assert_eq!(
        off["servers"],
        json!([{"url": "http://127.0.0.1:8004", "description": "This service."}])
    );
    assert!(off["components"].get("securitySchemes").is_none());
    let on = service_document(&publication(true), &real_tools(), &[]);
    assert!(on["components"]["securitySchemes"]["apiKey"].is_object());
    for (doc, keys) in [(&off, false), (&on, true)] {
        for (path, item) in doc["paths"].as_object().unwrap() {
            let op = &item.as_object().unwrap().values().next().unwrap();
            // /health (public by default) and the status page (always public) say none.
            let wanted = if keys && path != "/health" && path != "/status" {
                json!([{"apiKey": []}, {"bearer": []}])
            } else {
                Value::Null
            };
            assert_eq!(op["security"], wanted, "{path} keys={keys}");
        }
    }
    assert_eq!(server_url("0.0.0.0", 80), "/");
    assert_eq!(server_url("::1", 80), "http://[::1]:80");
    assert_eq!(server_url("localhost", 80), "http://localhost:80");
}

#[test]
fn component_names_are_namespaced_and_never_reused() {
    let doc = document();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "tool__register_person__Input",
        "tool__register_person__Person",
        "tool__register_person__Address",
        "tool__register_person__Output",
        "tool__register_person__Call",
        "tool__register_person__Result",
        "tool__get-sum__Input",
    ] {
        assert!(schemas.contains_key(name), "{name}");
    }
    // The output schema's `Person` is the input's (the same definition): one component.
    assert!(!schemas.contains_key("tool__register_person__Person_2"));
    assert_eq!(
        schemas["tool__register_person__Output"]["properties"]["person"]["$ref"],
        "#/components/schemas/tool__register_person__Person"
    );
    // Titles would name generated classes; two tools have a `TimeResult`. (The call and
    // result schemas made here have titles of their own, one per tool.)
    let titled: Vec<&String> = schemas
        .keys()
        .filter(|k| k.starts_with("tool__") && !k.ends_with("__Call") && !k.ends_with("__Result"))
        .filter(|k| schemas[k.as_str()].get("title").is_some())
        .collect();
    assert_eq!(titled, Vec::<&String>::new());
    let mut names = ComponentNames(BTreeSet::from(["a".to_owned()]));
    assert_eq!(names.take("a"), "a_2");
    assert_eq!(names.take("a b/c"), "a_b_c");
}

/// A tool's own operation: an operationId any generator accepts, the contract's non-path
/// parameters without the `{name}` path parameter (the name is in the path already), and the
/// request example the tool gives itself when it is valid by its own schema.
#[test]
fn a_tools_operation_is_named_safely_and_takes_its_given_example() {
    let tools = tools_of(
        r#"{"tools": [
            {"name": "get-time.v2", "description": "d", "input_schema": {"type": "object",
             "properties": {"city": {"type": "string"}}, "required": ["city"],
             "examples": [{"city": "Oslo"}]}},
            {"name": "bad_example", "description": "d", "input_schema": {"type": "object",
             "properties": {"n": {"type": "integer"}}, "required": ["n"],
             "examples": [{"n": "not a number"}]}}
        ]}"#,
    );
    let doc = service_document(&publication(false), &tools, &[]);
    let ops: BTreeMap<&str, &Value> = operations(&doc).into_iter().collect();
    let time = ops["/tools/get-time.v2"];
    assert_eq!(time["operationId"], "call_get_time_v2");
    assert_eq!(ops["/tools/bad_example"]["operationId"], "call_bad_example");
    let params: Vec<(&str, &str)> = time["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let p = if let Some(target) = p["$ref"].as_str() {
                doc.pointer(target.trim_start_matches('#')).unwrap()
            } else {
                p
            };
            (p["name"].as_str().unwrap(), p["in"].as_str().unwrap())
        })
        .collect();
    assert_eq!(params, [("X-Request-Id", "header"), ("Prefer", "header")]);
    // A tool's operation may run as a task too: its 202 keeps its example, and no response
    // gains an empty `examples` (openapi-spec-validator refuses `examples: null`).
    assert!(time["responses"]["202"]["content"]["application/json"]["example"].is_object());
    assert!(
        !serde_json::to_string(&doc)
            .unwrap()
            .contains("\"examples\":null")
    );
    let example = |op: &Value| op["requestBody"]["content"]["application/json"]["example"].clone();
    assert_eq!(example(time), json!({"city": "Oslo"}));
    // An example its own schema refuses is never shown.
    assert_ne!(
        example(ops["/tools/bad_example"]),
        json!({"n": "not a number"})
    );
}

/// Each prompt has `POST /prompts/<name>` with its `args_schema` as the body, in place of the
/// template's any-object body (which the server refuses for a prompt with a required
/// argument: a fuzzer finding, issue 31); with no prompt, the template stays.
#[test]
fn each_prompt_has_its_own_operation_typed_by_its_arguments() {
    let doc = document();
    let paths = doc["paths"].as_object().unwrap();
    assert!(!paths.contains_key("/prompts/{name}"));
    let op = |path: &str| &doc["paths"][path]["post"];
    let args = op("/prompts/args-prompt");
    assert_eq!(args["operationId"], "get_prompt_args_prompt");
    assert_eq!(args["tags"], json!(["prompt"]));
    assert_eq!(args["description"], "args-prompt of everything");
    assert!(
        args["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["in"] != "path"),
        "{args}"
    );
    assert_eq!(args["requestBody"]["required"], true);
    assert_eq!(
        op("/prompts/simple-prompt")["requestBody"]["required"],
        false
    );
    // A prompt that says nothing of itself is described by its name.
    assert_eq!(
        op("/prompts/simple-prompt")["description"],
        "Renders prompt `simple-prompt`."
    );
    let body = &args["requestBody"]["content"]["application/json"];
    let schema = validator_in(&doc, &body["schema"]);
    assert!(schema.is_valid(&json!({"city": "Lisboa"})));
    assert!(!schema.is_valid(&json!({})));
    assert!(!schema.is_valid(&json!({"city": 1})));
    assert!(schema.is_valid(&body["example"]), "{}", body["example"]);
    let resource = &op("/prompts/resource-prompt")["requestBody"]["content"]["application/json"];
    assert!(validator_in(&doc, &resource["schema"]).is_valid(&resource["example"]));
    // The 200 answer is the envelope of a rendered prompt, with no other prompt's example.
    let ok = &args["responses"]["200"]["content"]["application/json"];
    assert_eq!(ok["schema"]["$ref"], "#/components/schemas/PromptEnvelope");
    assert!(ok.get("example").is_none(), "{ok}");
    // The served name offered twice is the first provider's, as the server resolves it.
    let prompt_ops = paths.keys().filter(|p| p.starts_with("/prompts/")).count();
    assert_eq!(prompt_ops, 3, "{:?}", paths.keys().collect::<Vec<_>>());

    let none = service_document(&publication(false), &real_tools(), &[]);
    assert!(
        none["paths"]
            .as_object()
            .unwrap()
            .contains_key("/prompts/{name}")
    );
}

#[test]
fn with_oauth_the_issuer_s_flows_are_published_beside_the_bearer_scheme() {
    let mut with_flows = publication(false);
    with_flows.oauth = Some(OAuthPublication {
        issuer: "https://id.example".into(),
        authorization_url: Some("https://id.example/auth".into()),
        token_url: Some("https://id.example/token".into()),
        scopes: [("tools:all".to_owned(), "every tool".to_owned())].into(),
    });
    let doc = service_document(&with_flows, &[], &[]);
    let schemes = &doc["components"]["securitySchemes"];
    assert!(schemes.get("apiKey").is_none(), "no keys, no apiKey scheme");
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    let flows = &schemes["oauth"]["flows"];
    assert_eq!(
        flows["authorizationCode"]["authorizationUrl"],
        "https://id.example/auth"
    );
    assert_eq!(
        flows["clientCredentials"]["tokenUrl"],
        "https://id.example/token"
    );
    assert_eq!(
        flows["clientCredentials"]["scopes"]["tools:all"],
        "every tool"
    );
    assert_eq!(
        doc["paths"]["/tools"]["get"]["security"],
        serde_json::json!([{"bearer": []}, {"oauth": []}])
    );
    let mut discovered = with_flows.clone();
    discovered.api_keys_enabled = true;
    if let Some(o) = discovered.oauth.as_mut() {
        o.token_url = None;
    }
    let doc = service_document(&discovered, &[], &[]);
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(
        schemes["oauth"]["openIdConnectUrl"],
        "https://id.example/.well-known/openid-configuration"
    );
    assert!(schemes["apiKey"].is_object());
    assert_eq!(
        doc["paths"]["/tools"]["get"]["security"],
        serde_json::json!([{"apiKey": []}, {"bearer": []}, {"oauth": []}])
    );
}
