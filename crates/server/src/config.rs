//! The YAML configuration of one service: its shape, its defaults, and its validation.
//!
//! Field-level rules (name pattern, port range, minimums, unknown keys) are enforced while
//! deserializing, so every error carries the `line:column` of the offending value. Rules that
//! span several fields (unique provider names, a provider's transport) run after, with the
//! location of the provider they concern.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_saphyr::Spanned;

/// A configuration that could not be used, rendered as `file:line:column: what is wrong`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: {message}{snippet}")]
    Invalid {
        path: String,
        line: u64,
        column: u64,
        message: String,
        snippet: String,
    },
    #[error("{path}: {message}")]
    Whole { path: String, message: String },
}

/// One service's configuration file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    pub dependencies: BTreeMap<String, DependencyConfig>,
    #[serde(default)]
    pub providers: Vec<ProviderConfig>,
    /// The folder of the file, against which relative paths in it are resolved.
    #[serde(skip)]
    pub base_dir: PathBuf,
    /// The file it was read from, for messages.
    #[serde(skip)]
    pub source: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One JSON object per line.
    #[default]
    Json,
    /// Human-readable lines.
    Pretty,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MonitoringSection {
    #[serde(default)]
    pub metrics_enabled: bool,
    /// Seconds between dependency health checks; at least 10.
    #[serde(default = "default_health_interval")]
    pub health_check_interval: AtLeast<10>,
}

fn default_health_interval() -> AtLeast<10> {
    AtLeast(30)
}

impl Default for MonitoringSection {
    fn default() -> Self {
        MonitoringSection {
            metrics_enabled: false,
            health_check_interval: default_health_interval(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecuritySection {
    /// Require an API key (X-API-Key or Authorization: Bearer) on every route but /health.
    #[serde(default)]
    pub api_keys_enabled: bool,
    /// The environment variable holding the accepted keys, comma-separated. Keys never live in
    /// the file.
    #[serde(default = "default_api_keys_env")]
    pub api_keys_env: String,
    /// Requests per second the service accepts (token bucket, burst of the same size); at least 10.
    #[serde(default = "default_rate_limit")]
    pub rate_limit: AtLeast<10>,
    /// Allowed browser origins; empty means any `http(s)://localhost|127.0.0.1|[::1]` on any port.
    #[serde(default)]
    pub cors_origins: Vec<String>,
}

fn default_api_keys_env() -> String {
    "MCP_GATEWAY_API_KEYS".into()
}

fn default_rate_limit() -> AtLeast<10> {
    AtLeast(50_000)
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    #[serde(default = "default_max_body")]
    pub max_body_bytes: AtLeast<1>,
    #[serde(default = "default_call_timeout")]
    pub call_timeout_ms: AtLeast<1>,
    #[serde(default = "default_grace")]
    pub shutdown_grace_ms: AtLeast<0>,
}

fn default_max_body() -> AtLeast<1> {
    AtLeast(1_048_576)
}
fn default_call_timeout() -> AtLeast<1> {
    AtLeast(30_000)
}
fn default_grace() -> AtLeast<0> {
    AtLeast(5_000)
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            max_body_bytes: default_max_body(),
            call_timeout_ms: default_call_timeout(),
            shutdown_grace_ms: default_grace(),
        }
    }
}

/// The MCP surface of the service at `/mcp`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// A session unused this long is closed; its id then answers 404 (default 1800).
    #[serde(default = "default_session_ttl")]
    pub session_ttl_secs: AtLeast<1>,
    /// Host header values accepted at /mcp (DNS-rebinding protection); default loopback only.
    #[serde(default = "default_allowed_hosts")]
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted at /mcp (`scheme://host:port`, `:*` for any port); default
    /// loopback origins on any port. A request without Origin (not a browser) passes.
    #[serde(default = "default_allowed_origins")]
    pub allowed_origins: Vec<String>,
    /// Live sessions allowed, both transports (/mcp, /sse) together; one more is refused with a
    /// clear error.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: AtLeast<1>,
}

fn default_session_ttl() -> AtLeast<1> {
    AtLeast(1800)
}

fn default_max_sessions() -> AtLeast<1> {
    AtLeast(1000)
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
            session_ttl_secs: default_session_ttl(),
            allowed_hosts: default_allowed_hosts(),
            allowed_origins: default_allowed_origins(),
            max_sessions: default_max_sessions(),
        }
    }
}

