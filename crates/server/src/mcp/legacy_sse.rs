//! The legacy MCP HTTP+SSE transport (protocol 2024-11-05), which rmcp no longer ships:
//! `GET /sse` opens a session and streams the server's messages, its first event (`endpoint`)
//! naming `/messages?sessionId=…`, where the client POSTs its JSON-RPC messages (answered 202;
//! the answers come on the stream). Each session runs the same [`McpBridge`] as `/mcp`. With
//! `cluster`, a message for a session another replica holds is sent on to that replica
//! ([`crate::service::cluster::forward`]).

use crate::sync::Unpoisoned;
use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::StreamExt;
use futures::channel::mpsc;
use rmcp::ServiceExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::sink_stream::SinkStreamTransport;
use serde::Deserialize;
use serde_json::{Value, json};

use super::gate::{
    McpGate, allowed_before_handshake, body_too_large, client_info, not_initialized, read_message,
    refused_body, session_refusal,
};
use super::handler::McpBridge;
use super::sessions::{SessionBook, SessionState, Transport};
use crate::service::Service;
use crate::service::client::Client;
use crate::service::client_load::Holding;
use crate::service::cluster::Cluster;
use crate::service::cluster::sessions::SessionRecord as ClusterSessionRecord;

/// The open SSE sessions of one service: where each one's incoming messages go. Their
/// records (state, client, expiry) are in the service's session book, shared with `/mcp`.
#[derive(Clone)]
pub struct SseSessions {
    service: Arc<Service>,
    gate: McpGate,
    open: OpenSessions,
}

/// Each open session's way in, and the API key that opened it (its messages must come with
/// the same key or token subject: the session answers with its tools).
type OpenSessions = Arc<Mutex<HashMap<String, OpenSession>>>;

struct OpenSession {
    to_server: mpsc::UnboundedSender<ClientJsonRpcMessage>,
    /// The opener's credential (`Client::identity`).
    owner: Option<String>,
}

impl SseSessions {
    pub fn new(service: Arc<Service>, gate: McpGate) -> Self {
        SseSessions {
            service,
            gate,
            open: Arc::default(),
        }
    }
}

/// Ends a session when its stream ends (the client went away, or the book expired it).
struct Registration {
    open: OpenSessions,
    book: SessionBook,
    id: String,
    _stream: Holding,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.open.write_unpoisoned().remove(&self.id);
        self.book.close(&self.id);
    }
}

