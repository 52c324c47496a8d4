//! The health of a running service: its phase, each dependency's last check and each tool's
//! statistics, answered at once from what is already known.
//!
//! Dependency checks never run inside a GET /health request. They run in the background: at
//! start, every `monitoring.health_check_interval`, and whenever a provider says its state
//! changed (an MCP server died or came back) or the tool set was rebuilt. Each provider's check
//! is its own task, bounded by [`CHECK_BUDGET`], and stores its result with `checked_at` as it
//! finishes, so one dependency that never answers holds up no other. A check asked for while
//! one of the same provider runs is run again right after it, so a change is never hidden by
//! a check that started before it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use contract::{
    ClashResolution, DependencyState, DependencyStatus, HealthResponse, HealthStatus, NameConflict,
    ToolHealth, ToolStatus,
};
use tokio::sync::{Notify, watch};

use super::Service;
use super::lifecycle::Phase;
use super::resilience::BreakerState;
use crate::provider::Provider;
use crate::sync::Unpoisoned;

/// How long one dependency check may take; past it the dependency is `unknown`.
const CHECK_BUDGET: Duration = Duration::from_secs(1);
/// How soon a dependency whose last check was `unknown` is checked again.
const UNKNOWN_RECHECK: Duration = Duration::from_secs(2);
/// Calls ask for a check at most this often (see [`Service::after_call`]).
const CALL_HINT_SPACING: Duration = Duration::from_secs(1);

/// The last result of every dependency check, and the checks running now.
pub(super) struct Checks {
    /// By dependency name.
    results: RwLock<BTreeMap<String, DependencyStatus>>,
    /// By provider name: a check is running; `true` when another was asked for meanwhile.
    running: Mutex<HashMap<String, bool>>,
    /// Providers (and the service, on a rebuild) say here that a dependency's state changed.
    pub(super) changed: Arc<Notify>,
    /// Bumped at each stored result (start waits for the first round with it).
    stored: watch::Sender<u64>,
    /// Whether every dependency was connected at the last check (read on every call).
    all_connected: AtomicBool,
    /// Calls say here that a check may be due (taken at most once a second).
    hinted: Notify,
}

impl Checks {
    /// Whether some dependency's last check gave no verdict within its budget.
    fn any_unknown(&self) -> bool {
        self.results
            .read_unpoisoned()
            .values()
            .any(|s| s.status == DependencyState::Unknown)
    }
}

impl Default for Checks {
    fn default() -> Self {
        Checks {
            results: RwLock::default(),
            running: Mutex::default(),
            changed: Arc::new(Notify::new()),
            stored: watch::channel(0).0,
            all_connected: AtomicBool::new(true),
            hinted: Notify::new(),
        }
    }
}

