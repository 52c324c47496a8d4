//! Tokens kept until shortly before they expire: one [`TokenCell`] per token (the gateway's own
//! for client credentials), and a bounded map of cells per caller ([`SubjectCache`]) for token
//! exchange. A cell refreshes at most once at a time: concurrent callers wait for that refresh
//! instead of each asking the issuer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::AccessToken;
use crate::sync::Unpoisoned;

/// The most a token is refreshed ahead of its expiry; a short-lived one is refreshed at 90% of
/// its lifetime instead, so it is still used for most of it.
pub const MAX_MARGIN: Duration = Duration::from_secs(30);

/// A token and when to stop using it.
#[derive(Clone, Debug)]
pub struct Held {
    pub token: AccessToken,
    /// Its expiry minus the margin.
    pub use_until: Instant,
}

impl Held {
    /// A token issued at `now` for `lifetime`, used until the margin before its expiry.
    pub fn new(token: AccessToken, now: Instant, lifetime: Duration) -> Held {
        let margin = MAX_MARGIN.min(lifetime / 10);
        Held {
            token,
            use_until: now + lifetime.saturating_sub(margin),
        }
    }

    fn fresh(&self, now: Instant) -> bool {
        now < self.use_until
    }
}

/// One token, refreshed on demand, one refresh at a time.
#[derive(Default)]
pub struct TokenCell {
    held: Mutex<Option<Held>>,
    /// Held while a refresh runs: who finds it taken waits, then reads what it fetched.
    refreshing: tokio::sync::Mutex<()>,
}

impl TokenCell {
    /// The token while it is fresh; otherwise `fetch`ed (once for all who wait meanwhile).
    pub async fn get<F, Fut, E>(&self, fetch: F) -> Result<AccessToken, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Held, E>>,
    {
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        let _refreshing = self.refreshing.lock().await;
        // Another caller may have refreshed it while we waited.
        if let Some(token) = self.fresh() {
            return Ok(token);
        }
        let held = fetch().await?;
        let token = held.token.clone();
        *self.held.write_unpoisoned() = Some(held);
        Ok(token)
    }

    fn fresh(&self) -> Option<AccessToken> {
        let now = Instant::now();
        self.held
            .write_unpoisoned()
            .as_ref()
            .filter(|h| h.fresh(now))
            .map(|h| h.token.clone())
    }

    /// Forgets `refused` (an upstream answered 401 to it), unless it was replaced already: many
    /// calls refused with the same token cause one refresh, not one each.
    pub fn forget(&self, refused: &AccessToken) {
        let mut held = self.held.write_unpoisoned();
        if held.as_ref().is_some_and(|h| h.token.same(refused)) {
            *held = None;
        }
    }

    /// Whether the cell holds a token that is still fresh at `now`.
    fn live(&self, now: Instant) -> bool {
        self.held
            .write_unpoisoned()
            .as_ref()
            .is_some_and(|h| h.fresh(now))
    }
}

/// A subject's key: the SHA-256 of its token, so the map never holds the token itself.
pub type SubjectKey = [u8; 32];

struct Entry {
    cell: Arc<TokenCell>,
    last_used: Instant,
}

/// Exchanged tokens per caller, at most `capacity`: when full, the stale entries go first,
/// then the least recently used.
pub struct SubjectCache {
    capacity: usize,
    entries: Mutex<HashMap<SubjectKey, Entry>>,
}

