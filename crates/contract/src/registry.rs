//! The registry of services (`config/services.yaml`): which services there are, where they
//! answer, and whether tools (the wrapper generator, the services manager) should use them.
//! Parsed here, from text, so every reader of the file — the gateway's `registry list`, the
//! wrapper generator — applies the same rules.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    pub services: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub name: String,
    pub url: String,
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
}

fn enabled_by_default() -> bool {
    true
}

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
    #[error("no service named '{0}' in the registry (known: {1})")]
    Unknown(String, String),
}

impl Registry {
    /// Parses a registry's text; `shown` names the file in messages.
    pub fn parse(text: &str, shown: &str) -> Result<Registry, RegistryError> {
        let registry: Registry =
            serde_saphyr::from_str(text).map_err(|e| RegistryError::Invalid {
                path: shown.to_owned(),
                message: e.to_string(),
            })?;
        for entry in &registry.services {
            // The name becomes a folder and a file name.
            let safe = !entry.name.is_empty()
                && !entry.name.starts_with('.')
                && entry
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
            if !safe {
                return Err(RegistryError::Invalid {
                    path: shown.to_owned(),
                    message: format!(
                        "service name '{}' must be letters, digits, '.', '_' or '-'",
                        entry.name
                    ),
                });
            }
        }
        Ok(registry)
    }

    /// The services to use: those named (enabled or not), else every enabled one.
    pub fn select(&self, names: &[String]) -> Result<Vec<Entry>, RegistryError> {
        if names.is_empty() {
            return Ok(self
                .services
                .iter()
                .filter(|s| s.enabled)
                .cloned()
                .collect());
        }
        names
            .iter()
            .map(|name| {
                self.services
                    .iter()
                    .find(|s| &s.name == name)
                    .cloned()
                    .ok_or_else(|| {
                        let known: Vec<&str> =
                            self.services.iter().map(|s| s.name.as_str()).collect();
                        RegistryError::Unknown(name.clone(), known.join(", "))
                    })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_registry_parses_and_selects() {
        let text = include_str!("../../../config/services.yaml");
        let registry = Registry::parse(text, "services.yaml").unwrap();
        assert!(registry.services.iter().any(|s| s.name == "code-graph-rag"));
        assert_eq!(
            registry.select(&["seekr".into()]).unwrap()[0].url,
            "http://127.0.0.1:8002"
        );
        assert!(registry.select(&["nope".into()]).is_err());
    }

    #[test]
    fn names_that_are_not_folder_names_are_refused() {
        // Each breaks one rule: a character outside the set, a hidden name, no name at all.
        for name in ["../x", ".hidden", "a b", "\"\""] {
            let text = format!("services:\n  - {{ name: {name}, url: \"http://h\" }}\n");
            let shown = name.trim_matches('"');
            let error = Registry::parse(&text, "s.yaml").unwrap_err().to_string();
            assert!(error.contains(&format!("'{shown}'")), "{name}: {error}");
        }
        let text = "services:\n  - { name: a.b_c-1, url: \"http://h\" }\n";
        assert!(Registry::parse(text, "s.yaml").is_ok());
    }

    #[test]
    fn block_style_and_disabled_entries() {
        let text = "services:\n  - name: a\n    url: \"http://h:1\"\n    enabled: false\n  - name: b\n    url: \"http://h:2\"\n";
        let registry = Registry::parse(text, "s.yaml").unwrap();
        assert!(!registry.services[0].enabled);
        assert!(registry.services[1].enabled);
        assert_eq!(registry.select(&[]).unwrap().len(), 1);
    }
}
