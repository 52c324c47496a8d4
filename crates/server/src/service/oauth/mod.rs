//! The service as an OAuth 2.1 resource server (`security.oauth`): a bearer token is checked
//! here and becomes the request's [`TokenIdentity`]. A JWT is verified against the issuer's
//! keys ([`jwks`]): its signature with an allowed asymmetric algorithm, `iss`, `aud` (the
//! service's resource URI, RFC 8707), `exp` and `nbf` within the configured skew. A token that
//! is not a JWT is asked of the issuer's RFC 7662 endpoint, when one is configured
//! ([`introspection`]). Every failure is a [`BearerError`]: the request is refused, never let
//! through (fail closed), and the error's text goes to the client, never the token. A JWT
//! verified once is kept for a while ([`verified`]): a client sends the same token again and
//! again.

mod introspection;
mod jwks;
mod metadata;
mod resource;
mod verified;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Validation, decode, decode_header};
use serde::Deserialize;

use self::introspection::Introspector;
use self::jwks::{JwksCache, KeyLookup};
pub use self::metadata::{IssuerMetadata, discover};
pub use self::resource::{
    MCP_METADATA_PATH, METADATA_PATH, Resource, insufficient_scope, is_metadata_path, quoted,
};
use self::verified::VerifiedTokens;
use super::client::TokenIdentity;
use crate::config::OAuthConfig;

/// How long one fetch from the issuer (metadata, keys, introspection) may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a bearer token was refused: the `error_description` of the 401.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BearerError {
    #[error("the token is not a JWT and no introspection endpoint is configured")]
    NotJwt,
    #[error("the token is malformed: {0}")]
    Malformed(String),
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    #[error("the token's audience is not this service ({0})")]
    Audience(String),
    #[error("the token's issuer is not {0}")]
    Issuer(String),
    #[error("the token's algorithm {0} is not accepted")]
    Algorithm(String),
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token's key id '{0}' is not one of the issuer's keys")]
    UnknownKey(String),
    #[error("the token lacks the '{0}' claim")]
    MissingClaim(String),
    #[error("the issuer's keys could not be fetched: {0}")]
    KeysUnavailable(String),
    #[error("the token is not active (introspection)")]
    Inactive,
    #[error("the introspection endpoint could not be asked: {0}")]
    IntrospectionUnavailable(String),
}

/// The claims read from a verified JWT (the registered ones are checked by `Validation`).
#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    azp: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    /// Some issuers list scopes as an array under `scp`.
    #[serde(default)]
    scp: Option<serde_json::Value>,
    #[serde(default)]
    exp: Option<u64>,
}

/// Checks the bearer tokens of one service's settings.
pub struct OAuthVerifier {
    config: OAuthConfig,
    keys: JwksCache,
    introspector: Option<Introspector>,
    verified: VerifiedTokens,
}

