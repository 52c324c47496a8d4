//! Multi round-trip requests (issue 33): a 2026-07-28 client, which has no stream to be asked
//! on, gets what a handshake-era server behind asks during a call (server-everything's
//! elicitation, sampling and roots tools) as `input_required` rounds. The retry's
//! `inputResponses` reach the waiting upstream, the call's result answers the last round,
//! another client cannot resume the call, and log messages reach a client that asked for
//! them in `_meta`. Written by hand, so every field on the wire is seen.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

const ALICE_KEY: &str = "alice-secret-key-0123456789";
const BOB_KEY: &str = "bob-secret-key-0123456789";

async fn keyed_gateway(name: &str) -> Gateway {
    let config = format!(
        "security:\n  api_keys:\n    - {{ name: alice, value_env: MHG_ALICE_KEY }}\n    - {{ name: bob, value_env: MHG_BOB_KEY }}\nproviders:\n{}",
        everything_provider("everything")
    );
    Gateway::start_env(
        name,
        &config,
        &[("MHG_ALICE_KEY", ALICE_KEY), ("MHG_BOB_KEY", BOB_KEY)],
    )
    .await
}

/// The `_meta` of a 2026-07-28 request of a client that offers `capabilities`.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "rounds", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// Sends one stateless `tools/call` as `key`; its answer, the messages before it (an SSE
/// stream's notifications) and the answer itself.
async fn call(gw: &Gateway, key: &str, tool: &str, params: Value) -> (Vec<Value>, Value) {
    let mut params = params;
    params["name"] = json!(tool);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(gw.url("/mcp"))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&body)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    let mut messages = jsonrpc_messages(&text);
    let answer = messages
        .pop()
        .unwrap_or_else(|| panic!("no answer: {text}"));
    (messages, answer)
}

/// The answer a client that offers everything gives to one input request: an elicitation
/// declined, a sampling answered with fixed words, its roots.
fn answer_to(request: &Value) -> Value {
    match request["method"].as_str() {
        Some("elicitation/create") => json!({"action": "decline"}),
        Some("sampling/createMessage") => json!({"role": "assistant", "model": "by-hand",
                                                 "content": {"type": "text", "text": "sampled words"}}),
        Some("roots/list") => json!({"roots": [{"uri": "file:///tmp/root-a", "name": "a"}]}),
        other => panic!("an input request of an unknown kind: {other:?}"),
    }
}

