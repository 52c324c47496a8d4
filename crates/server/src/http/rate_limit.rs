//! The rate-limit layer: every route but /health and /metrics takes a token from the service's bucket
//! ([`crate::service::rate_limit`]); past it the answer is 429 with `Retry-After`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;

use super::guards::is_monitoring;
use super::reply::Reply;
use crate::service::Service;

pub async fn rate_limit(
    State(service): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    if !is_monitoring(request.uri().path())
        && let Err(retry_after) = service.rate_limiter.acquire()
    {
        service.metrics.rate_limited();
        let limit = service.settings().config.security.rate_limit;
        return Reply::error(
            ErrorCode::RateLimited,
            format!("Rate limit of {limit} requests per second exceeded"),
        )
        .retry_after(retry_after)
        .into_response();
    }
    next.run(request).await
}
