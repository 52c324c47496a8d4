//! The legacy MCP HTTP+SSE transport (protocol 2024-11-05), which rmcp no longer ships:
//! `GET /sse` opens a session and streams the server's messages, its first event (`endpoint`)
//! naming `/messages?sessionId=…`, where the client POSTs its JSON-RPC messages (answered 202;
//! the answers come on the stream). Each session runs the same [`McpBridge`] as `/mcp`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::channel::mpsc;
use rmcp::ServiceExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::sink_stream::SinkStreamTransport;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::mcp_surface::McpBridge;
use crate::service::Service;

/// The open SSE sessions of one service: where each one's incoming messages go.
#[derive(Clone)]
pub struct SseSessions {
    service: Arc<Service>,
    open: Arc<Mutex<HashMap<String, mpsc::UnboundedSender<ClientJsonRpcMessage>>>>,
}

impl SseSessions {
    pub fn new(service: Arc<Service>) -> Self {
        SseSessions {
            service,
            open: Arc::default(),
        }
    }
}

/// Removes a session from the map when its stream ends (the client went away).
struct Registration {
    open: Arc<Mutex<HashMap<String, mpsc::UnboundedSender<ClientJsonRpcMessage>>>>,
    id: String,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

/// DNS-rebinding protection, as on /mcp: the Host must be an allowed host and a browser's
/// Origin an allowed origin.
fn refused(sessions: &SseSessions, headers: &HeaderMap) -> Option<Response> {
    let settings = sessions.service.settings();
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    if !settings.config.mcp.allowed_hosts.iter().any(|h| h == name) {
        return Some(
            (
                StatusCode::FORBIDDEN,
                format!("Host '{host}' is not allowed"),
            )
                .into_response(),
        );
    }
    if let Some(origin) = headers.get("origin").and_then(|o| o.to_str().ok())
        && !origin_allowed(&settings.config.mcp.allowed_origins, origin)
    {
        return Some(
            (
                StatusCode::FORBIDDEN,
                format!("Origin '{origin}' is not allowed"),
            )
                .into_response(),
        );
    }
    None
}

/// `scheme://host:port` against entries that may end in `:*` (any port).
fn origin_allowed(allowed: &[String], origin: &str) -> bool {
    allowed.iter().any(|entry| match entry.strip_suffix(":*") {
        Some(prefix) => {
            origin == prefix
                || origin
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(':'))
        }
        None => origin == entry,
    })
}

/// `GET /sse`: a new session.
pub async fn open(State(sessions): State<SseSessions>, headers: HeaderMap) -> Response {
    if let Some(refusal) = refused(&sessions, &headers) {
        return refusal;
    }
    let max = sessions.service.settings().config.mcp.max_sessions.0;
    if sessions
        .open
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .len() as u64
        >= max
    {
        return crate::mcp_surface::too_many_sessions(max, Value::Null);
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    let (to_server, from_client) = mpsc::unbounded::<ClientJsonRpcMessage>();
    let (to_client, from_server) = mpsc::channel(64);
    sessions
        .open
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id.clone(), to_server);
    let bridge = McpBridge::new(sessions.service.clone());
    let session = id.clone();
    tokio::spawn(async move {
        match bridge
            .serve(SinkStreamTransport::new(to_client, from_client))
            .await
        {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => {
                tracing::info!(session = %session, "legacy SSE session ended before initialize: {e}")
            }
        }
    });
    let registration = Registration {
        open: sessions.open.clone(),
        id: id.clone(),
    };
    let endpoint = futures::stream::once(async move {
        Ok::<_, Infallible>(
            Event::default()
                .event("endpoint")
                .data(format!("/messages?sessionId={id}")),
        )
    });
    let messages = from_server.map(
        move |message: rmcp::service::TxJsonRpcMessage<rmcp::RoleServer>| {
            let _held = &registration;
            let data = serde_json::to_string(&message).unwrap_or_default();
            Ok::<_, Infallible>(Event::default().event("message").data(data))
        },
    );
    Sse::new(endpoint.chain(messages))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

#[derive(Deserialize)]
pub struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// `POST /messages?sessionId=…`: one JSON-RPC message for that session.
pub async fn message(
    State(sessions): State<SseSessions>,
    Query(query): Query<SessionQuery>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(refusal) = refused(&sessions, &headers) {
        return refusal;
    }
    let sender = sessions
        .open
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&query.session_id)
        .cloned();
    let Some(sender) = sender else {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "no such session: open GET /sse again"})),
        )
            .into_response();
    };
    let Ok(message) = serde_json::from_value::<ClientJsonRpcMessage>(body) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "not a JSON-RPC message"})),
        )
            .into_response();
    };
    if sender.unbounded_send(message).is_err() {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": "the session has ended"})),
        )
            .into_response();
    }
    StatusCode::ACCEPTED.into_response()
}

#[cfg(test)]
mod tests {
    use super::origin_allowed;

    #[test]
    fn origins_with_any_port() {
        let allowed = vec![
            "http://localhost:*".to_owned(),
            "https://app.example:443".to_owned(),
        ];
        assert!(origin_allowed(&allowed, "http://localhost:5173"));
        assert!(origin_allowed(&allowed, "http://localhost"));
        assert!(origin_allowed(&allowed, "https://app.example:443"));
        assert!(!origin_allowed(&allowed, "http://localhost.evil:80"));
        assert!(!origin_allowed(&allowed, "https://evil.example"));
    }
}
