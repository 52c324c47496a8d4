//! The typed configuration of one service: its sections with their defaults, provider and
//! dependency entries as enums (one variant per `kind`), and everything done with it before a
//! service runs — loading with `file:line:column` errors, `${VAR}` expansion, the reload diff,
//! and the read-only queries scripts make (`config get`, `registry list`).
//!
//! Field-level rules (name pattern, port range, minimums, unknown keys, a field of another
//! kind) are enforced while deserializing, so every error carries the position of the value or
//! of the entry it concerns. Rules that span entries run after, in [`load`].

mod dependency;
pub mod diff;
mod env;
mod limits;
mod load;
mod provider;
pub mod query;
mod types;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

pub use self::dependency::{BoltConfig, DependencyConfig, HttpApiConfig};
pub use self::env::{EnvError, expand_env};
pub use self::limits::{
    CYPHER_TOOL_DEFAULTS, LimitsSection, ProviderLimits, ResolvedToolLimits, ToolLimit,
};
pub use self::load::{ConfigError, check_distinct, load_dir};
pub use self::provider::{
    CypherProviderConfig, CypherTool, HttpProviderConfig, HttpTool, HttpTransport,
    McpProviderConfig, McpTransport, OutputValidation, ProviderConfig, StdioTransport,
};
pub use self::types::{Port, ProviderName, ServiceName};
use self::types::{as_millis, as_seconds, count, millis, optional_http_url, seconds};

/// One service's configuration file.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    pub service: ServiceSection,
    #[serde(default)]
    pub logging: LoggingSection,
    #[serde(default)]
    pub monitoring: MonitoringSection,
    #[serde(default)]
    pub security: SecuritySection,
    #[serde(default)]
    pub limits: LimitsSection,
    #[serde(default)]
    pub mcp: McpSection,
    /// Databases and HTTP APIs that `cypher` and `http` providers use, by name.
    #[serde(default)]
    pub dependencies: BTreeMap<String, Spanned<DependencyConfig>>,
    #[serde(default)]
    pub providers: Vec<Spanned<ProviderConfig>>,
    /// The folder of the file, against which relative paths in it are resolved.
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// The file it was read from, for messages.
    #[serde(skip)]
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSection {
    pub name: ServiceName,
    pub port: Port,
    #[serde(default = "default_host")]
    pub host: String,
    /// The service's version as GET /tools and /health report it; the gateway's when absent.
    #[serde(default)]
    pub version: Option<String>,
}

