//! The `mcpgateway.provider.v1.Provider` service: each RPC checks its input, does its work,
//! writes one log line with the caller's correlation id, and answers with the status codes of
//! the proto's error table (INVALID_ARGUMENT, NOT_FOUND, DEADLINE_EXCEEDED, INTERNAL).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::Stream;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;
use tonic::{Code, Request, Response, Status};

use provider_proto::v1::provider_server::Provider;
use provider_proto::v1::resource_contents::Body;
use provider_proto::v1::{
    Event, GetPromptRequest, GetPromptResponse, InvokeToolRequest, InvokeToolResponse,
    ListCapabilitiesRequest, ListCapabilitiesResponse, PromptMessage, ReadResourceRequest,
    ReadResourceResponse, ResourceContents, StreamEventsRequest,
};

use crate::catalog::{self, Catalog, PLAN_PROMPT};
use crate::deadline;
use crate::events::Events;
use crate::log::{Log, Trace};

/// Ways to break the contract on purpose, so that the conformance tester can be shown to
/// catch them. Never set in normal use (the flag is hidden).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Break {
    /// Run tools and render prompts without checking their arguments.
    AcceptInvalidArgs,
    /// Let `slow.v1` sleep past the call's deadline.
    IgnoreDeadline,
    /// List `echo.v1` twice.
    DuplicateTool,
}

#[derive(Clone)]
pub struct Hello {
    name: String,
    catalog: Arc<Catalog>,
    events: Events,
    log: Log,
    invocations: Arc<AtomicU64>,
    breaks: Vec<Break>,
}

impl Hello {
    pub fn new(name: &str, events: Events, log: Log, breaks: Vec<Break>) -> Self {
        Hello {
            name: name.to_owned(),
            catalog: Arc::new(Catalog::new()),
            events,
            log,
            invocations: Arc::new(AtomicU64::new(0)),
            breaks,
        }
    }

    /// How many InvokeTool calls have been answered (the reported metric).
    pub fn invocations(&self) -> u64 {
        self.invocations.load(Ordering::Relaxed)
    }

    fn broken(&self, mode: Break) -> bool {
        self.breaks.contains(&mode)
    }

    /// Runs one tool; the error is the status the caller gets.
    async fn run_tool(
        &self,
        name: &str,
        arguments_json: &str,
        answer_by: Option<Instant>,
    ) -> Result<Value, Status> {
        let tool = self
            .catalog
            .tool(name)
            .ok_or_else(|| Status::not_found(format!("no tool named '{name}'")))?;
        let arguments =
            catalog::parse_arguments(arguments_json).map_err(Status::invalid_argument)?;
        if !self.broken(Break::AcceptInvalidArgs) {
            tool.check(&arguments).map_err(Status::invalid_argument)?;
        }
        match tool.name {
            "echo.v1" => Ok(json!({"message": arguments["message"], "provider": self.name})),
            "fail.v1" => Err(Status::internal(
                "fail.v1 always fails: it exists to test how failures are reported",
            )),
            "slow.v1" => {
                let ms = arguments["ms"].as_u64().unwrap_or(0);
                let answer_by = answer_by.filter(|_| !self.broken(Break::IgnoreDeadline));
                slow(ms, answer_by).await
            }
            "bad_output.v1" => Ok(bad_output()),
            other => Err(Status::unimplemented(format!(
                "{other} is listed but not built"
            ))),
        }
    }
}

/// Sleeps `ms`, unless the answer is due earlier: then stops at that moment with
/// DEADLINE_EXCEEDED (see deadline.rs for why not later).
async fn slow(ms: u64, answer_by: Option<Instant>) -> Result<Value, Status> {
    let done = Instant::now() + Duration::from_millis(ms.min(catalog::MAX_SLOW_MS));
    match answer_by {
        Some(by) if by < done => {
            tokio::time::sleep_until(by).await;
            Err(Status::deadline_exceeded(format!(
                "the call's deadline passed before {ms} ms were slept"
            )))
        }
        _ => {
            tokio::time::sleep_until(done).await;
            Ok(json!({"slept_ms": ms}))
        }
    }
}

