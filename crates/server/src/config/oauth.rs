//! `security.oauth`: the service as an OAuth 2.1 resource server (the MCP authorization spec,
//! RFC 9728, RFC 8707). Who issues the tokens, which signing algorithms are taken, how the
//! service's own URL is known behind a proxy, what each token scope opens, and where opaque
//! tokens are introspected. Checked whole while read, so an error points at the section.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The checked section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "OAuthEntry", into = "OAuthEntry")]
pub struct OAuthConfig {
    /// The issuer: a token's `iss` must equal it, and its metadata says where the keys are.
    pub issuer: String,
    /// Where the issuer's keys are; `None`: read from its metadata.
    pub jwks_uri: Option<String>,
    /// The issuer's endpoints for the OpenAPI document's flows; `None`: from its metadata.
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    /// The signing algorithms a token may use (asymmetric only).
    pub algorithms: Vec<jsonwebtoken::Algorithm>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
    /// The URL clients reach the service at (its resource identifier), when it is not the
    /// address it is called at: behind a TLS terminator or a path prefix.
    pub public_url: Option<String>,
    /// Peers whose `Forwarded` / `X-Forwarded-*` headers are believed (without `public_url`).
    pub trusted_proxies: Vec<IpNet>,
    /// Token scope → the tools it opens; empty: a valid token opens every tool.
    pub scopes: BTreeMap<String, ScopeTools>,
    /// RFC 7662 introspection of tokens that are not JWTs.
    pub introspection: Option<Introspection>,
}

/// The tools one token scope opens: globs to allow (every tool when absent) and to deny, as
/// API keys have them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeTools {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny_tools: Vec<String>,
    /// Shown in the protected-resource metadata's and the OpenAPI document's scope lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An RFC 7662 introspection endpoint and the gateway's client credentials for it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Introspection {
    pub url: String,
    pub client_id: String,
    /// The environment variable holding the client secret (never the secret itself).
    pub client_secret_env: String,
}

/// An address or a CIDR block (`10.0.0.0/8`, `::1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    address: IpAddr,
    prefix: u8,
}

impl IpNet {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match (self.address, ip) {
            (IpAddr::V4(_), IpAddr::V6(v6)) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            _ => ip,
        };
        match (self.address, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for IpNet {
    type Err = ();

    fn from_str(text: &str) -> Result<IpNet, ()> {
        let (address, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text.trim(), None),
        };
        let address: IpAddr = address.parse().map_err(|_| ())?;
        let max = if address.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or(())?,
            None => max,
        };
        Ok(IpNet { address, prefix })
    }
}

impl std::fmt::Display for IpNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix)
    }
}

/// The section as written in YAML.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct OAuthEntry {
    issuer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jwks_uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    authorization_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_endpoint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    algorithms: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    leeway_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    public_url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    trusted_proxies: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    scopes: BTreeMap<String, ScopeTools>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    introspection: Option<Introspection>,
}

/// The algorithms taken when `algorithms` is left out: every asymmetric one.
const DEFAULT_ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];
const DEFAULT_LEEWAY_SECS: u64 = 30;
const MAX_LEEWAY_SECS: u64 = 300;

/// Why `security.oauth` cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    #[error("security.oauth.{field}: '{value}' is not an absolute http(s) URL without a fragment")]
    Url { field: &'static str, value: String },
    #[error(
        "security.oauth.algorithms: '{0}' is not taken; use asymmetric algorithms only (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA): a shared secret (HS*) or `none` would let anyone who can read the issuer's public keys sign a token"
    )]
    Algorithm(String),
    #[error(
        "security.oauth.algorithms: give at least one algorithm, or leave it out for every asymmetric one"
    )]
    NoAlgorithm,
    #[error(
        "security.oauth.leeway_secs: {0} is more than {MAX_LEEWAY_SECS}; a clock skew allowance is seconds, not minutes"
    )]
    Leeway(u64),
    #[error(
        "security.oauth.trusted_proxies: '{0}' is not an IP address or a CIDR block (10.0.0.0/8, ::1)"
    )]
    Proxy(String),
    #[error(
        "security.oauth.scopes: '{0}' is not a scope token (RFC 6749: printable ASCII, no space, '\"' or '\\\\')"
    )]
    ScopeName(String),
    #[error(
        "security.oauth.scopes.{0}: `tools: []` would open no tool; leave `tools` out to open every tool"
    )]
    NoTools(String),
    #[error("security.oauth.introspection.{0} is empty")]
    Introspection(&'static str),
}

fn checked_url(field: &'static str, value: String) -> Result<String, OAuthError> {
    let parsed = url::Url::parse(value.trim()).ok().filter(|u| {
        matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.fragment().is_none()
    });
    match parsed {
        Some(_) => Ok(value.trim().trim_end_matches('/').to_owned()),
        None => Err(OAuthError::Url { field, value }),
    }
}

fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

impl TryFrom<OAuthEntry> for OAuthConfig {
    type Error = OAuthError;

