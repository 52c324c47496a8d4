//! `subscriptions/listen` (MCP 2026-07-28, the stateless replacement for `resources/subscribe`
//! and the session's GET stream): one stream that fans in the changes of the whole service —
//! the tool list (a reload, an upstream's list_changed), the providers' prompt and resource list
//! changes, and updates of the resources the client named. URIs are kept apart across
//! providers: each is subscribed with the one provider that owns it (the one a read of it goes
//! to), and only that provider's updates of it reach the stream.
//!
//! A stream is one more [`ClientSession`] in the service's book for as long as it lives (never
//! a session: it has no connection of its own, it is asked nothing), so the providers tell it
//! what they tell sessions and a shared upstream connection stays subscribed to its URIs while
//! it lives; its upstream subscriptions end with it.
//!
//! rmcp acknowledges the accepted filter before [`McpBridge::listen_stream`] runs, so the
//! upstream subscriptions are made just after the acknowledgment: an update sent upstream in
//! between is not seen.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientCapabilities, RequestId, ResourceUpdatedNotification, ServerNotification,
    SubscriptionFilter,
};
use rmcp::service::{SubscriptionContext, SubscriptionSendError, SubscriptionSink};
use tokio_util::sync::CancellationToken;

use super::handler::McpBridge;
use crate::provider::clients::{
    ClientAnswer, ClientAsk, ClientNotice, ClientSession, ClientSessions, Membership,
};
use crate::provider::{Caller, Offers};
use crate::service::Service;
use crate::sync::Unpoisoned;

/// How many of a stream's URIs are routed to their owners at once (each is a round of lists
/// upstream).
const ROUTED_AT_ONCE: usize = 8;

/// What of `requested` the service can deliver: tool list changes always, prompt and resource
/// list changes when some provider tells of them, updates of the well-formed URIs when some
/// provider takes subscriptions (rmcp then also keeps only what `initialize` advertises).
pub(super) fn deliverable(requested: &SubscriptionFilter, offers: &[Offers]) -> SubscriptionFilter {
    let some = |has: fn(&Offers) -> bool| offers.iter().any(has);
    let asked = |flag: Option<bool>| flag == Some(true);
    let uris: Vec<String> = requested
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|uri| contract::uri_syntax_error(uri).is_none())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .cloned()
        .collect();
    let mut accepted = SubscriptionFilter::new();
    accepted.tools_list_changed = asked(requested.tools_list_changed).then_some(true);
    accepted.prompts_list_changed =
        (asked(requested.prompts_list_changed) && some(|o| o.prompt_list_changes)).then_some(true);
    accepted.resources_list_changed = (asked(requested.resources_list_changed)
        && some(|o| o.resource_list_changes))
    .then_some(true);
    accepted.resource_subscriptions =
        (some(|o| o.resource_subscriptions) && !uris.is_empty()).then_some(uris);
    accepted
}

/// What a stream wants of the providers' notices: its accepted filter, and the provider each
/// URI's updates come from once it is subscribed there.
struct Interest {
    accepted: SubscriptionFilter,
    /// The accepted URIs, while the stream lives.
    uris: BTreeSet<String>,
    /// URI → the provider that owns it and took the subscription.
    owners: Mutex<BTreeMap<String, String>>,
    ended: AtomicBool,
}

impl Interest {
    fn new(accepted: SubscriptionFilter) -> Interest {
        let uris = accepted
            .resource_subscriptions
            .iter()
            .flatten()
            .cloned()
            .collect();
        Interest {
            accepted,
            uris,
            owners: Mutex::new(BTreeMap::new()),
            ended: AtomicBool::new(false),
        }
    }

    fn owned_by(&self, uri: &str, provider: String) {
        if !self.ended.load(Ordering::Acquire) {
            self.owners
                .write_unpoisoned()
                .insert(uri.to_owned(), provider);
        }
    }

    /// Whether the stream takes `notice`: a list change it accepted, an update of one of its
    /// URIs from the provider that owns it. Log messages are not carried on a listen stream.
    fn wants(&self, notice: &ClientNotice) -> bool {
        if self.ended.load(Ordering::Acquire) {
            return false;
        }
        match notice {
            ClientNotice::Log(_) => false,
            ClientNotice::ResourceUpdated { provider, update } => self
                .owners
                .read_unpoisoned()
                .get(&update.uri)
                .is_some_and(|owner| owner == provider),
            ClientNotice::ResourceListChanged => self.accepted.resources_list_changed == Some(true),
            ClientNotice::PromptListChanged => self.accepted.prompts_list_changed == Some(true),
        }
    }

    /// Subscribed to `uri` until the stream ends, whether or not its owner is known yet (a
    /// shared upstream connection must not be unsubscribed from it meanwhile).
    fn is_subscribed(&self, uri: &str) -> bool {
        !self.ended.load(Ordering::Acquire) && self.uris.contains(uri)
    }

