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
}

impl Reply {
    pub fn ok(data: Value) -> Self {
        Reply {
            outcome: Ok(Data::Value(Arc::new(data))),
            meta: Box::default(),
            request_id: None,
            retry_after: None,
        }
    }

    /// A successful answer whose data is JSON text already (cached): spliced, not serialised.
    pub fn ok_json(data: Bytes) -> Self {
        Reply {
            outcome: Ok(Data::Json(data)),
            meta: Box::default(),
            request_id: None,
            retry_after: None,
        }
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Reply {
            outcome: Err((code, message.into())),
            meta: Box::default(),
            request_id: None,
            retry_after: None,
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

    pub fn status(&self) -> StatusCode {
        match &self.outcome {
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
    }
}
