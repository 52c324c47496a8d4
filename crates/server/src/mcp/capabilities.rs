//! What the MCP surface advertises: only the capabilities some provider behind it offers
//! (resources, prompts, logging, completions, subscriptions), merged.

use rmcp::model::{PromptsCapability, ResourcesCapability, ServerCapabilities};

use crate::provider::Offers;

/// What the providers behind the service offer, as one server: resources, prompts, logging
/// and completions only when some provider has them, subscriptions when some takes them.
pub(super) fn merged_capabilities(offers: &[Offers]) -> ServerCapabilities {
    // Every tool can run as a task of the gateway's (mcp/tasks.rs).
    let mut capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_tasks()
        .build();
    for theirs in offers {
        if theirs.resources {
            let ours = capabilities
                .resources
                .get_or_insert_with(ResourcesCapability::default);
            if theirs.resource_subscriptions {
                ours.subscribe = Some(true);
            }
            if theirs.resource_list_changes {
                ours.list_changed = Some(true);
            }
        }
        if theirs.prompts {
            let ours = capabilities
                .prompts
                .get_or_insert_with(PromptsCapability::default);
            if theirs.prompt_list_changes {
                ours.list_changed = Some(true);
            }
        }
        if theirs.log_messages {
            capabilities.logging.get_or_insert_with(Default::default);
        }
        if theirs.completions {
            capabilities
                .completions
                .get_or_insert_with(Default::default);
        }
    }
    capabilities
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_some_provider_offers_is_advertised() {
        let none = merged_capabilities(&[Offers::default()]);
        assert!(none.resources.is_none() && none.prompts.is_none());
        assert!(none.logging.is_none() && none.completions.is_none());
        let merged = merged_capabilities(&[
            Offers {
                resources: true,
                resource_list_changes: true,
                ..Offers::default()
            },
            Offers {
                resources: true,
                resource_subscriptions: true,
                log_messages: true,
                ..Offers::default()
            },
            Offers {
                prompts: true,
                completions: true,
                ..Offers::default()
            },
        ]);
        assert!(merged.supports_tasks() && none.supports_tasks());
        let resources = merged.resources.unwrap();
        assert_eq!(
            (resources.subscribe, resources.list_changed),
            (Some(true), Some(true))
        );
        assert!(merged.prompts.is_some());
        assert!(merged.logging.is_some() && merged.completions.is_some());
        assert_eq!(merged.tools.unwrap().list_changed, Some(true));
    }
}
