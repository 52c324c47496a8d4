//! A bounded fuzzer over the request path, run by `cargo test` (proptest, no nightly): request
//! ids, content types, bodies (random bytes, call-shaped JSON, and JSON with a duplicate key,
//! deep nesting or a long string injected, or cut short) sent to the tool routes of a service
//! with a typed tool. Every answer must be the envelope, with `X-Request-Id`, never an
//! internal error (a panic or a refusal that was not thought of), and every injected fault
//! must be refused as INVALID_REQUEST.
//!
//! The tool's provider is an HTTP API on a closed port, so a call that passes every check
//! fails as EXECUTION_ERROR without leaving the machine.

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderValue, Request};
use proptest::prelude::*;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::service::Service;

const CONFIG: &str = r#"service: { name: fuzz, port: 9999 }
security: { rate_limit: 100000000 }
limits: { max_json_depth: 6, max_string_bytes: 64, max_json_members: 8, call_timeout_ms: 2000 }
dependencies:
  api: { kind: http, base_url: "http://127.0.0.1:1" }
providers:
  - name: api
    kind: http
    dependency: api
    tools:
      - name: t
        description: a typed tool
        method: GET
        path: /x
        input_schema:
          type: object
          properties:
            n: { type: integer, maximum: 10 }
            s: { type: string, maxLength: 5 }
            list: { type: array, items: { type: integer } }
          required: [n]
          additionalProperties: false
"#;

/// One runtime and one started service for every case.
fn app() -> &'static (tokio::runtime::Runtime, Router) {
    static APP: OnceLock<(tokio::runtime::Runtime, Router)> = OnceLock::new();
    APP.get_or_init(|| started(CONFIG))
}

/// A runtime of one worker and the router of a service started from `config` in it (the
/// fuzzers of this folder share it).
pub(super) fn started(config: &str) -> (tokio::runtime::Runtime, Router) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let config =
        crate::config::ServiceConfig::parse(config, "fuzz.yaml", std::path::PathBuf::from("."))
            .unwrap();
    let shutdown = crate::shutdown::Shutdown::default();
    let router = runtime.block_on(async {
        let service: Arc<Service> =
            Service::new(config, shutdown.child(), shutdown.child()).unwrap();
        service.start().await.unwrap();
        super::router(service)
    });
    (runtime, router)
}

/// What was done to a body that must make it refused.
#[derive(Debug, Clone)]
enum Fault {
    None,
    DuplicateKey,
    TooDeep,
    LongString,
    CutShort(usize),
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-20i64..20).prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-z]{0,7}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop_oneof!["n", "s", "list", "[a-z]{1,3}"], inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn request_id() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        3 => Just(None),
        2 => any::<u128>().prop_map(|n| Some(uuid::Builder::from_random_bytes(n.to_le_bytes()).into_uuid().to_string())),
        1 => "[ -~]{0,40}".prop_map(Some),
    ]
}

/// A body and the fault put in it.
fn body() -> impl Strategy<Value = (Vec<u8>, Fault)> {
    // Arguments that pass the schema now and then, so calls get as far as running.
    let arguments = prop_oneof![
        3 => json_value(),
        1 => (0i64..=10, "[a-z]{0,5}").prop_map(|(n, s)| json!({"n": n, "s": s})),
    ];
    let shaped = (
        prop_oneof![4 => Just("t"), 1 => Just("nope"), 1 => Just("")],
        arguments,
        prop::option::of(request_id()),
        any::<bool>(),
    )
        .prop_map(|(tool, arguments, id, by_name)| {
            if by_name {
                return arguments;
            }
            let mut body = json!({"tool": tool, "arguments": arguments});
            if let Some(Some(id)) = id {
                body["request_id"] = json!(id);
            }
            body
        })
        .boxed();
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..120).prop_map(|b| (b, Fault::None)),
        4 => shaped.clone().prop_map(|v| (v.to_string().into_bytes(), Fault::None)),
        2 => (shaped.clone(), any::<prop::sample::Index>()).prop_map(|(v, at)| {
            // Each `{` is a place an object starts: the duplicate goes first in one of them.
            let text = v.to_string();
            let opens: Vec<usize> = text.match_indices('{').map(|(i, _)| i).collect();
            if opens.is_empty() {
                return (text.into_bytes(), Fault::None);
            }
            let i = *at.get(&opens) + 1;
            let tail = if text[i..].starts_with('}') { "" } else { "," };
            let text = format!("{}\"k\":1,\"k\":2{tail}{}", &text[..i], &text[i..]);
            (text.into_bytes(), Fault::DuplicateKey)
        }),
        1 => shaped.clone().prop_map(|v| {
            let deep = format!("{}{v}{}", "[".repeat(8), "]".repeat(8));
            (format!("{{\"tool\":\"t\",\"arguments\":{{\"n\":1,\"list\":{deep}}}}}").into_bytes(), Fault::TooDeep)
        }),
        1 => (65usize..200).prop_map(|n| {
            (json!({"tool": "t", "arguments": {"n": 1, "s": "x".repeat(n)}}).to_string().into_bytes(), Fault::LongString)
        }),
        1 => (shaped, any::<prop::sample::Index>()).prop_map(|(v, at)| {
            let text = v.to_string().into_bytes();
            let cut = at.index(text.len().max(1));
            (text[..cut].to_vec(), Fault::CutShort(cut))
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_request_is_answered_with_the_envelope_and_every_fault_refused(
        path in prop_oneof![3 => Just("/call-tool"), 3 => Just("/tools/t"), 1 => Just("/tools/nope"), 1 => Just("/tools/%ZZ")],
        id in request_id(),
        content_type in prop_oneof![6 => Just(Some("application/json")), 1 => Just(Some("text/plain")), 1 => Just(None)],
        (bytes, fault) in body(),
    ) {
        let (runtime, router) = app();
        let mut request = Request::post(path).body(Body::from(bytes.clone())).unwrap();
        if let Some(id) = id.as_deref().and_then(|id| HeaderValue::from_str(id).ok()) {
            request.headers_mut().insert("x-request-id", id);
        }
        if let Some(content_type) = content_type {
            request.headers_mut().insert("content-type", HeaderValue::from_static(content_type));
        }
        let response = runtime.block_on(router.clone().oneshot(request)).unwrap();
        let status = response.status().as_u16();
        let header_id = response.headers().get("x-request-id").map(|v| v.to_str().unwrap().to_owned());
        let body = runtime.block_on(axum::body::to_bytes(response.into_body(), 1 << 20)).unwrap();
        let body: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&body)));
        if let Err(violations) = contract::envelope::check(&body, status) {
            prop_assert!(false, "not the envelope ({violations}): {body}");
        }
        prop_assert_eq!(header_id.as_deref(), body["request_id"].as_str());
        prop_assert_ne!(&body["code"], "INTERNAL_ERROR", "{}", body);
        // An empty body to /tools/{name} is `{}`: not a fault there.
        let must_refuse = match fault {
            Fault::None => false,
            Fault::CutShort(0) => !path.starts_with("/tools/"),
            _ => true,
        };
        if must_refuse {
            prop_assert_eq!(status, 400, "{:?}: {}", fault, body);
            prop_assert_eq!(&body["code"], "INVALID_REQUEST", "{:?}: {}", fault, body);
        }
    }
}
