//! Dependency entries: the databases and HTTP APIs that `cypher` and `http` providers use, one
//! enum variant per `kind`, each holding only its own fields.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::types::{
    as_optional_millis, optional_count, optional_millis, optional_text, text, text_map,
};
use super::upstream_auth::UpstreamAuth;

/// Something a provider depends on, checked for /health; `kind` selects the variant.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DependencyConfig {
    /// A graph database speaking Bolt (Memgraph, Neo4j, ArcadeDB).
    Bolt(BoltConfig),
    /// An HTTP API.
    Http(HttpApiConfig),
}

impl DependencyConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            DependencyConfig::Bolt(_) => "bolt",
            DependencyConfig::Http(_) => "http",
        }
    }
}

/// `kind: bolt`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BoltConfig {
    /// `bolt://host:port`.
    #[serde(deserialize_with = "text")]
    pub uri: String,
    /// The user (empty for none).
    #[serde(default, deserialize_with = "optional_text")]
    pub user: Option<String>,
    /// The environment variable holding the password (never the password itself).
    #[serde(default, deserialize_with = "optional_text")]
    pub password_env: Option<String>,
    /// Pooled connections (default 16).
    #[serde(default, deserialize_with = "optional_count::<_, 1>")]
    pub max_connections: Option<u64>,
    /// Connect timeout (default 1000 ms); queries are bounded by limits.call_timeout_ms.
    #[serde(
        default,
        rename = "timeout_ms",
        deserialize_with = "optional_millis::<_, 1>",
        serialize_with = "as_optional_millis"
    )]
    pub timeout: Option<Duration>,
}

/// `kind: http`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(try_from = "HttpApiEntry", into = "HttpApiEntry")]
pub struct HttpApiConfig {
    /// The API's base URL, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// The environment variable holding an API key, sent as `Authorization: Bearer` (the
    /// static form; `auth` is the OAuth one).
    pub api_key_env: Option<String>,
    /// The path GET-checked for health (default `/`).
    pub health_path: Option<String>,
    /// Headers sent with every request (values may use `${VAR}`).
    pub headers: BTreeMap<String, String>,
    /// A token from the API's own issuer, instead of a static key.
    pub auth: Option<UpstreamAuth>,
    /// Whole-request timeout (default: limits.call_timeout_ms).
    pub timeout: Option<Duration>,
}

/// The http entry as written in YAML.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct HttpApiEntry {
    #[serde(deserialize_with = "text")]
    base_url: String,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    api_key_env: Option<String>,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    health_path: Option<String>,
    #[serde(
        default,
        deserialize_with = "text_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    auth: Option<UpstreamAuth>,
    #[serde(
        default,
        rename = "timeout_ms",
        deserialize_with = "optional_millis::<_, 1>",
        serialize_with = "as_optional_millis",
        skip_serializing_if = "Option::is_none"
    )]
    timeout: Option<Duration>,
}

/// Why an http dependency's credentials are contradictory.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpApiError {
    #[error(
        "an http dependency sends either a static key (`api_key_env`) or a token from `auth`, not both: remove one"
    )]
    KeyAndAuth,
    #[error(
        "`headers` sets {0}, which `auth` sends: remove it from `headers` (each request's Authorization is the token `auth` gets)"
    )]
    AuthorizationHeader(String),
}

impl TryFrom<HttpApiEntry> for HttpApiConfig {
    type Error = HttpApiError;

    fn try_from(e: HttpApiEntry) -> Result<Self, HttpApiError> {
        if e.auth.is_some() {
            if e.api_key_env.is_some() {
                return Err(HttpApiError::KeyAndAuth);
            }
            if let Some(name) = authorization_header(&e.headers) {
                return Err(HttpApiError::AuthorizationHeader(name.to_owned()));
            }
        }
        Ok(HttpApiConfig {
            base_url: e.base_url,
            api_key_env: e.api_key_env,
            health_path: e.health_path,
            headers: e.headers,
            auth: e.auth,
            timeout: e.timeout,
        })
    }
}

impl From<HttpApiConfig> for HttpApiEntry {
    fn from(c: HttpApiConfig) -> HttpApiEntry {
        HttpApiEntry {
            base_url: c.base_url,
            api_key_env: c.api_key_env,
            health_path: c.health_path,
            headers: c.headers,
            auth: c.auth,
            timeout: c.timeout,
        }
    }
}

/// The name of an `Authorization` entry among `headers`, in whatever case it was written.
pub fn authorization_header(headers: &BTreeMap<String, String>) -> Option<&str> {
    headers
        .keys()
        .find(|k| k.eq_ignore_ascii_case("authorization"))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<DependencyConfig, String> {
        serde_saphyr::from_str(yaml).map_err(|e| e.to_string())
    }

    const AUTH: &str = "auth: { kind: client_credentials, token_url: 'https://i/t', client_id: gw, client_secret_env: S }";

    #[test]
    fn an_http_dependency_takes_a_static_key_or_auth_not_both() {
        let DependencyConfig::Http(api) =
            read(&format!("{{ kind: http, base_url: 'http://h', {AUTH} }}")).unwrap()
        else {
            panic!("not http")
        };
        assert_eq!(
            api.auth.as_ref().map(UpstreamAuth::kind),
            Some("client_credentials")
        );
        let yaml = serde_saphyr::to_string(&DependencyConfig::Http(api.clone())).unwrap();
        assert!(
            yaml.contains("client_credentials") && !yaml.contains("api_key_env"),
            "{yaml}"
        );
        let static_key = read(
            "{ kind: http, base_url: 'http://h', api_key_env: K, headers: { Authorization: 'Bearer ${T}' } }",
        );
        assert!(static_key.is_ok(), "{static_key:?}");
        let both = read(&format!(
            "{{ kind: http, base_url: 'http://h', api_key_env: K, {AUTH} }}"
        ))
        .unwrap_err();
        assert!(
            both.contains("either a static key (`api_key_env`) or a token from `auth`"),
            "{both}"
        );
        let header = read(&format!(
            "{{ kind: http, base_url: 'http://h', headers: {{ authorization: x }}, {AUTH} }}"
        ))
        .unwrap_err();
        assert!(
            header.contains("`headers` sets authorization, which `auth` sends"),
            "{header}"
        );
        assert!(
            read("{ kind: http, base_url: 'http://h', token: x }")
                .unwrap_err()
                .contains("unknown field")
        );
    }
}
