//! The service's resource identifier (RFC 8707), the `aud` its tokens must carry, and where
//! its RFC 9728 metadata is: `/.well-known/oauth-protected-resource` for the service (REST),
//! and the path-suffixed `/.well-known/oauth-protected-resource/mcp` for its MCP endpoint.
//!
//! The identifier is `security.oauth.public_url` when set: behind a TLS terminator or a path
//! prefix only the operator knows the URL clients use. Otherwise it is the URL the request was
//! sent to: `Forwarded` / `X-Forwarded-Proto`, `-Host` and `-Prefix` from a peer in
//! `trusted_proxies`, else `http://`, the `Host` header's name (which the hosts layer has
//! checked) and the service's own port.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request};
use axum::http::{HeaderMap, header};

use crate::service::client::{Client, ToolScope};
use crate::service::settings::Settings;

pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
pub const MCP_METADATA_PATH: &str = "/.well-known/oauth-protected-resource/mcp";

/// Whether `path` is one of the metadata documents (public whatever `public_routes` say).
pub fn is_metadata_path(path: &str) -> bool {
    path == METADATA_PATH || path == MCP_METADATA_PATH
}

/// The resource a request is for: the service's base URL, and whether the MCP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    base: String,
    mcp: bool,
}

impl Resource {
    pub fn of(settings: &Settings, request: &Request) -> Resource {
        // Inside a nested router (the MCP surface) the path is the one the client sent.
        let path = match request.extensions().get::<axum::extract::OriginalUri>() {
            Some(original) => original.path(),
            None => request.uri().path(),
        };
        let mcp =
            path == "/mcp" || path == "/sse" || path == "/messages" || path == MCP_METADATA_PATH;
        Resource {
            base: base_url(settings, request.headers(), peer(request)),
            mcp,
        }
    }

    /// The service's base URL as the client sees it.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The identifier published for this request's path: the base, or the base + `/mcp`.
    pub fn identifier(&self) -> String {
        if self.mcp {
            format!("{}/mcp", self.base)
        } else {
            self.base.clone()
        }
    }

    /// The audiences a token for this service may carry: its base URL (either form of it)
    /// and its MCP endpoint's URL. Never another service's: each has its own base.
    pub fn audiences(&self) -> Vec<String> {
        vec![
            self.base.clone(),
            format!("{}/", self.base),
            format!("{}/mcp", self.base),
        ]
    }

    /// Where this resource's metadata is (RFC 9728 §3.1: the well-known part goes between
    /// the host and the identifier's path; behind a path prefix the proxy routes it here).
    pub fn metadata_url(&self) -> String {
        match url::Url::parse(&self.identifier()) {
            Ok(url) => format!(
                "{}{METADATA_PATH}{}",
                url.origin().ascii_serialization(),
                url.path().trim_end_matches('/')
            ),
            Err(_) => format!("{}{METADATA_PATH}", self.base),
        }
    }
}

fn peer(request: &Request) -> Option<SocketAddr> {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(peer)| *peer)
}

/// The service's base URL as the client sees it, without a trailing `/`.
fn base_url(settings: &Settings, headers: &HeaderMap, peer: Option<SocketAddr>) -> String {
    let config = &settings.config;
    let oauth = config.security.oauth.as_ref();
    if let Some(public) = oauth.and_then(|o| o.public_url.as_ref()) {
        return public.clone();
    }
    let trusted = peer.is_some_and(|peer| {
        oauth.is_some_and(|o| o.trusted_proxies.iter().any(|net| net.contains(peer.ip())))
    });
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let forwarded = trusted
        .then(|| text("forwarded").map(forwarded_pairs))
        .flatten();
    let from_forwarded = |key: &str| {
        forwarded
            .as_ref()
            .and_then(|pairs| pairs.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)))
            .map(|(_, v)| v.clone())
    };
    let first = |name: &str| {
        trusted
            .then(|| text(name))
            .flatten()
            .and_then(|v| v.split(',').next())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let proto = from_forwarded("proto")
        .or_else(|| first("x-forwarded-proto"))
        .filter(|p| p == "http" || p == "https")
        .unwrap_or_else(|| "http".into());
    // Called directly, the port is the service's own whatever `Host` says: a token for
    // another service on this machine (another port, the same issuer) must not fit here.
    let own_port = config.service.port.get();
    let host = from_forwarded("host")
        .or_else(|| first("x-forwarded-host"))
        .filter(|h| is_authority(h))
        .or_else(|| {
            text(header::HOST.as_str())
                .filter(|h| is_authority(h))
                .map(|h| format!("{}:{own_port}", without_port(h)))
        })
        .unwrap_or_else(|| format!("{}:{own_port}", config.service.host.value));
    let prefix = first("x-forwarded-prefix")
        .filter(|p| p.starts_with('/') && p.bytes().all(|b| b.is_ascii_graphic() && b != b'"'))
        .map(|p| p.trim_end_matches('/').to_owned())
        .unwrap_or_default();
    format!("{proto}://{host}{prefix}")
}

