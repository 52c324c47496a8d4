//! The issuer's metadata (RFC 8414, else OpenID Connect Discovery): where its keys are, and
//! the endpoints the OpenAPI document's flows name. Read from the configured issuer only, and
//! refused unless it names that issuer (a metadata document may not speak for another).

use serde::Deserialize;

/// What the gateway reads of an issuer's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct IssuerMetadata {
    pub issuer: String,
    #[serde(default)]
    pub jwks_uri: Option<String>,
    #[serde(default)]
    pub authorization_endpoint: Option<String>,
    #[serde(default)]
    pub token_endpoint: Option<String>,
}

/// The metadata URLs of `issuer`, in the order tried: RFC 8414's (the well-known part before
/// the issuer's path), then OpenID Connect's (after it).
fn metadata_urls(issuer: &str) -> Vec<String> {
    let Ok(url) = url::Url::parse(issuer) else {
        return Vec::new();
    };
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

/// Reads the issuer's metadata: the first of its two well-known documents that answers.
pub async fn discover(http: &reqwest::Client, issuer: &str) -> Result<IssuerMetadata, String> {
    let mut last = format!("{issuer} has no metadata URL");
    for url in metadata_urls(issuer) {
        let answer = match http.get(&url).send().await {
            Ok(answer) if answer.status().is_success() => answer,
            Ok(answer) => {
                last = format!("GET {url}: HTTP {}", answer.status().as_u16());
                continue;
            }
            Err(e) => {
                last = format!(
                    "GET {url}: {}",
                    if e.is_timeout() {
                        "timed out"
                    } else {
                        "could not connect"
                    }
                );
                continue;
            }
        };
        let metadata: IssuerMetadata = match answer.json().await {
            Ok(m) => m,
            Err(_) => {
                last = format!("GET {url}: not issuer metadata");
                continue;
            }
        };
        if metadata.issuer.trim_end_matches('/') != issuer {
            return Err(format!(
                "GET {url}: the metadata names issuer '{}', not '{issuer}'",
                metadata.issuer
            ));
        }
        return Ok(metadata);
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_8414_puts_the_well_known_part_first_and_oidc_after_the_path() {
        assert_eq!(
            metadata_urls("https://id.example"),
            [
                "https://id.example/.well-known/oauth-authorization-server",
                "https://id.example/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("http://127.0.0.1:9/realms/a"),
            [
                "http://127.0.0.1:9/.well-known/oauth-authorization-server/realms/a",
                "http://127.0.0.1:9/realms/a/.well-known/openid-configuration"
            ]
        );
    }
}