    /// Ends the stream's interest; the subscriptions to end upstream, as (URI, owner).
    fn end(&self) -> Vec<(String, String)> {
        self.ended.store(true, Ordering::Release);
        std::mem::take(&mut *self.owners.write_unpoisoned())
            .into_iter()
            .collect()
    }
}

/// One `subscriptions/listen` stream, as the providers see it.
pub(super) struct ListenStream {
    id: u64,
    sink: SubscriptionSink,
    interest: Interest,
    /// Cancelled when the stream drops.
    closed: CancellationToken,
    _membership: Membership,
}

impl ListenStream {
    /// A stream delivering to `sink`, entered in `book` for as long as it lives.
    fn enter(book: &ClientSessions, sink: SubscriptionSink) -> Arc<ListenStream> {
        let id = ClientSessions::new_id();
        let accepted = sink.accepted().clone();
        Arc::new_cyclic(|me: &std::sync::Weak<ListenStream>| {
            let me: std::sync::Weak<dyn ClientSession> = me.clone();
            ListenStream {
                id,
                sink,
                interest: Interest::new(accepted),
                closed: CancellationToken::new(),
                _membership: book.enter(me, id),
            }
        })
    }

    async fn deliver(&self, notice: ClientNotice) {
        if !self.interest.wants(&notice) {
            return;
        }
        let sent = match notice {
            ClientNotice::ResourceUpdated { update, .. } => {
                let update = ResourceUpdatedNotification::new(update);
                self.sink
                    .send(ServerNotification::ResourceUpdatedNotification(update))
                    .await
            }
            ClientNotice::ResourceListChanged => self.sink.notify_resource_list_changed().await,
            ClientNotice::PromptListChanged => self.sink.notify_prompt_list_changed().await,
            ClientNotice::Log(_) => Ok(()),
        };
        if let Err(e) = sent {
            tracing::debug!(listen = %self.sink.id(), "a change was not delivered: {e}");
        }
    }
}

impl ClientSession for ListenStream {
    fn id(&self) -> u64 {
        self.id
    }

    fn is_session(&self) -> bool {
        false
    }

    fn closed(&self) -> BoxFuture<'static, ()> {
        self.closed.clone().cancelled_owned().boxed()
    }

    /// Nothing is asked of a listen stream: it serves no call.
    fn capabilities(&self) -> Option<ClientCapabilities> {
        None
    }

    fn ask(
        &self,
        ask: ClientAsk,
        _on: Option<RequestId>,
    ) -> BoxFuture<'_, Result<ClientAnswer, McpError>> {
        let refused = McpError::internal_error(
            format!(
                "{}: a subscriptions/listen stream serves no call",
                ask.method()
            ),
            None,
        );
        futures::future::ready(Err(refused)).boxed()
    }

    fn notify(&self, notice: ClientNotice) -> BoxFuture<'_, ()> {
        self.deliver(notice).boxed()
    }

    fn is_subscribed(&self, uri: &str) -> bool {
        self.interest.is_subscribed(uri)
    }
}

impl Drop for ListenStream {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Ends a stream's upstream subscriptions when its `listen` returns or is dropped.
struct Teardown {
    service: Arc<Service>,
    stream: Arc<ListenStream>,
}

impl Drop for Teardown {
    fn drop(&mut self) {
        let owned = self.stream.interest.end();
        // On shutdown the upstream connections close anyway.
        if owned.is_empty() || self.service.drain().is_cancelled() {
            return;
        }
        let (service, stream) = (self.service.clone(), self.stream.clone());
        self.service.drain().spawn(async move {
            // The stream stays in the book until this is done, no longer subscribed to
            // anything (two streams ending at once must not keep each other's URIs).
            let caller = Caller::new(stream, None);
            for (uri, owner) in owned {
                service.unsubscribe_from_owner(&owner, &uri, &caller).await;
            }
        });
    }
}

impl McpBridge {
    /// Runs one `subscriptions/listen` stream until the client cancels it (or goes away) or
    /// the service drains (then it ends with its final result, a graceful close).
    pub(super) async fn listen_stream(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let stream = ListenStream::enter(self.service.client_sessions(), context.sink().clone());
        let teardown = Teardown {
            service: self.service.clone(),
            stream: stream.clone(),
        };
        // Watched from before the upstream subscriptions: a reload meanwhile is still told.
        let mut tools = self.service.watch_tool_list();
        tools.mark_unchanged();
        let tell_tools = context.accepted().tools_list_changed == Some(true);
        tokio::select! {
            () = self.route(&stream) => {}
            () = context.cancelled() => return Ok(()),
        }
        loop {
            tokio::select! {
                () = context.cancelled() => break,
                () = self.service.drain().cancelled() => break,
                changed = tools.changed(), if tell_tools => {
                    if changed.is_err() {
                        break;
                    }
                    let told = stream.sink.notify_tool_list_changed().await;
                    if let Err(SubscriptionSendError::SubscriptionClosed) = told {
                        break;
                    }
                }
            }
        }
        drop(teardown);
        Ok(())
    }

