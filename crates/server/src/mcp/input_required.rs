//! Multi round-trip requests (MCP 2026-07-28, `input_required`) for what the servers behind
//! ask during a call. Those servers speak the handshake era: they ask their client mid-call
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) and wait. A 2026-07-28
//! client has no stream to be asked on, so the call is *parked*: the client is answered
//! `input_required` with the asks and a `requestState` naming the parked call, the upstream
//! keeps waiting, and the client's retry (`inputResponses`, the same `requestState`) answers
//! the asks and waits for the next round: more asks, or the call's result.
//!
//! A parked call is its client's alone (another client's retry is refused as an unknown
//! state), waits at most [`PARKED_FOR`] for its retry, and a service parks at most
//! [`MAX_PARKED`] at once. Log messages the servers send during the call reach the client on
//! each round's stream when it asked for them (`_meta` `io.modelcontextprotocol/logLevel`).
//! With a cluster, the parked call's record names its replica, and the gate sends a retry
//! that lands elsewhere on to it (`gate.rs`).
// rmcp marks logging, sampling and roots deprecated (SEP-2577); 2026-07-28 still asks them
// through `input_required`.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, CreateMessageRequest, CreateMessageResult, ElicitRequest,
    ElicitResult, ErrorCode, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ListRootsRequest, ListRootsResult, LoggingLevel, LoggingMessageNotificationParam,
    ProtocolVersion, RequestId,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::Value;
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::client_session::severity;
use super::errors::jsonrpc;
use crate::provider::clients::{
    ClientAnswer, ClientAsk, ClientNotice, ClientSession, ClientSessions, Membership,
};
use crate::service::cluster::Cluster;
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

/// How long a parked call waits for its client's retry before it is cancelled.
pub const PARKED_FOR: Duration = Duration::from_secs(300);
/// How many calls one service holds parked at once.
pub const MAX_PARKED: usize = 1000;
/// How many log messages a parked call holds for its client's next round.
const MAX_HELD_LOGS: usize = 100;
/// An upstream that asks several things at once sends its requests back to back; a round
/// closes once no ask came for this long, so they go to the client together (as one
/// `input_required` result) rather than one round each.
const ASKS_QUIET: Duration = Duration::from_millis(25);
/// The longest a round waits for more asks after the first, however they keep coming.
const ASKS_GATHER: Duration = Duration::from_millis(250);

