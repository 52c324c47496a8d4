//! The service's tools over MCP at `/mcp` (Streamable HTTP, rmcp's server): `tools/list`
//! answers what GET /tools lists, `tools/call` runs through the same [`Service::call_tool`] —
//! the same validation, timeouts and limits as POST /call-tool; resources, prompts and
//! completions go through the service's catalog like REST's ([`super::catalog`]); a
//! 2026-07-28 client's `subscriptions/listen` stream is [`super::listen`]'s.
//!
//! Failures are answered as [`super::errors`] maps them. What the upstreams behind send a
//! client — log messages (filtered by the session's `logging/setLevel`), resource updates of
//! its subscriptions, sampling, elicitation and roots requests of its calls — reaches this
//! session through its [`McpClientSession`] record.
// rmcp marks logging and resources/subscribe deprecated (SEP-2577); the protocol versions the
// gateway serves still have them, and clients use them.
#![allow(deprecated)]

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
    Implementation, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::capabilities::merged_capabilities;
use super::client_session::McpClientSession;
use super::direct::DirectSessions;
use super::input_required::ParkedCalls;
use super::listen::deliverable;
use crate::provider::{Caller, ClientSession};
use crate::service::Service;
use crate::service::client::Client;

/// One MCP session's view of the service (one request's, for a stateless 2026-07-28 client).
#[derive(Clone)]
pub struct McpBridge {
    pub(super) service: Arc<Service>,
    /// This session as the providers see it: its peer, log level, subscriptions.
    pub(super) session: Arc<McpClientSession>,
    /// The client that opened the session, for a transport whose messages carry no HTTP
    /// request of their own (legacy SSE); on /mcp each request names its client.
    opener: Option<Client>,
    /// Where a `/mcp` session is registered once its handshake is done, for the calls the
    /// gate answers as JSON ([`super::direct`]); none on the legacy transport.
    direct: Option<DirectSessions>,
    /// The calls of 2026-07-28 clients waiting for their client's input; none on the legacy
    /// transport, whose clients are asked mid-call.
    pub(super) parked: Option<ParkedCalls>,
}

/// The `/mcp` endpoint of a service; `stop` ends every session (on shutdown). Each session
/// is registered in `direct` once its handshake is done.
pub fn endpoint(
    service: Arc<Service>,
    direct: DirectSessions,
    parked: ParkedCalls,
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
                parked: Some(parked.clone()),
                ..McpBridge::new(service.clone())
            })
        },
        sessions.clone(),
        config,
    );
    (endpoint, sessions)
}

impl McpBridge {
    pub fn new(service: Arc<Service>) -> Self {
        let session = McpClientSession::new(service.client_sessions(), service.drain().clone());
        McpBridge::for_session(service, session)
    }

    /// The view of the session whose providers' side is `session`.
    pub fn for_session(service: Arc<Service>, session: Arc<McpClientSession>) -> Self {
        McpBridge {
            service,
            session,
            opener: None,
            direct: None,
            parked: None,
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
        self.session.attach(&context.peer);
    }

    /// The caller a request of this session is, for the service: this session and the
    /// request's id (what an upstream asks while serving it goes on its stream).
    pub(super) fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        let session: Arc<dyn ClientSession> = self.session.clone();
        Caller::new(session, Some(context.id.clone()))
    }
}

impl ServerHandler for McpBridge {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(merged_capabilities(&self.service.offers()))
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
        self.session.attach(&context.peer);
        self.session.set_initialized();
        if let Some(direct) = &self.direct
            && let Some(session) = context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.headers.get("mcp-session-id"))
                .and_then(|v| v.to_str().ok())
        {
            direct.register(session, &self.session);
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
        self.session.set_level(request.level);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.seen(&context);
        self.completion(request, &context).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.seen(&context);
        self.subscription(&request.uri, &context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.seen(&context);
        self.unsubscription(&request.uri, &context).await;
        Ok(())
    }

    /// `subscriptions/listen` (2026-07-28): what of the filter the service can deliver.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(deliverable(requested, &self.service.offers()))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        self.listen_stream(context).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.seen(&context);
        Ok(self.resources(&context).await)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.seen(&context);
        Ok(self.resource_templates(&context).await)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.seen(&context);
        self.read(&request.uri, &context)
            .await
            .map(ReadResourceResponse::Complete)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.seen(&context);
        Ok(self.prompts(&context).await)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.seen(&context);
        self.render(request, &context)
            .await
            .map(GetPromptResponse::Complete)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.seen(&context);
        // Only the tools the client's API key may use: the others do not exist for it. With
        // `mcp.discovery`, the two tools that find and call them instead.
        let tools = if self.service.settings().config.mcp.discovery {
            crate::service::discovery::meta_tools()
        } else {
            self.service
                .mcp_tools(&self.client(&context))
                .as_ref()
                .clone()
        };
        let scope = if self.service.lists_are_private() {
            CacheScope::Private
        } else {
            CacheScope::Public
        };
        // Fresh for no time: the list changes on a reload or an upstream's list_changed.
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(0)
            .with_cache_scope(scope))
    }

    /// The tool `name` as `tools/list` lists it (whatever the caller's scope: rmcp reads it to
    /// check a 2026-07-28 request's `Mcp-Param-*` headers against the tool's `x-mcp-header`
    /// parameters; the call itself is judged by the service).
    fn get_tool(&self, name: &str) -> Option<Tool> {
        if self.service.settings().config.mcp.discovery
            && let Some(meta) = crate::service::discovery::meta_tools()
                .into_iter()
                .find(|t| t.name == name)
        {
            return Some(meta);
        }
        self.service
            .mcp_tools(&Client::unknown())
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.seen(&context);
        self.get_task_of(request, &context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.seen(&context);
        self.update_task_of(request, &context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.seen(&context);
        self.cancel_task_of(request, &context).await
    }
}
