//! One running service: its configuration, its providers and their tools, its lifecycle, and
//! the operations the HTTP surface performs on it (list, call, health, reload, shutdown).
//!
//! This is the `AppState` of the service's router. Everything a request reads is behind an
//! `Arc` swapped as a whole on change, so a request sees one consistent tool set.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use contract::{
    DependencyState, DependencyStatus, ErrorCode, HealthResponse, HealthStatus, ToolSchema,
    ToolsResponse, ValidationIssue,
};
use serde_json::Value;
use tokio::sync::Notify;

use crate::config::{ProviderConfig, ServiceConfig};
use crate::dependency;
use crate::lifecycle::{Lifecycle, Phase};
use crate::provider::{self, CallContext, JsonObject, ProgressSink, Provider, ProviderHooks};
use crate::rate_limit::RateLimiter;
use crate::registry::{Conflict, ToolRegistry};
use crate::service_doc::{Limits, service_document};

/// How long one dependency check may take when /health asks.
const CHECK_BUDGET: Duration = Duration::from_secs(1);
/// Dependency checks are shared by the GET /health requests of this long: under load the
/// endpoint answers from one check per second instead of pinging every upstream per request.
const CHECK_SHARED_FOR: Duration = Duration::from_secs(1);

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
    Dependency {
        service: String,
        source: dependency::DependencyError,
    },
}

/// Why a call failed, ready to be answered.
#[derive(Debug)]
pub struct CallFailure {
    pub code: ErrorCode,
    pub message: String,
    pub validation_errors: Option<Vec<ValidationIssue>>,
}

impl CallFailure {
    fn new(code: ErrorCode, message: String) -> Self {
        CallFailure {
            code,
            message,
            validation_errors: None,
        }
    }
}

/// The providers and what was derived from their tools, replaced together.
struct ToolSet {
    providers: Vec<Arc<dyn Provider>>,
    registry: ToolRegistry,
    openapi: Arc<Value>,
    /// GET /tools's `data`, built once per tool list rather than per request.
    tools_data: Arc<Value>,
    /// The same tools as MCP `tools/list` answers them, also built once per tool list.
    mcp_tools: Arc<Vec<rmcp::model::Tool>>,
}

/// The settings a request reads, replaced together on reload.
pub struct Settings {
    pub config: ServiceConfig,
    pub api_keys: HashSet<String>,
}

impl Settings {
    fn new(config: ServiceConfig) -> Self {
        let api_keys = if config.security.api_keys_enabled {
            std::env::var(&config.security.api_keys_env)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect()
        } else {
            HashSet::new()
        };
        if config.security.api_keys_enabled && api_keys.is_empty() {
            tracing::warn!(
                service = %config.service.name,
                "security.api_keys_enabled is set but {} holds no key: every request but /health will answer 401",
                config.security.api_keys_env
            );
        }
        Settings { config, api_keys }
    }

    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.config.limits.call_timeout_ms.0)
    }

    /// The CORS rule: the configured origins, or any loopback origin on any port.
    pub fn allows_origin(&self, origin: &str) -> bool {
        if self.config.security.cors_origins.is_empty() {
            is_loopback_origin(origin)
        } else {
            self.config
                .security
                .cors_origins
                .iter()
                .any(|o| o == origin || o == "*")
        }
    }
}

fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix("[::1]") {
        Some(after) => return after.is_empty() || after.strip_prefix(':').is_some_and(is_port),
        None => rest,
    };
    let (host, port) = match host.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (host, None),
    };
    (host == "localhost" || host == "127.0.0.1") && port.is_none_or(is_port)
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

pub struct Service {
    pub name: String,
    pub version: String,
    pub lifecycle: Lifecycle,
    pub rate_limiter: RateLimiter,
    started: Instant,
    settings: RwLock<Arc<Settings>>,
    toolset: RwLock<Arc<ToolSet>>,
    active_calls: AtomicU64,
    tools_changed: Arc<Notify>,
    /// Bumped whenever the tool list that clients see changes (MCP sessions watch it).
    tool_list_version: tokio::sync::watch::Sender<u64>,
    /// The last dependency checks: when, for which tool set, what they said. The lock also
    /// makes concurrent requests wait for one check rather than each running its own.
    last_checks: tokio::sync::Mutex<Option<LastChecks>>,
}

