//! Resources and prompts of the service's providers, for both surfaces (REST's routes and
//! MCP's `resources/*` and `prompts/*`, which differ only in how they render): listed from every
//! provider (in configuration order), a URI read on the provider that offers it, a prompt
//! rendered after its arguments pass its `args_schema` — the same check and the same
//! INVALID_ARGUMENTS details as a tool call.
//!
//! Which provider reads a URI: the one named by the caller (`provider`), else the first in
//! configuration order that lists the URI, else the first with a template matching it; none
//! is RESOURCE_NOT_FOUND without asking any. A prompt's served name is its provider's own
//! name, answered by the first provider in configuration order that has it; the qualified name
//! `{provider}.{name}` picks one exactly.
//!
//! Reads and renders are upstream work like a tool call: they are admitted (the provider's
//! slots and the service's, the same queue) and bounded by the provider's timeout. Lists are
//! not admitted (an MCP server answers them from memory, a gRPC provider's are cached) but
//! bounded by the same timeout; a provider whose list fails is left out and logged.

use std::sync::Arc;
use std::time::Duration;

use contract::{
    ArgumentValidator, ErrorCode, PromptInfo, PromptResponse, PromptsResponse,
    ResourceReadResponse, ResourceTemplatesResponse, ResourcesResponse,
};
use futures::future::BoxFuture;
use serde_json::Value;

use super::Service;
use super::admission::{CallGates, QueueBounds, RETRY_AFTER_SECONDS, Scope};
use super::call::CallFailure;
use super::client::Client;
use super::uri_template::template_matches;
use crate::provider::{CallContext, Caller, Catalog, JsonObject, Provider, ToolError};
use crate::telemetry::TraceContext;

/// Who asks for a read, a render or a completion: the request's id and trace, and the client
/// session it came from (MCP; `None` for REST).
#[derive(Clone, Copy)]
pub struct CatalogRequest<'a> {
    pub request_id: &'a str,
    pub trace: &'a TraceContext,
    pub caller: Option<&'a Caller>,
    /// Who asked: its reads share the call slots as its own (a fair share, as its calls do).
    pub client: &'a Client,
}

impl CatalogRequest<'_> {
    /// The provider's context for it, bounded by `timeout`.
    pub(super) fn context(&self, timeout: Duration) -> CallContext {
        CallContext {
            request_id: self.request_id.to_owned(),
            trace: self.trace.clone(),
            timeout,
            progress: None,
            caller: self.caller.cloned(),
            subject_token: None,
        }
    }
}

/// `{provider}.{name}`: the name that tells providers apart.
pub fn qualified(provider: &str, name: &str) -> String {
    format!("{provider}.{name}")
}

impl Service {
    /// The providers in configuration order.
    fn catalog_providers(&self) -> Vec<Arc<dyn Provider>> {
        self.toolset().providers.clone()
    }

    /// How long one provider's resource or prompt request may take: its `limits.timeout_ms`,
    /// else `limits.call_timeout_ms`.
    pub(super) fn catalog_timeout(&self, provider: &str) -> Duration {
        let settings = self.settings();
        let config = &settings.config;
        config
            .provider_entries()
            .find(|p| p.name().as_str() == provider)
            .and_then(|p| p.limits().timeout)
            .unwrap_or(config.limits.call_timeout)
    }

