//! Builds the OpenAPI 3.1 document of the contract from the types of this crate.
//!
//! `openapi/openapi.yaml` is this document serialized; a test holds the two equal. The
//! responses of each operation are derived from the list of codes it can answer and from
//! [`ErrorCode::http_status`], so the document cannot disagree with the server on a status.
//!
//! Longer than 500 lines on purpose: the document is one value whose paths, responses and
//! components name each other, so it is built in one place; splitting it would only move
//! those names across files.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, SchemaType, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, HeaderBuilder, InfoBuilder, OpenApi, OpenApiBuilder,
    PathsBuilder, Ref, RefOr, Required, ResponseBuilder, ResponsesBuilder, Schema,
};
use utoipa::{PartialSchema, ToSchema};

use crate::{
    CONTRACT_VERSION, ClashResolution, ClusterReport, ConnectionState, DependencyState,
    DependencyStatus, Envelope, ErrorCode, HealthResponse, HealthStatus, IndexState,
    InstanceReport, Meta, NameConflict, PromptArgument, PromptInfo, PromptMessage, PromptResponse,
    PromptsResponse, ProviderReport, RedisState, ResourceContents, ResourceInfo,
    ResourceReadResponse, ResourceTemplateInfo, ResourceTemplatesResponse, ResourcesResponse,
    SearchIndexReport, SkippedFiles, ToolFailure, ToolHealth, ToolRequest, ToolSchema, ToolStatus,
    ToolUsage, ToolsResponse, ValidationIssue, WatcherState,
};

/// Fixed values so the examples, and so the committed file, are byte-stable.
const EXAMPLE_REQUEST_ID: &str = "3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c";
const EXAMPLE_TIMESTAMP: &str = "2026-01-01T12:00:00.000Z";

/// What the server accepts as a request id ([`crate::envelope::is_uuid_v4`]), as a pattern: a
/// hyphenated UUID of version 4 and the RFC 4122/9562 variant, in any case. Published with
/// `minLength`/`maxLength` 36 as well, so that engines whose `$` also matches before a final
/// newline (Python's) cannot read it as accepting one. A test holds pattern and rule equal.
pub const REQUEST_ID_PATTERN: &str =
    "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$";

/// The rule in words, for the descriptions of the header and the body field.
const REQUEST_ID_RULE: &str = "A UUID v4 in the hyphenated form, any case (version nibble `4`, \
    variant nibble `8`, `9`, `a` or `b`); anything else is refused with 400 INVALID_REQUEST.";

/// The shell command that rewrites the committed document from the code.
pub const REGENERATE_COMMAND: &str =
    "cargo run -q -p mcp-http-gateway -- openapi > openapi/openapi.yaml";

/// The media type of GET /metrics: the Prometheus text exposition format.
pub const METRICS_MEDIA_TYPE: &str = "text/plain; version=0.0.4";

/// The operations of the contract, with the error codes each can answer.
struct Operation {
    path: &'static str,
    method: HttpMethod,
    id: &'static str,
    summary: &'static str,
    description: &'static str,
    success: &'static str,
    errors: &'static [ErrorCode],
}

/// Codes any call of a tool can answer (POST /call-tool and POST /tools/{name}).
const CALL_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidRequest,
    ErrorCode::InvalidArguments,
    ErrorCode::Unauthorized,
    ErrorCode::Forbidden,
    ErrorCode::CapabilityRequired,
    ErrorCode::ToolNotFound,
    ErrorCode::MethodNotAllowed,
    ErrorCode::HeadersTooLarge,
    ErrorCode::PayloadTooLarge,
    ErrorCode::RateLimited,
    ErrorCode::ExecutionError,
    ErrorCode::InternalError,
    ErrorCode::ServiceUnavailable,
    ErrorCode::Timeout,
];

/// Codes a list of resources, templates or prompts can answer.
const LIST_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidRequest,
    ErrorCode::Unauthorized,
    ErrorCode::Forbidden,
    ErrorCode::MethodNotAllowed,
    ErrorCode::HeadersTooLarge,
    ErrorCode::RateLimited,
    ErrorCode::InternalError,
    ErrorCode::ServiceUnavailable,
];

