//! Resources, prompts, completions and resource subscriptions over MCP: the service's catalog
//! (the same one REST's routes use, with its admission, timeouts, argument checks and
//! qualified names, for every provider kind), asked as this session, rendered the way an MCP
//! client expects. An MCP server's item is answered as it sent it (`native`); another
//! provider's is built from the contract's fields. Lists say `ttlMs: 0` and `cacheScope:
//! private`: they are asked as this session (its own connections) and change at any time.

use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ErrorCode, GetPromptRequestParams, GetPromptResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult,
};
use rmcp::service::RequestContext;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::errors::{catalog_error, jsonrpc};
use super::handler::McpBridge;
use crate::service::CatalogRequest;
use crate::telemetry::TraceContext;

/// What an MCP client gets of an item: its provider's own MCP form when it has one, else the
/// form built from the contract's fields (members without a value left out).
fn item(native: Option<Value>, built: Value) -> Value {
    native.unwrap_or_else(|| match built {
        Value::Object(members) => members.into_iter().filter(|(_, v)| !v.is_null()).collect(),
        other => other,
    })
}

/// An MCP result type read from its JSON form (what the items above add up to), marked
/// complete as 2026-07-28 clients need it (`resultType`; rmcp leaves it out for older ones,
/// and a handshake-era upstream does not say).
fn result_of<T: DeserializeOwned>(mut json: Value, what: &str) -> Result<T, McpError> {
    if let Some(members) = json.as_object_mut() {
        members
            .entry("resultType")
            .or_insert_with(|| json!("complete"));
    }
    serde_json::from_value(json).map_err(|e| {
        McpError::internal_error(
            format!("{what}: the answer is not a valid MCP result: {e}"),
            None,
        )
    })
}

impl McpBridge {
    /// Runs `ask` as a catalog request of this session, with a request id of its own.
    async fn as_catalog_request<T>(
        &self,
        context: &RequestContext<RoleServer>,
        ask: impl AsyncFnOnce(CatalogRequest<'_>) -> T,
    ) -> (T, String) {
        let request_id = uuid::Uuid::new_v4().to_string();
        let trace = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<TraceContext>().cloned())
            .unwrap_or_else(TraceContext::detached);
        let caller = self.caller(context);
        let client = self.client(context);
        let request = CatalogRequest {
            request_id: &request_id,
            trace: &trace,
            caller: Some(&caller),
            client: &client,
        };
        let answer = ask(request).await;
        (answer, request_id)
    }

