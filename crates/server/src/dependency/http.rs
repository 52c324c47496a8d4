//! An HTTP API: its base URLs (endpoints, each serving the same API, with their rotation and
//! outlier ejection), the key and headers sent with every request, the credentials its `auth`
//! gets per request, and its health check (a GET of `health_path` on every endpoint).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use contract::{DependencyState, DependencyStatus, EndpointReport};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use super::credentials::Credentials;
use super::{DependencyError, HealthRecord};
use crate::config::{HttpApiConfig, OutlierConfig, expand_env};
use crate::dependency::outlier::{self, Ended, OutlierRecord, least_loaded, now_ms};
use crate::sync::Unpoisoned;

/// The health check's own bound, for the background checks. /health bounds every check to one
/// second and reports a slower one as `unknown`: this one only ends checks nobody waits for.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpDependency {
    pub name: String,
    /// One per base URL, in the order configured.
    endpoints: Vec<Endpoint>,
    /// Where the next tie of least-loaded endpoints starts looking.
    next: AtomicUsize,
    health_path: String,
    pub client: reqwest::Client,
    /// The token to send with each call, when `auth` is set (else the static key, if any, is
    /// among the client's default headers).
    pub credentials: Option<Arc<Credentials>>,
    record: HealthRecord,
}

impl HttpDependency {
    pub fn new(
        name: &str,
        config: &HttpApiConfig,
        call_timeout: Duration,
    ) -> Result<HttpDependency, DependencyError> {
        let error = |message: String| DependencyError {
            name: name.to_owned(),
            message,
        };
        let endpoints = config
            .base_urls
            .iter()
            .map(|written| {
                let base_url = expand_env(written).map_err(|e| error(e.to_string()))?;
                let url = reqwest::Url::parse(&base_url)
                    .map_err(|e| error(format!("base_url '{base_url}': {e}")))?;
                Ok(Endpoint::new(&base_url, &url))
            })
            .collect::<Result<Vec<_>, DependencyError>>()?;
        let mut headers = HeaderMap::new();
        for (key, value) in &config.headers {
            let value = expand_env(value).map_err(|e| error(e.to_string()))?;
            let name = HeaderName::try_from(key.as_str())
                .map_err(|_| error(format!("'{key}' is not a header name")))?;
            let mut value = HeaderValue::try_from(value.as_str())
                .map_err(|_| error(format!("header '{key}' has an invalid value")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if let Some(var) = &config.api_key_env
            && let Ok(key) = std::env::var(var)
            && !key.is_empty()
        {
            let mut value = HeaderValue::try_from(format!("Bearer {key}"))
                .map_err(|_| error(format!("the key in {var} is not valid in a header")))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let credentials = match &config.auth {
            Some(auth) => Some(Arc::new(
                Credentials::new(name, auth).map_err(|e| error(e.to_string()))?,
            )),
            None => None,
        };
        let timeout = config.timeout.unwrap_or(call_timeout);
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(1).min(timeout))
            .build()
            .map_err(|e| error(e.to_string()))?;
        Ok(HttpDependency {
            name: name.to_owned(),
            endpoints,
            next: AtomicUsize::new(0),
            health_path: config.health_path.clone().unwrap_or_else(|| "/".into()),
            client,
            credentials,
            record: HealthRecord::default(),
        })
    }

    /// The endpoint the next call goes to: the one with the fewest calls in flight among
    /// those in rotation (ties go round in turn); an ejected one only when every one is.
    pub fn pick(&self) -> EndpointCall<'_> {
        let index = if self.endpoints.len() == 1 {
            0
        } else {
            let start = self.next.fetch_add(1, Ordering::Relaxed);
            let now = now_ms();
            let loads = |all: bool| -> Vec<Option<usize>> {
                self.endpoints
                    .iter()
                    .map(|e| {
                        (all || !e.outlier.ejected(now))
                            .then(|| e.in_flight.load(Ordering::Relaxed))
                    })
                    .collect()
            };
            least_loaded(&loads(false), start)
                .or_else(|| least_loaded(&loads(true), start))
                .unwrap_or(0)
        };
        let endpoint = &self.endpoints[index];
        endpoint.in_flight.fetch_add(1, Ordering::Relaxed);
        EndpointCall { endpoint, index }
    }

    /// A call on `call`'s endpoint ended: recorded, and the endpoint left out of rotation when
    /// it is an outlier (`config`, the calling provider's) and another stays in rotation.
    pub fn ended(&self, call: &EndpointCall<'_>, ended: Ended, config: &OutlierConfig) {
        if !config.enabled || self.endpoints.len() == 1 {
            return;
        }
        let others = self
            .endpoints
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != call.index)
            .map(|(_, e)| &e.outlier);
        if let Some((interval, why)) = outlier::judge(&call.endpoint.outlier, others, ended, config)
        {
            tracing::warn!(
                dependency = %self.name, endpoint = call.index + 1,
                address = %call.endpoint.address, ejected_ms = interval.as_millis() as u64,
                "endpoint left out of rotation: {why}; it gets calls again after the interval"
            );
        }
    }

    /// Each endpoint's state for /health, when there are several; empty for one.
    pub fn endpoints_report(&self) -> Vec<EndpointReport> {
        if self.endpoints.len() == 1 {
            return Vec::new();
        }
        let now = now_ms();
        self.endpoints
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let (ejected_for_ms, ejections) = e.outlier.state(now);
                let checked = e.checked.read_unpoisoned().clone();
                EndpointReport {
                    endpoint: k as u32 + 1,
                    address: e.address.clone(),
                    status: match &checked {
                        None => DependencyState::Unknown,
                        Some(Ok(())) => DependencyState::Connected,
                        Some(Err(_)) => DependencyState::Unavailable,
                    },
                    calls_in_flight: e.in_flight.load(Ordering::Relaxed) as u64,
                    ejected_for_ms,
                    ejections,
                    error: checked.and_then(Result::err),
                }
            })
            .collect()
    }

    /// GET `health_path` on every endpoint: any answer below 500 means it is there. The API
    /// is connected while one endpoint is; otherwise the error names each endpoint's failure.
    pub async fn check(&self) -> DependencyStatus {
        let started = Instant::now();
        let checks = self.endpoints.iter().map(|e| self.check_one(e));
        let failures: Vec<String> = futures::future::join_all(checks)
            .await
            .into_iter()
            .enumerate()
            .filter_map(|(k, result)| {
                let failure = result.err()?;
                Some(if self.endpoints.len() == 1 {
                    failure
                } else {
                    format!(
                        "endpoint {} ({}): {failure}",
                        k + 1,
                        self.endpoints[k].address
                    )
                })
            })
            .collect();
        if failures.len() < self.endpoints.len() {
            self.record.ok(started)
        } else {
            self.record.failed(started, failures.join("; "))
        }
    }

    async fn check_one(&self, endpoint: &Endpoint) -> Result<(), String> {
        let url = endpoint.url(&self.health_path);
        let result = match self.client.get(&url).timeout(CHECK_TIMEOUT).send().await {
            Ok(response) if response.status().as_u16() < 500 => Ok(()),
            Ok(response) => Err(format!(
                "GET {} answered {}",
                self.health_path,
                response.status()
            )),
            Err(e) => Err(format!("GET {url}: {}", without_url(&e))),
        };
        *endpoint.checked.write_unpoisoned() = Some(result.clone());
        result
    }
}

