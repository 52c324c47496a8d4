//! Provider entries: one enum variant per `kind`, each holding only its own fields, so a field
//! of another kind is an unknown field with its position, not a rule written by hand.
//!
//! YAML stays flat (`kind: mcp` beside `command:`); an MCP provider's transport (stdio,
//! Streamable HTTP, legacy SSE) becomes a nested enum when the entry is read.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::limits::ProviderLimits;
use super::naming::Expose;
use super::search::SearchProviderConfig;
use super::types::{OutputValidation, ProviderName, optional_text, text, text_map, texts};
use super::when::When;

/// One provider of tools; `kind` selects the variant.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ProviderConfig {
    /// An MCP server, over stdio (`command`) or HTTP (`url`).
    Mcp(McpProviderConfig),
    /// Cypher queries declared as tools, run against a `bolt` dependency.
    Cypher(CypherProviderConfig),
    /// Calls of an HTTP API declared as tools (or imported from its OpenAPI document).
    Http(HttpProviderConfig),
    /// A provider process speaking the gRPC Provider contract (`proto/`).
    Grpc(GrpcProviderConfig),
    /// Lexical (BM25) search over local folders, built in (`config/search.rs`).
    Search(SearchProviderConfig),
}

impl ProviderConfig {
    pub fn name(&self) -> &ProviderName {
        match self {
            ProviderConfig::Mcp(p) => &p.name,
            ProviderConfig::Cypher(p) => &p.name,
            ProviderConfig::Http(p) => &p.name,
            ProviderConfig::Grpc(p) => &p.name,
            ProviderConfig::Search(p) => &p.name,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            ProviderConfig::Mcp(_) => "mcp",
            ProviderConfig::Cypher(_) => "cypher",
            ProviderConfig::Http(_) => "http",
            ProviderConfig::Grpc(_) => "grpc",
            ProviderConfig::Search(_) => "search",
        }
    }

    /// The entry of `dependencies` this provider uses (cypher and http).
    pub fn dependency(&self) -> Option<&str> {
        match self {
            ProviderConfig::Mcp(_) => None,
            ProviderConfig::Cypher(p) => Some(&p.dependency),
            ProviderConfig::Http(p) => Some(&p.dependency),
            ProviderConfig::Grpc(_) | ProviderConfig::Search(_) => None,
        }
    }

    /// The entry's `when` condition, if it has one.
    pub fn when(&self) -> Option<&When> {
        match self {
            ProviderConfig::Mcp(p) => p.when.as_ref(),
            ProviderConfig::Cypher(p) => p.when.as_ref(),
            ProviderConfig::Http(p) => p.when.as_ref(),
            ProviderConfig::Grpc(p) => p.when.as_ref(),
            ProviderConfig::Search(p) => p.when.as_ref(),
        }
    }
}

impl ProviderConfig {
    /// This provider's rule for results that violate their output schema.
    pub fn validate_output(&self) -> OutputValidation {
        match self {
            ProviderConfig::Mcp(p) => p.validate_output,
            ProviderConfig::Cypher(p) => p.validate_output,
            ProviderConfig::Http(p) => p.validate_output,
            ProviderConfig::Grpc(p) => p.validate_output,
            ProviderConfig::Search(p) => p.validate_output,
        }
    }

    /// How many calls this provider and its tools take at once, and for how long.
    pub fn limits(&self) -> &ProviderLimits {
        match self {
            ProviderConfig::Mcp(p) => &p.limits,
            ProviderConfig::Cypher(p) => &p.limits,
            ProviderConfig::Http(p) => &p.limits,
            ProviderConfig::Grpc(p) => &p.limits,
            ProviderConfig::Search(p) => &p.limits,
        }
    }

    /// Which of this provider's tools are served, under which names and descriptions.
    pub fn expose(&self) -> &Expose {
        match self {
            ProviderConfig::Mcp(p) => &p.expose,
            ProviderConfig::Cypher(p) => &p.expose,
            ProviderConfig::Http(p) => &p.expose,
            ProviderConfig::Grpc(p) => &p.expose,
            ProviderConfig::Search(p) => &p.expose,
        }
    }

    /// Prepended to every served name of this provider's tools.
    pub fn tool_prefix(&self) -> Option<&str> {
        match self {
            ProviderConfig::Mcp(p) => p.tool_prefix.as_deref(),
            ProviderConfig::Cypher(p) => p.tool_prefix.as_deref(),
            ProviderConfig::Http(p) => p.tool_prefix.as_deref(),
            ProviderConfig::Grpc(p) => p.tool_prefix.as_deref(),
            ProviderConfig::Search(p) => p.tool_prefix.as_deref(),
        }
    }

