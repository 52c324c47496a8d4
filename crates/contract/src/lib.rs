//! The HTTP contract every mcp-http-gateway service speaks: the response envelope, the table of
//! error codes and their HTTP statuses, the request and response bodies, and the OpenAPI 3.1
//! document built from them, and the check of a call's arguments against its tool's schema.
//! This crate does no I/O; the server, the conformance tester and the
//! wrapper generator all depend on it so there is one definition of each rule.

pub mod envelope;
pub mod error_code;
pub mod health;
pub mod openapi;
pub mod prompt;
pub mod registry;
pub mod resource;
pub mod service_document;
pub mod status;
pub mod strict_json;
pub mod task;
pub mod tool;
pub mod validation;

pub use envelope::{CacheStatus, Envelope, Identity, IdentityKind, Meta, ValidationIssue};
pub use error_code::ErrorCode;
pub use health::{
    CircuitState, ClashResolution, ClientHoldings, ClientsReport, ClusterReport, ConnectionState,
    DependencyState, DependencyStatus, EndpointReport, HealthResponse, HealthStatus, IndexState,
    InstanceReport, NameConflict, ProviderHealth, ProviderReport, RedisState, ReplicaReport,
    ResilienceReport, SearchIndexReport, SkippedFiles, ToolCaller, ToolFailure, ToolHealth,
    ToolStatus, ToolUsage, WatcherState,
};
pub use prompt::{
    PromptArgument, PromptInfo, PromptMessage, PromptResponse, PromptResult, PromptsResponse,
};
pub use resource::{
    ResourceContents, ResourceInfo, ResourceReadResponse, ResourceTemplateInfo,
    ResourceTemplatesResponse, ResourcesResponse, uri_syntax_error,
};
pub use status::{StatusFailure, StatusReport, StatusTimeline, StatusTool, StatusToolSeries};
pub use task::{TaskError, TaskInfo, TaskStatus};
pub use tool::{
    QUALIFIED_NAME_META_KEY, ToolRequest, ToolSchema, ToolsResponse, UntypedResult, qualified_name,
};
pub use validation::ArgumentValidator;

/// The header that carries the request id in both directions.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The version of the contract (the OpenAPI document's `info.version`).
pub const CONTRACT_VERSION: &str = env!("CARGO_PKG_VERSION");