/// One provider of tools. `kind` selects which of the other fields apply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub name: Spanned<ProviderName>,
    pub kind: ProviderKind,
    /// mcp over stdio: the program to spawn (looked up on PATH unless it contains a `/`).
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to the gateway's own environment for the child.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The child's working directory, relative to the config file's folder.
    #[serde(default)]
    pub cwd: Option<String>,
    /// mcp over Streamable HTTP: the server's endpoint.
    #[serde(default)]
    pub url: Option<String>,
    /// Extra HTTP headers sent to `url` (values may use `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// cypher and http: the entry of `dependencies` this provider uses.
    #[serde(default)]
    pub dependency: Option<String>,
    /// cypher and http: the tools, declared here.
    #[serde(default)]
    pub tools: Vec<ToolDeclaration>,
    /// http: an OpenAPI 3.x document (file path or URL) whose operations become tools.
    #[serde(default)]
    pub openapi: Option<String>,
    /// http with `openapi`: only these operationIds (empty: all).
    #[serde(default)]
    pub include: Vec<String>,
    /// http with `openapi`: never these operationIds.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// http: adds a tool of this name reporting calls and tokens per model, counted from the
    /// `usage` of upstream answers since start (OpenAI-compatible APIs).
    #[serde(default)]
    pub usage_tool: Option<String>,
    /// Said in /health and in errors while the dependency is unavailable: what to start.
    #[serde(default)]
    pub setup_hint: Option<String>,
}

/// A tool declared in the configuration (cypher and http providers).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDeclaration {
    pub name: Spanned<String>,
    pub description: String,
    /// JSON Schema of the arguments; `type: object`.
    pub input_schema: serde_json::Value,
    /// cypher: the Cypher text (arguments are `$parameters`; only schema-bounded integers may
    /// appear as `{{ name }}`). http: query-string parameters, each a template.
    #[serde(default)]
    pub query: Option<QueryField>,
    /// cypher: the key of `data` holding the rows (default `rows`).
    #[serde(default)]
    pub result_key: Option<String>,
    /// http: GET, POST, PUT, PATCH, DELETE (default GET).
    #[serde(default)]
    pub method: Option<String>,
    /// http: the path under the dependency's base_url, with `{arg}` placeholders.
    #[serde(default)]
    pub path: Option<String>,
    /// http: extra headers, each a template.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// http: the JSON body as a template (default for POST/PUT/PATCH: the arguments).
    #[serde(default)]
    pub body: Option<String>,
    /// http: a JSON pointer into the upstream answer selecting `data` (default: all of it).
    #[serde(default)]
    pub result: Option<String>,
}

/// `query:` is Cypher text for cypher tools and a map of templates for http tools.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum QueryField {
    Cypher(String),
    Params(BTreeMap<String, String>),
}

/// Something a provider depends on, checked for /health.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DependencyConfig {
    pub kind: DependencyKind,
    /// bolt: `bolt://host:port` (Memgraph, Neo4j, ArcadeDB).
    #[serde(default)]
    pub uri: Option<String>,
    /// bolt: the user (empty for none).
    #[serde(default)]
    pub user: Option<String>,
    /// bolt: the environment variable holding the password (never the password itself).
    #[serde(default)]
    pub password_env: Option<String>,
    /// bolt: pooled connections (default 16).
    #[serde(default)]
    pub max_connections: Option<AtLeast<1>>,
    /// http: the API's base URL, e.g. `http://127.0.0.1:11434/v1`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// http: the environment variable holding an API key, sent as `Authorization: Bearer`.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// http: the path GET-checked for health (default `/`).
    #[serde(default)]
    pub health_path: Option<String>,
    /// http: headers sent with every request (values may use `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Connect timeout (bolt) or whole-request timeout (http) in ms; calls are also bounded
    /// by limits.call_timeout_ms. Default 1000 for bolt connects, the call timeout for http.
    #[serde(default)]
    pub timeout_ms: Option<AtLeast<1>>,
}

