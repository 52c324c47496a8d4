//! `tools/call` over MCP: the same [`Service::call_tool`] as POST /call-tool (validation,
//! timeouts, limits), with the caller's progress token, cancellation and server-to-client
//! requests routed back to it, answered as [`super::errors`] maps failures. Both ways a call
//! comes in run [`McpBridge::run_call`]: through rmcp ([`McpBridge::call`]) and answered as
//! one JSON body by [`super::direct`].

#![allow(deprecated)]

use std::future::Future;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorCode, JsonObject,
    RequestId, RequestMetaObject,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use std::sync::Arc;

use std::time::Duration;

use super::errors::{error_for, jsonrpc};
use super::handler::McpBridge;
use super::input_required::{ParkedCalls, RoundTrip};
use crate::provider::{Caller, ClientSession, ToolOutput};
use crate::service::{CallRequest, CallResult};
use crate::telemetry::traceparent::tracestate;
use crate::telemetry::{Span, SpanKind, TraceContext, TraceParent};

/// How long an answer waits for the call's last progress reports to be sent.
const PROGRESS_DRAIN: Duration = Duration::from_secs(2);

/// One `tools/call` as its way in hands it over.
pub(super) struct ToolCall<'a> {
    pub name: &'a str,
    pub arguments: JsonObject,
    /// The request's `_meta` (progress token, trace context).
    pub meta: &'a RequestMetaObject,
    /// The HTTP request it came in (its client, trace context and session header).
    pub parts: Option<&'a axum::http::request::Parts>,
    pub jsonrpc_id: &'a RequestId,
    /// The session's peer, for progress reports (none when the call cannot report any).
    pub peer: Option<Peer<RoleServer>>,
    /// Whom the upstream's asks during the call go to, when not the bridge's session (a
    /// 2026-07-28 call asked in rounds).
    pub asked: Option<Arc<dyn ClientSession>>,
}

impl McpBridge {
    /// The MCP server span of one `tools/call` (OpenTelemetry's MCP conventions: named
    /// `tools/call {tool}`, `mcp.method.name`, `gen_ai.tool.name`). Its parent is the trace
    /// context the request carries in `params._meta` (`traceparent`/`tracestate`, reserved by
    /// SEP-414, modelcontextprotocol.io/seps/414-request-meta, part of the 2026-07-28 revision)
    /// when valid, else the HTTP request's server span.
    fn call_span(&self, call: &ToolCall<'_>, session_id: Option<&str>) -> Span {
        let tool = call.name;
        let name = format!("tools/call {tool}");
        let from_meta = call
            .meta
            .get_traceparent()
            .and_then(TraceParent::parse)
            .map(|parent| {
                let state = call.meta.get_tracestate().map(|s| tracestate([s]));
                (parent, state.flatten())
            });
        let ambient = call
            .parts
            .and_then(|parts| parts.extensions.get::<TraceContext>());
        let mut span = match (from_meta, ambient) {
            (Some(incoming), _) => Span::server(Some(incoming), self.service.spans(), name),
            (None, Some(ambient)) => ambient.child(name, SpanKind::Server),
            (None, None) => Span::server(None, self.service.spans(), name),
        };
        if span.is_recording() {
            span.set("mcp.method.name", "tools/call");
            span.set("gen_ai.operation.name", "execute_tool");
            span.set("gen_ai.tool.name", tool.to_owned());
            span.set("jsonrpc.request.id", call.jsonrpc_id.to_string());
            span.set("network.transport", "tcp");
            span.set("network.protocol.name", "http");
            if let Some(session) = session_id {
                span.set("mcp.session.id", session.to_owned());
            }
        }
        span
    }

