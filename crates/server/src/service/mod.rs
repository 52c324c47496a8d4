//! One running service: its configuration, its providers and their tools, its lifecycle, and
//! the operations both surfaces (REST and MCP) perform on it: list, call, health, reload,
//! shutdown.
//!
//! This is the state of the service's routers. Everything a request reads is behind an `Arc`
//! swapped as a whole on change, so a request sees one consistent tool set.

pub mod admission;
mod call;
mod catalog;
pub mod client;
pub mod client_load;
pub mod cluster;
mod completions;
pub mod discovery;
mod fair_share;
mod health;
pub mod keys;
pub mod lifecycle;
pub mod metrics;
pub mod oauth;
pub mod rate_limit;
mod registry;
pub mod resilience;
pub mod settings;
pub mod stats;
mod status;
mod subscriptions;
pub mod tasks;
mod timeline;
mod toolset;
mod uri_template;
pub mod visibility;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use contract::PromptInfo;
use tokio::sync::Notify;

use self::admission::Admission;
pub use self::call::{CallFailure, CallRequest, CallResult};
pub use self::catalog::CatalogRequest;
use self::client::Client;
use self::client_load::ClientLoad;
use self::cluster::{Cluster, ClusterError};
use self::discovery::Meaning;
use self::health::Checks;
use self::lifecycle::{Lifecycle, Phase};
use self::metrics::ServiceMetrics;
use self::rate_limit::RateLimiter;
pub use self::registry::Conflict;
use self::registry::ToolRegistry;
use self::resilience::Resilience;
pub use self::settings::Settings;
use self::stats::ToolStats;
pub use self::tasks::{TaskBook, TaskRequest};
use self::timeline::Timeline;
use self::toolset::{CallControls, ToolSet};
use crate::config::{IDENTIFIER_RULE, ServiceConfig, diff, is_identifier};
use crate::dependency;
use crate::provider::{self, ClientSessions, Offers, Provider, ProviderHooks};
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;
use crate::telemetry::Exporter;

/// How long a rebuild of the tools waits for the providers' prompts, for the document.
const PROMPTS_FOR_DOCUMENT_WAIT: Duration = Duration::from_secs(5);

/// Why a service could not start or reload.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("service '{service}': {source}")]
    Provider {
        service: String,
        source: provider::ProviderError,
    },
    #[error("service '{service}': {conflict}")]
    DuplicateTool { service: String, conflict: Conflict },
    #[error("service '{service}': {source}")]
    Telemetry {
        service: String,
        source: crate::telemetry::ExportError,
    },
    #[error("service '{service}': {source}")]
    Cluster {
        service: String,
        source: ClusterError,
    },
    #[error("service '{service}': {source}")]
    Dependency {
        service: String,
        source: dependency::DependencyError,
    },
    /// `discovery.model` names no readable model (or an unset variable).
    #[error("service '{service}': discovery.model {path}: {reason}")]
    DiscoveryModel {
        service: String,
        path: String,
        reason: String,
    },
}