/// Calls `tool` as a client that offers everything and answers every round, as the SDKs
/// do, until the call's result: the methods it was asked, in order, and the result.
async fn driven(gw: &Gateway, key: &str, tool: &str, arguments: Value) -> (Vec<String>, Value) {
    let offers = json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}});
    let mut params = json!({"arguments": arguments, "_meta": meta(offers)});
    let mut asked = Vec::new();
    for _ in 0..5 {
        let (_, answer) = call(gw, key, tool, params.clone()).await;
        let result = &answer["result"];
        if result["resultType"] != "input_required" {
            return (asked, answer);
        }
        let mut responses = serde_json::Map::new();
        for (key, request) in result["inputRequests"].as_object().expect("inputRequests") {
            asked.push(request["method"].as_str().unwrap().to_owned());
            responses.insert(key.clone(), answer_to(request));
        }
        params["requestState"] = result["requestState"].clone();
        params["inputResponses"] = Value::Object(responses);
    }
    panic!("{tool}: still asking after 5 rounds: {asked:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_client_is_asked_in_rounds_and_only_it_resumes_its_call() {
    let gw = keyed_gateway("mcp-rounds").await;
    let offers = json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}});

    // Each kind of ask reaches the client and its answer reaches the tool.
    let (asked, done) = driven(&gw, ALICE_KEY, "trigger-elicitation-request", json!({})).await;
    assert!(
        asked.contains(&"elicitation/create".to_owned()),
        "{asked:?}"
    );
    assert!(done.to_string().contains("declined"), "{done}");
    let (asked, done) = driven(
        &gw,
        ALICE_KEY,
        "trigger-sampling-request",
        json!({"prompt": "hello"}),
    )
    .await;
    assert!(
        asked.contains(&"sampling/createMessage".to_owned()),
        "{asked:?}"
    );
    assert!(done.to_string().contains("sampled words"), "{done}");

    // The elicitation's request as the upstream sent it, then the retries only its client
    // may make.
    // (A roots/list the server asks at start may come first: answered, as a client would.)
    let mut params = json!({"arguments": {}, "_meta": meta(offers.clone())});
    let mut elicited = None;
    for _ in 0..3 {
        let (_, round) = call(
            &gw,
            ALICE_KEY,
            "trigger-elicitation-request",
            params.clone(),
        )
        .await;
        let result = &round["result"];
        assert_eq!(result["resultType"], "input_required", "{round}");
        let requests = result["inputRequests"].as_object().unwrap();
        if let Some((key, request)) = requests
            .iter()
            .find(|(_, r)| r["method"] == "elicitation/create")
        {
            elicited = Some((key.clone(), request.clone(), result["requestState"].clone()));
            break;
        }
        let answers: serde_json::Map<String, Value> = requests
            .iter()
            .map(|(key, request)| (key.clone(), answer_to(request)))
            .collect();
        params["requestState"] = result["requestState"].clone();
        params["inputResponses"] = Value::Object(answers);
    }
    let (key, request, state) = elicited.expect("an elicitation within 3 rounds");
    assert!(
        request["params"]["requestedSchema"]["properties"].is_object(),
        "{request}"
    );
    let state = state.as_str().unwrap().to_owned();
    let retry = |answer: Value| {
        json!({"arguments": {}, "_meta": meta(offers.clone()),
               "requestState": state, "inputResponses": {&key: answer}})
    };
    let (_, stolen) = call(
        &gw,
        BOB_KEY,
        "trigger-elicitation-request",
        retry(json!({"action": "decline"})),
    )
    .await;
    assert_eq!(
        stolen["error"]["code"], -32602,
        "another client's: {stolen}"
    );
    let (_, wrong) = call(
        &gw,
        ALICE_KEY,
        "trigger-elicitation-request",
        retry(json!({"roots": []})),
    )
    .await;
    assert_eq!(
        wrong["error"]["code"], -32602,
        "not an elicitation's answer: {wrong}"
    );
    let (_, done) = call(
        &gw,
        ALICE_KEY,
        "trigger-elicitation-request",
        retry(json!({"action": "accept", "content": {}})),
    )
    .await;
    assert!(done.get("error").is_none(), "the call still waited: {done}");
    let (_, spent) = call(
        &gw,
        ALICE_KEY,
        "trigger-elicitation-request",
        retry(json!({"action": "decline"})),
    )
    .await;
    assert_eq!(
        spent["error"]["code"], -32602,
        "spent once answered: {spent}"
    );

    // Roots: server-everything asks once per connection and keeps the answer.
    let (_, done) = driven(&gw, ALICE_KEY, "get-roots-list", json!({})).await;
    assert!(done.get("error").is_none(), "{done}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_client_that_offers_nothing_is_answered_for_and_asked_nothing() {
    let gw = keyed_gateway("mcp-rounds-none").await;
    let (_, done) = call(
        &gw,
        ALICE_KEY,
        "trigger-elicitation-request",
        json!({"arguments": {}, "_meta": meta(json!({}))}),
    )
    .await;
    assert_ne!(done["result"]["resultType"], "input_required", "{done}");
    assert!(done.get("error").is_none(), "{done}");
}