    /// `tools/call` as rmcp hands it over.
    pub(super) async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.seen(&context);
        let client = self.client(&context);
        let request = match self.discovered(request, &client) {
            Ok(request) => request,
            Err(answer) => return Ok(CallToolResponse::Complete(answer)),
        };
        if let Some(parked) = &self.parked
            && (request.request_state.is_some()
                || (super::input_required::asks_by_rounds(&context)
                    && !super::tasks::takes_tasks(&context)
                    && !self.session.is_session()))
        {
            return self.call_in_rounds(request, context, client, parked).await;
        }
        let CallToolRequestParams {
            name, arguments, ..
        } = request;
        let call = ToolCall {
            name: &name,
            arguments: arguments.unwrap_or_default(),
            meta: &context.meta,
            parts: context.extensions.get::<axum::http::request::Parts>(),
            jsonrpc_id: &context.id,
            peer: Some(context.peer.clone()),
            asked: None,
        };
        if super::tasks::takes_tasks(&context) {
            return self
                .call_as_task(call, client, context.client_capabilities())
                .await;
        }
        self.run_call(call, client, context.ct.cancelled()).await
    }

    /// With `mcp.discovery`: `find_tools` answered here (the tools the client may use that
    /// match its query), and `call_tool` turned into the call of the tool it names, which then
    /// goes the way of every call (scope, limits, validation). Any other call as it is.
    fn discovered(
        &self,
        mut request: CallToolRequestParams,
        client: &crate::service::client::Client,
    ) -> Result<CallToolRequestParams, CallToolResult> {
        use crate::service::discovery::{
            CALL_TOOL, DEFAULT_LIMIT, FIND_TOOLS, MAX_LIMIT, MAX_QUERY_BYTES,
        };
        if !self.service.settings().config.mcp.discovery {
            return Ok(request);
        }
        let refused = |why: String| {
            let mut result = CallToolResult::error(vec![ContentBlock::text(why)]);
            result.is_error = Some(true);
            result
        };
        let arguments = request.arguments.clone().unwrap_or_default();
        match request.name.as_ref() {
            FIND_TOOLS => {
                let query = arguments
                    .get("query")
                    .and_then(|q| q.as_str())
                    .unwrap_or("");
                if query.trim().is_empty() || query.len() > MAX_QUERY_BYTES {
                    return Err(refused(format!(
                        "find_tools needs `query`: 1 to {MAX_QUERY_BYTES} bytes of text saying what you need done"
                    )));
                }
                let limit = match arguments.get("limit") {
                    None => DEFAULT_LIMIT,
                    Some(limit) => match limit.as_u64().map(|l| l as usize) {
                        Some(limit) if (1..=MAX_LIMIT).contains(&limit) => limit,
                        _ => {
                            return Err(refused(format!(
                                "find_tools: `limit` must be an integer from 1 to {MAX_LIMIT}"
                            )));
                        }
                    },
                };
                let found: Vec<serde_json::Value> = self
                    .service
                    .find_tools(client, query, limit)
                    .into_iter()
                    .map(|t| {
                        serde_json::json!({"name": t.name, "title": t.title, "description": t.description,
                            "inputSchema": t.input_schema, "score": t.score})
                    })
                    .collect();
                let structured = serde_json::json!({"tools": found});
                let mut result = CallToolResult::structured(structured);
                result.is_error = Some(false);
                Err(result)
            }
            CALL_TOOL => {
                let Some(name) = arguments.get("name").and_then(|n| n.as_str()) else {
                    return Err(refused(
                        "call_tool needs `name`: a tool's name as find_tools answered it".into(),
                    ));
                };
                let inner = match arguments.get("arguments") {
                    None => JsonObject::new(),
                    Some(serde_json::Value::Object(inner)) => inner.clone(),
                    Some(_) => {
                        return Err(refused(
                            "call_tool: `arguments` must be an object (the tool's arguments)"
                                .into(),
                        ));
                    }
                };
                request.name = name.to_owned().into();
                request.arguments = Some(inner);
                Ok(request)
            }
            _ => Ok(request),
        }
    }

    /// A call of a 2026-07-28 client, or its retry: what the upstream asks during it goes
    /// to the client as `input_required` rounds ([`super::input_required`]).
    async fn call_in_rounds(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        client: crate::service::client::Client,
        parked: &ParkedCalls,
    ) -> Result<CallToolResponse, McpError> {
        let CallToolRequestParams {
            name,
            arguments,
            input_responses,
            request_state,
            ..
        } = request;
        let trip = match request_state {
            Some(state) => {
                let trip = parked.resumed(&state, client.as_str(), &name).ok_or_else(|| {
                    McpError::invalid_params(
                        format!(
                            "requestState names no call of tool '{name}' waiting for this client's input here (unknown, ended, another client's, or not retried within {} s)",
                            super::input_required::PARKED_FOR.as_secs()
                        ),
                        None,
                    )
                })?;
                trip.answer(input_responses.unwrap_or_default())?;
                trip
            }
            None => {
                let trip = RoundTrip::new(
                    self.service.client_sessions(),
                    client.as_str(),
                    &name,
                    context.client_capabilities(),
                );
                // Its first round is open before the call starts: what the upstream logs at
                // once reaches the client.
                trip.open_round(&context);
                let bridge = self.clone();
                let runner = trip.clone();
                let meta = context.meta.clone();
                let parts = context
                    .extensions
                    .get::<axum::http::request::Parts>()
                    .cloned();
                let (id, peer) = (context.id.clone(), context.peer.clone());
                self.service.drain().spawn(async move {
                    let asked: Arc<dyn ClientSession> = runner.clone();
                    let call = ToolCall {
                        name: &name,
                        arguments: arguments.unwrap_or_default(),
                        meta: &meta,
                        parts: parts.as_ref(),
                        jsonrpc_id: &id,
                        peer: Some(peer),
                        asked: Some(asked),
                    };
                    let cancelled = runner.cancel.clone().cancelled_owned();
                    let outcome = bridge.run_call(call, client, cancelled).await;
                    runner.ended(outcome);
                });
                trip
            }
        };
        trip.round(&context, parked).await
    }

    /// Runs one call for `client` until it ends or `cancelled` (notifications/cancelled from
    /// the client) completes: its span, its access line, its answer.
    pub(super) async fn run_call(
        &self,
        request: ToolCall<'_>,
        client: crate::service::client::Client,
        cancelled: impl Future<Output = ()>,
    ) -> Result<CallToolResponse, McpError> {
        let request_id = uuid::Uuid::new_v4().to_string();
        let invocation_id = uuid::Uuid::new_v4().to_string();
        let session_id = request.parts.and_then(|parts| {
            parts
                .headers
                .get("mcp-session-id")?
                .to_str()
                .ok()
                .map(str::to_owned)
        });
        let mut span = self.call_span(&request, session_id.as_deref());
        let trace = span.context().clone();
        let (progress, forwarding) = match (request.meta.get_progress_token(), request.peer) {
            (Some(token), Some(peer)) => {
                let (sink, forwarding) = forward_progress(self.service.drain(), peer, token);
                (Some(sink), Some(forwarding))
            }
            _ => (None, None),
        };
        let started_at = crate::clock::timestamp();
        let started = std::time::Instant::now();
        // What the upstream asks its client during the call goes to this request's client.
        let session: Arc<dyn ClientSession> = match request.asked {
            Some(asked) => asked,
            None => self.session.clone(),
        };
        let call = self.service.call_tool(CallRequest {
            tool: request.name,
            arguments: request.arguments,
            request_id: &request_id,
            client: &client,
            trace: &trace,
            progress,
            caller: Some(Caller::new(session, Some(request.jsonrpc_id.clone()))),
        });
        // notifications/cancelled from the client drops the call, and with it the upstream
        // request (which rmcp cancels on drop).
        let outcome = tokio::select! {
            outcome = call => Some(outcome),
            _ = cancelled => None,
        };
        // Every progress report goes out before the answer: the forwarder ends once the call
        // has dropped its ends of the channel and the reports are sent.
        if let Some(forwarding) = forwarding {
            let _ = tokio::time::timeout(PROGRESS_DRAIN, forwarding).await;
        }
        let (status, code) = match &outcome {
            Some(Ok(_)) => ("ok", None),
            Some(Err(f)) => ("error", Some(f.code.as_str())),
            None => ("cancelled", None),
        };
        match &outcome {
            Some(Err(failure)) => span.fail(failure.code.as_str(), failure.message.clone()),
            None => span.fail("cancelled", "cancelled by the client"),
            Some(Ok(_)) => {}
        }
        drop(span);
        tracing::info!(
            target: "mcp_http_gateway::access",
            invocation_id = %invocation_id,
            session_id = session_id.as_deref(),
            request_id = %request_id,
            trace_id = %trace.trace_id(),
            jsonrpc_id = %request.jsonrpc_id,
            transport = "mcp",
            client = client.as_str(),
            tool = %request.name,
            status,
            code,
            started_at = %started_at,
            finished_at = %crate::clock::timestamp(),
            execution_time_ms = started.elapsed().as_millis() as u64,
            "tools/call"
        );
        match outcome {
            // The client gave up; MCP clients ignore any answer to a cancelled request.
            None => Err(McpError::new(
                ErrorCode(jsonrpc::REQUEST_CANCELLED),
                "Request cancelled by the client",
                None,
            )),
            Some(Ok(result)) => Ok(CallToolResponse::Complete(rendered(result))),
            // The server's own isError result too, given the table's data when it carries
            // none; a failure of ours is answered per the table.
            Some(Err(mut failure)) => {
                let typed = self.service.has_output_schema(request.name);
                let theirs = match failure.output.take() {
                    Some(ToolOutput::Mcp(theirs)) => Some(*theirs),
                    _ => None,
                };
                match (theirs, error_for(failure, &request_id, typed)) {
                    (Some(mut theirs), Ok(CallToolResponse::Complete(ours))) => {
                        if theirs.structured_content.is_none() {
                            theirs.structured_content = ours.structured_content;
                        }
                        if let Some(ours) = ours.meta {
                            let meta = theirs.meta.get_or_insert_with(Default::default);
                            for (key, value) in ours.0 {
                                meta.0.entry(key).or_insert(value);
                            }
                        }
                        Ok(CallToolResponse::Complete(complete(theirs)))
                    }
                    (_, answer) => answer,
                }
            }
        }
    }
}