impl OAuthVerifier {
    pub fn new(config: &OAuthConfig) -> OAuthVerifier {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(Duration::from_secs(2))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("a plain HTTP client builds");
        OAuthVerifier {
            keys: JwksCache::new(config, http.clone()),
            introspector: config
                .introspection
                .as_ref()
                .map(|i| Introspector::new(i, http)),
            verified: VerifiedTokens::default(),
            config: config.clone(),
        }
    }

    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// Decides at once when it can: a JWT whose key is cached. `None`: the issuer must be
    /// asked first ([`OAuthVerifier::verify`]).
    pub fn verify_now(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Option<Result<TokenIdentity, BearerError>> {
        if !is_jwt(token) {
            return self
                .introspector
                .is_none()
                .then_some(Err(BearerError::NotJwt));
        }
        let kept = VerifiedTokens::key(token, &audiences[0]);
        if let Some(identity) = self.verified.get(&kept) {
            return Some(Ok(identity));
        }
        let header = match decode_header(token) {
            Ok(header) => header,
            Err(e) => return Some(Err(header_error(token, e.kind()))),
        };
        match self.keys.lookup(header.kid.as_deref(), header.alg) {
            KeyLookup::Found(key) => {
                let verdict = self.check_jwt(token, &key, header.alg, audiences);
                if let Ok(identity) = &verdict {
                    self.verified.keep(kept, identity, self.config.leeway);
                }
                Some(verdict)
            }
            KeyLookup::Unknown => None,
            KeyLookup::Refused(e) => Some(Err(e)),
        }
    }

    /// Verifies a token, fetching the issuer's keys (on an unknown `kid`) or asking its
    /// introspection endpoint when needed.
    pub async fn verify(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<TokenIdentity, BearerError> {
        if let Some(decided) = self.verify_now(token, audiences) {
            return decided;
        }
        if !is_jwt(token) {
            let introspector = self.introspector.as_ref().ok_or(BearerError::NotJwt)?;
            return introspector
                .introspect(token, &self.config.issuer, audiences)
                .await;
        }
        let header = decode_header(token).map_err(|e| header_error(token, e.kind()))?;
        let key = self
            .keys
            .refresh_for(header.kid.as_deref(), header.alg)
            .await?;
        self.check_jwt(token, &key, header.alg, audiences)
    }

    fn check_jwt(
        &self,
        token: &str,
        key: &jsonwebtoken::DecodingKey,
        alg: jsonwebtoken::Algorithm,
        audiences: &[String],
    ) -> Result<TokenIdentity, BearerError> {
        if !self.config.algorithms.contains(&alg) {
            return Err(BearerError::Algorithm(format!("{alg:?}")));
        }
        let mut validation = Validation::new(alg);
        validation.algorithms = vec![alg];
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_nbf = true;
        // The configured issuer is kept without a trailing `/`; many issuers' identifiers have one.
        let issuer = &self.config.issuer;
        validation.set_issuer(&[issuer.clone(), format!("{issuer}/")]);
        validation.set_audience(audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = decode::<Claims>(token, key, &validation).map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => BearerError::Expired,
            ErrorKind::ImmatureSignature => BearerError::NotYetValid,
            ErrorKind::InvalidAudience => BearerError::Audience(audiences[0].clone()),
            ErrorKind::InvalidIssuer => BearerError::Issuer(self.config.issuer.clone()),
            ErrorKind::InvalidSignature => BearerError::Signature,
            ErrorKind::InvalidAlgorithm => BearerError::Algorithm(format!("{alg:?}")),
            ErrorKind::MissingRequiredClaim(claim) => BearerError::MissingClaim(claim.clone()),
            other => BearerError::Malformed(short(other)),
        })?;
        let claims = data.claims;
        let scopes = scopes_of(claims.scope.as_deref(), claims.scp.as_ref());
        let client_id = claims.client_id.or(claims.azp);
        identity(claims.sub, client_id, scopes, claims.exp, token)
    }
}

/// `config` with the issuer's endpoints filled in from its metadata where `security.oauth`
/// leaves them out (for the OpenAPI document's flows and the key set's URL). Asked once, at
/// start and on reload, for at most [`FETCH_TIMEOUT`]; an issuer that does not answer leaves
/// them out (the keys' URL is then looked up again on first need) and is logged.
pub async fn with_issuer_endpoints(
    mut config: crate::config::ServiceConfig,
) -> crate::config::ServiceConfig {
    let Some(oauth) = config.security.oauth.as_mut() else {
        return config;
    };
    if oauth.jwks_uri.is_some()
        && oauth.authorization_endpoint.is_some()
        && oauth.token_endpoint.is_some()
    {
        return config;
    }
    let http = reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(Duration::from_secs(2))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a plain HTTP client builds");
    match discover(&http, &oauth.issuer).await {
        Ok(metadata) => {
            oauth.jwks_uri = oauth.jwks_uri.take().or(metadata.jwks_uri);
            oauth.authorization_endpoint = oauth
                .authorization_endpoint
                .take()
                .or(metadata.authorization_endpoint);
            oauth.token_endpoint = oauth.token_endpoint.take().or(metadata.token_endpoint);
        }
        Err(error) => tracing::warn!(
            service = %config.service.name,
            "oauth: the issuer's metadata could not be read ({error}); its keys will be looked up on the first token"
        ),
    }
    config
}

/// The identity a verified token (JWT or introspected) names.
fn identity(
    sub: Option<String>,
    client_id: Option<String>,
    scopes: Vec<String>,
    exp: Option<u64>,
    token: &str,
) -> Result<TokenIdentity, BearerError> {
    let subject: Arc<str> = match (&sub, &client_id) {
        (Some(sub), _) if !sub.is_empty() => sub.as_str().into(),
        (_, Some(client)) if !client.is_empty() => client.as_str().into(),
        _ => return Err(BearerError::MissingClaim("sub".into())),
    };
    Ok(TokenIdentity::new(
        subject,
        client_id.map(Into::into),
        scopes,
        exp.map(|s| UNIX_EPOCH + Duration::from_secs(s)),
        token,
    ))
}

/// `scope` (space-separated, RFC 8693 §4.2) or `scp` (a string or an array).
fn scopes_of(scope: Option<&str>, scp: Option<&serde_json::Value>) -> Vec<String> {
    let mut scopes: Vec<String> = match (scope, scp) {
        (Some(scope), _) => scope.split(' ').map(str::to_owned).collect(),
        (None, Some(serde_json::Value::String(s))) => s.split(' ').map(str::to_owned).collect(),
        (None, Some(serde_json::Value::Array(items))) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    };
    scopes.retain(|s| !s.is_empty());
    scopes
}

/// Three base64url parts: a JWS compact serialisation (a JWE has five, and is not taken).
fn is_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

/// A header that cannot be read: `alg: none` (which jsonwebtoken does not know) named as such.
fn header_error(token: &str, kind: &ErrorKind) -> BearerError {
    let alg = token
        .split('.')
        .next()
        .and_then(|h| {
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, h).ok()
        })
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|h| h.get("alg").and_then(|a| a.as_str()).map(str::to_owned));
    match alg {
        Some(alg) if !matches!(kind, ErrorKind::Base64(_)) => BearerError::Algorithm(alg),
        _ => BearerError::Malformed(short(kind)),
    }
}

