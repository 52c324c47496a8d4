//! The service's tools over MCP at `/mcp` (Streamable HTTP, rmcp's server): `tools/list`
//! answers what GET /tools lists, `tools/call` runs through the same [`Service::call_tool`] —
//! the same validation, timeouts and limits as POST /call-tool.
//!
//! Failures are answered as [`super::errors`] maps them. What the MCP servers behind send a
//! client — log messages (filtered by the session's `logging/setLevel`), resource updates of
//! its subscriptions, sampling, elicitation and roots requests of its calls — reaches this
//! session through its [`Downstream`] record (`provider::mcp::downstream`).
// rmcp marks logging and resources/subscribe deprecated (SEP-2577); the protocol versions the
// gateway serves still have them, and clients use them.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, Reference, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, ServiceError};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, Peer, RoleClient, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::capabilities::merged_capabilities;
use super::direct::DirectSessions;
use super::errors::jsonrpc;
use crate::provider::mcp::Upstream;
use crate::provider::mcp::downstream::Downstream;
use crate::service::Service;
use crate::service::client::Client;

/// One MCP session's view of the service (one request's, for a stateless 2026-07-28 client).
#[derive(Clone)]
pub struct McpBridge {
    pub(super) service: Arc<Service>,
    /// This session as the MCP providers see it: its peer, log level, subscriptions.
    pub(super) downstream: Arc<Downstream>,
    /// The client that opened the session, for a transport whose messages carry no HTTP
    /// request of their own (legacy SSE); on /mcp each request names its client.
    opener: Option<Client>,
    /// Where a `/mcp` session is registered once its handshake is done, for the calls the
    /// gate answers as JSON ([`super::direct`]); none on the legacy transport.
    direct: Option<DirectSessions>,
}

/// The `/mcp` endpoint of a service; `stop` ends every session (on shutdown). Each session
/// is registered in `direct` once its handshake is done.
pub fn endpoint(
    service: Arc<Service>,
    direct: DirectSessions,
    stop: CancellationToken,
) -> (
    StreamableHttpService<McpBridge, LocalSessionManager>,
    Arc<LocalSessionManager>,
) {
    let mut sessions = LocalSessionManager::default();
    // Idle sessions are expired by our session book (mcp_gate::sweep_sessions), not by rmcp.
    sessions.session_config.keep_alive = None;
    let config = StreamableHttpServerConfig::default()
        // Host and Origin are judged once for every route, before this (`http/hosts.rs`, read
        // per request so a reload applies); rmcp's own copy of the rule would disagree with it.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        // A stateless (2026-07-28) request whose handler sends nothing before its answer is
        // answered as one JSON body, not an SSE stream of one event (the spec allows either,
        // and rmcp falls back to the stream when a notification or request comes first).
        .with_json_response(true)
        .with_cancellation_token(stop);
    let sessions = Arc::new(sessions);
    let endpoint = StreamableHttpService::new(
        move || {
            Ok(McpBridge {
                direct: Some(direct.clone()),
                ..McpBridge::new(service.clone())
            })
        },
        sessions.clone(),
        config,
    );
    (endpoint, sessions)
}

/// An upstream's failure as this side answers it: its own JSON-RPC error when it sent one.
fn upstream_error(what: &str, e: ServiceError) -> McpError {
    match e {
        ServiceError::McpError(error) => error,
        other => McpError::internal_error(format!("{what}: {other}"), None),
    }
}

impl McpBridge {
    pub fn new(service: Arc<Service>) -> Self {
        let downstream = Downstream::new(service.downstreams());
        McpBridge::for_session(service, downstream)
    }

    /// The view of the session whose providers' side is `downstream`.
    pub fn for_session(service: Arc<Service>, downstream: Arc<Downstream>) -> Self {
        McpBridge {
            service,
            downstream,
            opener: None,
            direct: None,
        }
    }

    /// A session whose messages all come from `client` (legacy SSE: the opener of GET /sse).
    pub fn opened_by(service: Arc<Service>, client: Client) -> Self {
        McpBridge {
            opener: Some(client),
            ..McpBridge::new(service)
        }
    }

