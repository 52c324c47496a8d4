//! The rate-limit layer: names the client (the API key's name, set by the key check, else the
//! peer address), takes one request from its allowance of `security.rate_limit` per minute
//! ([`crate::service::rate_limit`]) and says how much is left: in the `RateLimit` and
//! `RateLimit-Policy` headers (draft-ietf-httpapi-ratelimit-headers) and in
//! `meta.rate_limit_remaining`. Past the allowance the answer is 429 with `Retry-After`.
//! /health and /metrics are not counted: monitoring must never be throttled.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;

use super::guards::is_monitoring;
use super::reply::Reply;
use crate::service::Service;
use crate::service::rate_limit::{Client, Decision};

/// The policy's name in the headers.
const POLICY: &str = "per-client";

pub async fn rate_limit(
    State(service): State<Arc<Service>>,
    mut request: Request,
    next: Next,
) -> Response {
    let client = match request.extensions().get::<Client>() {
        Some(client) => client.clone(),
        None => request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| Client::of_peer(*peer))
            .unwrap_or_else(Client::unknown),
    };
    request.extensions_mut().insert(client.clone());
    if is_monitoring(request.uri().path()) {
        let mut response = next.run(request).await;
        response.extensions_mut().insert(client);
        return response;
    }
    let per_minute = service.settings().config.security.rate_limit;
    let decision = service
        .rate_limiter
        .take(client.as_str(), None, per_minute)
        .await;
    let mut response = if decision.allowed {
        next.run(request).await
    } else {
        tracing::warn!(client = client.as_str(), "rate limit exceeded");
        service.metrics.rate_limited();
        Reply::error(
            ErrorCode::RateLimited,
            format!(
                "Rate limit of {per_minute} requests per minute exceeded for client '{}'; retry after {} s",
                client.as_str(),
                decision.retry_after
            ),
        )
        .retry_after(decision.retry_after)
        .into_response()
    };
    if let Some(reply) = response.extensions_mut().get_mut::<Reply>() {
        reply.meta.rate_limit_remaining = Some(decision.remaining);
    }
    let headers = response.headers_mut();
    for (name, value) in rate_limit_headers(&decision) {
        headers.insert(name, value);
    }
    // For the access log line and the per-key metrics, outside this layer.
    response.extensions_mut().insert(client);
    response
}

/// `RateLimit-Policy: "per-client";q=<limit>;w=60` and `RateLimit: "per-client";r=<remaining>;t=<reset>`.
fn rate_limit_headers(decision: &Decision) -> [(HeaderName, HeaderValue); 2] {
    let policy = format!("\"{POLICY}\";q={};w=60", decision.limit);
    let state = format!(
        "\"{POLICY}\";r={};t={}",
        decision.remaining, decision.reset_seconds
    );
    [
        (
            HeaderName::from_static("ratelimit-policy"),
            HeaderValue::from_str(&policy).expect("ASCII"),
        ),
        (
            HeaderName::from_static("ratelimit"),
            HeaderValue::from_str(&state).expect("ASCII"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_as_the_draft_writes_them() {
        let [(p, pv), (s, sv)] = rate_limit_headers(&Decision {
            allowed: true,
            limit: 1000,
            remaining: 998,
            reset_seconds: 1,
            retry_after: 0,
        });
        assert_eq!(p, "ratelimit-policy");
        assert_eq!(pv, "\"per-client\";q=1000;w=60");
        assert_eq!(s, "ratelimit");
        assert_eq!(sv, "\"per-client\";r=998;t=1");
    }
}
