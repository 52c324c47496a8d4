//! The typed configuration of one service: its sections with their defaults, provider and
//! dependency entries as enums (one variant per `kind`), and everything done with it before a
//! service runs — loading with `file:line:column` errors, `${VAR}` expansion, the reload diff,
//! and the read-only queries scripts make (`config get`, `registry list`).
//!
//! Field-level rules (name pattern, port range, minimums, unknown keys, a field of another
//! kind) are enforced while deserializing, so every error carries the position of the value or
//! of the entry it concerns. Rules that span entries run after, in [`load`].

mod api_keys;
mod cluster;
mod dependency;
pub mod diff;
mod env;
mod error;
mod hosts;
mod limits;
mod load;
mod naming;
mod oauth;
mod provider;
mod providers_file;
pub mod query;
mod resilience;
mod types;
mod upstream_auth;
mod when;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

pub use self::api_keys::{ApiKeyConfig, KeySecret, legacy_key_name};
pub use self::cluster::{ClusterSection, OnRedisError, RedisUrlError, check_redis_url, redact};
pub use self::dependency::{BoltConfig, DependencyConfig, HttpApiConfig, authorization_header};
pub use self::env::{EnvError, expand_env};
pub use self::error::ConfigError;
pub use self::hosts::{Authority, HostRule, OriginRule, parse_origin};
pub use self::limits::{
    CYPHER_TOOL_DEFAULTS, LimitsSection, ProviderLimits, ResolvedToolLimits, ToolLimit,
    wildcard_match,
};
pub use self::load::{check_distinct, load_dir};
pub use self::naming::{
    Expose, IDENTIFIER_RULE, OnNameClash, Served, clash_prefix, is_identifier, served,
};
pub use self::oauth::{Introspection, IpNet, OAuthConfig, ScopeTools};
pub use self::provider::{
    CypherProviderConfig, CypherTool, Growth, GrpcProviderConfig, GrpcTls, HttpProviderConfig,
    HttpTool, HttpTransport, McpProviderConfig, McpTransport, ProviderCommon, ProviderConfig,
    RootKind, SearchProviderConfig, SearchRoot, StdioTransport, UpstreamProtocol,
    check_grpc_address,
};
pub use self::providers_file::FileProviders;
pub use self::resilience::{
    BreakerConfig, CacheConfig, CacheRule, HedgeConfig, OutlierConfig, Resilience, ResilienceError,
    RetryConfig,
};
pub use self::types::{OutputValidation, Port, ProviderName, ServiceName};
use self::types::{
    as_millis, as_seconds, count, millis, optional_count, optional_http_url, seconds,
};
pub use self::upstream_auth::{
    ClientAuthMethod, OAuthClient, TokenTarget, UpstreamAuth, UpstreamAuthError,
};
pub use self::when::{ProviderChoice, When};

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
    #[serde(default)]
    pub discovery: DiscoverySection,
    /// State shared with the other replicas of this service through Redis; absent, all state
    /// lives in this process. Read at start: a change applies at the next restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterSection>,
    /// Databases and HTTP APIs that `cypher` and `http` providers use, by name.
    #[serde(default)]
    pub dependencies: BTreeMap<String, Spanned<DependencyConfig>>,
    /// The inline entries, then the enabled entries of `providers_file` (see `from_file`).
    #[serde(default)]
    pub providers: Vec<Spanned<ProviderConfig>>,
    /// A file of gRPC providers in the seed's `providers.yaml` form (`providers: [{name, type:
    /// grpc, address, enabled, metadata}]`), relative to this file's folder; read with it (at
    /// start, by `check-config`, and again on every reload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers_file: Option<Spanned<String>>,
    /// What was read from `providers_file`: where its entries begin in `providers`, the file's
    /// name for messages, and its disabled entries.
    #[serde(skip)]
    pub from_file: Option<FileProviders>,
    /// The folder of the file, against which relative paths in it are resolved.
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// The file it was read from, for messages.
    #[serde(skip)]
    pub source: String,
    /// What loading found worth saying but not refusing (deprecated keys), each as
    /// `file:line:column: message`; logged when the service starts, printed by `check-config`.
    #[serde(skip)]
    pub warnings: Vec<String>,
    /// What loading did that is worth saying but not a warning (an entry of `providers_file`
    /// left out for `enabled: false`), as `file:line:column: message`; logged at info when the
    /// configuration is applied, printed by `check-config`.
    #[serde(skip)]
    pub notices: Vec<String>,
    /// The entries with a `when`, and whether it chose them (those it did not are no longer
    /// in `providers`); /health reports them.
    #[serde(skip)]
    pub choices: Vec<ProviderChoice>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceSection {
    pub name: ServiceName,
    pub port: Port,
    /// Spanned: a non-loopback address without `security.allowed_hosts` is refused at its position.
    #[serde(default = "default_host")]
    pub host: Spanned<String>,
    /// The service's version as GET /tools and /health report it; the gateway's when absent.
    #[serde(default)]
    pub version: Option<String>,
    /// Two providers offering one tool name: refuse (`error`), or serve each as
    /// `{provider}_{name}` (`prefix`).
    #[serde(default)]
    pub on_name_clash: OnNameClash,
    /// Serve a bridged tool whose name is not an identifier (`get-sum`) under its identifier
    /// form (`get_sum`); off, it keeps its name and a warning is logged.
    #[serde(default)]
    pub identifier_names: bool,
}

