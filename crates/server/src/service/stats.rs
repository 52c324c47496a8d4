//! Per-tool call statistics: how many calls, how many failed recently, how long they took,
//! when one last succeeded or failed. Recorded by `Service::call_tool` (REST and MCP alike),
//! read by GET /health (`data.tools`) and by whatever exports metrics ([`ToolStats::snapshot`]).
//!
//! What counts (the contract's `ToolHealth` says the same to clients):
//! - a call is recorded once it reached the provider (argument validation passed); refusals
//!   before that (rate limit, admission: SERVICE_UNAVAILABLE, RATE_LIMITED) are not recorded;
//! - only the tool's own failures count as errors: EXECUTION_ERROR, TIMEOUT, INTERNAL_ERROR;
//!   the caller's mistakes (INVALID_ARGUMENTS, also when the upstream says so) are calls that
//!   did not fail.
//!
//! Windows, so memory is bounded per tool whatever the traffic: calls and errors in thirty
//! 10-second buckets (the error rate is over the last 5 minutes, queries per minute over the
//! last 6 buckets), and the durations of the last [`SAMPLES`] calls in a ring (percentiles over
//! those of them that are less than 5 minutes old). About 1.5 KB per tool.
//!
//! Lock-light: the map of tools is read-locked to find a tool's record (write-locked only the
//! first time a tool is called), and each record has its own mutex held for a few array writes.
//! Nothing is held across an await.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use contract::{DependencyState, ErrorCode, ToolFailure, ToolHealth, ToolStatus};

use crate::sync::Unpoisoned;

/// Width of one counting bucket.
const BUCKET_SECS: u64 = 10;
/// Buckets kept: 30 × 10 s = the 5-minute window of the error rate.
const BUCKETS: usize = 30;
/// Buckets in "the last minute" (the current one, partly filled, and five full ones).
const MINUTE_BUCKETS: u64 = 6;
/// How far back latency samples are used.
const WINDOW: Duration = Duration::from_secs(BUCKET_SECS * BUCKETS as u64);
/// Durations kept per tool for the percentiles.
pub const SAMPLES: usize = 128;
/// A failure's message is kept up to this many characters.
const MESSAGE_CHARS: usize = 256;
/// Error rate from which a tool is `degraded`…
const DEGRADED_ERROR_RATE: f64 = 0.25;
/// …once the window has at least this many calls (one failed call of one is not a trend).
const DEGRADED_MIN_CALLS: u64 = 4;

/// What became of one call, as far as the tool's health goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    Success,
    /// The tool's own failure.
    Failure,
    /// The tool answered; the caller was wrong.
    CallersMistake,
    /// The tool never ran (refused before it): not recorded.
    NotRun,
}

impl Counted {
    pub fn of(code: ErrorCode) -> Counted {
        match code {
            ErrorCode::ExecutionError | ErrorCode::Timeout | ErrorCode::InternalError => {
                Counted::Failure
            }
            ErrorCode::ServiceUnavailable | ErrorCode::RateLimited => Counted::NotRun,
            _ => Counted::CallersMistake,
        }
    }
}

/// The statistics of every tool of a service.
pub struct ToolStats {
    epoch: Instant,
    tools: RwLock<HashMap<String, Arc<Mutex<Record>>>>,
}

