//! The layer for checks that judge a request without waiting for anything (the Host and
//! Origin check, plain OPTIONS, the header bounds, the lifecycle gate, the API key): a check
//! answers the request itself or lets it go on, possibly with something added to it.
//!
//! Why not `axum::middleware::from_fn`: that boxes a future and clones the rest of the stack
//! for every request in every layer. A check that cannot wait needs neither, and GET /tools is
//! measured against a bare axum handler (docs/performance.md).

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::response::Response;
use futures::future::{Either, Ready, ready};
use tower::{Layer, Service as TowerService};

use crate::service::Service;

/// A check: `Some(answer)` ends the request with that answer; `None` lets it go on.
pub type Check = fn(&Service, &mut Request) -> Option<Response>;

/// Runs `check` on every request before the layers inside it.
#[derive(Clone)]
pub struct GuardLayer {
    service: Arc<Service>,
    check: Check,
}

impl GuardLayer {
    pub fn new(service: Arc<Service>, check: Check) -> GuardLayer {
        GuardLayer { service, check }
    }
}

impl<S> Layer<S> for GuardLayer {
    type Service = Guard<S>;

    fn layer(&self, inner: S) -> Guard<S> {
        Guard {
            service: self.service.clone(),
            check: self.check,
            inner,
        }
    }
}

/// The service [`GuardLayer`] makes.
#[derive(Clone)]
pub struct Guard<S> {
    service: Arc<Service>,
    check: Check,
    inner: S,
}

impl<S> TowerService<Request> for Guard<S>
where
    S: TowerService<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        match (self.check)(&self.service, &mut request) {
            Some(answer) => Either::Left(ready(Ok(answer))),
            None => Either::Right(self.inner.call(request)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    use tower::ServiceExt;

    use super::*;

    fn service() -> Arc<Service> {
        let config = crate::config::ServiceConfig::parse(
            "service: { name: unit, port: 9999 }\n",
            "unit.yaml",
            std::path::PathBuf::from("."),
        )
        .unwrap();
        let shutdown = crate::shutdown::Shutdown::default();
        Service::new(config, shutdown.child(), shutdown.child()).unwrap()
    }

    /// The inner service answers 200 with the `x-mark` header it was given, if any.
    fn inner()
    -> impl TowerService<Request, Response = Response, Error = Infallible, Future: Send> + Clone
    {
        tower::service_fn(|request: Request| async move {
            let mark = request.headers().get("x-mark").cloned();
            let mut response = StatusCode::OK.into_response();
            if let Some(mark) = mark {
                response.headers_mut().insert("x-mark", mark);
            }
            Ok::<_, Infallible>(response)
        })
    }

    fn refuse_posts(_: &Service, request: &mut Request) -> Option<Response> {
        (request.method() == axum::http::Method::POST)
            .then(|| StatusCode::IM_A_TEAPOT.into_response())
    }

    fn mark(_: &Service, request: &mut Request) -> Option<Response> {
        request
            .headers_mut()
            .insert("x-mark", axum::http::HeaderValue::from_static("checked"));
        None
    }

    #[tokio::test]
    async fn a_check_that_answers_ends_the_request_and_one_that_passes_lets_it_on() {
        let guarded = GuardLayer::new(service(), refuse_posts).layer(inner());
        let post = Request::post("/").body(Body::empty()).unwrap();
        let answer = guarded.clone().oneshot(post).await.unwrap();
        assert_eq!(answer.status(), StatusCode::IM_A_TEAPOT);
        let get = Request::get("/").body(Body::empty()).unwrap();
        let answer = guarded.oneshot(get).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
    }

    /// An inner service that is never ready: a layer inside (a concurrency limit, say) that
    /// has no room.
    #[derive(Clone)]
    struct NeverReady;

    impl TowerService<Request> for NeverReady {
        type Response = Response;
        type Error = Infallible;
        type Future = Ready<Result<Response, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Pending
        }

        fn call(&mut self, _: Request) -> Self::Future {
            ready(Ok(StatusCode::OK.into_response()))
        }
    }

    #[test]
    fn the_guard_is_ready_only_when_the_layers_inside_are() {
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut waiting = GuardLayer::new(service(), mark).layer(NeverReady);
        assert!(waiting.poll_ready(&mut cx).is_pending());
        let mut ready = GuardLayer::new(service(), mark).layer(inner());
        assert!(matches!(ready.poll_ready(&mut cx), Poll::Ready(Ok(()))));
    }

    #[tokio::test]
    async fn what_a_check_adds_to_the_request_reaches_the_layers_inside() {
        let guarded = GuardLayer::new(service(), mark).layer(inner());
        let get = Request::get("/").body(Body::empty()).unwrap();
        let answer = guarded.oneshot(get).await.unwrap();
        assert_eq!(answer.headers()["x-mark"], "checked");
    }
}
