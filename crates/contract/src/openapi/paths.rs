//! Each operation of the document: its tag, its parameters (the request id, a name in the
//! path, the query of GET /resources/read), its security and its request body.

use serde_json::{Value, json};
use utoipa::openapi::path::{OperationBuilder, ParameterBuilder, ParameterIn};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Required, Schema};

use super::operations::Operation;
use super::request_id::{REQUEST_ID_RULE, request_id_schema};
use super::responses::responses;

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
    } else if path.starts_with("/status") {
        "status"
    } else if path.starts_with("/tasks") {
        "tasks"
    } else {
        "tools"
    }
}

pub(super) fn operation(op: &Operation) -> utoipa::openapi::path::Operation {
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
    // The page and its assets are public whatever the configuration.
    if op.path != "/health" && op.path != "/status" {
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
    if op.path == "/tasks/{id}" {
        builder = builder.parameter(
            ParameterBuilder::new()
                .name("id")
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .description(Some("The task's id, from the 202 that started it."))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String))),
        );
    }
    if super::operations::is_call(op) {
        builder = builder.parameter(
            ParameterBuilder::new()
                .name("Prefer")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "`respond-async` (RFC 7240): run the call as a task and answer 202 at once, with `Location: /tasks/{id}`. The call is judged first (scope, tool, arguments): what it would refuse is refused as without the preference.",
                ))
                .schema(Some(ObjectBuilder::new().schema_type(Type::String))),
        );
    }
    if op.id == "listTools" {
        builder = builder
            .parameter(
                ParameterBuilder::new()
                    .name("q")
                    .parameter_in(ParameterIn::Query)
                    .required(Required::False)
                    .description(Some(
                        "A search: what you need done, in plain words. The tools that match are answered best first (BM25 over name, title, description, parameters and provider), each with its `score`; tools that match nothing are left out. Without it, every tool, sorted by name.",
                    ))
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .min_length(Some(1))
                            .max_length(Some(1000)),
                    )),
            )
            .parameter(
                ParameterBuilder::new()
                    .name("limit")
                    .parameter_in(ParameterIn::Query)
                    .required(Required::False)
                    .description(Some(
                        "The most tools answered: with `q`, the best matches (default 10); without it, the first tools by name (default: all of them).",
                    ))
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(1))
                            .maximum(Some(100))
                            .default(Some(json!(10))),
                    )),
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
