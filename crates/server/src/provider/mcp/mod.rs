//! The `mcp` provider: tools of an MCP server reached over stdio (a supervised child process),
//! Streamable HTTP or legacy SSE, through rmcp's client.
//!
//! The [`supervisor`] owns the connection and reconnects with backoff; [`call`] runs tools on
//! the live connection and never waits for a reconnect: while the server is down calls fail at
//! once with EXECUTION_ERROR. [`client`] is our side of the protocol (progress, list changes),
//! [`result`] maps MCP's shapes onto the contract's, and [`upstream`] reaches the server.

mod call;
mod client;
mod result;
mod supervisor;
mod upstream;

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use contract::{DependencyState, DependencyStatus, ToolSchema};
use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use self::client::ProgressRoutes;
use self::upstream::Endpoint;
use super::{CallContext, JsonObject, Provider, ProviderError, ProviderHooks, ToolError};
use crate::config::{McpProviderConfig, OutputValidation, ServiceConfig};
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

pub struct McpProvider {
    inner: Arc<Inner>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
}

pub(super) struct Inner {
    pub(super) name: String,
    pub(super) service: String,
    pub(super) endpoint: Endpoint,
    pub(super) tools_changed: Arc<Notify>,
    /// What to do with a result that violates its tool's output schema.
    pub(super) validate_output: OutputValidation,
    /// How often a connected server is pinged (`monitoring.health_check_interval`).
    pub(super) check_every: Duration,
    /// What to start when the server is unavailable (`setup_hint`).
    pub(super) setup_hint: Option<String>,
    pub(super) peer: RwLock<Option<Peer<RoleClient>>>,
    pub(super) tools: RwLock<Vec<ToolSchema>>,
    pub(super) status: RwLock<DependencyStatus>,
    /// The server said its tool list changed.
    pub(super) refresh: Arc<Notify>,
    /// A call saw the connection fail (Streamable HTTP has no other way to tell).
    pub(super) reconnect: Notify,
    /// Running calls whose caller wants progress.
    pub(super) progress: ProgressRoutes,
    /// Stops the supervisor and everything it spawned.
    pub(super) shutdown: Shutdown,
    pub(super) first_attempt_done: watch::Sender<bool>,
}

impl McpProvider {
    pub fn new(
        service: &ServiceConfig,
        config: &McpProviderConfig,
        hooks: ProviderHooks,
    ) -> Result<Self, ProviderError> {
        let name = config.name.as_str().to_owned();
        let error = |e: upstream::EndpointError| ProviderError::Config {
            provider: name.clone(),
            message: e.to_string(),
        };
        let endpoint = Endpoint::new(&service.base_dir, &config.transport).map_err(error)?;
        let inner = Inner {
            name: name.clone(),
            service: service.service.name.to_string(),
            endpoint,
            tools_changed: hooks.tools_changed,
            validate_output: config.validate_output,
            check_every: service.monitoring.health_check_interval,
            setup_hint: config.setup_hint.clone(),
            peer: RwLock::new(None),
            tools: RwLock::new(Vec::new()),
            status: RwLock::new(DependencyStatus {
                status: DependencyState::Unknown,
                response_time_ms: None,
                error: Some("not connected yet".into()),
                last_ok: None,
            }),
            refresh: Arc::new(Notify::new()),
            reconnect: Notify::new(),
            progress: ProgressRoutes::default(),
            shutdown: hooks.shutdown.child(),
            first_attempt_done: watch::channel(false).0,
        };
        Ok(McpProvider {
            inner: Arc::new(inner),
            supervisor: Mutex::new(None),
        })
    }
}

impl Provider for McpProvider {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn start(&self) -> BoxFuture<'_, ()> {
        async move {
            let mut done = self.inner.first_attempt_done.subscribe();
            {
                let mut supervisor = self.supervisor.write_unpoisoned();
                if supervisor.is_none() {
                    *supervisor = Some(self.inner.shutdown.spawn(self.inner.clone().supervise()));
                }
            }
            let _ = done.wait_for(|d| *d).await;
        }
        .boxed()
    }

    fn tools(&self) -> Vec<ToolSchema> {
        self.inner.tools.read_unpoisoned().clone()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        self.inner.call(tool, args, cx).boxed()
    }

    fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>> {
        async move {
            // A connected server is pinged now; a failed ping is reported, and the supervisor
            // finds out on its own at the next call or periodic check.
            let peer = self.inner.current_peer();
            if let Some(peer) = peer
                && let Err(why) = self.inner.ping(&peer).await
            {
                let mut status = self.inner.current_status();
                status.status = DependencyState::Unavailable;
                status.error = Some(why.to_string());
                return vec![(self.inner.name.clone(), status)];
            }
            let status = self.inner.current_status();
            vec![(self.inner.name.clone(), status)]
        }
        .boxed()
    }

    fn validate_output(&self) -> OutputValidation {
        self.inner.validate_output
    }

    fn mcp_peer(&self) -> Option<Peer<RoleClient>> {
        self.inner.current_peer()
    }

    fn missing_tools_reason(&self) -> Option<String> {
        let connected = self.inner.current_peer().is_some();
        let never_listed = self.inner.tools.read_unpoisoned().is_empty();
        (!connected && never_listed).then(|| {
            let why = self.inner.current_status().error.unwrap_or_default();
            format!(
                "MCP server '{}' is not connected, so its tools are not listed: {why}",
                self.inner.name
            )
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        async move {
            self.inner.shutdown.cancel();
            let handle = self.supervisor.write_unpoisoned().take();
            if let Some(handle) = handle {
                // The child gets the MCP stdio shutdown sequence (close stdin, SIGTERM, SIGKILL);
                // past this bound the process group is killed when the transport drops.
                if tokio::time::timeout(Duration::from_secs(8), handle).await.is_err() {
                    tracing::warn!(service = %self.inner.service, provider = %self.inner.name, "MCP server did not stop in time");
                }
            }
        }
        .boxed()
    }
}