pub struct Service {
    pub name: String,
    pub version: String,
    pub lifecycle: Lifecycle,
    /// Requests per client (every route but /health), and calls per client and tool.
    pub rate_limiter: RateLimiter,
    /// The state shared with other replicas through Redis (`cluster`); read at start.
    pub cluster: Option<Arc<Cluster>>,
    /// Which calls run now, which wait, which are refused.
    pub admission: Admission,
    /// What each client holds now: MCP sessions, streams, calls in flight.
    pub client_load: Arc<ClientLoad>,
    /// Each provider's breaker, retry budget and result cache, kept across reloads.
    pub resilience: Resilience,
    /// The model tool discovery also ranks by meaning with (`discovery.model`); read at start.
    meaning: Option<Meaning>,
    /// The service's Prometheus series (GET /metrics).
    pub metrics: Arc<ServiceMetrics>,
    started: Instant,
    settings: RwLock<Arc<Settings>>,
    toolset: RwLock<Arc<ToolSet>>,
    active_calls: AtomicU64,
    tools_changed: Arc<Notify>,
    /// Bumped whenever the tool list that clients see changes (MCP sessions watch it).
    tool_list_version: tokio::sync::watch::Sender<u64>,
    /// The last dependency checks (made in the background; /health reads them).
    checks: Checks,
    /// Per-tool call statistics.
    stats: ToolStats,
    /// The last hour, sampled for GET /status (`monitoring.status_interval_ms`, read at start).
    timeline: Timeline,
    /// Held while the tool set is rebuilt (a reload, a provider's list change), so a rebuild
    /// never installs a tool set computed from providers another rebuild has replaced.
    rebuilding: tokio::sync::Mutex<()>,
    /// Stops what faces clients: background loops, MCP sessions.
    drain: Shutdown,
    /// The parent of every provider's own shutdown.
    providers: Shutdown,
    /// Where finished spans go (`monitoring.otlp_endpoint`); `None` when not exported. Read at
    /// start: a change applies at the next restart.
    spans: Option<Exporter>,
    /// The client sessions, kept across reloads (providers send them what their upstreams
    /// send a client).
    client_sessions: ClientSessions,
    /// Calls run as tasks (`Prefer: respond-async`), kept across reloads.
    tasks: TaskBook,
}

impl Service {
    /// Builds the service and its providers; nothing connects until [`Service::start`].
    /// `drain` and `providers` are the runtime's two shutdown stages.
    pub fn new(
        config: ServiceConfig,
        drain: Shutdown,
        providers: Shutdown,
    ) -> Result<Arc<Service>, ServiceError> {
        let tools_changed = Arc::new(Notify::new());
        let name = config.service.name.to_string();
        let version = config.version();
        let client_sessions = ClientSessions::default();
        let client_load: Arc<ClientLoad> = Arc::default();
        let checks = Checks::default();
        let hooks = ProviderHooks {
            tools_changed: tools_changed.clone(),
            health_changed: checks.changed.clone(),
            shutdown: providers.clone(),
            sessions: client_sessions.clone(),
        };
        let spans =
            Exporter::from_config(&name, &version, &config.monitoring).map_err(|source| {
                ServiceError::Telemetry {
                    service: name.clone(),
                    source,
                }
            })?;
        if let Some(spans) = &spans {
            spans.flush_on(&providers);
        }
        let cluster = config.cluster.as_ref().map(|c| {
            let cluster = Cluster::new(
                &name,
                c,
                &config.service.host.value,
                config.service.port.get(),
            );
            cluster.share_sessions_of(client_load.clone());
            cluster
        });
        let built = build_providers(&config, None, &hooks)?;
        let meaning = match &config.discovery.model {
            None => None,
            Some(path) => {
                let refused = |reason: String| ServiceError::DiscoveryModel {
                    service: name.clone(),
                    path: path.clone(),
                    reason,
                };
                let expanded =
                    crate::config::expand_env(path).map_err(|e| refused(e.to_string()))?;
                // Empty (`${DISCOVERY_MODEL:-}` unset): by words only.
                match expanded.trim() {
                    "" => None,
                    dir => Some(
                        Meaning::load(&config.base_dir.join(dir))
                            .map_err(|e| refused(e.to_string()))?,
                    ),
                }
            }
        };
        let admission = Admission::new(config.limits.max_concurrent_calls);
        let status_interval = config.monitoring.status_interval;
        let resilience = Resilience::default();
        let toolset = ToolSet::new(
            &name,
            &version,
            &config,
            built,
            ToolRegistry::default(),
            Arc::default(),
            CallControls {
                admission: &admission,
                resilience: &resilience,
            },
            meaning.as_ref(),
        );
        Ok(Arc::new(Service {
            rate_limiter: match &cluster {
                Some(cluster) => RateLimiter::Redis(cluster.clone()),
                None => RateLimiter::local(),
            },
            cluster,
            admission,
            client_load,
            resilience,
            meaning,
            metrics: Arc::new(ServiceMetrics::new(&name)),
            lifecycle: Lifecycle::default(),
            started: Instant::now(),
            toolset: RwLock::new(Arc::new(toolset)),
            settings: RwLock::new(Arc::new(Settings::new(config))),
            active_calls: AtomicU64::new(0),
            tools_changed,
            tool_list_version: tokio::sync::watch::channel(0).0,
            checks,
            stats: ToolStats::default(),
            timeline: Timeline::new(status_interval),
            rebuilding: tokio::sync::Mutex::new(()),
            drain,
            providers,
            spans,
            client_sessions,
            tasks: TaskBook::default(),
            name,
            version,
        }))
    }

