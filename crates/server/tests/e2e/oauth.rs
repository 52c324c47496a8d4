//! `security.oauth` against a real OpenID Provider (oidc-provider, started on loopback by
//! tests/fixtures/oauth_issuer.mjs) and server-everything: the RFC 9728 metadata and the 401
//! challenge that lead the MCP Python SDK's OAuth client (authorization code + PKCE, and
//! client credentials) to a token and through /mcp; client-credentials tokens over REST,
//! JWT (the /mcp resource) and opaque (the service's base resource, RFC 7662 introspection);
//! scopes mapped to tools (lists and 403 insufficient_scope); every hand-made bad token a 401
//! and nothing else; the issuer down (cached keys keep working, new ones fail closed); the
//! subject in the access log, on server spans and among a tool's top callers, and no token in
//! any log; Swagger UI's Authorize button clicked in a real browser; an MCP client in a web
//! page of another origin.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::Killed;

use crate::harness::*;

const CLIENT_SECRET: &str = "gateway-client-secret-value";

/// The issuer: oidc-provider with an RSA and an EC key, JWT tokens for the service's /mcp
/// resource and another service's, opaque ones for the service's base URL.
struct Issuer {
    url: String,
    config: std::path::PathBuf,
    _dir: tempfile::TempDir,
    process: Option<Killed>,
}

