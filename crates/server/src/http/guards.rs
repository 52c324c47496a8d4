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
    use super::presented_key;
    use axum::http::{HeaderMap, HeaderValue};

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