#[tokio::test(flavor = "multi_thread")]
async fn log_messages_reach_a_2026_client_that_asked_for_them() {
    let gw = Gateway::start(
        "mcp-rounds-logs",
        &format!(
            "providers:\n  - {{ name: meta, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
            venv_python(),
            fixture("mrtr_server.py")
        ),
    )
    .await;
    let mut asking = meta(json!({}));
    asking["io.modelcontextprotocol/logLevel"] = json!("info");
    let (before, done) = call(
        &gw,
        "unused",
        "log_and_echo",
        json!({"arguments": {"message": "logged"}, "_meta": asking}),
    )
    .await;
    assert!(done.to_string().contains("logged"), "{done}");
    let levels: Vec<&str> = before
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .filter_map(|m| m["params"]["level"].as_str())
        .collect();
    assert!(
        levels.contains(&"info") && levels.contains(&"warning") && !levels.contains(&"debug"),
        "info and above, as asked: {before:?}"
    );
    let (before, _) = call(
        &gw,
        "unused",
        "log_and_echo",
        json!({"arguments": {"message": "quiet"}, "_meta": meta(json!({}))}),
    )
    .await;
    assert!(
        before
            .iter()
            .all(|m| m["method"] != "notifications/message"),
        "none when not asked: {before:?}"
    );
}

/// The calls of the SDK comparisons: every kind of ask, several in one call, and logs.
const SDK_CALLS: &str = r#"[["ask_name",{}],["ask_model",{"prompt":"hi"}],["ask_roots",{}],["ask_all",{}],["log_and_echo",{"message":"hey"}],["pick_enums",{}],["regional",{"region":"eu-west"}]]"#;

/// What the official Python SDK's client in `mode` saw calling [`SDK_CALLS`] at `url`.
async fn sdk_saw(url: &str, mode: &str) -> Value {
    let mut seen = run_python(vec![
        fixture("mrtr_client.py"),
        url.to_owned(),
        mode.to_owned(),
        SDK_CALLS.to_owned(),
        "info".to_owned(),
    ])
    .await;
    seen.as_object_mut().unwrap().remove("protocol_version");
    // The asks of one round are asked at once, by the SDK's server and by the gateway alike:
    // their order is not defined, so each call's are compared in a fixed one.
    for call in seen["calls"].as_array_mut().unwrap() {
        call["requests"]
            .as_array_mut()
            .unwrap()
            .sort_by_key(|request| request.to_string());
    }
    if mode == "legacy" {
        // A session's log messages come on its own GET stream, not on the call's (rmcp routes
        // notifications so), so their order against the calls' answers is not kept: they are
        // compared all together.
        let mut logs: Vec<Value> = Vec::new();
        for call in seen["calls"].as_array_mut().unwrap() {
            logs.append(call["logs"].as_array_mut().unwrap());
        }
        logs.sort_by_key(|log| log.to_string());
        seen["logs"] = Value::Array(logs);
    }
    seen
}

/// The official Python SDK's client, in the 2026-07-28 era and in the handshake era, sees the
/// same through the gateway as directly from a server written with the SDK's `MCPServer`,
/// whichever era the gateway speaks to that server (`protocol`: the handshake, 2026-07-28, or
/// `auto`) and whether it reaches it over Streamable HTTP or runs it over stdio: the same
/// questions (the five enum forms of an elicitation's schema among them), answers, results
/// and log messages, and a parameter mirrored as an `Mcp-Param-*` header, which the server
/// refuses a 2026-07-28 request over HTTP without. One test per era of the client.
#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_sees_through_the_gateway_what_it_sees_directly() {
    sdk_sees_through_every_gateway_what_it_sees_directly("2026-07-28").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_of_the_handshake_era_sees_through_the_gateway_what_it_sees_directly() {
    sdk_sees_through_every_gateway_what_it_sees_directly("legacy").await;
}

