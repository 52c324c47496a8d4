//! The rate-limit layer: names the client (the API key's name, set by the key check, else the
//! peer address), takes one request from its allowance of `security.rate_limit` per minute
//! ([`crate::service::rate_limit`]) and says how much is left: in the `RateLimit` and
//! `RateLimit-Policy` headers (draft-ietf-httpapi-ratelimit-headers) and in
//! `meta.rate_limit_remaining`. Past the allowance the answer is 429 with `Retry-After`.
//! /health and /metrics are not counted: monitoring must never be throttled; nor is a legacy
//! SSE message another replica forwarded: the replica it reached first counted it.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;
use pin_project_lite::pin_project;
use tower::{Layer, Service as TowerService};

use super::guards::is_monitoring;
use super::reply::Reply;
use crate::service::Service;
use crate::service::rate_limit::{Client, Decision};

/// The policy's name in the headers.
const POLICY: &str = "per-client";

/// The layer; a tower service of its own rather than `from_fn`, so that the limit kept in
/// this process decides without a boxed future or a clone of the layers inside per request
/// (only a limit kept in Redis, which must be waited for, boxes one).
#[derive(Clone)]
pub struct RateLimitLayer(pub Arc<Service>);

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            service: self.0.clone(),
            inner,
        }
    }
}

/// The service [`RateLimitLayer`] makes.
#[derive(Clone)]
pub struct RateLimit<S> {
    service: Arc<Service>,
    inner: S,
}

impl<S, B> TowerService<Request> for RateLimit<S>
where
    S: TowerService<Request, Response = axum::http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = RateLimitFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let client = match request.extensions().get::<Client>() {
            Some(client) => client.clone(),
            None => request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| Client::of_peer(*peer))
                .unwrap_or_else(Client::unknown),
        };
        request.extensions_mut().insert(client.clone());
        if is_monitoring(request.uri().path()) || forwarded_message(&self.service, &request) {
            return RateLimitFuture::Passing {
                inner: self.inner.call(request),
                client: Some(client),
                decision: None,
            };
        }
        let per_minute = self.service.settings().config.security.rate_limit;
        if let Some(decision) = self
            .service
            .rate_limiter
            .take_now(client.as_str(), per_minute)
        {
            return if decision.allowed {
                RateLimitFuture::Passing {
                    inner: self.inner.call(request),
                    client: Some(client),
                    decision: Some(decision),
                }
            } else {
                let refusal = refusal(&self.service, &client, per_minute, &decision);
                RateLimitFuture::Answered {
                    answer: Some(finish(refusal, client, Some(&decision))),
                }
            };
        }
        // Kept in Redis: the decision must be waited for.
        // The clone that is ready goes into the future; this one stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let service = self.service.clone();
        RateLimitFuture::Waiting {
            future: Box::pin(async move {
                let decision = service
                    .rate_limiter
                    .take(client.as_str(), None, per_minute)
                    .await;
                let response = if decision.allowed {
                    inner.call(request).await?.map(Body::new)
                } else {
                    refusal(&service, &client, per_minute, &decision)
                };
                Ok(finish(response, client, Some(&decision)))
            }),
        }
    }
}

/// A legacy SSE message, a request of a Streamable HTTP session, or a task's cancel, forwarded
/// by another replica of this service (which counted it).
fn forwarded_message(service: &Service, request: &Request) -> bool {
    let path = request.uri().path();
    (matches!(path, "/messages" | "/mcp") || path.starts_with("/tasks/"))
        && service
            .cluster
            .as_ref()
            .is_some_and(|c| c.forwarded_by_replica(request.headers()))
}

pin_project! {
    /// The answer, with what the limit says written on it.
    #[project = Projected]
    pub enum RateLimitFuture<F> {
        Answered { answer: Option<Response> },
        Passing {
            #[pin]
            inner: F,
            client: Option<Client>,
            decision: Option<Decision>,
        },
        Waiting { future: Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>> },
    }
}

