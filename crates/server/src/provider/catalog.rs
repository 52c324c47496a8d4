//! What some providers offer besides tools: resources, resource templates, prompts and
//! completions, and subscriptions to resource updates (MCP servers, gRPC providers). A kind
//! that has them gives its [`Catalog`] through `Provider::catalog`; the service's catalog
//! asks it for both surfaces.

use contract::{PromptInfo, PromptResult, ResourceContents, ResourceInfo, ResourceTemplateInfo};
use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{CompleteRequestParams, CompleteResult};

use super::{CallContext, Caller, JsonObject, ToolError};

/// Resources, prompts and completions of one provider.
pub trait Catalog: Send + Sync {
    /// The resources the provider offers now (to `caller`, when a client session asks).
    /// `provider` and `qualified_name` may be left empty: the service sets them. Default: none.
    fn list_resources<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ToolError>> {
        futures::future::ready(Ok(Vec::new())).boxed()
    }

    /// The resource templates the provider offers now (`caller`, `provider`, `qualified_name`
    /// as for [`Provider::list_resources`]). Default: none.
    fn list_resource_templates<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceTemplateInfo>, ToolError>> {
        futures::future::ready(Ok(Vec::new())).boxed()
    }

    /// Reads one resource (a listed URI or one a template matches). An unknown URI is
    /// [`ToolError::NotFound`] (the service answers it RESOURCE_NOT_FOUND). Must not hang past
    /// `cx.timeout`. Default: every URI is unknown.
    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, ToolError>> {
        futures::future::ready(Err(ToolError::NotFound(uri.to_owned()))).boxed()
    }

    /// The prompts the provider offers now, each with its `args_schema` (`caller`,
    /// `provider`, `qualified_name` as for [`Provider::list_resources`]; `name` is the
    /// provider's own). Default: none.
    fn list_prompts<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<PromptInfo>, ToolError>> {
        futures::future::ready(Ok(Vec::new())).boxed()
    }

    /// Renders one prompt (`name` is the provider's own) with arguments that already passed
    /// its `args_schema`. An unknown prompt is [`ToolError::NotFound`] (answered
    /// PROMPT_NOT_FOUND). Must not hang past `cx.timeout`. Default: every prompt is unknown.
    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        _args: JsonObject,
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<PromptResult, ToolError>> {
        futures::future::ready(Err(ToolError::NotFound(name.to_owned()))).boxed()
    }

    /// Completes an argument of one of its prompts or resource templates (MCP
    /// `completion/complete`; the prompt's name is the provider's own). Must not hang past
    /// `cx.timeout`. Default: it completes nothing ([`ToolError::NotFound`]).
    fn complete<'a>(
        &'a self,
        _request: CompleteRequestParams,
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<CompleteResult, ToolError>> {
        futures::future::ready(Err(ToolError::NotFound("completion/complete".into()))).boxed()
    }

    /// Subscribes `caller` to updates of the resource `uri`; `false` when the provider takes
    /// no subscriptions. Default: it takes none.
    fn subscribe<'a>(
        &'a self,
        _uri: &'a str,
        _caller: &'a Caller,
    ) -> BoxFuture<'a, Result<bool, ToolError>> {
        futures::future::ready(Ok(false)).boxed()
    }

    /// Ends `caller`'s subscription to `uri` (the session has dropped it already). Default:
    /// nothing to end.
    fn unsubscribe<'a>(
        &'a self,
        _uri: &'a str,
        _caller: &'a Caller,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        futures::future::ready(Ok(())).boxed()
    }

    /// What the provider offers besides tools, as of now (the MCP surface advertises the
    /// union). Default: nothing.
    fn offers(&self) -> Offers {
        Offers::default()
    }
}

/// What a provider offers besides tools; the MCP surface advertises what some provider
/// offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    pub resources: bool,
    /// It takes `resources/subscribe` and tells of updates.
    pub resource_subscriptions: bool,
    /// It tells when its resource list changes.
    pub resource_list_changes: bool,
    pub prompts: bool,
    /// It tells when its prompt list changes.
    pub prompt_list_changes: bool,
    pub completions: bool,
    /// It sends log messages to the client sessions (an MCP server's, a gRPC provider's
    /// events).
    pub log_messages: bool,
}
