//! GET /status, the page for people: the page and its assets (every file in the binary,
//! nothing from elsewhere), the report they poll (`/status/data`, made by the service), and the
//! headers every `/status*` answer carries (refusals included).
//!
//! The page and its assets are public whatever `security` says: they hold no data, and the
//! page asks for a key itself when `/status/data` answers 401 ([`is_public`], read by
//! [`super::auth`]). `/status/data` meets every rule the other routes meet.

use std::ops::ControlFlow;
use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use contract::openapi::{STATUS_PAGE_CSP, STATUS_PAGE_MEDIA_TYPE};
use serde_json::Value;

use super::around::Around;
use super::handlers::not_found;
use super::reply::Reply;
use crate::service::Service;
use crate::service::visibility::ToolSight;

pub const PAGE: &str = "/status";
pub const DATA: &str = "/status/data";
pub const ASSETS: &str = "/status/assets/";

const INDEX: &[u8] = include_bytes!("../../assets/status/index.html");

/// The files under `/status/assets/`, by name, with their media types.
const FILES: &[(&str, &str, &[u8])] = &[
    (
        "status.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/status/status.js"),
    ),
    (
        "status.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/status/status.css"),
    ),
    (
        "uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/status/uPlot.iife.min.js"),
    ),
    (
        "uPlot.min.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/status/uPlot.min.css"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../../assets/status/favicon.svg"),
    ),
    (
        "LICENSES.md",
        "text/markdown; charset=utf-8",
        include_bytes!("../../assets/status/LICENSES.md"),
    ),
];

/// Whether a path is the page or one of its assets: public, whatever the credentials rules.
pub fn is_public(path: &str) -> bool {
    path == PAGE || path == "/status/" || asset_name(path).is_some()
}

/// The file name in `/status/assets/{file}`.
pub fn asset_name(path: &str) -> Option<&str> {
    path.strip_prefix(ASSETS)
        .filter(|name| !name.is_empty() && !name.contains('/'))
}

/// GET /status: the page.
pub async fn page() -> Response {
    ([(header::CONTENT_TYPE, STATUS_PAGE_MEDIA_TYPE)], INDEX).into_response()
}

/// GET /status/assets/{file}: one of [`FILES`]; any other name is 404 (the page itself is not
/// an asset).
pub async fn asset(Path(file): Path<String>, method: Method, uri: Uri) -> Response {
    match FILES.iter().find(|(name, _, _)| *name == file) {
        Some((_, media_type, bytes)) => {
            ([(header::CONTENT_TYPE, *media_type)], *bytes).into_response()
        }
        None => not_found(method, uri).await.into_response(),
    }
}

/// GET /status/: the page's relative URLs would resolve under `/status/`, so it sends the
/// browser to the page (relative, so it works behind a path prefix too).
pub async fn trailing_slash() -> Response {
    (
        StatusCode::PERMANENT_REDIRECT,
        [(header::LOCATION, "../status")],
    )
        .into_response()
}

/// GET /status/data: the service's report in the envelope, with the tools the caller may see.
pub async fn data(
    State(service): State<Arc<Service>>,
    client: Option<axum::Extension<crate::service::client::Client>>,
) -> Reply {
    let settings = service.settings();
    let sight = ToolSight::of(&settings, client.as_deref());
    let report = sight.status(service.status_report());
    Reply::ok(serde_json::to_value(report).unwrap_or(Value::Null))
}

/// Which `/status*` answer a request gets the headers of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Page,
    Asset,
    Data,
}

fn kind(path: &str) -> Option<Kind> {
    match path {
        PAGE => Some(Kind::Page),
        DATA => Some(Kind::Data),
        _ if path.starts_with("/status/") => Some(Kind::Asset),
        _ => None,
    }
}

/// Puts the status page's headers on every answer under `/status` (a 401, 403 or 429 too):
/// `X-Content-Type-Options: nosniff`; `Cache-Control: no-cache` on the page and its assets
/// (they change with the binary), `no-store` on the report; the page's Content-Security-Policy.
#[derive(Clone)]
pub struct StatusHeaders;

impl Around for StatusHeaders {
    type Noted = Option<Kind>;

    fn before(&self, request: &mut Request) -> ControlFlow<Response, Option<Kind>> {
        ControlFlow::Continue(kind(request.uri().path()))
    }