    /// Whether the names this provider gives its tools are served in their identifier form
    /// ([`super::naming::to_identifier`]: `echo.v1` → `echo_v1`). Always for a gRPC provider,
    /// whose contract names tools with versions (`echo.v1`) and whose served names have no
    /// clients to keep; for the other kinds as `service.identifier_names` says (names bridged
    /// from MCP servers and OpenAPI documents are kept by default, for the clients that already
    /// call them; declared cypher and http names are identifiers already).
    pub fn maps_names(&self, identifier_names: bool) -> bool {
        matches!(self, ProviderConfig::Grpc(_)) || identifier_names
    }

    /// The entry without what the service applies around a running provider: `limits` (read
    /// at admission), `expose` and `tool_prefix` (applied when the tool list is built). What
    /// is left is what the running provider is, so changing the others does not restart it.
    pub fn as_running(&self) -> ProviderConfig {
        let mut entry = self.clone();
        let (limits, expose, prefix) = match &mut entry {
            ProviderConfig::Mcp(p) => (&mut p.limits, &mut p.expose, &mut p.tool_prefix),
            ProviderConfig::Cypher(p) => (&mut p.limits, &mut p.expose, &mut p.tool_prefix),
            ProviderConfig::Http(p) => (&mut p.limits, &mut p.expose, &mut p.tool_prefix),
            ProviderConfig::Grpc(p) => (&mut p.limits, &mut p.expose, &mut p.tool_prefix),
            ProviderConfig::Search(p) => (&mut p.limits, &mut p.expose, &mut p.tool_prefix),
        };
        *limits = ProviderLimits::default();
        *expose = Expose::default();
        *prefix = None;
        entry
    }
}

/// `kind: mcp`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(try_from = "McpFields", into = "McpFields")]
pub struct McpProviderConfig {
    pub name: ProviderName,
    pub transport: McpTransport,
    /// Said in /health and in errors while the server is unavailable: what to start.
    pub setup_hint: Option<String>,
    /// One upstream connection per downstream MCP session (opened at the session's first
    /// use, closed with it), so the server's requests to its client (sampling, elicitation,
    /// roots) and its per-connection state belong to one client. Off: one shared connection.
    pub session_per_client: bool,
    /// Results checked against each tool's `outputSchema` (default strict).
    pub validate_output: OutputValidation,
    pub limits: ProviderLimits,
    pub tool_prefix: Option<String>,
    pub expose: Expose,
    /// Served only when this holds (`config/when.rs`).
    pub when: Option<When>,
}

/// How an MCP server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio(StdioTransport),
    /// Streamable HTTP (`url`).
    StreamableHttp(HttpTransport),
    /// The legacy HTTP+SSE transport (protocol 2024-11-05): a `url` whose path ends in `/sse`.
    LegacySse(HttpTransport),
}

#[derive(Debug, Clone, PartialEq)]
pub struct StdioTransport {
    /// The program to spawn (looked up on PATH unless it contains a `/`).
    pub command: String,
    pub args: Vec<String>,
    /// Set for the child (values may use `${VAR}`), on top of the inherited allowlist
    /// (`provider/mcp/upstream/stdio.rs`); the gateway's own environment is not passed whole.
    pub env: BTreeMap<String, String>,
    /// Names of the gateway's environment variables copied to the child when set.
    pub env_passthrough: Vec<String>,
    /// The child's working directory, relative to the config file's folder.
    pub cwd: Option<String>,
    /// How many children to run (`instances`, default 1): a pool for a server that keeps no
    /// state per client, each call on the least-loaded live child (`provider/mcp/pool.rs`).
    pub instances: u32,
    /// Grow the pool past `instances` while calls queue (`max_instances`); none: fixed size.
    pub growth: Option<Growth>,
}

/// How a pool grows while calls queue, and shrinks back when the extra children are idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Growth {
    /// The most children (`max_instances`), above `instances`.
    pub max: u32,
    /// Another child is started when a call finds every live child with at least this many
    /// calls in flight (`scale_up_at`, default 4).
    pub scale_up_at: u32,
    /// A child started this way is stopped after this long without a call
    /// (`scale_down_after_ms`, default 60 s).
    pub scale_down_after: Duration,
}

impl Growth {
    pub const DEFAULT_SCALE_UP_AT: u32 = 4;
    pub const DEFAULT_SCALE_DOWN_AFTER: Duration = Duration::from_secs(60);
}

