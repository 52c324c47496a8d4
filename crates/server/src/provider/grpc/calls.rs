//! Calls to a gRPC provider: `InvokeTool`, `ReadResource` and `GetPrompt` on the live channel
//! within the call's deadline (`deadline_ms`, or the call's own timeout when shorter, sent as
//! `grpc-timeout` and enforced here too), with the request id as `x-correlation-id` and the
//! call's span as `traceparent`; and [`tool_error`], the one table from gRPC status codes to
//! [`ToolError`]. A prompt's arguments reach `GetPrompt` already checked against its
//! `args_schema` (by the service, as a tool's against its input schema).
//!
//! A call while not CONNECTED fails at once naming the state and the last error. A status that
//! tonic made from a transport failure (it carries a source; a provider's own status does not)
//! means the connection is gone: the provider goes to ERROR and reconnects.

use std::error::Error as _;
use std::time::Duration;

use base64::Engine as _;
use contract::{PromptMessage, PromptResult, ResourceContents};
use provider_proto::v1::provider_client::ProviderClient;
use provider_proto::v1::resource_contents::Body;
use provider_proto::v1::{GetPromptRequest, InvokeToolRequest, ReadResourceRequest};
use serde_json::{Value, json};
use tonic::Code;
use tonic::metadata::MetadataValue;

use super::Inner;
use super::connection::{Link, status_text};
use crate::provider::{CallContext, JsonObject, ToolError};
use crate::telemetry::{SpanKind, TraceContext};

/// The metadata key of the correlation id (the gateway's request id).
pub const CORRELATION_ID: &str = "x-correlation-id";

/// The contract's error for a gRPC status of a call about `subject` (a tool, resource or
/// prompt name): the table of the proto's header comment, in one place.
///
/// | gRPC code          | ToolError          | contract code     |
/// |--------------------|--------------------|-------------------|
/// | INVALID_ARGUMENT   | InvalidArguments   | INVALID_ARGUMENTS |
/// | NOT_FOUND          | NotFound           | TOOL_NOT_FOUND (RESOURCE_/PROMPT_NOT_FOUND on reads and renders) |
/// | DEADLINE_EXCEEDED  | Timeout            | TIMEOUT           |
/// | UNAVAILABLE        | Unavailable        | EXECUTION_ERROR   |
/// | any other          | Execution          | EXECUTION_ERROR   |
pub fn tool_error(subject: &str, code: Code, message: &str, deadline: Duration) -> ToolError {
    match code {
        Code::InvalidArgument => {
            ToolError::InvalidArguments(format!("'{subject}' refused the arguments: {message}"))
        }
        Code::NotFound => ToolError::NotFound(subject.to_owned()),
        Code::DeadlineExceeded => ToolError::Timeout {
            tool: subject.to_owned(),
            ms: deadline.as_millis() as u64,
        },
        Code::Unavailable => {
            ToolError::Unavailable(format!("Dependency unavailable: '{subject}': {message}"))
        }
        other => ToolError::Execution(format!(
            "'{subject}' failed: {message} (gRPC {})",
            code_name(other)
        )),
    }
}

/// A code as the gRPC spec spells it (`INTERNAL`, `PERMISSION_DENIED`, …).
fn code_name(code: Code) -> String {
    let mut name = String::new();
    for (i, c) in format!("{code:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_uppercase());
    }
    name
}

/// Puts the call's correlation id and trace context in the request's metadata.
pub(super) fn stamp<T>(request: &mut tonic::Request<T>, request_id: &str, trace: &TraceContext) {
    let metadata = request.metadata_mut();
    if let Ok(value) = MetadataValue::try_from(request_id) {
        metadata.insert(CORRELATION_ID, value);
    }
    if let Ok(value) = MetadataValue::try_from(trace.traceparent()) {
        metadata.insert("traceparent", value);
    }
    if let Some(state) = trace.tracestate()
        && let Ok(value) = MetadataValue::try_from(state)
    {
        metadata.insert("tracestate", value);
    }
}

/// Whether tonic made this status from a failure of the transport (not the provider's answer).
pub(super) fn is_transport(status: &tonic::Status) -> bool {
    status.source().is_some()
}

impl Inner {
    /// The live channel, or the call's fast failure.
    pub(super) fn link_for_call(&self) -> Result<Link, ToolError> {
        self.live_link()
            .ok_or_else(|| ToolError::Unavailable(self.not_connected()))
    }

    /// The deadline of a call whose own timeout is `timeout`.
    pub(super) fn deadline_for(&self, timeout: Duration) -> Duration {
        self.deadline.min(timeout)
    }

