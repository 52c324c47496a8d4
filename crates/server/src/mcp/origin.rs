//! DNS-rebinding protection for the MCP transports: the `Host` must be one of
//! `mcp.allowed_hosts` and a browser's `Origin` one of `mcp.allowed_origins`. Checked before
//! any session logic, on `/mcp` and on the legacy `/sse` + `/messages`.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::config::McpSection;

/// DNS-rebinding protection: the Host must be one of `mcp.allowed_hosts` and a browser's
/// Origin one of `mcp.allowed_origins`.
pub fn foreign_host_or_origin(rules: &McpSection, headers: &HeaderMap) -> Option<Response> {
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.split(':').next().unwrap_or_default(),
    };
    if !rules.allowed_hosts.iter().any(|h| h == name) {
        return Some(
            (
                StatusCode::FORBIDDEN,
                format!("Host '{host}' is not allowed"),
            )
                .into_response(),
        );
    }
    if let Some(origin) = headers.get("origin").and_then(|o| o.to_str().ok())
        && !origin_allowed(&rules.allowed_origins, origin)
    {
        return Some(
            (
                StatusCode::FORBIDDEN,
                format!("Origin '{origin}' is not allowed"),
            )
                .into_response(),
        );
    }
    None
}

/// `scheme://host:port` against entries that may end in `:*` (any port).
pub(super) fn origin_allowed(allowed: &[String], origin: &str) -> bool {
    allowed.iter().any(|entry| match entry.strip_suffix(":*") {
        Some(prefix) => {
            origin == prefix
                || origin
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(':'))
        }
        None => origin == entry,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_with_any_port() {
        let allowed = vec![
            "http://localhost:*".to_owned(),
            "https://app.example:443".to_owned(),
        ];
        assert!(origin_allowed(&allowed, "http://localhost:5173"));
        assert!(origin_allowed(&allowed, "http://localhost"));
        assert!(origin_allowed(&allowed, "https://app.example:443"));
        assert!(!origin_allowed(&allowed, "http://localhost.evil:80"));
        assert!(!origin_allowed(&allowed, "https://evil.example"));
    }
}
