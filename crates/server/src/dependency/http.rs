//! An HTTP API: its base URL, the key and headers sent with every request, the credentials
//! its `auth` gets per request, and its health check (a GET of `health_path`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use contract::DependencyStatus;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};

use super::credentials::Credentials;
use super::{DependencyError, HealthRecord};
use crate::config::{HttpApiConfig, expand_env};

/// The health check's own bound, for the background checks. /health bounds every check to one
/// second and reports a slower one as `unknown`: this one only ends checks nobody waits for.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpDependency {
    pub name: String,
    pub base_url: String,
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
        let base_url = expand_env(&config.base_url).map_err(|e| error(e.to_string()))?;
        reqwest::Url::parse(&base_url).map_err(|e| error(format!("base_url '{base_url}': {e}")))?;
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
            base_url: base_url.trim_end_matches('/').to_owned(),
            health_path: config.health_path.clone().unwrap_or_else(|| "/".into()),
            client,
            credentials,
            record: HealthRecord::default(),
        })
    }

    /// `base_url` + `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// GET `health_path`: any answer below 500 means the API is there.
    pub async fn check(&self) -> DependencyStatus {
        let started = Instant::now();
        let url = self.url(&self.health_path);
        match self.client.get(&url).timeout(CHECK_TIMEOUT).send().await {
            Ok(response) if response.status().as_u16() < 500 => self.record.ok(started),
            Ok(response) => self.record.failed(
                started,
                format!("GET {} answered {}", self.health_path, response.status()),
            ),
            Err(e) => self
                .record
                .failed(started, format!("GET {url}: {}", without_url(&e))),
        }
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