    pub(super) async fn resources(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> ListResourcesResult {
        let caller = self.caller(context);
        let listed = self.service.resources(Some(&caller)).await;
        let items: Vec<Value> = listed
            .resources
            .into_iter()
            .map(|r| {
                let built = json!({"uri": r.uri, "name": r.name, "title": r.title,
                    "description": r.description, "mimeType": r.mime_type});
                item(r.native, built)
            })
            .collect();
        let listed = json!({ "resources": items, "ttlMs": 0, "cacheScope": "private" });
        result_of(listed, "resources/list").unwrap_or_else(|e| {
            tracing::warn!(service = %self.service.name, "{}", e.message);
            ListResourcesResult::with_all_items(Vec::new())
        })
    }

    pub(super) async fn resource_templates(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> ListResourceTemplatesResult {
        let caller = self.caller(context);
        let listed = self.service.resource_templates(Some(&caller)).await;
        let items: Vec<Value> = listed
            .resource_templates
            .into_iter()
            .map(|t| {
                let built = json!({"uriTemplate": t.uri_template, "name": t.name,
                    "title": t.title, "description": t.description, "mimeType": t.mime_type});
                item(t.native, built)
            })
            .collect();
        result_of(
            json!({ "resourceTemplates": items, "ttlMs": 0, "cacheScope": "private" }),
            "resources/templates/list",
        )
        .unwrap_or_else(|e| {
            tracing::warn!(service = %self.service.name, "{}", e.message);
            ListResourceTemplatesResult::with_all_items(Vec::new())
        })
    }

    pub(super) async fn read(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        let (read, request_id) = self
            .as_catalog_request(context, async |request| {
                self.service.read_resource(uri, None, request).await
            })
            .await;
        let read = read.map_err(|f| catalog_error(f, &request_id))?;
        let contents: Vec<Value> = read
            .contents
            .into_iter()
            .map(|c| {
                let built = json!({"uri": c.uri, "mimeType": c.mime_type, "text": c.text,
                    "blob": c.blob});
                item(c.native, built)
            })
            .collect();
        result_of(json!({ "contents": contents }), "resources/read")
    }

    pub(super) async fn prompts(&self, context: &RequestContext<RoleServer>) -> ListPromptsResult {
        let caller = self.caller(context);
        let listed = self.service.prompts(Some(&caller)).await;
        let items: Vec<Value> = listed
            .prompts
            .into_iter()
            .map(|p| {
                let arguments: Vec<Value> = p
                    .arguments
                    .iter()
                    .map(|a| {
                        item(
                            None,
                            json!({"name": a.name, "description": a.description,
                            "required": a.required}),
                        )
                    })
                    .collect();
                let built = json!({"name": p.name, "title": p.title,
                    "description": p.description, "arguments": arguments});
                item(p.native, built)
            })
            .collect();
        let listed = json!({ "prompts": items, "ttlMs": 0, "cacheScope": "private" });
        result_of(listed, "prompts/list").unwrap_or_else(|e| {
            tracing::warn!(service = %self.service.name, "{}", e.message);
            ListPromptsResult::with_all_items(Vec::new())
        })
    }

    /// `prompts/get`: a served or a qualified name, arguments checked against the prompt's
    /// `args_schema` as POST /prompts/{name} checks them.
    pub(super) async fn render(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResult, McpError> {
        let arguments = request.arguments.unwrap_or_default();
        let (rendered, request_id) = self
            .as_catalog_request(context, async |catalog| {
                self.service
                    .get_prompt(&request.name, arguments, catalog)
                    .await
            })
            .await;
        let rendered = rendered.map_err(|f| catalog_error(f, &request_id))?;
        let messages: Vec<Value> = rendered
            .messages
            .into_iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let built = json!({"description": rendered.description, "messages": messages});
        result_of(item(rendered.native, built), "prompts/get")
    }

    pub(super) async fn completion(
        &self,
        request: CompleteRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let (completed, request_id) = self
            .as_catalog_request(context, async |catalog| {
                self.service.complete(request, catalog).await
            })
            .await;
        let mut completed = completed.map_err(|f| catalog_error(f, &request_id))?;
        completed
            .result_type
            .get_or_insert(rmcp::model::ResultType::COMPLETE);
        Ok(completed)
    }

    /// `resources/subscribe` with every provider that takes subscriptions; this session then
    /// gets their updates of `uri`.
    pub(super) async fn subscription(
        &self,
        uri: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let caller = self.caller(context);
        match self.service.subscribe(uri, &caller).await {
            Ok(true) => {
                self.session.subscribe(uri);
                Ok(())
            }
            Ok(false) => Err(McpError::new(
                ErrorCode(jsonrpc::METHOD_NOT_FOUND),
                "No provider of this service takes resource subscriptions",
                None,
            )),
            Err(failure) => Err(catalog_error(failure, "")),
        }
    }

    /// `resources/unsubscribe`: this session stops getting updates of `uri` at once; a
    /// shared upstream connection stays subscribed while another session still is.
    pub(super) async fn unsubscription(&self, uri: &str, context: &RequestContext<RoleServer>) {
        self.session.unsubscribe(uri);
        let caller = self.caller(context);
        self.service.unsubscribe(uri, &caller).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_is_its_native_form_else_the_built_one_without_nulls() {
        let native = json!({"uri": "a://x", "name": "x", "icons": [{"src": "i.png"}]});
        assert_eq!(item(Some(native.clone()), json!({"uri": "other"})), native);
        assert_eq!(
            item(None, json!({"uri": "a://x", "name": "x", "title": null})),
            json!({"uri": "a://x", "name": "x"})
        );
    }

    #[test]
    fn built_items_make_valid_mcp_results() {
        let listed: ListResourcesResult = result_of(
            json!({"resources": [item(None, json!({"uri": "hello://greeting", "name": "greeting", "mimeType": null}))]}),
            "resources/list",
        )
        .unwrap();
        assert_eq!(listed.resources[0].uri, "hello://greeting");
        let read: Result<ReadResourceResult, _> =
            result_of(json!({"contents": "not a list"}), "resources/read");
        assert!(
            read.unwrap_err()
                .message
                .starts_with("resources/read: the answer is not a valid MCP result")
        );
    }
}
