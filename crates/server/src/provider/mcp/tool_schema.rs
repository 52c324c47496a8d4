//! An MCP `Tool` as the contract lists it: a [`ToolSchema`]. (A `CallToolResult` is read by
//! `provider::output`.)
//!
//! It works on the JSON form of the rmcp types so that fields added by newer protocol
//! versions pass through untouched.

use contract::ToolSchema;
use serde_json::{Value, json};

/// An MCP tool as the contract lists it.
pub fn tool_schema(tool: &rmcp::model::Tool) -> ToolSchema {
    let json = serde_json::to_value(tool).unwrap_or(Value::Null);
    let description = json["description"]
        .as_str()
        .or_else(|| json["title"].as_str())
        .unwrap_or_default()
        .to_owned();
    let mut input_schema = json
        .get("inputSchema")
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    if input_schema.get("type").is_none() {
        input_schema["type"] = json!("object");
    }
    ToolSchema {
        qualified_name: None,
        name: tool.name.to_string(),
        title: json["title"].as_str().map(str::to_owned),
        output_schema: json.get("outputSchema").filter(|s| s.is_object()).cloned(),
        untyped_result: contract::UntypedResult::McpContent,
        description,
        input_schema,
        annotations: json.get("annotations").filter(|a| !a.is_null()).cloned(),
        icons: json.get("icons").filter(|i| i.is_array()).cloned(),
        score: None,
    }
}
