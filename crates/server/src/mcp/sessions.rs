//! The MCP session records of one service, for both transports (Streamable HTTP at `/mcp`,
//! legacy SSE at `/sse`): each session's state (created → initialized → closed | expired), the
//! client that opened it, and when it was created, last active and will expire. The book is
//! the one authority on a session's life: it bounds how many are live (`mcp.max_sessions`) and
//! how many one client holds (`mcp.max_sessions_per_client`), makes room when the table is
//! full by ending the least recently used session of a client over its share, expires idle
//! ones (`mcp.session_ttl_secs`, and `mcp.unused_session_grace_secs` for a session that never
//! sent a request after its handshake), and remembers ended ones for a while so a late
//! request learns *why* its session is gone. Every change of state is one log line with the
//! whole record (target `mcp_session`), and live sessions are counted in the service's
//! metrics by transport. With `cluster`, each live session also has a record in Redis naming
//! this replica as its owner ([`crate::service::cluster::sessions`]), and a client's bound
//! counts its sessions on the other replicas too ([`crate::service::cluster`]'s `clients`).

use crate::sync::Unpoisoned;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use tokio_util::sync::CancellationToken;

use crate::service::client_load::{ClientLoad, Holding};
use crate::service::cluster::Cluster;
use crate::service::metrics::ServiceMetrics;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    StreamableHttp,
    Sse,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionState {
    /// The session id is issued (an `initialize` request arrived); the handshake is not done.
    Created,
    /// `initialize` was answered and the client sent `notifications/initialized`.
    Initialized,
    /// Ended by the client (DELETE, or the SSE stream closed) or by shutdown.
    Closed,
    /// Idle for longer than `mcp.session_ttl_secs` (or unused past the grace).
    Expired,
    /// Ended to make room: the table was full and its client held more than its share.
    Evicted,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable-http",
            Transport::Sse => "sse",
        }
    }
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Created => "created",
            SessionState::Initialized => "initialized",
            SessionState::Closed => "closed",
            SessionState::Expired => "expired",
            SessionState::Evicted => "evicted",
        }
    }

    pub fn is_live(self) -> bool {
        matches!(self, SessionState::Created | SessionState::Initialized)
    }
}

/// One session, as logged and as kept in the book.
#[derive(Clone, Debug)]
pub struct SessionRecord {
    pub session_id: String,
    pub transport: Transport,
    pub state: SessionState,
    pub client_name: Option<String>,
    pub client_version: Option<String>,
    pub created_at: DateTime<Utc>,
    pub last_activity_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// The opener's credential ([`crate::service::client::Client::identity`]), when it had one.
    pub owner: Option<String>,
    /// Who the session counts against: its client's name (key, subject, else IP address).
    pub client: Arc<str>,
    /// A request came after the handshake (an unused session expires after the grace).
    pub used: bool,
    /// Its place in the client's holdings (`/health`), while it is live.
    pub held: Option<Arc<Holding>>,
    /// Cancelled when the session ends, so its transport stops serving it.
    pub ended: CancellationToken,
}

/// Why a session cannot take a request.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionRefusal {
    #[error("MCP session not found: initialize a new session")]
    Unknown,
    #[error("MCP session {0} was closed: initialize a new session")]
    Closed(String),
    #[error("MCP session {0} expired after {1} s without activity: initialize a new session")]
    Expired(String, u64),
    #[error(
        "MCP session {0} expired: no request came within {1} s of its handshake (mcp.unused_session_grace_secs): initialize a new session"
    )]
    Unused(String, u64),
    #[error(
        "MCP session {0} was ended to make room (mcp.max_sessions was reached and its client held more than its share): initialize a new session"
    )]
    Evicted(String),
    #[error(
        "Too many MCP sessions (mcp.max_sessions is {0}): end one (DELETE /mcp) or retry later"
    )]
    TooMany(u64),
    #[error(
        "Too many MCP sessions of this client (mcp.max_sessions_per_client is {0}): end one (DELETE /mcp) or retry later"
    )]
    TooManyOfClient(u64),
    #[error(
        "Too many open MCP streams of this client (mcp.max_streams_per_client is {0}): close one or retry later"
    )]
    TooManyStreamsOfClient(u64),
    /// Opened with another credential (key or token subject): answered as an unknown session,
    /// so its existence is not told.
    #[error("MCP session not found: initialize a new session")]
    NotYours,
}

