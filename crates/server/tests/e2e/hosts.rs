//! Host and Origin on every route (DNS-rebinding and cross-site protection): a foreign `Host`
//! is refused with 403 `FORBIDDEN` on every route, REST and MCP, before the API key is asked
//! for; the loopback names and the bind address pass; a foreign browser `Origin` may read (CORS
//! keeps the answer from the page) but not call; a non-loopback bind must name its hosts; and a
//! real browser on a DNS-rebinding page (headless chromium, `tests/fixtures/rebinding_site.py`)
//! can read and call nothing.

use std::process::Command;

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::*;

/// Every route of a service, with what a client would send to it.
fn routes() -> Vec<(Method, &'static str, Option<Value>)> {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    vec![
        (Method::GET, "/tools", None),
        (
            Method::POST,
            "/call-tool",
            Some(json!({"tool": "echo", "arguments": {"message": "hi"}})),
        ),
        (Method::POST, "/tools/echo", Some(json!({"message": "hi"}))),
        (Method::GET, "/health", None),
        (Method::GET, "/openapi.json", None),
        (Method::GET, "/docs/", None),
        (Method::GET, "/metrics", None),
        (Method::POST, "/mcp", Some(initialize.clone())),
        (Method::DELETE, "/mcp", None),
        (Method::GET, "/sse", None),
        (Method::POST, "/messages?sessionId=abc", Some(initialize)),
        (Method::GET, "/no/such/route", None),
    ]
}

async fn send(
    gw: &Gateway,
    method: Method,
    path: &str,
    body: Option<&Value>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .request(method, gw.url(path))
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    request.send().await.unwrap()
}

