//! The trace context of a request we send an MCP server over HTTP, also as the HTTP request's
//! `traceparent`/`tracestate` headers: the `_meta` keys (SEP-414) are what the server's MCP
//! layer reads, the headers what its HTTP layer (a proxy, a load balancer, an instrumented web
//! framework) reads. Only our own requests carry them; responses and notifications go as they
//! were. With `auth`, every request also carries the gateway's current token (fetched or
//! refreshed per request, so a new token needs no new connection); a token the server refuses
//! (401) is forgotten and the request sent once more with a fresh one, and a refusal that
//! stays is said naming the server and quoting its challenge. Every SSE event the server sends
//! is shown to [`WireRequests`] as it is read.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, GetMeta, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::future::Future;

use super::wire::WireRequests;
use crate::dependency::credentials::{Credentials, refusal};
use crate::telemetry::traceparent::{TRACEPARENT, TRACESTATE};

/// The trace headers for `message`: those of its `_meta` when it is a request that has them.
pub fn trace_headers(message: &ClientJsonRpcMessage) -> Vec<(HeaderName, HeaderValue)> {
    let JsonRpcMessage::Request(request) = message else {
        return Vec::new();
    };
    let meta = request.request.get_meta();
    let mut headers = Vec::new();
    if let Some(parent) = meta
        .get_traceparent()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        headers.push((HeaderName::from_static(TRACEPARENT), parent));
        if let Some(state) = meta
            .get_tracestate()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            headers.push((HeaderName::from_static(TRACESTATE), state));
        }
    }
    headers
}

/// rmcp's reqwest client for Streamable HTTP, adding [`trace_headers`] to each POST and the
/// token of `auth` to every request.
#[derive(Clone)]
pub struct TracedClient {
    http: reqwest::Client,
    /// The server's name, for refusals.
    provider: Arc<str>,
    credentials: Option<Arc<Credentials>>,
    wire: Arc<WireRequests>,
}

impl TracedClient {
    /// As rmcp builds its own (private) default client: no idle pooling (it stalls on Linux's
    /// delayed ACK), and only same-origin 307/308 redirects followed, at most 10 — a 301-303
    /// would turn the POST into a GET, and another origin would receive the session id and
    /// the configured headers, which may hold credentials.
    pub fn new(
        provider: Arc<str>,
        credentials: Option<Arc<Credentials>>,
        wire: Arc<WireRequests>,
    ) -> reqwest::Result<TracedClient> {
        let same_origin = reqwest::redirect::Policy::custom(|attempt| {
            let keeps_post = matches!(attempt.status().as_u16(), 307 | 308);
            let same = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() == attempt.url().origin());
            if keeps_post && same && attempt.previous().len() <= 10 {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(same_origin)
            .build()
            .map(|http| TracedClient {
                http,
                provider,
                credentials,
                wire,
            })
    }

    /// `events`, each shown to [`WireRequests`] as it is read.
    fn tapped(
        &self,
        events: BoxStream<'static, Result<Sse, SseError>>,
    ) -> BoxStream<'static, Result<Sse, SseError>> {
        let wire = self.wire.clone();
        events
            .inspect(move |event| {
                if let Ok(Sse {
                    data: Some(data), ..
                }) = event
                {
                    wire.note(data);
                }
            })
            .boxed()
    }

    fn tapped_post(&self, posted: PostResult) -> PostResult {
        match posted? {
            StreamableHttpPostResponse::Sse(events, session) => Ok(
                StreamableHttpPostResponse::Sse(self.tapped(events), session),
            ),
            other => Ok(other),
        }
    }

    /// Runs `send` with the token to send (rmcp's own `auth_header` without `auth`): once, or
    /// twice when the server refused the gateway's token and a fresh one may do. A refusal
    /// becomes an error naming the server and its challenge.
    async fn authorized<T, F, Fut>(
        &self,
        auth_header: Option<String>,
        explain: bool,
        send: F,
    ) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let Some(credentials) = &self.credentials else {
            return send(auth_header)
                .await
                .map_err(|e| self.explained(e, explain));
        };
        let mut retried = false;
        loop {
            let token = credentials
                .bearer(None)
                .await
                .map_err(|e| StreamableHttpError::UnexpectedServerResponse(e.to_string().into()))?;
            match send(Some(token.secret().to_owned())).await {
                Err(StreamableHttpError::AuthRequired(_))
                    if !retried && credentials.refused(&token, None) =>
                {
                    tracing::info!(provider = %self.provider, "the MCP server refused the gateway's token; sending once more with a fresh one");
                    retried = true;
                }
                other => return other.map_err(|e| self.explained(e, explain)),
            }
        }
    }

