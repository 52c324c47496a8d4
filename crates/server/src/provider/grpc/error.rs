//! What can go wrong with a gRPC provider before a call: its address and TLS settings, the
//! connect (dial, `ListCapabilities`, heartbeat), a listed tool's or prompt's schema, and an
//! event from `StreamEvents`. Call failures are [`ToolError`](crate::provider::ToolError)s
//! (`calls.rs`).

use super::connection::{error_chain, status_text};
use crate::config::EnvError;

#[derive(Debug, thiserror::Error)]
pub(super) enum GrpcError {
    // The address and TLS settings (`connection::endpoint`).
    #[error(transparent)]
    Env(#[from] EnvError),
    #[error("address '{address}' is not host:port: {source}")]
    NotHostPort {
        address: String,
        source: tonic::transport::Error,
    },
    #[error("tls.ca_file '{path}': {source}")]
    CaFile {
        path: String,
        source: std::io::Error,
    },
    #[error("tls: {0}")]
    Tls(#[source] tonic::transport::Error),

    // A connect and the heartbeats.
    #[error("cannot connect to {address}: {}", error_chain(.source))]
    Connect {
        address: String,
        source: tonic::transport::Error,
    },
    #[error("ListCapabilities not answered within {secs} s")]
    ListCapabilitiesTimeout { secs: u64 },
    #[error("ListCapabilities failed: {}", status_text(.0))]
    ListCapabilities(#[source] Box<tonic::Status>),
    #[error("heartbeat not answered within {ms} ms")]
    HeartbeatTimeout { ms: u128 },
    #[error("heartbeat failed: {}", status_text(.0))]
    Heartbeat(#[source] Box<tonic::Status>),
    /// The heartbeat's answer was not SERVING (the status's name).
    #[error("heartbeat: the provider says {0}")]
    NotServing(String),

    // A listed tool or prompt (`capabilities`); the field is the message's field name.
    #[error("it has no name")]
    NoName,
    #[error("input_schema_json is empty (it is required)")]
    NoInputSchema,
    #[error("{field} is not a JSON object")]
    SchemaNotObject { field: &'static str },
    #[error("{field} is not JSON: {source}")]
    SchemaNotJson {
        field: &'static str,
        source: serde_json::Error,
    },

    // An event of `StreamEvents` (`events::check`).
    #[error("not JSON: {0}")]
    EventNotJson(#[source] serde_json::Error),
    #[error("not a JSON object")]
    EventNotObject,
    #[error("`{0}` is not a non-empty string")]
    AttributeNotText(&'static str),
    #[error("`{0}` is missing")]
    AttributeMissing(&'static str),
    #[error("specversion is '{0}', not '1.0'")]
    SpecVersion(String),
}
