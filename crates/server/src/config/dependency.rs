//! Dependency entries: the databases and HTTP APIs that `cypher` and `http` providers use, one
//! enum variant per `kind`, each holding only its own fields.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::types::{
    as_optional_millis, optional_count, optional_millis, optional_text, text, text_map,
};

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
#[serde(deny_unknown_fields)]
pub struct HttpApiConfig {
    /// The API's base URL, e.g. `http://127.0.0.1:11434/v1`.
    #[serde(deserialize_with = "text")]
    pub base_url: String,
    /// The environment variable holding an API key, sent as `Authorization: Bearer`.
    #[serde(default, deserialize_with = "optional_text")]
    pub api_key_env: Option<String>,
    /// The path GET-checked for health (default `/`).
    #[serde(default, deserialize_with = "optional_text")]
    pub health_path: Option<String>,
    /// Headers sent with every request (values may use `${VAR}`).
    #[serde(default, deserialize_with = "text_map")]
    pub headers: BTreeMap<String, String>,
    /// Whole-request timeout (default: limits.call_timeout_ms).
    #[serde(
        default,
        rename = "timeout_ms",
        deserialize_with = "optional_millis::<_, 1>",
        serialize_with = "as_optional_millis"
    )]
    pub timeout: Option<Duration>,
}
