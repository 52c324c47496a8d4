//! The health report of a service and of each dependency behind it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The service as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HealthStatus {
    /// Serving, every dependency connected.
    Healthy,
    /// Serving, some dependency not connected: the tools behind it answer EXECUTION_ERROR.
    Degraded,
    /// Not serving: initializing or shutting down (GET /health answers 503).
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
}

/// `data` of GET /health (and `meta.health` when it answers 503).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct HealthResponse {
    pub status: HealthStatus,
    /// The service's name.
    pub service: String,
    /// The service's version.
    pub version: String,
    /// Lifecycle state: INITIALIZING, HEALTHY, DEGRADED, SHUTTING_DOWN.
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
    /// Each dependency by name (for `mcp` providers, the provider's name).
    pub dependencies: BTreeMap<String, DependencyStatus>,
}
