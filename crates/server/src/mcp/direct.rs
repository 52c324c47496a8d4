//! A `tools/call` in a Streamable HTTP session answered as one JSON body, without rmcp's session
//! machinery, when nothing can come back on a stream: the client asked for no progress and
//! offers nothing the server could ask it (no sampling, elicitation or roots), and the request
//! carries nothing only rmcp judges (no task, no retried input, no 2026-07-28 `_meta`, no
//! `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` headers). The spec lets a server answer a POST as JSON
//! or as an SSE stream; the stream costs rmcp a hop through the session's worker and a framed
//! body per call (docs/performance.md, "MCP answered as JSON"). The call itself is the same
//! [`McpBridge::run_call`] as rmcp's: same span, access line, cancellation and answer. Every
//! other request goes to rmcp as before.

use crate::sync::Unpoisoned;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ProtocolVersion, RequestId, ServerJsonRpcMessage,
    ServerResult,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call::ToolCall;
use super::client_session::McpClientSession;
use super::handler::McpBridge;
use crate::provider::ClientSession;
use crate::service::Service;
use crate::service::client::Client;

/// The Streamable HTTP sessions whose calls may be answered here, by id, as the MCP providers
/// see them: registered when a session's handshake ends (`notifications/initialized`) if its
/// client offers nothing to ask (judged once, there, not per call), so that a call answered
/// here runs in its session (the pool child pinned to it, its upstream connection per client
/// session).
#[derive(Clone, Default)]
pub struct DirectSessions(Arc<Mutex<HashMap<String, Weak<McpClientSession>>>>);

impl DirectSessions {
    /// Takes the session up if its client, as `initialize` declared it, offers nothing a
    /// server may ask during a call.
    pub fn register(&self, session_id: &str, session: &Arc<McpClientSession>) {
        if session
            .capabilities()
            .is_some_and(|c| asks_nothing_back(&c))
        {
            self.insert(session_id, session);
        }
    }

    fn insert(&self, session_id: &str, session: &Arc<McpClientSession>) {
        self.0
            .write_unpoisoned()
            .insert(session_id.to_owned(), Arc::downgrade(session));
    }

    pub fn forget(&self, session_id: &str) {
        self.0.write_unpoisoned().remove(session_id);
    }

    fn get(&self, session_id: &str) -> Option<Arc<McpClientSession>> {
        let mut sessions = self.0.write_unpoisoned();
        let live = sessions.get(session_id)?.upgrade();
        if live.is_none() {
            sessions.remove(session_id);
        }
        live
    }
}

/// A call the gate answers itself.
pub struct DirectCall {
    id: RequestId,
    params: CallToolRequestParams,
    session: Arc<McpClientSession>,
}

/// Whether media type `essence` is among those `value` (a Content-Type or Accept) names.
fn names_media_type(value: Option<&str>, essence: &str) -> bool {
    value.is_some_and(|v| {
        v.split(',').any(|item| {
            let item = item.split(';').next().unwrap_or_default().trim();
            item.eq_ignore_ascii_case(essence)
        })
    })
}

/// The headers rmcp would take the request with, and none that only rmcp judges.
fn plain_headers(headers: &HeaderMap) -> bool {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let accept = text("accept");
    names_media_type(text("content-type"), "application/json")
        && names_media_type(accept, "application/json")
        && names_media_type(accept, "text/event-stream")
        && text("mcp-protocol-version").is_none_or(|v| {
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .any(|known| known.as_str() == v)
        })
        && headers.keys().all(|name| {
            let name = name.as_str();
            !name.starts_with("mcp-") || name == "mcp-session-id" || name == "mcp-protocol-version"
        })
}

/// A client that offers none of what a server may ask it during a call.
fn asks_nothing_back(capabilities: &ClientCapabilities) -> bool {
    capabilities.sampling.is_none()
        && capabilities.elicitation.is_none()
        && capabilities.roots.is_none()
        // A client of the tasks extension may get a task instead of an answer (mcp/tasks.rs).
        && !capabilities.supports_tasks()
}

/// The `tools/call` in `message` if the gate may answer it as JSON (see the module's words);
/// `None` leaves the request to rmcp. Takes `params` out of `message` only when it answers.
pub fn direct_call(
    sessions: &DirectSessions,
    session_id: &str,
    headers: &HeaderMap,
    message: &mut Value,
) -> Option<DirectCall> {
    if message["method"] != "tools/call" || message["jsonrpc"] != "2.0" || !plain_headers(headers) {
        return None;
    }
    let params = message.get("params")?.as_object()?;
    let plain_meta = match params.get("_meta") {
        None => true,
        Some(meta) => meta.as_object().is_some_and(|meta| {
            meta.keys()
                .all(|k| k != "progressToken" && !k.starts_with("io.modelcontextprotocol/"))
        }),
    };
    if !plain_meta
        || params
            .keys()
            .any(|k| !matches!(k.as_str(), "name" | "arguments" | "_meta"))
    {
        return None;
    }
    // The meta-tools of `mcp.discovery` are answered by the handler (mcp/call.rs).
    let name = params.get("name").and_then(Value::as_str);
    if matches!(
        name,
        Some(crate::service::discovery::FIND_TOOLS | crate::service::discovery::CALL_TOOL)
    ) {
        return None;
    }
    let session = sessions.get(session_id)?;
    let id: RequestId = serde_json::from_value(message.get("id")?.clone()).ok()?;
    let params = serde_json::from_value(message.get_mut("params")?.take()).ok()?;
    Some(DirectCall {
        id,
        params,
        session,
    })
}

