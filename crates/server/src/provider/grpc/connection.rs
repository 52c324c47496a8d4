//! The connection to one gRPC provider and its status machine.
//!
//! ```text
//!   DISCONNECTED ──connect ok──▶ CONNECTED ──heartbeat fails / NOT_SERVING / transport fails──▶ ERROR
//!        ▲  │                        ▲                                                          │
//!        │  └─connect fails─▶ ERROR  └────────────────reconnect ok──────────────────────────────┤
//!        └──────────────── max_retries reconnects failed in a row ◀─────────────────────────────┘
//! ```
//!
//! - At start the provider is DISCONNECTED and the first attempt runs at once; a failed first
//!   attempt is ERROR like a lost connection, so a provider started a little after the gateway
//!   is picked up within the backoff.
//! - In ERROR, attempt `n` (1-based) waits `retry_backoff_ms · 2^(n-1)`, capped at 30 s; after
//!   `max_retries` failed attempts in a row the provider is DISCONNECTED.
//! - DISCONNECTED is not the end: a slow probe tries again every [`PROBE_EVERY`], and a call
//!   refused because the provider is DISCONNECTED asks for a probe at once (at most one per
//!   `retry_backoff_ms`), so a provider that comes back is found again without a restart of the
//!   gateway, without hammering one that stays away. A failed probe stays DISCONNECTED.
//! - A connect is: dial (TLS when configured), `ListCapabilities` (cached), one heartbeat
//!   that must answer SERVING. While CONNECTED a heartbeat (`grpc.health.v1` Check) runs every
//!   `heartbeat_interval_ms`; a failed or NOT_SERVING one is ERROR, and so is a call or the
//!   event stream seeing the transport fail.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use contract::{ConnectionState, DependencyState, DependencyStatus, ProviderHealth};
use futures::future::BoxFuture;
use provider_proto::health::pb::HealthCheckRequest;
use provider_proto::health::pb::health_check_response::ServingStatus;
use provider_proto::health::pb::health_client::HealthClient;
use provider_proto::v1::ListCapabilitiesRequest;
use provider_proto::v1::provider_client::ProviderClient;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

use super::Inner;
use super::capabilities::Capabilities;
use super::error::GrpcError;
use crate::config::GrpcProviderConfig;
use crate::config::expand_env;
use crate::sync::Unpoisoned;

/// The longest wait between reconnect attempts, and the pace of probes while DISCONNECTED.
pub(super) const PROBE_EVERY: Duration = Duration::from_secs(30);
/// How long dialing may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);
/// The longest one heartbeat (or the connect's `ListCapabilities`) may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// The service name the heartbeat asks about (the provider serves it beside "").
pub(super) const HEALTH_SERVICE: &str = "mcpgateway.provider.v1.Provider";

/// The live channel and which connect made it.
#[derive(Clone)]
pub(super) struct Link {
    pub(super) channel: Channel,
    pub(super) generation: u64,
}

/// Where the connection is, since when, and what went wrong last.
pub(super) struct StateRecord {
    pub(super) state: ConnectionState,
    pub(super) since: String,
    pub(super) last_error: Option<String>,
    pub(super) last_error_at: Option<String>,
    /// Failed attempts in a row since the connection was lost (or never made).
    pub(super) failed_attempts: u32,
    /// Connects after the first.
    pub(super) reconnects: u64,
    /// The first attempt has not finished yet (/health says `unknown`).
    pub(super) never_tried: bool,
    /// How long the last heartbeat took, and when one last succeeded.
    pub(super) heartbeat_ms: Option<u64>,
    pub(super) last_ok: Option<String>,
}

impl StateRecord {
    pub(super) fn new() -> StateRecord {
        StateRecord {
            state: ConnectionState::Disconnected,
            since: crate::clock::timestamp(),
            last_error: None,
            last_error_at: None,
            failed_attempts: 0,
            reconnects: 0,
            never_tried: true,
            heartbeat_ms: None,
            last_ok: None,
        }
    }
}

