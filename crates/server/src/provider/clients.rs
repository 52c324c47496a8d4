//! The clients behind the gateway, as providers see them: a [`ClientSession`] is one client's
//! MCP session (implemented by the MCP surface, `src/mcp/client_session.rs`), the
//! [`ClientSessions`] book holds the live ones of a service, and a [`Caller`] is the client
//! request a call serves, handed to the provider in its [`super::CallContext`].
//!
//! A provider asks the caller what its upstream asks of a client (sampling, elicitation,
//! roots) and tells sessions what its upstream tells a client (log messages, resource
//! updates, list changes). It never learns how the surface delivers them.
// rmcp marks logging, sampling and roots deprecated (SEP-2577); the protocol versions the
// gateway serves still have them, and clients use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures::future::BoxFuture;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ListRootsResult, LoggingMessageNotificationParam, RequestId,
    ResourceUpdatedNotificationParam,
};

use crate::sync::Unpoisoned;

/// One client's session with the service, as a provider needs it.
pub trait ClientSession: Send + Sync {
    /// Unique for the life of the process (pools pin a session to a child by it).
    fn id(&self) -> u64;

    /// A handshake-era session that lives across requests (not one stateless request).
    fn is_session(&self) -> bool;

    /// Resolves when the session has ended (its own upstream connections then close).
    fn closed(&self) -> BoxFuture<'static, ()>;

    /// What the client said it can do (`sampling`, `elicitation`, `roots`), once known.
    fn capabilities(&self) -> Option<ClientCapabilities>;

    /// Asks the client what an upstream asked (the client offers it:
    /// [`ClientAsk::offered_by`]); `on` is the client's request whose answer stream carries
    /// it, when the ask belongs to one.
    fn ask(
        &self,
        ask: ClientAsk,
        on: Option<RequestId>,
    ) -> BoxFuture<'_, Result<ClientAnswer, McpError>>;

    /// [`ClientSession::ask`], naming the ask `key` (a 2026-07-28 server's own key for it,
    /// kept where the client is asked in rounds too; elsewhere there is no key to keep).
    fn ask_keyed(
        &self,
        key: &str,
        ask: ClientAsk,
        on: Option<RequestId>,
    ) -> BoxFuture<'_, Result<ClientAnswer, McpError>> {
        let _ = key;
        self.ask(ask, on)
    }

    /// Tells the client what an upstream told its client; the session drops what it does not
    /// want (a log message below its level, an update of a resource it did not subscribe to).
    fn notify(&self, notice: ClientNotice) -> BoxFuture<'_, ()>;

    /// Whether the client subscribed to `uri` (`resources/subscribe`).
    fn is_subscribed(&self, uri: &str) -> bool;
}

/// A request from an upstream server to its client, to be asked of a client of the gateway.
pub enum ClientAsk {
    Sampling(CreateMessageRequestParams),
    /// `params`: as rmcp reads them (`None`: a schema its types cannot hold); `as_sent`: as
    /// the upstream wrote them, when its transport kept them (`provider::mcp::upstream::wire`).
    /// A client is asked with `as_sent` when there is one, so it sees the requested schema
    /// exactly as the server wrote it. One of the two is always there.
    Elicitation {
        params: Option<ElicitRequestParams>,
        as_sent: Option<serde_json::Value>,
    },
    Roots,
}

impl ClientAsk {
    pub fn method(&self) -> &'static str {
        match self {
            ClientAsk::Sampling(_) => "sampling/createMessage",
            ClientAsk::Elicitation { .. } => "elicitation/create",
            ClientAsk::Roots => "roots/list",
        }
    }

    /// Whether a client with `capabilities` takes this request.
    pub fn offered_by(&self, capabilities: &ClientCapabilities) -> bool {
        match self {
            ClientAsk::Sampling(_) => capabilities.sampling.is_some(),
            // URL mode needs `url`; form mode is `form`, or an empty capability (older clients).
            ClientAsk::Elicitation { params, as_sent } => match &capabilities.elicitation {
                None => false,
                Some(e) => {
                    let url_mode = match params {
                        Some(params) => {
                            matches!(params, ElicitRequestParams::UrlElicitationParams { .. })
                        }
                        None => as_sent.as_ref().is_some_and(|p| p["mode"] == "url"),
                    };
                    if url_mode {
                        e.url.is_some()
                    } else {
                        e.form.is_some() || e.url.is_none()
                    }
                }
            },
            ClientAsk::Roots => capabilities.roots.is_some(),
        }
    }
}

/// What the client answered.
pub enum ClientAnswer {
    Sampling(CreateMessageResult),
    Elicitation(ElicitResult),
    Roots(ListRootsResult),
}

/// What an upstream tells its client, passed on to the gateway's clients.
#[derive(Clone)]
pub enum ClientNotice {
    Log(LoggingMessageNotificationParam),
    /// `provider` is the one whose upstream sent it: two providers may both have a URI, and a
    /// client subscribed through one of them wants that one's updates only.
    ResourceUpdated {
        provider: String,
        update: ResourceUpdatedNotificationParam,
    },
    ResourceListChanged,
    PromptListChanged,
}

/// The client request a call serves: the client's session and, when the call is one of its
/// requests, that request's id (what the upstream asks during the call goes on its stream).
#[derive(Clone)]
pub struct Caller {
    pub session: Arc<dyn ClientSession>,
    pub request_id: Option<RequestId>,
}

