//! The seam between the HTTP surface and whatever runs tools: the [`Provider`] trait, its
//! errors, and the construction of providers from configuration.
//!
//! A provider owns its connection to the outside (a child process, a database pool, an HTTP
//! client), keeps its current tool list, reports the health of what it depends on, and tells
//! the service when its tool list changes.

pub mod clients;
pub mod cypher;
pub mod grpc;
pub mod http;
pub mod mcp;
pub mod output;
pub mod search;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use contract::{
    DependencyStatus, ErrorCode, PromptInfo, PromptResult, ProviderHealth, ResourceContents,
    ResourceInfo, ResourceTemplateInfo, ToolSchema,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{CompleteRequestParams, CompleteResult};
use serde_json::{Map, Value};
use tokio::sync::Notify;

pub use self::clients::{Caller, ClientSession, ClientSessions};
pub use self::output::ToolOutput;

use crate::config::{OutputValidation, ProviderConfig, ServiceConfig};
use crate::dependency::Dependency;
use crate::shutdown::Shutdown;
use crate::telemetry::TraceContext;

/// A tool's arguments.
pub type JsonObject = Map<String, Value>;

/// What a provider knows of the call it is running.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub request_id: String,
    /// The trace the call belongs to and the gateway span it runs in; upstream calls are
    /// child spans of it and carry it on (`traceparent`, MCP `_meta`).
    pub trace: TraceContext,
    /// How long the call may take; the provider cancels upstream work when it runs out.
    pub timeout: Duration,
    /// Where to report progress, when the caller asked for it (an MCP client's progressToken).
    pub progress: Option<ProgressSink>,
    /// The client request the call serves, when it came from a client session (MCP): what
    /// the upstream asks during the call goes to it, and a session's own connection or pinned
    /// child serves it. `None` for REST.
    pub caller: Option<Caller>,
}

/// A progress report of a running call: `progress` out of `total`, with an optional message.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// The receiving end of a call's progress reports.
pub type ProgressSink = tokio::sync::mpsc::UnboundedSender<Progress>;

/// Why a tool call failed, in terms the contract can answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    /// The tool ran and reported failure (MCP `isError`), or the upstream answered with an error.
    #[error("{0}")]
    Execution(String),
    /// The dependency behind the tool is down; the call never reached it.
    #[error("{0}")]
    Unavailable(String),
    /// The call ran out of time; upstream work was cancelled.
    #[error("Tool '{tool}' did not answer within {ms} ms; the call was cancelled")]
    Timeout { tool: String, ms: u64 },
    /// The upstream does not know the tool (its list changed under us).
    #[error("Tool '{0}' not found")]
    NotFound(String),
    /// The upstream rejected the arguments although they passed our schema check.
    #[error("{0}")]
    InvalidArguments(String),
    /// The tool needs something of its caller this caller cannot give (sampling, a task).
    #[error("{0}")]
    CapabilityRequired(String),
}

impl ToolError {
    pub fn code(&self) -> ErrorCode {
        match self {
            ToolError::Execution(_) | ToolError::Unavailable(_) => ErrorCode::ExecutionError,
            ToolError::Timeout { .. } => ErrorCode::Timeout,
            ToolError::NotFound(_) => ErrorCode::ToolNotFound,
            ToolError::InvalidArguments(_) => ErrorCode::InvalidArguments,
            ToolError::CapabilityRequired(_) => ErrorCode::CapabilityRequired,
        }
    }
}

/// Why a provider could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("provider '{provider}': {message}")]
    Config { provider: String, message: String },
}

/// A source of tools.
pub trait Provider: Send + Sync {
    /// The provider's name from the config; also the name of its dependency in /health.
    fn name(&self) -> &str;

    /// Connects for the first time. Returns when the first attempt has succeeded or failed;
    /// a provider that failed keeps retrying in the background and reports itself unavailable.
    fn start(&self) -> BoxFuture<'_, ()>;

    /// The tools as of now (empty while the dependency has never been reached).
    fn tools(&self) -> Vec<ToolSchema>;

