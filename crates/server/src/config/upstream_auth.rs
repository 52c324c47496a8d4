//! `auth:` on an `http` dependency or an `mcp` provider with a `url`: how the gateway gets the
//! token it sends upstream from the upstream's own issuer, OAuth 2.1 client credentials or an
//! RFC 8693 exchange of the caller's token. Without `auth`, the static form stays: `api_key_env`
//! and `headers`. Checked while read; the secret itself is only named (`client_secret_env`).

use serde::{Deserialize, Serialize};

use super::types::{optional_text, text};

/// How the gateway obtains the token it sends an upstream.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "AuthEntry", into = "AuthEntry")]
pub enum UpstreamAuth {
    /// The gateway's own token (`grant_type=client_credentials`), one for every caller.
    ClientCredentials {
        client: OAuthClient,
        target: TokenTarget,
    },
    /// The caller's own access token exchanged (RFC 8693) for one meant for the upstream.
    TokenExchange {
        client: OAuthClient,
        target: TokenTarget,
    },
}

impl UpstreamAuth {
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamAuth::ClientCredentials { .. } => CLIENT_CREDENTIALS,
            UpstreamAuth::TokenExchange { .. } => TOKEN_EXCHANGE,
        }
    }

    pub fn client(&self) -> &OAuthClient {
        match self {
            UpstreamAuth::ClientCredentials { client, .. }
            | UpstreamAuth::TokenExchange { client, .. } => client,
        }
    }

    pub fn target(&self) -> &TokenTarget {
        match self {
            UpstreamAuth::ClientCredentials { target, .. }
            | UpstreamAuth::TokenExchange { target, .. } => target,
        }
    }
}

/// The gateway as a client of the upstream's issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    /// The issuer's token endpoint (may use `${VAR}`).
    pub token_url: String,
    pub client_id: String,
    /// The environment variable holding the client secret (never the secret itself).
    pub client_secret_env: String,
    pub method: ClientAuthMethod,
}

/// How the client authenticates at the token endpoint (RFC 6749 2.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuthMethod {
    /// HTTP Basic with the form-encoded id and secret: what every issuer must accept.
    #[default]
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form body.
    ClientSecretPost,
}

/// What the token is for: each sent to the token endpoint when given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TokenTarget {
    pub scope: Option<String>,
    /// RFC 8707: the upstream's resource URI.
    pub resource: Option<String>,
    pub audience: Option<String>,
}

const CLIENT_CREDENTIALS: &str = "client_credentials";
const TOKEN_EXCHANGE: &str = "token_exchange";
const BASIC: &str = "client_secret_basic";
const POST: &str = "client_secret_post";

/// The entry as written in YAML.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct AuthEntry {
    #[serde(deserialize_with = "text")]
    kind: String,
    #[serde(default, deserialize_with = "optional_text")]
    token_url: Option<String>,
    #[serde(default, deserialize_with = "optional_text")]
    client_id: Option<String>,
    #[serde(default, deserialize_with = "optional_text")]
    client_secret_env: Option<String>,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    client_auth: Option<String>,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    scope: Option<String>,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    resource: Option<String>,
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    audience: Option<String>,
}

/// Why an `auth` entry cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamAuthError {
    #[error(
        "auth kind '{0}' is not known: write `kind: client_credentials` (the gateway's own token) or `kind: token_exchange` (the caller's token exchanged, RFC 8693)"
    )]
    Kind(String),
    #[error("auth ({kind}) needs `{field}`")]
    Missing { kind: String, field: &'static str },
    #[error(
        "auth: token_url '{0}' must be https:// (http:// only to localhost, 127.0.0.1 or [::1]): the client secret travels to it"
    )]
    TokenUrl(String),
    #[error(
        "auth: client_secret_env '{0}' is not an environment variable name (letters, digits and _, not starting with a digit); the secret itself never goes in the file"
    )]
    SecretEnv(String),
    #[error(
        "auth: client_auth '{0}' is not known: write client_secret_basic (the default) or client_secret_post"
    )]
    ClientAuth(String),
    #[error("auth: resource '{0}' must be an absolute URI without a fragment (RFC 8707)")]
    Resource(String),
}

impl TryFrom<AuthEntry> for UpstreamAuth {
    type Error = UpstreamAuthError;

    fn try_from(entry: AuthEntry) -> Result<Self, UpstreamAuthError> {
        let kind = entry.kind.trim().to_owned();
        if kind != CLIENT_CREDENTIALS && kind != TOKEN_EXCHANGE {
            return Err(UpstreamAuthError::Kind(kind));
        }
        let required = |value: Option<String>, field| {
            value
                .filter(|v| !v.trim().is_empty())
                .ok_or(UpstreamAuthError::Missing {
                    kind: kind.clone(),
                    field,
                })
        };
        let token_url = required(entry.token_url, "token_url")?;
        let client_id = required(entry.client_id, "client_id")?;
        let client_secret_env = required(entry.client_secret_env, "client_secret_env")?;
        if !token_url.starts_with("${") && !secure_or_local(&token_url) {
            return Err(UpstreamAuthError::TokenUrl(token_url));
        }
        if !is_env_name(&client_secret_env) {
            return Err(UpstreamAuthError::SecretEnv(client_secret_env));
        }
        let method = match entry.client_auth.as_deref() {
            None | Some(BASIC) => ClientAuthMethod::ClientSecretBasic,
            Some(POST) => ClientAuthMethod::ClientSecretPost,
            Some(other) => return Err(UpstreamAuthError::ClientAuth(other.to_owned())),
        };
        if let Some(resource) = &entry.resource
            && (resource.contains('#') || url::Url::parse(resource).is_err())
        {
            return Err(UpstreamAuthError::Resource(resource.clone()));
        }
        let client = OAuthClient {
            token_url,
            client_id,
            client_secret_env,
            method,
        };
        let target = TokenTarget {
            scope: entry.scope,
            resource: entry.resource,
            audience: entry.audience,
        };
        Ok(if kind == CLIENT_CREDENTIALS {
            UpstreamAuth::ClientCredentials { client, target }
        } else {
            UpstreamAuth::TokenExchange { client, target }
        })
    }
}