/// The wait before reconnect attempt `attempt` (1-based): the first backoff doubled each time,
/// capped at [`PROBE_EVERY`].
pub(super) fn backoff(first: Duration, attempt: u32) -> Duration {
    let doublings = attempt.saturating_sub(1).min(20);
    first.saturating_mul(1 << doublings).min(PROBE_EVERY)
}

/// The address (`${VAR}` expanded) and the tonic endpoint of a config entry: plaintext
/// HTTP/2 without `tls`, else TLS checked against `tls.ca_file` (relative to the config
/// file's folder) or the system's roots, for `tls.domain` or the host of `address`.
pub(super) fn endpoint(
    base_dir: &Path,
    config: &GrpcProviderConfig,
) -> Result<(String, Endpoint), GrpcError> {
    let address = expand_env(&config.address)?;
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let mut endpoint = Endpoint::from_shared(format!("{scheme}://{address}"))
        .map_err(|source| GrpcError::NotHostPort {
            address: address.clone(),
            source,
        })?
        .connect_timeout(DIAL_TIMEOUT)
        .tcp_nodelay(true);
    if let Some(tls) = &config.tls {
        let host = address
            .rsplit_once(':')
            .map_or(address.as_str(), |(host, _)| host)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let mut settings =
            ClientTlsConfig::new().domain_name(tls.domain.clone().unwrap_or_else(|| host.into()));
        settings = match &tls.ca_file {
            Some(file) => {
                let path = base_dir.join(file);
                let pem = std::fs::read(&path).map_err(|source| GrpcError::CaFile {
                    path: path.display().to_string(),
                    source,
                })?;
                settings.ca_certificate(Certificate::from_pem(pem))
            }
            None => settings.with_native_roots(),
        };
        endpoint = endpoint.tls_config(settings).map_err(GrpcError::Tls)?;
    }
    Ok((address, endpoint))
}

impl Inner {
    /// The live channel, or why there is none.
    pub(super) fn live_link(&self) -> Option<Link> {
        self.link.read_unpoisoned().clone()
    }

    /// A call or the event stream saw connection `generation` fail: ERROR now (no call goes
    /// through it any more) and the supervisor reconnects, unless a newer one is already up.
    pub(super) fn connection_failed(&self, generation: u64, why: String) {
        self.failed_generation
            .fetch_max(generation, Ordering::AcqRel);
        {
            let mut live = self.link.write_unpoisoned();
            if live.as_ref().is_some_and(|l| l.generation == generation) {
                live.take();
                self.enter(ConnectionState::Error, Some(why));
            }
        }
        self.lost.notify_one();
    }

