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
    /// Each tool the service lists, by name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolHealth>,
    /// Tool names that more than one provider offers (or one provider twice, after renaming),
    /// and how each clash was settled; empty when there is none.
    #[serde(default)]
    pub conflicts: Vec<NameConflict>,
    /// The connection state of each provider that keeps one of its own (`grpc` providers), by
    /// provider name; absent when the service has none. Its `dependencies` entry says whether
    /// calls can reach it; this says where its connection is in its state machine.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, ProviderHealth>,
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

/// A provider's own connection state (`grpc` providers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ProviderHealth {
    /// The provider's `kind` (`grpc`).
    pub kind: String,
    pub state: ConnectionState,
    /// When it entered `state` (RFC 3339, UTC, milliseconds).
    #[schema(format = DateTime)]
    pub since: String,
    /// The last failure seen on the connection (kept after it recovers, with `last_error_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When `last_error` happened (RFC 3339, UTC, milliseconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub last_error_at: Option<String>,
    /// Failed reconnect attempts in a row (0 while connected).
    #[serde(default)]
    #[schema(minimum = 0)]
    pub failed_attempts: u32,
    /// Times the connection was made again after it was lost.
    #[serde(default)]
    #[schema(minimum = 0)]
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
