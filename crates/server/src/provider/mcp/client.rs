//! Our side of the MCP connection: identifies the gateway, hears list changes (progress is
//! routed by `upstream::tap`), and hands what the server sends its client — log messages,
//! resource updates, and the requests `sampling/createMessage`, `elicitation/create`,
//! `roots/list` — to the client sessions behind the gateway.
//!
//! A server's request goes to the client whose call caused it: on a connection of one session
//! (`session_per_client`), that session; otherwise the caller of the `tools/call` on whose
//! response stream it arrived (Streamable HTTP says which), or, when the transport cannot say
//! (stdio, SSE), the caller of the one call in flight.
// rmcp marks logging, sampling and roots deprecated (SEP-2577); the protocol versions the
// gateway serves still have them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    CustomRequest, CustomResult, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, Implementation, ListRootsResult, LoggingMessageNotificationParam,
    ProtocolVersion, RequestId, ResourceUpdatedNotificationParam, RootsCapabilities,
    SamplingCapability,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use tokio::sync::Notify;

use super::upstream::wire::WireRequests;
use crate::provider::ProgressSink;
use crate::provider::clients::{
    Caller, ClientAnswer, ClientAsk, ClientNotice, ClientSession, ClientSessions,
};
use crate::sync::Unpoisoned;

/// Where the progress of each running call goes, by the progress token rmcp gave its request.
pub(super) type ProgressRoutes = Arc<Mutex<HashMap<String, ProgressSink>>>;

/// The calls in flight on one connection, by the id of our `tools/call` request upstream,
/// with their MCP client (`None`: the call came over HTTP); `changed` wakes a server request
/// that arrived before its call was entered.
#[derive(Default)]
pub(super) struct CallerBook {
    pub(super) calls: Mutex<HashMap<RequestId, Option<Caller>>>,
    pub(super) changed: Notify,
    /// What the server asked of the caller of a call that has no client to ask it of, by the
    /// call's id: a call that then fails failed for want of it (CAPABILITY_REQUIRED).
    pub(super) refused: Mutex<HashMap<RequestId, &'static str>>,
    /// Log messages read on the connection, and handed on to the sessions: rmcp hands each
    /// notification on in a task of its own, so a call's answer waits for those read before
    /// it ([`CallerBook::logs_handed_on`]) to reach its client first.
    pub(super) logs_read: AtomicU64,
    pub(super) logs_told: tokio::sync::watch::Sender<u64>,
    /// The log messages read and not handed on yet, in the order they were read (the tap
    /// queues them; rmcp's tasks, which may run in any order, hand them on from here, one
    /// at a time under `log_turn`).
    pub(super) logs_queued: Mutex<std::collections::VecDeque<LoggingMessageNotificationParam>>,
    pub(super) log_turn: tokio::sync::Mutex<()>,
    /// The server's requests as it wrote them, read by the transport ([`WireRequests`]).
    pub(super) wire: Arc<WireRequests>,
}

/// How long a call's answer waits for the log messages read before it to be handed on.
const LOG_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

impl CallerBook {
    /// Resolves once every log message read so far has been handed on (or after
    /// [`LOG_DRAIN`]).
    pub(super) async fn logs_handed_on(&self) {
        let read = self.logs_read.load(Ordering::Acquire);
        if *self.logs_told.borrow() >= read {
            return;
        }
        let mut told = self.logs_told.subscribe();
        let _ = tokio::time::timeout(LOG_DRAIN, told.wait_for(|n| *n >= read)).await;
    }
}

/// Where a server's request goes.
enum Route {
    Client(Caller),
    /// Its call (by our request id, when known) came over HTTP, or no call is in flight:
    /// there is no client to ask.
    NoClient(Option<RequestId>),
    /// No call is in flight yet: its entry may still come.
    NotYet,
}

/// The answer when there is no MCP client behind the call that offers what is asked (the call
/// came over HTTP, or its client lacks the capability): an elicitation is declined, the roots
/// are none, sampling is refused.
pub(super) fn no_client(ask: ClientAsk) -> Result<ClientAnswer, McpError> {
    match ask {
        ClientAsk::Elicitation { .. } => Ok(ClientAnswer::Elicitation(ElicitResult::new(
            ElicitationAction::Decline,
        ))),
        ClientAsk::Roots => Ok(ClientAnswer::Roots(ListRootsResult::default())),
        ClientAsk::Sampling(_) => Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            "sampling/createMessage: the call's client (HTTP, or an MCP client without sampling) has no model to ask",
            None,
        )),
    }
}

pub(super) type CallerRoutes = Arc<CallerBook>;

