//! Tool calls run as tasks of the gateway's own, for a caller that does not want to wait
//! (`POST /call-tool` with `Prefer: respond-async`): the call is judged at once (scope, tool,
//! arguments), then runs in the background through the same [`Service::call_tool`], and its
//! outcome is read, or the call cancelled, by the task's id. Any tool can run so, whether or
//! not its upstream knows tasks.
//!
//! A task belongs to the client that started it: to another, it does not exist. The book
//! holds at most [`MAX_TASKS`]; an ended task is forgotten [`KEPT_AFTER_END`] after it ended,
//! and a working one is cancelled when the service drains.
//!
//! A task runs in the replica that started it. With `cluster`, its record in Redis
//! ([`record`]) lets any replica read it, and a cancel reaching another replica is sent on to
//! the one running it ([`replicas`]). Both surfaces read a task as a [`TaskSnapshot`], whether
//! it is this replica's or another's.

pub mod record;
mod replicas;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use contract::{ErrorCode, TaskError, TaskInfo, TaskStatus};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Service;
use super::call::{CallFailure, CallRequest, CallResult};
use super::client::Client;
use crate::provider::JsonObject;
use crate::sync::Unpoisoned;
use crate::telemetry::TraceContext;

/// How many tasks a service holds at once, working and ended.
pub const MAX_TASKS: usize = 1000;
/// How long an ended task can still be read.
pub const KEPT_AFTER_END: Duration = Duration::from_secs(600);
/// How long a client should wait between two reads of a working task.
pub const POLL_INTERVAL_MS: u64 = 1000;

/// One task of this replica.
pub struct Task {
    pub id: String,
    /// The served name of the tool.
    pub tool: String,
    /// The name of the client that started it (an API key's, or a peer address).
    owner: String,
    created_at: String,
    state: Mutex<State>,
    cancel: CancellationToken,
    /// Set once the task has ended.
    ended: tokio::sync::watch::Sender<bool>,
}

struct State {
    outcome: Outcome,
    updated_at: String,
    /// When it ended, for forgetting it.
    ended: Option<Instant>,
}

/// Where a task's call is.
#[derive(Debug, Clone)]
pub enum Outcome {
    Working,
    Completed(CallResult),
    Failed(CallFailure),
    Cancelled,
}

impl Task {
    /// The task as it is now.
    pub fn snapshot(&self) -> TaskSnapshot {
        let state = self.state.read_unpoisoned();
        TaskSnapshot {
            id: self.id.clone(),
            tool: self.tool.clone(),
            created_at: self.created_at.clone(),
            updated_at: state.updated_at.clone(),
            outcome: state.outcome.clone(),
        }
    }

    /// The task as `GET /tasks/{id}` answers it.
    pub fn info(&self) -> TaskInfo {
        self.snapshot().info()
    }

    /// Whether `client` started it.
    fn is_of(&self, client: &Client) -> bool {
        self.owner == client.as_str()
    }

    /// Ends the task with `outcome` unless it has ended already (a cancel wins over an
    /// answer that comes after it); whether this ended it.
    fn end(&self, outcome: Outcome) -> bool {
        let mut state = self.state.write_unpoisoned();
        if !matches!(state.outcome, Outcome::Working) {
            return false;
        }
        state.outcome = outcome;
        state.updated_at = crate::clock::timestamp();
        state.ended = Some(Instant::now());
        self.ended.send_replace(true);
        true
    }

    /// Resolves once the task has ended.
    pub async fn ended(&self) {
        let mut ended = self.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
    }
}

/// A task as it was when read: one of this replica's, or another replica's as its Redis record
/// says. What both surfaces render, so a task reads the same from every replica.
#[derive(Debug, Clone)]
pub struct TaskSnapshot {
    pub id: String,
    /// The served name of the tool.
    pub tool: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// When the status last changed (RFC 3339, UTC).
    pub updated_at: String,
    pub outcome: Outcome,
}

