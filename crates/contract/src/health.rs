//! The health report of a service, of each dependency behind it and of each tool.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::ErrorCode;

/// The service as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Serving, every dependency connected, every tool can run.
    Healthy,
    /// Serving, but some dependency is not connected (or not known to be): the tools behind a
    /// missing one answer EXECUTION_ERROR at once; or a tool is not served because another
    /// provider's tool has its name (`conflicts`, `kept_first`).
    Degraded,
    /// Not serving (GET /health answers 503): initializing, shutting down, or no tool can run
    /// (every tool's dependency is unavailable, or there are no tools because a provider is down).
    Unavailable,
}

/// One dependency's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DependencyState {
    Connected,
    Unavailable,
    Unknown,
}

/// One dependency: an MCP server, a database, an HTTP API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DependencyStatus {
    pub status: DependencyState,
    /// How long the last check took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub response_time_ms: Option<u64>,
    /// Why it is not connected, and what to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When a check last succeeded (RFC 3339, UTC, milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub last_ok: Option<String>,
    /// When this status was found (RFC 3339, UTC, milliseconds): checks run in the background,
    /// GET /health answers the last result. Absent (with status `unknown`) before the first
    /// check of this dependency has finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub checked_at: Option<String>,
}

/// One tool's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    /// Its dependency is connected and fewer than a quarter of its recent calls failed.
    Healthy,
    /// It can run, but a quarter or more of its recent calls (at least 4 in the window) failed,
    /// or its dependency's state is unknown (a check that did not answer in time).
    Degraded,
    /// Its dependency is unavailable: calls fail at once without reaching it.
    Unavailable,
}

/// The last failure of a tool that counts against it (EXECUTION_ERROR, TIMEOUT, INTERNAL_ERROR).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ToolFailure {
    /// When it failed (RFC 3339, UTC, milliseconds).
    #[schema(format = DateTime)]
    pub at: String,
    pub code: ErrorCode,
    /// The error as the caller got it (at most 256 characters).
    pub message: String,
}

/// One tool's statistics since the service started, and over its recent window: the calls of
/// the last 5 minutes (error rate) and, of those, at most the last 128 (latency percentiles).
/// Counted are the calls that passed argument validation and reached the provider; only the
/// tool's own failures (EXECUTION_ERROR, TIMEOUT, INTERNAL_ERROR) count as errors, not the
/// caller's mistakes (INVALID_ARGUMENTS, also when the upstream says so) nor refusals before
/// the tool ran (rate limit, admission).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolHealth {
    pub status: ToolStatus,
    /// Calls since the service started.
    #[schema(minimum = 0)]
    pub calls: u64,
    /// Failed ÷ all calls in the last 5 minutes; 0 with no calls.
    #[schema(minimum = 0, maximum = 1)]
    pub error_rate: f64,
    /// When a call last succeeded (RFC 3339, UTC, milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub last_success: Option<String>,
    /// The last failure that counted as the tool's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<ToolFailure>,
    /// Median call duration in the window, in milliseconds (absent with no calls in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub p50_ms: Option<f64>,
    /// 95th percentile call duration in the window, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub p95_ms: Option<f64>,
    /// Calls in the last minute (counted in 10-second buckets: the last 50 to 60 seconds).
    #[schema(minimum = 0)]
    pub queries_per_minute: u64,
    /// The clients calling the tool most since the service started, most first (at most 3;
    /// the counts of all but the first few callers are estimates, within the calls of the
    /// least counted). Named as in `clients.top`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_callers: Vec<ToolCaller>,
}

/// A client in a tool's `top_callers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolCaller {
    pub client: String,
    #[schema(minimum = 0)]
    pub calls: u64,
}