impl Default for ToolStats {
    fn default() -> Self {
        ToolStats {
            epoch: Instant::now(),
            tools: RwLock::new(HashMap::new()),
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Bucket {
    /// Which 10-second interval since the epoch this bucket counts (reused round-robin).
    slot: u32,
    calls: u32,
    failures: u32,
}

#[derive(Clone, Copy, Default)]
struct Sample {
    /// Seconds since the epoch when the call ended.
    at: u32,
    micros: u32,
}

struct Record {
    calls: u64,
    failures: u64,
    buckets: [Bucket; BUCKETS],
    samples: [Sample; SAMPLES],
    /// Where the next sample goes; `filled` of them are valid.
    next: usize,
    filled: usize,
    last_success: Option<DateTime<Utc>>,
    last_error: Option<LastError>,
    /// The clients calling most, [`CALLERS_KEPT`] at most, counted the Space-Saving way: a new
    /// caller takes the least counted one's place with its count plus one, so the heaviest
    /// callers stay and no count is ever too low.
    callers: Vec<(Arc<str>, u64)>,
}

/// How many callers a tool keeps counts of; /health shows the first 3.
const CALLERS_KEPT: usize = 16;

/// A tool's last failure that counts against it.
#[derive(Debug, Clone, PartialEq)]
pub struct LastError {
    pub at: DateTime<Utc>,
    pub code: ErrorCode,
    /// At most [`MESSAGE_CHARS`] characters; /health shows it, GET /status never does.
    pub message: String,
    /// The failed call's request id (what a person looking at GET /status looks up in the
    /// log); `None` when it was recorded without one.
    pub request_id: Option<String>,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            calls: 0,
            failures: 0,
            buckets: [Bucket::default(); BUCKETS],
            samples: [Sample::default(); SAMPLES],
            next: 0,
            filled: 0,
            last_success: None,
            last_error: None,
            callers: Vec::new(),
        }
    }
}

/// One tool's numbers at one moment (what /health shows and metrics export); the default is a
/// tool never called.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolSnapshot {
    /// Since the service started.
    pub calls: u64,
    pub failures: u64,
    /// In the 5-minute window.
    pub window_calls: u64,
    pub window_failures: u64,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub queries_per_minute: u64,
    pub last_success: Option<DateTime<Utc>>,
    pub last_error: Option<LastError>,
    /// The clients calling most, most first (3 at most).
    pub top_callers: Vec<(Arc<str>, u64)>,
}

impl ToolSnapshot {
    /// Failed ÷ all calls in the window; 0 with none.
    pub fn error_rate(&self) -> f64 {
        if self.window_calls == 0 {
            0.0
        } else {
            self.window_failures as f64 / self.window_calls as f64
        }
    }

    /// The tool's status from its recent error rate and its dependency's state (`None`: no
    /// dependency known for it, taken as connected).
    pub fn status(&self, dependency: Option<DependencyState>) -> ToolStatus {
        match dependency {
            Some(DependencyState::Unavailable) => ToolStatus::Unavailable,
            Some(DependencyState::Unknown) => ToolStatus::Degraded,
            _ if self.window_calls >= DEGRADED_MIN_CALLS
                && self.error_rate() >= DEGRADED_ERROR_RATE =>
            {
                ToolStatus::Degraded
            }
            _ => ToolStatus::Healthy,
        }
    }

    /// The contract's form, with the status decided by [`ToolSnapshot::status`].
    pub fn to_health(&self, dependency: Option<DependencyState>) -> ToolHealth {
        ToolHealth {
            status: self.status(dependency),
            calls: self.calls,
            // Four decimals: a rate, not a float's noise.
            error_rate: (self.error_rate() * 10_000.0).round() / 10_000.0,
            last_success: self.last_success.map(crate::clock::format),
            last_error: self.last_error.as_ref().map(|last| ToolFailure {
                at: crate::clock::format(last.at),
                code: last.code,
                message: last.message.clone(),
            }),
            p50_ms: self.p50_ms,
            p95_ms: self.p95_ms,
            queries_per_minute: self.queries_per_minute,
            // Named by the caller of this, as a public document may name clients.
            top_callers: Vec::new(),
        }
    }
}

impl ToolStats {
    /// Records one call of `tool` that took `took`: `Ok(())`, or the code and message it
    /// failed with.
    pub fn record(&self, tool: &str, took: Duration, outcome: Result<(), (ErrorCode, &str)>) {
        self.record_at(Instant::now(), tool, took, outcome);
    }