    /// Who sent this request: the client the HTTP layers named (its API key's name and
    /// scope), else the session's opener.
    pub(super) fn client(&self, context: &RequestContext<RoleServer>) -> Client {
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Client>().cloned())
            .or_else(|| self.opener.clone())
            .unwrap_or_else(Client::unknown)
    }

    /// Notes the session's peer (rmcp gives it with each request).
    pub(super) fn seen(&self, context: &RequestContext<RoleServer>) {
        self.downstream.attach(&context.peer);
    }

    /// The MCP providers whose servers' capabilities pass `has`, with the connection this
    /// session's requests go on.
    async fn peers_with(
        &self,
        has: impl Fn(&ServerCapabilities) -> bool,
    ) -> Vec<(Upstream, Peer<RoleClient>)> {
        let mut peers = Vec::new();
        for upstream in self.service.mcp_upstreams() {
            if !upstream.capabilities().is_some_and(|c| has(&c)) {
                continue;
            }
            if let Some(peer) = upstream.peer_for(&self.downstream).await {
                peers.push((upstream, peer));
            }
        }
        peers
    }
}

impl ServerHandler for McpBridge {
    fn get_info(&self) -> ServerConfig {
        let upstreams: Vec<ServerCapabilities> = self
            .service
            .mcp_upstreams()
            .iter()
            .filter_map(Upstream::capabilities)
            .collect();
        let mut capabilities = merged_capabilities(&upstreams);
        // A gRPC provider's CloudEvents reach the sessions as log messages.
        if self.service.has_event_sources() {
            capabilities.logging.get_or_insert_with(Default::default);
        }
        InitializeResult::new(capabilities)
        .with_server_info(Implementation::new(
            self.service.name.clone(),
            self.service.version.clone(),
        ))
        .with_instructions(format!(
            "Tools of the '{}' service of mcp-http-gateway; the same tools answer POST /call-tool.",
            self.service.name
        ))
    }

