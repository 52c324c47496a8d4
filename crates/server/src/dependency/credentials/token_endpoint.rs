//! One token request to an upstream's issuer (RFC 6749 3.2, 4.4; RFC 8693 2): the form, the
//! client's authentication (HTTP Basic or in the form), the answer read as a token or as the
//! issuer's error, and a few retries with backoff when the issuer cannot be reached or fails
//! (5xx). A refusal (4xx) is not retried: asking again gets the same answer.

use std::time::Duration;

use base64::Engine;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;

use super::AccessToken;
use crate::config::{ClientAuthMethod, OAuthClient, TokenTarget};

/// Attempts per token request (the first and two retries).
pub const MAX_ATTEMPTS: u32 = 3;
/// The wait before the first retry; doubled before each next one.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// One attempt's bound: the call waiting for it has its own.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a token whose answer gives no `expires_in` is used (RFC 6749 5.1 leaves it to the
/// issuer's documentation; a 401 gets a fresh one sooner).
pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);

pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";

/// The grant a request asks with.
pub enum Grant<'a> {
    ClientCredentials,
    /// RFC 8693: the caller's own access token, for one meant for the upstream.
    TokenExchange {
        subject_token: &'a str,
    },
}

/// A token as the issuer gave it.
#[derive(Debug)]
pub struct Issued {
    pub token: AccessToken,
    pub lifetime: Duration,
}

/// Why no token came from the issuer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("cannot reach it ({attempts} attempts): {why}")]
    Unreachable { attempts: u32, why: String },
    #[error("it answered {status} ({attempts} attempts)")]
    Failing { status: u16, attempts: u32 },
    #[error("it refused the request ({status} {error}{})", description.as_ref().map(|d| format!(": {d}")).unwrap_or_default())]
    Refused {
        status: u16,
        error: String,
        description: Option<String>,
    },
    #[error("its answer is not a usable token response: {0}")]
    BadAnswer(String),
}

/// The client secret: never printed.
#[derive(Clone)]
pub struct ClientSecret(String);

impl ClientSecret {
    pub fn new(secret: String) -> ClientSecret {
        ClientSecret(secret)
    }
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientSecret(<redacted>)")
    }
}

/// An issuer's token endpoint as the gateway's client uses it.
#[derive(Debug)]
pub struct TokenEndpoint {
    pub url: reqwest::Url,
    client_id: String,
    secret: ClientSecret,
    method: ClientAuthMethod,
    target: TokenTarget,
    http: reqwest::Client,
}

impl TokenEndpoint {
    pub fn new(
        url: reqwest::Url,
        client: &OAuthClient,
        secret: ClientSecret,
        target: &TokenTarget,
    ) -> reqwest::Result<TokenEndpoint> {
        // No redirects: the client's secret goes to the configured endpoint and nowhere else.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(2))
            .timeout(ATTEMPT_TIMEOUT)
            .build()?;
        Ok(TokenEndpoint {
            url,
            client_id: client.client_id.clone(),
            secret,
            method: client.method,
            target: target.clone(),
            http,
        })
    }

    /// The endpoint without credentials or query, for messages.
    pub fn shown(&self) -> String {
        let mut url = self.url.clone();
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.set_query(None);
        url.set_fragment(None);
        url.to_string()
    }