fn default_host() -> Spanned<String> {
    let unknown = serde_saphyr::Location::UNKNOWN;
    Spanned::new("127.0.0.1".into(), unknown, unknown)
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
    /// Between two samples of GET /status's charts (the timeline keeps the last 360 of them);
    /// at least 1000 ms, 10 s by default. Read at start: a change applies at the next restart.
    #[serde(
        default = "default_status_interval",
        rename = "status_interval_ms",
        deserialize_with = "millis::<_, 1000>",
        serialize_with = "as_millis"
    )]
    pub status_interval: Duration,
}

fn default_status_interval() -> Duration {
    Duration::from_secs(10)
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
            status_interval: default_status_interval(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySection {
    /// Named API keys (`{name, value_env | sha256, tools?, deny_tools?}`); any entry turns keys
    /// on: every route but `public_routes` then needs one (X-API-Key or Authorization: Bearer).
    #[serde(default)]
    pub api_keys: Vec<Spanned<ApiKeyConfig>>,
    /// The older form, still read: require a key from `api_keys_env` (comma-separated, named
    /// `key-1`, `key-2`, … by position, every tool allowed), alongside any `api_keys`.
    #[serde(default)]
    pub api_keys_enabled: bool,
    /// The environment variable holding the older form's keys. Keys never live in the file.
    #[serde(default = "default_api_keys_env")]
    pub api_keys_env: String,
    /// Paths that need no key while keys are on: whole paths, `*` for any run of characters
    /// (`/docs*`). Default `/health` only.
    #[serde(default = "default_public_routes")]
    pub public_routes: Vec<String>,
    /// Requests per minute one client may send (the API key's name when keys are on, else the
    /// peer address); a client may spend a whole minute's allowance at once. At least 10.
    #[serde(default = "default_rate_limit", deserialize_with = "count::<_, 10>")]
    pub rate_limit: u64,
    /// `Host` values accepted on every route (DNS-rebinding protection): `name` (any port),
    /// `name:port`, `[v6]:port` or `*`. Absent: `localhost`, `127.0.0.1`, `::1` and the bind
    /// address with its port; required when `service.host` is not a loopback address. Always
    /// `Some` once loaded.
    #[serde(default)]
    pub allowed_hosts: Option<Spanned<Vec<HostRule>>>,
    /// Browser origins that get CORS answers and may send state-changing requests
    /// (`scheme://host[:port]`, `scheme://host:*`, `*`). Absent: any `http(s)` origin on
    /// `localhost`, `127.0.0.1` or `[::1]`, on any port. Always `Some` once loaded.
    #[serde(default)]
    pub allowed_origins: Option<Vec<OriginRule>>,
    /// Deprecated alias of `allowed_origins` (a warning at load; `[]` meant the default).
    #[serde(default, skip_serializing)]
    pub cors_origins: Option<Spanned<Vec<OriginRule>>>,
    /// The service as an OAuth 2.1 resource server: bearer tokens of this issuer, beside or
    /// instead of API keys (docs/security.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthConfig>,
}

impl SecuritySection {
    /// The accepted `Host` rules (the defaults are filled in at load).
    pub fn hosts(&self) -> &[HostRule] {
        self.allowed_hosts
            .as_ref()
            .map(|list| list.value.as_slice())
            .unwrap_or_default()
    }

    /// The accepted browser origins (the defaults are filled in at load).
    pub fn origins(&self) -> &[OriginRule] {
        self.allowed_origins.as_deref().unwrap_or_default()
    }
}

fn default_api_keys_env() -> String {
    "MCP_GATEWAY_API_KEYS".into()
}

fn default_public_routes() -> Vec<String> {
    vec!["/health".into()]
}

fn default_rate_limit() -> u64 {
    1_000
}

impl Default for SecuritySection {
    fn default() -> Self {
        SecuritySection {
            api_keys: Vec::new(),
            api_keys_enabled: false,
            api_keys_env: default_api_keys_env(),
            public_routes: default_public_routes(),
            rate_limit: default_rate_limit(),
            allowed_hosts: None,
            allowed_origins: None,
            cors_origins: None,
            oauth: None,
        }
    }
}

impl SecuritySection {
    /// Whether requests need a key: named keys are configured, or the older form is enabled.
    pub fn keys_required(&self) -> bool {
        self.api_keys_enabled || !self.api_keys.is_empty()
    }

    /// Whether requests need credentials: API keys, an OAuth token, or either.
    pub fn credentials_required(&self) -> bool {
        self.keys_required() || self.oauth.is_some()
    }

    /// Whether `path` is open without a key (`public_routes`).
    pub fn is_public(&self, path: &str) -> bool {
        self.public_routes.iter().any(|r| wildcard_match(r, path))
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
    /// Deprecated alias of `security.allowed_hosts` (a warning at load), which now applies to
    /// every route.
    #[serde(default, skip_serializing)]
    pub allowed_hosts: Option<Spanned<Vec<HostRule>>>,
    /// Deprecated alias of `security.allowed_origins` (a warning at load).
    #[serde(default, skip_serializing)]
    pub allowed_origins: Option<Spanned<Vec<OriginRule>>>,
    /// Live sessions allowed, both transports (/mcp, /sse) together; one more is refused with a
    /// clear error.
    #[serde(default = "default_max_sessions", deserialize_with = "count::<_, 1>")]
    pub max_sessions: u64,
    /// Live sessions one client (its API key, its OAuth subject, else its IP address) may
    /// hold; one more is refused 429. Default: a tenth of `max_sessions` (at least 1).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_count::<_, 1>"
    )]
    pub max_sessions_per_client: Option<u64>,
    /// Open streams (`GET /mcp`, `GET /sse`) one client may hold; one more is refused 429.
    /// Default: its sessions' bound (one standing stream per session).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "optional_count::<_, 1>"
    )]
    pub max_streams_per_client: Option<u64>,
    /// A session that sends no request after its handshake expires this soon (default 60 s):
    /// an abandoned `initialize` does not hold its place for the whole `session_ttl_secs`.
    #[serde(
        default = "default_unused_session_grace",
        rename = "unused_session_grace_secs",
        deserialize_with = "seconds::<_, 1>",
        serialize_with = "as_seconds"
    )]
    pub unused_session_grace: Duration,
    /// Progressive discovery: `tools/list` lists `find_tools` and `call_tool` instead of every
    /// tool (a client with a small context finds the tool it needs, then calls it).
    #[serde(default)]
    pub discovery: bool,
}

