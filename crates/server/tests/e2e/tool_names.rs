//! The names tools are served under, against real MCP servers: two servers offering one name
//! under each `on_name_clash` policy, a clash that appears while running (a server that adds a
//! tool and sends list_changed), `expose` (include, exclude, rename, describe) with
//! `tool_prefix` and `identifier_names` over REST and MCP, and `--config-dir` with a service
//! that cannot start while the others serve.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

fn names(tools: &Answer) -> Vec<String> {
    tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// server-everything over stdio with extra YAML fields in its entry.
fn everything_with(name: &str, fields: &str) -> String {
    format!(
        "  - {{ name: {name}, kind: mcp, command: node, args: [\"{}\", stdio], {fields} }}\n",
        everything_js()
    )
}

fn dynamic_provider(name: &str) -> String {
    format!(
        "  - {{ name: {name}, kind: mcp, command: \"{}\", args: [\"{}\"] }}\n",
        venv_python(),
        fixture("paged_dynamic_server.py")
    )
}

/// The gateway on a config whose `service:` section has `fields` besides name and port.
fn spawn_service(name: &str, fields: &str, extra: &str) -> Gateway {
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join(format!("{name}.yaml"));
    let text = service_yaml(name, port, extra).replacen(
        &format!("port: {port} }}"),
        &format!("port: {port}, {fields} }}"),
        1,
    );
    std::fs::write(&config, text).unwrap();
    let args = vec![
        "serve".into(),
        "--config".into(),
        config.to_string_lossy().into_owned(),
    ];
    Gateway::spawn_with(args, port, dir, config, &[])
}

async fn mcp_tool_names(gw: &Gateway) -> Vec<String> {
    let mcp = McpSession::open(gw).await;
    let listed = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn prefix_serves_both_clashing_tools_under_their_providers_names() {
    let extra = format!(
        "providers:\n{}{}",
        everything_with("ev-one", "expose: { include: [echo, get-sum] }"),
        everything_with("two", "expose: { include: [echo] }")
    );
    let mut gw = spawn_service("clash", "on_name_clash: prefix", &extra);
    gw.wait_running().await;

    let tools = get(&gw, "/tools").await;
    assert_eq!(names(&tools), ["ev_one_echo", "get-sum", "two_echo"]);
    for (tool, _) in [("ev_one_echo", 1), ("two_echo", 2)] {
        let a = call(&gw, tool, json!({"message": tool})).await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(
            a.body["data"]["content"][0]["text"],
            format!("Echo: {tool}")
        );
    }
    assert_eq!(
        call(&gw, "echo", json!({"message": "x"})).await.code(),
        "TOOL_NOT_FOUND"
    );
    let mut listed = mcp_tool_names(&gw).await;
    listed.sort();
    assert_eq!(listed, ["ev_one_echo", "get-sum", "two_echo"]);

    let health = get(&gw, "/health").await;
    assert_eq!(health.status, 200);
    assert_eq!(
        health.report()["conflicts"],
        json!([{"tool": "echo", "providers": ["ev-one", "two"],
                "served": ["ev_one_echo", "two_echo"], "resolution": "prefixed"}])
    );
    assert_eq!(
        health.report()["status"],
        "healthy",
        "a settled clash leaves it healthy"
    );
    // `get-sum` is not an identifier: kept as the server names it, with a warning.
    let warned = gw.log_lines().into_iter().any(|l| {
        l["message"]
            .as_str()
            .is_some_and(|m| m.contains("tool names that are not identifiers"))
            && l["tools"] == "get-sum"
    });
    assert!(warned, "{}", gw.logs());
}

#[tokio::test]
async fn a_clash_appearing_while_running_is_reported_and_settled_by_the_policy() {
    let extra = format!(
        "providers:\n{}{}",
        everything_with("everything", "expose: { include: [echo] }"),
        dynamic_provider("dyn")
    );
    let mut gw = Gateway::start("late", &extra).await;
    assert!(get(&gw, "/health").await.report()["conflicts"] == json!([]));

    // The second server now offers `echo` too and says so (notifications/tools/list_changed).
    let added = call(&gw, "add_tool", json!({"name": "echo"})).await;
    assert_eq!(added.status, 200, "{}", added.body);
    let health = eventually(Duration::from_secs(15), "the clash in /health", || async {
        let health = get(&gw, "/health").await;
        (health.report()["conflicts"] != json!([])).then_some(health)
    })
    .await;
    // on_name_clash: error (the default): the first provider keeps it, the clash is reported.
    assert_eq!(
        health.report()["conflicts"],
        json!([{"tool": "echo", "providers": ["everything", "dyn"], "served": ["echo"],
                "resolution": "kept_first"}])
    );
    assert_eq!(health.report()["status"], "degraded");
    let a = call(&gw, "echo", json!({"message": "still"})).await;
    assert_eq!(a.body["data"]["content"][0]["text"], "Echo: still");
    let logs = gw.logs();
    assert!(
        logs.contains("tool 'echo' is offered by both provider 'everything' and provider 'dyn'; the first provider keeps it"),
        "{logs}"
    );

    // The same clash under `prefix` (a reload; both providers keep running): both served.
    let text = std::fs::read_to_string(&gw.config).unwrap().replacen(
        "service: {",
        "service: { on_name_clash: prefix,",
        1,
    );
    std::fs::write(&gw.config, text).unwrap();
    gw.signal(libc::SIGHUP);
    let tools = eventually(Duration::from_secs(15), "both served", || async {
        let tools = get(&gw, "/tools").await;
        names(&tools)
            .contains(&"dyn_echo".to_owned())
            .then_some(tools)
    })
    .await;
    let served = names(&tools);
    assert!(
        served.contains(&"everything_echo".to_owned()) && !served.contains(&"echo".to_owned()),
        "{served:?}"
    );
    let a = call(&gw, "dyn_echo", json!({"text": "mine"})).await;
    assert_eq!(
        a.body["data"]["content"][0]["text"], "echo:mine",
        "{}",
        a.body
    );
    let a = call(&gw, "everything_echo", json!({"message": "theirs"})).await;
    assert_eq!(a.body["data"]["content"][0]["text"], "Echo: theirs");
    let health = get(&gw, "/health").await;
    assert_eq!(health.report()["conflicts"][0]["resolution"], "prefixed");
    assert_eq!(health.report()["status"], "healthy");
    let listed = mcp_tool_names(&gw).await;
    assert!(listed.contains(&"dyn_echo".to_owned()), "{listed:?}");
    gw.signal(libc::SIGTERM);
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(0));
}

#[tokio::test]
async fn expose_and_names_apply_over_rest_and_mcp() {
    let entry = everything_with(
        "everything",
        "tool_prefix: ev_, expose: { include: ['get-*', echo], exclude: [get-env], rename: { echo: say }, describe: { get-sum: Adds a and b. } }, limits: { tools: [{ tool: echo, rate_limit: 2 }] }",
    );
    let mut gw = spawn_service(
        "shown",
        "identifier_names: true",
        &format!("providers:\n{entry}"),
    );
    gw.wait_running().await;

    let tools = get(&gw, "/tools").await;
    let served = names(&tools);
    assert!(served.contains(&"ev_say".to_owned()), "{served:?}");
    assert!(served.contains(&"ev_get_sum".to_owned()), "{served:?}");
    for hidden in [
        "echo",
        "ev_echo",
        "get-env",
        "ev_get_env",
        "ev_get-sum",
        "add",
        "ev_add",
    ] {
        assert!(
            !served.contains(&hidden.to_owned()),
            "{hidden} in {served:?}"
        );
    }
    assert!(
        served
            .iter()
            .all(|n| n.starts_with("ev_") && !n.contains('-')),
        "{served:?}"
    );
    let sum = tools.body["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ev_get_sum")
        .unwrap();
    assert_eq!(sum["description"], "Adds a and b.");

    // Called by the served name; the server is asked by its own (`echo`, `get-sum`).
    let a = call(&gw, "ev_say", json!({"message": "hi"})).await;
    assert_eq!(
        a.body["data"]["content"][0]["text"], "Echo: hi",
        "{}",
        a.body
    );
    let a = call(&gw, "ev_get_sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a = post_json(&gw, "/tools/ev_say", &json!({"message": "path"})).await;
    assert_eq!(a.body["data"]["content"][0]["text"], "Echo: path");
    // Hidden tools cannot be called, by any name.
    for hidden in ["get-env", "ev_get_env", "echo"] {
        assert_eq!(
            call(&gw, hidden, json!({})).await.code(),
            "TOOL_NOT_FOUND",
            "{hidden}"
        );
    }
    // The provider's limits rule names `echo` (the upstream name) and limits `ev_say`.
    let limited = call(&gw, "ev_say", json!({"message": "3rd"})).await;
    assert_eq!(limited.code(), "RATE_LIMITED", "{}", limited.body);

    let mcp = McpSession::open(&gw).await;
    let listed = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    let mcp_tools = listed["result"]["tools"].as_array().unwrap();
    let mut mcp_names: Vec<&str> = mcp_tools
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    mcp_names.sort();
    assert_eq!(
        mcp_names,
        served.iter().map(String::as_str).collect::<Vec<_>>()
    );
    let sum = mcp_tools
        .iter()
        .find(|t| t["name"] == "ev_get_sum")
        .unwrap();
    assert_eq!(sum["description"], "Adds a and b.");
    let answer = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "ev_get_sum", "arguments": {"a": 20, "b": 22}}}))
        .await;
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42"),
        "{answer}"
    );
    let answer = mcp
        .ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                    "params": {"name": "get-env", "arguments": {}}}))
        .await;
    assert!(
        answer["error"].is_object() || answer["result"]["isError"] == true,
        "{answer}"
    );

    let doc: Value = reqwest::get(gw.url("/openapi.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["paths"]["/tools/ev_say"]["post"].is_object());
    assert!(doc["paths"]["/tools/echo"].is_null());

    // identifier_names: every bridged name was mapped, none kept with a warning.
    assert!(!gw.logs().contains("not identifiers"), "{}", gw.logs());

    // A reload changes names without restarting the server (no new child).
    let children = gw.child_pids();
    let text = std::fs::read_to_string(&gw.config)
        .unwrap()
        .replace("say", "speak");
    std::fs::write(&gw.config, text).unwrap();
    gw.signal(libc::SIGHUP);
    eventually(Duration::from_secs(15), "ev_speak served", || async {
        names(&get(&gw, "/tools").await)
            .contains(&"ev_speak".to_owned())
            .then_some(())
    })
    .await;
    assert_eq!(gw.child_pids(), children, "the server kept running");
    gw.signal(libc::SIGTERM);
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(0));
}

