//! (test only) A bounded fuzzer over the `Authorization` header (proptest, no nightly), sent
//! through every layer of a service with API keys and OAuth both on: random bytes, schemes,
//! token68 look-alikes, JWT-shaped tokens with random parts and `alg` values, several
//! headers at once. None of them can be a credential, so every answer must be the envelope's
//! 401 UNAUTHORIZED with a `Bearer resource_metadata=` challenge that repeats nothing of what
//! was sent, never a panic, a 5xx or a pass. The issuer is a closed loopback port: a token
//! that makes the gateway fetch keys gets "could not connect", without leaving the machine.

use std::sync::OnceLock;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request, header};
use base64::Engine;
use proptest::prelude::*;
use tower::ServiceExt;

/// `printf %s fuzz-key-that-no-case-makes | sha256sum`
const CONFIG: &str = r#"service: { name: fuzz, port: 9999 }
security:
  rate_limit: 100000000
  api_keys:
    - { name: only, sha256: 31f843f2f4634e6cc89e4a6d08013378e2d0e77b1076767cd770dc1927de54e3 }
  oauth:
    issuer: http://127.0.0.1:1
    scopes: { 'tools:all': {} }
"#;

fn app() -> &'static (tokio::runtime::Runtime, Router) {
    static APP: OnceLock<(tokio::runtime::Runtime, Router)> = OnceLock::new();
    APP.get_or_init(|| crate::http::fuzz::started(CONFIG))
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A JWT-shaped token: a header with some `alg` (and maybe a `kid`), random claims and
/// signature.
fn jwt_shaped() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("RS256"),
            Just("ES256"),
            Just("HS256"),
            Just("none"),
            Just("NONE"),
            Just("EdDSA"),
            Just("PS512"),
            Just(""),
            Just("RS256\u{0}")
        ],
        prop::option::of("[a-z0-9]{0,8}"),
        prop::collection::vec(any::<u8>(), 0..80),
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(alg, kid, claims, signature)| {
            let mut header = serde_json::json!({"alg": alg, "typ": "at+jwt"});
            if let Some(kid) = kid {
                header["kid"] = kid.into();
            }
            format!(
                "{}.{}.{}",
                b64(header.to_string().as_bytes()),
                b64(&claims),
                b64(&signature)
            )
        })
}

/// One or more `Authorization` values.
fn authorization() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let scheme = prop_oneof![
        Just("Bearer "),
        Just("bearer "),
        Just("BEARER  "),
        Just("Basic "),
        Just("Bearer"),
        Just(""),
        Just("Token "),
        Just("Bearer\t"),
    ];
    let token = prop_oneof![
        2 => jwt_shaped(),
        2 => "[A-Za-z0-9._~+/-]{1,60}=*",
        1 => "[ -~]{0,60}",
        1 => jwt_shaped().prop_map(|t| format!("{t}.{t}")),
    ];
    let one = prop_oneof![
        4 => (scheme, token).prop_map(|(s, t)| format!("{s}{t}").into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..80),
    ];
    prop::collection::vec(one, 1..3)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn no_authorization_header_is_a_credential_or_an_error(values in authorization()) {
        let (runtime, router) = app();
        let mut request = Request::get("/tools").header("host", "127.0.0.1:9999");
        let mut sent = Vec::new();
        for value in &values {
            if let Ok(value) = HeaderValue::from_bytes(value) {
                sent.push(value.clone());
                request = request.header(header::AUTHORIZATION, value);
            }
        }
        let request = request.body(Body::empty()).unwrap();
        let response = runtime.block_on(router.clone().oneshot(request)).unwrap();
        prop_assert_eq!(response.status().as_u16(), 401, "{:?}", sent);
        let challenge = response
            .headers()
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        prop_assert!(
            challenge.starts_with("Bearer resource_metadata=\"http://127.0.0.1:9999/.well-known/oauth-protected-resource\""),
            "{}", challenge
        );
        for value in &sent {
            let token = value.to_str().unwrap_or_default();
            let token = token.split_once(' ').map_or(token, |(_, t)| t).trim();
            if token.len() >= 8 {
                prop_assert!(!challenge.contains(token), "the challenge repeats what was sent");
            }
        }
        let body = runtime
            .block_on(axum::body::to_bytes(response.into_body(), 1 << 16))
            .unwrap();
        let envelope: contract::Envelope = serde_json::from_slice(&body).unwrap();
        prop_assert_eq!(envelope.code, Some(contract::ErrorCode::Unauthorized));
    }
}