/// What `bad_output.v1` returns: `count` should be an integer.
pub fn bad_output() -> Value {
    json!({"count": "not a number"})
}

/// The status code's name for the log line ("OK" on success).
fn code_of<T>(result: &Result<T, Status>) -> String {
    match result {
        Ok(_) => format!("{:?}", Code::Ok),
        Err(status) => format!("{:?}", status.code()),
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<Event, Status>> + Send>>;

#[tonic::async_trait]
impl Provider for Hello {
    async fn list_capabilities(
        &self,
        request: Request<ListCapabilitiesRequest>,
    ) -> Result<Response<ListCapabilitiesResponse>, Status> {
        let trace = Trace::from_metadata(request.metadata());
        let mut tools: Vec<_> = self.catalog.tools.iter().map(|t| t.listing()).collect();
        if self.broken(Break::DuplicateTool) {
            tools.push(tools[0].clone());
        }
        self.log.line(
            "ListCapabilities",
            &trace,
            json!({"rpc": "ListCapabilities", "code": "Ok", "tools": tools.len()}),
        );
        Ok(Response::new(ListCapabilitiesResponse {
            provider: self.name.clone(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            tools,
            resources: self.catalog.resources(),
            resource_templates: self.catalog.resource_templates(),
            prompts: self.catalog.prompts(),
        }))
    }

    async fn invoke_tool(
        &self,
        request: Request<InvokeToolRequest>,
    ) -> Result<Response<InvokeToolResponse>, Status> {
        let received = Instant::now();
        let trace = Trace::from_metadata(request.metadata());
        let answer_by = deadline::answer_by(request.metadata(), received);
        let call = request.into_inner();
        let result = self
            .run_tool(&call.name, &call.arguments_json, answer_by)
            .await;
        let duration_ms = u64::try_from(received.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.invocations.fetch_add(1, Ordering::Relaxed);
        self.log.line(
            "InvokeTool",
            &trace,
            json!({
                "rpc": "InvokeTool",
                "tool": call.name,
                "code": code_of(&result),
                "error": result.as_ref().err().map(Status::message),
                "duration_ms": duration_ms,
            }),
        );
        self.events.tool_executed(
            &call.name,
            duration_ms,
            result.is_ok(),
            &trace.correlation_id,
        );
        let value = result?;
        Ok(Response::new(InvokeToolResponse {
            result_json: value.to_string(),
        }))
    }

    async fn read_resource(
        &self,
        request: Request<ReadResourceRequest>,
    ) -> Result<Response<ReadResourceResponse>, Status> {
        let trace = Trace::from_metadata(request.metadata());
        let uri = request.into_inner().uri;
        let result = self
            .catalog
            .read(&uri, &self.name)
            .ok_or_else(|| Status::not_found(format!("no resource at '{uri}'")));
        self.log.line(
            "ReadResource",
            &trace,
            json!({"rpc": "ReadResource", "uri": uri, "code": code_of(&result)}),
        );
        Ok(Response::new(ReadResourceResponse {
            contents: vec![ResourceContents {
                uri,
                mime_type: "text/plain".to_owned(),
                body: Some(Body::Text(result?)),
            }],
        }))
    }

    async fn get_prompt(
        &self,
        request: Request<GetPromptRequest>,
    ) -> Result<Response<GetPromptResponse>, Status> {
        let trace = Trace::from_metadata(request.metadata());
        let call = request.into_inner();
        let result = if call.name == PLAN_PROMPT {
            catalog::parse_arguments(&call.arguments_json)
                .and_then(|arguments| {
                    if !self.broken(Break::AcceptInvalidArgs) {
                        self.catalog.check_plan(&arguments)?;
                    }
                    Ok(self.catalog.render_plan(&arguments))
                })
                .map_err(Status::invalid_argument)
        } else {
            Err(Status::not_found(format!(
                "no prompt named '{}'",
                call.name
            )))
        };
        self.log.line(
            "GetPrompt",
            &trace,
            json!({"rpc": "GetPrompt", "prompt": call.name, "code": code_of(&result)}),
        );
        Ok(Response::new(GetPromptResponse {
            description: "A plan of a few steps to reach a goal.".to_owned(),
            messages: vec![PromptMessage {
                role: "user".to_owned(),
                text: result?,
            }],
        }))
    }

    type StreamEventsStream = EventStream;

    async fn stream_events(
        &self,
        request: Request<StreamEventsRequest>,
    ) -> Result<Response<EventStream>, Status> {
        let trace = Trace::from_metadata(request.metadata());
        let types = request.into_inner().types;
        self.log.line(
            "StreamEvents",
            &trace,
            json!({"rpc": "StreamEvents", "code": "Ok", "types": types}),
        );
        let listener = self.events.subscribe();
        let stream = futures::stream::unfold(listener, move |mut listener| {
            let types = types.clone();
            async move {
                loop {
                    match listener.recv().await {
                        Ok(event) if types.is_empty() || types.iter().any(|t| t == event.kind) => {
                            let event = Event {
                                cloudevent_json: event.json,
                            };
                            return Some((Ok(event), listener));
                        }
                        // Not wanted, or this listener fell behind: go on with the next.
                        Ok(_) | Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => return None,
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn hello(breaks: Vec<Break>) -> Hello {
        let log = Log::open(
            "hello-test",
            Some(&std::env::temp_dir().join("hello-test.log")),
        )
        .unwrap();
        Hello::new("hello-test", Events::new("hello-test"), log, breaks)
    }

    async fn invoke(
        hello: &Hello,
        name: &str,
        arguments: Value,
        timeout: Option<Duration>,
    ) -> Result<Value, Status> {
        let mut request = Request::new(InvokeToolRequest {
            name: name.to_owned(),
            arguments_json: arguments.to_string(),
        });
        if let Some(timeout) = timeout {
            request.set_timeout(timeout);
        }
        let response = hello.invoke_tool(request).await?;
        Ok(serde_json::from_str(&response.into_inner().result_json).unwrap())
    }

    #[tokio::test]
    async fn echo_answers_with_the_message_and_the_provider() {
        let result = invoke(&hello(vec![]), "echo.v1", json!({"message": "hi"}), None).await;
        assert_eq!(
            result.unwrap(),
            json!({"message": "hi", "provider": "hello-test"})
        );
    }

    #[tokio::test]
    async fn errors_carry_the_codes_of_the_contract() {
        let hello = hello(vec![]);
        let code = |r: Result<Value, Status>| r.unwrap_err().code();
        assert_eq!(
            code(invoke(&hello, "echo.v1", json!({"message": 1}), None).await),
            Code::InvalidArgument
        );
        assert_eq!(
            code(invoke(&hello, "nope.v1", json!({}), None).await),
            Code::NotFound
        );
        assert_eq!(
            code(invoke(&hello, "fail.v1", json!({}), None).await),
            Code::Internal
        );
        let garbage = hello
            .invoke_tool(Request::new(InvokeToolRequest {
                name: "echo.v1".into(),
                arguments_json: "{".into(),
            }))
            .await;
        assert_eq!(garbage.unwrap_err().code(), Code::InvalidArgument);
    }

    #[tokio::test]
    async fn accept_invalid_args_breaks_the_argument_check() {
        let result = invoke(
            &hello(vec![Break::AcceptInvalidArgs]),
            "echo.v1",
            json!({"message": 1}),
            None,
        )
        .await;
        assert!(result.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn slow_stops_before_the_deadline_with_deadline_exceeded() {
        let started = Instant::now();
        let result = invoke(
            &hello(vec![]),
            "slow.v1",
            json!({"ms": 5000}),
            Some(Duration::from_millis(200)),
        )
        .await;
        assert_eq!(result.unwrap_err().code(), Code::DeadlineExceeded);
        assert_eq!(
            started.elapsed(),
            Duration::from_millis(200) - deadline::MARGIN
        );
    }

    #[tokio::test(start_paused = true)]
    async fn slow_within_its_deadline_sleeps_in_full() {
        let started = Instant::now();
        let result = invoke(
            &hello(vec![]),
            "slow.v1",
            json!({"ms": 100}),
            Some(Duration::from_secs(5)),
        )
        .await;
        assert_eq!(result.unwrap(), json!({"slept_ms": 100}));
        assert_eq!(started.elapsed(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn ignore_deadline_breaks_the_deadline() {
        let started = Instant::now();
        let hello = hello(vec![Break::IgnoreDeadline]);
        let result = invoke(
            &hello,
            "slow.v1",
            json!({"ms": 1000}),
            Some(Duration::from_millis(200)),
        )
        .await;
        assert!(result.is_ok());
        assert_eq!(started.elapsed(), Duration::from_millis(1000));
    }

    #[tokio::test]
    async fn the_prompt_renders_into_one_user_message() {
        let hello = hello(vec![]);
        let response = hello
            .get_prompt(Request::new(GetPromptRequest {
                name: PLAN_PROMPT.into(),
                arguments_json: json!({"goal": "tea", "steps": 2}).to_string(),
            }))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(response.messages.len(), 1);
        assert_eq!(response.messages[0].role, "user");
        assert_eq!(
            response.messages[0].text,
            "Make a plan to reach this goal: tea. Use 2 steps."
        );
        let refused = hello
            .get_prompt(Request::new(GetPromptRequest {
                name: PLAN_PROMPT.into(),
                arguments_json: "{}".into(),
            }))
            .await;
        assert_eq!(refused.unwrap_err().code(), Code::InvalidArgument);
        let unknown = hello
            .get_prompt(Request::new(GetPromptRequest {
                name: "nope".into(),
                arguments_json: String::new(),
            }))
            .await;
        assert_eq!(unknown.unwrap_err().code(), Code::NotFound);
    }

    #[tokio::test]
    async fn an_unknown_resource_is_not_found() {
        let hello = hello(vec![]);
        let read =
            |uri: &str| hello.read_resource(Request::new(ReadResourceRequest { uri: uri.into() }));
        let greeting = read("hello://greeting").await.unwrap().into_inner();
        assert_eq!(
            greeting.contents[0].body,
            Some(Body::Text("Hello from hello-test!".into()))
        );
        assert_eq!(
            read("hello://nope").await.unwrap_err().code(),
            Code::NotFound
        );
    }

    #[tokio::test]
    async fn a_call_is_streamed_as_a_tool_executed_event() {
        let hello = hello(vec![]);
        let request = Request::new(StreamEventsRequest {
            types: vec![crate::events::TOOL_EXECUTED.into()],
        });
        let mut stream = hello.stream_events(request).await.unwrap().into_inner();
        hello.events.metric("filtered_out", 1.0, "count");
        let mut call = Request::new(InvokeToolRequest {
            name: "fail.v1".into(),
            arguments_json: "{}".into(),
        });
        call.metadata_mut()
            .insert("x-correlation-id", "req-9".parse().unwrap());
        let _ = hello.invoke_tool(call).await;
        let event = stream.next().await.unwrap().unwrap();
        let event: Value = serde_json::from_str(&event.cloudevent_json).unwrap();
        assert_eq!(event["type"], "provider.tool.executed");
        assert_eq!(event["data"]["tool"], "fail.v1");
        assert_eq!(event["data"]["success"], false);
        assert_eq!(event["data"]["correlation_id"], "req-9");
    }
}
