//! Provider entries: one enum variant per `kind`, each holding only its own fields, so a field
//! of another kind is an unknown field with its position, not a rule written by hand.
//!
//! YAML stays flat (`kind: mcp` beside `command:`); an MCP provider's transport (stdio,
//! Streamable HTTP, legacy SSE) becomes a nested enum when the entry is read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::limits::ProviderLimits;
use super::naming::Expose;
use super::types::{ProviderName, optional_text, text, text_map, texts};

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
}

impl ProviderConfig {
    pub fn name(&self) -> &ProviderName {
        match self {
            ProviderConfig::Mcp(p) => &p.name,
            ProviderConfig::Cypher(p) => &p.name,
            ProviderConfig::Http(p) => &p.name,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            ProviderConfig::Mcp(_) => "mcp",
            ProviderConfig::Cypher(_) => "cypher",
            ProviderConfig::Http(_) => "http",
        }
    }

    /// The entry of `dependencies` this provider uses (cypher and http).
    pub fn dependency(&self) -> Option<&str> {
        match self {
            ProviderConfig::Mcp(_) => None,
            ProviderConfig::Cypher(p) => Some(&p.dependency),
            ProviderConfig::Http(p) => Some(&p.dependency),
        }
    }
}

/// What to do with a result that does not match its tool's output schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputValidation {
    /// Refuse it: the call answers EXECUTION_ERROR naming where and why.
    #[default]
    Strict,
    /// Log it and answer the result as it is.
    Warn,
    /// Do not check.
    Off,
}

impl ProviderConfig {
    /// This provider's rule for results that violate their output schema.
    pub fn validate_output(&self) -> OutputValidation {
        match self {
            ProviderConfig::Mcp(p) => p.validate_output,
            ProviderConfig::Cypher(p) => p.validate_output,
            ProviderConfig::Http(p) => p.validate_output,
        }
    }

    /// How many calls this provider and its tools take at once, and for how long.
    pub fn limits(&self) -> &ProviderLimits {
        match self {
            ProviderConfig::Mcp(p) => &p.limits,
            ProviderConfig::Cypher(p) => &p.limits,
            ProviderConfig::Http(p) => &p.limits,
        }
    }

    /// Which of this provider's tools are served, under which names and descriptions.
    pub fn expose(&self) -> &Expose {
        match self {
            ProviderConfig::Mcp(p) => &p.expose,
            ProviderConfig::Cypher(p) => &p.expose,
            ProviderConfig::Http(p) => &p.expose,
        }
    }

    /// Prepended to every served name of this provider's tools.
    pub fn tool_prefix(&self) -> Option<&str> {
        match self {
            ProviderConfig::Mcp(p) => p.tool_prefix.as_deref(),
            ProviderConfig::Cypher(p) => p.tool_prefix.as_deref(),
            ProviderConfig::Http(p) => p.tool_prefix.as_deref(),
        }
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
    /// Added to the gateway's own environment for the child.
    pub env: BTreeMap<String, String>,
    /// The child's working directory, relative to the config file's folder.
    pub cwd: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HttpTransport {
    /// The server's endpoint (may use `${VAR}`).
    pub url: String,
    /// Extra HTTP headers sent to `url` (values may use `${VAR}`).
    pub headers: BTreeMap<String, String>,
}

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
            (Some(command), None) => McpTransport::Stdio(StdioTransport {
                command,
                args: f.args,
                env: f.env,
                cwd: f.cwd,
            }),
            (None, Some(url)) => {
                if !(url.starts_with("http://")
                    || url.starts_with("https://")
                    || url.starts_with("${"))
                {
                    return Err(format!(
                        "provider '{name}': url '{url}' must start with http:// or https://"
                    ));
                }
                if !f.args.is_empty() || !f.env.is_empty() || f.cwd.is_some() {
                    return Err(format!(
                        "provider '{name}': `args`, `env` and `cwd` apply only to a `command` provider"
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
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            setup_hint: c.setup_hint,
            session_per_client: c.session_per_client,
            validate_output: c.validate_output,
            limits: c.limits,
            tool_prefix: c.tool_prefix,
            expose: c.expose,
        };
        match c.transport {
            McpTransport::Stdio(s) => {
                f.command = Some(s.command);
                f.args = s.args;
                f.env = s.env;
                f.cwd = s.cwd;
            }
            McpTransport::StreamableHttp(h) | McpTransport::LegacySse(h) => {
                f.url = Some(h.url);
                f.headers = h.headers;
            }
        }
        f
    }
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
    fn sse_urls_by_path() {
        assert!(is_sse_url("http://h:1/sse"));
        assert!(is_sse_url("http://h:1/x/sse/?token=1"));
        assert!(!is_sse_url("http://h:1/mcp"));
        assert!(!is_sse_url("http://h:1/mcp?x=/sse"));
    }
}