fn default_host() -> String {
    "127.0.0.1".into()
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoggingSection {
    /// A tracing filter: `info`, `debug`, `mcp_http_gateway=debug,info`. RUST_LOG wins when set.
    #[serde(default = "default_level")]
    pub level: String,
    #[serde(default)]
    pub format: LogFormat,
}

fn default_level() -> String {
    "info".into()
}

impl Default for LoggingSection {
    fn default() -> Self {
        LoggingSection {
            level: default_level(),
            format: LogFormat::default(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One JSON object per line.
    #[default]
    Json,
    /// Human-readable lines.
    Pretty,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MonitoringSection {
    /// Serve GET /metrics (Prometheus text format); off, it answers 404 like an unknown route.
    #[serde(default)]
    pub metrics_enabled: bool,
    /// Between dependency health checks; at least 10 s.
    #[serde(
        default = "default_health_interval",
        deserialize_with = "seconds::<_, 10>",
        serialize_with = "as_seconds"
    )]
    pub health_check_interval: Duration,
    /// Where spans are exported over OTLP/HTTP (protobuf): a base URL such as
    /// `http://127.0.0.1:4318`, to which `/v1/traces` is appended, as for
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`. Absent: the standard OTLP variables decide, and without
    /// them nothing is exported.
    #[serde(default, deserialize_with = "optional_http_url")]
    pub otlp_endpoint: Option<String>,
    /// How long one export request may take.
    #[serde(
        default = "default_otlp_timeout",
        rename = "otlp_timeout_ms",
        deserialize_with = "millis::<_, 1>",
        serialize_with = "as_millis"
    )]
    pub otlp_timeout: Duration,
}

fn default_health_interval() -> Duration {
    Duration::from_secs(30)
}

/// OpenTelemetry's default export timeout (`OTEL_EXPORTER_OTLP_TIMEOUT`).
fn default_otlp_timeout() -> Duration {
    Duration::from_secs(10)
}

impl Default for MonitoringSection {
    fn default() -> Self {
        MonitoringSection {
            metrics_enabled: false,
            health_check_interval: default_health_interval(),
            otlp_endpoint: None,
            otlp_timeout: default_otlp_timeout(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySection {
    /// Require an API key (X-API-Key or Authorization: Bearer) on every route but /health.
    #[serde(default)]
    pub api_keys_enabled: bool,
    /// The environment variable holding the accepted keys, comma-separated. Keys never live in
    /// the file.
    #[serde(default = "default_api_keys_env")]
    pub api_keys_env: String,
    /// Requests per minute one client may send (the API key's name when keys are on, else the
    /// peer address); a client may spend a whole minute's allowance at once. At least 10.
    #[serde(default = "default_rate_limit", deserialize_with = "count::<_, 10>")]
    pub rate_limit: u64,
    /// Allowed browser origins; empty means any `http(s)://localhost|127.0.0.1|[::1]` on any port.
    #[serde(default)]
    pub cors_origins: Vec<String>,
}

fn default_api_keys_env() -> String {
    "MCP_GATEWAY_API_KEYS".into()
}

fn default_rate_limit() -> u64 {
    1_000
}

impl Default for SecuritySection {
    fn default() -> Self {
        SecuritySection {
            api_keys_enabled: false,
            api_keys_env: default_api_keys_env(),
            rate_limit: default_rate_limit(),
            cors_origins: Vec::new(),
        }
    }
}

/// The MCP surface of the service at `/mcp`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// A session unused this long is closed; its id then answers 404 (default 1800 s).
    #[serde(
        default = "default_session_ttl",
        rename = "session_ttl_secs",
        deserialize_with = "seconds::<_, 1>",
        serialize_with = "as_seconds"
    )]
    pub session_ttl: Duration,
    /// Host header values accepted at /mcp (DNS-rebinding protection); default loopback only.
    #[serde(default = "default_allowed_hosts")]
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted at /mcp (`scheme://host:port`, `:*` for any port); default
    /// loopback origins on any port. A request without Origin (not a browser) passes.
    #[serde(default = "default_allowed_origins")]
    pub allowed_origins: Vec<String>,
    /// Live sessions allowed, both transports (/mcp, /sse) together; one more is refused with a
    /// clear error.
    #[serde(default = "default_max_sessions", deserialize_with = "count::<_, 1>")]
    pub max_sessions: u64,
}

fn default_session_ttl() -> Duration {
    Duration::from_secs(1800)
}

fn default_max_sessions() -> u64 {
    1000
}

fn default_allowed_origins() -> Vec<String> {
    [
        "http://localhost:*",
        "http://127.0.0.1:*",
        "http://[::1]:*",
        "https://localhost:*",
        "https://127.0.0.1:*",
        "https://[::1]:*",
    ]
    .map(String::from)
    .to_vec()
}

fn default_allowed_hosts() -> Vec<String> {
    vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
}

impl Default for McpSection {
    fn default() -> Self {
        McpSection {
            session_ttl: default_session_ttl(),
            allowed_hosts: default_allowed_hosts(),
            allowed_origins: default_allowed_origins(),
            max_sessions: default_max_sessions(),
        }
    }
}

impl ServiceConfig {
    /// The version the service reports: its own, else the gateway's.
    pub fn version(&self) -> String {
        self.service
            .version
            .clone()
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned())
    }

    /// The address the service listens on, `host:port`.
    pub fn address(&self) -> String {
        format!("{}:{}", self.service.host, self.service.port)
    }

    /// The providers, without their positions in the file.
    pub fn provider_entries(&self) -> impl Iterator<Item = &ProviderConfig> {
        self.providers.iter().map(|p| &p.value)
    }

    /// A dependency entry by name.
    pub fn dependency(&self, name: &str) -> Option<&DependencyConfig> {
        self.dependencies.get(name).map(|d| &d.value)
    }

    /// What is allowed but unwise (a literal secret in a child's `env`): said by
    /// `check-config` and logged at start, never refused.
    pub fn warnings(&self) -> Vec<String> {
        self.provider_entries()
            .flat_map(|p| match p {
                ProviderConfig::Mcp(m) => match &m.transport {
                    McpTransport::Stdio(s) => s.secret_warnings(m.name.as_str()),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            })
            .collect()
    }
}
