//! The `mcp` provider: tools of an MCP server reached over stdio (a supervised child process)
//! or Streamable HTTP, through rmcp's client.
//!
//! A supervisor task owns the connection: it connects, fetches every page of the tool list,
//! refetches it on `notifications/tools/list_changed`, and when the connection dies marks the
//! dependency unavailable and reconnects with capped exponential backoff. Calls never wait for
//! a reconnect: while the server is down they fail at once with EXECUTION_ERROR.

pub mod result;
pub mod sse;
pub mod stdio;
pub mod streamable;

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use contract::{DependencyState, DependencyStatus, ToolSchema};
use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ClientRequest,
    Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService, ServiceError};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use self::stdio::StdioSpec;
use self::streamable::HttpSpec;
use super::{
    CallContext, JsonObject, Progress, ProgressSink, Provider, ProviderError, ProviderHooks,
    ToolError,
};
use crate::config::{ProviderConfig, ServiceConfig};

/// How long one connection attempt (spawn/connect, initialize, list tools) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// First and longest wait between reconnection attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the backoff: the next failure is a new incident.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// How the server is reached.
#[derive(Debug, Clone, PartialEq)]
enum Endpoint {
    Stdio(StdioSpec),
    Http(HttpSpec),
    /// The legacy HTTP+SSE transport: a `url` ending in `/sse`.
    Sse(HttpSpec),
}

impl Endpoint {
    fn describe(&self) -> String {
        match self {
            Endpoint::Stdio(s) => format!("stdio: {}", s.program),
            Endpoint::Http(h) => format!("streamable-http: {}", h.redacted_url()),
            Endpoint::Sse(h) => format!("sse: {}", h.redacted_url()),
        }
    }
}

pub struct McpProvider {
    inner: Arc<Inner>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
}

struct Inner {
    name: String,
    service: String,
    endpoint: Endpoint,
    hooks: ProviderHooks,
    /// How often a connected server is pinged (`monitoring.health_check_interval`).
    check_every: Duration,
    /// What to start when the server is unavailable (`setup_hint`).
    setup_hint: Option<String>,
    peer: RwLock<Option<Peer<RoleClient>>>,
    tools: RwLock<Vec<ToolSchema>>,
    status: RwLock<DependencyStatus>,
    /// The server said its tool list changed.
    refresh: Arc<Notify>,
    /// A call saw the connection fail (Streamable HTTP has no other way to tell).
    reconnect: Notify,
    /// Running calls whose caller wants progress.
    progress: ProgressRoutes,
    stop: watch::Sender<bool>,
    first_attempt_done: watch::Sender<bool>,
}

