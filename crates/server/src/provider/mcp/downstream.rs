//! The clients behind the gateway, as an upstream MCP connection needs to know them: one
//! [`Downstream`] per client MCP session (its peer, its logging level, its resource
//! subscriptions), the service-wide [`Downstreams`] book, and the [`Caller`] of the tool call
//! running in this task, so that an upstream's request to its client reaches the client whose
//! call caused it.
//!
//! The MCP surface (`src/mcp/`) creates the records and sets the caller; this side reads
//! them. Records are held by their session only: the book keeps weak references, and a
//! record that drops leaves the book and says so through [`Downstream::closed`].
// rmcp marks logging, sampling and roots deprecated (SEP-2577); the protocol versions the
// gateway serves still have them, and clients use them.
#![allow(deprecated)]

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rmcp::model::GetExtensions;
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequest, ElicitRequestParams, ElicitResult, ListRootsRequest,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, RequestId, ServerRequest,
};
use rmcp::service::OriginatingRequestId;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

/// One client MCP session, as the upstream side sees it.
pub struct Downstream {
    id: u64,
    /// Set by the session's first request (rmcp hands the peer to handlers only).
    peer: OnceLock<Peer<RoleServer>>,
    /// The session finished the `initialize` handshake (stateless 2026-07-28 requests never do).
    initialized: AtomicBool,
    /// `logging/setLevel`; `None` until the client sets one: every level is forwarded.
    level: Mutex<Option<LoggingLevel>>,
    /// URIs the client subscribed to with `resources/subscribe`.
    subscriptions: Mutex<BTreeSet<String>>,
    /// Cancelled when the session's record drops: its own upstream connections close.
    closed: CancellationToken,
    /// The book it is entered in, to leave it when it drops.
    book: Weak<Mutex<HashMap<u64, Weak<Downstream>>>>,
}

