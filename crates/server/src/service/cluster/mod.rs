//! The state replicas of one service share through Redis (`cluster` in the configuration):
//! the connection and what /health and /metrics say of it. The shared things themselves have
//! a file each: [`rate`] (the rate limit, exact across replicas), [`usage`] (call counters),
//! [`sessions`] (MCP session records), [`tasks`] (task records, read by any replica),
//! [`forward`] (requests sent on to the replica holding their session or task) and
//! [`replicas`] (which replicas are up).
//!
//! Every command runs under `cluster.timeout_ms`; a failure or a timeout marks Redis down
//! (loudly: a warning on the change, /health's `cluster.redis`, the metrics), and the next
//! success marks it up again. A background loop pings every second, so recovery is seen
//! without traffic.

mod clients;
pub mod forward;
pub mod rate;
mod replicas;
pub mod results;
pub mod sessions;
pub mod tasks;
pub mod usage;
mod writes;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use contract::{ClusterReport, RedisState, ReplicaReport, ToolUsage};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::config::{
    ClusterSection, EnvError, OnRedisError, RedisUrlError, check_redis_url, expand_env, redact,
};
use crate::service::client_load::ClientLoad;
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

use self::writes::Writes;

/// Every key of this gateway starts with this, then `{service}:`.
const KEY_PREFIX: &str = "mcp-http-gateway";

/// How often the background loop pings Redis and reads the shared usage counters.
const WATCH_PERIOD: Duration = Duration::from_secs(1);

/// Why the cluster could not be set up, or a command failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cluster.redis_url: {0}")]
    Env(#[from] EnvError),
    #[error("cluster.redis_url: {0}")]
    Url(#[from] RedisUrlError),
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("redis did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the service has not started: no connection to redis yet")]
    NotConnected,
    #[error("redis answered something unexpected: {0}")]
    Answer(String),
}

/// This replica's link to the shared state.
pub struct Cluster {
    service: String,
    replica_id: String,
    /// `host:port` where the other replicas reach this one (`cluster.advertise`, else where
    /// it serves), in MCP session and task records.
    address: String,
    /// `cluster.redis_url` as written (`${VAR}` not expanded).
    configured_url: String,
    /// The expanded URL without its credentials, once connected.
    redis_url: OnceLock<String>,
    pub on_error: OnRedisError,
    timeout: Duration,
    /// Set by [`Cluster::connect`] when the service starts.
    connection: OnceLock<ConnectionManager>,
    link: Mutex<Link>,
    /// `link.state == Connected`, readable without the lock: a command that succeeds while
    /// Redis is known up (every request's, in steady state) changes nothing and takes no lock.
    connected: AtomicBool,
    errors: AtomicU64,
    /// The shared usage totals, as last read.
    usage: Mutex<BTreeMap<String, ToolUsage>>,
    writes: Writes,
    forwarding: forward::Forwarding,
    /// This replica's holdings per client, whose sessions it shares ([`clients`]).
    client_load: OnceLock<Arc<ClientLoad>>,
    /// The other replicas' sessions per client, as last read.
    sessions_elsewhere: Mutex<HashMap<String, u64>>,
    /// When this replica started (RFC 3339), in its record of [`replicas`].
    started_at: String,
    /// Every replica's record, as last read ([`replicas`]).
    replicas: Mutex<Vec<ReplicaReport>>,
}

/// Whether Redis answers, as last seen.
struct Link {
    state: RedisState,
    since: Option<DateTime<Utc>>,
    last_error: Option<(String, DateTime<Utc>)>,
}

impl Cluster {
    /// Reads the section; nothing is expanded or connected until [`Cluster::connect`] (so
    /// `check-config` needs neither the environment's secrets nor a runtime). `host`/`port`
    /// are where this replica serves.
    pub fn new(service: &str, config: &ClusterSection, host: &str, port: u16) -> Arc<Cluster> {
        let replica_id = config
            .replica_id
            .clone()
            .unwrap_or_else(|| format!("{}:{port}", hostname()));
        Arc::new(Cluster {
            service: service.to_owned(),
            replica_id,
            address: config
                .advertise
                .clone()
                .unwrap_or_else(|| format!("{host}:{port}")),
            configured_url: config.redis_url.clone(),
            redis_url: OnceLock::new(),
            on_error: config.rate_limit_on_redis_error,
            timeout: config.timeout,
            connection: OnceLock::new(),
            link: Mutex::new(Link {
                state: RedisState::Unknown,
                since: None,
                last_error: None,
            }),
            connected: AtomicBool::new(false),
            errors: AtomicU64::new(0),
            usage: Mutex::default(),
            writes: Writes::default(),
            forwarding: forward::Forwarding::default(),
            client_load: OnceLock::new(),
            sessions_elsewhere: Mutex::default(),
            started_at: crate::clock::format(Utc::now()),
            replicas: Mutex::default(),
        })
    }

