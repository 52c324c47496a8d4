//! The one format of time the contract uses: RFC 3339, UTC, milliseconds, `Z`.

use chrono::{DateTime, Utc};

pub fn timestamp() -> String {
    format(Utc::now())
}

/// `at` in the contract's format (for times kept as values and written out later).
pub fn format(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
