//! The service's tools over MCP at `/mcp` (Streamable HTTP, rmcp's server): `tools/list`
//! answers what GET /tools lists, `tools/call` runs through the same [`Service::call_tool`] —
//! the same validation, timeouts and limits as POST /call-tool.
//!
//! Error mapping follows the MCP rule: a tool that ran and failed is a result with
//! `isError: true`; an unknown tool and invalid arguments are JSON-RPC errors `-32602`
//! (invalid params) with `data: {code, request_id, …}`.

use std::sync::Arc;
use std::time::Duration;

use contract::ErrorCode;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

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
) -> StreamableHttpService<McpBridge, LocalSessionManager> {
    let settings = service.settings();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive =
        Some(Duration::from_secs(settings.config.mcp.session_ttl_secs.0));
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.config.mcp.allowed_hosts.clone())
        .with_cancellation_token(stop);
    StreamableHttpService::new(
        move || {
            Ok(McpBridge {
                service: service.clone(),
            })
        },
        Arc::new(sessions),
        config,
    )
}

impl ServerHandler for McpBridge {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            self.service.name.clone(),
            self.service.version.clone(),
        ))
        .with_instructions(format!(
            "Tools of the '{}' service of mcp-http-gateway; the same tools answer POST /call-tool.",
            self.service.name
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self
            .service
            .tools_response()
            .tools
            .into_iter()
            .filter_map(|t| {
                let mut tool = json!({"name": t.name, "description": t.description, "inputSchema": t.input_schema});
                if let Some(annotations) = t.annotations {
                    tool["annotations"] = annotations;
                }
                serde_json::from_value::<Tool>(tool).ok()
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let request_id = uuid::Uuid::new_v4().to_string();
        let arguments = request.arguments.unwrap_or_default();
        let started = std::time::Instant::now();
        let outcome = self
            .service
            .call_tool(&request.name, arguments, &request_id)
            .await;
        let (status, code) = match &outcome {
            Ok(_) => ("ok", None),
            Err(f) => ("error", Some(f.code.as_str())),
        };
        tracing::info!(
            target: "mcp_http_gateway::access",
            request_id = %request_id, transport = "mcp", tool = %request.name, status, code,
            execution_time_ms = started.elapsed().as_millis() as u64, "tools/call"
        );
        match outcome {
            Ok(data) => Ok(CallToolResponse::Complete(as_result(data))),
            Err(failure) => {
                let data = json!({
                    "code": failure.code,
                    "request_id": request_id,
                    "validation_errors": failure.validation_errors,
                });
                match failure.code {
                    ErrorCode::ToolNotFound | ErrorCode::InvalidArguments => {
                        Err(McpError::invalid_params(failure.message, Some(data)))
                    }
                    ErrorCode::ExecutionError | ErrorCode::Timeout => {
                        let mut result =
                            CallToolResult::error(vec![ContentBlock::text(failure.message)]);
                        result.structured_content = Some(Value::Object(
                            [
                                ("code".to_owned(), data["code"].clone()),
                                ("request_id".to_owned(), data["request_id"].clone()),
                            ]
                            .into_iter()
                            .collect(),
                        ));
                        Ok(CallToolResponse::Complete(result))
                    }
                    _ => Err(McpError::internal_error(failure.message, Some(data))),
                }
            }
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
