//! The call's deadline, read from the `grpc-timeout` header the caller's gRPC library sends.
//!
//! tonic's server cuts a call whose deadline has passed, but it answers CANCELLED, which the
//! gateway cannot tell from any other failure. So work that may outlive the deadline (here
//! `slow.v1`) stops a little *before* it and answers DEADLINE_EXCEEDED itself: the answer then
//! reaches the caller in time and says what happened.

use std::time::Duration;

use tokio::time::Instant;
use tonic::metadata::MetadataMap;

/// How long before the deadline work stops, so that the answer still arrives in time.
pub const MARGIN: Duration = Duration::from_millis(20);

/// When the call must have been answered by, or None when the caller set no deadline.
pub fn answer_by(metadata: &MetadataMap, received: Instant) -> Option<Instant> {
    let timeout = parse_grpc_timeout(metadata.get("grpc-timeout")?.to_str().ok()?)?;
    Some(received + timeout.saturating_sub(MARGIN))
}

/// `grpc-timeout` is at most 8 digits and a unit: H, M, S, m (milli), u (micro), n (nano).
pub fn parse_grpc_timeout(text: &str) -> Option<Duration> {
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(value * 3600),
        "M" => Duration::from_secs(value * 60),
        "S" => Duration::from_secs(value),
        "m" => Duration::from_millis(value),
        "u" => Duration::from_micros(value),
        "n" => Duration::from_nanos(value),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_parses() {
        assert_eq!(parse_grpc_timeout("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_grpc_timeout("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_grpc_timeout("5S"), Some(Duration::from_secs(5)));
        assert_eq!(parse_grpc_timeout("250m"), Some(Duration::from_millis(250)));
        assert_eq!(
            parse_grpc_timeout("30000000u"),
            Some(Duration::from_secs(30))
        );
        assert_eq!(parse_grpc_timeout("7n"), Some(Duration::from_nanos(7)));
    }

    #[test]
    fn malformed_values_are_no_deadline() {
        for text in ["", "m", "5", "5x", "-5m", "123456789m", "1.5S"] {
            assert_eq!(parse_grpc_timeout(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_answer_is_due_a_margin_before_the_deadline() {
        let mut request = tonic::Request::new(());
        request.set_timeout(Duration::from_millis(300));
        let now = Instant::now();
        assert_eq!(
            answer_by(request.metadata(), now),
            Some(now + Duration::from_millis(300) - MARGIN)
        );
        assert_eq!(answer_by(&MetadataMap::new(), now), None);
    }
}