/// Runs `call` for the request of `parts` and answers it as one JSON-RPC message; `cancelled`
/// is the client's notifications/cancelled for it.
pub async fn answer(
    service: Arc<Service>,
    call: DirectCall,
    parts: axum::http::request::Parts,
    cancelled: CancellationToken,
) -> Response {
    let DirectCall {
        id,
        params,
        session,
    } = call;
    let CallToolRequestParams {
        meta,
        name,
        arguments,
        ..
    } = params;
    let meta = meta.unwrap_or_default();
    let client = parts
        .extensions
        .get::<Client>()
        .cloned()
        .unwrap_or_else(Client::unknown);
    let bridge = McpBridge::for_session(service, session);
    let request = ToolCall {
        name: &name,
        arguments: arguments.unwrap_or_default(),
        meta: &meta,
        parts: Some(&parts),
        jsonrpc_id: &id,
        peer: None,
        asked: None,
    };
    let message = match bridge
        .run_call(request, client, cancelled.cancelled_owned())
        .await
    {
        Ok(response) => {
            // A session is of the handshake era (2026-07-28 has none): its results keep that
            // era's shape, as rmcp's handler gives them to such a peer.
            let mut result = ServerResult::from(response);
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            ServerJsonRpcMessage::response(result, id)
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    };
    match serde_json::to_vec(&message) {
        Ok(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => {
            tracing::error!("an MCP answer could not be written as JSON: {e}");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    const PLAIN: [(&str, &str); 3] = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-session-id", "s"),
    ];

    #[test]
    fn only_requests_rmcp_would_take_as_they_are_are_answered_here() {
        assert!(plain_headers(&headers(&PLAIN)));
        let mut versioned = PLAIN.to_vec();
        versioned.push(("mcp-protocol-version", "2025-11-25"));
        assert!(plain_headers(&headers(&versioned)));
        let mut unknown = PLAIN.to_vec();
        unknown.push(("mcp-protocol-version", "1999-01-01"));
        assert!(!plain_headers(&headers(&unknown)), "rmcp refuses it");
        let mut named = PLAIN.to_vec();
        named.push(("mcp-method", "tools/call"));
        assert!(!plain_headers(&headers(&named)), "rmcp checks it");
        let json_only = [
            ("content-type", "application/json"),
            ("accept", "application/json"),
        ];
        assert!(!plain_headers(&headers(&json_only)), "rmcp answers 406");
        let text = [
            ("content-type", "text/plain"),
            ("accept", "application/json, text/event-stream"),
        ];
        assert!(!plain_headers(&headers(&text)), "rmcp answers 415");
        let charset = [
            ("content-type", "application/json; charset=utf-8"),
            ("accept", "text/event-stream;q=0.9, Application/JSON"),
        ];
        assert!(plain_headers(&headers(&charset)));
    }

    #[test]
    fn a_client_that_offers_something_to_ask_keeps_its_stream() {
        let offering = |capabilities: Value| -> ClientCapabilities {
            serde_json::from_value(capabilities).unwrap()
        };
        assert!(asks_nothing_back(&offering(serde_json::json!({}))));
        assert!(asks_nothing_back(&offering(
            serde_json::json!({"experimental": {"x": {}}})
        )));
        for asked in ["roots", "sampling", "elicitation"] {
            let capabilities = offering(serde_json::json!({ asked: {} }));
            assert!(!asks_nothing_back(&capabilities), "{asked}");
        }
    }

    #[test]
    fn calls_with_progress_tasks_or_retried_input_are_left_to_rmcp() {
        let sessions = DirectSessions::default();
        let book = crate::provider::ClientSessions::default();
        let session = McpClientSession::new(&book, crate::shutdown::Shutdown::default());
        sessions.insert("s", &session);
        for params in [
            serde_json::json!({"name": "echo", "_meta": {"progressToken": 1}}),
            serde_json::json!({"name": "echo", "task": {"ttl": 1000}}),
            serde_json::json!({"name": "echo", "requestState": "x"}),
            serde_json::json!({"name": "echo", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        ] {
            let mut message = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
            let kept = message.clone();
            assert!(direct_call(&sessions, "s", &headers(&PLAIN), &mut message).is_none());
            assert_eq!(message, kept, "the message is left whole for rmcp");
        }
        let mut plain = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "m"}, "_meta": {"traceparent": "x"}}});
        assert!(direct_call(&sessions, "other", &headers(&PLAIN), &mut plain).is_none());
        let mut named = PLAIN.to_vec();
        named.push(("mcp-name", "echo"));
        assert!(direct_call(&sessions, "s", &headers(&named), &mut plain).is_none());
        let call = direct_call(&sessions, "s", &headers(&PLAIN), &mut plain).unwrap();
        assert_eq!(call.params.name, "echo");
        assert_eq!(call.params.arguments.unwrap()["message"], "m");
        assert_eq!(call.id, RequestId::Number(1));
        // A session whose client is not known yet (no peer attached) is not taken up.
        let unknown = McpClientSession::new(&book, crate::shutdown::Shutdown::default());
        sessions.register("u", &unknown);
        assert!(sessions.get("u").is_none());
    }

    #[test]
    fn a_session_gone_is_forgotten() {
        let sessions = DirectSessions::default();
        let book = crate::provider::ClientSessions::default();
        let session = McpClientSession::new(&book, crate::shutdown::Shutdown::default());
        sessions.insert("s", &session);
        assert!(sessions.get("s").is_some());
        drop(session);
        assert!(sessions.get("s").is_none());
        assert!(sessions.0.read_unpoisoned().is_empty());
        let kept = McpClientSession::new(&book, crate::shutdown::Shutdown::default());
        sessions.insert("t", &kept);
        sessions.forget("t");
        assert!(sessions.get("t").is_none());
    }
}
