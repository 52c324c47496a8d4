//! Running services: binding each to its address, serving until a signal, reloading on
//! SIGHUP, and draining on SIGTERM/SIGINT within the grace period before stopping providers.
//!
//! Shutdown is one mechanism ([`crate::shutdown::Shutdown`]): the root's `drain` child stops the
//! listeners, MCP sessions and background loops; then the root stops the providers; then every
//! tracked task is awaited.

mod serve;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};

use crate::config::{self, ConfigError, ServiceConfig};
use crate::service::{Service, ServiceError};
use crate::shutdown::Shutdown;

/// How long tracked tasks get to end once everything was told to stop.
const TASKS_GRACE: Duration = Duration::from_secs(2);

/// Where the configuration came from, so SIGHUP can read it again.
#[derive(Debug, Clone)]
pub enum ConfigSource {
    File(PathBuf),
    Dir(PathBuf),
}

impl ConfigSource {
    pub fn load(&self) -> Result<Vec<ServiceConfig>, ConfigError> {
        match self {
            ConfigSource::File(path) => Ok(vec![ServiceConfig::load(path)?]),
            ConfigSource::Dir(dir) => config::load_dir(dir),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Service(#[from] ServiceError),
    // `error`, not `source`: the message already says it, and a source would print it twice.
    #[error("service '{service}': cannot listen on {addr}: {error}")]
    Bind {
        service: String,
        addr: String,
        error: std::io::Error,
    },
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("no service started ({failed} could not; each is in the log)")]
    NoneStarted { failed: usize },
}

/// What `serve` does when a service cannot start (it cannot be built, cannot bind its address,
/// or its tool names clash).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StartPolicy {
    /// The failure is logged, that service's port is closed, and the others keep serving; the
    /// process exits 1 only when no service started.
    #[default]
    KeepOthers,
    /// Any failure stops every service and the process exits 1 (`serve --strict`).
    Strict,
}

/// Serves every configured service until SIGTERM or SIGINT, then drains and stops. A service
/// that cannot start is handled by `policy`.
pub async fn run(
    source: ConfigSource,
    configs: Vec<ServiceConfig>,
    policy: StartPolicy,
) -> Result<(), RuntimeError> {
    let mut terminate = signal(SignalKind::terminate()).map_err(RuntimeError::Signals)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(RuntimeError::Signals)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(RuntimeError::Signals)?;

    let root = Shutdown::default();
    let drain = root.child();
    let mut failures = Failures {
        configured: configs.len(),
        policy,
        failed: Vec::new(),
    };
    let mut services: Vec<Arc<Service>> = Vec::new();
    for config in configs {
        match Service::new(config, drain.child(), root.child()) {
            Ok(service) => services.push(service),
            Err(e) => failures.add(e.into())?,
        }
    }
    let mut servers = Vec::new();
    let mut listening = Vec::new();
    for service in services {
        match bind(&service).await {
            Ok(listener) => {
                let app = app(&service);
                // The service's own drain: a service that fails to start closes its port alone.
                let stopped = service.drain().clone();
                servers.push(root.spawn(serve::serve(listener, service.clone(), app, stopped)));
                listening.push(service);
            }
            Err(e) => {
                if let Err(e) = failures.add(e) {
                    shutdown(&listening, &root, &drain, servers).await;
                    return Err(e);
                }
            }
        }
    }
    let services = listening;

    let starting = futures::future::join_all(services.iter().map(|s| s.start()));
    tokio::pin!(starting);
    // A signal during start-up stops at once; start-up failures are judged by the policy.
    let started = tokio::select! {
        results = &mut starting => Some(results),
        _ = terminate.recv() => { tracing::info!("SIGTERM while starting: draining"); None }
        _ = interrupt.recv() => { tracing::info!("SIGINT while starting: draining"); None }
    };
    let Some(results) = started else {
        shutdown(&services, &root, &drain, servers).await;
        return Ok(());
    };
    let mut running = Vec::new();
    for (service, result) in services.iter().zip(results) {
        match result {
            Ok(()) => running.push(service.clone()),
            Err(e) => {
                // Its port closes and its providers stop; the others are not touched.
                service.begin_shutdown();
                service.drain().cancel();
                service.stop_providers().await;
                if let Err(e) = failures.add(e.into()) {
                    shutdown(&services, &root, &drain, servers).await;
                    return Err(e);
                }
            }
        }
    }
    if running.is_empty() {
        shutdown(&services, &root, &drain, servers).await;
        return Err(failures.none_started());
    }
    if !failures.failed.is_empty() {
        tracing::warn!(
            running = running.len(),
            failed = failures.failed.len(),
            "serving without the services that could not start (see the errors above)"
        );
    }
    let services = running;
    loop {
        tokio::select! {
            _ = terminate.recv() => { tracing::info!("SIGTERM: draining"); break; }
            _ = interrupt.recv() => { tracing::info!("SIGINT: draining"); break; }
            _ = hangup.recv() => reload(&source, &services).await,
        }
    }
    shutdown(&services, &root, &drain, servers).await;
    Ok(())
}

/// The services that could not start, judged by the [`StartPolicy`].
struct Failures {
    configured: usize,
    policy: StartPolicy,
    failed: Vec<RuntimeError>,
}

impl Failures {
    /// Records a failure; `Err` when it stops everything (`--strict`). With one service only
    /// the error is not logged here: it is the process's error, said once by `main`.
    fn add(&mut self, error: RuntimeError) -> Result<(), RuntimeError> {
        if self.policy == StartPolicy::Strict {
            return Err(error);
        }
        if self.configured > 1 {
            tracing::error!("service not started: {error}");
        }
        self.failed.push(error);
        Ok(())
    }

