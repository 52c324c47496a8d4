//! The settings a request reads (the configuration and what is derived from it once, such as
//! the accepted API keys), replaced as a whole on reload.

use super::keys::KeyRing;
use crate::config::ServiceConfig;

/// The settings a request reads, replaced together on reload.
pub struct Settings {
    pub config: ServiceConfig,
    /// The accepted API keys (values read from the environment when the settings were made).
    pub keys: KeyRing,
}

impl Settings {
    pub fn new(config: ServiceConfig) -> Self {
        for warning in &config.warnings {
            tracing::warn!(service = %config.service.name, "{warning}");
        }
        for notice in &config.notices {
            tracing::info!(service = %config.service.name, "{notice}");
        }
        let keys = KeyRing::from_config(config.service.name.as_str(), &config.security);
        Settings { config, keys }
    }

    /// Whether a browser origin is one of `security.allowed_origins`: it gets CORS answers
    /// and may send state-changing requests (`http/hosts.rs`, `http/cors.rs`).
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.config
            .security
            .origins()
            .iter()
            .any(|rule| rule.allows(origin))
    }
}
