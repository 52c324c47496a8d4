//! Resources and prompts of an MCP server for the REST routes: listed, read and rendered on
//! the shared connection (the MCP surface passes its sessions' requests through on their own
//! connections instead, `mcp/handler.rs`). MCP's shapes become the contract's through their
//! JSON form, as in [`super::result`], so fields added by newer protocol versions do no harm.

use contract::{
    PromptArgument, PromptInfo, PromptMessage, PromptResult, ResourceContents, ResourceInfo,
    ResourceTemplateInfo,
};
use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams, ServerCapabilities};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::call::trace_meta;
use super::{CallContext, Inner, JsonObject, ToolError};
use crate::telemetry::SpanKind;

/// A string member of a JSON object, if present.
fn text(json: &Value, key: &str) -> Option<String> {
    json.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl Inner {
    /// The shared connection when the server offers what `has` asks (`None`: it offers none,
    /// so the lists are empty), or why there is none.
    fn peer_offering(
        &self,
        has: impl Fn(&ServerCapabilities) -> bool,
    ) -> Result<Option<(Peer<RoleClient>, u64)>, ToolError> {
        let Some((peer, generation)) = self.current_connection() else {
            let why = self.current_status().error.unwrap_or_default();
            return Err(ToolError::Unavailable(format!(
                "Dependency unavailable: MCP server '{}' is not connected: {why}",
                self.name
            )));
        };
        let offers = peer.peer_info().is_some_and(|info| has(&info.capabilities));
        Ok(offers.then_some((peer, generation)))
    }

    /// An upstream failure of `what` as the contract answers it; `not_found` names what was
    /// asked for when the server says it does not know it.
    fn upstream_failure(&self, what: &str, generation: u64, e: ServiceError) -> ToolError {
        match e {
            ServiceError::McpError(e) => {
                let message = e.message.to_lowercase();
                let unknown = e.code == rmcp::model::ErrorCode::RESOURCE_NOT_FOUND
                    || message.contains("unknown")
                    || message.contains("not found");
                if unknown {
                    ToolError::NotFound(what.to_owned())
                } else if e.code == rmcp::model::ErrorCode::INVALID_PARAMS {
                    ToolError::InvalidArguments(format!("{what}: {}", e.message))
                } else {
                    ToolError::Execution(format!("{what} failed: {}", e.message))
                }
            }
            e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)) => {
                self.connection_failed(generation);
                ToolError::Unavailable(format!(
                    "Dependency unavailable: MCP server '{}' connection lost: {e}",
                    self.name
                ))
            }
            e => ToolError::Execution(format!("{what} failed: {e}")),
        }
    }

    pub(super) async fn list_resources(&self) -> Result<Vec<ResourceInfo>, ToolError> {
        let Some((peer, generation)) = self.peer_offering(|c| c.resources.is_some())? else {
            return Ok(Vec::new());
        };
        let listed = peer
            .list_all_resources()
            .await
            .map_err(|e| self.upstream_failure("resources/list", generation, e))?;
        Ok(listed
            .iter()
            .map(|r| {
                let json = serde_json::to_value(r).unwrap_or(Value::Null);
                ResourceInfo {
                    uri: text(&json, "uri").unwrap_or_default(),
                    name: text(&json, "name").unwrap_or_default(),
                    title: text(&json, "title"),
                    description: text(&json, "description"),
                    mime_type: text(&json, "mimeType"),
                    provider: String::new(),
                    qualified_name: String::new(),
                }
            })
            .collect())
    }

    pub(super) async fn list_resource_templates(
        &self,
    ) -> Result<Vec<ResourceTemplateInfo>, ToolError> {
        let Some((peer, generation)) = self.peer_offering(|c| c.resources.is_some())? else {
            return Ok(Vec::new());
        };
        let listed = peer
            .list_all_resource_templates()
            .await
            .map_err(|e| self.upstream_failure("resources/templates/list", generation, e))?;
        Ok(listed
            .iter()
            .map(|t| {
                let json = serde_json::to_value(t).unwrap_or(Value::Null);
                ResourceTemplateInfo {
                    uri_template: text(&json, "uriTemplate").unwrap_or_default(),
                    name: text(&json, "name").unwrap_or_default(),
                    title: text(&json, "title"),
                    description: text(&json, "description"),
                    mime_type: text(&json, "mimeType"),
                    provider: String::new(),
                    qualified_name: String::new(),
                }
            })
            .collect())
    }

    pub(super) async fn read_resource(
        &self,
        uri: &str,
        cx: &CallContext,
    ) -> Result<Vec<ResourceContents>, ToolError> {
        let Some((peer, generation)) = self.peer_offering(|c| c.resources.is_some())? else {
            return Err(ToolError::NotFound(uri.to_owned()));
        };
        let span = cx
            .trace
            .child("resources/read".to_owned(), SpanKind::Client);
        let params = ReadResourceRequestParams::new(uri).with_meta(trace_meta(span.context()));
        // Dropping the request on timeout sends notifications/cancelled upstream (rmcp).
        let read = tokio::time::timeout(cx.timeout, peer.read_resource(params))
            .await
            .map_err(|_| ToolError::Timeout {
                tool: format!("resources/read {uri}"),
                ms: cx.timeout.as_millis() as u64,
            })?
            .map_err(|e| self.upstream_failure(uri, generation, e))?;
        let json = serde_json::to_value(&read).unwrap_or(Value::Null);
        Ok(json["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| ResourceContents {
                uri: text(c, "uri").unwrap_or_else(|| uri.to_owned()),
                mime_type: text(c, "mimeType"),
                text: text(c, "text"),
                blob: text(c, "blob"),
            })
            .collect())
    }

    pub(super) async fn list_prompts(&self) -> Result<Vec<PromptInfo>, ToolError> {
        let Some((peer, generation)) = self.peer_offering(|c| c.prompts.is_some())? else {
            return Ok(Vec::new());
        };
        let listed = peer
            .list_all_prompts()
            .await
            .map_err(|e| self.upstream_failure("prompts/list", generation, e))?;
        Ok(listed
            .iter()
            .map(|p| prompt_info(&serde_json::to_value(p).unwrap_or(Value::Null)))
            .collect())
    }

    pub(super) async fn get_prompt(
        &self,
        name: &str,
        args: JsonObject,
        cx: &CallContext,
    ) -> Result<PromptResult, ToolError> {
        let Some((peer, generation)) = self.peer_offering(|c| c.prompts.is_some())? else {
            return Err(ToolError::NotFound(name.to_owned()));
        };
        let span = cx
            .trace
            .child(format!("prompts/get {name}"), SpanKind::Client);
        let params = GetPromptRequestParams::new(name)
            .with_arguments(string_arguments(args))
            .with_meta(trace_meta(span.context()));
        let got = tokio::time::timeout(cx.timeout, peer.get_prompt(params))
            .await
            .map_err(|_| ToolError::Timeout {
                tool: format!("prompts/get {name}"),
                ms: cx.timeout.as_millis() as u64,
            })?
            .map_err(|e| self.upstream_failure(name, generation, e))?;
        let json = serde_json::to_value(&got).unwrap_or(Value::Null);
        Ok(PromptResult {
            description: text(&json, "description"),
            messages: json["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| PromptMessage {
                    role: text(m, "role").unwrap_or_default(),
                    content: m.get("content").cloned().unwrap_or(Value::Null),
                })
                .collect(),
        })
    }
}

