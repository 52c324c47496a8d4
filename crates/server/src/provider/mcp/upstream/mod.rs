//! Reaching an MCP server: which transport a provider uses, built from its configuration with
//! `${VAR}` expanded, and the one place a connection is opened and the handshake run.

pub mod child;
pub mod sse;
pub mod stdio;
pub mod streamable_http;
pub mod tap;
pub mod traced;
pub mod wire;

use std::path::Path;

use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::{RoleClient, ServiceExt};

use self::stdio::StdioSpec;
use self::streamable_http::HttpSpec;
use self::tap::ProgressTap;
use super::client::GatewayClient;
use crate::config::{EnvError, McpTransport, UpstreamProtocol};
use crate::shutdown::Shutdown;

/// Why a provider's endpoint could not be built from its configuration.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error("cwd '{path}': {source}")]
    Cwd {
        path: String,
        source: std::io::Error,
    },
    #[error("'{0}' is not a valid HTTP header name")]
    HeaderName(String),
    // The value is a secret as often as not: never echo it.
    #[error("header '{0}' has a value that is not valid in HTTP")]
    HeaderValue(String),
    #[error(transparent)]
    Credentials(#[from] crate::dependency::credentials::CredentialError),
}

/// Why a connection could not be opened; the text becomes the dependency's error in /health.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot start '{program}': {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot connect to {url}: {source}")]
    Connect {
        url: String,
        source: rmcp::service::ClientInitializeError,
    },
    #[error("initialize failed: {0}")]
    Initialize(rmcp::service::ClientInitializeError),
    #[error(transparent)]
    Sse(#[from] sse::SseError),
    #[error("cannot build an HTTP client: {0}")]
    Client(reqwest::Error),
    /// The server did not answer `initialize` within the bound (seconds).
    #[error("no answer to initialize within {0} s")]
    InitializeTimeout(u64),
    #[error("tools/list did not answer in time")]
    ToolsListTimeout,
    #[error("tools/list failed: {0}")]
    ToolsList(rmcp::service::ServiceError),
}

/// How the server is reached.
#[derive(Debug, Clone)]
pub enum Endpoint {
    Stdio(StdioSpec),
    StreamableHttp(HttpSpec),
    LegacySse(HttpSpec),
}

impl Endpoint {
    /// The endpoint a transport entry describes; relative paths are against `base_dir`.
    pub fn new(
        provider: &str,
        base_dir: &Path,
        transport: &McpTransport,
    ) -> Result<Endpoint, EndpointError> {
        Ok(match transport {
            McpTransport::Stdio(stdio) => Endpoint::Stdio(StdioSpec::new(base_dir, stdio)?),
            McpTransport::StreamableHttp(http) => {
                Endpoint::StreamableHttp(HttpSpec::new(provider, http)?)
            }
            McpTransport::LegacySse(http) => Endpoint::LegacySse(HttpSpec::new(provider, http)?),
        })
    }

    /// For logs and /health: no credentials, no query.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Stdio(s) => format!("stdio: {}", s.program),
            Endpoint::StreamableHttp(h) => format!("streamable-http: {}", h.redacted_url()),
            Endpoint::LegacySse(h) => format!("sse: {}", h.redacted_url()),
        }
    }
}

/// Opens the connection and runs the MCP handshake with `handler` as our side. A stdio child's
/// stderr goes to our log, tagged with `who` (service, provider).
pub async fn serve(
    endpoint: &Endpoint,
    handler: GatewayClient,
    tasks: &Shutdown,
    who: (&str, &str),
) -> Result<RunningService<RoleClient, GatewayClient>, ConnectError> {
    let (service, provider) = who;
    let routes = handler.progress.clone();
    let callers = handler.callers.clone();
    let wire = callers.wire.clone();
    match endpoint {
        Endpoint::Stdio(spec) => {
            let (transport, stderr, pid) =
                spec.spawn(wire).map_err(|source| ConnectError::Spawn {
                    program: spec.program.clone(),
                    source,
                })?;
            if let Some(stderr) = stderr {
                stdio::forward_stderr(stderr, tasks, service.to_owned(), provider.to_owned(), pid);
            }
            tracing::info!(
                service,
                provider,
                pid,
                "started MCP server {}",
                spec.program
            );
            let transport = ProgressTap::new(
                IntoTransport::<RoleClient, _, _>::into_transport(transport),
                routes,
                callers,
            );
            started(handler, transport)
                .await
                .map_err(ConnectError::Initialize)
        }
        Endpoint::StreamableHttp(spec) => {
            let transport = ProgressTap::new(
                IntoTransport::<RoleClient, _, _>::into_transport(
                    spec.transport(wire).map_err(ConnectError::Client)?,
                ),
                routes,
                callers,
            );
            started(handler, transport)
                .await
                .map_err(|source| ConnectError::Connect {
                    url: spec.redacted_url(),
                    source,
                })
        }
        Endpoint::LegacySse(spec) => {
            let transport = sse::connect(spec, tasks, wire).await?;
            handler
                .serve(ProgressTap::new(
                    IntoTransport::<RoleClient, _, _>::into_transport(transport),
                    routes,
                    callers,
                ))
                .await
                .map_err(ConnectError::Initialize)
        }
    }
}

/// Runs `handler` over `transport` in the era its provider asks for: the `initialize`
/// handshake, `server/discover` (2026-07-28), or discover falling back to the handshake.
async fn started<T>(
    handler: GatewayClient,
    transport: T,
) -> Result<RunningService<RoleClient, GatewayClient>, rmcp::service::ClientInitializeError>
where
    T: rmcp::transport::Transport<RoleClient> + 'static,
{
    let modern = vec![ProtocolVersion::V_2026_07_28];
    match handler.protocol {
        UpstreamProtocol::Handshake => handler.serve(transport).await,
        UpstreamProtocol::Stateless => {
            let lifecycle = ClientLifecycleMode::Discover {
                preferred_versions: modern,
            };
            handler.serve_with_lifecycle(transport, lifecycle).await
        }
        UpstreamProtocol::Auto => {
            let lifecycle = ClientLifecycleMode::Auto {
                preferred_versions: modern,
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            };
            handler.serve_with_lifecycle(transport, lifecycle).await
        }
    }
}