#[derive(Debug, Clone, PartialEq)]
pub struct HttpTransport {
    /// The server's endpoint (may use `${VAR}`).
    pub url: String,
    /// Extra HTTP headers sent to `url` (values may use `${VAR}`).
    pub headers: BTreeMap<String, String>,
}

/// The most children one stdio provider may run: each is a process of its own.
pub const MAX_INSTANCES: u32 = 32;

/// The YAML form of an mcp entry, flat as people write it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct McpFields {
    name: ProviderName,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    command: Option<String>,
    #[serde(
        default,
        deserialize_with = "texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    args: Vec<String>,
    #[serde(
        default,
        deserialize_with = "text_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    env: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    env_passthrough: Vec<String>,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    cwd: Option<String>,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    url: Option<String>,
    #[serde(
        default,
        deserialize_with = "text_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    headers: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "optional_text")]
    setup_hint: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instances: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_instances: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scale_up_at: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scale_down_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    session_per_client: bool,
    #[serde(default)]
    validate_output: OutputValidation,
    #[serde(default)]
    limits: ProviderLimits,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    tool_prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Expose::is_empty")]
    expose: Expose,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    when: Option<When>,
}

impl TryFrom<McpFields> for McpProviderConfig {
    type Error = String;
    fn try_from(f: McpFields) -> Result<Self, String> {
        let name = f.name;
        let transport = match (f.command, f.url) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "provider '{name}': give either `command` (stdio) or `url` (Streamable HTTP), not both"
                ));
            }
            (None, None) => {
                return Err(format!(
                    "provider '{name}': an mcp provider needs `command` (stdio) or `url` (Streamable HTTP)"
                ));
            }
            (Some(_), None) if !f.headers.is_empty() => {
                return Err(format!(
                    "provider '{name}': `headers` apply only to a `url` provider"
                ));
            }
            (Some(command), None) => {
                let instances = f.instances.unwrap_or(1);
                if !(1..=MAX_INSTANCES).contains(&instances) {
                    return Err(format!(
                        "provider '{name}': instances is {instances}; give 1 to {MAX_INSTANCES} children"
                    ));
                }
                let growth = growth(
                    &name,
                    instances,
                    f.max_instances,
                    f.scale_up_at,
                    f.scale_down_after_ms,
                )?;
                if let Some(bad) = f.env_passthrough.iter().find(|n| !is_env_name(n)) {
                    return Err(format!(
                        "provider '{name}': env_passthrough '{bad}' is not an environment variable name (letters, digits and _, not starting with a digit)"
                    ));
                }
                McpTransport::Stdio(StdioTransport {
                    command,
                    args: f.args,
                    env: f.env,
                    env_passthrough: f.env_passthrough,
                    cwd: f.cwd,
                    instances,
                    growth,
                })
            }
            (None, Some(url)) => {
                if !(url.starts_with("http://")
                    || url.starts_with("https://")
                    || url.starts_with("${"))
                {
                    return Err(format!(
                        "provider '{name}': url '{url}' must start with http:// or https://"
                    ));
                }
                if !f.args.is_empty()
                    || !f.env.is_empty()
                    || !f.env_passthrough.is_empty()
                    || f.cwd.is_some()
                    || f.instances.is_some()
                    || f.max_instances.is_some()
                    || f.scale_up_at.is_some()
                    || f.scale_down_after_ms.is_some()
                {
                    return Err(format!(
                        "provider '{name}': `args`, `env`, `env_passthrough`, `cwd`, `instances`, `max_instances`, `scale_up_at` and `scale_down_after_ms` apply only to a `command` provider (a pool of children; a remote server scales on its own side)"
                    ));
                }
                let http = HttpTransport {
                    url,
                    headers: f.headers,
                };
                if is_sse_url(&http.url) {
                    McpTransport::LegacySse(http)
                } else {
                    McpTransport::StreamableHttp(http)
                }
            }
        };
        Ok(McpProviderConfig {
            name,
            transport,
            setup_hint: f.setup_hint,
            session_per_client: f.session_per_client,
            validate_output: f.validate_output,
            limits: f.limits,
            tool_prefix: f.tool_prefix,
            expose: f.expose,
            when: f.when,
        })
    }
}