    /// Sends `notifications/tools/list_changed` to this session whenever the service's tool
    /// list changes (a reload, an upstream's own list_changed), until the session ends.
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        self.downstream.attach(&context.peer);
        self.downstream.set_initialized();
        if let Some(direct) = &self.direct
            && let Some(session) = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.headers.get("mcp-session-id"))
                .and_then(|v| v.to_str().ok())
        {
            direct.register(session, &self.downstream);
        }
        let mut changes = self.service.watch_tool_list();
        let peer = context.peer;
        self.service.drain().spawn(async move {
            let mut check = tokio::time::interval(Duration::from_secs(30));
            loop {
                tokio::select! {
                    changed = changes.changed() => {
                        if changed.is_err() || peer.notify_tool_list_changed().await.is_err() {
                            return;
                        }
                    }
                    _ = check.tick() => {
                        if peer.is_transport_closed() {
                            return;
                        }
                    }
                }
            }
        });
    }

    /// Recorded per session; every server behind is asked for every level and the gateway
    /// forwards what this session's level lets through.
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.seen(&context);
        self.downstream.set_level(request.level);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.seen(&context);
        for (_, peer) in self.peers_with(|c| c.completions.is_some()).await {
            let owns = match &request.r#ref {
                Reference::Prompt(prompt) => peer
                    .list_all_prompts()
                    .await
                    .is_ok_and(|ps| ps.iter().any(|p| p.name == prompt.name)),
                Reference::Resource(resource) => {
                    peer.list_all_resource_templates()
                        .await
                        .is_ok_and(|ts| ts.iter().any(|t| t.uri_template == resource.uri))
                        || peer
                            .list_all_resources()
                            .await
                            .is_ok_and(|rs| rs.iter().any(|r| r.uri == resource.uri))
                }
                _ => false,
            };
            if owns {
                return peer
                    .complete(request)
                    .await
                    .map_err(|e| upstream_error("completion/complete", e));
            }
        }
        let what = match &request.r#ref {
            Reference::Prompt(p) => format!("prompt '{}'", p.name),
            Reference::Resource(r) => format!("resource '{}'", r.uri),
            _ => "this reference".to_owned(),
        };
        Err(McpError::invalid_params(
            format!("No MCP server behind this service offers completions for {what}"),
            None,
        ))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.seen(&context);
        let mut last = None;
        let mut taken = false;
        let takes =
            |c: &ServerCapabilities| c.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
        for (_, peer) in self.peers_with(takes).await {
            match peer
                .subscribe(SubscribeRequestParams::new(request.uri.clone()))
                .await
            {
                Ok(()) => taken = true,
                Err(e) => last = Some(upstream_error("resources/subscribe", e)),
            }
        }
        if taken {
            self.downstream.subscribe(&request.uri);
            return Ok(());
        }
        Err(last.unwrap_or_else(|| {
            McpError::new(
                ErrorCode(jsonrpc::METHOD_NOT_FOUND),
                "No MCP server behind this service takes resource subscriptions",
                None,
            )
        }))
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.seen(&context);
        self.downstream.unsubscribe(&request.uri);
        let takes =
            |c: &ServerCapabilities| c.resources.as_ref().and_then(|r| r.subscribe) == Some(true);
        // A shared connection stays subscribed while another session still is.
        let others = self
            .service
            .downstreams()
            .live()
            .iter()
            .any(|d| d.id() != self.downstream.id() && d.is_subscribed(&request.uri));
        for (upstream, peer) in self.peers_with(takes).await {
            if others && !upstream.is_per_session(&self.downstream) {
                continue;
            }
            if let Err(e) = peer
                .unsubscribe(UnsubscribeRequestParams::new(request.uri.clone()))
                .await
            {
                tracing::warn!(service = %self.service.name, provider = upstream.name(), "resources/unsubscribe upstream failed: {e}");
            }
        }
        Ok(())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.seen(&context);
        let mut all = Vec::new();
        for (_, peer) in self.peers_with(|c| c.resources.is_some()).await {
            match peer.list_all_resources().await {
                Ok(resources) => all.extend(resources),
                Err(e) => {
                    tracing::warn!(service = %self.service.name, "resources/list upstream failed: {e}")
                }
            }
        }
        Ok(ListResourcesResult::with_all_items(all))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.seen(&context);
        let mut all = Vec::new();
        for (_, peer) in self.peers_with(|c| c.resources.is_some()).await {
            match peer.list_all_resource_templates().await {
                Ok(templates) => all.extend(templates),
                Err(e) => {
                    tracing::warn!(service = %self.service.name, "resources/templates/list upstream failed: {e}")
                }
            }
        }
        Ok(ListResourceTemplatesResult::with_all_items(all))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.seen(&context);
        let mut last = None;
        for (_, peer) in self.peers_with(|c| c.resources.is_some()).await {
            match peer.read_resource(request.clone()).await {
                Ok(result) => return Ok(ReadResourceResponse::Complete(result)),
                Err(e) => last = Some(e.to_string()),
            }
        }
        Err(McpError::invalid_params(
            format!(
                "Resource '{}' not found: {}",
                request.uri,
                last.unwrap_or_else(|| "no MCP server behind this service has resources".into())
            ),
            None,
        ))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.seen(&context);
        let mut all = Vec::new();
        for (_, peer) in self.peers_with(|c| c.prompts.is_some()).await {
            match peer.list_all_prompts().await {
                Ok(prompts) => all.extend(prompts),
                Err(e) => {
                    tracing::warn!(service = %self.service.name, "prompts/list upstream failed: {e}")
                }
            }
        }
        Ok(ListPromptsResult::with_all_items(all))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.seen(&context);
        for (_, peer) in self.peers_with(|c| c.prompts.is_some()).await {
            let offers = peer
                .list_all_prompts()
                .await
                .is_ok_and(|ps| ps.iter().any(|p| p.name == request.name));
            if offers {
                return peer
                    .get_prompt(request.clone())
                    .await
                    .map(GetPromptResponse::Complete)
                    .map_err(|e| {
                        McpError::invalid_params(format!("Prompt '{}': {e}", request.name), None)
                    });
            }
        }
        Err(McpError::invalid_params(
            format!("Unknown prompt: {}", request.name),
            None,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.seen(&context);
        // Only the tools the client's API key may use: the others do not exist for it.
        let tools = self
            .service
            .mcp_tools(&self.client(&context))
            .as_ref()
            .clone();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context).await
    }
}
