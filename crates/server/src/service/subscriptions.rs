//! Resource subscriptions of client sessions through the service, two ways: MCP
//! `resources/subscribe` and `resources/unsubscribe` ask every provider that takes
//! subscriptions, on the session's connections; a 2026-07-28 `subscriptions/listen` stream
//! subscribes each URI with the one provider that owns it (the one that reads it), so a URI two
//! providers both have stays one provider's. The updates then reach the session from the
//! provider ([`crate::provider::clients::ClientNotice::ResourceUpdated`]).

use super::Service;
use super::call::CallFailure;
use crate::provider::{Caller, Provider, ToolError};

impl Service {
    /// Subscribes `caller` to `uri` with every provider that takes subscriptions: `true`
    /// when one took it, `false` when none takes any, the last failure when all that take
    /// subscriptions failed.
    pub async fn subscribe(&self, uri: &str, caller: &Caller) -> Result<bool, CallFailure> {
        let mut taken = false;
        let mut last = None;
        for provider in self.toolset().providers.clone() {
            match self.subscribe_on(provider.as_ref(), uri, caller).await {
                Ok(true) => taken = true,
                Ok(false) => {}
                Err(e) => last = Some(e),
            }
        }
        match (taken, last) {
            (true, _) => Ok(true),
            (false, Some(e)) => Err(CallFailure::new(e.code(), e.to_string())),
            (false, None) => Ok(false),
        }
    }

    /// Subscribes `caller` to `uri` with the provider that owns it: the one a read of `uri`
    /// goes to (the first listing it, else the first with a matching template). The owner's
    /// name when it took the subscription, `None` when it takes none; RESOURCE_NOT_FOUND when
    /// no provider has the URI.
    pub async fn subscribe_with_owner(
        &self,
        uri: &str,
        caller: &Caller,
    ) -> Result<Option<String>, CallFailure> {
        let owner = self.resource_provider(uri, None, Some(caller)).await?;
        match self.subscribe_on(owner.as_ref(), uri, caller).await {
            Ok(true) => Ok(Some(owner.name().to_owned())),
            Ok(false) => Ok(None),
            Err(e) => Err(CallFailure::new(e.code(), e.to_string())),
        }
    }

    /// Ends `caller`'s subscription to `uri` with every provider (the session has dropped it
    /// already); a provider's failure is logged, not answered.
    pub async fn unsubscribe(&self, uri: &str, caller: &Caller) {
        for provider in self.toolset().providers.clone() {
            self.unsubscribe_on(provider.as_ref(), uri, caller).await;
        }
    }

    /// Ends `caller`'s subscription to `uri` with the provider named `owner` only (the one
    /// [`Self::subscribe_with_owner`] named); one a reload removed has nothing left to end.
    pub async fn unsubscribe_from_owner(&self, owner: &str, uri: &str, caller: &Caller) {
        let providers = self.toolset().providers.clone();
        if let Some(provider) = providers.iter().find(|p| p.name() == owner) {
            self.unsubscribe_on(provider.as_ref(), uri, caller).await;
        }
    }

    /// `resources/subscribe` with one provider, within its catalog timeout: `false` when it
    /// takes no subscriptions.
    async fn subscribe_on(
        &self,
        provider: &dyn Provider,
        uri: &str,
        caller: &Caller,
    ) -> Result<bool, ToolError> {
        let Some(catalog) = provider.catalog() else {
            return Ok(false);
        };
        let timeout = self.catalog_timeout(provider.name());
        tokio::time::timeout(timeout, catalog.subscribe(uri, caller))
            .await
            .unwrap_or_else(|_| {
                Err(ToolError::Timeout {
                    tool: format!("resources/subscribe {uri}"),
                    ms: timeout.as_millis() as u64,
                })
            })
    }

    /// `resources/unsubscribe` with one provider, within its catalog timeout; a failure is
    /// logged.
    async fn unsubscribe_on(&self, provider: &dyn Provider, uri: &str, caller: &Caller) {
        let Some(catalog) = provider.catalog() else {
            return;
        };
        let timeout = self.catalog_timeout(provider.name());
        let outcome = tokio::time::timeout(timeout, catalog.unsubscribe(uri, caller)).await;
        if let Ok(Err(e)) = outcome {
            tracing::warn!(service = %self.name, provider = provider.name(), "resources/unsubscribe upstream failed: {e}");
        } else if outcome.is_err() {
            tracing::warn!(service = %self.name, provider = provider.name(), "resources/unsubscribe upstream timed out");
        }
    }
}
