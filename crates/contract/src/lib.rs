//! The HTTP contract every mcp-http-gateway service speaks: the response envelope, the table of
//! error codes and their HTTP statuses, the request and response bodies, and the OpenAPI 3.1
//! document built from them, and the check of a call's arguments against its tool's schema.
//! This crate does no I/O; the server, the conformance tester and the
//! wrapper generator all depend on it so there is one definition of each rule.

pub mod envelope;
pub mod error_code;
pub mod health;
pub mod openapi;
pub mod registry;
pub mod service_document;
pub mod strict_json;
pub mod tool;
pub mod validation;

pub use envelope::{Envelope, Meta, ValidationIssue};
pub use error_code::ErrorCode;
pub use health::{
    ClashResolution, DependencyState, DependencyStatus, HealthResponse, HealthStatus, IndexState,
    NameConflict, ProviderReport, SearchIndexReport, SkippedFiles, ToolFailure, ToolHealth,
    ToolStatus, WatcherState,
};
pub use tool::{ToolRequest, ToolSchema, ToolsResponse};
pub use validation::ArgumentValidator;

/// The header that carries the request id in both directions.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The version of the contract (the OpenAPI document's `info.version`).
pub const CONTRACT_VERSION: &str = env!("CARGO_PKG_VERSION");
