//! Our side of the MCP connection: identifies the gateway, hears list changes, and routes
//! progress notifications to the calls they belong to.

use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::Notify;

use crate::provider::{Progress, ProgressSink};
use crate::sync::Unpoisoned;

/// Where the progress of each running call goes, by the progress token rmcp gave its request.
pub(super) type ProgressRoutes = Arc<Mutex<std::collections::HashMap<String, ProgressSink>>>;

/// Our side of the MCP connection: identifies the gateway, hears list changes, and routes
/// progress notifications to the calls they belong to.
#[derive(Clone)]
pub struct GatewayClient {
    pub(super) refresh: Arc<Notify>,
    pub(super) progress: ProgressRoutes,
}

impl ClientHandler for GatewayClient {
    fn get_info(&self) -> ClientConfig {
        // The initialize handshake is what every MCP server released so far speaks.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mcp-http-gateway", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.refresh.notify_one();
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let key = serde_json::to_string(&params.progress_token).unwrap_or_default();
        let sink = self.progress.write_unpoisoned().get(&key).cloned();
        if let Some(sink) = sink {
            let _ = sink.send(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }
}