    /// The error when no service started: the only one's own, else a summary.
    fn none_started(mut self) -> RuntimeError {
        if self.failed.len() == 1 {
            return self.failed.remove(0);
        }
        RuntimeError::NoneStarted {
            failed: self.failed.len(),
        }
    }
}

/// Binds the service's `host:port`.
async fn bind(service: &Service) -> Result<TcpListener, RuntimeError> {
    let addr = service.settings().config.address();
    let failed = |error| RuntimeError::Bind {
        service: service.name.clone(),
        addr: addr.clone(),
        error,
    };
    let listener = TcpListener::bind(&addr).await.map_err(failed)?;
    let local = listener.local_addr().map_err(failed)?;
    tracing::info!(service = %service.name, addr = %local, "listening (initializing)");
    Ok(listener)
}

/// Re-reads the configuration and applies it service by service; anything invalid is refused
/// with a log line and the running configuration stays.
async fn reload(source: &ConfigSource, services: &[Arc<Service>]) {
    tracing::info!("SIGHUP: reloading configuration");
    let configs = match source.load() {
        Ok(configs) => configs,
        Err(e) => {
            tracing::error!("configuration refused, keeping the running one: {e}");
            return;
        }
    };
    for config in &configs {
        if !services
            .iter()
            .any(|s| s.name == config.service.name.as_str())
        {
            tracing::warn!(service = %config.service.name, "new service in the configuration; it starts at the next restart");
        }
    }
    for service in services {
        let Some(config) = configs
            .iter()
            .find(|c| c.service.name.as_str() == service.name)
        else {
            tracing::warn!(service = %service.name, "service no longer configured; it stops at the next restart");
            continue;
        };
        if let Err(e) = service.reload(config.clone()).await {
            tracing::error!(service = %service.name, "configuration refused, keeping the running one: {e}");
        }
    }
}

/// Refuses new requests, lets in-flight ones finish within the longest grace period, then
/// stops every provider.
async fn shutdown(
    services: &[Arc<Service>],
    root: &Shutdown,
    drain: &Shutdown,
    servers: Vec<tokio::task::JoinHandle<()>>,
) {
    for service in services {
        service.begin_shutdown();
    }
    let grace = services
        .iter()
        .map(|s| s.settings().config.limits.shutdown_grace)
        .max()
        .unwrap_or_default();
    // Ends listeners, MCP session streams (so open SSE streams do not hold the drain) and
    // background loops; providers keep running for the requests still in flight.
    drain.cancel();
    if tokio::time::timeout(grace, futures::future::join_all(servers))
        .await
        .is_err()
    {
        tracing::warn!(
            grace_ms = grace.as_millis() as u64,
            "in-flight requests still running after the grace period; stopping anyway"
        );
    }
    futures::future::join_all(services.iter().map(|s| s.stop_providers())).await;
    root.cancel();
    if let Err(running) = root.wait_for_tasks(TASKS_GRACE).await {
        tracing::warn!(
            running,
            "tasks still running after shutdown; exiting anyway"
        );
    }
    tracing::info!("stopped");
}
/// What one service serves: its two surfaces side by side (REST's routes and Swagger UI, the
/// MCP endpoints), behind the HTTP layers every request goes through.
fn app(service: &Arc<Service>) -> axum::Router {
    let surfaces = crate::http::routes(service.clone()).merge(crate::mcp::router(service.clone()));
    crate::http::with_layers(surfaces, service.clone())
}
