//! The retry budget of one provider, and the backoff between attempts. Retries and hedges may
//! add at most `budget_percent` of the provider's calls over the last 10 s (or
//! `min_per_second`, whichever allows more), so that when an upstream is down retries cannot
//! multiply its load: past the budget a failure is answered as it is.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::window::Window;
use crate::config::RetryConfig;
use crate::sync::Unpoisoned;

/// How far back the budget looks.
const SPAN: Duration = Duration::from_secs(10);

pub struct Budget {
    percent: u64,
    min_per_second: u64,
    /// [first attempts, extra attempts] over the span.
    window: Mutex<Window>,
    pub retries: AtomicU64,
    pub hedges: AtomicU64,
    pub exhausted: AtomicU64,
}

/// What an extra attempt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extra {
    Retry,
    Hedge,
}

impl Budget {
    pub fn new(config: &RetryConfig) -> Budget {
        Budget {
            percent: config.budget_percent,
            min_per_second: config.min_per_second,
            window: Mutex::new(Window::new(SPAN, Instant::now())),
            retries: AtomicU64::new(0),
            hedges: AtomicU64::new(0),
            exhausted: AtomicU64::new(0),
        }
    }

    /// A call's first attempt was sent.
    pub fn called(&self) {
        self.window.write_unpoisoned().add(Instant::now(), 0, 1);
    }

    /// Takes one extra attempt from the budget; `false` when it is spent.
    pub fn take(&self, extra: Extra) -> bool {
        let now = Instant::now();
        let mut window = self.window.write_unpoisoned();
        let [calls, extras] = window.totals(now);
        let allowed = (calls * self.percent / 100).max(self.min_per_second * SPAN.as_secs());
        if extras >= allowed {
            drop(window);
            self.exhausted.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        window.add(now, 1, 1);
        drop(window);
        let counter = match extra {
            Extra::Retry => &self.retries,
            Extra::Hedge => &self.hedges,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        true
    }
}

/// The wait before retry number `retry` (1 for the first): a random time up to
/// `backoff · 2^(retry-1)`, at most `max_backoff` ("full jitter", so retries of many callers
/// do not arrive together).
pub fn backoff(config: &RetryConfig, retry: u32) -> Duration {
    let ceiling = config
        .backoff
        .saturating_mul(1 << retry.saturating_sub(1).min(20))
        .min(config.max_backoff);
    ceiling.mul_f64(fastrand::f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(percent: u64, min_per_second: u64) -> RetryConfig {
        RetryConfig {
            budget_percent: percent,
            min_per_second,
            ..RetryConfig::default()
        }
    }

    #[test]
    fn retries_stay_within_their_share_of_calls() {
        let budget = Budget::new(&config(20, 0));
        for _ in 0..100 {
            budget.called();
        }
        let taken = (0..100).filter(|_| budget.take(Extra::Retry)).count();
        assert_eq!(taken, 20);
        assert_eq!(budget.exhausted.load(Ordering::Relaxed), 80);
        assert_eq!(budget.retries.load(Ordering::Relaxed), 20);
    }

    #[test]
    fn a_few_retries_are_always_allowed_and_hedges_count_too() {
        let budget = Budget::new(&config(20, 1));
        // No calls yet: 1 per second over 10 s.
        let taken = (0..20)
            .filter(|i| {
                budget.take(if i % 2 == 0 {
                    Extra::Retry
                } else {
                    Extra::Hedge
                })
            })
            .count();
        assert_eq!(taken, 10);
        assert_eq!(budget.hedges.load(Ordering::Relaxed), 5);
        let none = Budget::new(&config(0, 0));
        none.called();
        assert!(!none.take(Extra::Retry));
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let c = RetryConfig {
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(35),
            ..RetryConfig::default()
        };
        for _ in 0..200 {
            assert!(backoff(&c, 1) <= Duration::from_millis(10));
            assert!(backoff(&c, 2) <= Duration::from_millis(20));
            assert!(backoff(&c, 9) <= Duration::from_millis(35));
        }
        let spread: std::collections::HashSet<_> = (0..50).map(|_| backoff(&c, 3)).collect();
        assert!(spread.len() > 10, "no jitter: {spread:?}");
    }
}
