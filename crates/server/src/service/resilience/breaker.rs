//! A provider's circuit breaker: closed, it counts calls and upstream failures over a sliding
//! window and opens when enough of them failed; open, it refuses every call at once until its
//! interval ends; half-open, it lets a few real calls through as probes and closes when they
//! succeed, or opens again for twice as long when one fails.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::window::Window;
use crate::config::BreakerConfig;
use crate::sync::Unpoisoned;

/// What one call's end says of the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Success,
    /// The upstream failed: unreachable, its connection lost, timed out, or a 5xx.
    Failure,
    /// Says nothing of the upstream (the caller's arguments, a tool's own error, a cancel).
    Neutral,
}

/// The breaker's state, as /health and /metrics show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerState {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }
}

/// A call refused because the breaker is open (or its probes are all out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    pub retry_after: Duration,
}

/// What one call holds of the breaker: recorded when the call ends, or as neutral when it is
/// dropped unrecorded (a cancelled call frees its probe).
#[must_use]
#[derive(Debug)]
pub struct Pass<'a> {
    breaker: &'a Breaker,
    probe: bool,
    recorded: bool,
}

impl Pass<'_> {
    pub fn record(mut self, verdict: Verdict) {
        self.recorded = true;
        self.breaker.record(self.probe, verdict, Instant::now());
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if !self.recorded {
            self.breaker
                .record(self.probe, Verdict::Neutral, Instant::now());
        }
    }
}

#[derive(Debug)]
enum Phase {
    Closed,
    Open { until: Instant },
    HalfOpen { out: u64, passed: u64 },
}

#[derive(Debug)]
struct State {
    phase: Phase,
    window: Window,
    /// Opens in a row without closing: each doubles the interval.
    streak: u32,
    since: DateTime<Utc>,
    last_reason: Option<String>,
}

#[derive(Debug)]
pub struct Breaker {
    service: String,
    provider: String,
    config: BreakerConfig,
    state: Mutex<State>,
    opened: AtomicU64,
    refused: AtomicU64,
}

/// The breaker as /health reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerReport {
    pub state: BreakerState,
    pub since: DateTime<Utc>,
    /// While open: when probes begin.
    pub retry_after: Option<Duration>,
    /// Why it last opened.
    pub reason: Option<String>,
    pub opened: u64,
    pub refused: u64,
}

