//! One client MCP session as the providers see it: the surface's implementation of
//! [`ClientSession`]. It holds the session's peer, its logging level and its resource
//! subscriptions, delivers what the servers behind tell or ask a client, and is entered in
//! the service's [`ClientSessions`] book for as long as the session lives.
//!
//! Records are held by their session only (the book keeps weak references): a record that
//! drops leaves the book and says so through [`ClientSession::closed`].
// rmcp marks logging, sampling and roots deprecated (SEP-2577); the protocol versions the
// gateway serves still have them, and clients use them.
#![allow(deprecated)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequest, CustomRequest, ElicitRequest,
    GetExtensions, ListRootsRequest, LoggingLevel, ProtocolVersion, RequestId, ServerRequest,
};
use rmcp::service::OriginatingRequestId;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::provider::clients::{
    ClientAnswer, ClientAsk, ClientNotice, ClientSession, ClientSessions, Membership,
};
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

/// One client MCP session (or one stateless 2026-07-28 request).
pub struct McpClientSession {
    id: u64,
    /// Set by the session's first request (rmcp hands the peer to handlers only).
    peer: OnceLock<Peer<RoleServer>>,
    /// The session finished the `initialize` handshake (stateless 2026-07-28 requests never do).
    initialized: AtomicBool,
    /// `logging/setLevel`; `None` until the client sets one: every level is forwarded.
    level: Mutex<Option<LoggingLevel>>,
    /// URIs the client subscribed to with `resources/subscribe`.
    subscriptions: Mutex<BTreeSet<String>>,
    /// Cancelled when the record drops: the session's own upstream connections close.
    closed: CancellationToken,
    /// Where requests to the client are sent from (the service's drain).
    tasks: Shutdown,
    /// Its place in the service's book, left when the record drops.
    _membership: Membership,
}

impl McpClientSession {
    /// A new record, entered in `book`; requests to the client are sent from `tasks`.
    pub fn new(book: &ClientSessions, tasks: Shutdown) -> Arc<McpClientSession> {
        let id = ClientSessions::new_id();
        Arc::new_cyclic(|me: &std::sync::Weak<McpClientSession>| {
            let me: std::sync::Weak<dyn ClientSession> = me.clone();
            McpClientSession {
                id,
                peer: OnceLock::new(),
                initialized: AtomicBool::new(false),
                level: Mutex::new(None),
                subscriptions: Mutex::new(BTreeSet::new()),
                closed: CancellationToken::new(),
                tasks,
                _membership: book.enter(me, id),
            }
        })
    }

    /// Remembers the session's peer (the first one given wins: it is the same session).
    pub fn attach(&self, peer: &Peer<RoleServer>) {
        let _ = self.peer.set(peer.clone());
    }

    pub fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.peer.get()
    }

    pub fn set_initialized(&self) {
        self.initialized.store(true, Ordering::Release);
    }

    pub fn set_level(&self, level: LoggingLevel) {
        *self.level.write_unpoisoned() = Some(level);
    }

    /// Whether a log message of `level` reaches this client: at or above the level it set,
    /// or any level before it set one.
    pub fn wants_log(&self, level: LoggingLevel) -> bool {
        match *self.level.read_unpoisoned() {
            None => true,
            Some(threshold) => severity(level) >= severity(threshold),
        }
    }

    pub fn subscribe(&self, uri: &str) {
        self.subscriptions.write_unpoisoned().insert(uri.to_owned());
    }

    pub fn unsubscribe(&self, uri: &str) {
        self.subscriptions.write_unpoisoned().remove(uri);
    }

    /// The peer of a handshake-era session, to which notifications may be sent.
    fn session_peer(&self) -> Option<&Peer<RoleServer>> {
        self.peer().filter(|_| self.is_session())
    }

    /// Asks the client; the request is sent from a task of its own, as rmcp marks requests
    /// sent from inside a handler with that handler's request (here, the upstream's).
    async fn ask_client(
        &self,
        ask: ClientAsk,
        on: Option<RequestId>,
    ) -> Result<ClientAnswer, McpError> {
        let method = ask.method();
        let Some(peer) = self.peer().cloned() else {
            return Err(McpError::internal_error(
                format!("{method}: the calling client's session is not known yet"),
                None,
            ));
        };
        let mut request = match ask {
            ClientAsk::Sampling(params) => {
                ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params))
            }
            // As the server wrote it: rmcp's typed form would reorder and drop keywords.
            ClientAsk::Elicitation {
                as_sent: Some(params),
                ..
            } => ServerRequest::CustomRequest(CustomRequest::new(method, Some(params))),
            ClientAsk::Elicitation {
                params: Some(params),
                ..
            } => ServerRequest::ElicitRequest(ElicitRequest::new(params)),
            ClientAsk::Elicitation { .. } => {
                return Err(McpError::internal_error(
                    format!("{method}: neither typed nor as-sent params"),
                    None,
                ));
            }
            ClientAsk::Roots => ServerRequest::ListRootsRequest(ListRootsRequest::default()),
        };
        // On the response stream of the client's request, as the upstream sent it on ours.
        if let Some(id) = on {
            request.extensions_mut().insert(OriginatingRequestId(id));
        }
        let sent = self
            .tasks
            .spawn(async move { peer.send_request(request).await });
        let answer = sent
            .await
            .map_err(|e| McpError::internal_error(format!("{method}: {e}"), None))?
            .map_err(|e| match e {
                rmcp::service::ServiceError::McpError(error) => error,
                other => McpError::internal_error(
                    format!("{method}: the calling client did not answer: {other}"),
                    None,
                ),
            })?;
        match answer {
            ClientResult::CreateMessageResult(r) => Ok(ClientAnswer::Sampling(*r)),
            ClientResult::ElicitResult(r) => Ok(ClientAnswer::Elicitation(r)),
            // The answer to a request sent as the server wrote it comes back untyped.
            ClientResult::CustomResult(r) if method == "elicitation/create" => {
                serde_json::from_value(r.0)
                    .map(ClientAnswer::Elicitation)
                    .map_err(|e| {
                        McpError::invalid_params(
                            format!(
                                "{method}: the client's answer is not an elicitation result: {e}"
                            ),
                            None,
                        )
                    })
            }
            ClientResult::ListRootsResult(r) => Ok(ClientAnswer::Roots(r)),
            _ => Err(McpError::internal_error(
                format!("{method}: the client answered with another kind of result"),
                None,
            )),
        }
    }

    async fn deliver(&self, notice: ClientNotice) {
        let Some(peer) = self.session_peer() else {
            return;
        };
        let _ = match notice {
            ClientNotice::Log(params) if self.wants_log(params.level) => {
                peer.notify_logging_message(params).await
            }
            ClientNotice::Log(_) => Ok(()),
            // A session subscribes with every provider that takes subscriptions
            // (`resources/subscribe`), so an update of its URI is its whichever sent it.
            ClientNotice::ResourceUpdated { update, .. } if self.is_subscribed(&update.uri) => {
                peer.notify_resource_updated(update).await
            }
            ClientNotice::ResourceUpdated { .. } => Ok(()),
            ClientNotice::ResourceListChanged => peer.notify_resource_list_changed().await,
            ClientNotice::PromptListChanged => peer.notify_prompt_list_changed().await,
        };
    }
}