/// A place in the session table, taken when [`SessionBook::admit`] grants it: counted among
/// its client's sessions from that moment (so a request still in flight holds it), it becomes
/// the session's at [`SessionBook::open`] and is given back when dropped unopened (rmcp issued
/// no session, the request failed or was cancelled).
#[must_use = "a place is given back when dropped"]
#[derive(Debug)]
pub struct SessionPlace {
    held: Holding,
}

/// The sessions of one service.
#[derive(Clone)]
pub struct SessionBook {
    records: Arc<Mutex<HashMap<String, SessionRecord>>>,
    ttl: Duration,
    max: u64,
    max_per_client: u64,
    max_streams_per_client: u64,
    unused_grace: Duration,
    refusal_log: Arc<RefusalLog>,
    /// What each client holds: each live session is one of its client's holdings, so the
    /// sessions per client are read here, not counted from the records.
    load: Arc<ClientLoad>,
    metrics: Option<Arc<ServiceMetrics>>,
    cluster: Option<Arc<Cluster>>,
}

impl SessionBook {
    /// The book of at most `max` live sessions, each expiring after `ttl` without a request,
    /// each counted among its client's holdings in `load`.
    pub fn new(ttl: Duration, max: u64, load: Arc<ClientLoad>) -> Self {
        SessionBook {
            records: Arc::default(),
            ttl,
            max,
            max_per_client: max,
            max_streams_per_client: max,
            unused_grace: ttl,
            refusal_log: Arc::default(),
            load,
            metrics: None,
            cluster: None,
        }
    }

    /// Bounds the live sessions of one client, and expires a session unused after its
    /// handshake after `unused_grace`.
    pub fn with_client_bounds(mut self, max_per_client: u64, unused_grace: Duration) -> Self {
        self.max_per_client = max_per_client;
        self.unused_grace = unused_grace;
        self
    }

    /// Bounds each client's open streams.
    pub fn with_streams_per_client(mut self, max_streams_per_client: u64) -> Self {
        self.max_streams_per_client = max_streams_per_client;
        self
    }

    /// A stream `client` opens (`GET /mcp`, `GET /sse`), held until it ends; refused past its
    /// bound (counted and logged as a refusal).
    pub fn open_stream(&self, client: &Arc<str>) -> Result<Holding, SessionRefusal> {
        match self.load.stream(client, self.max_streams_per_client) {
            Some(held) => Ok(held),
            None => {
                self.refused(client, "streams_per_client");
                Err(SessionRefusal::TooManyStreamsOfClient(
                    self.max_streams_per_client,
                ))
            }
        }
    }

    /// Keeps a record of each live session in the cluster's Redis.
    pub fn with_cluster(mut self, cluster: Option<Arc<Cluster>>) -> Self {
        self.cluster = cluster;
        self
    }