    /// Records a call as `Service::call_tool` ends it, with its request id (kept with a
    /// failure: GET /status shows it).
    pub(super) fn record_call<T>(
        &self,
        tool: &str,
        request_id: &str,
        started: Instant,
        result: &Result<T, super::CallFailure>,
    ) {
        let outcome = match result {
            Ok(_) => Ok(()),
            Err(failure) => Err((failure.code, failure.message.as_str())),
        };
        let request_id = Some(request_id).filter(|id| !id.is_empty());
        self.record_with_id(Instant::now(), tool, started.elapsed(), outcome, request_id);
    }

    fn record_at(
        &self,
        now: Instant,
        tool: &str,
        took: Duration,
        outcome: Result<(), (ErrorCode, &str)>,
    ) {
        self.record_with_id(now, tool, took, outcome, None);
    }

    fn record_with_id(
        &self,
        now: Instant,
        tool: &str,
        took: Duration,
        outcome: Result<(), (ErrorCode, &str)>,
        request_id: Option<&str>,
    ) {
        let counted = match outcome {
            Ok(()) => Counted::Success,
            Err((code, _)) => Counted::of(code),
        };
        if counted == Counted::NotRun {
            return;
        }
        let record = self.record_of(tool);
        let secs = now.saturating_duration_since(self.epoch).as_secs();
        let mut record = record.write_unpoisoned();
        record.calls += 1;
        let slot = (secs / BUCKET_SECS) as u32;
        let bucket = &mut record.buckets[slot as usize % BUCKETS];
        if bucket.slot != slot || bucket.calls == 0 {
            *bucket = Bucket {
                slot,
                calls: 0,
                failures: 0,
            };
        }
        bucket.calls += 1;
        let at = record.next;
        record.samples[at] = Sample {
            at: secs as u32,
            micros: took.as_micros().min(u32::MAX as u128) as u32,
        };
        record.next = (at + 1) % SAMPLES;
        record.filled = (record.filled + 1).min(SAMPLES);
        match (counted, outcome) {
            (Counted::Success, _) => record.last_success = Some(Utc::now()),
            (Counted::Failure, Err((code, message))) => {
                record.failures += 1;
                record.buckets[slot as usize % BUCKETS].failures += 1;
                let message: String = message.chars().take(MESSAGE_CHARS).collect();
                record.last_error = Some(LastError {
                    at: Utc::now(),
                    code,
                    message,
                    request_id: request_id.map(str::to_owned),
                });
            }
            _ => {}
        }
    }

    fn record_of(&self, tool: &str) -> Arc<Mutex<Record>> {
        if let Some(record) = self.tools.read_unpoisoned().get(tool) {
            return record.clone();
        }
        self.tools
            .write_unpoisoned()
            .entry(tool.to_owned())
            .or_default()
            .clone()
    }

    /// Every tool called since the start (or since [`ToolStats::retain`] last kept it).
    pub fn snapshot(&self) -> BTreeMap<String, ToolSnapshot> {
        self.snapshot_at(Instant::now())
    }

    /// One more call of `tool` by `client` (kept when the tool's numbers are).
    pub fn count_caller(&self, tool: &str, client: &Arc<str>) {
        let Some(record) = self.tools.read_unpoisoned().get(tool).cloned() else {
            return;
        };
        let mut record = record.write_unpoisoned();
        let callers = &mut record.callers;
        if let Some(entry) = callers.iter_mut().find(|(c, _)| c == client) {
            entry.1 += 1;
        } else if callers.len() < CALLERS_KEPT {
            callers.push((client.clone(), 1));
        } else if let Some(least) = callers.iter_mut().min_by_key(|(_, n)| *n) {
            *least = (client.clone(), least.1 + 1);
        }
    }

    /// One tool's numbers; `None` when it was never called.
    pub fn tool(&self, tool: &str) -> Option<ToolSnapshot> {
        let record = self.tools.read_unpoisoned().get(tool)?.clone();
        let now = Instant::now()
            .saturating_duration_since(self.epoch)
            .as_secs();
        let record = record.write_unpoisoned();
        Some(summarize(&record, now))
    }