/// A private JWK set (one RSA, one P-256 key), made by the venv's `cryptography` through PyJWT.
fn private_keys() -> Value {
    let script = r#"
import json
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
r = json.loads(RSAAlgorithm.to_jwk(rsa.generate_private_key(65537, 2048)))
e = json.loads(ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP256R1())))
r.update(kid="rsa1", alg="RS256", use="sig")
e.update(kid="ec1", alg="ES256", use="sig")
print(json.dumps({"keys": [r, e]}))
"#;
    let out = Command::new(venv_python())
        .args(["-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const SCOPES: &str = "tools:all tools:echo";

impl Issuer {
    /// JWT tokens for the service's /mcp resource and another service's, opaque ones for the
    /// service's base URL.
    async fn start(gateway_port: u16, other_port: u16) -> Issuer {
        let base = format!("http://127.0.0.1:{gateway_port}");
        Issuer::start_with(json!({
            format!("{base}/mcp"): {"scope": SCOPES, "format": "jwt"},
            base: {"scope": SCOPES, "format": "opaque"},
            format!("http://127.0.0.1:{other_port}"): {"scope": SCOPES, "format": "jwt"},
        }))
        .await
    }

    async fn start_with(resources: Value) -> Issuer {
        Issuer::start_configured(resources, None, &[]).await
    }

    /// [`Issuer::start_with`], with the resource a token request that names none gets
    /// (`default_resource`) and `clients` (oidc-provider client metadata) beside the tests'
    /// confidential one.
    async fn start_configured(
        resources: Value,
        default_resource: Option<&str>,
        clients: &[Value],
    ) -> Issuer {
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("issuer.json");
        let mut all_clients = vec![json!({
            "client_id": "gateway-tests", "client_secret": CLIENT_SECRET, "scope": SCOPES,
            "grant_types": ["client_credentials", "urn:ietf:params:oauth:grant-type:token-exchange"],
            "introspection": true
        })];
        all_clients.extend_from_slice(clients);
        let mut settings = json!({
            "port": port,
            "issuer": url,
            "jwks": private_keys(),
            "signingKid": "rsa1",
            "accessTokenTTL": 300,
            "resources": resources,
            "clients": all_clients,
        });
        if let Some(resource) = default_resource {
            settings["defaultResource"] = json!(resource);
        }
        std::fs::write(&config, settings.to_string()).unwrap();
        let mut issuer = Issuer {
            url,
            config,
            _dir: dir,
            process: None,
        };
        issuer.run(port).await;
        issuer
    }

    async fn run(&mut self, port: u16) {
        let child = Command::new("node")
            .args([
                fixture("oauth_issuer.mjs"),
                self.config.to_string_lossy().into_owned(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.process = Some(Killed(child));
        eventually(Duration::from_secs(30), "the issuer answering", || async {
            let url = format!("http://127.0.0.1:{port}/.well-known/openid-configuration");
            reqwest::get(url)
                .await
                .ok()
                .filter(|r| r.status().is_success())
                .map(|_| ())
        })
        .await;
    }

    fn stop(&mut self) {
        self.process = None;
    }

    /// Restarts the issuer on its port with one more key, `kid`, which signs from now on.
    async fn rotate_to(&mut self, kid: &str) {
        let mut config: Value =
            serde_json::from_str(&std::fs::read_to_string(&self.config).unwrap()).unwrap();
        let mut fresh = private_keys()["keys"][0].clone();
        fresh["kid"] = json!(kid);
        config["jwks"]["keys"]
            .as_array_mut()
            .unwrap()
            .insert(0, fresh);
        config["signingKid"] = json!(kid);
        std::fs::write(&self.config, config.to_string()).unwrap();
        let port = config["port"].as_u64().unwrap() as u16;
        self.stop();
        self.run(port).await;
    }

    /// A client-credentials token for `resource` with `scope`.
    async fn token(&self, resource: &str, scope: &str) -> String {
        let answer: Value = reqwest::Client::new()
            .post(format!("{}/token", self.url))
            .basic_auth("gateway-tests", Some(CLIENT_SECRET))
            .form(&[
                ("grant_type", "client_credentials"),
                ("resource", resource),
                ("scope", scope),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("{answer}"))
            .to_owned()
    }

    /// How many tokens the issuer gave by each grant (its /test/stats).
    async fn stats(&self) -> Value {
        reqwest::get(format!("{}/test/stats", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Hand-made tokens for `aud`, each wrong in one way (tests/fixtures/oauth_tokens.py).
    async fn crafted(&self, aud: &str) -> Value {
        self.crafted_for(aud, "alice").await
    }

    async fn crafted_for(&self, aud: &str, sub: &str) -> Value {
        let args = vec![
            fixture("oauth_tokens.py"),
            self.config.to_string_lossy().into_owned(),
            "--sub".into(),
            sub.into(),
            "--aud".into(),
            aud.into(),
            "--scope".into(),
            "tools:all".into(),
        ];
        run_python(args).await
    }
}

/// A service with server-everything behind `security.oauth` (introspection for opaque
/// tokens), on `port`.
fn start_gateway(port: u16, issuer: &str) -> Gateway {
    start_oauth(
        "guarded",
        port,
        issuer,
        &format!(
            "    scopes:\n      'tools:all': {{ description: every tool }}\n      'tools:echo': {{ tools: [echo] }}\n    introspection: {{ url: '{issuer}/token/introspection', client_id: gateway-tests, client_secret_env: MHG_CLIENT_SECRET }}\nproviders:\n{}",
            everything_provider("everything")
        ),
    )
}

async fn get_with(gw: &Gateway, path: &str, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(gw.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

async fn call_with(gw: &Gateway, token: &str, tool: &str, arguments: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(gw.url("/call-tool"))
        .bearer_auth(token)
        .json(&json!({"tool": tool, "arguments": arguments}))
        .send()
        .await
        .unwrap()
}

/// The SDK's OAuth client (tests/fixtures/oauth_mcp_client.py) against `gw`'s /mcp in a mode
/// (`mode` and its options), calling `echo` with `message`: what it printed. A failure shows
/// its stderr and the end of the gateway's log.
async fn sdk_call(gw: &Gateway, mode: &[&str], message: &str) -> Value {
    let mut args = vec![fixture("oauth_mcp_client.py"), gw.url("/mcp")];
    args.extend(mode.iter().map(|a| a.to_string()));
    args.extend(["--tool".into(), "echo".into(), "--args".into()]);
    args.push(json!({ "message": message }).to_string());
    let out = tokio::task::spawn_blocking(move || {
        Command::new(venv_python()).args(&args).output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let printed: Option<Value> = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok());
    match printed {
        Some(printed) if printed.get("error").is_none() => printed,
        _ => {
            let logs = gw.logs();
            panic!(
                "{stdout}\n{}\n{}",
                String::from_utf8_lossy(&out.stderr),
                &logs[logs.len().saturating_sub(6000)..]
            );
        }
    }
}

fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

fn tool_names(envelope: &Value) -> Vec<String> {
    envelope["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_real_issuer_s_tokens_open_rest_and_mcp_and_bad_ones_get_a_401_and_nothing_else() {
    let (port, other) = (free_port(), free_port());
    let mut issuer = Issuer::start(port, other).await;
    let mut gw = start_gateway(port, &issuer.url);
    gw.wait_running().await;
    let base = format!("http://127.0.0.1:{port}");

    // Without a token: 401 pointing at the metadata, for REST and for MCP.
    let refused = reqwest::get(gw.url("/tools")).await.unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(
        challenge(&refused),
        format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource\"")
    );
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "UNAUTHORIZED");
    let mcp = reqwest::Client::new()
        .post(gw.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(mcp.status(), 401);
    assert!(
        challenge(&mcp).ends_with("/.well-known/oauth-protected-resource/mcp\""),
        "{}",
        challenge(&mcp)
    );

    // The metadata (RFC 9728), both forms, public.
    for (path, resource) in [
        ("/.well-known/oauth-protected-resource", base.clone()),
        (
            "/.well-known/oauth-protected-resource/mcp",
            format!("{base}/mcp"),
        ),
    ] {
        let document: Value = reqwest::get(gw.url(path))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(document["resource"], resource.as_str(), "{document}");
        assert_eq!(document["authorization_servers"], json!([issuer.url]));
        assert_eq!(
            document["scopes_supported"],
            json!(["tools:all", "tools:echo"])
        );
    }

    // Client credentials, a JWT for /mcp used over REST: every tool.
    let jwt = issuer.token(&format!("{base}/mcp"), "tools:all").await;
    assert_eq!(jwt.split('.').count(), 3);
    let tools: Value = get_with(&gw, "/tools", &jwt).await.json().await.unwrap();
    assert!(
        tool_names(&tools).contains(&"get-sum".to_owned()),
        "{tools}"
    );
    let sum: Value = call_with(&gw, &jwt, "get-sum", json!({"a": 2, "b": 3}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(sum["success"], true, "{sum}");

    // The per-service document publishes the issuer's flows (read from its metadata at start).
    let document: Value = get_with(&gw, "/openapi.json", &jwt)
        .await
        .json()
        .await
        .unwrap();
    let flows = &document["components"]["securitySchemes"]["oauth"]["flows"];
    assert_eq!(
        flows["authorizationCode"]["authorizationUrl"],
        format!("{}/auth", issuer.url),
        "{flows}"
    );
    assert_eq!(
        flows["clientCredentials"]["tokenUrl"],
        format!("{}/token", issuer.url)
    );
    assert_eq!(
        flows["clientCredentials"]["scopes"]["tools:all"],
        "every tool"
    );

    // An opaque token (the base resource), introspected; its scope opens `echo` only.
    let opaque = issuer.token(&base, "tools:echo").await;
    assert_ne!(opaque.split('.').count(), 3);
    let tools: Value = get_with(&gw, "/tools", &opaque).await.json().await.unwrap();
    assert_eq!(tool_names(&tools), ["echo"], "{tools}");
    let echo: Value = call_with(&gw, &opaque, "echo", json!({"message": "hi"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(echo["success"], true, "{echo}");
    let short = call_with(&gw, &opaque, "get-sum", json!({"a": 1, "b": 1})).await;
    assert_eq!(short.status(), 403);
    let step_up = challenge(&short);
    assert!(
        step_up.starts_with("Bearer error=\"insufficient_scope\", scope=\"tools:all\""),
        "{step_up}"
    );
    let short: Value = short.json().await.unwrap();
    assert_eq!(short["code"], "FORBIDDEN");
    // The same call asked to run as a task is refused with the same challenge.
    let short_task = reqwest::Client::new()
        .post(gw.url("/call-tool"))
        .bearer_auth(&opaque)
        .header("prefer", "respond-async")
        .json(&json!({"tool": "get-sum", "arguments": {"a": 1, "b": 1}}))
        .send()
        .await
        .unwrap();
    assert_eq!(short_task.status(), 403);
    assert_eq!(challenge(&short_task), step_up);
    // Asked for, meta says who the gateway took the caller for.
    let told: Value = reqwest::Client::new()
        .post(gw.url("/call-tool"))
        .bearer_auth(&opaque)
        .header("prefer", "identity")
        .json(&json!({"tool": "echo", "arguments": {"message": "who"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        told["meta"]["identity"],
        json!({"kind": "oauth", "subject": "gateway-tests", "client_id": "gateway-tests", "scopes": ["tools:echo"]}),
        "{told}"
    );
    assert!(
        echo["meta"].get("identity").is_none(),
        "only when asked: {echo}"
    );
    // Over MCP the same tool is a step-up: HTTP 403 with the challenge, the JSON-RPC error
    // in the body.
    let mcp_short = reqwest::Client::new()
        .post(gw.url("/mcp"))
        .bearer_auth(&opaque)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "get-sum", "arguments": {"a": 1, "b": 2}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(mcp_short.status(), 403);
    let step_up = challenge(&mcp_short);
    assert!(
        step_up.contains("error=\"insufficient_scope\", scope=\"tools:all\""),
        "{step_up}"
    );
    assert!(
        step_up.contains("/.well-known/oauth-protected-resource/mcp\""),
        "{step_up}"
    );
    let body: Value = mcp_short.json().await.unwrap();
    assert_eq!(body["error"]["data"]["code"], "FORBIDDEN", "{body}");

    // A token for another service, and every hand-made bad token: 401, invalid_token.
    let foreign = issuer
        .token(&format!("http://127.0.0.1:{other}"), "tools:all")
        .await;
    let mut bad: Vec<(String, String)> = vec![("another service's".into(), foreign)];
    let crafted = issuer.crafted(&base).await;
    for (case, token) in crafted.as_object().unwrap() {
        if case != "valid" {
            bad.push((case.clone(), token.as_str().unwrap().to_owned()));
        }
    }
    assert!(bad.len() >= 12, "{crafted}");
    for (case, token) in &bad {
        let answer = get_with(&gw, "/tools", token).await;
        assert_eq!(answer.status(), 401, "{case}");
        assert!(
            challenge(&answer).contains("error=\"invalid_token\""),
            "{case}: {}",
            challenge(&answer)
        );
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["code"], "UNAUTHORIZED", "{case}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .starts_with("Invalid bearer token: "),
            "{case}: {body}"
        );
    }
    let valid = crafted["valid"].as_str().unwrap();
    assert_eq!(get_with(&gw, "/tools", valid).await.status(), 200);

    // A session is its opener's: bob, with a valid token of his own, gets 404 for alice's.
    let bob = issuer.crafted_for(&base, "bob").await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let opened = reqwest::Client::new()
        .post(gw.url("/mcp"))
        .bearer_auth(valid)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let in_session = |token: String| {
        let (url, session, ping) = (gw.url("/mcp"), session.clone(), ping.clone());
        async move {
            reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25")
                .json(&ping)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(
        in_session(bob.clone()).await,
        404,
        "bob may not use alice's session"
    );
    assert_eq!(in_session(valid.to_owned()).await, 200, "alice may");

    // The MCP Python SDK's OAuth client finds everything from the 401 and calls through /mcp:
    // authorization code + PKCE as user alice, then client credentials.
    let code = sdk_call(&gw, &["code", "--scope", "tools:all"], "via oauth").await;
    assert_eq!(code["call"]["is_error"], false, "{code}");
    assert_eq!(code["call"]["text"], "Echo: via oauth", "{code}");
    assert!(code["tools"].as_array().unwrap().len() > 5, "{code}");
    assert_eq!(code["resource"], format!("{base}/mcp"), "{code}");
    let machine = sdk_call(
        &gw,
        &[
            "client_credentials",
            "--client-id",
            "gateway-tests",
            "--client-secret",
            CLIENT_SECRET,
            "--scope",
            "tools:echo",
        ],
        "machine",
    )
    .await;
    assert_eq!(machine["tools"], json!(["echo"]), "{machine}");
    assert_eq!(machine["call"]["text"], "Echo: machine", "{machine}");

    // The issuer down: the key fetched before keeps working (for a token never seen before,
    // so not one verified lately), a key never seen fails closed.
    issuer.stop();
    let carol = issuer.crafted_for(&base, "carol").await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(get_with(&gw, "/tools", &carol).await.status(), 200);
    assert_eq!(get_with(&gw, "/tools", valid).await.status(), 200);
    let unknown = get_with(&gw, "/tools", crafted["unknown_kid"].as_str().unwrap()).await;
    assert_eq!(unknown.status(), 401);

    // The subject in the access log; no token anywhere in the logs.
    let logs = gw.logs();
    assert!(
        gw.log_lines()
            .iter()
            .any(|l| l["fields"]["client"] == "alice" || l["client"] == "alice"),
        "the subject is logged"
    );
    for token in [jwt.as_str(), opaque.as_str(), valid] {
        assert!(!logs.contains(token), "a token is in the logs");
    }
    let signature = valid.rsplit('.').next().unwrap();
    assert!(!logs.contains(signature));
}

/// A service `name` on `port` behind `security.oauth` of `issuer`, `extra` written after
/// its `issuer:` line; the test client's secret is in MHG_CLIENT_SECRET.
fn start_oauth(name: &str, port: u16, issuer: &str, extra: &str) -> Gateway {
    let yaml = format!("security:\n  oauth:\n    issuer: {issuer}\n{extra}");
    Gateway::spawn_on(name, port, &yaml, &[("MHG_CLIENT_SECRET", CLIENT_SECRET)])
}

/// An issuer with JWT tokens for one service, and that service (server-everything behind
/// `security.oauth`, `security` lines after `issuer:`), running: the issuer, the service and
/// its base URL.
async fn one_service(name: &str, security: &str) -> (Issuer, Gateway, String) {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let issuer =
        Issuer::start_with(json!({ base.clone(): {"scope": SCOPES, "format": "jwt"} })).await;
    let extra = format!(
        "{security}providers:\n{}",
        everything_provider("everything")
    );
    let mut gw = start_oauth(name, port, &issuer.url, &extra);
    gw.wait_running().await;
    (issuer, gw, base)
}

/// Two services: `front` calls `back`'s REST API as an HTTP provider. With `auth:
/// token_exchange`, each caller's token is exchanged (RFC 8693, at the real issuer) for one
/// whose audience is `back`, once per caller until it expires; `back` sees the caller's
/// subject and never the caller's own token (it would refuse it: its audience is `front`).
/// Without `auth`, `back`'s 401 comes back as a clear error naming the upstream.
#[tokio::test]
async fn a_caller_s_token_is_exchanged_for_the_upstream_s_own_and_never_passed_on() {
    let (front_port, back_port) = (free_port(), free_port());
    let (front_url, back_url) = (
        format!("http://127.0.0.1:{front_port}"),
        format!("http://127.0.0.1:{back_port}"),
    );
    let issuer = Issuer::start_with(json!({
        front_url.clone(): {"scope": SCOPES, "format": "jwt"},
        back_url.clone(): {"scope": SCOPES, "format": "jwt"},
    }))
    .await;
    let mut back = start_oauth(
        "back",
        back_port,
        &issuer.url,
        &format!("providers:\n{}", everything_provider("everything")),
    );
    let tool = |name: &str| {
        format!(
            "      - {{ name: {name}, description: echo on back, input_schema: {{ type: object, properties: {{ message: {{ type: string }} }}, required: [message] }}, method: POST, path: /call-tool, body: '{{\"tool\": \"echo\", \"arguments\": {{\"message\": {{{{ message | tojson }}}}}}}}', result: /data/content/0/text }}\n"
        )
    };
    let machine_auth = format!(
        "auth: {{ kind: client_credentials, token_url: \"{}/token\", client_id: gateway-tests, client_secret_env: MHG_CLIENT_SECRET, resource: \"{back_url}\", scope: \"tools:all\" }}",
        issuer.url
    );
    let front_extra = format!(
        "dependencies:\n  back: {{ kind: http, base_url: \"{back_url}\", health_path: /health, auth: {{ kind: token_exchange, token_url: \"{}/token\", client_id: gateway-tests, client_secret_env: MHG_CLIENT_SECRET, resource: \"{back_url}\", scope: \"tools:all\" }} }}\n  machine: {{ kind: http, base_url: \"{back_url}\", health_path: /health, {machine_auth} }}\n  bare: {{ kind: http, base_url: \"{back_url}\", health_path: /health }}\nproviders:\n  - name: exchanged\n    kind: http\n    dependency: back\n    tools:\n{}  - name: as-gateway\n    kind: http\n    dependency: machine\n    tools:\n{}  - name: unauthenticated\n    kind: http\n    dependency: bare\n    tools:\n{}  - name: remote\n    kind: mcp\n    url: \"{back_url}/mcp\"\n    {machine_auth}\n    expose: {{ include: [echo] }}\n  - name: refused\n    kind: mcp\n    url: \"{back_url}/mcp\"\n",
        issuer.url,
        tool("back_echo"),
        tool("machine_echo"),
        tool("bare_echo"),
    );
    let mut front = start_oauth("front", front_port, &issuer.url, &front_extra);
    back.wait_running().await;
    front.wait_running().await;

    let alice = issuer.crafted_for(&front_url, "alice").await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    let bob = issuer.crafted_for(&front_url, "bob").await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    for (token, message) in [(&alice, "one"), (&alice, "two"), (&bob, "three")] {
        let answer: Value = call_with(&front, token, "back_echo", json!({"message": message}))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(answer["data"], format!("Echo: {message}"), "{answer}");
    }
    // One exchange per caller: alice's second call used her cached token.
    assert_eq!(issuer.stats().await["token_exchanges"], 2);
    let back_clients: Vec<String> = back
        .log_lines()
        .iter()
        .filter(|l| l["path"] == "/call-tool")
        .map(|l| l["client"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(back_clients, ["alice", "alice", "bob"]);
    let back_logs = back.logs();
    assert!(!back_logs.contains(&alice) && !back_logs.contains(&bob));

    // Without credentials of its own the upstream's 401 names it, never a bare 500.
    let refused: Value = call_with(&front, &alice, "bare_echo", json!({"message": "x"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(refused["code"], "EXECUTION_ERROR", "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.contains("upstream 'bare' refused the gateway's credentials (401 Bearer"),
        "{error}"
    );
    assert!(!error.contains(&alice));
}

/// Rate limits count per user: alice spending her allowance leaves bob's whole.
#[tokio::test]
async fn each_subject_has_a_rate_limit_allowance_of_its_own() {
    let (issuer, gw, base) = one_service("limited", "  rate_limit: 10\n").await;
    let alice = issuer.crafted_for(&base, "alice").await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    let bob = issuer.crafted_for(&base, "bob").await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut statuses = Vec::new();
    for _ in 0..12 {
        statuses.push(get_with(&gw, "/tools", &alice).await.status().as_u16());
    }
    assert_eq!(&statuses[..10], [200; 10]);
    assert_eq!(statuses[11], 429, "{statuses:?}");
    let limited: Value = get_with(&gw, "/tools", &alice).await.json().await.unwrap();
    assert!(
        limited["error"].as_str().unwrap().contains("alice"),
        "{limited}"
    );
    assert_eq!(
        get_with(&gw, "/tools", &bob).await.status(),
        200,
        "bob's allowance is whole"
    );
}

/// A client generated from the service's document (openapi-python-client) calls with a bearer
/// token from the real issuer; a wrong token and none are 401.
#[tokio::test]
async fn a_client_generated_from_the_document_calls_with_a_bearer_token() {
    let (issuer, gw, base) = one_service("generated", "").await;
    let token = issuer.token(&base, "tools:all").await;
    let document = get_with(&gw, "/openapi.json", &token)
        .await
        .text()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.json");
    std::fs::write(&path, document).unwrap();
    let config = dir.path().join("generator.yaml");
    std::fs::write(&config, "post_hooks: []\n").unwrap();
    let deps = repo().join(".deps/openapi-venv/bin");
    let generated = Command::new(deps.join("openapi-python-client"))
        .args(["generate", "--meta", "none", "--config"])
        .arg(&config)
        .arg("--path")
        .arg(&path)
        .arg("--output-path")
        .arg(dir.path().join("oauth_client"))
        .output()
        .unwrap();
    assert!(
        generated.status.success(),
        "{}",
        String::from_utf8_lossy(&generated.stderr)
    );
    let program = dir.path().join("call_bearer.py");
    std::fs::copy(fixture("generated_clients/call_bearer.py"), &program).unwrap();
    let said = Command::new(deps.join("python"))
        .current_dir(dir.path())
        .arg(&program)
        .arg(&base)
        .arg(&token)
        .output()
        .unwrap();
    assert!(
        said.status.success(),
        "{}",
        String::from_utf8_lossy(&said.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&said.stdout),
        "200 Echo: generated 401 401\n"
    );
}

/// The issuer rotates its keys: a token signed with the new one is taken once the gateway
/// fetches the keys again on its unknown `kid` (at most once per 10 s); the old key's tokens
/// keep working.
#[tokio::test]
async fn a_new_signing_key_is_fetched_on_its_first_unknown_kid() {
    let (mut issuer, gw, base) = one_service("rotated", "").await;
    let old = issuer.crafted(&base).await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(get_with(&gw, "/tools", &old).await.status(), 200);
    issuer.rotate_to("rsa2").await;
    let new = issuer.crafted(&base).await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(new, old);
    eventually(Duration::from_secs(30), "the new key taken", || async {
        (get_with(&gw, "/tools", &new).await.status() == 200).then_some(())
    })
    .await;
    assert_eq!(get_with(&gw, "/tools", &old).await.status(), 200);
    let refetched = gw.logs().matches("could not be fetched").count();
    assert_eq!(refetched, 0, "every fetch reached the issuer");
}

/// The caller's subject where people look: with traces exported, a server span names it as
/// OpenTelemetry says (`enduser.id`) with the OAuth client the token came through
/// (`oauth.client_id`), at a real OTLP receiver; `/health` counts each tool's top callers by
/// the subject's digest (to a caller with a token: a public `/health` names no tool). The
/// token itself is on no span, and the subject is not in clear in `/health`.
#[tokio::test]
async fn a_token_s_subject_is_on_its_span_and_among_the_tool_s_callers_and_the_token_is_not() {
    let receiver = OtlpReceiver::start().await;
    let (issuer, mut gw, base) = one_service("spanned", &receiver.monitoring()).await;
    let token_of = |sub: &'static str| {
        let issuer = &issuer;
        let base = &base;
        async move {
            issuer.crafted_for(base, sub).await["valid"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    let (token, bob) = (token_of("alice").await, token_of("bob").await);
    let answer = call_with(&gw, &token, "echo", json!({"message": "traced"})).await;
    assert_eq!(answer.status(), 200);
    for who in [&bob, &bob, &token] {
        let answer = call_with(&gw, who, "echo", json!({"message": "counted"})).await;
        assert_eq!(answer.status(), 200);
    }
    // A caller without a token sees how many tools there are, not their names; a token's
    // holder sees the tools it may call.
    let public = get(&gw, "/health").await.body;
    assert_eq!(public["data"]["tools"], json!({}), "{public}");
    let health: Value = get_with(&gw, "/health", &bob).await.json().await.unwrap();
    let digest = |sub: &str| {
        use sha2::Digest;
        let hex: String = sha2::Sha256::digest(sub.as_bytes())[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("sub:{hex}")
    };
    assert_eq!(
        health["data"]["tools"]["echo"]["top_callers"],
        json!([{"client": digest("alice"), "calls": 2}, {"client": digest("bob"), "calls": 2}]),
        "{health}"
    );
    assert!(!health.to_string().contains("alice"), "{health}");
    // Stopped at once: the batch (sent every 5 s otherwise) is flushed on shutdown.
    gw.signal(libc::SIGTERM);
    gw.wait_exit(Duration::from_secs(30)).await;
    let spans = receiver.at_least(4).await;
    let server: Vec<&Value> = spans
        .iter()
        .filter(|s| s["kind"] == "SPAN_KIND_SERVER" && s["name"] == "POST /call-tool")
        .collect();
    assert_eq!(server.len(), 4, "{spans:#?}");
    let mut users: Vec<&str> = server
        .iter()
        .map(|s| {
            let attrs = &s["attributes"];
            assert_eq!(attrs["oauth.client_id"], "oauth_tokens.py", "{attrs}");
            attrs["enduser.id"].as_str().unwrap()
        })
        .collect();
    users.sort();
    assert_eq!(users, ["alice", "alice", "bob", "bob"]);
    for token in [&token, &bob] {
        let signature = token.rsplit('.').next().unwrap();
        for span in &spans {
            let text = span.to_string();
            assert!(!text.contains(token) && !text.contains(signature), "{text}");
        }
    }
}

/// An MCP client in a web page of another origin (tests/fixtures/browser_mcp.mjs, headless
/// Chromium): CORS lets its script read the 401's challenge and the session id, send the
/// session's headers, and end the session with DELETE.
#[tokio::test]
async fn an_mcp_client_in_a_web_page_reads_the_challenge_and_keeps_its_session() {
    let (issuer, gw, base) = one_service("browsed", "").await;
    let token = issuer.crafted(&base).await["valid"]
        .as_str()
        .unwrap()
        .to_owned();
    let seen = run_node(vec![
        fixture("browser_mcp.mjs"),
        "--mcp".into(),
        gw.url("/mcp"),
        "--token".into(),
        token,
    ])
    .await;
    let challenge = seen["challenge"]
        .as_str()
        .unwrap_or_else(|| panic!("{seen}"));
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
        )),
        "{seen}"
    );
    assert_eq!(seen["session_id_read"], true, "{seen}");
    assert!(seen["tools"].as_u64().unwrap() > 5, "{seen}");
    assert_eq!(seen["deleted"], 200, "{seen}");
    assert_eq!(seen["after_delete"], 404, "{seen}");
}

/// Swagger UI's Authorize button, clicked in a real browser (headless Chromium driven by
/// tests/fixtures/swagger_authorize.mjs): authorization code + PKCE at the real issuer, through
/// its login and consent pages in the popup, as a public client whose redirect URI is the
/// service's `/docs/oauth2-redirect.html`; then "Try it out" on GET /tools and POST /call-tool
/// sends the token. The scope ticked limits the tools shown, and no page of the flow loads
/// anything from off this machine or logs a console error.
#[tokio::test]
async fn swagger_ui_s_authorize_button_gets_a_token_from_the_real_issuer_that_try_it_out_sends() {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    // Swagger UI sends no `resource`: the issuer's default audience is the service.
    let issuer = Issuer::start_configured(
        json!({ base.clone(): {"scope": SCOPES, "format": "jwt"} }),
        Some(base.as_str()),
        &[json!({
            "client_id": "swagger-ui", "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code"], "response_types": ["code"],
            "redirect_uris": [format!("{base}/docs/oauth2-redirect.html")]
        })],
    )
    .await;
    let extra = format!(
        "    scopes:\n      'tools:all': {{ description: every tool }}\n      'tools:echo': {{ tools: [echo], description: only echo }}\n  public_routes: [/health, '/docs*', /openapi.json]\nproviders:\n{}",
        everything_provider("everything")
    );
    let mut gw = start_oauth("swagger", port, &issuer.url, &extra);
    gw.wait_running().await;

    let browser = tokio::process::Command::new("node")
        .arg(fixture("swagger_authorize.mjs"))
        .args(["--docs", &gw.url("/docs/")])
        .args([
            "--client-id",
            "swagger-ui",
            "--scopes",
            "tools:echo",
            "--user",
            "alice",
            "--timeout-ms",
            "30000",
        ])
        .args([
            "--call",
            r#"{"tool": "echo", "arguments": {"message": "from swagger"}}"#,
        ])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(180), browser)
        .await
        .expect("the browser done within 180 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let seen: Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    assert!(
        out.status.success() && seen.get("error").is_none(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    assert_eq!(seen["authorized"], true, "{seen}");
    assert_eq!(seen["pkce"], true, "{seen}");
    assert_eq!(seen["token_status"], 200, "{seen}");
    assert_eq!(seen["token_scope"], "tools:echo", "{seen}");
    assert_eq!(seen["token_is_jwt"], true, "{seen}");
    assert_eq!(seen["status"], 200, "{seen}");
    assert_eq!(seen["success"], true, "{seen}");
    assert_eq!(seen["token_sent"], true, "{seen}");
    assert_eq!(
        seen["tools"],
        json!(["echo"]),
        "only the ticked scope's tools"
    );
    assert_eq!(seen["call"]["status"], 200, "{seen}");
    assert_eq!(seen["call"]["token_sent"], true, "{seen}");
    assert_eq!(
        seen["call"]["data"]["content"][0]["text"], "Echo: from swagger",
        "{seen}"
    );
    assert_eq!(seen["offsite_requests"], json!([]), "{seen}");
    assert_eq!(seen["console_errors"], json!([]), "{seen}");
    assert_eq!(issuer.stats().await["authorization_code"], 1);
    let calls: Vec<Value> = gw
        .log_lines()
        .into_iter()
        .filter(|l| l["message"] == "request")
        .filter(|l| l["path"] == "/tools" || l["path"] == "/call-tool")
        .map(|l| json!([l["path"], l["client"], l["status"]]))
        .collect();
    assert_eq!(
        calls,
        [
            json!(["/tools", "alice", 200]),
            json!(["/call-tool", "alice", 200])
        ]
    );
}