/// Whether a request is of the stateless era, whose client is asked through `input_required`
/// (rmcp refuses that answer to an older one).
pub fn asks_by_rounds(context: &RequestContext<RoleServer>) -> bool {
    context
        .meta
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// The parked calls of one service, by their `requestState`.
#[derive(Clone)]
pub struct ParkedCalls {
    calls: Arc<Mutex<HashMap<String, Arc<RoundTrip>>>>,
    /// The askers of the service's MCP tasks (the tasks extension asks through `tasks/get`
    /// and `tasks/update`, not rounds), by task id; each lives as long as its task's call.
    tasks: Arc<Mutex<HashMap<String, Weak<RoundTrip>>>>,
    cluster: Option<Arc<Cluster>>,
}

impl ParkedCalls {
    /// The book of a service; a sweeper cancels calls whose client stopped retrying, until
    /// `drain` stops (every parked call is cancelled then).
    pub fn new(cluster: Option<Arc<Cluster>>, drain: &Shutdown) -> ParkedCalls {
        let parked = ParkedCalls {
            calls: Arc::default(),
            tasks: Arc::default(),
            cluster,
        };
        let sweeper = parked.clone();
        let stop = drain.clone();
        drain.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = stop.cancelled() => {
                        sweeper.sweep(None);
                        return;
                    }
                    _ = tick.tick() => sweeper.sweep(Some(Instant::now())),
                }
            }
        });
        parked
    }

    /// Whether this replica holds the parked call a `requestState` names.
    pub fn holds(&self, state: &str) -> bool {
        self.calls.read_unpoisoned().contains_key(call_of(state))
    }

    pub fn len(&self) -> usize {
        self.calls.read_unpoisoned().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The parked call `state` of `owner`'s, for `tool`: none when unknown, expired, or
    /// another client's or tool's (a client cannot resume another's call).
    pub(super) fn resumed(&self, state: &str, owner: &str, tool: &str) -> Option<Arc<RoundTrip>> {
        self.calls
            .read_unpoisoned()
            .get(call_of(state))
            .filter(|trip| trip.owner == owner && trip.tool == tool && trip.is_current(state))
            .cloned()
    }

    /// `trip` asks for the task `id`'s call (forgotten once that call has ended).
    pub(super) fn asks_for_task(&self, id: &str, trip: &Arc<RoundTrip>) {
        let mut tasks = self.tasks.write_unpoisoned();
        tasks.retain(|_, asker| asker.strong_count() > 0);
        tasks.insert(id.to_owned(), Arc::downgrade(trip));
    }

    /// What asks for the running task `id`'s call, if it is this replica's.
    pub(super) fn task_asker(&self, id: &str) -> Option<Arc<RoundTrip>> {
        self.tasks.read_unpoisoned().get(id)?.upgrade()
    }

    /// Parks `trip` until its client's retry; false when the book is full.
    fn park(&self, trip: &Arc<RoundTrip>) -> bool {
        let mut calls = self.calls.write_unpoisoned();
        if !calls.contains_key(&trip.call_id) {
            if calls.len() >= MAX_PARKED {
                return false;
            }
            calls.insert(trip.call_id.clone(), trip.clone());
            if let Some(cluster) = &self.cluster {
                // Routed as a session of one call: a retry that lands on another replica is
                // sent on to this one by the record.
                cluster.session_live(
                    &trip.call_id,
                    "parked",
                    &crate::clock::timestamp(),
                    PARKED_FOR,
                );
            }
        }
        true
    }

    fn unpark(&self, trip: &RoundTrip) {
        if self
            .calls
            .write_unpoisoned()
            .remove(&trip.call_id)
            .is_some()
            && let Some(cluster) = &self.cluster
        {
            cluster.session_ended(&trip.call_id);
        }
    }

    /// Cancels the calls parked past [`PARKED_FOR`] (every call when `now` is `None`).
    fn sweep(&self, now: Option<Instant>) {
        let expired: Vec<Arc<RoundTrip>> = self
            .calls
            .read_unpoisoned()
            .values()
            .filter(|trip| now.is_none_or(|now| trip.expired_at(now)))
            .cloned()
            .collect();
        for trip in expired {
            tracing::info!(
                target: "mcp_session",
                tool = %trip.tool,
                client = %trip.owner,
                "a call waiting for its client's input was cancelled: no retry came within {} s",
                PARKED_FOR.as_secs()
            );
            trip.cancel.cancel();
            self.unpark(&trip);
        }
    }
}

/// The parked call a `requestState` names (the part before its round's number); also the
/// key of its record with a cluster.
pub fn call_of(state: &str) -> &str {
    state.split_once('.').map_or(state, |(call, _)| call)
}

/// What the client answers one ask with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum AskKind {
    Elicitation,
    Sampling,
    Roots,
}

/// One ask of the upstream, waiting for the client's answer.
struct Ask {
    request: InputRequest,
    kind: AskKind,
    answer: oneshot::Sender<Value>,
}

/// What changes between rounds.
#[derive(Default)]
struct Rounds {
    /// The asks the client has not answered, by the key its answer comes under.
    asks: BTreeMap<String, Ask>,
    next_key: u64,
    /// The call's answer, once it ended.
    outcome: Option<Result<CallToolResponse, McpError>>,
    /// The stream of the round now open (none while the call is parked).
    peer: Option<Peer<RoleServer>>,
    /// The log level the client asked for in this round's `_meta` (none: no log messages).
    log_level: Option<LoggingLevel>,
    /// Log messages sent while no round was open, for the next one.
    held_logs: Vec<LoggingMessageNotificationParam>,
    /// When the call was last parked (none while a round is open).
    parked_at: Option<Instant>,
    /// How many rounds have asked (each names its own `requestState`).
    asked_rounds: u64,
}