/// The SDK's client in `mode` against the server directly, then through five gateways in front
/// of it (started together, each client run at once: every one is a process of its own).
async fn sdk_sees_through_every_gateway_what_it_sees_directly(mode: &str) {
    let port = free_port();
    let _server = start_python_server_on("mrtr_server.py", port).await;
    let direct = format!("http://127.0.0.1:{port}/mcp");
    let stdio = format!(
        "command: \"{}\", args: [\"{}\"]",
        venv_python(),
        fixture("mrtr_server.py")
    );
    let ways = [
        ("rounds-http", format!("url: \"{direct}\""), "handshake"),
        ("rounds-stdio", stdio.clone(), "handshake"),
        (
            "rounds-http-2026",
            format!("url: \"{direct}\""),
            "2026-07-28",
        ),
        ("rounds-stdio-2026", stdio.clone(), "2026-07-28"),
        ("rounds-stdio-auto", stdio, "auto"),
    ];
    let gateways = futures::future::join_all(ways.iter().map(|(name, upstream, protocol)| {
        let config = format!(
            "providers:\n  - {{ name: mrtr, kind: mcp, {upstream}, protocol: \"{protocol}\" }}\n"
        );
        async move { (Gateway::start(name, &config).await, *name) }
    }))
    .await;
    let expected = sdk_saw(&direct, mode).await;
    let calls = expected["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 7, "{expected}");
    assert!(
        calls.iter().all(|c| c["isError"] != true),
        "directly, every call works: {expected}"
    );
    let seen = futures::future::join_all(
        gateways
            .iter()
            .map(|(gw, _)| async move { sdk_saw(&gw.url("/mcp"), mode).await }),
    )
    .await;
    for ((_, name), seen) in gateways.iter().zip(seen) {
        assert_eq!(
            seen, expected,
            "{mode} through {name}: what the client saw differs from directly"
        );
    }
}

/// A tool renamed by the gateway (`tool_prefix`) of a 2026-07-28 server over HTTP still gets
/// its `Mcp-Param-*` header, under the server's own name: the call works over REST, and the
/// same request without the header, sent to the server directly, is refused.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_param_headers_are_mirrored_to_a_2026_upstream_under_its_own_names() {
    let port = free_port();
    let _server = start_python_server_on("mrtr_server.py", port).await;
    let direct = format!("http://127.0.0.1:{port}/mcp");
    let gw = Gateway::start(
        "rounds-params",
        &format!(
            "monitoring: {{ health_check_interval: 10 }}\nproviders:\n  - {{ name: mrtr, kind: mcp, url: \"{direct}\", protocol: \"2026-07-28\", tool_prefix: eu_ }}\n"
        ),
    )
    .await;
    // A stateless server has no `ping`: its health check (`server/discover`) succeeds.
    let checked = |health: &Answer| health.body["data"]["dependencies"]["mrtr"].clone();
    let first = checked(&get(&gw, "/health").await);
    assert_eq!(first["status"], "connected", "{first}");
    eventually(
        Duration::from_secs(20),
        "a later health check (every 10 s)",
        || async {
            let now = checked(&get(&gw, "/health").await);
            (now["status"] == "connected"
                && now["last_ok"].is_string()
                && now["last_ok"] != first["last_ok"])
                .then_some(())
        },
    )
    .await;
    let answered = crate::harness::call(&gw, "eu_regional", json!({"region": "eu-west"})).await;
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(
        answered.body["data"]["result"], "served in eu-west",
        "{}",
        answered.body
    );
    let bare = reqwest::Client::new()
        .post(&direct)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "regional")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "regional", "arguments": {"region": "eu-west"},
            "_meta": meta(json!({}))}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 400, "the server checks the header");
    let refused: Value = bare.json().await.unwrap();
    assert_eq!(refused["error"]["code"], -32020, "{refused}");
}

