//! The HTTP surface of one service: the contract's routes, Swagger UI, and the layers that
//! apply to every request.
//!
//! Layer order, outermost first: CORS → envelope (request id, envelope, log line) → lifecycle
//! gate → API key → rate limit → panic catcher → routes.

pub mod envelope;
pub mod guards;
pub mod handlers;
pub mod reply;
pub mod request_id;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use contract::ErrorCode;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{AllowOrigin, CorsLayer};
use utoipa_swagger_ui::{Config, SwaggerUi};

use self::reply::Reply;
use crate::service::Service;

/// The router of one service; `stop` ends its MCP sessions (on shutdown).
pub fn router(service: Arc<Service>, stop: tokio_util::sync::CancellationToken) -> Router {
    let routes = Router::new()
        .route("/tools", get(handlers::list_tools))
        .route("/call-tool", post(handlers::call_tool))
        .route("/tools/{name}", post(handlers::call_tool_by_name))
        .route("/health", get(handlers::health))
        .route("/openapi.json", get(handlers::openapi))
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .fallback(handlers::not_found)
        .with_state(service.clone());
    let docs: Router = SwaggerUi::new("/docs")
        .config(Config::new(["/openapi.json"]))
        .into();
    let rules = service.settings().config.mcp.clone();
    let book = crate::mcp_sessions::SessionBook::new(
        std::time::Duration::from_secs(rules.session_ttl_secs.0),
        rules.max_sessions.0,
    );
    let (endpoint, sessions) = crate::mcp_surface::endpoint(service.clone(), stop.clone());
    crate::mcp_gate::sweep_sessions(book.clone(), sessions, stop);
    let gate = crate::mcp_gate::McpGate {
        book: book.clone(),
        rules: Arc::new(rules),
        in_flight: crate::mcp_gate::InFlight::default(),
        max_body: service.settings().config.limits.max_body_bytes.0 as usize,
    };
    let mcp = Router::new()
        .fallback_service(endpoint)
        .layer(from_fn_with_state(gate.clone(), crate::mcp_gate::gate));
    let legacy = Router::new()
        .route("/sse", get(crate::legacy_sse::open))
        .route("/messages", post(crate::legacy_sse::message))
        .with_state(crate::legacy_sse::SseSessions::new(service.clone(), gate));
    let routes = routes.nest("/mcp", mcp).merge(legacy);
    with_layers(routes.merge(docs), service)
}

/// Wraps routes in the layers every service request goes through.
fn with_layers(routes: Router, service: Arc<Service>) -> Router {
    routes
        .layer(CatchPanicLayer::custom(
            |_panic: Box<dyn std::any::Any + Send>| {
                tracing::error!("a handler panicked");
                Reply::error(
                    ErrorCode::InternalError,
                    "Internal error while handling the request",
                )
                .into_response()
            },
        ))
        .layer(from_fn_with_state(service.clone(), guards::rate_limit))
        .layer(from_fn_with_state(service.clone(), guards::api_key))
        .layer(from_fn_with_state(service.clone(), guards::lifecycle_gate))
        .layer(from_fn(envelope::envelope_layer))
        .layer(cors(service))
}

/// Browser access: the configured origins, or any loopback origin, read at request time so a
/// reload applies.
fn cors(service: Arc<Service>) -> CorsLayer {
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
        ])
        .expose_headers([HeaderName::from_static("x-request-id"), header::RETRY_AFTER])
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    fn service() -> Arc<Service> {
        let config = crate::config::ServiceConfig::parse(
            "service: { name: unit, port: 9999 }\n",
            "unit.yaml",
            std::path::PathBuf::from("."),
        )
        .unwrap();
        let service = Service::new(config).unwrap();
        service.lifecycle.set(crate::lifecycle::Phase::Running);
        service
    }

    /// A panic cannot be provoked from outside on purpose, so this route exists only here.
    #[tokio::test]
    async fn a_panic_is_an_internal_error_envelope() {
        let routes = Router::new().route(
            "/boom",
            get(|| async {
                panic!("boom");
                #[allow(unreachable_code)]
                ()
            }),
        );
        let response = with_layers(routes, service())
            .oneshot(Request::get("/boom").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(response.headers().contains_key("x-request-id"));
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let envelope: contract::Envelope = serde_json::from_slice(&body).unwrap();
        assert!(!envelope.success);
        assert_eq!(envelope.code, Some(ErrorCode::InternalError));
        assert_eq!(
            envelope.error.as_deref(),
            Some("Internal error while handling the request")
        );
    }
}
