//! Running one tool on a live connection — the shared one, or the calling session's own
//! (`session_per_client`): the `tools/call` is entered in the connection's routes for as long
//! as it runs, so that its progress and the server's requests to its client reach the caller;
//! a call that is dropped (timeout, caller gone) is cancelled upstream.
//!
//! A tool the server runs only as a task (2025-11-25 tasks: `execution.taskSupport:
//! "required"`, which rmcp's `Tool` does not carry) is learned from its refusal ("requires
//! task augmentation", given before the tool runs) and from then on sent as a task: the
//! `tools/call` with `task`, then `tasks/result` on the same connection, which the server
//! answers when the task ends. The result is the tool's, and the call looks like any other to
//! the service; what the server asks during the task comes on the `tasks/result` request's
//! stream and is routed like a call's. Dropping the call sends `tasks/cancel`.

use rmcp::model::{
    CallToolResponse, CallToolResult, ClientRequest, CustomRequest, RequestMetaObject, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};

use super::client::{CallerRoutes, ProgressRoutes};
use super::{CallContext, Inner, JsonObject, ToolError};
use crate::provider::clients::Caller;
use crate::provider::{ProgressSink, ToolOutput};
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;
use crate::telemetry::{SpanKind, TraceContext};

/// One connection and its routing tables (progress tokens and callers are per connection).
#[derive(Clone)]
pub(super) struct Link {
    pub(super) peer: Peer<RoleClient>,
    pub(super) progress: ProgressRoutes,
    pub(super) callers: CallerRoutes,
}