    /// Subscribes each of the stream's URIs with the provider that owns it; a URI no provider
    /// has, or whose owner takes no subscriptions, gets no updates (logged: the client was
    /// already told it was accepted).
    async fn route(&self, stream: &Arc<ListenStream>) {
        let session: Arc<dyn ClientSession> = stream.clone();
        let caller = Caller::new(session, None);
        let uris: Vec<String> = stream.interest.uris.iter().cloned().collect();
        let caller = &caller;
        let mut routed = futures::stream::iter(uris)
            .map(|uri| async move {
                let owner = self.service.subscribe_with_owner(&uri, caller).await;
                (uri, owner)
            })
            .buffer_unordered(ROUTED_AT_ONCE);
        while let Some((uri, owner)) = routed.next().await {
            match owner {
                Ok(Some(provider)) => stream.interest.owned_by(&uri, provider),
                Ok(None) => {
                    tracing::info!(service = %self.service.name, uri, "subscriptions/listen: the provider of this resource takes no subscriptions")
                }
                Err(failure) => {
                    tracing::warn!(service = %self.service.name, uri, "subscriptions/listen: not subscribed upstream: {}", failure.message)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ResourceUpdatedNotificationParam;

    use super::*;

    fn filter(json: serde_json::Value) -> SubscriptionFilter {
        serde_json::from_value(json).unwrap()
    }

    fn everything_requested() -> SubscriptionFilter {
        filter(serde_json::json!({
            "toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true,
            "resourceSubscriptions": ["demo://b", "demo://a", "demo://a", "not a uri"],
        }))
    }

    fn update(provider: &str, uri: &str) -> ClientNotice {
        ClientNotice::ResourceUpdated {
            provider: provider.to_owned(),
            update: ResourceUpdatedNotificationParam::new(uri),
        }
    }

    #[test]
    fn only_what_some_provider_can_tell_is_accepted() {
        let tools_only = deliverable(&everything_requested(), &[Offers::default()]);
        assert_eq!(
            tools_only,
            filter(serde_json::json!({"toolsListChanged": true}))
        );
        let offers = [
            Offers {
                resources: true,
                resource_subscriptions: true,
                ..Offers::default()
            },
            Offers {
                prompts: true,
                prompt_list_changes: true,
                ..Offers::default()
            },
        ];
        let accepted = deliverable(&everything_requested(), &offers);
        assert_eq!(
            accepted,
            filter(serde_json::json!({
                "toolsListChanged": true, "promptsListChanged": true,
                "resourceSubscriptions": ["demo://a", "demo://b"],
            })),
            "no provider tells of resource list changes; a URI is taken once, a malformed one not"
        );
        let nothing_asked = deliverable(&SubscriptionFilter::new(), &offers);
        assert_eq!(nothing_asked, SubscriptionFilter::new());
    }

    #[test]
    fn an_update_is_taken_from_the_owner_of_its_uri_only() {
        let interest = Interest::new(filter(serde_json::json!({
            "resourceSubscriptions": ["demo://a", "demo://b"],
        })));
        assert!(interest.is_subscribed("demo://a") && !interest.is_subscribed("demo://c"));
        assert!(
            !interest.wants(&update("one", "demo://a")),
            "not before it is subscribed upstream"
        );
        interest.owned_by("demo://a", "one".to_owned());
        assert!(interest.wants(&update("one", "demo://a")));
        assert!(
            !interest.wants(&update("two", "demo://a")),
            "the same URI of another provider is another resource"
        );
        assert!(!interest.wants(&update("one", "demo://c")));
        assert!(
            !interest.wants(&ClientNotice::PromptListChanged),
            "not accepted"
        );
    }

    #[test]
    fn an_ended_stream_wants_nothing_and_hands_back_its_subscriptions() {
        let interest = Interest::new(filter(serde_json::json!({
            "resourcesListChanged": true, "resourceSubscriptions": ["demo://a"],
        })));
        interest.owned_by("demo://a", "one".to_owned());
        assert!(interest.wants(&ClientNotice::ResourceListChanged));
        assert_eq!(
            interest.end(),
            vec![("demo://a".to_owned(), "one".to_owned())]
        );
        assert!(!interest.is_subscribed("demo://a"));
        assert!(!interest.wants(&ClientNotice::ResourceListChanged));
        interest.owned_by("demo://a", "one".to_owned());
        assert!(interest.end().is_empty(), "nothing is owned after the end");
    }
}
