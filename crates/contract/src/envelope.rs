//! The response envelope: the one body shape every endpoint answers with.
//!
//! `success = true` ⇒ `data` present, `error`/`code` absent; `success = false` ⇒ `error` and
//! `code` present, `data` absent. The constructors are the only way to build one, so the
//! invariant holds by construction; [`check`] judges a body that came from elsewhere.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::{ErrorCode, HealthResponse};

mod rules;

pub use rules::{
    EnvelopeViolation, EnvelopeViolations, KEYS, REQUIRED_KEYS, check, check_request_id_header,
    is_millisecond_utc, is_uuid_v4,
};

/// `{success, data?, error?, code?, request_id, timestamp, meta?}`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Envelope {
    /// True when the request did what it asked.
    pub success: bool,
    /// The result; present exactly when `success` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Value>)]
    pub data: Option<Arc<Value>>,
    /// A human-readable message; present exactly when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The machine-readable reason; present exactly when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ErrorCode>,
    /// UUID v4: the client's (body `request_id` or `X-Request-Id` header) or generated.
    #[schema(format = Uuid)]
    pub request_id: String,
    /// When the response was made: RFC 3339, UTC, milliseconds, `Z` (2026-01-01T00:00:00.000Z).
    #[schema(format = DateTime)]
    pub timestamp: String,
    /// Facts about the handling of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Envelope {
    /// A successful answer carrying `data` (shared: a cached answer, such as GET /tools's, is
    /// serialised without being copied first).
    pub fn ok(
        data: impl Into<Arc<Value>>,
        request_id: String,
        timestamp: String,
        meta: Option<Meta>,
    ) -> Self {
        Envelope {
            success: true,
            data: Some(data.into()),
            error: None,
            code: None,
            request_id,
            timestamp,
            meta,
        }
    }

    /// A failed answer with its code and message.
    pub fn err(
        code: ErrorCode,
        error: String,
        request_id: String,
        timestamp: String,
        meta: Option<Meta>,
    ) -> Self {
        Envelope {
            success: false,
            data: None,
            error: Some(error),
            code: Some(code),
            request_id,
            timestamp,
            meta,
        }
    }
}

/// The body of a successful envelope whose `data` is JSON text already: an answer serialised
/// once per change (GET /tools's list) is not serialised again per request, only the members
/// that are the request's own are written around it. Byte for byte what serialising
/// [`Envelope::ok`] with the same data gives (the member order is the struct's).
///
/// `data` must be one JSON value, as `serde_json` writes it; the caller serialised it.
pub fn ok_body_with_json_data(
    data: &[u8],
    request_id: &str,
    timestamp: &str,
    meta: Option<&Meta>,
) -> Vec<u8> {
    let after = ok_body_after_data(request_id, timestamp, meta);
    let mut out = Vec::with_capacity(OK_BODY_BEFORE_DATA.len() + data.len() + after.len());
    out.extend_from_slice(OK_BODY_BEFORE_DATA);
    out.extend_from_slice(data);
    out.extend_from_slice(&after);
    out
}

/// The bytes of a successful envelope before its `data`: `OK_BODY_BEFORE_DATA`, `data` and
/// [`ok_body_after_data`] in that order are [`ok_body_with_json_data`], for a server that
/// sends the three parts as they are rather than copy `data` into one buffer.
pub const OK_BODY_BEFORE_DATA: &[u8] = br#"{"success":true,"data":"#;