    /// Runs one tool. Must not hang past `cx.timeout` and must fail fast when the dependency
    /// is known to be down.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        args: JsonObject,
        cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// The resources the provider offers now (to `caller`, when a client session asks).
    /// `provider` and `qualified_name` may be left empty: the service sets them. Default: none.
    fn list_resources<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceInfo>, ToolError>> {
        futures::future::ready(Ok(Vec::new())).boxed()
    }

    /// The resource templates the provider offers now (`caller`, `provider`, `qualified_name`
    /// as for [`Provider::list_resources`]). Default: none.
    fn list_resource_templates<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<ResourceTemplateInfo>, ToolError>> {
        futures::future::ready(Ok(Vec::new())).boxed()
    }

    /// Reads one resource (a listed URI or one a template matches). An unknown URI is
    /// [`ToolError::NotFound`] (the service answers it RESOURCE_NOT_FOUND). Must not hang past
    /// `cx.timeout`. Default: every URI is unknown.
    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<Vec<ResourceContents>, ToolError>> {
        futures::future::ready(Err(ToolError::NotFound(uri.to_owned()))).boxed()
    }

    /// The prompts the provider offers now, each with its `args_schema` (`caller`,
    /// `provider`, `qualified_name` as for [`Provider::list_resources`]; `name` is the
    /// provider's own). Default: none.
    fn list_prompts<'a>(
        &'a self,
        _caller: Option<&'a Caller>,
    ) -> BoxFuture<'a, Result<Vec<PromptInfo>, ToolError>> {
        futures::future::ready(Ok(Vec::new())).boxed()
    }

    /// Renders one prompt (`name` is the provider's own) with arguments that already passed
    /// its `args_schema`. An unknown prompt is [`ToolError::NotFound`] (answered
    /// PROMPT_NOT_FOUND). Must not hang past `cx.timeout`. Default: every prompt is unknown.
    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        _args: JsonObject,
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<PromptResult, ToolError>> {
        futures::future::ready(Err(ToolError::NotFound(name.to_owned()))).boxed()
    }

    /// Completes an argument of one of its prompts or resource templates (MCP
    /// `completion/complete`; the prompt's name is the provider's own). Must not hang past
    /// `cx.timeout`. Default: it completes nothing ([`ToolError::NotFound`]).
    fn complete<'a>(
        &'a self,
        _request: CompleteRequestParams,
        _cx: &'a CallContext,
    ) -> BoxFuture<'a, Result<CompleteResult, ToolError>> {
        futures::future::ready(Err(ToolError::NotFound("completion/complete".into()))).boxed()
    }

    /// Subscribes `caller` to updates of the resource `uri`; `false` when the provider takes
    /// no subscriptions. Default: it takes none.
    fn subscribe<'a>(
        &'a self,
        _uri: &'a str,
        _caller: &'a Caller,
    ) -> BoxFuture<'a, Result<bool, ToolError>> {
        futures::future::ready(Ok(false)).boxed()
    }

    /// Ends `caller`'s subscription to `uri` (the session has dropped it already). Default:
    /// nothing to end.
    fn unsubscribe<'a>(
        &'a self,
        _uri: &'a str,
        _caller: &'a Caller,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        futures::future::ready(Ok(())).boxed()
    }

    /// What the provider offers besides tools, as of now (the MCP surface advertises the
    /// union). Default: nothing.
    fn offers(&self) -> Offers {
        Offers::default()
    }

    /// The health of each dependency behind this provider, checked now.
    fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>>;

    /// What to do with a result that violates its tool's output schema.
    fn validate_output(&self) -> OutputValidation {
        OutputValidation::Strict
    }

    /// The name /health lists this provider's dependency under.
    fn dependency_name(&self) -> &str {
        self.name()
    }

    /// Whether `tool` needs the dependency to run (a tool answered by the gateway itself does
    /// not, and stays available while the dependency is down).
    fn needs_dependency(&self, _tool: &str) -> bool {
        true
    }

    /// The provider's own connection to its upstream, for metrics: `None` for providers whose
    /// dependency is a shared pool or client (their state is in the dependency checks).
    fn connection(&self) -> Option<Connection> {
        None
    }

    /// The provider's own connection state (state, since, last error) for /health
    /// `providers` and the state gauge of /metrics; `None` for kinds without a status machine.
    fn connection_state(&self) -> Option<ProviderHealth> {
        None
    }

    /// Events the provider sent, counted by type (gRPC `StreamEvents`); empty for other kinds.
    fn events_received(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// Why this provider's tools may be missing from the list right now (an MCP server that
    /// is not connected has no known tools); `None` when its list is complete.
    fn missing_tools_reason(&self) -> Option<String> {
        None
    }

    /// Each child of a pool (`mcp` providers with `instances` above 1), for /health.
    fn instances(&self) -> Vec<contract::InstanceReport> {
        Vec::new()
    }

    /// The state of the provider's search index (`search` providers), for /health.
    fn index_report(&self) -> Option<contract::SearchIndexReport> {
        None
    }

    /// Stops background work and releases what the provider holds (children included);
    /// nothing to do for a provider whose dependency is a shared pool or client.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        futures::future::ready(()).boxed()
    }
}