/// An upstream's result marked complete, as 2026-07-28 clients need it (a handshake-era
/// server does not say).
fn complete(mut result: CallToolResult) -> CallToolResult {
    result
        .result_type
        .get_or_insert(rmcp::model::ResultType::COMPLETE);
    result
}

/// A call's result the way an MCP client expects it: an MCP server's own result as it sent
/// it; other data as JSON text and, for an object, as `structuredContent`.
pub(super) fn rendered(result: CallResult) -> CallToolResult {
    let data = match result.output {
        ToolOutput::Mcp(theirs) => return complete(*theirs),
        ToolOutput::Data(data) => data,
    };
    let text = serde_json::to_string(&data).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    if data.is_object() {
        result.structured_content = Some(data);
    }
    result
}

/// A sink whose progress reports reach the MCP client as `notifications/progress` with the
/// client's own token.
fn forward_progress(
    tasks: &crate::shutdown::Shutdown,
    peer: rmcp::Peer<RoleServer>,
    token: rmcp::model::ProgressToken,
) -> (crate::provider::ProgressSink, tokio::task::JoinHandle<()>) {
    let (sink, mut reports) = tokio::sync::mpsc::unbounded_channel::<crate::provider::Progress>();
    let forwarding = tasks.spawn(async move {
        while let Some(report) = reports.recv().await {
            let mut param =
                rmcp::model::ProgressNotificationParam::new(token.clone(), report.progress);
            param.total = report.total;
            param.message = report.message;
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    });
    (sink, forwarding)
}