impl TaskSnapshot {
    /// The task as `GET /tasks/{id}` answers it.
    pub fn info(self) -> TaskInfo {
        let (status, result, error) = match self.outcome {
            Outcome::Working => (TaskStatus::Working, None, None),
            Outcome::Completed(done) => (TaskStatus::Completed, Some(done.into_data()), None),
            Outcome::Failed(failure) => (
                TaskStatus::Failed,
                None,
                Some(TaskError {
                    code: failure.code,
                    message: failure.message,
                    validation_errors: failure.validation_errors,
                }),
            ),
            Outcome::Cancelled => (TaskStatus::Cancelled, None, None),
        };
        TaskInfo {
            task_id: self.id,
            tool: self.tool,
            status,
            created_at: self.created_at,
            updated_at: self.updated_at,
            poll_interval_ms: POLL_INTERVAL_MS,
            result,
            error,
        }
    }
}

/// The tasks of one service.
#[derive(Default)]
pub struct TaskBook(Mutex<HashMap<String, Arc<Task>>>);

impl TaskBook {
    /// Enters `task` when the book holds fewer than [`MAX_TASKS`]; the count and the entry
    /// under one lock, so tasks started together never pass the bound.
    fn enter(&self, task: &Arc<Task>) -> bool {
        let mut book = self.0.write_unpoisoned();
        if book.len() >= MAX_TASKS {
            return false;
        }
        book.insert(task.id.clone(), task.clone());
        true
    }

    /// Forgets the tasks that ended longer than [`KEPT_AFTER_END`] ago.
    fn sweep(&self) {
        self.0.write_unpoisoned().retain(|_, task| {
            task.state
                .read_unpoisoned()
                .ended
                .is_none_or(|ended| ended.elapsed() < KEPT_AFTER_END)
        });
    }

    /// The task `id`, whoever its client.
    fn find(&self, id: &str) -> Option<Arc<Task>> {
        self.sweep();
        self.0.read_unpoisoned().get(id).cloned()
    }

    #[cfg(test)]
    fn get(&self, id: &str, client: &Client) -> Option<Arc<Task>> {
        self.find(id).filter(|task| task.is_of(client))
    }
}

/// A call to run as a task (what [`CallRequest`] borrows, owned).
pub struct TaskRequest {
    pub tool: String,
    pub arguments: JsonObject,
    pub request_id: String,
    pub client: Client,
    pub trace: TraceContext,
    /// Whom the upstream's asks during the call go to (none: answered as for a REST call).
    pub caller: Option<crate::provider::Caller>,
}

impl Service {
    /// Judges the call as a call would be judged, then runs it in the background; the task
    /// at once. Refused like the call itself (scope, unknown tool, invalid arguments), or with
    /// SERVICE_UNAVAILABLE when the book is full.
    pub fn start_task(self: &Arc<Self>, request: TaskRequest) -> Result<Arc<Task>, CallFailure> {
        let arguments = Value::Object(request.arguments);
        self.checked(
            &self.toolset(),
            &request.tool,
            &arguments,
            &request.request_id,
            &request.client,
        )?;
        let Value::Object(arguments) = arguments else {
            unreachable!("built from an object above")
        };
        self.tasks.sweep();
        let now = crate::clock::timestamp();
        let task = Arc::new(Task {
            id: uuid::Uuid::new_v4().to_string(),
            tool: request.tool.clone(),
            owner: request.client.as_str().to_owned(),
            created_at: now.clone(),
            state: Mutex::new(State {
                outcome: Outcome::Working,
                updated_at: now,
                ended: None,
            }),
            cancel: CancellationToken::new(),
            ended: tokio::sync::watch::channel(false).0,
        });
        if !self.tasks.enter(&task) {
            let retry_after = KEPT_AFTER_END.as_secs();
            let mut refused = CallFailure::new(
                ErrorCode::ServiceUnavailable,
                format!(
                    "Service '{}' holds {MAX_TASKS} tasks already; retry after {retry_after} s, or call without Prefer: respond-async",
                    self.name
                ),
            );
            refused.retry_after = Some(retry_after);
            return Err(refused);
        }
        self.record_task(&task);
        let service = self.clone();
        let running = task.clone();
        let drain = self.drain().token();
        self.drain().spawn(async move {
            let call = service.call_tool(CallRequest {
                tool: &request.tool,
                arguments,
                request_id: &request.request_id,
                client: &request.client,
                trace: &request.trace,
                progress: None,
                caller: request.caller.clone(),
            });
            // Dropping the call cancels it upstream, as a client that goes away does.
            let outcome = tokio::select! {
                outcome = call => match outcome {
                    Ok(done) => Outcome::Completed(done),
                    Err(failure) => Outcome::Failed(failure),
                },
                _ = running.cancel.cancelled() => Outcome::Cancelled,
                _ = drain.cancelled() => Outcome::Cancelled,
            };
            tracing::debug!(task = %running.id, tool = %running.tool, "task ended: {outcome:?}");
            service.end_task(&running, outcome);
        });
        Ok(task)
    }

