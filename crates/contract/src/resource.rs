//! The bodies of the resource routes: what a resource and a resource template are as clients
//! see them, and what reading one answers.
//!
//! Every entry names the provider that offers it and its qualified name `{provider}.{name}`,
//! so two providers offering the same URI or name stay apart.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Why `uri` is not an absolute URI as RFC 3986 writes one (`scheme ":" rest`, the rest in
/// the URI alphabet with `%` only before two hex digits), or `None` when it is one. MCP
/// resource URIs are RFC 3986 URIs, so a read of anything else is the caller's mistake (400),
/// caught before a provider is asked.
pub fn uri_syntax_error(uri: &str) -> Option<String> {
    let Some((scheme, rest)) = uri.split_once(':') else {
        return Some("it has no scheme (a URI starts with `scheme:`)".into());
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return Some(format!(
            "its scheme '{}' is not a letter followed by letters, digits, '+', '-' or '.'",
            scheme.escape_default()
        ));
    }
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3);
            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                return Some(format!(
                    "'%' at byte {} is not followed by two hex digits",
                    scheme.len() + 1 + i
                ));
            }
            i += 3;
            continue;
        }
        let allowed = b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&b);
        if !allowed {
            let shown = rest[i..].chars().next().unwrap_or_default();
            return Some(format!(
                "it holds '{}' at byte {}, which a URI must percent-encode",
                shown.escape_default(),
                scheme.len() + 1 + i
            ));
        }
        i += 1;
    }
    None
}

/// A resource a provider offers (MCP `resources/list`, a gRPC provider's capabilities).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceInfo {
    /// The resource's URI, scheme included (`hello://greeting`); what `GET /resources/read`
    /// takes.
    pub uri: String,
    /// The provider's name for the resource.
    pub name: String,
    /// A human-friendly name, when the provider gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media type of its contents (`text/plain`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The configured name of the provider that offers it.
    pub provider: String,
    /// `{provider}.{name}`.
    pub qualified_name: String,
    /// The provider's own MCP form of it (an MCP server's, as sent), which the MCP surface
    /// answers unchanged; not part of the REST contract.
    #[serde(skip)]
    #[schema(ignore)]
    pub native: Option<Value>,
}

/// A family of resources addressed by an RFC 6570 URI template (`hello://greeting/{name}`):
/// any URI the template matches can be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceTemplateInfo {
    pub uri_template: String,
    /// The provider's name for the template.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    pub provider: String,
    /// `{provider}.{name}`.
    pub qualified_name: String,
    /// The provider's own MCP form of it (an MCP server's, as sent), which the MCP surface
    /// answers unchanged; not part of the REST contract.
    #[serde(skip)]
    #[schema(ignore)]
    pub native: Option<Value>,
}

/// One part of a resource's contents: `text`, or `blob` (base64) for binary contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceContents {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The contents as text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The contents in base64 (RFC 4648, with padding), for a binary resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = Byte)]
    pub blob: Option<String>,
    /// The provider's own MCP form of it (an MCP server's, as sent), which the MCP surface
    /// answers unchanged; not part of the REST contract.
    #[serde(skip)]
    #[schema(ignore)]
    pub native: Option<Value>,
}

/// `data` of GET /resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourcesResponse {
    /// The service's name.
    pub service: String,
    /// Every resource of every provider, in provider order (configuration), then as listed.
    pub resources: Vec<ResourceInfo>,
}

/// `data` of GET /resource-templates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceTemplatesResponse {
    pub service: String,
    pub resource_templates: Vec<ResourceTemplateInfo>,
}

/// `data` of GET /resources/read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ResourceReadResponse {
    /// The URI asked for.
    pub uri: String,
    /// The provider that answered.
    pub provider: String,
    /// The contents; a resource may come in several parts.
    pub contents: Vec<ResourceContents>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_uris_are_checked_as_rfc_3986_writes_them() {
        for ok in [
            "demo://resource/dynamic/text/1",
            "file:///tmp/a%20b.txt",
            "hello://greeting",
            "urn:isbn:0451450523",
            "test://x?y=1#frag",
        ] {
            assert_eq!(uri_syntax_error(ok), None, "{ok}");
        }
        for (bad, why) in [
            ("notauri", "no scheme"),
            ("", "no scheme"),
            ("1x://a", "scheme '1x'"),
            ("demo://a b", "' ' at byte 8"),
            ("demo://\u{6}", "percent-encode"),
            ("demo://caf\u{e9}", "percent-encode"),
            ("demo://%zz", "two hex digits"),
            ("demo://%4", "two hex digits"),
            // Checking goes on after an escape.
            ("demo://%41 b", "' ' at byte 10"),
        ] {
            let error = uri_syntax_error(bad).unwrap_or_else(|| panic!("{bad:?} passed"));
            assert!(error.contains(why), "{bad:?}: {error}");
        }
    }
}
