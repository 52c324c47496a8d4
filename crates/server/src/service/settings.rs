//! The settings a request reads (the configuration and what is derived from it once, such as
//! the accepted API keys and the OAuth token verifier), replaced as a whole on reload.

use std::sync::Arc;

use super::keys::KeyRing;
use super::oauth::OAuthVerifier;
use crate::config::ServiceConfig;

/// The settings a request reads, replaced together on reload.
pub struct Settings {
    pub config: ServiceConfig,
    /// The accepted API keys (values read from the environment when the settings were made).
    pub keys: KeyRing,
    /// Checks bearer tokens when `security.oauth` is set.
    pub oauth: Option<Arc<OAuthVerifier>>,
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
        let oauth = config
            .security
            .oauth
            .as_ref()
            .map(|c| Arc::new(OAuthVerifier::new(c)));
        Settings {
            config,
            keys,
            oauth,
        }
    }

    /// New settings on reload: an unchanged `security.oauth` keeps its verifier (and the
    /// issuer's keys it fetched).
    pub fn renewed(config: ServiceConfig, previous: &Settings) -> Self {
        let kept = previous
            .oauth
            .as_ref()
            .filter(|v| config.security.oauth.as_ref() == Some(v.config()))
            .cloned();
        let mut settings = Settings::new(config);
        if kept.is_some() {
            settings.oauth = kept;
        }
        settings
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
