//! What a provider answers for a tool call, and how the contract reads it: a [`ToolOutput`] is
//! plain data (Cypher rows, an HTTP API's answer, a gRPC reply, search hits) or an MCP server's
//! own `CallToolResult`, kept whole so the MCP surface answers exactly what the server sent
//! (content blocks, annotations, `_meta`). The service reads it once: whether the tool
//! reported an error ([`ToolOutput::reported_error`]), what output validation checks
//! ([`ToolOutput::checked_view`]); each surface then renders it once (REST:
//! [`ToolOutput::into_data`]).
//!
//! The reading works on the JSON form of the rmcp types so that fields added by newer
//! protocol versions pass through untouched.

use std::borrow::Cow;

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use super::ToolError;

/// A tool's answer, as its provider got it.
#[derive(Debug, Clone)]
pub enum ToolOutput {
    /// The call's `data` as it is.
    Data(Value),
    /// An MCP server's own result, `isError` included (the service reads the error).
    Mcp(Box<CallToolResult>),
}

impl ToolOutput {
    /// The error the tool itself reported (MCP `isError`), if it did.
    ///
    /// `isError` → EXECUTION_ERROR with the tool's text (INVALID_ARGUMENTS when that text is
    /// the server refusing the arguments: [`refuses_arguments`]).
    pub fn reported_error(&self, tool: &str) -> Option<ToolError> {
        let ToolOutput::Mcp(result) = self else {
            return None;
        };
        if result.is_error != Some(true) {
            return None;
        }
        let content = serde_json::to_value(&result.content).unwrap_or_else(|_| json!([]));
        let text = texts(&content);
        let message = if text.is_empty() {
            format!("Tool '{tool}' reported an error")
        } else {
            text
        };
        Some(if refuses_arguments(&message) {
            ToolError::InvalidArguments(message)
        } else {
            ToolError::Execution(message)
        })
    }

    /// What the output schema of a tool that declares one (`typed`) is checked against: the
    /// data as is, an MCP tool's `structuredContent` (borrowed: the result is not copied), or,
    /// when such a tool sent none, the data REST would answer.
    pub fn checked_view(&self, typed: bool) -> Cow<'_, Value> {
        match self {
            ToolOutput::Data(data) => Cow::Borrowed(data),
            ToolOutput::Mcp(result) => match &result.structured_content {
                Some(structured) if typed => Cow::Borrowed(structured),
                _ => Cow::Owned(self.clone().into_data(typed)),
            },
        }
    }

    /// The call's `data`, as REST answers it.
    ///
    /// For a tool that declares an output schema (`typed`), an MCP result's
    /// `structuredContent`. Else an object holding the tool's content blocks under `content`
    /// (MCP requires them of every result, so a client can always read `data.content`) and,
    /// beside them, the members of the structured content when that is an object, or else of
    /// the only content block when that is text holding a JSON object, so that a JSON answer
    /// reads as `data.<field>`. An object with its own `content` member is not spread: it
    /// would hide the blocks.
    ///
    /// Takes the output by value: `structuredContent` becomes `data` as it is, and only the
    /// content blocks are serialised, once, so a large result is not copied per call.
    pub fn into_data(self, typed: bool) -> Value {
        let result = match self {
            ToolOutput::Data(data) => return data,
            ToolOutput::Mcp(result) => *result,
        };
        if typed && let Some(structured) = result.structured_content {
            return structured;
        }
        let content = serde_json::to_value(&result.content).unwrap_or_else(|_| json!([]));
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
        Value::Object(data)
    }
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

    /// What the service makes of an MCP result: the error it reports, or its data.
    fn call_data(
        tool: &str,
        result: rmcp::model::CallToolResult,
        typed: bool,
    ) -> Result<Value, ToolError> {
        let output = ToolOutput::Mcp(Box::new(result));
        match output.reported_error(tool) {
            Some(error) => Err(error),
            None => Ok(output.into_data(typed)),
        }
    }

    #[test]
    fn plain_data_is_the_data_and_reports_no_error() {
        let output = ToolOutput::Data(json!({"rows": []}));
        assert!(output.reported_error("t").is_none());
        assert_eq!(*output.checked_view(true), json!({"rows": []}));
        assert_eq!(output.into_data(false), json!({"rows": []}));
    }

    /// What output validation reads of a typed MCP tool: its structured content, or, when it
    /// sent none, the data it would answer (which then fails a schema that wants an object).
    #[test]
    fn validation_reads_the_structured_content_of_a_typed_tool() {
        let typed = ToolOutput::Mcp(Box::new(result(
            json!({"content": [], "structuredContent": {"b": 2}}),
        )));
        assert_eq!(*typed.checked_view(true), json!({"b": 2}));
        let bare = ToolOutput::Mcp(Box::new(result(json!({"content": []}))));
        assert_eq!(*bare.checked_view(true), json!({"content": []}));
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
