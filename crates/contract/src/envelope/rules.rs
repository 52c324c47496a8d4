//! The envelope's rules as a check of an answer from outside: a body as it came over the wire
//! (any JSON) and its HTTP status, judged against every rule the contract states for the body.
//!
//! The server builds its envelopes through [`Envelope`](super::Envelope)'s constructors, so the
//! rules hold there by construction; everything that reads answers (the conformance tester,
//! the load test, the wrapper generator, the end-to-end tests) judges them here, so there is
//! one reading of the rules.
//!
//! About half of its length is tests: one per rule, each written to fail when its rule is
//! removed.

use serde_json::Value;

use crate::ErrorCode;

/// Every top-level key an envelope may have; nothing else is allowed.
pub const KEYS: [&str; 7] = [
    "success",
    "data",
    "error",
    "code",
    "request_id",
    "timestamp",
    "meta",
];

/// The keys every envelope has.
pub const REQUIRED_KEYS: [&str; 3] = ["success", "request_id", "timestamp"];

/// One way a body breaks the envelope's rules. A key set to `null` counts as present, as it
/// does for every client that asks whether the key is there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeViolation {
    /// The body is not a JSON object (or not JSON at all: pass `Value::Null` then).
    #[error("the body is not a JSON object")]
    NotAnObject,
    /// A key every envelope has is absent.
    #[error("`{0}` is missing")]
    Missing(&'static str),
    /// A key that is not one of [`KEYS`].
    #[error("unknown top-level key `{0}`")]
    UnknownKey(String),
    /// A key holds the wrong kind of value.
    #[error("`{key}` is not {expected}: {found}")]
    WrongType {
        key: &'static str,
        expected: &'static str,
        found: String,
    },
    /// `data` present without success, or `error`/`code` present with it, or the reverse.
    #[error("success={success} but `{key}` is {}", presence(*present))]
    Presence {
        success: bool,
        key: &'static str,
        present: bool,
    },
    /// `code` is a string but not one of the contract's codes.
    #[error("unknown code '{0}'")]
    UnknownCode(String),
    /// `code` answered with another status than the contract's table gives it.
    #[error("code {code} must answer {}, not {status}", .code.http_status())]
    StatusOfCode { code: ErrorCode, status: u16 },
    /// A successful answer with a status other than 200 (or 202, a call accepted as a task).
    #[error("success=true with status {0}")]
    StatusOfSuccess(u16),
    /// `request_id` is a string but not a UUID v4.
    #[error("request_id '{0}' is not a UUID v4")]
    RequestId(String),
    /// `timestamp` is a string but not `YYYY-MM-DDTHH:MM:SS.mmmZ` naming a real instant.
    #[error(
        "timestamp '{0}' is not RFC 3339 UTC with milliseconds and Z (2026-01-01T12:00:00.000Z)"
    )]
    Timestamp(String),
    /// The answer has no `X-Request-Id` header.
    #[error("no X-Request-Id header")]
    NoRequestIdHeader,
    /// The `X-Request-Id` header is not the body's `request_id`.
    #[error("X-Request-Id '{header}' differs from request_id '{body}'")]
    RequestIdHeader { header: String, body: String },
}

/// Every violation of one body, in the order the rules are listed; shown joined by `; `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", join(.0))]
pub struct EnvelopeViolations(pub Vec<EnvelopeViolation>);

fn presence(present: bool) -> &'static str {
    if present { "present" } else { "absent" }
}