    pub fn settings(&self) -> Arc<Settings> {
        self.settings.read_unpoisoned().clone()
    }

    fn toolset(&self) -> Arc<ToolSet> {
        self.toolset.read_unpoisoned().clone()
    }

    /// Where this service's finished spans go; `None` when traces are not exported.
    pub fn spans(&self) -> Option<Exporter> {
        self.spans.clone()
    }

    /// Where this service's client-facing tasks go, and what tells them to stop.
    pub fn drain(&self) -> &Shutdown {
        &self.drain
    }

    /// Connects every provider (concurrently), builds the tool list and starts serving.
    /// A clash of tool names that `service.on_name_clash` does not settle by prefixing is an
    /// error naming the tool and the providers.
    pub async fn start(self: &Arc<Self>) -> Result<(), ServiceError> {
        if self.settings().config.security.oauth.is_some() {
            let mut config = self.settings().config.clone();
            // Logged when the settings were first made.
            config.warnings.clear();
            config.notices.clear();
            let config = oauth::with_issuer_endpoints(config).await;
            let settings = Settings::renewed(config, &self.settings());
            *self.settings.write_unpoisoned() = Arc::new(settings);
        }
        let providers = self.toolset().providers.clone();
        futures::future::join_all(providers.iter().map(|p| p.start())).await;
        let registry = ToolRegistry::build(&providers, &self.settings().config, &self.name);
        self.refuse_unsettled(&registry)?;
        let prompts = self.prompts_for_document(&providers).await;
        self.install(providers, registry, prompts);
        if let Some(cluster) = &self.cluster {
            cluster.connect().map_err(|source| ServiceError::Cluster {
                service: self.name.clone(),
                source,
            })?;
            cluster.watch(&self.drain, &self.providers);
        }
        // The first checks start now and normally end before the service says it is ready.
        self.drain.spawn(self.clone().watch_dependencies());
        self.first_checks_done().await;
        self.lifecycle.set(Phase::Running);
        self.drain.spawn(self.clone().follow_tool_changes());
        self.drain.spawn(self.clone().sample_timeline());
        let health = self.health();
        tracing::info!(service = %self.name, status = ?health.status, tools = self.toolset().registry.tools().len(), "service ready");
        Ok(())
    }

