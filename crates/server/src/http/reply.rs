//! What handlers and layers answer before the envelope is drawn around it, and the JSON body
//! extractor whose every rejection is such an answer. Bodies are read as strict JSON
//! ([`contract::strict_json`]: no duplicate key at any depth, depth, strings and members
//! bounded by `limits`) before they are given their type.
//!
//! A [`Reply`] travels in the response's extensions with an empty body; the envelope layer
//! turns it into the envelope, so the request id, timestamp and timing are set in one place.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use contract::strict_json::{self, JsonLimits};
use contract::{ErrorCode, Meta};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::request_id::RequestId;
use crate::service::{CallFailure, Service};

/// The `data` of a successful answer.
#[derive(Debug, Clone)]
pub enum Data {
    /// A value, serialised with the envelope.
    Value(Arc<Value>),
    /// JSON text serialised once per change (GET /tools), spliced into the envelope as it is.
    Json(Bytes),
}

/// An answer waiting for its envelope.
#[derive(Debug, Clone)]
pub struct Reply {
    pub outcome: Result<Data, (ErrorCode, String)>,
    /// Boxed: `meta` can carry a whole health report, and a `Reply` is often an `Err`.
    pub meta: Box<Meta>,
    /// A request id from the body, which wins over the header's.
    pub request_id: Option<RequestId>,
    /// Seconds for `Retry-After` (429 and 503).
    pub retry_after: Option<u64>,
    /// Where the work it accepted can be followed (`Location` of a 202: a task's URL).
    pub accepted_at: Option<Box<str>>,
    /// A `WWW-Authenticate` challenge (a 401 or 403 of the OAuth resource server).
    pub challenge: Option<Box<str>>,
}

impl Reply {
    pub fn ok(data: Value) -> Self {
        Reply {
            outcome: Ok(Data::Value(Arc::new(data))),
            meta: Box::default(),
            request_id: None,
            retry_after: None,
            accepted_at: None,
            challenge: None,
        }
    }

    /// A successful answer whose data is JSON text already (cached): spliced, not serialised.
    pub fn ok_json(data: Bytes) -> Self {
        Reply {
            outcome: Ok(Data::Json(data)),
            meta: Box::default(),
            request_id: None,
            retry_after: None,
            accepted_at: None,
            challenge: None,
        }
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Reply {
            outcome: Err((code, message.into())),
            meta: Box::default(),
            request_id: None,
            retry_after: None,
            accepted_at: None,
            challenge: None,
        }
    }

    /// 202 Accepted: `data` says what was accepted, `location` where to follow it.
    pub fn accepted(data: Value, location: String) -> Self {
        Reply {
            accepted_at: Some(location.into()),
            challenge: None,
            ..Reply::ok(data)
        }
    }

    pub fn with_meta(mut self, meta: Meta) -> Self {
        self.meta = Box::new(meta);
        self
    }