/// An MCP prompt as the contract lists it; its `args_schema` is derived from its argument
/// list, so its arguments are checked by the same validator as a tool's.
fn prompt_info(json: &Value) -> PromptInfo {
    let arguments: Vec<PromptArgument> = json["arguments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| PromptArgument {
            name: text(a, "name").unwrap_or_default(),
            description: text(a, "description"),
            required: a["required"].as_bool().unwrap_or(false),
        })
        .collect();
    PromptInfo {
        name: text(json, "name").unwrap_or_default(),
        title: text(json, "title"),
        description: text(json, "description"),
        args_schema: contract::prompt::args_schema_of(&arguments),
        arguments,
        provider: String::new(),
        qualified_name: String::new(),
    }
}

/// MCP prompt arguments are strings; the schema says so, so anything else has been refused
/// before this. A non-string (from a caller that bypassed the schema) goes as its JSON text.
fn string_arguments(args: JsonObject) -> JsonObject {
    args.into_iter()
        .map(|(k, v)| match v {
            Value::String(_) => (k, v),
            other => (k, Value::String(other.to_string())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_mcp_prompt_gets_a_schema_from_its_arguments() {
        let info = prompt_info(&json!({
            "name": "args-prompt",
            "description": "d",
            "arguments": [
                {"name": "city", "description": "City", "required": true},
                {"name": "state"}
            ]
        }));
        assert_eq!(info.name, "args-prompt");
        assert_eq!(info.arguments.len(), 2);
        assert!(info.arguments[0].required && !info.arguments[1].required);
        assert_eq!(info.args_schema["required"], json!(["city"]));
        assert_eq!(info.args_schema["properties"]["state"]["type"], "string");
        let none = prompt_info(&json!({"name": "simple"}));
        assert_eq!(none.args_schema["properties"], json!({}));
    }
}
