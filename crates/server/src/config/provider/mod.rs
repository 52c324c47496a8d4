//! Provider entries: one enum variant per `kind`, each holding [`ProviderCommon`] (what every
//! kind has: name, setup hint, output checks, limits, served names, `when`) and its own fields,
//! so a field of another kind is an unknown field with its position, not a rule written by
//! hand.
//!
//! YAML stays flat (`kind: mcp` beside `command:` and `limits:`): the common fields are
//! flattened into each kind, and `entry.rs` refuses a key the kind does not have before
//! anything else is read. Each kind's file holds its struct, its rules and their tests.

mod cypher;
mod entry;
mod grpc;
mod http;
mod mcp;
mod search;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use self::cypher::{CypherError, CypherProviderConfig, CypherTool};
pub use self::grpc::{GrpcAddressError, GrpcProviderConfig, GrpcTls, check_grpc_address};
pub use self::http::{HttpError, HttpProviderConfig, HttpTool};
pub use self::mcp::{
    Growth, HttpTransport, McpProviderConfig, McpTransport, StdioTransport, UpstreamProtocol,
};
pub use self::search::{RootKind, SearchError, SearchProviderConfig, SearchRoot};
use super::limits::ProviderLimits;
use super::naming::{Expose, IDENTIFIER_RULE, NamingError, check_tool_prefix, is_identifier};
use super::resilience::{Resilience, ResilienceError};
use super::types::{OutputValidation, ProviderName, optional_text};
use super::when::{When, WhenError};

/// One provider of tools; `kind` selects the variant.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase", from = "entry::ProviderConfig")]
pub enum ProviderConfig {
    /// An MCP server, over stdio (`command`) or HTTP (`url`).
    Mcp(McpProviderConfig),
    /// Cypher queries declared as tools, run against a `bolt` dependency.
    Cypher(CypherProviderConfig),
    /// Calls of an HTTP API declared as tools (or imported from its OpenAPI document).
    Http(HttpProviderConfig),
    /// A provider process speaking the gRPC Provider contract (`proto/`).
    Grpc(GrpcProviderConfig),
    /// Lexical (BM25) search over local folders, built in (`config/provider/search.rs`).
    Search(SearchProviderConfig),
}

/// The keys an entry of one kind may have, its own and the common ones, in the order the
/// message about another key lists them (`entry.rs` refuses any other).
pub trait EntryKeys {
    const KEYS: &'static [&'static str];
}

/// What every kind of provider has, written beside the kind's own fields.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ProviderCommon {
    pub name: ProviderName,
    /// Said in /health and in errors while the provider is unavailable: what to start.
    #[serde(default, deserialize_with = "optional_text")]
    pub setup_hint: Option<String>,
    /// Results checked against each tool's output schema (default strict).
    #[serde(default)]
    pub validate_output: OutputValidation,
    /// How many calls this provider and its tools take at once, and for how long.
    #[serde(default)]
    pub limits: ProviderLimits,
    /// How failures of its upstream are contained and read-only results shared
    /// (`config/resilience.rs`).
    #[serde(default, skip_serializing_if = "Resilience::is_default")]
    pub resilience: Resilience,
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

impl ProviderCommon {
    /// An entry named `name`, every other common field at its default.
    pub fn named(name: ProviderName) -> ProviderCommon {
        ProviderCommon {
            name,
            setup_hint: None,
            validate_output: OutputValidation::default(),
            limits: ProviderLimits::default(),
            resilience: Resilience::default(),
            tool_prefix: None,
            expose: Expose::default(),
            when: None,
        }
    }

    /// The rules serde cannot say: a prefix that begins a tool name, a condition that names a
    /// variable, served names that are tool names.
    fn check(&self) -> Result<(), ProviderError> {
        if let Some(prefix) = &self.tool_prefix {
            check_tool_prefix(prefix)?;
        }
        if let Some(when) = &self.when {
            when.check()?;
        }
        self.expose.check()?;
        self.resilience.check()?;
        Ok(())
    }
}

