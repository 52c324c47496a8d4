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
}

/// Serves every configured service until SIGTERM or SIGINT, then drains and stops.
pub async fn run(source: ConfigSource, configs: Vec<ServiceConfig>) -> Result<(), RuntimeError> {
    let mut terminate = signal(SignalKind::terminate()).map_err(RuntimeError::Signals)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(RuntimeError::Signals)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(RuntimeError::Signals)?;

    let root = Shutdown::default();
    let drain = root.child();
    let services: Vec<Arc<Service>> = configs
        .into_iter()
        .map(|config| Service::new(config, drain.child(), root.child()))
        .collect::<Result<_, _>>()?;
    let mut servers = Vec::new();
    for service in &services {
        let addr = service.settings().config.address();
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|error| RuntimeError::Bind {
                service: service.name.clone(),
                addr: addr.clone(),
                error,
            })?;
        let local = listener.local_addr().map_err(|error| RuntimeError::Bind {
            service: service.name.clone(),
            addr: addr.clone(),
            error,
        })?;
        tracing::info!(service = %service.name, addr = %local, "listening (initializing)");
        let app = crate::http::router(service.clone());
        servers.push(root.spawn(serve::serve(listener, service.clone(), app, drain.clone())));
    }

    let starting = futures::future::try_join_all(services.iter().map(|s| s.start()));
    tokio::pin!(starting);
    // A signal during start-up stops at once; a start-up failure stops with its error.
    enum Start {
        Done,
        Signalled(&'static str),
        Failed(ServiceError),
    }
    let start = tokio::select! {
        result = &mut starting => match result {
            Ok(_) => Start::Done,
            Err(e) => Start::Failed(e),
        },
        _ = terminate.recv() => Start::Signalled("SIGTERM"),
        _ = interrupt.recv() => Start::Signalled("SIGINT"),
    };
    match start {
        Start::Failed(e) => {
            shutdown(&services, &root, &drain, servers).await;
            return Err(e.into());
        }
        Start::Signalled(signal) => tracing::info!("{signal} while starting: draining"),
        Start::Done => loop {
            tokio::select! {
                _ = terminate.recv() => { tracing::info!("SIGTERM: draining"); break; }
                _ = interrupt.recv() => { tracing::info!("SIGINT: draining"); break; }
                _ = hangup.recv() => reload(&source, &services).await,
            }
        },
    }
    shutdown(&services, &root, &drain, servers).await;
    Ok(())
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
