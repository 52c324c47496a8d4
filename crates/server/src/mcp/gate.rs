//! What every MCP request passes before a transport handles it, for `/mcp` (as a layer in
//! front of rmcp's Streamable HTTP service) and for the legacy `/sse` + `/messages`, once the
//! service's Host and Origin check (`http/hosts.rs`, shared with REST) has let it in: the
//! session rules of [`SessionBook`] (a bound
//! on live sessions, 404 for a closed, expired or unknown session, no request before the
//! handshake is done) and the refusal of a JSON-RPC id still running in its session. Bodies
//! are read as strict JSON ([`contract::strict_json`]) within `limits`, as REST bodies are.

use crate::sync::Unpoisoned;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use contract::ErrorCode as Code;
use contract::strict_json::{self, JsonLimits, JsonRefusal};
use futures::StreamExt;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::direct::{self, DirectSessions};
use super::errors::jsonrpc;
use super::input_required::ParkedCalls;
use super::sessions::{SessionBook, SessionRefusal, SessionState, Transport};
use crate::service::Service;
use crate::service::client::Client;
use crate::service::oauth;
use crate::shutdown::Shutdown;

/// The shared state of the `/mcp` gate.
#[derive(Clone)]
pub struct McpGate {
    pub book: SessionBook,
    /// For the calls answered here ([`super::direct`]).
    pub service: Arc<Service>,
    pub direct: DirectSessions,
    /// Calls waiting for their 2026-07-28 client's input: a retry for one another replica
    /// holds is sent on to it.
    pub parked: ParkedCalls,
    pub in_flight: InFlight,
    pub max_body: usize,
    pub json: JsonLimits,
}

/// How a body is read: `Ok(None)` for text that is not JSON (rmcp, or the legacy transport,
/// answers it as the protocol says), a refusal for JSON past a bound or with a duplicate key
/// (answer it with [`refused_body`]).
pub fn read_message(bytes: &[u8], limits: &JsonLimits) -> Result<Option<Value>, JsonRefusal> {
    match strict_json::parse(bytes, limits) {
        Ok(message) => Ok(Some(message)),
        Err(JsonRefusal::Syntax(_)) => Ok(None),
        Err(refusal) => Err(refusal),
    }
}

/// 413 with a JSON-RPC error (-32600, `PAYLOAD_TOO_LARGE`): the body is over `max` bytes.
pub fn body_too_large(max: usize) -> Response {
    let answer = json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": jsonrpc::INVALID_REQUEST,
        "message": format!("Request body exceeds the limit of {max} bytes"),
        "data": {"code": Code::PayloadTooLarge, "retryable": false},
    }});
    (StatusCode::PAYLOAD_TOO_LARGE, Json(answer)).into_response()
}

/// 400 with a JSON-RPC error (-32600, `INVALID_REQUEST`, where in the body): the message was
/// not read, so its id is unknown and the answer's is null.
pub fn refused_body(refusal: &JsonRefusal) -> Response {
    let answer = json!({"jsonrpc": "2.0", "id": null, "error": {
        "code": jsonrpc::INVALID_REQUEST,
        "message": refusal.to_string(),
        "data": {"code": Code::InvalidRequest, "retryable": false, "pointer": refusal.pointer()},
    }});
    (StatusCode::BAD_REQUEST, Json(answer)).into_response()
}

