//! The per-service OpenAPI document served at GET /openapi.json: the contract plus one typed
//! operation per tool (`POST /tools/<name>`, the tool's input schema as the request body), so
//! a client generated from it has a typed method per tool.

use crate::ToolSchema;
use serde_json::{Value, json};

/// The limits a client needs to know, published as `x-limits` at the document's root.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_body_bytes: u64,
    pub call_timeout_ms: u64,
}

/// Builds the document for a service's current tools. Run when the tools or limits change.
pub fn service_document(
    service: &str,
    version: &str,
    tools: &[ToolSchema],
    limits: Limits,
) -> Value {
    let mut doc = crate::openapi::document_json();
    doc["info"]["title"] = json!(format!("{service} (mcp-http-gateway)"));
    doc["info"]["version"] = json!(version);
    doc["x-limits"] =
        json!({"max_body_bytes": limits.max_body_bytes, "call_timeout_ms": limits.call_timeout_ms});
    let by_name = doc["paths"]["/tools/{name}"]["post"].clone();
    let paths = doc["paths"]
        .as_object_mut()
        .expect("the contract has paths");
    for tool in tools {
        let mut op = by_name.clone();
        op["operationId"] = json!(operation_id(&tool.name));
        op["summary"] = json!(format!("Call tool {}", tool.name));
        op["description"] = json!(tool.description);
        op["tags"] = json!(["tool"]);
        if let Some(params) = op["parameters"].as_array_mut() {
            params.retain(|p| p["in"] != "path");
        }
        op["requestBody"] = json!({
            "required": true,
            "description": format!("Arguments of {}", tool.name),
            "content": {"application/json": {"schema": tool.input_schema}}
        });
        paths.insert(format!("/tools/{}", tool.name), json!({ "post": op }));
    }
    doc
}

/// `call_` + the tool name with anything outside `[A-Za-z0-9_]` replaced by `_`.
fn operation_id(tool: &str) -> String {
    let safe: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("call_{safe}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_typed_operation_per_tool() {
        let tools = vec![ToolSchema {
            title: None,
            output_schema: None,
            name: "get-sum".into(),
            description: "adds".into(),
            input_schema: json!({"type": "object", "properties": {"a": {"type": "number"}}}),
            annotations: None,
        }];
        let limits = Limits {
            max_body_bytes: 10,
            call_timeout_ms: 20,
        };
        let doc = service_document("svc", "1.2.3", &tools, limits);
        assert_eq!(
            doc["x-limits"],
            json!({"max_body_bytes": 10, "call_timeout_ms": 20})
        );
        let op = &doc["paths"]["/tools/get-sum"]["post"];
        assert_eq!(op["operationId"], "call_get_sum");
        assert_eq!(
            op["requestBody"]["content"]["application/json"]["schema"]["properties"]["a"]["type"],
            "number"
        );
        assert!(op["responses"]["400"].is_object());
        assert_eq!(doc["info"]["version"], "1.2.3");
        assert!(doc["paths"]["/call-tool"].is_object());
    }
}
