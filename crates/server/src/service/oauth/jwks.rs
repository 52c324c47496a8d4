//! The issuer's signing keys (its JWKS), fetched on first need and again when a token names a
//! key id not among them (the issuer rotated its keys). A fetch is tried a few times with a
//! growing pause; fetches are at most one at a time and at most one per [`MIN_REFETCH`], so
//! tokens with made-up key ids cannot turn the gateway against the issuer. When the issuer is
//! down, the keys already fetched keep working; a token signed with any other key is refused.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

use super::BearerError;
use super::metadata::discover;
use crate::config::OAuthConfig;
use crate::sync::Unpoisoned;

/// The shortest time between two fetches of the keys.
const MIN_REFETCH: Duration = Duration::from_secs(10);
/// Fetch attempts per refresh, and the pause before the second (doubled before each next).
const ATTEMPTS: u32 = 3;
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// More keys than an issuer publishes; a larger set is cut (it would only cost memory).
const MAX_KEYS: usize = 64;

/// What the cache says of a token's key.
pub enum KeyLookup {
    Found(Arc<DecodingKey>),
    /// Not known yet, and a fetch may find it.
    Unknown,
    Refused(BearerError),
}

struct CachedKey {
    key: Arc<DecodingKey>,
    /// The JWK's own `alg`, when it names one: a token must use that one.
    alg: Option<String>,
}

#[derive(Default)]
struct Keys {
    by_kid: HashMap<String, CachedKey>,
    /// Keys without a `kid` (an issuer with one key may leave it out).
    unnamed: Vec<CachedKey>,
    last_fetch: Option<Instant>,
    last_error: Option<String>,
}

pub struct JwksCache {
    issuer: String,
    jwks_uri: Option<String>,
    http: reqwest::Client,
    keys: RwLock<Keys>,
    refreshing: tokio::sync::Mutex<()>,
}