/// Why an entry, taken by itself, cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error(transparent)]
    Naming(#[from] NamingError),
    #[error(transparent)]
    When(#[from] WhenError),
    #[error(transparent)]
    Cypher(#[from] CypherError),
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error(transparent)]
    Grpc(#[from] GrpcAddressError),
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error(transparent)]
    Resilience(#[from] ResilienceError),
}

impl ProviderConfig {
    /// The fields every kind has.
    pub fn common(&self) -> &ProviderCommon {
        match self {
            ProviderConfig::Mcp(p) => &p.common,
            ProviderConfig::Cypher(p) => &p.common,
            ProviderConfig::Http(p) => &p.common,
            ProviderConfig::Grpc(p) => &p.common,
            ProviderConfig::Search(p) => &p.common,
        }
    }

    fn common_mut(&mut self) -> &mut ProviderCommon {
        match self {
            ProviderConfig::Mcp(p) => &mut p.common,
            ProviderConfig::Cypher(p) => &mut p.common,
            ProviderConfig::Http(p) => &mut p.common,
            ProviderConfig::Grpc(p) => &mut p.common,
            ProviderConfig::Search(p) => &mut p.common,
        }
    }

    pub fn name(&self) -> &ProviderName {
        &self.common().name
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
            ProviderConfig::Cypher(p) => Some(&p.dependency),
            ProviderConfig::Http(p) => Some(&p.dependency),
            ProviderConfig::Mcp(_) | ProviderConfig::Grpc(_) | ProviderConfig::Search(_) => None,
        }
    }

    /// The kind that entry of `dependencies` must be: `bolt` for cypher, `http` for http.
    pub fn dependency_kind(&self) -> Option<&'static str> {
        match self {
            ProviderConfig::Cypher(_) => Some("bolt"),
            ProviderConfig::Http(_) => Some("http"),
            ProviderConfig::Mcp(_) | ProviderConfig::Grpc(_) | ProviderConfig::Search(_) => None,
        }
    }

    /// The entry's `when` condition, if it has one.
    pub fn when(&self) -> Option<&When> {
        self.common().when.as_ref()
    }

    /// This provider's rule for results that violate their output schema.
    pub fn validate_output(&self) -> OutputValidation {
        self.common().validate_output
    }

    /// How many calls this provider and its tools take at once, and for how long.
    pub fn limits(&self) -> &ProviderLimits {
        &self.common().limits
    }

    pub fn resilience(&self) -> &Resilience {
        &self.common().resilience
    }

    /// Which of this provider's tools are served, under which names and descriptions.
    pub fn expose(&self) -> &Expose {
        &self.common().expose
    }

    /// Prepended to every served name of this provider's tools.
    pub fn tool_prefix(&self) -> Option<&str> {
        self.common().tool_prefix.as_deref()
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
        let common = entry.common_mut();
        common.limits = ProviderLimits::default();
        // Outlier ejection is the pool's own, so it stays: a change of it rebuilds the pool.
        common.resilience = Resilience {
            outlier: common.resilience.outlier.clone(),
            ..Resilience::default()
        };
        common.expose = Expose::default();
        common.tool_prefix = None;
        entry
    }

    /// The rules of the entry by itself that serde cannot say: the common ones, then its
    /// kind's (an mcp entry's are checked while it is read). Rules that need other entries
    /// (its dependency) are `load.rs`'s.
    pub fn check(&self) -> Result<(), ProviderError> {
        self.common().check()?;
        match self {
            ProviderConfig::Mcp(_) => {}
            ProviderConfig::Cypher(p) => p.check()?,
            ProviderConfig::Http(p) => p.check()?,
            ProviderConfig::Grpc(p) => check_grpc_address(&p.address)?,
            ProviderConfig::Search(p) => p.check()?,
        }
        Ok(())
    }
}

/// Why the tools an entry declares (cypher, http) cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeclaredToolError {
    #[error("declares no tools")]
    NoTools,
    #[error("tool '{0}': not a tool name ({IDENTIFIER_RULE})")]
    NotToolName(String),
    #[error("tool '{0}': declared twice")]
    Twice(String),
    #[error("tool '{0}': input_schema must have `type: object`")]
    InputNotObject(String),
}

