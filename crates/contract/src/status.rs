//! `data` of GET /status/data: what the status page (GET /status) shows a person. The service
//! part is /health's; the tools are /health's numbers without any message (a failure is its
//! time, code and request id only); the timeline is the last hour sampled in the service.
//! Nothing in it is an argument value, an error message of a call, or a secret.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{ClusterReport, DependencyStatus, ErrorCode, HealthStatus, ProviderReport, ToolStatus};

/// The status page's report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatusReport {
    /// The service's name.
    pub service: String,
    /// The service's version.
    pub version: String,
    /// Lifecycle state, as GET /health says it: INITIALIZING, HEALTHY, DEGRADED, UNAVAILABLE,
    /// SHUTTING_DOWN.
    pub state: String,
    pub status: HealthStatus,
    /// Seconds since the service started.
    #[schema(minimum = 0)]
    pub uptime_seconds: u64,
    /// When this report was made (RFC 3339, UTC, milliseconds).
    #[schema(format = DateTime)]
    pub generated_at: String,
    /// Tool calls being handled right now.
    #[schema(minimum = 0)]
    pub active_calls: u64,
    /// Tool calls waiting for a slot (admission control's queue).
    #[schema(minimum = 0)]
    pub queued_calls: u64,
    /// Each dependency by name, as GET /health reports it.
    pub dependencies: BTreeMap<String, DependencyStatus>,
    /// Each provider entry by name, as GET /health reports it.
    pub providers: BTreeMap<String, ProviderReport>,
    /// The state shared with the other replicas through Redis; `null` when the service runs
    /// alone.
    pub cluster: Option<ClusterReport>,
    /// How many tools the service lists, those the caller may not see among them.
    #[schema(minimum = 0)]
    pub tool_count: u64,
    /// Every tool the service lists that the caller may see (with API keys or OAuth on, those
    /// its key or token may call), sorted by name.
    pub tools: Vec<StatusTool>,
    pub timeline: StatusTimeline,
}

/// One tool's row in the status page's table (GET /health's numbers, no message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatusTool {
    /// The served name.
    pub name: String,
    /// The provider that serves it.
    pub provider: String,
    pub status: ToolStatus,
    /// Calls since the service started.
    #[schema(minimum = 0)]
    pub calls: u64,
    /// Failed ÷ all calls in the last 5 minutes; 0 with no calls.
    #[schema(minimum = 0, maximum = 1)]
    pub error_rate: f64,
    /// Median call duration in the last 5 minutes, in milliseconds; `null` with no calls.
    #[schema(minimum = 0)]
    pub p50_ms: Option<f64>,
    /// 95th percentile call duration in the last 5 minutes, in milliseconds.
    #[schema(minimum = 0)]
    pub p95_ms: Option<f64>,
    /// The last failure that counted as the tool's; `null` when there was none.
    pub last_error: Option<StatusFailure>,
}

/// A tool's last failure as the status page shows it: when, which code, and the request id to
/// look it up in the log by. Never its message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StatusFailure {
    /// When it failed (RFC 3339, UTC, milliseconds).
    #[schema(format = DateTime)]
    pub at: String,
    pub code: ErrorCode,
    /// The failed call's request id (its `X-Request-Id`); `null` when unknown.
    pub request_id: Option<String>,
}

/// The last hour, one sample every `interval_seconds`, oldest first; every array has one
/// value per element of `t`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatusTimeline {
    /// Seconds between two samples (`monitoring.status_interval_ms` ÷ 1000).
    #[schema(minimum = 1)]
    pub interval_seconds: f64,
    /// When each sample was taken, in Unix seconds; at most 360.
    pub t: Vec<i64>,
    /// Calls waiting for a slot, at each sample.
    pub queue_depth: Vec<u64>,
    /// Calls running, at each sample.
    pub active_calls: Vec<u64>,
    /// Calls refused (admission, rate limit, open circuit) per second since the sample before.
    pub refusals_per_s: Vec<f64>,
    /// Each tool listed now that the caller may see, by name.
    pub tools: BTreeMap<String, StatusToolSeries>,
}

/// One tool's series in the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatusToolSeries {
    /// Calls ended per second since the sample before.
    pub calls_per_s: Vec<f64>,
    /// Failed calls (the tool's own failures) per second since the sample before.
    pub errors_per_s: Vec<f64>,
    /// The 95th percentile latency at the sample (over the last 5 minutes), in milliseconds;
    /// `null` when no call was recent enough, or before the tool was listed.
    pub p95_ms: Vec<Option<f64>>,
}