    pub fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.cluster.as_ref()
    }

    /// Writes `record`'s state to the cluster (a live session) or removes it (an ended one):
    /// a Streamable HTTP request for it on another replica is answered 404 naming the owner,
    /// a legacy SSE message is sent on to the owner ([`crate::service::cluster::forward`]).
    fn shared(&self, record: &SessionRecord) {
        let Some(cluster) = &self.cluster else {
            return;
        };
        if record.state.is_live() {
            cluster.session_live(
                &record.session_id,
                record.state.as_str(),
                &crate::clock::format(record.created_at),
                self.ttl,
            );
        } else {
            cluster.session_ended(&record.session_id);
        }
    }

    /// Counts sessions opened and live in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<ServiceMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    fn counted_open(&self, transport: Transport) {
        if let Some(metrics) = &self.metrics {
            metrics.session_opened(transport.as_str());
        }
    }

    fn counted_end(&self, transport: Transport) {
        if let Some(metrics) = &self.metrics {
            metrics.session_ended(transport.as_str());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SessionRecord>> {
        self.records.write_unpoisoned()
    }

    fn ttl(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.ttl).unwrap_or(chrono::Duration::MAX)
    }

    /// A place for one more live session of `client`, taken now: the decision and the count
    /// are made under one lock, so of many `initialize` in flight together no more are granted
    /// than there are places. Refused when the client holds its bound (places granted and not
    /// yet opened count as held); when the table is full, the least recently used session of
    /// another client holding more than its share (the bound over the clients holding sessions,
    /// the asker counted) is ended to make room, and the asker is refused when it holds its
    /// share already or no other client holds more.
    pub fn admit(&self, client: &Arc<str>) -> Result<SessionPlace, SessionRefusal> {
        // The records' lock is held until the place is counted: every admit, open and end
        // waits for the decision, and the next admit sees this one's place.
        let mut records = self.lock();
        let held: HashMap<Arc<str>, u64> = self.load.sessions_by_client().into_iter().collect();
        let mine = held.get(client).copied().unwrap_or(0);
        // Held here and, with `cluster`, on the other replicas.
        let elsewhere = self
            .cluster
            .as_ref()
            .map_or(0, |c| c.sessions_elsewhere(client));
        // A client's bound as large as the table is the table's (refused below, 503).
        if self.max_per_client < self.max && mine + elsewhere >= self.max_per_client {
            self.refused(client, "sessions_per_client");
            return Err(SessionRefusal::TooManyOfClient(self.max_per_client));
        }
        let live: u64 = held.values().sum();
        if live >= self.max {
            let clients = held.len() as u64 + u64::from(mine == 0);
            let share = self.max.div_ceil(clients).max(1);
            // A client at its share makes room for nobody, least of all for itself: a flood
            // from one client is refused, not turned into churn of its own sessions.
            let over: std::collections::HashSet<&Arc<str>> = held
                .iter()
                .filter(|(c, n)| **n > share && *c != client)
                .map(|(c, _)| c)
                .collect();
            let victim = (mine < share)
                .then(|| {
                    records
                        .values()
                        .filter(|r| r.state.is_live() && over.contains(&r.client))
                        .min_by_key(|r| r.last_activity_at)
                        .map(|r| r.session_id.clone())
                })
                .flatten();
            let Some(victim) = victim.and_then(|id| records.get_mut(&id)) else {
                self.refused(client, "sessions");
                return Err(SessionRefusal::TooMany(self.max));
            };
            victim.state = SessionState::Evicted;
            victim.held = None;
            victim.ended.cancel();
            log(victim);
            self.shared(victim);
            self.counted_end(victim.transport);
            if let Some(metrics) = &self.metrics {
                metrics.session_ended_early("evicted");
            }
        }
        Ok(SessionPlace {
            held: self.load.session(client),
        })
    }

    /// Counts a refusal, and logs it once per client and bound a minute (a flood is one line).
    fn refused(&self, client: &str, bound: &'static str) {
        if let Some(metrics) = &self.metrics {
            metrics.client_refused(bound);
        }
        if self.refusal_log.first_in_a_minute(client, bound) {
            tracing::warn!(
                target: "mcp_session",
                client,
                bound,
                limit = match bound {
                    "sessions" => self.max,
                    "streams_per_client" => self.max_streams_per_client,
                    _ => self.max_per_client,
                },
                "an MCP session was refused (logged once per client and bound a minute)"
            );
        }
    }

    /// Tells the metrics the sessions of the client holding the most.
    fn count_top(&self) {
        let Some(metrics) = &self.metrics else { return };
        let most = self
            .load
            .sessions_by_client()
            .into_iter()
            .map(|(_, n)| n)
            .max();
        metrics.set_top_client_sessions(most.unwrap_or(0));
    }

    /// The clients holding the most live sessions, most first, at most `n`.
    pub fn top_clients(&self, n: usize) -> Vec<(Arc<str>, u64)> {
        let mut top = self.load.sessions_by_client();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        top.truncate(n);
        top
    }

    /// Records a new session (state `created`) in the place [`admit`](Self::admit) granted;
    /// its `ended` token tells the transport when the book ends it.
    pub fn open(
        &self,
        place: SessionPlace,
        session_id: &str,
        transport: Transport,
        client: Option<(String, String)>,
        owner: Option<String>,
    ) -> CancellationToken {
        let now = Utc::now();
        let (client_name, client_version) = client.unzip();
        let record = SessionRecord {
            session_id: session_id.to_owned(),
            transport,
            state: SessionState::Created,
            client_name,
            client_version,
            created_at: now,
            last_activity_at: now,
            expires_at: now + self.ttl(),
            owner,
            client: place.held.client().clone(),
            held: Some(Arc::new(place.held)),
            used: false,
            ended: CancellationToken::new(),
        };
        log(&record);
        self.shared(&record);
        let ended = record.ended.clone();
        let mut records = self.lock();
        let replaced = records.insert(session_id.to_owned(), record);
        drop(records);
        // The replaced record's holding goes with it, before the count.
        let replaced_live = replaced.filter(|r| r.state.is_live()).map(|r| r.transport);
        self.count_top();
        self.counted_open(transport);
        if let Some(transport) = replaced_live {
            self.counted_end(transport);
        }
        ended
    }

    /// With `cluster`, writes the record of the session just opened to Redis before its
    /// opener is answered ([`Cluster::session_opened`]); without, nothing.
    pub async fn shared_now(&self, session_id: &str) {
        let Some(cluster) = &self.cluster else {
            return;
        };
        let record = self
            .lock()
            .get(session_id)
            .filter(|r| r.state.is_live())
            .map(|r| (r.state.as_str(), crate::clock::format(r.created_at)));
        if let Some((state, created)) = record {
            cluster
                .session_opened(session_id, state, &created, self.ttl)
                .await;
        }
    }

    /// A request of `identity` (its credential's) arrived in the session: its state if live
    /// and the opener's (and the idle clock restarts), else why it is refused. `use_` says
    /// whether it is more than the handshake (a session never used expires after the grace).
    pub fn touch(
        &self,
        session_id: &str,
        identity: Option<&str>,
        use_: bool,
    ) -> Result<SessionState, SessionRefusal> {
        let now = Utc::now();
        let ttl = self.ttl();
        let mut records = self.lock();
        let Some(record) = records.get_mut(session_id) else {
            return Err(SessionRefusal::Unknown);
        };
        if record.owner.is_some() && record.owner.as_deref() != identity {
            return Err(SessionRefusal::NotYours);
        }
        match record.state {
            SessionState::Closed => Err(SessionRefusal::Closed(session_id.to_owned())),
            SessionState::Expired if !record.used => Err(SessionRefusal::Unused(
                session_id.to_owned(),
                self.unused_grace.as_secs(),
            )),
            SessionState::Expired => Err(SessionRefusal::Expired(
                session_id.to_owned(),
                self.ttl.as_secs(),
            )),
            SessionState::Evicted => Err(SessionRefusal::Evicted(session_id.to_owned())),
            live => {
                record.used |= use_;
                record.last_activity_at = now;
                record.expires_at = now + ttl;
                self.shared(record);
                Ok(live)
            }
        }
    }

    /// The client's name and version from its `initialize` request.
    pub fn set_client(&self, session_id: &str, name: String, version: String) {
        if let Some(record) = self.lock().get_mut(session_id) {
            record.client_name = Some(name);
            record.client_version = Some(version);
        }
    }

    /// The handshake is done (`notifications/initialized` after a successful `initialize`).
    pub fn initialized(&self, session_id: &str) {
        self.transition(session_id, SessionState::Created, SessionState::Initialized);
    }

    /// The client ended the session, or its stream closed.
    pub fn close(&self, session_id: &str) {
        let mut records = self.lock();
        if let Some(record) = records.get_mut(session_id)
            && record.state.is_live()
        {
            record.state = SessionState::Closed;
            record.held = None;
            record.ended.cancel();
            log(record);
            self.shared(record);
            self.counted_end(record.transport);
        }
        self.count_top();
    }

    fn transition(&self, session_id: &str, from: SessionState, to: SessionState) {
        if let Some(record) = self.lock().get_mut(session_id)
            && record.state == from
        {
            record.state = to;
            log(record);
            self.shared(record);
        }
    }

    /// Expires live sessions idle past the TTL, and those unused past the grace since they
    /// were opened (cancelling their `ended` token), and forgets ended ones after one more
    /// TTL. Returns the sessions it expired.
    pub fn sweep(&self, now: DateTime<Utc>) -> Vec<SessionRecord> {
        let ttl = self.ttl();
        let grace = chrono::Duration::from_std(self.unused_grace).unwrap_or(chrono::Duration::MAX);
        let mut expired = Vec::new();
        let mut records = self.lock();
        records.retain(|_, record| {
            let unused = !record.used && record.created_at + grace <= now;
            if record.state.is_live() && (record.expires_at <= now || unused) {
                if unused && let Some(metrics) = &self.metrics {
                    metrics.session_ended_early("unused");
                }
                record.state = SessionState::Expired;
                record.held = None;
                record.ended.cancel();
                log(record);
                self.shared(record);
                self.counted_end(record.transport);
                expired.push(record.clone());
            }
            record.state.is_live() || record.expires_at + ttl > now
        });
        self.count_top();
        expired
    }

    /// How often [`sweep`](Self::sweep) should run: often enough that a session expires within
    /// a fraction of its TTL, never busier than ten times a second.
    pub fn sweep_period(&self) -> Duration {
        (self.ttl.min(self.unused_grace) / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(5))
    }

    /// Ends every live session (the service is shutting down).
    pub fn close_all(&self) {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        for id in ids {
            self.close(&id);
        }
    }

    #[cfg(test)]
    pub fn get(&self, session_id: &str) -> Option<SessionRecord> {
        self.lock().get(session_id).cloned()
    }
}

