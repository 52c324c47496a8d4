//! Resource subscriptions of client sessions (MCP `resources/subscribe` and
//! `resources/unsubscribe`) through the service: every provider that takes subscriptions is
//! asked, on the session's connections; the updates then reach the session from the
//! provider ([`crate::provider::clients::ClientNotice::ResourceUpdated`]).

use super::Service;
use super::call::CallFailure;
use crate::provider::{Caller, ToolError};

impl Service {
    /// Subscribes `caller` to `uri` with every provider that takes subscriptions: `true`
    /// when one took it, `false` when none takes any, the last failure when all that take
    /// subscriptions failed.
    pub async fn subscribe(&self, uri: &str, caller: &Caller) -> Result<bool, CallFailure> {
        let mut taken = false;
        let mut last = None;
        for provider in self.toolset().providers.clone() {
            let timeout = self.catalog_timeout(provider.name());
            let Some(catalog) = provider.catalog() else {
                continue;
            };
            match tokio::time::timeout(timeout, catalog.subscribe(uri, caller)).await {
                Ok(Ok(true)) => taken = true,
                Ok(Ok(false)) => {}
                Ok(Err(e)) => last = Some(e),
                Err(_) => {
                    last = Some(ToolError::Timeout {
                        tool: format!("resources/subscribe {uri}"),
                        ms: timeout.as_millis() as u64,
                    })
                }
            }
        }
        match (taken, last) {
            (true, _) => Ok(true),
            (false, Some(e)) => Err(CallFailure::new(e.code(), e.to_string())),
            (false, None) => Ok(false),
        }
    }

    /// Ends `caller`'s subscription to `uri` with every provider (the session has dropped it
    /// already); a provider's failure is logged, not answered.
    pub async fn unsubscribe(&self, uri: &str, caller: &Caller) {
        for provider in self.toolset().providers.clone() {
            let timeout = self.catalog_timeout(provider.name());
            let Some(catalog) = provider.catalog() else {
                continue;
            };
            let outcome = tokio::time::timeout(timeout, catalog.unsubscribe(uri, caller)).await;
            if let Ok(Err(e)) = outcome {
                tracing::warn!(service = %self.name, provider = provider.name(), "resources/unsubscribe upstream failed: {e}");
            } else if outcome.is_err() {
                tracing::warn!(service = %self.name, provider = provider.name(), "resources/unsubscribe upstream timed out");
            }
        }
    }
}