/// A 403 `FORBIDDEN` envelope whose message names `what`.
async fn assert_forbidden(response: reqwest::Response, what: &str, context: &str) {
    let answer = Answer::from(response).await;
    assert_eq!(answer.status, 403, "{context}: {}", answer.body);
    answer.assert_envelope();
    assert_eq!(answer.code(), "FORBIDDEN", "{context}");
    let error = answer.body["error"].as_str().unwrap();
    assert!(error.contains(what), "{context}: {error}");
}

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route_and_loopback_hosts_pass() {
    let extra = format!(
        "monitoring: {{ metrics_enabled: true }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("hosts", &extra).await;
    let port = gw.port;
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.2:{port}"),
    ] {
        for (method, path, body) in routes() {
            let context = format!("{method} {path} with Host {host}");
            let response = send(&gw, method, path, body.as_ref(), &[("host", &host)]).await;
            assert_forbidden(response, &format!("Host '{host}'"), &context).await;
        }
    }
    // What clients on this machine write (the bind address with its port among them) passes.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost.:{port}"),
        format!("[::1]:{port}"),
    ] {
        let tools =
            Answer::from(send(&gw, Method::GET, "/tools", None, &[("host", &host)]).await).await;
        assert_eq!(tools.status, 200, "Host {host}: {}", tools.body);
        let called = Answer::from(
            send(
                &gw,
                Method::POST,
                "/tools/echo",
                Some(&json!({"message": "hi"})),
                &[("host", &host)],
            )
            .await,
        )
        .await;
        assert_eq!(called.status, 200, "Host {host}: {}", called.body);
        let health = send(&gw, Method::GET, "/health", None, &[("host", &host)]).await;
        assert_eq!(health.status(), 200, "Host {host}");
        let mcp = send(
            &gw,
            Method::POST,
            "/mcp",
            Some(&routes()[7].2.clone().unwrap()),
            &[("host", &host)],
        )
        .await;
        assert_eq!(mcp.status(), 200, "Host {host}");
        assert!(mcp.headers().contains_key("mcp-session-id"));
    }
    // Refusals are counted and logged under their code, and no tool ran for them.
    let metrics = send(&gw, Method::GET, "/metrics", None, &[])
        .await
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("code=\"FORBIDDEN\",route=\"/call-tool\",status=\"403\""),
        "{metrics}"
    );
    let calls: Vec<Value> = gw
        .log_lines()
        .into_iter()
        .filter(|l| l["code"] == "FORBIDDEN")
        .collect();
    assert!(
        calls.len() >= 4 * routes().len(),
        "{} refusal log lines",
        calls.len()
    );
    let echoed = metrics
        .lines()
        .filter(|l| {
            l.contains("tool=\"echo\"") && l.starts_with("mcp_http_gateway_tool_calls_total")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>();
    assert_eq!(
        echoed, 4.0,
        "only the 4 allowed calls of echo ran:\n{metrics}"
    );
}

#[tokio::test]
async fn the_host_is_judged_before_the_api_key() {
    let extra = format!(
        "security: {{ api_keys_enabled: true, api_keys_env: MHG_HOSTS_KEYS }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let mut gw = Gateway::spawn_env("hosts-keyed", &extra, &[("MHG_HOSTS_KEYS", "k-one")]);
    gw.wait_running().await;
    // A rebinding page does not have the key; it learns nothing from a 401 either.
    let response = send(
        &gw,
        Method::GET,
        "/tools",
        None,
        &[("host", "evil.example")],
    )
    .await;
    assert_forbidden(response, "Host 'evil.example'", "no key").await;
    let response = send(
        &gw,
        Method::GET,
        "/tools",
        None,
        &[("host", "evil.example"), ("x-api-key", "k-one")],
    )
    .await;
    assert_forbidden(response, "Host 'evil.example'", "with the key").await;
    let keyless = Answer::from(send(&gw, Method::GET, "/tools", None, &[]).await).await;
    assert_eq!(keyless.code(), "UNAUTHORIZED");
}

#[tokio::test]
async fn a_foreign_origin_may_read_but_not_call() {
    let gw = Gateway::start(
        "origins",
        &format!("providers:\n{}", everything_provider("everything")),
    )
    .await;
    let evil = ("origin", "http://evil.example");
    let mcp_session = McpSession::open(&gw).await;
    let (_stream, messages) = open_sse(&gw).await;
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    let state_changing = [
        (
            Method::POST,
            "/call-tool".to_owned(),
            Some(json!({"tool": "echo", "arguments": {"message": "hi"}})),
        ),
        (
            Method::POST,
            "/tools/echo".to_owned(),
            Some(json!({"message": "hi"})),
        ),
        (Method::POST, "/mcp".to_owned(), Some(ping.clone())),
        (Method::DELETE, "/mcp".to_owned(), None),
        (Method::GET, "/mcp".to_owned(), None),
        (Method::GET, "/sse".to_owned(), None),
        (Method::POST, messages.clone(), Some(ping.clone())),
    ];
    let session = ("mcp-session-id", mcp_session.id.as_str());
    for (method, path, body) in &state_changing {
        let context = format!("{method} {path} from a foreign Origin");
        let response = send(&gw, method.clone(), path, body.as_ref(), &[evil, session]).await;
        assert_forbidden(
            response,
            "Origin 'http://evil.example' may not send",
            &context,
        )
        .await;
        let null = send(
            &gw,
            method.clone(),
            path,
            body.as_ref(),
            &[("origin", "null"), session],
        )
        .await;
        assert_eq!(null.status(), 403, "{method} {path} from Origin: null");
    }
    // The session was not ended by the refused DELETE, and the same requests pass from a
    // loopback page.
    let pong = mcp_session.ask(ping.clone()).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
    let local = ("origin", "http://localhost:5173");
    for (method, path, body) in &state_changing[..3] {
        let response = send(&gw, method.clone(), path, body.as_ref(), &[local, session]).await;
        assert_eq!(response.status(), 200, "{method} {path} from {local:?}");
    }
    // A cross-origin read is answered; CORS keeps it from the page.
    for path in ["/tools", "/health", "/openapi.json"] {
        let read = send(&gw, Method::GET, path, None, &[evil]).await;
        assert_eq!(read.status(), 200, "GET {path}");
        assert!(
            !read.headers().contains_key("access-control-allow-origin"),
            "GET {path}"
        );
        let local_read = send(&gw, Method::GET, path, None, &[local]).await;
        assert_eq!(
            local_read.headers()["access-control-allow-origin"],
            "http://localhost:5173"
        );
    }
}

#[tokio::test]
async fn explicit_origins_decide_both_cors_and_calls() {
    let extra = format!(
        "security: {{ allowed_origins: [\"https://app.example\"], rate_limit: 100000 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("origins-listed", &extra).await;
    let body = json!({"message": "hi"});
    let app = send(
        &gw,
        Method::POST,
        "/tools/echo",
        Some(&body),
        &[("origin", "https://app.example")],
    )
    .await;
    assert_eq!(app.status(), 200);
    assert_eq!(
        app.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let loopback = send(
        &gw,
        Method::POST,
        "/tools/echo",
        Some(&body),
        &[("origin", "http://localhost:5173")],
    )
    .await;
    assert_forbidden(
        loopback,
        "Origin 'http://localhost:5173'",
        "loopback no longer listed",
    )
    .await;
}

fn write_config(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("wide.yaml");
    std::fs::write(&config, text).unwrap();
    (dir, config)
}

#[tokio::test]
async fn a_non_loopback_bind_must_name_its_hosts() {
    let port = free_port();
    let (_dir, config) = write_config(&format!(
        "service:\n  name: wide\n  port: {port}\n  host: 0.0.0.0\n"
    ));
    for command in ["serve", "check-config"] {
        let mut args = vec![command];
        if command == "serve" {
            args.push("--config");
        }
        let out = Command::new(BIN).args(&args).arg(&config).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{command}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "{}:4:9: service.host '0.0.0.0' is not a loopback address, so security.allowed_hosts must be set",
                config.display()
            )),
            "{command}: {stderr}"
        );
    }
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "nothing listens"
    );

    // Named, the service starts, and the list replaces the defaults.
    let text = format!(
        "service:\n  name: wide\n  port: {port}\n  host: 0.0.0.0\nsecurity:\n  allowed_hosts: [gateway.example, \"127.0.0.1:{port}\"]\n"
    );
    let (dir, config) = write_config(&text);
    let mut gw = Gateway::serve(config, port, dir, &[]);
    gw.wait_running().await;
    let named = send(
        &gw,
        Method::GET,
        "/tools",
        None,
        &[("host", &format!("gateway.example:{port}"))],
    )
    .await;
    assert_eq!(named.status(), 200);
    let unnamed = send(
        &gw,
        Method::GET,
        "/tools",
        None,
        &[("host", &format!("localhost:{port}"))],
    )
    .await;
    assert_forbidden(unnamed, "Host 'localhost:", "not in the explicit list").await;
}