/// When each client was last logged as refused, by bound: one line a minute each. Forgets
/// entries older than a minute once it holds many.
#[derive(Default)]
struct RefusalLog {
    last: Mutex<HashMap<(String, &'static str), std::time::Instant>>,
}

impl RefusalLog {
    const EVERY: Duration = Duration::from_secs(60);

    fn first_in_a_minute(&self, client: &str, bound: &'static str) -> bool {
        let now = std::time::Instant::now();
        let mut last = self.last.write_unpoisoned();
        if last.len() > 4096 {
            last.retain(|_, at| now.duration_since(*at) < Self::EVERY);
        }
        match last.get_mut(&(client.to_owned(), bound)) {
            Some(at) if now.duration_since(*at) < Self::EVERY => false,
            Some(at) => {
                *at = now;
                true
            }
            None => {
                last.insert((client.to_owned(), bound), now);
                true
            }
        }
    }
}

fn log(record: &SessionRecord) {
    tracing::info!(
        target: "mcp_session",
        session_id = %record.session_id,
        transport = record.transport.as_str(),
        state = record.state.as_str(),
        client = %record.client,
        client_name = record.client_name.as_deref().unwrap_or(""),
        client_version = record.client_version.as_deref().unwrap_or(""),
        created_at = %record.created_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        last_activity_at = %record.last_activity_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        expires_at = %record.expires_at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "mcp session {}",
        record.state.as_str()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(max: u64) -> SessionBook {
        SessionBook::new(Duration::from_secs(60), max, Arc::default())
    }

    /// A session of `client` opened in the place the book grants it.
    fn opened(
        book: &SessionBook,
        id: &str,
        transport: Transport,
        client: &str,
    ) -> CancellationToken {
        let place = book.admit(&client.into()).expect("a place");
        book.open(place, id, transport, None, None)
    }

    #[test]
    fn a_session_goes_created_initialized_closed() {
        let book = book(5);
        let ended = opened(&book, "s1", Transport::StreamableHttp, "c");
        assert_eq!(book.touch("s1", None, true), Ok(SessionState::Created));
        book.set_client("s1", "claude".into(), "1.2".into());
        book.initialized("s1");
        assert_eq!(book.touch("s1", None, true), Ok(SessionState::Initialized));
        let record = book.get("s1").unwrap();
        assert_eq!(record.client_name.as_deref(), Some("claude"));
        assert_eq!(record.expires_at, record.last_activity_at + book.ttl());
        assert!(!ended.is_cancelled());
        book.close("s1");
        assert!(ended.is_cancelled());
        assert_eq!(
            book.touch("s1", None, true),
            Err(SessionRefusal::Closed("s1".to_owned()))
        );
        assert_eq!(book.touch("nope", None, true), Err(SessionRefusal::Unknown));
    }

    #[test]
    fn idle_sessions_expire_and_are_forgotten_one_ttl_later() {
        let book = book(5);
        let ended = opened(&book, "s1", Transport::Sse, "c");
        opened(&book, "s2", Transport::Sse, "c");
        book.touch("s1", None, true).unwrap();
        let later = Utc::now() + chrono::Duration::seconds(61);
        // s2 was active just before the sweep; s1 was not.
        let mut records = book.lock();
        let s2 = records.get_mut("s2").unwrap();
        (s2.expires_at, s2.used) = (later + chrono::Duration::seconds(60), true);
        drop(records);
        let expired = book.sweep(later);
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].session_id, "s1");
        assert!(ended.is_cancelled());
        assert_eq!(
            book.touch("s1", None, true),
            Err(SessionRefusal::Expired("s1".to_owned(), 60))
        );
        assert_eq!(book.touch("s2", None, true), Ok(SessionState::Created));
        book.sweep(later + chrono::Duration::seconds(121));
        assert_eq!(
            book.touch("s1", None, true),
            Err(SessionRefusal::Unknown),
            "forgotten"
        );
    }

