//! The service's tools over MCP at `/mcp` (Streamable HTTP, rmcp's server): `tools/list`
//! answers what GET /tools lists, `tools/call` runs through the same [`Service::call_tool`] —
//! the same validation, timeouts and limits as POST /call-tool.
//!
//! Failures are answered as [`super::errors`] maps them.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::ErrorCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, Implementation, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::errors::error_for;
use crate::service::Service;

/// One MCP session's view of the service.
#[derive(Clone)]
pub struct McpBridge {
    service: Arc<Service>,
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
        move || {
            Ok(McpBridge {
                service: service.clone(),
            })
        },
        sessions.clone(),
        config,
    );
    (endpoint, sessions)
}

impl McpBridge {
    pub fn new(service: Arc<Service>) -> Self {
        McpBridge { service }
    }

    /// The connected MCP servers whose capabilities pass `has`.
    fn peers_with(
        &self,
        has: impl Fn(&ServerCapabilities) -> bool,
    ) -> Vec<rmcp::Peer<rmcp::RoleClient>> {
        self.service
            .mcp_peers()
            .into_iter()
            .filter(|p| p.peer_info().is_some_and(|info| has(&info.capabilities)))
            .collect()
    }
}

impl ServerHandler for McpBridge {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        // Resources and prompts only when some MCP server behind the service has them.
        for peer in self.service.mcp_peers() {
            if let Some(info) = peer.peer_info() {
                if let Some(resources) = &info.capabilities.resources {
                    capabilities
                        .resources
                        .get_or_insert_with(|| resources.clone());
                }
                if let Some(prompts) = &info.capabilities.prompts {
                    capabilities.prompts.get_or_insert_with(|| prompts.clone());
                }
            }
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut all = Vec::new();
        for peer in self.peers_with(|c| c.resources.is_some()) {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let mut all = Vec::new();
        for peer in self.peers_with(|c| c.resources.is_some()) {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let mut last = None;
        for peer in self.peers_with(|c| c.resources.is_some()) {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let mut all = Vec::new();
        for peer in self.peers_with(|c| c.prompts.is_some()) {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        for peer in self.peers_with(|c| c.prompts.is_some()) {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.service.mcp_tools().as_ref().clone();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
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
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| forward_progress(self.service.drain(), context.peer.clone(), token));
        let started_at = crate::clock::timestamp();
        let started = std::time::Instant::now();
        // notifications/cancelled from the client drops the call, and with it the upstream
        // request (which rmcp cancels on drop).
        let outcome = tokio::select! {
                        outcome = self.service.call_tool(&request.name, arguments, &request_id, progress) => Some(outcome),
            _ = context.ct.cancelled() => None,
        };
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
                ErrorCode(-32800),
                "Request cancelled by the client",
                None,
            )),
            Some(Ok(data)) => Ok(CallToolResponse::Complete(as_result(data))),
            Some(Err(failure)) => error_for(
                failure,
                &request_id,
                self.service.has_output_schema(&request.name),
            ),
        }
    }
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
) -> crate::provider::ProgressSink {
    let (sink, mut reports) = tokio::sync::mpsc::unbounded_channel::<crate::provider::Progress>();
    tasks.spawn(async move {
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
    sink
}
