//! The seam between the HTTP surface and whatever runs tools: the [`Provider`] trait, its
//! errors, and the construction of providers from configuration.
//!
//! A provider owns its connection to the outside (a child process, a database pool, an HTTP
//! client), keeps its current tool list, reports the health of what it depends on, and tells
//! the service when its tool list changes.

pub mod catalog;
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

use contract::{DependencyStatus, ErrorCode, ProviderHealth, ToolSchema};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::Notify;

pub use self::catalog::{Catalog, Offers};
pub use self::clients::{Caller, ClientSession, ClientSessions};
pub use self::output::ToolOutput;
pub use crate::dependency::credentials::SubjectToken;

use crate::config::{ProviderConfig, ServiceConfig};
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
    /// The caller's own access token, as the gateway validated it (`None`: the caller has no
    /// OAuth identity). Only an upstream whose `auth` exchanges it (RFC 8693) uses it, as the
    /// subject of the exchange; it is never sent to an upstream itself.
    pub subject_token: Option<SubjectToken>,
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
    /// The dependency behind the tool is down, or its connection was lost before it
    /// answered: the call never reached it, or never ran to its end.
    #[error("{0}")]
    Unavailable(String),
    /// The upstream answered that it failed (an HTTP 5xx): its fault, not the caller's.
    /// `transient` for 502, 503 and 504, after which an idempotent call may be tried again.
    #[error("{message}")]
    Upstream { message: String, transient: bool },
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
            ToolError::Execution(_) | ToolError::Unavailable(_) | ToolError::Upstream { .. } => {
                ErrorCode::ExecutionError
            }
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

    /// Its resources, prompts and completions, for a kind that has them (`mcp`, `grpc`).
    fn catalog(&self) -> Option<&dyn Catalog> {
        None
    }

    /// The health of each dependency behind this provider, checked now.
    fn health(&self) -> BoxFuture<'_, Vec<(String, DependencyStatus)>>;

    /// The name /health lists this provider's dependency under.
    fn dependency_name(&self) -> &str {
        self.name()
    }

    /// Whether `tool` needs the dependency to run (a tool answered by the gateway itself does
    /// not, and stays available while the dependency is down).
    fn needs_dependency(&self, _tool: &str) -> bool {
        true
    }

    /// The provider's own state as of now, for /health and /metrics (no I/O: what its
    /// connection, pool or index already knows). Default: nothing of its own.
    fn report(&self) -> ProviderReport {
        ProviderReport::default()
    }

    /// Stops background work and releases what the provider holds (children included);
    /// nothing to do for a provider whose dependency is a shared pool or client.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        futures::future::ready(()).boxed()
    }
}

/// A provider's own state, for /health (`providers`, `instances`, `index`) and /metrics.
#[derive(Debug, Clone, Default)]
pub struct ProviderReport {
    /// Its own connection to its upstream: `None` for providers whose dependency is a shared
    /// pool or client (their state is in the dependency checks).
    pub connection: Option<Connection>,
    /// Its connection's state machine (state, since, last error), for kinds that have one.
    pub state: Option<ProviderHealth>,
    /// Events it received, counted by type (gRPC `StreamEvents`).
    pub events: Vec<(String, u64)>,
    /// Why its tools may be missing from the list right now (an MCP server that is not
    /// connected has no known tools); `None` when its list is complete.
    pub missing_tools: Option<String>,
    /// Each child of a pool (`mcp` providers with `instances` above 1).
    pub instances: Vec<contract::InstanceReport>,
    /// Each endpoint of an `http` provider's API with several `base_urls`.
    pub endpoints: Vec<contract::EndpointReport>,
    /// The state of its search index (`search` providers).
    pub index: Option<contract::SearchIndexReport>,
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
        assert_eq!(
            crate::config::OutputValidation::default(),
            crate::config::OutputValidation::Strict
        );
        assert_eq!(bare.dependency_name(), "bare");
        assert!(bare.needs_dependency("any"));
        assert!(bare.catalog().is_none());
        let report = bare.report();
        assert!(report.connection.is_none() && report.state.is_none());
        assert!(report.events.is_empty() && report.missing_tools.is_none());
        assert!(report.instances.is_empty() && report.index.is_none());
        bare.shutdown().await;
    }

    /// A catalog that implements nothing: no resources or prompts, every URI and prompt
    /// unknown, nothing completed, no subscriptions, nothing offered.
    struct Empty;

    impl Catalog for Empty {}

    #[tokio::test]
    async fn the_defaults_a_catalog_gets_without_saying() {
        let empty = Empty;
        assert!(empty.list_resources(None).await.unwrap().is_empty());
        assert!(
            empty
                .list_resource_templates(None)
                .await
                .unwrap()
                .is_empty()
        );
        assert!(empty.list_prompts(None).await.unwrap().is_empty());
        assert_eq!(empty.offers(), Offers::default());
        let cx = CallContext {
            request_id: "r".into(),
            trace: TraceContext::detached(),
            timeout: Duration::from_secs(1),
            progress: None,
            caller: None,
            subject_token: None,
        };
        assert!(matches!(
            empty.read_resource("file:///x", &cx).await,
            Err(ToolError::NotFound(uri)) if uri == "file:///x"
        ));
        assert!(matches!(
            empty.get_prompt("p", JsonObject::new(), &cx).await,
            Err(ToolError::NotFound(name)) if name == "p"
        ));
        let request: rmcp::model::CompleteRequestParams =
            serde_json::from_value(serde_json::json!({
            "ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}))
            .unwrap();
        assert!(matches!(
            empty.complete(request, &cx).await,
            Err(ToolError::NotFound(_))
        ));
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
            (
                ToolError::Upstream {
                    message: "x".into(),
                    transient: true,
                },
                ErrorCode::ExecutionError,
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
