//! The names tools are served under: a provider's `expose` (which of its tools are served,
//! renamed, re-described) and `tool_prefix`, the service's `on_name_clash` and
//! `identifier_names`, and the identifier rule they follow.
//!
//! Every key of `expose` names a tool as its provider calls it (the upstream name), so a rule
//! keeps meaning the same tool whatever name it ends up served under.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::limits::wildcard_match;
use super::types::{text_map, texts};

/// The longest tool name MCP clients are asked to accept (SEP-986).
pub const MAX_TOOL_NAME: usize = 128;

/// What a service does when two providers offer one tool name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnNameClash {
    /// Refuse to start (or to reload); a clash appearing while running keeps the first
    /// provider's tool and is reported in /health.
    #[default]
    Error,
    /// Serve each clashing tool as `{provider}_{name}` (the provider's name with `-` as `_`).
    Prefix,
}

/// A provider's `expose`: which of its tools are served, and under which name and description.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expose {
    /// Only the tools matching one of these (names or globs with `*` and `?`); empty: all.
    #[serde(
        default,
        deserialize_with = "texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub include: Vec<String>,
    /// Never the tools matching one of these (wins over `include`).
    #[serde(
        default,
        deserialize_with = "texts",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub exclude: Vec<String>,
    /// Upstream name → served name; calls still reach the upstream by its own name.
    #[serde(
        default,
        deserialize_with = "text_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub rename: BTreeMap<String, String>,
    /// Upstream name → the description served instead of the upstream's.
    #[serde(
        default,
        deserialize_with = "text_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub describe: BTreeMap<String, String>,
}

impl Expose {
    pub fn is_empty(&self) -> bool {
        *self == Expose::default()
    }

    /// Whether the tool the upstream calls `upstream` is served at all.
    pub fn shows(&self, upstream: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| wildcard_match(p, upstream)))
            && !self.exclude.iter().any(|p| wildcard_match(p, upstream))
    }

    /// The rules a config can get wrong before any tool is known: served names that are not
    /// identifiers, empty descriptions.
    pub fn check(&self) -> Result<(), NamingError> {
        for (old, new) in &self.rename {
            if !is_identifier(new) {
                return Err(NamingError::RenamedNotToolName {
                    upstream: old.clone(),
                    served: new.clone(),
                });
            }
        }
        if let Some((name, _)) = self.describe.iter().find(|(_, t)| t.trim().is_empty()) {
            return Err(NamingError::EmptyDescription(name.clone()));
        }
        Ok(())
    }
}

/// Why the names or descriptions an entry serves its tools under cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamingError {
    #[error("expose.rename '{upstream}': '{served}' is not a tool name ({IDENTIFIER_RULE})")]
    RenamedNotToolName { upstream: String, served: String },
    #[error("expose.describe '{0}': the description is empty")]
    EmptyDescription(String),
    #[error("tool_prefix '{0}' must be the start of a tool name ({IDENTIFIER_RULE})")]
    ToolPrefix(String),
}

/// The rule every name a config gives a tool must follow, as messages say it.
pub const IDENTIFIER_RULE: &str =
    "letters, digits and '_', not starting with a digit, at most 128 characters";

/// Whether `name` is an identifier: ASCII letters, digits and `_`, not starting with a digit,
/// 1 to [`MAX_TOOL_NAME`] characters.
pub fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `name` as an identifier: every other character becomes `_`, and a leading digit gets a `_`
/// before it (`get-sum` → `get_sum`, `2fa` → `_2fa`).
pub fn to_identifier(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A `tool_prefix` is prepended as written, so it must begin a valid name.
pub fn check_tool_prefix(prefix: &str) -> Result<(), NamingError> {
    if is_identifier(prefix) {
        Ok(())
    } else {
        Err(NamingError::ToolPrefix(prefix.to_owned()))
    }
}

/// The prefix a clash adds under `on_name_clash: prefix`: the provider's name, `-` as `_`.
pub fn clash_prefix(provider: &str) -> String {
    format!("{}_", to_identifier(provider))
}

/// A tool as its provider's entry and the service's rules serve it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub name: String,
    /// Set when `expose.describe` replaces the upstream's description.
    pub description: Option<String>,
}

/// The name and description the tool the upstream calls `upstream` is served under before any
/// clash, or `None` when it is hidden: `expose` filters, then `rename` (else, with
/// `identifier_names`, the identifier form), then `tool_prefix`.
pub fn served(
    upstream: &str,
    expose: &Expose,
    tool_prefix: Option<&str>,
    identifier_names: bool,
) -> Option<Served> {
    if !expose.shows(upstream) {
        return None;
    }
    let base = match expose.rename.get(upstream) {
        Some(new) => new.clone(),
        None if identifier_names && !is_identifier(upstream) => to_identifier(upstream),
        None => upstream.to_owned(),
    };
    Some(Served {
        name: format!("{}{base}", tool_prefix.unwrap_or_default()),
        description: expose.describe.get(upstream).cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expose(yaml: &str) -> Expose {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn identifiers() {
        for ok in ["echo", "get_sum", "_x", "A1", &"a".repeat(128)] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", "get-sum", "a.b", "1st", "é", "a b", &"a".repeat(129)] {
            assert!(!is_identifier(bad), "{bad}");
        }
        assert_eq!(to_identifier("get-sum"), "get_sum");
        assert_eq!(to_identifier("a.b/c"), "a_b_c");
        assert_eq!(to_identifier("2fa"), "_2fa");
        assert_eq!(to_identifier("echo"), "echo");
        assert!(is_identifier(&to_identifier("été-1")));
        assert_eq!(clash_prefix("code-graph"), "code_graph_");
    }

    #[test]
    fn include_exclude_rename_describe_then_prefix() {
        let e = expose(
            "include: ['get-*', echo]\nexclude: [get-env]\nrename: { echo: say }\ndescribe: { get-sum: Adds. }\n",
        );
        assert_eq!(served("get-env", &e, None, false), None, "excluded");
        assert_eq!(served("add", &e, None, false), None, "not included");
        assert_eq!(
            served("echo", &e, Some("ev_"), true),
            Some(Served {
                name: "ev_say".into(),
                description: None
            })
        );
        assert_eq!(
            served("get-sum", &e, None, false),
            Some(Served {
                name: "get-sum".into(),
                description: Some("Adds.".into())
            }),
            "kept as the upstream names it"
        );
        assert_eq!(served("get-sum", &e, None, true).unwrap().name, "get_sum");
        assert!(!e.is_empty());
        let all = Expose::default();
        assert!(all.is_empty());
        assert_eq!(served("x", &all, None, false).unwrap().name, "x");
    }

    #[test]
    fn a_served_name_must_be_an_identifier() {
        assert!(
            expose("rename: { a: b-c }\n")
                .check()
                .unwrap_err()
                .to_string()
                .contains("'b-c'")
        );
        assert!(expose("describe: { a: ' ' }\n").check().is_err());
        assert!(expose("rename: { get-sum: sum }\n").check().is_ok());
        assert!(check_tool_prefix("ev_").is_ok());
        assert!(check_tool_prefix("ev-").is_err());
        assert!(check_tool_prefix("1_").is_err());
        assert!(serde_saphyr::from_str::<Expose>("hide: [a]\n").is_err());
    }
}
