//! Rate limits per client: a token bucket per key (a client, or a client and a tool) holding
//! one minute's allowance, refilled continuously. The HTTP layer (`http::rate_limit`) turns a
//! refusal into 429 and every decision into the `RateLimit` headers.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

pub use super::client::Client;
use crate::sync::Unpoisoned;

/// Buckets above this many are pruned of the full ones (clients idle for a minute or more), so
/// a stream of new clients cannot grow the map without bound.
const PRUNE_ABOVE: usize = 10_000;

/// What one request was told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// Requests per minute.
    pub limit: u64,
    /// Requests the client may still send at once.
    pub remaining: u64,
    /// Seconds until the whole allowance is back.
    pub reset_seconds: u64,
    /// Seconds until the next request is allowed (0 when this one was).
    pub retry_after: u64,
}

#[derive(Default)]
pub struct RateLimiter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl RateLimiter {
    /// Takes one request of `key`'s allowance of `per_minute`.
    pub fn take(&self, key: &str, per_minute: u64) -> Decision {
        self.take_at(key, per_minute, Instant::now())
    }

    fn take_at(&self, key: &str, per_minute: u64, now: Instant) -> Decision {
        let capacity = per_minute.max(1) as f64;
        let per_second = capacity / 60.0;
        let mut buckets = self.buckets.write_unpoisoned();
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, b| {
                b.tokens + now.duration_since(b.refilled).as_secs_f64() * per_second < capacity
            });
        }
        let bucket = match buckets.get_mut(key) {
            Some(b) => b,
            None => buckets.entry(key.to_owned()).or_insert(Bucket {
                tokens: capacity,
                refilled: now,
            }),
        };
        let elapsed = now.duration_since(bucket.refilled).as_secs_f64();
        // A lowered limit (reload) caps what is left.
        bucket.tokens = (bucket.tokens + elapsed * per_second).min(capacity);
        bucket.refilled = now;
        let allowed = bucket.tokens >= 1.0;
        if allowed {
            bucket.tokens -= 1.0;
        }
        let seconds = |tokens: f64| (tokens / per_second).ceil().max(0.0) as u64;
        Decision {
            allowed,
            limit: per_minute,
            remaining: bucket.tokens.floor() as u64,
            reset_seconds: seconds(capacity - bucket.tokens),
            retry_after: if allowed {
                0
            } else {
                seconds(1.0 - bucket.tokens).max(1)
            },
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.buckets.write_unpoisoned().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_minutes_allowance_at_once_then_one_per_sixtieth_of_a_minute() {
        let limiter = RateLimiter::default();
        let start = Instant::now();
        for i in 0..60 {
            let d = limiter.take_at("a", 60, start);
            assert!(d.allowed, "request {i}");
            assert_eq!(d.remaining, 59 - i);
        }
        let refused = limiter.take_at("a", 60, start);
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 0);
        assert_eq!(refused.retry_after, 1);
        assert_eq!(refused.reset_seconds, 60);
        // Another client has its own allowance.
        assert!(limiter.take_at("b", 60, start).allowed);
        // One second later one request is back (60 per minute).
        let later = limiter.take_at("a", 60, start + Duration::from_secs(1));
        assert!(later.allowed);
        assert_eq!(later.remaining, 0);
        assert!(
            !limiter
                .take_at("a", 60, start + Duration::from_secs(1))
                .allowed
        );
    }

    #[test]
    fn retry_after_says_when_the_next_request_passes() {
        let limiter = RateLimiter::default();
        let start = Instant::now();
        for _ in 0..10 {
            limiter.take_at("a", 10, start);
        }
        // 10 per minute: one every 6 s.
        let refused = limiter.take_at("a", 10, start);
        assert_eq!(refused.retry_after, 6);
        assert!(
            !limiter
                .take_at("a", 10, start + Duration::from_millis(5_900))
                .allowed
        );
        assert!(
            limiter
                .take_at("a", 10, start + Duration::from_millis(6_100))
                .allowed
        );
    }

    #[test]
    fn idle_clients_are_pruned() {
        let limiter = RateLimiter::default();
        let start = Instant::now();
        for i in 0..=PRUNE_ABOVE {
            limiter.take_at(&format!("c{i}"), 60, start);
        }
        limiter.take_at("late", 60, start + Duration::from_secs(61));
        assert_eq!(limiter.len(), 1);
    }
}
