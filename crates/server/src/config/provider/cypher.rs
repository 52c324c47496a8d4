//! `kind: cypher`: Cypher queries declared as tools, run against a `bolt` entry of
//! `dependencies`; its rules (a timeout a database may take, tools that are declared, named as
//! tools and take an object).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::limits::CypherLimitError;
use super::super::types::{optional_text, text};
use super::{DeclaredToolError, EntryKeys, ProviderCommon, check_declared_tools};

/// `kind: cypher`. Read as an entry of [`super::ProviderConfig`], which refuses a key of another
/// kind first.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct CypherProviderConfig {
    #[serde(flatten)]
    pub common: ProviderCommon,
    /// The `bolt` entry of `dependencies` the queries run against.
    #[serde(deserialize_with = "text")]
    pub dependency: String,
    pub tools: Vec<CypherTool>,
}

impl EntryKeys for CypherProviderConfig {
    const KEYS: &'static [&'static str] = &[
        "name",
        "dependency",
        "tools",
        "setup_hint",
        "validate_output",
        "limits",
        "resilience",
        "tool_prefix",
        "expose",
        "when",
    ];
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

/// Why a cypher entry cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CypherError {
    #[error(transparent)]
    Limits(#[from] CypherLimitError),
    #[error(transparent)]
    Tools(#[from] DeclaredToolError),
}

impl CypherProviderConfig {
    /// No timeout a database should not take, and at least one tool, each declared once, named
    /// as a tool and taking an object.
    pub fn check(&self) -> Result<(), CypherError> {
        self.common.limits.check_cypher()?;
        if self.tools.is_empty() {
            return Err(DeclaredToolError::NoTools.into());
        }
        check_declared_tools(
            self.tools
                .iter()
                .map(|t| (t.name.as_str(), &t.input_schema)),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(yaml: &str) -> CypherProviderConfig {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const TOOL: &str = "{ name: t, description: d, input_schema: { type: object }, query: q }";

    #[test]
    fn tools_are_declared_once_named_as_tools_and_take_an_object() {
        let fine = entry(&format!("{{ name: q, dependency: db, tools: [{TOOL}] }}"));
        assert_eq!(fine.check(), Ok(()));
        let refused = |yaml: &str| entry(yaml).check().unwrap_err().to_string();
        assert_eq!(
            refused("{ name: q, dependency: db, tools: [] }"),
            "declares no tools"
        );
        assert_eq!(
            refused(&format!(
                "{{ name: q, dependency: db, tools: [{TOOL}, {TOOL}] }}"
            )),
            "tool 't': declared twice"
        );
        assert_eq!(
            refused(
                "{ name: q, dependency: db, tools: [{ name: get-t, description: d, input_schema: { type: object }, query: q }] }"
            ),
            "tool 'get-t': not a tool name (letters, digits and '_', not starting with a digit, at most 128 characters)"
        );
        assert_eq!(
            refused(
                "{ name: q, dependency: db, tools: [{ name: t, description: d, input_schema: { type: string }, query: q }] }"
            ),
            "tool 't': input_schema must have `type: object`"
        );
        assert_eq!(
            refused(&format!(
                "{{ name: q, dependency: db, limits: {{ timeout_ms: 60001 }}, tools: [{TOOL}] }}"
            )),
            "limits.timeout_ms may be at most 60000 for a cypher provider"
        );
    }
}
