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
    pub(super) fn new(config: ServiceConfig) -> Self {
        let keys = KeyRing::from_config(config.service.name.as_str(), &config.security);
        Settings { config, keys }
    }

    /// The CORS rule: the configured origins, or any loopback origin on any port.
    pub fn allows_origin(&self, origin: &str) -> bool {
        if self.config.security.cors_origins.is_empty() {
            is_loopback_origin(origin)
        } else {
            self.config
                .security
                .cors_origins
                .iter()
                .any(|o| o == origin || o == "*")
        }
    }
}

fn is_loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix("[::1]") {
        Some(after) => return after.is_empty() || after.strip_prefix(':').is_some_and(is_port),
        None => rest,
    };
    let (host, port) = match host.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (host, None),
    };
    (host == "localhost" || host == "127.0.0.1") && port.is_none_or(is_port)
}

fn is_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins_any_port() {
        for ok in [
            "http://localhost",
            "http://localhost:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:5173",
        ] {
            assert!(is_loopback_origin(ok), "{ok}");
        }
        for bad in [
            "http://localhost.evil.com",
            "http://example.com",
            "null",
            "http://127.0.0.1:abc",
            "file://x",
        ] {
            assert!(!is_loopback_origin(bad), "{bad}");
        }
    }
}
