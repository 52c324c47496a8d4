//! Tasks over MCP, the 2026-07-28 tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`):
//! for a client that declares it, a `tools/call` runs as one of the service's tasks (the same
//! book as REST's `Prefer: respond-async`), answered at once when it ends within
//! [`ANSWER_WITHIN`], else as a task the client reads with `tasks/get` and may end with
//! `tasks/cancel`. A task is its client's alone, as over REST.
//!
//! A task runs without the session's client behind it: what its upstream asks meanwhile is
//! answered as for a REST caller (an elicitation declined, no roots, no sampling), since the
//! extension's way to ask (`input_required`, `tasks/update`) is not relayed yet.
//!
//! With `cluster`, `tasks/get` and `tasks/cancel` work on any replica: the service reads
//! another replica's task from its Redis record, rendered here as the owner renders its own.

use std::time::Duration;

use axum::http::HeaderMap;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, CreateTaskResult, DetailedTask, GetTaskParams,
    GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::call::{ToolCall, rendered};
use super::errors::error_for;
use super::handler::McpBridge;
use crate::service::TaskRequest;
use crate::service::client::Client;
use crate::service::tasks::{Outcome, POLL_INTERVAL_MS, TaskSnapshot};
use crate::telemetry::TraceContext;

/// How long a call of a task-capable client may take before it is answered as a task.
pub(super) const ANSWER_WITHIN: Duration = Duration::from_secs(1);

/// Whether the client of this request declared the tasks extension (in the request's `_meta`
/// for a stateless client, at `initialize` for a session).
pub(super) fn takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
}

/// The extension's view of a task of the service: status, times, poll interval.
fn task_view(task: &TaskSnapshot, status: TaskStatus) -> Task {
    Task::new(
        task.id.clone(),
        status,
        task.created_at.clone(),
        task.updated_at.clone(),
    )
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// A JSON value as the object the extension's payloads carry.
fn object(value: serde_json::Value) -> JsonObject {
    match value {
        serde_json::Value::Object(members) => members,
        _ => JsonObject::new(),
    }
}

impl McpBridge {
    /// Runs `call` as a task of the service for `client`: its answer when it ends within
    /// [`ANSWER_WITHIN`], else the task.
    pub(super) async fn call_as_task(
        &self,
        call: ToolCall<'_>,
        client: Client,
    ) -> Result<CallToolResponse, McpError> {
        let trace = call
            .parts
            .and_then(|parts| parts.extensions.get::<TraceContext>().cloned())
            .unwrap_or_else(TraceContext::detached);
        let request_id = uuid::Uuid::new_v4().to_string();
        let started = self.service.start_task(TaskRequest {
            tool: call.name.to_owned(),
            arguments: call.arguments,
            request_id: request_id.clone(),
            client,
            trace,
        });
        let task = match started {
            Ok(task) => task,
            Err(failure) => {
                let typed = self.service.has_output_schema(call.name);
                return error_for(failure, &request_id, typed);
            }
        };
        if tokio::time::timeout(ANSWER_WITHIN, task.ended())
            .await
            .is_ok()
        {
            return self.answer_of(task.snapshot(), &request_id);
        }
        Ok(CallToolResponse::Task(CreateTaskResult::new(task_view(
            &task.snapshot(),
            TaskStatus::Working,
        ))))
    }

    /// The call's answer, once the task has ended, as the call itself would have answered.
    fn answer_of(
        &self,
        task: TaskSnapshot,
        request_id: &str,
    ) -> Result<CallToolResponse, McpError> {
        match task.outcome {
            Outcome::Completed(result) => Ok(CallToolResponse::Complete(rendered(result))),
            Outcome::Failed(failure) => error_for(
                failure,
                request_id,
                self.service.has_output_schema(&task.tool),
            ),
            Outcome::Cancelled | Outcome::Working => Err(McpError::internal_error(
                format!("Task '{}' was cancelled", task.id),
                None,
            )),
        }
    }

    /// `tasks/get`: the task with its payload (the call's result once completed, its JSON-RPC
    /// error once failed).
    pub(super) async fn get_task_of(
        &self,
        params: GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let client = self.client(context);
        let Some(task) = self.service.task(&params.task_id, &client).await else {
            return Err(no_such_task(&params.task_id));
        };
        let payload = match &task.outcome {
            Outcome::Working => TaskPayload::Working,
            Outcome::Cancelled => TaskPayload::Cancelled,
            Outcome::Completed(_) | Outcome::Failed(_) => {
                match self.answer_of(task.clone(), &params.task_id) {
                    Ok(CallToolResponse::Complete(result)) => TaskPayload::Completed {
                        result: object(serde_json::to_value(result).unwrap_or_default()),
                    },
                    Ok(other) => TaskPayload::Failed {
                        error: object(
                            serde_json::json!({"code": -32603, "message": format!("Task '{}' answered {other:?}", task.id)}),
                        ),
                    },
                    Err(error) => TaskPayload::Failed {
                        error: object(serde_json::to_value(error).unwrap_or_default()),
                    },
                }
            }
        };
        let view = task_view(&task, payload.status());
        Ok(GetTaskResult::new(DetailedTask::new(view, payload)))
    }

    /// `tasks/cancel`: ends a working task of this client (its upstream request cancelled),
    /// on this replica or, sent on with the request's API key, on the one running it.
    pub(super) async fn cancel_task_of(
        &self,
        params: CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let client = self.client(context);
        let no_headers = HeaderMap::new();
        let headers = context
            .extensions
            .get::<axum::http::request::Parts>()
            .map_or(&no_headers, |parts| &parts.headers);
        match self
            .service
            .cancel_task(&params.task_id, &client, headers)
            .await
        {
            Some(_) => Ok(()),
            None => Err(no_such_task(&params.task_id)),
        }
    }
}

/// A task id this client has no task by.
fn no_such_task(id: &str) -> McpError {
    McpError::invalid_params(format!("Task '{id}' not found"), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_objects_become_payload_objects() {
        assert_eq!(object(serde_json::json!({"a": 1})).len(), 1);
        assert!(object(serde_json::json!([1])).is_empty());
    }
}
