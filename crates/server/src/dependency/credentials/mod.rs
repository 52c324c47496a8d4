//! Upstream credentials: the token the gateway sends an upstream (an `http` dependency, an
//! `mcp` provider's url) when its `auth` says to get one — its own by client credentials, or
//! the caller's exchanged (RFC 8693) — kept until shortly before it expires. The caller's own
//! token is never sent upstream: it only ever goes to the issuer, as the subject of an
//! exchange. No token or secret appears in Debug output or in an error.

mod cache;
pub mod challenge;
mod token_endpoint;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::HeaderValue;
use sha2::{Digest, Sha256};

use self::cache::{Held, SubjectCache, TokenCell};
pub use self::token_endpoint::TokenError;
use self::token_endpoint::{ClientSecret, Grant, TokenEndpoint};
use crate::config::{UpstreamAuth, expand_env};

/// How many callers' exchanged tokens one upstream keeps.
pub const SUBJECTS_KEPT: usize = 1024;

/// A token the gateway sends upstream. Cheap to clone; never printed.
#[derive(Clone)]
pub struct AccessToken(Arc<str>);

impl AccessToken {
    pub fn new(token: &str) -> AccessToken {
        AccessToken(Arc::from(token))
    }

    pub fn secret(&self) -> &str {
        &self.0
    }

    /// The same token as issued (not merely equal text): what a refusal forgets.
    pub fn same(&self, other: &AccessToken) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// `Bearer <token>`, marked sensitive (left out of HTTP/2 header tables and Debug).
    pub fn header(&self) -> Option<HeaderValue> {
        let mut value = HeaderValue::try_from(format!("Bearer {}", self.0)).ok()?;
        value.set_sensitive(true);
        Some(value)
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessToken(<redacted>)")
    }
}

/// The caller's own access token, as the gateway validated it: only ever the subject of a
/// token exchange, never sent to an upstream.
#[derive(Clone)]
pub struct SubjectToken {
    token: Arc<str>,
    subject: Arc<str>,
    expires_at: Option<SystemTime>,
}

impl SubjectToken {
    /// `subject` is the token's `sub` (for logs), `expires_at` its `exp` when known.
    pub fn new(token: &str, subject: &str, expires_at: Option<SystemTime>) -> SubjectToken {
        SubjectToken {
            token: Arc::from(token),
            subject: Arc::from(subject),
            expires_at,
        }
    }

    pub fn subject(&self) -> &str {
        &self.subject
    }

    pub fn expires_at(&self) -> Option<SystemTime> {
        self.expires_at
    }

    /// The cache key of what was exchanged for it: the token's SHA-256, so two tokens of one
    /// subject (a refreshed one, a narrower one) are not confused, and no map holds the token.
    fn key(&self) -> [u8; 32] {
        Sha256::digest(self.token.as_bytes()).into()
    }

    /// How long it is still valid, when its expiry is known.
    fn remaining(&self) -> Option<Duration> {
        self.expires_at
            .map(|at| at.duration_since(SystemTime::now()).unwrap_or_default())
    }
}

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectToken(<redacted>)")
    }
}

/// Why no credentials could be sent, or the upstream did not take them.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CredentialError {
    #[error(
        "upstream '{upstream}': auth.client_secret_env {variable} is not set (it holds the client secret for {issuer})"
    )]
    SecretUnset {
        upstream: String,
        variable: String,
        issuer: String,
    },
    #[error("upstream '{upstream}': auth.token_url: {why}")]
    TokenUrl { upstream: String, why: String },
    #[error("upstream '{upstream}': the gateway got no token from its issuer {issuer}: {source}")]
    Token {
        upstream: String,
        issuer: String,
        source: TokenError,
    },
    #[error(
        "upstream '{upstream}' is called with the caller's own token exchanged for one of its own (auth kind token_exchange), and this call carries no OAuth access token: call with one"
    )]
    NoSubject { upstream: String },
    #[error("upstream '{upstream}' refused the gateway's credentials ({challenge})")]
    Refused { upstream: String, challenge: String },
}

/// Where the tokens come from.
enum Source {
    /// The gateway's own, shared by every call.
    Client {
        endpoint: TokenEndpoint,
        cell: TokenCell,
    },
    /// One per caller, exchanged for the caller's token.
    Exchange {
        endpoint: TokenEndpoint,
        subjects: SubjectCache,
    },
}

