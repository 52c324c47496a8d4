//! The `mcp` provider: tools of an MCP server reached over stdio (a supervised child process),
//! Streamable HTTP or legacy SSE, through rmcp's client.
//!
//! The [`supervisor`] owns the shared connection and reconnects with backoff; [`sessions`]
//! opens one connection per client session for providers with `session_per_client`; [`call`]
//! runs tools on a live connection and never waits for a reconnect: while the server is down
//! calls fail at once with EXECUTION_ERROR; [`catalog`] lists, reads and renders its resources
//! and prompts, completes and subscribes for both surfaces, the same way. [`client`] is our
//! side of the protocol (progress, list changes, what the server sends its client, passed to
//! the service's client sessions), [`tool_schema`] lists an MCP tool the contract's way, and
//! [`upstream`] reaches the server.

mod call;
mod catalog;
mod client;
mod pool;
mod rounds;
mod sessions;
mod supervisor;
mod tool_schema;
mod upstream;

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use contract::{
    DependencyState, DependencyStatus, PromptInfo, PromptResult, ResourceContents, ResourceInfo,
    ResourceTemplateInfo, ToolSchema,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{CompleteRequestParams, CompleteResult};
use rmcp::{Peer, RoleClient};
use tokio::sync::{Notify, watch};

use self::client::{CallerRoutes, ProgressRoutes};
use self::pool::{InFlight, Instance, Pool};
use self::sessions::SessionLinks;
use self::upstream::Endpoint;
use super::clients::{Caller, ClientSessions};
use super::{
    CallContext, Catalog, Connection, JsonObject, Offers, Provider, ProviderError, ProviderHooks,
    ProviderReport, ToolError, ToolOutput,
};
use crate::config::{McpProviderConfig, McpTransport, ServiceConfig};
use crate::dependency::outlier::{Ended, OutlierRecord};
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

pub struct McpProvider {
    pool: Arc<Pool>,
}

/// One connection to the server (one child, for stdio), supervised on its own.
pub(super) struct Inner {
    pub(super) name: String,
    /// Which child of the provider's pool this is (`instances`; 1 of 1 without a pool).
    pub(super) instance: Instance,
    /// Calls running on it now: the pool sends the next call to the child with the fewest.
    pub(super) in_flight: AtomicUsize,
    /// Told when its last call in flight ends (a grown child leaving the pool waits for it).
    pub(super) no_call_in_flight: Notify,
    /// When its last call ended, in milliseconds of `pool::now_ms` (a grown child idle long
    /// enough is stopped).
    pub(super) last_call_ended_ms: AtomicU64,
    pub(super) service: String,
    pub(super) endpoint: Endpoint,
    pub(super) tools_changed: Arc<Notify>,
    /// Told at each change of the connection's state (the service checks it again at once).
    pub(super) health_changed: Arc<Notify>,
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
    /// Which shared connection is live: bumped, under the `peer` lock, at each connect.
    pub(super) generation: std::sync::atomic::AtomicU64,
    /// The newest connection a call saw fail. A failure of an older one (calls that were in
    /// flight when it died) is no reason to drop the connection made since: one restart per
    /// failure, however many calls saw it.
    pub(super) failed_generation: std::sync::atomic::AtomicU64,
    /// Running calls whose caller wants progress (on the shared connection).
    pub(super) progress: ProgressRoutes,
    /// Running calls that came from an MCP client (on the shared connection).
    callers: CallerRoutes,
    /// The service's client sessions.
    pub(super) sessions: ClientSessions,
    /// Tools the server runs only as tasks, learned from its refusals (`call`).
    pub(super) task_tools: RwLock<std::collections::HashSet<String>>,
    /// `session_per_client`, and the connections it opened.
    pub(super) session_per_client: bool,
    /// Which era the gateway speaks to the server (`protocol`).
    pub(super) protocol: crate::config::UpstreamProtocol,
    session_links: SessionLinks,
    /// Stops the supervisor and everything it spawned.
    pub(super) shutdown: Shutdown,
    pub(super) first_attempt_done: watch::Sender<bool>,
    /// Its calls' failures and latency, for outlier ejection in a pool.
    outlier: OutlierRecord,
}

impl McpProvider {
    pub fn new(
        service: &ServiceConfig,
        config: &McpProviderConfig,
        hooks: ProviderHooks,
    ) -> Result<Self, ProviderError> {
        let name = config.common.name.as_str().to_owned();
        let error = |e: upstream::EndpointError| ProviderError::Config {
            provider: name.clone(),
            message: e.to_string(),
        };
        let endpoint = Endpoint::new(&name, &service.base_dir, &config.transport).map_err(error)?;
        let (instances, growth) = match &config.transport {
            McpTransport::Stdio(stdio) => (stdio.instances.max(1), stdio.growth),
            _ => (1, None),
        };
        let shutdown = hooks.shutdown.child();
        let children = shutdown.clone();
        let service_name = service.service.name.to_string();
        let check_every = service.monitoring.health_check_interval;
        let setup_hint = config.common.setup_hint.clone();
        let session_per_client = config.session_per_client;
        let protocol = config.protocol;
        let make: pool::MakeChild = Box::new(move |instance| {
            Arc::new(Inner {
                name: name.clone(),
                instance,
                in_flight: AtomicUsize::new(0),
                no_call_in_flight: Notify::new(),
                last_call_ended_ms: AtomicU64::new(0),
                service: service_name.clone(),
                endpoint: endpoint.clone(),
                tools_changed: hooks.tools_changed.clone(),
                health_changed: hooks.health_changed.clone(),
                check_every,
                setup_hint: setup_hint.clone(),
                peer: RwLock::new(None),
                tools: RwLock::new(Vec::new()),
                status: RwLock::new(DependencyStatus {
                    status: DependencyState::Unknown,
                    response_time_ms: None,
                    error: Some("not connected yet".into()),
                    last_ok: None,
                    checked_at: None,
                }),
                refresh: Arc::new(Notify::new()),
                reconnect: Notify::new(),
                generation: std::sync::atomic::AtomicU64::new(0),
                failed_generation: std::sync::atomic::AtomicU64::new(0),
                progress: ProgressRoutes::default(),
                callers: CallerRoutes::default(),
                sessions: hooks.sessions.clone(),
                task_tools: RwLock::default(),
                session_per_client,
                protocol,
                session_links: SessionLinks::default(),
                shutdown: children.child(),
                first_attempt_done: watch::channel(false).0,
                outlier: OutlierRecord::default(),
            })
        });
        Ok(McpProvider {
            pool: Arc::new(Pool::new(
                instances,
                growth,
                config.common.resilience.outlier.clone(),
                make,
                shutdown,
            )),
        })
    }

    /// The child without a pool, the first one with.
    fn inner(&self) -> &Arc<Inner> {
        self.pool.first()
    }
}

impl Provider for McpProvider {
    fn name(&self) -> &str {
        &self.inner().name
    }

    fn start(&self) -> BoxFuture<'_, ()> {
        async move {
            self.pool.start();
            // Every child's first attempt: the tools are the first live child's, so a start
            // that returned after one child would list tools that a later one may disagree on.
            futures::future::join_all(self.pool.children().into_iter().map(|i| async move {
                let mut done = i.first_attempt_done.subscribe();
                let _ = done.wait_for(|d| *d).await;
            }))
            .await;
        }
        .boxed()
    }

    fn tools(&self) -> Vec<ToolSchema> {
        self.pool.tools()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        async move {
            let child = self.pool.for_caller(cx.caller.as_ref());
            let of_session = cx.caller.as_ref().is_some_and(Caller::is_session);
            if !of_session {
                self.pool.grow_if_queueing();
            }
            let _counted = InFlight::enter(&child);
            let started = std::time::Instant::now();
            let outcome = child.call(tool, args, cx).await;
            // A session's calls go to its pinned child whatever: only the others judge it.
            if !of_session {
                let took = started.elapsed();
                let ended = match &outcome {
                    Ok(_) => Ended::Success(took),
                    Err(ToolError::Timeout { .. } | ToolError::Unavailable(_)) => {
                        Ended::Failure(took)
                    }
                    Err(_) => Ended::Neutral,
                };
                self.pool.ended(&child, ended);
            }
            outcome
        }
        .boxed()
    }

    fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>> {
        async move {
            // Each connected child is pinged now; a failed ping is reported, and its
            // supervisor finds out on its own at the next call or periodic check. A pool is
            // connected while one child is: calls go to the live ones (each child's state is
            // in the provider's `instances` in /health).
            let checked =
                futures::future::join_all(self.pool.children().into_iter().map(|i| async move {
                    let mut status = i.current_status();
                    if let Some(peer) = i.current_peer()
                        && let Err(why) = i.ping(&peer).await
                    {
                        status.status = DependencyState::Unavailable;
                        status.error = Some(why.to_string());
                    }
                    status
                }))
                .await;
            let status = checked
                .iter()
                .find(|s| s.status == DependencyState::Connected)
                .or_else(|| checked.first())
                .cloned()
                .unwrap_or_else(|| self.inner().current_status());
            vec![(self.inner().name.clone(), status)]
        }
        .boxed()
    }

    fn report(&self) -> ProviderReport {
        let lister = self.pool.lister();
        let lister_connected = lister.current_peer().is_some();
        let never_listed = lister.tools.read_unpoisoned().is_empty();
        let missing_tools = (!lister_connected && never_listed).then(|| {
            let why = lister.current_status().error.unwrap_or_default();
            format!(
                "MCP server '{}' is not connected, so its tools are not listed: {why}",
                lister.name
            )
        });
        ProviderReport {
            connection: Some(Connection {
                connected: self
                    .pool
                    .children()
                    .iter()
                    .any(|i| i.current_peer().is_some()),
                restarts: self.pool.restarts(),
            }),
            missing_tools,
            instances: self.pool.reports(),
            ..ProviderReport::default()
        }
    }

    fn catalog(&self) -> Option<&dyn Catalog> {
        Some(self)
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        async move {
            // Each child gets the MCP stdio shutdown sequence (close stdin, SIGTERM, SIGKILL),
            // all at once; past its bound the process groups are killed when the transports
            // drop.
            if !self.pool.stop().await {
                let inner = self.inner();
                tracing::warn!(service = %inner.service, provider = %inner.name, "MCP server did not stop in time");
            }
        }
        .boxed()
    }
}

