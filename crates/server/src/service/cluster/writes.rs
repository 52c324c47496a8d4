//! The writes requests leave for Redis (usage counts, MCP session and task records): queued
//! without waiting, bounded, and sent by the cluster's background loop in one pipeline per
//! batch, so a request never waits for them and a slow Redis never holds memory without bound.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

use super::Cluster;
use crate::sync::Unpoisoned;

/// Writes queued at most; past this they are dropped and counted (Redis is too slow or down).
const MAX_QUEUED: usize = 10_000;

/// One write for Redis.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// A call of `tool` ended; `failed` when it counts as the tool's failure.
    Call { tool: String, failed: bool },
    /// An MCP session record to store (JSON) with its time to live: on every change and use,
    /// so a record lost to a Redis outage comes back at the session's next request.
    Session {
        id: String,
        record: String,
        ttl_secs: u64,
    },
    /// An MCP session ended: its record goes.
    Forget { id: String },
    /// A read-only tool's result (JSON) to share with the other replicas for its time to live.
    Result {
        digest: String,
        text: String,
        ttl_ms: u64,
    },
    /// A task's record (JSON) to store with its time to live: when it starts and when it ends.
    Task {
        id: String,
        record: String,
        ttl_secs: u64,
    },
}

#[derive(Default)]
pub struct Writes {
    queue: Mutex<Vec<Write>>,
    queued: Notify,
    dropped: AtomicU64,
}

impl Writes {
    pub fn push(&self, write: Write) {
        let mut queue = self.queue.write_unpoisoned();
        if queue.len() >= MAX_QUEUED {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        queue.push(write);
        drop(queue);
        self.queued.notify_one();
    }

    /// Resolves when something was queued since the last call.
    pub async fn wanted(&self) {
        self.queued.notified().await
    }

    fn take(&self) -> Vec<Write> {
        std::mem::take(&mut *self.queue.write_unpoisoned())
    }

    /// Writes dropped because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// A batch folded into the fewest commands: the counts of each tool summed, only the last
/// record of a session or task written.
fn pipeline(cluster: &Cluster, batch: Vec<Write>) -> redis::Pipeline {
    let mut counts: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut sessions: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut forgotten: BTreeSet<String> = BTreeSet::new();
    let mut tasks: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut pipe = redis::pipe();
    for write in batch {
        match write {
            Write::Call { tool, failed } => {
                let count = counts.entry(tool).or_default();
                count.0 += 1;
                count.1 += i64::from(failed);
            }
            Write::Session {
                id,
                record,
                ttl_secs,
            } => {
                forgotten.remove(&id);
                sessions.insert(id, (record, ttl_secs));
            }
            Write::Forget { id } => {
                sessions.remove(&id);
                forgotten.insert(id);
            }
            Write::Task {
                id,
                record,
                ttl_secs,
            } => {
                tasks.insert(id, (record, ttl_secs));
            }
            Write::Result {
                digest,
                text,
                ttl_ms,
            } => {
                pipe.cmd("SET")
                    .arg(cluster.key("result", &digest))
                    .arg(text)
                    .arg("PX")
                    .arg(ttl_ms.max(1))
                    .ignore();
            }
        }
    }
    let usage = cluster.key("usage", "calls");
    for (tool, (calls, errors)) in counts {
        pipe.cmd("HINCRBY")
            .arg(&usage)
            .arg(format!("calls:{tool}"))
            .arg(calls)
            .ignore();
        if errors > 0 {
            pipe.cmd("HINCRBY")
                .arg(&usage)
                .arg(format!("errors:{tool}"))
                .arg(errors)
                .ignore();
        }
    }
    for (id, (record, ttl)) in sessions {
        pipe.cmd("SET")
            .arg(cluster.key("session", &id))
            .arg(record)
            .arg("EX")
            .arg(ttl.max(1))
            .ignore();
    }
    for id in forgotten {
        pipe.cmd("DEL").arg(cluster.key("session", &id)).ignore();
    }
    for (id, (record, ttl)) in tasks {
        pipe.cmd("SET")
            .arg(cluster.key("task", &id))
            .arg(record)
            .arg("EX")
            .arg(ttl.max(1))
            .ignore();
    }
    pipe
}

impl Cluster {
    /// Sends what is queued, in one pipeline. A batch that fails is dropped (counted in
    /// `redis_errors`): usage counts are best effort, session records are written again on
    /// the session's next use, and a task record lost so leaves other replicas with what was
    /// written before it (docs/scaling.md, "Tasks").
    pub(super) async fn flush(&self) {
        let batch = self.writes.take();
        if batch.is_empty() {
            return;
        }
        let pipe = pipeline(self, batch);
        let _ = self
            .run(|mut c| async move { pipe.query_async::<()>(&mut c).await })
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClusterSection;

    /// A task that starts and ends within one batch is written once, as it ended.
    #[test]
    fn only_the_last_record_of_a_task_in_a_batch_is_written() {
        let config: ClusterSection = serde_saphyr::from_str("redis_url: redis://h\n").unwrap();
        let cluster = Cluster::new("s", &config, "127.0.0.1", 8000);
        let write = |record: &str, ttl_secs| Write::Task {
            id: "t".into(),
            record: record.into(),
            ttl_secs,
        };
        let pipe = pipeline(&cluster, vec![write("begun", 700), write("ended", 600)]);
        let packed = String::from_utf8_lossy(&pipe.get_packed_pipeline()).into_owned();
        assert_eq!(packed.matches("SET").count(), 1, "{packed}");
        assert!(packed.contains("mcp-http-gateway:s:task:t"), "{packed}");
        assert!(
            packed.contains("ended") && packed.contains("600"),
            "{packed}"
        );
        assert!(!packed.contains("begun"), "{packed}");
    }
}