impl Inner {
    /// A request that runs a tool (`tools/call`, or `tasks/result` of its task), sent by hand
    /// to learn the id and progress token rmcp gives it; with the answer, what the server asked
    /// of a caller that had no client to ask ([`Refused`]).
    pub(super) async fn send_routed(
        &self,
        link: &Link,
        request: ClientRequest,
        trace: &TraceContext,
        sink: Option<ProgressSink>,
        caller: Option<Caller>,
    ) -> (Result<CallToolResponse, ServiceError>, Refused) {
        let mut options = PeerRequestOptions::no_options();
        let mut meta = trace_meta(trace);
        if super::client::is_stateless(&link.peer) {
            // Every level, as a handshake-era server is asked once: the sessions filter.
            #[allow(deprecated)] // logging: SEP-2577, still in the versions served
            meta.set_log_level(rmcp::model::LoggingLevel::Debug);
            // What the caller offers, not all the gateway can pass on: the server then refuses
            // (-32021) or does without, as it would for that client.
            meta.set_client_capabilities(super::rounds::offered_by(caller.as_ref()));
        }
        options.meta = Some(meta);
        let handle = match link.peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(e) => return (Err(e), None),
        };
        let _progress = sink.map(|sink| {
            let key = serde_json::to_string(&handle.progress_token).unwrap_or_default();
            link.progress.write_unpoisoned().insert(key.clone(), sink);
            ProgressRoute {
                routes: link.progress.clone(),
                key,
            }
        });
        // Every call is entered, those from HTTP too: a server request during one of them
        // must not be taken for another's.
        link.callers
            .calls
            .write_unpoisoned()
            .insert(handle.id.clone(), caller);
        link.callers.changed.notify_waiters();
        let _caller = CallerRoute {
            routes: link.callers.clone(),
            id: handle.id.clone(),
        };
        let mut cancel = CancelOnDrop {
            peer: link.peer.clone(),
            tasks: self.shutdown.clone(),
            id: Some(handle.id.clone()),
        };
        let id = handle.id.clone();
        let answer = handle.await_response().await;
        cancel.id = None;
        // What the server logged during the call reaches its client before the answer.
        link.callers.logs_handed_on().await;
        let refused = link.callers.refused.write_unpoisoned().remove(&id);
        let answer = match answer {
            Ok(ServerResult::CallToolResult(result)) => Ok(CallToolResponse::Complete(result)),
            // A server of 2026-07-28 asking for input first (`super::rounds`).
            Ok(ServerResult::InputRequiredResult(asked)) => {
                Ok(CallToolResponse::InputRequired(asked))
            }
            // `tasks/result`'s answer, when rmcp did not read it as a tool result.
            Ok(ServerResult::CustomResult(custom)) => {
                serde_json::from_value::<CallToolResult>(custom.0)
                    .map(CallToolResponse::Complete)
                    .map_err(|_| ServiceError::UnexpectedResponse)
            }
            Ok(_) => Err(ServiceError::UnexpectedResponse),
            Err(e) => Err(e),
        };
        (answer, refused)
    }

    /// `tools/call` of a tool that is not known to need a task; one that refuses to run
    /// without one is learned and run as a task at once (the refusal comes before it runs).
    async fn send_call(
        &self,
        link: &Link,
        tool: &str,
        args: JsonObject,
        trace: &TraceContext,
        sink: Option<ProgressSink>,
        caller: Option<Caller>,
    ) -> (Result<CallToolResponse, ServiceError>, Refused) {
        if self.task_tools.read_unpoisoned().contains(tool) {
            return self.send_task(link, tool, args, trace, sink, caller).await;
        }
        let (answer, refused) = self
            .send_in_rounds(
                link,
                tool,
                (args.clone(), &args),
                trace,
                sink.clone(),
                caller.clone(),
            )
            .await;
        if !matches!(&answer, Ok(CallToolResponse::Complete(r)) if needs_task(r)) {
            return (answer, refused);
        }
        tracing::info!(
            service = %self.service, provider = %self.name, tool,
            "the server runs this tool only as a task: it is called as one from now on"
        );
        self.task_tools.write_unpoisoned().insert(tool.to_owned());
        self.send_task(link, tool, args, trace, sink, caller).await
    }

    /// A tool run as a task of the server's: created with `tools/call` + `task`, its result
    /// waited for with `tasks/result` (routed like a call), cancelled if the wait is dropped.
    async fn send_task(
        &self,
        link: &Link,
        tool: &str,
        args: JsonObject,
        trace: &TraceContext,
        sink: Option<ProgressSink>,
        caller: Option<Caller>,
    ) -> (Result<CallToolResponse, ServiceError>, Refused) {
        let create = json!({"name": tool, "arguments": args, "task": {"ttl": TASK_TTL_MS}});
        let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(create)));
        let mut options = PeerRequestOptions::no_options();
        options.meta = Some(trace_meta(trace));
        let created = match link.peer.send_request_with_option(request, options).await {
            Ok(handle) => handle.await_response().await,
            Err(e) => Err(e),
        };
        let task_id = match created {
            // A server that ran it at once after all.
            Ok(ServerResult::CallToolResult(result)) => {
                return (Ok(CallToolResponse::Complete(result)), None);
            }
            Ok(ServerResult::CustomResult(custom)) => match task_id_of(&custom.0) {
                Some(id) => id,
                None => return (Err(ServiceError::UnexpectedResponse), None),
            },
            Ok(_) => return (Err(ServiceError::UnexpectedResponse), None),
            Err(e) => return (Err(e), None),
        };
        let mut cancel = CancelTaskOnDrop {
            peer: link.peer.clone(),
            tasks: self.shutdown.clone(),
            task_id: Some(task_id.clone()),
        };
        let wait = json!({"taskId": task_id});
        let request = ClientRequest::CustomRequest(CustomRequest::new("tasks/result", Some(wait)));
        let answer = self.send_routed(link, request, trace, sink, caller).await;
        cancel.task_id = None;
        answer
    }

    /// The connection a call or request of `caller` goes on: the caller's own with
    /// `session_per_client`, else the shared one (with its generation).
    pub(super) async fn link_for(
        self: &std::sync::Arc<Self>,
        caller: Option<&Caller>,
    ) -> Result<(Link, Option<u64>), ToolError> {
        if let Some(caller) = caller
            && self.session_per_client
            && caller.is_session()
        {
            let link = self
                .session_link(&caller.session)
                .await
                .map_err(|why| {
                    ToolError::Unavailable(format!(
                        "Dependency unavailable: MCP server '{}' (this session's own connection): {why}",
                        self.name
                    ))
                })?;
            return Ok((link, None));
        }
        let Some((peer, generation)) = self.current_connection() else {
            let why = self.current_status().error.unwrap_or_default();
            return Err(ToolError::Unavailable(format!(
                "Dependency unavailable: MCP server '{}' is not connected: {why}",
                self.name
            )));
        };
        Ok((
            Link {
                peer,
                progress: self.progress.clone(),
                callers: self.callers.clone(),
            },
            Some(generation),
        ))
    }

    pub(super) async fn call(
        self: &std::sync::Arc<Self>,
        tool: &str,
        args: JsonObject,
        cx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let caller = cx.caller.clone();
        let (link, shared) = self.link_for(caller.as_ref()).await?;
        let mut span = cx
            .trace
            .child(format!("tools/call {tool}"), SpanKind::Client);
        if span.is_recording() {
            span.set("mcp.method.name", "tools/call");
            span.set("gen_ai.operation.name", "execute_tool");
            span.set("gen_ai.tool.name", tool.to_owned());
            span.set("mcp_http_gateway.provider", self.name.clone());
        }
        // Dropping the request (timeout, caller gone) sends notifications/cancelled upstream.
        let outcome = tokio::time::timeout(
            cx.timeout,
            self.send_call(
                &link,
                tool,
                args,
                span.context(),
                cx.progress.clone(),
                caller.clone(),
            ),
        )
        .await;
        let (outcome, refused) = match outcome {
            Ok((answer, refused)) => (Ok(answer), refused),
            Err(elapsed) => (Err(elapsed), None),
        };
        match &outcome {
            Err(_) => span.fail("timeout", "the call timed out"),
            Ok(Err(e)) => span.fail("jsonrpc_error", e.to_string()),
            Ok(Ok(CallToolResponse::Complete(r))) if r.is_error == Some(true) => {
                span.fail("tool_error", "the tool answered isError")
            }
            Ok(Ok(_)) => {}
        }
        drop(span);
        let failed = match &outcome {
            Ok(Ok(CallToolResponse::Complete(result))) => result.is_error == Some(true),
            Ok(_) => true,
            Err(_) => false,
        };
        if let (true, Some(what)) = (failed, refused) {
            // It failed after asking for what an HTTP caller cannot give: the caller's lack,
            // not the tool's fault.
            return Err(ToolError::CapabilityRequired(format!(
                "Tool '{tool}' asked its caller for {what}, which a REST call cannot give: call it over MCP at /mcp with a client that offers {what}"
            )));
        }
        match outcome {
            Err(_) => {
                tracing::info!(
                    service = %self.service, provider = %self.name, tool, request_id = %cx.request_id,
                    "call timed out; sent notifications/cancelled upstream"
                );
                Err(ToolError::Timeout {
                    tool: tool.to_owned(),
                    ms: cx.timeout.as_millis() as u64,
                })
            }
            // `isError` included: the service reads the tool's own error out of it.
            Ok(Ok(CallToolResponse::Complete(result))) => Ok(ToolOutput::Mcp(Box::new(result))),
            Ok(Ok(_)) => Err(ToolError::CapabilityRequired(format!(
                "Tool '{tool}' answered with a task or a request for input, which a REST call cannot carry: call it over MCP at /mcp"
            ))),
            // A server of 2026-07-28 refusing a caller that does not offer what it needs.
            Ok(Err(ServiceError::McpError(e)))
                if e.code == rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY =>
            {
                Err(ToolError::CapabilityRequired(format!(
                    "Tool '{tool}' needs its caller to offer what it asks ({}): call it over MCP at /mcp with a client that offers it",
                    e.message
                )))
            }
            Ok(Err(ServiceError::McpError(e))) => {
                let message = format!("Tool '{tool}' failed: {}", e.message);
                // Invalid params is JSON-RPC's; MCP servers also use it for unknown tools.
                let invalid_params = e.code == rmcp::model::ErrorCode::INVALID_PARAMS;
                if invalid_params && e.message.to_lowercase().contains("unknown tool") {
                    Err(ToolError::NotFound(tool.to_owned()))
                } else if invalid_params {
                    Err(ToolError::InvalidArguments(message))
                } else {
                    Err(ToolError::Execution(message))
                }
            }
            Ok(Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
                if let Some(generation) = shared {
                    self.connection_failed(generation);
                }
                Err(ToolError::Unavailable(format!(
                    "Dependency unavailable: MCP server '{}' connection lost during the call: {e}",
                    self.name
                )))
            }
            Ok(Err(e)) => Err(ToolError::Execution(format!("Tool '{tool}' failed: {e}"))),
        }
    }
}