impl ClientSession for McpClientSession {
    fn id(&self) -> u64 {
        self.id
    }

    /// A handshake-era session: its handshake is done, or at least its `initialize` was
    /// answered with a version of the handshake era (a stateless 2026-07-28 request carries
    /// its client's info too, with its own version). The second holds for a request that
    /// overtakes the handler of `notifications/initialized`, which rmcp runs apart from the
    /// requests that follow it.
    fn is_session(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
            || self
                .peer()
                .and_then(|peer| peer.peer_info())
                .is_some_and(|info| {
                    // ISO dates compare as text as they do in time (rmcp compares them so too).
                    info.protocol_version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
                })
    }

    fn closed(&self) -> BoxFuture<'static, ()> {
        self.closed.clone().cancelled_owned().boxed()
    }

    fn capabilities(&self) -> Option<ClientCapabilities> {
        Some(self.peer()?.peer_info()?.capabilities.clone())
    }

    fn ask(
        &self,
        ask: ClientAsk,
        on: Option<RequestId>,
    ) -> BoxFuture<'_, Result<ClientAnswer, McpError>> {
        self.ask_client(ask, on).boxed()
    }

    fn notify(&self, notice: ClientNotice) -> BoxFuture<'_, ()> {
        self.deliver(notice).boxed()
    }

    fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.read_unpoisoned().contains(uri)
    }
}

impl Drop for McpClientSession {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// The rank of a syslog level (RFC 5424 order, as MCP uses it): higher is more severe.
pub fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(book: &ClientSessions) -> Arc<McpClientSession> {
        McpClientSession::new(book, Shutdown::default())
    }

    #[test]
    fn levels_pass_at_or_above_the_one_set_and_all_pass_before() {
        let d = record(&ClientSessions::default());
        assert!(d.wants_log(LoggingLevel::Debug));
        d.set_level(LoggingLevel::Warning);
        assert!(!d.wants_log(LoggingLevel::Info));
        assert!(d.wants_log(LoggingLevel::Warning));
        assert!(d.wants_log(LoggingLevel::Emergency));
    }

    #[test]
    fn an_ended_session_leaves_the_book_and_says_so() {
        let book = ClientSessions::default();
        let kept = record(&book);
        let gone = record(&book);
        let closed = gone.closed();
        drop(gone);
        assert_eq!(book.len(), 1, "the ended session left the book");
        assert_eq!(
            book.live().iter().map(|d| d.id()).collect::<Vec<_>>(),
            vec![kept.id()]
        );
        assert!(closed.now_or_never().is_some());
    }

    #[test]
    fn subscriptions_are_per_uri_and_a_session_is_one_after_its_handshake() {
        let d = record(&ClientSessions::default());
        d.subscribe("a://x");
        assert!(d.is_subscribed("a://x") && !d.is_subscribed("a://y"));
        d.unsubscribe("a://x");
        assert!(!d.is_subscribed("a://x"));
        assert!(!d.is_session());
        d.set_initialized();
        assert!(d.is_session());
    }
}