    fn try_from(entry: OAuthEntry) -> Result<Self, OAuthError> {
        let issuer = checked_url("issuer", entry.issuer)?;
        let optional =
            |field, value: Option<String>| value.map(|v| checked_url(field, v)).transpose();
        let names = entry
            .algorithms
            .unwrap_or_else(|| DEFAULT_ALGORITHMS.iter().map(|a| a.to_string()).collect());
        if names.is_empty() {
            return Err(OAuthError::NoAlgorithm);
        }
        let algorithms = names
            .iter()
            .map(|name| {
                DEFAULT_ALGORITHMS
                    .contains(&name.as_str())
                    .then(|| name.parse::<jsonwebtoken::Algorithm>().ok())
                    .flatten()
                    .ok_or_else(|| OAuthError::Algorithm(name.clone()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let leeway = entry.leeway_secs.unwrap_or(DEFAULT_LEEWAY_SECS);
        if leeway > MAX_LEEWAY_SECS {
            return Err(OAuthError::Leeway(leeway));
        }
        let trusted_proxies = entry
            .trusted_proxies
            .iter()
            .map(|p| p.parse().map_err(|()| OAuthError::Proxy(p.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        for (scope, tools) in &entry.scopes {
            if !is_scope_token(scope) {
                return Err(OAuthError::ScopeName(scope.clone()));
            }
            if tools.tools.as_ref().is_some_and(Vec::is_empty) {
                return Err(OAuthError::NoTools(scope.clone()));
            }
        }
        if let Some(i) = &entry.introspection {
            checked_url("introspection.url", i.url.clone())?;
            if i.client_id.trim().is_empty() {
                return Err(OAuthError::Introspection("client_id"));
            }
            if i.client_secret_env.trim().is_empty() {
                return Err(OAuthError::Introspection("client_secret_env"));
            }
        }
        Ok(OAuthConfig {
            issuer,
            jwks_uri: optional("jwks_uri", entry.jwks_uri)?,
            authorization_endpoint: optional(
                "authorization_endpoint",
                entry.authorization_endpoint,
            )?,
            token_endpoint: optional("token_endpoint", entry.token_endpoint)?,
            algorithms,
            leeway: Duration::from_secs(leeway),
            public_url: optional("public_url", entry.public_url)?,
            trusted_proxies,
            scopes: entry.scopes,
            introspection: entry.introspection,
        })
    }
}

impl From<OAuthConfig> for OAuthEntry {
    fn from(c: OAuthConfig) -> Self {
        OAuthEntry {
            issuer: c.issuer,
            jwks_uri: c.jwks_uri,
            authorization_endpoint: c.authorization_endpoint,
            token_endpoint: c.token_endpoint,
            algorithms: Some(c.algorithms.iter().map(|a| format!("{a:?}")).collect()),
            leeway_secs: Some(c.leeway.as_secs()),
            public_url: c.public_url,
            trusted_proxies: c.trusted_proxies.iter().map(IpNet::to_string).collect(),
            scopes: c.scopes,
            introspection: c.introspection,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<OAuthConfig, String> {
        serde_saphyr::from_str::<OAuthConfig>(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn the_defaults_take_every_asymmetric_algorithm_and_thirty_seconds_of_skew() {
        let c = read("issuer: https://id.example/\n").unwrap();
        assert_eq!(c.issuer, "https://id.example");
        assert_eq!(c.algorithms.len(), 9);
        assert_eq!(c.leeway, Duration::from_secs(30));
        assert!(c.scopes.is_empty() && c.trusted_proxies.is_empty());
        let back = serde_saphyr::to_string(&c).unwrap();
        assert_eq!(read(&back).unwrap(), c, "{back}");
    }

    #[test]
    fn a_shared_secret_or_none_is_refused_with_the_reason() {
        for bad in ["HS256", "none", "RS1"] {
            let e = read(&format!(
                "issuer: https://id.example\nalgorithms: [{bad}]\n"
            ))
            .unwrap_err();
            assert!(e.contains(&format!("'{bad}' is not taken")), "{e}");
        }
        let e = read("issuer: https://id.example\nalgorithms: []\n").unwrap_err();
        assert!(e.contains("at least one algorithm"), "{e}");
    }

    #[test]
    fn urls_proxies_scopes_and_leeway_are_checked() {
        for (yaml, says) in [
            (
                "issuer: id.example\n",
                "security.oauth.issuer: 'id.example'",
            ),
            (
                "issuer: https://id.example\npublic_url: 'ftp://x'\n",
                "security.oauth.public_url",
            ),
            (
                "issuer: https://id.example\nleeway_secs: 301\n",
                "301 is more than 300",
            ),
            (
                "issuer: https://id.example\ntrusted_proxies: [10.0.0.0/33]\n",
                "'10.0.0.0/33'",
            ),
            (
                "issuer: https://id.example\nscopes: { 'a b': {} }\n",
                "'a b' is not a scope token",
            ),
            (
                "issuer: https://id.example\nscopes: { read: { tools: [] } }\n",
                "scopes.read: `tools: []`",
            ),
            (
                "issuer: https://id.example\nintrospection: { url: 'https://id.example/i', client_id: '', client_secret_env: S }\n",
                "introspection.client_id is empty",
            ),
            ("issuer: https://id.example\naudience: x\n", "unknown field"),
        ] {
            let e = read(yaml).unwrap_err();
            assert!(e.contains(says), "{yaml}: {e}");
        }
    }

    #[test]
    fn cidr_blocks_contain_their_addresses_and_mapped_ones() {
        let net: IpNet = "10.1.0.0/16".parse().unwrap();
        assert!(net.contains("10.1.200.3".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        assert!(net.contains("::ffff:10.1.0.9".parse().unwrap()));
        let one: IpNet = "::1".parse().unwrap();
        assert!(one.contains("::1".parse().unwrap()) && !one.contains("::2".parse().unwrap()));
        let all: IpNet = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("192.0.2.1".parse().unwrap()));
        assert!("x".parse::<IpNet>().is_err() && "::1/129".parse::<IpNet>().is_err());
    }
}
