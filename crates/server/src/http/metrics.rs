//! The outermost layer: counts every answered request by route, status and contract error
//! code in the service's metrics. The route is the route's template (`/tools/{name}`), never
//! the path a client sent, so the series stay few whatever clients send.
//!
//! The code comes from the envelope layer, which leaves it in the response's extensions.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use contract::ErrorCode;

use super::methods;
use crate::service::Service;

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
    response
}
