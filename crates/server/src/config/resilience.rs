//! A provider's `resilience` section: how the service contains an upstream that fails without
//! dying (a circuit breaker, retries within a budget, hedging, outlier ejection in pools), which
//! of its tools may run twice or be shared (`read_only`, `idempotent`), and the cache of
//! read-only results. Every part has a documented default (docs/configuration.md); each can be
//! turned off with `enabled: false`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::limits::wildcard_match;
use super::types::{as_millis, as_optional_millis, count, millis, optional_millis, text};

/// The `resilience` section of a provider entry.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Resilience {
    /// Tools treated as read-only although the upstream does not annotate them
    /// (`readOnlyHint`): retried, hedged, shared and cached like annotated ones. Globs of the
    /// names the provider knows them by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only: Vec<Globbed>,
    /// Tools treated as idempotent although not annotated (`idempotentHint`): retried, never
    /// shared or cached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idempotent: Vec<Globbed>,
    #[serde(default, skip_serializing_if = "BreakerConfig::is_default")]
    pub breaker: BreakerConfig,
    #[serde(default, skip_serializing_if = "RetryConfig::is_default")]
    pub retry: RetryConfig,
    #[serde(default, skip_serializing_if = "HedgeConfig::is_default")]
    pub hedge: HedgeConfig,
    #[serde(default, skip_serializing_if = "CacheConfig::is_default")]
    pub cache: CacheConfig,
    #[serde(default, skip_serializing_if = "OutlierConfig::is_default")]
    pub outlier: OutlierConfig,
}

/// A tool name or glob (`*`, `?`), as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Globbed(#[serde(deserialize_with = "text")] pub String);

impl Resilience {
    pub fn is_default(&self) -> bool {
        *self == Resilience::default()
    }

    /// Whether `tool` (the provider's name for it) is configured read-only.
    pub fn read_only(&self, tool: &str) -> bool {
        self.read_only.iter().any(|g| wildcard_match(&g.0, tool))
    }

    /// Whether `tool` is configured idempotent (read-only tools are, too).
    pub fn idempotent(&self, tool: &str) -> bool {
        self.read_only(tool) || self.idempotent.iter().any(|g| wildcard_match(&g.0, tool))
    }

    /// The rules `serde` cannot say.
    pub fn check(&self) -> Result<(), ResilienceError> {
        let b = &self.breaker;
        if !(1..=100).contains(&b.failure_percent) {
            return Err(ResilienceError::Percent("breaker.failure_percent"));
        }
        if b.max_open < b.open {
            return Err(ResilienceError::MaxOpen);
        }
        if self.retry.budget_percent > 100 {
            return Err(ResilienceError::Budget);
        }
        if self.retry.attempts > 10 {
            return Err(ResilienceError::Attempts);
        }
        if self.retry.max_backoff < self.retry.backoff {
            return Err(ResilienceError::MaxBackoff);
        }
        if self.outlier.max_ejection < self.outlier.ejection {
            return Err(ResilienceError::MaxEjection);
        }
        Ok(())
    }
}

/// Why a `resilience` section cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ResilienceError {
    #[error("resilience.{0} must be a whole percent from 1 to 100")]
    Percent(&'static str),
    #[error("resilience.retry.budget_percent must be a whole percent from 0 to 100")]
    Budget,
    #[error("resilience.breaker.max_open_ms must be at least open_ms")]
    MaxOpen,
    #[error("resilience.retry.attempts is at most 10 (the first call included)")]
    Attempts,
    #[error("resilience.retry.max_backoff_ms must be at least backoff_ms")]
    MaxBackoff,
    #[error("resilience.outlier.max_ejection_ms must be at least ejection_ms")]
    MaxEjection,
}

fn yes() -> bool {
    true
}

/// The circuit breaker: opens when, over the last `window`, at least `min_calls` calls ended
/// and `failure_percent` of them failed for the upstream's sake (unreachable, timed out, a
/// 5xx); while open every call is refused at once; after `open` it lets `probes` real calls
/// through, closing when they succeed and opening again, for twice as long (up to `max_open`),
/// when one fails.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerConfig {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(
        default = "default_failure_percent",
        deserialize_with = "count::<_, 1>"
    )]
    pub failure_percent: u64,
    #[serde(default = "default_min_calls", deserialize_with = "count::<_, 1>")]
    pub min_calls: u64,
    #[serde(
        default = "default_window",
        rename = "window_ms",
        deserialize_with = "millis::<_, 100>",
        serialize_with = "as_millis"
    )]
    pub window: Duration,
    #[serde(
        default = "default_open",
        rename = "open_ms",
        deserialize_with = "millis::<_, 10>",
        serialize_with = "as_millis"
    )]
    pub open: Duration,
    #[serde(
        default = "default_max_open",
        rename = "max_open_ms",
        deserialize_with = "millis::<_, 10>",
        serialize_with = "as_millis"
    )]
    pub max_open: Duration,
    #[serde(default = "default_probes", deserialize_with = "count::<_, 1>")]
    pub probes: u64,
}

