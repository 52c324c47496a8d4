//! The databases and HTTP APIs that providers depend on: one connection (pool, client) per
//! entry of `dependencies`, shared by every provider of the service that names it, each with
//! its health check and the record of its last success.

pub mod bolt;
pub mod credentials;
pub mod http;
pub mod outlier;

use crate::sync::Unpoisoned;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use contract::{DependencyState, DependencyStatus};

use crate::config::{DependencyConfig, ServiceConfig};

/// A built dependency.
#[derive(Clone)]
pub enum Dependency {
    Bolt(Arc<bolt::BoltDependency>),
    Http(Arc<http::HttpDependency>),
}

/// Why a dependency could not be built.
#[derive(Debug, thiserror::Error)]
#[error("dependency '{name}': {message}")]
pub struct DependencyError {
    pub name: String,
    pub message: String,
}

/// Builds every dependency of a service. Nothing connects yet.
pub fn build_all(config: &ServiceConfig) -> Result<BTreeMap<String, Dependency>, DependencyError> {
    let call_timeout = config.limits.call_timeout;
    config
        .dependencies
        .iter()
        .map(|(name, entry)| {
            let built = match &entry.value {
                DependencyConfig::Bolt(bolt) => {
                    Dependency::Bolt(Arc::new(bolt::BoltDependency::new(name, bolt)?))
                }
                DependencyConfig::Http(api) => Dependency::Http(Arc::new(
                    http::HttpDependency::new(name, api, call_timeout)?,
                )),
            };
            Ok((name.clone(), built))
        })
        .collect()
}

/// The outcome of the last checks of one dependency: what /health shows between checks.
#[derive(Default)]
pub struct HealthRecord {
    last_ok: Mutex<Option<String>>,
}

impl HealthRecord {
    pub fn ok(&self, started: Instant) -> DependencyStatus {
        let now = crate::clock::timestamp();
        *self.last_ok.write_unpoisoned() = Some(now.clone());
        DependencyStatus {
            status: DependencyState::Connected,
            response_time_ms: Some(started.elapsed().as_millis() as u64),
            error: None,
            last_ok: Some(now),
            checked_at: None,
        }
    }

    pub fn failed(&self, started: Instant, error: String) -> DependencyStatus {
        DependencyStatus {
            status: DependencyState::Unavailable,
            response_time_ms: Some(started.elapsed().as_millis() as u64),
            error: Some(error),
            last_ok: self.last_ok.write_unpoisoned().clone(),
            checked_at: None,
        }
    }
}