impl Service {
    /// The report GET /health answers: no I/O, no waiting.
    pub fn health(&self) -> HealthResponse {
        let toolset = self.toolset();
        let dependencies: BTreeMap<String, DependencyStatus> = {
            let results = self.checks.results.read_unpoisoned();
            toolset
                .providers
                .iter()
                .map(|p| {
                    let name = p.dependency_name();
                    let status = results.get(name).cloned().unwrap_or_else(not_checked_yet);
                    (name.to_owned(), status)
                })
                .collect()
        };
        let stats = self.stats.snapshot();
        let settings = self.settings();
        let tools: BTreeMap<String, ToolHealth> = toolset
            .registry
            .tools()
            .iter()
            .filter_map(|tool| {
                let entry = toolset.registry.get(&tool.name)?;
                let dependency = entry
                    .provider
                    .needs_dependency(&entry.upstream)
                    .then(|| dependencies.get(entry.provider.dependency_name()))
                    .flatten()
                    .map(|d| d.status);
                // An open circuit refuses the tool's calls, whatever the last check said.
                let circuit_open = toolset
                    .plans
                    .get(&tool.name)
                    .is_some_and(|p| p.resilience.breaker.report().state == BreakerState::Open);
                let dependency = if circuit_open {
                    Some(DependencyState::Unavailable)
                } else {
                    dependency
                };
                let numbers = stats.get(&tool.name).cloned().unwrap_or_default();
                let mut health = numbers.to_health(dependency);
                health.top_callers = numbers
                    .top_callers
                    .iter()
                    .map(|(client, calls)| contract::ToolCaller {
                        client: public_name(&settings, client),
                        calls: *calls,
                    })
                    .collect();
                Some((tool.name.clone(), health))
            })
            .collect();
        let conflicts: Vec<NameConflict> = toolset
            .registry
            .conflicts()
            .iter()
            .map(|c| c.0.clone())
            .collect();
        let providers = self.provider_reports(&toolset.providers);
        let phase = self.lifecycle.phase();
        let status = match phase {
            // A tool left out by a clash is a configured tool not served.
            Phase::Running => match overall(&dependencies, &tools) {
                HealthStatus::Healthy
                    if conflicts
                        .iter()
                        .any(|c| c.resolution == ClashResolution::KeptFirst) =>
                {
                    HealthStatus::Degraded
                }
                HealthStatus::Healthy if self.cluster.as_ref().is_some_and(|c| c.down()) => {
                    HealthStatus::Degraded
                }
                status => status,
            },
            _ => HealthStatus::Unavailable,
        };
        let state = match (phase, status) {
            (Phase::Initializing, _) => "INITIALIZING",
            (Phase::Running, HealthStatus::Healthy) => "HEALTHY",
            (Phase::Running, HealthStatus::Degraded) => "DEGRADED",
            (Phase::Running, HealthStatus::Unavailable) => "UNAVAILABLE",
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
            queued_calls: self.admission.waiting(),
            dependencies,
            tool_count: tools.len() as u64,
            tools,
            conflicts,
            providers,
            cluster: self.cluster.as_ref().map(|c| c.report()),
            clients: Some(self.clients_report()),
        }
    }

    /// What the clients hold, with the five holding the most.
    fn clients_report(&self) -> contract::ClientsReport {
        let settings = self.settings();
        let mcp = &settings.config.mcp;
        let (clients, top) = self.client_load.top(5);
        contract::ClientsReport {
            clients,
            sessions: self.metrics.live_sessions(),
            max_sessions: mcp.max_sessions,
            sessions_elsewhere: self
                .cluster
                .as_ref()
                .map_or(0, |c| c.all_sessions_elsewhere()),
            max_sessions_per_client: mcp.sessions_per_client(),
            max_streams_per_client: mcp.streams_per_client(),
            top: top
                .into_iter()
                .map(|(name, held)| contract::ClientHoldings {
                    client: public_name(&settings, &name),
                    sessions: held.sessions,
                    streams: held.streams,
                    calls: held.calls,
                })
                .collect(),
        }
    }

    /// Each entry of `providers`: the running ones with their kind (and index), and those a
    /// `when` left out, with the reason.
    fn provider_reports(
        &self,
        running: &[Arc<dyn Provider>],
    ) -> BTreeMap<String, contract::ProviderReport> {
        let settings = self.settings();
        let config = &settings.config;
        let reason = |name: &str| {
            config
                .choices
                .iter()
                .find(|c| c.name == name)
                .map(|c| c.reason.clone())
        };
        let mut out: BTreeMap<String, contract::ProviderReport> = config
            .provider_entries()
            .map(|entry| {
                let name = entry.name().to_string();
                let provider = running.iter().find(|p| p.name() == name);
                let mut report = contract::ProviderReport::new(entry.kind(), true, reason(&name));
                let own = provider.map(|p| p.report()).unwrap_or_default();
                report.index = own.index;
                report.instances = own.instances;
                report.endpoints = own.endpoints;
                if let Some(connection) = own.state {
                    report = report.with_connection(connection);
                }
                report.resilience = provider
                    .and_then(|_| self.resilience.get(&name))
                    .map(|r| r.report());
                (name, report)
            })
            .collect();
        for left_out in config.choices.iter().filter(|c| !c.serving) {
            out.insert(
                left_out.name.clone(),
                contract::ProviderReport::new(left_out.kind, false, Some(left_out.reason.clone())),
            );
        }
        out
    }

