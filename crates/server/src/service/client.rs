//! Who is calling and what they may use: a [`Client`] is the API key's name, an OAuth token's
//! subject, or the peer's address when no credential was needed; and, for a key with tool
//! globs or a token whose scopes open some tools, its [`ToolScope`]. Rate limits count by the
//! name (per user, with OAuth), logs and traces show it, and the tool lists and calls honour
//! the scope.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

use crate::config::{ApiKeyConfig, ScopeTools, wildcard_match};

/// What a validated OAuth access token says of its bearer.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenIdentity {
    /// `sub`, else `client_id` (a client-credentials token has no user).
    pub subject: Arc<str>,
    pub client_id: Option<Arc<str>>,
    /// The token's scopes (`scope`, space-separated, or `scp`).
    pub scopes: Vec<String>,
    pub expires: Option<SystemTime>,
    /// The token itself, for an upstream's token exchange only: never logged, never sent on.
    token: Arc<str>,
}

impl TokenIdentity {
    pub fn new(
        subject: Arc<str>,
        client_id: Option<Arc<str>>,
        scopes: Vec<String>,
        expires: Option<SystemTime>,
        token: &str,
    ) -> TokenIdentity {
        TokenIdentity {
            subject,
            client_id,
            scopes,
            expires,
            token: token.into(),
        }
    }

    /// The bearer token, for an RFC 8693 exchange.
    pub fn token(&self) -> &Arc<str> {
        &self.token
    }
}

impl std::fmt::Debug for TokenIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIdentity")
            .field("subject", &self.subject)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("expires", &self.expires)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// The caller of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    name: Arc<str>,
    /// Whether the name is an API key's (else a subject or a peer address): only key names
    /// become metric labels; subjects and peer addresses are unbounded.
    keyed: bool,
    scope: Option<Arc<ToolScope>>,
    /// The OAuth token the request came with, once validated.
    token: Option<Arc<TokenIdentity>>,
}

impl Client {
    /// An API key's client: its name, and its scope when it limits the tools.
    pub fn of_key(name: &str, scope: Option<Arc<ToolScope>>) -> Self {
        Client {
            name: name.into(),
            keyed: true,
            scope,
            token: None,
        }
    }

    /// A validated OAuth token's client: its subject, and the tools its scopes open.
    pub fn of_token(identity: TokenIdentity, scope: Option<Arc<ToolScope>>) -> Self {
        Client {
            name: identity.subject.clone(),
            keyed: false,
            scope,
            token: Some(Arc::new(identity)),
        }
    }

    /// A caller without a key: the peer's IP address (every port of one host is one client).
    pub fn of_peer(peer: SocketAddr) -> Self {
        Client {
            name: peer.ip().to_string().into(),
            keyed: false,
            scope: None,
            token: None,
        }
    }

    /// The client another replica of the service names on a request it forwarded (it judged
    /// the key or address itself): only its name, for what is looked up by it (tasks).
    pub fn vouched(name: &str) -> Self {
        Client {
            name: name.into(),
            keyed: false,
            scope: None,
            token: None,
        }
    }

    /// A request that came without a peer address (in-process tests).
    pub fn unknown() -> Self {
        Client {
            name: "unknown".into(),
            keyed: false,
            scope: None,
            token: None,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The name, shared: what per-client counts and bounds are kept under.
    pub fn counted_as(&self) -> Arc<str> {
        self.name.clone()
    }

    /// The API key's name, when the client is one.
    pub fn key_name(&self) -> Option<&str> {
        self.keyed.then_some(&*self.name)
    }

    /// Who holds the credential the request came with, `key:<name>` or `sub:<subject>`;
    /// `None` without one. A session is its opener's: another identity cannot use it.
    pub fn identity(&self) -> Option<String> {
        match (&self.token, self.keyed) {
            (Some(token), _) => Some(format!("sub:{}", token.subject)),
            (None, true) => Some(format!("key:{}", self.name)),
            (None, false) => None,
        }
    }

    /// The OAuth token's identity, when the client presented one.
    pub fn token(&self) -> Option<&Arc<TokenIdentity>> {
        self.token.as_ref()
    }

    /// The tools this client may use; `None` is every tool.
    pub fn scope(&self) -> Option<&Arc<ToolScope>> {
        self.scope.as_ref()
    }

    /// Whether this client may see and call `tool`.
    /// Whether no scope narrows the tools it may use.
    pub fn is_unscoped(&self) -> bool {
        self.scope.is_none()
    }

    pub fn may_use(&self, tool: &str) -> bool {
        self.scope.as_ref().is_none_or(|s| s.allows(tool))
    }
}

/// The tools one client may use: those some rule allows. A key has one rule; a token one per
/// scope it holds. Equal scopes are one cache entry of the tool lists built for them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ToolScope {
    rules: Vec<ScopeRule>,
}

/// Tools matching an `allow` glob (every tool without `allow`) and no `deny` glob.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct ScopeRule {
    allow: Option<Vec<String>>,
    deny: Vec<String>,
}

impl ScopeRule {
    fn allows(&self, tool: &str) -> bool {
        let allowed = self
            .allow
            .as_ref()
            .is_none_or(|globs| globs.iter().any(|g| wildcard_match(g, tool)));
        allowed && !self.deny.iter().any(|g| wildcard_match(g, tool))
    }
}

impl ToolScope {
    /// The key's scope, or `None` when it may use every tool.
    pub fn of(key: &ApiKeyConfig) -> Option<ToolScope> {
        if key.tools.is_none() && key.deny_tools.is_empty() {
            return None;
        }
        Some(ToolScope {
            rules: vec![ScopeRule {
                allow: key.tools.clone(),
                deny: key.deny_tools.clone(),
            }],
        })
    }

    /// The tools a token's scopes open (`security.oauth.scopes`): `None`, every tool, when no
    /// scope is mapped; else the union of the mapped scopes it holds (none: no tool).
    pub fn of_scopes<'a>(
        mapped: &std::collections::BTreeMap<String, ScopeTools>,
        held: impl IntoIterator<Item = &'a str>,
    ) -> Option<ToolScope> {
        if mapped.is_empty() {
            return None;
        }
        let mut rules: Vec<ScopeRule> = held
            .into_iter()
            .filter_map(|scope| mapped.get(scope))
            .map(|tools| ScopeRule {
                allow: tools.tools.clone(),
                deny: tools.deny_tools.clone(),
            })
            .collect();
        rules.sort();
        rules.dedup();
        Some(ToolScope { rules })
    }

    pub fn allows(&self, tool: &str) -> bool {
        self.rules.iter().any(|rule| rule.allows(tool))
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