    /// The form body (`application/x-www-form-urlencoded`) and, for client_secret_basic, the
    /// `Authorization` value.
    pub fn form(&self, grant: &Grant<'_>) -> (String, Option<HeaderValue>) {
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        match grant {
            Grant::ClientCredentials => {
                form.append_pair("grant_type", "client_credentials");
            }
            Grant::TokenExchange { subject_token } => {
                form.append_pair("grant_type", TOKEN_EXCHANGE_GRANT);
                form.append_pair("subject_token", subject_token);
                form.append_pair("subject_token_type", ACCESS_TOKEN_TYPE);
                form.append_pair("requested_token_type", ACCESS_TOKEN_TYPE);
            }
        }
        let t = &self.target;
        for (key, value) in [
            ("scope", &t.scope),
            ("resource", &t.resource),
            ("audience", &t.audience),
        ] {
            if let Some(value) = value {
                form.append_pair(key, value);
            }
        }
        let basic = match self.method {
            ClientAuthMethod::ClientSecretPost => {
                form.append_pair("client_id", &self.client_id);
                form.append_pair("client_secret", &self.secret.0);
                None
            }
            ClientAuthMethod::ClientSecretBasic => {
                // RFC 6749 2.3.1: each part form-encoded before they are joined.
                let encode = |s: &str| {
                    url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>()
                };
                let pair = format!("{}:{}", encode(&self.client_id), encode(&self.secret.0));
                let value = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(pair)
                );
                HeaderValue::try_from(value).ok().map(|mut v| {
                    v.set_sensitive(true);
                    v
                })
            }
        };
        (form.finish(), basic)
    }

    /// Asks for a token, retrying while the issuer cannot be reached or fails.
    pub async fn request(&self, grant: Grant<'_>) -> Result<Issued, TokenError> {
        let (body, basic) = self.form(&grant);
        let exchange = matches!(grant, Grant::TokenExchange { .. });
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            let mut request = self
                .http
                .post(self.url.clone())
                .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(ACCEPT, "application/json")
                .body(body.clone());
            if let Some(basic) = &basic {
                request = request.header(AUTHORIZATION, basic.clone());
            }
            let retry = match request.send().await {
                Ok(response) if response.status().is_server_error() => TokenError::Failing {
                    status: response.status().as_u16(),
                    attempts: attempt,
                },
                Ok(response) => {
                    let status = response.status().as_u16();
                    let text = response
                        .text()
                        .await
                        .map_err(|e| TokenError::BadAnswer(super::super::http::without_url(&e)))?;
                    return read_answer(status, &text, exchange);
                }
                Err(e) => TokenError::Unreachable {
                    attempts: attempt,
                    why: super::super::http::without_url(&e),
                },
            };
            if attempt >= MAX_ATTEMPTS {
                return Err(retry);
            }
            tokio::time::sleep(backoff).await;
            backoff *= 2;
            attempt += 1;
        }
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<f64>,
    #[serde(default)]
    issued_token_type: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// The issuer's answer: a Bearer token and its lifetime, or why not.
pub fn read_answer(status: u16, body: &str, exchange: bool) -> Result<Issued, TokenError> {
    if !(200..300).contains(&status) {
        return Err(match serde_json::from_str::<ErrorAnswer>(body) {
            Ok(e) => TokenError::Refused {
                status,
                error: printable(&e.error, 60),
                description: e.error_description.map(|d| printable(&d, 200)),
            },
            Err(_) => TokenError::Refused {
                status,
                error: "no OAuth error in the answer".into(),
                description: None,
            },
        });
    }
    // Never quote the body: it holds the token.
    let answer: TokenAnswer = serde_json::from_str(body)
        .map_err(|_| TokenError::BadAnswer("no access_token and token_type".into()))?;
    if !answer.token_type.eq_ignore_ascii_case("bearer") {
        return Err(TokenError::BadAnswer(format!(
            "token_type is '{}', the gateway sends Bearer tokens only",
            printable(&answer.token_type, 40)
        )));
    }
    if exchange
        && let Some(issued) = &answer.issued_token_type
        && issued != ACCESS_TOKEN_TYPE
    {
        return Err(TokenError::BadAnswer(format!(
            "issued_token_type is '{}', not an access token",
            printable(issued, 80)
        )));
    }
    if answer.access_token.is_empty() || HeaderValue::try_from(&answer.access_token).is_err() {
        return Err(TokenError::BadAnswer(
            "the access_token is not valid in a header".into(),
        ));
    }
    let lifetime = match answer.expires_in {
        Some(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s.min(1e9)),
        _ => DEFAULT_LIFETIME,
    };
    Ok(Issued {
        token: AccessToken::new(&answer.access_token),
        lifetime,
    })
}