/// One tool call of a 2026-07-28 client, over as many rounds as its upstream asks: the
/// client session the upstream's asks go to.
pub struct RoundTrip {
    id: u64,
    /// Names the parked call; each round's `requestState` is it and the round's number.
    call_id: String,
    owner: String,
    tool: String,
    /// What the client declared it can do, in the first request's `_meta`.
    capabilities: Option<ClientCapabilities>,
    rounds: Mutex<Rounds>,
    changed: Notify,
    /// Cancels the call (its client went away, or stopped retrying).
    pub(super) cancel: CancellationToken,
    _membership: Membership,
}

impl RoundTrip {
    /// The round trip of a new call of `owner` to `tool`, entered in `book` (so the log
    /// messages of shared upstream connections reach it) for as long as it lives.
    pub fn new(
        book: &ClientSessions,
        owner: &str,
        tool: &str,
        capabilities: Option<ClientCapabilities>,
    ) -> Arc<RoundTrip> {
        let id = ClientSessions::new_id();
        Arc::new_cyclic(|me: &std::sync::Weak<RoundTrip>| {
            let me: std::sync::Weak<dyn ClientSession> = me.clone();
            RoundTrip {
                id,
                call_id: uuid::Uuid::new_v4().simple().to_string(),
                owner: owner.to_owned(),
                tool: tool.to_owned(),
                capabilities,
                rounds: Mutex::new(Rounds::default()),
                changed: Notify::new(),
                cancel: CancellationToken::new(),
                _membership: book.enter(me, id),
            }
        })
    }

    /// The call ended: its answer, for the round open now or the next.
    pub fn ended(&self, outcome: Result<CallToolResponse, McpError>) {
        self.rounds.write_unpoisoned().outcome = Some(outcome);
        self.changed.notify_waiters();
    }

    /// Whether `state` is the last round's: an earlier round's retry is refused (its asks
    /// were answered, or asked again since).
    fn is_current(&self, state: &str) -> bool {
        let round = self.rounds.read_unpoisoned().asked_rounds;
        state == format!("{}.{round}", self.call_id)
    }

    fn expired_at(&self, now: Instant) -> bool {
        self.rounds
            .read_unpoisoned()
            .parked_at
            .is_some_and(|at| now.duration_since(at) >= PARKED_FOR)
    }

    /// The asks the client has not answered yet, by their keys.
    pub fn pending(&self) -> InputRequests {
        self.rounds
            .read_unpoisoned()
            .asks
            .iter()
            .map(|(key, ask)| (key.clone(), ask.request.clone()))
            .collect()
    }

    /// The client's answers of a retry, each to the ask it names. An answer that does not
    /// decode as what was asked is refused (-32602) and answers nothing; one that names no
    /// outstanding ask is left out (the spec lets a server ignore it).
    pub fn answer(&self, responses: InputResponses) -> Result<(), McpError> {
        let mut rounds = self.rounds.write_unpoisoned();
        for (key, value) in &responses {
            let Some(ask) = rounds.asks.get(key) else {
                tracing::debug!(key, "an answer to nothing outstanding, left out");
                continue;
            };
            decoded(ask.kind, value.clone()).map_err(|why| {
                McpError::invalid_params(format!("inputResponses['{key}']: {why}"), None)
            })?;
        }
        for (key, value) in responses {
            if let Some(ask) = rounds.asks.remove(&key) {
                let _ = ask.answer.send(value);
            }
        }
        Ok(())
    }

