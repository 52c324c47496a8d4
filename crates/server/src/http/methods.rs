//! Which methods each route takes, judged before anything about the request's content: an
//! undeclared method is 405 `METHOD_NOT_ALLOWED` with `Allow` (even with an odd
//! `X-Request-Id` or body), and a plain `OPTIONS` (not a CORS preflight) is 204 with `Allow`.
//!
//! The CORS layer answers every OPTIONS as a preflight, so plain ones are taken before it
//! ([`plain_options`]); the rest is judged first thing in the envelope layer ([`refusal`]).

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use contract::{ErrorCode, REQUEST_ID_HEADER};

use super::reply::Reply;
use super::request_id::RequestId;
use crate::service::Service;

const GET: &[Method] = &[Method::GET, Method::HEAD];
const POST: &[Method] = &[Method::POST];
/// A task: read it, or cancel it.
const TASK: &[Method] = &[Method::GET, Method::HEAD, Method::DELETE];
/// rmcp's Streamable HTTP endpoint: POST messages, GET the stream, DELETE the session.
const MCP: &[Method] = &[Method::GET, Method::HEAD, Method::POST, Method::DELETE];

/// The methods a path takes besides OPTIONS; `None` for a path no route serves (404).
pub fn allowed(path: &str) -> Option<&'static [Method]> {
    match path {
        "/tools"
        | "/health"
        | "/openapi.json"
        | "/sse"
        | "/metrics"
        | "/resources"
        | "/resources/read"
        | "/resource-templates"
        | "/prompts"
        | "/status"
        | "/status/"
        | "/status/data" => Some(GET),
        "/call-tool" | "/messages" => Some(POST),
        "/mcp" => Some(MCP),
        _ if path.starts_with("/mcp/") => Some(MCP),
        _ if path == "/docs" || path.starts_with("/docs/") => Some(GET),
        _ if super::status_page::asset_name(path).is_some() => Some(GET),
        _ if path
            .strip_prefix("/tools/")
            .or_else(|| path.strip_prefix("/prompts/"))
            .is_some_and(|name| !name.is_empty() && !name.contains('/')) =>
        {
            Some(POST)
        }
        _ if task_id(path).is_some() => Some(TASK),
        _ => None,
    }
}

/// The route a path falls under, as a metrics label: its template, or `other` for a path no
/// route serves.
pub fn route(path: &str) -> &'static str {
    match path {
        "/tools" => "/tools",
        "/health" => "/health",
        "/openapi.json" => "/openapi.json",
        "/metrics" => "/metrics",
        "/call-tool" => "/call-tool",
        "/resources" => "/resources",
        "/resources/read" => "/resources/read",
        "/resource-templates" => "/resource-templates",
        "/prompts" => "/prompts",
        "/sse" => "/sse",
        "/messages" => "/messages",
        "/mcp" => "/mcp",
        "/status" | "/status/" => "/status",
        "/status/data" => "/status/data",
        _ if super::status_page::asset_name(path).is_some() => "/status/assets/{file}",
        _ if path.starts_with("/mcp/") => "/mcp",
        _ if path == "/docs" || path.starts_with("/docs/") => "/docs",
        _ if path
            .strip_prefix("/tools/")
            .is_some_and(|name| !name.is_empty() && !name.contains('/')) =>
        {
            "/tools/{name}"
        }
        _ if path
            .strip_prefix("/prompts/")
            .is_some_and(|name| !name.is_empty() && !name.contains('/')) =>
        {
            "/prompts/{name}"
        }
        _ if task_id(path).is_some() => "/tasks/{id}",
        _ => "other",
    }
}

/// The id in `/tasks/{id}`.
fn task_id(path: &str) -> Option<&str> {
    path.strip_prefix("/tasks/")
        .filter(|id| !id.is_empty() && !id.contains('/'))
}

/// The `Allow` header value of a path's methods, OPTIONS included.
pub fn allow_header(methods: &[Method]) -> HeaderValue {
    let mut names: Vec<&str> = methods.iter().map(Method::as_str).collect();
    names.push("OPTIONS");
    HeaderValue::from_str(&names.join(", ")).unwrap_or(HeaderValue::from_static("OPTIONS"))
}

/// The answer for a method the path does not take, or a plain OPTIONS; `None` to go on.
pub fn refusal(method: &Method, path: &str) -> Option<Response> {
    let methods = allowed(path)?;
    if methods.contains(method) {
        return None;
    }
    let allow = allow_header(methods);
    let mut response = if method == Method::OPTIONS {
        StatusCode::NO_CONTENT.into_response()
    } else {
        Reply::error(
            ErrorCode::MethodNotAllowed,
            format!("Method {method} is not allowed on {path}"),
        )
        .into_response()
    };
    response.headers_mut().insert(header::ALLOW, allow);
    Some(response)
}