/// An upstream's `auth`, built: the token endpoint and the tokens it gave.
pub struct Credentials {
    upstream: String,
    source: Source,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (kind, endpoint) = match &self.source {
            Source::Client { endpoint, .. } => ("client_credentials", endpoint),
            Source::Exchange { endpoint, .. } => ("token_exchange", endpoint),
        };
        f.debug_struct("Credentials")
            .field("upstream", &self.upstream)
            .field("kind", &kind)
            .field("issuer", &endpoint.shown())
            .finish()
    }
}

impl Credentials {
    /// `auth` with `${VAR}` expanded and the secret read from its variable. Nothing is fetched
    /// yet: the first call does.
    pub fn new(upstream: &str, auth: &UpstreamAuth) -> Result<Credentials, CredentialError> {
        let client = auth.client();
        let url_error = |why: String| CredentialError::TokenUrl {
            upstream: upstream.to_owned(),
            why,
        };
        let token_url = expand_env(&client.token_url).map_err(|e| url_error(e.to_string()))?;
        let url = reqwest::Url::parse(&token_url).map_err(|e| url_error(e.to_string()))?;
        let local = matches!(
            url.host(),
            Some(url::Host::Domain("localhost"))
                | Some(url::Host::Ipv4(std::net::Ipv4Addr::LOCALHOST))
                | Some(url::Host::Ipv6(std::net::Ipv6Addr::LOCALHOST))
        );
        if !(url.scheme() == "https" || (url.scheme() == "http" && local)) {
            return Err(url_error(
                "must be https:// (http:// only to localhost): the client secret travels to it"
                    .into(),
            ));
        }
        let secret = std::env::var(&client.client_secret_env)
            .ok()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| CredentialError::SecretUnset {
                upstream: upstream.to_owned(),
                variable: client.client_secret_env.clone(),
                issuer: url.origin().ascii_serialization(),
            })?;
        let endpoint = TokenEndpoint::new(url, client, ClientSecret::new(secret), auth.target())
            .map_err(|e| url_error(e.to_string()))?;
        let source = match auth {
            UpstreamAuth::ClientCredentials { .. } => Source::Client {
                endpoint,
                cell: TokenCell::default(),
            },
            UpstreamAuth::TokenExchange { .. } => Source::Exchange {
                endpoint,
                subjects: SubjectCache::new(SUBJECTS_KEPT),
            },
        };
        Ok(Credentials {
            upstream: upstream.to_owned(),
            source,
        })
    }

    /// The token to send for a call by `subject` (the caller's token, when it has one).
    pub async fn bearer(
        &self,
        subject: Option<&SubjectToken>,
    ) -> Result<AccessToken, CredentialError> {
        match &self.source {
            Source::Client { endpoint, cell } => {
                cell.get(|| async {
                    let issued = endpoint
                        .request(Grant::ClientCredentials)
                        .await
                        .map_err(|e| self.token_error(endpoint, e))?;
                    tracing::debug!(upstream = %self.upstream, lifetime_s = issued.lifetime.as_secs(), "got a client credentials token");
                    Ok(Held::new(issued.token, Instant::now(), issued.lifetime))
                })
                .await
            }
            Source::Exchange { endpoint, subjects } => {
                let subject = subject.ok_or_else(|| CredentialError::NoSubject {
                    upstream: self.upstream.clone(),
                })?;
                let cell = subjects.cell(subject.key());
                cell.get(|| async {
                    let issued = endpoint
                        .request(Grant::TokenExchange {
                            subject_token: &subject.token,
                        })
                        .await
                        .map_err(|e| self.token_error(endpoint, e))?;
                    tracing::debug!(upstream = %self.upstream, subject = %subject.subject(), lifetime_s = issued.lifetime.as_secs(), "exchanged the caller's token");
                    // Not used past the caller's own token: by then the caller is refused anyway.
                    let lifetime = subject
                        .remaining()
                        .map_or(issued.lifetime, |left| left.min(issued.lifetime));
                    Ok(Held::new(issued.token, Instant::now(), lifetime))
                })
                .await
            }
        }
    }

    /// The upstream answered 401 to `token`: forget it, so the next call gets a fresh one.
    /// True when retrying this call once with a fresh token may help (the gateway's own token,
    /// which the issuer may have revoked or rotated).
    pub fn refused(&self, token: &AccessToken, subject: Option<&SubjectToken>) -> bool {
        match &self.source {
            Source::Client { cell, .. } => {
                cell.forget(token);
                true
            }
            Source::Exchange { subjects, .. } => {
                if let Some(subject) = subject {
                    subjects.cell(subject.key()).forget(token);
                }
                false
            }
        }
    }

    /// The error for an upstream's 401 and its `WWW-Authenticate`.
    pub fn refusal(&self, status: u16, challenge: Option<&str>) -> CredentialError {
        refusal(&self.upstream, status, challenge)
    }

    fn token_error(&self, endpoint: &TokenEndpoint, source: TokenError) -> CredentialError {
        let error = CredentialError::Token {
            upstream: self.upstream.clone(),
            issuer: endpoint.shown(),
            source,
        };
        tracing::warn!(upstream = %self.upstream, "{error}");
        error
    }
}