    /// A round opens on `context`'s stream: log messages go to it from now on, at the level
    /// it asks for; those held while the call was parked are returned, to be sent first.
    pub fn open_round(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Vec<LoggingMessageNotificationParam> {
        let mut rounds = self.rounds.write_unpoisoned();
        rounds.peer = Some(context.peer.clone());
        rounds.log_level = context.meta.log_level();
        rounds.parked_at = None;
        std::mem::take(&mut rounds.held_logs)
    }

    /// One round: the call's answer if it ends while the round is open, else the asks the
    /// client must answer (the call is then parked in `book`). The client's going away
    /// cancels the call.
    pub async fn round(
        self: &Arc<Self>,
        context: &RequestContext<RoleServer>,
        book: &ParkedCalls,
    ) -> Result<CallToolResponse, McpError> {
        for log in self.open_round(context) {
            let _ = context.peer.notify_logging_message(log).await;
        }
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.asks_outstanding() {
                self.gather_asks(&context.ct).await;
            }
            if let Some(answer) = self.next_answer(book) {
                return answer;
            }
            tokio::select! {
                _ = changed => {}
                _ = context.ct.cancelled() => {
                    self.cancel.cancel();
                    book.unpark(self);
                    return Err(McpError::new(
                        ErrorCode(jsonrpc::REQUEST_CANCELLED),
                        "Request cancelled by the client",
                        None,
                    ));
                }
            }
        }
    }

    /// Whether the client has asks to answer and the call has not ended.
    fn asks_outstanding(&self) -> bool {
        let rounds = self.rounds.read_unpoisoned();
        rounds.outcome.is_none() && !rounds.asks.is_empty()
    }

    /// Waits until no ask came for [`ASKS_QUIET`] (at most [`ASKS_GATHER`]), the call ended,
    /// or `cancel`: the asks an upstream sends together then close one round.
    async fn gather_asks(&self, cancel: &CancellationToken) {
        let until = tokio::time::Instant::now() + ASKS_GATHER;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.rounds.read_unpoisoned().outcome.is_some() {
                return;
            }
            let quiet =
                tokio::time::sleep_until(until.min(tokio::time::Instant::now() + ASKS_QUIET));
            tokio::select! {
                _ = changed => {
                    if tokio::time::Instant::now() >= until {
                        return;
                    }
                }
                _ = quiet => return,
                _ = cancel.cancelled() => return,
            }
        }
    }

    /// What ends the round now, if anything: the call's answer, or its unanswered asks.
    fn next_answer(
        self: &Arc<Self>,
        book: &ParkedCalls,
    ) -> Option<Result<CallToolResponse, McpError>> {
        let mut rounds = self.rounds.write_unpoisoned();
        if let Some(outcome) = rounds.outcome.take() {
            drop(rounds);
            book.unpark(self);
            return Some(outcome);
        }
        if rounds.asks.is_empty() {
            return None;
        }
        let requests: BTreeMap<String, InputRequest> = rounds
            .asks
            .iter()
            .map(|(key, ask)| (key.clone(), ask.request.clone()))
            .collect();
        rounds.peer = None;
        rounds.parked_at = Some(Instant::now());
        rounds.asked_rounds += 1;
        let state = format!("{}.{}", self.call_id, rounds.asked_rounds);
        drop(rounds);
        if !book.park(self) {
            self.cancel.cancel();
            return Some(Err(McpError::new(
                ErrorCode(jsonrpc::INTERNAL_ERROR),
                format!(
                    "Tool '{}' asked its client for input, and {MAX_PARKED} calls of this service already wait for theirs: retry later",
                    self.tool
                ),
                Some(serde_json::json!({
                    "code": contract::ErrorCode::ServiceUnavailable,
                    "retryable": true,
                    "retry_after": 5,
                })),
            )));
        }
        Some(Ok(CallToolResponse::InputRequired(
            InputRequiredResult::new(Some(requests), Some(state)),
        )))
    }

    /// Asks the client in the next round under `key` (the upstream's own, when it gave one
    /// that is not outstanding already; else one of ours), and waits for its answer.
    async fn ask_in_round(
        &self,
        ask: ClientAsk,
        key: Option<String>,
    ) -> Result<ClientAnswer, McpError> {
        let (kind, request) = match ask {
            // A round carries typed requests: one whose schema rmcp's types cannot hold
            // cannot be asked in one (a handshake-era client is asked it as sent).
            ClientAsk::Elicitation { params: None, .. } => {
                return Err(McpError::invalid_params(
                    "elicitation/create: the server's requested schema has a form the gateway cannot put in an input_required round",
                    None,
                ));
            }
            ClientAsk::Elicitation {
                params: Some(params),
                ..
            } => (
                AskKind::Elicitation,
                InputRequest::Elicitation(ElicitRequest::new(params)),
            ),
            ClientAsk::Sampling(params) => (
                AskKind::Sampling,
                InputRequest::CreateMessage(CreateMessageRequest::new(params)),
            ),
            ClientAsk::Roots => (
                AskKind::Roots,
                InputRequest::ListRoots(ListRootsRequest::default()),
            ),
        };
        let (answer, answered) = oneshot::channel();
        {
            let mut rounds = self.rounds.write_unpoisoned();
            rounds.next_key += 1;
            let key = match key {
                Some(key) if !rounds.asks.contains_key(&key) => key,
                _ => format!("{}-{}", kind.name(), rounds.next_key),
            };
            rounds.asks.insert(
                key,
                Ask {
                    request,
                    kind,
                    answer,
                },
            );
        }
        self.changed.notify_waiters();
        let value = tokio::select! {
            value = answered => value.map_err(|_| gone(kind))?,
            _ = self.cancel.cancelled() => return Err(gone(kind)),
        };
        decoded(kind, value).map_err(|why| McpError::internal_error(why, None))
    }

    /// A log message of an upstream: on the open round's stream when the client asked for
    /// its level, held for the next round while the call is parked.
    async fn log(&self, message: LoggingMessageNotificationParam) {
        let peer = {
            let mut rounds = self.rounds.write_unpoisoned();
            let Some(level) = rounds.log_level else {
                return;
            };
            if severity(message.level) < severity(level) {
                return;
            }
            match rounds.peer.clone() {
                Some(peer) => peer,
                None => {
                    if rounds.held_logs.len() < MAX_HELD_LOGS {
                        rounds.held_logs.push(message);
                    }
                    return;
                }
            }
        };
        let _ = peer.notify_logging_message(message).await;
    }
}

