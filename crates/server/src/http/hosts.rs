//! The one `Host` and `Origin` check of a service, for every route, REST and MCP alike
//! (docs/security.md says why): a `Host` outside `security.allowed_hosts` is a DNS-rebinding
//! attempt or a misdirected request, and a browser `Origin` outside `security.allowed_origins`
//! may not send a state-changing request. Both answer 403 `FORBIDDEN`.
//!
//! It runs before anything acts on the request (only the trace span and the request count
//! see it first, so refusals are traced and counted): before CORS, the method check, the
//! request id, the lifecycle gate and the API key. The rules are read per request, so a
//! reload applies. What the entries mean is `config/hosts.rs`.

use std::time::Instant;

use axum::extract::Request;
use axum::http::{HeaderMap, Method, Uri, header};
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;

use super::reply::Reply;
use super::{envelope, methods};
use crate::config::Authority;
use crate::service::Service;
use crate::service::Settings;

/// Why a request was refused; the text is the envelope's `error`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("Host '{0}' is not allowed (security.allowed_hosts)")]
    Host(String),
    #[error("Origin '{origin}' may not send {method} {route} (security.allowed_origins)")]
    Origin {
        origin: String,
        method: Method,
        route: &'static str,
    },
}

/// The check ([`super::guard`]): a request whose Host or Origin is refused is answered 403.
pub fn check(service: &Service, request: &mut Request) -> Option<Response> {
    let started = Instant::now();
    let verdict = judge(
        &service.settings(),
        request.method(),
        request.uri(),
        request.headers(),
    );
    let refusal = verdict.err()?;
    tracing::warn!(service = %service.name, "refused: {refusal} (a DNS-rebinding or cross-site attempt, or a client that needs adding to the list)");
    let reply = Reply::error(ErrorCode::Forbidden, refusal.to_string());
    Some(envelope::unread(request, reply.into_response(), started))
}

/// The verdict on a request's `Host` (every `Host` header and the request target's authority,
/// when it has one) and, where it matters, its `Origin`.
pub fn judge(
    settings: &Settings,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    let rules = settings.config.security.hosts();
    let hosts = headers
        .get_all(header::HOST)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .chain(uri.authority().map(|a| a.as_str().to_owned()));
    // No Host at all (an HTTP/1.0 probe) passes: a browser always sends one, so such a
    // request is not the attack this guards against.
    for host in hosts {
        let allowed =
            Authority::parse(&host).is_some_and(|h| rules.iter().any(|rule| rule.allows(&h)));
        if !allowed {
            return Err(Refusal::Host(shown(&host)));
        }
    }
    if origin_matters(method, uri.path()) {
        for origin in headers.get_all(header::ORIGIN) {
            let origin = String::from_utf8_lossy(origin.as_bytes());
            if !settings.allows_origin(&origin) {
                return Err(Refusal::Origin {
                    origin: shown(&origin),
                    method: method.clone(),
                    route: methods::route(uri.path()),
                });
            }
        }
    }
    Ok(())
}

/// A header value as the answer and the log show it: at most [`SHOWN`] characters, since the
/// client chose it.
fn shown(value: &str) -> String {
    match value.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &value[..cut]),
        None => value.to_owned(),
    }
}

const SHOWN: usize = 100;