const OPERATIONS: &[Operation] = &[
    Operation {
        path: "/tools",
        method: HttpMethod::Get,
        id: "listTools",
        summary: "List the service's tools",
        description: "Every tool of every provider of the service, sorted by name, with its input schema.",
        success: "ToolsEnvelope",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::RateLimited,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
        ],
    },
    Operation {
        path: "/call-tool",
        method: HttpMethod::Post,
        id: "callTool",
        summary: "Call a tool",
        description: "Validates `arguments` against the tool's input schema, then runs the tool. \
            `data` is the tool's result.",
        success: "CallToolEnvelope",
        errors: CALL_ERRORS,
    },
    Operation {
        path: "/tools/{name}",
        method: HttpMethod::Post,
        id: "callToolByName",
        summary: "Call a tool named in the path",
        description: "The same as POST /call-tool with `tool` taken from the path; the body is the \
            arguments object. The request id may come from the `X-Request-Id` header.",
        success: "CallToolEnvelope",
        errors: CALL_ERRORS,
    },
    Operation {
        path: "/resources",
        method: HttpMethod::Get,
        id: "listResources",
        summary: "List the resources of the service's providers",
        description: "Every resource of every provider, in provider order, each with its \
            `provider` and `qualified_name` (`{provider}.{name}`). A provider whose list cannot \
            be had now (not connected, timed out) is left out.",
        success: "ResourcesEnvelope",
        errors: LIST_ERRORS,
    },
    Operation {
        path: "/resources/read",
        method: HttpMethod::Get,
        id: "readResource",
        summary: "Read one resource",
        description: "Reads `uri` on the provider that offers it: the one named by `provider`, \
            else the first (in provider order) that lists the URI, else the first with a \
            resource template matching it. RESOURCE_NOT_FOUND when none does, or when the \
            provider does not know the URI. Admitted and bounded like a tool call (the \
            provider's `limits`).",
        success: "ResourceReadEnvelope",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::ResourceNotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::RateLimited,
            ErrorCode::ExecutionError,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
            ErrorCode::Timeout,
        ],
    },
    Operation {
        path: "/resource-templates",
        method: HttpMethod::Get,
        id: "listResourceTemplates",
        summary: "List the resource templates of the service's providers",
        description: "Every resource template (RFC 6570) of every provider, in provider order; \
            any URI a template matches can be read with GET /resources/read.",
        success: "ResourceTemplatesEnvelope",
        errors: LIST_ERRORS,
    },
    Operation {
        path: "/prompts",
        method: HttpMethod::Get,
        id: "listPrompts",
        summary: "List the prompts of the service's providers",
        description: "Every prompt of every provider, in provider order, with its arguments and \
            `args_schema` (the JSON Schema its arguments are checked against).",
        success: "PromptsEnvelope",
        errors: LIST_ERRORS,
    },
    Operation {
        path: "/prompts/{name}",
        method: HttpMethod::Post,
        id: "getPrompt",
        summary: "Render a prompt",
        description: "`name` is a served name (the first provider, in provider order, that has \
            it) or a qualified name `{provider}.{name}`. The body is the arguments object (empty \
            means `{}`), checked against the prompt's `args_schema` first: INVALID_ARGUMENTS \
            with `meta.validation_errors` as for a tool call.",
        success: "PromptEnvelope",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::InvalidArguments,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::PromptNotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::PayloadTooLarge,
            ErrorCode::RateLimited,
            ErrorCode::ExecutionError,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
            ErrorCode::Timeout,
        ],
    },
    Operation {
        path: "/health",
        method: HttpMethod::Get,
        id: "getHealth",
        summary: "Health of the service, its dependencies and its tools",
        description: "200 with the report when healthy or degraded; 503 SERVICE_UNAVAILABLE with the \
            same report in `meta.health` while initializing or shutting down, or when no tool can \
            run. Answered at once from the last background checks (`checked_at` says when each \
            was made). Never rate limited; needs no API key while it is in `security.public_routes` \
            (the default).",
        success: "HealthEnvelope",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Forbidden,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::InternalError,
            ErrorCode::ServiceUnavailable,
        ],
    },
    Operation {
        path: "/metrics",
        method: HttpMethod::Get,
        id: "getMetrics",
        summary: "The service's metrics for Prometheus",
        description: "The service's series in the Prometheus text exposition format (0.0.4), \
            when `monitoring.metrics_enabled` is on; while it is off, 404 NOT_FOUND as for an \
            unknown route. Never rate limited, answered while initializing or shutting down; \
            requires an API key when keys are required (unless listed in \
            `security.public_routes`). Not an envelope: the only success body \
            of the contract that is not.",
        success: "",
        errors: &[
            ErrorCode::InvalidRequest,
            ErrorCode::Unauthorized,
            ErrorCode::Forbidden,
            ErrorCode::NotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::HeadersTooLarge,
            ErrorCode::InternalError,
        ],
    },
];