/// What a provider offers besides tools; the MCP surface advertises what some provider
/// offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    pub resources: bool,
    /// It takes `resources/subscribe` and tells of updates.
    pub resource_subscriptions: bool,
    /// It tells when its resource list changes.
    pub resource_list_changes: bool,
    pub prompts: bool,
    /// It tells when its prompt list changes.
    pub prompt_list_changes: bool,
    pub completions: bool,
    /// It sends log messages to the client sessions (an MCP server's, a gRPC provider's
    /// events).
    pub log_messages: bool,
}

/// A provider's connection to its upstream as of now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    /// Calls can go through it now.
    pub connected: bool,
    /// Times the connection was made again after it was lost (the first connect is not one).
    pub restarts: u64,
}

/// A dependency's status with the provider's `setup_hint` added to its error.
pub fn with_setup_hint(mut status: DependencyStatus, hint: Option<&str>) -> DependencyStatus {
    status.error = status.error.map(|e| with_hint(&e, hint));
    status
}

/// `message` followed by what to start, when the provider's config says (`setup_hint`).
pub fn with_hint(message: &str, hint: Option<&str>) -> String {
    match hint {
        Some(hint) => format!("{message} — {hint}"),
        None => message.to_owned(),
    }
}

/// What a provider is given by its service: where to say its tool list changed, and the
/// shutdown its background work belongs to.
#[derive(Clone)]
pub struct ProviderHooks {
    pub tools_changed: Arc<Notify>,
    /// Where to say a dependency's state changed (the service checks it again at once).
    pub health_changed: Arc<Notify>,
    pub shutdown: Shutdown,
    /// The service's client sessions, for what an upstream sends its client.
    pub sessions: ClientSessions,
}