/// The answer to a request its session cannot take, as a JSON-RPC error with our code.
pub fn session_refusal(refusal: &SessionRefusal, id: Value) -> Response {
    let (status, code, rpc, state) = match refusal {
        SessionRefusal::TooMany(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Code::ServiceUnavailable,
            -32000,
            None,
        ),
        SessionRefusal::TooManyOfClient(_) | SessionRefusal::TooManyStreamsOfClient(_) => (
            StatusCode::TOO_MANY_REQUESTS,
            Code::RateLimited,
            -32000,
            None,
        ),
        SessionRefusal::Unknown | SessionRefusal::NotYours => (
            StatusCode::NOT_FOUND,
            Code::NotFound,
            jsonrpc::SESSION_NOT_FOUND,
            None,
        ),
        SessionRefusal::Closed(_) => (
            StatusCode::NOT_FOUND,
            Code::NotFound,
            jsonrpc::SESSION_NOT_FOUND,
            Some("closed"),
        ),
        SessionRefusal::Expired(..) | SessionRefusal::Unused(..) => (
            StatusCode::NOT_FOUND,
            Code::NotFound,
            jsonrpc::SESSION_NOT_FOUND,
            Some("expired"),
        ),
        SessionRefusal::Evicted(_) => (
            StatusCode::NOT_FOUND,
            Code::NotFound,
            jsonrpc::SESSION_NOT_FOUND,
            Some("evicted"),
        ),
    };
    let mut data = json!({"code": code, "retryable": true});
    if let Some(state) = state {
        data["session_state"] = json!(state);
    }
    let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": rpc, "message": refusal.to_string(), "data": data,
    }});
    let mut response = (status, Json(answer)).into_response();
    if matches!(
        status,
        StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
    ) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    response
}

/// How long a replica waits for the Redis record of a session it does not know: the owner
/// writes it off the request path, so a request that a balancer sends elsewhere right after
/// `initialize` can come before it.
const RECORD_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The Redis record of `session`, polled for up to [`RECORD_WAIT`] while there is none.
async fn record_of(
    cluster: &crate::service::cluster::Cluster,
    session: &str,
) -> Option<crate::service::cluster::sessions::SessionRecord> {
    let deadline = tokio::time::Instant::now() + RECORD_WAIT;
    loop {
        if let Some(record) = cluster.session(session).await {
            return Some(record);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A request for a session this replica does not hold. With `cluster`, Redis may say which
/// replica does: a balancer without affinity sent the request here, and it is sent on to the
/// owner, whose answer is passed back (once: a forwarded request is not forwarded again).
/// When the owner cannot be reached (most likely it died) or none is known, 404, naming the
/// owner when known; the client initialises again, as the spec says.
async fn unknown_here(book: &SessionBook, session: &str, id: Value, request: Request) -> Response {
    let owner = match book.cluster() {
        Some(cluster) => record_of(cluster, session)
            .await
            .filter(|r| r.owner != cluster.replica_id())
            .map(|owner| (cluster, owner)),
        None => None,
    };
    let Some((cluster, owner)) = owner else {
        return session_refusal(&SessionRefusal::Unknown, id);
    };
    if !cluster.forwarded_by_replica(request.headers()) {
        match cluster.forward_session_request(&owner, request).await {
            Ok(answer) => return answer,
            Err(why) => tracing::info!(
                target: "mcp_session",
                session_id = session,
                owner = %owner.owner,
                owner_address = %owner.address,
                "a request for a session of another replica could not be sent on: {why}"
            ),
        }
    }
    tracing::info!(
        target: "mcp_session",
        session_id = session,
        owner = %owner.owner,
        owner_address = %owner.address,
        "a request for a session of another replica: answered 404, the client initialises again"
    );
    let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": jsonrpc::SESSION_NOT_FOUND,
        "message": format!("MCP session not found on this replica (it belongs to replica {}, which could not be reached): initialize a new session", owner.owner),
        "data": {"code": Code::NotFound, "retryable": true, "owner": owner.owner},
    }});
    (StatusCode::NOT_FOUND, Json(answer)).into_response()
}

/// A retry of a call that waits for its client's input on another replica (a balancer without
/// affinity sent it here): sent on to that replica, whose record names it. Without a record,
/// or once sent on already, this replica answers it (an unknown state, -32602).
async fn parked_elsewhere(
    book: &SessionBook,
    state: &str,
    id: Option<Value>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(cluster) = book.cluster()
        && !cluster.forwarded_by_replica(request.headers())
        && let Some(owner) = record_of(cluster, state)
            .await
            .filter(|r| r.owner != cluster.replica_id())
    {
        return match cluster.forward_session_request(&owner, request).await {
            Ok(answer) => answer,
            Err(why) => {
                tracing::info!(
                    target: "mcp_session",
                    owner = %owner.owner,
                    "a retry of a call waiting on another replica could not be sent on: {why}"
                );
                let answer = json!({"jsonrpc": "2.0", "id": id.unwrap_or_default(), "error": {
                    "code": jsonrpc::INVALID_PARAMS,
                    "message": format!("The call this requestState names waits on replica {}, which could not be reached: call the tool again", owner.owner),
                    "data": {"code": Code::ServiceUnavailable, "retryable": true, "owner": owner.owner},
                }});
                Json(answer).into_response()
            }
        };
    }
    next.run(request).await
}

