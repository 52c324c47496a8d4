//! Tasks over MCP, the 2026-07-28 tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`):
//! for a client that declares it, a `tools/call` runs as one of the service's tasks (the same
//! book as REST's `Prefer: respond-async`), answered at once when it ends within
//! [`ANSWER_WITHIN`], else as a task the client reads with `tasks/get` and may end with
//! `tasks/cancel`. A task is its client's alone, as over REST.
//!
//! What a task's upstream asks meanwhile (elicitation, sampling, roots) waits for the client:
//! `tasks/get` shows the task `input_required` with the asks, and `tasks/update` answers them
//! (a [`RoundTrip`] is the task's caller, as for a call asked in rounds); only what the client
//! declared it offers is asked of it, the rest answered as for a REST caller.
//!
//! With `cluster`, `tasks/get` and `tasks/cancel` work on any replica: the service reads
//! another replica's task from its Redis record, rendered here as the owner renders its own.

use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use rmcp::model::{
    CallToolResponse, CancelTaskParams, ClientCapabilities, CreateTaskResult, DetailedTask,
    GetTaskParams, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};

use super::call::{ToolCall, rendered};
use super::errors::{catalog_error, error_for};
use super::handler::McpBridge;
use super::input_required::RoundTrip;
use crate::provider::{Caller, ClientSession};
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
        offers: Option<ClientCapabilities>,
    ) -> Result<CallToolResponse, McpError> {
        let trace = call
            .parts
            .and_then(|parts| parts.extensions.get::<TraceContext>().cloned())
            .unwrap_or_else(TraceContext::detached);
        let request_id = uuid::Uuid::new_v4().to_string();
        // What the upstream asks while the task runs waits for `tasks/update` (shown by
        // `tasks/get` as `input_required`); the legacy transport has no book for it.
        let asker = self.parked.as_ref().map(|_| {
            RoundTrip::new(
                self.service.client_sessions(),
                client.as_str(),
                call.name,
                offers,
            )
        });
        let caller = asker.clone().map(|asker| {
            let asker: Arc<dyn ClientSession> = asker;
            Caller::new(asker, None)
        });
        let started = self.service.start_task(TaskRequest {
            tool: call.name.to_owned(),
            arguments: call.arguments,
            request_id: request_id.clone(),
            client,
            trace,
            caller,
        });
        let task = match started {
            Ok(task) => task,
            Err(failure) => {
                let typed = self.service.has_output_schema(call.name);
                return error_for(failure, &request_id, typed);
            }
        };
        if let (Some(parked), Some(asker)) = (&self.parked, &asker) {
            parked.asks_for_task(&task.id, asker);
        }
        drop(asker);
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
        let asks = self
            .parked
            .as_ref()
            .and_then(|parked| parked.task_asker(&params.task_id))
            .map(|asker| asker.pending())
            .filter(|asks| !asks.is_empty());
        let payload = match &task.outcome {
            Outcome::Working => match asks {
                Some(input_requests) => TaskPayload::InputRequired { input_requests },
                None => TaskPayload::Working,
            },
            Outcome::Cancelled => TaskPayload::Cancelled,
            // The call failed (not the tool reporting an error of its own, which completes
            // with its isError result): the task failed, with the JSON-RPC error.
            Outcome::Failed(failure) if failure.output.is_none() => {
                let error = catalog_error(failure.clone(), &params.task_id);
                TaskPayload::Failed {
                    error: object(serde_json::to_value(error).unwrap_or_default()),
                }
            }
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

    /// `tasks/update`: the client's answers to what the task's upstream asked, each under
    /// the key `tasks/get` showed it by.
    pub(super) async fn update_task_of(
        &self,
        params: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let client = self.client(context);
        let asker = match self.service.task(&params.task_id, &client).await {
            Some(task) if matches!(task.outcome, Outcome::Working) => self
                .parked
                .as_ref()
                .and_then(|parked| parked.task_asker(&params.task_id)),
            Some(_) => {
                return Err(McpError::invalid_params(
                    format!("Task '{}' has ended: it asks nothing", params.task_id),
                    None,
                ));
            }
            None => return Err(no_such_task(&params.task_id)),
        };
        let Some(asker) = asker else {
            return Err(McpError::invalid_params(
                format!(
                    "Task '{}' waits for no input on this replica",
                    params.task_id
                ),
                None,
            ));
        };
        asker.answer(params.input_responses)
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
