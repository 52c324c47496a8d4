//! The W3C Trace Context headers (<https://www.w3.org/TR/trace-context/>): `traceparent`
//! parsed and written, `tracestate` taken as it came.
//!
//! A value that breaks the format is not an error for the caller: the gateway ignores it and
//! starts a new trace, as the specification asks of a receiver (§ 4.3, "Processing model").

use opentelemetry::trace::{SpanId, TraceId};

/// The header (and MCP `_meta` key) names.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// The flag bit that says the caller may have recorded its span.
pub const SAMPLED: u8 = 0x01;

/// The longest `tracestate` passed on: 32 list members of the specification's maximum size
/// would be far larger, but vendors are asked to propagate at least 512 characters; a longer
/// value is dropped rather than cut (a cut list could end inside a member).
const MAX_TRACESTATE: usize = 8192;

/// A valid `traceparent`: whose trace this is, which span called us, and its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    pub trace_id: TraceId,
    pub parent_id: SpanId,
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` value; `None` for anything the specification calls invalid:
    /// version `ff`, upper-case hex, an all-zero trace or parent id, a wrong length, a
    /// version-00 value with anything after the flags. A higher version is read by the
    /// version-00 layout, as the specification asks, when what follows is `-`-separated.
    pub fn parse(value: &str) -> Option<TraceParent> {
        let value = value.trim_matches([' ', '\t']);
        let bytes = value.as_bytes();
        if bytes.len() < 55 {
            return None;
        }
        let version = hex_byte(&bytes[0..2])?;
        if version == 0xff {
            return None;
        }
        let longer_ok = version != 0 && bytes.get(55).is_none_or(|b| *b == b'-');
        if bytes.len() != 55 && !longer_ok {
            return None;
        }
        if bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
            return None;
        }
        let trace_id = u128::from_str_radix(lower_hex(&value[3..35])?, 16).ok()?;
        let parent_id = u64::from_str_radix(lower_hex(&value[36..52])?, 16).ok()?;
        let flags = hex_byte(&bytes[53..55])?;
        if trace_id == 0 || parent_id == 0 {
            return None;
        }
        Some(TraceParent {
            trace_id: TraceId::from(trace_id),
            parent_id: SpanId::from(parent_id),
            flags,
        })
    }

    /// The version-00 form; only the flags this version defines (sampled) are passed on.
    pub fn format(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id,
            self.parent_id,
            self.flags & SAMPLED
        )
    }

    pub fn sampled(&self) -> bool {
        self.flags & SAMPLED != 0
    }
}

/// The `tracestate` to pass on, from every `tracestate` header field in order (the
/// specification lets a list be split across fields and joined with commas). Kept unchanged;
/// dropped when it could not be a header value again or is unreasonably long.
pub fn tracestate<'a>(fields: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let joined = fields
        .into_iter()
        .map(|f| f.trim_matches([' ', '\t']))
        .filter(|f| !f.is_empty())
        .collect::<Vec<_>>()
        .join(",");
    let printable = joined.bytes().all(|b| (0x20..0x7f).contains(&b));
    (!joined.is_empty() && printable && joined.len() <= MAX_TRACESTATE).then_some(joined)
}

/// Two lower-case hex digits.
fn hex_byte(digits: &[u8]) -> Option<u8> {
    let text = std::str::from_utf8(digits).ok()?;
    u8::from_str_radix(lower_hex(text)?, 16).ok()
}

/// `text` when it is lower-case hex digits only (the specification forbids upper case).
fn lower_hex(text: &str) -> Option<&str> {
    text.bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        .then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_value_round_trips() {
        let parent = TraceParent::parse(VALID).unwrap();
        assert_eq!(
            parent.trace_id.to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(parent.parent_id.to_string(), "00f067aa0ba902b7");
        assert!(parent.sampled());
        assert_eq!(parent.format(), VALID);
        let unsampled = TraceParent::parse(&VALID.replace("-01", "-00")).unwrap();
        assert!(!unsampled.sampled());
        assert!(unsampled.format().ends_with("-00"));
    }

    #[test]
    fn surrounding_spaces_are_tolerated() {
        assert!(TraceParent::parse(&format!(" {VALID}\t")).is_some());
    }

    #[test]
    fn version_ff_is_invalid() {
        assert_eq!(TraceParent::parse(&VALID.replacen("00", "ff", 1)), None);
    }

    #[test]
    fn all_zero_ids_are_invalid() {
        let zero_trace = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
        let zero_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
        assert_eq!(TraceParent::parse(zero_trace), None);
        assert_eq!(TraceParent::parse(zero_parent), None);
    }

    #[test]
    fn upper_case_is_invalid() {
        assert_eq!(TraceParent::parse(&VALID.to_uppercase()), None);
        let upper_trace = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
        assert_eq!(TraceParent::parse(upper_trace), None);
    }

    #[test]
    fn wrong_lengths_and_separators_are_invalid() {
        for bad in [
            "",
            "00",
            &VALID[..54],
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e47366-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b77-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
        // Version 00 has nothing after its flags.
        assert_eq!(TraceParent::parse(&format!("{VALID}-extra")), None);
    }

    #[test]
    fn a_higher_version_is_read_by_the_00_layout() {
        let future = VALID.replacen("00", "cc", 1);
        assert!(TraceParent::parse(&future).is_some());
        let with_more = format!("{future}-what-the-future-adds");
        let parent = TraceParent::parse(&with_more).unwrap();
        assert_eq!(parent.format(), VALID, "passed on as version 00");
        assert_eq!(TraceParent::parse(&format!("{future}x")), None);
    }

    #[test]
    fn tracestate_is_joined_and_kept_unchanged() {
        assert_eq!(
            tracestate(["congo=t61rcWkgMzE", " rojo=00f067aa0ba902b7"]).as_deref(),
            Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
        );
        assert_eq!(tracestate([]), None);
        assert_eq!(tracestate(["a=b\u{7f}"]), None);
        assert_eq!(tracestate([&*"a=b,".repeat(5000)]), None);
    }
}