impl Downstream {
    /// A new record, entered in `book`.
    pub fn new(book: &Downstreams) -> Arc<Downstream> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let record = Arc::new(Downstream {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            peer: OnceLock::new(),
            initialized: AtomicBool::new(false),
            level: Mutex::new(None),
            subscriptions: Mutex::new(BTreeSet::new()),
            closed: CancellationToken::new(),
            book: Arc::downgrade(&book.0),
        });
        book.0
            .write_unpoisoned()
            .insert(record.id, Arc::downgrade(&record));
        record
    }

    pub fn id(&self) -> u64 {
        self.id
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

    /// A handshake-era session (not one stateless request).
    pub fn is_session(&self) -> bool {
        self.initialized.load(Ordering::Acquire)
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

    pub fn is_subscribed(&self, uri: &str) -> bool {
        self.subscriptions.read_unpoisoned().contains(uri)
    }

    /// Resolves when the session's record has dropped.
    pub fn closed(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.closed.clone().cancelled_owned()
    }

    /// What the client said it can do (`sampling`, `elicitation`, `roots`), once known.
    pub fn capabilities(&self) -> Option<ClientCapabilities> {
        Some(self.peer()?.peer_info()?.capabilities.clone())
    }

    /// Sends a log message if the client's level lets it through.
    pub async fn forward_log(&self, params: &LoggingMessageNotificationParam) {
        if let Some(peer) = self.peer()
            && self.is_session()
            && self.wants_log(params.level)
        {
            let _ = peer.notify_logging_message(params.clone()).await;
        }
    }
}

impl Drop for Downstream {
    fn drop(&mut self) {
        self.closed.cancel();
        if let Some(book) = self.book.upgrade() {
            book.write_unpoisoned().remove(&self.id);
        }
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

/// Every client session of one service (kept across reloads, shared by its MCP providers).
#[derive(Clone, Default)]
pub struct Downstreams(Arc<Mutex<HashMap<u64, Weak<Downstream>>>>);

impl Downstreams {
    /// The sessions still open.
    pub fn live(&self) -> Vec<Arc<Downstream>> {
        let book = self.0.read_unpoisoned();
        book.values().filter_map(Weak::upgrade).collect()
    }

    /// How many records the book holds (an ended session's is gone at once).
    pub fn len(&self) -> usize {
        self.0.read_unpoisoned().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The client request a tool call serves: its session and its JSON-RPC id there (`None`:
/// no request of the client is the cause, the session's own stream carries what is asked).
#[derive(Clone)]
pub struct Caller {
    pub downstream: Arc<Downstream>,
    pub request_id: Option<RequestId>,
    /// The upstream's own `tools/call` result, kept so the MCP surface answers exactly what
    /// the server sent (content blocks, annotations, `_meta`), not the contract's reading of it.
    pub result: Arc<Mutex<Option<rmcp::model::CallToolResult>>>,
}

impl Caller {
    pub fn new(downstream: Arc<Downstream>, request_id: Option<RequestId>) -> Caller {
        Caller {
            downstream,
            request_id,
            result: Arc::default(),
        }
    }

    /// The upstream's result, once the call has answered.
    pub fn take_result(&self) -> Option<rmcp::model::CallToolResult> {
        self.result.write_unpoisoned().take()
    }
}

tokio::task_local! {
    /// Set by the MCP surface around a `tools/call`; read where the call leaves.
    pub static CALLER: Caller;
}

/// The caller of the call running in this task, if it came over MCP.
pub fn current_caller() -> Option<Caller> {
    CALLER.try_with(Caller::clone).ok()
}

/// A request from an upstream server to its client, to be asked of a downstream client.
pub enum ClientAsk {
    Sampling(CreateMessageRequestParams),
    Elicitation(ElicitRequestParams),
    Roots,
}

impl ClientAsk {
    fn method(&self) -> &'static str {
        match self {
            ClientAsk::Sampling(_) => "sampling/createMessage",
            ClientAsk::Elicitation(_) => "elicitation/create",
            ClientAsk::Roots => "roots/list",
        }
    }

    /// Whether a client with `capabilities` takes this request.
    pub fn offered_by(&self, capabilities: &ClientCapabilities) -> bool {
        match self {
            ClientAsk::Sampling(_) => capabilities.sampling.is_some(),
            // URL mode needs `url`; form mode is `form`, or an empty capability (older clients).
            ClientAsk::Elicitation(params) => match &capabilities.elicitation {
                None => false,
                Some(e) => match params {
                    ElicitRequestParams::UrlElicitationParams { .. } => e.url.is_some(),
                    _ => e.form.is_some() || e.url.is_none(),
                },
            },
            ClientAsk::Roots => capabilities.roots.is_some(),
        }
    }
}

/// What the downstream client answered.
pub enum ClientAnswer {
    Sampling(CreateMessageResult),
    Elicitation(ElicitResult),
    Roots(ListRootsResult),
}

/// Asks `ask` of the client of `caller` (which offers it: [`ClientAsk::offered_by`]), on the
/// stream of the request that caused it when the transport has one. The request is sent from a task of its own: rmcp marks requests sent
/// from inside a handler with that handler's request, which here is the upstream's.
pub async fn ask_client(
    tasks: &Shutdown,
    caller: &Caller,
    ask: ClientAsk,
) -> Result<ClientAnswer, McpError> {
    let method = ask.method();
    let Some(peer) = caller.downstream.peer().cloned() else {
        return Err(McpError::internal_error(
            format!("{method}: the calling client's session is not known yet"),
            None,
        ));
    };
    let mut request = match ask {
        ClientAsk::Sampling(params) => {
            ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params))
        }
        ClientAsk::Elicitation(params) => ServerRequest::ElicitRequest(ElicitRequest::new(params)),
        ClientAsk::Roots => ServerRequest::ListRootsRequest(ListRootsRequest::default()),
    };
    // On the response stream of the client's request, as the upstream sent it on ours.
    if let Some(id) = &caller.request_id {
        request
            .extensions_mut()
            .insert(OriginatingRequestId(id.clone()));
    }
    let sent = tasks.spawn(async move { peer.send_request(request).await });
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
        ClientResult::ListRootsResult(r) => Ok(ClientAnswer::Roots(r)),
        _ => Err(McpError::internal_error(
            format!("{method}: the client answered with another kind of result"),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_pass_at_or_above_the_one_set_and_all_pass_before() {
        let book = Downstreams::default();
        let d = Downstream::new(&book);
        assert!(d.wants_log(LoggingLevel::Debug));
        d.set_level(LoggingLevel::Warning);
        assert!(!d.wants_log(LoggingLevel::Info));
        assert!(d.wants_log(LoggingLevel::Warning));
        assert!(d.wants_log(LoggingLevel::Emergency));
    }

    #[test]
    fn the_book_forgets_sessions_that_ended_and_says_so() {
        let book = Downstreams::default();
        let kept = Downstream::new(&book);
        let gone = Downstream::new(&book);
        let closed = gone.closed();
        drop(gone);
        assert_eq!(book.len(), 1, "the ended session left the book");
        assert_eq!(
            book.live().iter().map(|d| d.id()).collect::<Vec<_>>(),
            vec![kept.id()]
        );
        assert!(futures::FutureExt::now_or_never(closed).is_some());
    }
}
