//! `kind: grpc`: a provider process reached over the gRPC Provider contract (`proto/`), inline
//! or from the seed's `providers_file`; its connection settings and the rule of its address.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::super::types::{ProviderName, optional_text, text, text_map};
use super::{EntryKeys, ProviderCommon};

/// `kind: grpc`: a provider reached over the gRPC Provider contract. Read as an entry of
/// [`super::ProviderConfig`], which refuses a key of another kind first.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct GrpcProviderConfig {
    #[serde(flatten)]
    pub common: ProviderCommon,
    /// `host:port` of the provider's gRPC server (may use `${VAR}`).
    #[serde(deserialize_with = "text")]
    pub address: String,
    /// TLS to the provider; absent: plaintext HTTP/2 (loopback and trusted networks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<GrpcTls>,
    /// The deadline of one call in ms (sent as `grpc-timeout`); the service's and the tool's
    /// `timeout_ms` cap it. Default 30000.
    #[serde(default = "default_grpc_deadline_ms")]
    pub deadline_ms: u64,
    /// How often the `grpc.health.v1` heartbeat runs, in ms. Default 5000.
    #[serde(default = "default_grpc_heartbeat_ms")]
    pub heartbeat_interval_ms: u64,
    /// Reconnect attempts in a row, after the connection is lost, before the provider is
    /// DISCONNECTED. Default 5.
    #[serde(default = "default_grpc_max_retries")]
    pub max_retries: u32,
    /// The first wait between reconnect attempts in ms; it doubles each attempt up to 30 s.
    /// Default 500.
    #[serde(default = "default_grpc_backoff_ms")]
    pub retry_backoff_ms: u64,
    /// Labels of the provider (`version`, `environment`, …), shown in /health.
    #[serde(
        default,
        deserialize_with = "text_map",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub metadata: BTreeMap<String, String>,
}

impl EntryKeys for GrpcProviderConfig {
    const KEYS: &'static [&'static str] = &[
        "name",
        "address",
        "tls",
        "deadline_ms",
        "heartbeat_interval_ms",
        "max_retries",
        "retry_backoff_ms",
        "metadata",
        "setup_hint",
        "validate_output",
        "limits",
        "resilience",
        "tool_prefix",
        "expose",
        "when",
    ];
}

/// TLS settings of a gRPC provider.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcTls {
    /// PEM file of the CA that signed the provider's certificate (relative to the config
    /// file's folder); absent: the system's roots.
    #[serde(default, deserialize_with = "optional_text")]
    pub ca_file: Option<String>,
    /// The name to check the certificate against; default the host of `address`.
    #[serde(default, deserialize_with = "optional_text")]
    pub domain: Option<String>,
}

impl GrpcProviderConfig {
    /// An entry of the seed's `providers.yaml` (name, address, metadata), every other field at
    /// its default.
    pub fn from_seed(
        name: ProviderName,
        address: String,
        metadata: BTreeMap<String, String>,
    ) -> GrpcProviderConfig {
        GrpcProviderConfig {
            common: ProviderCommon::named(name),
            address,
            tls: None,
            deadline_ms: default_grpc_deadline_ms(),
            heartbeat_interval_ms: default_grpc_heartbeat_ms(),
            max_retries: default_grpc_max_retries(),
            retry_backoff_ms: default_grpc_backoff_ms(),
            metadata,
        }
    }
}

/// Why a gRPC address is not `host:port`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcAddressError {
    #[error(
        "address '{0}' must be host:port (e.g. 127.0.0.1:50051 or [::1]:50051): no scheme; TLS is set by `tls`"
    )]
    Scheme(String),
    #[error("address '{0}' must be host:port (e.g. 127.0.0.1:50051 or [::1]:50051): no port")]
    NoPort(String),
    #[error(
        "address '{address}' must be host:port (e.g. 127.0.0.1:50051 or [::1]:50051): '{port}' is not a port from 1 to 65535"
    )]
    Port { address: String, port: String },
    #[error(
        "address '{address}' must be host:port (e.g. 127.0.0.1:50051 or [::1]:50051): '{host}' is not a bracketed IPv6 address"
    )]
    Ipv6 { address: String, host: String },
    #[error(
        "address '{0}' must be host:port (e.g. 127.0.0.1:50051 or [::1]:50051): an IPv6 address is written in brackets"
    )]
    Ipv6WithoutBrackets(String),
    #[error(
        "address '{address}' must be host:port (e.g. 127.0.0.1:50051 or [::1]:50051): '{host}' is not a host name or IP address"
    )]
    Host { address: String, host: String },
}

/// The rule of a gRPC provider's `address`, inline or from `providers_file`: `host:port`, the
/// host a name, an IPv4 address or a bracketed IPv6 address (`[::1]:50051`), the port 1 to
/// 65535, no scheme. An address holding a `${VAR}` is checked once expanded, when the provider
/// is built.
pub fn check_grpc_address(address: &str) -> Result<(), GrpcAddressError> {
    if address.contains("${") {
        return Ok(());
    }
    let owned = || address.to_owned();
    if address.contains("://") {
        return Err(GrpcAddressError::Scheme(owned()));
    }
    let Some((host, port)) = address.rsplit_once(':') else {
        return Err(GrpcAddressError::NoPort(owned()));
    };
    match port.parse::<u16>() {
        Ok(p) if p > 0 && !port.starts_with('+') => {}
        _ => {
            return Err(GrpcAddressError::Port {
                address: owned(),
                port: port.to_owned(),
            });
        }
    }
    if let Some(inner) = host.strip_prefix('[') {
        let v6 = inner.strip_suffix(']').unwrap_or_default();
        return match v6.parse::<std::net::Ipv6Addr>() {
            Ok(_) => Ok(()),
            Err(_) => Err(GrpcAddressError::Ipv6 {
                address: owned(),
                host: host.to_owned(),
            }),
        };
    }
    if host.contains(':') {
        return Err(GrpcAddressError::Ipv6WithoutBrackets(owned()));
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(GrpcAddressError::Host {
            address: owned(),
            host: host.to_owned(),
        });
    }
    Ok(())
}

fn default_grpc_deadline_ms() -> u64 {
    30_000
}
fn default_grpc_heartbeat_ms() -> u64 {
    5_000
}
fn default_grpc_max_retries() -> u32 {
    5
}
fn default_grpc_backoff_ms() -> u64 {
    500
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_addresses_are_host_and_port() {
        for ok in [
            "localhost:50051",
            "127.0.0.1:1",
            "[::1]:50052",
            "hello-rs.internal:65535",
            "${HELLO_ADDR}",
            "${HOST}:50051",
        ] {
            assert_eq!(check_grpc_address(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("localhost", "no port"),
            ("http://localhost:50051", "no scheme"),
            ("localhost:0", "'0' is not a port"),
            ("localhost:65536", "'65536' is not a port"),
            ("localhost:+5", "'+5' is not a port"),
            (":50051", "'' is not a host"),
            ("::1:50051", "in brackets"),
            ("[::g]:50051", "not a bracketed IPv6"),
            ("a b:1", "'a b' is not a host"),
            ("a..b:1", "'a..b' is not a host"),
        ] {
            let e = check_grpc_address(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(
                e.starts_with(&format!("address '{bad}' must be host:port")),
                "{e}"
            );
        }
    }
}
