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
use std::sync::{Arc, Mutex, Weak};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, Implementation, ListRootsResult,
    LoggingMessageNotificationParam, ProtocolVersion, RequestId, ResourceUpdatedNotificationParam,
    RootsCapabilities, SamplingCapability,
};
use rmcp::service::{InboundStreamOrigin, NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use tokio::sync::Notify;

use super::downstream::{Caller, ClientAnswer, ClientAsk, Downstream, Downstreams, ask_client};
use crate::provider::ProgressSink;
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

/// Where the progress of each running call goes, by the progress token rmcp gave its request.
pub(super) type ProgressRoutes = Arc<Mutex<HashMap<String, ProgressSink>>>;

/// The calls in flight on one connection that came from an MCP client, by the id of our
/// `tools/call` request upstream; `changed` wakes a server request that arrived before its
/// call was entered.
#[derive(Default)]
pub(super) struct CallerBook {
    pub(super) calls: Mutex<HashMap<RequestId, Caller>>,
    pub(super) changed: Notify,
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
    pub(super) downstreams: Downstreams,
    /// The one session this connection serves (`session_per_client`).
    pub(super) owner: Option<Weak<Downstream>>,
    pub(super) tasks: Shutdown,
    pub(super) who: Arc<(String, String)>,
}

impl GatewayClient {
    /// The client the server's request is for; `None` while no call is in flight.
    fn caller_for(&self, context: &RequestContext<RoleClient>) -> Result<Option<Caller>, McpError> {
        let callers = self.callers.calls.read_unpoisoned();
        // Streamable HTTP: the request arrived on the response stream of one of our calls.
        if let Some(InboundStreamOrigin::OutboundRequest(id)) =
            context.extensions.get::<InboundStreamOrigin>()
            && let Some(caller) = callers.get(id)
        {
            return Ok(Some(caller.clone()));
        }
        if let Some(owner) = &self.owner {
            let Some(downstream) = owner.upgrade() else {
                return Err(McpError::internal_error(
                    "the client session this connection served has ended",
                    None,
                ));
            };
            // On the stream of a call of the session when there is one, else on its own.
            let related = callers.values().next().and_then(|c| c.request_id.clone());
            return Ok(Some(Caller::new(downstream, related)));
        }
        let mut callers = callers.values();
        match (callers.next(), callers.next()) {
            (Some(only), None) => Ok(Some(only.clone())),
            (None, _) => Ok(None),
            (Some(_), Some(_)) => Err(McpError::internal_error(
                "several MCP clients' calls are in flight on this connection and the transport does not say which one this request belongs to (set session_per_client on this provider)",
                None,
            )),
        }
    }

    async fn ask(
        &self,
        context: RequestContext<RoleClient>,
        ask: ClientAsk,
    ) -> Result<ClientAnswer, McpError> {
        let deadline = tokio::time::Instant::now() + CALLER_WAIT;
        let caller = loop {
            let changed = self.callers.changed.notified();
            if let Some(caller) = self.caller_for(&context)? {
                break caller;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(McpError::internal_error(
                    "no MCP client's call is in flight on this connection to ask",
                    None,
                ));
            }
        };
        let (service, provider) = (&self.who.0, &self.who.1);
        tracing::debug!(
            service,
            provider,
            downstream = caller.downstream.id(),
            "forwarding a server request to its client"
        );
        ask_client(&self.tasks, &caller, ask).await
    }

    /// The sessions a connection-wide notification is for.
    fn audience(&self) -> Vec<Arc<Downstream>> {
        match &self.owner {
            Some(owner) => owner.upgrade().into_iter().collect(),
            None => self.downstreams.live(),
        }
    }
}

/// What the gateway tells servers it can do: on a connection of one session, what that
/// client can do; on a shared one, everything it forwards to the caller of a call.
fn capabilities(owner: Option<&Weak<Downstream>>) -> ClientCapabilities {
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
        match self.ask(context, ClientAsk::Elicitation(params)).await? {
            ClientAnswer::Elicitation(result) => Ok(result),
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

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        for downstream in self.audience() {
            downstream.forward_log(&params).await;
        }
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        for downstream in self.audience() {
            if let Some(peer) = downstream.peer()
                && downstream.is_subscribed(&params.uri)
            {
                let _ = peer.notify_resource_updated(params.clone()).await;
            }
        }
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        for downstream in self.audience() {
            if let Some(peer) = downstream.peer().filter(|_| downstream.is_session()) {
                let _ = peer.notify_resource_list_changed().await;
            }
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        for downstream in self.audience() {
            if let Some(peer) = downstream.peer().filter(|_| downstream.is_session()) {
                let _ = peer.notify_prompt_list_changed().await;
            }
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    // notifications/progress is routed as it is read (upstream::tap), in order with the
    // answers; the default handler ignores it here.
}