/// The answer to a request sent before the handshake (`initialize`, then
/// `notifications/initialized`) is done.
pub fn not_initialized(id: Value) -> Response {
    let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": jsonrpc::INVALID_REQUEST,
        "message": "Session not initialized: send notifications/initialized after the initialize answer, then retry",
        "data": {"code": Code::InvalidRequest, "retryable": true},
    }});
    (StatusCode::BAD_REQUEST, Json(answer)).into_response()
}

/// Whether a message may come in a session that is `created` but not yet `initialized`:
/// `initialize` itself (over SSE it comes in the session), notifications (the `initialized`
/// one among them), `ping`, and answers to our requests.
pub fn allowed_before_handshake(message: &Value) -> bool {
    let is_request = message.get("method").is_some() && message.get("id").is_some();
    !is_request || message["method"] == "ping" || message["method"] == "initialize"
}

/// `params.clientInfo` of an `initialize` request: (name, version).
pub fn client_info(message: &Value) -> Option<(String, String)> {
    let info = message.get("params")?.get("clientInfo")?;
    Some((
        info.get("name")?.as_str()?.to_owned(),
        info.get("version")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
    ))
}

/// The layer in front of rmcp's `/mcp`.
pub async fn gate(State(gate): State<McpGate>, request: Request, next: Next) -> Response {
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let method = request.method().clone();
    let client = request.extensions().get::<Client>();
    let identity = client.and_then(Client::identity);
    let counted_as: Arc<str> =
        client.map_or_else(|| Client::unknown().as_str().into(), |c| c.as_str().into());
    if method != Method::POST {
        let Some(session) = session else {
            return next.run(request).await;
        };
        match gate.book.touch(&session, identity.as_deref(), true) {
            Err(SessionRefusal::Unknown) => {
                return unknown_here(&gate.book, &session, Value::Null, request).await;
            }
            Err(refusal) => return session_refusal(&refusal, Value::Null),
            Ok(_) => {}
        }
        if method == Method::GET {
            // The session's standing stream: held by its client until it ends.
            let held = match gate.book.open_stream(&counted_as) {
                Ok(held) => held,
                Err(refusal) => return session_refusal(&refusal, Value::Null),
            };
            let (parts, body) = next.run(request).await.into_parts();
            let body = body.into_data_stream().map(move |chunk| {
                let _held = &held;
                chunk
            });
            return Response::from_parts(parts, axum::body::Body::from_stream(body));
        }
        let mut response = next.run(request).await;
        if method == Method::DELETE && response.status().is_success() {
            gate.book.close(&session);
            gate.direct.forget(&session);
            // rmcp answers 202; clients (the Python SDK among them) expect 200 or 204 for a
            // session that is ended, and warn otherwise.
            *response.status_mut() = StatusCode::OK;
        }
        return response;
    }
    let (parts, body) = request.into_parts();
    // Read within limits.max_body_bytes, as every other body of the service.
    let Ok(bytes) = axum::body::to_bytes(body, gate.max_body).await else {
        return body_too_large(gate.max_body);
    };
    let mut message = match read_message(&bytes, &gate.json) {
        Ok(message) => message.unwrap_or(Value::Null),
        Err(refusal) => return refused_body(&refusal),
    };
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    if let Some(step_up) = short_of_scope(&gate.service, &request, &message) {
        return step_up;
    }
    let id = message
        .get("method")
        .and(message.get("id"))
        .filter(|id| !id.is_null())
        .cloned();
    let Some(session) = session else {
        if let Some(state) = message["params"]["requestState"].as_str()
            && !gate.parked.holds(state)
            && gate.book.cluster().is_some()
        {
            let call = super::input_required::call_of(state);
            return parked_elsewhere(&gate.book, call, id, request, next).await;
        }
        if message["method"] != "initialize" {
            return next.run(request).await; // rmcp: a session id is required
        }
        // The place is held while rmcp handles the handshake: given back if no session comes.
        let place = match gate.book.admit(&counted_as) {
            Ok(place) => place,
            Err(refusal) => return session_refusal(&refusal, id.unwrap_or_default()),
        };
        let response = next.run(request).await;
        if let Some(issued) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            gate.book.open(
                place,
                issued,
                Transport::StreamableHttp,
                client_info(&message),
                identity,
            );
            // Its next request may reach another replica: the record is there before it.
            gate.book.shared_now(issued).await;
        }
        return response;
    };
    let used = message["method"] != "notifications/initialized";
    match gate.book.touch(&session, identity.as_deref(), used) {
        Err(SessionRefusal::Unknown) => {
            return unknown_here(&gate.book, &session, id.unwrap_or_default(), request).await;
        }
        Err(refusal) => return session_refusal(&refusal, id.unwrap_or_default()),
        Ok(SessionState::Created) if !allowed_before_handshake(&message) => {
            return not_initialized(id.unwrap_or_default());
        }
        Ok(_) => {}
    }
    if message["method"] == "notifications/initialized" {
        let response = next.run(request).await;
        if response.status().is_success() {
            gate.book.initialized(&session);
        }
        return response;
    }
    let Some(id) = id else {
        if message["method"] == "notifications/cancelled" {
            // A call answered here is cancelled here; rmcp cancels its own.
            gate.in_flight
                .cancel(&session, &message["params"]["requestId"]);
        }
        return next.run(request).await;
    };
    let Some(running) = Running::claim(&gate.in_flight, (session.clone(), id.to_string())) else {
        let answer = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": jsonrpc::INVALID_REQUEST,
            "message": format!("Duplicate request id {id}: a request with this id is still running in this session"),
            "data": {"code": Code::InvalidRequest, "retryable": false},
        }});
        return Json(answer).into_response();
    };
    if let Some(call) = direct::direct_call(&gate.direct, &session, request.headers(), &mut message)
    {
        let (parts, _) = request.into_parts();
        let cancelled = running.cancelled.clone();
        let answer = direct::answer(gate.service.clone(), call, parts, cancelled).await;
        drop(running);
        return answer;
    }
    let (parts, body) = next.run(request).await.into_parts();
    // The id stays taken until the answer's stream has been sent (or dropped).
    let running = Arc::new(running);
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &running;
        chunk
    });
    Response::from_parts(parts, axum::body::Body::from_stream(body))
}

