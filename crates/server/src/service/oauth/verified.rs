//! Tokens verified lately, so a client that sends the same token on every request (as every
//! client does) costs one signature check per token, not one per request: RS256 and ES256
//! verification took half to three quarters of a GET /tools (docs/performance.md,
//! "Credentials"). Keyed by the SHA-256 of the token and the resource it was checked for
//! (never the token itself); an entry lives until the token expires (with the skew the check
//! allows) and at most [`KEEP_AT_MOST`], so a key the issuer withdraws stops working within
//! that. Bounded: past [`MAX_KEPT`] the map starts over.

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use crate::service::client::TokenIdentity;
use crate::sync::Unpoisoned;

const KEEP_AT_MOST: Duration = Duration::from_secs(60);
const MAX_KEPT: usize = 10_000;

#[derive(Default)]
pub struct VerifiedTokens {
    kept: RwLock<HashMap<[u8; 32], (TokenIdentity, Instant)>>,
}

impl VerifiedTokens {
    /// The key of `token` checked for `resource`.
    pub fn key(token: &str, resource: &str) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(resource.as_bytes());
        hash.update([0]);
        hash.update(token.as_bytes());
        hash.finalize().into()
    }

    /// The identity of a token verified lately and not expired since.
    pub fn get(&self, key: &[u8; 32]) -> Option<TokenIdentity> {
        let kept = self.kept.read_unpoisoned();
        let (identity, until) = kept.get(key)?;
        (Instant::now() < *until).then(|| identity.clone())
    }

    /// Keeps a verified token's identity until it expires (plus `leeway`), at most a minute.
    pub fn keep(&self, key: [u8; 32], identity: &TokenIdentity, leeway: Duration) {
        let now = Instant::now();
        let left = match identity.expires {
            Some(expires) => match (expires + leeway).duration_since(SystemTime::now()) {
                Ok(left) => left.min(KEEP_AT_MOST),
                Err(_) => return,
            },
            None => KEEP_AT_MOST,
        };
        let mut kept = self.kept.write_unpoisoned();
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(key, (identity.clone(), now + left));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(expires_in: i64) -> TokenIdentity {
        let expires = if expires_in >= 0 {
            SystemTime::now() + Duration::from_secs(expires_in as u64)
        } else {
            SystemTime::now() - Duration::from_secs(expires_in.unsigned_abs())
        };
        TokenIdentity::new("alice".into(), None, vec![], Some(expires), "t")
    }

    #[test]
    fn a_token_is_kept_per_resource_until_it_expires() {
        let tokens = VerifiedTokens::default();
        let here = VerifiedTokens::key("t", "http://a");
        let there = VerifiedTokens::key("t", "http://b");
        assert_ne!(
            here, there,
            "a token checked for one service says nothing of another"
        );
        tokens.keep(here, &identity(30), Duration::ZERO);
        assert_eq!(tokens.get(&here).map(|i| i.subject), Some("alice".into()));
        assert!(tokens.get(&there).is_none());
        // Expired beyond the skew: not kept at all.
        let old = VerifiedTokens::key("old", "http://a");
        tokens.keep(old, &identity(-60), Duration::from_secs(30));
        assert!(tokens.get(&old).is_none());
        // Expired but within the skew: kept for what is left of it.
        let late = VerifiedTokens::key("late", "http://a");
        tokens.keep(late, &identity(-1), Duration::from_secs(30));
        assert!(tokens.get(&late).is_some());
    }

    #[test]
    fn the_map_starts_over_past_its_bound() {
        let tokens = VerifiedTokens::default();
        for n in 0..MAX_KEPT {
            tokens.keep(
                VerifiedTokens::key(&n.to_string(), "r"),
                &identity(30),
                Duration::ZERO,
            );
        }
        let first = VerifiedTokens::key("0", "r");
        assert!(tokens.get(&first).is_some());
        tokens.keep(
            VerifiedTokens::key("one more", "r"),
            &identity(30),
            Duration::ZERO,
        );
        assert!(tokens.get(&first).is_none());
        assert_eq!(tokens.kept.read_unpoisoned().len(), 1);
    }
}
