//! The components of the document: the schema of every type of the contract (with the
//! request-id rule on its `request_id` fields), the envelope variant of each answer, and the
//! security schemes.

use utoipa::openapi::schema::{AllOfBuilder, ObjectBuilder, SchemaType, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ComponentsBuilder, Ref, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use super::request_id::constrain_request_id;
use crate::{
    CacheStatus, CircuitState, ClashResolution, ClientHoldings, ClientsReport, ClusterReport,
    ConnectionState, DependencyState, DependencyStatus, EndpointReport, Envelope, ErrorCode,
    HealthResponse, HealthStatus, Identity, IdentityKind, IndexState, InstanceReport, Meta,
    NameConflict, PromptArgument, PromptInfo, PromptMessage, PromptResponse, PromptsResponse,
    ProviderReport, RedisState, ReplicaReport, ResilienceReport, ResourceContents, ResourceInfo,
    ResourceReadResponse, ResourceTemplateInfo, ResourceTemplatesResponse, ResourcesResponse,
    SearchIndexReport, SkippedFiles, StatusFailure, StatusReport, StatusTimeline, StatusTool,
    StatusToolSeries, TaskError, TaskInfo, TaskStatus, ToolCaller, ToolFailure, ToolHealth,
    ToolRequest, ToolSchema, ToolStatus, ToolUsage, ToolsResponse, ValidationIssue, WatcherState,
};

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

pub(super) fn components() -> utoipa::openapi::Components {
    let mut builder = ComponentsBuilder::new();
    let mut schemas: Vec<(String, RefOr<Schema>)> = Vec::new();
    for (name, schema) in [
        (Envelope::name(), Envelope::schema()),
        (Meta::name(), Meta::schema()),
        (ValidationIssue::name(), ValidationIssue::schema()),
        (Identity::name(), Identity::schema()),
        (IdentityKind::name(), IdentityKind::schema()),
        (CacheStatus::name(), CacheStatus::schema()),
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
        (ClientsReport::name(), ClientsReport::schema()),
        (ClientHoldings::name(), ClientHoldings::schema()),
        (ToolCaller::name(), ToolCaller::schema()),
        (RedisState::name(), RedisState::schema()),
        (ToolUsage::name(), ToolUsage::schema()),
        (ReplicaReport::name(), ReplicaReport::schema()),
        (SearchIndexReport::name(), SearchIndexReport::schema()),
        (InstanceReport::name(), InstanceReport::schema()),
        (EndpointReport::name(), EndpointReport::schema()),
        (ResilienceReport::name(), ResilienceReport::schema()),
        (CircuitState::name(), CircuitState::schema()),
        (IndexState::name(), IndexState::schema()),
        (WatcherState::name(), WatcherState::schema()),
        (TaskInfo::name(), TaskInfo::schema()),
        (TaskStatus::name(), TaskStatus::schema()),
        (TaskError::name(), TaskError::schema()),
        (SkippedFiles::name(), SkippedFiles::schema()),
        (StatusReport::name(), StatusReport::schema()),
        (StatusTool::name(), StatusTool::schema()),
        (StatusFailure::name(), StatusFailure::schema()),
        (StatusTimeline::name(), StatusTimeline::schema()),
        (StatusToolSeries::name(), StatusToolSeries::schema()),
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
            "TaskEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("TaskInfo").into()),
                &["data"],
                "A task: the 202 that started it, GET /tasks/{id} and DELETE /tasks/{id}.",
            ),
        )
        .schema(
            "StatusEnvelope",
            envelope_variant(
                true,
                Some(Ref::from_schema_name("StatusReport").into()),
                &["data"],
                "GET /status/data answer.",
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
