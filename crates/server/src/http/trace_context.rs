//! W3C Trace Context on every request, REST and MCP alike: the `traceparent`/`tracestate` a
//! caller sent (ignored when invalid, as the specification asks — never an error), or a new
//! trace; the request's server span, ended with the answer's status.
//!
//! The span's [`TraceContext`] goes into the request's extensions, where the envelope layer
//! (the access log), the handlers and the MCP surface take it for the calls they make.
//!
//! No `traceparent` is echoed on the response: Trace Context defines it as a request header
//! only (the response header, `traceresponse`, is still a Level 2 draft). A caller correlates
//! through `X-Request-Id`, logged together with the trace id.

use std::ops::ControlFlow;
use std::sync::Arc;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderMap;
use axum::response::Response;

use super::around::Around;
use crate::service::Service;
use crate::service::client::Client;
use crate::telemetry::traceparent::{self, TRACEPARENT, TRACESTATE};
use crate::telemetry::{Span, TraceParent};

/// The request's server span ([`super::around`]): started on the way in, ended with the
/// answer's status.
#[derive(Clone)]
pub struct TraceLayer(pub Arc<Service>);

impl Around for TraceLayer {
    type Noted = Span;

    fn before(&self, request: &mut Request) -> ControlFlow<Response, Span> {
        let exporter = self.0.spans();
        // The route's template, not the path: `/tools/{name}` is one route however many tools.
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map(|m| m.as_str().to_owned());
        let method = request.method();
        // The name and the attributes are only read by an exporter: without one, none is built.
        let name = match (&exporter, &route) {
            (None, _) => String::new(),
            (Some(_), Some(route)) => format!("{method} {route}"),
            (Some(_), None) => method.to_string(),
        };
        let mut span = Span::server(incoming(request.headers()), exporter, name);
        if span.is_recording() {
            span.set("http.request.method", method.to_string());
            span.set("url.path", request.uri().path().to_owned());
            span.set("url.scheme", "http");
            if let Some(route) = route {
                span.set("http.route", route);
            }
            if let Some(agent) = request
                .headers()
                .get(axum::http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
            {
                span.set("user_agent.original", agent.to_owned());
            }
        }
        request.extensions_mut().insert(span.context().clone());
        ControlFlow::Continue(span)
    }

    fn after(&self, mut span: Span, response: &mut Response) {
        // Who called, when a credential says it: the API key's name or the token's subject
        // (OpenTelemetry's `enduser.id`), and the OAuth client it came through. Never a
        // peer address, never a token.
        if span.is_recording()
            && let Some(client) = response.extensions().get::<Client>()
        {
            if client.key_name().is_some() || client.token().is_some() {
                span.set("enduser.id", client.as_str().to_owned());
            }
            if let Some(client_id) = client.token().and_then(|t| t.client_id.clone()) {
                span.set("oauth.client_id", client_id.to_string());
            }
        }
        let status = response.status().as_u16();
        span.set("http.response.status_code", i64::from(status));
        // A server span fails on 5xx only: a 4xx is the client's error, not the server's.
        if status >= 500 {
            span.fail(status.to_string(), format!("answered {status}"));
        }
    }
}

/// The caller's trace, when its `traceparent` is valid; its `tracestate` goes with it (and
/// only then: without a valid parent the state has nothing to belong to).
fn incoming(headers: &HeaderMap) -> Option<(TraceParent, Option<String>)> {
    let mut parents = headers.get_all(TRACEPARENT).iter();
    let first = parents.next()?;
    // Two traceparent fields cannot both be the parent: neither is trusted.
    if parents.next().is_some() {
        return None;
    }
    let parent = TraceParent::parse(first.to_str().ok()?)?;
    let state = traceparent::tracestate(
        headers
            .get_all(TRACESTATE)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    );
    Some((parent, state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_parent_is_taken_with_its_state() {
        let mut headers = HeaderMap::new();
        headers.insert(TRACEPARENT, HeaderValue::from_static(PARENT));
        headers.append(TRACESTATE, HeaderValue::from_static("a=1"));
        headers.append(TRACESTATE, HeaderValue::from_static("b=2"));
        let (parent, state) = incoming(&headers).unwrap();
        assert_eq!(parent.format(), PARENT);
        assert_eq!(state.as_deref(), Some("a=1,b=2"));
    }

    #[test]
    fn an_invalid_or_repeated_parent_is_ignored() {
        let mut headers = HeaderMap::new();
        headers.insert(TRACEPARENT, HeaderValue::from_static("00-zz-00-01"));
        headers.insert(TRACESTATE, HeaderValue::from_static("a=1"));
        assert!(incoming(&headers).is_none());
        headers.insert(TRACEPARENT, HeaderValue::from_static(PARENT));
        headers.append(TRACEPARENT, HeaderValue::from_static(PARENT));
        assert!(incoming(&headers).is_none());
        assert!(incoming(&HeaderMap::new()).is_none());
    }
}