impl From<McpProviderConfig> for McpFields {
    fn from(c: McpProviderConfig) -> McpFields {
        let mut f = McpFields {
            name: c.name,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            env_passthrough: Vec::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            instances: None,
            max_instances: None,
            scale_up_at: None,
            scale_down_after_ms: None,
            setup_hint: c.setup_hint,
            session_per_client: c.session_per_client,
            validate_output: c.validate_output,
            limits: c.limits,
            tool_prefix: c.tool_prefix,
            expose: c.expose,
            when: c.when,
        };
        match c.transport {
            McpTransport::Stdio(s) => {
                f.command = Some(s.command);
                f.args = s.args;
                f.env = s.env;
                f.env_passthrough = s.env_passthrough;
                f.cwd = s.cwd;
                f.instances = (s.instances != 1).then_some(s.instances);
                if let Some(g) = s.growth {
                    f.max_instances = Some(g.max);
                    f.scale_up_at =
                        (g.scale_up_at != Growth::DEFAULT_SCALE_UP_AT).then_some(g.scale_up_at);
                    f.scale_down_after_ms = (g.scale_down_after
                        != Growth::DEFAULT_SCALE_DOWN_AFTER)
                        .then_some(g.scale_down_after.as_millis() as u64);
                }
            }
            McpTransport::StreamableHttp(h) | McpTransport::LegacySse(h) => {
                f.url = Some(h.url);
                f.headers = h.headers;
            }
        }
        f
    }
}

/// The pool's growth from `max_instances`, `scale_up_at` and `scale_down_after_ms`: none when
/// `max_instances` is absent or equals `instances`; the other two need it above.
fn growth(
    name: &ProviderName,
    instances: u32,
    max_instances: Option<u32>,
    scale_up_at: Option<u32>,
    scale_down_after_ms: Option<u64>,
) -> Result<Option<Growth>, String> {
    let max = max_instances.unwrap_or(instances);
    if !(instances..=MAX_INSTANCES).contains(&max) {
        return Err(format!(
            "provider '{name}': max_instances is {max}; give {instances} (instances) to {MAX_INSTANCES} children"
        ));
    }
    if max == instances {
        return match (scale_up_at, scale_down_after_ms) {
            (None, None) => Ok(None),
            _ => Err(format!(
                "provider '{name}': `scale_up_at` and `scale_down_after_ms` apply only to a pool that grows: give `max_instances` above `instances` ({instances})"
            )),
        };
    }
    let scale_up_at = scale_up_at.unwrap_or(Growth::DEFAULT_SCALE_UP_AT);
    if !(1..=MAX_SCALE_UP_AT).contains(&scale_up_at) {
        return Err(format!(
            "provider '{name}': scale_up_at is {scale_up_at}; give 1 to {MAX_SCALE_UP_AT} calls in flight per child"
        ));
    }
    let scale_down_after = match scale_down_after_ms {
        None => Growth::DEFAULT_SCALE_DOWN_AFTER,
        Some(ms) if (MIN_SCALE_DOWN_AFTER_MS..=MAX_SCALE_DOWN_AFTER_MS).contains(&ms) => {
            Duration::from_millis(ms)
        }
        Some(ms) => {
            return Err(format!(
                "provider '{name}': scale_down_after_ms is {ms}; give {MIN_SCALE_DOWN_AFTER_MS} to {MAX_SCALE_DOWN_AFTER_MS} (a day)"
            ));
        }
    };
    Ok(Some(Growth {
        max,
        scale_up_at,
        scale_down_after,
    }))
}

const MAX_SCALE_UP_AT: u32 = 10_000;
const MIN_SCALE_DOWN_AFTER_MS: u64 = 100;
const MAX_SCALE_DOWN_AFTER_MS: u64 = 86_400_000;

/// An environment variable name as shells write them: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl StdioTransport {
    /// Why each `env` entry that holds a literal secret should not: its name says secret
    /// (KEY, TOKEN, SECRET, PASSWORD) or its value has the shape of a known token, and the
    /// value is not a `${VAR}` reference. A literal in the file ends up in backups, diffs and
    /// `config get`; the warning says how to keep it out.
    pub fn secret_warnings(&self, provider: &str) -> Vec<String> {
        self.env
            .iter()
            .filter(|(name, value)| {
                !value.is_empty()
                    && !value.contains("${")
                    && (secret_name(name) || token_shaped(value))
            })
            .map(|(name, _)| {
                format!(
                    "provider '{provider}': env.{name} holds a literal value that looks like a secret; \
                     write `{name}: \"${{{name}}}\"` and set {name} in the gateway's environment, \
                     or list it in `env_passthrough: [{name}]`"
                )
            })
            .collect()
    }
}

fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "TOKEN", "SECRET", "PASSWORD"]
        .iter()
        .any(|word| upper.contains(word))
}