impl Breaker {
    pub fn new(service: &str, provider: &str, config: BreakerConfig) -> Breaker {
        let now = Instant::now();
        Breaker {
            service: service.to_owned(),
            provider: provider.to_owned(),
            state: Mutex::new(State {
                phase: Phase::Closed,
                window: Window::new(config.window, now),
                streak: 0,
                since: Utc::now(),
                last_reason: None,
            }),
            config,
            opened: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// Lets a call through, or refuses it at once.
    pub fn admit(&self) -> Result<Pass<'_>, Refused> {
        self.admit_at(Instant::now())
    }

    fn admit_at(&self, now: Instant) -> Result<Pass<'_>, Refused> {
        let pass = |probe| Pass {
            breaker: self,
            probe,
            recorded: false,
        };
        if !self.config.enabled {
            return Ok(pass(false));
        }
        let mut state = self.state.write_unpoisoned();
        match state.phase {
            Phase::Closed => Ok(pass(false)),
            Phase::Open { until } if now < until => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                Err(Refused {
                    retry_after: until - now,
                })
            }
            Phase::Open { .. } => {
                state.phase = Phase::HalfOpen { out: 1, passed: 0 };
                state.since = Utc::now();
                tracing::info!(service = %self.service, provider = %self.provider, "circuit half-open: letting probe calls through");
                Ok(pass(true))
            }
            Phase::HalfOpen { ref mut out, .. } if *out < self.config.probes => {
                *out += 1;
                Ok(pass(true))
            }
            Phase::HalfOpen { .. } => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                Err(Refused {
                    retry_after: Duration::from_secs(1),
                })
            }
        }
    }

    fn record(&self, probe: bool, verdict: Verdict, now: Instant) {
        if !self.config.enabled {
            return;
        }
        let mut state = self.state.write_unpoisoned();
        match (&mut state.phase, probe) {
            (Phase::HalfOpen { out, passed }, true) => {
                *out = out.saturating_sub(1);
                match verdict {
                    Verdict::Failure => {
                        self.open(&mut state, now, "a probe call failed".to_owned())
                    }
                    Verdict::Success => {
                        *passed += 1;
                        if *passed >= self.config.probes {
                            state.phase = Phase::Closed;
                            state.window.clear();
                            state.streak = 0;
                            state.since = Utc::now();
                            tracing::info!(service = %self.service, provider = %self.provider, "circuit closed: the probe calls succeeded");
                        }
                    }
                    Verdict::Neutral => {}
                }
            }
            (Phase::Closed, false) => {
                let failed = match verdict {
                    Verdict::Success => 0,
                    Verdict::Failure => 1,
                    Verdict::Neutral => return,
                };
                state.window.add(now, 0, 1);
                state.window.add(now, 1, failed);
                if failed == 0 {
                    return;
                }
                let [calls, failures] = state.window.totals(now);
                if calls >= self.config.min_calls
                    && failures * 100 >= self.config.failure_percent * calls
                {
                    let reason = format!(
                        "{failures} of the last {calls} calls failed within {} ms",
                        state.window.span().as_millis()
                    );
                    self.open(&mut state, now, reason);
                }
            }
            // A call let through before the breaker changed state says nothing of now.
            _ => {}
        }
    }

    /// The upstream is back (a dependency check found it connected after it was not: a child
    /// restarted, a server reachable again): an open circuit goes half-open at once, so the
    /// next calls probe the new upstream instead of waiting out the failures of the old one.
    pub fn upstream_back(&self) {
        if !self.config.enabled {
            return;
        }
        let mut state = self.state.write_unpoisoned();
        if let Phase::Open { .. } = state.phase {
            state.phase = Phase::HalfOpen { out: 0, passed: 0 };
            state.since = Utc::now();
            tracing::info!(service = %self.service, provider = %self.provider, "circuit half-open: the upstream is connected again");
        }
    }

    fn open(&self, state: &mut State, now: Instant, reason: String) {
        let interval = self
            .config
            .open
            .saturating_mul(1 << state.streak.min(16))
            .min(self.config.max_open);
        state.streak = state.streak.saturating_add(1);
        state.phase = Phase::Open {
            until: now + interval,
        };
        state.since = Utc::now();
        self.opened.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            service = %self.service, provider = %self.provider,
            open_ms = interval.as_millis() as u64,
            "circuit open: {reason}; calls are refused at once until probes succeed"
        );
        state.last_reason = Some(reason);
    }

    pub fn report(&self) -> BreakerReport {
        let now = Instant::now();
        let state = self.state.write_unpoisoned();
        let (phase, retry_after) = match state.phase {
            Phase::Closed => (BreakerState::Closed, None),
            Phase::Open { until } if now < until => (BreakerState::Open, Some(until - now)),
            // Its interval is over: the next call is a probe. Shown so, or a balancer that
            // routes by /health would never send the call that probes.
            Phase::Open { .. } | Phase::HalfOpen { .. } => (BreakerState::HalfOpen, None),
        };
        BreakerReport {
            state: phase,
            since: state.since,
            retry_after,
            reason: state.last_reason.clone(),
            opened: self.opened.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    #[cfg(test)]
    fn state(&self) -> BreakerState {
        self.report().state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(min_calls: u64, open_ms: u64) -> Breaker {
        Breaker::new(
            "s",
            "p",
            BreakerConfig {
                min_calls,
                open: Duration::from_millis(open_ms),
                max_open: Duration::from_millis(open_ms * 4),
                probes: 2,
                ..BreakerConfig::default()
            },
        )
    }

    fn call(b: &Breaker, now: Instant, verdict: Verdict) -> Result<(), Refused> {
        let pass = b.admit_at(now)?;
        b.record(pass.probe, verdict, now);
        std::mem::forget(pass);
        Ok(())
    }

    #[test]
    fn it_opens_on_the_failure_rate_once_enough_calls_were_seen() {
        let b = breaker(4, 1000);
        let t = Instant::now();
        // Three failures are below min_calls: still closed.
        for _ in 0..3 {
            call(&b, t, Verdict::Failure).unwrap();
        }
        assert_eq!(b.state(), BreakerState::Closed);
        call(&b, t, Verdict::Failure).unwrap();
        assert_eq!(b.state(), BreakerState::Open);
        let refused = call(&b, t + Duration::from_millis(400), Verdict::Success).unwrap_err();
        assert_eq!(refused.retry_after, Duration::from_millis(600));
        assert_eq!(b.report().opened, 1);
        assert_eq!(b.report().refused, 1);
        assert!(
            b.report()
                .reason
                .unwrap()
                .starts_with("4 of the last 4 calls failed")
        );
    }

    #[test]
    fn successes_keep_it_closed_and_neutral_ends_are_not_counted() {
        let b = breaker(4, 1000);
        let t = Instant::now();
        for verdict in [Verdict::Success, Verdict::Success, Verdict::Failure] {
            call(&b, t, verdict).unwrap();
        }
        for _ in 0..10 {
            call(&b, t, Verdict::Neutral).unwrap();
        }
        // 1 of 3 counted: below min_calls; then 2 of 4 is 50 %: open.
        assert_eq!(b.state(), BreakerState::Closed);
        call(&b, t, Verdict::Failure).unwrap();
        assert_eq!(b.state(), BreakerState::Open);
    }

    #[test]
    fn probes_close_it_and_a_failed_probe_opens_it_for_twice_as_long() {
        let b = breaker(1, 100);
        let t = Instant::now();
        call(&b, t, Verdict::Failure).unwrap();
        assert_eq!(b.state(), BreakerState::Open);
        // After the interval: two probes at once, a third is refused.
        let later = t + Duration::from_millis(100);
        let first = b.admit_at(later).unwrap();
        let second = b.admit_at(later).unwrap();
        assert!(first.probe && second.probe);
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(b.admit_at(later).is_err());
        b.record(true, Verdict::Failure, later);
        std::mem::forget(first);
        // Open again for 200 ms.
        assert_eq!(
            b.admit_at(later + Duration::from_millis(150))
                .unwrap_err()
                .retry_after,
            Duration::from_millis(50)
        );
        // The second probe ends after the reopening: it changes nothing.
        drop(second);
        assert_eq!(b.state(), BreakerState::Open);
        let again = later + Duration::from_millis(200);
        call(&b, again, Verdict::Success).unwrap();
        assert_eq!(b.state(), BreakerState::HalfOpen);
        call(&b, again, Verdict::Success).unwrap();
        assert_eq!(b.state(), BreakerState::Closed);
        // Closed afresh: the old failures are forgotten and the interval is back to 100 ms.
        call(&b, again, Verdict::Failure).unwrap();
        assert_eq!(
            b.admit_at(again).unwrap_err().retry_after,
            Duration::from_millis(100)
        );
    }

    #[test]
    fn an_upstream_back_makes_an_open_circuit_probe_at_once() {
        let b = breaker(1, 60_000);
        let t = Instant::now();
        b.upstream_back();
        assert_eq!(
            b.state(),
            BreakerState::Closed,
            "a closed circuit stays closed"
        );
        call(&b, t, Verdict::Failure).unwrap();
        assert_eq!(b.state(), BreakerState::Open);
        assert!(b.admit_at(t).is_err());
        b.upstream_back();
        assert_eq!(b.state(), BreakerState::HalfOpen);
        call(&b, t, Verdict::Success).unwrap();
        call(&b, t, Verdict::Success).unwrap();
        assert_eq!(b.state(), BreakerState::Closed, "the probes closed it");
    }

    #[test]
    fn a_probe_dropped_unrecorded_frees_its_place() {
        let b = breaker(1, 10);
        let t = Instant::now();
        call(&b, t, Verdict::Failure).unwrap();
        let later = t + Duration::from_millis(10);
        drop(b.admit_at(later).unwrap());
        drop(b.admit_at(later).unwrap());
        assert!(
            b.admit_at(later).is_ok(),
            "dropped probes still held their places"
        );
    }

    #[test]
    fn a_disabled_breaker_lets_everything_through() {
        let b = Breaker::new(
            "s",
            "p",
            BreakerConfig {
                enabled: false,
                min_calls: 1,
                ..BreakerConfig::default()
            },
        );
        for _ in 0..50 {
            call(&b, Instant::now(), Verdict::Failure).unwrap();
        }
        assert_eq!(b.state(), BreakerState::Closed);
    }
}