/// The contract as an OpenAPI 3.1 document.
pub fn document() -> OpenApi {
    let mut paths = PathsBuilder::new();
    for op in OPERATIONS {
        paths = paths.path(op.path, PathItem::new(op.method.clone(), operation(op)));
    }
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("mcp-http-gateway service contract")
                .version(CONTRACT_VERSION)
                .description(Some(info_description()))
                .build(),
        )
        .paths(paths.build())
        .components(Some(components()))
        .build()
}

/// The document as YAML, exactly as committed in `openapi/openapi.yaml`.
pub fn document_yaml() -> String {
    serde_saphyr::to_string(&document()).expect("the OpenAPI document serializes to YAML")
}

/// The document as a JSON value, for callers that extend it (the per-service document).
pub fn document_json() -> Value {
    serde_json::to_value(document()).expect("the OpenAPI document serializes to JSON")
}

fn info_description() -> String {
    let mut text = String::from(
        "Every mcp-http-gateway service answers this contract. Every response body of every \
         endpoint is the envelope `{success, data?, error?, code?, request_id, timestamp, meta?}`; \
         every response carries `X-Request-Id`. (The one exception is the success of GET /metrics, \
         which is the Prometheus text format.) An unknown route answers 404 NOT_FOUND and a known \
         route with the wrong method 405 METHOD_NOT_ALLOWED, both as the envelope.\n\n\
         | code | HTTP status | meaning |\n|---|---|---|\n",
    );
    for code in ErrorCode::ALL {
        text.push_str(&format!(
            "| {} | {} | {} |\n",
            code.as_str(),
            code.http_status(),
            code.meaning()
        ));
    }
    text
}

/// The one tag of the operation on `path`: its topic.
fn tag_of(path: &str) -> &'static str {
    if path.starts_with("/resource") {
        "resources"
    } else if path.starts_with("/prompts") {
        "prompts"
    } else if path == "/health" {
        "health"
    } else if path == "/metrics" {
        "metrics"
    } else {
        "tools"
    }
}

fn operation(op: &Operation) -> utoipa::openapi::path::Operation {
    let mut builder = OperationBuilder::new()
        .operation_id(Some(op.id))
        .summary(Some(op.summary))
        .description(Some(op.description))
        // One tag each, so Swagger UI lists every operation once.
        .tag(tag_of(op.path))
        .parameter(
            ParameterBuilder::new()
                .name("X-Request-Id")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(format!(
                    "The request id to use; generated when absent. {REQUEST_ID_RULE}"
                )))
                .schema(Some(request_id_schema())),
        );
    if op.path != "/health" {
        builder = builder
            .security(SecurityRequirement::default())
            .security(SecurityRequirement::new("apiKey", Vec::<String>::new()))
            .security(SecurityRequirement::new("bearer", Vec::<String>::new()));
    }
    if op.path == "/tools/{name}" {
        builder = builder.parameter(
            ParameterBuilder::new()
                .name("name")
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .description(Some("The tool to call."))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String))),
        );
    }
    if op.path == "/prompts/{name}" {
        builder = builder.parameter(
            ParameterBuilder::new()
                .name("name")
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .description(Some(
                    "The prompt: its served name or its qualified name `{provider}.{name}`.",
                ))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String))),
        );
    }
    if op.id == "readResource" {
        builder = builder
            .parameter(
                ParameterBuilder::new()
                    .name("uri")
                    .parameter_in(ParameterIn::Query)
                    .required(Required::True)
                    .description(Some(
                        "The resource's URI (percent-encoded in the query): an absolute URI as RFC 3986 writes it; anything else answers 400 INVALID_REQUEST.",
                    ))
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .format(Some(utoipa::openapi::SchemaFormat::Custom("uri".into()))),
                    )),
            )
            .parameter(
                ParameterBuilder::new()
                    .name("provider")
                    .parameter_in(ParameterIn::Query)
                    .required(Required::False)
                    .description(Some(
                        "The provider to ask (asked even for a URI it does not list); by default the first that lists the URI, else the first with a matching template.",
                    ))
                    .schema(Some(ObjectBuilder::new().schema_type(Type::String))),
            );
    }
    match op.id {
        "getPrompt" => {
            builder = builder.request_body(Some(json_body(
                ObjectBuilder::new().schema_type(Type::Object).into(),
                "The prompt's arguments; validated against its args_schema. No body means `{}`.",
                json!({"city": "Lisboa"}),
                false,
            )))
        }
        "callTool" => {
            builder = builder.request_body(Some(json_body(
                Ref::from_schema_name("ToolRequest").into(),
                "The tool, its arguments, and optionally the request id.",
                json!({"tool": "echo", "arguments": {"message": "héllo ✓"}}),
                true,
            )))
        }
        "callToolByName" => {
            builder = builder.request_body(Some(json_body(
                ObjectBuilder::new().schema_type(Type::Object).into(),
                "The tool's arguments; validated against its input schema. No body means `{}`.",
                json!({"message": "héllo ✓"}),
                false,
            )))
        }
        _ => {}
    }
    builder.responses(responses(op)).build()
}