impl fmt::Display for DependencyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DependencyKind::Bolt => "bolt",
            DependencyKind::Http => "http",
        })
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProviderKind::Mcp => "mcp",
            ProviderKind::Cypher => "cypher",
            ProviderKind::Http => "http",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DependencyKind {
    /// A graph database speaking Bolt.
    Bolt,
    /// An HTTP API.
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// An MCP server, over stdio (`command`) or Streamable HTTP (`url`).
    Mcp,
    /// Cypher queries declared as tools, run against a `bolt` dependency.
    Cypher,
    /// Calls of an HTTP API declared as tools (or imported from its OpenAPI document).
    Http,
}

/// `^[a-z][a-z0-9-]*$`
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct ServiceName(String);

impl TryFrom<String> for ServiceName {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        check_name(&value, "service name").map(|()| ServiceName(value))
    }
}

/// `^[a-z][a-z0-9-]*$`, the same rule as service names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct ProviderName(String);

impl TryFrom<String> for ProviderName {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        check_name(&value, "provider name").map(|()| ProviderName(value))
    }
}

fn check_name(value: &str, what: &str) -> Result<(), String> {
    let mut chars = value.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    if first_ok && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        Ok(())
    } else {
        Err(format!(
            "{what} '{value}' must match ^[a-z][a-z0-9-]*$ (lowercase letter, then lowercase letters, digits, '-')"
        ))
    }
}