/// Builds the provider a config entry describes. Nothing is connected until [`Provider::start`].
pub fn build(
    service: &ServiceConfig,
    config: &ProviderConfig,
    hooks: ProviderHooks,
    dependencies: &BTreeMap<String, Dependency>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let dependency = |name: &str| {
        dependencies
            .get(name)
            .cloned()
            .ok_or_else(|| ProviderError::Config {
                provider: config.name().to_string(),
                message: format!("dependency '{name}' is not defined"),
            })
    };
    let mismatch = || ProviderError::Config {
        provider: config.name().to_string(),
        message: "its dependency is of the wrong kind".into(),
    };
    match config {
        ProviderConfig::Mcp(mcp) => Ok(Arc::new(mcp::McpProvider::new(service, mcp, hooks)?)),
        ProviderConfig::Cypher(cypher) => match dependency(&cypher.dependency)? {
            Dependency::Bolt(db) => Ok(Arc::new(cypher::CypherProvider::new(cypher, db)?)),
            Dependency::Http(_) => Err(mismatch()),
        },
        ProviderConfig::Http(http) => match dependency(&http.dependency)? {
            Dependency::Http(api) => Ok(Arc::new(http::HttpProvider::new(http, api)?)),
            Dependency::Bolt(_) => Err(mismatch()),
        },
        ProviderConfig::Grpc(grpc) => Ok(Arc::new(grpc::GrpcProvider::new(service, grpc, hooks)?)),
        ProviderConfig::Search(search) => Ok(Arc::new(search::SearchProvider::new(
            service, search, hooks,
        )?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider that implements only what it must: every other method is the trait's default.
    struct Bare;

    impl Provider for Bare {
        fn name(&self) -> &str {
            "bare"
        }
        fn start(&self) -> BoxFuture<'_, ()> {
            futures::future::ready(()).boxed()
        }
        fn tools(&self) -> Vec<ToolSchema> {
            Vec::new()
        }
        fn call<'a>(
            &'a self,
            _: &'a str,
            _: JsonObject,
            _: &'a CallContext,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
            futures::future::ready(Ok(ToolOutput::Data(Value::Null))).boxed()
        }
        fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>> {
            futures::future::ready(Vec::new()).boxed()
        }
    }

    /// What a kind gets without saying: strict output checks, its dependency listed under its
    /// own name, every tool needing it, no resources or prompts, nothing of MCP or pools.
    #[tokio::test]
    async fn the_defaults_a_provider_kind_gets_without_saying() {
        let bare = Bare;
        assert_eq!(bare.validate_output(), OutputValidation::Strict);
        assert_eq!(OutputValidation::default(), OutputValidation::Strict);
        assert_eq!(bare.dependency_name(), "bare");
        assert!(bare.needs_dependency("any"));
        assert!(bare.list_resources(None).await.unwrap().is_empty());
        assert!(bare.list_resource_templates(None).await.unwrap().is_empty());
        assert!(bare.list_prompts(None).await.unwrap().is_empty());
        assert_eq!(bare.offers(), Offers::default());
        let cx = CallContext {
            request_id: "r".into(),
            trace: TraceContext::detached(),
            timeout: Duration::from_secs(1),
            progress: None,
            caller: None,
        };
        assert!(matches!(
            bare.read_resource("file:///x", &cx).await,
            Err(ToolError::NotFound(uri)) if uri == "file:///x"
        ));
        assert!(matches!(
            bare.get_prompt("p", JsonObject::new(), &cx).await,
            Err(ToolError::NotFound(name)) if name == "p"
        ));
        assert!(bare.connection().is_none() && bare.connection_state().is_none());
        assert!(bare.events_received().is_empty());
        assert!(bare.missing_tools_reason().is_none());
        assert!(bare.instances().is_empty() && bare.index_report().is_none());
        bare.shutdown().await;
    }

    #[test]
    fn tool_errors_answer_their_codes() {
        for (error, code) in [
            (ToolError::Execution("x".into()), ErrorCode::ExecutionError),
            (
                ToolError::Unavailable("x".into()),
                ErrorCode::ExecutionError,
            ),
            (
                ToolError::Timeout {
                    tool: "t".into(),
                    ms: 5,
                },
                ErrorCode::Timeout,
            ),
            (ToolError::NotFound("t".into()), ErrorCode::ToolNotFound),
            (
                ToolError::InvalidArguments("x".into()),
                ErrorCode::InvalidArguments,
            ),
            (
                ToolError::CapabilityRequired("x".into()),
                ErrorCode::CapabilityRequired,
            ),
        ] {
            assert_eq!(error.code(), code, "{error:?}");
        }
    }

    #[test]
    fn a_setup_hint_follows_the_error() {
        assert_eq!(with_hint("down", Some("start it")), "down — start it");
        assert_eq!(with_hint("down", None), "down");
        let status = DependencyStatus {
            status: contract::DependencyState::Unavailable,
            response_time_ms: None,
            error: Some("refused".into()),
            last_ok: None,
            checked_at: None,
        };
        assert_eq!(
            with_setup_hint(status, Some("run x")).error.as_deref(),
            Some("refused — run x")
        );
    }
}