/// `GET /sse`: a new session.
pub async fn open(
    State(sessions): State<SseSessions>,
    client: Option<Extension<Client>>,
) -> Response {
    let book = &sessions.gate.book;
    let counted_as: Arc<str> = client.as_ref().map_or_else(
        || Client::unknown().as_str().into(),
        |Extension(c)| c.as_str().into(),
    );
    let place = match book.admit(&counted_as) {
        Ok(place) => place,
        Err(refusal) => return session_refusal(&refusal, Value::Null),
    };
    // The stream is the session: held by its client until it ends.
    let stream = match book.open_stream(&counted_as) {
        Ok(held) => held,
        Err(refusal) => return session_refusal(&refusal, Value::Null),
    };
    let id = uuid::Uuid::new_v4().simple().to_string();
    let identity = client.as_ref().and_then(|Extension(c)| c.identity());
    // The stream itself is the session's use: it is not ended as unused.
    let ended = book.open(place, &id, Transport::Sse, None, identity.clone());
    let _ = book.touch(&id, identity.as_deref(), true);
    // Its messages may reach another replica, sent on by the record: it is there before the
    // stream names the endpoint.
    book.shared_now(&id).await;
    let (to_server, from_client) = mpsc::unbounded::<ClientJsonRpcMessage>();
    let (to_client, from_server) = mpsc::channel(64);
    sessions.open.write_unpoisoned().insert(
        id.clone(),
        OpenSession {
            to_server,
            owner: identity,
        },
    );
    // Every message of the session is the opener's: its API key's name and scope.
    let bridge = match client {
        Some(Extension(client)) => McpBridge::opened_by(sessions.service.clone(), client),
        None => McpBridge::new(sessions.service.clone()),
    };
    let session = id.clone();
    let serving_ended = ended.clone();
    sessions.service.drain().spawn(async move {
        let serving = bridge.serve_with_ct(
            SinkStreamTransport::new(to_client, from_client),
            serving_ended.child_token(),
        );
        match serving.await {
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
        book: book.clone(),
        id: id.clone(),
        _stream: stream,
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
    // The stream ends when the book ends the session (expired, or shutdown).
    let messages = messages.take_until(ended.cancelled_owned());
    Sse::new(endpoint.chain(messages))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

#[derive(Deserialize)]
pub struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: String,
}

/// `POST /messages?sessionId=…`: one JSON-RPC message for that session, read within
/// `limits.max_body_bytes` as strict JSON.
pub async fn message(
    State(sessions): State<SseSessions>,
    Query(query): Query<SessionQuery>,
    client: Option<Extension<Client>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    // Judged before the session is touched: another key's message must not keep it alive.
    let open = sessions
        .open
        .write_unpoisoned()
        .get(&query.session_id)
        .map(|s| (s.to_server.clone(), s.owner.clone()));
    if open.is_none()
        && let Some(cluster) = sessions.gate.book.cluster()
        && !cluster.forwarded_by_replica(&headers)
        && let Some(owner) = cluster.session(&query.session_id).await
        && owner.owner != cluster.replica_id()
    {
        let max_body = sessions.gate.max_body;
        return forward(cluster, &owner, &query.session_id, &headers, body, max_body).await;
    }
    let identity = client.as_ref().and_then(|Extension(c)| c.identity());
    if let Some((_, opener)) = &open
        && *opener != identity
    {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"error": "this session was opened with another API key or token; open GET /sse with yours"})),
        )
            .into_response();
    }
    let json_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if !json_type {
        return (
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Json(json!({"error": "Content-Type must be application/json"})),
        )
            .into_response();
    }
    let Ok(bytes) = axum::body::to_bytes(body, sessions.gate.max_body).await else {
        return body_too_large(sessions.gate.max_body);
    };
    let body = match read_message(&bytes, &sessions.gate.json) {
        Ok(Some(body)) => body,
        Ok(None) => {
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({"error": "the body is not valid JSON"})),
            )
                .into_response();
        }
        Err(refusal) => return refused_body(&refusal),
    };
    let id = body.get("id").cloned().unwrap_or_default();
    let book = &sessions.gate.book;
    match book.touch(&query.session_id, identity.as_deref(), true) {
        Err(refusal) => return session_refusal(&refusal, id),
        Ok(SessionState::Created) if !allowed_before_handshake(&body) => {
            return not_initialized(id);
        }
        Ok(_) => {}
    }
    if body["method"] == "initialize"
        && let Some((name, version)) = client_info(&body)
    {
        book.set_client(&query.session_id, name, version);
    }
    let completes_handshake = body["method"] == "notifications/initialized";
    let sender = open.map(|(sender, _)| sender);
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
    if completes_handshake {
        book.initialized(&query.session_id);
    }
    StatusCode::ACCEPTED.into_response()
}

/// A message for a session another replica holds: sent on to that replica, whose answer is
/// passed back as it is; when it cannot be reached the session is as good as gone, so the
/// answer is the 404 that makes the client open GET /sse again.
async fn forward(
    cluster: &Cluster,
    owner: &ClusterSessionRecord,
    session: &str,
    headers: &HeaderMap,
    body: axum::body::Body,
    max_body: usize,
) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, max_body).await else {
        return body_too_large(max_body);
    };
    match cluster
        .forward_message(owner, session, headers, bytes)
        .await
    {
        Ok(answer) => {
            tracing::debug!(
                target: "mcp_session", session_id = session, owner = %owner.owner,
                status = answer.status.as_u16(), "legacy SSE message forwarded to its session's replica"
            );
            let mut response = Response::new(axum::body::Body::from(answer.body));
            *response.status_mut() = answer.status;
            if let Some(content_type) = answer.content_type {
                response
                    .headers_mut()
                    .insert(axum::http::header::CONTENT_TYPE, content_type);
            }
            response
        }
        Err(why) => {
            tracing::warn!(
                target: "mcp_session", session_id = session, owner = %owner.owner,
                address = %owner.address, "legacy SSE message not forwarded: {why}"
            );
            (
                StatusCode::NOT_FOUND,
                Json(json!({"error": format!(
                    "no such session here, and replica '{}' that holds it did not take the message: open GET /sse again",
                    owner.owner
                )})),
            )
                .into_response()
        }
    }
}
