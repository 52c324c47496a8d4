//! `kind: http`: calls of an HTTP API (an `http` entry of `dependencies`) declared as tools or
//! imported from its OpenAPI document; its rules (something to serve, known methods, JSON
//! pointers, tool names).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::super::naming::{IDENTIFIER_RULE, is_identifier};
use super::super::types::{optional_text, text, text_map, texts};
use super::{DeclaredToolError, EntryKeys, ProviderCommon, check_declared_tools};

/// `kind: http`. Read as an entry of [`super::ProviderConfig`], which refuses a key of another
/// kind first.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct HttpProviderConfig {
    #[serde(flatten)]
    pub common: ProviderCommon,
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
}

impl EntryKeys for HttpProviderConfig {
    const KEYS: &'static [&'static str] = &[
        "name",
        "dependency",
        "tools",
        "openapi",
        "include",
        "exclude",
        "usage_tool",
        "setup_hint",
        "validate_output",
        "limits",
        "resilience",
        "tool_prefix",
        "expose",
        "when",
    ];
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

/// The methods a declared tool may call with.
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// Why an http entry cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error(transparent)]
    Tools(#[from] DeclaredToolError),
    #[error("tool '{tool}': method '{method}' is not one of GET, POST, PUT, PATCH, DELETE")]
    Method { tool: String, method: String },
    #[error("tool '{tool}': result '{pointer}' is not a JSON pointer (\"\" or starting with '/')")]
    ResultNotPointer { tool: String, pointer: String },
    #[error("usage_tool '{0}' is not a tool name ({IDENTIFIER_RULE})")]
    UsageToolName(String),
}

impl HttpProviderConfig {
    /// Something to serve (tools, an OpenAPI document or a usage tool), declared tools that
    /// call a known method and select with a JSON pointer, and names that are tool names.
    pub fn check(&self) -> Result<(), HttpError> {
        if self.tools.is_empty() && self.openapi.is_none() && self.usage_tool.is_none() {
            return Err(DeclaredToolError::NoTools.into());
        }
        for tool in &self.tools {
            check_http_tool(tool)?;
        }
        if let Some(usage) = &self.usage_tool
            && !is_identifier(usage)
        {
            return Err(HttpError::UsageToolName(usage.clone()));
        }
        check_declared_tools(
            self.tools
                .iter()
                .map(|t| (t.name.as_str(), &t.input_schema)),
        )?;
        Ok(())
    }
}

fn check_http_tool(tool: &HttpTool) -> Result<(), HttpError> {
    if let Some(method) = &tool.method
        && !METHODS.contains(&method.to_ascii_uppercase().as_str())
    {
        return Err(HttpError::Method {
            tool: tool.name.clone(),
            method: method.clone(),
        });
    }
    if let Some(pointer) = &tool.result
        && !(pointer.is_empty() || pointer.starts_with('/'))
    {
        return Err(HttpError::ResultNotPointer {
            tool: tool.name.clone(),
            pointer: pointer.clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(yaml: &str) -> String {
        let entry: HttpProviderConfig = serde_saphyr::from_str(yaml).unwrap();
        entry.check().unwrap_err().to_string()
    }

    #[test]
    fn an_entry_serves_something_with_known_methods_and_json_pointers() {
        let tool = |fields: &str| {
            format!(
                "{{ name: w, dependency: api, tools: [{{ name: t, description: d, input_schema: {{ type: object }}, path: /x, {fields} }}] }}"
            )
        };
        for fine in ["method: get", "method: DELETE", "result: ''", "result: /r"] {
            let entry: HttpProviderConfig = serde_saphyr::from_str(&tool(fine)).unwrap();
            assert_eq!(entry.check(), Ok(()), "{fine}");
        }
        assert_eq!(
            refused(&tool("method: TRACE")),
            "tool 't': method 'TRACE' is not one of GET, POST, PUT, PATCH, DELETE"
        );
        assert_eq!(
            refused(&tool("result: choices")),
            "tool 't': result 'choices' is not a JSON pointer (\"\" or starting with '/')"
        );
        assert_eq!(refused("{ name: w, dependency: api }"), "declares no tools");
        assert_eq!(
            refused("{ name: w, dependency: api, usage_tool: 'get usage' }"),
            "usage_tool 'get usage' is not a tool name (letters, digits and '_', not starting with a digit, at most 128 characters)"
        );
        let only_openapi: HttpProviderConfig =
            serde_saphyr::from_str("{ name: w, dependency: api, openapi: o.yaml }").unwrap();
        assert_eq!(only_openapi.check(), Ok(()));
    }
}
