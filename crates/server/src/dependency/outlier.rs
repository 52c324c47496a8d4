//! Outlier ejection among the members of a rotation (`resilience.outlier`): the children of
//! an MCP pool, the endpoints of an HTTP API. A member whose last calls all failed for its own
//! sake (timed out, its connection lost, a 5xx), or whose mean latency is far above its
//! siblings', is left out of rotation for a while that doubles each time it is ejected again
//! without a success between, then given calls again (its first calls back are the probe). A
//! rotation never ejects its last member in rotation.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::config::OutlierConfig;
use crate::sync::Unpoisoned;

/// Latency samples a child needs before its mean is compared with its siblings'.
const MIN_SAMPLES: u64 = 10;
/// A mean under this is never an outlier, however it compares (1 ms against 5 ms is noise).
const LATENCY_FLOOR_US: u64 = 20_000;

/// Milliseconds since the first time this process asked: the clock of every rotation.
pub(crate) fn now_ms() -> u64 {
    static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
    EPOCH.elapsed().as_millis() as u64
}

/// Of members with their calls in flight (`None`: not live), the one with the fewest, looking
/// from `start` on so that ties go round in turn.
pub(crate) fn least_loaded(loads: &[Option<usize>], start: usize) -> Option<usize> {
    let n = loads.len();
    (0..n)
        .map(|k| (start + k) % n)
        .filter_map(|i| Some((i, loads[i]?)))
        .min_by_key(|&(_, load)| load)
        .map(|(i, _)| i)
}

/// A call on the member of `record` ended: recorded, and the member ejected when it is an
/// outlier against `others` (its siblings in rotation now) and one of them stays in rotation.
/// Returns for how long and why, when it was ejected.
pub(crate) fn judge<'a>(
    record: &OutlierRecord,
    others: impl IntoIterator<Item = &'a OutlierRecord>,
    ended: Ended,
    config: &OutlierConfig,
) -> Option<(Duration, &'static str)> {
    let now = now_ms();
    let others: Vec<&OutlierRecord> = others.into_iter().collect();
    let mut means: Vec<u64> = others
        .iter()
        .filter(|o| !o.ejected(now))
        .filter_map(|o| o.mean())
        .collect();
    means.sort_unstable();
    let median = (!means.is_empty()).then(|| means[means.len() / 2]);
    let why = record.record(ended, config, median)?;
    // Two members failing together must not each see the other still in rotation and both
    // leave: the decision and the ejection are made under one lock (an ejection is rare, so
    // one lock for the process costs nothing on the call path).
    static EJECTING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = EJECTING.write_unpoisoned();
    let now = now_ms();
    if record.ejected(now) || others.iter().all(|o| o.ejected(now)) {
        return None;
    }
    Some((record.eject(now, config), why))
}

/// One member's record, updated by its calls without a lock.
#[derive(Debug, Default)]
pub(crate) struct OutlierRecord {
    consecutive_failures: AtomicU64,
    /// Exponentially weighted mean latency (1/8 per sample), microseconds.
    mean_us: AtomicU64,
    samples: AtomicU64,
    /// Until when (ms of the pool's clock) it is out of rotation; 0 when it is in.
    ejected_until_ms: AtomicU64,
    /// Ejections since its last success: each doubles the next interval.
    streak: AtomicU64,
    ejections: AtomicU64,
}

/// What one call's end says of the child that ran it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Success(Duration),
    /// Timed out, lost its connection, or (HTTP) answered 5xx: the member's fault.
    Failure(Duration),
    /// Says nothing of the child (the caller's arguments, a tool's own error).
    Neutral,
}

impl OutlierRecord {
    /// Whether it is out of rotation at `now_ms`.
    pub(crate) fn ejected(&self, now_ms: u64) -> bool {
        self.ejected_until_ms.load(Ordering::Acquire) > now_ms
    }

    /// For /health: how much longer it is out, and how often it was.
    pub(crate) fn state(&self, now_ms: u64) -> (Option<u64>, u64) {
        let until = self.ejected_until_ms.load(Ordering::Acquire);
        (
            (until > now_ms).then(|| until - now_ms),
            self.ejections.load(Ordering::Relaxed),
        )
    }

