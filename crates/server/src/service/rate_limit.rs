//! The service's token bucket: `security.rate_limit` requests per second, bursts up to the
//! same number. The 429 answer is the HTTP layer's (`http::rate_limit`).

use std::sync::Mutex;
use std::time::Instant;

use crate::sync::Unpoisoned;

pub struct RateLimiter {
    bucket: Mutex<Bucket>,
}

struct Bucket {
    rate: f64,
    tokens: f64,
    refilled: Instant,
}

impl RateLimiter {
    pub fn new(per_second: u64) -> Self {
        let rate = per_second as f64;
        RateLimiter {
            bucket: Mutex::new(Bucket {
                rate,
                tokens: rate,
                refilled: Instant::now(),
            }),
        }
    }

    /// Changes the rate (on reload) without refilling the bucket.
    pub fn set_rate(&self, per_second: u64) {
        let mut b = self.bucket.write_unpoisoned();
        b.rate = per_second as f64;
        b.tokens = b.tokens.min(b.rate);
    }

    /// Takes a token, or says in how many whole seconds one will be there.
    pub fn acquire(&self) -> Result<(), u64> {
        self.acquire_at(Instant::now())
    }

    fn acquire_at(&self, now: Instant) -> Result<(), u64> {
        let mut b = self.bucket.write_unpoisoned();
        let elapsed = now.duration_since(b.refilled).as_secs_f64();
        b.tokens = (b.tokens + elapsed * b.rate).min(b.rate);
        b.refilled = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - b.tokens) / b.rate).ceil().max(1.0) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refusal_then_refill() {
        let limiter = RateLimiter::new(10);
        let start = limiter.bucket.lock().unwrap().refilled;
        for _ in 0..10 {
            assert!(limiter.acquire_at(start).is_ok());
        }
        assert_eq!(limiter.acquire_at(start), Err(1));
        // A tenth of a second later one token is back.
        let later = start + std::time::Duration::from_millis(100);
        assert!(limiter.acquire_at(later).is_ok());
        assert!(limiter.acquire_at(later).is_err());
    }
}
