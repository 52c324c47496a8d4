//! The body of the task routes: a tool call run in the background (`POST /call-tool` with
//! `Prefer: respond-async` answers 202 and `Location: /tasks/{id}`), read by
//! `GET /tasks/{id}` until it has ended and cancelled by `DELETE /tasks/{id}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::{ErrorCode, ValidationIssue};

/// Where a task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The call runs.
    Working,
    /// The call answered; `result` is its `data`.
    Completed,
    /// The call failed; `error` says why.
    Failed,
    /// `DELETE /tasks/{id}` (or the service stopping) cancelled the call.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended (nothing about it changes any more).
    pub fn is_terminal(self) -> bool {
        self != TaskStatus::Working
    }
}

/// Why a task's call failed: the code and message the call would have answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskError {
    pub code: ErrorCode,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<ValidationIssue>>,
}

/// `data` of `GET /tasks/{id}`, `DELETE /tasks/{id}`, and of the 202 that created the task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TaskInfo {
    /// What `GET /tasks/{id}` takes.
    pub task_id: String,
    /// The served name of the tool the task calls.
    pub tool: String,
    pub status: TaskStatus,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// When `status` last changed (RFC 3339, UTC).
    pub updated_at: String,
    /// How long to wait between two reads of a working task, in milliseconds.
    pub poll_interval_ms: u64,
    /// The call's `data`, once `completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    /// Why the call failed, once `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_snake_case_and_only_working_goes_on() {
        assert_eq!(
            serde_json::to_value(TaskStatus::Working).unwrap(),
            "working"
        );
        assert_eq!(
            serde_json::to_value(TaskStatus::Cancelled).unwrap(),
            "cancelled"
        );
        assert!(!TaskStatus::Working.is_terminal());
        for ended in [
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            assert!(ended.is_terminal());
        }
    }

    #[test]
    fn a_working_task_carries_neither_result_nor_error() {
        let info = TaskInfo {
            task_id: "t".into(),
            tool: "echo".into(),
            status: TaskStatus::Working,
            created_at: "2026-11-27T00:00:00Z".into(),
            updated_at: "2026-11-27T00:00:00Z".into(),
            poll_interval_ms: 1000,
            result: None,
            error: None,
        };
        let json = serde_json::to_value(&info).unwrap();
        assert!(json.get("result").is_none() && json.get("error").is_none());
        assert_eq!(json["status"], "working");
    }
}
