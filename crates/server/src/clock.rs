//! The one format of time the contract uses: RFC 3339, UTC, milliseconds, `Z`.

pub fn timestamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
