//! The trace context of a request we send an MCP server over HTTP, also as the HTTP request's
//! `traceparent`/`tracestate` headers: the `_meta` keys (SEP-414) are what the server's MCP
//! layer reads, the headers what its HTTP layer (a proxy, a load balancer, an instrumented web
//! framework) reads. Only our own requests carry them; responses and notifications go as they
//! were.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, GetMeta, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::future::Future;

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

/// rmcp's reqwest client for Streamable HTTP, adding [`trace_headers`] to each POST.
#[derive(Clone)]
pub struct TracedClient(reqwest::Client);

impl TracedClient {
    /// As rmcp builds its own (private) default client: no idle pooling (it stalls on Linux's
    /// delayed ACK), and only same-origin 307/308 redirects followed, at most 10 — a 301-303
    /// would turn the POST into a GET, and another origin would receive the session id and
    /// the configured headers, which may hold credentials.
    pub fn new() -> reqwest::Result<TracedClient> {
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
            .map(TracedClient)
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
        Box::pin(
            self.0
                .post_message(uri, message, session_id, auth_header, headers),
        )
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
        Box::pin(self.0.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            headers,
            max_sse_event_size,
        ))
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
        Box::pin(self.0.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            headers,
            limits,
        ))
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<reqwest::Error>>> + Send + '_ {
        Box::pin(
            self.0
                .delete_session(uri, session_id, auth_header, custom_headers),
        )
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = StreamResult> + Send + '_ {
        Box::pin(
            self.0
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers),
        )
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
        Box::pin(self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        ))
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