impl Caller {
    pub fn new(session: Arc<dyn ClientSession>, request_id: Option<RequestId>) -> Caller {
        Caller {
            session,
            request_id,
        }
    }

    /// A caller whose session lives across requests (it has connections of its own, a child
    /// it is pinned to).
    pub fn is_session(&self) -> bool {
        self.session.is_session()
    }

    /// Asks the caller's client, on the stream of the caller's request.
    pub async fn ask(&self, ask: ClientAsk) -> Result<ClientAnswer, McpError> {
        self.session.ask(ask, self.request_id.clone()).await
    }

    /// [`Caller::ask`], under the key the server named the ask by.
    pub async fn ask_keyed(&self, key: &str, ask: ClientAsk) -> Result<ClientAnswer, McpError> {
        self.session
            .ask_keyed(key, ask, self.request_id.clone())
            .await
    }
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("session", &self.session.id())
            .field("request_id", &self.request_id)
            .finish()
    }
}

/// Every live client session of one service (kept across reloads, shared by its providers).
/// Sessions are held by their surface only: the book keeps weak references, and a session
/// leaves it when its [`Membership`] drops.
#[derive(Clone, Default)]
pub struct ClientSessions(Arc<Mutex<HashMap<u64, Weak<dyn ClientSession>>>>);

impl ClientSessions {
    /// A session id unique for the life of the process, whatever kind of session it is for
    /// (the book is keyed by it).
    pub fn new_id() -> u64 {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }

    /// Enters `session` for as long as the returned membership lives (the session holds it).
    pub fn enter(&self, session: Weak<dyn ClientSession>, id: u64) -> Membership {
        self.0.write_unpoisoned().insert(id, session);
        Membership {
            book: Arc::downgrade(&self.0),
            id,
        }
    }

    /// The sessions still open.
    pub fn live(&self) -> Vec<Arc<dyn ClientSession>> {
        let book = self.0.read_unpoisoned();
        book.values().filter_map(Weak::upgrade).collect()
    }

    /// How many sessions the book holds (an ended session's entry is gone at once).
    pub fn len(&self) -> usize {
        self.0.read_unpoisoned().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A session's place in [`ClientSessions`]; leaving drops it.
pub struct Membership {
    book: Weak<Mutex<HashMap<u64, Weak<dyn ClientSession>>>>,
    id: u64,
}

impl Drop for Membership {
    fn drop(&mut self) {
        if let Some(book) = self.book.upgrade() {
            book.write_unpoisoned().remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    struct Session(u64);

    impl ClientSession for Session {
        fn id(&self) -> u64 {
            self.0
        }
        fn is_session(&self) -> bool {
            true
        }
        fn closed(&self) -> BoxFuture<'static, ()> {
            futures::future::pending().boxed()
        }
        fn capabilities(&self) -> Option<ClientCapabilities> {
            None
        }
        fn ask(
            &self,
            _: ClientAsk,
            _: Option<RequestId>,
        ) -> BoxFuture<'_, Result<ClientAnswer, McpError>> {
            futures::future::ready(Ok(ClientAnswer::Roots(ListRootsResult::default()))).boxed()
        }
        fn notify(&self, _: ClientNotice) -> BoxFuture<'_, ()> {
            futures::future::ready(()).boxed()
        }
        fn is_subscribed(&self, _: &str) -> bool {
            false
        }
    }

    fn entered(book: &ClientSessions, id: u64) -> (Arc<dyn ClientSession>, Membership) {
        let session: Arc<dyn ClientSession> = Arc::new(Session(id));
        let membership = book.enter(Arc::downgrade(&session), id);
        (session, membership)
    }

    #[test]
    fn the_book_forgets_sessions_that_ended() {
        let book = ClientSessions::default();
        let (kept, _kept) = entered(&book, 1);
        let (gone, membership) = entered(&book, 2);
        drop(membership);
        drop(gone);
        assert_eq!(book.len(), 1, "the ended session left the book");
        let live: Vec<u64> = book.live().iter().map(|s| s.id()).collect();
        assert_eq!(live, vec![kept.id()]);
    }

    #[test]
    fn a_session_dropped_before_its_membership_is_not_live() {
        let book = ClientSessions::default();
        let (session, _membership) = entered(&book, 3);
        drop(session);
        assert!(book.live().is_empty());
        assert!(!book.is_empty(), "its entry goes with its membership");
    }

    #[test]
    fn what_a_client_must_offer_for_each_ask() {
        let caps = |json| serde_json::from_value::<ClientCapabilities>(json).unwrap();
        let form = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "m".into(),
            requested_schema: serde_json::from_value(
                serde_json::json!({"type": "object", "properties": {}}),
            )
            .unwrap(),
        };
        let elicit = ClientAsk::Elicitation {
            params: Some(form),
            as_sent: None,
        };
        assert!(elicit.offered_by(&caps(serde_json::json!({"elicitation": {}}))));
        assert!(elicit.offered_by(&caps(serde_json::json!({"elicitation": {"form": {}}}))));
        assert!(!elicit.offered_by(&caps(serde_json::json!({"elicitation": {"url": {}}}))));
        assert!(!elicit.offered_by(&caps(serde_json::json!({}))));
        assert!(ClientAsk::Roots.offered_by(&caps(serde_json::json!({"roots": {}}))));
        assert!(!ClientAsk::Roots.offered_by(&caps(serde_json::json!({}))));
        assert_eq!(ClientAsk::Roots.method(), "roots/list");
    }
}
