//! The MCP session records of one service, for both transports (Streamable HTTP at `/mcp`,
//! legacy SSE at `/sse`): each session's state (created → initialized → closed | expired), the
//! client that opened it, and when it was created, last active and will expire. The book is
//! the one authority on a session's life: it bounds how many are live (`mcp.max_sessions`),
//! expires idle ones (`mcp.session_ttl_secs`), and remembers ended ones for a while so a late
//! request learns *why* its session is gone. Every change of state is one log line with the
//! whole record (target `mcp_session`), and live sessions are counted in the service's
//! metrics by transport. With `cluster`, each live session also has a record in Redis naming
//! this replica as its owner ([`crate::service::cluster::sessions`]).

use crate::sync::Unpoisoned;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use tokio_util::sync::CancellationToken;

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
    /// Idle for longer than `mcp.session_ttl_secs`.
    Expired,
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
        "Too many MCP sessions (mcp.max_sessions is {0}): end one (DELETE /mcp) or retry later"
    )]
    TooMany(u64),
    /// Opened with another credential (key or token subject): answered as an unknown session,
    /// so its existence is not told.
    #[error("MCP session not found: initialize a new session")]
    NotYours,
}

/// The sessions of one service.
#[derive(Clone)]
pub struct SessionBook {
    records: Arc<Mutex<HashMap<String, SessionRecord>>>,
    ttl: Duration,
    max: u64,
    metrics: Option<Arc<ServiceMetrics>>,
    cluster: Option<Arc<Cluster>>,
}

impl SessionBook {
    pub fn new(ttl: Duration, max: u64) -> Self {
        SessionBook {
            records: Arc::default(),
            ttl,
            max,
            metrics: None,
            cluster: None,
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

    /// Room for one more live session?
    pub fn admit(&self) -> Result<(), SessionRefusal> {
        let live = self.lock().values().filter(|r| r.state.is_live()).count() as u64;
        if live >= self.max {
            return Err(SessionRefusal::TooMany(self.max));
        }
        Ok(())
    }

    /// Records a new session (state `created`); its `ended` token tells the transport when the
    /// book ends it.
    pub fn open(
        &self,
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
            ended: CancellationToken::new(),
        };
        log(&record);
        self.shared(&record);
        let ended = record.ended.clone();
        let replaced = self.lock().insert(session_id.to_owned(), record);
        self.counted_open(transport);
        if let Some(old) = replaced.filter(|r| r.state.is_live()) {
            self.counted_end(old.transport);
        }
        ended
    }

    /// A request of `identity` (its credential's) arrived in the session: its state if live
    /// and the opener's (and the idle clock restarts), else why it is refused.
    pub fn touch(
        &self,
        session_id: &str,
        identity: Option<&str>,
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
            SessionState::Expired => Err(SessionRefusal::Expired(
                session_id.to_owned(),
                self.ttl.as_secs(),
            )),
            live => {
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
            record.ended.cancel();
            log(record);
            self.shared(record);
            self.counted_end(record.transport);
        }
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

    /// Expires live sessions idle past the TTL (cancelling their `ended` token) and forgets
    /// ended ones after one more TTL. Returns the sessions it expired.
    pub fn sweep(&self, now: DateTime<Utc>) -> Vec<SessionRecord> {
        let ttl = self.ttl();
        let mut expired = Vec::new();
        let mut records = self.lock();
        records.retain(|_, record| {
            if record.state.is_live() && record.expires_at <= now {
                record.state = SessionState::Expired;
                record.ended.cancel();
                log(record);
                self.shared(record);
                self.counted_end(record.transport);
                expired.push(record.clone());
            }
            record.state.is_live() || record.expires_at + ttl > now
        });
        expired
    }

    /// How often [`sweep`](Self::sweep) should run: often enough that a session expires within
    /// a fraction of its TTL, never busier than ten times a second.
    pub fn sweep_period(&self) -> Duration {
        (self.ttl / 4).clamp(Duration::from_millis(100), Duration::from_secs(5))
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

fn log(record: &SessionRecord) {
    tracing::info!(
        target: "mcp_session",
        session_id = %record.session_id,
        transport = record.transport.as_str(),
        state = record.state.as_str(),
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
        SessionBook::new(Duration::from_secs(60), max)
    }

    #[test]
    fn a_session_goes_created_initialized_closed() {
        let book = book(5);
        let ended = book.open("s1", Transport::StreamableHttp, None, None);
        assert_eq!(book.touch("s1", None), Ok(SessionState::Created));
        book.set_client("s1", "claude".into(), "1.2".into());
        book.initialized("s1");
        assert_eq!(book.touch("s1", None), Ok(SessionState::Initialized));
        let record = book.get("s1").unwrap();
        assert_eq!(record.client_name.as_deref(), Some("claude"));
        assert_eq!(record.expires_at, record.last_activity_at + book.ttl());
        assert!(!ended.is_cancelled());
        book.close("s1");
        assert!(ended.is_cancelled());
        assert_eq!(
            book.touch("s1", None),
            Err(SessionRefusal::Closed("s1".to_owned()))
        );
        assert_eq!(book.touch("nope", None), Err(SessionRefusal::Unknown));
    }

    #[test]
    fn idle_sessions_expire_and_are_forgotten_one_ttl_later() {
        let book = book(5);
        let ended = book.open("s1", Transport::Sse, None, None);
        book.open("s2", Transport::Sse, None, None);
        let later = Utc::now() + chrono::Duration::seconds(61);
        // s2 was active just before the sweep; s1 was not.
        book.lock().get_mut("s2").unwrap().expires_at = later + chrono::Duration::seconds(60);
        let expired = book.sweep(later);
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].session_id, "s1");
        assert!(ended.is_cancelled());
        assert_eq!(
            book.touch("s1", None),
            Err(SessionRefusal::Expired("s1".to_owned(), 60))
        );
        assert_eq!(book.touch("s2", None), Ok(SessionState::Created));
        book.sweep(later + chrono::Duration::seconds(121));
        assert_eq!(
            book.touch("s1", None),
            Err(SessionRefusal::Unknown),
            "forgotten"
        );
    }

    #[test]
    fn only_live_sessions_count_against_the_bound() {
        let book = book(2);
        book.open("a", Transport::StreamableHttp, None, None);
        book.open("b", Transport::Sse, None, None);
        assert_eq!(book.admit(), Err(SessionRefusal::TooMany(2)));
        book.close("a");
        assert_eq!(book.admit(), Ok(()));
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
        book.open("a", Transport::StreamableHttp, None, None);
        book.open("b", Transport::StreamableHttp, None, None);
        book.open("c", Transport::Sse, None, None);
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
    fn the_handshake_cannot_be_skipped_or_repeated_after_an_end() {
        let book = book(2);
        book.open("a", Transport::StreamableHttp, None, None);
        book.close("a");
        book.initialized("a");
        assert_eq!(book.get("a").unwrap().state, SessionState::Closed);
    }
}