/// How long a server's request waits for the call it belongs to to be entered (it can arrive
/// between our send and the entry).
const CALLER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Our side of one MCP connection.
#[derive(Clone)]
pub struct GatewayClient {
    pub(super) refresh: Arc<Notify>,
    pub(super) progress: ProgressRoutes,
    pub(super) callers: CallerRoutes,
    /// Every client session of the service (log messages and resource updates of a shared
    /// connection go to them).
    pub(super) sessions: ClientSessions,
    /// The one session this connection serves (`session_per_client`).
    pub(super) owner: Option<Weak<dyn ClientSession>>,
    pub(super) who: Arc<(String, String)>,
    /// Which era the connection speaks (`protocol`).
    pub(super) protocol: crate::config::UpstreamProtocol,
}

/// Whether a connection speaks the stateless era (2026-07-28 and after): no `ping`, no
/// `logging/setLevel`, log messages asked for per request, input asked for in rounds.
pub(super) fn is_stateless(peer: &rmcp::Peer<RoleClient>) -> bool {
    peer.peer_info().is_some_and(|info| {
        // ISO dates compare as text as they do in time.
        info.protocol_version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
    })
}

impl GatewayClient {
    /// The client the server's request is for.
    fn caller_for(&self, context: &RequestContext<RoleClient>) -> Result<Route, McpError> {
        let callers = self.callers.calls.read_unpoisoned();
        // Streamable HTTP: the request arrived on the response stream of one of our calls.
        if let Some(InboundStreamOrigin::OutboundRequest(id)) =
            context.extensions.get::<InboundStreamOrigin>()
            && let Some(caller) = callers.get(id)
        {
            return Ok(caller
                .clone()
                .map_or_else(|| Route::NoClient(Some(id.clone())), Route::Client));
        }
        if let Some(owner) = &self.owner {
            let Some(session) = owner.upgrade() else {
                return Err(McpError::internal_error(
                    "the client session this connection served has ended",
                    None,
                ));
            };
            // On the stream of a call of the session when there is one, else on its own.
            let related = callers
                .values()
                .flatten()
                .next()
                .and_then(|c| c.request_id.clone());
            return Ok(Route::Client(Caller::new(session, related)));
        }
        if callers.is_empty() {
            return Ok(Route::NotYet);
        }
        let mut from_mcp = callers.values().flatten();
        match (from_mcp.next(), from_mcp.next()) {
            // Only calls from HTTP: when there is one, the request is its.
            (None, _) => Ok(Route::NoClient(
                (callers.len() == 1)
                    .then(|| callers.keys().next().cloned())
                    .flatten(),
            )),
            (Some(only), None) if callers.len() == 1 => Ok(Route::Client(only.clone())),
            _ => Err(McpError::internal_error(
                "several calls are in flight on this connection and the transport does not say which one this request belongs to (set session_per_client on this provider)",
                None,
            )),
        }
    }

    /// Asks the client behind the call the server's request belongs to; when it cannot be
    /// delivered, the server is answered with the error and the log says so (never dropped).
    async fn ask(
        &self,
        context: RequestContext<RoleClient>,
        ask: ClientAsk,
    ) -> Result<ClientAnswer, McpError> {
        let method = ask.method();
        let asked = self.deliver(context, ask).await;
        if let Err(error) = &asked {
            let (service, provider) = (&self.who.0, &self.who.1);
            let said = "a server's request to its client could not be delivered; the server is answered with the error";
            // Servers ask their roots on their own at start, before any call: expected, and
            // asked again in a call.
            if method == "roots/list" {
                tracing::info!(service, provider, method, error = %error.message, "{said}");
            } else {
                tracing::warn!(service, provider, method, error = %error.message, "{said}");
            }
        }
        asked
    }

    async fn deliver(
        &self,
        context: RequestContext<RoleClient>,
        ask: ClientAsk,
    ) -> Result<ClientAnswer, McpError> {
        let deadline = tokio::time::Instant::now() + CALLER_WAIT;
        let caller = loop {
            let changed = self.callers.changed.notified();
            match self.caller_for(&context)? {
                Route::Client(caller) => break caller,
                Route::NoClient(call) => {
                    if let (Some(id), ClientAsk::Sampling(_)) = (call, &ask) {
                        self.callers
                            .refused
                            .write_unpoisoned()
                            .insert(id, "sampling");
                    }
                    return no_client(ask);
                }
                Route::NotYet => {
                    if tokio::time::timeout_at(deadline, changed).await.is_err() {
                        // Asked outside any call (server-everything asks its roots at start):
                        // nobody to ask yet. An error, not an empty answer a server would keep,
                        // so it asks again in a call, whose client is then asked.
                        return Err(McpError::internal_error(
                            format!(
                                "{}: no client call is in flight on this connection to ask",
                                ask.method()
                            ),
                            None,
                        ));
                    }
                }
            }
        };
        // A client that does not offer it is answered for as if the call came over HTTP.
        let offered = caller
            .session
            .capabilities()
            .is_some_and(|c| ask.offered_by(&c));
        if !offered {
            return no_client(ask);
        }
        let (service, provider) = (&self.who.0, &self.who.1);
        tracing::debug!(
            service,
            provider,
            downstream = caller.session.id(),
            "forwarding a server request to its client"
        );
        caller.ask(ask).await
    }