/// server-everything (the TypeScript SDK, handshake era only) over Streamable HTTP: the
/// official Python SDK's client is asked the same through the gateway in the 2026-07-28 era,
/// which the server does not speak (the gateway asks in `input_required` rounds), as in the
/// handshake era, and what it is asked is what the server asks directly: its elicitation (a
/// form with the five enum forms of SEP-1330 among its fields) and its sampling request.
/// (What the gateway re-serializes is not byte-for-byte the server's: numbers of a form's
/// schema, a sampling temperature, the order of an answer's keys — issue 37, docs/mcp.md.)
#[tokio::test(flavor = "multi_thread")]
async fn a_handshake_era_server_asks_a_client_of_either_era_through_the_gateway() {
    let port = free_port();
    let _everything = start_everything_on("streamableHttp", port).await;
    let direct = format!("http://127.0.0.1:{port}/mcp");
    let gw = Gateway::start(
        "rounds-everything",
        &format!("providers:\n  - {{ name: everything, kind: mcp, url: \"{direct}\" }}\n"),
    )
    .await;
    let calls = r#"[["trigger-elicitation-request",{}],["trigger-sampling-request",{"prompt":"a haiku","maxTokens":7}],["echo",{"message":"both eras"}]]"#;
    let run = |url: String, mode: &'static str, calls: &'static str| async move {
        let mut seen = run_python(vec![
            fixture("mrtr_client.py"),
            url,
            mode.to_owned(),
            calls.to_owned(),
        ])
        .await;
        seen.as_object_mut().unwrap().remove("protocol_version");
        seen
    };
    let saw = |url: String, mode: &'static str| run(url, mode, calls);
    // server-everything asks its client's roots once per connection, at start or at the
    // first call after: a first call that lists them takes that ask out of the comparison.
    let roots = run(gw.url("/mcp"), "2026-07-28", r#"[["get-roots-list",{}]]"#).await;
    assert!(roots.to_string().contains("file:///tmp/root-a"), "{roots}");
    let expected = saw(direct, "legacy").await;
    let mut through = saw(gw.url("/mcp"), "legacy").await;
    let mut modern = saw(gw.url("/mcp"), "2026-07-28").await;
    // One known difference (docs/mcp.md): a round's elicitation goes in rmcp's types, whose
    // schema numbers are floats (`1000.0`), where the handshake era's goes as the server wrote it.
    integral_numbers_as_integers(&mut through);
    integral_numbers_as_integers(&mut modern);
    assert_eq!(
        modern, through,
        "the 2026-07-28 client sees what the handshake-era one does"
    );
    let form = |seen: &Value| seen["calls"][0]["requests"][0]["params"].clone();
    let (asked, directly) = (form(&through), form(&expected));
    assert_eq!(asked["message"], directly["message"]);
    let fields = |form: &Value| {
        let properties = form["requestedSchema"]["properties"].as_object().unwrap();
        properties.keys().cloned().collect::<Vec<_>>()
    };
    assert_eq!(fields(&asked), fields(&directly));
    for enum_form in ["enumNames", "oneOf", "anyOf", "\"enum\""] {
        assert!(
            asked.to_string().contains(enum_form),
            "{enum_form} in {asked}"
        );
    }
    for (call, (seen, want)) in through["calls"]
        .as_array()
        .unwrap()
        .iter()
        .zip(expected["calls"].as_array().unwrap())
        .enumerate()
    {
        assert_eq!(seen["isError"], want["isError"], "call {call}");
        assert_eq!(seen["content"][0], want["content"][0], "call {call}");
        let methods = |c: &Value| {
            c["requests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["method"].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(methods(seen), methods(want), "call {call}");
    }
}

/// Each round names its own `requestState`: a call asked twice (a name and roots, then a
/// sampling that needs the name) gets a new state in its second round, and a retry with the
/// first round's state, whose asks are answered, is refused.
#[tokio::test(flavor = "multi_thread")]
async fn each_round_has_a_request_state_of_its_own() {
    let gw = Gateway::start(
        "rounds-states",
        &format!(
            "providers:\n  - {{ name: mrtr, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
            venv_python(),
            fixture("mrtr_server.py")
        ),
    )
    .await;
    let offers = json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}});
    let mut params = json!({"arguments": {}, "_meta": meta(offers)});
    let mut states: Vec<Value> = Vec::new();
    let done = loop {
        let (_, answer) = call(&gw, "unused", "ask_all", params.clone()).await;
        let result = &answer["result"];
        if result["resultType"] != "input_required" {
            break answer;
        }
        assert!(states.len() < 4, "still asking: {answer}");
        let mut responses = serde_json::Map::new();
        for (key, request) in result["inputRequests"].as_object().unwrap() {
            let answer = match request["method"].as_str() {
                Some("elicitation/create") => {
                    json!({"action": "accept", "content": {"name": "Ada"}})
                }
                _ => answer_to(request),
            };
            responses.insert(key.clone(), answer);
        }
        states.push(result["requestState"].clone());
        params["requestState"] = result["requestState"].clone();
        params["inputResponses"] = Value::Object(responses);
    };
    assert!(done.to_string().contains("sampled words"), "{done}");
    assert!(
        states.len() >= 2,
        "asked in two rounds at least: {states:?}"
    );
    assert_ne!(states[0], states[1], "a new state each round");

    // An earlier round's state, once a later round has asked, is refused.
    let mut params = json!({"arguments": {}, "_meta": meta(json!({"elicitation": {"form": {}}, "sampling": {}, "roots": {}}))});
    let (_, first) = call(&gw, "unused", "ask_all", params.clone()).await;
    let first_state = first["result"]["requestState"].clone();
    let mut responses = serde_json::Map::new();
    for (key, request) in first["result"]["inputRequests"].as_object().unwrap() {
        let answer = match request["method"].as_str() {
            Some("elicitation/create") => json!({"action": "accept", "content": {"name": "Ada"}}),
            _ => answer_to(request),
        };
        responses.insert(key.clone(), answer);
    }
    params["requestState"] = first_state.clone();
    params["inputResponses"] = Value::Object(responses);
    let (_, second) = call(&gw, "unused", "ask_all", params.clone()).await;
    assert_eq!(second["result"]["resultType"], "input_required", "{second}");
    let (_, stale) = call(&gw, "unused", "ask_all", params).await;
    assert_eq!(
        stale["error"]["code"], -32602,
        "the first round's state: {stale}"
    );
}

