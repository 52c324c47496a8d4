//! The layer for work done around a request that waits for nothing of its own: something
//! noted before the layers inside run (the trace context's server span, the route for the
//! request metrics, the request id) and finished on the answer (the span ended, the request
//! counted, the envelope drawn). It may also answer a request itself before the layers inside
//! see it, and run them inside a `tracing` span.
//!
//! Why not `axum::middleware::from_fn`: that boxes a future and clones the rest of the stack
//! for every request in every layer; this layer wraps the inner future as it is. When the
//! answer never comes (the client left and the request was dropped), `after` does not run.

use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::extract::Request;
use axum::response::Response;
use futures::future::{Either, Ready, ready as answered};
use pin_project_lite::pin_project;
use tower::{Layer, Service as TowerService};
use tracing::Instrument;
use tracing::instrument::Instrumented;

/// Work around a request: `before` on the way in, `after` with what `before` returned, on
/// the answer.
pub trait Around: Clone + Send + Sync + 'static {
    type Noted: Send + 'static;

    /// What to finish the answer with; `Break` is the answer itself, the layers inside unasked.
    fn before(&self, request: &mut Request) -> ControlFlow<Response, Self::Noted>;

    fn after(&self, noted: Self::Noted, response: &mut Response);

    /// The `tracing` span the layers inside run in.
    fn span(&self, _noted: &Self::Noted) -> tracing::Span {
        tracing::Span::none()
    }
}

/// Runs an [`Around`] on every request.
#[derive(Clone)]
pub struct AroundLayer<A>(pub A);

impl<A: Around, S> Layer<S> for AroundLayer<A> {
    type Service = AroundService<A, S>;

    fn layer(&self, inner: S) -> Self::Service {
        AroundService {
            around: self.0.clone(),
            inner,
        }
    }
}

/// The service [`AroundLayer`] makes.
#[derive(Clone)]
pub struct AroundService<A, S> {
    around: A,
    inner: S,
}

impl<A, S> TowerService<Request> for AroundService<A, S>
where
    A: Around,
    S: TowerService<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<Ready<Result<Response, S::Error>>, AroundFuture<A, S::Future>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let noted = match self.around.before(&mut request) {
            ControlFlow::Continue(noted) => noted,
            ControlFlow::Break(answer) => return Either::Left(answered(Ok(answer))),
        };
        let span = self.around.span(&noted);
        // In the span from the start: the checks of the layers inside run in `call`.
        let inner = span.in_scope(|| self.inner.call(request));
        Either::Right(AroundFuture {
            inner: inner.instrument(span),
            pending: Some((self.around.clone(), noted)),
        })
    }
}

pin_project! {
    /// The inner answer, with `after` run on it.
    pub struct AroundFuture<A: Around, F> {
        #[pin]
        inner: Instrumented<F>,
        pending: Option<(A, A::Noted)>,
    }
}

impl<A, F, E> Future for AroundFuture<A, F>
where
    A: Around,
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut response = ready!(this.inner.poll(cx))?;
        if let Some((around, noted)) = this.pending.take() {
            around.after(noted, &mut response);
        }
        Poll::Ready(Ok(response))
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::body::Body;
    use axum::http::{HeaderValue, StatusCode};
    use axum::response::IntoResponse;
    use tower::ServiceExt;

    use super::*;

    /// Notes the request's path, writes it on the answer, counts the answers.
    #[derive(Clone, Default)]
    struct Echo(Arc<AtomicUsize>);

    impl Around for Echo {
        type Noted = String;

        fn before(&self, request: &mut Request) -> ControlFlow<Response, String> {
            if request.uri().path() == "/refused" {
                return ControlFlow::Break(StatusCode::FORBIDDEN.into_response());
            }
            request
                .headers_mut()
                .insert("x-seen", HeaderValue::from_static("yes"));
            ControlFlow::Continue(request.uri().path().to_owned())
        }

        fn after(&self, noted: String, response: &mut Response) {
            self.0.fetch_add(1, Ordering::SeqCst);
            response
                .headers_mut()
                .insert("x-path", HeaderValue::from_str(&noted).unwrap());
        }
    }

    fn inner()
    -> impl TowerService<Request, Response = Response, Error = Infallible, Future: Send> + Clone
    {
        tower::service_fn(|request: Request| async move {
            tokio::task::yield_now().await;
            let status = if request.headers().contains_key("x-seen") {
                StatusCode::OK
            } else {
                StatusCode::BAD_REQUEST
            };
            Ok::<_, Infallible>(status.into_response())
        })
    }

    #[tokio::test]
    async fn before_reaches_the_inside_and_after_sees_the_answer() {
        let around = Echo::default();
        let service = AroundLayer(around.clone()).layer(inner());
        let request = Request::get("/tools").body(Body::empty()).unwrap();
        let answer = service.oneshot(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers()["x-path"], "/tools");
        assert_eq!(around.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn an_answer_from_before_is_the_answer_and_is_not_finished() {
        let around = Echo::default();
        let service = AroundLayer(around.clone()).layer(inner());
        let request = Request::get("/refused").body(Body::empty()).unwrap();
        let answer = service.oneshot(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::FORBIDDEN);
        assert!(answer.headers().get("x-path").is_none());
        assert_eq!(around.0.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn a_request_dropped_before_its_answer_is_not_finished() {
        let around = Echo::default();
        let mut service = AroundLayer(around.clone()).layer(inner());
        let request = Request::get("/tools").body(Body::empty()).unwrap();
        let pending = service.call(request);
        drop(pending);
        assert_eq!(around.0.load(Ordering::SeqCst), 0);
    }
}
