//! Talking to an MCP server through the gateway's /mcp is talking to the server: the official
//! Python SDK 2.x client sees the same of server-everything directly (stdio) and through a
//! gateway service — content of every kind, structured content, progress, sampling,
//! elicitation and roots requests, log messages at the level it set, resource subscriptions
//! and their updates, completions — with one shared upstream connection and with one per
//! client session. Several clients calling at once each get their own sampling request. Both
//! protocol eras list and call tools, and a 2026-07-28 request whose headers disagree with its
//! body is refused.

use std::time::Duration;

use serde_json::Value;

use crate::harness::*;

fn everything(extra: &str) -> String {
    format!(
        "providers:\n  - {{ name: everything, kind: mcp, command: node, args: [\"{}\", stdio]{extra} }}\n",
        everything_js()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_sees_the_same_through_the_gateway_as_directly() {
    let direct = run_python(vec![
        fixture("mcp_fidelity.py"),
        "direct".into(),
        "node".into(),
        everything_js(),
    ])
    .await;
    // What the comparison rests on is there at all.
    assert_eq!(
        direct["capabilities"],
        serde_json::json!({"logging": true, "completions": true, "subscribe": true})
    );
    assert_eq!(direct["sampling"]["asked"]["maxTokens"], 7, "{direct}");
    assert_eq!(direct["logs"].as_array().unwrap().len(), 2, "{direct}");
    assert_eq!(direct["logs_between"], 0, "nothing below the level set");
    assert_eq!(direct["roots"]["asked"], true);
    assert!(!direct["updates"].as_array().unwrap().is_empty());
    assert!(!direct["completion"].as_array().unwrap().is_empty());
    for (label, extra) in [
        ("shared", ""),
        ("per-session", ", session_per_client: true"),
    ] {
        let gw = Gateway::start("fidelity", &everything(extra)).await;
        let through = run_python(vec![fixture("mcp_fidelity.py"), gw.url("/mcp")]).await;
        let features: Vec<&String> = direct.as_object().unwrap().keys().collect();
        for feature in features {
            assert_eq!(
                through[feature], direct[feature],
                "{label}: '{feature}' differs through the gateway"
            );
        }
    }
}

/// Two clients call the same upstream at once; each sampling request reaches the client whose
/// call caused it: with one upstream session per client (stdio), and over one shared Streamable
/// HTTP connection, where the stream a request arrives on names the call.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_clients_each_get_their_own_sampling_request() {
    let port = free_port();
    let _upstream = start_everything_on("streamableHttp", port).await;
    let shared_http = format!(
        "providers:\n  - {{ name: everything, kind: mcp, url: \"http://127.0.0.1:{port}/mcp\" }}\n"
    );
    for (label, providers) in [
        (
            "per-session stdio",
            everything(", session_per_client: true"),
        ),
        ("shared streamable HTTP", shared_http),
    ] {
        let gw = Gateway::start("sampling", &providers).await;
        let barrier = tempfile::tempdir().unwrap();
        let run = |name: &str| {
            run_python(vec![
                fixture("mcp_sampling_client.py"),
                gw.url("/mcp"),
                name.to_owned(),
                barrier.path().display().to_string(),
                "2".into(),
            ])
        };
        let (ada, bob) = tokio::join!(run("ada"), run("bob"));
        for (name, seen) in [("ada", ada), ("bob", bob)] {
            assert_eq!(
                seen["asked"],
                serde_json::json!([format!(
                    "Resource trigger-sampling-request context: prompt of {name}"
                )]),
                "{label}: {name} was asked its own request: {seen}"
            );
            assert_eq!(seen["is_error"], false, "{label}: {seen}");
            assert!(
                seen["text"]
                    .as_str()
                    .unwrap()
                    .contains(&format!("answer of {name}")),
                "{label}: {name}'s call got its own answer: {seen}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn clients_of_both_protocol_eras_list_and_call_tools() {
    let gw = Gateway::start("eras", &everything("")).await;
    for (mode, version) in [
        ("legacy", "2025-11-25"),
        ("auto", "2026-07-28"),
        ("2026-07-28", "2026-07-28"),
    ] {
        let seen = run_python(vec![fixture("mcp_eras.py"), gw.url("/mcp"), mode.into()]).await;
        assert_eq!(seen["protocol_version"], version, "{mode}: {seen}");
        assert!(
            seen["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "echo"),
            "{mode}: {seen}"
        );
        assert_eq!(seen["echo"], format!("Echo: era {mode} ✓"), "{mode}");
        assert_eq!(seen["invalid_is_error"], true, "{mode}: SEP-1303");
        assert_eq!(seen["invalid_code"], "INVALID_ARGUMENTS", "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_2026_request_whose_headers_disagree_with_its_body_is_refused() {
    let gw = Gateway::start("mismatch", &everything("")).await;
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "echo", "arguments": {"message": "x"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "by-hand", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let send = |method: &'static str, name: &'static str| {
        reqwest::Client::new()
            .post(gw.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", method)
            .header("mcp-name", name)
            .json(&body)
            .send()
    };
    let agreeing = send("tools/call", "echo").await.unwrap();
    assert_eq!(
        agreeing.status(),
        200,
        "the same request with matching headers runs"
    );
    let answer = agreeing.text().await.unwrap();
    assert!(answer.contains("Echo: x"), "{answer}");
    for (method, name) in [("tools/list", "echo"), ("tools/call", "get-sum")] {
        let refused = send(method, name).await.unwrap();
        assert_eq!(refused.status(), 400, "{method} {name}");
        let text = refused.text().await.unwrap();
        let error: Value = serde_json::from_str(&text)
            .ok()
            .or_else(|| {
                text.lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .find_map(|d| serde_json::from_str(d.trim()).ok())
            })
            .unwrap_or_else(|| panic!("{text}"));
        assert_eq!(error["error"]["code"], -32020, "{method} {name}: {error}");
    }
}

/// With `session_per_client`, a session's own upstream connection (here a child process)
/// opens at its first call and closes when the session ends.
#[tokio::test(flavor = "multi_thread")]
async fn a_sessions_own_upstream_connection_ends_with_the_session() {
    let gw = Gateway::start("own", &everything(", session_per_client: true")).await;
    let shared = gw.child_pids();
    assert_eq!(shared.len(), 1, "the shared connection's child: {shared:?}");
    let session = McpSession::open(&gw).await;
    let echo = session
        .ask(
            serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "own"}}}),
        )
        .await;
    assert_eq!(echo["result"]["content"][0]["text"], "Echo: own", "{echo}");
    let own: Vec<u32> = gw
        .child_pids()
        .into_iter()
        .filter(|p| !shared.contains(p))
        .collect();
    assert_eq!(own.len(), 1, "one child for the session: {own:?}");
    let ended = session
        .client
        .delete(&session.url)
        .header("mcp-session-id", &session.id)
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
    eventually(
        std::time::Duration::from_secs(15),
        "the session's child gone",
        || async { (!alive(own[0])).then_some(()) },
    )
    .await;
    assert!(alive(shared[0]), "the shared connection stays");
}

/// An elicitation reaches the client through the gateway as the server wrote it, over every
/// transport the gateway reaches a server by. The server is written with the official
/// TypeScript SDK in the handshake era; its requested schemas hold the five enum forms of
/// SEP-1330 (untitled and titled single-select, legacy `enumNames`, untitled and titled
/// multi-select), and only defaults (SEP-1034); one is asked on the call's own stream, one on no
/// call's (Streamable HTTP's standalone stream). A client written with the same SDK sees each
/// request as it came off the wire: the schema's text is the same directly and through the
/// gateway, key for key in the server's order, and so is the tool's answer.
#[tokio::test(flavor = "multi_thread")]
async fn an_elicitation_reaches_the_client_as_the_server_wrote_it_over_every_transport() {
    let (server, client) = (
        fixture("enum_elicitation_server.mjs"),
        fixture("enum_elicitation_client.mjs"),
    );
    let (http_port, sse_port) = (free_port(), free_port());
    let _http = start_node_server_on("enum_elicitation_server.mjs", &["http"], http_port).await;
    let _sse = start_node_server_on("enum_elicitation_server.mjs", &["sse"], sse_port).await;
    let http_url = format!("http://127.0.0.1:{http_port}/mcp");
    let sse_url = format!("http://127.0.0.1:{sse_port}/sse");
    let transports = [
        (
            "stdio",
            vec!["stdio", "node", &server, "stdio"],
            format!("command: node, args: [\"{server}\", stdio]"),
        ),
        (
            "Streamable HTTP",
            vec!["http", &http_url],
            format!("url: \"{http_url}\""),
        ),
        (
            "legacy SSE",
            vec!["sse", &sse_url],
            format!("url: \"{sse_url}\""),
        ),
    ];
    for (transport, direct_args, entry) in transports {
        let mut args = vec![client.clone()];
        args.extend(direct_args.iter().map(|a| a.to_string()));
        let direct = run_node(args).await;
        // What the comparison rests on: each form is in the schema the client was asked with.
        let enums = direct["ask_enums"]["requestedSchema_text"]
            .as_str()
            .unwrap();
        for form in [
            r#""enum":["red","green","blue"]"#,
            r#""oneOf":[{"const":"s","title":"Small"}"#,
            r#""enumNames":["Option A","Option B"]"#,
            r#""items":{"type":"string","enum":["x","y","z"]}"#,
            r#""items":{"anyOf":[{"const":"apple","title":"Apple"}"#,
        ] {
            assert!(enums.contains(form), "{transport}: {form} not in {enums}");
        }
        let gw = Gateway::start(
            "enums",
            &format!("providers:\n  - {{ name: asks, kind: mcp, {entry} }}\n"),
        )
        .await;
        let through = run_node(vec![client.clone(), "http".into(), gw.url("/mcp")]).await;
        for (tool, seen) in direct.as_object().unwrap() {
            let got = &through[tool];
            for part in ["requestedSchema_text", "message", "mode", "result"] {
                assert_eq!(
                    got[part], seen[part],
                    "{transport}: {tool}'s {part} differs through the gateway"
                );
            }
            // rmcp gives every request the gateway sends a progress token in `_meta`
            // (docs/mcp.md); nothing else is added, dropped or moved.
            let keys: Vec<&Value> = got["params_keys"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|k| *k != "_meta")
                .collect();
            assert_eq!(
                keys,
                seen["params_keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .collect::<Vec<_>>(),
                "{transport}: {tool}"
            );
        }
    }
}

/// A server's request that cannot be delivered is answered with an error, and the log says so:
/// the server asks for input 100 ms after its call has ended, when no client call is in flight
/// on the connection; the gateway waits for a call to come (2 s), then answers the server with
/// an error it can see, and logs a warning naming the server and the method.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_no_client_can_be_asked_is_answered_with_an_error_and_logged() {
    let server = fixture("enum_elicitation_server.mjs");
    let gw = Gateway::start(
        "enums",
        &format!(
            "providers:\n  - {{ name: asks, kind: mcp, command: node, args: [\"{server}\", stdio] }}\n"
        ),
    )
    .await;
    let asked = call(&gw, "ask_later", serde_json::json!({})).await;
    assert_eq!(asked.status, 200, "{:?}", asked.body);
    let warned = eventually(Duration::from_secs(20), "the warning", || async {
        gw.log_lines().into_iter().find(|line| {
            line["level"] == "WARN"
                && line["method"] == "elicitation/create"
                && line["provider"] == "asks"
        })
    })
    .await;
    assert!(
        warned["error"]
            .as_str()
            .unwrap()
            .contains("no client call is in flight"),
        "{warned}"
    );
    let outcome = call(&gw, "last_outcome", serde_json::json!({})).await;
    let text = outcome.body["data"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.starts_with("error: ") && text.contains("no client call is in flight"),
        "the server got: {text}"
    );
}
