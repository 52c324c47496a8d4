//! Reaching an MCP server over the legacy HTTP+SSE transport (protocol 2024-11-05), chosen when
//! the provider's `url` ends in `/sse`; rmcp has no client for it. `GET url` opens the stream,
//! whose first `endpoint` event names where to POST our messages; the server's messages come
//! as `message` events. The endpoint must be on the same origin as `url`, so a server cannot
//! send our messages (and headers, which may hold credentials) elsewhere. With `auth`, the
//! stream's GET and each POST carry the gateway's current token.

use std::sync::Arc;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::sink_stream::SinkStreamTransport;
use sse_stream::SseStream;
use tokio_util::sync::CancellationToken;

use reqwest::header::{AUTHORIZATION, WWW_AUTHENTICATE};

use super::streamable_http::HttpSpec;
use super::wire::WireRequests;
use crate::dependency::credentials::{CredentialError, refusal};
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
    #[error(transparent)]
    Credentials(#[from] CredentialError),
}

pub type SseTransport = SinkStreamTransport<
    mpsc::Sender<TxJsonRpcMessage<RoleClient>>,
    mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
>;

/// Opens the stream and waits for its `endpoint` event. The transport ends (and the client
/// with it) when the stream ends or a POST cannot be delivered.
/// Each message event is shown to `wire` before it is parsed.
pub async fn connect(
    spec: &HttpSpec,
    tasks: &Shutdown,
    wire: Arc<WireRequests>,
) -> Result<SseTransport, SseError> {
    let client = spec.client().map_err(SseError::Client)?;
    let url = reqwest::Url::parse(&spec.url).map_err(SseError::Url)?;
    let credentials = spec.credentials.clone();
    let mut open = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "text/event-stream");
    // The stream's token is checked when it opens; each POST carries the current one.
    let token = match &credentials {
        Some(c) => Some(c.bearer(None).await?),
        None => None,
    };
    if let Some(value) = token.as_ref().and_then(|t| t.header()) {
        open = open.header(AUTHORIZATION, value);
    }
    let response = open.send().await.map_err(SseError::Open)?;
    if response.status() == reqwest::StatusCode::UNAUTHORIZED {
        if let (Some(c), Some(t)) = (&credentials, &token) {
            c.refused(t, None);
        }
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok());
        return Err(refusal(&spec.provider, 401, challenge).into());
    }
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
            wire.note(&data);
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
    let provider = spec.provider.clone();
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
            let token = match &credentials {
                Some(c) => match c.bearer(None).await {
                    Ok(token) => Some(token),
                    Err(e) => {
                        tracing::warn!("{e}");
                        return;
                    }
                },
                None => None,
            };
            if let Some(value) = token.as_ref().and_then(|t| t.header()) {
                post = post.header(AUTHORIZATION, value);
            }
            let delivered = post.json(&message).send().await;
            match delivered {
                Ok(answer) if answer.status().is_success() => {}
                Ok(answer) if answer.status() == reqwest::StatusCode::UNAUTHORIZED => {
                    // The connection ends; the next one gets a fresh token.
                    if let (Some(c), Some(t)) = (&credentials, &token) {
                        c.refused(t, None);
                    }
                    let challenge = answer
                        .headers()
                        .get(WWW_AUTHENTICATE)
                        .and_then(|v| v.to_str().ok());
                    tracing::warn!("{}", refusal(&provider, 401, challenge));
                    return;
                }
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