/// A JSON request body; `required` only where a request without one is refused (POST
/// /call-tool needs `tool`; a missing body of a prompt or a tool by name means `{}`).
fn json_body(
    schema: RefOr<Schema>,
    description: &str,
    example: Value,
    required: bool,
) -> utoipa::openapi::request_body::RequestBody {
    RequestBodyBuilder::new()
        .description(Some(description))
        .required(Some(if required {
            Required::True
        } else {
            Required::False
        }))
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(schema))
                .example(Some(example))
                .build(),
        )
        .build()
}

/// Whether the per-client rate limit counts the operation's requests (all but /health and
/// /metrics), so its answers carry the `RateLimit` headers.
fn rate_limited(op: &Operation) -> bool {
    op.path != "/health" && op.path != "/metrics"
}

/// The `RateLimit` and `RateLimit-Policy` headers (draft-ietf-httpapi-ratelimit-headers), on
/// the answers of counted requests: not on 401 (refused before the client is known) nor 405
/// (judged before anything else).
fn with_rate_limit_headers(
    response: ResponseBuilder,
    op: &Operation,
    status: u16,
) -> ResponseBuilder {
    if !rate_limited(op) || status == 401 || status == 405 {
        return response;
    }
    let text = || ObjectBuilder::new().schema_type(Type::String);
    response
        .header(
            "RateLimit",
            HeaderBuilder::new()
                .schema(text())
                .description(Some(
                    "What is left of this client's allowance: `\"per-client\";r=<requests left>;t=<seconds until the whole allowance is back>`.",
                ))
                .build(),
        )
        .header(
            "RateLimit-Policy",
            HeaderBuilder::new()
                .schema(text())
                .description(Some(
                    "The allowance: `\"per-client\";q=<security.rate_limit>;w=60`, requests per minute per client (the API key's name, else the peer address).",
                ))
                .build(),
        )
}

fn responses(op: &Operation) -> utoipa::openapi::Responses {
    let success = if op.id == "getMetrics" {
        ResponseBuilder::new()
            .description("Success: every series of the service, in the Prometheus text format.")
            .header("X-Request-Id", request_id_header())
            .content(
                METRICS_MEDIA_TYPE,
                ContentBuilder::new()
                    .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
                    .example(Some(Value::String(METRICS_EXAMPLE.into())))
                    .build(),
            )
    } else {
        let envelope = ResponseBuilder::new()
            .description("Success: the envelope with `data`.")
            .header("X-Request-Id", request_id_header());
        with_rate_limit_headers(envelope, op, 200).content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(op.success)))
                .example(Some(success_example(op)))
                .build(),
        )
    };
    let mut builder = ResponsesBuilder::new().response("200", success);
    let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in op.errors {
        by_status.entry(code.http_status()).or_default().push(*code);
    }
    for (status, codes) in by_status {
        let names: Vec<&str> = codes.iter().map(|c| c.as_str()).collect();
        let mut response = ResponseBuilder::new()
            .description(format!(
                "Failure: the envelope with `code` {}.",
                names.join(" or ")
            ))
            .header("X-Request-Id", request_id_header());
        if codes.iter().any(|c| c.has_retry_after()) {
            response = response.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(0)),
                    )
                    .description(Some("Seconds to wait before retrying (429 and 503 only)."))
                    .build(),
            );
        }
        response = with_rate_limit_headers(response, op, status);
        let examples = codes.iter().map(|code| {
            (
                code.as_str(),
                ExampleBuilder::new()
                    .summary(code.meaning())
                    .value(Some(error_example(op, *code)))
                    .build(),
            )
        });
        response = response.content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
                .examples_from_iter(examples)
                .build(),
        );
        builder = builder.response(status.to_string(), response);
    }
    builder.build()
}