    /// The mean latency once there are enough samples to judge by.
    pub(crate) fn mean(&self) -> Option<u64> {
        (self.samples.load(Ordering::Relaxed) >= MIN_SAMPLES)
            .then(|| self.mean_us.load(Ordering::Relaxed))
    }

    /// Records a call's end. Returns whether the child should now be ejected, judged against
    /// `siblings_mean`: the median mean latency of the other children in rotation (`None`
    /// when they have too few samples).
    pub(crate) fn record(
        &self,
        ended: Ended,
        config: &OutlierConfig,
        siblings_mean: Option<u64>,
    ) -> Option<&'static str> {
        let took = match ended {
            Ended::Neutral => return None,
            Ended::Success(took) => {
                self.consecutive_failures.store(0, Ordering::Relaxed);
                self.streak.store(0, Ordering::Relaxed);
                took
            }
            Ended::Failure(took) => {
                let failures = self.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1;
                if failures >= config.consecutive_failures {
                    return Some("its last calls all failed");
                }
                took
            }
        };
        let sample = took.as_micros() as u64;
        let samples = self.samples.fetch_add(1, Ordering::Relaxed);
        let mean = if samples == 0 {
            sample
        } else {
            let old = self.mean_us.load(Ordering::Relaxed);
            old - old / 8 + sample / 8
        };
        self.mean_us.store(mean, Ordering::Relaxed);
        match (self.mean(), siblings_mean) {
            (Some(mine), Some(theirs))
                if mine >= LATENCY_FLOOR_US
                    && mine > theirs.max(1).saturating_mul(config.latency_factor) =>
            {
                Some("its latency is far above its siblings'")
            }
            _ => None,
        }
    }

    /// Takes the child out of rotation from `now_ms`; returns for how long.
    pub(crate) fn eject(&self, now_ms: u64, config: &OutlierConfig) -> Duration {
        let streak = self.streak.fetch_add(1, Ordering::Relaxed);
        let interval = config
            .ejection
            .saturating_mul(1 << streak.min(16) as u32)
            .min(config.max_ejection);
        self.ejected_until_ms
            .store(now_ms + interval.as_millis() as u64, Ordering::Release);
        self.consecutive_failures.store(0, Ordering::Relaxed);
        // Its mean starts afresh when it comes back: the old one is why it left.
        self.samples.store(0, Ordering::Relaxed);
        self.ejections.fetch_add(1, Ordering::Relaxed);
        interval
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> OutlierConfig {
        OutlierConfig {
            consecutive_failures: 3,
            latency_factor: 4,
            ejection: Duration::from_millis(100),
            max_ejection: Duration::from_millis(350),
            ..OutlierConfig::default()
        }
    }

    #[test]
    fn consecutive_failures_eject_and_a_success_between_resets_the_count() {
        let r = OutlierRecord::default();
        let c = config();
        let fail = Ended::Failure(Duration::from_millis(5));
        assert!(r.record(fail, &c, None).is_none());
        assert!(r.record(fail, &c, None).is_none());
        assert!(
            r.record(Ended::Success(Duration::from_millis(5)), &c, None)
                .is_none()
        );
        assert!(r.record(fail, &c, None).is_none());
        assert!(r.record(Ended::Neutral, &c, None).is_none());
        assert!(r.record(fail, &c, None).is_none());
        assert_eq!(r.record(fail, &c, None), Some("its last calls all failed"));
    }

    #[test]
    fn each_ejection_without_a_success_between_lasts_twice_as_long() {
        let r = OutlierRecord::default();
        let c = config();
        assert_eq!(r.eject(1000, &c), Duration::from_millis(100));
        assert!(r.ejected(1099) && !r.ejected(1100));
        assert_eq!(r.state(1050), (Some(50), 1));
        assert_eq!(r.eject(2000, &c), Duration::from_millis(200));
        assert_eq!(r.eject(3000, &c), Duration::from_millis(350), "capped");
        r.record(Ended::Success(Duration::from_millis(1)), &c, None);
        assert_eq!(r.eject(4000, &c), Duration::from_millis(100));
        assert_eq!(r.state(5000), (None, 4));
    }

    #[test]
    fn a_child_far_slower_than_its_siblings_is_an_outlier() {
        let c = config();
        let slow = OutlierRecord::default();
        let mut verdicts = Vec::new();
        for _ in 0..MIN_SAMPLES {
            verdicts.push(slow.record(
                Ended::Success(Duration::from_millis(200)),
                &c,
                Some(10_000),
            ));
        }
        // Judged only once it has enough samples.
        assert!(
            verdicts[..MIN_SAMPLES as usize - 1]
                .iter()
                .all(Option::is_none)
        );
        assert_eq!(
            verdicts.last().unwrap(),
            &Some("its latency is far above its siblings'")
        );
        // Not against siblings as slow, nor under the floor.
        let fine = OutlierRecord::default();
        for _ in 0..20 {
            assert!(
                fine.record(
                    Ended::Success(Duration::from_millis(200)),
                    &c,
                    Some(100_000)
                )
                .is_none()
            );
        }
        let quick = OutlierRecord::default();
        for _ in 0..20 {
            assert!(
                quick
                    .record(Ended::Success(Duration::from_millis(5)), &c, Some(100))
                    .is_none()
            );
        }
    }

    #[test]
    fn judged_among_siblings_a_member_is_ejected_but_never_the_last_in_rotation() {
        let c = config();
        let fail = Ended::Failure(Duration::from_millis(5));
        let (a, b) = (OutlierRecord::default(), OutlierRecord::default());
        assert!(judge(&a, [&b], fail, &c).is_none());
        assert!(judge(&a, [&b], fail, &c).is_none());
        let (interval, why) = judge(&a, [&b], fail, &c).unwrap();
        assert_eq!(
            (interval, why),
            (Duration::from_millis(100), "its last calls all failed")
        );
        assert!(a.ejected(now_ms()));
        // b fails as often, but a is out: b is the last in rotation and stays.
        for _ in 0..5 {
            assert!(judge(&b, [&a], fail, &c).is_none());
        }
        assert!(!b.ejected(now_ms()));
        // Alone, a member is never ejected.
        let alone = OutlierRecord::default();
        for _ in 0..5 {
            assert!(judge(&alone, [], fail, &c).is_none());
        }
    }

    #[test]
    fn members_failing_together_never_all_leave_the_rotation() {
        let c = OutlierConfig {
            consecutive_failures: 1,
            ejection: Duration::from_secs(60),
            max_ejection: Duration::from_secs(60),
            ..config()
        };
        let fail = Ended::Failure(Duration::from_millis(5));
        // Rounds, each releasing every member's failing call at one barrier.
        for _ in 0..200 {
            let members: Vec<OutlierRecord> = (0..4).map(|_| OutlierRecord::default()).collect();
            let barrier = std::sync::Barrier::new(members.len());
            std::thread::scope(|scope| {
                for (i, member) in members.iter().enumerate() {
                    let (members, barrier, c) = (&members, &barrier, &c);
                    scope.spawn(move || {
                        let others = members
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| *j != i)
                            .map(|(_, o)| o);
                        barrier.wait();
                        judge(member, others, fail, c)
                    });
                }
            });
            let now = now_ms();
            let left = members.iter().filter(|m| !m.ejected(now)).count();
            assert_eq!(left, 1, "exactly the last one stays");
        }
    }

    #[test]
    fn the_least_loaded_live_member_takes_the_call_and_ties_go_round() {
        assert_eq!(least_loaded(&[Some(3), Some(1), Some(2)], 0), Some(1));
        // Not live: never chosen, however idle.
        assert_eq!(least_loaded(&[Some(3), None, Some(2)], 0), Some(2));
        assert_eq!(least_loaded(&[None, None], 5), None);
        // Idle children take turns as `start` moves on.
        let picks: Vec<usize> = (0..4)
            .map(|start| least_loaded(&[Some(0), Some(0)], start).unwrap())
            .collect();
        assert_eq!(picks, [0, 1, 0, 1]);
    }
}