/// The call's trace context as `params._meta` carries it: the `traceparent` (this client span
/// as the parent) and `tracestate` keys that SEP-414 reserves in a request's `_meta`
/// (modelcontextprotocol.io/seps/414-request-meta, part of the 2026-07-28 revision). Servers
/// of earlier revisions ignore `_meta` keys they do not know.
pub(super) fn trace_meta(trace: &TraceContext) -> RequestMetaObject {
    let mut meta = RequestMetaObject::default();
    meta.set_traceparent(trace.traceparent());
    if let Some(state) = trace.tracestate() {
        meta.set_tracestate(state);
    }
    meta
}

/// How long a task the gateway creates upstream may live (the server may keep it shorter).
const TASK_TTL_MS: u64 = 300_000;

/// Whether a server refused to run a tool without a task: the TypeScript SDK's answer to a
/// plain `tools/call` of a tool whose `execution.taskSupport` is `required`, given before the
/// tool runs (so calling it again as a task does not run it twice).
fn needs_task(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
        && serde_json::to_value(&result.content)
            .ok()
            .and_then(|blocks| blocks.as_array().cloned())
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str().map(str::to_owned))
            .any(|text| text.contains("requires task augmentation"))
}

/// The id of the task a task-augmented `tools/call` created (`{task: {taskId, …}}`).
fn task_id_of(created: &Value) -> Option<String> {
    created["task"]["taskId"].as_str().map(str::to_owned)
}

