//! A task as Redis holds it (`cluster`): the replica running it and that replica's address,
//! the client that started it, its tool, times and status and, once ended, what the call came
//! to. Enough for any replica to answer for it exactly as its owner would: the record becomes
//! the same [`TaskSnapshot`] a task of the replica's own book gives, which both surfaces
//! render.
//!
//! A completed call keeps the tool's output as the tool sent it (an MCP server's own
//! `CallToolResult`, or plain data), not REST's `data` alone: MCP's `tasks/get` answers the
//! server's result, content blocks and all, and REST's `data` is made from it as for a call.

use contract::{ErrorCode, ValidationIssue};
use rmcp::model::CallToolResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Outcome, State, Task, TaskSnapshot};
use crate::provider::ToolOutput;
use crate::service::call::{CallFailure, CallResult};
use crate::service::client::Client;

/// What Redis holds of one task, at `mcp-http-gateway:{service}:task:{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The replica id of the replica running the task.
    pub owner: String,
    /// `host:port` where that replica serves (where a cancel is sent).
    pub address: String,
    /// The name of the client that started it: to any other it does not exist.
    pub client: String,
    /// The served name of the tool.
    pub tool: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// When the status last changed (RFC 3339, UTC).
    pub updated_at: String,
    /// `status` and, once ended, what the call came to, beside the fields above.
    #[serde(flatten)]
    pub outcome: RecordedOutcome,
}

/// An [`Outcome`] as JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RecordedOutcome {
    Working,
    Completed {
        output: RecordedOutput,
        /// The tool declares an output schema (REST's `data` is its structured content).
        typed: bool,
    },
    /// What the call would have answered. (A tool's own error result is not kept: neither
    /// surface renders a task's failure from it.)
    Failed {
        code: ErrorCode,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        validation_errors: Option<Vec<ValidationIssue>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<u64>,
    },
    Cancelled,
}

/// A [`ToolOutput`] as JSON: `{"data": …}` or `{"mcp": <the server's CallToolResult>}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedOutput {
    Data(Value),
    Mcp(Box<CallToolResult>),
}

impl RecordedOutcome {
    fn of(outcome: &Outcome) -> RecordedOutcome {
        match outcome {
            Outcome::Working => RecordedOutcome::Working,
            Outcome::Completed(done) => RecordedOutcome::Completed {
                output: match &done.output {
                    ToolOutput::Data(data) => RecordedOutput::Data(data.clone()),
                    ToolOutput::Mcp(result) => RecordedOutput::Mcp(result.clone()),
                },
                typed: done.typed,
            },
            Outcome::Failed(failure) => RecordedOutcome::Failed {
                code: failure.code,
                message: failure.message.clone(),
                validation_errors: failure.validation_errors.clone(),
                retry_after: failure.retry_after,
            },
            Outcome::Cancelled => RecordedOutcome::Cancelled,
        }
    }

    fn into_outcome(self) -> Outcome {
        match self {
            RecordedOutcome::Working => Outcome::Working,
            RecordedOutcome::Completed { output, typed } => Outcome::Completed(CallResult {
                cache: None,
                output: match output {
                    RecordedOutput::Data(data) => ToolOutput::Data(data),
                    RecordedOutput::Mcp(result) => ToolOutput::Mcp(result),
                },
                typed,
            }),
            RecordedOutcome::Failed {
                code,
                message,
                validation_errors,
                retry_after,
            } => Outcome::Failed(CallFailure {
                code,
                message,
                validation_errors,
                retry_after,
                output: None,
            }),
            RecordedOutcome::Cancelled => Outcome::Cancelled,
        }
    }
}

impl TaskRecord {
    /// The record of `task` in `state` (its state, locked by the caller), run by replica
    /// `owner` serving at `address`.
    pub(super) fn of(task: &Task, state: &State, owner: &str, address: &str) -> TaskRecord {
        TaskRecord {
            owner: owner.to_owned(),
            address: address.to_owned(),
            client: task.owner.clone(),
            tool: task.tool.clone(),
            created_at: task.created_at.clone(),
            updated_at: state.updated_at.clone(),
            outcome: RecordedOutcome::of(&state.outcome),
        }
    }

    /// Whether replica `reader`, which does not hold the task, may answer `client` for it from
    /// this record: the task must be the client's, and not a working one of `reader` itself
    /// (that one died with an earlier life of the replica, restarted under the same id).
    pub fn answers(&self, client: &Client, reader: &str) -> bool {
        self.client == client.as_str() && (self.owner != reader || self.has_ended())
    }

    /// Whether the task has ended (nothing about it changes any more).
    pub fn has_ended(&self) -> bool {
        !matches!(self.outcome, RecordedOutcome::Working)
    }

