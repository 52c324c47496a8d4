use super::*;
use crate::service::unit_service;
use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};

/// `printf %s test | sha256sum`: the key "test".
const KEYS: &str = "security:\n  api_keys:\n    - { name: ci, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 }\n  public_routes: [/health, '/docs*']\n";
const OAUTH: &str = "security:\n  oauth:\n    issuer: http://127.0.0.1:9\n    scopes:\n      tools.read: { tools: ['get-*'] }\n      tools.echo: { tools: [echo] }\n";

fn get(path: &str, headers: &[(&'static str, &str)]) -> Request {
    let mut request = Request::get(path);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request.body(Body::empty()).unwrap()
}

fn judged(service: &Service, request: &mut Request) -> Option<Response> {
    match judge(&service.settings(), request) {
        Judged::Pass => None,
        Judged::Refuse(answer) => Some(answer),
        Judged::Verify { .. } => panic!("no token here"),
    }
}

fn refusal(answer: Option<Response>) -> (StatusCode, String, Option<String>) {
    let answer = answer.expect("the check answers");
    let reply = answer.extensions().get::<Reply>().expect("a Reply");
    let (_, error) = reply.outcome.clone().expect_err("an error");
    (
        reply.status(),
        error,
        reply.challenge.as_deref().map(str::to_owned),
    )
}

#[tokio::test]
async fn with_keys_a_private_route_needs_one_and_a_public_route_does_not() {
    let service = unit_service(KEYS);
    let (status, error, challenge) = refusal(judged(&service, &mut get("/tools", &[])));
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(error.starts_with("Missing or invalid API key"), "{error}");
    assert_eq!(challenge, None, "no OAuth, no challenge");
    let wrong = judged(&service, &mut get("/tools", &[("x-api-key", "nope")]));
    assert_eq!(wrong.map(|a| a.status()), Some(StatusCode::UNAUTHORIZED));

    let mut accepted = get("/tools", &[("x-api-key", "test")]);
    assert!(judged(&service, &mut accepted).is_none());
    let client = accepted
        .extensions()
        .get::<Client>()
        .expect("the key's client goes on");
    assert_eq!(client.as_str(), "ci");
    let mut bearer = get("/tools", &[("authorization", "Bearer test")]);
    assert!(judged(&service, &mut bearer).is_none());

    for public in ["/health", "/docs", "/docs/index.html"] {
        let mut request = get(public, &[]);
        assert!(judged(&service, &mut request).is_none(), "{public}");
        assert!(request.extensions().get::<Client>().is_none());
    }
    // A key sent to a public route is honoured, a wrong one there ignored.
    let mut keyed = get("/health", &[("x-api-key", "test")]);
    assert!(judged(&service, &mut keyed).is_none());
    assert!(keyed.extensions().get::<Client>().is_some());
    assert!(judged(&service, &mut get("/health", &[("x-api-key", "nope")])).is_none());
}

#[tokio::test]
async fn without_credentials_configured_every_route_is_open() {
    let service = unit_service("");
    assert!(judged(&service, &mut get("/tools", &[])).is_none());
}

#[tokio::test]
async fn with_oauth_a_missing_or_malformed_token_is_a_401_pointing_at_the_metadata() {
    let service = unit_service(OAUTH);
    let (status, error, challenge) = refusal(judged(
        &service,
        &mut get("/tools", &[("host", "127.0.0.1:8001")]),
    ));
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        error,
        "Missing credentials (send Authorization: Bearer <access token>)"
    );
    assert_eq!(
        challenge.as_deref(),
        Some(
            "Bearer resource_metadata=\"http://127.0.0.1:9999/.well-known/oauth-protected-resource\""
        )
    );
    let (_, _, challenge) = refusal(judged(
        &service,
        &mut get("/mcp", &[("host", "localhost:8001")]),
    ));
    assert_eq!(
        challenge.as_deref(),
        Some(
            "Bearer resource_metadata=\"http://localhost:9999/.well-known/oauth-protected-resource/mcp\""
        )
    );
    let (_, error, challenge) = refusal(judged(
        &service,
        &mut get("/tools", &[("authorization", "Basic YTpi")]),
    ));
    assert_eq!(
        error,
        "Invalid bearer token: the token is malformed: the Authorization scheme is not Bearer"
    );
    assert!(challenge.unwrap().contains("error=\"invalid_token\""));
    // The metadata is public; /health is public by default.
    for public in [METADATA, MCP_METADATA, "/health"] {
        assert!(
            judged(&service, &mut get(public, &[])).is_none(),
            "{public}"
        );
    }
}

const METADATA: &str = crate::http::protected_resource::METADATA_PATH;
const MCP_METADATA: &str = crate::http::protected_resource::MCP_METADATA_PATH;

#[test]
fn the_bearer_token_is_token68_after_a_case_insensitive_scheme() {
    let headers = |values: &[&str]| {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        map
    };
    assert_eq!(bearer_token(&headers(&[])), Bearer::Absent);
    assert_eq!(
        bearer_token(&headers(&["Bearer a.b-c_d~e+f/g=="])),
        Bearer::Token("a.b-c_d~e+f/g==")
    );
    assert_eq!(
        bearer_token(&headers(&["bearer  abc"])),
        Bearer::Token("abc")
    );
    for bad in [
        "Bearer",
        "Bearer ",
        "Bearer a b",
        "Bearer ==",
        "Basic abc",
        "Bearer a\"b",
        "Bearer é",
    ] {
        let map = match HeaderValue::from_str(bad) {
            Ok(v) => {
                let mut map = HeaderMap::new();
                map.insert(header::AUTHORIZATION, v);
                map
            }
            Err(_) => continue,
        };
        assert!(matches!(bearer_token(&map), Bearer::Malformed(_)), "{bad}");
    }
    assert!(matches!(
        bearer_token(&headers(&["Bearer a", "Bearer b"])),
        Bearer::Malformed(_)
    ));
    let mut latin = HeaderMap::new();
    latin.insert(
        header::AUTHORIZATION,
        HeaderValue::from_bytes(b"Bearer \xe9").unwrap(),
    );
    assert!(matches!(bearer_token(&latin), Bearer::Malformed(_)));
}

#[test]
fn the_key_comes_from_x_api_key_else_a_bearer_token() {
    let headers = |pairs: &[(&'static str, &'static str)]| -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
            .collect()
    };
    assert_eq!(
        presented_key(&headers(&[("x-api-key", " k1 ")])),
        Some("k1")
    );
    assert_eq!(
        presented_key(&headers(&[("authorization", "Bearer k2")])),
        Some("k2")
    );
    assert_eq!(
        presented_key(&headers(&[
            ("x-api-key", "k1"),
            ("authorization", "Bearer k2")
        ])),
        Some("k1")
    );
    for none in [
        headers(&[]),
        headers(&[("authorization", "Basic k2")]),
        headers(&[("authorization", "Bearer ")]),
        headers(&[("x-api-key", "  ")]),
    ] {
        assert_eq!(presented_key(&none), None, "{none:?}");
    }
}

