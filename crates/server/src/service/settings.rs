//! The settings a request reads (the configuration and what is derived from it once, such as
//! the accepted API keys), replaced as a whole on reload.

use crate::config::ServiceConfig;

/// The settings a request reads, replaced together on reload.
pub struct Settings {
    pub config: ServiceConfig,
    /// The accepted keys in the order the variable lists them; a key's client name is
    /// `key-<position>`, so logs and rate limits can tell callers apart without the secret.
    pub api_keys: Vec<String>,
}

impl Settings {
    pub fn new(config: ServiceConfig) -> Self {
        let api_keys = if config.security.api_keys_enabled {
            std::env::var(&config.security.api_keys_env)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect()
        } else {
            Vec::new()
        };
        for warning in &config.warnings {
            tracing::warn!(service = %config.service.name, "{warning}");
        }
        if config.security.api_keys_enabled && api_keys.is_empty() {
            tracing::warn!(
                service = %config.service.name,
                "security.api_keys_enabled is set but {} holds no key: every request but /health will answer 401",
                config.security.api_keys_env
            );
        }
        Settings { config, api_keys }
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
