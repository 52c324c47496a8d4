//! Which replicas of the service are up, for /health's `cluster.replicas` and the status page:
//! every second a replica rewrites the hash `mcp-http-gateway:{service}:replica:{replica}`
//! (its address, version and start time; it lives 5 s unless rewritten, so a replica gone,
//! even killed, leaves the list within seconds) and reads the others'. A replica that stops
//! cleanly removes its own at once.

use contract::ReplicaReport;

use super::Cluster;
use crate::sync::Unpoisoned;

/// How long a replica's record lives in Redis without being rewritten (five watch periods).
const RECORD_TTL_SECS: i64 = 5;

impl Cluster {
    /// Writes this replica's record and reads every replica's.
    pub(super) async fn share_replicas(&self) {
        let own = self.key("replica", &self.replica_id);
        let fields = [
            ("address", self.address.clone()),
            ("version", env!("CARGO_PKG_VERSION").to_owned()),
            ("started_at", self.started_at.clone()),
        ];
        let written = {
            let own = own.clone();
            self.run(|mut c| async move {
                redis::pipe()
                    .atomic()
                    .hset_multiple(&own, &fields)
                    .ignore()
                    .expire(&own, RECORD_TTL_SECS)
                    .ignore()
                    .query_async::<()>(&mut c)
                    .await
            })
            .await
        };
        if written.is_err() {
            return;
        }
        let Ok(records) = self.hashes_of::<String>("replica").await else {
            return;
        };
        let mut replicas: Vec<ReplicaReport> = records
            .into_iter()
            .map(|(replica_id, mut record)| {
                let mut take = |field: &str| record.remove(field).unwrap_or_default();
                ReplicaReport {
                    this: replica_id == self.replica_id,
                    address: take("address"),
                    version: take("version"),
                    started_at: take("started_at"),
                    replica_id,
                }
            })
            .collect();
        replicas.sort_by(|a, b| a.replica_id.cmp(&b.replica_id));
        *self.replicas.write_unpoisoned() = replicas;
    }

    /// Removes this replica's record (it stops): the others drop it at their next read.
    pub(super) async fn withdraw(&self) {
        let own = self.key("replica", &self.replica_id);
        let _ = self
            .run(|mut c| async move { redis::cmd("DEL").arg(own).query_async::<()>(&mut c).await })
            .await;
    }

    /// The replicas as last read, this one among them even before the first read (or while
    /// Redis is down: then the others are as last seen).
    pub(super) fn replicas_report(&self) -> Vec<ReplicaReport> {
        let mut replicas = self.replicas.read_unpoisoned().clone();
        if !replicas.iter().any(|r| r.this) {
            replicas.push(ReplicaReport {
                replica_id: self.replica_id.clone(),
                address: self.address.clone(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
                started_at: self.started_at.clone(),
                this: true,
            });
            replicas.sort_by(|a, b| a.replica_id.cmp(&b.replica_id));
        }
        replicas
    }
}
