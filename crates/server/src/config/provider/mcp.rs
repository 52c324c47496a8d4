//! `kind: mcp`: an MCP server, reached over stdio (a pool of children running `command`),
//! Streamable HTTP or legacy SSE (`url`). YAML stays flat; the transport becomes a nested enum
//! when the entry is read, and the rules between its fields (`command` or `url`, a pool's
//! bounds, names of passed-through variables) are checked then, each error naming the provider.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::dependency::authorization_header;
use super::super::types::{ProviderName, optional_text, text_map, texts};
use super::super::upstream_auth::UpstreamAuth;
use super::{EntryKeys, ProviderCommon};

/// `kind: mcp`. Read as an entry of [`super::ProviderConfig`], which refuses a key of another
/// kind first.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(try_from = "McpFields", into = "McpFields")]
pub struct McpProviderConfig {
    pub common: ProviderCommon,
    pub transport: McpTransport,
    /// One upstream connection per downstream MCP session (opened at the session's first
    /// use, closed with it), so the server's requests to its client (sampling, elicitation,
    /// roots) and its per-connection state belong to one client. Off: one shared connection.
    pub session_per_client: bool,
    /// Which protocol era the gateway speaks to the server (`protocol`).
    pub protocol: UpstreamProtocol,
}

/// Which era of MCP the gateway speaks to a server (`protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
pub enum UpstreamProtocol {
    /// The `initialize` handshake (2025-11-25 and before): what every server released before
    /// 2026-07-28 speaks. The default.
    #[default]
    #[serde(rename = "handshake")]
    Handshake,
    /// Stateless 2026-07-28 (`server/discover`, protocol metadata in every request's `_meta`,
    /// `input_required` rounds, `Mcp-Param-*` headers over HTTP).
    #[serde(rename = "2026-07-28")]
    Stateless,
    /// `server/discover` first, the handshake when the server does not know it.
    #[serde(rename = "auto")]
    Auto,
}

impl EntryKeys for McpProviderConfig {
    const KEYS: &'static [&'static str] = &[
        "name",
        "command",
        "args",
        "env",
        "env_passthrough",
        "cwd",
        "url",
        "headers",
        "auth",
        "setup_hint",
        "instances",
        "max_instances",
        "scale_up_at",
        "scale_down_after_ms",
        "session_per_client",
        "protocol",
        "validate_output",
        "limits",
        "resilience",
        "tool_prefix",
        "expose",
        "when",
    ];
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
    /// A token from the server's own issuer (client credentials), sent with each request.
    pub auth: Option<UpstreamAuth>,
}

/// The most children one stdio provider may run: each is a process of its own.
pub const MAX_INSTANCES: u32 = 32;

/// The YAML form of an mcp entry, flat as people write it: the common fields and the
/// transport's, side by side.
#[derive(Debug, Clone, Deserialize, Serialize)]
struct McpFields {
    #[serde(flatten)]
    common: ProviderCommon,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    auth: Option<UpstreamAuth>,
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
    #[serde(default, skip_serializing_if = "is_handshake")]
    protocol: UpstreamProtocol,
}

fn is_handshake(protocol: &UpstreamProtocol) -> bool {
    *protocol == UpstreamProtocol::Handshake
}

