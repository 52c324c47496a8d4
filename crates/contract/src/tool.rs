//! The bodies that describe tools and ask for one to run, and the qualified name every tool
//! carries (`{provider}.{name}`) with the MCP `_meta` key it travels under.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// The `_meta` key of an MCP `tools/list` entry (and of resources and prompts) holding its
/// qualified name. MCP reserves unprefixed and `*.modelcontextprotocol.*`/`*.mcp.*` names, and
/// from 2025-11-25 asks for reverse-DNS prefixes: this one is derived from the project's home,
/// github.com/mcp-http-gateway (`io.github.<owner>`, as GitHub Pages ownership establishes).
pub const QUALIFIED_NAME_META_KEY: &str = "io.github.mcp-http-gateway/qualified_name";

/// A tool's (or resource's, prompt's) qualified name: `{provider}.{name}`, the provider's
/// configured name and the name the provider gives it. Provider names have no `.`, so the
/// first `.` separates the two.
pub fn qualified_name(provider: &str, name: &str) -> String {
    format!("{provider}.{name}")
}

/// A tool as clients see it. `input_schema` is a JSON Schema with `type: object`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolSchema {
    /// Unique within the service. An identifier (letters, digits, `_`) unless a bridged MCP
    /// server's own name is kept as it is (e.g. `get-sum`; see the configuration's
    /// `identifier_names`).
    pub name: String,
    /// `{provider}.{name}`: the provider's configured name and the tool's name as its provider
    /// gives it (before any mapping, `expose.rename` or prefix), e.g. `hello-rs.echo.v1`. Unique
    /// within the service and stable whatever the served `name` becomes; POST /call-tool takes
    /// it as well as `name`. Always present in GET /tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = true)]
    pub qualified_name: Option<String>,
    /// A human-friendly name (MCP `title`), when the provider gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for people and for agents choosing a tool.
    pub description: String,
    /// JSON Schema of the `arguments` object.
    #[schema(value_type = Object)]
    pub input_schema: Value,
    /// JSON Schema of a successful call's `data`, when the tool declares one (MCP
    /// `outputSchema`); results are checked against it before they are answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub output_schema: Option<Value>,
    /// MCP tool annotations (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
    /// `openWorldHint`, `title`) when the provider has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub annotations: Option<Value>,
    /// Icons for the tool, as its provider gives them (MCP `icons`: `[{src, mimeType?, sizes?,
    /// theme?}]`), for clients that show tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub icons: Option<Value>,
    /// How well the tool matches the query, in answers to GET /tools?q= only (BM25F, plus the
    /// similarity in meaning when the service has a discovery model: higher is better;
    /// comparable within one answer, not across queries). Tools are then ordered by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub score: Option<f64>,
    /// What `data` holds when there is no `output_schema`, so that the service's OpenAPI
    /// document can type it. Set by the provider; not part of GET /tools (a client reads the
    /// typed operation instead).
    #[serde(skip)]
    #[schema(ignore)]
    pub untyped_result: UntypedResult,
}

/// The `data` of a successful call of a tool that declares no output schema.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UntypedResult {
    /// Any JSON value: an HTTP tool's selected result, a Cypher tool's rows, ….
    #[default]
    AnyJson,
    /// An MCP tool's: an object whose `content` holds the tool's content blocks, as MCP
    /// requires every tool result to have them (`ToolSchema`'s provider guarantees it).
    McpContent,
}

/// `data` of GET /tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolsResponse {
    /// The service's name (`service.name` in its config).
    pub service: String,
    /// The service's version (`service.version`, else the gateway's).
    pub version: String,
    /// Every tool of every provider of the service, sorted by name.
    pub tools: Vec<ToolSchema>,
}

/// Body of POST /call-tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolRequest {
    /// The tool to run: its served `name` or its `qualified_name`.
    pub tool: String,
    /// The tool's arguments; an absent value means `{}`.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub arguments: Map<String, Value>,
    /// Optional UUID v4 to use as the request id (takes precedence over `X-Request-Id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    pub request_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qualified_name_is_the_provider_a_dot_and_the_name_as_given() {
        assert_eq!(qualified_name("hello-rs", "echo.v1"), "hello-rs.echo.v1");
    }
}