impl JwksCache {
    pub fn new(config: &OAuthConfig, http: reqwest::Client) -> JwksCache {
        JwksCache {
            issuer: config.issuer.clone(),
            jwks_uri: config.jwks_uri.clone(),
            http,
            keys: RwLock::default(),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    pub fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> KeyLookup {
        let keys = self.keys.read_unpoisoned();
        let found = match kid {
            Some(kid) => keys.by_kid.get(kid),
            None if keys.by_kid.len() + keys.unnamed.len() == 1 => {
                keys.unnamed.first().or_else(|| keys.by_kid.values().next())
            }
            None => None,
        };
        if let Some(cached) = found {
            return match &cached.alg {
                Some(want) if *want != format!("{alg:?}") => {
                    KeyLookup::Refused(BearerError::Algorithm(format!("{alg:?}")))
                }
                _ => KeyLookup::Found(cached.key.clone()),
            };
        }
        let recently = keys.last_fetch.is_some_and(|t| t.elapsed() < MIN_REFETCH);
        match (recently, &keys.last_error) {
            (false, _) => KeyLookup::Unknown,
            (true, Some(error)) => KeyLookup::Refused(BearerError::KeysUnavailable(error.clone())),
            (true, None) => {
                KeyLookup::Refused(BearerError::UnknownKey(kid.unwrap_or("(none)").to_owned()))
            }
        }
    }

    /// Fetches the keys (unless another request just did) and looks the token's key up again.
    pub async fn refresh_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Arc<DecodingKey>, BearerError> {
        let _one_at_a_time = self.refreshing.lock().await;
        if let KeyLookup::Unknown = self.lookup(kid, alg) {
            let fetched = self.fetch().await;
            let mut keys = self.keys.write_unpoisoned();
            keys.last_fetch = Some(Instant::now());
            match fetched {
                Ok(fresh) => {
                    keys.by_kid = fresh.by_kid;
                    keys.unnamed = fresh.unnamed;
                    keys.last_error = None;
                }
                Err(error) => {
                    tracing::warn!(issuer = %self.issuer, "oauth: the issuer's keys could not be fetched ({error}); the keys fetched before stay in use");
                    keys.last_error = Some(error);
                }
            }
        }
        match self.lookup(kid, alg) {
            KeyLookup::Found(key) => Ok(key),
            KeyLookup::Refused(e) => Err(e),
            KeyLookup::Unknown => Err(BearerError::UnknownKey(kid.unwrap_or("(none)").to_owned())),
        }
    }

    /// The key set, tried [`ATTEMPTS`] times.
    async fn fetch(&self) -> Result<Keys, String> {
        let mut pause = FIRST_PAUSE;
        let mut last = String::new();
        for attempt in 1..=ATTEMPTS {
            match self.fetch_once().await {
                Ok(keys) => return Ok(keys),
                Err(e) => last = e,
            }
            if attempt < ATTEMPTS {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
        }
        Err(last)
    }

    async fn fetch_once(&self) -> Result<Keys, String> {
        let uri = match &self.jwks_uri {
            Some(uri) => uri.clone(),
            None => discover(&self.http, &self.issuer)
                .await?
                .jwks_uri
                .ok_or_else(|| format!("the metadata of {} names no jwks_uri", self.issuer))?,
        };
        let answer = self
            .http
            .get(&uri)
            .send()
            .await
            .map_err(|e| format!("GET {uri}: {}", without_url(&e)))?;
        if !answer.status().is_success() {
            return Err(format!("GET {uri}: HTTP {}", answer.status().as_u16()));
        }
        let set: serde_json::Value = answer
            .json()
            .await
            .map_err(|_| format!("GET {uri}: not a JSON key set"))?;
        Ok(keys_of(&set))
    }
}

/// The signing keys of a JWK set that this gateway can use; others (encryption keys, unknown
/// key types, symmetric keys) are left out.
fn keys_of(set: &serde_json::Value) -> Keys {
    let mut keys = Keys::default();
    let items = set
        .get("keys")
        .and_then(|k| k.as_array())
        .into_iter()
        .flatten();
    for item in items.take(MAX_KEYS) {
        let Ok(jwk) = serde_json::from_value::<Jwk>(item.clone()) else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            continue;
        }
        if matches!(
            jwk.algorithm,
            jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
        ) {
            continue;
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        let cached = CachedKey {
            key: Arc::new(key),
            alg: jwk.common.key_algorithm.map(|a| a.to_string()),
        };
        match jwk.common.key_id {
            Some(kid) => _ = keys.by_kid.insert(kid, cached),
            None => keys.unnamed.push(cached),
        }
    }
    keys
}

/// A request error's text without the URL (the caller names it once).
fn without_url(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "could not connect".into()
    } else {
        "request failed".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RSA public key (2048 bits) and a P-256 one, as JWKs.
    fn set() -> serde_json::Value {
        serde_json::json!({"keys": [
            {"kty": "RSA", "kid": "r1", "alg": "RS256", "use": "sig",
             "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw",
             "e": "AQAB"},
            {"kty": "EC", "kid": "e1", "crv": "P-256",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
             "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "oct", "kid": "h1", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
            {"kty": "nope"}
        ]})
    }

    fn cache_with(keys: Keys) -> JwksCache {
        let config: OAuthConfig = serde_saphyr::from_str("issuer: https://id.example\n").unwrap();
        let cache = JwksCache::new(&config, reqwest::Client::new());
        *cache.keys.write_unpoisoned() = keys;
        cache
    }

    #[test]
    fn only_signature_keys_of_known_asymmetric_types_are_kept() {
        let keys = keys_of(&set());
        let mut kids: Vec<_> = keys.by_kid.keys().cloned().collect();
        kids.sort();
        assert_eq!(kids, ["e1", "r1"]);
        assert_eq!(keys.by_kid["r1"].alg.as_deref(), Some("RS256"));
    }

    #[test]
    fn a_key_is_found_by_kid_and_its_own_alg_holds() {
        let mut keys = keys_of(&set());
        keys.last_fetch = Some(Instant::now());
        let cache = cache_with(keys);
        assert!(matches!(
            cache.lookup(Some("r1"), Algorithm::RS256),
            KeyLookup::Found(_)
        ));
        assert!(matches!(
            cache.lookup(Some("r1"), Algorithm::PS256),
            KeyLookup::Refused(BearerError::Algorithm(_))
        ));
        // Just fetched: an unknown kid is refused at once, not fetched again.
        assert!(matches!(
            cache.lookup(Some("zz"), Algorithm::RS256),
            KeyLookup::Refused(BearerError::UnknownKey(_))
        ));
        // Two keys: a token without kid cannot pick one.
        assert!(matches!(
            cache.lookup(None, Algorithm::RS256),
            KeyLookup::Refused(_)
        ));
    }

    #[test]
    fn an_unknown_kid_is_fetched_for_once_the_pause_is_over_and_a_failed_fetch_says_why() {
        let mut keys = keys_of(&set());
        keys.last_fetch = Some(Instant::now() - MIN_REFETCH);
        let cache = cache_with(keys);
        assert!(matches!(
            cache.lookup(Some("zz"), Algorithm::RS256),
            KeyLookup::Unknown
        ));
        let mut failed = Keys {
            last_fetch: Some(Instant::now()),
            last_error: Some("GET x: could not connect".into()),
            ..Keys::default()
        };
        failed.unnamed = keys_of(&set()).by_kid.into_values().take(1).collect();
        let cache = cache_with(failed);
        assert!(
            matches!(cache.lookup(None, Algorithm::RS256), KeyLookup::Found(_))
                || matches!(cache.lookup(None, Algorithm::ES256), KeyLookup::Found(_))
        );
        assert!(matches!(
            cache.lookup(Some("new"), Algorithm::RS256),
            KeyLookup::Refused(BearerError::KeysUnavailable(_))
        ));
    }
}
