//! Rate limits per client: one minute's allowance per key (a client, or a client and a tool),
//! refilled continuously. Counted in this process (a token bucket) or, with `cluster`, in Redis
//! across every replica ([`super::cluster::rate`]); both answer the same numbers. The HTTP
//! layer (`http::rate_limit`) turns a refusal into 429 and every decision into the
//! `RateLimit` headers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

pub use super::client::Client;
use super::cluster::Cluster;
use crate::config::OnRedisError;
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

/// Where allowances are counted.
pub enum RateLimiter {
    /// In this process: exact for one replica, N times too generous for N.
    Local(LocalLimiter),
    /// In Redis, shared by every replica; while Redis does not answer, requests pass or are
    /// refused as `cluster.rate_limit_on_redis_error` says.
    Redis(Arc<Cluster>),
}

impl RateLimiter {
    pub fn local() -> RateLimiter {
        RateLimiter::Local(LocalLimiter::default())
    }

    /// Takes one request of `client`'s allowance of `per_minute` at once when the allowance is
    /// kept in this process; `None` when it is kept in Redis and [`RateLimiter::take`] must ask.
    pub fn take_now(&self, client: &str, per_minute: u64) -> Option<Decision> {
        match self {
            RateLimiter::Local(local) => Some(local.take(client, per_minute)),
            RateLimiter::Redis(_) => None,
        }
    }

    /// Takes one request of `client`'s allowance of `per_minute` (of its allowance for `tool`,
    /// when given).
    pub async fn take(&self, client: &str, tool: Option<&str>, per_minute: u64) -> Decision {
        match self {
            RateLimiter::Local(local) => match tool {
                Some(tool) => local.take(&format!("{client}\u{1f}{tool}"), per_minute),
                None => local.take(client, per_minute),
            },
            RateLimiter::Redis(cluster) => match cluster.take(client, tool, per_minute).await {
                Ok(decision) => decision,
                // The cluster logged the change to down, and counts the error.
                Err(_) => unreachable_redis(cluster.on_error, per_minute),
            },
        }
    }
}

/// The decision while Redis cannot be asked: open passes with the whole allowance said to be
/// left (nothing is counted), closed refuses for a second.
fn unreachable_redis(on_error: OnRedisError, per_minute: u64) -> Decision {
    let allowed = on_error == OnRedisError::Open;
    Decision {
        allowed,
        limit: per_minute,
        remaining: if allowed { per_minute } else { 0 },
        reset_seconds: if allowed { 0 } else { 1 },
        retry_after: if allowed { 0 } else { 1 },
    }
}

/// The token buckets of one process.
#[derive(Default)]
pub struct LocalLimiter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    refilled: Instant,
}

impl LocalLimiter {
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
        let limiter = LocalLimiter::default();
        let start = Instant::now();
        for i in 0..60 {
            let d = limiter.take_at("a", 60, start);
            assert!(d.allowed, "request {i}");
            assert_eq!(d.remaining, 59 - i);
            // The whole allowance is back when the tokens taken are: one a second.
            assert_eq!(d.reset_seconds, i + 1, "request {i}");
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
        let limiter = LocalLimiter::default();
        let start = Instant::now();
        for _ in 0..10 {
            limiter.take_at("a", 10, start);
        }
        // 10 per minute: one every 6 s.
        let refused = limiter.take_at("a", 10, start);
        assert_eq!(refused.retry_after, 6);
        // 2.5 s on, 2.5 / 6 of a token is back: the next whole one in 3.5 s, said as 4.
        let refused = limiter.take_at("a", 10, start + Duration::from_millis(2_500));
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after, 4);
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
    fn without_redis_open_passes_and_closed_refuses_for_a_second() {
        let open = unreachable_redis(OnRedisError::Open, 60);
        assert!(open.allowed);
        assert_eq!((open.remaining, open.retry_after), (60, 0));
        let closed = unreachable_redis(OnRedisError::Closed, 60);
        assert!(!closed.allowed);
        assert_eq!((closed.remaining, closed.retry_after), (0, 1));
    }

    #[tokio::test]
    async fn a_tools_allowance_is_apart_from_the_clients() {
        let limiter = RateLimiter::local();
        for _ in 0..10 {
            assert!(limiter.take("a", Some("t"), 10).await.allowed);
        }
        assert!(!limiter.take("a", Some("t"), 10).await.allowed);
        assert!(limiter.take("a", None, 10).await.allowed);
    }

    #[test]
    fn idle_clients_are_pruned() {
        let limiter = LocalLimiter::default();
        let start = Instant::now();
        for i in 0..=PRUNE_ABOVE {
            limiter.take_at(&format!("c{i}"), 60, start);
        }
        limiter.take_at("late", 60, start + Duration::from_secs(61));
        assert_eq!(limiter.len(), 1);
    }

    /// Pruning keeps every bucket still short of full, drops those full again (to the exact
    /// token: a minute's allowance of 120 refills two a second), and starts only past
    /// PRUNE_ABOVE buckets.
    #[test]
    fn pruning_drops_exactly_the_full_buckets_and_only_past_its_threshold() {
        let limiter = LocalLimiter::default();
        let start = Instant::now();
        for i in 0..PRUNE_ABOVE {
            limiter.take_at(&format!("c{i}"), 120, start);
        }
        // PRUNE_ABOVE buckets is not yet past it: nothing is pruned, however idle.
        limiter.take_at("late", 120, start + Duration::from_secs(61));
        assert_eq!(limiter.len(), PRUNE_ABOVE + 1);

        let limiter = LocalLimiter::default();
        for i in 0..PRUNE_ABOVE {
            limiter.take_at(&format!("c{i}"), 120, start);
        }
        limiter.take_at("recent", 120, start + Duration::from_millis(250));
        // Half a second on, each c* has 119 + 0.5 × 2 = 120 tokens (full: dropped); "recent"
        // has 119 + 0.25 × 2 (kept).
        let half = start + Duration::from_millis(500);
        limiter.take_at("late", 120, half);
        assert_eq!(limiter.len(), 2);
        let recent = limiter.take_at("recent", 120, half);
        assert_eq!(recent.remaining, 118, "its bucket was kept: {recent:?}");
    }

    #[test]
    fn a_limit_kept_here_decides_at_once() {
        let limiter = RateLimiter::local();
        let decision = limiter.take_now("a", 10).expect("decided without Redis");
        assert!(decision.allowed);
        assert_eq!((decision.limit, decision.remaining), (10, 9));
    }
}
