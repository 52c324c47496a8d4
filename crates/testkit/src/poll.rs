//! Waiting for something to become true by asking again until a deadline: the one way tests
//! synchronise with processes and servers (a sleep guesses; a poll knows).

use std::future::Future;
use std::time::{Duration, Instant};

/// How often the async helpers ask again.
const ASYNC_INTERVAL: Duration = Duration::from_millis(50);

/// How often [`poll`] asks again (it blocks its thread, so less eagerly).
const BLOCKING_INTERVAL: Duration = Duration::from_millis(100);

/// `check` until it gives a value, every 100 ms, blocking the thread; panics naming `what`
/// after `within`. For tests without an async runtime.
pub fn poll<T>(within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(BLOCKING_INTERVAL);
    }
}

/// `check` until it gives a value, every 50 ms; `None` once `within` has passed without one
/// (for callers that say more than [`eventually`] can when it does not come).
pub async fn until<T, F, Fut>(within: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(ASYNC_INTERVAL).await;
    }
}

/// `check` until it gives a value, every 50 ms; panics naming `what` after `within`.
pub async fn eventually<T, F, Fut>(within: Duration, what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    until(within, check)
        .await
        .unwrap_or_else(|| panic!("timed out after {within:?} waiting for: {what}"))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    #[tokio::test]
    async fn until_asks_again_until_a_value_or_the_deadline() {
        let asked = Cell::new(0);
        let third = until(Duration::from_secs(5), || {
            asked.set(asked.get() + 1);
            std::future::ready((asked.get() == 3).then_some("third"))
        })
        .await;
        assert_eq!((third, asked.get()), (Some("third"), 3));
        let never = until(Duration::from_millis(120), || {
            std::future::ready(None::<()>)
        })
        .await;
        assert_eq!(never, None);
    }

    #[tokio::test]
    #[should_panic(expected = "waiting for: the impossible")]
    async fn eventually_names_what_never_came() {
        eventually(Duration::from_millis(60), "the impossible", || {
            std::future::ready(None::<()>)
        })
        .await;
    }

    #[test]
    fn poll_returns_the_first_value() {
        let mut asked = 0;
        let value = poll(Duration::from_secs(5), "the second ask", || {
            asked += 1;
            (asked == 2).then_some(asked)
        });
        assert_eq!(value, 2);
    }
}