impl AskKind {
    fn name(self) -> &'static str {
        match self {
            AskKind::Elicitation => "elicitation",
            AskKind::Sampling => "sampling",
            AskKind::Roots => "roots",
        }
    }
}

/// The ask's call ended before the client answered.
fn gone(kind: AskKind) -> McpError {
    McpError::internal_error(
        format!("{}: the call ended before its client answered", kind.name()),
        None,
    )
}

/// A client's answer read as what was asked.
fn decoded(kind: AskKind, value: Value) -> Result<ClientAnswer, String> {
    let answer = match kind {
        AskKind::Elicitation => {
            serde_json::from_value::<ElicitResult>(value).map(ClientAnswer::Elicitation)
        }
        AskKind::Sampling => {
            serde_json::from_value::<CreateMessageResult>(value).map(ClientAnswer::Sampling)
        }
        AskKind::Roots => serde_json::from_value::<ListRootsResult>(value).map(ClientAnswer::Roots),
    };
    answer.map_err(|e| format!("not a {} result: {e}", kind.name()))
}

impl ClientSession for RoundTrip {
    fn id(&self) -> u64 {
        self.id
    }

    fn is_session(&self) -> bool {
        false
    }

    fn closed(&self) -> BoxFuture<'static, ()> {
        self.cancel.clone().cancelled_owned().boxed()
    }

    fn capabilities(&self) -> Option<ClientCapabilities> {
        self.capabilities.clone()
    }

    fn ask(
        &self,
        ask: ClientAsk,
        _on: Option<RequestId>,
    ) -> BoxFuture<'_, Result<ClientAnswer, McpError>> {
        self.ask_in_round(ask, None).boxed()
    }

    fn ask_keyed(
        &self,
        key: &str,
        ask: ClientAsk,
        _on: Option<RequestId>,
    ) -> BoxFuture<'_, Result<ClientAnswer, McpError>> {
        self.ask_in_round(ask, Some(key.to_owned())).boxed()
    }

    fn notify(&self, notice: ClientNotice) -> BoxFuture<'_, ()> {
        async move {
            // Resource updates and list changes reach a 2026-07-28 client through
            // subscriptions/listen, not a call's stream.
            if let ClientNotice::Log(message) = notice {
                self.log(message).await;
            }
        }
        .boxed()
    }

    fn is_subscribed(&self, _uri: &str) -> bool {
        false
    }
}