    pub(super) async fn supervise(self: Arc<Self>) {
        loop {
            if self.shutdown.is_cancelled() {
                break;
            }
            let last_attempt = Some(Instant::now());
            let connected = tokio::select! {
                connected = self.connect() => connected,
                _ = self.shutdown.cancelled() => break,
            };
            match connected {
                Ok((channel, capabilities, took)) => {
                    let generation = self.set_connected(channel.clone(), capabilities, took);
                    self.first_attempt_done.send_replace(true);
                    let Some(why) = self.serve(channel, generation).await else {
                        break;
                    };
                    self.lose(generation, why);
                }
                Err(why) => self.attempt_failed(why.to_string()),
            }
            self.first_attempt_done.send_replace(true);
            let mut state = self.state.read_unpoisoned().state;
            if state == ConnectionState::Error && self.max_retries == 0 {
                self.enter(ConnectionState::Disconnected, None);
                state = ConnectionState::Disconnected;
            }
            let wait: BoxFuture<'_, ()> = match state {
                ConnectionState::Error => {
                    let attempt = self.state.read_unpoisoned().failed_attempts + 1;
                    let wait = backoff(self.first_backoff, attempt);
                    tracing::info!(service = %self.service, provider = %self.name, attempt, retry_in_ms = wait.as_millis() as u64, "reconnecting to gRPC provider");
                    Box::pin(tokio::time::sleep(wait))
                }
                _ => self.probe_wait(last_attempt),
            };
            tokio::select! {
                _ = wait => {}
                _ = self.shutdown.cancelled() => break,
            }
        }
        self.link.write_unpoisoned().take();
        self.first_attempt_done.send_replace(true);
    }

    /// While DISCONNECTED: the next slow probe, or a call's request for one (spaced by the
    /// first backoff from the last attempt).
    fn probe_wait(&self, last_attempt: Option<Instant>) -> BoxFuture<'_, ()> {
        let spacing = self.first_backoff;
        Box::pin(async move {
            tokio::select! {
                _ = tokio::time::sleep(PROBE_EVERY) => {}
                _ = async {
                    self.probe.notified().await;
                    if let Some(at) = last_attempt {
                        tokio::time::sleep_until((at + spacing).into()).await;
                    }
                } => {}
            }
        })
    }

    /// Dial, `ListCapabilities`, one heartbeat.
    async fn connect(&self) -> Result<(Channel, Capabilities, Duration), GrpcError> {
        let started = Instant::now();
        let channel = self
            .endpoint
            .connect()
            .await
            .map_err(|source| GrpcError::Connect {
                address: self.address.clone(),
                source,
            })?;
        let mut request = tonic::Request::new(ListCapabilitiesRequest {});
        request.set_timeout(CHECK_TIMEOUT);
        let listed = tokio::time::timeout(
            CHECK_TIMEOUT,
            ProviderClient::new(channel.clone()).list_capabilities(request),
        )
        .await
        .map_err(|_| GrpcError::ListCapabilitiesTimeout {
            secs: CHECK_TIMEOUT.as_secs(),
        })?
        .map_err(|s| GrpcError::ListCapabilities(Box::new(s)))?;
        let capabilities = Capabilities::read(listed.into_inner(), &self.service, &self.name);
        self.heartbeat(&channel).await?;
        Ok((channel, capabilities, started.elapsed()))
    }

    /// Runs while CONNECTED; returns why the connection is lost (`None`: told to stop).
    async fn serve(self: &Arc<Self>, channel: Channel, generation: u64) -> Option<String> {
        let events = self
            .shutdown
            .spawn(self.clone().follow_events(channel.clone(), generation));
        let mut beats = tokio::time::interval_at(
            tokio::time::Instant::now() + self.heartbeat_every,
            self.heartbeat_every,
        );
        beats.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let why = loop {
            tokio::select! {
                _ = beats.tick() => {
                    if let Err(why) = self.heartbeat(&channel).await {
                        break Some(why.to_string());
                    }
                }
                _ = self.lost.notified() => {
                    if self.failed_generation.load(Ordering::Acquire) >= generation {
                        let why = self.state.read_unpoisoned().last_error.clone();
                        break Some(why.unwrap_or_else(|| "the connection failed".into()));
                    }
                }
                _ = self.shutdown.cancelled() => break None,
            }
        };
        events.abort();
        why
    }

    /// One `grpc.health.v1` Check; NOT_SERVING (or anything but SERVING) is a failure.
    async fn heartbeat(&self, channel: &Channel) -> Result<(), GrpcError> {
        let started = Instant::now();
        let mut request = tonic::Request::new(HealthCheckRequest {
            service: HEALTH_SERVICE.into(),
        });
        let budget = self.heartbeat_every.min(CHECK_TIMEOUT);
        request.set_timeout(budget);
        let answer =
            tokio::time::timeout(budget, HealthClient::new(channel.clone()).check(request))
                .await
                .map_err(|_| GrpcError::HeartbeatTimeout {
                    ms: budget.as_millis(),
                })?
                .map_err(|s| GrpcError::Heartbeat(Box::new(s)))?;
        let status = answer.into_inner().status;
        if status != ServingStatus::Serving as i32 {
            let name = ServingStatus::try_from(status)
                .map_or_else(|_| status.to_string(), |s| s.as_str_name().to_owned());
            return Err(GrpcError::NotServing(name));
        }
        let mut record = self.state.write_unpoisoned();
        record.heartbeat_ms = Some(started.elapsed().as_millis() as u64);
        record.last_ok = Some(crate::clock::timestamp());
        Ok(())
    }

    fn set_connected(&self, channel: Channel, capabilities: Capabilities, took: Duration) -> u64 {
        tracing::info!(
            service = %self.service, provider = %self.name, address = %self.address,
            tools = capabilities.tools.len(), resources = capabilities.resources.len(),
            prompts = capabilities.prompts.len(), "connected to gRPC provider"
        );
        *self.capabilities.write_unpoisoned() = capabilities;
        let generation = {
            let mut live = self.link.write_unpoisoned();
            let generation = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
            *live = Some(Link {
                channel,
                generation,
            });
            generation
        };
        {
            let mut record = self.state.write_unpoisoned();
            if !record.never_tried && generation > 1 {
                record.reconnects += 1;
            }
            record.failed_attempts = 0;
            record.heartbeat_ms = Some(took.as_millis() as u64);
            record.last_ok = Some(crate::clock::timestamp());
        }
        self.enter(ConnectionState::Connected, None);
        self.tools_changed.notify_one();
        generation
    }

    /// The connection `generation` is lost: ERROR (already, if a call saw it first).
    fn lose(&self, generation: u64, why: String) {
        let mut live = self.link.write_unpoisoned();
        if live.as_ref().is_some_and(|l| l.generation == generation) {
            live.take();
        }
        drop(live);
        self.state.write_unpoisoned().failed_attempts = 0;
        self.enter(ConnectionState::Error, Some(why));
    }

    /// An attempt failed: from DISCONNECTED at start and from ERROR it counts toward
    /// `max_retries`; a probe while DISCONNECTED only refreshes the error.
    fn attempt_failed(&self, why: String) {
        let (state, never_tried, failed) = {
            let mut record = self.state.write_unpoisoned();
            let never_tried = record.never_tried;
            if record.state == ConnectionState::Error {
                record.failed_attempts += 1;
            }
            (record.state, never_tried, record.failed_attempts)
        };
        tracing::warn!(service = %self.service, provider = %self.name, address = %self.address, state = state.as_str(), failed_attempts = failed, "gRPC provider unreachable: {why}");
        let next = match state {
            ConnectionState::Disconnected if never_tried => ConnectionState::Error,
            ConnectionState::Error if failed >= self.max_retries => ConnectionState::Disconnected,
            other => other,
        };
        self.enter(next, Some(why));
    }

    /// Moves to `state` (recording `error`): `since` changes only with the state; each change
    /// is logged and told to the service (it checks health again at once).
    pub(super) fn enter(&self, state: ConnectionState, error: Option<String>) {
        let mut record = self.state.write_unpoisoned();
        let before = record.state;
        let first = record.never_tried;
        record.never_tried = false;
        if let Some(error) = &error {
            record.last_error = Some(error.clone());
            record.last_error_at = Some(crate::clock::timestamp());
        }
        if state == ConnectionState::Error && before == ConnectionState::Connected {
            record.failed_attempts = 0;
        }
        let changed = before != state;
        if changed {
            record.since = crate::clock::timestamp();
        }
        record.state = state;
        drop(record);
        if changed || first {
            match state {
                ConnectionState::Connected => tracing::info!(
                    service = %self.service, provider = %self.name, from = before.as_str(), to = state.as_str(),
                    "gRPC provider state changed"
                ),
                _ => tracing::warn!(
                    service = %self.service, provider = %self.name, from = before.as_str(), to = state.as_str(),
                    error = error.as_deref(), "gRPC provider state changed"
                ),
            }
            self.health_changed.notify_one();
        }
    }

    /// The provider's entry in /health `dependencies`.
    pub(super) fn dependency_status(&self) -> DependencyStatus {
        let record = self.state.read_unpoisoned();
        let (status, error) = match record.state {
            ConnectionState::Connected => (DependencyState::Connected, None),
            _ if record.never_tried => (
                DependencyState::Unknown,
                Some("not connected yet".to_owned()),
            ),
            state => (
                DependencyState::Unavailable,
                Some(crate::provider::with_hint(
                    &format!(
                        "gRPC provider at {} is {} since {}: {}",
                        self.address,
                        state.as_str(),
                        record.since,
                        record.last_error.as_deref().unwrap_or("no connection")
                    ),
                    self.setup_hint.as_deref(),
                )),
            ),
        };
        DependencyStatus {
            status,
            response_time_ms: (status == DependencyState::Connected)
                .then_some(record.heartbeat_ms)
                .flatten(),
            error,
            last_ok: record.last_ok.clone(),
            checked_at: None,
        }
    }

    /// The provider's entry in /health `providers`.
    pub(super) fn provider_health(&self) -> ProviderHealth {
        let record = self.state.read_unpoisoned();
        ProviderHealth {
            state: record.state,
            since: record.since.clone(),
            last_error: record.last_error.clone(),
            last_error_at: record.last_error_at.clone(),
            failed_attempts: record.failed_attempts,
            reconnects: record.reconnects,
            metadata: self.metadata.clone(),
        }
    }

    /// Why a call cannot go through now (and, when DISCONNECTED, a probe is asked for).
    pub(super) fn not_connected(&self) -> String {
        let record = self.state.read_unpoisoned();
        if record.state == ConnectionState::Disconnected {
            self.probe.notify_one();
        }
        crate::provider::with_hint(
            &format!(
                "Dependency unavailable: gRPC provider '{}' is {} since {}: {}",
                self.name,
                record.state.as_str(),
                record.since,
                record.last_error.as_deref().unwrap_or("not connected yet")
            ),
            self.setup_hint.as_deref(),
        )
    }
}