/// `data` of GET /health (and `meta.health` when it answers 503).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HealthResponse {
    pub status: HealthStatus,
    /// The service's name.
    pub service: String,
    /// The service's version.
    pub version: String,
    /// Lifecycle state: INITIALIZING, HEALTHY, DEGRADED, UNAVAILABLE (running, no tool can
    /// run), SHUTTING_DOWN.
    pub state: String,
    /// Seconds since the service started; never decreases.
    #[schema(minimum = 0)]
    pub uptime_seconds: u64,
    /// Tool calls being handled right now.
    #[schema(minimum = 0)]
    pub active_calls: u64,
    /// Tool calls waiting for a slot (admission control's queue).
    #[serde(default)]
    #[schema(minimum = 0)]
    pub queued_calls: u64,
    /// Each dependency by name (for `mcp` providers, the provider's name), as last checked.
    pub dependencies: BTreeMap<String, DependencyStatus>,
    /// How many tools the service lists, those the caller may not see among them.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub tool_count: u64,
    /// Each tool the service lists that the caller may see, by name: every one while the
    /// service asks for no credentials; with API keys or OAuth on, those the caller's key or
    /// token may call (none without credentials, on a public `/health`).
    #[serde(default)]
    pub tools: BTreeMap<String, ToolHealth>,
    /// Tool names that more than one provider offers (or one provider twice, after renaming),
    /// and how each clash was settled; empty when there is none.
    #[serde(default)]
    pub conflicts: Vec<NameConflict>,
    /// Each provider entry of the configuration by name: its kind, whether it serves (an entry
    /// whose `when` condition does not hold is listed with `serving: false` and the reason),
    /// for `grpc` providers the state of their connection, and for `search` providers the
    /// state of the index.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderReport>,
    /// The state this replica shares with the others through Redis (`cluster` in the
    /// configuration); absent when the service runs alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterReport>,
    /// What the service's clients hold: MCP sessions and streams, and calls in flight (REST
    /// and MCP), with the clients holding the most; absent while the MCP surface is not up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients: Option<ClientsReport>,
}

/// `clients` of GET /health.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClientsReport {
    /// Clients holding a session, a stream or a call now.
    #[schema(minimum = 0)]
    pub clients: u64,
    /// Live MCP sessions (both transports) and `mcp.max_sessions`.
    #[schema(minimum = 0)]
    pub sessions: u64,
    #[schema(minimum = 1)]
    pub max_sessions: u64,
    /// With `cluster`: the live sessions the other replicas hold, as last read from Redis
    /// (every second); a client's bound counts its sessions on every replica.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub sessions_elsewhere: u64,
    /// The bounds on one client: `mcp.max_sessions_per_client`, `mcp.max_streams_per_client`.
    #[schema(minimum = 1)]
    pub max_sessions_per_client: u64,
    #[schema(minimum = 1)]
    pub max_streams_per_client: u64,
    /// The clients holding the most (sessions, streams and calls together), most first; at
    /// most 5.
    pub top: Vec<ClientHoldings>,
}

/// One client's holdings in `clients.top`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClientHoldings {
    /// Who: `key:<API key name>`, or `ip:<address>`; an OAuth subject is shown as `sub:`
    /// and the first 12 hex digits of its SHA-256 (this document is public), as is an address
    /// while keys or tokens are required.
    pub client: String,
    #[schema(minimum = 0)]
    pub sessions: u64,
    #[schema(minimum = 0)]
    pub streams: u64,
    /// Calls in flight: running or waiting for a slot.
    #[schema(minimum = 0)]
    pub calls: u64,
}

/// Whether this replica reaches the Redis its replicas share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum RedisState {
    /// Not tried yet (the first check runs at start).
    Unknown,
    Connected,
    /// The last command failed or timed out: the rate limit fails open or closed
    /// (`rate_limit_on_redis_error`), usage counts and session records are not written.
    Down,
}

/// `cluster` of GET /health: this replica, its connection to Redis, and the usage counted by
/// every replica together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ClusterReport {
    /// This replica's name (`cluster.replica_id`, default `hostname:port`).
    pub replica_id: String,
    /// Where Redis is, with any user and password replaced by `***`.
    pub redis_url: String,
    pub redis: RedisState,
    /// When `redis` last changed (RFC 3339, UTC, milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub since: Option<String>,
    /// The last Redis failure (kept after it recovers, with `last_error_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub last_error_at: Option<String>,
    /// Redis commands of this replica that failed or timed out since it started.
    #[schema(minimum = 0)]
    pub redis_errors: u64,
    /// `open` (requests pass while Redis is down) or `closed` (they get 429).
    pub rate_limit_on_redis_error: String,
    /// Calls and errors of each tool counted by all replicas together, as last read from Redis
    /// (every second); errors as in `tools` (the tool's own failures).
    #[serde(default)]
    pub usage: BTreeMap<String, ToolUsage>,
    /// The replicas up, by id, this one among them, as last read from Redis (every second). A
    /// replica that stops cleanly leaves the list at once; one killed, within 5 seconds.
    #[serde(default)]
    pub replicas: Vec<ReplicaReport>,
}

