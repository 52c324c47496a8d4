//! Reaching an MCP server over the legacy HTTP+SSE transport (protocol 2024-11-05), chosen when
//! the provider's `url` ends in `/sse`; rmcp has no client for it. `GET url` opens the stream,
//! whose first `endpoint` event names where to POST our messages; the server's messages come
//! as `message` events. The endpoint must be on the same origin as `url`, so a server cannot
//! send our messages (and headers, which may hold credentials) elsewhere.

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::sink_stream::SinkStreamTransport;
use sse_stream::SseStream;
use tokio_util::sync::CancellationToken;

use super::streamable_http::HttpSpec;
use crate::shutdown::Shutdown;

/// Why the SSE stream could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("HTTP client: {0}")]
    Client(reqwest::Error),
    #[error("invalid url: {0}")]
    Url(url::ParseError),
    #[error("cannot open the SSE stream: {0}")]
    Open(reqwest::Error),
    #[error("GET {url} answered {status}")]
    Status {
        url: String,
        status: reqwest::StatusCode,
    },
    #[error("SSE stream broke before the endpoint event: {0}")]
    Broke(sse_stream::Error),
    #[error("SSE stream ended before the endpoint event")]
    Ended,
    #[error("the endpoint event names no URL: {0}")]
    Endpoint(url::ParseError),
    #[error("the endpoint event names another origin ({0}); refused")]
    ForeignOrigin(String),
}

pub type SseTransport = SinkStreamTransport<
    mpsc::Sender<TxJsonRpcMessage<RoleClient>>,
    mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
>;

/// Opens the stream and waits for its `endpoint` event. The transport ends (and the client
/// with it) when the stream ends or a POST cannot be delivered.
pub async fn connect(spec: &HttpSpec, tasks: &Shutdown) -> Result<SseTransport, SseError> {
    let client = spec.client().map_err(SseError::Client)?;
    let url = reqwest::Url::parse(&spec.url).map_err(SseError::Url)?;
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(SseError::Open)?;
    if !response.status().is_success() {
        return Err(SseError::Status {
            url: spec.redacted_url(),
            status: response.status(),
        });
    }
    let mut events = SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = loop {
        match events.next().await {
            Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                break event.data.unwrap_or_default();
            }
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(SseError::Broke(e)),
            None => return Err(SseError::Ended),
        }
    };
    let endpoint = url.join(endpoint.trim()).map_err(SseError::Endpoint)?;
    if endpoint.origin() != url.origin() {
        return Err(SseError::ForeignOrigin(
            endpoint.origin().ascii_serialization(),
        ));
    }

    let ended = CancellationToken::new();
    let (mut to_client, from_server) = mpsc::channel::<RxJsonRpcMessage<RoleClient>>(64);
    let reader_ended = ended.clone();
    tasks.spawn(async move {
        let _end_all = reader_ended.clone().drop_guard();
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                _ = reader_ended.cancelled() => return,
            };
            let Some(Ok(event)) = event else { return };
            if !matches!(event.event.as_deref(), None | Some("message")) {
                continue;
            }
            let data = event.data.unwrap_or_default();
            match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&data) {
                Ok(message) => {
                    if to_client.send(message).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::warn!("ignored an SSE message that is not JSON-RPC: {e}"),
            }
        }
    });

    let (to_server, mut outgoing) = mpsc::channel::<TxJsonRpcMessage<RoleClient>>(64);
    tasks.spawn(async move {
        let _end_all = ended.clone().drop_guard();
        // One at a time, so the server sees our messages in the order we sent them.
        loop {
            let message = tokio::select! {
                message = outgoing.next() => message,
                _ = ended.cancelled() => return,
            };
            let Some(message) = message else { return };
            // Our requests carry their trace context as headers too (`traced`).
            let mut post = client.post(endpoint.clone());
            for (name, value) in super::traced::trace_headers(&message) {
                post = post.header(name, value);
            }
            let delivered = post.json(&message).send().await;
            match delivered {
                Ok(answer) if answer.status().is_success() => {}
                Ok(answer) => {
                    tracing::warn!("the SSE server refused a message: {}", answer.status());
                    return;
                }
                Err(e) => {
                    tracing::warn!("cannot POST to the SSE server: {e}");
                    return;
                }
            }
        }
    });
    Ok(SinkStreamTransport::new(to_server, from_server))
}