/// A tonic error with its causes (tonic's own text is often just "transport error").
pub(super) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// A status as one line: its code, its message and, for a transport failure, the cause.
pub(super) fn status_text(status: &tonic::Status) -> String {
    use std::error::Error;
    let mut text = format!("{:?}: {}", status.code(), status.message());
    if let Some(source) = status.source() {
        let cause = error_chain(source);
        if !text.contains(&cause) {
            text.push_str(&format!(" ({cause})"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(yaml: &str) -> GrpcProviderConfig {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn plaintext_without_tls_and_https_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let (address, plain) = endpoint(
            dir.path(),
            &entry("{name: p, address: \"127.0.0.1:50051\"}"),
        )
        .unwrap();
        assert_eq!(address, "127.0.0.1:50051");
        assert_eq!(plain.uri().scheme_str(), Some("http"));
        std::fs::write(dir.path().join("ca.pem"), "not a certificate yet").unwrap();
        let (_, tls) = endpoint(
            dir.path(),
            &entry("{name: p, address: \"localhost:50051\", tls: {ca_file: ca.pem}}"),
        )
        .unwrap();
        assert_eq!(tls.uri().scheme_str(), Some("https"));
    }

    #[test]
    fn a_missing_ca_file_is_a_config_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let why = endpoint(
            dir.path(),
            &entry("{name: p, address: \"localhost:50051\", tls: {ca_file: nope.pem}}"),
        )
        .unwrap_err()
        .to_string();
        let path = dir.path().join("nope.pem");
        assert!(
            why.starts_with(&format!("tls.ca_file '{}': ", path.display())),
            "{why}"
        );
        let why = endpoint(dir.path(), &entry("{name: p, address: \"a b\"}"))
            .unwrap_err()
            .to_string();
        assert!(why.starts_with("address 'a b' is not host:port: "), "{why}");
    }

    #[test]
    fn the_backoff_doubles_from_the_first_wait_up_to_thirty_seconds() {
        let first = Duration::from_millis(500);
        assert_eq!(backoff(first, 1), Duration::from_millis(500));
        assert_eq!(backoff(first, 2), Duration::from_millis(1000));
        assert_eq!(backoff(first, 4), Duration::from_millis(4000));
        assert_eq!(backoff(first, 7), Duration::from_secs(30));
        assert_eq!(backoff(first, 60), Duration::from_secs(30));
    }
}
