//! The examples of the document: a success answer of each operation, an error answer of each
//! code it can answer, and a few lines of GET /metrics. Fixed values throughout, so the
//! committed file is byte-stable.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::operations::{Operation, is_call};
use crate::{
    DependencyState, DependencyStatus, Envelope, ErrorCode, HealthResponse, HealthStatus, Meta,
    PromptArgument, PromptInfo, PromptMessage, PromptResponse, PromptsResponse, ProviderReport,
    ResourceContents, ResourceInfo, ResourceReadResponse, ResourceTemplateInfo,
    ResourceTemplatesResponse, ResourcesResponse, ToolCaller, ToolFailure, ToolHealth, ToolSchema,
    ToolStatus, ToolsResponse, ValidationIssue,
};

/// Fixed values so the examples, and so the committed file, are byte-stable.
pub(super) const EXAMPLE_REQUEST_ID: &str = "3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c";
const EXAMPLE_TIMESTAMP: &str = "2026-01-01T12:00:00.000Z";

/// A few lines of GET /metrics, for the document.
pub(super) const METRICS_EXAMPLE: &str = "\
# HELP mcp_http_gateway_build_info The gateway's version; always 1 (join on it for the version).
# TYPE mcp_http_gateway_build_info gauge
mcp_http_gateway_build_info{version=\"0.1.0\",service=\"docwell\"} 1
# HELP mcp_http_gateway_tool_calls_total Tool calls of known tools, by tool, provider and outcome (ok, or the contract error code).
# TYPE mcp_http_gateway_tool_calls_total counter
mcp_http_gateway_tool_calls_total{outcome=\"ok\",provider=\"docs\",tool=\"search\",service=\"docwell\"} 42
";

fn example_health(status: HealthStatus, state: &str, dep: DependencyStatus) -> HealthResponse {
    let tool = match dep.status {
        DependencyState::Connected => ToolHealth {
            status: ToolStatus::Healthy,
            calls: 1520,
            error_rate: 0.01,
            last_success: Some(EXAMPLE_TIMESTAMP.into()),
            last_error: Some(ToolFailure {
                at: EXAMPLE_TIMESTAMP.into(),
                code: ErrorCode::Timeout,
                message:
                    "Tool 'search_docs' did not answer within 30000 ms; the call was cancelled"
                        .into(),
            }),
            p50_ms: Some(12.5),
            p95_ms: Some(48.0),
            queries_per_minute: 42,
            top_callers: vec![ToolCaller {
                client: "key:ops".into(),
                calls: 1210,
            }],
        },
        _ => ToolHealth {
            status: ToolStatus::Unavailable,
            calls: 0,
            error_rate: 0.0,
            last_success: None,
            last_error: None,
            p50_ms: None,
            p95_ms: None,
            queries_per_minute: 0,
            top_callers: Vec::new(),
        },
    };
    HealthResponse {
        status,
        service: "docwell".into(),
        version: "0.1.0".into(),
        state: state.into(),
        uptime_seconds: 3600,
        active_calls: 0,
        queued_calls: 0,
        dependencies: BTreeMap::from([("docs".to_owned(), dep)]),
        tool_count: 1,
        tools: BTreeMap::from([("search_docs".to_owned(), tool)]),
        conflicts: Vec::new(),
        providers: BTreeMap::from([("docs".to_owned(), ProviderReport::new("mcp", true, None))]),
        cluster: None,
        clients: None,
    }
}

/// GET /status/data's report: one tool, three samples.
fn status_example() -> crate::StatusReport {
    let health = example_health(
        HealthStatus::Healthy,
        "HEALTHY",
        DependencyStatus {
            status: DependencyState::Connected,
            response_time_ms: Some(2),
            error: None,
            last_ok: Some(EXAMPLE_TIMESTAMP.into()),
            checked_at: Some(EXAMPLE_TIMESTAMP.into()),
        },
    );
    crate::StatusReport {
        service: health.service,
        version: health.version,
        state: health.state,
        status: health.status,
        uptime_seconds: health.uptime_seconds,
        generated_at: EXAMPLE_TIMESTAMP.into(),
        active_calls: 1,
        queued_calls: 0,
        dependencies: health.dependencies,
        providers: health.providers,
        cluster: None,
        tool_count: 1,
        tools: vec![crate::StatusTool {
            name: "search_docs".into(),
            provider: "docs".into(),
            status: ToolStatus::Healthy,
            calls: 1520,
            error_rate: 0.01,
            p50_ms: Some(12.5),
            p95_ms: Some(48.0),
            last_error: Some(crate::StatusFailure {
                at: EXAMPLE_TIMESTAMP.into(),
                code: ErrorCode::Timeout,
                request_id: Some(EXAMPLE_REQUEST_ID.into()),
            }),
        }],
        timeline: crate::StatusTimeline {
            interval_seconds: 10.0,
            t: vec![1_767_268_780, 1_767_268_790, 1_767_268_800],
            queue_depth: vec![0, 2, 0],
            active_calls: vec![1, 4, 1],
            refusals_per_s: vec![0.0, 0.3, 0.0],
            tools: BTreeMap::from([(
                "search_docs".to_owned(),
                crate::StatusToolSeries {
                    calls_per_s: vec![0.6, 1.2, 0.7],
                    errors_per_s: vec![0.0, 0.1, 0.0],
                    p95_ms: vec![None, Some(52.0), Some(48.0)],
                },
            )]),
        },
    }
}

pub(super) fn success_example(op: &Operation) -> Value {
    let (data, meta) = match op.id {
        "listTools" => (
            serde_json::to_value(ToolsResponse {
                service: "docwell".into(),
                version: "0.1.0".into(),
                tools: vec![ToolSchema {
                    title: None,
                    output_schema: None,
                    untyped_result: crate::UntypedResult::AnyJson,
                    name: "echo".into(),
                    qualified_name: Some("everything.echo".into()),
                    description: "Echoes back the input".into(),
                    input_schema: json!({
                        "type": "object",
                        "properties": {"message": {"type": "string", "description": "Message to echo"}},
                        "required": ["message"]
                    }),
                    annotations: None,
                    icons: None,
                    score: None,
                }],
            })
            .expect("example serializes"),
            Meta { execution_time_ms: Some(0), ..Meta::default() },
        ),
        "getHealth" => (
            serde_json::to_value(example_health(
                HealthStatus::Healthy,
                "HEALTHY",
                DependencyStatus {
                    status: DependencyState::Connected,
                    response_time_ms: Some(2),
                    error: None,
                    last_ok: Some(EXAMPLE_TIMESTAMP.into()),
                    checked_at: Some(EXAMPLE_TIMESTAMP.into()),
                },
            ))
            .expect("example serializes"),
            Meta { execution_time_ms: Some(2), ..Meta::default() },
        ),
        "listResources" => (
            serde_json::to_value(ResourcesResponse {
                service: "docwell".into(),
                resources: vec![ResourceInfo {
                    uri: "hello://greeting".into(),
                    name: "greeting".into(),
                    title: None,
                    description: Some("A friendly greeting".into()),
                    mime_type: Some("text/plain".into()),
                    provider: "hello".into(),
                    qualified_name: "hello.greeting".into(),
                    native: None,
                }],
            })
            .expect("example serializes"),
            Meta { execution_time_ms: Some(1), ..Meta::default() },
        ),
        "listResourceTemplates" => (
            serde_json::to_value(ResourceTemplatesResponse {
                service: "docwell".into(),
                resource_templates: vec![ResourceTemplateInfo {
                    uri_template: "hello://greeting/{name}".into(),
                    name: "greeting-for".into(),
                    title: None,
                    description: Some("A greeting for someone".into()),
                    mime_type: Some("text/plain".into()),
                    provider: "hello".into(),
                    qualified_name: "hello.greeting-for".into(),
                    native: None,
                }],
            })
            .expect("example serializes"),
            Meta { execution_time_ms: Some(1), ..Meta::default() },
        ),
        "readResource" => (
            serde_json::to_value(ResourceReadResponse {
                uri: "hello://greeting".into(),
                provider: "hello".into(),
                contents: vec![ResourceContents {
                    uri: "hello://greeting".into(),
                    mime_type: Some("text/plain".into()),
                    text: Some("Hello, world ✓".into()),
                    blob: None,
                    native: None,
                }],
            })
            .expect("example serializes"),
            Meta { execution_time_ms: Some(2), ..Meta::default() },
        ),
        "listPrompts" => {
            let arguments = vec![PromptArgument {
                name: "city".into(),
                description: Some("Name of the city".into()),
                required: true,
            }];
            (
                serde_json::to_value(PromptsResponse {
                    service: "docwell".into(),
                    prompts: vec![PromptInfo {
                        name: "args-prompt".into(),
                        title: None,
                        description: Some("A prompt with arguments".into()),
                        args_schema: crate::prompt::args_schema_of(&arguments),
                        arguments,
                        provider: "everything".into(),
                        qualified_name: "everything.args-prompt".into(),
                        native: None,
                    }],
                })
                .expect("example serializes"),
                Meta { execution_time_ms: Some(1), ..Meta::default() },
            )
        }
        "getPrompt" => (
            serde_json::to_value(PromptResponse {
                prompt: "args-prompt".into(),
                provider: "everything".into(),
                description: None,
                messages: vec![PromptMessage {
                    role: "user".into(),
                    content: json!({"type": "text", "text": "What's weather in Lisboa?"}),
                }],
                native: None,
            })
            .expect("example serializes"),
            Meta { execution_time_ms: Some(2), ..Meta::default() },
        ),
        "getStatusData" => (
            serde_json::to_value(status_example()).expect("example serializes"),
            Meta { execution_time_ms: Some(1), ..Meta::default() },
        ),
        "getTask" => return task_example(crate::TaskStatus::Completed),
        "cancelTask" => return task_example(crate::TaskStatus::Cancelled),
        _ => (
            json!({"content": [{"type": "text", "text": "Echo: héllo ✓"}]}),
            Meta { execution_time_ms: Some(3), tool: Some("echo".into()), ..Meta::default() },
        ),
    };
    let envelope = Envelope::ok(
        data,
        EXAMPLE_REQUEST_ID.into(),
        EXAMPLE_TIMESTAMP.into(),
        Some(meta),
    );
    serde_json::to_value(envelope).expect("example serializes")
}

pub(super) fn error_example(op: &Operation, code: ErrorCode) -> Value {
    let mut meta = Meta::default();
    if is_call(op) {
        meta.execution_time_ms = Some(if code == ErrorCode::Timeout { 30000 } else { 1 });
        if !matches!(
            code,
            ErrorCode::InvalidRequest
                | ErrorCode::MethodNotAllowed
                | ErrorCode::PayloadTooLarge
                | ErrorCode::HeadersTooLarge
        ) {
            meta.tool = Some(
                if code == ErrorCode::ToolNotFound {
                    "no_such_tool"
                } else {
                    "echo"
                }
                .into(),
            );
        }
    }
    if code == ErrorCode::InvalidArguments {
        meta.validation_errors = Some(vec![
            ValidationIssue {
                path: "".into(),
                message: "\"message\" is a required property".into(),
            },
            ValidationIssue {
                path: "/count".into(),
                message: "\"three\" is not of type \"integer\"".into(),
            },
        ]);
    }
    if op.id == "getHealth" && code == ErrorCode::ServiceUnavailable {
        meta.health = Some(example_health(
            HealthStatus::Unavailable,
            "INITIALIZING",
            DependencyStatus {
                status: DependencyState::Unknown,
                response_time_ms: None,
                error: Some("starting".into()),
                last_ok: None,
                checked_at: None,
            },
        ));
    }
    let meta = (!meta.is_empty()).then_some(meta);
    let envelope = Envelope::err(
        code,
        code.example_message().into(),
        EXAMPLE_REQUEST_ID.into(),
        EXAMPLE_TIMESTAMP.into(),
        meta,
    );
    serde_json::to_value(envelope).expect("example serializes")
}

/// The envelope of a task (a 202, `GET /tasks/{id}`, `DELETE /tasks/{id}`), `status` as given.
pub(super) fn task_example(status: crate::TaskStatus) -> Value {
    let done = status == crate::TaskStatus::Completed;
    let task = crate::TaskInfo {
        task_id: "3f1c2d4e-5b6a-4c7d-8e9f-0a1b2c3d4e5f".into(),
        tool: "simulate-research-query".into(),
        status,
        created_at: EXAMPLE_TIMESTAMP.into(),
        updated_at: EXAMPLE_TIMESTAMP.into(),
        poll_interval_ms: 1000,
        result: done
            .then(|| json!({"content": [{"type": "text", "text": "# Research Report: python"}]})),
        error: None,
    };
    let envelope = Envelope::ok(
        serde_json::to_value(task).expect("example serializes"),
        EXAMPLE_REQUEST_ID.into(),
        EXAMPLE_TIMESTAMP.into(),
        Some(Meta {
            execution_time_ms: Some(0),
            tool: Some("simulate-research-query".into()),
            ..Meta::default()
        }),
    );
    serde_json::to_value(envelope).expect("example serializes")
}