    /// At start and reload a clash left to "the first keeps it" is refused: nothing is served
    /// yet under that configuration, so no tool has to go.
    fn refuse_unsettled(&self, registry: &ToolRegistry) -> Result<(), ServiceError> {
        match registry.conflicts().iter().find(|c| c.kept_first()) {
            Some(conflict) => Err(ServiceError::DuplicateTool {
                service: self.name.clone(),
                conflict: conflict.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Rebuilds the tool list whenever a provider says its tools changed. A clash that
    /// appears now is settled by the same policy (under `error` the first provider keeps the
    /// name) and reported: logged and listed in /health.
    async fn follow_tool_changes(self: Arc<Self>) {
        loop {
            tokio::select! {
                _ = self.tools_changed.notified() => {}
                _ = self.drain.cancelled() => return,
            }
            let _rebuilding = self.rebuilding.lock().await;
            let providers = self.toolset().providers.clone();
            let registry = ToolRegistry::build(&providers, &self.settings().config, &self.name);
            let prompts = self.prompts_for_document(&providers).await;
            self.install(providers, registry, prompts);
        }
    }

    /// Tells when the tool list changes (the value is a counter; only changes matter).
    pub fn watch_tool_list(&self) -> tokio::sync::watch::Receiver<u64> {
        self.tool_list_version.subscribe()
    }

    /// The prompts of `providers` for the service's document (each gets its own operation),
    /// waited for at most [`PROMPTS_FOR_DOCUMENT_WAIT`]: past it the document keeps the
    /// template `POST /prompts/{name}` until the next rebuild, and says so in the log.
    async fn prompts_for_document(&self, providers: &[Arc<dyn Provider>]) -> Arc<Vec<PromptInfo>> {
        let listed = self.prompts_of(providers.to_vec(), None);
        match tokio::time::timeout(PROMPTS_FOR_DOCUMENT_WAIT, listed).await {
            Ok(prompts) => Arc::new(prompts),
            Err(_) => {
                tracing::warn!(service = %self.name, "the providers' prompts were not listed in time: /openapi.json has no operation per prompt until the tools are rebuilt");
                Arc::default()
            }
        }
    }

    fn install(
        &self,
        providers: Vec<Arc<dyn Provider>>,
        registry: ToolRegistry,
        prompts: Arc<Vec<PromptInfo>>,
    ) {
        let before = self.toolset();
        let changed = before.registry.tools() != registry.tools();
        let new_providers = before.providers.len() != providers.len()
            || before
                .providers
                .iter()
                .zip(&providers)
                .any(|(a, b)| !Arc::ptr_eq(a, b));
        self.report_names(&before.registry, &registry);
        let toolset = ToolSet::new(
            &self.name,
            &self.version,
            &self.settings().config,
            providers,
            registry,
            prompts,
            CallControls {
                admission: &self.admission,
                resilience: &self.resilience,
            },
            self.meaning.as_ref(),
        );
        let listed = |name: &str| toolset.registry.get(name).is_some();
        self.stats.retain(listed);
        let tools: Vec<(String, String)> = toolset
            .registry
            .tools()
            .iter()
            .filter_map(|t| {
                let provider = toolset.registry.get(&t.name)?.provider.name().to_owned();
                Some((t.name.clone(), provider))
            })
            .collect();
        self.metrics.tools_installed(&tools);
        *self.toolset.write_unpoisoned() = Arc::new(toolset);
        if changed {
            self.tool_list_version.send_modify(|v| *v += 1);
        }
        // New providers are checked now, not at the next interval. A provider's own change of
        // state reaches the checks directly, so a rebuild of its tools asks for none.
        if new_providers {
            self.checks.changed.notify_one();
        }
    }

    /// Applies a re-read configuration: providers whose entry is unchanged keep running, new
    /// ones start, removed ones stop. A new config that cannot work is refused whole.
    pub async fn reload(self: &Arc<Self>, config: ServiceConfig) -> Result<(), ServiceError> {
        let _rebuilding = self.rebuilding.lock().await;
        let current = self.settings();
        let old = &current.config;
        if old.service.port != config.service.port
            || old.service.host.value != config.service.host.value
        {
            tracing::warn!(service = %self.name, "service.host/port changes take effect at the next start; keeping the current address");
        }
        let old_providers = self.toolset().providers.clone();
        let hooks = ProviderHooks {
            tools_changed: self.tools_changed.clone(),
            health_changed: self.checks.changed.clone(),
            shutdown: self.providers.clone(),
            sessions: self.client_sessions.clone(),
        };
        let config = oauth::with_issuer_endpoints(config).await;
        let providers = build_providers(&config, Some((old, &old_providers)), &hooks)?;
        let fresh: Vec<Arc<dyn Provider>> = providers
            .iter()
            .filter(|p| !old_providers.iter().any(|o| Arc::ptr_eq(o, p)))
            .cloned()
            .collect();
        futures::future::join_all(fresh.iter().map(|p| p.start())).await;
        let registry = ToolRegistry::build(&providers, &config, &self.name);
        if let Err(refused) = self.refuse_unsettled(&registry) {
            futures::future::join_all(fresh.iter().map(|p| p.shutdown())).await;
            return Err(refused);
        }
        self.admission
            .set_service_limit(config.limits.max_concurrent_calls);
        *self.settings.write_unpoisoned() = Arc::new(Settings::renewed(config, &current));
        let prompts = self.prompts_for_document(&providers).await;
        self.install(providers.clone(), registry, prompts);
        let removed: Vec<Arc<dyn Provider>> = old_providers
            .into_iter()
            .filter(|o| !providers.iter().any(|p| Arc::ptr_eq(o, p)))
            .collect();
        futures::future::join_all(removed.iter().map(|p| p.shutdown())).await;
        tracing::info!(
            service = %self.name, started = fresh.len(), stopped = removed.len(),
            tools = self.toolset().registry.tools().len(), "configuration reloaded"
        );
        Ok(())
    }

    /// Logs what is new about names in `next`: each clash once (an error when a tool is not
    /// served, a warning when both are served prefixed), and each served name that is not an
    /// identifier (kept as its upstream gives it; `service.identifier_names` maps it), all in
    /// one line.
    fn report_names(&self, before: &ToolRegistry, next: &ToolRegistry) {
        for conflict in next.conflicts() {
            if before.conflicts().contains(conflict) {
                continue;
            }
            let served = conflict.0.served.join(", ");
            if conflict.kept_first() {
                tracing::error!(service = %self.name, tool = %conflict.0.tool, "{conflict}; the first provider keeps it, the others' tool is not served (see /health conflicts)");
            } else {
                tracing::warn!(service = %self.name, tool = %conflict.0.tool, "{conflict}; served as {served} (on_name_clash: prefix)");
            }
        }
        let kept: Vec<&str> = next
            .tools()
            .iter()
            .map(|t| t.name.as_str())
            .filter(|name| !is_identifier(name) && before.get(name).is_none())
            .collect();
        if !kept.is_empty() {
            tracing::warn!(service = %self.name, tools = %kept.join(", "), "tool names that are not identifiers ({IDENTIFIER_RULE}) are served as their upstream names them; service.identifier_names: true serves their identifier form");
        }
    }

    /// The served name of the tool `name` names, whether served (`echo_v1`) or qualified
    /// (`hello-rs.echo.v1`); `name` itself when it names no tool, for the call to refuse as
    /// usual (TOOL_NOT_FOUND, or FORBIDDEN outside the key's scope, judged on the name given).
    pub fn served_name(&self, name: &str) -> String {
        let toolset = self.toolset();
        toolset
            .registry
            .served_name(name)
            .unwrap_or(name)
            .to_owned()
    }

    /// GET /tools's `data` as `client` sees it (only its scope's tools), shared.
    pub fn tools_data(&self, client: &Client) -> Bytes {
        let toolset = self.toolset();
        match client.scope() {
            None => toolset.tools_data.clone(),
            Some(scope) => toolset.scoped(scope).tools_data.clone(),
        }
    }

    /// The tools as MCP `tools/list` lists them to `client`, shared.
    pub fn mcp_tools(&self, client: &Client) -> Arc<Vec<rmcp::model::Tool>> {
        let toolset = self.toolset();
        match client.scope() {
            None => toolset.mcp_tools.clone(),
            Some(scope) => toolset.scoped(scope).mcp_tools.clone(),
        }
    }

    /// What the providers offer besides tools, each as its own [`Offers`].
    pub fn offers(&self) -> Vec<Offers> {
        self.toolset()
            .providers
            .iter()
            .filter_map(|p| p.catalog().map(|c| c.offers()))
            .collect()
    }

    /// Whether what a list answers depends on who asks: API keys or OAuth are on (a key's or
    /// a token's scope filters the tools, and a list must not be served to a client without
    /// one), so MCP lists say `cacheScope: private`.
    pub fn lists_are_private(&self) -> bool {
        self.settings().config.security.credentials_required()
    }

    /// The client sessions of this service.
    pub fn client_sessions(&self) -> &ClientSessions {
        &self.client_sessions
    }

    /// Whether the service serves `tool` (a served name).
    pub fn has_tool(&self, tool: &str) -> bool {
        self.toolset().registry.get(tool).is_some()
    }

    /// Whether a tool declares an output schema (its results are typed).
    pub fn has_output_schema(&self, tool: &str) -> bool {
        self.toolset()
            .registry
            .get(tool)
            .is_some_and(|t| t.schema.output_schema.is_some())
    }

    /// Every tool's call statistics (for metrics; /health shows them in `data.tools`).
    pub fn tool_stats(&self) -> &ToolStats {
        &self.stats
    }

    /// The per-service OpenAPI document as `client` sees it (only its scope's tools).
    pub fn openapi(&self, client: &Client) -> Bytes {
        let toolset = self.toolset();
        match client.scope() {
            None => toolset.openapi.clone(),
            Some(scope) => toolset.scoped(scope).openapi.clone(),
        }
    }

    /// Stops taking requests (they answer 503); in-flight ones are left to finish.
    pub fn begin_shutdown(&self) {
        self.lifecycle.set(Phase::ShuttingDown);
    }

    /// Stops every provider (children included).
    pub async fn stop_providers(&self) {
        let providers = self.toolset().providers.clone();
        futures::future::join_all(providers.iter().map(|p| p.shutdown())).await;
        self.lifecycle.set(Phase::Stopped);
    }
}

/// The providers of `config` in order, reusing the running ones whose entry is unchanged
/// ([`diff::reusable`]).
fn build_providers(
    config: &ServiceConfig,
    running: Option<(&ServiceConfig, &[Arc<dyn Provider>])>,
    hooks: &ProviderHooks,
) -> Result<Vec<Arc<dyn Provider>>, ServiceError> {
    let service = config.service.name.to_string();
    let dependencies =
        dependency::build_all(config).map_err(|source| ServiceError::Dependency {
            service: service.clone(),
            source,
        })?;
    let reuse = match running {
        Some((old, _)) => diff::reusable(old, config),
        None => vec![None; config.providers.len()],
    };
    config
        .provider_entries()
        .zip(reuse)
        .map(|(entry, reuse)| match (reuse, running) {
            (Some(i), Some((_, providers))) => Ok(providers[i].clone()),
            _ => provider::build(config, entry, hooks.clone(), &dependencies).map_err(|source| {
                ServiceError::Provider {
                    service: service.clone(),
                    source,
                }
            }),
        })
        .collect()
}

/// A running service named `unit` with `extra` (YAML) added to its configuration, for the unit
/// tests of the layers and of a call; nothing is started (call [`Service::start`] for its
/// providers).
#[cfg(test)]
pub(crate) fn unit_service(extra: &str) -> Arc<Service> {
    let config = crate::config::ServiceConfig::parse(
        &format!("service: {{ name: unit, port: 9999 }}\n{extra}"),
        "unit.yaml",
        std::path::PathBuf::from("."),
    )
    .unwrap();
    let shutdown = crate::shutdown::Shutdown::default();
    let service = Service::new(config, shutdown.child(), shutdown.child()).unwrap();
    service.lifecycle.set(lifecycle::Phase::Running);
    service
}
