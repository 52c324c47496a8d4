//! The accepted API keys of a service, built from `security.api_keys` (and the older
//! `api_keys_enabled` + `api_keys_env`) when the settings are: each key kept only as the
//! SHA-256 of its value, with the client it identifies (name and scope).
//!
//! A presented key is hashed once and its digest compared with every key's in constant time,
//! with no early exit, so neither the time nor the order of the keys says how close a guess
//! was or which key matched. Hashing both sides also makes every comparison 32 bytes long,
//! whatever the keys' lengths.

use std::sync::Arc;

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

use super::client::{Client, ToolScope};
use crate::config::{KeySecret, SecuritySection, legacy_key_name};

/// The keys a request may present.
#[derive(Default)]
pub struct KeyRing {
    keys: Vec<AcceptedKey>,
}

struct AcceptedKey {
    digest: [u8; 32],
    client: Client,
}

impl KeyRing {
    /// The configured keys, values read from the environment now. A key whose variable is
    /// unset or empty is left out with a warning (it could only ever be refused).
    pub fn from_config(service: &str, security: &SecuritySection) -> KeyRing {
        let mut keys = Vec::new();
        for key in security.api_keys.iter().map(|k| &k.value) {
            let scope = ToolScope::of(key).map(Arc::new);
            let digest = match &key.secret {
                KeySecret::Sha256(digest) => *digest,
                KeySecret::Env(var) => match std::env::var(var) {
                    Ok(value) if !value.trim().is_empty() => digest_of(value.trim()),
                    _ => {
                        tracing::warn!(
                            service,
                            key = %key.name,
                            "api key '{}': environment variable {var} is unset or empty; the key is refused until it is set (then reload)",
                            key.name
                        );
                        continue;
                    }
                },
            };
            keys.push(AcceptedKey {
                digest,
                client: Client::of_key(&key.name, scope),
            });
        }
        if security.api_keys_enabled {
            let values = std::env::var(&security.api_keys_env).unwrap_or_default();
            let legacy: Vec<&str> = values
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .collect();
            if legacy.is_empty() {
                tracing::warn!(
                    service,
                    "security.api_keys_enabled is set but {} holds no key",
                    security.api_keys_env
                );
            }
            for (position, value) in legacy.into_iter().enumerate() {
                keys.push(AcceptedKey {
                    digest: digest_of(value),
                    client: Client::of_key(&legacy_key_name(position), None),
                });
            }
        }
        if security.keys_required() && keys.is_empty() {
            tracing::warn!(
                service,
                "API keys are required but none is usable: every request but security.public_routes will answer 401"
            );
        }
        KeyRing { keys }
    }

    /// The client a presented key identifies, or `None` when it is no accepted key.
    pub fn identify(&self, presented: &str) -> Option<Client> {
        let digest = digest_of(presented);
        // Every key is compared; the index of the match (if any) is selected without a branch.
        let mut found = subtle::CtOption::new(0u32, 0u8.into());
        for (i, key) in self.keys.iter().enumerate() {
            let equal = key.digest.ct_eq(&digest);
            let first = equal & !found.is_some();
            let index = u32::conditional_select(&found.unwrap_or(0), &(i as u32), first);
            found = subtle::CtOption::new(index, found.is_some() | equal);
        }
        let index: Option<u32> = found.into();
        index.map(|i| self.keys[i as usize].client.clone())
    }

    /// How many keys are usable.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.len()
    }
}

