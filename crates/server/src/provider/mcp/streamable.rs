//! Reaching an MCP server over Streamable HTTP: the endpoint and the headers sent with it.

use std::collections::{BTreeMap, HashMap};

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use crate::config::expand_env;

/// The endpoint and headers, with `${VAR}` expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpSpec {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

impl HttpSpec {
    pub fn new(url: &str, headers: &BTreeMap<String, String>) -> Result<HttpSpec, String> {
        let headers = headers
            .iter()
            .map(|(k, v)| Ok((k.clone(), expand_env(v)?)))
            .collect::<Result<Vec<_>, String>>()?;
        for (name, value) in &headers {
            HeaderName::try_from(name.as_str())
                .map_err(|_| format!("'{name}' is not a valid HTTP header name"))?;
            // The value is a secret as often as not: never echo it.
            HeaderValue::try_from(value.as_str())
                .map_err(|_| format!("header '{name}' has a value that is not valid in HTTP"))?;
        }
        Ok(HttpSpec {
            url: expand_env(url)?,
            headers,
        })
    }

    pub fn transport(&self) -> StreamableHttpClientTransport<reqwest::Client> {
        let headers: HashMap<HeaderName, HeaderValue> = self
            .headers
            .iter()
            .filter_map(|(k, v)| {
                Some((
                    HeaderName::try_from(k.as_str()).ok()?,
                    HeaderValue::try_from(v.as_str()).ok()?,
                ))
            })
            .collect();
        let config =
            StreamableHttpClientTransportConfig::with_uri(self.url.clone()).custom_headers(headers);
        StreamableHttpClientTransport::from_config(config)
    }
}