fn printable(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control()).take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(method: ClientAuthMethod, target: TokenTarget) -> TokenEndpoint {
        let client = OAuthClient {
            token_url: "https://issuer.example/token".into(),
            client_id: "gw:1".into(),
            client_secret_env: "S".into(),
            method,
        };
        TokenEndpoint::new(
            client.token_url.parse().unwrap(),
            &client,
            ClientSecret::new("s&cr=t".into()),
            &target,
        )
        .unwrap()
    }

    fn pairs(body: &str) -> Vec<(String, String)> {
        url::form_urlencoded::parse(body.as_bytes())
            .into_owned()
            .collect()
    }

    #[test]
    fn client_credentials_with_basic_encodes_id_and_secret_before_base64() {
        let target = TokenTarget {
            scope: Some("read write".into()),
            resource: Some("https://api.example/".into()),
            audience: None,
        };
        let (body, basic) =
            endpoint(ClientAuthMethod::ClientSecretBasic, target).form(&Grant::ClientCredentials);
        assert_eq!(
            pairs(&body),
            [
                ("grant_type".into(), "client_credentials".into()),
                ("scope".into(), "read write".into()),
                ("resource".into(), "https://api.example/".into()),
            ]
        );
        let basic = basic.unwrap();
        assert!(basic.is_sensitive());
        let encoded = basic.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        assert_eq!(String::from_utf8(decoded).unwrap(), "gw%3A1:s%26cr%3Dt");
    }

    #[test]
    fn token_exchange_with_post_sends_the_subject_and_the_client_in_the_form() {
        let target = TokenTarget {
            audience: Some("billing".into()),
            ..TokenTarget::default()
        };
        let (body, basic) =
            endpoint(ClientAuthMethod::ClientSecretPost, target).form(&Grant::TokenExchange {
                subject_token: "caller.jwt",
            });
        assert!(basic.is_none());
        assert_eq!(
            pairs(&body),
            [
                ("grant_type".into(), TOKEN_EXCHANGE_GRANT.into()),
                ("subject_token".into(), "caller.jwt".into()),
                ("subject_token_type".into(), ACCESS_TOKEN_TYPE.into()),
                ("requested_token_type".into(), ACCESS_TOKEN_TYPE.into()),
                ("audience".into(), "billing".into()),
                ("client_id".into(), "gw:1".into()),
                ("client_secret".into(), "s&cr=t".into()),
            ]
        );
    }

    #[test]
    fn the_secret_is_not_in_debug_output() {
        let e = endpoint(ClientAuthMethod::ClientSecretPost, TokenTarget::default());
        let shown = format!("{e:?}");
        assert!(
            !shown.contains("s&cr=t") && shown.contains("<redacted>"),
            "{shown}"
        );
    }

    #[test]
    fn answers_are_read_as_a_bearer_token_or_the_issuers_error() {
        let ok = read_answer(
            200,
            r#"{"access_token":"abc","token_type":"bearer","expires_in":120}"#,
            false,
        )
        .unwrap();
        assert_eq!(
            (ok.token.secret(), ok.lifetime),
            ("abc", Duration::from_secs(120))
        );
        let no_expiry = read_answer(
            200,
            r#"{"access_token":"abc","token_type":"Bearer"}"#,
            false,
        );
        assert_eq!(no_expiry.unwrap().lifetime, DEFAULT_LIFETIME);
        let refused = read_answer(
            401,
            r#"{"error":"invalid_client","error_description":"client authentication failed"}"#,
            false,
        )
        .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "it refused the request (401 invalid_client: client authentication failed)"
        );
        assert_eq!(
            read_answer(400, "<html>", false).unwrap_err().to_string(),
            "it refused the request (400 no OAuth error in the answer)"
        );
        let mac = read_answer(200, r#"{"access_token":"abc","token_type":"mac"}"#, false);
        assert!(mac.unwrap_err().to_string().contains("token_type is 'mac'"));
        let na = read_answer(
            200,
            r#"{"access_token":"abc","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:id_token"}"#,
            true,
        );
        assert!(na.unwrap_err().to_string().contains("not an access token"));
        // The body, which may hold a token, is never quoted.
        let odd = read_answer(200, r#"{"access_token":"secret-token"}"#, false).unwrap_err();
        assert!(!odd.to_string().contains("secret-token"), "{odd}");
    }

    #[tokio::test]
    async fn an_unreachable_issuer_is_retried_a_bounded_number_of_times() {
        // A port nothing listens on: each attempt fails to connect at once.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let client = OAuthClient {
            token_url: format!("http://127.0.0.1:{port}/token"),
            client_id: "gw".into(),
            client_secret_env: "S".into(),
            method: ClientAuthMethod::ClientSecretBasic,
        };
        let endpoint = TokenEndpoint::new(
            client.token_url.parse().unwrap(),
            &client,
            ClientSecret::new("s".into()),
            &TokenTarget::default(),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let error = endpoint
            .request(Grant::ClientCredentials)
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                TokenError::Unreachable {
                    attempts: MAX_ATTEMPTS,
                    ..
                }
            ),
            "{error}"
        );
        // Two waits between three attempts: 200 + 400 ms.
        assert!(started.elapsed() >= Duration::from_millis(600));
    }
}
