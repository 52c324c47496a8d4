//! Tasks across replicas (`cluster`): each task's record goes to Redis when it starts and when
//! it ends, a replica that does not hold a task answers for it from that record, and the cancel
//! of another replica's working task is sent on to that replica (only it can stop the call),
//! with the replicas' shared secret and the client it is for (docs/scaling.md, "Tasks").

use std::time::Duration;

use axum::http::HeaderMap;
use contract::TaskInfo;

use super::record::TaskRecord;
use super::{KEPT_AFTER_END, Task, TaskSnapshot};
use crate::service::Service;
use crate::service::client::Client;
use crate::service::cluster::Cluster;
use crate::sync::Unpoisoned;

/// How much longer than its queue and call timeouts a call may run: the service's outer bound
/// on a provider that ignores its timeout.
const OUTER_BOUND: Duration = Duration::from_secs(1);

impl Service {
    /// Writes `task`'s record as it is now (with `cluster`): an ended task's to live
    /// [`KEPT_AFTER_END`], as this replica keeps it; a working one's until its call must have
    /// ended and then as long again, so a record whose end was never written (Redis down then,
    /// the replica killed) goes too. Never waits.
    pub(super) fn record_task(&self, task: &Task) {
        let Some(cluster) = &self.cluster else {
            return;
        };
        // The state stays locked until the record is queued, so a record of a later change
        // (an end racing the start's record) is queued after this one, never before it.
        let state = task.state.read_unpoisoned();
        let record = TaskRecord::of(task, &state, cluster.replica_id(), cluster.address());
        let ttl = if record.has_ended() {
            KEPT_AFTER_END
        } else {
            self.longest_run(&task.tool) + KEPT_AFTER_END
        };
        let text = serde_json::to_string(&record).expect("a task record is plain JSON");
        cluster.task_changed(&task.id, text, ttl);
        drop(state);
    }

    /// The longest a call of `tool` can take: its wait in the queue, its timeout, the outer
    /// bound.
    fn longest_run(&self, tool: &str) -> Duration {
        let settings = self.settings();
        let limits = &settings.config.limits;
        let timeout = self
            .toolset()
            .plans
            .get(tool)
            .map_or(limits.call_timeout, |plan| plan.limits.timeout);
        limits.queue_timeout + timeout + OUTER_BOUND
    }

    /// The record of task `id`, which this replica does not hold, if this replica may answer
    /// `client` from it ([`TaskRecord::answers`]).
    async fn record_for(&self, cluster: &Cluster, id: &str, client: &Client) -> Option<TaskRecord> {
        let text = cluster.task_record(id).await?;
        let record: TaskRecord = match serde_json::from_str(&text) {
            Ok(record) => record,
            Err(e) => {
                tracing::warn!(task = id, "the task's record in redis is unreadable: {e}");
                return None;
            }
        };
        record
            .answers(client, cluster.replica_id())
            .then_some(record)
    }

    /// The task `id` of `client` that this replica does not hold, as its Redis record says.
    pub(super) async fn task_elsewhere(&self, id: &str, client: &Client) -> Option<TaskSnapshot> {
        let cluster = self.cluster.as_ref()?;
        let record = self.record_for(cluster, id, client).await?;
        Some(record.into_snapshot(id))
    }

    /// Cancels the task `id` of `client` that this replica does not hold: an ended one is
    /// answered as it ended, as its owner would; a working one's cancel is sent on to its
    /// owner, whose answer this is. An owner that cannot be reached has most likely died, and
    /// its tasks with it: no such task, then.
    pub(super) async fn cancel_elsewhere(
        &self,
        id: &str,
        client: &Client,
        headers: &HeaderMap,
    ) -> Option<TaskInfo> {
        let cluster = self.cluster.as_ref()?;
        let record = self.record_for(cluster, id, client).await?;
        if record.has_ended() {
            return Some(record.into_snapshot(id).info());
        }
        let sent = cluster
            .forward_task_cancel(&record.owner, &record.address, id, client.as_str(), headers)
            .await;
        match sent {
            Ok(task) => {
                tracing::debug!(task = id, owner = %record.owner, "task cancel sent on");
                task
            }
            Err(why) => {
                tracing::warn!(
                    task = id, owner = %record.owner, address = %record.address,
                    "the cancel of another replica's task could not be sent on: {why}"
                );
                None
            }
        }
    }

    /// The client a task request forwarded by another replica is for (that replica judged
    /// who the client is; this one sees only the forwarding replica's address).
    pub(super) fn vouched_client(&self, headers: &HeaderMap) -> Option<Client> {
        let name = self.cluster.as_ref()?.forwarded_task_client(headers)?;
        Some(Client::vouched(&name))
    }
}