    /// What a call's end tells: its statistics, and whether the dependencies should be checked
    /// now. A call that went through while some dependency is recorded down, or that failed
    /// (the database or API behind it may have gone), is the first sign of a change for the
    /// kinds that have no connection to watch (Bolt, HTTP); the check it asks for is the one
    /// that decides. Hints are taken once a second at most (a hint meanwhile waits, it is
    /// not lost), so a storm of failing calls costs one check round a second.
    pub(super) fn after_call<T>(
        &self,
        tool: &str,
        request_id: &str,
        started: Instant,
        result: &Result<T, super::CallFailure>,
    ) {
        self.stats.record_call(tool, request_id, started, result);
        if let Some(cluster) = &self.cluster {
            // Counted as `stats` counts: what never ran is not a call.
            let counted = result
                .as_ref()
                .err()
                .map(|f| super::stats::Counted::of(f.code));
            if counted != Some(super::stats::Counted::NotRun) {
                cluster.count_call(tool, counted == Some(super::stats::Counted::Failure));
            }
        }
        let hint = match result {
            Ok(_) => !self.checks.all_connected.load(Ordering::Relaxed),
            Err(failure) => {
                super::stats::Counted::of(failure.code) == super::stats::Counted::Failure
            }
        };
        if hint {
            self.checks.hinted.notify_one();
        }
    }

    /// Checks every dependency now, then every `monitoring.health_check_interval` and on every
    /// change a provider reports, until the service drains.
    pub(super) async fn watch_dependencies(self: Arc<Self>) {
        let mut hints_from = tokio::time::Instant::now();
        loop {
            // A change said before this check starts is seen by it: drop the stored permit, or
            // every start would check twice and /health would move on its own.
            let _ = futures::FutureExt::now_or_never(self.checks.changed.notified());
            self.check_dependencies();
            let mut every = self.settings().config.monitoring.health_check_interval;
            if self.checks.any_unknown() {
                // A check that ran out of its budget is no verdict: ask again soon rather than
                // leave /health saying `unknown` for a whole interval.
                every = every.min(UNKNOWN_RECHECK);
            }
            let hint = async {
                tokio::time::sleep_until(hints_from).await;
                self.checks.hinted.notified().await;
            };
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = self.checks.changed.notified() => {}
                _ = hint => hints_from = tokio::time::Instant::now() + CALL_HINT_SPACING,
                _ = self.drain.cancelled() => return,
            }
        }
    }

    /// Waits (at most one check budget) until every provider's dependency has been checked once.
    pub(super) async fn first_checks_done(&self) {
        let mut stored = self.checks.stored.subscribe();
        let providers = self.toolset().providers.clone();
        let all_checked = |_: &u64| {
            let results = self.checks.results.read_unpoisoned();
            providers
                .iter()
                .all(|p| results.contains_key(p.dependency_name()))
        };
        let waited = tokio::time::timeout(
            CHECK_BUDGET + Duration::from_millis(250),
            stored.wait_for(all_checked),
        )
        .await;
        drop(waited);
    }

    /// Starts a check of each provider's dependency, or asks a running one to go again.
    fn check_dependencies(self: &Arc<Self>) {
        for provider in self.toolset().providers.iter() {
            {
                let mut running = self.checks.running.write_unpoisoned();
                if let Some(again) = running.get_mut(provider.name()) {
                    *again = true;
                    continue;
                }
                running.insert(provider.name().to_owned(), false);
            }
            let service = self.clone();
            let provider = provider.clone();
            self.drain.spawn(async move {
                loop {
                    let started = std::time::Instant::now();
                    let reports = check(&provider).await;
                    let took = started.elapsed();
                    for (name, status) in &reports {
                        let connected = status.status == DependencyState::Connected;
                        service.metrics.dependency_checked(name, took, connected);
                    }
                    service.store(reports);
                    let mut running = service.checks.running.write_unpoisoned();
                    match running.get_mut(provider.name()) {
                        Some(again) if *again => *again = false,
                        _ => {
                            running.remove(provider.name());
                            return;
                        }
                    }
                }
            });
        }
    }

    /// Keeps a check's results and logs each change of state, so an outage shows in the log
    /// when it happens, whether anybody asks /health or not.
    fn store(&self, reports: Vec<(String, DependencyStatus)>) {
        let mut results = self.checks.results.write_unpoisoned();
        for (name, mut status) in reports {
            status.checked_at = Some(crate::clock::timestamp());
            let previous = results.get(&name);
            if status.last_ok.is_none() {
                status.last_ok = previous.and_then(|p| p.last_ok.clone());
            }
            let before = previous.map(|s| s.status);
            if before.is_some_and(|b| b != DependencyState::Connected)
                && status.status == DependencyState::Connected
            {
                // What failed was the upstream that went away: its breaker probes the new one.
                for provider in self.toolset().providers.iter() {
                    if provider.dependency_name() == name
                        && let Some(contained) = self.resilience.get(provider.name())
                    {
                        contained.breaker.upstream_back();
                    }
                }
            }
            if before != Some(status.status)
                && (before.is_some() || status.status != DependencyState::Connected)
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
            results.insert(name, status);
        }
        // Dependencies of providers a reload removed are forgotten.
        let providers = self.toolset().providers.clone();
        results.retain(|name, _| providers.iter().any(|p| p.dependency_name() == name));
        let all_connected = results
            .values()
            .all(|s| s.status == DependencyState::Connected);
        self.checks
            .all_connected
            .store(all_connected, Ordering::Relaxed);
        drop(results);
        self.checks.stored.send_modify(|n| *n += 1);
    }
}

