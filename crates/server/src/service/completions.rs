//! `completion/complete` (MCP) through the service: the reference names a prompt (served or
//! qualified name) or a resource template (its URI template, or a resource's URI), the
//! provider that offers it is asked, admitted and bounded like a read or a render.

use contract::ErrorCode;
use rmcp::model::{CompleteRequestParams, CompleteResult, Reference};

use super::Service;
use super::call::CallFailure;
use super::catalog::{CatalogRequest, failure};
use super::uri_template::template_matches;
use crate::provider::{Provider, ToolError};

impl Service {
    /// Completes an argument of a prompt or resource template, on the provider that offers it.
    pub async fn complete(
        &self,
        mut params: CompleteRequestParams,
        request: CatalogRequest<'_>,
    ) -> Result<CompleteResult, CallFailure> {
        let (provider, what) = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let (provider, found) = self
                    .prompt_provider(&prompt.name, request.caller)
                    .await
                    .map_err(|_| no_completions(&format!("prompt '{}'", prompt.name)))?;
                let what = format!("prompt '{}'", prompt.name);
                // The provider knows the prompt by its own name, not a qualified one.
                prompt.name = found.name;
                (provider, what)
            }
            Reference::Resource(resource) => {
                let what = format!("resource '{}'", resource.uri);
                let provider = self
                    .resource_owner(&resource.uri, request.caller)
                    .await
                    .ok_or_else(|| no_completions(&what))?;
                (provider, what)
            }
            _ => return Err(no_completions("this reference")),
        };
        let timeout = self.catalog_timeout(provider.name());
        let _admitted = self
            .admit_catalog(provider.name(), &what, request.client)
            .await?;
        let cx = request.context(timeout);
        let completed = tokio::time::timeout(timeout + std::time::Duration::from_secs(1), async {
            match provider.catalog() {
                Some(catalog) => catalog.complete(params, &cx).await,
                None => Err(ToolError::NotFound(what.clone())),
            }
        })
        .await
        .unwrap_or(Err(ToolError::Timeout {
            tool: what.clone(),
            ms: timeout.as_millis() as u64,
        }));
        match completed {
            Ok(result) => Ok(result),
            Err(ToolError::NotFound(_)) => Err(no_completions(&what)),
            Err(e) => Err(failure(e, &format!("Completion of {what}"), timeout)),
        }
    }

    /// The first provider, in configuration order, with a resource template of that URI
    /// template, else one listing the URI or with a template matching it.
    async fn resource_owner(
        &self,
        uri: &str,
        caller: Option<&crate::provider::Caller>,
    ) -> Option<std::sync::Arc<dyn Provider>> {
        let templates = self
            .list_each("resources/templates/list", caller, |p, c| {
                p.list_resource_templates(c)
            })
            .await;
        let exact = templates
            .iter()
            .find(|(_, items)| items.iter().any(|t| t.uri_template == uri));
        if let Some((provider, _)) = exact {
            return Some(provider.clone());
        }
        let listing = self
            .list_each("resources/list", caller, |p, c| p.list_resources(c))
            .await;
        listing
            .into_iter()
            .find(|(_, items)| items.iter().any(|r| r.uri == uri))
            .map(|(provider, _)| provider)
            .or_else(|| {
                templates
                    .into_iter()
                    .find(|(_, items)| items.iter().any(|t| template_matches(&t.uri_template, uri)))
                    .map(|(provider, _)| provider)
            })
    }
}

/// No provider completes what was referenced (answered as invalid params over MCP).
fn no_completions(what: &str) -> CallFailure {
    CallFailure::new(
        ErrorCode::InvalidRequest,
        format!("No provider of this service offers completions for {what}"),
    )
}