/// How `GET /tools?q=` and `find_tools` rank tools.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoverySection {
    /// A sentence-transformers BERT model's folder (`config.json`, `vocab.txt`,
    /// `model.safetensors`; `scripts/install-discovery-model.sh` installs all-MiniLM-L6-v2),
    /// relative to this file's folder; `${VAR}` and `${VAR:-default}` are expanded. Tools are
    /// then ranked by meaning as well as by their words. Absent or empty once expanded: by
    /// words only. A model that cannot be read stops the service at start. Read at start: a
    /// change applies at the next restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

fn default_session_ttl() -> Duration {
    Duration::from_secs(1800)
}

fn default_max_sessions() -> u64 {
    1000
}

fn default_unused_session_grace() -> Duration {
    Duration::from_secs(60)
}

impl McpSection {
    /// `max_sessions_per_client`, or its default: a tenth of `max_sessions`.
    pub fn sessions_per_client(&self) -> u64 {
        self.max_sessions_per_client
            .unwrap_or_else(|| self.max_sessions.div_ceil(10))
            .min(self.max_sessions)
    }

    /// `max_streams_per_client`, or its default: as many as the client's sessions.
    pub fn streams_per_client(&self) -> u64 {
        self.max_streams_per_client
            .unwrap_or_else(|| self.sessions_per_client())
    }
}

impl Default for McpSection {
    fn default() -> Self {
        McpSection {
            session_ttl: default_session_ttl(),
            allowed_hosts: None,
            allowed_origins: None,
            max_sessions: default_max_sessions(),
            max_sessions_per_client: None,
            max_streams_per_client: None,
            unused_session_grace: default_unused_session_grace(),
            discovery: false,
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
        format!("{}:{}", self.service.host.value, self.service.port)
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
    pub fn secret_warnings(&self) -> Vec<String> {
        self.provider_entries()
            .flat_map(|p| match p {
                ProviderConfig::Mcp(m) => match &m.transport {
                    McpTransport::Stdio(s) => s.secret_warnings(m.common.name.as_str()),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            })
            .collect()
    }
}
