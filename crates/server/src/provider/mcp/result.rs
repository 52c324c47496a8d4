//! Translation between MCP's shapes and the contract's: an MCP `Tool` becomes a
//! [`ToolSchema`], a `CallToolResult` becomes the call's `data` or a [`ToolError`].
//!
//! Both work on the JSON form of the rmcp types so that fields added by newer protocol
//! versions pass through untouched.

use contract::ToolSchema;
use serde_json::{Value, json};

use crate::provider::ToolError;

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
    }
}

/// The `data` of a successful call, or the error the tool reported.
///
/// `isError` → EXECUTION_ERROR with the tool's text (INVALID_ARGUMENTS when that text is the
/// server refusing the arguments: [`refuses_arguments`]). Else, for a tool that declares an
/// output schema (`typed`), its `structuredContent`. Else an object holding the tool's content
/// blocks under `content` (MCP requires them of every result, so a client can always read
/// `data.content`) and, beside them, the members of the structured content when that is an
/// object, or else of the only content block when that is text holding a JSON object, so that
/// a JSON answer reads as `data.<field>`. An object with its own `content` member is not
/// spread: it would hide the blocks.
///
/// Takes the result by value: its `structuredContent` becomes `data` as it is, and only the
/// content blocks are serialised, once, so a large result is not copied per call.
pub fn call_data(
    tool: &str,
    result: rmcp::model::CallToolResult,
    typed: bool,
) -> Result<Value, ToolError> {
    let is_error = result.is_error == Some(true);
    if !is_error
        && typed
        && let Some(structured) = result.structured_content
    {
        return Ok(structured);
    }
    let content = serde_json::to_value(&result.content).unwrap_or_else(|_| json!([]));
    if is_error {
        let text = texts(&content);
        let message = if text.is_empty() {
            format!("Tool '{tool}' reported an error")
        } else {
            text
        };
        if refuses_arguments(&message) {
            return Err(ToolError::InvalidArguments(message));
        }
        return Err(ToolError::Execution(message));
    }
    let spread = match result.structured_content {
        Some(Value::Object(members)) => Some(members),
        Some(_) => None,
        None => match content.as_array().map(Vec::as_slice).unwrap_or_default() {
            [only] if only["type"] == "text" => {
                match only["text"].as_str().map(serde_json::from_str) {
                    Some(Ok(Value::Object(members))) => Some(members),
                    _ => None,
                }
            }
            _ => None,
        },
    };
    let mut data = spread
        .filter(|members| !members.contains_key("content"))
        .unwrap_or_default();
    data.insert("content".into(), content);
    Ok(Value::Object(data))
}

/// Whether an `isError` result's text is the server refusing the call's arguments. Since
/// 2025-11-25 a server reports input validation errors as a tool result with `isError` (so a
/// model can correct itself), not as JSON-RPC -32602; the TypeScript SDK writes them as
/// `MCP error -32602: …`. The arguments passed the gateway's copy of the schema, so this is
/// the server's own stricter check, and the fault is still the caller's: 400, not 500.
fn refuses_arguments(text: &str) -> bool {
    text.starts_with("MCP error -32602:")
}

/// The text blocks of a result, joined by newlines.
fn texts(content: &Value) -> String {
    content
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(v: Value) -> rmcp::model::CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn is_error_becomes_execution_error_with_the_text() {
        let r = result(json!({"content": [{"type": "text", "text": "boom"}], "isError": true}));
        match call_data("t", r, false) {
            Err(ToolError::Execution(m)) => assert_eq!(m, "boom"),
            other => panic!("{other:?}"),
        }
    }

    /// server-everything's answer to `get-resource-links {count: 11}` (its limit is 10): the
    /// caller's fault, so INVALID_ARGUMENTS with the server's words; other errors that merely
    /// mention -32602 stay execution errors.
    #[test]
    fn a_server_refusing_the_arguments_is_invalid_arguments() {
        let text = "MCP error -32602: Input validation error: Invalid arguments for tool get-resource-links: Too big: expected number to be <=10 at count";
        let r = result(json!({"content": [{"type": "text", "text": text}], "isError": true}));
        match call_data("get-resource-links", r, false) {
            Err(ToolError::InvalidArguments(m)) => assert_eq!(m, text),
            other => panic!("{other:?}"),
        }
        let r = result(
            json!({"content": [{"type": "text", "text": "the server said MCP error -32602: x"}], "isError": true}),
        );
        assert!(matches!(
            call_data("t", r, false),
            Err(ToolError::Execution(_))
        ));
    }
    /// `isError` wins over `structuredContent`; with no text block the message says so.
    #[test]
    fn is_error_wins_over_structured_content() {
        let r = result(json!({"content": [], "structuredContent": {"b": 2}, "isError": true}));
        match call_data("t", r, false) {
            Err(ToolError::Execution(m)) => assert_eq!(m, "Tool 't' reported an error"),
            other => panic!("{other:?}"),
        }
    }

    /// An explicit `null` is structured content too (rmcp keeps it apart from an absent one).
    #[test]
    fn a_typed_tool_answers_its_structured_content_null_included() {
        let r = result(
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": null}),
        );
        assert_eq!(call_data("t", r, true).unwrap(), Value::Null);
        let r = result(
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"b": 2}}),
        );
        assert_eq!(call_data("t", r, true).unwrap(), json!({"b": 2}));
    }

    /// A tool without an output schema always has its blocks in `data.content`: the service
    /// document says `content` is required (issue 31). Structured content, when an object,
    /// is spread beside them.
    #[test]
    fn an_untyped_tool_keeps_its_blocks_beside_its_structured_content() {
        let text = json!([{"type": "text", "text": "{\"a\":1}"}]);
        let r = result(json!({"content": text, "structuredContent": {"b": 2}}));
        assert_eq!(
            call_data("t", r, false).unwrap(),
            json!({"b": 2, "content": text})
        );
        let r = result(json!({"content": text, "structuredContent": [1]}));
        assert_eq!(call_data("t", r, false).unwrap(), json!({"content": text}));
    }

    #[test]
    fn a_single_json_object_text_is_spread_beside_the_blocks() {
        let blocks = json!([{"type": "text", "text": "{\"a\": [1, \"é\"]}"}]);
        let r = result(json!({ "content": blocks }));
        assert_eq!(
            call_data("t", r, false).unwrap(),
            json!({"a": [1, "é"], "content": blocks})
        );
    }

    /// An object with a `content` member of its own would hide the blocks: not spread.
    #[test]
    fn an_object_with_its_own_content_is_not_spread() {
        let blocks = json!([{"type": "text", "text": "{\"content\": \"x\", \"a\": 1}"}]);
        let r = result(json!({ "content": blocks }));
        assert_eq!(
            call_data("t", r, false).unwrap(),
            json!({ "content": blocks })
        );
        let r = result(json!({"content": [], "structuredContent": {"content": 1}}));
        assert_eq!(call_data("t", r, false).unwrap(), json!({"content": []}));
    }

    #[test]
    fn anything_else_is_wrapped() {
        let r = result(json!({"content": [{"type": "text", "text": "[1,2]"}]}));
        assert_eq!(
            call_data("t", r, false).unwrap(),
            json!({"content": [{"type": "text", "text": "[1,2]"}]})
        );
        let r = result(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        );
        assert_eq!(
            call_data("t", r, false).unwrap()["content"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }
}
