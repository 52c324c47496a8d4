//! Each replica's MCP sessions per client, shared through Redis so that one client's bound
//! (`mcp.max_sessions_per_client`) holds across the replicas: every second a replica rewrites
//! the hash `mcp-http-gateway:{service}:clients:{replica}` (a field per client holding sessions
//! here, its value their number; the hash lives 5 s unless rewritten, so a replica gone stops
//! counting) and reads the other replicas' hashes, whose sums the session table adds to its own
//! count when a client asks for one more.

use std::collections::HashMap;

use super::Cluster;
use crate::sync::Unpoisoned;

/// How long a replica's counts live in Redis without being rewritten (five watch periods).
const COUNTS_TTL_SECS: i64 = 5;

impl Cluster {
    /// Writes this replica's sessions per client and reads the others'.
    pub(super) async fn share_client_sessions(&self) {
        let Some(load) = self.client_load.get() else {
            return;
        };
        let mine: Vec<(String, u64)> = load
            .sessions_by_client()
            .into_iter()
            .map(|(client, n)| (client.to_string(), n))
            .collect();
        let own = self.key("clients", &self.replica_id);
        let written = {
            let own = own.clone();
            self.run(|mut c| async move {
                let mut pipe = redis::pipe();
                pipe.atomic().del(&own).ignore();
                if !mine.is_empty() {
                    pipe.hset_multiple(&own, &mine)
                        .ignore()
                        .expire(&own, COUNTS_TTL_SECS)
                        .ignore();
                }
                pipe.query_async::<()>(&mut c).await
            })
            .await
        };
        if written.is_err() {
            return;
        }
        let Ok(replicas) = self.hashes_of::<u64>("clients").await else {
            return;
        };
        let mut elsewhere: HashMap<String, u64> = HashMap::new();
        for (_, counts) in replicas
            .into_iter()
            .filter(|(id, _)| *id != self.replica_id)
        {
            for (client, n) in counts {
                *elsewhere.entry(client).or_default() += n;
            }
        }
        *self.sessions_elsewhere.write_unpoisoned() = elsewhere;
    }

    /// The live sessions every client holds on the other replicas, as last read.
    pub fn all_sessions_elsewhere(&self) -> u64 {
        self.sessions_elsewhere.read_unpoisoned().values().sum()
    }

    /// The live sessions `client` holds on the other replicas, as last read (within a second or
    /// two; 0 while Redis is down).
    pub fn sessions_elsewhere(&self, client: &str) -> u64 {
        self.sessions_elsewhere
            .read_unpoisoned()
            .get(client)
            .copied()
            .unwrap_or(0)
    }
}