    /// Names the tool in `meta.tool`, keeping the rest of `meta`.
    pub fn with_tool(mut self, tool: &str) -> Self {
        self.meta.tool = Some(tool.to_owned());
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// Adds a `WWW-Authenticate` challenge.
    pub fn challenge(mut self, challenge: String) -> Self {
        self.challenge = Some(challenge.into());
        self
    }

    pub fn status(&self) -> StatusCode {
        match &self.outcome {
            Ok(_) if self.accepted_at.is_some() => StatusCode::ACCEPTED,
            Ok(_) => StatusCode::OK,
            Err((code, _)) => StatusCode::from_u16(code.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        }
    }
}

impl From<CallFailure> for Reply {
    fn from(failure: CallFailure) -> Reply {
        let mut reply = Reply::error(failure.code, failure.message);
        reply.meta.validation_errors = failure.validation_errors;
        reply.retry_after = failure.retry_after;
        reply
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = self.status().into_response();
        response.extensions_mut().insert(self);
        response
    }
}

/// A JSON request body of type `T`, read within `limits.max_body_bytes`.
pub struct JsonBody<T>(pub T);

/// The arguments object of POST /tools/{name}; an empty body means `{}`.
pub struct ArgumentsBody(pub serde_json::Map<String, Value>);

impl<T: DeserializeOwned> FromRequest<Arc<Service>> for JsonBody<T> {
    type Rejection = Reply;

    async fn from_request(request: Request, service: &Arc<Service>) -> Result<Self, Reply> {
        let json = service.settings().config.limits.json();
        let bytes = read_json_bytes(request, service, false).await?;
        parse(&bytes, &json).map(JsonBody)
    }
}

impl FromRequest<Arc<Service>> for ArgumentsBody {
    type Rejection = Reply;

    async fn from_request(request: Request, service: &Arc<Service>) -> Result<Self, Reply> {
        let json = service.settings().config.limits.json();
        let bytes = read_json_bytes(request, service, true).await?;
        if bytes.is_empty() {
            return Ok(ArgumentsBody(serde_json::Map::new()));
        }
        parse(&bytes, &json).map(ArgumentsBody)
    }
}

/// Reads `bytes` as strict JSON within `limits`, then as a `T`.
pub fn parse<T: DeserializeOwned>(bytes: &[u8], limits: &JsonLimits) -> Result<T, Reply> {
    if bytes.is_empty() {
        return Err(Reply::error(
            ErrorCode::InvalidRequest,
            "Request body is empty; expected a JSON object",
        ));
    }
    let value = strict_json::parse(bytes, limits)
        .map_err(|refusal| Reply::error(ErrorCode::InvalidRequest, refusal.to_string()))?;
    serde_json::from_value(value).map_err(|e| {
        Reply::error(
            ErrorCode::InvalidRequest,
            format!("Request body has the wrong shape: {e}"),
        )
    })
}

/// Checks the content type and reads the body, refusing more than the configured limit.
async fn read_json_bytes(
    request: Request,
    service: &Service,
    allow_empty: bool,
) -> Result<axum::body::Bytes, Reply> {
    let limit = service.settings().config.limits.max_body_bytes;
    let too_large = || {
        Reply::error(
            ErrorCode::PayloadTooLarge,
            format!("Request body exceeds the limit of {limit} bytes"),
        )
    };
    let headers = request.headers();
    let declared_length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared_length.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = Limited::new(request.into_body(), limit)
        .collect()
        .await
        .map_err(|e| {
            if e.downcast_ref::<LengthLimitError>().is_some() {
                too_large()
            } else {
                Reply::error(
                    ErrorCode::InvalidRequest,
                    format!("Could not read the request body: {e}"),
                )
            }
        })?
        .to_bytes();
    if bytes.is_empty() && allow_empty {
        return Ok(bytes);
    }
    if !content_type.as_deref().is_some_and(is_json) {
        let got = content_type.unwrap_or_else(|| "none".into());
        return Err(Reply::error(
            ErrorCode::InvalidRequest,
            format!("Content-Type must be application/json, got {got}"),
        ));
    }
    Ok(bytes)
}

/// `application/json` or `application/<anything>+json`, with any parameters.
fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types() {
        assert!(is_json("application/json"));
        assert!(is_json("application/json; charset=utf-8"));
        assert!(is_json("Application/JSON"));
        assert!(is_json("application/vnd.api+json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/x-www-form-urlencoded"));
        assert!(
            !is_json("text/vnd.api+json"),
            "+json under application/ only"
        );
        assert!(!is_json("application/jsonx"));
    }

    #[test]
    fn an_answer_is_its_code_status_and_travels_in_the_extensions() {
        assert_eq!(Reply::ok(Value::Null).status(), StatusCode::OK);
        let missing = Reply::error(ErrorCode::ToolNotFound, "no such tool");
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        let response = missing.into_response();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let reply = response.extensions().get::<Reply>().expect("the Reply");
        assert_eq!(
            reply.outcome.clone().unwrap_err(),
            (ErrorCode::ToolNotFound, "no such tool".to_owned())
        );
    }

    /// A POST of `body` with these headers, read as `T` by a service with a 16-byte body limit.
    async fn read<T: FromRequest<Arc<Service>, Rejection = Reply>>(
        body: &'static str,
        content_type: Option<&str>,
        content_length: Option<usize>,
    ) -> Result<T, (ErrorCode, String)> {
        let service = crate::service::unit_service("limits: { max_body_bytes: 16 }\n");
        let mut request = Request::post("/call-tool");
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        if let Some(length) = content_length {
            request = request.header(header::CONTENT_LENGTH, length);
        }
        let request = request.body(axum::body::Body::from(body)).unwrap();
        T::from_request(request, &service)
            .await
            .map_err(|reply| reply.outcome.unwrap_err())
    }

    const JSON: Option<&str> = Some("application/json");

    #[tokio::test]
    async fn a_body_is_read_up_to_its_limit_as_strict_json_of_a_type() {
        // 16 bytes: exactly the limit, declared or not.
        let body = r#"{"a":"12345678"}"#;
        assert_eq!(body.len(), 16);
        let JsonBody(value) = read::<JsonBody<Value>>(body, JSON, Some(16)).await.unwrap();
        assert_eq!(value["a"], "12345678");
        assert!(read::<JsonBody<Value>>(body, JSON, None).await.is_ok());

        let too_large = (
            ErrorCode::PayloadTooLarge,
            "Request body exceeds the limit of 16 bytes".to_owned(),
        );
        // A declared length over the limit is refused before a byte is read.
        assert_eq!(
            read::<JsonBody<Value>>("{}", JSON, Some(17)).await.err(),
            Some(too_large.clone()),
            "declared"
        );
        let longer = r#"{"a":"123456789"}"#;
        assert_eq!(
            read::<JsonBody<Value>>(longer, JSON, None).await.err(),
            Some(too_large),
            "counted while read"
        );

        let (code, message) = read::<JsonBody<Value>>(body, Some("text/plain"), None)
            .await
            .err()
            .unwrap();
        assert_eq!(code, ErrorCode::InvalidRequest);
        assert_eq!(
            message,
            "Content-Type must be application/json, got text/plain"
        );
        let (_, message) = read::<JsonBody<Value>>(body, None, None)
            .await
            .err()
            .unwrap();
        assert_eq!(message, "Content-Type must be application/json, got none");

        let (code, message) = read::<JsonBody<Value>>(r#"{"a":1,"a":2}"#, JSON, None)
            .await
            .err()
            .unwrap();
        assert_eq!(code, ErrorCode::InvalidRequest);
        assert!(message.contains("twice"), "{message}");
        let (_, message) = read::<JsonBody<Vec<u8>>>(body, JSON, None)
            .await
            .err()
            .unwrap();
        assert!(
            message.starts_with("Request body has the wrong shape: "),
            "{message}"
        );
        let (_, message) = read::<JsonBody<Value>>("", JSON, None).await.err().unwrap();
        assert_eq!(message, "Request body is empty; expected a JSON object");
    }

    #[tokio::test]
    async fn arguments_may_be_an_empty_body_of_any_type_but_a_body_must_be_json() {
        let ArgumentsBody(empty) = read::<ArgumentsBody>("", None, None).await.unwrap();
        assert!(empty.is_empty());
        let ArgumentsBody(arguments) = read::<ArgumentsBody>(r#"{"x":1}"#, JSON, Some(7))
            .await
            .unwrap();
        assert_eq!(arguments["x"], 1);
        let (code, _) = read::<ArgumentsBody>(r#"{"x":1}"#, Some("text/plain"), None)
            .await
            .err()
            .unwrap();
        assert_eq!(code, ErrorCode::InvalidRequest);
    }
}