macro_rules! string_newtype {
    ($t:ty) => {
        impl $t {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}
string_newtype!(ServiceName);
string_newtype!(ProviderName);

/// A TCP port from 1024 to 65535 (no privileged ports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "i64")]
pub struct Port(pub u16);

impl TryFrom<i64> for Port {
    type Error = String;
    fn try_from(value: i64) -> Result<Self, String> {
        match u16::try_from(value) {
            Ok(port) if port >= 1024 => Ok(Port(port)),
            _ => Err(format!("port must be from 1024 to 65535, got {value}")),
        }
    }
}

/// An integer of at least `MIN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "i64")]
pub struct AtLeast<const MIN: u64>(pub u64);

impl<const MIN: u64> TryFrom<i64> for AtLeast<MIN> {
    type Error = String;
    fn try_from(value: i64) -> Result<Self, String> {
        match u64::try_from(value) {
            Ok(v) if v >= MIN => Ok(AtLeast(v)),
            _ => Err(format!("must be an integer of at least {MIN}, got {value}")),
        }
    }
}

impl ServiceConfig {
    /// Reads, parses and validates one file.
    pub fn load(path: &Path) -> Result<ServiceConfig, ConfigError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: shown.clone(),
            source,
        })?;
        let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::parse(&text, &shown, base_dir)
    }

    /// Parses and validates a file's text; `shown` names it in messages.
    pub fn parse(text: &str, shown: &str, base_dir: PathBuf) -> Result<ServiceConfig, ConfigError> {
        let mut config: ServiceConfig =
            serde_saphyr::from_str(text).map_err(|e| located(shown, &e))?;
        config.base_dir = base_dir;
        config.source = shown.to_owned();
        config.validate()?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        for (name, dependency) in &self.dependencies {
            let whole = |message: String| ConfigError::Whole {
                path: self.source.clone(),
                message: format!("dependencies.{name}: {message}"),
            };
            match dependency.kind {
                DependencyKind::Bolt if dependency.uri.is_none() => {
                    return Err(whole("a bolt dependency needs `uri`".into()));
                }
                DependencyKind::Http if dependency.base_url.is_none() => {
                    return Err(whole("an http dependency needs `base_url`".into()));
                }
                _ => {}
            }
        }
        let mut seen: BTreeMap<&ProviderName, &Spanned<ProviderName>> = BTreeMap::new();
        for provider in &self.providers {
            if let Some(first) = seen.insert(&provider.name.value, &provider.name) {
                return Err(self.at(
                    &provider.name,
                    format!(
                        "provider name '{}' is used twice (first at line {})",
                        provider.name.value,
                        first.referenced.line()
                    ),
                ));
            }
            if provider.kind != ProviderKind::Mcp {
                self.validate_declared(provider)?;
                continue;
            }
            match provider.kind {
                ProviderKind::Cypher | ProviderKind::Http => {}
                ProviderKind::Mcp => match (&provider.command, &provider.url) {
                    (Some(_), Some(_)) => {
                        return Err(self.at(
                            &provider.name,
                            format!("provider '{}': give either `command` (stdio) or `url` (Streamable HTTP), not both", provider.name.value),
                        ));
                    }
                    (None, None) => {
                        return Err(self.at(
                            &provider.name,
                            format!("provider '{}': an mcp provider needs `command` (stdio) or `url` (Streamable HTTP)", provider.name.value),
                        ));
                    }
                    (Some(_), None) if !provider.headers.is_empty() => {
                        return Err(self.at(
                            &provider.name,
                            format!(
                                "provider '{}': `headers` apply only to a `url` provider",
                                provider.name.value
                            ),
                        ));
                    }
                    (None, Some(url)) => {
                        if !(url.starts_with("http://")
                            || url.starts_with("https://")
                            || url.starts_with("${"))
                        {
                            return Err(self.at(
                                &provider.name,
                                format!("provider '{}': url '{url}' must start with http:// or https://", provider.name.value),
                            ));
                        }
                        if !provider.args.is_empty()
                            || !provider.env.is_empty()
                            || provider.cwd.is_some()
                        {
                            return Err(self.at(
                                &provider.name,
                                format!("provider '{}': `args`, `env` and `cwd` apply only to a `command` provider", provider.name.value),
                            ));
                        }
                    }
                    _ => {}
                },
            }
        }
        Ok(())
    }

    /// Rules of the `cypher` and `http` kinds: a dependency of the right kind, tools that say
    /// what they run, no stdio/url fields.
    fn validate_declared(&self, provider: &ProviderConfig) -> Result<(), ConfigError> {
        let name = &provider.name.value;
        let fail =
            |message: String| Err(self.at(&provider.name, format!("provider '{name}': {message}")));
        if provider.command.is_some()
            || provider.url.is_some()
            || !provider.args.is_empty()
            || provider.cwd.is_some()
        {
            return fail("`command`, `args`, `cwd` and `url` belong to mcp providers".into());
        }
        let wanted = if provider.kind == ProviderKind::Cypher {
            DependencyKind::Bolt
        } else {
            DependencyKind::Http
        };
        let Some(dependency) = &provider.dependency else {
            return fail(format!(
                "needs `dependency:` naming a {wanted} entry of `dependencies`"
            ));
        };
        match self.dependencies.get(dependency) {
            None => {
                return fail(format!(
                    "dependency '{dependency}' is not in `dependencies`"
                ));
            }
            Some(d) if d.kind != wanted => {
                return fail(format!(
                    "dependency '{dependency}' is {}, a {} provider needs {wanted}",
                    d.kind, provider.kind
                ));
            }
            Some(_) => {}
        }
        if provider.kind == ProviderKind::Cypher
            && (provider.openapi.is_some() || provider.usage_tool.is_some())
        {
            return fail("`openapi` and `usage_tool` belong to http providers".into());
        }
        if provider.tools.is_empty() && provider.openapi.is_none() && provider.usage_tool.is_none()
        {
            return fail("declares no tools".into());
        }
        let mut names = std::collections::BTreeSet::new();
        for tool in &provider.tools {
            let at = |message: String| {
                Err(self.at(&tool.name, format!("tool '{}': {message}", tool.name.value)))
            };
            if !names.insert(tool.name.value.as_str()) {
                return at("declared twice".into());
            }
            if tool.input_schema["type"] != "object" {
                return at("input_schema must have `type: object`".into());
            }
            match (provider.kind, &tool.query) {
                (ProviderKind::Cypher, Some(QueryField::Cypher(_))) => {}
                (ProviderKind::Cypher, _) => {
                    return at("a cypher tool needs `query:` with the Cypher text".into());
                }
                (ProviderKind::Http, Some(QueryField::Cypher(_))) => {
                    return at("`query:` of an http tool is a map of query parameters".into());
                }
                (ProviderKind::Http, _) if tool.path.is_none() => {
                    return at("an http tool needs `path:`".into());
                }
                _ => {}
            }
            if provider.kind == ProviderKind::Cypher
                && (tool.method.is_some()
                    || tool.path.is_some()
                    || tool.body.is_some()
                    || tool.result.is_some()
                    || !tool.headers.is_empty())
            {
                return at(
                    "`method`, `path`, `headers`, `body` and `result` belong to http tools".into(),
                );
            }
            if let Some(method) = &tool.method
                && !["GET", "POST", "PUT", "PATCH", "DELETE"]
                    .contains(&method.to_ascii_uppercase().as_str())
            {
                return at(format!(
                    "method '{method}' is not one of GET, POST, PUT, PATCH, DELETE"
                ));
            }
            if let Some(pointer) = &tool.result
                && !(pointer.is_empty() || pointer.starts_with('/'))
            {
                return at(format!(
                    "result '{pointer}' is not a JSON pointer (\"\" or starting with '/')"
                ));
            }
        }
        Ok(())
    }

    fn at<T>(&self, spanned: &Spanned<T>, message: String) -> ConfigError {
        ConfigError::Invalid {
            path: self.source.clone(),
            line: spanned.referenced.line(),
            column: spanned.referenced.column(),
            message,
            snippet: String::new(),
        }
    }

    /// The version the service reports: its own, else the gateway's.
    pub fn version(&self) -> String {
        self.service
            .version
            .clone()
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned())
    }
}