impl From<UpstreamAuth> for AuthEntry {
    fn from(auth: UpstreamAuth) -> AuthEntry {
        let kind = auth.kind().to_owned();
        let (client, target) = match auth {
            UpstreamAuth::ClientCredentials { client, target }
            | UpstreamAuth::TokenExchange { client, target } => (client, target),
        };
        AuthEntry {
            kind,
            token_url: Some(client.token_url),
            client_id: Some(client.client_id),
            client_secret_env: Some(client.client_secret_env),
            client_auth: (client.method == ClientAuthMethod::ClientSecretPost)
                .then(|| POST.to_owned()),
            scope: target.scope,
            resource: target.resource,
            audience: target.audience,
        }
    }
}

/// https, or http to the machine itself (a local issuer in development and tests).
fn secure_or_local(token_url: &str) -> bool {
    let Ok(url) = url::Url::parse(token_url) else {
        return false;
    };
    match url.scheme() {
        "https" => true,
        "http" => matches!(
            url.host(),
            Some(url::Host::Domain("localhost"))
                | Some(url::Host::Ipv4(std::net::Ipv4Addr::LOCALHOST))
                | Some(url::Host::Ipv6(std::net::Ipv6Addr::LOCALHOST))
        ),
        _ => false,
    }
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<UpstreamAuth, String> {
        serde_saphyr::from_str(yaml).map_err(|e| e.to_string())
    }

    const CLIENT: &str =
        "token_url: 'https://issuer.example/token', client_id: gw, client_secret_env: GW_SECRET";

    #[test]
    fn both_grants_read_with_their_client_and_target() {
        let auth = read(&format!(
            "{{ kind: client_credentials, {CLIENT}, scope: 'read write', resource: 'https://api.example/' }}"
        ))
        .unwrap();
        assert_eq!(auth.kind(), "client_credentials");
        assert_eq!(auth.client().method, ClientAuthMethod::ClientSecretBasic);
        assert_eq!(auth.client().client_secret_env, "GW_SECRET");
        assert_eq!(auth.target().scope.as_deref(), Some("read write"));
        let exchange = read(&format!(
            "{{ kind: token_exchange, {CLIENT}, audience: billing, client_auth: client_secret_post }}"
        ))
        .unwrap();
        assert!(matches!(exchange, UpstreamAuth::TokenExchange { .. }));
        assert_eq!(exchange.client().method, ClientAuthMethod::ClientSecretPost);
        assert_eq!(exchange.target().audience.as_deref(), Some("billing"));
        // Written back as read, the default method left out.
        let yaml = serde_saphyr::to_string(&auth).unwrap();
        assert!(!yaml.contains("client_auth"), "{yaml}");
        assert_eq!(read(&yaml).unwrap(), auth);
        let yaml = serde_saphyr::to_string(&exchange).unwrap();
        assert_eq!(read(&yaml).unwrap(), exchange);
    }

    #[test]
    fn refusals_say_what_to_write() {
        for (yaml, why) in [
            (format!("{{ kind: password, {CLIENT} }}"), "auth kind 'password' is not known: write `kind: client_credentials`"),
            ("{ kind: client_credentials, client_id: a, client_secret_env: S }".to_owned(), "auth (client_credentials) needs `token_url`"),
            ("{ kind: token_exchange, token_url: 'https://i/t', client_secret_env: S }".to_owned(), "auth (token_exchange) needs `client_id`"),
            ("{ kind: token_exchange, token_url: 'https://i/t', client_id: a }".to_owned(), "needs `client_secret_env`"),
            ("{ kind: client_credentials, token_url: 'http://issuer.example/t', client_id: a, client_secret_env: S }".to_owned(), "must be https://"),
            ("{ kind: client_credentials, token_url: 'https://i/t', client_id: a, client_secret_env: 's3cr3t value' }".to_owned(), "is not an environment variable name"),
            (format!("{{ kind: client_credentials, {CLIENT}, client_auth: private_key_jwt }}"), "client_auth 'private_key_jwt' is not known"),
            (format!("{{ kind: client_credentials, {CLIENT}, resource: 'api#x' }}"), "resource 'api#x' must be an absolute URI"),
            (format!("{{ kind: client_credentials, {CLIENT}, secret: x }}"), "unknown field"),
        ] {
            let error = read(&yaml).unwrap_err();
            assert!(error.contains(why), "{yaml}: {error}");
        }
        for local in [
            "http://127.0.0.1:9/token",
            "http://localhost/t",
            "http://[::1]:8/t",
            "${ISSUER}/token",
        ] {
            let yaml = format!(
                "{{ kind: client_credentials, token_url: '{local}', client_id: a, client_secret_env: S }}"
            );
            assert!(read(&yaml).is_ok(), "{local}");
        }
    }
}