    /// One list from every provider, in order, as `caller` sees it (its session's own
    /// connections); a provider that fails or times out is left out (logged), as /tools leaves
    /// out a server that is not connected.
    pub(super) async fn list_each<T>(
        &self,
        what: &str,
        caller: Option<&Caller>,
        list: impl for<'p> Fn(
            &'p dyn Catalog,
            Option<&'p Caller>,
        ) -> BoxFuture<'p, Result<Vec<T>, ToolError>>,
    ) -> Vec<(Arc<dyn Provider>, Vec<T>)> {
        self.list_each_of(self.catalog_providers(), what, caller, list)
            .await
    }

    /// [`Self::list_each`] of the given providers (a reload's, before they are installed).
    async fn list_each_of<T>(
        &self,
        providers: Vec<Arc<dyn Provider>>,
        what: &str,
        caller: Option<&Caller>,
        list: impl for<'p> Fn(
            &'p dyn Catalog,
            Option<&'p Caller>,
        ) -> BoxFuture<'p, Result<Vec<T>, ToolError>>,
    ) -> Vec<(Arc<dyn Provider>, Vec<T>)> {
        // Only kinds with a catalog list anything.
        let providers: Vec<Arc<dyn Provider>> = providers
            .into_iter()
            .filter(|p| p.catalog().is_some())
            .collect();
        let lists = futures::future::join_all(providers.iter().map(|p| {
            let timeout = self.catalog_timeout(p.name());
            let list = &list;
            async move {
                let catalog = p.catalog().expect("filtered above");
                tokio::time::timeout(timeout, list(catalog, caller)).await
            }
        }))
        .await;
        let mut all = Vec::new();
        for (provider, listed) in providers.into_iter().zip(lists) {
            match listed {
                Ok(Ok(items)) => all.push((provider, items)),
                Ok(Err(e)) => {
                    tracing::warn!(service = %self.name, provider = provider.name(), "{what} failed: {e}")
                }
                Err(_) => {
                    tracing::warn!(service = %self.name, provider = provider.name(), "{what} timed out")
                }
            }
        }
        all
    }

    /// GET /resources, MCP `resources/list`.
    pub async fn resources(&self, caller: Option<&Caller>) -> ResourcesResponse {
        let mut resources = Vec::new();
        for (provider, items) in self
            .list_each("resources/list", caller, |p, c| p.list_resources(c))
            .await
        {
            resources.extend(items.into_iter().map(|mut r| {
                r.qualified_name = qualified(provider.name(), &r.name);
                r.provider = provider.name().to_owned();
                r
            }));
        }
        ResourcesResponse {
            service: self.name.clone(),
            resources,
        }
    }

    /// GET /resource-templates, MCP `resources/templates/list`.
    pub async fn resource_templates(&self, caller: Option<&Caller>) -> ResourceTemplatesResponse {
        let mut resource_templates = Vec::new();
        let lists = self
            .list_each("resources/templates/list", caller, |p, c| {
                p.list_resource_templates(c)
            })
            .await;
        for (provider, items) in lists {
            resource_templates.extend(items.into_iter().map(|mut t| {
                t.qualified_name = qualified(provider.name(), &t.name);
                t.provider = provider.name().to_owned();
                t
            }));
        }
        ResourceTemplatesResponse {
            service: self.name.clone(),
            resource_templates,
        }
    }

    /// GET /prompts, MCP `prompts/list`: every prompt with its served name (the provider's
    /// own) and qualified name.
    pub async fn prompts(&self, caller: Option<&Caller>) -> PromptsResponse {
        PromptsResponse {
            service: self.name.clone(),
            prompts: self.prompts_of(self.catalog_providers(), caller).await,
        }
    }

    /// The prompts of `providers`, in order, as GET /prompts lists them.
    pub(super) async fn prompts_of(
        &self,
        providers: Vec<Arc<dyn Provider>>,
        caller: Option<&Caller>,
    ) -> Vec<PromptInfo> {
        let mut prompts = Vec::new();
        let listed = self
            .list_each_of(providers, "prompts/list", caller, |p, c| p.list_prompts(c))
            .await;
        for (provider, items) in listed {
            prompts.extend(items.into_iter().map(|mut p| {
                p.qualified_name = qualified(provider.name(), &p.name);
                p.provider = provider.name().to_owned();
                p
            }));
        }
        prompts
    }

    /// The provider that reads `uri`: `named` when given (it is asked even for a URI it does
    /// not list), else the first listing it, else the first with a matching template.
    pub(super) async fn resource_provider(
        &self,
        uri: &str,
        named: Option<&str>,
        caller: Option<&Caller>,
    ) -> Result<Arc<dyn Provider>, CallFailure> {
        let providers = self.catalog_providers();
        if let Some(name) = named {
            return providers
                .into_iter()
                .find(|p| p.name() == name)
                .ok_or_else(|| {
                    // No such provider holds no such resource: the same 404 as an unknown URI
                    // (the parameter is a free string in the contract, so this is no bad request).
                    CallFailure::new(
                        ErrorCode::ResourceNotFound,
                        format!(
                            "Resource '{uri}' not found: service '{}' has no provider '{name}'",
                            self.name
                        ),
                    )
                });
        }
        let listing = self
            .list_each("resources/list", caller, |p, c| p.list_resources(c))
            .await;
        if let Some((provider, _)) = listing
            .into_iter()
            .find(|(_, items)| items.iter().any(|r| r.uri == uri))
        {
            return Ok(provider);
        }
        let templates = self
            .list_each("resources/templates/list", caller, |p, c| {
                p.list_resource_templates(c)
            })
            .await;
        templates
            .into_iter()
            .find(|(_, items)| items.iter().any(|t| template_matches(&t.uri_template, uri)))
            .map(|(provider, _)| provider)
            .ok_or_else(|| not_found_resource(uri))
    }

    /// GET /resources/read?uri=…[&provider=…], MCP `resources/read`.
    pub async fn read_resource(
        &self,
        uri: &str,
        named: Option<&str>,
        request: CatalogRequest<'_>,
    ) -> Result<ResourceReadResponse, CallFailure> {
        if let Some(why) = contract::uri_syntax_error(uri) {
            return Err(CallFailure::new(
                ErrorCode::InvalidRequest,
                format!("'{}' is not a resource URI: {why}", uri.escape_default()),
            ));
        }
        let provider = self.resource_provider(uri, named, request.caller).await?;
        let timeout = self.catalog_timeout(provider.name());
        let _admitted = self
            .admit_catalog(provider.name(), uri, request.client)
            .await?;
        let cx = request.context(timeout);
        // The provider enforces the timeout itself; this bound guards against one that does not.
        let read = tokio::time::timeout(
            timeout + Duration::from_secs(1),
            read_on(provider.as_ref(), uri, &cx),
        )
        .await
        .unwrap_or(Err(ToolError::Timeout {
            tool: uri.to_owned(),
            ms: timeout.as_millis() as u64,
        }));
        match read {
            Ok(contents) => Ok(ResourceReadResponse {
                uri: uri.to_owned(),
                provider: provider.name().to_owned(),
                contents,
            }),
            Err(ToolError::NotFound(_)) => Err(not_found_resource(uri)),
            Err(e) => Err(failure(e, &format!("Resource '{uri}'"), timeout)),
        }
    }

    /// The provider of the prompt `name` (a served or qualified name) and the prompt as it
    /// lists it, as `caller` sees them.
    pub(super) async fn prompt_provider(
        &self,
        name: &str,
        caller: Option<&Caller>,
    ) -> Result<(Arc<dyn Provider>, PromptInfo), CallFailure> {
        let listed = self
            .list_each("prompts/list", caller, |p, c| p.list_prompts(c))
            .await;
        let found = listed.iter().find_map(|(provider, prompts)| {
            prompts
                .iter()
                .find(|p| qualified(provider.name(), &p.name) == name)
                .map(|p| (provider, p))
        });
        let found = found.or_else(|| {
            listed.iter().find_map(|(provider, prompts)| {
                prompts
                    .iter()
                    .find(|p| p.name == name)
                    .map(|p| (provider, p))
            })
        });
        found
            .map(|(provider, prompt)| (provider.clone(), prompt.clone()))
            .ok_or_else(|| not_found_prompt(name))
    }

    /// POST /prompts/{name}, MCP `prompts/get`: `name` is a served or qualified name; the
    /// arguments must pass the prompt's `args_schema`.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: JsonObject,
        request: CatalogRequest<'_>,
    ) -> Result<PromptResponse, CallFailure> {
        let (provider, prompt) = self.prompt_provider(name, request.caller).await?;
        let prompt = &prompt;
        check_prompt_arguments(prompt, &arguments)?;
        let timeout = self.catalog_timeout(provider.name());
        let _admitted = self
            .admit_catalog(provider.name(), name, request.client)
            .await?;
        let cx = request.context(timeout);
        let got = tokio::time::timeout(
            timeout + Duration::from_secs(1),
            get_on(provider.as_ref(), &prompt.name, arguments, &cx),
        )
        .await
        .unwrap_or(Err(ToolError::Timeout {
            tool: name.to_owned(),
            ms: timeout.as_millis() as u64,
        }));
        match got {
            Ok(result) => Ok(PromptResponse {
                prompt: prompt.name.clone(),
                provider: provider.name().to_owned(),
                description: result.description,
                messages: result.messages,
                native: result.native,
            }),
            Err(ToolError::NotFound(_)) => Err(not_found_prompt(name)),
            Err(e) => Err(failure(e, &format!("Prompt '{name}'"), timeout)),
        }
    }

    /// The provider's slot and the service's, through the same queue as tool calls.
    pub(super) async fn admit_catalog(
        &self,
        provider: &str,
        what: &str,
        client: &Client,
    ) -> Result<super::admission::Admitted, CallFailure> {
        let settings = self.settings();
        let config = &settings.config;
        let limit = config
            .provider_entries()
            .find(|p| p.name().as_str() == provider)
            .and_then(|p| p.limits().max_concurrent);
        let gates = CallGates {
            tool: None,
            provider: self.admission.gate(Scope::Provider, provider, limit),
        };
        let bounds = QueueBounds {
            depth: config.limits.queue_depth,
            timeout: config.limits.queue_timeout,
        };
        self.admission
            .admit(&gates, bounds, &client.counted_as())
            .await
            .map_err(|refusal| {
                self.metrics.admission_rejected(refusal.scope().as_str());
                let mut f = CallFailure::new(
                    ErrorCode::ServiceUnavailable,
                    format!(
                        "'{what}' was not admitted: {refusal}; retry after {RETRY_AFTER_SECONDS} s"
                    ),
                );
                f.retry_after = Some(RETRY_AFTER_SECONDS);
                f
            })
    }
}

