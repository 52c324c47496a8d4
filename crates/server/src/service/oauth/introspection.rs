//! RFC 7662: a token that is not a JWT is asked of the issuer's introspection endpoint, with the
//! gateway's own client credentials. An active answer is kept until the token expires (at most
//! [`KEEP_AT_MOST`]), an inactive one briefly, so a busy client costs the issuer little; the
//! cache holds a token's SHA-256, never the token.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{BearerError, identity, now_secs, scopes_of};
use crate::config::Introspection;
use crate::service::client::TokenIdentity;
use crate::sync::Unpoisoned;

const KEEP_AT_MOST: Duration = Duration::from_secs(60);
const KEEP_REFUSAL: Duration = Duration::from_secs(5);
/// Answers kept; past this the cache starts over (no token gets in that would not otherwise).
const MAX_KEPT: usize = 10_000;

#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    exp: Option<u64>,
    #[serde(default)]
    nbf: Option<u64>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<serde_json::Value>,
}

type Judged = Result<(TokenIdentity, Option<serde_json::Value>), BearerError>;
type Kept = (Judged, Instant);

pub struct Introspector {
    url: String,
    client_id: String,
    secret_env: String,
    http: reqwest::Client,
    kept: Mutex<HashMap<[u8; 32], Kept>>,
}

impl Introspector {
    pub fn new(config: &Introspection, http: reqwest::Client) -> Introspector {
        Introspector {
            url: config.url.clone(),
            client_id: config.client_id.clone(),
            secret_env: config.client_secret_env.clone(),
            http,
            kept: Mutex::default(),
        }
    }

    pub async fn introspect(
        &self,
        token: &str,
        issuer: &str,
        audiences: &[String],
    ) -> Result<TokenIdentity, BearerError> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((answer, until)) = self.kept.write_unpoisoned().get(&digest)
            && Instant::now() < *until
        {
            return answer
                .clone()
                .and_then(|(id, aud)| fits(id, audiences, aud.as_ref()));
        }
        let answer = self.ask(token).await?;
        let (judged, keep) = judge(answer, token, issuer);
        let mut kept = self.kept.write_unpoisoned();
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(digest, (judged.clone(), Instant::now() + keep));
        drop(kept);
        judged.and_then(|(id, aud)| fits(id, audiences, aud.as_ref()))
    }

    async fn ask(&self, token: &str) -> Result<Answer, BearerError> {
        let unavailable = BearerError::IntrospectionUnavailable;
        let secret = std::env::var(&self.secret_env)
            .map_err(|_| unavailable(format!("{} is not set", self.secret_env)))?;
        let answer = self
            .http
            .post(&self.url)
            .basic_auth(&self.client_id, Some(secret))
            .form(&[("token", token), ("token_type_hint", "access_token")])
            .send()
            .await
            .map_err(|e| {
                unavailable(if e.is_timeout() {
                    "timed out".into()
                } else {
                    "could not connect".into()
                })
            })?;
        if !answer.status().is_success() {
            return Err(unavailable(format!("HTTP {}", answer.status().as_u16())));
        }
        answer
            .json()
            .await
            .map_err(|_| unavailable("the answer is not an introspection response".into()))
    }
}

/// An answer as an identity (with its `aud`, checked per request) and how long to keep it.
fn judge(answer: Answer, token: &str, issuer: &str) -> (Judged, Duration) {
    let refused = |e| (Err(e), KEEP_REFUSAL);
    if !answer.active {
        return refused(BearerError::Inactive);
    }
    let now = now_secs();
    if answer.exp.is_some_and(|exp| exp <= now) {
        return refused(BearerError::Expired);
    }
    if answer.nbf.is_some_and(|nbf| nbf > now) {
        return refused(BearerError::NotYetValid);
    }
    if let Some(iss) = &answer.iss
        && iss.trim_end_matches('/') != issuer
    {
        return refused(BearerError::Issuer(issuer.to_owned()));
    }
    let keep = answer
        .exp
        .map(|exp| Duration::from_secs(exp - now))
        .unwrap_or(KEEP_AT_MOST)
        .min(KEEP_AT_MOST);
    let scopes = scopes_of(answer.scope.as_deref(), None);
    match identity(answer.sub, answer.client_id, scopes, answer.exp, token) {
        Ok(id) => (Ok((id, answer.aud)), keep),
        Err(e) => refused(e),
    }
}

/// Whether an introspected token is meant for this service: its `aud`, when the issuer says
/// one, must be one of the service's audiences. (A kept answer was judged already.)
fn fits(
    id: TokenIdentity,
    audiences: &[String],
    aud: Option<&serde_json::Value>,
) -> Result<TokenIdentity, BearerError> {
    if id
        .expires
        .is_some_and(|t| t <= std::time::SystemTime::now())
    {
        return Err(BearerError::Expired);
    }
    let named: Vec<&str> = match aud {
        None => return Ok(id),
        Some(serde_json::Value::String(one)) => vec![one.as_str()],
        Some(serde_json::Value::Array(many)) => many.iter().filter_map(|v| v.as_str()).collect(),
        Some(_) => vec![],
    };
    if named.iter().any(|a| audiences.iter().any(|mine| mine == a)) {
        Ok(id)
    } else {
        Err(BearerError::Audience(audiences[0].clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: serde_json::Value) -> Answer {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn an_active_answer_is_an_identity_kept_until_it_expires() {
        let exp = now_secs() + 30;
        let (judged, keep) = judge(
            answer(
                serde_json::json!({"active": true, "sub": "bob", "scope": "a b", "exp": exp, "iss": "https://id.example/", "aud": "http://s"}),
            ),
            "t",
            "https://id.example",
        );
        let (id, aud) = judged.unwrap();
        assert_eq!(&*id.subject, "bob");
        assert_eq!(id.scopes, ["a", "b"]);
        assert!(keep <= Duration::from_secs(30) && keep >= Duration::from_secs(29));
        assert!(fits(id.clone(), &["http://s".into()], aud.as_ref()).is_ok());
        assert_eq!(
            fits(id, &["http://other".into()], aud.as_ref()).unwrap_err(),
            BearerError::Audience("http://other".into())
        );
    }

    #[test]
    fn inactive_expired_and_foreign_answers_are_refused_and_kept_briefly() {
        for (json, error) in [
            (serde_json::json!({"active": false}), BearerError::Inactive),
            (
                serde_json::json!({"active": true, "sub": "x", "exp": 1}),
                BearerError::Expired,
            ),
            (
                serde_json::json!({"active": true, "sub": "x", "nbf": now_secs() + 600}),
                BearerError::NotYetValid,
            ),
            (
                serde_json::json!({"active": true, "sub": "x", "iss": "https://evil"}),
                BearerError::Issuer("https://id.example".into()),
            ),
            (
                serde_json::json!({"active": true}),
                BearerError::MissingClaim("sub".into()),
            ),
        ] {
            let (judged, keep) = judge(answer(json), "t", "https://id.example");
            assert_eq!(judged.unwrap_err(), error);
            assert_eq!(keep, KEEP_REFUSAL);
        }
    }
}