/// Why an mcp entry cannot work, said with the provider's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpEntryError {
    #[error("provider '{0}': give either `command` (stdio) or `url` (Streamable HTTP), not both")]
    CommandAndUrl(ProviderName),
    #[error("provider '{0}': an mcp provider needs `command` (stdio) or `url` (Streamable HTTP)")]
    NoCommandOrUrl(ProviderName),
    #[error("provider '{0}': `headers` apply only to a `url` provider")]
    HeadersWithoutUrl(ProviderName),
    #[error(
        "provider '{0}': `auth` applies only to a `url` provider (a `command` child gets its secrets through `env`)"
    )]
    AuthWithoutUrl(ProviderName),
    #[error(
        "provider '{0}': `auth: {{ kind: token_exchange }}` cannot serve an mcp provider: its connection is opened and its tools listed before any caller, and one connection carries every caller's requests; use `kind: client_credentials` (the gateway's own token), or reach the server's API through an `http` dependency, where each request carries its caller's exchanged token"
    )]
    TokenExchangeOnMcp(ProviderName),
    #[error(
        "provider '{name}': `headers` sets {header}, which `auth` sends: remove it from `headers`"
    )]
    AuthorizationWithAuth { name: ProviderName, header: String },
    #[error("provider '{name}': instances is {instances}; give 1 to {MAX_INSTANCES} children")]
    Instances { name: ProviderName, instances: u32 },
    #[error(
        "provider '{name}': max_instances is {max}; give {instances} (instances) to {MAX_INSTANCES} children"
    )]
    MaxInstances {
        name: ProviderName,
        max: u32,
        instances: u32,
    },
    #[error(
        "provider '{name}': `scale_up_at` and `scale_down_after_ms` apply only to a pool that grows: give `max_instances` above `instances` ({instances})"
    )]
    ScalingWithoutGrowth { name: ProviderName, instances: u32 },
    #[error(
        "provider '{name}': scale_up_at is {scale_up_at}; give 1 to {MAX_SCALE_UP_AT} calls in flight per child"
    )]
    ScaleUpAt {
        name: ProviderName,
        scale_up_at: u32,
    },
    #[error(
        "provider '{name}': scale_down_after_ms is {ms}; give {MIN_SCALE_DOWN_AFTER_MS} to {MAX_SCALE_DOWN_AFTER_MS} (a day)"
    )]
    ScaleDownAfter { name: ProviderName, ms: u64 },
    #[error(
        "provider '{name}': env_passthrough '{variable}' is not an environment variable name (letters, digits and _, not starting with a digit)"
    )]
    EnvPassthrough {
        name: ProviderName,
        variable: String,
    },
    #[error(
        "provider '{0}': a legacy SSE server (a `url` ending in /sse) speaks only the handshake era: remove `protocol`, or give its Streamable HTTP url"
    )]
    ProtocolOnSse(ProviderName),
    #[error("provider '{name}': url '{url}' must start with http:// or https://")]
    UrlScheme { name: ProviderName, url: String },
    #[error(
        "provider '{0}': `args`, `env`, `env_passthrough`, `cwd`, `instances`, `max_instances`, `scale_up_at` and `scale_down_after_ms` apply only to a `command` provider (a pool of children; a remote server scales on its own side)"
    )]
    PoolFieldsOnUrl(ProviderName),
}

impl TryFrom<McpFields> for McpProviderConfig {
    type Error = McpEntryError;
    fn try_from(f: McpFields) -> Result<Self, McpEntryError> {
        let name = f.common.name.clone();
        let transport = match (f.command, f.url) {
            (Some(_), Some(_)) => return Err(McpEntryError::CommandAndUrl(name)),
            (None, None) => return Err(McpEntryError::NoCommandOrUrl(name)),
            (Some(_), None) if !f.headers.is_empty() => {
                return Err(McpEntryError::HeadersWithoutUrl(name));
            }
            (Some(_), None) if f.auth.is_some() => {
                return Err(McpEntryError::AuthWithoutUrl(name));
            }
            (Some(command), None) => {
                let instances = f.instances.unwrap_or(1);
                if !(1..=MAX_INSTANCES).contains(&instances) {
                    return Err(McpEntryError::Instances { name, instances });
                }
                let growth = growth(
                    &name,
                    instances,
                    f.max_instances,
                    f.scale_up_at,
                    f.scale_down_after_ms,
                )?;
                if let Some(bad) = f.env_passthrough.iter().find(|n| !is_env_name(n)) {
                    return Err(McpEntryError::EnvPassthrough {
                        name,
                        variable: bad.clone(),
                    });
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
                    return Err(McpEntryError::UrlScheme { name, url });
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
                    return Err(McpEntryError::PoolFieldsOnUrl(name));
                }
                if let Some(auth) = &f.auth {
                    if matches!(auth, UpstreamAuth::TokenExchange { .. }) {
                        return Err(McpEntryError::TokenExchangeOnMcp(name));
                    }
                    if let Some(header) = authorization_header(&f.headers) {
                        return Err(McpEntryError::AuthorizationWithAuth {
                            header: header.to_owned(),
                            name,
                        });
                    }
                }
                let http = HttpTransport {
                    url,
                    headers: f.headers,
                    auth: f.auth,
                };
                if is_sse_url(&http.url) {
                    if f.protocol != UpstreamProtocol::Handshake {
                        return Err(McpEntryError::ProtocolOnSse(name));
                    }
                    McpTransport::LegacySse(http)
                } else {
                    McpTransport::StreamableHttp(http)
                }
            }
        };
        Ok(McpProviderConfig {
            common: f.common,
            transport,
            session_per_client: f.session_per_client,
            protocol: f.protocol,
        })
    }
}