/// A `tools/call` of a tool the service has but the caller's token scopes do not open:
/// HTTP 403 with an `insufficient_scope` challenge naming the scopes that would (the MCP
/// authorization spec's step-up), so a client can ask its user for them and retry. The body
/// is the JSON-RPC error the call would have had.
fn short_of_scope(service: &Service, request: &Request, message: &Value) -> Option<Response> {
    if message["method"] != "tools/call" {
        return None;
    }
    let client = request.extensions().get::<Client>()?;
    client.token()?;
    let tool = message["params"]["name"].as_str()?;
    if client.may_use(tool) || !service.has_tool(tool) {
        return None;
    }
    let settings = service.settings();
    let resource = oauth::Resource::of(&settings, request);
    let challenge = oauth::insufficient_scope(&settings, client, tool, &resource)?;
    let answer = json!({"jsonrpc": "2.0", "id": message.get("id").cloned().unwrap_or_default(), "error": {
        "code": jsonrpc::INVALID_PARAMS,
        "message": format!("Tool '{tool}' is outside the scope of the token of '{}'", client.as_str()),
        "data": {"code": Code::Forbidden, "retryable": false},
    }});
    let mut response = (StatusCode::FORBIDDEN, Json(answer)).into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    Some(response)
}

/// Expires idle sessions every [`SessionBook::sweep_period`] until `stop`, ending rmcp's
/// side of each expired Streamable HTTP session (an SSE session ends on its record's token);
/// at `stop` every session is closed.
pub fn sweep_sessions(
    book: SessionBook,
    rmcp: Arc<LocalSessionManager>,
    direct: DirectSessions,
    stop: Shutdown,
) {
    stop.clone().spawn(async move {
        let mut tick = tokio::time::interval(book.sweep_period());
        loop {
            tokio::select! {
                _ = stop.cancelled() => {
                    book.close_all();
                    return;
                }
                _ = tick.tick() => {
                    for record in book.sweep(chrono::Utc::now()) {
                        if record.transport == Transport::StreamableHttp {
                            direct.forget(&record.session_id);
                            let _ = rmcp.close_session(&record.session_id.clone().into()).await;
                        }
                    }
                }
            }
        }
    });
}