/// An upstream's 401 as an error naming it and quoting its challenge (never the token).
pub fn refusal(upstream: &str, status: u16, challenge: Option<&str>) -> CredentialError {
    CredentialError::Refused {
        upstream: upstream.to_owned(),
        challenge: challenge::summary(status, challenge),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_redacted_in_debug_output() {
        let subject = SubjectToken::new("caller-secret", "alice", None);
        assert_eq!(format!("{subject:?}"), "SubjectToken(<redacted>)");
        let token = AccessToken::new("upstream-secret");
        assert_eq!(format!("{token:?}"), "AccessToken(<redacted>)");
        let header = token.header().unwrap();
        assert!(header.is_sensitive());
        assert!(!format!("{header:?}").contains("upstream-secret"));
    }

    #[test]
    fn a_subject_is_keyed_by_its_tokens_digest_and_bounded_by_its_expiry() {
        let a = SubjectToken::new("t1", "alice", None);
        let b = SubjectToken::new("t2", "alice", None);
        assert_ne!(a.key(), b.key());
        assert_eq!(a.key(), SubjectToken::new("t1", "other", None).key());
        assert_eq!(a.remaining(), None);
        let past = SubjectToken::new("t", "s", Some(SystemTime::now() - Duration::from_secs(5)));
        assert_eq!(past.remaining(), Some(Duration::ZERO));
        let soon = SubjectToken::new("t", "s", Some(SystemTime::now() + Duration::from_secs(60)));
        assert!(soon.remaining().unwrap() > Duration::from_secs(58));
    }

    fn auth(kind: &str, token_url: &str, secret_env: &str) -> UpstreamAuth {
        serde_saphyr::from_str(&format!(
            "{{ kind: {kind}, token_url: '{token_url}', client_id: gw, client_secret_env: {secret_env} }}"
        ))
        .unwrap()
    }

    #[tokio::test]
    async fn a_token_exchange_without_a_caller_token_fails_naming_the_upstream() {
        // SAFETY: a variable no other test reads.
        unsafe { std::env::set_var("MHG_TEST_CRED_SECRET", "s") };
        let credentials = Credentials::new(
            "billing",
            &auth(
                "token_exchange",
                "http://127.0.0.1:9/token",
                "MHG_TEST_CRED_SECRET",
            ),
        )
        .unwrap();
        let error = credentials.bearer(None).await.unwrap_err().to_string();
        assert!(
            error.starts_with("upstream 'billing' is called with the caller's own token exchanged"),
            "{error}"
        );
        assert!(!format!("{credentials:?}").contains("MHG_TEST_CRED_SECRET=s"));
    }

    #[test]
    fn building_needs_the_secret_and_a_safe_token_url() {
        let unset = Credentials::new(
            "billing",
            &auth(
                "client_credentials",
                "https://issuer.example/token",
                "MHG_TEST_CRED_UNSET",
            ),
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            unset,
            "upstream 'billing': auth.client_secret_env MHG_TEST_CRED_UNSET is not set (it holds the client secret for https://issuer.example)"
        );
        // SAFETY: variables no other test reads.
        unsafe {
            std::env::set_var("MHG_TEST_CRED_ISSUER", "http://issuer.example");
            std::env::set_var("MHG_TEST_CRED_SECRET2", "s");
        }
        let plain = Credentials::new(
            "billing",
            &auth(
                "client_credentials",
                "${MHG_TEST_CRED_ISSUER}/token",
                "MHG_TEST_CRED_SECRET2",
            ),
        )
        .unwrap_err()
        .to_string();
        assert!(plain.contains("must be https://"), "{plain}");
    }

    #[test]
    fn a_refusal_names_the_upstream_and_quotes_the_challenge() {
        assert_eq!(
            refusal(
                "billing",
                401,
                Some(r#"Bearer realm="x", error="invalid_token""#)
            )
            .to_string(),
            r#"upstream 'billing' refused the gateway's credentials (401 Bearer error="invalid_token")"#
        );
    }
}
