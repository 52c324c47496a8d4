//! The credentials layer, in front of both surfaces: an API key (`security.api_keys`) or an
//! OAuth bearer token (`security.oauth`), either or both. A request outside
//! `security.public_routes` must bring one that is accepted; its [`Client`] (the key's name
//! or the token's subject, and the tools it may use) goes with the request. Without one the
//! answer is 401, with an RFC 6750 / RFC 9728 challenge naming the protected-resource
//! metadata when OAuth is on. The protected-resource metadata itself is always public, and so
//! are the status page and its assets (`/status`, `/status/assets/*`; not its report).
//!
//! A key, or a token whose issuer key is cached, is judged at once (no boxed future); a token
//! that needs the issuer (a new key id, introspection) is judged in a future of its own.

use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;
use futures::future::{BoxFuture, Either, Ready, ready};
use tower::{Layer, Service as TowerService};

use super::protected_resource::{self, Resource};
use super::reply::Reply;
use super::status_page;
use crate::service::Service;
use crate::service::client::{Client, TokenIdentity, ToolScope};
pub use crate::service::oauth::insufficient_scope;
use crate::service::oauth::{BearerError, OAuthVerifier, quoted};
use crate::service::settings::Settings;

/// Runs the credentials check on every request before the layers inside it.
#[derive(Clone)]
pub struct AuthLayer(pub Arc<Service>);

impl<S> Layer<S> for AuthLayer {
    type Service = Auth<S>;

    fn layer(&self, inner: S) -> Auth<S> {
        Auth {
            service: self.0.clone(),
            inner,
        }
    }
}

#[derive(Clone)]
pub struct Auth<S> {
    service: Arc<Service>,
    inner: S,
}

/// What the check decided before any token was verified.
enum Judged {
    Pass,
    Refuse(Response),
    /// A bearer token for the OAuth verifier.
    Verify {
        verifier: Arc<OAuthVerifier>,
        token: String,
        resource: Resource,
        public: bool,
    },
}

impl<S> TowerService<Request> for Auth<S>
where
    S: TowerService<Request, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Either<
        Ready<Result<Response, S::Error>>,
        Either<S::Future, BoxFuture<'static, Result<Response, S::Error>>>,
    >;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let settings = self.service.settings();
        let (verifier, token, resource, public) = match judge(&settings, &mut request) {
            Judged::Pass => return Either::Right(Either::Left(self.inner.call(request))),
            Judged::Refuse(answer) => return Either::Left(ready(Ok(closing(&request, answer)))),
            Judged::Verify {
                verifier,
                token,
                resource,
                public,
            } => (verifier, token, resource, public),
        };
        let audiences = resource.audiences();
        if let Some(verdict) = verifier.verify_now(&token, &audiences) {
            return match admit(&settings, &mut request, verdict, &resource, public) {
                Some(refusal) => Either::Left(ready(Ok(closing(&request, refusal)))),
                None => Either::Right(Either::Left(self.inner.call(request))),
            };
        }
        // The clone that is ready goes into the future; this one stays for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Either::Right(Either::Right(Box::pin(async move {
            let verdict = verifier.verify(&token, &audiences).await;
            match admit(&settings, &mut request, verdict, &resource, public) {
                Some(refusal) => Ok(closing(&request, refusal)),
                None => inner.call(request).await,
            }
        })))
    }
}