impl SubjectCache {
    pub fn new(capacity: usize) -> SubjectCache {
        SubjectCache {
            capacity: capacity.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The cell of `key`, made (and room made for it) when new.
    pub fn cell(&self, key: SubjectKey) -> Arc<TokenCell> {
        let now = Instant::now();
        let mut entries = self.entries.write_unpoisoned();
        if let Some(entry) = entries.get_mut(&key) {
            entry.last_used = now;
            return entry.cell.clone();
        }
        if entries.len() >= self.capacity {
            // A cell that is refreshing is in use (Arc held by its callers) and not stale.
            entries.retain(|_, e| e.cell.live(now) || Arc::strong_count(&e.cell) > 1);
        }
        while entries.len() >= self.capacity {
            let oldest = entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k);
            match oldest {
                Some(k) => entries.remove(&k),
                None => break,
            };
        }
        let cell = Arc::new(TokenCell::default());
        entries.insert(
            key,
            Entry {
                cell: cell.clone(),
                last_used: now,
            },
        );
        cell
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.write_unpoisoned().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn token(text: &str) -> AccessToken {
        AccessToken::new(text)
    }

    #[test]
    fn the_margin_is_thirty_seconds_or_a_tenth_of_a_short_lifetime() {
        let now = Instant::now();
        let hour = Held::new(token("a"), now, Duration::from_secs(3600));
        assert_eq!(hour.use_until - now, Duration::from_secs(3570));
        let minute = Held::new(token("a"), now, Duration::from_secs(60));
        assert_eq!(minute.use_until - now, Duration::from_secs(54));
        let none = Held::new(token("a"), now, Duration::ZERO);
        assert!(!none.fresh(now));
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_refresh_and_reuse_it() {
        let cell = Arc::new(TokenCell::default());
        let fetches = Arc::new(AtomicUsize::new(0));
        let callers = (0..16).map(|_| {
            let (cell, fetches) = (cell.clone(), fetches.clone());
            tokio::spawn(async move {
                cell.get(|| async {
                    fetches.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, ()>(Held::new(
                        token("t1"),
                        Instant::now(),
                        Duration::from_secs(60),
                    ))
                })
                .await
                .unwrap()
            })
        });
        for caller in futures::future::join_all(callers).await {
            assert_eq!(caller.unwrap().secret(), "t1");
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_stale_or_refused_token_is_fetched_again_once() {
        let cell = TokenCell::default();
        let fetch = |text: &'static str, lifetime: u64| {
            move || async move {
                Ok::<_, ()>(Held::new(
                    token(text),
                    Instant::now(),
                    Duration::from_secs(lifetime),
                ))
            }
        };
        // A zero lifetime is stale at once: the next caller fetches.
        assert_eq!(cell.get(fetch("a", 0)).await.unwrap().secret(), "a");
        let b = cell.get(fetch("b", 60)).await.unwrap();
        assert_eq!(b.secret(), "b");
        assert_eq!(cell.get(fetch("c", 60)).await.unwrap().secret(), "b");
        // Refusals of an older token do not throw the newer away.
        cell.forget(&token("b"));
        assert_eq!(cell.get(fetch("c", 60)).await.unwrap().secret(), "b");
        cell.forget(&b);
        assert_eq!(cell.get(fetch("c", 60)).await.unwrap().secret(), "c");
        // A failed fetch leaves nothing behind.
        let failed: Result<AccessToken, &str> = TokenCell::default()
            .get(|| async { Err("issuer down") })
            .await;
        assert_eq!(failed.unwrap_err(), "issuer down");
    }

    #[tokio::test]
    async fn the_subject_cache_is_bounded_stale_first_then_least_recently_used() {
        let cache = SubjectCache::new(2);
        let key = |n: u8| [n; 32];
        let fill = |cell: Arc<TokenCell>, lifetime: u64| async move {
            cell.get(|| async {
                Ok::<_, ()>(Held::new(
                    token("x"),
                    Instant::now(),
                    Duration::from_secs(lifetime),
                ))
            })
            .await
            .unwrap();
        };
        fill(cache.cell(key(1)), 60).await;
        fill(cache.cell(key(2)), 0).await; // stale at once
        fill(cache.cell(key(3)), 60).await; // evicts 2, the stale one
        assert_eq!(cache.len(), 2);
        assert!(cache.cell(key(1)).live(Instant::now()), "1 kept");
        // All fresh now: 3 is the least recently used (1 was just read).
        fill(cache.cell(key(4)), 60).await;
        assert_eq!(cache.len(), 2);
        assert!(cache.cell(key(1)).live(Instant::now()), "1 kept");
        assert!(!cache.cell(key(3)).live(Instant::now()), "3 was evicted");
    }
}
