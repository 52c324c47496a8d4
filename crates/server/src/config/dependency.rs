//! Dependency entries: the databases and HTTP APIs that `cypher` and `http` providers use, one
//! enum variant per `kind`, each holding only its own fields.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::types::{
    as_optional_millis, optional_count, optional_millis, optional_text, text, text_map, texts,
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
    /// The API's base URL, e.g. `http://127.0.0.1:11434/v1`; or several (`base_urls`), each
    /// serving the same API: calls go to the least loaded, and one far worse than the others
    /// is left out of rotation for a while (`resilience.outlier` of the provider calling).
    pub base_urls: Vec<String>,
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
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    base_url: Option<String>,
    #[serde(
        default,
        deserialize_with = "texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    base_urls: Vec<String>,
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
    #[error(
        "an http dependency needs `base_url` (one URL) or `base_urls` (several serving the same API), not both"
    )]
    BaseUrls,
    #[error("`base_urls` lists '{0}' twice")]
    RepeatedBaseUrl(String),
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
        let base_urls = match (e.base_url, e.base_urls) {
            (Some(one), several) if several.is_empty() => vec![one],
            (None, several) if !several.is_empty() => several,
            _ => return Err(HttpApiError::BaseUrls),
        };
        if let Some(twice) = base_urls
            .iter()
            .enumerate()
            .find(|(k, url)| base_urls[..*k].contains(url))
        {
            return Err(HttpApiError::RepeatedBaseUrl(twice.1.clone()));
        }
        Ok(HttpApiConfig {
            base_urls,
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
        let (base_url, base_urls) = match <[String; 1]>::try_from(c.base_urls) {
            Ok([one]) => (Some(one), Vec::new()),
            Err(several) => (None, several),
        };
        HttpApiEntry {
            base_url,
            base_urls,
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

    #[test]
    fn an_http_dependency_has_one_base_url_or_several_distinct_ones() {
        let DependencyConfig::Http(one) = read("{ kind: http, base_url: 'http://a' }").unwrap()
        else {
            panic!("not http")
        };
        assert_eq!(one.base_urls, ["http://a"]);
        let DependencyConfig::Http(two) =
            read("{ kind: http, base_urls: ['http://a', 'http://b'] }").unwrap()
        else {
            panic!("not http")
        };
        assert_eq!(two.base_urls, ["http://a", "http://b"]);
        // Written back as it was read.
        let yaml = serde_saphyr::to_string(&DependencyConfig::Http(one)).unwrap();
        assert!(
            yaml.contains("base_url: http://a") && !yaml.contains("base_urls"),
            "{yaml}"
        );
        let yaml = serde_saphyr::to_string(&DependencyConfig::Http(two)).unwrap();
        assert!(
            yaml.contains("base_urls") && !yaml.contains("base_url:"),
            "{yaml}"
        );
        for wrong in [
            "{ kind: http }",
            "{ kind: http, base_urls: [] }",
            "{ kind: http, base_url: 'http://a', base_urls: ['http://b'] }",
        ] {
            let e = read(wrong).unwrap_err();
            assert!(
                e.contains("`base_url` (one URL) or `base_urls`"),
                "{wrong}: {e}"
            );
        }
        let e = read("{ kind: http, base_urls: ['http://a', 'http://a'] }").unwrap_err();
        assert!(e.contains("lists 'http://a' twice"), "{e}");
    }
}
