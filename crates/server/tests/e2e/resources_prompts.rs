//! Resources and prompts over REST against two real server-everything children: the lists with
//! provider and qualified names, reads of listed and templated URIs (text and blob), which
//! provider answers (the first in configuration order, or the one named), prompts rendered by
//! served and qualified name, arguments checked against `args_schema` with the same details as
//! /call-tool, unknown URIs and prompts, methods, and the API key in front of them.

use serde_json::{Value, json};

use crate::harness::*;

/// Two server-everything children; the second's tools are prefixed (tool names must not
/// clash), its resources and prompts keep their names and are told apart by provider.
fn two_everythings() -> String {
    format!(
        "providers:\n{}{}",
        everything_provider("ev"),
        everything_provider("ev2").replace(" }\n", ", tool_prefix: ev2_ }\n")
    )
}

fn of<'a>(list: &'a Value, provider: &str) -> Vec<&'a Value> {
    list.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["provider"] == provider)
        .collect()
}

#[tokio::test]
async fn resources_templates_and_reads() {
    let gw = Gateway::start("catalog", &two_everythings()).await;

    let resources = get(&gw, "/resources").await;
    resources.assert_envelope();
    assert_eq!(resources.status, 200);
    let list = &resources.body["data"]["resources"];
    let (ev, ev2) = (of(list, "ev"), of(list, "ev2"));
    assert!(!ev.is_empty(), "{list}");
    assert_eq!(ev.len(), ev2.len(), "both servers list the same resources");
    for r in &ev {
        assert!(r["uri"].is_string() && r["name"].is_string(), "{r}");
        assert_eq!(
            r["qualified_name"],
            format!("ev.{}", r["name"].as_str().unwrap())
        );
    }
    // Listed first by the first provider in configuration order.
    assert_eq!(list[0]["provider"], "ev");

    let templates = get(&gw, "/resource-templates").await;
    templates.assert_envelope();
    let templates = &templates.body["data"]["resource_templates"];
    let text_template = "demo://resource/dynamic/text/{resourceId}";
    let mine: Vec<&Value> = of(templates, "ev2")
        .into_iter()
        .filter(|t| t["uri_template"] == text_template)
        .collect();
    assert_eq!(mine.len(), 1, "{templates}");
    assert!(
        mine[0]["qualified_name"]
            .as_str()
            .unwrap()
            .starts_with("ev2.")
    );

    // A listed URI: both offer it, the first in configuration order answers.
    let listed = ev
        .iter()
        .find(|r| r["mime_type"] == "text/plain" || r["mime_type"] == "text/markdown")
        .unwrap_or(&ev[0]);
    let uri = listed["uri"].as_str().unwrap();
    let path = format!("/resources/read?uri={}", urlencode(uri));
    let read = get(&gw, &path).await;
    read.assert_envelope();
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["data"]["provider"], "ev");
    assert_eq!(read.body["data"]["uri"], uri);
    assert_eq!(read.body["data"]["contents"][0]["uri"], uri);
    // ... or the one named.
    let read = get(&gw, &format!("{path}&provider=ev2")).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["data"]["provider"], "ev2");

    // A URI only a template describes: text, and binary as base64.
    let read = get(
        &gw,
        "/resources/read?uri=demo%3A%2F%2Fresource%2Fdynamic%2Ftext%2F3",
    )
    .await;
    read.assert_envelope();
    assert_eq!(read.status, 200, "{}", read.body);
    let contents = &read.body["data"]["contents"][0];
    assert!(
        contents["text"].as_str().unwrap().contains('3'),
        "{contents}"
    );
    assert!(contents.get("blob").is_none());
    let read = get(&gw, "/resources/read?uri=demo://resource/dynamic/blob/3").await;
    assert_eq!(read.status, 200, "{}", read.body);
    let blob = read.body["data"]["contents"][0]["blob"].as_str().unwrap();
    assert!(
        blob.chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c)),
        "{blob}"
    );

    // Unknown URIs: no provider has it (no upstream asked), or the provider says so.
    for uri in [
        "nothing://here",
        "demo://resource/dynamic/text/not-a-number",
    ] {
        let read = get(&gw, &format!("/resources/read?uri={}", urlencode(uri))).await;
        read.assert_envelope();
        assert_eq!(read.status, 404, "{uri}: {}", read.body);
        assert_eq!(read.code(), "RESOURCE_NOT_FOUND", "{}", read.body);
        assert!(read.body["error"].as_str().unwrap().contains(uri));
    }
    // A malformed query.
    for path in ["/resources/read", "/resources/read?url=x"] {
        let read = get(&gw, path).await;
        read.assert_envelope();
        assert_eq!(read.status, 400, "{path}: {}", read.body);
        assert_eq!(read.code(), "INVALID_REQUEST");
    }
    // A provider the service does not have holds no such resource.
    let read = get(&gw, "/resources/read?uri=nothing://here&provider=nope").await;
    read.assert_envelope();
    assert_eq!(read.status, 404, "{}", read.body);
    assert_eq!(read.code(), "RESOURCE_NOT_FOUND");
    let wrong = post_json(&gw, "/resources", &json!({})).await;
    wrong.assert_envelope();
    assert_eq!(wrong.status, 405);
}