/// The service's status while running, as the seeds define it: `unavailable` when no tool can
/// run (every tool's dependency is unavailable, or there are no tools and a dependency is
/// down), `degraded` when some tool cannot run or some dependency is not known to be
/// connected, `healthy` otherwise. A tool degraded by its error rate can still run: it does
/// not change the service's status.
fn overall(
    dependencies: &BTreeMap<String, DependencyStatus>,
    tools: &BTreeMap<String, ToolHealth>,
) -> HealthStatus {
    let down = |s: DependencyState| s == DependencyState::Unavailable;
    let can_run = tools
        .values()
        .filter(|t| t.status != ToolStatus::Unavailable)
        .count();
    let no_tool_can_run = if tools.is_empty() {
        dependencies.values().any(|d| down(d.status))
    } else {
        can_run == 0
    };
    if no_tool_can_run {
        HealthStatus::Unavailable
    } else if can_run < tools.len()
        || dependencies
            .values()
            .any(|d| d.status != DependencyState::Connected)
    {
        HealthStatus::Degraded
    } else {
        HealthStatus::Healthy
    }
}

/// A provider's dependency check, within [`CHECK_BUDGET`]; a check that takes longer is
/// `unknown`, and logged now.
async fn check(provider: &Arc<dyn Provider>) -> Vec<(String, DependencyStatus)> {
    let started = Instant::now();
    match tokio::time::timeout(CHECK_BUDGET, provider.health()).await {
        Ok(reports) => reports,
        Err(_) => {
            let error = format!(
                "no answer to the health check within {} ms",
                CHECK_BUDGET.as_millis()
            );
            tracing::warn!(
                provider = provider.name(),
                dependency = provider.dependency_name(),
                "{error}"
            );
            vec![(
                provider.dependency_name().to_owned(),
                DependencyStatus {
                    status: DependencyState::Unknown,
                    response_time_ms: Some(started.elapsed().as_millis() as u64),
                    error: Some(error),
                    last_ok: None,
                    checked_at: None,
                },
            )]
        }
    }
}