    #[test]
    fn only_live_sessions_count_against_the_bound() {
        let book = book(2);
        opened(&book, "a", Transport::StreamableHttp, "x");
        opened(&book, "b", Transport::Sse, "y");
        assert_eq!(
            book.admit(&"c".into()).map(drop),
            Err(SessionRefusal::TooMany(2))
        );
        book.close("a");
        assert_eq!(book.admit(&"c".into()).map(drop), Ok(()));
    }

    #[test]
    fn live_sessions_are_counted_by_transport() {
        let metrics = Arc::new(ServiceMetrics::new("s"));
        let book = book(5).with_metrics(metrics.clone());
        let live = |transport: &str| {
            let wanted = format!(
                "mcp_http_gateway_mcp_sessions{{transport=\"{transport}\",service=\"s\"}} "
            );
            let text = metrics.render(&Default::default());
            text.lines()
                .find_map(|l| l.strip_prefix(wanted.as_str())?.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("{wanted}:\n{text}"))
        };
        opened(&book, "a", Transport::StreamableHttp, "c");
        opened(&book, "b", Transport::StreamableHttp, "c");
        opened(&book, "c", Transport::Sse, "c");
        assert_eq!((live("streamable-http"), live("sse")), (2.0, 1.0));
        book.close("a");
        book.close("a");
        assert_eq!(
            live("streamable-http"),
            1.0,
            "a second close is no second end"
        );
        book.sweep(Utc::now() + chrono::Duration::seconds(61));
        assert_eq!(
            (live("streamable-http"), live("sse")),
            (0.0, 0.0),
            "expired"
        );
        book.close("b");
        assert_eq!(
            live("streamable-http"),
            0.0,
            "an expired session does not end again"
        );
    }