#[tokio::test]
async fn prompts_rendered_and_their_arguments_checked() {
    let gw = Gateway::start("prompts", &two_everythings()).await;

    let prompts = get(&gw, "/prompts").await;
    prompts.assert_envelope();
    let list = &prompts.body["data"]["prompts"];
    let args_prompt = of(list, "ev")
        .into_iter()
        .find(|p| p["name"] == "args-prompt")
        .unwrap_or_else(|| panic!("{list}"));
    assert_eq!(args_prompt["qualified_name"], "ev.args-prompt");
    assert_eq!(
        args_prompt["args_schema"]["required"],
        json!(["city"]),
        "{args_prompt}"
    );
    assert_eq!(
        args_prompt["args_schema"]["properties"]["state"]["type"],
        "string"
    );
    let city = args_prompt["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "city")
        .unwrap();
    assert_eq!(city["required"], true);

    // By served name: the first provider; without arguments, an empty body is `{}`.
    let simple = Answer::from(
        reqwest::Client::new()
            .post(gw.url("/prompts/simple-prompt"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    simple.assert_envelope();
    assert_eq!(simple.status, 200, "{}", simple.body);
    assert_eq!(simple.body["data"]["provider"], "ev");
    assert_eq!(simple.body["data"]["prompt"], "simple-prompt");
    let message = &simple.body["data"]["messages"][0];
    assert_eq!(message["role"], "user");
    assert_eq!(message["content"]["type"], "text");

    // By qualified name: that provider; the arguments reach the server.
    let got = post_json(
        &gw,
        "/prompts/ev2.args-prompt",
        &json!({"city": "Lisboa", "state": "Ø"}),
    )
    .await;
    got.assert_envelope();
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body["data"]["provider"], "ev2");
    let text = got.body["data"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("Lisboa") && text.contains('Ø'), "{text}");

    // Arguments that fail args_schema never reach the server: the details of /call-tool.
    let bad = post_json(&gw, "/prompts/args-prompt", &json!({"city": 5, "x": 1})).await;
    bad.assert_envelope();
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(bad.code(), "INVALID_ARGUMENTS");
    let paths: Vec<&str> = bad.body["meta"]["validation_errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/city"), "{}", bad.body);
    let missing = post_json(&gw, "/prompts/args-prompt", &json!({})).await;
    assert_eq!(missing.status, 400);
    assert_eq!(missing.code(), "INVALID_ARGUMENTS");
    let not_object = post_json(&gw, "/prompts/args-prompt", &json!([1])).await;
    not_object.assert_envelope();
    assert_eq!(not_object.status, 400);
    assert_eq!(not_object.code(), "INVALID_REQUEST");

    for name in ["no-such-prompt", "nope.args-prompt", "ev3.simple-prompt"] {
        let unknown = post_json(&gw, &format!("/prompts/{name}"), &json!({})).await;
        unknown.assert_envelope();
        assert_eq!(unknown.status, 404, "{name}");
        assert_eq!(unknown.code(), "PROMPT_NOT_FOUND");
    }
    let wrong = get(&gw, "/prompts/simple-prompt").await;
    wrong.assert_envelope();
    assert_eq!(wrong.status, 405);
    assert_eq!(wrong.headers["allow"], "POST, OPTIONS");
}

#[tokio::test]
async fn the_routes_need_the_api_key_and_a_service_with_none_lists_none() {
    let extra = format!(
        "security:\n  rate_limit: 100000\n  api_keys:\n    - {{ name: ops, value_env: MHG_OPS_KEY }}\nproviders:\n{}",
        time_provider("time")
    );
    let mut gw = Gateway::spawn_env("keyed", &extra, &[("MHG_OPS_KEY", "ops-value")]);
    gw.wait_running().await;
    for path in ["/resources", "/resource-templates", "/prompts"] {
        let refused = get(&gw, path).await;
        refused.assert_envelope();
        assert_eq!(refused.status, 401, "{path}");
        let answer = Answer::from(
            reqwest::Client::new()
                .get(gw.url(path))
                .header("x-api-key", "ops-value")
                .send()
                .await
                .unwrap(),
        )
        .await;
        answer.assert_envelope();
        assert_eq!(answer.status, 200, "{path}");
        // mcp-server-time offers no resources or prompts: empty lists, not errors.
        let data = answer.body["data"].as_object().unwrap();
        let list = data.values().find(|v| v.is_array()).unwrap();
        assert_eq!(list, &json!([]), "{path}");
    }
    let refused = post_json(&gw, "/prompts/x", &json!({})).await;
    assert_eq!(refused.status, 401);
}

/// Percent-encodes a query value (enough for URIs in tests).
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
