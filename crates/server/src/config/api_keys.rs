//! `security.api_keys`: named API keys, each with where its secret is (an environment variable,
//! or the SHA-256 of the key written in the file) and the tools it may use (globs to allow, and
//! to deny). A key's name is what logs, metrics and rate limits show; its value never is.

use serde::{Deserialize, Serialize};

/// One named key, checked whole while it is read (so an error points at the entry).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "ApiKeyEntry", into = "ApiKeyEntry")]
pub struct ApiKeyConfig {
    /// `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`: shown in logs, metrics and 429 messages.
    pub name: String,
    pub secret: KeySecret,
    /// Globs of the tools the key may use; `None` is every tool.
    pub tools: Option<Vec<String>>,
    /// Globs of tools the key may not use, even when `tools` matches them.
    pub deny_tools: Vec<String>,
}

/// Where a key's secret is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySecret {
    /// The key is the value of this environment variable (read at start and on reload).
    Env(String),
    /// The SHA-256 digest of the key; the key itself is nowhere on the machine.
    Sha256([u8; 32]),
}

/// The entry as written in YAML.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct ApiKeyEntry {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deny_tools: Vec<String>,
}

/// Why an entry of `security.api_keys` cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiKeyError {
    #[error(
        "api key name '{0}' must match ^[A-Za-z0-9][A-Za-z0-9_.-]{{0,63}}$ (it appears in logs and metrics)"
    )]
    Name(String),
    #[error(
        "api key '{name}': sha256 must be 64 hex digits (the output of `printf %s KEY | sha256sum`), got {length} characters"
    )]
    Sha256 { name: String, length: usize },
    #[error("api key '{0}': give value_env or sha256, not both")]
    BothSecrets(String),
    #[error(
        "api key '{0}' needs value_env (an environment variable holding the key) or sha256 (the key's SHA-256, 64 hex digits)"
    )]
    NoSecret(String),
    #[error(
        "api key '{0}': `tools: []` would allow no tool; leave `tools` out to allow every tool"
    )]
    NoTools(String),
    #[error(
        "api key '{name}': tool glob '{glob}' is empty; write a name or a pattern with * and ?"
    )]
    EmptyGlob { name: String, glob: String },
}

impl TryFrom<ApiKeyEntry> for ApiKeyConfig {
    type Error = ApiKeyError;

    fn try_from(entry: ApiKeyEntry) -> Result<Self, ApiKeyError> {
        if !is_key_name(&entry.name) {
            return Err(ApiKeyError::Name(entry.name));
        }
        let name = entry.name;
        let secret = match (entry.value_env, entry.sha256) {
            (Some(var), None) if !var.trim().is_empty() => KeySecret::Env(var),
            (None, Some(hex)) => match parse_sha256(&hex) {
                Some(digest) => KeySecret::Sha256(digest),
                None => {
                    return Err(ApiKeyError::Sha256 {
                        name,
                        length: hex.trim().len(),
                    });
                }
            },
            (Some(_), Some(_)) => return Err(ApiKeyError::BothSecrets(name)),
            _ => return Err(ApiKeyError::NoSecret(name)),
        };
        if entry.tools.as_ref().is_some_and(Vec::is_empty) {
            return Err(ApiKeyError::NoTools(name));
        }
        let globs = entry.tools.iter().flatten().chain(&entry.deny_tools);
        if let Some(empty) = globs.into_iter().find(|g| g.trim().is_empty()) {
            return Err(ApiKeyError::EmptyGlob {
                glob: empty.clone(),
                name,
            });
        }
        Ok(ApiKeyConfig {
            name,
            secret,
            tools: entry.tools,
            deny_tools: entry.deny_tools,
        })
    }
}

impl From<ApiKeyConfig> for ApiKeyEntry {
    fn from(key: ApiKeyConfig) -> Self {
        let (value_env, sha256) = match key.secret {
            KeySecret::Env(var) => (Some(var), None),
            KeySecret::Sha256(digest) => (
                None,
                Some(digest.iter().map(|b| format!("{b:02x}")).collect()),
            ),
        };
        ApiKeyEntry {
            name: key.name,
            value_env,
            sha256,
            tools: key.tools,
            deny_tools: key.deny_tools,
        }
    }
}

/// `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`
fn is_key_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    first_ok && rest_ok && name.len() <= 64
}

/// 64 hex digits, either case, into the digest; `None` when it is not that.
fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut digest = [0u8; 32];
    for (i, byte) in digest.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("checked hex");
    }
    Some(digest)
}

/// The names of the keys of the older form (`api_keys_enabled` + `api_keys_env`), by position.
pub fn legacy_key_name(position: usize) -> String {
    format!("key-{}", position + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<ApiKeyConfig, serde_saphyr::Error> {
        serde_saphyr::from_str::<ApiKeyConfig>(yaml)
    }

    #[test]
    fn a_key_from_the_environment_or_its_digest() {
        let k = read("{ name: ci, value_env: CI_KEY, tools: ['get-*'], deny_tools: [get-env] }")
            .unwrap();
        assert_eq!(k.secret, KeySecret::Env("CI_KEY".into()));
        assert_eq!(k.tools, Some(vec!["get-*".to_owned()]));
        assert_eq!(k.deny_tools, vec!["get-env".to_owned()]);
        let hex = "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08";
        let k = read(&format!("{{ name: alice.ops, sha256: {hex} }}")).unwrap();
        let KeySecret::Sha256(digest) = k.secret else {
            panic!()
        };
        assert_eq!(digest[0], 0x9f);
        assert_eq!(digest[31], 0x08);
        assert_eq!(k.tools, None);
        // Written back as it reads.
        let back = serde_json::to_value(ApiKeyEntry::from(k)).unwrap();
        assert_eq!(back["sha256"], hex.to_lowercase());
    }

    #[test]
    fn entries_that_cannot_work_are_refused() {
        for (yaml, says) in [
            ("{ name: ci }", "needs value_env"),
            ("{ name: ci, value_env: '  ' }", "needs value_env"),
            ("{ name: ci, value_env: A, sha256: ab }", "not both"),
            ("{ name: ci, sha256: abc }", "64 hex digits"),
            (
                "{ name: ci, sha256: \"zz86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\" }",
                "64 hex digits",
            ),
            ("{ name: 'a key', value_env: A }", "must match"),
            ("{ name: '-a', value_env: A }", "must match"),
            (
                "{ name: ci, value_env: A, tools: [] }",
                "would allow no tool",
            ),
            ("{ name: ci, value_env: A, deny_tools: [''] }", "is empty"),
            ("{ name: ci, value: secret }", "unknown field"),
        ] {
            let e = read(yaml).unwrap_err().to_string();
            assert!(e.contains(says), "{yaml}: {e}");
        }
    }
}