/// A 2026-07-28 server's own keys for its input requests reach a 2026-07-28 client through
/// the gateway (which asks them of the client in rounds of its own), and the server is told
/// what the caller offers, not all the gateway could pass on: a caller that offers no
/// elicitation (REST, or such a client) gets the server's refusal as CAPABILITY_REQUIRED.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_servers_input_request_keys_reach_the_client() {
    let gw = Gateway::start(
        "rounds-keys",
        &format!(
            "providers:\n  - {{ name: mrtr, kind: mcp, command: \"{}\", args: [\"{}\"], protocol: \"2026-07-28\" }}\n",
            venv_python(),
            fixture("mrtr_server.py")
        ),
    )
    .await;
    let offers = json!({"elicitation": {"form": {}}});
    let (_, first) = call(
        &gw,
        "unused",
        "ask_name",
        json!({"arguments": {}, "_meta": meta(offers.clone())}),
    )
    .await;
    let keys: Vec<&String> = first["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("{first}"))
        .keys()
        .collect();
    assert!(
        keys.len() == 1 && keys[0].ends_with("name_question"),
        "the server's key: {keys:?}"
    );
    let key = keys[0].clone();
    let (_, done) = call(
        &gw,
        "unused",
        "ask_name",
        json!({"arguments": {}, "_meta": meta(offers),
               "requestState": first["result"]["requestState"],
               "inputResponses": {key: {"action": "accept", "content": {"name": "Ada"}}}}),
    )
    .await;
    assert!(done.to_string().contains("Hello, Ada"), "{done}");

    // A REST caller offers nothing: the server is told so and refuses, as it would a client
    // without elicitation, instead of being asked on its behalf.
    let rest = crate::harness::call(&gw, "ask_name", json!({})).await;
    assert_eq!(rest.body["code"], "CAPABILITY_REQUIRED", "{}", rest.body);
    assert!(
        rest.body["error"].as_str().unwrap().contains("elicitation"),
        "{}",
        rest.body
    );
    let offered_nothing = json!({"arguments": {}, "_meta": meta(json!({}))});
    let (_, refused) = call(&gw, "unused", "ask_name", offered_nothing).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(
        refused.to_string().contains("CAPABILITY_REQUIRED"),
        "{refused}"
    );
}

/// Every number with an integral value written as an integer (`1000.0` as `1000`).
fn integral_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers_as_integers),
        _ => {}
    }
}
