//! Which `Host` and browser `Origin` values a service accepts (`security.allowed_hosts`,
//! `security.allowed_origins`): their entries as read from the file, how a header value is
//! compared with them, their defaults, and the load rules (a non-loopback bind must name its
//! hosts; the deprecated `mcp.allowed_*` and `security.cors_origins` keys are read as aliases).
//!
//! The HTTP layer that applies them to every route is `http/hosts.rs`.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_saphyr::Spanned;

use super::ServiceConfig;
use super::error::ConfigError;

/// A `Host` value split into its lowercase name (IPv6 without brackets, no trailing dot) and
/// its port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    pub name: String,
    pub port: Option<u16>,
}

impl Authority {
    /// Reads `name`, `name:port`, `[v6]`, `[v6]:port` (and a bare `v6`, as written in a
    /// file). Case and one trailing dot do not matter: `LocalHost.` is `localhost`.
    pub fn parse(text: &str) -> Option<Authority> {
        let text = text.trim();
        let (name, port) = if let Some(rest) = text.strip_prefix('[') {
            let (inner, after) = rest.split_once(']')?;
            inner.parse::<Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                _ => Some(parse_port(after.strip_prefix(':')?)?),
            };
            (inner, port)
        } else if text.matches(':').count() > 1 {
            text.parse::<Ipv6Addr>().ok()?;
            (text, None)
        } else {
            match text.split_once(':') {
                Some((name, port)) => (name, Some(parse_port(port)?)),
                None => (text, None),
            }
        };
        let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._:".contains(&b));
        valid.then_some(Authority { name, port })
    }

    /// Whether the name is a loopback one: `localhost`, 127.0.0.0/8 or `::1`.
    pub fn is_loopback(&self) -> bool {
        self.name == "localhost" || self.name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if self.name.contains(':') {
            format!("[{}]", self.name)
        } else {
            self.name.clone()
        };
        match self.port {
            Some(port) => write!(f, "{name}:{port}"),
            None => f.write_str(&name),
        }
    }
}

fn parse_port(text: &str) -> Option<u16> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// One entry of `security.allowed_hosts`: `*` (any Host), a name (on any port, or none), or a
/// name with a port (that port only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRule {
    Any,
    Exact(Authority),
}

impl HostRule {
    pub fn allows(&self, host: &Authority) -> bool {
        match self {
            HostRule::Any => true,
            HostRule::Exact(rule) => {
                rule.name == host.name && rule.port.is_none_or(|p| host.port == Some(p))
            }
        }
    }
}

/// An entry of `security.allowed_hosts` or `security.allowed_origins` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("'{0}' is not a host: write a name, an IP address, name:port or [v6]:port, or *")]
    NotHost(String),
    #[error(
        "'{0}' is not an origin: write scheme://host, scheme://host:port, scheme://host:* (any port) or *"
    )]
    NotOrigin(String),
}

impl FromStr for HostRule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Self, RuleError> {
        if text.trim() == "*" {
            return Ok(HostRule::Any);
        }
        Authority::parse(text)
            .map(HostRule::Exact)
            .ok_or_else(|| RuleError::NotHost(text.to_owned()))
    }
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostRule::Any => f.write_str("*"),
            HostRule::Exact(a) => a.fmt(f),
        }
    }
}

/// The port part of an origin rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginPort {
    /// `:*`
    Any,
    /// Written or implied (the scheme's default when the entry has none, as browsers omit it).
    Exact(u16),
}

/// One entry of `security.allowed_origins`: `*` (any origin), `scheme://host:port`,
/// `scheme://host` (the scheme's default port) or `scheme://host:*` (any port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OriginRule {
    Any,
    Exact {
        scheme: String,
        name: String,
        port: OriginPort,
    },
}