fn default_failure_percent() -> u64 {
    50
}
fn default_min_calls() -> u64 {
    20
}
fn default_window() -> Duration {
    Duration::from_secs(10)
}
/// Short: an outage shorter than the interval would still be refused for all of it. A
/// longer outage doubles it at each failed probe.
fn default_open() -> Duration {
    Duration::from_secs(1)
}
fn default_max_open() -> Duration {
    Duration::from_secs(60)
}
fn default_probes() -> u64 {
    2
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            enabled: true,
            failure_percent: default_failure_percent(),
            min_calls: default_min_calls(),
            window: default_window(),
            open: default_open(),
            max_open: default_max_open(),
            probes: default_probes(),
        }
    }
}

impl BreakerConfig {
    fn is_default(&self) -> bool {
        *self == BreakerConfig::default()
    }
}

/// Retries of idempotent tools after a failure that left the tool unrun or safe to run again
/// (the upstream unreachable, its connection lost, a 502/503/504): at most `attempts` in all,
/// with exponential backoff from `backoff` (full jitter) up to `max_backoff`, never past the
/// call's deadline, and only while retries stay within `budget_percent` of the provider's
/// calls over the last 10 s (or `min_per_second`, whichever is more).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "default_attempts", deserialize_with = "count::<_, 1>")]
    pub attempts: u64,
    #[serde(
        default = "default_backoff",
        rename = "backoff_ms",
        deserialize_with = "millis::<_, 1>",
        serialize_with = "as_millis"
    )]
    pub backoff: Duration,
    #[serde(
        default = "default_max_backoff",
        rename = "max_backoff_ms",
        deserialize_with = "millis::<_, 1>",
        serialize_with = "as_millis"
    )]
    pub max_backoff: Duration,
    #[serde(default = "default_budget_percent", deserialize_with = "count::<_, 0>")]
    pub budget_percent: u64,
    #[serde(default = "default_min_per_second", deserialize_with = "count::<_, 0>")]
    pub min_per_second: u64,
}

fn default_attempts() -> u64 {
    3
}
fn default_backoff() -> Duration {
    Duration::from_millis(25)
}
fn default_max_backoff() -> Duration {
    Duration::from_secs(1)
}
fn default_budget_percent() -> u64 {
    20
}
fn default_min_per_second() -> u64 {
    3
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            enabled: true,
            attempts: default_attempts(),
            backoff: default_backoff(),
            max_backoff: default_max_backoff(),
            budget_percent: default_budget_percent(),
            min_per_second: default_min_per_second(),
        }
    }
}

impl RetryConfig {
    fn is_default(&self) -> bool {
        *self == RetryConfig::default()
    }
}

/// Hedging (off by default): a read-only call still unanswered after `after` (default: the
/// tool's p95 so far) is sent again, to another child of a pool when there is one; the first
/// answer is taken and the other call cancelled. Hedges count against the retry budget.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HedgeConfig {
    #[serde(default)]
    pub enabled: bool,
    #[serde(
        default,
        rename = "after_ms",
        deserialize_with = "optional_millis::<_, 1>",
        serialize_with = "as_optional_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub after: Option<Duration>,
}

impl HedgeConfig {
    fn is_default(&self) -> bool {
        *self == HedgeConfig::default()
    }
}

/// Read-only results shared and kept. Identical calls in flight at once (same tool, same
/// arguments, same caller scope) share one upstream call (`coalesce`, off by default: sharing
/// one answer among callers is the operator's choice, not the upstream's annotation); results
/// of the tools a rule names are kept for its `ttl_ms`, at most `max_entries` and `max_bytes`
/// per provider (the oldest go first), in Redis too when the service has a `cluster`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub coalesce: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<CacheRule>,
    #[serde(default = "default_max_entries", deserialize_with = "count::<_, 1>")]
    pub max_entries: u64,
    #[serde(default = "default_max_bytes", deserialize_with = "count::<_, 1024>")]
    pub max_bytes: u64,
}

fn default_max_entries() -> u64 {
    10_000
}
fn default_max_bytes() -> u64 {
    64 * 1024 * 1024
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            coalesce: false,
            tools: Vec::new(),
            max_entries: default_max_entries(),
            max_bytes: default_max_bytes(),
        }
    }
}

impl CacheConfig {
    fn is_default(&self) -> bool {
        *self == CacheConfig::default()
    }

    /// The rule of `tool` (the provider's name for it): the first that matches.
    pub fn rule_for(&self, tool: &str) -> Option<&CacheRule> {
        self.tools.iter().find(|r| wildcard_match(&r.tool, tool))
    }
}