fn digest_of(value: &str) -> [u8; 32] {
    Sha256::digest(value.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `printf %s test | sha256sum`, as docs/security.md tells an operator to make it: the key
    /// "test".
    const TEST_DIGEST: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn ring(yaml: &str) -> KeyRing {
        let security: SecuritySection = serde_saphyr::from_str(yaml).unwrap();
        KeyRing::from_config("t", &security)
    }

    #[test]
    fn keys_from_the_environment_from_digests_and_the_older_form() {
        // SAFETY of the test: variables only this test reads.
        unsafe {
            std::env::set_var("MHG_UNIT_KEY_A", "alpha-secret");
            std::env::set_var("MHG_UNIT_KEYS_OLD", " old-one , ,old-two");
            std::env::remove_var("MHG_UNIT_KEY_UNSET");
        }
        let digest = TEST_DIGEST;
        let ring = ring(&format!(
            "api_keys:\n  - {{ name: alpha, value_env: MHG_UNIT_KEY_A, tools: ['get-*'] }}\n  - {{ name: beta, sha256: {digest} }}\n  - {{ name: gone, value_env: MHG_UNIT_KEY_UNSET }}\napi_keys_enabled: true\napi_keys_env: MHG_UNIT_KEYS_OLD\n"
        ));
        assert_eq!(ring.len(), 4, "the unset key is left out");
        let alpha = ring.identify("alpha-secret").unwrap();
        assert_eq!(alpha.as_str(), "alpha");
        assert!(alpha.may_use("get-sum") && !alpha.may_use("echo"));
        let beta = ring.identify("test").unwrap();
        assert_eq!(beta.as_str(), "beta");
        assert!(beta.scope().is_none());
        assert_eq!(ring.identify("old-two").unwrap().as_str(), "key-2");
        assert_eq!(ring.identify("old-one").unwrap().as_str(), "key-1");
        for wrong in ["", "alpha-secre", "alpha-secret2", "ALPHA-SECRET", digest] {
            assert!(ring.identify(wrong).is_none(), "{wrong}");
        }
    }

    #[test]
    fn a_blank_variable_is_no_key_and_a_value_is_read_trimmed() {
        // SAFETY of the test: variables only this test reads.
        unsafe {
            std::env::set_var("MHG_UNIT_KEY_BLANK", "  ");
            std::env::set_var("MHG_UNIT_KEY_PADDED", " padded \n");
        }
        let ring = ring(
            "api_keys:\n  - { name: blank, value_env: MHG_UNIT_KEY_BLANK }\n  - { name: padded, value_env: MHG_UNIT_KEY_PADDED }\n",
        );
        assert_eq!(ring.len(), 1);
        assert_eq!(ring.identify("padded").unwrap().as_str(), "padded");
        assert!(ring.identify("").is_none());
        assert!(ring.identify("  ").is_none());
    }

    #[test]
    fn of_two_keys_with_one_value_the_first_listed_identifies() {
        let digest = TEST_DIGEST;
        let ring = ring(&format!(
            "api_keys:\n  - {{ name: first, sha256: {digest} }}\n  - {{ name: second, sha256: {digest} }}\n  - {{ name: third, sha256: {digest} }}\n"
        ));
        assert_eq!(ring.identify("test").unwrap().as_str(), "first");
    }

    #[test]
    fn required_keys_of_which_none_is_usable_are_warned_of() {
        const WARNING: &str = "API keys are required but none is usable";
        // SAFETY of the test: a variable only this test reads.
        unsafe { std::env::remove_var("MHG_UNIT_KEY_NEVER_SET") };
        let (_logging, lines) = crate::logging::capture();
        let none = ring("api_keys:\n  - { name: gone, value_env: MHG_UNIT_KEY_NEVER_SET }\n");
        assert_eq!(none.len(), 0);
        assert!(lines.text().contains(WARNING), "{}", lines.text());

        let (_logging, lines) = crate::logging::capture();
        let digest = TEST_DIGEST;
        ring(&format!(
            "api_keys:\n  - {{ name: ok, sha256: {digest} }}\n"
        ));
        ring("public_routes: [/health]\n");
        assert!(!lines.text().contains(WARNING), "{}", lines.text());
    }

    #[test]
    fn no_keys_identify_nothing() {
        assert!(KeyRing::default().identify("").is_none());
        assert!(KeyRing::default().identify("x").is_none());
    }
}