impl McpProvider {
    pub fn new(
        service: &ServiceConfig,
        config: &ProviderConfig,
        hooks: ProviderHooks,
    ) -> Result<Self, ProviderError> {
        let name = config.name.value.as_str().to_owned();
        let error = |message: String| ProviderError::Config {
            provider: name.clone(),
            message,
        };
        let endpoint = match (&config.command, &config.url) {
            (Some(command), _) => Endpoint::Stdio(
                StdioSpec::new(
                    &service.base_dir,
                    command,
                    &config.args,
                    &config.env,
                    config.cwd.as_deref(),
                )
                .map_err(error)?,
            ),
            (None, Some(url)) => {
                let spec = HttpSpec::new(url, &config.headers).map_err(error)?;
                if sse::is_sse_url(&spec.url) {
                    Endpoint::Sse(spec)
                } else {
                    Endpoint::Http(spec)
                }
            }
            (None, None) => return Err(error("needs `command` or `url`".into())),
        };
        let inner = Inner {
            name: name.clone(),
            service: service.service.name.to_string(),
            endpoint,
            hooks,
            check_every: Duration::from_secs(service.monitoring.health_check_interval.0),
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
            stop: watch::channel(false).0,
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
                let mut supervisor = self.supervisor.lock().unwrap_or_else(|p| p.into_inner());
                if supervisor.is_none() {
                    *supervisor = Some(tokio::spawn(self.inner.clone().supervise()));
                }
            }
            let _ = done.wait_for(|d| *d).await;
        }
        .boxed()
    }

    fn tools(&self) -> Vec<ToolSchema> {
        self.inner
            .tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
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
                status.error = Some(why);
                return vec![(self.inner.name.clone(), status)];
            }
            let status = self.inner.current_status();
            vec![(self.inner.name.clone(), status)]
        }
        .boxed()
    }

    fn mcp_peer(&self) -> Option<Peer<RoleClient>> {
        self.inner.current_peer()
    }

    fn missing_tools_reason(&self) -> Option<String> {
        let connected = self.inner.current_peer().is_some();
        let never_listed = self
            .inner
            .tools
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty();
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
            self.inner.stop.send_replace(true);
            let handle = self.supervisor.lock().unwrap_or_else(|p| p.into_inner()).take();
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

/// Resolves once the provider is told to stop.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Why a connection ended.
enum Ended {
    Stopped,
    Lost(String),
}

impl Inner {
    /// The live connection, if any.
    fn current_peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The dependency status as the supervisor last recorded it.
    fn current_status(&self) -> DependencyStatus {
        self.status
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn supervise(self: Arc<Self>) {
        let mut stop = self.stop.subscribe();
        let mut backoff = BACKOFF_MIN;
        loop {
            if *stop.borrow() {
                break;
            }
            let attempt = Instant::now();
            // Stopping must not wait for a server that never finishes its handshake.
            let connected = tokio::select! {
                connected = self.connect() => connected,
                _ = stopped(&mut stop) => break,
            };
            let ended = match connected {
                Ok((running, tools)) => {
                    self.set_connected(running.peer().clone(), tools, attempt.elapsed());
                    self.first_attempt_done.send_replace(true);
                    let ended = self.serve_until_ended(running, &mut stop).await;
                    self.set_unavailable(match &ended {
                        Ended::Stopped => "stopped".to_owned(),
                        Ended::Lost(why) => why.clone(),
                    });
                    if attempt.elapsed() > STABLE_AFTER {
                        backoff = BACKOFF_MIN;
                    }
                    ended
                }
                Err(why) => Ended::Lost(why),
            };
            let Ended::Lost(why) = ended else { break };
            tracing::warn!(
                service = %self.service, provider = %self.name, retry_in_ms = backoff.as_millis() as u64,
                "MCP server unavailable: {why}"
            );
            self.set_unavailable(format!("{why}; retrying in {} ms", backoff.as_millis()));
            // Only now: whoever waits for the first attempt must find its outcome recorded.
            self.first_attempt_done.send_replace(true);
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stopped(&mut stop) => break,
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        self.first_attempt_done.send_replace(true);
    }

    /// Connects, initializes and fetches every page of the tool list.
    async fn connect(
        &self,
    ) -> Result<(RunningService<RoleClient, GatewayClient>, Vec<ToolSchema>), String> {
        let handler = GatewayClient {
            refresh: self.refresh.clone(),
            progress: self.progress.clone(),
        };
        let serving = async {
            match &self.endpoint {
                Endpoint::Stdio(spec) => {
                    let (transport, stderr, pid) = spec
                        .spawn()
                        .map_err(|e| format!("cannot start '{}': {e}", spec.program))?;
                    if let Some(stderr) = stderr {
                        stdio::forward_stderr(stderr, self.service.clone(), self.name.clone(), pid);
                    }
                    tracing::info!(service = %self.service, provider = %self.name, pid, "started MCP server {}", spec.program);
                    handler
                        .serve(transport)
                        .await
                        .map_err(|e| format!("initialize failed: {e}"))
                }
                Endpoint::Http(spec) => handler
                    .serve(spec.transport())
                    .await
                    .map_err(|e| format!("cannot connect to {}: {e}", spec.redacted_url())),
                Endpoint::Sse(spec) => {
                    let transport = sse::connect(spec).await?;
                    handler
                        .serve(transport)
                        .await
                        .map_err(|e| format!("initialize failed: {e}"))
                }
            }
        };
        let running = tokio::time::timeout(CONNECT_TIMEOUT, serving)
            .await
            .map_err(|_| {
                format!(
                    "no answer to initialize within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )
            })??;
        let tools = tokio::time::timeout(CONNECT_TIMEOUT, running.peer().list_all_tools())
            .await
            .map_err(|_| "tools/list did not answer in time".to_owned())?
            .map_err(|e| format!("tools/list failed: {e}"))?;
        Ok((running, tools.iter().map(result::tool_schema).collect()))
    }

    /// Runs until the connection closes or we are told to stop, refetching tools on request.
    async fn serve_until_ended(
        &self,
        running: RunningService<RoleClient, GatewayClient>,
        stop: &mut watch::Receiver<bool>,
    ) -> Ended {
        let peer = running.peer().clone();
        let cancel = running.cancellation_token();
        let mut waiting = std::pin::pin!(running.waiting());
        let mut checks = tokio::time::interval_at(
            tokio::time::Instant::now() + self.check_every,
            self.check_every,
        );
        loop {
            tokio::select! {
                _ = checks.tick() => {
                    if let Err(why) = self.ping(&peer).await {
                        self.clear_peer();
                        cancel.cancel();
                        let _ = waiting.await;
                        return Ended::Lost(why);
                    }
                }
                reason = &mut waiting => {
                    return Ended::Lost(format!("connection closed ({})", match reason {
                        Ok(r) => format!("{r:?}"),
                        Err(e) => e.to_string(),
                    }));
                }
                _ = stopped(stop) => {
                    self.clear_peer();
                    cancel.cancel();
                    let _ = waiting.await;
                    return Ended::Stopped;
                }
                _ = self.reconnect.notified() => {
                    self.clear_peer();
                    cancel.cancel();
                    let _ = waiting.await;
                    return Ended::Lost("connection failed during a call".into());
                }
                _ = self.refresh.notified() => {
                    match tokio::time::timeout(CONNECT_TIMEOUT, peer.list_all_tools()).await {
                        Ok(Ok(tools)) => {
                            let tools: Vec<ToolSchema> = tools.iter().map(result::tool_schema).collect();
                            tracing::info!(service = %self.service, provider = %self.name, tools = tools.len(), "tool list changed upstream");
                            *self.tools.write().unwrap_or_else(|p| p.into_inner()) = tools;
                            self.hooks.tools_changed.notify_one();
                        }
                        Ok(Err(e)) => tracing::warn!(service = %self.service, provider = %self.name, "refetching tools failed: {e}"),
                        Err(_) => tracing::warn!(service = %self.service, provider = %self.name, "refetching tools timed out"),
                    }
                }
            }
        }
    }

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
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), sink);
        let _route = ProgressRoute {
            routes: self.progress.clone(),
            key,
        };
        let mut cancel = CancelOnDrop {
            peer: peer.clone(),
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

    /// The periodic health check: an MCP `ping`, answered within 5 s.
    async fn ping(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let started = Instant::now();
        let ping = peer.send_request(ClientRequest::PingRequest(Default::default()));
        match tokio::time::timeout(Duration::from_secs(5), ping).await {
            Ok(Ok(_)) => {
                let mut status = self.status.write().unwrap_or_else(|p| p.into_inner());
                status.response_time_ms = Some(started.elapsed().as_millis() as u64);
                status.last_ok = Some(crate::clock::timestamp());
                Ok(())
            }
            Ok(Err(e)) => Err(format!("ping failed: {e}")),
            Err(_) => Err("ping not answered within 5 s".to_owned()),
        }
    }

    fn set_connected(&self, peer: Peer<RoleClient>, tools: Vec<ToolSchema>, took: Duration) {
        tracing::info!(
            service = %self.service, provider = %self.name, tools = tools.len(),
            "connected to MCP server ({})", self.endpoint.describe()
        );
        *self.tools.write().unwrap_or_else(|p| p.into_inner()) = tools;
        *self.peer.write().unwrap_or_else(|p| p.into_inner()) = Some(peer);
        *self.status.write().unwrap_or_else(|p| p.into_inner()) = DependencyStatus {
            status: DependencyState::Connected,
            response_time_ms: Some(took.as_millis() as u64),
            error: None,
            last_ok: Some(crate::clock::timestamp()),
        };
        self.hooks.tools_changed.notify_one();
    }

    fn set_unavailable(&self, why: String) {
        self.clear_peer();
        let mut status = self.status.write().unwrap_or_else(|p| p.into_inner());
        let message = format!("{why} ({})", self.endpoint.describe());
        *status = DependencyStatus {
            status: DependencyState::Unavailable,
            response_time_ms: None,
            error: Some(crate::provider::with_hint(
                &message,
                self.setup_hint.as_deref(),
            )),
            last_ok: status.last_ok.take(),
        };
    }

    fn clear_peer(&self) {
        self.peer.write().unwrap_or_else(|p| p.into_inner()).take();
    }

    async fn call(
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

/// Where the progress of each running call goes, by the progress token rmcp gave its request.
type ProgressRoutes = Arc<Mutex<std::collections::HashMap<String, ProgressSink>>>;

/// Sends `notifications/cancelled` for a request that is dropped before its answer.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            tokio::spawn(async move {
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
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.key);
    }
}

/// Our side of the MCP connection: identifies the gateway, hears list changes, and routes
/// progress notifications to the calls they belong to.
#[derive(Clone)]
struct GatewayClient {
    refresh: Arc<Notify>,
    progress: ProgressRoutes,
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
        let sink = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if let Some(sink) = sink {
            let _ = sink.send(Progress {
                progress: params.progress,
                total: params.total,
                message: params.message,
            });
        }
    }
}