#[tokio::test]
async fn a_token_short_of_scope_is_told_which_scopes_open_the_tool() {
    let service = unit_service(OAUTH);
    let settings = service.settings();
    let identity = TokenIdentity::new("alice".into(), None, vec!["tools.echo".into()], None, "t");
    let scope = ToolScope::of_scopes(
        &settings.config.security.oauth.as_ref().unwrap().scopes,
        ["tools.echo"],
    )
    .map(Arc::new);
    let client = Client::of_token(identity, scope);
    assert!(client.may_use("echo") && !client.may_use("get-sum"));
    let resource = Resource::of(&settings, &get("/tools/get-sum", &[("host", "h:1")]));
    let challenge = insufficient_scope(&settings, &client, "get-sum", &resource).unwrap();
    assert_eq!(
        challenge,
        "Bearer error=\"insufficient_scope\", scope=\"tools.read\", resource_metadata=\"http://h:9999/.well-known/oauth-protected-resource\", error_description=\"tool 'get-sum' needs one of the scopes: tools.read\""
    );
    assert_eq!(
        insufficient_scope(&settings, &client, "nothing-opens-me", &resource),
        None
    );
    assert_eq!(
        insufficient_scope(&settings, &Client::unknown(), "get-sum", &resource),
        None
    );
}
