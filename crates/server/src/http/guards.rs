//! The lifecycle gate (503 while initializing or draining); the credentials check (401) is
//! [`super::auth`], the rate limit (429) [`super::rate_limit`]. /health passes the lifecycle gate and the rate limit: it must answer
//! while the service is not ready, and monitoring must not be throttled; by default it is the
//! one public route (`security.public_routes`). /metrics passes the lifecycle gate and the rate
//! limit (a scrape must see a starting or draining service, and is never throttled) but needs
//! the API key like the tool routes unless made public: it names tools and their traffic.
//! Whether a key may use a tool is judged by the service (`Service::call_tool`, the scoped
//! tool lists): a call outside its scope is 403 FORBIDDEN.

use axum::extract::Request;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::unit_service;
    use axum::body::Body;
    use axum::http::StatusCode;

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
}
