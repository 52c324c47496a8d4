//! The `grpc` provider: tools (and resources and prompts) of a provider process speaking the
//! gRPC Provider contract (`proto/mcpgateway/provider/v1/provider.proto`), through tonic.
//!
//! [`connection`] owns the channel and the status machine (DISCONNECTED → CONNECTED → ERROR →
//! CONNECTED, ERROR → DISCONNECTED after `max_retries`, then slow probes), with heartbeats over
//! `grpc.health.v1`; [`capabilities`] reads `ListCapabilities` into the contract's shapes and
//! keeps them in memory; [`calls`] runs `InvokeTool` (deadline, correlation id, traceparent)
//! and holds the one table from gRPC status codes to [`ToolError`]; [`events`] follows
//! `StreamEvents` (CloudEvents 1.0): checked, logged, counted, forwarded to MCP sessions.
//! [`error`] is what goes wrong before a call (address, connect, heartbeat, a listed schema,
//! an event); a call's failures are [`ToolError`]s.
//! Nothing here waits for a reconnect: while not CONNECTED calls fail at once.

mod calls;
mod capabilities;
mod connection;
mod error;
mod events;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use contract::{
    DependencyStatus, PromptInfo, PromptResult, ResourceContents, ResourceInfo,
    ResourceTemplateInfo, ToolSchema,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use self::capabilities::Capabilities;
use self::connection::{Link, StateRecord};
use self::events::EventCounts;
use super::clients::{Caller, ClientSessions};
use super::{
    CallContext, Catalog, Connection, JsonObject, Offers, Provider, ProviderError, ProviderHooks,
    ProviderReport, ToolError, ToolOutput,
};
use crate::config::{GrpcProviderConfig, ServiceConfig};
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

pub use self::calls::tool_error;

pub struct GrpcProvider {
    inner: Arc<Inner>,
    supervisor: Mutex<Option<JoinHandle<()>>>,
}

pub(super) struct Inner {
    name: String,
    service: String,
    /// `address` as configured (after `${VAR}` expansion), for messages.
    address: String,
    endpoint: tonic::transport::Endpoint,
    /// `deadline_ms`: the longest a call may take (the call's own timeout may be shorter).
    deadline: Duration,
    heartbeat_every: Duration,
    max_retries: u32,
    first_backoff: Duration,
    metadata: BTreeMap<String, String>,
    setup_hint: Option<String>,
    tools_changed: Arc<Notify>,
    health_changed: Arc<Notify>,
    sessions: ClientSessions,
    shutdown: Shutdown,
    /// The live channel, while CONNECTED.
    link: RwLock<Option<Link>>,
    /// What `ListCapabilities` last answered (kept while disconnected: the tools stay listed,
    /// and fail fast, rather than vanish and come back).
    capabilities: RwLock<Capabilities>,
    state: RwLock<StateRecord>,
    /// Bumped, under the `link` lock, at each connect.
    generation: AtomicU64,
    /// The newest connection a call or the event stream saw fail.
    failed_generation: AtomicU64,
    /// Told when a call or the event stream saw the transport fail.
    lost: Notify,
    /// A call found the provider DISCONNECTED: probe now rather than at the next slow probe.
    probe: Notify,
    events: EventCounts,
    first_attempt_done: watch::Sender<bool>,
}

impl GrpcProvider {
    pub fn new(
        service: &ServiceConfig,
        config: &GrpcProviderConfig,
        hooks: ProviderHooks,
    ) -> Result<Self, ProviderError> {
        let name = config.common.name.as_str().to_owned();
        let error = |message: String| ProviderError::Config {
            provider: name.clone(),
            message,
        };
        let (address, endpoint) =
            connection::endpoint(&service.base_dir, config).map_err(|e| error(e.to_string()))?;
        let inner = Inner {
            name: name.clone(),
            service: service.service.name.to_string(),
            address,
            endpoint,
            deadline: Duration::from_millis(config.deadline_ms),
            heartbeat_every: Duration::from_millis(config.heartbeat_interval_ms.max(1)),
            max_retries: config.max_retries,
            first_backoff: Duration::from_millis(config.retry_backoff_ms.max(1)),
            metadata: config.metadata.clone(),
            setup_hint: config.common.setup_hint.clone(),
            tools_changed: hooks.tools_changed,
            health_changed: hooks.health_changed,
            sessions: hooks.sessions,
            shutdown: hooks.shutdown.child(),
            link: RwLock::new(None),
            capabilities: RwLock::new(Capabilities::default()),
            state: RwLock::new(StateRecord::new()),
            generation: AtomicU64::new(0),
            failed_generation: AtomicU64::new(0),
            lost: Notify::new(),
            probe: Notify::new(),
            events: EventCounts::default(),
            first_attempt_done: watch::channel(false).0,
        };
        Ok(GrpcProvider {
            inner: Arc::new(inner),
            supervisor: Mutex::new(None),
        })
    }
}

impl Provider for GrpcProvider {
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
        self.inner.capabilities.read_unpoisoned().tools.clone()
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.inner
            .invoke_tool(tool, args, cx)
            .map(|r| r.map(ToolOutput::Data))
            .boxed()
    }

    fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>> {
        // The heartbeat keeps the record current; a check reads it (no I/O of its own).
        let status = self.inner.dependency_status();
        futures::future::ready(vec![(self.inner.name.clone(), status)]).boxed()
    }

    fn report(&self) -> ProviderReport {
        let never_listed = self.inner.capabilities.read_unpoisoned().tools.is_empty();
        let state = self.inner.state.read_unpoisoned();
        let connected = state.state == contract::ConnectionState::Connected;
        let missing_tools = (never_listed && !connected).then(|| {
            format!(
                "gRPC provider '{}' is {}, so its tools are not listed: {}",
                self.inner.name,
                state.state.as_str(),
                state.last_error.as_deref().unwrap_or("not connected yet")
            )
        });
        let connection = Connection {
            connected,
            restarts: state.reconnects,
        };
        drop(state);
        ProviderReport {
            connection: Some(connection),
            state: Some(self.inner.provider_health()),
            events: self.inner.events.snapshot(),
            missing_tools,
            ..ProviderReport::default()
        }
    }

    fn catalog(&self) -> Option<&dyn Catalog> {
        Some(self)
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        async move {
            self.inner.shutdown.cancel();
            let handle = self.supervisor.write_unpoisoned().take();
            if let Some(handle) = handle
                && tokio::time::timeout(Duration::from_secs(5), handle)
                    .await
                    .is_err()
            {
                tracing::warn!(service = %self.inner.service, provider = %self.inner.name, "gRPC provider supervisor did not stop in time");
            }
        }
        .boxed()
    }
}

impl Catalog for GrpcProvider {
    fn list_resources<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ToolError>> {
        let listed = self.inner.capabilities.read_unpoisoned().resources.clone();
        futures::future::ready(Ok(listed)).boxed()
    }

    fn list_resource_templates<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceTemplateInfo>, ToolError>> {
        let listed = self
            .inner
            .capabilities
            .read_unpoisoned()
            .resource_templates
            .clone();
        futures::future::ready(Ok(listed)).boxed()
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, ToolError>> {
        self.inner.read_resource(uri, cx).boxed()
    }

    fn list_prompts<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<PromptInfo>, ToolError>> {
        let listed = self.inner.capabilities.read_unpoisoned().prompts.clone();
        futures::future::ready(Ok(listed)).boxed()
    }

    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<PromptResult, ToolError>> {
        self.inner.get_prompt(name, args, cx).boxed()
    }

    /// Its resources and prompts as its `GetCapabilities` listed them; its events reach the
    /// client sessions as log messages.
    fn offers(&self) -> Offers {
        let capabilities = self.inner.capabilities.read_unpoisoned();
        Offers {
            resources: !capabilities.resources.is_empty()
                || !capabilities.resource_templates.is_empty(),
            prompts: !capabilities.prompts.is_empty(),
            log_messages: true,
            ..Offers::default()
        }
    }
}