    fn snapshot_at(&self, now: Instant) -> BTreeMap<String, ToolSnapshot> {
        let now = now.saturating_duration_since(self.epoch).as_secs();
        let records: Vec<(String, Arc<Mutex<Record>>)> = self
            .tools
            .read_unpoisoned()
            .iter()
            .map(|(name, record)| (name.clone(), record.clone()))
            .collect();
        records
            .into_iter()
            .map(|(name, record)| {
                let summary = summarize(&record.write_unpoisoned(), now);
                (name, summary)
            })
            .collect()
    }

    /// Forgets the tools `keep` says no to (tools gone after a reload), so the map holds no
    /// more than the tools listed.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.tools.write_unpoisoned().retain(|name, _| keep(name));
    }
}

/// A record's numbers as of `now` (seconds since the epoch).
fn summarize(record: &Record, now: u64) -> ToolSnapshot {
    let slot = now / BUCKET_SECS;
    let in_last = |buckets: u64| {
        let from = slot.saturating_sub(buckets - 1);
        record
            .buckets
            .iter()
            .filter(move |b| b.calls > 0 && (from..=slot).contains(&(b.slot as u64)))
    };
    let (window_calls, window_failures) = in_last(BUCKETS as u64).fold((0, 0), |(c, f), b| {
        (c + b.calls as u64, f + b.failures as u64)
    });
    let queries_per_minute = in_last(MINUTE_BUCKETS).map(|b| b.calls as u64).sum();
    let oldest = now.saturating_sub(WINDOW.as_secs());
    let mut micros: Vec<u32> = record.samples[..record.filled]
        .iter()
        .filter(|s| s.at as u64 >= oldest)
        .map(|s| s.micros)
        .collect();
    micros.sort_unstable();
    ToolSnapshot {
        calls: record.calls,
        failures: record.failures,
        window_calls,
        window_failures,
        p50_ms: percentile_ms(&micros, 0.50),
        p95_ms: percentile_ms(&micros, 0.95),
        queries_per_minute,
        last_success: record.last_success,
        last_error: record.last_error.clone(),
        top_callers: {
            let mut callers = record.callers.clone();
            callers.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            callers.truncate(3);
            callers
        },
    }
}

