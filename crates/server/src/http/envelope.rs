//! The layer that gives each request its id, turns every answer into the envelope, sets
//! `X-Request-Id` and `Retry-After`, and writes the one log line per request (with the trace
//! id the trace-context layer outside it gave the request, and the client the layers inside
//! it named: the API key's name, never its value, or the peer address).
//!
//! Answers that are not [`Reply`]s (axum's own 405, a 404 inside the Swagger UI, anything a
//! library answers on its own) are converted by status, so no non-envelope error body leaves.
//! Successful non-envelope bodies (Swagger UI, /openapi.json, CORS preflight) pass through.

use std::ops::ControlFlow;
use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header, response::Parts};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use contract::envelope::{OK_BODY_BEFORE_DATA, ok_body_after_data};
use contract::{Envelope, ErrorCode, REQUEST_ID_HEADER};

use super::around::Around;
use super::reply::{Data, Reply};
use super::request_id::RequestId;
use super::spliced::Spliced;
use crate::clock::timestamp;
use crate::service::client::Client;
use crate::telemetry::TraceContext;

/// The envelope ([`super::around`]): the request id on the way in (and the answers that
/// need none of the layers inside), the envelope, headers and log line on the answer.
#[derive(Clone)]
pub struct EnvelopeLayer;

/// What the answer is finished with.
pub struct Pending {
    started: Instant,
    request_id: RequestId,
    trace_id: String,
    method: Method,
    path: String,
}

impl Around for EnvelopeLayer {
    type Noted = Pending;

    fn before(&self, request: &mut Request) -> ControlFlow<Response, Pending> {
        let started = Instant::now();
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let trace_id = request
            .extensions()
            .get::<TraceContext>()
            .map(|t| t.trace_id().to_string())
            .unwrap_or_default();
        // The method is judged before anything about the content, the request id included.
        if let Some(refusal) = super::methods::refusal(&method, &path) {
            return ControlFlow::Break(unread(request, refusal, started));
        }
        let from_header = request.headers().get(REQUEST_ID_HEADER).map(|v| {
            v.to_str()
                .map_err(|_| "request_id must be a UUID v4".to_owned())
                .and_then(RequestId::parse)
        });
        let request_id = match from_header {
            None => RequestId::generate(),
            Some(Ok(id)) => id,
            Some(Err(message)) => {
                let refusal = Reply::error(
                    ErrorCode::InvalidRequest,
                    format!("X-Request-Id: {message}"),
                )
                .into_response();
                let fresh = RequestId::generate();
                return ControlFlow::Break(finish(
                    refusal, fresh, &trace_id, started, &method, &path,
                ));
            }
        };
        request.extensions_mut().insert(request_id.clone());
        ControlFlow::Continue(Pending {
            started,
            request_id,
            trace_id,
            method,
            path,
        })
    }

    fn span(&self, p: &Pending) -> tracing::Span {
        tracing::info_span!("request", request_id = %p.request_id, trace_id = %p.trace_id, method = %p.method, path = %p.path)
    }

    // Outside the span: the access line carries the request's fields itself, and a line
    // inside the span would have the JSON formatter write (and re-read) them a second time.
    fn after(&self, p: Pending, response: &mut Response) {
        let answer = std::mem::take(response);
        *response = finish(
            answer,
            p.request_id,
            &p.trace_id,
            p.started,
            &p.method,
            &p.path,
        );
    }
}

/// Answers a request refused before its content is read (its `X-Request-Id` included, so
/// the answer has a fresh id): the envelope, the headers and the log line as for any other.
/// For the layers that judge a request first (methods here, `hosts` outside this layer).
pub(super) fn unread(request: &Request, refusal: Response, started: Instant) -> Response {
    let (method, path) = (request.method(), request.uri().path());
    let trace_id = request
        .extensions()
        .get::<TraceContext>()
        .map(|t| t.trace_id().to_string())
        .unwrap_or_default();
    finish(
        refusal,
        RequestId::generate(),
        &trace_id,
        started,
        method,
        path,
    )
}