impl Drop for RoundTrip {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trip(book: &ClientSessions) -> Arc<RoundTrip> {
        RoundTrip::new(book, "alice", "ask", None)
    }

    /// A book of a service without a cluster (and without its sweeper).
    fn book() -> ParkedCalls {
        ParkedCalls {
            calls: Arc::default(),
            tasks: Arc::default(),
            cluster: None,
        }
    }

    /// The key of the first ask `trip` holds, once one was asked.
    async fn first_ask(trip: &RoundTrip) -> String {
        loop {
            if let Some(key) = trip.rounds.read_unpoisoned().asks.keys().next().cloned() {
                return key;
            }
            tokio::task::yield_now().await;
        }
    }

    fn elicitation() -> ClientAsk {
        ClientAsk::Elicitation {
            params: Some(
                serde_json::from_value(serde_json::json!({
                    "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
                }))
                .unwrap(),
            ),
            as_sent: None,
        }
    }

    #[tokio::test]
    async fn an_ask_waits_for_the_answer_under_its_key() {
        let trip = trip(&ClientSessions::default());
        let asking = {
            let trip = trip.clone();
            tokio::spawn(async move { trip.ask_in_round(elicitation(), None).await })
        };
        let key = first_ask(&trip).await;
        assert_eq!(key, "elicitation-1");
        let mut responses = InputResponses::new();
        responses.insert(
            key,
            serde_json::json!({"action": "accept", "content": {"name": "Ada"}}),
        );
        trip.answer(responses).unwrap();
        match asking.await.unwrap().unwrap() {
            ClientAnswer::Elicitation(result) => {
                assert_eq!(result.content.unwrap()["name"], "Ada")
            }
            _ => panic!("an elicitation answer"),
        }
    }

    /// Starts an ask of `trip` in the background.
    fn ask_later(trip: &Arc<RoundTrip>) {
        let trip = trip.clone();
        tokio::spawn(async move { trip.ask_in_round(elicitation(), None).await });
    }

