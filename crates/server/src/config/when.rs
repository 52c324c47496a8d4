//! `when:` on a provider entry: a condition on the environment that decides, when the file is
//! loaded, whether the entry is served at all. One file can then offer a real backend and a
//! built-in fallback (`env_set: X` on one, `env_unset: X` on the other), and /health says
//! which one serves and why (`providers` in the report).

use serde::{Deserialize, Serialize};

use super::types::optional_text;

/// The condition; every part given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// Served only when this environment variable is set and not empty.
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub env_set: Option<String>,
    /// Served only when this environment variable is unset or empty.
    #[serde(
        default,
        deserialize_with = "optional_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub env_unset: Option<String>,
}

impl When {
    /// Whether the entry is served in this environment, and the reason in words.
    pub fn holds(&self) -> (bool, String) {
        self.holds_in(|name| std::env::var(name).ok())
    }

    fn holds_in(&self, env: impl Fn(&str) -> Option<String>) -> (bool, String) {
        let set = |name: &str| env(name).is_some_and(|v| !v.is_empty());
        let mut reasons = Vec::new();
        let mut holds = true;
        if let Some(name) = &self.env_set {
            let is = set(name);
            holds &= is;
            reasons.push(format!("{name} is {}", if is { "set" } else { "not set" }));
        }
        if let Some(name) = &self.env_unset {
            let is = set(name);
            holds &= !is;
            reasons.push(format!("{name} is {}", if is { "set" } else { "not set" }));
        }
        (holds, reasons.join(", "))
    }

    /// A condition names at least one variable.
    pub fn check(&self) -> Result<(), WhenError> {
        if self.env_set.is_none() && self.env_unset.is_none() {
            return Err(WhenError::NoVariable);
        }
        Ok(())
    }
}

/// Why a `when` cannot decide anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhenError {
    #[error("`when` needs `env_set` or `env_unset`")]
    NoVariable,
}

/// An entry of `providers` and whether its `when` chose it, for /health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderChoice {
    pub name: String,
    pub kind: &'static str,
    pub serving: bool,
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_unset_are_opposites_and_empty_counts_as_unset() {
        let env = |name: &str| match name {
            "A" => Some("x".to_owned()),
            "E" => Some(String::new()),
            _ => None,
        };
        let set = |n: &str| When {
            env_set: Some(n.into()),
            env_unset: None,
        };
        let unset = |n: &str| When {
            env_set: None,
            env_unset: Some(n.into()),
        };
        assert_eq!(set("A").holds_in(env), (true, "A is set".into()));
        assert_eq!(unset("A").holds_in(env), (false, "A is set".into()));
        assert!(!set("E").holds_in(env).0);
        assert!(unset("E").holds_in(env).0);
        assert!(unset("B").holds_in(env).0);
        assert!(When::default().check().is_err());
    }
}
