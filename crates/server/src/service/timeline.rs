//! The last hour of the service, for GET /status's charts: a ring of samples taken every
//! `monitoring.status_interval_ms` (10 s by default) by a background loop
//! ([`super::Service::sample_timeline`]), no database.
//!
//! What is sampled are cumulative counts (each tool's calls and failures, the refusals) and
//! levels (queue depth, calls running, each tool's p95 now); a rate is the difference of two
//! consecutive samples' counts ÷ the interval. A count that went down (a tool forgotten and
//! listed again, a breaker replaced by a reload) gives a rate of 0, never a negative one.
//!
//! Memory is bounded: at most [`SAMPLES`] samples (an hour at 10 s), each 48 bytes plus
//! 32 bytes per tool listed then (its name shared, two `f32` rates and an `Option<f32>` p95):
//! about 11.5 KB per tool for the hour. A tool no longer listed drops out of every sample at
//! the next one.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use contract::{StatusTimeline, StatusToolSeries};

use crate::sync::Unpoisoned;

/// Samples kept: 360 × 10 s = the last hour at the default interval.
pub const SAMPLES: usize = 360;

/// One tool's counts as the sampler reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ToolCounts {
    /// Calls since the tool's statistics began.
    pub calls: u64,
    /// Of those, the tool's own failures.
    pub failures: u64,
    /// The 95th percentile latency now, in milliseconds.
    pub p95_ms: Option<f64>,
}

/// What the sampler reads of the service at one moment.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Unix seconds.
    pub at: i64,
    pub queue_depth: u64,
    pub active_calls: u64,
    /// Refusals since the start (admission, rate limit, open circuit).
    pub refusals: u64,
    /// Every tool listed now.
    pub tools: Vec<(String, ToolCounts)>,
}

/// One tool at one sample: 32 bytes (a shared name, two rates, a p95).
#[derive(Debug, Clone)]
struct ToolPoint {
    name: Arc<str>,
    calls_per_s: f32,
    errors_per_s: f32,
    p95_ms: Option<f32>,
}

#[derive(Debug, Clone)]
struct Sample {
    at: i64,
    queue_depth: u32,
    active_calls: u32,
    refusals_per_s: f32,
    /// Sorted by name.
    tools: Vec<ToolPoint>,
}

struct Ring {
    /// The counts of the reading before (the first one is only this).
    previous: Option<(u64, HashMap<Arc<str>, ToolCounts>)>,
    samples: VecDeque<Sample>,
}

/// The ring of samples.
pub struct Timeline {
    interval: Duration,
    ring: Mutex<Ring>,
}

impl Timeline {
    pub fn new(interval: Duration) -> Timeline {
        Timeline {
            interval,
            ring: Mutex::new(Ring {
                previous: None,
                samples: VecDeque::with_capacity(SAMPLES),
            }),
        }
    }

    /// Between two samples.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Takes one reading: the first is the baseline the next one's rates start from; each
    /// later one adds a sample (the oldest goes past [`SAMPLES`]).
    pub fn record(&self, reading: Reading) {
        let seconds = self.interval.as_secs_f64().max(f64::MIN_POSITIVE);
        let rate = |now: u64, before: u64| (now.saturating_sub(before) as f64 / seconds) as f32;
        let mut ring = self.ring.write_unpoisoned();
        let named: Vec<(Arc<str>, ToolCounts)> = reading
            .tools
            .into_iter()
            .map(|(name, counts)| {
                // The name of the ring's samples, shared rather than one copy per sample.
                let shared = ring
                    .previous
                    .as_ref()
                    .and_then(|(_, tools)| tools.get_key_value(name.as_str()))
                    .map(|(k, _)| k.clone())
                    .unwrap_or_else(|| Arc::from(name));
                (shared, counts)
            })
            .collect();
        if let Some((refusals_before, tools_before)) = &ring.previous {
            let mut tools: Vec<ToolPoint> = named
                .iter()
                .map(|(name, now)| {
                    let before = tools_before.get(name).copied().unwrap_or_default();
                    ToolPoint {
                        name: name.clone(),
                        calls_per_s: rate(now.calls, before.calls),
                        errors_per_s: rate(now.failures, before.failures),
                        p95_ms: now.p95_ms.map(|p| p as f32),
                    }
                })
                .collect();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            let sample = Sample {
                at: reading.at,
                queue_depth: reading.queue_depth.min(u32::MAX as u64) as u32,
                active_calls: reading.active_calls.min(u32::MAX as u64) as u32,
                refusals_per_s: rate(reading.refusals, *refusals_before),
                tools,
            };
            // A tool no longer listed drops out of the older samples too.
            let listed: Vec<&Arc<str>> = sample.tools.iter().map(|t| &t.name).collect();
            let gone = tools_before.keys().any(|name| !listed.contains(&name));
            if gone {
                for old in ring.samples.iter_mut() {
                    old.tools.retain(|t| listed.contains(&&t.name));
                }
            }
            if ring.samples.len() == SAMPLES {
                ring.samples.pop_front();
            }
            ring.samples.push_back(sample);
        }
        ring.previous = Some((reading.refusals, named.into_iter().collect()));
    }

