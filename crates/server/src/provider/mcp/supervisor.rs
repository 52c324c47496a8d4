//! The supervisor of one MCP server: connects (spawn or dial, initialize, list every tool),
//! keeps the connection checked with pings, refetches tools on `list_changed`, and when the
//! connection dies marks the dependency unavailable and reconnects with capped exponential
//! backoff.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use contract::{DependencyState, DependencyStatus, ToolSchema};
use rmcp::model::ClientRequest;
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient};

use super::client::GatewayClient;
use super::upstream::{self, ConnectError};
use super::{Inner, tool_schema};
use crate::sync::Unpoisoned;

/// How long one connection attempt (spawn/connect, initialize, list tools) may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// First and longest wait between reconnection attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(250);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the backoff: the next failure is a new incident.
const STABLE_AFTER: Duration = Duration::from_secs(30);

/// Why a ping failed; the text becomes the dependency's error in /health.
#[derive(Debug, thiserror::Error)]
pub enum PingError {
    #[error("ping failed: {0}")]
    Failed(rmcp::service::ServiceError),
    #[error("ping not answered within {} s", PING_TIMEOUT.as_secs())]
    Timeout,
}

/// How long a ping may take.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a connection ended.
enum Ended {
    Stopped,
    Lost(String),
}

impl Inner {
    /// The live connection, if any.
    pub(super) fn current_peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.read_unpoisoned().clone()
    }

    /// The live shared connection and its generation, read together.
    pub(super) fn current_connection(&self) -> Option<(Peer<RoleClient>, u64)> {
        let peer = self.peer.read_unpoisoned();
        let generation = self.generation.load(Ordering::Acquire);
        peer.clone().map(|p| (p, generation))
    }

    /// A call saw connection `generation` fail: reconnect, unless a newer one is already up.
    /// When it is the live one, it is marked unavailable now: no call goes through it any more,
    /// and /health must not say "connected" until the supervisor has torn it down.
    pub(super) fn connection_failed(&self, generation: u64) {
        self.failed_generation
            .fetch_max(generation, Ordering::AcqRel);
        {
            // Under the peer lock: a newer connection (set under it too) is never marked.
            let mut live = self.peer.write_unpoisoned();
            if live.is_some() && self.generation.load(Ordering::Acquire) == generation {
                live.take();
                self.record_unavailable("connection failed during a call".into());
            }
        }
        self.reconnect.notify_one();
    }

    /// The dependency status as the supervisor last recorded it.
    pub(super) fn current_status(&self) -> DependencyStatus {
        self.status.read_unpoisoned().clone()
    }

    pub(super) async fn supervise(self: Arc<Self>) {
        let mut backoff = BACKOFF_MIN;
        loop {
            if self.shutdown.is_cancelled() {
                break;
            }
            let attempt = Instant::now();
            // Stopping must not wait for a server that never finishes its handshake.
            let connected = tokio::select! {
                connected = self.connect() => connected,
                _ = self.shutdown.cancelled() => break,
            };
            let ended = match connected {
                Ok((running, tools)) => {
                    self.set_connected(running.peer().clone(), tools, attempt.elapsed());
                    self.first_attempt_done.send_replace(true);
                    let ended = self.serve_until_ended(running).await;
                    self.set_unavailable(match &ended {
                        Ended::Stopped => "stopped".to_owned(),
                        Ended::Lost(why) => why.clone(),
                    });
                    if attempt.elapsed() > STABLE_AFTER {
                        backoff = BACKOFF_MIN;
                    }
                    ended
                }
                // The failure becomes the dependency's `error` in /health.
                Err(why) => Ended::Lost(why.to_string()),
            };
            let Ended::Lost(why) = ended else { break };
            tracing::warn!(
                service = %self.service, provider = %self.name, instance = self.instance.index, retry_in_ms = backoff.as_millis() as u64,
                "MCP server unavailable: {why}"
            );
            self.set_unavailable(format!("{why}; retrying in {} ms", backoff.as_millis()));
            // Only now: whoever waits for the first attempt must find its outcome recorded.
            self.first_attempt_done.send_replace(true);
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = self.shutdown.cancelled() => break,
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        self.first_attempt_done.send_replace(true);
    }

    /// Connects, initializes and fetches every page of the tool list.
    async fn connect(
        &self,
    ) -> Result<(RunningService<RoleClient, GatewayClient>, Vec<ToolSchema>), ConnectError> {
        let handler = GatewayClient {
            refresh: self.refresh.clone(),
            progress: self.progress.clone(),
            callers: self.callers.clone(),
            sessions: self.sessions.clone(),
            owner: None,
            who: Arc::new((self.service.clone(), self.name.clone())),
            protocol: self.protocol,
        };
        let serving = upstream::serve(
            &self.endpoint,
            handler,
            &self.shutdown,
            (&self.service, &self.name),
        );
        let running = tokio::time::timeout(CONNECT_TIMEOUT, serving)
            .await
            .map_err(|_| ConnectError::InitializeTimeout(CONNECT_TIMEOUT.as_secs()))??;
        let tools = tokio::time::timeout(CONNECT_TIMEOUT, running.peer().list_all_tools())
            .await
            .map_err(|_| ConnectError::ToolsListTimeout)?
            .map_err(ConnectError::ToolsList)?;
        hear_every_level(running.peer()).await;
        Ok((
            running,
            tools.iter().map(tool_schema::tool_schema).collect(),
        ))
    }

    /// Runs until the connection closes or we are told to stop, refetching tools on request.
    async fn serve_until_ended(&self, running: RunningService<RoleClient, GatewayClient>) -> Ended {
        let peer = running.peer().clone();
        let generation = self.generation.load(Ordering::Acquire);
        let cancel = running.cancellation_token();
        let mut waiting = std::pin::pin!(running.waiting());
        let mut checks = tokio::time::interval_at(
            tokio::time::Instant::now() + self.check_every,
            self.check_every,
        );
        loop {
            tokio::select! {
                _ = checks.tick() => {
                    if let Err(why) = self.ping(&peer).await {
                        self.clear_peer();
                        cancel.cancel();
                        let _ = waiting.await;
                        return Ended::Lost(why.to_string());
                    }
                }
                reason = &mut waiting => {
                    return Ended::Lost(format!("connection closed ({})", match reason {
                        Ok(r) => format!("{r:?}"),
                        Err(e) => e.to_string(),
                    }));
                }
                _ = self.shutdown.cancelled() => {
                    self.clear_peer();
                    cancel.cancel();
                    let _ = waiting.await;
                    return Ended::Stopped;
                }
                _ = self.reconnect.notified() => {
                    if self.failed_generation.load(Ordering::Acquire) < generation {
                        // Calls that failed on the connection before this one.
                        continue;
                    }
                    self.clear_peer();
                    cancel.cancel();
                    let _ = waiting.await;
                    return Ended::Lost("connection failed during a call".into());
                }
                _ = self.refresh.notified() => {
                    match tokio::time::timeout(CONNECT_TIMEOUT, peer.list_all_tools()).await {
                        Ok(Ok(tools)) => {
                            let tools: Vec<ToolSchema> = tools.iter().map(tool_schema::tool_schema).collect();
                            tracing::info!(service = %self.service, provider = %self.name, tools = tools.len(), "tool list changed upstream");
                            *self.tools.write_unpoisoned() = tools;
                            self.tools_changed.notify_one();
                        }
                        Ok(Err(e)) => tracing::warn!(service = %self.service, provider = %self.name, "refetching tools failed: {e}"),
                        Err(_) => tracing::warn!(service = %self.service, provider = %self.name, "refetching tools timed out"),
                    }
                }
            }
        }
    }

    /// The periodic health check: an MCP `ping`, answered within [`PING_TIMEOUT`].
    pub(super) async fn ping(&self, peer: &Peer<RoleClient>) -> Result<(), PingError> {
        let started = Instant::now();
        // A stateless server has no `ping`: `server/discover` asks it something as cheap.
        let ping = if super::client::is_stateless(peer) {
            let discover = rmcp::model::DiscoverRequest::new(Default::default());
            peer.send_request(ClientRequest::DiscoverRequest(discover))
        } else {
            peer.send_request(ClientRequest::PingRequest(Default::default()))
        };
        match tokio::time::timeout(PING_TIMEOUT, ping).await {
            Ok(Ok(_)) => {
                let mut status = self.status.write_unpoisoned();
                status.response_time_ms = Some(started.elapsed().as_millis() as u64);
                status.last_ok = Some(crate::clock::timestamp());
                Ok(())
            }
            Ok(Err(e)) => Err(PingError::Failed(e)),
            Err(_) => Err(PingError::Timeout),
        }
    }

    fn set_connected(&self, peer: Peer<RoleClient>, tools: Vec<ToolSchema>, took: Duration) {
        tracing::info!(
            service = %self.service, provider = %self.name, instance = self.instance.index, of = self.instance.of, tools = tools.len(),
            "connected to MCP server ({})", self.endpoint.describe()
        );
        *self.tools.write_unpoisoned() = tools;
        {
            let mut live = self.peer.write_unpoisoned();
            self.generation.fetch_add(1, Ordering::AcqRel);
            *live = Some(peer);
        }
        *self.status.write_unpoisoned() = DependencyStatus {
            status: DependencyState::Connected,
            response_time_ms: Some(took.as_millis() as u64),
            error: None,
            last_ok: Some(crate::clock::timestamp()),
            checked_at: None,
        };
        self.tools_changed.notify_one();
        self.health_changed.notify_one();
    }

    fn set_unavailable(&self, why: String) {
        self.clear_peer();
        self.record_unavailable(why);
    }

    /// Records the dependency as unavailable and says so to the service.
    fn record_unavailable(&self, why: String) {
        let mut status = self.status.write_unpoisoned();
        let changed = status.status != DependencyState::Unavailable;
        let message = if self.instance.of > 1 {
            format!(
                "{why} ({}, instance {} of {})",
                self.endpoint.describe(),
                self.instance.index,
                self.instance.of
            )
        } else {
            format!("{why} ({})", self.endpoint.describe())
        };
        *status = DependencyStatus {
            status: DependencyState::Unavailable,
            response_time_ms: None,
            error: Some(crate::provider::with_hint(
                &message,
                self.setup_hint.as_deref(),
            )),
            last_ok: status.last_ok.take(),
            checked_at: None,
        };
        drop(status);
        // A retry that fails again is no news (the periodic check refreshes the message).
        if changed {
            self.health_changed.notify_one();
        }
    }

    fn clear_peer(&self) {
        self.peer.write_unpoisoned().take();
    }
}

/// Asks a server that logs to send every level: each client session gets the levels it asked
/// for, filtered by the gateway (`Downstream::wants_log`).
#[allow(deprecated)] // logging is deprecated by SEP-2577, still in the versions served
pub(super) async fn hear_every_level(peer: &Peer<RoleClient>) {
    // A stateless server is asked per request (`call::trace_meta`).
    let logs = !super::client::is_stateless(peer)
        && peer
            .peer_info()
            .is_some_and(|info| info.capabilities.logging.is_some());
    if logs {
        let level = rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Debug);
        if let Err(e) = tokio::time::timeout(PING_TIMEOUT, peer.set_level(level)).await {
            tracing::debug!("logging/setLevel upstream did not answer: {e}");
        }
    }
}