/// One replica in `cluster.replicas`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReplicaReport {
    /// Its `cluster.replica_id`.
    pub replica_id: String,
    /// `host:port` where the other replicas reach it (`cluster.advertise`, else where it
    /// serves); its status page is `http://<address>/status`.
    pub address: String,
    /// The gateway version it runs.
    pub version: String,
    /// When it started (RFC 3339, UTC, milliseconds).
    #[schema(format = DateTime)]
    pub started_at: String,
    /// Whether it is the replica that answered.
    pub this: bool,
}

/// One tool's calls across every replica.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ToolUsage {
    #[schema(minimum = 0)]
    pub calls: u64,
    #[schema(minimum = 0)]
    pub errors: u64,
}

/// One provider entry of the service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ProviderReport {
    /// `mcp`, `cypher`, `http`, `grpc` or `search`.
    pub kind: String,
    /// Whether its tools are served; false when its `when` condition does not hold.
    pub serving: bool,
    /// Why it serves or not, when a `when` condition decided (`SEEKR_MCP_COMMAND is not set`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the provider's own connection is (`grpc` providers): its state machine's state.
    /// Its `dependencies` entry says whether calls can reach it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ConnectionState>,
    /// When it entered `state` (RFC 3339, UTC, milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub since: Option<String>,
    /// The last failure seen on the connection (kept after it recovers, with `last_error_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When `last_error` happened (RFC 3339, UTC, milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub last_error_at: Option<String>,
    /// Failed reconnect attempts in a row (0 while connected; `grpc` providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub failed_attempts: Option<u32>,
    /// Times the connection was made again after it was lost (`grpc` providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub reconnects: Option<u64>,
    /// The provider's labels from its configuration (`metadata`: version, environment, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// The index of a `search` provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<SearchIndexReport>,
    /// The children of an `mcp` provider with `instances` above 1 or a `max_instances` (running
    /// now, each supervised on its own); absent without a pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceReport>,
    /// The endpoints of an `http` provider whose dependency has several `base_urls`; absent
    /// with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<EndpointReport>,
    /// How failures of its upstream are contained (`resilience`): its circuit breaker, the
    /// retries and hedges sent, and its shared read-only results. Absent for an entry that
    /// does not serve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resilience: Option<ResilienceReport>,
}

/// The state of a provider's circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CircuitState {
    /// Calls go through; failures are counted.
    Closed,
    /// Calls are refused at once (503 SERVICE_UNAVAILABLE) until `retry_after_seconds`; the
    /// provider's tools show as `unavailable`.
    Open,
    /// A few real calls go through as probes; the rest are refused.
    HalfOpen,
}

/// `resilience` of a provider in GET /health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResilienceReport {
    /// `closed` also when the breaker is turned off (`breaker.enabled: false`).
    pub circuit: CircuitState,
    /// When the circuit entered its state (RFC 3339, UTC, milliseconds).
    #[schema(format = DateTime)]
    pub circuit_since: String,
    /// While open: seconds until probes begin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub retry_after_seconds: Option<u64>,
    /// Why the circuit last opened (kept after it closes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_reason: Option<String>,
    /// Times the circuit opened since the service started (or its section last changed).
    #[schema(minimum = 0)]
    pub circuit_opened: u64,
    /// Calls refused at once by the open circuit.
    #[schema(minimum = 0)]
    pub circuit_refused: u64,
    /// Retries sent after a failure that left the tool unrun.
    #[schema(minimum = 0)]
    pub retries: u64,
    /// Second attempts sent beside a slow read-only call (`hedge`).
    #[schema(minimum = 0)]
    pub hedges: u64,
    /// Retries and hedges not sent because the retry budget was spent.
    #[schema(minimum = 0)]
    pub retry_budget_exhausted: u64,
    /// Read-only calls answered from a kept result.
    #[schema(minimum = 0)]
    pub cache_hits: u64,
    /// Read-only calls that shared an identical call in flight.
    #[schema(minimum = 0)]
    pub cache_coalesced: u64,
    /// Read-only calls that ran upstream.
    #[schema(minimum = 0)]
    pub cache_misses: u64,
    /// Results kept now, and their approximate size.
    #[schema(minimum = 0)]
    pub cache_entries: u64,
    #[schema(minimum = 0)]
    pub cache_bytes: u64,
}