/// The JSON-RPC requests running now, by (session, id): a second request with an id still
/// running in its session is refused before rmcp sees it (rmcp routes answers by id, so a
/// duplicate would get no answer at all). Each has the token its client's
/// notifications/cancelled cancels (read by the calls answered here).
#[derive(Clone, Default)]
pub struct InFlight(Arc<Mutex<HashMap<(String, String), CancellationToken>>>);

impl InFlight {
    /// notifications/cancelled for `request_id` (its JSON value) in `session`.
    fn cancel(&self, session: &str, request_id: &Value) {
        let key = (session.to_owned(), request_id.to_string());
        if let Some(token) = self.0.read_unpoisoned().get(&key) {
            token.cancel();
        }
    }
}

/// Holds a request's place in [`InFlight`] for as long as it runs.
struct Running {
    in_flight: InFlight,
    key: (String, String),
    cancelled: CancellationToken,
}

impl Running {
    fn claim(in_flight: &InFlight, key: (String, String)) -> Option<Running> {
        let mut running = in_flight.0.write_unpoisoned();
        if running.contains_key(&key) {
            return None;
        }
        let cancelled = CancellationToken::new();
        running.insert(key.clone(), cancelled.clone());
        Some(Running {
            in_flight: in_flight.clone(),
            key,
            cancelled,
        })
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.in_flight.0.write_unpoisoned().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_notifications_and_ping_precede_the_handshake() {
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"});
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {}});
        assert!(!allowed_before_handshake(&call));
        assert!(allowed_before_handshake(&ping));
        assert!(allowed_before_handshake(&done));
        assert!(allowed_before_handshake(&answer));
        assert!(allowed_before_handshake(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
        ));
    }

    #[test]
    fn client_info_is_read_from_initialize() {
        let init = json!({"method": "initialize", "params": {"clientInfo": {"name": "cursor", "version": "2.1"}}});
        assert_eq!(
            client_info(&init),
            Some(("cursor".to_owned(), "2.1".to_owned()))
        );
        assert_eq!(client_info(&json!({"method": "initialize"})), None);
    }

    #[test]
    fn a_body_past_a_bound_is_refused_and_text_that_is_not_json_is_left_to_rmcp() {
        let limits = JsonLimits::default();
        assert_eq!(read_message(b"{nope", &limits).unwrap(), None);
        let refusal =
            read_message(br#"{"params":{"arguments":{"a":1,"a":2}}}"#, &limits).unwrap_err();
        assert_eq!(refusal.pointer(), Some("/params/arguments"));
        assert_eq!(refused_body(&refusal).status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn gone_sessions_answer_404_and_too_many_503() {
        let gone = session_refusal(&SessionRefusal::Expired("s".into(), 60), json!(4));
        assert_eq!(gone.status(), StatusCode::NOT_FOUND);
        let full = session_refusal(&SessionRefusal::TooMany(2), Value::Null);
        assert_eq!(full.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(full.headers().contains_key(header::RETRY_AFTER));
    }
}