impl<F, B> Future for RateLimitFuture<F>
where
    F: Future<Output = Result<axum::http::Response<B>, Infallible>>,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            Projected::Answered { answer } => {
                Poll::Ready(Ok(answer.take().expect("polled after its answer")))
            }
            Projected::Passing {
                inner,
                client,
                decision,
            } => {
                let response = ready!(inner.poll(cx))?.map(Body::new);
                let client = client.take().expect("polled after its answer");
                Poll::Ready(Ok(finish(response, client, decision.as_ref())))
            }
            Projected::Waiting { future } => future.as_mut().poll(cx),
        }
    }
}

/// 429 with `Retry-After`, logged and counted.
fn refusal(service: &Service, client: &Client, per_minute: u64, decision: &Decision) -> Response {
    tracing::warn!(client = client.as_str(), "rate limit exceeded");
    service.metrics.rate_limited();
    Reply::error(
        ErrorCode::RateLimited,
        format!(
            "Rate limit of {per_minute} requests per minute exceeded for client '{}'; retry after {} s",
            client.as_str(),
            decision.retry_after
        ),
    )
    .retry_after(decision.retry_after)
    .into_response()
}

/// What is left of the allowance, in `meta` and the headers (when the request was counted);
/// the client, for the access log line and the per-key metrics outside this layer.
fn finish(mut response: Response, client: Client, decision: Option<&Decision>) -> Response {
    if let Some(decision) = decision {
        if let Some(reply) = response.extensions_mut().get_mut::<Reply>() {
            reply.meta.rate_limit_remaining = Some(decision.remaining);
        }
        let headers = response.headers_mut();
        for (name, value) in rate_limit_headers(decision) {
            headers.insert(name, value);
        }
    }
    response.extensions_mut().insert(client);
    response
}

