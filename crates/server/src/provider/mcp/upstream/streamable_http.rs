//! Reaching an MCP server over HTTP: the endpoint, the headers and credentials sent with it,
//! and the Streamable HTTP transport (a `url` ending in `/sse` goes to [`super::sse`] instead).

use std::collections::HashMap;
use std::sync::Arc;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::EndpointError;
use super::traced::TracedClient;
use super::wire::WireRequests;
use crate::config::{HttpTransport, expand_env};
use crate::dependency::credentials::Credentials;

/// The endpoint and headers, with `${VAR}` expanded, and the credentials `auth` gets.
#[derive(Clone)]
pub struct HttpSpec {
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The server's name, as errors about its credentials say it.
    pub provider: Arc<str>,
    /// The gateway's own token for this server (`auth`), shared by all its connections.
    pub credentials: Option<Arc<Credentials>>,
}

/// Header names only: their values are secrets as often as not.
impl std::fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSpec")
            .field("url", &self.redacted_url())
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("credentials", &self.credentials)
            .finish()
    }
}

impl HttpSpec {
    pub fn new(provider: &str, config: &HttpTransport) -> Result<HttpSpec, EndpointError> {
        let (url, headers) = (&config.url, &config.headers);
        let headers = headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand_env(v)?)))
            .collect::<Result<Vec<_>, EndpointError>>()?;
        for (name, value) in &headers {
            HeaderName::try_from(name.as_str())
                .map_err(|_| EndpointError::HeaderName(name.clone()))?;
            // The value is a secret as often as not: never echo it.
            HeaderValue::try_from(value.as_str())
                .map_err(|_| EndpointError::HeaderValue(name.clone()))?;
        }
        let credentials = match &config.auth {
            Some(auth) => Some(Arc::new(Credentials::new(provider, auth)?)),
            None => None,
        };
        Ok(HttpSpec {
            url: expand_env(url)?,
            headers,
            provider: Arc::from(provider),
            credentials,
        })
    }

    /// The URL without credentials or query, fit for logs and /health: either may hold a secret.
    pub fn redacted_url(&self) -> String {
        match reqwest::Url::parse(&self.url) {
            Ok(mut url) => {
                let _ = url.set_username("");
                let _ = url.set_password(None);
                url.set_query(None);
                url.set_fragment(None);
                url.to_string()
            }
            Err(_) => "<invalid url>".to_owned(),
        }
    }

    fn header_map(&self) -> HashMap<HeaderName, HeaderValue> {
        self.headers
            .iter()
            .filter_map(|(k, v)| {
                Some((
                    HeaderName::try_from(k.as_str()).ok()?,
                    HeaderValue::try_from(v.as_str()).ok()?,
                ))
            })
            .collect()
    }

    /// An HTTP client sending the configured headers with every request.
    pub fn client(&self) -> reqwest::Result<reqwest::Client> {
        reqwest::Client::builder()
            .default_headers(self.header_map().into_iter().collect())
            .build()
    }

    /// A Streamable HTTP transport; an upstream session that expires (404) is re-initialized
    /// and the requests it refused are sent again — rmcp's `reinit_on_expired_session`, safe
    /// because a 404 means the server never ran them.
    /// Requests carry their trace context as headers too ([`TracedClient`]), and the server's
    /// SSE events are shown to `wire` as they are read.
    pub fn transport(
        &self,
        wire: Arc<WireRequests>,
    ) -> reqwest::Result<StreamableHttpClientTransport<TracedClient>> {
        let headers = self.header_map();
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.clone())
            .custom_headers(headers)
            .reinit_on_expired_session(true);
        Ok(StreamableHttpClientTransport::with_client(
            TracedClient::new(self.provider.clone(), self.credentials.clone(), wire)?,
            config,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn redaction_drops_credentials_and_query() {
        let spec = HttpSpec::new(
            "p",
            &HttpTransport {
                url: "https://user:secret@mcp.example:8443/mcp?token=abc".into(),
                headers: BTreeMap::from([("X-Key".to_owned(), "header-secret".to_owned())]),
                auth: None,
            },
        )
        .unwrap();
        assert_eq!(spec.redacted_url(), "https://mcp.example:8443/mcp");
        let shown = format!("{spec:?}");
        assert!(
            !shown.contains("secret") && shown.contains("X-Key"),
            "{shown}"
        );
    }

    #[test]
    fn bad_header_values_are_refused_without_echoing_them() {
        let headers = BTreeMap::from([("X-Key".to_owned(), "line\nbreak-secret".to_owned())]);
        let error = HttpSpec::new(
            "p",
            &HttpTransport {
                url: "http://h/mcp".into(),
                headers,
                auth: None,
            },
        )
        .unwrap_err()
        .to_string();
        assert!(!error.contains("secret"), "{error}");
    }
}