/// Turns a parser error into `file:line:column: message` plus the parser's snippet.
fn located(shown: &str, error: &serde_saphyr::Error) -> ConfigError {
    let rendered = error.to_string();
    let mut lines = rendered.lines();
    let first = lines.next().unwrap_or_default();
    // The first line reads "error: line L column C: message"; keep only the message.
    let message =
        first
            .split_once(": ")
            .map(|(_, rest)| rest)
            .map(|rest| match rest.split_once(": ") {
                Some((position, msg)) if position.starts_with("line ") => msg,
                _ => rest,
            });
    let message = message.unwrap_or(first).to_owned();
    let snippet: String = lines
        .map(|l| format!("\n{}", l.replace("<input>", shown)))
        .collect::<String>();
    match error.location() {
        Some(loc) => ConfigError::Invalid {
            path: shown.to_owned(),
            line: loc.line(),
            column: loc.column(),
            message,
            snippet,
        },
        None => ConfigError::Whole {
            path: shown.to_owned(),
            message: rendered,
        },
    }
}

/// Every `*.yaml` file of a folder, sorted, each loaded; the first error stops the scan.
pub fn load_dir(dir: &Path) -> Result<Vec<ServiceConfig>, ConfigError> {
    let shown = dir.display().to_string();
    let entries = std::fs::read_dir(dir).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml") && is_service_file(p))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ConfigError::Whole {
            path: shown,
            message: "no service *.yaml file in this folder".into(),
        });
    }
    let configs = files
        .iter()
        .map(|f| ServiceConfig::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    check_distinct(&configs)?;
    Ok(configs)
}

/// `services.yaml` is the registry of services (for the wrapper generator), not a service.
fn is_service_file(path: &Path) -> bool {
    path.file_stem().is_some_and(|s| s != "services")
}

/// Services run in one process must differ in name and in address.
pub fn check_distinct(configs: &[ServiceConfig]) -> Result<(), ConfigError> {
    for (i, a) in configs.iter().enumerate() {
        for b in &configs[..i] {
            if a.service.name == b.service.name {
                return Err(ConfigError::Whole {
                    path: a.source.clone(),
                    message: format!(
                        "service name '{}' is also used by {}",
                        a.service.name, b.source
                    ),
                });
            }
            if a.service.port == b.service.port && a.service.host == b.service.host {
                return Err(ConfigError::Whole {
                    path: a.source.clone(),
                    message: format!("port {} is also used by {}", a.service.port.0, b.source),
                });
            }
        }
    }
    Ok(())
}