/// Where a browser's `Origin` must be allowed: every request that may change state (any method
/// but GET, HEAD and OPTIONS), and every MCP request but a preflight (the MCP transport asks
/// servers to validate `Origin` on every connection, and GET opens a stream). A cross-origin
/// GET of a REST route is left to CORS: it is answered, and the browser keeps the answer from
/// the page.
fn origin_matters(method: &Method, path: &str) -> bool {
    if matches!(methods::route(path), "/mcp" | "/sse" | "/messages") {
        return method != Method::OPTIONS;
    }
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServiceConfig;
    use axum::http::HeaderValue;

    fn settings(security: &str) -> Settings {
        let config = ServiceConfig::parse(
            &format!("service: {{ name: unit, port: 8001 }}\n{security}"),
            "unit.yaml",
            std::path::PathBuf::from("."),
        )
        .unwrap();
        Settings::new(config)
    }

    fn judged(
        settings: &Settings,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<(), Refusal> {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        judge(settings, &method, &path.parse().unwrap(), &map)
    }

    /// The check answers a refused Host itself, with the envelope of 403 FORBIDDEN and the
    /// request id it was given; an allowed Host goes on untouched.
    #[tokio::test]
    async fn the_check_answers_a_refusal_with_the_forbidden_envelope() {
        let service = crate::service::unit_service("");
        let request = |host: &str| {
            Request::get("/tools")
                .header("host", host)
                .header("x-request-id", "req-hosts")
                .body(axum::body::Body::empty())
                .unwrap()
        };
        assert!(check(&service, &mut request("localhost:9999")).is_none());
        let answer = check(&service, &mut request("evil.example")).expect("refused");
        assert_eq!(answer.status(), axum::http::StatusCode::FORBIDDEN);
        let body = axum::body::to_bytes(answer.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["code"], "FORBIDDEN");
        assert_eq!(body["success"], false);
        assert_eq!(
            body["error"],
            "Host 'evil.example' is not allowed (security.allowed_hosts)"
        );
    }

    #[test]
    fn loopback_hosts_pass_and_foreign_ones_are_refused_on_every_route() {
        let s = settings("");
        for path in [
            "/tools",
            "/health",
            "/openapi.json",
            "/docs/",
            "/metrics",
            "/status",
            "/status/assets/status.js",
            "/status/data",
            "/mcp",
            "/sse",
            "/nowhere",
        ] {
            for host in [
                "127.0.0.1:8001",
                "localhost:8001",
                "LOCALHOST.:8001",
                "[::1]:8001",
                "localhost",
                "127.0.0.1:9999",
            ] {
                assert_eq!(
                    judged(&s, Method::GET, path, &[("host", host)]),
                    Ok(()),
                    "{host} {path}"
                );
            }
            for host in [
                "evil.example",
                "evil.example:8001",
                "localhost.evil.example:8001",
                "10.0.0.1:8001",
                "[::2]:8001",
                "localhost:",
                "bad host",
            ] {
                assert_eq!(
                    judged(&s, Method::GET, path, &[("host", host)]),
                    Err(Refusal::Host(host.into())),
                    "{host} {path}"
                );
            }
        }
        // Every Host header counts, and so does an absolute request target.
        assert!(
            judged(
                &s,
                Method::GET,
                "/tools",
                &[("host", "localhost"), ("host", "evil.example")]
            )
            .is_err()
        );
        assert!(
            judged(
                &s,
                Method::GET,
                "http://evil.example/tools",
                &[("host", "localhost")]
            )
            .is_err()
        );
        // No Host at all: not a browser.
        assert_eq!(judged(&s, Method::GET, "/health", &[]), Ok(()));
    }

    #[test]
    fn explicit_hosts_replace_the_defaults() {
        let s = settings(
            "security: { allowed_hosts: [gateway.lan, \"gateway.lan:9000\", \"[fd00::1]:8001\"] }\n",
        );
        for ok in [
            "gateway.lan",
            "Gateway.LAN:8001",
            "gateway.lan:9000",
            "[fd00::1]:8001",
        ] {
            assert_eq!(
                judged(&s, Method::GET, "/tools", &[("host", ok)]),
                Ok(()),
                "{ok}"
            );
        }
        for bad in [
            "localhost:8001",
            "127.0.0.1:8001",
            "[fd00::1]:8002",
            "[fd00::1]",
        ] {
            assert!(
                judged(&s, Method::GET, "/tools", &[("host", bad)]).is_err(),
                "{bad}"
            );
        }
        let any = settings("security: { allowed_hosts: [\"*\"] }\n");
        assert_eq!(
            judged(
                &any,
                Method::POST,
                "/call-tool",
                &[("host", "whatever.example")]
            ),
            Ok(())
        );
    }

    #[test]
    fn a_foreign_origin_may_read_but_not_write() {
        let s = settings("");
        let host = ("host", "127.0.0.1:8001");
        let evil = ("origin", "http://evil.example");
        for (method, path) in [
            (Method::POST, "/call-tool"),
            (Method::POST, "/tools/echo"),
            (Method::POST, "/mcp"),
            (Method::DELETE, "/mcp"),
            (Method::GET, "/mcp"),
            (Method::GET, "/sse"),
            (Method::POST, "/messages"),
            (Method::PUT, "/tools"),
        ] {
            let refused = judged(&s, method.clone(), path, &[host, evil]);
            assert!(
                matches!(refused, Err(Refusal::Origin { .. })),
                "{method} {path}: {refused:?}"
            );
            for origin in ["http://localhost:5173", "https://[::1]:3000"] {
                assert_eq!(
                    judged(&s, method.clone(), path, &[host, ("origin", origin)]),
                    Ok(()),
                    "{origin}"
                );
            }
            assert_eq!(
                judged(&s, method.clone(), path, &[host]),
                Ok(()),
                "no Origin: not a browser"
            );
            assert!(
                judged(&s, method.clone(), path, &[host, ("origin", "null")]).is_err(),
                "null"
            );
        }
        for (method, path) in [
            (Method::GET, "/tools"),
            (Method::HEAD, "/health"),
            (Method::GET, "/openapi.json"),
            (Method::OPTIONS, "/call-tool"),
            (Method::OPTIONS, "/mcp"),
        ] {
            assert_eq!(
                judged(&s, method.clone(), path, &[host, evil]),
                Ok(()),
                "{method} {path}"
            );
        }
        let message = judged(&s, Method::POST, "/tools/echo", &[host, evil])
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            "Origin 'http://evil.example' may not send POST /tools/{name} (security.allowed_origins)"
        );
        // What the client chose is shown cut short.
        let long = format!("{}.example", "a".repeat(300));
        let refused = judged(&s, Method::GET, "/tools", &[("host", &long)]).unwrap_err();
        assert_eq!(refused, Refusal::Host(format!("{}…", "a".repeat(100))));
        let listed = settings("security: { allowed_origins: [\"https://app.example\"] }\n");
        assert_eq!(
            judged(
                &listed,
                Method::POST,
                "/call-tool",
                &[host, ("origin", "https://app.example")]
            ),
            Ok(())
        );
        assert!(
            judged(
                &listed,
                Method::POST,
                "/call-tool",
                &[host, ("origin", "http://localhost:5173")]
            )
            .is_err()
        );
    }
}