    /// Shares the sessions per client that `load` counts with the other replicas.
    pub fn share_sessions_of(&self, load: Arc<ClientLoad>) {
        let _ = self.client_load.set(load);
    }

    /// Expands the URL and makes the connection manager, which connects lazily (at the first
    /// command): a replica starts, and serves, while Redis is down. Needs the runtime.
    pub fn connect(&self) -> Result<(), ClusterError> {
        let url = expand_env(&self.configured_url)?;
        check_redis_url(&url)?;
        let client = redis::Client::open(url.as_str())?;
        // One reconnect attempt per command: the command's own timeout bounds the wait, and
        // the next command (or the watch loop's ping) tries again.
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1)
            .set_max_delay(self.timeout);
        let connection = ConnectionManager::new_lazy_with_config(client, manager)?;
        let _ = self.redis_url.set(redact(&url));
        let _ = self.connection.set(connection);
        if self.address.starts_with("0.0.0.0:") || self.address.starts_with("[::]:") {
            tracing::warn!(
                service = %self.service, replica = %self.replica_id,
                "this replica serves on {} and has no cluster.advertise: the others cannot forward session requests or task cancels to it",
                self.address
            );
        }
        Ok(())
    }

    pub fn replica_id(&self) -> &str {
        &self.replica_id
    }

    /// Where the other replicas reach this one (`host:port`), for the records that name it.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Where this replica's service keeps `kind` of things: `mcp-http-gateway:{service}:{kind}:{rest}`.
    fn key(&self, kind: &str, rest: &str) -> String {
        format!("{KEY_PREFIX}:{}:{kind}:{rest}", self.service)
    }

    /// Every hash of `kind` (`…:{kind}:*`): the rest of its key (a replica's id) and its fields.
    /// Each replica's records of one kind are few, so KEYS is cheap here.
    async fn hashes_of<V: redis::FromRedisValue + Send + 'static>(
        &self,
        kind: &str,
    ) -> Result<Vec<(String, HashMap<String, V>)>, ClusterError> {
        let pattern = self.key(kind, "*");
        let keys = self
            .run(|mut c| async move {
                redis::cmd("KEYS")
                    .arg(pattern)
                    .query_async::<Vec<String>>(&mut c)
                    .await
            })
            .await?;
        let prefix = self.key(kind, "");
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            let rest = key.strip_prefix(&prefix).unwrap_or(&key).to_owned();
            let fields = self
                .run(|mut c| async move {
                    redis::cmd("HGETALL")
                        .arg(key)
                        .query_async::<HashMap<String, V>>(&mut c)
                        .await
                })
                .await?;
            // Gone between KEYS and HGETALL.
            if !fields.is_empty() {
                out.push((rest, fields));
            }
        }
        Ok(out)
    }

    /// Runs one command (or pipeline, or script) under the timeout, recording the outcome.
    async fn run<T, F, Fut>(&self, op: F) -> Result<T, ClusterError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = Result<T, redis::RedisError>>,
    {
        let Some(connection) = self.connection.get() else {
            return Err(ClusterError::NotConnected);
        };
        let result = match tokio::time::timeout(self.timeout, op(connection.clone())).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(ClusterError::Redis(e)),
            Err(_) => Err(ClusterError::Timeout(self.timeout)),
        };
        match &result {
            Ok(_) if self.connected.load(Ordering::Acquire) => {}
            Ok(_) => self.mark(RedisState::Connected, None),
            Err(e) => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                self.mark(RedisState::Down, Some(e.to_string()));
            }
        }
        result
    }

    fn mark(&self, state: RedisState, error: Option<String>) {
        let now = Utc::now();
        let mut link = self.link.write_unpoisoned();
        if let Some(error) = error {
            link.last_error = Some((error, now));
        }
        if link.state == state {
            return;
        }
        let was = link.state;
        link.state = state;
        self.connected
            .store(state == RedisState::Connected, Ordering::Release);
        link.since = Some(now);
        let last_error = link.last_error.as_ref().map(|(e, _)| e.clone());
        drop(link);
        match state {
            RedisState::Down => tracing::warn!(
                service = %self.service, replica = %self.replica_id, redis = %self.shown_url(),
                error = last_error.as_deref().unwrap_or(""),
                rate_limit = self.on_error.as_str(),
                "redis is down: the rate limit fails {}, usage counts and session records wait",
                self.on_error.as_str()
            ),
            _ if was == RedisState::Down => tracing::info!(
                service = %self.service, replica = %self.replica_id, redis = %self.shown_url(),
                "redis is back"
            ),
            _ => tracing::info!(
                service = %self.service, replica = %self.replica_id, redis = %self.shown_url(),
                "connected to redis"
            ),
        }
    }

    /// The URL for logs and /health: expanded once connected, never with credentials.
    fn shown_url(&self) -> String {
        self.redis_url
            .get()
            .cloned()
            .unwrap_or_else(|| redact(&self.configured_url))
    }

    /// Whether the last command reached Redis.
    pub fn up(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    /// Whether the last command failed (not before the first one).
    pub fn down(&self) -> bool {
        self.link.write_unpoisoned().state == RedisState::Down
    }

    /// Writes dropped because Redis was too slow to take them.
    pub fn dropped_writes(&self) -> u64 {
        self.writes.dropped()
    }

    /// Commands that failed or timed out since start.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// `cluster` of GET /health.
    pub fn report(&self) -> ClusterReport {
        let link = self.link.write_unpoisoned();
        ClusterReport {
            replica_id: self.replica_id.clone(),
            redis_url: self.shown_url(),
            redis: link.state,
            since: link.since.map(crate::clock::format),
            last_error: link.last_error.as_ref().map(|(e, _)| e.clone()),
            last_error_at: link
                .last_error
                .as_ref()
                .map(|(_, at)| crate::clock::format(*at)),
            redis_errors: self.errors(),
            rate_limit_on_redis_error: self.on_error.as_str().to_owned(),
            usage: self.usage.write_unpoisoned().clone(),
            replicas: self.replicas_report(),
        }
    }

    /// Pings Redis and reads the shared usage every second (and the replicas' forwarding
    /// secret, until read), and writes what requests queued
    /// as soon as it is queued (in one pipeline per batch), until `drain`. Writes go on until
    /// `stopped`, then are flushed once more: what ends while the service drains (its tasks,
    /// cancelled then, its sessions) still reaches Redis.
    pub fn watch(self: &Arc<Self>, drain: &Shutdown, stopped: &Shutdown) {
        let cluster = self.clone();
        let stop = drain.clone();
        let stopped = stopped.clone();
        drain.spawn(async move {
            let mut tick = tokio::time::interval(WATCH_PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tick.tick() => {
                        let pinged = cluster
                            .run(|mut c| async move {
                                redis::cmd("PING").query_async::<String>(&mut c).await
                            })
                            .await;
                        if pinged.is_ok() {
                            cluster.read_usage().await;
                            cluster.share_client_sessions().await;
                            cluster.share_replicas().await;
                            cluster.read_forward_secret().await;
                        }
                    }
                    _ = cluster.writes.wanted() => cluster.flush().await,
                }
            }
            cluster.withdraw().await;
            loop {
                tokio::select! {
                    _ = stopped.cancelled() => break,
                    _ = cluster.writes.wanted() => cluster.flush().await,
                }
            }
            cluster.flush().await;
        });
    }
}

/// This machine's name, for the default replica id.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "replica".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_expanded_or_connected_before_start() {
        let config: ClusterSection =
            serde_saphyr::from_str("redis_url: \"${MHG_TEST_UNSET_REDIS_URL}\"\n").unwrap();
        // Outside a runtime, as check-config builds a service: nothing may connect.
        let cluster = Cluster::new("s", &config, "127.0.0.1", 8000);
        let report = cluster.report();
        assert_eq!(report.redis, RedisState::Unknown);
        assert!(report.replica_id.ends_with(":8000"), "{report:?}");
        assert_eq!(cluster.address, "127.0.0.1:8000");
        assert_eq!(report.redis_url, "${MHG_TEST_UNSET_REDIS_URL}");
        assert!(matches!(cluster.connect(), Err(ClusterError::Env(_))));
    }

    #[test]
    fn the_address_in_session_records_is_the_advertised_one_when_given() {
        let advertised: ClusterSection =
            serde_saphyr::from_str("redis_url: redis://h\nadvertise: 10.0.0.5:9000\n").unwrap();
        let cluster = Cluster::new("s", &advertised, "0.0.0.0", 8000);
        assert_eq!(cluster.address, "10.0.0.5:9000");
    }
}
