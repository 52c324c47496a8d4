//! MCP session records in Redis, `mcp-http-gateway:{service}:session:{id}` = `{owner,
//! address, state, created}`, with the session's time to live refreshed on every use and
//! deleted when it ends. They say which replica owns a session: a Streamable HTTP request for
//! a session this replica does not know is answered 404 (the client initialises again), and
//! the record lets that answer name the owner; HAProxy's stick table, not these records,
//! routes such a session's requests to its owner (docs/scaling.md). A legacy SSE message,
//! which no balancer can route, is sent on to the owner at the record's address
//! ([`super::forward`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Cluster;
use super::writes::Write;

/// What Redis holds of one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The replica id of the replica that holds the session.
    pub owner: String,
    /// `host:port` where the owner serves.
    pub address: String,
    /// `created` or `initialized`.
    pub state: String,
    /// RFC 3339, UTC.
    pub created: String,
}

impl Cluster {
    /// A session of this replica was opened, changed state or was used: (re)write its record
    /// with `ttl` to live. Never waits.
    pub fn session_live(&self, id: &str, state: &str, created: &str, ttl: Duration) {
        let record = SessionRecord {
            owner: self.replica_id.clone(),
            address: self.address.clone(),
            state: state.to_owned(),
            created: created.to_owned(),
        };
        self.writes.push(Write::Session {
            id: id.to_owned(),
            record: serde_json::to_string(&record).expect("plain strings"),
            ttl_secs: ttl.as_secs(),
        });
    }

    /// The record of a session just opened, written now rather than with the next batch (its
    /// handshake's answer waits for it): a request that a balancer without affinity sends to
    /// another replica right after finds the owner at once, however busy this replica's
    /// background loop is. Bounded by the cluster's command timeout; on a failure the queued
    /// write ([`Self::session_live`]) is still to come.
    pub async fn session_opened(&self, id: &str, state: &str, created: &str, ttl: Duration) {
        let record = SessionRecord {
            owner: self.replica_id.clone(),
            address: self.address.clone(),
            state: state.to_owned(),
            created: created.to_owned(),
        };
        let record = serde_json::to_string(&record).expect("plain strings");
        let key = self.key("session", id);
        let _ = self
            .run(|mut c| async move {
                redis::cmd("SET")
                    .arg(key)
                    .arg(record)
                    .arg("EX")
                    .arg(ttl.as_secs().max(1))
                    .query_async::<()>(&mut c)
                    .await
            })
            .await;
    }

    /// A session of this replica ended. Never waits.
    pub fn session_ended(&self, id: &str) {
        self.writes.push(Write::Forget { id: id.to_owned() });
    }

    /// The record of session `id`, if Redis has one (and answers in time).
    pub async fn session(&self, id: &str) -> Option<SessionRecord> {
        let key = self.key("session", id);
        let text = self
            .run(|mut c| async move {
                redis::cmd("GET")
                    .arg(key)
                    .query_async::<Option<String>>(&mut c)
                    .await
            })
            .await
            .ok()??;
        serde_json::from_str(&text).ok()
    }
}