fn join(violations: &[EnvelopeViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Checks `body`, answered with HTTP `status`, against every rule of the envelope:
///
/// - it is an object with `success`, `request_id` and `timestamp`, and no key outside [`KEYS`];
/// - `success` is a boolean; when true, `data` is present, `error` and `code` absent, and the
///   status is 200 (202 for a call accepted as a task, `Prefer: respond-async`); when false, `error` (a string) and `code` present and `data` absent;
/// - `code` is one of [`ErrorCode`] and `status` is that code's status in the contract's table
///   ([`ErrorCode::http_status`]);
/// - `request_id` is a UUID v4 string ([`is_uuid_v4`]);
/// - `timestamp` is RFC 3339 UTC with milliseconds and `Z` ([`is_millisecond_utc`]);
/// - `meta`, when present, is an object.
///
/// Every violation is reported, not only the first.
pub fn check(body: &Value, status: u16) -> Result<(), EnvelopeViolations> {
    let Some(object) = body.as_object() else {
        return Err(EnvelopeViolations(vec![EnvelopeViolation::NotAnObject]));
    };
    let mut found = Vec::new();
    for key in REQUIRED_KEYS {
        if !object.contains_key(key) {
            found.push(EnvelopeViolation::Missing(key));
        }
    }
    for key in object.keys() {
        if !KEYS.contains(&key.as_str()) {
            found.push(EnvelopeViolation::UnknownKey(key.clone()));
        }
    }
    let success = match body.get("success") {
        Some(Value::Bool(success)) => Some(*success),
        Some(other) => {
            found.push(wrong_type("success", "a boolean", other));
            None
        }
        None => None,
    };
    if let Some(success) = success {
        // data with success; error and code without it.
        for (key, wanted) in [("data", success), ("error", !success), ("code", !success)] {
            let present = object.contains_key(key);
            if present != wanted {
                found.push(EnvelopeViolation::Presence {
                    success,
                    key,
                    present,
                });
            }
        }
        if success && status != 200 && status != 202 {
            found.push(EnvelopeViolation::StatusOfSuccess(status));
        }
    }
    if success != Some(true) {
        if let Some(error) = body.get("error").filter(|e| !e.is_string()) {
            found.push(wrong_type("error", "a string", error));
        }
        match body.get("code") {
            Some(Value::String(code)) => match code_named(code) {
                Some(code) if code.http_status() != status => {
                    found.push(EnvelopeViolation::StatusOfCode { code, status });
                }
                Some(_) => {}
                None => found.push(EnvelopeViolation::UnknownCode(code.clone())),
            },
            Some(other) => found.push(wrong_type("code", "a string", other)),
            None => {}
        }
    }
    match body.get("request_id") {
        Some(Value::String(id)) if !is_uuid_v4(id) => {
            found.push(EnvelopeViolation::RequestId(id.clone()));
        }
        Some(Value::String(_)) | None => {}
        Some(other) => found.push(wrong_type("request_id", "a string", other)),
    }
    match body.get("timestamp") {
        Some(Value::String(ts)) if !is_millisecond_utc(ts) => {
            found.push(EnvelopeViolation::Timestamp(ts.clone()));
        }
        Some(Value::String(_)) | None => {}
        Some(other) => found.push(wrong_type("timestamp", "a string", other)),
    }
    if let Some(meta) = body.get("meta").filter(|m| !m.is_object()) {
        found.push(wrong_type("meta", "an object", meta));
    }
    if found.is_empty() {
        Ok(())
    } else {
        Err(EnvelopeViolations(found))
    }
}

/// Checks that the answer's `X-Request-Id` header (`header`, `None` when absent) repeats the
/// `request_id` of its envelope `body`: the contract echoes the id in both places. A body
/// without a string `request_id` passes here; [`check`] reports it.
pub fn check_request_id_header(
    body: &Value,
    header: Option<&str>,
) -> Result<(), EnvelopeViolation> {
    let Some(id) = body.get("request_id").and_then(Value::as_str) else {
        return Ok(());
    };
    match header {
        Some(header) if header == id => Ok(()),
        Some(header) => Err(EnvelopeViolation::RequestIdHeader {
            header: header.to_owned(),
            body: id.to_owned(),
        }),
        None => Err(EnvelopeViolation::NoRequestIdHeader),
    }
}

fn wrong_type(key: &'static str, expected: &'static str, found: &Value) -> EnvelopeViolation {
    EnvelopeViolation::WrongType {
        key,
        expected,
        found: found.to_string(),
    }
}

fn code_named(name: &str) -> Option<ErrorCode> {
    ErrorCode::ALL.into_iter().find(|c| c.as_str() == name)
}

/// True for the canonical hyphenated form of a UUID of version 4 and the RFC 4122 variant.
pub fn is_uuid_v4(id: &str) -> bool {
    id.len() == 36
        && uuid::Uuid::try_parse(id)
            .is_ok_and(|u| u.get_version_num() == 4 && u.get_variant() == uuid::Variant::RFC4122)
}

/// True for `YYYY-MM-DDTHH:MM:SS.mmmZ` naming a real instant: RFC 3339, UTC, exactly three
/// fraction digits, `Z`.
pub fn is_millisecond_utc(ts: &str) -> bool {
    const SEPARATORS: [(usize, u8); 7] = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ];
    let bytes = ts.as_bytes();
    let shaped = bytes.len() == 24
        && bytes.iter().enumerate().all(|(i, b)| {
            match SEPARATORS.iter().find(|(at, _)| *at == i) {
                Some((_, separator)) => b == separator,
                None => b.is_ascii_digit(),
            }
        });
    // The shape alone lets 2026-02-30 or 25:00 through.
    shaped && chrono::DateTime::parse_from_rfc3339(ts).is_ok()
}

#[cfg(test)]
mod tests {
    //! One test per rule: a well-formed envelope passes, and the same envelope with that one
    //! rule broken fails with that rule's violation (and only that one).

    use serde_json::json;

    use super::*;

    const ID: &str = "7d0c3f0e-1c2b-4a5e-9f00-0123456789ab";
    const TS: &str = "2026-11-22T10:41:53.483Z";

    fn success() -> Value {
        json!({"success": true, "data": {"tools": []}, "request_id": ID, "timestamp": TS,
               "meta": {"execution_time_ms": 3}})
    }

    fn failure() -> Value {
        json!({"success": false, "error": "Tool 'x' not found", "code": "TOOL_NOT_FOUND",
               "request_id": ID, "timestamp": TS})
    }

    /// The violations of `body` at `status`, none when it passes.
    fn violations(body: &Value, status: u16) -> Vec<EnvelopeViolation> {
        check(body, status).err().map(|v| v.0).unwrap_or_default()
    }

    fn without(mut body: Value, key: &str) -> Value {
        body.as_object_mut().unwrap().remove(key);
        body
    }

    fn with(mut body: Value, key: &str, value: Value) -> Value {
        body[key] = value;
        body
    }

    #[test]
    fn well_formed_envelopes_pass() {
        assert_eq!(violations(&success(), 200), []);
        assert_eq!(violations(&failure(), 404), []);
        // Optional keys may be absent; data may be any value, null included.
        assert_eq!(violations(&without(success(), "meta"), 200), []);
        assert_eq!(violations(&with(success(), "data", Value::Null), 200), []);
        assert_eq!(
            violations(&with(failure(), "meta", json!({"health": {}})), 404),
            []
        );
    }

    #[test]
    fn the_body_is_an_object() {
        for body in [Value::Null, json!([]), json!("success")] {
            assert_eq!(violations(&body, 200), [EnvelopeViolation::NotAnObject]);
        }
    }

    #[test]
    fn required_keys_are_present() {
        for key in REQUIRED_KEYS {
            let body = without(success(), key);
            let found = violations(&body, 200);
            assert!(
                found.contains(&EnvelopeViolation::Missing(key)),
                "{key}: {found:?}"
            );
        }
        // Without `success` nothing can be said about data/error/code: only the absence.
        assert_eq!(
            violations(&without(failure(), "success"), 404),
            [EnvelopeViolation::Missing("success")]
        );
    }

    #[test]
    fn no_unknown_top_level_keys() {
        let body = with(success(), "status", json!("ok"));
        assert_eq!(
            violations(&body, 200),
            [EnvelopeViolation::UnknownKey("status".into())]
        );
    }

    #[test]
    fn success_is_a_boolean() {
        let body = with(success(), "success", json!("true"));
        assert_eq!(
            violations(&body, 200),
            [wrong_type("success", "a boolean", &json!("true"))]
        );
    }

    #[test]
    fn success_carries_data() {
        assert_eq!(
            violations(&without(success(), "data"), 200),
            [EnvelopeViolation::Presence {
                success: true,
                key: "data",
                present: false
            }]
        );
    }

    #[test]
    fn success_carries_no_error_and_no_code() {
        for (key, value) in [("error", json!("boom")), ("code", json!("TIMEOUT"))] {
            assert_eq!(
                violations(&with(success(), key, value), 200),
                [EnvelopeViolation::Presence {
                    success: true,
                    key,
                    present: true
                }]
            );
        }
        // null is present.
        assert_eq!(
            violations(&with(success(), "error", Value::Null), 200).len(),
            1
        );
    }

    #[test]
    fn success_answers_200_or_202_for_an_accepted_task() {
        assert_eq!(
            violations(&success(), 201),
            [EnvelopeViolation::StatusOfSuccess(201)]
        );
        assert!(violations(&success(), 202).is_empty());
        assert!(violations(&success(), 200).is_empty());
    }

    #[test]
    fn failure_carries_error_and_code_and_no_data() {
        for key in ["error", "code"] {
            assert_eq!(
                violations(&without(failure(), key), 404),
                [EnvelopeViolation::Presence {
                    success: false,
                    key,
                    present: false
                }]
            );
        }
        assert_eq!(
            violations(&with(failure(), "data", json!({})), 404),
            [EnvelopeViolation::Presence {
                success: false,
                key: "data",
                present: true
            }]
        );
    }

    #[test]
    fn error_is_a_string() {
        let body = with(failure(), "error", json!({"message": "x"}));
        assert_eq!(
            violations(&body, 404),
            [wrong_type("error", "a string", &json!({"message": "x"}))]
        );
    }

    #[test]
    fn code_is_a_known_code() {
        assert_eq!(
            violations(&with(failure(), "code", json!("NO_SUCH_CODE")), 404),
            [EnvelopeViolation::UnknownCode("NO_SUCH_CODE".into())]
        );
        assert_eq!(
            violations(&with(failure(), "code", json!(404)), 404),
            [wrong_type("code", "a string", &json!(404))]
        );
    }

    #[test]
    fn the_status_is_the_codes_status() {
        assert_eq!(
            violations(&failure(), 500),
            [EnvelopeViolation::StatusOfCode {
                code: ErrorCode::ToolNotFound,
                status: 500
            }]
        );
        // Every code of the table passes with its own status and no other.
        for code in ErrorCode::ALL {
            let body = with(failure(), "code", json!(code.as_str()));
            assert_eq!(violations(&body, code.http_status()), [], "{code}");
            assert_eq!(violations(&body, 418).len(), 1, "{code}");
        }
    }

    #[test]
    fn request_id_is_a_uuid_v4_string() {
        for bad in [
            "nope",
            // version 1
            "3f2b8c1e-7a4d-1e2b-9c1a-5d6e7f8a9b0c",
            // not the RFC 4122 variant
            "3f2b8c1e-7a4d-4e2b-1c1a-5d6e7f8a9b0c",
            // simple form
            "3f2b8c1e7a4d4e2b9c1a5d6e7f8a9b0c",
        ] {
            assert_eq!(
                violations(&with(success(), "request_id", json!(bad)), 200),
                [EnvelopeViolation::RequestId(bad.into())],
                "{bad}"
            );
        }
        assert_eq!(
            violations(&with(success(), "request_id", json!(7)), 200),
            [wrong_type("request_id", "a string", &json!(7))]
        );
        assert!(is_uuid_v4("3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c"));
    }

    #[test]
    fn timestamp_is_millisecond_utc() {
        for bad in [
            "2026-01-01T12:00:00Z",
            "2026-01-01T12:00:00.000+00:00",
            "2026-01-01T12:00:00.0000Z",
            "2026-01-01 12:00:00.000Z",
            "2026-02-30T12:00:00.000Z",
            "2026-01-01T25:00:00.000Z",
        ] {
            assert_eq!(
                violations(&with(success(), "timestamp", json!(bad)), 200),
                [EnvelopeViolation::Timestamp(bad.into())],
                "{bad}"
            );
        }
        assert_eq!(
            violations(&with(success(), "timestamp", json!(0)), 200),
            [wrong_type("timestamp", "a string", &json!(0))]
        );
    }

    #[test]
    fn meta_is_an_object_when_present() {
        for bad in [json!([]), json!("fast"), Value::Null] {
            assert_eq!(
                violations(&with(success(), "meta", bad.clone()), 200),
                [wrong_type("meta", "an object", &bad)]
            );
        }
    }

    #[test]
    fn the_request_id_header_repeats_the_body() {
        assert_eq!(check_request_id_header(&success(), Some(ID)), Ok(()));
        assert_eq!(
            check_request_id_header(&success(), None),
            Err(EnvelopeViolation::NoRequestIdHeader)
        );
        let other = "0b4f7a52-3c1e-4d6a-8f2b-9e8d7c6b5a41";
        assert_eq!(
            check_request_id_header(&success(), Some(other)),
            Err(EnvelopeViolation::RequestIdHeader {
                header: other.into(),
                body: ID.into()
            })
        );
    }

    #[test]
    fn every_violation_is_reported_and_shown() {
        let body = json!({"success": true, "error": "x", "request_id": "abc", "extra": 1});
        let found = check(&body, 500).unwrap_err();
        assert_eq!(found.0.len(), 6, "{found:?}");
        assert_eq!(
            found.to_string(),
            "`timestamp` is missing; unknown top-level key `extra`; success=true but `data` is \
             absent; success=true but `error` is present; success=true with status 500; \
             request_id 'abc' is not a UUID v4"
        );
    }
}
