//! `GET /.well-known/oauth-protected-resource[/mcp]`: the RFC 9728 documents of the service
//! and of its MCP endpoint ([`Resource`] says which identifier each names).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Request, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::service::Service;
pub use crate::service::oauth::{MCP_METADATA_PATH, METADATA_PATH, Resource, is_metadata_path};

/// service has no `security.oauth`.
pub async fn metadata(State(service): State<Arc<Service>>, request: Request) -> Response {
    let settings = service.settings();
    let Some(oauth) = settings.config.security.oauth.as_ref() else {
        let path = request.uri().path();
        return super::reply::Reply::error(
            contract::ErrorCode::NotFound,
            format!("No route for GET {path}"),
        )
        .into_response();
    };
    let resource = Resource::of(&settings, &request);
    let mut document = json!({
        "resource": resource.identifier(),
        "authorization_servers": [oauth.issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": settings.config.service.name.as_str(),
        "resource_documentation": format!("{}/docs", resource.base()),
    });
    if !oauth.scopes.is_empty() {
        document["scopes_supported"] =
            Value::from(oauth.scopes.keys().cloned().collect::<Vec<_>>());
    }
    ([(header::CACHE_CONTROL, "max-age=300")], Json(document)).into_response()
}