/// An `Origin` header value, parsed: scheme, host name, port (the scheme's default when
/// omitted). `null` and anything else that is not `scheme://host[:port]` is `None`.
pub fn parse_origin(text: &str) -> Option<(String, String, u16)> {
    let (scheme, rest) = text.trim().split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = Authority::parse(rest).filter(|_| !rest.contains('/'))?;
    let port = authority.port.or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    })?;
    Some((scheme, authority.name, port))
}

impl OriginRule {
    /// Whether a browser's `Origin` header value is allowed by this entry.
    pub fn allows(&self, origin: &str) -> bool {
        match self {
            OriginRule::Any => true,
            OriginRule::Exact { scheme, name, port } => {
                parse_origin(origin).is_some_and(|(s, n, p)| {
                    &s == scheme
                        && &n == name
                        && (*port == OriginPort::Any || *port == OriginPort::Exact(p))
                })
            }
        }
    }
}

impl FromStr for OriginRule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Self, RuleError> {
        let text = text.trim();
        if text == "*" {
            return Ok(OriginRule::Any);
        }
        let wrong = || RuleError::NotOrigin(text.to_owned());
        if let Some(base) = text.strip_suffix(":*") {
            let (scheme, rest) = base.split_once("://").ok_or_else(wrong)?;
            let authority = Authority::parse(rest)
                .filter(|a| a.port.is_none() && !rest.contains('/'))
                .ok_or_else(wrong)?;
            return Ok(OriginRule::Exact {
                scheme: scheme.to_ascii_lowercase(),
                name: authority.name,
                port: OriginPort::Any,
            });
        }
        let (scheme, name, port) = parse_origin(text).ok_or_else(wrong)?;
        Ok(OriginRule::Exact {
            scheme,
            name,
            port: OriginPort::Exact(port),
        })
    }
}

impl fmt::Display for OriginRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OriginRule::Any => f.write_str("*"),
            OriginRule::Exact { scheme, name, port } => {
                let host = Authority {
                    name: name.clone(),
                    port: None,
                };
                match port {
                    OriginPort::Any => write!(f, "{scheme}://{host}:*"),
                    OriginPort::Exact(p) => write!(f, "{scheme}://{host}:{p}"),
                }
            }
        }
    }
}

