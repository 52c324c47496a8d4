//! Resources, prompts, completions and resource subscriptions of an MCP server, for both
//! surfaces through the service: on the connection of the caller ([`Inner::link_for`]: a
//! session's own with `session_per_client`, else the shared one). MCP's shapes become the
//! contract's through their JSON form, so fields added by newer protocol versions do no harm,
//! and each item keeps that form (`native`) for the MCP surface to answer unchanged.
// rmcp marks resources/subscribe legacy (2026-07-28 has subscriptions/listen); the servers
// behind speak the handshake era, where it is how updates are asked for.
#![allow(deprecated)]

use contract::{
    PromptArgument, PromptInfo, PromptMessage, PromptResult, ResourceContents, ResourceInfo,
    ResourceTemplateInfo,
};
use std::sync::Arc;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, ReadResourceRequestParams,
    ServerCapabilities, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::ServiceError;
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::call::trace_meta;
use super::{CallContext, Inner, JsonObject, ToolError};
use crate::provider::clients::Caller;
use crate::telemetry::SpanKind;

/// A string member of a JSON object, if present.
fn text(json: &Value, key: &str) -> Option<String> {
    json.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl Inner {
    /// The connection `caller`'s requests go on ([`Inner::link_for`]) when the server offers
    /// what `has` asks (`None`: it offers none, so the lists are empty), with the shared
    /// connection's generation (`None` for a session's own).
    async fn peer_offering(
        self: &Arc<Self>,
        has: impl Fn(&ServerCapabilities) -> bool,
        caller: Option<&Caller>,
    ) -> Result<Option<(Peer<RoleClient>, Option<u64>)>, ToolError> {
        let (link, generation) = self.link_for(caller).await?;
        let offers = link
            .peer
            .peer_info()
            .is_some_and(|info| has(&info.capabilities));
        Ok(offers.then_some((link.peer, generation)))
    }

    /// An upstream failure of `what` as the contract answers it; `not_found` names what was
    /// asked for when the server says it does not know it.
    fn upstream_failure(&self, what: &str, generation: Option<u64>, e: ServiceError) -> ToolError {
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
                if let Some(generation) = generation {
                    self.connection_failed(generation);
                }
                ToolError::Unavailable(format!(
                    "Dependency unavailable: MCP server '{}' connection lost: {e}",
                    self.name
                ))
            }
            e => ToolError::Execution(format!("{what} failed: {e}")),
        }
    }

    pub(super) async fn list_resources(
        self: &Arc<Self>,
        caller: Option<&Caller>,
    ) -> Result<Vec<ResourceInfo>, ToolError> {
        let Some((peer, generation)) = self
            .peer_offering(|c| c.resources.is_some(), caller)
            .await?
        else {
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
                    native: Some(json),
                }
            })
            .collect())
    }

    pub(super) async fn list_resource_templates(
        self: &Arc<Self>,
        caller: Option<&Caller>,
    ) -> Result<Vec<ResourceTemplateInfo>, ToolError> {
        let Some((peer, generation)) = self
            .peer_offering(|c| c.resources.is_some(), caller)
            .await?
        else {
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
                    native: Some(json),
                }
            })
            .collect())
    }

    pub(super) async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        cx: &CallContext,
    ) -> Result<Vec<ResourceContents>, ToolError> {
        let offering = self
            .peer_offering(|c| c.resources.is_some(), cx.caller.as_ref())
            .await?;
        let Some((peer, generation)) = offering else {
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
                native: Some(c.clone()),
            })
            .collect())
    }

    pub(super) async fn list_prompts(
        self: &Arc<Self>,
        caller: Option<&Caller>,
    ) -> Result<Vec<PromptInfo>, ToolError> {
        let Some((peer, generation)) = self.peer_offering(|c| c.prompts.is_some(), caller).await?
        else {
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
        self: &Arc<Self>,
        name: &str,
        args: JsonObject,
        cx: &CallContext,
    ) -> Result<PromptResult, ToolError> {
        let offering = self
            .peer_offering(|c| c.prompts.is_some(), cx.caller.as_ref())
            .await?;
        let Some((peer, generation)) = offering else {
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
            native: Some(json),
        })
    }

    /// `completion/complete` of a prompt or resource template this server offers (the service
    /// chose the provider by the reference).
    pub(super) async fn complete(
        self: &Arc<Self>,
        request: CompleteRequestParams,
        cx: &CallContext,
    ) -> Result<CompleteResult, ToolError> {
        let offering = self
            .peer_offering(|c| c.completions.is_some(), cx.caller.as_ref())
            .await?;
        let Some((peer, generation)) = offering else {
            return Err(ToolError::NotFound("completion/complete".to_owned()));
        };
        tokio::time::timeout(cx.timeout, peer.complete(request))
            .await
            .map_err(|_| ToolError::Timeout {
                tool: "completion/complete".to_owned(),
                ms: cx.timeout.as_millis() as u64,
            })?
            .map_err(|e| self.upstream_failure("completion/complete", generation, e))
    }

    /// `resources/subscribe` on `caller`'s connection; `false` when the server takes none.
    pub(super) async fn subscribe(
        self: &Arc<Self>,
        uri: &str,
        caller: &Caller,
    ) -> Result<bool, ToolError> {
        let Some((peer, generation)) = self
            .peer_offering(takes_subscriptions, Some(caller))
            .await?
        else {
            return Ok(false);
        };
        peer.subscribe(SubscribeRequestParams::new(uri))
            .await
            .map_err(|e| self.upstream_failure("resources/subscribe", generation, e))?;
        Ok(true)
    }

    /// `resources/unsubscribe` on `caller`'s connection, whose session has already dropped the
    /// subscription: a shared connection stays subscribed while another session still is.
    pub(super) async fn unsubscribe(
        self: &Arc<Self>,
        uri: &str,
        caller: &Caller,
    ) -> Result<(), ToolError> {
        let Some((peer, generation)) = self
            .peer_offering(takes_subscriptions, Some(caller))
            .await?
        else {
            return Ok(());
        };
        let shared = generation.is_some();
        let others = self
            .sessions
            .live()
            .iter()
            .any(|s| s.id() != caller.session.id() && s.is_subscribed(uri));
        if shared && others {
            return Ok(());
        }
        peer.unsubscribe(UnsubscribeRequestParams::new(uri))
            .await
            .map_err(|e| self.upstream_failure("resources/unsubscribe", generation, e))
    }
}

/// Whether a server takes `resources/subscribe`.
fn takes_subscriptions(capabilities: &ServerCapabilities) -> bool {
    capabilities.resources.as_ref().and_then(|r| r.subscribe) == Some(true)
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
        native: Some(json.clone()),
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