/// The bytes of a successful envelope after its `data` (see [`OK_BODY_BEFORE_DATA`]).
pub fn ok_body_after_data(request_id: &str, timestamp: &str, meta: Option<&Meta>) -> Vec<u8> {
    let mut out = Vec::with_capacity(192);
    out.extend_from_slice(br#","request_id":"#);
    write_json(&mut out, request_id);
    out.extend_from_slice(br#","timestamp":"#);
    write_json(&mut out, timestamp);
    if let Some(meta) = meta {
        out.extend_from_slice(br#","meta":"#);
        write_json(&mut out, meta);
    }
    out.push(b'}');
    out
}

/// Appends `value` as JSON; strings and [`Meta`] have no map with non-string keys, so this
/// cannot fail.
fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(out, value).expect("strings and Meta always serialise");
}

/// Facts about the handling of a request. Unknown members may be added by later versions;
/// clients ignore what they do not know.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Meta {
    /// Wall time the gateway spent on the request, in whole milliseconds. Always present on
    /// `/call-tool` and `/tools/{name}` responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub execution_time_ms: Option<u64>,
    /// The tool the request called, when it named one: its served name, also when the request
    /// named it by its qualified name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// On INVALID_ARGUMENTS: every failing instance, by JSON pointer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_errors: Option<Vec<ValidationIssue>>,
    /// Requests this client may still send at once under `security.rate_limit` (per minute);
    /// on every answer to a request the rate limit counted (every route but /health and
    /// /metrics, once the API key, if any, was accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0)]
    pub rate_limit_remaining: Option<u64>,
    /// On GET /health answering 503: the health report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthResponse>,
    /// Who the gateway took the caller for, when the request asked (`Prefer: identity`) and
    /// came with a credential: an API key's name, or an OAuth token's subject and client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    /// On a call of a read-only tool whose results are shared (`resilience.cache`): `hit`,
    /// answered from a kept result; `coalesced`, shared with an identical call in flight;
    /// `miss`, run upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheStatus>,
}

/// What a read-only call's answer owes to sharing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    Hit,
    Coalesced,
    Miss,
}

impl CacheStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheStatus::Hit => "hit",
            CacheStatus::Coalesced => "coalesced",
            CacheStatus::Miss => "miss",
        }
    }
}

/// The credential a request was judged by (never the credential itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Identity {
    /// `api_key` or `oauth`.
    pub kind: IdentityKind,
    /// The API key's name, or the token's `sub` (its `client_id` when it has no `sub`).
    pub subject: String,
    /// The OAuth client the token was issued to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The token's scopes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// What kind of credential a request came with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdentityKind {
    ApiKey,
    Oauth,
}

impl Meta {
    /// True when no member is set (the envelope then omits `meta`).
    pub fn is_empty(&self) -> bool {
        self == &Meta::default()
    }
}

/// One place where the arguments fail the tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ValidationIssue {
    /// JSON pointer (RFC 6901) into the arguments; `""` is the arguments object itself.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn success_omits_error_and_code() {
        let e = Envelope::ok(json!({"x": 1}), "id".into(), "t".into(), None);
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            json!({"success": true, "data": {"x": 1}, "request_id": "id", "timestamp": "t"})
        );
    }

    #[test]
    fn failure_omits_data() {
        let e = Envelope::err(
            ErrorCode::Timeout,
            "slow".into(),
            "id".into(),
            "t".into(),
            None,
        );
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            json!({"success": false, "error": "slow", "code": "TIMEOUT", "request_id": "id", "timestamp": "t"})
        );
    }

    #[test]
    fn spliced_body_is_the_serialised_envelope() {
        let data = json!({"service": "s", "tools": [{"name": "echo", "inputSchema": {"type": "object"}}], "quote": "a\"b\u{2028}"});
        let text = serde_json::to_vec(&data).unwrap();
        let metas = [
            None,
            Some(Meta::default()),
            Some(Meta {
                execution_time_ms: Some(3),
                tool: Some("t\"x".into()),
                rate_limit_remaining: Some(7),
                ..Meta::default()
            }),
        ];
        for meta in metas {
            let spliced = ok_body_with_json_data(
                &text,
                "7d0c3f0e-1c2b-4a5e-9f00-0123456789ab",
                "2026-01-01T00:00:00.000Z",
                meta.as_ref(),
            );
            let serialised = serde_json::to_vec(&Envelope::ok(
                data.clone(),
                "7d0c3f0e-1c2b-4a5e-9f00-0123456789ab".into(),
                "2026-01-01T00:00:00.000Z".into(),
                meta.clone(),
            ))
            .unwrap();
            assert_eq!(
                String::from_utf8(spliced.clone()).unwrap(),
                String::from_utf8(serialised).unwrap()
            );
            let value: Value = serde_json::from_slice(&spliced).unwrap();
            assert!(check(&value, 200).is_ok(), "{value}");
        }
    }

    #[test]
    fn empty_meta_is_empty() {
        assert!(Meta::default().is_empty());
        assert!(
            !Meta {
                execution_time_ms: Some(0),
                ..Meta::default()
            }
            .is_empty()
        );
    }
}