    fn after(&self, kind: Option<Kind>, response: &mut Response) {
        let Some(kind) = kind else {
            return;
        };
        let headers = response.headers_mut();
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        let cache = match kind {
            Kind::Data => "no-store",
            Kind::Page | Kind::Asset => "no-cache",
        };
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
        if kind == Kind::Page {
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(STATUS_PAGE_CSP),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt;

    use super::*;
    use crate::service::unit_service;

    async fn get(app: &axum::Router, path: &str, key: Option<&str>) -> Response {
        let mut request = axum::http::Request::get(path);
        if let Some(key) = key {
            request = request.header("x-api-key", key);
        }
        app.clone()
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    async fn body(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), 1 << 22)
            .await
            .unwrap()
            .to_vec()
    }

    #[tokio::test]
    async fn the_page_and_its_assets_are_served_with_their_types_and_headers() {
        let app = super::super::router(unit_service(""));
        let page = get(&app, "/status", None).await;
        assert_eq!(page.status(), StatusCode::OK);
        assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
        assert_eq!(page.headers()["content-security-policy"], STATUS_PAGE_CSP);
        assert_eq!(page.headers()["x-content-type-options"], "nosniff");
        assert_eq!(page.headers()["cache-control"], "no-cache");
        assert!(page.headers().contains_key("x-request-id"));
        assert_eq!(body(page).await, INDEX);
        for (name, media_type, bytes) in FILES {
            let answer = get(&app, &format!("/status/assets/{name}"), None).await;
            assert_eq!(answer.status(), StatusCode::OK, "{name}");
            assert_eq!(answer.headers()["content-type"], *media_type, "{name}");
            assert_eq!(answer.headers()["x-content-type-options"], "nosniff");
            assert_eq!(answer.headers()["cache-control"], "no-cache");
            assert_eq!(body(answer).await, *bytes, "{name}");
        }
        for missing in ["index.html", "nothing.js", "..%2Fstatus.js", "a/b"] {
            let answer = get(&app, &format!("/status/assets/{missing}"), None).await;
            assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{missing}");
            assert_eq!(answer.headers()["content-type"], "application/json");
            assert_eq!(answer.headers()["x-content-type-options"], "nosniff");
        }
        let slash = get(&app, "/status/", None).await;
        assert_eq!(slash.status(), StatusCode::PERMANENT_REDIRECT);
        assert_eq!(slash.headers()["location"], "../status");
    }

    #[tokio::test]
    async fn the_report_is_an_envelope_never_stored() {
        let app = super::super::router(unit_service(""));
        let answer = get(&app, DATA, None).await;
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers()["cache-control"], "no-store");
        assert_eq!(answer.headers()["x-content-type-options"], "nosniff");
        assert!(!answer.headers().contains_key("content-security-policy"));
        let envelope: Value = serde_json::from_slice(&body(answer).await).unwrap();
        assert_eq!(envelope["success"], true);
        let data: contract::StatusReport =
            serde_json::from_value(envelope["data"].clone()).unwrap();
        assert_eq!(data.service, "unit");
        assert_eq!(data.timeline.interval_seconds, 10.0);
    }

    /// With keys on, the page and its assets still load (they hold nothing); the report needs
    /// a key like every other route, and its refusal carries the page's headers too.
    #[tokio::test]
    async fn with_keys_on_only_the_report_needs_one() {
        // The SHA-256 of `k-status-1`.
        let service = unit_service(
            "security:\n  api_keys:\n    - { name: ops, sha256: 37ed8ae1b9acb707211841c5606c50d9ba66ccae97a66a2acecdf7e9ddcb4b07 }\n",
        );
        let app = super::super::router(service);
        assert_eq!(get(&app, PAGE, None).await.status(), StatusCode::OK);
        assert_eq!(
            get(&app, "/status/assets/status.js", None).await.status(),
            StatusCode::OK
        );
        // A wrong key on a public route is ignored, as on /health.
        assert_eq!(
            get(&app, PAGE, Some("wrong")).await.status(),
            StatusCode::OK
        );
        let refused = get(&app, DATA, None).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(refused.headers()["cache-control"], "no-store");
        assert_eq!(refused.headers()["x-content-type-options"], "nosniff");
        assert_eq!(
            get(&app, DATA, Some("k-status-1")).await.status(),
            StatusCode::OK
        );
        assert_eq!(
            get(&app, "/tools", None).await.status(),
            StatusCode::UNAUTHORIZED,
            "nothing else became public"
        );
    }

    #[test]
    fn only_the_page_and_its_assets_are_public() {
        for path in [
            "/status",
            "/status/",
            "/status/assets/status.js",
            "/status/assets/x",
        ] {
            assert!(is_public(path), "{path}");
        }
        for path in [
            "/status/data",
            "/status/assets/",
            "/status/assets/a/b",
            "/statusx",
            "/status/other",
        ] {
            assert!(!is_public(path), "{path}");
        }
    }
}
