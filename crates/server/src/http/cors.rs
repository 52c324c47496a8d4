//! Browser access to the REST routes: the configured origins, or any loopback origin, read at
//! request time so a reload applies.

use std::sync::Arc;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::service::Service;

pub fn layer(service: Arc<Service>) -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(move |origin: &HeaderValue, _| {
            origin
                .to_str()
                .is_ok_and(|o| service.settings().allows_origin(o))
        }))
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            HeaderName::from_static("x-request-id"),
            HeaderName::from_static("x-api-key"),
            // W3C Trace Context, as browser OpenTelemetry instrumentation sends it.
            HeaderName::from_static("traceparent"),
            HeaderName::from_static("tracestate"),
        ])
        .expose_headers([
            HeaderName::from_static("x-request-id"),
            header::RETRY_AFTER,
            HeaderName::from_static("ratelimit"),
            HeaderName::from_static("ratelimit-policy"),
        ])
}