/// Draws the envelope, sets the headers, logs the request.
fn finish(
    response: Response,
    request_id: RequestId,
    trace_id: &str,
    started: Instant,
    method: &Method,
    path: &str,
) -> Response {
    let (mut parts, body) = response.into_parts();
    // /mcp speaks JSON-RPC: its own answers pass as they are.
    let mcp = path == "/mcp" || path.starts_with("/mcp/") || path == "/sse" || path == "/messages";
    let foreign = if mcp {
        None
    } else {
        foreign_error(&parts, method, path)
    };
    let reply = parts.extensions.remove::<Reply>().or(foreign);
    let execution_time_ms = started.elapsed().as_millis() as u64;
    let (response, request_id, code, tool) = match reply {
        None => (Response::from_parts(parts, body), request_id, None, None),
        Some(reply) => {
            let request_id = reply.request_id.clone().unwrap_or(request_id);
            let status = reply.status();
            let mut meta = *reply.meta;
            meta.execution_time_ms = Some(execution_time_ms);
            let tool = meta.tool.clone();
            let (body, code) = match reply.outcome {
                // The shared text goes out as it is, between the envelope's other members.
                Ok(Data::Json(data)) => (
                    Body::new(Spliced::new([
                        Bytes::from_static(OK_BODY_BEFORE_DATA),
                        data,
                        ok_body_after_data(request_id.as_str(), &timestamp(), Some(&meta)).into(),
                    ])),
                    None,
                ),
                Ok(Data::Value(data)) => (
                    to_body(&Envelope::ok(
                        data,
                        request_id.to_string(),
                        timestamp(),
                        Some(meta),
                    )),
                    None,
                ),
                Err((code, message)) => (
                    to_body(&Envelope::err(
                        code,
                        message,
                        request_id.to_string(),
                        timestamp(),
                        Some(meta),
                    )),
                    Some(code),
                ),
            };
            parts.status = status;
            parts.headers.remove(header::CONTENT_LENGTH);
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            if code.is_some_and(ErrorCode::has_retry_after) {
                let seconds = reply.retry_after.unwrap_or(1);
                parts
                    .headers
                    .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            }
            (Response::from_parts(parts, body), request_id, code, tool)
        }
    };
    let mut response = response;
    let client = response.extensions().get::<Client>().cloned();
    if let Some(code) = code {
        // For the request metrics outside this layer.
        response.extensions_mut().insert(code);
    }
    if let Ok(value) = HeaderValue::from_str(request_id.as_str()) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    tracing::info!(
        target: "mcp_http_gateway::access",
        request_id = %request_id,
        trace_id,
        method = %method,
        path = %path,
        client = client.as_ref().map(Client::as_str),
        tool = tool.as_deref(),
        status = response.status().as_u16(),
        code = code.map(ErrorCode::as_str),
        execution_time_ms,
        "request"
    );
    response
}

fn to_body(envelope: &Envelope) -> Body {
    Body::from(serde_json::to_vec(envelope).unwrap_or_else(|_| b"{}".to_vec()))
}

/// An error answer that did not come as a [`Reply`], converted by its status.
fn foreign_error(parts: &Parts, method: &Method, path: &str) -> Option<Reply> {
    let status = parts.status;
    if status.is_success() || status.is_redirection() || status.is_informational() {
        return None;
    }
    let (code, message) = match status {
        StatusCode::NOT_FOUND => (ErrorCode::NotFound, format!("No route for {method} {path}")),
        StatusCode::METHOD_NOT_ALLOWED => (
            ErrorCode::MethodNotAllowed,
            format!("Method {method} is not allowed on {path}"),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            ErrorCode::PayloadTooLarge,
            "Request body is too large".to_owned(),
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => (
            ErrorCode::HeadersTooLarge,
            "Request header fields are too large".to_owned(),
        ),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => (
            ErrorCode::Unauthorized,
            "Missing or invalid API key".to_owned(),
        ),
        StatusCode::FORBIDDEN => (ErrorCode::Forbidden, "Forbidden".to_owned()),
        StatusCode::TOO_MANY_REQUESTS => (ErrorCode::RateLimited, "Too many requests".to_owned()),
        StatusCode::SERVICE_UNAVAILABLE => (
            ErrorCode::ServiceUnavailable,
            "Service unavailable".to_owned(),
        ),
        StatusCode::GATEWAY_TIMEOUT | StatusCode::REQUEST_TIMEOUT => {
            (ErrorCode::Timeout, "The request timed out".to_owned())
        }
        s if s.is_client_error() => (ErrorCode::InvalidRequest, format!("Invalid request ({s})")),
        _ => (
            ErrorCode::InternalError,
            "Internal error while handling the request".to_owned(),
        ),
    };
    Some(Reply::error(code, message))
}