impl Catalog for McpProvider {
    fn list_resources<'a>(
        &'a self,
        caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ToolError>> {
        let child = self.pool.for_caller(caller);
        async move { child.list_resources(caller).await }.boxed()
    }

    fn list_resource_templates<'a>(
        &'a self,
        caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceTemplateInfo>, ToolError>> {
        let child = self.pool.for_caller(caller);
        async move { child.list_resource_templates(caller).await }.boxed()
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, ToolError>> {
        let child = self.pool.for_caller(cx.caller.as_ref());
        async move { child.read_resource(uri, cx).await }.boxed()
    }

    fn list_prompts<'a>(
        &'a self,
        caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<PromptInfo>, ToolError>> {
        let child = self.pool.for_caller(caller);
        async move { child.list_prompts(caller).await }.boxed()
    }

    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<PromptResult, ToolError>> {
        let child = self.pool.for_caller(cx.caller.as_ref());
        async move { child.get_prompt(name, args, cx).await }.boxed()
    }

    fn complete<'a>(
        &'a self,
        request: CompleteRequestParams,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<CompleteResult, ToolError>> {
        let child = self.pool.for_caller(cx.caller.as_ref());
        async move { child.complete(request, cx).await }.boxed()
    }

    fn subscribe<'a>(
        &'a self,
        uri: &'a str,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<bool, ToolError>> {
        let child = self.pool.for_caller(Some(caller));
        async move { child.subscribe(uri, caller).await }.boxed()
    }

    fn unsubscribe<'a>(
        &'a self,
        uri: &'a str,
        caller: &'a Caller,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        let child = self.pool.for_caller(Some(caller));
        async move { child.unsubscribe(uri, caller).await }.boxed()
    }

    fn offers(&self) -> Offers {
        let Some(theirs) = self
            .pool
            .lister()
            .current_peer()
            .and_then(|peer| Some(peer.peer_info()?.capabilities.clone()))
        else {
            return Offers::default();
        };
        let resources = theirs.resources.as_ref();
        Offers {
            resources: resources.is_some(),
            resource_subscriptions: resources.and_then(|r| r.subscribe) == Some(true),
            resource_list_changes: resources.and_then(|r| r.list_changed) == Some(true),
            prompts: theirs.prompts.is_some(),
            prompt_list_changes: theirs.prompts.as_ref().and_then(|p| p.list_changed) == Some(true),
            completions: theirs.completions.is_some(),
            log_messages: theirs.logging.is_some(),
        }
    }
}