/// A few lines of GET /metrics, for the document.
const METRICS_EXAMPLE: &str = "\
# HELP mcp_http_gateway_build_info The gateway's version; always 1 (join on it for the version).
# TYPE mcp_http_gateway_build_info gauge
mcp_http_gateway_build_info{version=\"0.1.0\",service=\"docwell\"} 1
# HELP mcp_http_gateway_tool_calls_total Tool calls of known tools, by tool, provider and outcome (ok, or the contract error code).
# TYPE mcp_http_gateway_tool_calls_total counter
mcp_http_gateway_tool_calls_total{outcome=\"ok\",provider=\"docs\",tool=\"search\",service=\"docwell\"} 42
";

fn request_id_header() -> utoipa::openapi::Header {
    HeaderBuilder::new()
        .schema(request_id_schema())
        .description(Some(
            "The request id of this request (the same as the body's `request_id`).",
        ))
        .build()
}

/// A request id as the server accepts it: [`REQUEST_ID_PATTERN`], 36 characters.
fn request_id_schema() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Uuid,
        )))
        .pattern(Some(REQUEST_ID_PATTERN))
        .min_length(Some(36))
        .max_length(Some(36))
}

/// Puts the request-id rule on the `request_id` property of a derived schema (the derive
/// knows the format, not the pattern).
fn constrain_request_id(mut schema: RefOr<Schema>) -> RefOr<Schema> {
    if let RefOr::T(Schema::Object(object)) = &mut schema
        && let Some(RefOr::T(Schema::Object(field))) = object.properties.get_mut("request_id")
    {
        field.pattern = Some(REQUEST_ID_PATTERN.into());
        field.min_length = Some(36);
        field.max_length = Some(36);
        let said = field.description.take().unwrap_or_default();
        field.description = Some(format!("{said} {REQUEST_ID_RULE}").trim().to_owned());
    }
    schema
}

fn is_call(op: &Operation) -> bool {
    op.id == "callTool" || op.id == "callToolByName"
}

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
        tools: BTreeMap::from([("search_docs".to_owned(), tool)]),
        conflicts: Vec::new(),
        providers: BTreeMap::from([("docs".to_owned(), ProviderReport::new("mcp", true, None))]),
        cluster: None,
    }
}