    #[test]
    fn one_client_is_refused_past_its_bound_and_others_are_not() {
        let book = book(10).with_client_bounds(2, Duration::from_secs(60));
        opened(&book, "a1", Transport::StreamableHttp, "a");
        opened(&book, "a2", Transport::Sse, "a");
        assert_eq!(
            book.admit(&"a".into()).map(drop),
            Err(SessionRefusal::TooManyOfClient(2))
        );
        assert_eq!(book.admit(&"b".into()).map(drop), Ok(()));
        book.close("a1");
        assert_eq!(
            book.admit(&"a".into()).map(drop),
            Ok(()),
            "an ended session frees its place"
        );
        assert_eq!(
            book.top_clients(5),
            vec![(Arc::from("a"), 1)],
            "only live sessions count"
        );
    }

    #[test]
    fn a_full_table_makes_room_by_ending_the_oldest_session_of_a_client_over_its_share() {
        let book = book(4).with_client_bounds(4, Duration::from_secs(60));
        for id in ["a1", "a2", "a3"] {
            opened(&book, id, Transport::StreamableHttp, "a");
        }
        opened(&book, "b1", Transport::StreamableHttp, "b");
        // a1 is a's least recently used: a2 and a3 were used since.
        for id in ["a2", "a3"] {
            book.lock().get_mut(id).unwrap().last_activity_at += chrono::Duration::seconds(5);
        }
        let ended = book.get("a1").unwrap().ended;
        // Three clients then (a, b and c, the asker): a share is 2 of 4; a holds 3.
        assert_eq!(book.admit(&"c".into()).map(drop), Ok(()));
        assert!(ended.is_cancelled());
        assert_eq!(
            book.touch("a1", None, true),
            Err(SessionRefusal::Evicted("a1".into()))
        );
        assert_eq!(book.touch("a2", None, true), Ok(SessionState::Created));
        opened(&book, "c1", Transport::StreamableHttp, "c");
        // Full again: a fourth client makes a share 1 of 4, and a holds 2.
        assert_eq!(book.admit(&"d".into()).map(drop), Ok(()));
        assert_eq!(book.top_clients(1)[0].1, 1, "a lost one more");
        opened(&book, "d1", Transport::StreamableHttp, "d");
        // Full, one each: nobody holds more than a share, so nobody is ended.
        assert_eq!(
            book.admit(&"e".into()).map(drop),
            Err(SessionRefusal::TooMany(4))
        );
        assert_eq!(
            book.admit(&"a".into()).map(drop),
            Err(SessionRefusal::TooMany(4))
        );
    }