/// The shapes of well-known credentials: provider API keys, GitHub/GitLab/Slack tokens, AWS
/// access key ids, JWTs and PEM private keys.
fn token_shaped(value: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sk-",
        "sk_live_",
        "rk_live_",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "AIza",
        "-----BEGIN",
    ];
    let aws = value.len() == 20
        && (value.starts_with("AKIA") || value.starts_with("ASIA"))
        && value
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let jwt = value.starts_with("eyJ") && value.matches('.').count() == 2;
    aws || jwt
        || PREFIXES
            .iter()
            .any(|p| value.starts_with(p) && value.len() >= p.len() + 8)
}

/// Whether a URL names a legacy SSE endpoint: its path (before any query) ends in `/sse`.
pub fn is_sse_url(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or_default();
    path.trim_end_matches('/').ends_with("/sse")
}

/// `kind: cypher`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CypherProviderConfig {
    pub name: ProviderName,
    /// The `bolt` entry of `dependencies` the queries run against.
    #[serde(deserialize_with = "text")]
    pub dependency: String,
    pub tools: Vec<CypherTool>,
    #[serde(default, deserialize_with = "optional_text")]
    pub setup_hint: Option<String>,
    /// Results checked against each tool's `output_schema` (default strict).
    #[serde(default)]
    pub validate_output: OutputValidation,
    #[serde(default)]
    pub limits: ProviderLimits,
    /// Prepended to the served name of each of its tools.
    #[serde(default, deserialize_with = "optional_text")]
    pub tool_prefix: Option<String>,
    /// Which of its tools are served, renamed, re-described.
    #[serde(default, skip_serializing_if = "Expose::is_empty")]
    pub expose: Expose,
    /// Served only when this holds (`config/when.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
}

/// A Cypher query declared as a tool.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CypherTool {
    #[serde(deserialize_with = "text")]
    pub name: String,
    #[serde(deserialize_with = "text")]
    pub description: String,
    /// JSON Schema of the arguments; `type: object`.
    pub input_schema: Value,
    /// The Cypher text: arguments are `$parameters`; only schema-bounded integers may appear
    /// as `{{ name }}`.
    #[serde(deserialize_with = "text")]
    pub query: String,
    /// The key of `data` holding the rows (default `rows`).
    #[serde(default, deserialize_with = "optional_text")]
    pub result_key: Option<String>,
    /// JSON Schema of the call's `data` (`{<result_key>: [rows], count}`), when declared.
    #[serde(default)]
    pub output_schema: Option<Value>,
}

/// `kind: http`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpProviderConfig {
    pub name: ProviderName,
    /// The `http` entry of `dependencies` the calls go to.
    #[serde(deserialize_with = "text")]
    pub dependency: String,
    #[serde(default)]
    pub tools: Vec<HttpTool>,
    /// An OpenAPI 3.x document (file path or URL) whose operations become tools.
    #[serde(default, deserialize_with = "optional_text")]
    pub openapi: Option<String>,
    /// With `openapi`: only these operationIds (empty: all).
    #[serde(default, deserialize_with = "texts")]
    pub include: Vec<String>,
    /// With `openapi`: never these operationIds.
    #[serde(default, deserialize_with = "texts")]
    pub exclude: Vec<String>,
    /// Adds a tool of this name reporting calls and tokens per model, counted from the `usage`
    /// of upstream answers since start (OpenAI-compatible APIs).
    #[serde(default, deserialize_with = "optional_text")]
    pub usage_tool: Option<String>,
    #[serde(default, deserialize_with = "optional_text")]
    pub setup_hint: Option<String>,
    /// Results checked against each tool's `output_schema` (default strict).
    #[serde(default)]
    pub validate_output: OutputValidation,
    #[serde(default)]
    pub limits: ProviderLimits,
    /// Prepended to the served name of each of its tools.
    #[serde(default, deserialize_with = "optional_text")]
    pub tool_prefix: Option<String>,
    /// Which of its tools are served, renamed, re-described.
    #[serde(default, skip_serializing_if = "Expose::is_empty")]
    pub expose: Expose,
    /// Served only when this holds (`config/when.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
}

