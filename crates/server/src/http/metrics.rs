//! The outermost layer: counts every answered request by route, status and contract error
//! code in the service's metrics. The route is the route's template (`/tools/{name}`), never
//! the path a client sent, so the series stay few whatever clients send.
//!
//! The code comes from the envelope layer, which leaves it in the response's extensions; the
//! client from the rate-limit layer, so requests made with an API key are also counted by the
//! key's name (never by peer address: those are unbounded).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use contract::ErrorCode;

use super::methods;
use crate::service::Service;
use crate::service::client::Client;

pub async fn count_requests(
    State(service): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    let route = methods::route(request.uri().path());
    let response = next.run(request).await;
    let code = response.extensions().get::<ErrorCode>().copied();
    service
        .metrics
        .request(route, response.status().as_str(), code);
    if let Some(key) = response
        .extensions()
        .get::<Client>()
        .and_then(Client::key_name)
    {
        service.metrics.key_request(key, code);
    }
    response
}
