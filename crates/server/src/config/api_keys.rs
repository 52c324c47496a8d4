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

impl TryFrom<ApiKeyEntry> for ApiKeyConfig {
    type Error = String;

    fn try_from(entry: ApiKeyEntry) -> Result<Self, String> {
        check_key_name(&entry.name)?;
        let name = entry.name;
        let secret = match (entry.value_env, entry.sha256) {
            (Some(var), None) if !var.trim().is_empty() => KeySecret::Env(var),
            (None, Some(hex)) => KeySecret::Sha256(
                parse_sha256(&hex).map_err(|m| format!("api key '{name}': sha256 {m}"))?,
            ),
            (Some(_), Some(_)) => {
                return Err(format!(
                    "api key '{name}': give value_env or sha256, not both"
                ));
            }
            _ => {
                return Err(format!(
                    "api key '{name}' needs value_env (an environment variable holding the key) or sha256 (the key's SHA-256, 64 hex digits)"
                ));
            }
        };
        if entry.tools.as_ref().is_some_and(Vec::is_empty) {
            return Err(format!(
                "api key '{name}': `tools: []` would allow no tool; leave `tools` out to allow every tool"
            ));
        }
        let globs = entry.tools.iter().flatten().chain(&entry.deny_tools);
        if let Some(empty) = globs.into_iter().find(|g| g.trim().is_empty()) {
            return Err(format!(
                "api key '{name}': tool glob '{empty}' is empty; write a name or a pattern with * and ?"
            ));
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

fn check_key_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if first_ok && rest_ok && name.len() <= 64 {
        Ok(())
    } else {
        Err(format!(
            "api key name '{name}' must match ^[A-Za-z0-9][A-Za-z0-9_.-]{{0,63}}$ (it appears in logs and metrics)"
        ))
    }
}

/// 64 hex digits, either case, into the digest.
fn parse_sha256(hex: &str) -> Result<[u8; 32], String> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "must be 64 hex digits (the output of `printf %s KEY | sha256sum`), got {} characters",
            hex.len()
        ));
    }
    let mut digest = [0u8; 32];
    for (i, byte) in digest.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("checked hex");
    }
    Ok(digest)
}

/// The names of the keys of the older form (`api_keys_enabled` + `api_keys_env`), by position.
pub fn legacy_key_name(position: usize) -> String {
    format!("key-{}", position + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<ApiKeyConfig, String> {
        serde_saphyr::from_str::<ApiKeyConfig>(yaml).map_err(|e| e.to_string())
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
            let e = read(yaml).unwrap_err();
            assert!(e.contains(says), "{yaml}: {e}");
        }
    }
}
