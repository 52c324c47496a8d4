//! The rate limit of a service: a token bucket of `security.rate_limit` requests per second,
//! bursts up to the same number, and the layer answering 429 with `Retry-After` past it.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;

use super::guards::HEALTH;
use super::reply::Reply;
use crate::service::Service;
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

/// The layer: every route but /health takes a token.
pub async fn rate_limit(
    State(service): State<Arc<Service>>,
    request: Request,
    next: Next,
) -> Response {
    if request.uri().path() != HEALTH
        && let Err(retry_after) = service.rate_limiter.acquire()
    {
        let limit = service.settings().config.security.rate_limit;
        return Reply::error(
            ErrorCode::RateLimited,
            format!("Rate limit of {limit} requests per second exceeded"),
        )
        .retry_after(retry_after)
        .into_response();
    }
    next.run(request).await
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