/// What /health says of a dependency whose first check has not finished.
fn not_checked_yet() -> DependencyStatus {
    DependencyStatus {
        status: DependencyState::Unknown,
        response_time_ms: None,
        error: Some("not checked yet".into()),
        last_ok: None,
        checked_at: None,
    }
}

/// A client as a public document (/health) may name it: an API key by its name (configuration,
/// not a secret), an address as it is while no credential is required; an OAuth subject, and an
/// address while credentials are required, by the first 12 hex digits of its SHA-256.
fn public_name(settings: &crate::service::settings::Settings, name: &str) -> String {
    use sha2::{Digest, Sha256};
    let security = &settings.config.security;
    let digest = |kind: &str| {
        let hex: String = Sha256::digest(name.as_bytes())[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{kind}:{hex}")
    };
    if security.api_keys.iter().any(|k| k.value.name == name) {
        format!("key:{name}")
    } else if name.parse::<std::net::IpAddr>().is_err() {
        digest("sub")
    } else if security.credentials_required() {
        digest("ip")
    } else {
        format!("ip:{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::stats::ToolSnapshot;

    fn dependency(status: DependencyState) -> DependencyStatus {
        DependencyStatus {
            status,
            response_time_ms: None,
            error: None,
            last_ok: None,
            checked_at: None,
        }
    }

    fn tool(status: ToolStatus) -> ToolHealth {
        ToolSnapshot::default().to_health(match status {
            ToolStatus::Unavailable => Some(DependencyState::Unavailable),
            ToolStatus::Degraded => Some(DependencyState::Unknown),
            ToolStatus::Healthy => Some(DependencyState::Connected),
        })
    }

    fn status(deps: &[DependencyState], tools: &[ToolStatus]) -> HealthStatus {
        let deps = deps
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("d{i}"), dependency(*s)))
            .collect();
        let tools = tools
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("t{i}"), tool(*s)))
            .collect();
        overall(&deps, &tools)
    }

    #[test]
    fn the_service_is_unavailable_only_when_no_tool_can_run() {
        use DependencyState::*;
        use ToolStatus as T;
        assert_eq!(status(&[Connected], &[T::Healthy]), HealthStatus::Healthy);
        assert_eq!(
            status(&[Connected, Unavailable], &[T::Healthy, T::Unavailable]),
            HealthStatus::Degraded
        );
        assert_eq!(
            status(
                &[Unavailable, Unavailable],
                &[T::Unavailable, T::Unavailable]
            ),
            HealthStatus::Unavailable
        );
        // No tools because the only provider is down.
        assert_eq!(status(&[Unavailable], &[]), HealthStatus::Unavailable);
        // A provider down that offered no tools still degrades the others.
        assert_eq!(
            status(&[Connected, Unavailable], &[T::Healthy]),
            HealthStatus::Degraded
        );
        // Unknown is not down: its tools may run.
        assert_eq!(status(&[Unknown], &[T::Degraded]), HealthStatus::Degraded);
        assert_eq!(status(&[Unknown], &[]), HealthStatus::Degraded);
        // Nothing configured, nothing broken.
        assert_eq!(status(&[], &[]), HealthStatus::Healthy);
    }

    #[test]
    fn a_tool_degraded_by_its_errors_leaves_the_service_healthy() {
        let mut noisy = tool(ToolStatus::Healthy);
        noisy.status = ToolStatus::Degraded;
        let deps = BTreeMap::from([("d".to_owned(), dependency(DependencyState::Connected))]);
        let tools = BTreeMap::from([("t".to_owned(), noisy)]);
        assert_eq!(overall(&deps, &tools), HealthStatus::Healthy);
    }
}
