//! The registry of services as the generator reads it: the file's rules live in
//! [`contract::registry`]; this adds reading it from disk.

use std::path::Path;

pub use contract::registry::{Entry, Registry, RegistryError};

/// Reads and parses the registry at `path`.
pub fn load(path: &Path) -> Result<Registry, RegistryError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| RegistryError::Read {
        path: shown.clone(),
        source,
    })?;
    Registry::parse(&text, &shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_registry_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/services.yaml");
        assert!(load(&path).unwrap().services.len() >= 4);
        assert!(load(Path::new("/nonexistent/services.yaml")).is_err());
    }
}