/// The nearest-rank percentile of sorted durations, in milliseconds to the microsecond.
fn percentile_ms(sorted_micros: &[u32], p: f64) -> Option<f64> {
    if sorted_micros.is_empty() {
        return None;
    }
    let rank = ((p * sorted_micros.len() as f64).ceil() as usize).clamp(1, sorted_micros.len());
    Some(sorted_micros[rank - 1] as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAILED: Result<(), (ErrorCode, &str)> = Err((ErrorCode::ExecutionError, "it broke"));

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn percentiles_are_nearest_rank_over_the_calls_recorded() {
        let stats = ToolStats::default();
        let now = stats.epoch;
        for n in 1..=100 {
            stats.record_at(now, "t", ms(n), Ok(()));
        }
        let s = &stats.snapshot_at(now)["t"];
        assert_eq!((s.p50_ms, s.p95_ms), (Some(50.0), Some(95.0)));
        assert_eq!(s.calls, 100);
        // Microseconds survive.
        stats.record_at(now, "u", Duration::from_micros(1500), Ok(()));
        assert_eq!(stats.snapshot_at(now)["u"].p95_ms, Some(1.5));
    }

    #[test]
    fn the_latency_ring_keeps_the_last_calls_only() {
        let stats = ToolStats::default();
        let now = stats.epoch;
        for _ in 0..SAMPLES {
            stats.record_at(now, "t", ms(1000), Ok(()));
        }
        for _ in 0..SAMPLES {
            stats.record_at(now, "t", ms(2), Ok(()));
        }
        let s = &stats.snapshot_at(now)["t"];
        assert_eq!((s.p50_ms, s.p95_ms), (Some(2.0), Some(2.0)));
        assert_eq!(s.calls, 2 * SAMPLES as u64);
    }

    #[test]
    fn the_window_forgets_calls_older_than_five_minutes() {
        let stats = ToolStats::default();
        let start = stats.epoch;
        for _ in 0..10 {
            stats.record_at(start, "t", ms(500), FAILED);
        }
        let later = start + WINDOW + Duration::from_secs(BUCKET_SECS);
        stats.record_at(later, "t", ms(3), Ok(()));
        let s = &stats.snapshot_at(later)["t"];
        assert_eq!((s.window_calls, s.window_failures), (1, 0));
        assert_eq!(s.error_rate(), 0.0);
        assert_eq!(s.p95_ms, Some(3.0), "old samples are not used");
        assert_eq!((s.calls, s.failures), (11, 10), "totals stay");
        // Four minutes on, the failures are still in the window.
        let s = &stats.snapshot_at(start + Duration::from_secs(240))["t"];
        assert_eq!((s.window_calls, s.window_failures), (10, 10));
    }

    #[test]
    fn queries_per_minute_counts_the_last_minute() {
        let stats = ToolStats::default();
        let start = stats.epoch;
        for i in 0..30u64 {
            // One call every 4 seconds for two minutes.
            stats.record_at(start + Duration::from_secs(4 * i), "t", ms(1), Ok(()));
        }
        let s = &stats.snapshot_at(start + Duration::from_secs(119))["t"];
        // Buckets 60–119 s: calls at 60, 64, …, 116.
        assert_eq!(s.queries_per_minute, 15);
        assert_eq!(s.window_calls, 30);
        let s = &stats.snapshot_at(start + Duration::from_secs(400))["t"];
        assert_eq!(s.queries_per_minute, 0);
    }

    #[test]
    fn only_the_tools_own_failures_count_as_errors() {
        let stats = ToolStats::default();
        let now = stats.epoch;
        stats.record_at(now, "t", ms(1), Ok(()));
        stats.record_at(now, "t", ms(1), Err((ErrorCode::InvalidArguments, "bad")));
        stats.record_at(now, "t", ms(1), Err((ErrorCode::Timeout, "slow")));
        stats.record_at(
            now,
            "t",
            ms(1),
            Err((ErrorCode::ServiceUnavailable, "full")),
        );
        stats.record_at(now, "t", ms(1), Err((ErrorCode::RateLimited, "slow down")));
        let s = &stats.snapshot_at(now)["t"];
        assert_eq!((s.calls, s.window_calls, s.window_failures), (3, 3, 1));
        let health = s.to_health(Some(DependencyState::Connected));
        assert_eq!(health.error_rate, 0.3333);
        let failure = health.last_error.unwrap();
        assert_eq!(
            (failure.code, failure.message.as_str()),
            (ErrorCode::Timeout, "slow")
        );
        assert!(health.last_success.is_some());
        // Refusals alone leave no record.
        stats.record_at(now, "r", ms(1), Err((ErrorCode::RateLimited, "no")));
        assert!(!stats.snapshot_at(now).contains_key("r"));
    }

    /// Space-Saving: the heaviest callers stay among many light ones, and a count is never
    /// below the calls truly made (a newcomer takes the least count, plus one).
    #[test]
    fn the_heaviest_callers_stay_and_no_count_is_too_low() {
        let stats = ToolStats::default();
        stats.record("t", ms(1), Ok(()));
        let heavy: Arc<str> = "sub:heavy".into();
        let second: Arc<str> = "sub:second".into();
        for round in 0..100 {
            stats.count_caller("t", &heavy);
            if round % 2 == 0 {
                stats.count_caller("t", &second);
            }
            // A new light caller every round: far more callers than are kept.
            stats.count_caller("t", &format!("sub:light{round}").into());
        }
        // Not counted for a tool never called (no record to keep them in).
        stats.count_caller("never", &heavy);
        assert!(stats.tool("never").is_none());
        let top = stats.tool("t").unwrap().top_callers;
        assert_eq!(top.len(), 3);
        assert_eq!(top[0], (heavy, 100));
        assert_eq!(top[1], (second, 50));
        // The third is a light caller, counted at least once: never too low.
        assert!(
            top[2].0.starts_with("sub:light") && top[2].1 >= 1,
            "{top:?}"
        );
    }

    #[test]
    fn long_messages_are_cut() {
        let stats = ToolStats::default();
        let long = "é".repeat(1000);
        stats.record("t", ms(1), Err((ErrorCode::ExecutionError, long.as_str())));
        let last = stats.tool("t").unwrap().last_error.unwrap();
        assert_eq!(last.message.chars().count(), MESSAGE_CHARS);
    }

    #[test]
    fn the_last_error_keeps_its_request_id() {
        let stats = ToolStats::default();
        let failed: Result<(), super::super::CallFailure> = Err(super::super::CallFailure::new(
            ErrorCode::Timeout,
            "too slow".into(),
        ));
        stats.record_call("t", "req-failed", Instant::now(), &failed);
        let ok: Result<(), super::super::CallFailure> = Ok(());
        stats.record_call("t", "req-ok", Instant::now(), &ok);
        let last = stats.tool("t").unwrap().last_error.unwrap();
        assert_eq!(last.request_id.as_deref(), Some("req-failed"));
        assert_eq!(last.code, ErrorCode::Timeout);
        // The caller's mistake is no failure of the tool: the last error stays.
        let mistake: Result<(), super::super::CallFailure> = Err(super::super::CallFailure::new(
            ErrorCode::InvalidArguments,
            "bad".into(),
        ));
        stats.record_call("t", "req-mistake", Instant::now(), &mistake);
        let last = stats.tool("t").unwrap().last_error.unwrap();
        assert_eq!(last.request_id.as_deref(), Some("req-failed"));
    }

    #[test]
    fn status_follows_the_dependency_then_the_error_rate() {
        let stats = ToolStats::default();
        let now = stats.epoch;
        let status = |dep| stats.snapshot_at(now)["t"].status(dep);
        stats.record_at(now, "t", ms(1), FAILED);
        // One failure of one call is not yet a trend.
        assert_eq!(status(None), ToolStatus::Healthy);
        for _ in 0..2 {
            stats.record_at(now, "t", ms(1), Ok(()));
        }
        stats.record_at(now, "t", ms(1), Ok(()));
        // 1 of 4 = 25 %: degraded.
        assert_eq!(
            status(Some(DependencyState::Connected)),
            ToolStatus::Degraded
        );
        stats.record_at(now, "t", ms(1), Ok(()));
        // 1 of 5 = 20 %: healthy.
        assert_eq!(
            status(Some(DependencyState::Connected)),
            ToolStatus::Healthy
        );
        // The dependency decides first.
        assert_eq!(status(Some(DependencyState::Unknown)), ToolStatus::Degraded);
        assert_eq!(
            status(Some(DependencyState::Unavailable)),
            ToolStatus::Unavailable
        );
        // A tool never called, its dependency down: unavailable all the same.
        let never = ToolSnapshot::default();
        assert_eq!(
            never.status(Some(DependencyState::Unavailable)),
            ToolStatus::Unavailable
        );
        assert_eq!(
            never.status(Some(DependencyState::Connected)),
            ToolStatus::Healthy
        );
    }

    #[test]
    fn retain_forgets_tools_no_longer_listed() {
        let stats = ToolStats::default();
        stats.record("a", ms(1), Ok(()));
        stats.record("b", ms(1), Ok(()));
        stats.retain(|name| name == "a");
        assert_eq!(stats.snapshot().keys().collect::<Vec<_>>(), ["a"]);
    }
}