struct LastChecks {
    at: Instant,
    toolset: Arc<ToolSet>,
    dependencies: BTreeMap<String, DependencyStatus>,
}

/// Counts a call as active for as long as it lives.
struct ActiveCall<'a>(&'a AtomicU64);

impl Drop for ActiveCall<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Service {
    /// Builds the service and its providers; nothing connects until [`Service::start`].
    pub fn new(config: ServiceConfig) -> Result<Arc<Service>, ServiceError> {
        let tools_changed = Arc::new(Notify::new());
        let name = config.service.name.to_string();
        let version = config.version();
        let providers = build_providers(&config, None, &tools_changed)?;
        let openapi = Arc::new(service_document(&name, &version, &[], limits_of(&config)));
        Ok(Arc::new(Service {
            rate_limiter: RateLimiter::new(config.security.rate_limit.0),
            lifecycle: Lifecycle::default(),
            started: Instant::now(),
            toolset: RwLock::new(Arc::new(ToolSet {
                providers,
                registry: ToolRegistry::default(),
                openapi,
                tools_data: Arc::new(tools_data(&name, &version, &[])),
                mcp_tools: Arc::default(),
            })),
            settings: RwLock::new(Arc::new(Settings::new(config))),
            active_calls: AtomicU64::new(0),
            tools_changed,
            tool_list_version: tokio::sync::watch::channel(0).0,
            last_checks: tokio::sync::Mutex::new(None),
            name,
            version,
        }))
    }

