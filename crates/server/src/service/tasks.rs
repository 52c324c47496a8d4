//! Tool calls run as tasks of the gateway's own, for a caller that does not want to wait
//! (`POST /call-tool` with `Prefer: respond-async`): the call is judged at once (scope, tool,
//! arguments), then runs in the background through the same [`Service::call_tool`], and its
//! outcome is read, or the call cancelled, by the task's id. Any tool can run so, whether or
//! not its upstream knows tasks.
//!
//! A task belongs to the client that started it: to another, it does not exist. The book
//! holds at most [`MAX_TASKS`]; an ended task is forgotten [`KEPT_AFTER_END`] after it ended,
//! and a working one is cancelled when the service drains.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// One task.
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
#[derive(Debug)]
pub enum Outcome {
    Working,
    Completed(CallResult),
    Failed(CallFailure),
    Cancelled,
}

impl Task {
    /// The task as `GET /tasks/{id}` answers it.
    pub fn info(&self) -> TaskInfo {
        let state = self.state.read_unpoisoned();
        let (status, result, error) = match &state.outcome {
            Outcome::Working => (TaskStatus::Working, None, None),
            Outcome::Completed(done) => {
                (TaskStatus::Completed, Some(done.clone().into_data()), None)
            }
            Outcome::Failed(failure) => (
                TaskStatus::Failed,
                None,
                Some(TaskError {
                    code: failure.code,
                    message: failure.message.clone(),
                    validation_errors: failure.validation_errors.clone(),
                }),
            ),
            Outcome::Cancelled => (TaskStatus::Cancelled, None, None),
        };
        TaskInfo {
            task_id: self.id.clone(),
            tool: self.tool.clone(),
            status,
            created_at: self.created_at.clone(),
            updated_at: state.updated_at.clone(),
            poll_interval_ms: POLL_INTERVAL_MS,
            result,
            error,
        }
    }

    /// What the call came to so far (a copy), for a surface that renders it its own way.
    pub fn outcome(&self) -> Outcome {
        match &self.state.read_unpoisoned().outcome {
            Outcome::Working => Outcome::Working,
            Outcome::Completed(done) => Outcome::Completed(done.clone()),
            Outcome::Failed(failure) => Outcome::Failed(failure.clone()),
            Outcome::Cancelled => Outcome::Cancelled,
        }
    }

    /// Ends the task with `outcome` unless it has ended already (a cancel wins over an
    /// answer that comes after it).
    fn end(&self, outcome: Outcome) {
        let mut state = self.state.write_unpoisoned();
        if matches!(state.outcome, Outcome::Working) {
            state.outcome = outcome;
            state.updated_at = crate::clock::timestamp();
            state.ended = Some(Instant::now());
            self.ended.send_replace(true);
        }
    }

    /// Resolves once the task has ended.
    pub async fn ended(&self) {
        let mut ended = self.ended.subscribe();
        let _ = ended.wait_for(|ended| *ended).await;
    }

    /// When it was created and last changed (RFC 3339).
    pub fn times(&self) -> (String, String) {
        let state = self.state.read_unpoisoned();
        (self.created_at.clone(), state.updated_at.clone())
    }
}

/// The tasks of one service.
#[derive(Default)]
pub struct TaskBook(Mutex<HashMap<String, Arc<Task>>>);

impl TaskBook {
    /// Forgets the tasks that ended longer than [`KEPT_AFTER_END`] ago.
    fn sweep(&self) {
        self.0.write_unpoisoned().retain(|_, task| {
            task.state
                .read_unpoisoned()
                .ended
                .is_none_or(|ended| ended.elapsed() < KEPT_AFTER_END)
        });
    }

    fn get(&self, id: &str, client: &Client) -> Option<Arc<Task>> {
        self.sweep();
        self.0
            .read_unpoisoned()
            .get(id)
            .filter(|task| task.owner == client.as_str())
            .cloned()
    }
}

/// A call to run as a task (what [`CallRequest`] borrows, owned).
pub struct TaskRequest {
    pub tool: String,
    pub arguments: JsonObject,
    pub request_id: String,
    pub client: Client,
    pub trace: TraceContext,
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
        {
            let mut book = self.tasks.0.write_unpoisoned();
            if book.len() >= MAX_TASKS {
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
            book.insert(task.id.clone(), task.clone());
        }
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
                caller: None,
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
            running.end(outcome);
        });
        Ok(task)
    }

    /// The task `id` of `client`; `None` when it has none by that id (another's included).
    pub fn task(&self, id: &str, client: &Client) -> Option<Arc<Task>> {
        self.tasks.get(id, client)
    }

    /// Cancels the task `id` of `client` if it still works; the task as it is then.
    pub fn cancel_task(&self, id: &str, client: &Client) -> Option<Arc<Task>> {
        let task = self.tasks.get(id, client)?;
        task.cancel.cancel();
        task.end(Outcome::Cancelled);
        Some(task)
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
}