fn success_example(op: &Operation) -> Value {
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

fn error_example(op: &Operation, code: ErrorCode) -> Value {
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

/// `allOf: [Envelope, {properties: {success: {enum: [success]}, data: <data>}, required}]`
fn envelope_variant(
    success: bool,
    data: Option<RefOr<Schema>>,
    required: &[&str],
    description: &str,
) -> Schema {
    let mut constraint = ObjectBuilder::new().property(
        "success",
        ObjectBuilder::new()
            .schema_type(Type::Boolean)
            .enum_values(Some([success])),
    );
    if let Some(data) = data {
        constraint = constraint.property("data", data);
    }
    for field in required {
        constraint = constraint.required(*field);
    }
    AllOfBuilder::new()
        .description(Some(description))
        .item(Ref::from_schema_name("Envelope"))
        .item(constraint)
        .into()
}

fn components() -> utoipa::openapi::Components {
    let mut builder = ComponentsBuilder::new();
    let mut schemas: Vec<(String, RefOr<Schema>)> = Vec::new();
    for (name, schema) in [
        (Envelope::name(), Envelope::schema()),
        (Meta::name(), Meta::schema()),
        (ValidationIssue::name(), ValidationIssue::schema()),
        (ErrorCode::name(), ErrorCode::schema()),
        (ToolSchema::name(), ToolSchema::schema()),
        (ToolsResponse::name(), ToolsResponse::schema()),
        (ToolRequest::name(), ToolRequest::schema()),
        (HealthResponse::name(), HealthResponse::schema()),
        (HealthStatus::name(), HealthStatus::schema()),
        (DependencyStatus::name(), DependencyStatus::schema()),
        (DependencyState::name(), DependencyState::schema()),
        (ToolHealth::name(), ToolHealth::schema()),
        (ToolStatus::name(), ToolStatus::schema()),
        (ToolFailure::name(), ToolFailure::schema()),
        (NameConflict::name(), NameConflict::schema()),
        (ClashResolution::name(), ClashResolution::schema()),
        (ResourceInfo::name(), ResourceInfo::schema()),
        (ResourceTemplateInfo::name(), ResourceTemplateInfo::schema()),
        (ResourceContents::name(), ResourceContents::schema()),
        (ResourcesResponse::name(), ResourcesResponse::schema()),
        (
            ResourceTemplatesResponse::name(),
            ResourceTemplatesResponse::schema(),
        ),
        (ResourceReadResponse::name(), ResourceReadResponse::schema()),
        (PromptArgument::name(), PromptArgument::schema()),
        (PromptInfo::name(), PromptInfo::schema()),
        (PromptMessage::name(), PromptMessage::schema()),
        (PromptsResponse::name(), PromptsResponse::schema()),
        (PromptResponse::name(), PromptResponse::schema()),
        (ConnectionState::name(), ConnectionState::schema()),
        (ProviderReport::name(), ProviderReport::schema()),
        (ClusterReport::name(), ClusterReport::schema()),
        (RedisState::name(), RedisState::schema()),
        (ToolUsage::name(), ToolUsage::schema()),
        (SearchIndexReport::name(), SearchIndexReport::schema()),
        (InstanceReport::name(), InstanceReport::schema()),
        (IndexState::name(), IndexState::schema()),
        (WatcherState::name(), WatcherState::schema()),
        (SkippedFiles::name(), SkippedFiles::schema()),
    ] {
        schemas.push((name.into_owned(), schema));
    }
    for (name, schema) in schemas {
        builder = builder.schema(name, constrain_request_id(schema));
    }
    let any_data = Some(RefOr::T(Schema::Object(
        ObjectBuilder::new()
            .schema_type(SchemaType::AnyValue)
            .build(),
    )));
    builder
        .schema(
            "ErrorEnvelope",
            envelope_variant(
                false,
                None,
                &["error", "code"],
                "A failed answer: `error` and `code`, no `data`.",
            ),
        )
        .schema(
            "ToolsEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("ToolsResponse").into()),
                &["data"],
                "GET /tools answer.",
            ),
        )
        .schema(
            "CallToolEnvelope",
            envelope_variant(
                true,
                any_data,
                &["data"],
                "A tool's result in `data`; `meta.execution_time_ms` always set.",
            ),
        )
        .schema(
            "ResourcesEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("ResourcesResponse").into()),
                &["data"],
                "GET /resources answer.",
            ),
        )
        .schema(
            "ResourceTemplatesEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("ResourceTemplatesResponse").into()),
                &["data"],
                "GET /resource-templates answer.",
            ),
        )
        .schema(
            "ResourceReadEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("ResourceReadResponse").into()),
                &["data"],
                "GET /resources/read answer.",
            ),
        )
        .schema(
            "PromptsEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("PromptsResponse").into()),
                &["data"],
                "GET /prompts answer.",
            ),
        )
        .schema(
            "PromptEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("PromptResponse").into()),
                &["data"],
                "POST /prompts/{name} answer: the rendered messages.",
            ),
        )
        .schema(
            "HealthEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("HealthResponse").into()),
                &["data"],
                "GET /health answer.",
            ),
        )
        .security_scheme(
            "apiKey",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        )
        .security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        )
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_example_uses_its_status() {
        let doc = document_json();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (_method, op) in item.as_object().unwrap() {
                for (status, response) in op["responses"].as_object().unwrap() {
                    let Some(examples) =
                        response["content"]["application/json"]["examples"].as_object()
                    else {
                        continue;
                    };
                    for (name, example) in examples {
                        let code: ErrorCode =
                            serde_json::from_value(example["value"]["code"].clone()).unwrap();
                        assert_eq!(code.as_str(), name, "{path} {status}");
                        assert_eq!(code.http_status().to_string(), *status, "{path} {name}");
                    }
                }
            }
        }
    }

    #[test]
    fn call_tool_documents_the_required_statuses() {
        let doc = document_json();
        let responses = doc["paths"]["/call-tool"]["post"]["responses"]
            .as_object()
            .unwrap();
        for status in [
            "200", "400", "401", "404", "405", "413", "429", "500", "503", "504",
        ] {
            assert!(responses.contains_key(status), "missing {status}");
        }
    }

    #[test]
    fn yaml_round_trips_to_the_same_document() {
        let yaml = document_yaml();
        let back: Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(back, document_json());
    }

    /// The published `request_id` schema (pattern and lengths) and the server's rule
    /// ([`crate::envelope::is_uuid_v4`]) agree on every id tried: generated ids in every case,
    /// each version and variant nibble, every position changed to characters around the
    /// edges of the rule, and the other forms a UUID parser knows.
    #[test]
    fn the_published_request_id_rule_is_the_servers() {
        let doc = document_json();
        let published = &doc["components"]["schemas"]["Envelope"]["properties"]["request_id"];
        let validator = jsonschema::validator_for(published).unwrap();
        let mut ids: Vec<String> = vec![
            String::new(),
            "nope".into(),
            format!("{{{EXAMPLE_REQUEST_ID}}}"),
            format!("urn:uuid:{EXAMPLE_REQUEST_ID}"),
            EXAMPLE_REQUEST_ID.replace('-', ""),
            format!("{EXAMPLE_REQUEST_ID}\n"),
            format!(" {EXAMPLE_REQUEST_ID}"),
            format!("{EXAMPLE_REQUEST_ID}0"),
        ];
        for _ in 0..50 {
            let id = uuid::Uuid::new_v4().to_string();
            ids.push(id.to_uppercase());
            let mixed: String = id
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if i % 2 == 0 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect();
            ids.push(mixed);
            ids.push(id);
        }
        for nibble in "0123456789abcdefABCDEFgG-".chars() {
            for position in 0..EXAMPLE_REQUEST_ID.len() {
                let mut id: Vec<char> = EXAMPLE_REQUEST_ID.chars().collect();
                id[position] = nibble;
                ids.push(id.into_iter().collect());
            }
        }
        // A multi-byte character where a hex digit goes: 36 characters, 37 bytes.
        ids.push(EXAMPLE_REQUEST_ID.replacen('3', "é", 1));
        let mut accepted = 0;
        for id in &ids {
            let rule = crate::envelope::is_uuid_v4(id);
            assert_eq!(validator.is_valid(&json!(id)), rule, "{id:?}");
            accepted += usize::from(rule);
        }
        // Both sides of the rule were tried.
        assert!(accepted >= 150 && ids.len() - accepted >= 100, "{accepted}");
    }

    /// Every place a request id appears states the rule: the body fields, the `X-Request-Id`
    /// parameter, and the `X-Request-Id` header of every response.
    #[test]
    fn every_request_id_states_the_pattern() {
        let doc = document_json();
        let mut seen = 0;
        for schema in doc["components"]["schemas"].as_object().unwrap().values() {
            if let Some(field) = schema["properties"].get("request_id") {
                assert_eq!(field["pattern"], REQUEST_ID_PATTERN, "{schema}");
                seen += 1;
            }
        }
        assert_eq!(seen, 2, "Envelope and ToolRequest");
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let header = op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["name"] == "X-Request-Id")
                    .unwrap_or_else(|| panic!("{method} {path}: no X-Request-Id parameter"));
                assert_eq!(header["schema"]["pattern"], REQUEST_ID_PATTERN);
                for (status, response) in op["responses"].as_object().unwrap() {
                    assert_eq!(
                        response["headers"]["X-Request-Id"]["schema"]["pattern"],
                        REQUEST_ID_PATTERN,
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
}
