//! The registry of services (`config/services.yaml`): which services there are, where they
//! answer, and whether tools like this generator should use them.

use std::path::Path;

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    pub services: Vec<Entry>,
}

#[derive(Debug, Clone, Deserialize)]
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
    pub fn load(path: &Path) -> Result<Registry, RegistryError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RegistryError::Read {
            path: shown.clone(),
            source,
        })?;
        let registry: Registry =
            serde_saphyr::from_str(&text).map_err(|e| RegistryError::Invalid {
                path: shown.clone(),
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
                    path: shown,
                    message: format!(
                        "service name '{}' must be letters, digits, '.', '_' or '-'",
                        entry.name
                    ),
                });
            }
        }
        Ok(registry)
    }

    /// The services to generate: those named (enabled or not), else every enabled one.
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
    fn the_shipped_registry_loads_and_selects() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/services.yaml");
        let registry = Registry::load(&path).unwrap();
        assert!(registry.services.iter().any(|s| s.name == "code-graph-rag"));
        assert_eq!(
            registry.select(&["seekr".into()]).unwrap()[0].url,
            "http://127.0.0.1:8002"
        );
        assert!(registry.select(&["nope".into()]).is_err());
    }

    #[test]
    fn names_that_are_not_folder_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("services.yaml");
        std::fs::write(&path, "services:\n  - { name: ../x, url: \"http://h\" }\n").unwrap();
        assert!(
            Registry::load(&path)
                .unwrap_err()
                .to_string()
                .contains("'../x'")
        );
    }
}
