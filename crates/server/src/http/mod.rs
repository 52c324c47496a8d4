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

/// The router of one service.
pub fn router(service: Arc<Service>) -> Router {
    let routes = Router::new()
        .route("/tools", get(handlers::list_tools))
        .route("/call-tool", post(handlers::call_tool))
        .route("/tools/{name}", post(handlers::call_tool_by_name))
        .route("/health", get(handlers::health))
        .route("/openapi.json", get(handlers::openapi))
        .method_not_allowed_fallback(handlers::method_not_allowed)
        .fallback(handlers::not_found)
        .with_state(service.clone());
    let docs: Router = SwaggerUi::new("/docs").config(Config::new(["/openapi.json"])).into();
    routes
        .merge(docs)
        .layer(CatchPanicLayer::custom(|_panic: Box<dyn std::any::Any + Send>| {
            tracing::error!("a handler panicked");
            Reply::error(ErrorCode::InternalError, "Internal error while handling the request").into_response()
        }))
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
            origin.to_str().is_ok_and(|o| service.settings().allows_origin(o))
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