    /// `n` threads released at one barrier, each asking `book` for a place for its client:
    /// the places granted (kept, as a handshake in flight keeps its place) and the refusals.
    fn admitted_together(
        book: &SessionBook,
        clients: &[&str],
    ) -> (Vec<SessionPlace>, Vec<SessionRefusal>) {
        let barrier = std::sync::Barrier::new(clients.len());
        let answers: Vec<Result<SessionPlace, SessionRefusal>> = std::thread::scope(|scope| {
            let asking: Vec<_> = clients
                .iter()
                .map(|client| {
                    let (book, barrier) = (book.clone(), &barrier);
                    let client: Arc<str> = (*client).into();
                    scope.spawn(move || {
                        barrier.wait();
                        book.admit(&client)
                    })
                })
                .collect();
            asking.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut places = Vec::new();
        let mut refusals = Vec::new();
        for answer in answers {
            match answer {
                Ok(place) => places.push(place),
                Err(refusal) => refusals.push(refusal),
            }
        }
        (places, refusals)
    }

    #[test]
    fn places_asked_for_together_never_pass_a_client_s_bound() {
        let book = book(1000).with_client_bounds(100, Duration::from_secs(60));
        for i in 0..99 {
            opened(&book, &format!("s{i}"), Transport::StreamableHttp, "c");
        }
        // 40 handshakes at one instant from a client one short of its bound: one gets in.
        let (places, refusals) = admitted_together(&book, &["c"; 40]);
        assert_eq!(places.len(), 1);
        assert!(
            refusals
                .iter()
                .all(|r| *r == SessionRefusal::TooManyOfClient(100))
        );
        assert_eq!(
            book.load.of("c").sessions,
            100,
            "the place is held before it opens"
        );
        // A place given back unopened (rmcp issued no session) is free again.
        drop(places);
        assert_eq!(book.load.of("c").sessions, 99);
        let (places, _) = admitted_together(&book, &["c"; 8]);
        assert_eq!(places.len(), 1);
    }

    #[test]
    fn places_asked_for_together_never_pass_the_table() {
        let book = book(40).with_client_bounds(40, Duration::from_secs(60));
        for (client, n) in [("a", 10), ("b", 10), ("c", 10), ("d", 9)] {
            for i in 0..n {
                opened(
                    &book,
                    &format!("{client}{i}"),
                    Transport::StreamableHttp,
                    client,
                );
            }
        }
        let live = |book: &SessionBook| -> u64 {
            book.load.sessions_by_client().iter().map(|(_, n)| n).sum()
        };
        let evicted = |book: &SessionBook| {
            book.lock()
                .values()
                .filter(|r| r.state == SessionState::Evicted)
                .count()
        };
        // The last place, asked for 30 times at once by the four clients: one gets it, and
        // any other only by ending the session of a client that came to hold more than its
        // share meanwhile.
        let askers: Vec<&str> = ["a", "b", "c", "d"].into_iter().cycle().take(30).collect();
        let (places, refusals) = admitted_together(&book, &askers);
        assert_eq!(places.len(), 1 + evicted(&book), "{refusals:?}");
        assert!(places.len() <= 2);
        assert_eq!(live(&book), 40);
        // A fifth client, 30 times at once: each place it gets is made by ending another
        // client's session, so the table stays full and never passes its bound.
        let (places_of_e, _) = admitted_together(&book, &["e"; 30]);
        assert!(!places_of_e.is_empty());
        assert_eq!(live(&book), 40);
        drop((places, places_of_e));
        // One client alone, flooding a table as large as its bound: it fills it and is then
        // refused, never evicting its own sessions to get in again.
        let book = book_of(40);
        let (places, refusals) = admitted_together(&book, &["f"; 60]);
        assert_eq!((places.len(), refusals.len()), (40, 20));
        assert!(refusals.iter().all(|r| *r == SessionRefusal::TooMany(40)));
        for (i, place) in places.into_iter().enumerate() {
            book.open(
                place,
                &format!("f{i}"),
                Transport::StreamableHttp,
                None,
                None,
            );
        }
        assert_eq!(
            book.admit(&"f".into()).map(drop),
            Err(SessionRefusal::TooMany(40))
        );
        assert!(
            book.lock().values().all(|r| r.state.is_live()),
            "none evicted"
        );
    }

    fn book_of(max: u64) -> SessionBook {
        book(max).with_client_bounds(max, Duration::from_secs(60))
    }

    #[test]
    fn a_client_at_its_share_makes_no_room_for_itself() {
        let book = book_of(4);
        for id in ["a1", "a2", "a3"] {
            opened(&book, id, Transport::StreamableHttp, "a");
        }
        opened(&book, "b1", Transport::StreamableHttp, "b");
        // Two clients: a share is 2; a holds 3, over it, and asks again: refused, not churned.
        assert_eq!(
            book.admit(&"a".into()).map(drop),
            Err(SessionRefusal::TooMany(4))
        );
        assert!(book.lock().values().all(|r| r.state.is_live()));
        // b holds less than its share: room is made from a.
        assert_eq!(book.admit(&"b".into()).map(drop), Ok(()));
        assert_eq!(book.get("a1").unwrap().state, SessionState::Evicted);
    }

    #[test]
    fn a_session_unused_after_its_handshake_expires_after_the_grace() {
        let book = book(5).with_client_bounds(5, Duration::from_secs(10));
        for id in ["idle", "used", "handshake-only"] {
            opened(&book, id, Transport::StreamableHttp, "c");
        }
        book.touch("used", None, true).unwrap();
        // notifications/initialized is not a use.
        book.touch("handshake-only", None, false).unwrap();
        let expired = book.sweep(Utc::now() + chrono::Duration::seconds(11));
        let mut ids: Vec<&str> = expired.iter().map(|r| r.session_id.as_str()).collect();
        ids.sort();
        assert_eq!(ids, vec!["handshake-only", "idle"]);
        assert_eq!(
            book.touch("idle", None, true),
            Err(SessionRefusal::Unused("idle".into(), 10))
        );
        assert_eq!(book.touch("used", None, true), Ok(SessionState::Created));
    }

    #[test]
    fn a_refusal_is_logged_once_per_client_and_bound_a_minute() {
        let log = RefusalLog::default();
        assert!(log.first_in_a_minute("a", "sessions"));
        assert!(!log.first_in_a_minute("a", "sessions"));
        assert!(log.first_in_a_minute("a", "sessions_per_client"));
        assert!(log.first_in_a_minute("b", "sessions"));
        let earlier = std::time::Instant::now() - Duration::from_secs(61);
        *log.last
            .write_unpoisoned()
            .get_mut(&("a".into(), "sessions"))
            .unwrap() = earlier;
        assert!(log.first_in_a_minute("a", "sessions"), "a minute later");
    }

    #[test]
    fn the_handshake_cannot_be_skipped_or_repeated_after_an_end() {
        let book = book(2);
        opened(&book, "a", Transport::StreamableHttp, "c");
        book.close("a");
        book.initialized("a");
        assert_eq!(book.get("a").unwrap().state, SessionState::Closed);
    }
}