/// Declared tools are named here, so the identifier rule holds them at once (names that come
/// from an upstream follow `identifier_names`); each is declared once and takes an object.
fn check_declared_tools<'a>(
    tools: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Result<(), DeclaredToolError> {
    let mut names = BTreeSet::new();
    for (name, input_schema) in tools {
        if !is_identifier(name) {
            return Err(DeclaredToolError::NotToolName(name.to_owned()));
        }
        if !names.insert(name) {
            return Err(DeclaredToolError::Twice(name.to_owned()));
        }
        if input_schema["type"] != "object" {
            return Err(DeclaredToolError::InputNotObject(name.to_owned()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn read(yaml: &str) -> Result<ProviderConfig, serde_saphyr::Error> {
        serde_saphyr::from_str(yaml)
    }

    /// The keys an entry is written back with, `kind` aside.
    fn written(yaml: &str) -> BTreeSet<String> {
        let entry = serde_json::to_value(read(yaml).unwrap()).unwrap();
        let keys = entry.as_object().unwrap().keys();
        keys.filter(|k| *k != "kind").cloned().collect()
    }

    const COMMON: &str = "setup_hint: h, validate_output: warn, limits: { max_concurrent: 1 }, resilience: { read_only: [r] }, tool_prefix: p_, expose: { include: [a] }, when: { env_set: HOME }";

    /// `KEYS` (what the message about another key lists, and what `entry.rs` lets through) is
    /// exactly what each kind reads and writes: an entry with every field set comes back with
    /// every key of the list and no other.
    #[test]
    fn the_keys_of_each_kind_are_the_fields_it_has() {
        let kinds: [(&[&str], &[String]); 5] = [
            (
                McpProviderConfig::KEYS,
                &[
                    format!(
                        "{{ kind: mcp, name: m, command: x, args: [a], env: {{ A: b }}, env_passthrough: [X], cwd: d, instances: 2, max_instances: 4, scale_up_at: 3, scale_down_after_ms: 500, session_per_client: true, protocol: auto, {COMMON} }}"
                    ),
                    "{ kind: mcp, name: r, url: 'http://h/mcp', headers: { X: y }, auth: { kind: client_credentials, token_url: 'https://i/t', client_id: c, client_secret_env: S } }".to_owned(),
                ],
            ),
            (
                CypherProviderConfig::KEYS,
                &[format!(
                    "{{ kind: cypher, name: q, dependency: db, tools: [], {COMMON} }}"
                )],
            ),
            (
                HttpProviderConfig::KEYS,
                &[format!(
                    "{{ kind: http, name: w, dependency: api, tools: [], openapi: o.yaml, include: [a], exclude: [b], usage_tool: u, {COMMON} }}"
                )],
            ),
            (
                GrpcProviderConfig::KEYS,
                &[format!(
                    "{{ kind: grpc, name: g, address: 'h:1', tls: {{ domain: d }}, deadline_ms: 1, heartbeat_interval_ms: 2, max_retries: 3, retry_backoff_ms: 4, metadata: {{ a: b }}, {COMMON} }}"
                )],
            ),
            (
                SearchProviderConfig::KEYS,
                &[format!(
                    "{{ kind: search, name: s, roots: [], index_dir: i, max_file_bytes: 1, max_read_bytes: 2, watch: false, {COMMON} }}"
                )],
            ),
        ];
        for (keys, entries) in kinds {
            let listed: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
            assert_eq!(listed.len(), keys.len(), "{keys:?} lists a key twice");
            let read: BTreeSet<String> = entries.iter().flat_map(|e| written(e)).collect();
            assert_eq!(listed, read, "{entries:?}");
        }
    }

    /// What the service asks of any entry, read from the fields every kind has.
    #[test]
    fn every_kind_answers_from_its_common_fields() {
        let entries = [
            ("mcp", "command: x", None, None),
            (
                "cypher",
                "dependency: db, tools: []",
                Some("db"),
                Some("bolt"),
            ),
            ("http", "dependency: api", Some("api"), Some("http")),
            ("grpc", "address: 'h:1'", None, None),
            ("search", "roots: []", None, None),
        ];
        for (kind, own, dependency, dependency_kind) in entries {
            let entry = read(&format!(
                "{{ kind: {kind}, name: p-{kind}, {own}, validate_output: warn, limits: {{ max_concurrent: 2 }}, tool_prefix: t_, expose: {{ exclude: [x] }}, when: {{ env_unset: X }} }}"
            ))
            .unwrap();
            assert_eq!(entry.kind(), kind);
            assert_eq!(entry.name().as_str(), format!("p-{kind}"));
            assert_eq!(entry.dependency(), dependency, "{kind}");
            assert_eq!(entry.dependency_kind(), dependency_kind, "{kind}");
            assert_eq!(entry.validate_output(), OutputValidation::Warn, "{kind}");
            assert_eq!(entry.limits().max_concurrent, Some(2), "{kind}");
            assert_eq!(entry.tool_prefix(), Some("t_"), "{kind}");
            assert_eq!(entry.expose().exclude, ["x"], "{kind}");
            assert_eq!(
                entry.when().and_then(|w| w.env_unset.as_deref()),
                Some("X"),
                "{kind}"
            );
            assert_eq!(entry.maps_names(false), kind == "grpc", "{kind}");
            assert!(entry.maps_names(true), "{kind}");
        }
    }

    /// A key the kind does not have is refused first, before a missing or wrong field, with
    /// the keys the kind has in the order they were always listed.
    #[test]
    fn a_key_of_another_kind_is_refused_before_anything_else() {
        let e = read("{ kind: cypher, name: q, url: x }")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown field `url`, expected one of name, dependency, tools, setup_hint, validate_output, limits, resilience, tool_prefix, expose, when"),
            "{e}"
        );
        let e = read("{ kind: grpc, name: g, adress: 'h:1', deadline_ms: x }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `adress`, expected one of name, address, tls, deadline_ms, heartbeat_interval_ms, max_retries, retry_backoff_ms, metadata, setup_hint, validate_output, limits, resilience, tool_prefix, expose, when"), "{e}");
        let e = read("{ kind: mcp, name: m, comand: x }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `comand`, expected one of name, command, args, env, env_passthrough, cwd, url, headers, auth, setup_hint, instances, max_instances, scale_up_at, scale_down_after_ms, session_per_client, protocol, validate_output, limits, resilience, tool_prefix, expose, when"), "{e}");
        let e = read("{ kind: grpc, name: g, address: 'h:1', 7: x }")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `7`"), "{e}");
        let e = read("1").unwrap_err().to_string();
        assert!(
            e.contains("expected internally tagged enum ProviderConfig"),
            "{e}"
        );
        let e = read("{ kind: soap, name: a }").unwrap_err().to_string();
        assert!(
            e.contains("unknown variant `soap`, expected one of mcp, cypher, http, grpc, search"),
            "{e}"
        );
    }

    #[test]
    fn the_common_rules_come_before_the_kind_s() {
        let entry = read("{ kind: search, name: s, roots: [], tool_prefix: a- }").unwrap();
        assert_eq!(
            entry.check().unwrap_err().to_string(),
            "tool_prefix 'a-' must be the start of a tool name (letters, digits and '_', not starting with a digit, at most 128 characters)"
        );
        let entry = read("{ kind: search, name: s, roots: [], when: {} }").unwrap();
        assert_eq!(
            entry.check().unwrap_err().to_string(),
            "`when` needs `env_set` or `env_unset`"
        );
        let entry = read("{ kind: search, name: s, roots: [] }").unwrap();
        assert_eq!(
            entry.check().unwrap_err().to_string(),
            "a search provider needs at least one entry in `roots`"
        );
        let running = read("{ kind: grpc, name: g, address: 'h:1', tool_prefix: p_, limits: { max_concurrent: 1 }, expose: { include: [a] }, setup_hint: h }")
            .unwrap()
            .as_running();
        assert_eq!(
            running.common(),
            &ProviderCommon {
                setup_hint: Some("h".into()),
                ..ProviderCommon::named(running.name().clone())
            }
        );
    }
}
