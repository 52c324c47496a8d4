//! The health of a running service: its phase and each dependency's state, checked on demand
//! (shared by the requests of one second) and in the background, where changes are logged.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use contract::{DependencyState, DependencyStatus, HealthResponse, HealthStatus};

use super::Service;
use super::lifecycle::Phase;
use super::metrics::ServiceMetrics;
use super::toolset::ToolSet;
use crate::provider::Provider;

/// How long one dependency check may take when /health asks.
const CHECK_BUDGET: Duration = Duration::from_secs(1);
/// Dependency checks are shared by the GET /health requests of this long: under load the
/// endpoint answers from one check per second instead of pinging every upstream per request.
const CHECK_SHARED_FOR: Duration = Duration::from_secs(1);

/// The last dependency checks: when, for which tool set, what they said.
pub(super) struct LastChecks {
    at: Instant,
    toolset: Arc<ToolSet>,
    dependencies: BTreeMap<String, DependencyStatus>,
}

impl Service {
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
        let dependencies = check_all(&self.metrics, &toolset.providers).await;
        *last = Some(LastChecks {
            at: Instant::now(),
            toolset,
            dependencies: dependencies.clone(),
        });
        dependencies
    }

    /// Checks the dependencies every `monitoring.health_check_interval` seconds and logs each
    /// change of state, so an outage shows in the log even when nobody asks /health.
    pub(super) async fn watch_dependencies(self: Arc<Self>) {
        let mut last: BTreeMap<String, DependencyState> = BTreeMap::new();
        loop {
            let every = self.settings().config.monitoring.health_check_interval;
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = self.drain.cancelled() => return,
            }
            if self.lifecycle.phase() != Phase::Running {
                return;
            }
            let providers = self.toolset().providers.clone();
            for (name, status) in check_all(&self.metrics, &providers).await {
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
}

/// Checks every provider's dependencies at once, each within [`CHECK_BUDGET`]; a check that
/// takes longer is reported `unknown`. Each check's duration and verdict go to the metrics.
async fn check_all(
    metrics: &ServiceMetrics,
    providers: &[Arc<dyn Provider>],
) -> BTreeMap<String, DependencyStatus> {
    let checks = providers.iter().map(|p| async move {
        let started = Instant::now();
        let reports = match tokio::time::timeout(CHECK_BUDGET, p.health()).await {
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
        };
        let took = started.elapsed();
        for (name, status) in &reports {
            metrics.dependency_checked(name, took, status.status == DependencyState::Connected);
        }
        reports
    });
    futures::future::join_all(checks)
        .await
        .into_iter()
        .flatten()
        .collect()
}
