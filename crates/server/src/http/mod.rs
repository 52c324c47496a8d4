//! The HTTP surface of one service: the contract's routes, Swagger UI, and the layers that
//! apply to every request.
//!
//! Layer order, outermost first: trace context (W3C `traceparent`, the server span) → request
//! metrics → the status page's headers (on `/status*` only) → Host and Origin (403 before anything acts on the request) → plain OPTIONS → CORS
//! → envelope (methods, request id, envelope, log line) → header limits → lifecycle gate →
//! credentials (API key, OAuth bearer token) → rate limit → panic catcher → routes.

mod around;
pub mod auth;
mod cors;
pub mod envelope;
#[cfg(test)]
mod fuzz;
pub mod guard;
pub mod guards;
pub mod handlers;
pub mod header_limits;
pub mod hosts;
mod methods;
pub mod metrics;
pub mod protected_resource;
pub mod rate_limit;
pub mod reply;
pub mod request_id;
mod spliced;
pub mod status_page;
pub mod trace_context;

use std::sync::Arc;

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use contract::ErrorCode;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_swagger_ui::{Config, SwaggerUi};

use self::around::AroundLayer;
use self::guard::GuardLayer;
use self::reply::Reply;
use crate::service::Service;

/// The REST surface alone behind the layers every request goes through (`runtime` serves it
/// beside the MCP surface: [`routes`] and [`with_layers`]).
pub fn router(service: Arc<Service>) -> Router {
    with_layers(routes(service.clone()), service)
}

/// The REST surface of one service: the contract's routes and Swagger UI, without the layers.
pub fn routes(service: Arc<Service>) -> Router {
    let routes = Router::new()
        .route("/tools", get(handlers::list_tools))
        .route("/call-tool", post(handlers::call_tool))
        .route("/tools/{name}", post(handlers::call_tool_by_name))
        .route("/resources", get(handlers::list_resources))
        .route("/resources/read", get(handlers::read_resource))
        .route(
            "/resource-templates",
            get(handlers::list_resource_templates),
        )
        .route("/prompts", get(handlers::list_prompts))
        .route("/prompts/{name}", post(handlers::get_prompt))
        .route(
            "/tasks/{id}",
            get(handlers::get_task).delete(handlers::cancel_task),
        )
        .route("/health", get(handlers::health))
        .route("/openapi.json", get(handlers::openapi))
        .route("/metrics", get(handlers::metrics))
        .route(status_page::PAGE, get(status_page::page))
        .route("/status/", get(status_page::trailing_slash))
        .route("/status/assets/{file}", get(status_page::asset))
        .route(status_page::DATA, get(status_page::data))
        .route(
            protected_resource::METADATA_PATH,
            get(protected_resource::metadata),
        )
        .route(
            protected_resource::MCP_METADATA_PATH,
            get(protected_resource::metadata),
        )
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .fallback(handlers::not_found)
        .with_state(service.clone());
    // PKCE on: the Authorize button's authorization-code flow (security.oauth) is the one an
    // OAuth 2.1 issuer accepts from a public client.
    let docs: Router = SwaggerUi::new("/docs")
        .config(Config::new(["/openapi.json"]))
        .oauth(utoipa_swagger_ui::oauth::Config::new().use_pkce_with_authorization_code_grant(true))
        .into();
    routes.merge(docs)
}

/// Wraps routes (both surfaces') in the layers every service request goes through, listed in
/// the order a request meets them.
pub fn with_layers(routes: Router, service: Arc<Service>) -> Router {
    routes.layer(
        ServiceBuilder::new()
            .layer(AroundLayer(trace_context::TraceLayer(service.clone())))
            .layer(AroundLayer(metrics::CountRequests(service.clone())))
            .layer(AroundLayer(status_page::StatusHeaders))
            .layer(GuardLayer::new(service.clone(), hosts::check))
            .layer(GuardLayer::new(service.clone(), methods::plain_options))
            .layer(cors::layer(service.clone()))
            .layer(AroundLayer(envelope::EnvelopeLayer))
            .layer(GuardLayer::new(
                service.clone(),
                header_limits::header_limits,
            ))
            .layer(GuardLayer::new(service.clone(), guards::lifecycle_gate))
            .layer(auth::AuthLayer(service.clone()))
            .layer(rate_limit::RateLimitLayer(service))
            .layer(CatchPanicLayer::custom(
                |_panic: Box<dyn std::any::Any + Send>| {
                    tracing::error!("a handler panicked");
                    Reply::error(
                        ErrorCode::InternalError,
                        "Internal error while handling the request",
                    )
                    .into_response()
                },
            )),
    )
}

#[cfg(test)]
pub(crate) use crate::service::unit_service;

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

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
        let response = with_layers(routes, unit_service(""))
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

    /// A scrape must see a service that is starting or draining, and is never throttled.
    #[tokio::test]
    async fn metrics_pass_the_lifecycle_gate_and_the_rate_limit() {
        let service =
            unit_service("monitoring: { metrics_enabled: true }\nsecurity: { rate_limit: 10 }\n");
        service
            .lifecycle
            .set(crate::service::lifecycle::Phase::Initializing);
        let app = router(service.clone());
        let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
        let tools = app.clone().oneshot(get("/tools")).await.unwrap();
        assert_eq!(tools.status(), StatusCode::SERVICE_UNAVAILABLE);
        service
            .lifecycle
            .set(crate::service::lifecycle::Phase::ShuttingDown);
        for _ in 0..50 {
            let response = app.clone().oneshot(get("/metrics")).await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            assert_eq!(
                response.headers()["content-type"],
                crate::service::metrics::CONTENT_TYPE
            );
        }
        let text = service.metrics_text();
        assert!(
            text.contains(
                "mcp_http_gateway_http_requests_total{code=\"none\",route=\"/metrics\",status=\"200\",service=\"unit\"} 50"
            ),
            "{text}"
        );
        assert!(
            text.contains("code=\"SERVICE_UNAVAILABLE\",route=\"/tools\",status=\"503\""),
            "{text}"
        );
    }
}