/// Both rules are read from and written as their text, so `config get` shows what was meant.
macro_rules! as_text {
    ($rule:ty) => {
        impl<'de> Deserialize<'de> for $rule {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
        impl Serialize for $rule {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}
as_text!(HostRule);
as_text!(OriginRule);

/// Any `http(s)` origin on `localhost`, `127.0.0.1` or `[::1]`, on any port.
pub fn default_allowed_origins() -> Vec<OriginRule> {
    [
        "http://localhost:*",
        "http://127.0.0.1:*",
        "http://[::1]:*",
        "https://localhost:*",
        "https://127.0.0.1:*",
        "https://[::1]:*",
    ]
    .iter()
    .filter_map(|o| o.parse().ok())
    .collect()
}

/// The loopback names on any port, and the bind address with its port (so a probe that
/// writes `Host: 127.0.0.2:8001` for a service bound there is accepted).
pub fn default_allowed_hosts(bind: &str, port: u16) -> Vec<HostRule> {
    let mut rules: Vec<HostRule> = ["localhost", "127.0.0.1", "::1"]
        .iter()
        .filter_map(|h| h.parse().ok())
        .collect();
    if let Some(mut address) = Authority::parse(bind) {
        address.port = Some(port);
        rules.push(HostRule::Exact(address));
    }
    rules
}

/// Whether `service.host` binds loopback only (`localhost`, 127.0.0.0/8, `::1`).
pub fn is_loopback_bind(host: &str) -> bool {
    Authority::parse(host).is_some_and(|a| a.port.is_none() && a.is_loopback())
}

impl ServiceConfig {
    /// Settles `security.allowed_hosts` and `allowed_origins`: the deprecated keys read into
    /// them (with a warning), the defaults filled in, and a non-loopback bind refused unless
    /// its hosts are named. Afterwards both are `Some`.
    pub(super) fn settle_hosts(&mut self) -> Result<(), ConfigError> {
        if let Some(alias) = self.mcp.allowed_hosts.take() {
            if self.security.allowed_hosts.is_some() {
                return Err(self.at(&alias, "mcp.allowed_hosts is replaced by security.allowed_hosts, which is also set: remove mcp.allowed_hosts".into()));
            }
            self.warn_at(&alias, "mcp.allowed_hosts is deprecated: it now applies to every route, REST and MCP; rename it security.allowed_hosts");
            self.security.allowed_hosts = Some(alias);
        }
        let mut aliases: Vec<OriginRule> = Vec::new();
        let mut alias_given = false;
        for (key, alias) in [
            ("mcp.allowed_origins", self.mcp.allowed_origins.take()),
            ("security.cors_origins", self.security.cors_origins.take()),
        ] {
            let Some(alias) = alias else { continue };
            if self.security.allowed_origins.is_some() {
                return Err(self.at(&alias, format!("{key} is replaced by security.allowed_origins, which is also set: remove {key}")));
            }
            self.warn_at(&alias, &format!("{key} is deprecated: security.allowed_origins now decides both CORS and which browser origins may call, on every route; rename it security.allowed_origins"));
            // An empty `cors_origins: []` meant "the loopback default".
            alias_given |= !alias.value.is_empty();
            aliases.extend(alias.value);
        }
        if alias_given {
            self.security.allowed_origins = Some(aliases);
        }
        if self.security.allowed_origins.is_none() {
            self.security.allowed_origins = Some(default_allowed_origins());
        }
        if let Some(list) = &self.security.allowed_hosts
            && list.value.is_empty()
        {
            return Err(self.at(list, "allowed_hosts is empty, which refuses every request: list the Host names clients use to reach the service, or [\"*\"]".into()));
        }
        if self.security.allowed_hosts.is_none() {
            let host = &self.service.host;
            if !is_loopback_bind(&host.value) {
                return Err(self.at(
                    host,
                    format!(
                        "service.host '{}' is not a loopback address, so security.allowed_hosts must be set: list the Host names clients use to reach the service (e.g. [gateway.example, \"gateway.example:{port}\"]), or [\"*\"] behind a proxy that checks Host itself (docs/security.md)",
                        host.value,
                        port = self.service.port.get()
                    ),
                ));
            }
            let defaults = default_allowed_hosts(&host.value, self.service.port.get());
            let unknown = serde_saphyr::Location::UNKNOWN;
            self.security.allowed_hosts = Some(Spanned::new(defaults, unknown, unknown));
        }
        Ok(())
    }

    fn warn_at<T>(&mut self, spanned: &Spanned<T>, message: &str) {
        let warning = format!(
            "{}:{}:{}: {message}",
            self.source,
            spanned.referenced.line(),
            spanned.referenced.column()
        );
        self.warnings.push(warning);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> Authority {
        Authority::parse(text).unwrap_or_else(|| panic!("{text} should parse"))
    }

    fn allowed(rules: &[&str], value: &str) -> bool {
        let rules: Vec<HostRule> = rules.iter().map(|r| r.parse().unwrap()).collect();
        let value = host(value);
        rules.iter().any(|r| r.allows(&value))
    }

    #[test]
    fn host_values_with_and_without_port_brackets_case_and_trailing_dot() {
        assert_eq!(
            host("LocalHost.:8001"),
            Authority {
                name: "localhost".into(),
                port: Some(8001)
            }
        );
        assert_eq!(
            host("[::1]:8001"),
            Authority {
                name: "::1".into(),
                port: Some(8001)
            }
        );
        assert_eq!(
            host("[::1]"),
            Authority {
                name: "::1".into(),
                port: None
            }
        );
        assert_eq!(
            host("::1"),
            Authority {
                name: "::1".into(),
                port: None
            }
        );
        assert_eq!(
            host("127.0.0.1"),
            Authority {
                name: "127.0.0.1".into(),
                port: None
            }
        );
        for bad in [
            "",
            "localhost:",
            "localhost:http",
            "localhost:70000",
            // Rust's integer parse takes a sign; a port is digits only.
            "localhost:+80",
            "[::1",
            "[evil]:80",
            "a b",
            "user@host",
            "host/path",
            "[::1]8001",
        ] {
            assert!(Authority::parse(bad).is_none(), "{bad:?} parsed");
        }
    }

    #[test]
    fn a_name_allows_any_port_and_a_name_with_port_only_that_port() {
        let defaults = ["localhost", "127.0.0.1", "::1", "127.0.0.1:8001"];
        for ok in [
            "localhost",
            "localhost:8001",
            "LOCALHOST:9",
            "localhost.:8001",
            "127.0.0.1:8001",
            "[::1]:8001",
            "[::1]",
        ] {
            assert!(allowed(&defaults, ok), "{ok} refused");
        }
        for bad in [
            "evil.example",
            "evil.example:8001",
            "localhost.evil.example",
            "127.0.0.2:8001",
            "[::2]:8001",
            "0.0.0.0:8001",
        ] {
            assert!(!allowed(&defaults, bad), "{bad} allowed");
        }
        assert!(allowed(&["gateway.lan:8001"], "Gateway.LAN:8001"));
        assert!(!allowed(&["gateway.lan:8001"], "gateway.lan"));
        assert!(!allowed(&["gateway.lan:8001"], "gateway.lan:8002"));
        assert!(allowed(&["[::1]:8001"], "[::1]:8001"));
        assert!(allowed(&["*"], "anything.example:1"));
    }

    #[test]
    fn origins_by_scheme_host_and_port() {
        let rules = default_allowed_origins();
        let ok = |o: &str| rules.iter().any(|r| r.allows(o));
        for good in [
            "http://localhost:5173",
            "http://localhost",
            "https://127.0.0.1:8443",
            "http://[::1]:3000",
            "HTTP://LocalHost:1",
        ] {
            assert!(ok(good), "{good}");
        }
        for bad in [
            "http://localhost.evil.example",
            "https://evil.example",
            "null",
            "http://127.0.0.1:abc",
            "file://x",
            "http://localhost:80/path",
            "",
        ] {
            assert!(!ok(bad), "{bad}");
        }
        let exact: OriginRule = "https://app.example".parse().unwrap();
        assert!(exact.allows("https://app.example"));
        assert!(exact.allows("https://app.example:443"));
        assert!(!exact.allows("https://app.example:8443"));
        assert!(!exact.allows("http://app.example"));
        assert!(OriginRule::Any.allows("null"));
        for bad in [
            "app.example",
            "https://",
            "null",
            "https://a.example/x",
            "https://a:1:*",
        ] {
            assert!(bad.parse::<OriginRule>().is_err(), "{bad}");
        }
        assert_eq!(
            "https://[::1]:*".parse::<OriginRule>().unwrap().to_string(),
            "https://[::1]:*"
        );
        assert_eq!(
            "https://App.example"
                .parse::<OriginRule>()
                .unwrap()
                .to_string(),
            "https://app.example:443"
        );
    }

    #[test]
    fn loopback_binds() {
        for b in ["127.0.0.1", "localhost", "::1", "127.0.0.2"] {
            assert!(is_loopback_bind(b), "{b}");
        }
        for b in ["0.0.0.0", "::", "192.168.1.10", "gateway.lan"] {
            assert!(!is_loopback_bind(b), "{b}");
        }
        let rules = default_allowed_hosts("::1", 8001);
        assert_eq!(rules.last().unwrap().to_string(), "[::1]:8001");
    }

    fn parse(text: &str) -> Result<ServiceConfig, ConfigError> {
        ServiceConfig::parse(text, "t.yaml", std::path::PathBuf::from("."))
    }

    #[test]
    fn a_non_loopback_bind_must_name_its_hosts() {
        let e = parse("service:\n  name: docs\n  port: 8001\n  host: 0.0.0.0\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.yaml:4:9: service.host '0.0.0.0' is not a loopback address, so security.allowed_hosts must be set"),
            "{e}"
        );
        let e = parse("service: { name: docs, port: 8001, host: \"::\" }\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.yaml:1:42: service.host '::'"), "{e}");
        let c = parse("service: { name: docs, port: 8001, host: 0.0.0.0 }\nsecurity: { allowed_hosts: [gateway.lan] }\n").unwrap();
        assert_eq!(
            crate::config::query::get(&c, "security.allowed_hosts").unwrap(),
            "[\"gateway.lan\"]"
        );
        let c = parse("service: { name: docs, port: 8001, host: 127.0.0.2 }\n").unwrap();
        assert_eq!(
            crate::config::query::get(&c, "security.allowed_hosts").unwrap(),
            "[\"localhost\",\"127.0.0.1\",\"[::1]\",\"127.0.0.2:8001\"]"
        );
        assert_eq!(
            crate::config::query::get(&c, "security.allowed_origins").unwrap(),
            "[\"http://localhost:*\",\"http://127.0.0.1:*\",\"http://[::1]:*\",\"https://localhost:*\",\"https://127.0.0.1:*\",\"https://[::1]:*\"]"
        );
        assert!(c.warnings.is_empty());
    }

    #[test]
    fn entries_are_checked_where_they_are_written() {
        let e = parse("service: { name: docs, port: 8001 }\nsecurity:\n  allowed_hosts: [localhost, \"evil host\"]\n").unwrap_err().to_string();
        assert!(
            e.starts_with("t.yaml:3:30: 'evil host' is not a host"),
            "{e}"
        );
        let e = parse(
            "service: { name: docs, port: 8001 }\nsecurity:\n  allowed_origins: [app.example]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("t.yaml:3:21: 'app.example' is not an origin"),
            "{e}"
        );
    }

    #[test]
    fn the_old_keys_are_read_with_a_warning_or_refused_beside_the_new_ones() {
        let c = parse("service: { name: docs, port: 8001 }\nmcp:\n  allowed_hosts: [gateway.lan]\n  allowed_origins: [\"https://app.example\"]\nsecurity:\n  cors_origins: [\"https://other.example\"]\n").unwrap();
        assert_eq!(
            c.security.hosts(),
            &["gateway.lan".parse::<HostRule>().unwrap()]
        );
        assert_eq!(c.security.origins().len(), 2);
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
        assert!(
            c.warnings[0].starts_with("t.yaml:3:18: mcp.allowed_hosts is deprecated"),
            "{:?}",
            c.warnings
        );
        assert!(
            c.warnings[2].starts_with("t.yaml:6:17: security.cors_origins is deprecated"),
            "{:?}",
            c.warnings
        );
        // `cors_origins: []` (the old shipped files) meant the loopback default.
        let c =
            parse("service: { name: docs, port: 8001 }\nsecurity: { cors_origins: [] }\n").unwrap();
        assert_eq!(c.security.origins(), default_allowed_origins().as_slice());
        assert_eq!(c.warnings.len(), 1);
        let e = parse("service: { name: docs, port: 8001 }\nsecurity: { allowed_hosts: [a.lan] }\nmcp:\n  allowed_hosts: [b.lan]\n").unwrap_err().to_string();
        assert!(e.starts_with("t.yaml:4:18: mcp.allowed_hosts is replaced by security.allowed_hosts, which is also set"), "{e}");
        // The old key counts as naming the hosts of a non-loopback bind.
        assert!(parse("service: { name: docs, port: 8001, host: 0.0.0.0 }\nmcp: { allowed_hosts: [gateway.lan] }\n").is_ok());
    }
}