    pub fn settings(&self) -> Arc<Settings> {
        self.settings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn toolset(&self) -> Arc<ToolSet> {
        self.toolset
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Connects every provider (concurrently), builds the tool list and starts serving.
    /// Two providers offering one tool name is an error naming both.
    pub async fn start(self: &Arc<Self>) -> Result<(), ServiceError> {
        let providers = self.toolset().providers.clone();
        futures::future::join_all(providers.iter().map(|p| p.start())).await;
        let (registry, conflicts) = ToolRegistry::build(&providers, &self.name);
        if let Some(conflict) = conflicts.into_iter().next() {
            return Err(ServiceError::DuplicateTool {
                service: self.name.clone(),
                conflict,
            });
        }
        self.install(providers, registry);
        self.lifecycle.set(Phase::Running);
        tokio::spawn(self.clone().follow_tool_changes());
        tokio::spawn(self.clone().watch_dependencies());
        let health = self.health().await;
        tracing::info!(service = %self.name, status = ?health.status, tools = self.toolset().registry.tools().len(), "service ready");
        Ok(())
    }

    /// Checks the dependencies every `monitoring.health_check_interval` seconds and logs each
    /// change of state, so an outage shows in the log even when nobody asks /health.
    async fn watch_dependencies(self: Arc<Self>) {
        let mut last: BTreeMap<String, DependencyState> = BTreeMap::new();
        loop {
            let every =
                Duration::from_secs(self.settings().config.monitoring.health_check_interval.0);
            tokio::time::sleep(every).await;
            if self.lifecycle.phase() != Phase::Running {
                return;
            }
            let providers = self.toolset().providers.clone();
            for (name, status) in check_all(&providers).await {
                let before = last.insert(name.clone(), status.status);
                if before.is_some_and(|b| b != status.status)
                    || (before.is_none() && status.status != DependencyState::Connected)
                {
                    match status.status {
                        DependencyState::Connected => {
                            tracing::info!(service = %self.name, dependency = %name, "dependency connected")
                        }
                        _ => {
                            tracing::warn!(service = %self.name, dependency = %name, state = ?status.status, error = status.error.as_deref(), "dependency not connected")
                        }
                    }
                }
            }
        }
    }

    /// Rebuilds the tool list whenever a provider says its tools changed.
    async fn follow_tool_changes(self: Arc<Self>) {
        loop {
            self.tools_changed.notified().await;
            if matches!(self.lifecycle.phase(), Phase::ShuttingDown | Phase::Stopped) {
                return;
            }
            let providers = self.toolset().providers.clone();
            let (registry, conflicts) = ToolRegistry::build(&providers, &self.name);
            for conflict in conflicts {
                tracing::error!(service = %self.name, "{conflict}; the first provider keeps it");
            }
            self.install(providers, registry);
        }
    }

    /// Tells when the tool list changes (the value is a counter; only changes matter).
    pub fn watch_tool_list(&self) -> tokio::sync::watch::Receiver<u64> {
        self.tool_list_version.subscribe()
    }

    fn install(&self, providers: Vec<Arc<dyn Provider>>, registry: ToolRegistry) {
        let changed = self.toolset().registry.tools() != registry.tools();
        let limits = limits_of(&self.settings().config);
        let openapi = Arc::new(service_document(
            &self.name,
            &self.version,
            registry.tools(),
            limits,
        ));
        let tools_data = Arc::new(tools_data(&self.name, &self.version, registry.tools()));
        let mcp_tools = Arc::new(crate::mcp_surface::mcp_tools(registry.tools()));
        *self.toolset.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(ToolSet {
            providers,
            registry,
            openapi,
            tools_data,
            mcp_tools,
        });
        if changed {
            self.tool_list_version.send_modify(|v| *v += 1);
        }
    }

    /// Applies a re-read configuration: providers whose entry is unchanged keep running, new
    /// ones start, removed ones stop. A new config that cannot work is refused whole.
    pub async fn reload(self: &Arc<Self>, config: ServiceConfig) -> Result<(), ServiceError> {
        let current = self.settings();
        let old = &current.config;
        if old.service.port != config.service.port || old.service.host != config.service.host {
            tracing::warn!(service = %self.name, "service.host/port changes take effect at the next start; keeping the current address");
        }
        let old_providers = self.toolset().providers.clone();
        let providers = build_providers(&config, Some((old, &old_providers)), &self.tools_changed)?;
        let fresh: Vec<Arc<dyn Provider>> = providers
            .iter()
            .filter(|p| !old_providers.iter().any(|o| Arc::ptr_eq(o, p)))
            .cloned()
            .collect();
        futures::future::join_all(fresh.iter().map(|p| p.start())).await;
        let (registry, conflicts) = ToolRegistry::build(&providers, &self.name);
        if let Some(conflict) = conflicts.into_iter().next() {
            futures::future::join_all(fresh.iter().map(|p| p.shutdown())).await;
            return Err(ServiceError::DuplicateTool {
                service: self.name.clone(),
                conflict,
            });
        }
        self.rate_limiter.set_rate(config.security.rate_limit.0);
        *self.settings.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(Settings::new(config));
        self.install(providers.clone(), registry);
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

    /// GET /tools's `data`, shared.
    pub fn tools_data(&self) -> Arc<Value> {
        self.toolset().tools_data.clone()
    }

    /// The tools as MCP `tools/list` lists them, shared.
    pub fn mcp_tools(&self) -> Arc<Vec<rmcp::model::Tool>> {
        self.toolset().mcp_tools.clone()
    }

    /// The connected MCP servers behind the service, in provider order.
    pub fn mcp_peers(&self) -> Vec<rmcp::Peer<rmcp::RoleClient>> {
        self.toolset()
            .providers
            .iter()
            .filter_map(|p| p.mcp_peer())
            .collect()
    }

    pub fn openapi(&self) -> Arc<Value> {
        self.toolset().openapi.clone()
    }

    /// Validates and runs one tool call within the configured timeout.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: JsonObject,
        request_id: &str,
        progress: Option<ProgressSink>,
    ) -> Result<Value, CallFailure> {
        let toolset = self.toolset();
        let Some(entry) = toolset.registry.get(tool) else {
            let reasons: Vec<String> = toolset
                .providers
                .iter()
                .filter_map(|p| p.missing_tools_reason())
                .collect();
            let message = if reasons.is_empty() {
                format!("Tool '{tool}' not found")
            } else {
                format!("Tool '{tool}' not found ({})", reasons.join("; "))
            };
            return Err(CallFailure::new(ErrorCode::ToolNotFound, message));
        };
        let arguments = Value::Object(arguments);
        if let Some(validator) = &entry.validator
            && let Err(issues) = validator.check(&arguments)
        {
            return Err(CallFailure {
                code: ErrorCode::InvalidArguments,
                message: format!(
                    "Arguments do not match the input schema of tool '{tool}': {} problem(s), see meta.validation_errors",
                    issues.len()
                ),
                validation_errors: Some(issues),
            });
        }
        let Value::Object(arguments) = arguments else {
            unreachable!("built from an object above")
        };
        let timeout = self.settings().call_timeout();
        let cx = CallContext {
            request_id: request_id.to_owned(),
            timeout,
            progress,
        };
        self.active_calls.fetch_add(1, Ordering::AcqRel);
        let _active = ActiveCall(&self.active_calls);
        // The provider enforces the timeout itself (cancelling upstream); this outer bound
        // only guards against a provider that does not.
        let outcome = tokio::time::timeout(
            timeout + Duration::from_secs(1),
            entry.provider.call(tool, arguments, &cx),
        )
        .await;
        match outcome {
            Ok(Ok(data)) => Ok(data),
            Ok(Err(e)) => Err(CallFailure::new(e.code(), e.to_string())),
            Err(_) => Err(CallFailure::new(
                ErrorCode::Timeout,
                format!(
                    "Tool '{tool}' did not answer within {} ms",
                    timeout.as_millis()
                ),
            )),
        }
    }

    pub async fn health(&self) -> HealthResponse {
        let dependencies = self.dependency_checks().await;
        let phase = self.lifecycle.phase();
        let status = match phase {
            Phase::Running
                if dependencies
                    .values()
                    .all(|d| d.status == DependencyState::Connected) =>
            {
                HealthStatus::Healthy
            }
            Phase::Running => HealthStatus::Degraded,
            _ => HealthStatus::Unavailable,
        };
        let state = match (phase, status) {
            (Phase::Initializing, _) => "INITIALIZING",
            (Phase::Running, HealthStatus::Healthy) => "HEALTHY",
            (Phase::Running, _) => "DEGRADED",
            (Phase::ShuttingDown, _) => "SHUTTING_DOWN",
            (Phase::Stopped, _) => "STOPPED",
        };
        HealthResponse {
            status,
            service: self.name.clone(),
            version: self.version.clone(),
            state: state.to_owned(),
            uptime_seconds: self.started.elapsed().as_secs(),
            active_calls: self.active_calls.load(Ordering::Acquire),
            dependencies,
        }
    }

    /// Every dependency's status, checked now or by a request less than [`CHECK_SHARED_FOR`]
    /// ago (for the same tool set: a reload checks again).
    async fn dependency_checks(&self) -> BTreeMap<String, DependencyStatus> {
        let toolset = self.toolset();
        let mut last = self.last_checks.lock().await;
        if let Some(last) = last.as_ref()
            && last.at.elapsed() < CHECK_SHARED_FOR
            && Arc::ptr_eq(&last.toolset, &toolset)
        {
            return last.dependencies.clone();
        }
        let dependencies = check_all(&toolset.providers).await;
        *last = Some(LastChecks {
            at: Instant::now(),
            toolset,
            dependencies: dependencies.clone(),
        });
        dependencies
    }

    /// Stops taking requests (they answer 503); in-flight ones are left to finish.
    pub fn begin_shutdown(&self) {
        self.lifecycle.set(Phase::ShuttingDown);
        self.tools_changed.notify_one();
    }

    /// Stops every provider (children included).
    pub async fn stop_providers(&self) {
        let providers = self.toolset().providers.clone();
        futures::future::join_all(providers.iter().map(|p| p.shutdown())).await;
        self.lifecycle.set(Phase::Stopped);
    }
}

/// GET /tools's `data`: the service, its version and its tools.
fn tools_data(name: &str, version: &str, tools: &[ToolSchema]) -> Value {
    serde_json::to_value(ToolsResponse {
        service: name.to_owned(),
        version: version.to_owned(),
        tools: tools.to_vec(),
    })
    .unwrap_or(Value::Null)
}

fn limits_of(config: &ServiceConfig) -> Limits {
    Limits {
        max_body_bytes: config.limits.max_body_bytes.0,
        call_timeout_ms: config.limits.call_timeout_ms.0,
    }
}

/// Checks every provider's dependencies at once, each within [`CHECK_BUDGET`]; a check that
/// takes longer is reported `unknown`.
async fn check_all(providers: &[Arc<dyn Provider>]) -> BTreeMap<String, DependencyStatus> {
    let checks = providers.iter().map(|p| async move {
        match tokio::time::timeout(CHECK_BUDGET, p.health()).await {
            Ok(reports) => reports,
            Err(_) => vec![(
                p.dependency_name().to_owned(),
                DependencyStatus {
                    status: DependencyState::Unknown,
                    response_time_ms: Some(CHECK_BUDGET.as_millis() as u64),
                    error: Some(format!(
                        "no answer to the health check within {} ms",
                        CHECK_BUDGET.as_millis()
                    )),
                    last_ok: None,
                },
            )],
        }
    });
    futures::future::join_all(checks)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Same name and same settings, wherever in the file the entry now stands, and the same
/// dependency settings behind it.
fn same_provider(
    old: (&ServiceConfig, &ProviderConfig),
    new: (&ServiceConfig, &ProviderConfig),
) -> bool {
    let ((old_service, a), (new_service, b)) = (old, new);
    let same_tools = a.tools.len() == b.tools.len()
        && a.tools.iter().zip(&b.tools).all(|(x, y)| {
            x.name.value == y.name.value
                && x.description == y.description
                && x.input_schema == y.input_schema
                && x.query == y.query
                && x.result_key == y.result_key
                && x.method == y.method
                && x.path == y.path
                && x.headers == y.headers
                && x.body == y.body
                && x.result == y.result
        });
    let same_dependency = a.dependency == b.dependency
        && a.dependency
            .as_ref()
            .is_none_or(|d| old_service.dependencies.get(d) == new_service.dependencies.get(d));
    a.name.value == b.name.value
        && a.kind == b.kind
        && a.command == b.command
        && a.args == b.args
        && a.env == b.env
        && a.cwd == b.cwd
        && a.url == b.url
        && a.headers == b.headers
        && a.openapi == b.openapi
        && a.include == b.include
        && a.exclude == b.exclude
        && a.usage_tool == b.usage_tool
        && a.setup_hint == b.setup_hint
        && same_tools
        && same_dependency
}

/// The providers of `config` in order, reusing the running ones whose entry is unchanged.
fn build_providers(
    config: &ServiceConfig,
    running: Option<(&ServiceConfig, &[Arc<dyn Provider>])>,
    tools_changed: &Arc<Notify>,
) -> Result<Vec<Arc<dyn Provider>>, ServiceError> {
    let hooks = ProviderHooks {
        tools_changed: tools_changed.clone(),
    };
    let service = config.service.name.to_string();
    let dependencies =
        dependency::build_all(config).map_err(|source| ServiceError::Dependency {
            service: service.clone(),
            source,
        })?;
    config
        .providers
        .iter()
        .map(|entry| {
            let reusable = running.and_then(|(old, providers)| {
                old.providers
                    .iter()
                    .zip(providers)
                    .find(|(c, _)| same_provider((old, c), (config, entry)))
                    .map(|(_, p)| p.clone())
            });
            match reusable {
                Some(provider) => Ok(provider),
                None => {
                    provider::build(config, entry, hooks.clone(), &dependencies).map_err(|source| {
                        ServiceError::Provider {
                            service: service.clone(),
                            source,
                        }
                    })
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_any_port() {
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:5173",
        ] {
            assert!(is_loopback_origin(ok), "{ok}");
        }
        for bad in [
            "http://localhost.evil.com",
            "http://example.com",
            "null",
            "http://127.0.0.1:abc",
            "file://x",
        ] {
            assert!(!is_loopback_origin(bad), "{bad}");
        }
    }
}