/// A call of the HTTP API declared as a tool.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTool {
    #[serde(deserialize_with = "text")]
    pub name: String,
    #[serde(deserialize_with = "text")]
    pub description: String,
    /// JSON Schema of the arguments; `type: object`.
    pub input_schema: Value,
    /// GET, POST, PUT, PATCH, DELETE (default GET).
    #[serde(default, deserialize_with = "optional_text")]
    pub method: Option<String>,
    /// The path under the dependency's base_url, with `{arg}` placeholders.
    #[serde(deserialize_with = "text")]
    pub path: String,
    /// Query-string parameters, each a template.
    #[serde(default, deserialize_with = "text_map")]
    pub query: BTreeMap<String, String>,
    /// Extra headers, each a template.
    #[serde(default, deserialize_with = "text_map")]
    pub headers: BTreeMap<String, String>,
    /// The JSON body as a template (default for POST/PUT/PATCH: the arguments).
    #[serde(default, deserialize_with = "optional_text")]
    pub body: Option<String>,
    /// A JSON pointer into the upstream answer selecting `data` (default: all of it).
    #[serde(default, deserialize_with = "optional_text")]
    pub result: Option<String>,
    /// JSON Schema of the call's `data`, when declared.
    #[serde(default)]
    pub output_schema: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_addresses_are_host_and_port() {
        for ok in [
            "localhost:50051",
            "127.0.0.1:1",
            "[::1]:50052",
            "hello-rs.internal:65535",
            "${HELLO_ADDR}",
            "${HOST}:50051",
        ] {
            assert_eq!(check_grpc_address(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("localhost", "no port"),
            ("http://localhost:50051", "no scheme"),
            ("localhost:0", "'0' is not a port"),
            ("localhost:65536", "'65536' is not a port"),
            ("localhost:+5", "'+5' is not a port"),
            (":50051", "'' is not a host"),
            ("::1:50051", "in brackets"),
            ("[::g]:50051", "not a bracketed IPv6"),
            ("a b:1", "'a b' is not a host"),
            ("a..b:1", "'a..b' is not a host"),
        ] {
            let e = check_grpc_address(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(
                e.starts_with(&format!("address '{bad}' must be host:port")),
                "{e}"
            );
        }
    }

    #[test]
    fn sse_urls_by_path() {
        assert!(is_sse_url("http://h:1/sse"));
        assert!(is_sse_url("http://h:1/x/sse/?token=1"));
        assert!(!is_sse_url("http://h:1/mcp"));
        assert!(!is_sse_url("http://h:1/mcp?x=/sse"));
    }

    fn stdio(yaml: &str) -> Result<StdioTransport, String> {
        let config: McpProviderConfig =
            serde_saphyr::from_str(&format!("{{ name: p, command: x, {yaml} }}"))
                .map_err(|e| e.to_string())?;
        match config.transport {
            McpTransport::Stdio(s) => Ok(s),
            other => panic!("not stdio: {other:?}"),
        }
    }

    #[test]
    fn env_passthrough_takes_variable_names_only_and_only_for_a_command() {
        let s = stdio("env_passthrough: [GITHUB_TOKEN, _X1]").unwrap();
        assert_eq!(s.env_passthrough, ["GITHUB_TOKEN", "_X1"]);
        for bad in ["[1X]", "['A-B']", "['']", "['A B']"] {
            let err = stdio(&format!("env_passthrough: {bad}")).unwrap_err();
            assert!(err.contains("env_passthrough"), "{bad}: {err}");
        }
        let remote: Result<McpProviderConfig, _> =
            serde_saphyr::from_str("{ name: p, url: 'http://h/mcp', env_passthrough: [A] }");
        assert!(remote.unwrap_err().to_string().contains("env_passthrough"));
    }

    #[test]
    fn instances_default_to_one_are_bounded_and_only_for_a_command() {
        assert_eq!(stdio("args: []").unwrap().instances, 1);
        assert_eq!(stdio("instances: 4").unwrap().instances, 4);
        for bad in ["0", "33"] {
            let err = stdio(&format!("instances: {bad}")).unwrap_err();
            assert!(err.contains(&format!("instances is {bad}")), "{err}");
        }
        let remote: Result<McpProviderConfig, _> =
            serde_saphyr::from_str("{ name: p, url: 'http://h/mcp', instances: 2 }");
        assert!(remote.unwrap_err().to_string().contains("instances"));
        // Written back (check-config's normalised form) as given, one omitted.
        let pooled: McpProviderConfig =
            serde_saphyr::from_str("{ name: p, command: x, instances: 3 }").unwrap();
        assert_eq!(McpFields::from(pooled).instances, Some(3));
        let single: McpProviderConfig = serde_saphyr::from_str("{ name: p, command: x }").unwrap();
        assert_eq!(McpFields::from(single).instances, None);
    }

    #[test]
    fn a_pool_grows_only_past_instances_within_bounds_and_only_for_a_command() {
        assert_eq!(stdio("instances: 2").unwrap().growth, None);
        assert_eq!(
            stdio("instances: 2, max_instances: 2").unwrap().growth,
            None
        );
        assert_eq!(
            stdio("max_instances: 3").unwrap().growth,
            Some(Growth {
                max: 3,
                scale_up_at: 4,
                scale_down_after: Duration::from_secs(60)
            })
        );
        let g = stdio("instances: 2, max_instances: 32, scale_up_at: 1, scale_down_after_ms: 100")
            .unwrap()
            .growth
            .unwrap();
        assert_eq!(
            (g.max, g.scale_up_at, g.scale_down_after),
            (32, 1, Duration::from_millis(100))
        );
        let g = stdio("max_instances: 2, scale_up_at: 10000, scale_down_after_ms: 86400000")
            .unwrap()
            .growth
            .unwrap();
        assert_eq!(
            (g.scale_up_at, g.scale_down_after),
            (10_000, Duration::from_secs(86_400))
        );
        for (bad, why) in [
            (
                "instances: 3, max_instances: 2",
                "max_instances is 2; give 3 (instances) to 32",
            ),
            (
                "max_instances: 33",
                "max_instances is 33; give 1 (instances) to 32",
            ),
            (
                "max_instances: 2, scale_up_at: 0",
                "scale_up_at is 0; give 1 to 10000",
            ),
            (
                "max_instances: 2, scale_up_at: 10001",
                "scale_up_at is 10001",
            ),
            (
                "max_instances: 2, scale_down_after_ms: 99",
                "scale_down_after_ms is 99; give 100 to 86400000",
            ),
            (
                "max_instances: 2, scale_down_after_ms: 86400001",
                "scale_down_after_ms is 86400001",
            ),
            (
                "scale_up_at: 2",
                "apply only to a pool that grows: give `max_instances` above `instances` (1)",
            ),
            (
                "instances: 2, max_instances: 2, scale_down_after_ms: 500",
                "above `instances` (2)",
            ),
        ] {
            let err = stdio(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        for remote in [
            "max_instances: 2",
            "scale_up_at: 2",
            "scale_down_after_ms: 1000",
        ] {
            let err = serde_saphyr::from_str::<McpProviderConfig>(&format!(
                "{{ name: p, url: 'http://h/mcp', {remote} }}"
            ))
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("apply only to a `command` provider"),
                "{remote}: {err}"
            );
        }
        // Written back as given, the defaults omitted.
        let written = |yaml: &str| {
            let c: McpProviderConfig =
                serde_saphyr::from_str(&format!("{{ name: p, command: x, {yaml} }}")).unwrap();
            let f = McpFields::from(c);
            (f.max_instances, f.scale_up_at, f.scale_down_after_ms)
        };
        assert_eq!(written("max_instances: 3"), (Some(3), None, None));
        assert_eq!(
            written("max_instances: 3, scale_up_at: 2, scale_down_after_ms: 500"),
            (Some(3), Some(2), Some(500))
        );
        assert_eq!(written("instances: 2"), (None, None, None));
    }

    #[test]
    fn literal_secrets_in_env_are_warned_about_references_are_not() {
        let s = stdio(
            "env: { API_KEY: abc, DB_PASSWORD: hunter2, GH: ghp_0123456789abcdefghij, \
             AWS: AKIAIOSFODNN7EXAMPLE, LEVEL: debug, TOKEN_REF: '${TOKEN}', \
             KEY_DEFAULT: '${KEY:-none}', EMPTY_TOKEN: '', SHORT: sk-1 }",
        )
        .unwrap();
        let warnings = s.secret_warnings("p");
        let named: Vec<&str> = ["API_KEY", "AWS", "DB_PASSWORD", "GH"].to_vec();
        assert_eq!(warnings.len(), named.len(), "{warnings:#?}");
        for (warning, name) in warnings.iter().zip(named) {
            assert!(warning.contains(&format!("env.{name} ")), "{warning}");
            assert!(warning.contains("env_passthrough"), "{warning}");
            assert!(warning.contains(&format!("${{{name}}}")), "{warning}");
        }
    }
}

/// `kind: grpc`: a provider reached over the gRPC Provider contract.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcProviderConfig {
    pub name: ProviderName,
    /// `host:port` of the provider's gRPC server (may use `${VAR}`).
    #[serde(deserialize_with = "text")]
    pub address: String,
    /// TLS to the provider; absent: plaintext HTTP/2 (loopback and trusted networks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<GrpcTls>,
    /// The deadline of one call in ms (sent as `grpc-timeout`); the service's and the tool's
    /// `timeout_ms` cap it. Default 30000.
    #[serde(default = "default_grpc_deadline_ms")]
    pub deadline_ms: u64,
    /// How often the `grpc.health.v1` heartbeat runs, in ms. Default 5000.
    #[serde(default = "default_grpc_heartbeat_ms")]
    pub heartbeat_interval_ms: u64,
    /// Reconnect attempts in a row, after the connection is lost, before the provider is
    /// DISCONNECTED. Default 5.
    #[serde(default = "default_grpc_max_retries")]
    pub max_retries: u32,
    /// The first wait between reconnect attempts in ms; it doubles each attempt up to 30 s.
    /// Default 500.
    #[serde(default = "default_grpc_backoff_ms")]
    pub retry_backoff_ms: u64,
    /// Labels of the provider (`version`, `environment`, …), shown in /health.
    #[serde(
        default,
        deserialize_with = "text_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub metadata: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "optional_text")]
    pub setup_hint: Option<String>,
    /// Results checked against each tool's output schema (default strict).
    #[serde(default)]
    pub validate_output: OutputValidation,
    #[serde(default)]
    pub limits: ProviderLimits,
    /// Prepended to the served name of each of its tools.
    #[serde(default, deserialize_with = "optional_text")]
    pub tool_prefix: Option<String>,
    /// Which of its tools are served, renamed, re-described.
    #[serde(default, skip_serializing_if = "Expose::is_empty")]
    pub expose: Expose,
    /// Served only when this holds (`config/when.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
}

/// TLS settings of a gRPC provider.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcTls {
    /// PEM file of the CA that signed the provider's certificate (relative to the config
    /// file's folder); absent: the system's roots.
    #[serde(default, deserialize_with = "optional_text")]
    pub ca_file: Option<String>,
    /// The name to check the certificate against; default the host of `address`.
    #[serde(default, deserialize_with = "optional_text")]
    pub domain: Option<String>,
}

impl GrpcProviderConfig {
    /// An entry of the seed's `providers.yaml` (name, address, metadata), every other field at
    /// its default.
    pub fn from_seed(
        name: ProviderName,
        address: String,
        metadata: BTreeMap<String, String>,
    ) -> GrpcProviderConfig {
        GrpcProviderConfig {
            name,
            address,
            tls: None,
            deadline_ms: default_grpc_deadline_ms(),
            heartbeat_interval_ms: default_grpc_heartbeat_ms(),
            max_retries: default_grpc_max_retries(),
            retry_backoff_ms: default_grpc_backoff_ms(),
            metadata,
            setup_hint: None,
            validate_output: OutputValidation::default(),
            limits: ProviderLimits::default(),
            tool_prefix: None,
            expose: Expose::default(),
            when: None,
        }
    }
}

/// The rule of a gRPC provider's `address`, inline or from `providers_file`: `host:port`, the
/// host a name, an IPv4 address or a bracketed IPv6 address (`[::1]:50051`), the port 1 to
/// 65535, no scheme. An address holding a `${VAR}` is checked once expanded, when the provider
/// is built.
pub fn check_grpc_address(address: &str) -> Result<(), String> {
    if address.contains("${") {
        return Ok(());
    }
    let wrong = |why: &str| {
        Err(format!(
            "address '{address}' must be host:port (e.g. 127.0.0.1:50051 or [::1]:50051): {why}"
        ))
    };
    if address.contains("://") {
        return wrong("no scheme; TLS is set by `tls`");
    }
    let Some((host, port)) = address.rsplit_once(':') else {
        return wrong("no port");
    };
    match port.parse::<u16>() {
        Ok(p) if p > 0 && !port.starts_with('+') => {}
        _ => return wrong(&format!("'{port}' is not a port from 1 to 65535")),
    }
    if let Some(inner) = host.strip_prefix('[') {
        let v6 = inner.strip_suffix(']').unwrap_or_default();
        return match v6.parse::<std::net::Ipv6Addr>() {
            Ok(_) => Ok(()),
            Err(_) => wrong(&format!("'{host}' is not a bracketed IPv6 address")),
        };
    }
    if host.contains(':') {
        return wrong("an IPv6 address is written in brackets");
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return wrong(&format!("'{host}' is not a host name or IP address"));
    }
    Ok(())
}

fn default_grpc_deadline_ms() -> u64 {
    30_000
}
fn default_grpc_heartbeat_ms() -> u64 {
    5_000
}
fn default_grpc_max_retries() -> u32 {
    5
}
fn default_grpc_backoff_ms() -> u64 {
    500
}