impl From<McpProviderConfig> for McpFields {
    fn from(c: McpProviderConfig) -> McpFields {
        let mut f = McpFields {
            common: c.common,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            env_passthrough: Vec::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            auth: None,
            instances: None,
            max_instances: None,
            scale_up_at: None,
            scale_down_after_ms: None,
            session_per_client: c.session_per_client,
            protocol: c.protocol,
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
                f.auth = h.auth;
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
) -> Result<Option<Growth>, McpEntryError> {
    let name = name.clone();
    let max = max_instances.unwrap_or(instances);
    if !(instances..=MAX_INSTANCES).contains(&max) {
        return Err(McpEntryError::MaxInstances {
            name,
            max,
            instances,
        });
    }
    if max == instances {
        return match (scale_up_at, scale_down_after_ms) {
            (None, None) => Ok(None),
            _ => Err(McpEntryError::ScalingWithoutGrowth { name, instances }),
        };
    }
    let scale_up_at = scale_up_at.unwrap_or(Growth::DEFAULT_SCALE_UP_AT);
    if !(1..=MAX_SCALE_UP_AT).contains(&scale_up_at) {
        return Err(McpEntryError::ScaleUpAt { name, scale_up_at });
    }
    let scale_down_after = match scale_down_after_ms {
        None => Growth::DEFAULT_SCALE_DOWN_AFTER,
        Some(ms) if (MIN_SCALE_DOWN_AFTER_MS..=MAX_SCALE_DOWN_AFTER_MS).contains(&ms) => {
            Duration::from_millis(ms)
        }
        Some(ms) => return Err(McpEntryError::ScaleDownAfter { name, ms }),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_era_spoken_upstream_is_the_handshake_unless_asked_and_never_over_sse() {
        let read = |yaml: &str| serde_saphyr::from_str::<McpProviderConfig>(yaml);
        let plain = read("{ name: p, command: x }").unwrap();
        assert_eq!(plain.protocol, UpstreamProtocol::Handshake);
        for (given, era) in [
            ("handshake", UpstreamProtocol::Handshake),
            ("'2026-07-28'", UpstreamProtocol::Stateless),
            ("auto", UpstreamProtocol::Auto),
        ] {
            let config = read(&format!(
                "{{ name: p, url: 'http://h/mcp', protocol: {given} }}"
            ));
            assert_eq!(config.unwrap().protocol, era, "{given}");
        }
        assert!(read("{ name: p, command: x, protocol: '2025-11-25' }").is_err());
        let sse = read("{ name: p, url: 'http://h/sse', protocol: auto }").unwrap_err();
        assert!(sse.to_string().contains("legacy SSE"), "{sse}");
        assert!(read("{ name: p, url: 'http://h/sse', protocol: handshake }").is_ok());
        // Written back only when not the default.
        let yaml =
            serde_saphyr::to_string(&read("{ name: p, command: x, protocol: auto }").unwrap())
                .unwrap();
        assert!(yaml.contains("protocol: auto"), "{yaml}");
        let yaml = serde_saphyr::to_string(&plain).unwrap();
        assert!(!yaml.contains("protocol"), "{yaml}");
    }

    #[test]
    fn auth_takes_client_credentials_on_a_url_only() {
        let read = |yaml: &str| serde_saphyr::from_str::<McpProviderConfig>(yaml);
        let auth = "auth: { kind: client_credentials, token_url: 'https://i/t', client_id: gw, client_secret_env: S }";
        let config = read(&format!("{{ name: p, url: 'http://h/mcp', {auth} }}")).unwrap();
        let McpTransport::StreamableHttp(http) = &config.transport else {
            panic!("not http")
        };
        assert_eq!(
            http.auth.as_ref().map(UpstreamAuth::kind),
            Some("client_credentials")
        );
        let yaml = serde_saphyr::to_string(&config).unwrap();
        assert_eq!(read(&yaml).unwrap(), config, "{yaml}");
        assert!(read(&format!("{{ name: p, url: 'http://h/sse', {auth} }}")).is_ok());
        for (yaml, why) in [
            (
                format!("{{ name: p, command: x, {auth} }}"),
                "provider 'p': `auth` applies only to a `url` provider",
            ),
            (
                format!(
                    "{{ name: p, url: 'http://h/mcp', {} }}",
                    auth.replace("client_credentials", "token_exchange")
                ),
                "provider 'p': `auth: { kind: token_exchange }` cannot serve an mcp provider",
            ),
            (
                format!(
                    "{{ name: p, url: 'http://h/mcp', headers: {{ Authorization: x }}, {auth} }}"
                ),
                "provider 'p': `headers` sets Authorization, which `auth` sends",
            ),
        ] {
            let error = read(&yaml).unwrap_err().to_string();
            assert!(error.contains(why), "{yaml}: {error}");
        }
    }

    #[test]
    fn sse_urls_by_path() {
        assert!(is_sse_url("http://h:1/sse"));
        assert!(is_sse_url("http://h:1/x/sse/?token=1"));
        assert!(!is_sse_url("http://h:1/mcp"));
        assert!(!is_sse_url("http://h:1/mcp?x=/sse"));
    }

    fn stdio(yaml: &str) -> Result<StdioTransport, serde_saphyr::Error> {
        let config: McpProviderConfig =
            serde_saphyr::from_str(&format!("{{ name: p, command: x, {yaml} }}"))?;
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
            let err = stdio(&format!("env_passthrough: {bad}"))
                .unwrap_err()
                .to_string();
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
            let err = stdio(&format!("instances: {bad}")).unwrap_err().to_string();
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
            let err = stdio(bad).unwrap_err().to_string();
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