/// A refusal of a request with a body ends the connection (`Connection: close`): the body is
/// never read, so the connection cannot carry another request, and a client that retries
/// with a token at once (every OAuth client after a 401) must not pick it again.
fn closing(request: &Request, mut answer: Response) -> Response {
    let headers = request.headers();
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|length| length.as_bytes() != b"0");
    if has_body {
        answer.headers_mut().insert(
            header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    answer
}

fn judge(settings: &Settings, request: &mut Request) -> Judged {
    let security = &settings.config.security;
    if !security.credentials_required() {
        return Judged::Pass;
    }
    let path = request.uri().path();
    // The protected-resource metadata, and the status page with its assets (they hold no
    // data; the page asks for a key when its report is refused), are public whatever the rules.
    if protected_resource::is_metadata_path(path) || status_page::is_public(path) {
        return Judged::Pass;
    }
    let public = security.is_public(path);
    let headers = request.headers();
    if security.keys_required()
        && let Some(client) = presented_key(headers).and_then(|key| settings.keys.identify(key))
    {
        request.extensions_mut().insert(client);
        return Judged::Pass;
    }
    let Some(verifier) = &settings.oauth else {
        return if public {
            Judged::Pass
        } else {
            Judged::Refuse(
                Reply::error(
                    ErrorCode::Unauthorized,
                    "Missing or invalid API key (send X-API-Key: <key> or Authorization: Bearer <key>)",
                )
                .into_response(),
            )
        };
    };
    let resource = Resource::of(settings, request);
    match bearer_token(headers) {
        Bearer::Token(token) => Judged::Verify {
            verifier: verifier.clone(),
            token: token.to_owned(),
            resource,
            public,
        },
        _ if public => Judged::Pass,
        Bearer::Absent => Judged::Refuse(unauthorized(settings, &resource, None)),
        Bearer::Malformed(why) => Judged::Refuse(unauthorized(
            settings,
            &resource,
            Some(BearerError::Malformed(why.into())),
        )),
    }
}

/// A verified token becomes the request's client; a refused one a 401 (ignored on a public
/// route, as a wrong key is).
fn admit(
    settings: &Settings,
    request: &mut Request,
    verdict: Result<TokenIdentity, BearerError>,
    resource: &Resource,
    public: bool,
) -> Option<Response> {
    match verdict {
        Ok(identity) => {
            let oauth = settings.config.security.oauth.as_ref()?;
            let scope =
                ToolScope::of_scopes(&oauth.scopes, identity.scopes.iter().map(String::as_str))
                    .map(Arc::new);
            request
                .extensions_mut()
                .insert(Client::of_token(identity, scope));
            request.extensions_mut().insert(resource.clone());
            None
        }
        Err(_) if public => None,
        Err(error) => {
            tracing::info!(
                service = %settings.config.service.name,
                "oauth: bearer token refused: {error}"
            );
            Some(unauthorized(settings, resource, Some(error)))
        }
    }
}

/// 401 with the challenge that points a client at the protected-resource metadata.
fn unauthorized(settings: &Settings, resource: &Resource, error: Option<BearerError>) -> Response {
    let mut challenge = format!("Bearer resource_metadata=\"{}\"", resource.metadata_url());
    let message = match &error {
        Some(error) => {
            challenge.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{}\"",
                quoted(&error.to_string())
            ));
            format!("Invalid bearer token: {error}")
        }
        None if settings.config.security.keys_required() => {
            "Missing credentials (send Authorization: Bearer <access token> or X-API-Key: <key>)"
                .to_owned()
        }
        None => "Missing credentials (send Authorization: Bearer <access token>)".to_owned(),
    };
    Reply::error(ErrorCode::Unauthorized, message)
        .challenge(challenge)
        .into_response()
}

/// What the `Authorization` header holds for OAuth.
#[derive(Debug, PartialEq, Eq)]
enum Bearer<'a> {
    Absent,
    Token(&'a str),
    Malformed(&'static str),
}

/// The bearer token (RFC 6750 §2.1: the scheme is case-insensitive, the token is token68).
fn bearer_token(headers: &HeaderMap) -> Bearer<'_> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Bearer::Absent;
    };
    if values.next().is_some() {
        return Bearer::Malformed("more than one Authorization header");
    }
    let Ok(value) = value.to_str() else {
        return Bearer::Malformed("the Authorization header is not ASCII");
    };
    let Some((scheme, token)) = value.split_once(' ') else {
        return Bearer::Malformed("the Authorization header is not `Bearer <token>`");
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Bearer::Malformed("the Authorization scheme is not Bearer");
    }
    let token = token.trim_matches(' ');
    let body = token.trim_end_matches('=');
    let token68 = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b));
    if token68 {
        Bearer::Token(token)
    } else {
        Bearer::Malformed("the bearer token is not a token68 string")
    }
}

/// The API key in `X-API-Key`, else in `Authorization: Bearer`.
fn presented_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .or_else(|| {
            headers
                .get(header::AUTHORIZATION)?
                .to_str()
                .ok()?
                .strip_prefix("Bearer ")
        })
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fuzz;