/// A library error as a short phrase, without anything of the token.
fn short(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::InvalidToken => "not a JWS compact serialisation".into(),
        ErrorKind::Base64(_) => "invalid base64url".into(),
        ErrorKind::Json(_) => "invalid JSON in the header or claims".into(),
        ErrorKind::Utf8(_) => "invalid UTF-8".into(),
        ErrorKind::InvalidClaimFormat(claim) => format!("the '{claim}' claim has the wrong type"),
        other => format!("{other:?}").chars().take(60).collect(),
    }
}

/// Seconds since the epoch, now.
fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_from_scope_or_scp() {
        assert_eq!(scopes_of(Some("a  b"), None), ["a", "b"]);
        assert_eq!(
            scopes_of(None, Some(&serde_json::json!(["x", 1, "y"]))),
            ["x", "y"]
        );
        assert_eq!(scopes_of(None, Some(&serde_json::json!("p q"))), ["p", "q"]);
        assert!(scopes_of(None, None).is_empty());
    }

    #[test]
    fn the_subject_is_sub_else_the_client() {
        let id = identity(
            Some("alice".into()),
            Some("app".into()),
            vec![],
            Some(10),
            "t",
        )
        .unwrap();
        assert_eq!(&*id.subject, "alice");
        assert_eq!(id.client_id.as_deref(), Some("app"));
        let id = identity(None, Some("svc".into()), vec![], None, "t").unwrap();
        assert_eq!(&*id.subject, "svc");
        assert_eq!(
            identity(Some(String::new()), None, vec![], None, "t").unwrap_err(),
            BearerError::MissingClaim("sub".into())
        );
        assert!(!format!("{id:?}").contains("\"t\""));
    }

    #[test]
    fn alg_none_is_named_and_garbage_is_malformed() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let none = format!("{}.{}.", b64(r#"{"alg":"none"}"#), b64(r#"{"sub":"x"}"#));
        let kind = decode_header(&none).unwrap_err();
        assert_eq!(
            header_error(&none, kind.kind()),
            BearerError::Algorithm("none".into())
        );
        let garbage = "%%%.x.y";
        let kind = decode_header(garbage).unwrap_err();
        assert!(matches!(
            header_error(garbage, kind.kind()),
            BearerError::Malformed(_)
        ));
        assert!(is_jwt("a.b.c") && !is_jwt("opaque") && !is_jwt("a.b.c.d.e"));
    }
}