/// Expands `${VAR}` and `${VAR:-default}` from the environment; an unset variable without a
/// default is an error naming it.
pub fn expand_env(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed '${{' in '{value}'"))?;
        let expr = &after[..end];
        let (name, default) = match expr.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (expr, None),
        };
        match (std::env::var(name), default) {
            (Ok(v), _) if !v.is_empty() => out.push_str(&v),
            (_, Some(d)) => out.push_str(d),
            (Ok(v), None) => out.push_str(&v),
            (Err(_), None) => {
                return Err(format!(
                    "environment variable {name} is not set (used in '{value}')"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ServiceConfig, String> {
        ServiceConfig::parse(text, "t.yaml", PathBuf::from(".")).map_err(|e| e.to_string())
    }

    const MINIMAL: &str = "service: { name: docs, port: 8003 }\n";

    #[test]
    fn minimal_file_gets_the_defaults() {
        let c = parse(MINIMAL).unwrap();
        assert_eq!(c.service.host, "127.0.0.1");
        assert_eq!(c.limits.max_body_bytes.0, 1_048_576);
        assert_eq!(c.limits.call_timeout_ms.0, 30_000);
        assert_eq!(c.security.rate_limit.0, 50_000);
        assert_eq!(c.monitoring.health_check_interval.0, 30);
        assert_eq!(c.logging.format, LogFormat::Json);
    }

    #[test]
    fn value_errors_point_at_the_value() {
        let e = parse("service: { name: docs, port: 80 }\n").unwrap_err();
        assert!(e.starts_with("t.yaml:1:"), "{e}");
        assert!(e.contains("port must be from 1024 to 65535, got 80"), "{e}");
        let e = parse("service:\n  name: Docs\n  port: 8000\n").unwrap_err();
        assert!(
            e.starts_with("t.yaml:2:9: service name 'Docs' must match"),
            "{e}"
        );
        let e = parse(
            "service: { name: docs, port: 8000 }\nmonitoring: { health_check_interval: 5 }\n",
        )
        .unwrap_err();
        assert!(
            e.starts_with("t.yaml:2:") && e.contains("at least 10, got 5"),
            "{e}"
        );
        let e =
            parse("service: { name: docs, port: 8000 }\nsecurity:\n  rate_limit: 9\n").unwrap_err();
        assert!(
            e.starts_with("t.yaml:3:15: must be an integer of at least 10, got 9"),
            "{e}"
        );
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_position() {
        let e =
            parse("service: { name: docs, port: 8000 }\nlimits:\n  max_body: 10\n").unwrap_err();
        assert!(e.starts_with("t.yaml:3:3: unknown field `max_body`"), "{e}");
    }

    #[test]
    fn providers_are_checked_together() {
        let two = "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: mcp, command: x }\n  - { name: a, kind: mcp, url: \"http://h/mcp\" }\n";
        let e = parse(two).unwrap_err();
        assert!(
            e.starts_with("t.yaml:4:") && e.contains("'a' is used twice (first at line 3)"),
            "{e}"
        );
        let neither =
            "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: mcp }\n";
        assert!(
            parse(neither)
                .unwrap_err()
                .contains("needs `command` (stdio) or `url`")
        );
        let both = "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: mcp, command: x, url: \"http://h\" }\n";
        assert!(parse(both).unwrap_err().contains("not both"));
        let kind = "service: { name: docs, port: 8000 }\nproviders:\n  - { name: a, kind: soap, command: x }\n";
        assert!(parse(kind).unwrap_err().contains("soap"));
    }

    #[test]
    fn syntax_errors_have_a_position() {
        let e = parse("service: [\n").unwrap_err();
        assert!(e.starts_with("t.yaml:"), "{e}");
    }

    #[test]
    fn env_expansion() {
        // SAFETY: single-threaded test touching a variable no other test reads.
        unsafe { std::env::set_var("MHG_TEST_EXPAND", "v") };
        assert_eq!(expand_env("a-${MHG_TEST_EXPAND}-b").unwrap(), "a-v-b");
        assert_eq!(expand_env("${MHG_TEST_UNSET_X:-dflt}").unwrap(), "dflt");
        assert!(
            expand_env("${MHG_TEST_UNSET_X}")
                .unwrap_err()
                .contains("MHG_TEST_UNSET_X is not set")
        );
        assert_eq!(expand_env("plain").unwrap(), "plain");
    }
}
