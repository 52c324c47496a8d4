//! Who is calling and what they may use: a [`Client`] is the API key's name (or the peer's
//! address when no key was needed) and, for a key with tool globs, its [`ToolScope`]. Rate
//! limits count by the name, logs and metrics show it, and the tool lists and calls honour the
//! scope.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::config::{ApiKeyConfig, wildcard_match};

/// The caller of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    name: Arc<str>,
    /// Whether the name is an API key's (else a peer address): only key names become metric
    /// labels, peer addresses are unbounded.
    keyed: bool,
    scope: Option<Arc<ToolScope>>,
}

impl Client {
    /// An API key's client: its name, and its scope when it limits the tools.
    pub fn of_key(name: &str, scope: Option<Arc<ToolScope>>) -> Self {
        Client {
            name: name.into(),
            keyed: true,
            scope,
        }
    }

    /// A caller without a key: the peer's IP address (every port of one host is one client).
    pub fn of_peer(peer: SocketAddr) -> Self {
        Client {
            name: peer.ip().to_string().into(),
            keyed: false,
            scope: None,
        }
    }

    /// The client another replica of the service names on a request it forwarded (it judged
    /// the key or address itself): only its name, for what is looked up by it (tasks).
    pub fn vouched(name: &str) -> Self {
        Client {
            name: name.into(),
            keyed: false,
            scope: None,
        }
    }

    /// A request that came without a peer address (in-process tests).
    pub fn unknown() -> Self {
        Client {
            name: "unknown".into(),
            keyed: false,
            scope: None,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The API key's name, when the client is one.
    pub fn key_name(&self) -> Option<&str> {
        self.keyed.then_some(&*self.name)
    }

    /// The tools this client may use; `None` is every tool.
    pub fn scope(&self) -> Option<&Arc<ToolScope>> {
        self.scope.as_ref()
    }

    /// Whether this client may see and call `tool`.
    pub fn may_use(&self, tool: &str) -> bool {
        self.scope.as_ref().is_none_or(|s| s.allows(tool))
    }
}

/// The tools one key may use: those matching an `allow` glob (every tool without `allow`) and
/// no `deny` glob. Equal scopes are one cache entry of the tool lists built for them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolScope {
    allow: Option<Vec<String>>,
    deny: Vec<String>,
}

impl ToolScope {
    /// The key's scope, or `None` when it may use every tool.
    pub fn of(key: &ApiKeyConfig) -> Option<ToolScope> {
        if key.tools.is_none() && key.deny_tools.is_empty() {
            return None;
        }
        Some(ToolScope {
            allow: key.tools.clone(),
            deny: key.deny_tools.clone(),
        })
    }

    pub fn allows(&self, tool: &str) -> bool {
        let allowed = self
            .allow
            .as_ref()
            .is_none_or(|globs| globs.iter().any(|g| wildcard_match(g, tool)));
        allowed && !self.deny.iter().any(|g| wildcard_match(g, tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::KeySecret;

    fn key(tools: Option<&[&str]>, deny: &[&str]) -> ApiKeyConfig {
        ApiKeyConfig {
            name: "k".into(),
            secret: KeySecret::Env("K".into()),
            tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
            deny_tools: deny.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn allow_globs_then_deny_globs() {
        assert_eq!(ToolScope::of(&key(None, &[])), None);
        let scope = ToolScope::of(&key(Some(&["get-*", "echo"]), &["get-env"])).unwrap();
        for (tool, allowed) in [
            ("echo", true),
            ("get-sum", true),
            ("get-env", false),
            ("echo2", false),
            ("add", false),
        ] {
            assert_eq!(scope.allows(tool), allowed, "{tool}");
        }
        // Deny alone: everything else.
        let scope = ToolScope::of(&key(None, &["get-env"])).unwrap();
        assert!(scope.allows("echo") && !scope.allows("get-env"));
        let client = Client::of_key("k", Some(Arc::new(scope)));
        assert!(client.may_use("echo") && !client.may_use("get-env"));
        assert_eq!(client.key_name(), Some("k"));
        assert!(Client::unknown().may_use("get-env"));
        assert_eq!(Client::unknown().key_name(), None);
    }
}