#[tokio::test]
async fn the_old_mcp_keys_still_work_with_a_warning() {
    let port = free_port();
    let (dir, config) = write_config(&format!(
        "service:\n  name: old\n  port: {port}\nmcp:\n  allowed_hosts: [gateway.example]\n"
    ));
    let out = Command::new(BIN)
        .arg("check-config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "warning: {}:5:18: mcp.allowed_hosts is deprecated: it now applies to every route",
            config.display()
        )),
        "{stderr}"
    );
    let mut gw = Gateway::spawn_with(
        vec![
            "serve".into(),
            "--config".into(),
            config.to_string_lossy().into_owned(),
        ],
        port,
        dir,
        config,
        &[],
    );
    // /health on 127.0.0.1 is refused now (the old list replaces the defaults): wait by Host.
    let url = gw.url("/tools");
    let ready = eventually(
        std::time::Duration::from_secs(30),
        "the service answers",
        || {
            let request = reqwest::Client::new()
                .get(&url)
                .header("host", "gateway.example")
                .send();
            async move { request.await.ok().filter(|r| r.status() == 200) }
        },
    )
    .await;
    assert_eq!(ready.status(), 200);
    let refused = send(&gw, Method::GET, "/tools", None, &[]).await;
    assert_eq!(refused.status(), 403, "the old key applies to REST too");
    assert!(gw.logs().contains("mcp.allowed_hosts is deprecated"));
    gw.signal(15);
    let _ = gw.wait_exit(std::time::Duration::from_secs(10)).await;
}

/// What a page read, in headless chromium that resolves the attacker's names to 127.0.0.1:
/// the page's `{name: {status, body}}`.
async fn browse(url: String) -> Value {
    let out =
        tokio::task::spawn_blocking(move || {
            Command::new("timeout")
            .args(["120", "chromium", "--headless", "--no-sandbox", "--disable-gpu"])
            .arg("--host-resolver-rules=MAP evil.example 127.0.0.1, MAP listed.example 127.0.0.1")
            .args(["--virtual-time-budget=10000", "--dump-dom"])
            .arg(&url)
            .output()
            .unwrap()
        })
        .await
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let text = dom
        .split_once("<pre id=\"out\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(text, _)| {
            text.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .unwrap_or_else(|| {
            panic!(
                "no output in the page:\n{dom}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The attacker's site on `port`, passing every request but its page to the gateway.
async fn rebinding_site(port: u16, gateway: u16) -> testkit::Killed {
    let site = testkit::Killed(
        Command::new(venv_python())
            .args([
                fixture("rebinding_site.py"),
                port.to_string(),
                gateway.to_string(),
            ])
            .spawn()
            .unwrap(),
    );
    eventually(
        std::time::Duration::from_secs(20),
        "the rebinding site",
        || async move { reqwest::get(format!("http://127.0.0.1:{port}/")).await.ok() },
    )
    .await;
    site
}

#[tokio::test]
async fn a_rebinding_page_in_a_real_browser_can_read_and_call_nothing() {
    let (attacker, listed) = (free_port(), free_port());
    // The control: the same page under a name the service lists (as Host and as Origin) reads
    // and calls, so the browser, the page and the pass-through work and the refusals below are
    // the check's.
    let extra = format!(
        "security: {{ allowed_hosts: [localhost, 127.0.0.1, \"listed.example:{listed}\"], allowed_origins: [\"http://listed.example:{listed}\"], rate_limit: 100000 }}\nproviders:\n{}",
        everything_provider("everything")
    );
    let gw = Gateway::start("rebound", &extra).await;
    let _attacker_site = rebinding_site(attacker, gw.port).await;
    let _listed_site = rebinding_site(listed, gw.port).await;

    let read = browse(format!("http://evil.example:{attacker}/")).await;
    for name in ["list", "health", "call", "call_by_name"] {
        assert_eq!(read[name]["status"], 403, "{name}: {read}");
        let body: Value = serde_json::from_str(read[name]["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["code"], "FORBIDDEN", "{name}: {body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains(&format!("Host 'evil.example:{attacker}'")),
            "{body}"
        );
    }
    let control = browse(format!("http://listed.example:{listed}/")).await;
    for name in ["list", "health", "call", "call_by_name"] {
        assert_eq!(control[name]["status"], 200, "{name}: {control}");
    }
    assert!(
        control["call"]["body"]
            .as_str()
            .unwrap()
            .contains("Echo: rebound"),
        "{control}"
    );
}