    /// Ends `task` with `outcome` unless it has ended already, and writes its final record.
    fn end_task(&self, task: &Task, outcome: Outcome) {
        if task.end(outcome) {
            self.record_task(task);
        }
    }

    /// The task `id` of `client`: this replica's, else (with `cluster`) another's, from its
    /// Redis record. `None` when the client has none by that id (another's included).
    pub async fn task(&self, id: &str, client: &Client) -> Option<TaskSnapshot> {
        match self.tasks.find(id) {
            Some(task) => task.is_of(client).then(|| task.snapshot()),
            None => self.task_elsewhere(id, client).await,
        }
    }

    /// Cancels the task `id` of `client` if it still works; the task as it is then (an ended
    /// task as it ended). Another replica's working task is cancelled by that replica, which
    /// this one asks. `headers` are the request's: they go with such a request, and mark one
    /// that another replica sent here, for the client it names.
    pub async fn cancel_task(
        &self,
        id: &str,
        client: &Client,
        headers: &HeaderMap,
    ) -> Option<TaskInfo> {
        let vouched = self.vouched_client(headers);
        let client = vouched.as_ref().unwrap_or(client);
        match self.tasks.find(id) {
            Some(task) if task.is_of(client) => {
                task.cancel.cancel();
                self.end_task(&task, Outcome::Cancelled);
                Some(task.info())
            }
            Some(_) => None,
            // What another replica sent on is never sent on again.
            None if vouched.is_some() => None,
            None => self.cancel_elsewhere(id, client, headers).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(owner: &str) -> Arc<Task> {
        Arc::new(Task {
            id: uuid::Uuid::new_v4().to_string(),
            tool: "echo".into(),
            owner: owner.into(),
            created_at: "c".into(),
            state: Mutex::new(State {
                outcome: Outcome::Working,
                updated_at: "c".into(),
                ended: None,
            }),
            cancel: CancellationToken::new(),
            ended: tokio::sync::watch::channel(false).0,
        })
    }

    #[test]
    fn a_task_is_its_owners_alone() {
        let book = TaskBook::default();
        let mine = task("peer-a");
        book.0
            .write_unpoisoned()
            .insert(mine.id.clone(), mine.clone());
        assert!(
            book.get(&mine.id, &Client::of_key("peer-a", None))
                .is_some()
        );
        assert!(
            book.get(&mine.id, &Client::of_key("peer-b", None))
                .is_none()
        );
        assert!(book.get("nope", &Client::of_key("peer-a", None)).is_none());
    }

    #[test]
    fn the_first_end_wins_and_a_working_task_has_no_result() {
        let t = task("a");
        assert_eq!(t.info().status, TaskStatus::Working);
        t.end(Outcome::Cancelled);
        t.end(Outcome::Failed(CallFailure::new(
            ErrorCode::Timeout,
            "late".into(),
        )));
        let info = t.info();
        assert_eq!(info.status, TaskStatus::Cancelled);
        assert!(info.result.is_none() && info.error.is_none());
        let failed = task("a");
        failed.end(Outcome::Failed(CallFailure::new(
            ErrorCode::ExecutionError,
            "boom".into(),
        )));
        let error = failed.info().error.unwrap();
        assert_eq!(
            (error.code, error.message.as_str()),
            (ErrorCode::ExecutionError, "boom")
        );
    }

    #[test]
    fn ended_tasks_are_forgotten_after_a_while_and_working_ones_never() {
        let book = TaskBook::default();
        let working = task("a");
        let ended = task("a");
        ended.end(Outcome::Cancelled);
        ended.state.write_unpoisoned().ended =
            Instant::now().checked_sub(KEPT_AFTER_END + Duration::from_secs(1));
        for t in [&working, &ended] {
            book.0.write_unpoisoned().insert(t.id.clone(), (*t).clone());
        }
        book.sweep();
        let left: Vec<String> = book.0.read_unpoisoned().keys().cloned().collect();
        assert_eq!(left, vec![working.id.clone()]);
    }

    #[test]
    fn tasks_started_together_never_pass_the_bound() {
        let book = TaskBook::default();
        for _ in 0..MAX_TASKS - 3 {
            assert!(book.enter(&task("a")));
        }
        // 40 tasks at one barrier for the last three places.
        let asking: Vec<Arc<Task>> = (0..40).map(|_| task("b")).collect();
        let barrier = std::sync::Barrier::new(asking.len());
        let entered = std::thread::scope(|scope| {
            let threads: Vec<_> = asking
                .iter()
                .map(|t| {
                    let (book, barrier) = (&book, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        book.enter(t)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap())
                .filter(|entered| *entered)
                .count()
        });
        assert_eq!(entered, 3);
        assert_eq!(book.0.read_unpoisoned().len(), MAX_TASKS);
    }

    /// A cancel another replica sent on acts for the client it names (this replica sees the
    /// forwarding replica's address); the same name without the replicas' secret is ignored.
    #[tokio::test]
    async fn a_cancel_sent_on_by_a_replica_acts_for_the_client_it_names() {
        use crate::service::cluster::forward::FORWARDED;
        use crate::service::cluster::tasks::TASK_CLIENT;
        // Redis is never reached here: nothing connects before the service starts.
        let service = crate::service::unit_service(
            "cluster: { redis_url: \"redis://127.0.0.1:1\", replica_id: r0 }\n",
        );
        service
            .cluster
            .as_ref()
            .unwrap()
            .set_forward_secret("s3cret");
        let headers = |secret: Option<&str>| {
            let mut headers = HeaderMap::new();
            headers.insert(TASK_CLIENT.clone(), "alice".parse().unwrap());
            if let Some(secret) = secret {
                headers.insert(FORWARDED.clone(), secret.parse().unwrap());
            }
            headers
        };
        let (sent_on, claimed) = (task("alice"), task("alice"));
        for t in [&sent_on, &claimed] {
            service
                .tasks
                .0
                .write_unpoisoned()
                .insert(t.id.clone(), (*t).clone());
        }
        let replica = Client::unknown();
        let answer = service
            .cancel_task(&sent_on.id, &replica, &headers(Some("s3cret")))
            .await
            .expect("alice's task");
        assert_eq!(answer.status, TaskStatus::Cancelled);
        for forged in [headers(None), headers(Some("guess"))] {
            assert!(
                service
                    .cancel_task(&claimed.id, &replica, &forged)
                    .await
                    .is_none()
            );
        }
        assert_eq!(claimed.info().status, TaskStatus::Working);
        let alice = Client::of_key("alice", None);
        let read = service.task(&sent_on.id, &alice).await.unwrap();
        assert!(matches!(read.outcome, Outcome::Cancelled));
        assert!(service.task(&sent_on.id, &replica).await.is_none());
    }
}