/// A folder of services: `good` (server-everything), and `bad` whose two providers both offer
/// `echo` under `on_name_clash: error`.
fn folder(good_port: u16, bad_port: u16) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("good.yaml"),
        service_yaml(
            "good",
            good_port,
            &format!(
                "providers:\n{}",
                everything_with("everything", "expose: { include: [echo] }")
            ),
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        service_yaml(
            "bad",
            bad_port,
            &format!(
                "providers:\n{}{}",
                everything_with("first", "expose: { include: [echo] }"),
                everything_with("second", "expose: { include: [echo] }")
            ),
        ),
    )
    .unwrap();
    dir
}

fn serve_dir(dir: &tempfile::TempDir, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "serve".to_owned(),
        "--config-dir".to_owned(),
        dir.path().to_string_lossy().into_owned(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

#[tokio::test]
async fn under_config_dir_a_service_that_cannot_start_leaves_the_others_serving() {
    let (good, bad) = (free_port(), free_port());
    let dir = folder(good, bad);
    let config = dir.path().join("good.yaml");
    let mut gw = Gateway::spawn_with(
        serve_dir(&dir, &[]),
        good,
        tempfile::tempdir().unwrap(),
        config,
        &[],
    );
    gw.wait_running().await;
    let a = call(&gw, "echo", json!({"message": "alive"})).await;
    assert_eq!(a.body["data"]["content"][0]["text"], "Echo: alive");
    eventually(Duration::from_secs(30), "the failure in the log", || async {
        gw.logs()
            .contains("service not started: service 'bad': tool 'echo' is offered by both provider 'first' and provider 'second'")
            .then_some(())
    })
    .await;
    // The failed service's port is closed; its providers' children are gone.
    eventually(Duration::from_secs(10), "bad's port closed", || async {
        reqwest::get(format!("http://127.0.0.1:{bad}/health"))
            .await
            .is_err()
            .then_some(())
    })
    .await;
    eventually(Duration::from_secs(10), "one child left", || async {
        (gw.child_pids().len() == 1).then_some(())
    })
    .await;
    assert_eq!(
        call(&gw, "echo", json!({"message": "still"})).await.status,
        200
    );
    gw.signal(libc::SIGTERM);
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(0));
}

#[tokio::test]
async fn strict_stops_everything_and_none_started_exits_1() {
    // --strict: the clash in `bad` stops `good` too.
    let (good, bad) = (free_port(), free_port());
    let dir = folder(good, bad);
    let config = dir.path().join("good.yaml");
    let mut gw = Gateway::spawn_with(
        serve_dir(&dir, &["--strict"]),
        good,
        tempfile::tempdir().unwrap(),
        config,
        &[],
    );
    assert_eq!(gw.wait_exit(Duration::from_secs(60)).await.code(), Some(1));
    assert!(
        gw.logs().contains("offered by both provider 'first'"),
        "{}",
        gw.logs()
    );

    // Without --strict, but no service can start (both ports taken): exit 1, each said.
    let taken = [
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
    ];
    let ports: Vec<u16> = taken
        .iter()
        .map(|t| t.local_addr().unwrap().port())
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for (name, port) in [("a", ports[0]), ("b", ports[1])] {
        std::fs::write(
            dir.path().join(format!("{name}.yaml")),
            service_yaml(name, port, "providers: []\n"),
        )
        .unwrap();
    }
    let config = dir.path().join("a.yaml");
    let mut gw = Gateway::spawn_with(
        serve_dir(&dir, &[]),
        ports[0],
        tempfile::tempdir().unwrap(),
        config,
        &[],
    );
    assert_eq!(gw.wait_exit(Duration::from_secs(30)).await.code(), Some(1));
    let logs = gw.logs();
    assert!(
        logs.contains("service 'a': cannot listen") && logs.contains("service 'b': cannot listen"),
        "{logs}"
    );
    assert!(logs.contains("no service started (2 could not"), "{logs}");
}
