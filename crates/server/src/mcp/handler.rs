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
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, ErrorCode, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, PromptsCapability, ReadResourceRequestParams,
    ReadResourceResponse, Reference, ResourcesCapability, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, ServiceError};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, Peer, RoleClient, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::errors::{error_for, jsonrpc};
use crate::provider::mcp::Upstream;
use crate::provider::mcp::downstream::{CALLER, Caller, Downstream};
use crate::service::Service;

/// How long an answer waits for the call's last progress reports to be sent.
const PROGRESS_DRAIN: Duration = Duration::from_secs(2);

/// One MCP session's view of the service (one request's, for a stateless 2026-07-28 client).
#[derive(Clone)]
pub struct McpBridge {
    service: Arc<Service>,
    /// This session as the MCP providers see it: its peer, log level, subscriptions.
    downstream: Arc<Downstream>,
}

/// The `/mcp` endpoint of a service; `stop` ends every session (on shutdown).
pub fn endpoint(
    service: Arc<Service>,
    stop: CancellationToken,
) -> (
    StreamableHttpService<McpBridge, LocalSessionManager>,
    Arc<LocalSessionManager>,
) {
    let settings = service.settings();
    let mut sessions = LocalSessionManager::default();
    // Idle sessions are expired by our session book (mcp_gate::sweep_sessions), not by rmcp.
    sessions.session_config.keep_alive = None;
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.config.mcp.allowed_hosts.clone())
        .with_allowed_origins(settings.config.mcp.allowed_origins.clone())
        .enforce_origin_validation()
        .with_cancellation_token(stop);
    let sessions = Arc::new(sessions);
    let endpoint = StreamableHttpService::new(
        move || Ok(McpBridge::new(service.clone())),
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
        McpBridge {
            service,
            downstream,
        }
    }

    /// Notes the session's peer (rmcp gives it with each request).
    fn seen(&self, context: &RequestContext<RoleServer>) {
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

/// What the servers behind the service offer, as one server: resources, prompts, logging and
/// completions only when some server has them, subscriptions when some server takes them.
fn merged_capabilities(upstreams: &[ServerCapabilities]) -> ServerCapabilities {
    let mut capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .build();
    for theirs in upstreams {
        if let Some(resources) = &theirs.resources {
            let ours = capabilities
                .resources
                .get_or_insert_with(ResourcesCapability::default);
            if resources.subscribe == Some(true) {
                ours.subscribe = Some(true);
            }
            if resources.list_changed == Some(true) {
                ours.list_changed = Some(true);
            }
        }
        if let Some(prompts) = &theirs.prompts {
            let ours = capabilities
                .prompts
                .get_or_insert_with(PromptsCapability::default);
            if prompts.list_changed == Some(true) {
                ours.list_changed = Some(true);
            }
        }
        if theirs.logging.is_some() {
            capabilities.logging.get_or_insert_with(Default::default);
        }
        if theirs.completions.is_some() {
            capabilities
                .completions
                .get_or_insert_with(Default::default);
        }
    }
    capabilities
}

impl ServerHandler for McpBridge {
    fn get_info(&self) -> ServerConfig {
        let upstreams: Vec<ServerCapabilities> = self
            .service
            .mcp_upstreams()
            .iter()
            .filter_map(Upstream::capabilities)
            .collect();
        InitializeResult::new(merged_capabilities(&upstreams))
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
        let tools = self.service.mcp_tools().as_ref().clone();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.seen(&context);
        let request_id = uuid::Uuid::new_v4().to_string();
        let invocation_id = uuid::Uuid::new_v4().to_string();
        let session_id = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| {
                parts
                    .headers
                    .get("mcp-session-id")?
                    .to_str()
                    .ok()
                    .map(str::to_owned)
            });
        let arguments = request.arguments.unwrap_or_default();
        let (progress, forwarding) = match context.meta.get_progress_token() {
            Some(token) => {
                let (sink, forwarding) =
                    forward_progress(self.service.drain(), context.peer.clone(), token);
                (Some(sink), Some(forwarding))
            }
            None => (None, None),
        };
        let started_at = crate::clock::timestamp();
        let started = std::time::Instant::now();
        // What the upstream asks its client during the call goes to this request's client.
        let caller = Caller::new(self.downstream.clone(), Some(context.id.clone()));
        let call = CALLER.scope(
            caller.clone(),
            self.service
                .call_tool(&request.name, arguments, &request_id, progress),
        );
        // notifications/cancelled from the client drops the call, and with it the upstream
        // request (which rmcp cancels on drop).
        let outcome = tokio::select! {
            outcome = call => Some(outcome),
            _ = context.ct.cancelled() => None,
        };
        // Every progress report goes out before the answer: the forwarder ends once the call
        // has dropped its ends of the channel and the reports are sent.
        if let Some(forwarding) = forwarding {
            let _ = tokio::time::timeout(PROGRESS_DRAIN, forwarding).await;
        }
        let (status, code) = match &outcome {
            Some(Ok(_)) => ("ok", None),
            Some(Err(f)) => ("error", Some(f.code.as_str())),
            None => ("cancelled", None),
        };
        tracing::info!(
            target: "mcp_http_gateway::access",
            invocation_id = %invocation_id,
            session_id = session_id.as_deref(),
            request_id = %request_id,
            jsonrpc_id = %context.id,
            transport = "mcp",
            tool = %request.name,
            status,
            code,
            started_at = %started_at,
            finished_at = %crate::clock::timestamp(),
            execution_time_ms = started.elapsed().as_millis() as u64,
            "tools/call"
        );
        match outcome {
            // The client gave up; MCP clients ignore any answer to a cancelled request.
            None => Err(McpError::new(
                ErrorCode(jsonrpc::REQUEST_CANCELLED),
                "Request cancelled by the client",
                None,
            )),
            // An MCP server's own result, as it sent it; the contract's data for other tools.
            Some(Ok(data)) => Ok(CallToolResponse::Complete(
                caller
                    .take_result()
                    .map(complete)
                    .unwrap_or_else(|| as_result(data)),
            )),
            // The server's own isError result too, given the table's data when it carries
            // none; a failure of ours is answered per the table.
            Some(Err(failure)) => {
                let typed = self.service.has_output_schema(&request.name);
                let theirs = caller.take_result().filter(|r| r.is_error == Some(true));
                match (theirs, error_for(failure, &request_id, typed)) {
                    (Some(mut theirs), Ok(CallToolResponse::Complete(ours))) => {
                        if theirs.structured_content.is_none() {
                            theirs.structured_content = ours.structured_content;
                        }
                        if let Some(ours) = ours.meta {
                            let meta = theirs.meta.get_or_insert_with(Default::default);
                            for (key, value) in ours.0 {
                                meta.0.entry(key).or_insert(value);
                            }
                        }
                        Ok(CallToolResponse::Complete(complete(theirs)))
                    }
                    (_, answer) => answer,
                }
            }
        }
    }
}