    /// Tells what the server told its client to the sessions it is for: this connection's own,
    /// or every session of the service for a shared one (each drops what it does not want).
    async fn tell(&self, notice: ClientNotice) {
        let audience = match &self.owner {
            Some(owner) => owner.upgrade().into_iter().collect(),
            None => self.sessions.live(),
        };
        for session in audience {
            session.notify(notice.clone()).await;
        }
    }
}

/// What the gateway tells servers it can do: on a connection of one session, what that
/// client can do; on a shared one, everything it forwards to the caller of a call.
fn capabilities(owner: Option<&Weak<dyn ClientSession>>) -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    match owner {
        Some(owner) => {
            if let Some(theirs) = owner.upgrade().and_then(|d| d.capabilities()) {
                capabilities.sampling = theirs.sampling;
                capabilities.elicitation = theirs.elicitation;
                capabilities.roots = theirs.roots.map(|mut r| {
                    // roots/list_changed from the client is not forwarded.
                    r.list_changed = None;
                    r
                });
            }
        }
        None => {
            capabilities.sampling = Some(SamplingCapability::default());
            let mut elicitation = ElicitationCapability::default();
            elicitation.form = Some(Default::default());
            elicitation.url = Some(Default::default());
            capabilities.elicitation = Some(elicitation);
            capabilities.roots = Some(RootsCapabilities::default());
        }
    }
    capabilities
}

impl ClientHandler for GatewayClient {
    fn get_info(&self) -> ClientConfig {
        // The initialize handshake is what every MCP server released so far speaks.
        ClientConfig::new(
            capabilities(self.owner.as_ref()),
            Implementation::new("mcp-http-gateway", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        match self.ask(context, ClientAsk::Sampling(params)).await? {
            ClientAnswer::Sampling(result) => Ok(result),
            _ => Err(McpError::internal_error("unexpected answer", None)),
        }
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let as_sent = self.callers.wire.take(&context.id);
        let ask = ClientAsk::Elicitation {
            params: Some(params),
            as_sent,
        };
        match self.ask(context, ask).await? {
            ClientAnswer::Elicitation(result) => Ok(result),
            _ => Err(McpError::internal_error("unexpected answer", None)),
        }
    }

    /// A request rmcp could not read into its types: an `elicitation/create` whose schema its
    /// types cannot hold is asked as the server wrote it; any other method is answered
    /// "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleClient>,
    ) -> Result<CustomResult, McpError> {
        if request.method != "elicitation/create" || request.params.is_none() {
            let (service, provider) = (&self.who.0, &self.who.1);
            tracing::warn!(
                service,
                provider,
                method = request.method,
                "the server asked its client something the gateway does not forward"
            );
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("{}: not forwarded by the gateway", request.method),
                None,
            ));
        }
        self.callers.wire.take(&context.id);
        let ask = ClientAsk::Elicitation {
            params: None,
            as_sent: request.params,
        };
        match self.ask(context, ask).await? {
            ClientAnswer::Elicitation(result) => serde_json::to_value(result)
                .map(CustomResult)
                .map_err(|e| McpError::internal_error(e.to_string(), None)),
            _ => Err(McpError::internal_error("unexpected answer", None)),
        }
    }

    async fn list_roots(
        &self,
        context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        match self.ask(context, ClientAsk::Roots).await? {
            ClientAnswer::Roots(result) => Ok(result),
            _ => Err(McpError::internal_error("unexpected answer", None)),
        }
    }

    /// Hands on every log message queued so far, in the order they were read (this
    /// notification's among them, unless an earlier task took it already).
    async fn on_logging_message(
        &self,
        _params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _turn = self.callers.log_turn.lock().await;
        loop {
            let next = self.callers.logs_queued.write_unpoisoned().pop_front();
            let Some(message) = next else {
                return;
            };
            self.tell(ClientNotice::Log(message)).await;
            self.callers.logs_told.send_modify(|told| *told += 1);
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let notice = ClientNotice::ResourceUpdated {
            provider: self.who.1.clone(),
            update: params,
        };
        self.tell(notice).await;
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tell(ClientNotice::ResourceListChanged).await;
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // The service's document has an operation per prompt: the rebuild that follows a
        // refetch of the tools lists the prompts again.
        self.refresh.notify_one();
        self.tell(ClientNotice::PromptListChanged).await;
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    // notifications/progress is routed as it is read (upstream::tap), in order with the
    // answers; the default handler ignores it here.
}