    /// A 401 with its challenge as an error the caller can read; anything else as it was. The
    /// GET stream keeps rmcp's own error, which tells its reconnect loop to stop.
    fn explained(
        &self,
        error: StreamableHttpError<reqwest::Error>,
        explain: bool,
    ) -> StreamableHttpError<reqwest::Error> {
        match error {
            StreamableHttpError::AuthRequired(challenge) if explain => {
                StreamableHttpError::UnexpectedServerResponse(
                    refusal(
                        &self.provider,
                        401,
                        Some(&challenge.www_authenticate_header),
                    )
                    .to_string()
                    .into(),
                )
            }
            other => other,
        }
    }
}

type PostResult = Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>>;
type StreamResult =
    Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<reqwest::Error>>;

fn with_trace(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    headers.extend(trace_headers(message));
    headers
}

impl StreamableHttpClient for TracedClient {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let headers = with_trace(&message, custom_headers);
        Box::pin(async move {
            let sent = self.authorized(auth_header, true, move |auth| {
                self.http.post_message(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth,
                    headers.clone(),
                )
            });
            self.tapped_post(sent.await)
        })
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let headers = with_trace(&message, custom_headers);
        Box::pin(async move {
            let sent = self.authorized(auth_header, true, move |auth| {
                self.http.post_message_with_max_sse_event_size(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth,
                    headers.clone(),
                    max_sse_event_size,
                )
            });
            self.tapped_post(sent.await)
        })
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let headers = with_trace(&message, custom_headers);
        Box::pin(async move {
            let sent = self.authorized(auth_header, true, move |auth| {
                self.http.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    auth,
                    headers.clone(),
                    limits,
                )
            });
            self.tapped_post(sent.await)
        })
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<reqwest::Error>>> + Send + '_ {
        Box::pin(self.authorized(auth_header, true, move |auth| {
            self.http.delete_session(
                uri.clone(),
                session_id.clone(),
                auth,
                custom_headers.clone(),
            )
        }))
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = StreamResult> + Send + '_ {
        Box::pin(async move {
            let sent = self.authorized(auth_header, false, move |auth| {
                self.http.get_stream(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    auth,
                    custom_headers.clone(),
                )
            });
            Ok(self.tapped(sent.await?))
        })
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = StreamResult> + Send + '_ {
        Box::pin(async move {
            let sent = self.authorized(auth_header, false, move |auth| {
                self.http.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    auth,
                    custom_headers.clone(),
                    max_sse_event_size,
                )
            });
            Ok(self.tapped(sent.await?))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, JsonRpcRequest};

    fn call(meta: Option<(&str, Option<&str>)>) -> ClientJsonRpcMessage {
        let mut request =
            ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("t")));
        if let Some((parent, state)) = meta {
            request.get_meta_mut().set_traceparent(parent);
            if let Some(state) = state {
                request.get_meta_mut().set_tracestate(state);
            }
        }
        JsonRpcMessage::Request(JsonRpcRequest::new(
            rmcp::model::RequestId::Number(1),
            request,
        ))
    }

    #[test]
    fn a_request_with_a_trace_in_meta_gets_the_headers() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let headers = trace_headers(&call(Some((parent, Some("a=b")))));
        assert_eq!(
            headers,
            vec![
                (
                    HeaderName::from_static("traceparent"),
                    HeaderValue::from_static(parent)
                ),
                (
                    HeaderName::from_static("tracestate"),
                    HeaderValue::from_static("a=b")
                ),
            ]
        );
        assert!(trace_headers(&call(None)).is_empty());
    }
}
