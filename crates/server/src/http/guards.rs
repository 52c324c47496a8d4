//! The layers that may turn a request away before a handler sees it: the lifecycle gate
//! (503 while initializing or draining) and the API key check (401); the rate limit (429) is
//! [`super::rate_limit`]. /health passes the lifecycle gate and the rate limit: it must answer
//! while the service is not ready, and monitoring must not be throttled; by default it is the
//! one public route (`security.public_routes`). /metrics passes the lifecycle gate and the rate
//! limit (a scrape must see a starting or draining service, and is never throttled) but needs
//! the API key like the tool routes unless made public: it names tools and their traffic.
//! Whether a key may use a tool is judged by the service (`Service::call_tool`, the scoped
//! tool lists): a call outside its scope is 403 FORBIDDEN.

use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;

use super::reply::Reply;
use crate::service::Service;
use crate::service::lifecycle::Phase;

pub(super) const HEALTH: &str = "/health";
pub(super) const METRICS: &str = "/metrics";

/// Monitoring routes: never gated by the lifecycle, never rate limited.
pub(super) fn is_monitoring(path: &str) -> bool {
    path == HEALTH || path == METRICS
}

/// Seconds a client should wait while the service is initializing or draining.
const RETRY_WHILE_STARTING: u64 = 1;
const RETRY_WHILE_DRAINING: u64 = 5;

/// A check ([`super::guard`]).
pub fn lifecycle_gate(service: &Service, request: &mut Request) -> Option<Response> {
    if is_monitoring(request.uri().path()) || !service.lifecycle.refuses_requests() {
        return None;
    }
    let reply = match service.lifecycle.phase() {
        Phase::Initializing => {
            Reply::error(ErrorCode::ServiceUnavailable, "Service is initializing")
                .retry_after(RETRY_WHILE_STARTING)
        }
        _ => Reply::error(ErrorCode::ServiceUnavailable, "Service is shutting down")
            .retry_after(RETRY_WHILE_DRAINING),
    };
    Some(reply.into_response())
}

/// With keys required, a request outside `security.public_routes` must present an accepted key
/// (401 otherwise); the key's client (name and tool scope) goes with the request. A key sent to
/// a public route is honoured too, so a scoped key sees its own /openapi.json; a wrong one
/// there is ignored, as no key is needed.
/// A check ([`super::guard`]).
pub fn api_key(service: &Service, request: &mut Request) -> Option<Response> {
    let settings = service.settings();
    let security = &settings.config.security;
    if !security.keys_required() {
        return None;
    }
    let client = presented_key(request.headers()).and_then(|key| settings.keys.identify(key));
    match client {
        Some(client) => {
            request.extensions_mut().insert(client);
            None
        }
        None if security.is_public(request.uri().path()) => None,
        None => Some(
            Reply::error(
                ErrorCode::Unauthorized,
                "Missing or invalid API key (send X-API-Key: <key> or Authorization: Bearer <key>)",
            )
            .into_response(),
        ),
    }
}

/// The key in `X-API-Key`, else in `Authorization: Bearer`.
fn presented_key(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get(header::AUTHORIZATION)?
                .to_str()
                .ok()?
                .strip_prefix("Bearer ")
        })
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::client::Client;
    use crate::service::unit_service;
    use axum::body::Body;
    use axum::http::{HeaderMap, HeaderValue, StatusCode};

    /// `printf %s test | sha256sum`: the key "test".
    const KEYS: &str = "security:\n  api_keys:\n    - { name: ci, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 }\n  public_routes: [/health, '/docs*']\n";

    fn get(path: &str, key: Option<&str>) -> Request {
        let mut request = Request::get(path);
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        request.body(Body::empty()).unwrap()
    }

    /// The status, Retry-After seconds and message of a check's answer (the envelope layer
    /// draws the body from the Reply it carries).
    fn refusal(answer: Option<Response>) -> (StatusCode, Option<u64>, String) {
        let answer = answer.expect("the check answers");
        let reply = answer.extensions().get::<Reply>().expect("a Reply");
        assert_eq!(answer.status(), reply.status());
        let (_, error) = reply.outcome.clone().expect_err("an error");
        (reply.status(), reply.retry_after, error)
    }

    #[tokio::test]
    async fn with_keys_a_private_route_needs_one_and_a_public_route_does_not() {
        let service = unit_service(KEYS);
        let (status, _, error) = refusal(api_key(&service, &mut get("/tools", None)));
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(error.starts_with("Missing or invalid API key"), "{error}");
        let wrong = api_key(&service, &mut get("/tools", Some("nope")));
        assert_eq!(wrong.map(|a| a.status()), Some(StatusCode::UNAUTHORIZED));

        let mut accepted = get("/tools", Some("test"));
        assert!(api_key(&service, &mut accepted).is_none());
        let client = accepted
            .extensions()
            .get::<Client>()
            .expect("the key's client goes on");
        assert_eq!(client.as_str(), "ci");

        for public in ["/health", "/docs", "/docs/index.html"] {
            let mut request = get(public, None);
            assert!(api_key(&service, &mut request).is_none(), "{public}");
            assert!(request.extensions().get::<Client>().is_none());
        }
        // A key sent to a public route is honoured, a wrong one there ignored.
        let mut keyed = get("/health", Some("test"));
        assert!(api_key(&service, &mut keyed).is_none());
        assert!(keyed.extensions().get::<Client>().is_some());
        assert!(api_key(&service, &mut get("/health", Some("nope"))).is_none());
    }

    #[tokio::test]
    async fn without_keys_every_route_is_open() {
        let service = unit_service("");
        assert!(api_key(&service, &mut get("/tools", None)).is_none());
    }

    #[tokio::test]
    async fn the_lifecycle_gate_says_which_phase_and_when_to_retry_but_lets_monitoring_through() {
        let service = unit_service("");
        assert!(lifecycle_gate(&service, &mut get("/tools", None)).is_none());

        service.lifecycle.set(Phase::Initializing);
        let (status, retry, error) = refusal(lifecycle_gate(&service, &mut get("/tools", None)));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry, Some(1));
        assert_eq!(error, "Service is initializing");
        for monitoring in [HEALTH, METRICS] {
            assert!(lifecycle_gate(&service, &mut get(monitoring, None)).is_none());
        }

        service.lifecycle.set(Phase::ShuttingDown);
        let (status, retry, error) = refusal(lifecycle_gate(&service, &mut get("/tools", None)));
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(retry, Some(5));
        assert_eq!(error, "Service is shutting down");
        assert!(lifecycle_gate(&service, &mut get(HEALTH, None)).is_none());
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
            .collect()
    }

    #[test]
    fn the_key_comes_from_x_api_key_else_a_bearer_token() {
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
}
