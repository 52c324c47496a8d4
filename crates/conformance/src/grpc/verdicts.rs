//! The judgements of the gRPC checks that need no provider to test: a status code against the
//! one expected, a deadline answer against its deadline, a CloudEvent against the 1.0 spec.

use std::time::Duration;

use serde_json::Value;
use tonic::Code;

/// A call that must be refused with `expected`.
pub fn refused(outcome: &Result<(), tonic::Status>, expected: Code) -> Result<(), String> {
    match outcome {
        Err(status) if status.code() == expected => Ok(()),
        Err(status) => Err(format!(
            "answered {:?} ({}), expected {expected:?}",
            status.code(),
            status.message()
        )),
        Ok(()) => Err(format!("answered OK, expected {expected:?}")),
    }
}

/// A call made with `deadline` must be answered by `deadline + margin`, with
/// DEADLINE_EXCEEDED (it stopped) or OK (it finished in time). `answer` is None when no answer
/// came by then.
pub fn deadline(
    deadline: Duration,
    margin: Duration,
    elapsed: Duration,
    answer: Option<&Result<(), tonic::Status>>,
) -> Result<(), String> {
    let due = deadline + margin;
    let Some(answer) = answer else {
        return Err(format!(
            "no answer within {} ms of a {} ms deadline",
            due.as_millis(),
            deadline.as_millis()
        ));
    };
    if elapsed > due {
        return Err(format!(
            "answered after {} ms, a {} ms deadline allows {} ms",
            elapsed.as_millis(),
            deadline.as_millis(),
            due.as_millis()
        ));
    }
    match answer {
        Ok(()) => Ok(()),
        Err(status) if status.code() == Code::DeadlineExceeded => Ok(()),
        Err(status) => Err(format!(
            "answered {:?} ({}) when the deadline passed, expected DEADLINE_EXCEEDED",
            status.code(),
            status.message()
        )),
    }
}

/// A CloudEvent 1.0 in structured JSON mode: an object with `specversion` "1.0" and non-empty
/// string `id`, `source`, `type`; the data of the types the proto names has its fields.
pub fn cloudevent(text: &str) -> Result<(), String> {
    let event: Value =
        serde_json::from_str(text).map_err(|e| format!("event is not JSON: {e}: {text}"))?;
    if !event.is_object() {
        return Err(format!("event is not a JSON object: {text}"));
    }
    if event["specversion"] != "1.0" {
        return Err(format!("specversion is not \"1.0\": {text}"));
    }
    for attribute in ["id", "source", "type"] {
        if event[attribute].as_str().is_none_or(str::is_empty) {
            return Err(format!(
                "required attribute '{attribute}' is missing or empty: {text}"
            ));
        }
    }
    let fields: &[&str] = match event["type"].as_str() {
        Some("provider.tool.executed") => &["tool", "duration_ms", "success", "correlation_id"],
        Some("provider.metric.reported") => &["name", "value", "unit"],
        _ => &[],
    };
    for field in fields {
        if event["data"].get(field).is_none() {
            return Err(format!(
                "a {} event without data.{field}: {text}",
                event["type"]
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn a_deadline_is_honoured_in_time_with_deadline_exceeded_or_ok() {
        let exceeded = Err(tonic::Status::deadline_exceeded("late"));
        assert!(deadline(MS(300), MS(200), MS(290), Some(&exceeded)).is_ok());
        assert!(deadline(MS(300), MS(200), MS(100), Some(&Ok(()))).is_ok());
    }

    #[test]
    fn a_late_answer_fails() {
        let exceeded = Err(tonic::Status::deadline_exceeded("late"));
        let verdict = deadline(MS(300), MS(200), MS(501), Some(&exceeded));
        assert!(verdict.unwrap_err().contains("after 501 ms"));
        assert!(deadline(MS(300), MS(200), MS(500), None).is_err());
    }

    #[test]
    fn another_code_at_the_deadline_fails() {
        let cancelled = Err(tonic::Status::cancelled("Timeout expired"));
        let verdict = deadline(MS(300), MS(200), MS(300), Some(&cancelled));
        assert!(verdict.unwrap_err().contains("Cancelled"));
    }

    #[test]
    fn refusals() {
        let invalid = Err(tonic::Status::invalid_argument("x"));
        assert!(refused(&invalid, Code::InvalidArgument).is_ok());
        assert!(refused(&invalid, Code::NotFound).is_err());
        assert!(refused(&Ok(()), Code::InvalidArgument).is_err());
    }

    #[test]
    fn cloudevents() {
        let ok = r#"{"specversion":"1.0","id":"1","source":"/p","type":"provider.metric.reported","data":{"name":"n","value":1,"unit":"u"}}"#;
        assert!(cloudevent(ok).is_ok());
        let other = r#"{"specversion":"1.0","id":"1","source":"/p","type":"x.y"}"#;
        assert!(cloudevent(other).is_ok());
        for bad in [
            "nope",
            "[]",
            r#"{"specversion":"0.3","id":"1","source":"/p","type":"x"}"#,
            r#"{"specversion":"1.0","id":"","source":"/p","type":"x"}"#,
            r#"{"specversion":"1.0","id":"1","type":"x"}"#,
            r#"{"specversion":"1.0","id":"1","source":"/p","type":"provider.tool.executed","data":{"tool":"t"}}"#,
        ] {
            assert!(cloudevent(bad).is_err(), "{bad}");
        }
    }
}
