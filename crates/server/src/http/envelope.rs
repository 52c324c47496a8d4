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
use super::request_id::{RequestId, RequestIdError};
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
    /// `Prefer: identity`: `meta.identity` says who the caller was taken for.
    identity: bool,
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
                .map_err(|_| RequestIdError::NotText)
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
                    refusal, fresh, &trace_id, started, &method, &path, false,
                ));
            }
        };
        request.extensions_mut().insert(request_id.clone());
        let identity = super::handlers::prefers(request.headers(), "identity");
        ControlFlow::Continue(Pending {
            started,
            request_id,
            trace_id,
            method,
            path,
            identity,
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
            p.identity,
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
        false,
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
    identity: bool,
) -> Response {
    let (mut parts, body) = response.into_parts();
    let client = parts.extensions.get::<Client>().cloned();
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
            if identity {
                meta.identity = client.as_ref().and_then(identity_of);
            }
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
            if let Some(location) = reply
                .accepted_at
                .as_deref()
                .and_then(|l| HeaderValue::from_str(l).ok())
            {
                // A task: where to read it, that the preference was followed, when to read.
                parts.headers.insert(header::LOCATION, location);
                parts.headers.insert(
                    "preference-applied",
                    HeaderValue::from_static("respond-async"),
                );
                parts
                    .headers
                    .insert(header::RETRY_AFTER, HeaderValue::from(1));
            }
            if let Some(challenge) = reply
                .challenge
                .as_deref()
                .and_then(|c| HeaderValue::from_str(c).ok())
            {
                parts.headers.insert(header::WWW_AUTHENTICATE, challenge);
            }
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

/// What `meta.identity` says of a client: only a credential's holder, never a peer address.
fn identity_of(client: &Client) -> Option<contract::Identity> {
    let (kind, client_id, scopes) = match (client.token(), client.key_name()) {
        (Some(token), _) => (
            contract::IdentityKind::Oauth,
            token.client_id.as_deref().map(str::to_owned),
            token.scopes.clone(),
        ),
        (None, Some(_)) => (contract::IdentityKind::ApiKey, None, Vec::new()),
        (None, None) => return None,
    };
    Some(contract::Identity {
        kind,
        subject: client.as_str().to_owned(),
        client_id,
        scopes,
    })
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
        StatusCode::UNAUTHORIZED => (
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

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use axum::routing::{any, get, post};
    use tower::ServiceExt;

    use super::*;

    /// Routes that answer a bare status (as a library would, not a [`Reply`]), and a plain
    /// success body, behind every layer of a service.
    fn app() -> Router {
        let routes = Router::new()
            .route(
                "/status/{code}",
                any(
                    |axum::extract::Path(code): axum::extract::Path<u16>| async move {
                        StatusCode::from_u16(code).unwrap()
                    },
                ),
            )
            .route("/plain", get(|| async { "plain text" }))
            .route("/mcp/x", get(|| async { StatusCode::NOT_FOUND }))
            .route("/sse", get(|| async { StatusCode::NOT_FOUND }))
            .route("/messages", post(|| async { StatusCode::NOT_FOUND }))
            .route("/mcpx", get(|| async { StatusCode::NOT_FOUND }))
            .route(
                "/accepted",
                get(|| async {
                    Reply::accepted(serde_json::json!({"task_id": "t"}), "/tasks/t".into())
                }),
            );
        super::super::with_layers(routes, super::super::unit_service(""))
    }

    async fn send(request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Bytes) {
        let response = app().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        (parts.status, parts.headers, body)
    }

    fn get_(path: &str) -> Request<Body> {
        Request::get(path).body(Body::empty()).unwrap()
    }

    /// A call accepted as a task: 202 and the envelope, with where to read it, that the
    /// preference was followed, and when to read it.
    #[tokio::test]
    async fn an_accepted_reply_is_202_with_its_location() {
        let (status, headers, body) = send(get_("/accepted")).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        assert_eq!(headers[header::LOCATION], "/tasks/t");
        assert_eq!(headers["preference-applied"], "respond-async");
        assert_eq!(headers[header::RETRY_AFTER], "1");
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(contract::envelope::check(&body, 202).is_ok(), "{body}");
        assert_eq!(body["data"]["task_id"], "t");
        // An ordinary success has none of them.
        let (status, headers, _) = send(get_("/status/200")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!headers.contains_key(header::LOCATION));
    }

    #[tokio::test]
    async fn an_answer_that_is_not_a_reply_becomes_the_envelope_of_its_status() {
        for (status, code, message, retry_after) in [
            (404, "NOT_FOUND", "No route for GET /status/404", false),
            (
                405,
                "METHOD_NOT_ALLOWED",
                "Method GET is not allowed on /status/405",
                false,
            ),
            (413, "PAYLOAD_TOO_LARGE", "Request body is too large", false),
            (
                431,
                "HEADERS_TOO_LARGE",
                "Request header fields are too large",
                false,
            ),
            (401, "UNAUTHORIZED", "Missing or invalid API key", false),
            (403, "FORBIDDEN", "Forbidden", false),
            (429, "RATE_LIMITED", "Too many requests", true),
            (503, "SERVICE_UNAVAILABLE", "Service unavailable", true),
            (504, "TIMEOUT", "The request timed out", false),
            (408, "TIMEOUT", "The request timed out", false),
            (
                418,
                "INVALID_REQUEST",
                "Invalid request (418 I'm a teapot)",
                false,
            ),
            (
                502,
                "INTERNAL_ERROR",
                "Internal error while handling the request",
                false,
            ),
        ] {
            let (got, headers, body) = send(get_(&format!("/status/{status}"))).await;
            let envelope: Envelope = serde_json::from_slice(&body).unwrap();
            let wanted: ErrorCode = serde_json::from_value(serde_json::json!(code)).unwrap();
            assert_eq!(envelope.code, Some(wanted), "{status}");
            assert_eq!(got.as_u16(), wanted.http_status(), "{status}");
            assert_eq!(envelope.error.as_deref(), Some(message), "{status}");
            assert!(!envelope.success);
            assert_eq!(headers[header::CONTENT_TYPE], "application/json");
            assert_eq!(
                headers
                    .get(header::RETRY_AFTER)
                    .map(|v| v.to_str().unwrap()),
                retry_after.then_some("1"),
                "{status}"
            );
            let id = headers[REQUEST_ID_HEADER].to_str().unwrap();
            assert_eq!(envelope.request_id, id);
            assert!(contract::envelope::is_uuid_v4(id));
            assert!(envelope.meta.unwrap().execution_time_ms.is_some());
        }
    }

    #[tokio::test]
    async fn success_and_redirects_that_are_not_replies_pass_unchanged() {
        for status in [200, 204, 301, 304] {
            let (got, headers, body) = send(get_(&format!("/status/{status}"))).await;
            assert_eq!(got.as_u16(), status);
            assert!(body.is_empty(), "{status}: {body:?}");
            assert!(headers.contains_key(REQUEST_ID_HEADER), "{status}");
        }
        let (status, _, body) = send(get_("/plain")).await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"plain text"[..]));
    }

    /// The MCP endpoints speak JSON-RPC: their own answers are never enveloped. A path that
    /// only begins like them is an ordinary route.
    #[tokio::test]
    async fn mcp_answers_pass_as_they_are() {
        for (method, path) in [("GET", "/mcp/x"), ("GET", "/sse"), ("POST", "/messages")] {
            let request = Request::builder()
                .method(method)
                .uri(path)
                .body(Body::empty())
                .unwrap();
            let (status, _, body) = send(request).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            assert!(body.is_empty(), "{path}: {body:?}");
        }
        let (_, _, body) = send(get_("/mcpx")).await;
        let envelope: Envelope = serde_json::from_slice(&body).unwrap();
        assert_eq!(envelope.code, Some(ErrorCode::NotFound));
    }

    #[tokio::test]
    async fn a_given_request_id_is_kept_and_a_malformed_one_refused_under_a_fresh_id() {
        let given = "3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c";
        let request = Request::get("/status/404")
            .header(REQUEST_ID_HEADER, given)
            .body(Body::empty())
            .unwrap();
        let (_, headers, body) = send(request).await;
        assert_eq!(headers[REQUEST_ID_HEADER], given);
        let envelope: Envelope = serde_json::from_slice(&body).unwrap();
        assert_eq!(envelope.request_id, given);

        let request = Request::get("/plain")
            .header(REQUEST_ID_HEADER, "not-a-uuid")
            .body(Body::empty())
            .unwrap();
        let (status, headers, body) = send(request).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let envelope: Envelope = serde_json::from_slice(&body).unwrap();
        assert_eq!(envelope.code, Some(ErrorCode::InvalidRequest));
        assert!(
            envelope
                .error
                .as_deref()
                .unwrap()
                .starts_with("X-Request-Id: request_id must be a UUID v4"),
            "{:?}",
            envelope.error
        );
        let fresh = headers[REQUEST_ID_HEADER].to_str().unwrap();
        assert!(contract::envelope::is_uuid_v4(fresh));
        assert_eq!(envelope.request_id, fresh);
    }

    /// A method the route does not take is refused before anything else is read, its
    /// X-Request-Id included: the envelope under a fresh id, with `Allow`.
    #[tokio::test]
    async fn a_refused_method_is_answered_before_the_request_id_is_read() {
        let request = Request::delete("/tools")
            .header(REQUEST_ID_HEADER, "not-a-uuid")
            .body(Body::empty())
            .unwrap();
        let (status, headers, body) = send(request).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert!(headers.contains_key(header::ALLOW));
        let envelope: Envelope = serde_json::from_slice(&body).unwrap();
        assert_eq!(envelope.code, Some(ErrorCode::MethodNotAllowed));
        assert_eq!(
            envelope.error.as_deref(),
            Some("Method DELETE is not allowed on /tools")
        );
        let id = headers[REQUEST_ID_HEADER].to_str().unwrap();
        assert!(contract::envelope::is_uuid_v4(id));
        assert_eq!(envelope.request_id, id);
        assert!(envelope.meta.unwrap().execution_time_ms.is_some());
    }
}
