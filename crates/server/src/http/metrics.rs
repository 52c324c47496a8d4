//! The outermost layer: counts every answered request by route, status and contract error
//! code in the service's metrics. The route is the route's template (`/tools/{name}`), never
//! the path a client sent, so the series stay few whatever clients send.
//!
//! The code comes from the envelope layer, which leaves it in the response's extensions; the
//! client from the rate-limit layer, so requests made with an API key are also counted by the
//! key's name (never by peer address: those are unbounded).

use std::ops::ControlFlow;
use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use contract::ErrorCode;

use super::around::Around;
use super::methods;
use crate::service::Service;
use crate::service::client::Client;

/// The request counter ([`super::around`]): the route on the way in, the status, code and
/// client from the answer.
#[derive(Clone)]
pub struct CountRequests(pub Arc<Service>);

impl Around for CountRequests {
    type Noted = &'static str;

    fn before(&self, request: &mut Request) -> ControlFlow<Response, &'static str> {
        ControlFlow::Continue(methods::route(request.uri().path()))
    }

    fn after(&self, route: &'static str, response: &mut Response) {
        let metrics = &self.0.metrics;
        let code = response.extensions().get::<ErrorCode>().copied();
        metrics.request(route, response.status().as_str(), code);
        if let Some(key) = response
            .extensions()
            .get::<Client>()
            .and_then(Client::key_name)
        {
            metrics.key_request(key, code);
        }
    }
}
