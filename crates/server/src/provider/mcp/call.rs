//! Running one tool on the live connection: a plain `tools/call`, or one whose progress is
//! routed back to the caller; a call that is dropped (timeout, caller gone) is cancelled
//! upstream.

use rmcp::model::{CallToolRequestParams, CallToolResponse, ClientRequest};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::client::ProgressRoutes;
use super::{CallContext, Inner, JsonObject, ToolError, result};
use crate::provider::ProgressSink;
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

impl Inner {
    /// `tools/call` with the progress the server reports routed to `sink`: the request is sent
    /// by hand to learn the progress token rmcp gives it.
    async fn call_with_progress(
        &self,
        peer: &Peer<RoleClient>,
        params: CallToolRequestParams,
        sink: ProgressSink,
    ) -> Result<CallToolResponse, ServiceError> {
        let request = ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        let key = serde_json::to_string(&handle.progress_token).unwrap_or_default();
        self.progress.write_unpoisoned().insert(key.clone(), sink);
        let _route = ProgressRoute {
            routes: self.progress.clone(),
            key,
        };
        let mut cancel = CancelOnDrop {
            peer: peer.clone(),
            tasks: self.shutdown.clone(),
            id: Some(handle.id.clone()),
        };
        let answer = handle.await_response().await;
        cancel.id = None;
        match answer? {
            rmcp::model::ServerResult::CallToolResult(result) => {
                Ok(CallToolResponse::Complete(result))
            }
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }

    pub(super) async fn call(
        &self,
        tool: &str,
        args: JsonObject,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        let peer = self.current_peer();
        let Some(peer) = peer else {
            let why = self.current_status().error.unwrap_or_default();
            return Err(ToolError::Unavailable(format!(
                "Dependency unavailable: MCP server '{}' is not connected: {why}",
                self.name
            )));
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        // Dropping the request (timeout, caller gone) sends notifications/cancelled upstream.
        let outcome = match &cx.progress {
            None => tokio::time::timeout(cx.timeout, peer.call_tool_once(params)).await,
            Some(sink) => {
                tokio::time::timeout(
                    cx.timeout,
                    self.call_with_progress(&peer, params, sink.clone()),
                )
                .await
            }
        };
        match outcome {
            Err(_) => {
                tracing::info!(
                    service = %self.service, provider = %self.name, tool, request_id = %cx.request_id,
                    "call timed out; sent notifications/cancelled upstream"
                );
                Err(ToolError::Timeout {
                    tool: tool.to_owned(),
                    ms: cx.timeout.as_millis() as u64,
                })
            }
            Ok(Ok(CallToolResponse::Complete(result))) => result::call_data(tool, &result),
            Ok(Ok(_)) => Err(ToolError::Execution(format!(
                "Tool '{tool}' asked for interactive input or a task, which the HTTP contract cannot carry"
            ))),
            Ok(Err(ServiceError::McpError(e))) => {
                let message = format!("Tool '{tool}' failed: {}", e.message);
                // -32602 is JSON-RPC's invalid params; MCP servers also use it for unknown tools.
                if e.code.0 == -32602 && e.message.to_lowercase().contains("unknown tool") {
                    Err(ToolError::NotFound(tool.to_owned()))
                } else if e.code.0 == -32602 {
                    Err(ToolError::InvalidArguments(message))
                } else {
                    Err(ToolError::Execution(message))
                }
            }
            Ok(Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
                self.reconnect.notify_one();
                Err(ToolError::Unavailable(format!(
                    "Dependency unavailable: MCP server '{}' connection lost during the call: {e}",
                    self.name
                )))
            }
            Ok(Err(e)) => Err(ToolError::Execution(format!("Tool '{tool}' failed: {e}"))),
        }
    }
}

/// Sends `notifications/cancelled` for a request that is dropped before its answer.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    tasks: Shutdown,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            self.tasks.spawn(async move {
                let param = rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("the gateway's caller gave up".into()),
                );
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

/// Takes a call's place in [`ProgressRoutes`] for as long as it runs.
struct ProgressRoute {
    routes: ProgressRoutes,
    key: String,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        self.routes.write_unpoisoned().remove(&self.key);
    }
}