    #[tokio::test(start_paused = true)]
    async fn asks_sent_together_close_one_round_once_they_stop_coming() {
        let trip = trip(&ClientSessions::default());
        ask_later(&trip);
        first_ask(&trip).await;
        // The upstream's second and third asks come 10 ms apart, within the quiet time.
        let later = trip.clone();
        tokio::spawn(async move {
            for _ in 0..2 {
                tokio::time::sleep(ASKS_QUIET / 2).await;
                ask_later(&later);
            }
        });
        let started = tokio::time::Instant::now();
        trip.gather_asks(&CancellationToken::new()).await;
        assert_eq!(
            trip.pending().len(),
            3,
            "every ask sent together is in the round"
        );
        // Closed a quiet time after the last ask (the paused clock adds a tick per wake).
        let waited = started.elapsed();
        let last_ask = ASKS_QUIET / 2 * 2;
        assert!(
            waited >= last_ask + ASKS_QUIET && waited < last_ask + ASKS_QUIET * 2,
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_waits_no_longer_than_its_bound_for_asks_that_keep_coming() {
        let trip = trip(&ClientSessions::default());
        ask_later(&trip);
        first_ask(&trip).await;
        let later = trip.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(ASKS_QUIET / 2).await;
                ask_later(&later);
            }
        });
        let started = tokio::time::Instant::now();
        trip.gather_asks(&CancellationToken::new()).await;
        let waited = started.elapsed();
        assert!(
            waited >= ASKS_GATHER && waited < ASKS_GATHER + ASKS_QUIET,
            "{waited:?}"
        );
    }

    #[tokio::test]
    async fn answers_of_the_wrong_kind_are_refused_and_to_nothing_asked_left_out() {
        let trip = trip(&ClientSessions::default());
        let mut unknown = InputResponses::new();
        unknown.insert("roots-9".into(), serde_json::json!({"roots": []}));
        assert!(
            trip.answer(unknown).is_ok(),
            "an answer to nothing asked is left out"
        );
        let asking = {
            let trip = trip.clone();
            tokio::spawn(async move { trip.ask_in_round(ClientAsk::Roots, None).await })
        };
        let key = first_ask(&trip).await;
        let mut wrong = InputResponses::new();
        wrong.insert(key.clone(), serde_json::json!({"roots": "nope"}));
        assert!(trip.answer(wrong).is_err(), "not a roots result");
        assert!(
            trip.rounds.read_unpoisoned().asks.contains_key(&key),
            "a refused retry answers nothing"
        );
        trip.cancel.cancel();
        assert!(
            asking.await.unwrap().is_err(),
            "a cancelled call's ask fails"
        );
    }

    #[test]
    fn only_its_client_resumes_a_parked_call() {
        let sessions = ClientSessions::default();
        let calls = book();
        let trip = trip(&sessions);
        assert!(calls.park(&trip));
        trip.rounds.write_unpoisoned().asked_rounds = 2;
        let state = format!("{}.2", trip.call_id);
        assert!(calls.holds(&state));
        assert!(calls.resumed(&state, "alice", "ask").is_some());
        assert!(calls.resumed(&state, "mallory", "ask").is_none());
        assert!(calls.resumed(&state, "alice", "other").is_none());
        let earlier = format!("{}.1", trip.call_id);
        assert!(
            calls.resumed(&earlier, "alice", "ask").is_none(),
            "an earlier round's"
        );
        calls.unpark(&trip);
        assert!(calls.is_empty());
    }

    #[test]
    fn a_call_parked_too_long_is_cancelled() {
        let sessions = ClientSessions::default();
        let calls = book();
        let trip = trip(&sessions);
        let long_ago = Instant::now();
        trip.rounds.write_unpoisoned().parked_at = Some(long_ago);
        assert!(calls.park(&trip));
        calls.sweep(Some(long_ago + PARKED_FOR / 2));
        assert!(!trip.cancel.is_cancelled() && calls.holds(&trip.call_id));
        calls.sweep(Some(long_ago + PARKED_FOR));
        assert!(trip.cancel.is_cancelled() && calls.is_empty());
    }

    #[test]
    fn the_book_parks_no_more_than_its_bound() {
        let sessions = ClientSessions::default();
        let calls = book();
        let kept: Vec<_> = (0..MAX_PARKED).map(|_| trip(&sessions)).collect();
        assert!(kept.iter().all(|t| calls.park(t)));
        assert!(!calls.park(&trip(&sessions)));
        assert!(calls.park(&kept[0]), "one already parked parks again");
    }

    #[test]
    fn calls_parked_together_never_pass_the_bound() {
        let sessions = ClientSessions::default();
        let calls = book();
        let kept: Vec<_> = (0..MAX_PARKED - 5).map(|_| trip(&sessions)).collect();
        assert!(kept.iter().all(|t| calls.park(t)));
        // 40 calls ask at one barrier for the last five places.
        let asking: Vec<_> = (0..40).map(|_| trip(&sessions)).collect();
        let barrier = std::sync::Barrier::new(asking.len());
        let parked = std::thread::scope(|scope| {
            let threads: Vec<_> = asking
                .iter()
                .map(|t| {
                    let (calls, barrier) = (&calls, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        calls.park(t)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap())
                .filter(|parked| *parked)
                .count()
        });
        assert_eq!(parked, 5);
        assert_eq!(calls.calls.read_unpoisoned().len(), MAX_PARKED);
    }
}