    /// The task `id` as the record says it is: what its owner's book would give.
    pub fn into_snapshot(self, id: &str) -> TaskSnapshot {
        TaskSnapshot {
            id: id.to_owned(),
            tool: self.tool,
            created_at: self.created_at,
            updated_at: self.updated_at,
            outcome: self.outcome.into_outcome(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use contract::TaskStatus;
    use rmcp::model::ContentBlock;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::sync::Unpoisoned;

    fn task(outcome: Outcome) -> Arc<Task> {
        let ended = !matches!(outcome, Outcome::Working);
        Arc::new(Task {
            id: "0b6c".into(),
            tool: "echo".into(),
            owner: "alice".into(),
            created_at: "2026-11-27T00:00:00Z".into(),
            state: Mutex::new(State {
                outcome,
                updated_at: "2026-11-27T00:00:03Z".into(),
                ended: ended.then(std::time::Instant::now),
            }),
            cancel: CancellationToken::new(),
            ended: tokio::sync::watch::channel(ended).0,
        })
    }

    fn record_of(task: &Task) -> TaskRecord {
        TaskRecord::of(task, &task.state.read_unpoisoned(), "r0", "127.0.0.1:8100")
    }

    /// The record through its JSON, as another replica reads it.
    fn through_redis(task: &Task) -> TaskRecord {
        let text = serde_json::to_string(&record_of(task)).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// What both surfaces render is the same from the record as from the owner's task: REST's
    /// body and MCP's outcome (the server's own result, content blocks and all).
    #[test]
    fn a_task_reads_the_same_from_its_record_as_from_its_owner() {
        let mut theirs = CallToolResult::success(vec![ContentBlock::text("Echo: hi")]);
        theirs.structured_content = Some(json!({"echoed": "hi"}));
        let outcomes = [
            Outcome::Working,
            Outcome::Completed(CallResult {
                cache: None,
                output: ToolOutput::Mcp(Box::new(theirs.clone())),
                typed: false,
            }),
            Outcome::Completed(CallResult {
                cache: None,
                output: ToolOutput::Mcp(Box::new(theirs.clone())),
                typed: true,
            }),
            Outcome::Completed(CallResult {
                cache: None,
                output: ToolOutput::Data(json!([{"n": 1}])),
                typed: false,
            }),
            Outcome::Failed(CallFailure {
                code: ErrorCode::InvalidArguments,
                message: "no".into(),
                validation_errors: Some(vec![ValidationIssue {
                    path: "/message".into(),
                    message: "7 is not a string".into(),
                }]),
                retry_after: None,
                output: None,
            }),
            Outcome::Failed(CallFailure {
                code: ErrorCode::ServiceUnavailable,
                message: "full".into(),
                validation_errors: None,
                retry_after: Some(3),
                output: None,
            }),
            Outcome::Cancelled,
        ];
        for outcome in outcomes {
            let owners = task(outcome);
            let record = through_redis(&owners);
            assert_eq!(
                record.has_ended(),
                !matches!(owners.snapshot().outcome, Outcome::Working)
            );
            let read = record.into_snapshot(&owners.id);
            assert_eq!(read.clone().info(), owners.info());
            match (read.outcome, owners.snapshot().outcome) {
                (Outcome::Completed(a), Outcome::Completed(b)) => {
                    assert_eq!(a.typed, b.typed);
                    match (a.output, b.output) {
                        (ToolOutput::Mcp(a), ToolOutput::Mcp(b)) => assert_eq!(a, b),
                        (ToolOutput::Data(a), ToolOutput::Data(b)) => assert_eq!(a, b),
                        other => panic!("{other:?}"),
                    }
                }
                (Outcome::Failed(a), Outcome::Failed(b)) => {
                    assert_eq!(
                        (a.code, a.message, a.retry_after),
                        (b.code, b.message, b.retry_after)
                    );
                }
                (Outcome::Working, Outcome::Working) | (Outcome::Cancelled, Outcome::Cancelled) => {
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// What an operator sees with `redis-cli GET`: the owner, its address, the client and the
    /// status at the top level.
    #[test]
    fn the_record_names_its_owner_client_and_status() {
        let record = serde_json::to_value(record_of(&task(Outcome::Completed(CallResult {
            cache: None,
            output: ToolOutput::Data(json!({"n": 1})),
            typed: false,
        }))))
        .unwrap();
        assert_eq!(
            record,
            json!({"owner": "r0", "address": "127.0.0.1:8100", "client": "alice",
                   "tool": "echo", "created_at": "2026-11-27T00:00:00Z",
                   "updated_at": "2026-11-27T00:00:03Z", "status": "completed",
                   "output": {"data": {"n": 1}}, "typed": false})
        );
        let working = serde_json::to_value(record_of(&task(Outcome::Working))).unwrap();
        assert_eq!(working["status"], "working");
        assert!(working.get("output").is_none());
    }

    /// Another client gets nothing from any replica; a working task of the reader's own that
    /// it does not hold is gone, though its record says otherwise.
    #[test]
    fn a_record_answers_its_client_alone_and_never_for_a_lost_task() {
        let (alice, bob) = (Client::of_key("alice", None), Client::of_key("bob", None));
        let ended = through_redis(&task(Outcome::Cancelled));
        assert!(ended.answers(&alice, "r1"));
        assert!(
            ended.answers(&alice, "r0"),
            "its result outlives its replica's restart"
        );
        assert!(!ended.answers(&bob, "r1"));
        assert_eq!(
            ended.into_snapshot("0b6c").info().status,
            TaskStatus::Cancelled
        );
        let working = through_redis(&task(Outcome::Working));
        assert!(working.answers(&alice, "r1"));
        assert!(!working.answers(&alice, "r0"));
        assert!(!working.answers(&bob, "r1"));
    }
}
