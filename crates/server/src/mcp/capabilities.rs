//! What the MCP surface advertises: only the capabilities some server behind it offers
//! (resources, prompts, logging, completions, subscriptions), merged.

use rmcp::model::{PromptsCapability, ResourcesCapability, ServerCapabilities};

/// What the servers behind the service offer, as one server: resources, prompts, logging and
/// completions only when some server has them, subscriptions when some server takes them.
pub(super) fn merged_capabilities(upstreams: &[ServerCapabilities]) -> ServerCapabilities {
    let mut capabilities = ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .build();
    for theirs in upstreams {
        if let Some(resources) = &theirs.resources {
            let ours = capabilities
                .resources
                .get_or_insert_with(ResourcesCapability::default);
            if resources.subscribe == Some(true) {
                ours.subscribe = Some(true);
            }
            if resources.list_changed == Some(true) {
                ours.list_changed = Some(true);
            }
        }
        if let Some(prompts) = &theirs.prompts {
            let ours = capabilities
                .prompts
                .get_or_insert_with(PromptsCapability::default);
            if prompts.list_changed == Some(true) {
                ours.list_changed = Some(true);
            }
        }
        if theirs.logging.is_some() {
            capabilities.logging.get_or_insert_with(Default::default);
        }
        if theirs.completions.is_some() {
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

    fn capabilities(json: serde_json::Value) -> ServerCapabilities {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn only_what_some_server_behind_offers_is_advertised() {
        let none = merged_capabilities(&[capabilities(serde_json::json!({"tools": {}}))]);
        assert!(none.resources.is_none() && none.prompts.is_none());
        assert!(none.logging.is_none() && none.completions.is_none());
        let merged = merged_capabilities(&[
            capabilities(serde_json::json!({"resources": {"listChanged": true}})),
            capabilities(serde_json::json!({"resources": {"subscribe": true}, "logging": {}})),
            capabilities(serde_json::json!({"prompts": {}, "completions": {}})),
        ]);
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