/// Sends `tasks/cancel` for a task whose result is no longer waited for.
struct CancelTaskOnDrop {
    peer: Peer<RoleClient>,
    tasks: Shutdown,
    task_id: Option<String>,
}

impl Drop for CancelTaskOnDrop {
    fn drop(&mut self) {
        if let Some(task_id) = self.task_id.take() {
            let peer = self.peer.clone();
            self.tasks.spawn(async move {
                let params = json!({"taskId": task_id});
                let request =
                    ClientRequest::CustomRequest(CustomRequest::new("tasks/cancel", Some(params)));
                let _ = peer.send_request(request).await;
            });
        }
    }
}

/// Sends `notifications/cancelled` for a request that is dropped before its answer.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    tasks: Shutdown,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let peer = self.peer.clone();
            self.tasks.spawn(async move {
                let param = rmcp::model::CancelledNotificationParam::new(
                    Some(id),
                    Some("the gateway's caller gave up".into()),
                );
                let _ = peer.notify_cancelled(param).await;
            });
        }
    }
}

/// Takes a call's place in [`ProgressRoutes`] for as long as it runs.
struct ProgressRoute {
    routes: ProgressRoutes,
    key: String,
}

impl Drop for ProgressRoute {
    fn drop(&mut self) {
        self.routes.write_unpoisoned().remove(&self.key);
    }
}

/// Takes a call's place in [`CallerRoutes`] for as long as it runs.
struct CallerRoute {
    routes: CallerRoutes,
    id: rmcp::model::RequestId,
}

impl Drop for CallerRoute {
    fn drop(&mut self) {
        self.routes.calls.write_unpoisoned().remove(&self.id);
        self.routes.refused.write_unpoisoned().remove(&self.id);
    }
}

/// What a call's server asked of a caller with no client to ask (`sampling`), if anything.
pub(super) type Refused = Option<&'static str>;

#[cfg(test)]
mod tests {
    use super::*;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    /// The TypeScript SDK's refusal of a plain call of a task-only tool, and nothing else.
    #[test]
    fn a_refusal_for_want_of_a_task_is_told_apart() {
        let refusal = "MCP error -32601: Tool simulate-research-query requires task augmentation (taskSupport: 'required')";
        assert!(needs_task(&result(
            json!({"content": [{"type": "text", "text": refusal}], "isError": true})
        )));
        assert!(!needs_task(&result(
            json!({"content": [{"type": "text", "text": refusal}]})
        )));
        assert!(!needs_task(&result(
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true})
        )));
    }

    #[test]
    fn the_task_id_is_read_from_a_created_task() {
        let created = json!({"task": {"taskId": "t-1", "status": "working", "ttl": 300000}});
        assert_eq!(task_id_of(&created).as_deref(), Some("t-1"));
        assert_eq!(task_id_of(&json!({"content": []})), None);
    }
}