/// `RateLimit-Policy: "per-client";q=<limit>;w=60` and `RateLimit: "per-client";r=<remaining>;t=<reset>`.
fn rate_limit_headers(decision: &Decision) -> [(HeaderName, HeaderValue); 2] {
    let policy = format!("\"{POLICY}\";q={};w=60", decision.limit);
    let state = format!(
        "\"{POLICY}\";r={};t={}",
        decision.remaining, decision.reset_seconds
    );
    [
        (
            HeaderName::from_static("ratelimit-policy"),
            HeaderValue::from_str(&policy).expect("ASCII"),
        ),
        (
            HeaderName::from_static("ratelimit"),
            HeaderValue::from_str(&state).expect("ASCII"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, StatusCode, header};
    use serde_json::Value;
    use tower::ServiceExt;

    /// A service allowing ten requests a minute per client (the least allowed), behind all of
    /// its layers.
    fn app() -> axum::Router {
        super::super::router(service())
    }

    fn service() -> Arc<Service> {
        super::super::unit_service("security: { rate_limit: 10 }\n")
    }

    /// The layer is ready only when what it wraps is: a full concurrency limit inside holds
    /// requests back rather than letting them pile up in the layer.
    #[tokio::test]
    async fn ready_only_when_the_inner_service_is() {
        use tower::ServiceBuilder;
        let inner = ServiceBuilder::new()
            .concurrency_limit(1)
            .service(tower::service_fn(|_: Request| async {
                Ok::<_, Infallible>(Response::new(Body::empty()))
            }));
        let mut holder = inner.clone();
        let held = std::future::poll_fn(|cx| holder.poll_ready(cx)).await;
        assert!(held.is_ok(), "the one slot is taken");
        let mut limited = RateLimitLayer(service()).layer(inner);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(limited.poll_ready(&mut cx).is_pending());
        drop(holder);
        assert!(matches!(limited.poll_ready(&mut cx), Poll::Ready(Ok(()))));
    }

    fn from(path: &str, peer: [u8; 4]) -> Request {
        let mut request = Request::get(path).body(Body::empty()).unwrap();
        let peer = SocketAddr::from((peer, 40000));
        request.extensions_mut().insert(ConnectInfo(peer));
        request
    }

    async fn answer(app: &axum::Router, request: Request) -> (StatusCode, HeaderMap, Value) {
        let response = app.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = axum::body::to_bytes(body, 1 << 20).await.unwrap();
        (
            parts.status,
            parts.headers,
            serde_json::from_slice(&body).unwrap(),
        )
    }

    #[tokio::test]
    async fn each_peer_has_its_allowance_and_is_told_what_is_left() {
        let app = app();
        for left in (0..10).rev() {
            let (status, headers, body) = answer(&app, from("/tools", [127, 0, 0, 1])).await;
            assert_eq!(status, StatusCode::OK);
            assert_eq!(headers["ratelimit-policy"], "\"per-client\";q=10;w=60");
            let state = headers["ratelimit"].to_str().unwrap();
            assert!(
                state.starts_with(&format!("\"per-client\";r={left};t=")),
                "{state}"
            );
            assert_eq!(body["meta"]["rate_limit_remaining"], left);
        }
        let (status, headers, body) = answer(&app, from("/tools", [127, 0, 0, 1])).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(body["code"], "RATE_LIMITED");
        let retry_after: u64 = headers[header::RETRY_AFTER]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry_after), "{retry_after}");
        assert_eq!(
            body["error"],
            format!(
                "Rate limit of 10 requests per minute exceeded for client '127.0.0.1'; retry after {retry_after} s"
            )
        );
        assert_eq!(body["meta"]["rate_limit_remaining"], 0);
        assert!(
            headers["ratelimit"]
                .to_str()
                .unwrap()
                .starts_with("\"per-client\";r=0;")
        );
        // Another peer counts on its own.
        let (status, _, body) = answer(&app, from("/tools", [127, 0, 0, 2])).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["meta"]["rate_limit_remaining"], 9);
    }

    /// Monitoring is never counted nor throttled.
    #[tokio::test]
    async fn health_is_not_counted() {
        let app = app();
        for _ in 0..12 {
            let response = app
                .clone()
                .oneshot(from("/health", [127, 0, 0, 3]))
                .await
                .unwrap();
            assert_ne!(response.status(), StatusCode::TOO_MANY_REQUESTS);
            assert!(!response.headers().contains_key("ratelimit"));
        }
        let (status, _, body) = answer(&app, from("/tools", [127, 0, 0, 3])).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body["meta"]["rate_limit_remaining"], 9);
    }

    /// Only a legacy SSE message, session request or task cancel with the replicas' secret
    /// passes uncounted: another path, a wrong secret, or a service without a cluster is
    /// counted.
    #[test]
    fn only_a_message_forwarded_by_a_replica_passes_uncounted() {
        let request = |path: &str, mark: Option<&str>| {
            let mut request = Request::post(path).body(Body::empty()).unwrap();
            if let Some(mark) = mark {
                request.headers_mut().insert(
                    &crate::service::cluster::forward::FORWARDED,
                    HeaderValue::from_str(mark).unwrap(),
                );
            }
            request
        };
        let clustered = super::super::unit_service(
            "security: { rate_limit: 10 }\ncluster: { redis_url: \"redis://127.0.0.1:1\" }\n",
        );
        clustered
            .cluster
            .as_ref()
            .unwrap()
            .set_forward_secret("s3cret");
        for path in ["/messages", "/mcp", "/tasks/0b6c"] {
            assert!(
                forwarded_message(&clustered, &request(path, Some("s3cret"))),
                "{path}"
            );
        }
        assert!(!forwarded_message(
            &clustered,
            &request("/call-tool", Some("s3cret"))
        ));
        assert!(!forwarded_message(
            &clustered,
            &request("/messages", Some("other"))
        ));
        assert!(!forwarded_message(&clustered, &request("/messages", None)));
        assert!(!forwarded_message(
            &service(),
            &request("/messages", Some("s3cret"))
        ));
    }

    #[test]
    fn headers_as_the_draft_writes_them() {
        let [(p, pv), (s, sv)] = rate_limit_headers(&Decision {
            allowed: true,
            limit: 1000,
            remaining: 998,
            reset_seconds: 1,
            retry_after: 0,
        });
        assert_eq!(p, "ratelimit-policy");
        assert_eq!(pv, "\"per-client\";q=1000;w=60");
        assert_eq!(s, "ratelimit");
        assert_eq!(sv, "\"per-client\";r=998;t=1");
    }
}