/// An upstream's result marked complete, as 2026-07-28 clients need it (a handshake-era
/// server does not say).
fn complete(mut result: CallToolResult) -> CallToolResult {
    result
        .result_type
        .get_or_insert(rmcp::model::ResultType::COMPLETE);
    result
}

/// A result the way an MCP client expects it: the upstream's own content blocks when `data`
/// is the `{content: [...]}` of an MCP tool, else the data as JSON text and, for an object, as
/// `structuredContent`.
fn as_result(data: Value) -> CallToolResult {
    if let Some(blocks) = data
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("content"))
        && let Ok(blocks) = serde_json::from_value::<Vec<ContentBlock>>(blocks.clone())
    {
        return CallToolResult::success(blocks);
    }
    let text = serde_json::to_string(&data).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if data.is_object() {
        result.structured_content = Some(data);
    }
    result
}

/// A sink whose progress reports reach the MCP client as `notifications/progress` with the
/// client's own token.
fn forward_progress(
    tasks: &crate::shutdown::Shutdown,
    peer: rmcp::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
) -> (crate::provider::ProgressSink, tokio::task::JoinHandle<()>) {
    let (sink, mut reports) = tokio::sync::mpsc::unbounded_channel::<crate::provider::Progress>();
    let forwarding = tasks.spawn(async move {
        while let Some(report) = reports.recv().await {
            let mut param =
                rmcp::model::ProgressNotificationParam::new(token.clone(), report.progress);
            param.total = report.total;
            param.message = report.message;
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    });
    (sink, forwarding)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capabilities(json: serde_json::Value) -> ServerCapabilities {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn only_what_some_server_behind_offers_is_advertised() {
        let none = merged_capabilities(&[capabilities(serde_json::json!({"tools": {}}))]);
        assert!(none.resources.is_none() && none.prompts.is_none());
        assert!(none.logging.is_none() && none.completions.is_none());
        let merged = merged_capabilities(&[
            capabilities(serde_json::json!({"resources": {"listChanged": true}})),
            capabilities(serde_json::json!({"resources": {"subscribe": true}, "logging": {}})),
            capabilities(serde_json::json!({"prompts": {}, "completions": {}})),
        ]);
        let resources = merged.resources.unwrap();
        assert_eq!(
            (resources.subscribe, resources.list_changed),
            (Some(true), Some(true))
        );
        assert!(merged.prompts.is_some());
        assert!(merged.logging.is_some() && merged.completions.is_some());
        assert_eq!(merged.tools.unwrap().list_changed, Some(true));
    }
}