/// The first element of a `Forwarded` header (RFC 7239): its `key=value` pairs.
fn forwarded_pairs(value: &str) -> Vec<(String, String)> {
    value
        .split(',')
        .next()
        .unwrap_or_default()
        .split(';')
        .filter_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            Some((k.trim().to_owned(), v.trim().trim_matches('"').to_owned()))
        })
        .collect()
}

/// `host` of `host[:port]` (`[v6]` of `[v6]:port`).
fn without_port(authority: &str) -> &str {
    match authority.rfind(':') {
        Some(at) if !authority[at..].contains(']') => &authority[..at],
        _ => authority,
    }
}

/// A host with an optional port, nothing that could turn the URL into another one.
fn is_authority(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:[]".contains(&b))
}

/// `GET /.well-known/oauth-protected-resource[/mcp]`: the RFC 9728 document; 404 while the
/// The challenge of a 403 for a token whose scopes do not open `tool`: `insufficient_scope`
/// with the scopes that would (RFC 6750 §3.1), so a client can ask for them. `None` when the
/// client has no token, or no configured scope opens the tool.
pub fn insufficient_scope(
    settings: &Settings,
    client: &Client,
    tool: &str,
    resource: &Resource,
) -> Option<String> {
    client.token()?;
    let oauth = settings.config.security.oauth.as_ref()?;
    let needed: Vec<&str> = oauth
        .scopes
        .iter()
        .filter(|(name, _)| {
            ToolScope::of_scopes(&oauth.scopes, [name.as_str()]).is_some_and(|s| s.allows(tool))
        })
        .map(|(name, _)| name.as_str())
        .collect();
    if needed.is_empty() {
        return None;
    }
    Some(format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"{}\"",
        needed.join(" "),
        resource.metadata_url(),
        quoted(&format!(
            "tool '{tool}' needs one of the scopes: {}",
            needed.join(", ")
        ))
    ))
}

/// Text inside a quoted-string: no `"` or `\`, printable ASCII only.
pub fn quoted(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::unit_service;
    use axum::body::Body;
    use axum::extract::ConnectInfo;

    fn request(path: &str, headers: &[(&str, &str)], peer: &str) -> Request {
        let mut builder = Request::get(path);
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let mut request = builder.body(Body::empty()).unwrap();
        request
            .extensions_mut()
            .insert(ConnectInfo::<SocketAddr>(peer.parse().unwrap()));
        request
    }

    const OAUTH: &str =
        "security:\n  oauth:\n    issuer: https://id.example\n    trusted_proxies: [10.0.0.0/8]\n";

    #[tokio::test]
    async fn the_resource_is_the_host_called_unless_a_trusted_proxy_says_otherwise() {
        let service = unit_service(OAUTH);
        let settings = service.settings();
        let forwarded = [
            ("host", "127.0.0.1:8001"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "tools.example"),
            ("x-forwarded-prefix", "/code/"),
        ];
        let direct = Resource::of(&settings, &request("/tools", &forwarded, "192.0.2.1:5"));
        // Called directly the port is the service's own (unit services listen on 9999).
        assert_eq!(direct.identifier(), "http://127.0.0.1:9999");
        let v6 = Resource::of(
            &settings,
            &request("/tools", &[("host", "[::1]:8005")], "192.0.2.1:5"),
        );
        assert_eq!(v6.identifier(), "http://[::1]:9999");
        let bare = Resource::of(
            &settings,
            &request("/tools", &[("host", "localhost")], "192.0.2.1:5"),
        );
        assert_eq!(bare.identifier(), "http://localhost:9999");
        let proxied = Resource::of(&settings, &request("/mcp", &forwarded, "10.1.2.3:5"));
        assert_eq!(proxied.identifier(), "https://tools.example/code/mcp");
        assert_eq!(
            proxied.metadata_url(),
            "https://tools.example/.well-known/oauth-protected-resource/code/mcp"
        );
        let rfc7239 = Resource::of(
            &settings,
            &request(
                "/tools",
                &[(
                    "forwarded",
                    "for=1.2.3.4;proto=https;host=\"a.example:8443\", for=5.6.7.8",
                )],
                "10.0.0.9:1",
            ),
        );
        assert_eq!(rfc7239.identifier(), "https://a.example:8443");
        assert_eq!(
            rfc7239.metadata_url(),
            "https://a.example:8443/.well-known/oauth-protected-resource"
        );
        // A host that would make another URL is not taken.
        let odd = Resource::of(
            &settings,
            &request(
                "/tools",
                &[("x-forwarded-host", "evil/x?"), ("host", "h:1")],
                "10.0.0.9:1",
            ),
        );
        assert_eq!(odd.identifier(), "http://h:9999");
    }

    #[tokio::test]
    async fn public_url_wins() {
        let service = unit_service(&format!("{OAUTH}    public_url: https://gw.example/svc/\n"));
        let settings = service.settings();
        let r = Resource::of(
            &settings,
            &request("/mcp", &[("host", "x:1")], "10.0.0.1:1"),
        );
        assert_eq!(r.identifier(), "https://gw.example/svc/mcp");
        assert_eq!(r.audiences()[0], "https://gw.example/svc");
    }
}