    /// The samples as GET /status/data shows them: every array one value per sample, oldest
    /// first; a tool only for the tools of the newest sample, with 0 calls and no p95 where
    /// it was not listed yet.
    pub fn report(&self) -> StatusTimeline {
        let ring = self.ring.read_unpoisoned();
        let n = ring.samples.len();
        let mut tools: BTreeMap<String, StatusToolSeries> = ring
            .samples
            .back()
            .map(|newest| {
                newest
                    .tools
                    .iter()
                    .map(|t| {
                        let empty = StatusToolSeries {
                            calls_per_s: Vec::with_capacity(n),
                            errors_per_s: Vec::with_capacity(n),
                            p95_ms: Vec::with_capacity(n),
                        };
                        (t.name.to_string(), empty)
                    })
                    .collect()
            })
            .unwrap_or_default();
        for sample in &ring.samples {
            for (name, series) in tools.iter_mut() {
                let point = sample
                    .tools
                    .binary_search_by(|t| t.name.as_ref().cmp(name.as_str()))
                    .ok()
                    .map(|i| &sample.tools[i]);
                series
                    .calls_per_s
                    .push(point.map_or(0.0, |p| tidy(p.calls_per_s)));
                series
                    .errors_per_s
                    .push(point.map_or(0.0, |p| tidy(p.errors_per_s)));
                series.p95_ms.push(point.and_then(|p| p.p95_ms).map(tidy));
            }
        }
        StatusTimeline {
            interval_seconds: self.interval.as_secs_f64(),
            t: ring.samples.iter().map(|s| s.at).collect(),
            queue_depth: ring.samples.iter().map(|s| s.queue_depth as u64).collect(),
            active_calls: ring.samples.iter().map(|s| s.active_calls as u64).collect(),
            refusals_per_s: ring
                .samples
                .iter()
                .map(|s| tidy(s.refusals_per_s))
                .collect(),
            tools,
        }
    }
}

/// A rate or latency as JSON shows it: three decimals, not an `f32`'s noise.
fn tidy(value: f32) -> f64 {
    (value as f64 * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(at: i64, refusals: u64, tools: &[(&str, u64, u64, Option<f64>)]) -> Reading {
        Reading {
            at,
            queue_depth: 2,
            active_calls: 1,
            refusals,
            tools: tools
                .iter()
                .map(|(name, calls, failures, p95)| {
                    (
                        name.to_string(),
                        ToolCounts {
                            calls: *calls,
                            failures: *failures,
                            p95_ms: *p95,
                        },
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn rates_are_differences_over_the_interval_from_the_first_reading_on() {
        let timeline = Timeline::new(Duration::from_secs(10));
        timeline.record(reading(100, 0, &[("echo", 5, 0, None)]));
        assert!(
            timeline.report().t.is_empty(),
            "the first reading is the baseline"
        );
        timeline.record(reading(110, 4, &[("echo", 25, 2, Some(3.5))]));
        timeline.record(reading(120, 4, &[("echo", 30, 2, Some(4.25))]));
        let report = timeline.report();
        assert_eq!(report.interval_seconds, 10.0);
        assert_eq!(report.t, [110, 120]);
        assert_eq!(report.queue_depth, [2, 2]);
        assert_eq!(report.active_calls, [1, 1]);
        assert_eq!(report.refusals_per_s, [0.4, 0.0]);
        let echo = &report.tools["echo"];
        assert_eq!(echo.calls_per_s, [2.0, 0.5]);
        assert_eq!(echo.errors_per_s, [0.2, 0.0]);
        assert_eq!(echo.p95_ms, [Some(3.5), Some(4.25)]);
    }

    #[test]
    fn a_count_that_went_down_is_no_negative_rate() {
        let timeline = Timeline::new(Duration::from_secs(1));
        timeline.record(reading(1, 10, &[("echo", 50, 5, None)]));
        timeline.record(reading(2, 3, &[("echo", 2, 0, None)]));
        let report = timeline.report();
        assert_eq!(report.refusals_per_s, [0.0]);
        assert_eq!(report.tools["echo"].calls_per_s, [0.0]);
    }

    #[test]
    fn the_ring_keeps_the_last_hour_only() {
        let timeline = Timeline::new(Duration::from_secs(10));
        for i in 0..(SAMPLES as i64 + 50) {
            timeline.record(reading(i * 10, 0, &[("echo", i as u64, 0, Some(1.0))]));
        }
        let report = timeline.report();
        assert_eq!(report.t.len(), SAMPLES);
        assert_eq!(report.t[0], 50 * 10, "the oldest went first");
        assert_eq!(*report.t.last().unwrap(), (SAMPLES as i64 + 49) * 10);
        let echo = &report.tools["echo"];
        assert_eq!(echo.calls_per_s.len(), SAMPLES);
        assert_eq!(echo.p95_ms.len(), SAMPLES);
        assert!(echo.calls_per_s.iter().all(|r| *r == 0.1));
    }

    #[test]
    fn tools_that_went_away_drop_out_and_new_ones_are_padded() {
        let timeline = Timeline::new(Duration::from_secs(10));
        timeline.record(reading(0, 0, &[("old", 0, 0, None)]));
        timeline.record(reading(10, 0, &[("old", 10, 0, Some(2.0))]));
        timeline.record(reading(20, 0, &[("new", 10, 10, Some(9.0))]));
        let report = timeline.report();
        assert_eq!(report.t, [10, 20]);
        assert_eq!(report.tools.keys().collect::<Vec<_>>(), ["new"]);
        let new = &report.tools["new"];
        assert_eq!(new.calls_per_s, [0.0, 1.0], "not listed yet: 0 calls");
        assert_eq!(new.errors_per_s, [0.0, 1.0]);
        assert_eq!(new.p95_ms, [None, Some(9.0)]);
        // Nor is it kept in the older samples.
        let ring = timeline.ring.read_unpoisoned();
        assert!(
            ring.samples
                .iter()
                .all(|s| s.tools.iter().all(|t| &*t.name == "new"))
        );
    }

    #[test]
    fn a_sample_costs_what_the_module_says() {
        assert!(std::mem::size_of::<ToolPoint>() <= 32);
        assert!(std::mem::size_of::<Sample>() <= 48);
    }
}