    /// A failed call's status: a transport failure takes the connection down first.
    pub(super) fn failed(
        &self,
        link: &Link,
        subject: &str,
        status: &tonic::Status,
        deadline: Duration,
    ) -> ToolError {
        if is_transport(status) {
            let why = format!(
                "the connection failed during a call: {}",
                status_text(status)
            );
            self.connection_failed(link.generation, why);
            return ToolError::Unavailable(self.not_connected());
        }
        tool_error(subject, status.code(), status.message(), deadline)
    }

    /// Runs one unary call of the contract on the live channel: deadline, metadata, span;
    /// a failure mapped by [`tool_error`] (or the connection taken down).
    async fn unary<Req, Resp, F, Fut>(
        &self,
        method: &'static str,
        subject: &str,
        message: Req,
        cx: &CallContext,
        send: F,
    ) -> Result<Resp, ToolError>
    where
        F: FnOnce(ProviderClient<tonic::transport::Channel>, tonic::Request<Req>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<Resp>, tonic::Status>>,
    {
        let link = self.link_for_call()?;
        let deadline = self.deadline_for(cx.timeout);
        let mut span = cx
            .trace
            .child(format!("{method} {subject}"), SpanKind::Client);
        if span.is_recording() {
            span.set("rpc.system", "grpc");
            span.set("rpc.method", method);
            span.set("mcp_http_gateway.provider", self.name.clone());
        }
        let mut request = tonic::Request::new(message);
        request.set_timeout(deadline);
        stamp(&mut request, &cx.request_id, span.context());
        let outcome = tokio::time::timeout(
            deadline,
            send(ProviderClient::new(link.channel.clone()), request),
        )
        .await;
        let result = match outcome {
            Err(_) => Err(ToolError::Timeout {
                tool: subject.to_owned(),
                ms: deadline.as_millis() as u64,
            }),
            Ok(Ok(answer)) => Ok(answer.into_inner()),
            Ok(Err(status)) => Err(self.failed(&link, subject, &status, deadline)),
        };
        if let Err(e) = &result {
            span.fail(e.code().as_str(), e.to_string());
        }
        result
    }

    pub(super) async fn read_resource(
        &self,
        uri: &str,
        cx: &CallContext,
    ) -> Result<Vec<ResourceContents>, ToolError> {
        let message = ReadResourceRequest {
            uri: uri.to_owned(),
        };
        let answer = self
            .unary(
                "ReadResource",
                uri,
                message,
                cx,
                |mut client, request| async move { client.read_resource(request).await },
            )
            .await?;
        Ok(answer.contents.into_iter().map(contents).collect())
    }

    pub(super) async fn get_prompt(
        &self,
        name: &str,
        args: JsonObject,
        cx: &CallContext,
    ) -> Result<PromptResult, ToolError> {
        let message = GetPromptRequest {
            name: name.to_owned(),
            arguments_json: Value::Object(args).to_string(),
        };
        let answer = self
            .unary(
                "GetPrompt",
                name,
                message,
                cx,
                |mut client, request| async move { client.get_prompt(request).await },
            )
            .await?;
        Ok(PromptResult {
            description: (!answer.description.is_empty()).then_some(answer.description),
            messages: answer
                .messages
                .into_iter()
                .map(|m| PromptMessage {
                    role: m.role,
                    content: json!({"type": "text", "text": m.text}),
                })
                .collect(),
            native: None,
        })
    }

    pub(super) async fn invoke_tool(
        &self,
        tool: &str,
        args: JsonObject,
        cx: &CallContext,
    ) -> Result<Value, ToolError> {
        let message = InvokeToolRequest {
            name: tool.to_owned(),
            arguments_json: Value::Object(args).to_string(),
        };
        let answer = self
            .unary(
                "InvokeTool",
                tool,
                message,
                cx,
                |mut client, request| async move { client.invoke_tool(request).await },
            )
            .await?;
        serde_json::from_str::<Value>(&answer.result_json).map_err(|e| {
            ToolError::Execution(format!("'{tool}' answered a result that is not JSON: {e}"))
        })
    }
}

/// One part of a resource as the contract carries it: text, or bytes as base64 `blob`.
fn contents(part: provider_proto::v1::ResourceContents) -> ResourceContents {
    let (text, blob) = match part.body {
        Some(Body::Text(text)) => (Some(text), None),
        Some(Body::Blob(bytes)) => (
            None,
            Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
        None => (Some(String::new()), None),
    };
    ResourceContents {
        uri: part.uri,
        mime_type: (!part.mime_type.is_empty()).then_some(part.mime_type),
        text,
        blob,
        native: None,
    }
}

#[cfg(test)]
mod tests {
    use contract::ErrorCode;

    use super::*;

    const DEADLINE: Duration = Duration::from_millis(1500);

    /// Each row of the table: the gRPC code, the error it becomes, the contract code.
    #[test]
    fn invalid_argument_is_invalid_arguments() {
        let e = tool_error(
            "echo.v1",
            Code::InvalidArgument,
            "message is required",
            DEADLINE,
        );
        assert!(matches!(&e, ToolError::InvalidArguments(m) if m.contains("message is required")));
        assert_eq!(e.code(), ErrorCode::InvalidArguments);
    }

    #[test]
    fn not_found_is_tool_not_found() {
        let e = tool_error("nope.v1", Code::NotFound, "unknown tool", DEADLINE);
        assert!(matches!(&e, ToolError::NotFound(n) if n == "nope.v1"));
        assert_eq!(e.code(), ErrorCode::ToolNotFound);
    }

    #[test]
    fn deadline_exceeded_is_timeout_with_the_deadline() {
        let e = tool_error("slow.v1", Code::DeadlineExceeded, "too slow", DEADLINE);
        assert!(matches!(&e, ToolError::Timeout { tool, ms: 1500 } if tool == "slow.v1"));
        assert_eq!(e.code(), ErrorCode::Timeout);
    }

    #[test]
    fn unavailable_is_unavailable_answered_as_execution_error() {
        let e = tool_error("echo.v1", Code::Unavailable, "database down", DEADLINE);
        assert!(matches!(&e, ToolError::Unavailable(m) if m.contains("database down")));
        assert_eq!(e.code(), ErrorCode::ExecutionError);
    }

    #[test]
    fn every_other_code_is_execution_error_naming_the_code() {
        for (code, name) in [
            (Code::Internal, "INTERNAL"),
            (Code::Unknown, "UNKNOWN"),
            (Code::PermissionDenied, "PERMISSION_DENIED"),
            (Code::Unauthenticated, "UNAUTHENTICATED"),
            (Code::ResourceExhausted, "RESOURCE_EXHAUSTED"),
            (Code::FailedPrecondition, "FAILED_PRECONDITION"),
            (Code::Aborted, "ABORTED"),
            (Code::OutOfRange, "OUT_OF_RANGE"),
            (Code::Unimplemented, "UNIMPLEMENTED"),
            (Code::DataLoss, "DATA_LOSS"),
            (Code::Cancelled, "CANCELLED"),
            (Code::AlreadyExists, "ALREADY_EXISTS"),
        ] {
            let e = tool_error("fail.v1", code, "it broke", DEADLINE);
            assert!(
                matches!(&e, ToolError::Execution(m) if m.contains("it broke") && m.contains(name)),
                "{code:?} → {e:?}"
            );
            assert_eq!(e.code(), ErrorCode::ExecutionError);
        }
    }

    #[test]
    fn a_status_of_the_provider_is_not_a_transport_failure_but_one_from_an_error_is() {
        assert!(!is_transport(&tonic::Status::unavailable(
            "provider says so"
        )));
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(is_transport(&tonic::Status::from_error(Box::new(io))));
    }

    #[test]
    fn resource_text_stays_text_and_bytes_become_base64() {
        let text = contents(provider_proto::v1::ResourceContents {
            uri: "hello://greeting".into(),
            mime_type: "text/plain".into(),
            body: Some(Body::Text("Hello".into())),
        });
        assert_eq!(text.text.as_deref(), Some("Hello"));
        assert_eq!(text.mime_type.as_deref(), Some("text/plain"));
        let blob = contents(provider_proto::v1::ResourceContents {
            uri: "hello://logo".into(),
            mime_type: String::new(),
            body: Some(Body::Blob(vec![0, 1, 2, 255])),
        });
        assert_eq!(blob.blob.as_deref(), Some("AAEC/w=="));
        assert_eq!((blob.text, blob.mime_type), (None, None));
    }

    #[test]
    fn the_metadata_carries_the_request_id_and_the_traceparent() {
        let trace = TraceContext::detached();
        let mut request = tonic::Request::new(());
        stamp(&mut request, "6f1c1a52-3c2b-4d5e-8f90-1a2b3c4d5e6f", &trace);
        let metadata = request.metadata();
        assert_eq!(
            metadata.get(CORRELATION_ID).unwrap().to_str().unwrap(),
            "6f1c1a52-3c2b-4d5e-8f90-1a2b3c4d5e6f"
        );
        assert_eq!(
            metadata.get("traceparent").unwrap().to_str().unwrap(),
            trace.traceparent()
        );
    }
}