/// One child of a pooled stdio MCP provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InstanceReport {
    /// Which child (1-based).
    #[schema(minimum = 1)]
    pub instance: u32,
    /// Whether calls can go to it now.
    pub status: DependencyState,
    /// Calls running on it now (the next call goes to the live child with the fewest).
    #[schema(minimum = 0)]
    pub calls_in_flight: u64,
    /// Times it was started again after its process or connection was lost.
    #[schema(minimum = 0)]
    pub restarts: u64,
    /// While it is out of rotation (`resilience.outlier`: its calls kept failing, or it was
    /// far slower than its siblings): milliseconds until it gets calls again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub ejected_for_ms: Option<u64>,
    /// Times it was left out of rotation.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub ejections: u64,
    /// Why it is not connected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How its `tools/list` differs from the tools served (the first live child's), when it
    /// does: `lacks a, b; also lists c`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_differ: Option<String>,
}

/// One base URL of an HTTP API with several (`base_urls`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EndpointReport {
    /// Which base URL, in the order configured (1-based).
    #[schema(minimum = 1)]
    pub endpoint: u32,
    /// Its `host:port` (never the path or query of the URL, which may hold a key).
    pub address: String,
    /// As its last health check found it (`unknown` before the first).
    pub status: DependencyState,
    /// Calls running on it now (the next call goes to the endpoint in rotation with the
    /// fewest).
    #[schema(minimum = 0)]
    pub calls_in_flight: u64,
    /// While it is out of rotation (`resilience.outlier`: its calls kept failing, or it was
    /// far slower than the others): milliseconds until it gets calls again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub ejected_for_ms: Option<u64>,
    /// Times it was left out of rotation.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub ejections: u64,
    /// Why its last health check failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ProviderReport {
    /// The report of a provider entry of `kind`, serving or not, with nothing else known yet.
    pub fn new(kind: &str, serving: bool, reason: Option<String>) -> ProviderReport {
        ProviderReport {
            kind: kind.to_owned(),
            serving,
            reason,
            state: None,
            since: None,
            last_error: None,
            last_error_at: None,
            failed_attempts: None,
            reconnects: None,
            metadata: BTreeMap::new(),
            index: None,
            instances: Vec::new(),
            endpoints: Vec::new(),
            resilience: None,
        }
    }

    /// Adds what the provider says of its own connection.
    pub fn with_connection(mut self, connection: ProviderHealth) -> ProviderReport {
        self.state = Some(connection.state);
        self.since = Some(connection.since);
        self.last_error = connection.last_error;
        self.last_error_at = connection.last_error_at;
        self.failed_attempts = Some(connection.failed_attempts);
        self.reconnects = Some(connection.reconnects);
        self.metadata = connection.metadata;
        self
    }
}

/// Where a search index is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum IndexState {
    /// The first pass over the roots is running; answers cover the files indexed so far.
    Building,
    /// Every file of the roots was looked at once; changes follow through the watcher.
    Ready,
    /// The index could not be opened or written (`error` says why).
    Failed,
}

/// Whether a search index follows changes of its roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WatcherState {
    /// Changes are picked up as they happen.
    Watching,
    /// `watch: false`, or not started yet.
    Off,
    /// The watcher could not be started (`error` says why); the index is as of its build.
    Failed,
}