/// How long the results of the tools matching `tool` are kept, and whose they are:
/// `per_caller: true` keeps each caller's apart (a provider that calls its upstream with each
/// caller's own credentials is always so).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CacheRule {
    #[serde(deserialize_with = "text")]
    pub tool: String,
    #[serde(
        rename = "ttl_ms",
        deserialize_with = "millis::<_, 0>",
        serialize_with = "as_millis"
    )]
    pub ttl: Duration,
    #[serde(default)]
    pub per_caller: bool,
}

/// Outlier ejection among the children of a pool: a child whose last `consecutive_failures`
/// calls all failed for its own sake, or whose mean latency is `latency_factor` times its
/// siblings', is left out of rotation for `ejection` (doubling each time, up to
/// `max_ejection`), then given calls again. The last child in rotation is never ejected.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutlierConfig {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "default_consecutive", deserialize_with = "count::<_, 1>")]
    pub consecutive_failures: u64,
    #[serde(default = "default_latency_factor", deserialize_with = "count::<_, 2>")]
    pub latency_factor: u64,
    #[serde(
        default = "default_ejection",
        rename = "ejection_ms",
        deserialize_with = "millis::<_, 10>",
        serialize_with = "as_millis"
    )]
    pub ejection: Duration,
    #[serde(
        default = "default_max_ejection",
        rename = "max_ejection_ms",
        deserialize_with = "millis::<_, 10>",
        serialize_with = "as_millis"
    )]
    pub max_ejection: Duration,
}

fn default_consecutive() -> u64 {
    5
}
fn default_latency_factor() -> u64 {
    5
}
fn default_ejection() -> Duration {
    Duration::from_secs(10)
}
fn default_max_ejection() -> Duration {
    Duration::from_secs(300)
}

impl Default for OutlierConfig {
    fn default() -> Self {
        OutlierConfig {
            enabled: true,
            consecutive_failures: default_consecutive(),
            latency_factor: default_latency_factor(),
            ejection: default_ejection(),
            max_ejection: default_max_ejection(),
        }
    }
}

impl OutlierConfig {
    fn is_default(&self) -> bool {
        *self == OutlierConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<Resilience, String> {
        serde_saphyr::from_str::<Resilience>(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn an_empty_section_is_every_default() {
        let r = read("{}").unwrap();
        assert!(r.is_default());
        assert!(r.breaker.enabled && r.retry.enabled && r.cache.enabled && r.outlier.enabled);
        assert!(!r.hedge.enabled, "hedging is off unless asked for");
        assert_eq!(r.breaker.failure_percent, 50);
        assert_eq!(r.breaker.min_calls, 20);
        assert_eq!(r.retry.attempts, 3);
        assert_eq!(r.retry.budget_percent, 20);
        assert!(
            r.cache.tools.is_empty(),
            "nothing is kept unless a rule says so"
        );
        r.check().unwrap();
    }

    #[test]
    fn globs_mark_tools_read_only_or_idempotent() {
        let r = read("{ read_only: [get_*], idempotent: [put] }").unwrap();
        assert!(r.read_only("get_user") && r.idempotent("get_user"));
        assert!(!r.read_only("put") && r.idempotent("put"));
        assert!(!r.idempotent("post"));
    }

    #[test]
    fn bad_settings_are_refused_with_the_key() {
        for (yaml, says) in [
            ("{ breaker: { failure_percent: 101 } }", "failure_percent"),
            (
                "{ breaker: { open_ms: 5000, max_open_ms: 1000 } }",
                "max_open_ms",
            ),
            ("{ retry: { attempts: 11 } }", "attempts"),
            ("{ retry: { budget_percent: 150 } }", "budget_percent"),
            (
                "{ retry: { backoff_ms: 500, max_backoff_ms: 10 } }",
                "max_backoff_ms",
            ),
            (
                "{ outlier: { ejection_ms: 500, max_ejection_ms: 10 } }",
                "max_ejection_ms",
            ),
        ] {
            let error = read(yaml).unwrap().check().unwrap_err().to_string();
            assert!(error.contains(says), "{yaml}: {error}");
        }
        for yaml in [
            "{ breaker: { min_calls: 0 } }",
            "{ retry: { atempts: 2 } }",
            "{ cache: { tools: [ { tool: x } ] } }",
            "{ breaker: { window_ms: 5 } }",
        ] {
            assert!(read(yaml).is_err(), "{yaml} was read");
        }
    }

    #[test]
    fn a_cache_rule_is_the_first_that_matches() {
        let r = read("{ cache: { tools: [ { tool: a*, ttl_ms: 100 }, { tool: '*', ttl_ms: 5, per_caller: true } ] } }").unwrap();
        assert_eq!(
            r.cache.rule_for("ab").unwrap().ttl,
            Duration::from_millis(100)
        );
        assert!(r.cache.rule_for("b").unwrap().per_caller);
    }
}