/// One base URL of an API, and what its calls say of it.
struct Endpoint {
    /// The base URL without a trailing `/`.
    base_url: String,
    /// `host:port`, as /health and the logs name it (never the path or query, which may hold
    /// a key).
    address: String,
    in_flight: AtomicUsize,
    outlier: OutlierRecord,
    /// Its last health check: `None` before the first.
    checked: std::sync::RwLock<Option<Result<(), String>>>,
}

impl Endpoint {
    fn new(base_url: &str, parsed: &reqwest::Url) -> Endpoint {
        let host = parsed.host_str().unwrap_or_default();
        Endpoint {
            base_url: base_url.trim_end_matches('/').to_owned(),
            address: match parsed.port_or_known_default() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            },
            in_flight: AtomicUsize::new(0),
            outlier: OutlierRecord::default(),
            checked: Default::default(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }
}

/// A call on one endpoint, counted among its calls in flight until dropped.
pub struct EndpointCall<'a> {
    endpoint: &'a Endpoint,
    index: usize,
}

impl EndpointCall<'_> {
    /// The endpoint's base URL + `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        self.endpoint.url(path)
    }
}

impl Drop for EndpointCall<'_> {
    fn drop(&mut self) {
        self.endpoint.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// reqwest's message without the URL it repeats (which may carry a key in its query).
pub fn without_url(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let source = std::error::Error::source(error)
        .map(|s| format!(": {s}"))
        .unwrap_or_default();
    format!("{kind}{source}")
}