/// Files left out of a search index, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SkippedFiles {
    /// NUL bytes in their first 8 KiB, or not UTF-8.
    #[schema(minimum = 0)]
    pub binary: u64,
    /// Could not be read (permissions, vanished while read).
    #[schema(minimum = 0)]
    pub unreadable: u64,
    /// Larger than `max_file_bytes`.
    #[schema(minimum = 0)]
    pub too_large: u64,
}

/// The state of a `search` provider's index (lexical, BM25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SearchIndexReport {
    pub state: IndexState,
    /// Files looked at by the current pass (all of them once `ready`).
    #[schema(minimum = 0)]
    pub files_done: u64,
    /// Files the current pass found under the roots.
    #[schema(minimum = 0)]
    pub files_total: u64,
    /// files_done ÷ files_total × 100 (100 with nothing to do).
    #[schema(minimum = 0, maximum = 100)]
    pub percent: f64,
    /// Files of the current pass found already indexed at the same size and mtime (after a
    /// restart: the part of the index that was reused, not read again).
    #[serde(default)]
    #[schema(minimum = 0)]
    pub files_unchanged: u64,
    /// Files in the index.
    #[schema(minimum = 0)]
    pub files: u64,
    /// Searchable documents in the index (code chunks and doc sections).
    #[schema(minimum = 0)]
    pub documents: u64,
    /// Bytes the index takes on disk.
    #[schema(minimum = 0)]
    pub index_bytes: u64,
    /// When the index last committed (RFC 3339, UTC, milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub last_commit: Option<String>,
    pub watcher: WatcherState,
    pub skipped: SkippedFiles,
    /// Roots that do not exist (or no longer).
    #[serde(default)]
    pub missing_roots: Vec<String>,
    /// Where the index is on disk.
    pub location: String,
    /// What went wrong (index or watcher), when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where a provider's connection is: `DISCONNECTED` (never connected, or given up after
/// `max_retries` failed reconnects; probed slowly), `CONNECTED` (calls go through), `ERROR`
/// (lost; reconnecting with backoff). Calls fail at once unless `CONNECTED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConnectionState {
    Disconnected,
    Connected,
    Error,
}

impl ConnectionState {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionState::Disconnected => "DISCONNECTED",
            ConnectionState::Connected => "CONNECTED",
            ConnectionState::Error => "ERROR",
        }
    }
}

/// A provider's own connection (`grpc` providers), as the provider reports it; /health shows
/// its fields in the provider's [`ProviderReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderHealth {
    pub state: ConnectionState,
    /// When it entered `state` (RFC 3339, UTC, milliseconds).
    pub since: String,
    /// The last failure seen on the connection (kept after it recovers, with `last_error_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When `last_error` happened (RFC 3339, UTC, milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error_at: Option<String>,
    /// Failed reconnect attempts in a row (0 while connected).
    #[serde(default)]
    pub failed_attempts: u32,
    /// Times the connection was made again after it was lost.
    #[serde(default)]
    pub reconnects: u64,
    /// The provider's labels from its configuration (`metadata`: version, environment, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// How a clash of tool names was settled (`on_name_clash` of the service).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClashResolution {
    /// The provider first in the configuration keeps the name; the tool of that name of the
    /// others is not served (`on_name_clash: error` when the clash appeared while running, or
    /// a clash that prefixing could not settle). The service reports `degraded`.
    KeptFirst,
    /// Each provider's tool is served under `{provider}_{name}` (`on_name_clash: prefix`).
    Prefixed,
}

/// Tools of several providers that came to one name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NameConflict {
    /// The name they all came to.
    pub tool: String,
    /// The providers offering it, in configuration order.
    pub providers: Vec<String>,
    /// The names they are served under now (one with `kept_first`).
    pub served: Vec<String>,
    pub resolution: ClashResolution,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_state_is_named_as_it_is_serialised() {
        for state in [
            ConnectionState::Disconnected,
            ConnectionState::Connected,
            ConnectionState::Error,
        ] {
            let json = serde_json::to_value(state).unwrap();
            assert_eq!(json, serde_json::Value::String(state.as_str().to_owned()));
        }
    }
}