/// Reads `uri` on `provider`'s catalog; a provider without one has no resources.
async fn read_on(
    provider: &dyn Provider,
    uri: &str,
    cx: &CallContext,
) -> Result<Vec<contract::ResourceContents>, ToolError> {
    match provider.catalog() {
        Some(catalog) => catalog.read_resource(uri, cx).await,
        None => Err(ToolError::NotFound(uri.to_owned())),
    }
}

/// Renders the prompt `name` on `provider`'s catalog; a provider without one has no prompts.
async fn get_on(
    provider: &dyn Provider,
    name: &str,
    arguments: JsonObject,
    cx: &CallContext,
) -> Result<contract::PromptResult, ToolError> {
    match provider.catalog() {
        Some(catalog) => catalog.get_prompt(name, arguments, cx).await,
        None => Err(ToolError::NotFound(name.to_owned())),
    }
}

fn not_found_resource(uri: &str) -> CallFailure {
    CallFailure::new(
        ErrorCode::ResourceNotFound,
        format!("Resource '{uri}' not found"),
    )
}

fn not_found_prompt(name: &str) -> CallFailure {
    CallFailure::new(
        ErrorCode::PromptNotFound,
        format!("Prompt '{name}' not found"),
    )
}

/// A provider's failure of a read or render, in words about `what` (not a tool).
pub(super) fn failure(e: ToolError, what: &str, timeout: Duration) -> CallFailure {
    match e {
        ToolError::Timeout { .. } => CallFailure::new(
            ErrorCode::Timeout,
            format!(
                "{what} did not answer within {} ms; the request was cancelled",
                timeout.as_millis()
            ),
        ),
        e => CallFailure::new(e.code(), e.to_string()),
    }
}

/// The arguments against the prompt's `args_schema`, with the same details as a tool call's.
fn check_prompt_arguments(prompt: &PromptInfo, arguments: &JsonObject) -> Result<(), CallFailure> {
    let validator = ArgumentValidator::compile(&prompt.args_schema).map_err(|e| {
        CallFailure::new(
            ErrorCode::ExecutionError,
            format!(
                "Prompt '{}' has an args_schema that does not compile: {e}",
                prompt.name
            ),
        )
    })?;
    validator
        .check(&Value::Object(arguments.clone()))
        .map_err(|issues| CallFailure {
            code: ErrorCode::InvalidArguments,
            message: format!(
                "Arguments do not match the args_schema of prompt '{}': {} problem(s), see meta.validation_errors",
                prompt.name,
                issues.len()
            ),
            validation_errors: Some(issues),
            retry_after: None,
            output: None,
        })
}
