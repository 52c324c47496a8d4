//! Browser access to both surfaces (REST and /mcp): the configured origins, or any loopback origin, read at
//! request time so a reload applies.
//!
//! The rules are tower-http's, kept once in an `Arc` and applied to requests that carry an
//! `Origin` (and to every OPTIONS). A request without one (curl, generated clients, agents:
//! almost every request) only gets the two headers tower-http would give it, `Vary` and
//! `Access-Control-Expose-Headers`, both built once: tower-http would clone its rules with
//! every request and build its headers anew for each (about 4 % of a GET /tools).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::response::Response;
use futures::future::Either;
use pin_project_lite::pin_project;
use tower::{Layer, Service as TowerService};
use tower_http::cors::{AllowOrigin, Cors, CorsLayer as Rules};

use crate::service::Service;

/// The request headers a preflight may ask for.
fn allowed_headers() -> [HeaderName; 11] {
    [
        header::CONTENT_TYPE,
        header::AUTHORIZATION,
        HeaderName::from_static("x-request-id"),
        HeaderName::from_static("x-api-key"),
        // W3C Trace Context, as browser OpenTelemetry instrumentation sends it.
        HeaderName::from_static("traceparent"),
        HeaderName::from_static("tracestate"),
        // What an MCP client in a web page sends to /mcp: its session, its protocol version,
        // the 2026-07-28 routing headers, and where a resumed stream picks up.
        HeaderName::from_static("mcp-session-id"),
        HeaderName::from_static("mcp-protocol-version"),
        HeaderName::from_static("mcp-method"),
        HeaderName::from_static("mcp-name"),
        HeaderName::from_static("last-event-id"),
    ]
}

/// The response headers a page's script may read: besides the envelope's, the session an
/// MCP client must send back, and the challenge that leads an OAuth client to the metadata.
const EXPOSED: &str =
    "x-request-id,retry-after,ratelimit,ratelimit-policy,mcp-session-id,www-authenticate";
/// The `Vary` tower-http 0.7 derives from these rules: only the allowed origin depends on the
/// request (the methods and headers allowed are fixed lists).
const VARY: &str = "origin";

fn rules(service: Arc<Service>) -> Rules {
    Rules::new()
        .allow_origin(AllowOrigin::predicate(move |origin: &HeaderValue, _| {
            origin
                .to_str()
                .is_ok_and(|o| service.settings().allows_origin(o))
        }))
        // DELETE ends an MCP session and cancels a task.
        .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
        .allow_headers(allowed_headers())
        .expose_headers(
            EXPOSED
                .split(',')
                .map(HeaderName::from_static)
                .collect::<Vec<_>>(),
        )
}

pub fn layer(service: Arc<Service>) -> CorsLayer {
    CorsLayer(Arc::new(rules(service)))
}

/// The CORS layer of every service route.
#[derive(Clone)]
pub struct CorsLayer(Arc<Rules>);

impl<S> Layer<S> for CorsLayer {
    type Service = CorsService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CorsService {
            rules: self.0.clone(),
            inner,
        }
    }
}

/// The service [`CorsLayer`] makes.
#[derive(Clone)]
pub struct CorsService<S> {
    rules: Arc<Rules>,
    inner: S,
}

impl<S> TowerService<Request> for CorsService<S>
where
    S: TowerService<Request, Response = Response> + Clone,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<NoOrigin<S::Future>, <Cors<S> as TowerService<Request>>::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.method() != Method::OPTIONS && !request.headers().contains_key(header::ORIGIN) {
            return Either::Left(NoOrigin {
                inner: self.inner.call(request),
            });
        }
        // The instance made ready answers; a clone waits for the next request.
        let fresh = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, fresh);
        Either::Right(self.rules.layer(ready).call(request))
    }
}

pin_project! {
    /// The answer to a request without `Origin`, with the headers tower-http gives it.
    pub struct NoOrigin<F> {
        #[pin]
        inner: F,
    }
}

impl<F, E> Future for NoOrigin<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut response = ready!(self.project().inner.poll(cx))?;
        let headers = response.headers_mut();
        // As tower-http: `Vary` is added to what the route said, the other replaces.
        headers.append(header::VARY, HeaderValue::from_static(VARY));
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static(EXPOSED),
        );
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    use super::*;

    /// A route that sets its own `Vary` and an expose header tower-http replaces.
    fn routes() -> Router {
        Router::new().route(
            "/x",
            get(|| async {
                (
                    [
                        (header::VARY, "accept-encoding"),
                        (header::ACCESS_CONTROL_EXPOSE_HEADERS, "x-own"),
                    ],
                    "x",
                )
            })
            .post(|| async { "posted" }),
        )
    }

    fn request(method: Method, origin: Option<&str>, preflight: bool) -> Request {
        let mut request = Request::builder().method(method).uri("/x");
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        if preflight {
            request = request
                .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
                .header(
                    header::ACCESS_CONTROL_REQUEST_HEADERS,
                    "content-type,x-api-key",
                );
        }
        request.body(Body::empty()).unwrap()
    }

    /// Every kind of request is answered with exactly the status and headers tower-http's
    /// rules alone give it: the shortcut for requests without `Origin` changes nothing.
    #[tokio::test]
    async fn answers_exactly_as_tower_http_alone() {
        let service =
            crate::http::unit_service("security: { cors_origins: [\"https://app.example\"] }\n");
        let cases = [
            (Method::GET, None, false),
            (Method::POST, None, false),
            (Method::GET, Some("https://app.example"), false),
            (Method::POST, Some("https://app.example"), false),
            (Method::GET, Some("https://evil.example"), false),
            (Method::GET, Some("http://127.0.0.1:3000"), false),
            (Method::OPTIONS, Some("https://app.example"), true),
            (Method::OPTIONS, Some("https://evil.example"), true),
            (Method::OPTIONS, None, false),
        ];
        for (method, origin, preflight) in cases {
            let ours = routes()
                .layer(layer(service.clone()))
                .oneshot(request(method.clone(), origin, preflight))
                .await
                .unwrap();
            let theirs = routes()
                .layer(rules(service.clone()))
                .oneshot(request(method.clone(), origin, preflight))
                .await
                .unwrap();
            let case = format!("{method} Origin {origin:?} preflight {preflight}");
            assert_eq!(ours.status(), theirs.status(), "{case}");
            assert_eq!(ours.headers(), theirs.headers(), "{case}");
        }
        // And the shortcut's answer is what a browser needs to read the envelope's headers.
        let plain = routes()
            .layer(layer(service))
            .oneshot(request(Method::GET, None, false))
            .await
            .unwrap();
        let vary: Vec<_> = plain.headers().get_all(header::VARY).iter().collect();
        assert_eq!(vary, ["accept-encoding", VARY]);
        assert_eq!(
            plain.headers()[header::ACCESS_CONTROL_EXPOSE_HEADERS],
            EXPOSED
        );
    }
}