/// The layer in front of CORS: an OPTIONS that is not a preflight (no
/// `Access-Control-Request-Method`) on a known route is 204 with `Allow`.
/// A check ([`super::guard`]).
pub fn plain_options(_: &Service, request: &mut Request) -> Option<Response> {
    let preflight = request
        .headers()
        .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if request.method() != Method::OPTIONS || preflight {
        return None;
    }
    let mut response = refusal(request.method(), request.uri().path())?;
    if let Ok(id) = HeaderValue::from_str(RequestId::generate().as_str()) {
        response.headers_mut().insert(REQUEST_ID_HEADER, id);
    }
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_takes_its_methods() {
        assert!(refusal(&Method::GET, "/tools").is_none());
        assert!(refusal(&Method::HEAD, "/health").is_none());
        assert!(refusal(&Method::POST, "/tools/echo").is_none());
        assert!(refusal(&Method::DELETE, "/mcp").is_none());
        assert!(
            refusal(&Method::GET, "/nowhere").is_none(),
            "404 is the router's"
        );
        for (method, path) in [
            (Method::TRACE, "/tools"),
            (Method::PUT, "/call-tool"),
            (Method::PATCH, "/health"),
            (Method::DELETE, "/openapi.json"),
            (Method::CONNECT, "/tools/echo"),
            (Method::PUT, "/mcp"),
            (Method::POST, "/docs/"),
            (Method::POST, "/tasks/0b6c"),
        ] {
            let response = refusal(&method, path).expect("refused");
            assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
            assert!(response.extensions().get::<Reply>().is_some());
            assert!(
                response.headers().contains_key(header::ALLOW),
                "{method} {path}"
            );
        }
    }

    #[test]
    fn routes_are_templates_never_paths() {
        assert_eq!(route("/tools/echo"), "/tools/{name}");
        assert_eq!(route("/tools/any-name_at.all"), "/tools/{name}");
        assert_eq!(route("/tools/a/b"), "other");
        assert_eq!(route("/prompts/simple-prompt"), "/prompts/{name}");
        assert_eq!(route("/tasks/0b6c"), "/tasks/{id}");
        assert_eq!(route("/tasks/"), "other");
        assert_eq!(route("/tasks/a/b"), "other");
        assert_eq!(allowed("/tasks/0b6c"), Some(TASK));
        assert_eq!(route("/metrics"), "/metrics");
        assert_eq!(route("/docs/swagger-ui.css"), "/docs");
        assert_eq!(route("/mcp/"), "/mcp");
        assert_eq!(route("/wp-admin/x"), "other");
        assert_eq!(route("/status/"), "/status");
        assert_eq!(route("/status/assets/status.js"), "/status/assets/{file}");
        assert_eq!(allowed("/status/assets/status.js"), Some(GET));
        assert_eq!(route("/status/assets/a/b"), "other");
        assert_eq!(allowed("/status/assets/"), None);
        // Every path with declared methods has a route of its own.
        for path in [
            "/tools",
            "/health",
            "/openapi.json",
            "/metrics",
            "/call-tool",
            "/sse",
            "/messages",
            "/mcp",
            "/resources",
            "/resources/read",
            "/resource-templates",
            "/prompts",
            "/status",
            "/status/data",
        ] {
            assert!(allowed(path).is_some(), "{path}");
            assert_eq!(route(path), path);
        }
    }

    #[test]
    fn plain_options_is_204_with_allow() {
        let response = refusal(&Method::OPTIONS, "/call-tool").unwrap();
        assert_eq!(response.status(), StatusCode::NO_CONTENT);
        assert_eq!(response.headers()[header::ALLOW], "POST, OPTIONS");
        let response = refusal(&Method::OPTIONS, "/tools").unwrap();
        assert_eq!(response.headers()[header::ALLOW], "GET, HEAD, OPTIONS");
    }

    #[test]
    fn paths_under_a_route_take_its_methods_and_nothing_else_is_known() {
        for path in ["/mcp/", "/mcp/x"] {
            assert_eq!(allowed(path), Some(MCP), "{path}");
        }
        for path in ["/docs", "/docs/", "/docs/swagger-ui.css"] {
            assert_eq!(allowed(path), Some(GET), "{path}");
        }
        for path in ["/tools/echo", "/prompts/simple-prompt"] {
            assert_eq!(allowed(path), Some(POST), "{path}");
        }
        for path in [
            "/tools/",
            "/tools/a/b",
            "/prompts/",
            "/prompts/a/b",
            "/docsx",
            "/mcpx",
            "/",
            "/wp-admin/x",
        ] {
            assert_eq!(allowed(path), None, "{path}");
        }
        assert_eq!(route("/docs"), "/docs");
        assert_eq!(route("/docsx"), "other");
        assert_eq!(route("/tools/"), "other");
        assert_eq!(route("/prompts/"), "other");
        assert_eq!(route("/prompts/a/b"), "other");
    }

    fn options(path: &str, preflight: bool) -> Request {
        let mut request = Request::options(path);
        if preflight {
            request = request.header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST");
        }
        request.body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn only_a_plain_options_on_a_known_route_is_taken_before_cors() {
        let service = crate::service::unit_service("");
        let answer = plain_options(&service, &mut options("/call-tool", false)).expect("taken");
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
        assert_eq!(answer.headers()[header::ALLOW], "POST, OPTIONS");
        let id = answer.headers()[REQUEST_ID_HEADER].to_str().unwrap();
        assert!(!id.is_empty());
        // A preflight is CORS's, an unknown path the router's, other methods the envelope's.
        assert!(plain_options(&service, &mut options("/call-tool", true)).is_none());
        assert!(plain_options(&service, &mut options("/nowhere", false)).is_none());
        let mut get = Request::get("/call-tool")
            .body(axum::body::Body::empty())
            .unwrap();
        assert!(plain_options(&service, &mut get).is_none());
    }
}
