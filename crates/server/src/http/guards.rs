//! The layers that may turn a request away before a handler sees it: the lifecycle gate
//! (503 while initializing or draining) and the API key check (401); the rate limit (429) is
//! [`super::rate_limit`]. /health passes them all: it must answer while the service is not
//! ready, and monitoring must not need a key or be throttled. /metrics passes the lifecycle
//! gate and the rate limit (a scrape must see a starting or draining service, and is never
//! throttled) but needs the API key like the tool routes: it names tools and their traffic.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;

use super::reply::Reply;
use crate::service::Service;
use crate::service::lifecycle::Phase;
use crate::service::rate_limit::Client;

pub(super) const HEALTH: &str = "/health";
pub(super) const METRICS: &str = "/metrics";

/// Monitoring routes: never gated by the lifecycle, never rate limited.
pub(super) fn is_monitoring(path: &str) -> bool {
    path == HEALTH || path == METRICS
}

/// Seconds a client should wait while the service is initializing or draining.
const RETRY_WHILE_STARTING: u64 = 1;
const RETRY_WHILE_DRAINING: u64 = 5;

pub async fn lifecycle_gate(
    State(service): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    if !is_monitoring(request.uri().path()) && service.lifecycle.refuses_requests() {
        let reply = match service.lifecycle.phase() {
            Phase::Initializing => {
                Reply::error(ErrorCode::ServiceUnavailable, "Service is initializing")
                    .retry_after(RETRY_WHILE_STARTING)
            }
            _ => Reply::error(ErrorCode::ServiceUnavailable, "Service is shutting down")
                .retry_after(RETRY_WHILE_DRAINING),
        };
        return reply.into_response();
    }
    next.run(request).await
}

pub async fn api_key(
    State(service): State<Arc<Service>>,
    mut request: Request,
    next: Next,
) -> Response {
    let settings = service.settings();
    let path = request.uri().path();
    let public =
        path == HEALTH || path == "/openapi.json" || path == "/docs" || path.starts_with("/docs/");
    if settings.config.security.api_keys_enabled && !public {
        let headers = request.headers();
        let presented = headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok())
            .or_else(|| {
                headers
                    .get(header::AUTHORIZATION)?
                    .to_str()
                    .ok()?
                    .strip_prefix("Bearer ")
            });
        let accepted = presented.and_then(|key| {
            settings
                .api_keys
                .iter()
                .position(|k| same_secret(k, key.trim()))
        });
        let Some(position) = accepted else {
            return Reply::error(
                ErrorCode::Unauthorized,
                "Missing or invalid API key (send X-API-Key: <key> or Authorization: Bearer <key>)",
            )
            .into_response();
        };
        request.extensions_mut().insert(Client::of_key(position));
    }
    next.run(request).await
}

/// Compares without stopping at the first difference, so timing says nothing about the key.
fn same_secret(expected: &str, presented: &str) -> bool {
    let (a, b) = (expected.as_bytes(), presented.as_bytes());
    let mut difference = a.len() ^ b.len();
    for (i, byte) in b.iter().enumerate() {
        difference |= usize::from(a.get(i).copied().unwrap_or(0) ^ byte);
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::same_secret;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("k-one", "k-one"));
        assert!(!same_secret("k-one", "k-on"));
        assert!(!same_secret("k-one", "k-one2"));
        assert!(!same_secret("k-one", "K-one"));
        assert!(!same_secret("", "x"));
    }
}
