//! Request ids: UUID v4 in the hyphenated form, taken from the client or generated.

use std::fmt;

/// Why a client's request id is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestIdError {
    /// The X-Request-Id header is not visible ASCII.
    #[error("request_id must be a UUID v4")]
    NotText,
    /// Not a hyphenated UUID v4 (`shown`: its first 64 characters).
    #[error(
        "request_id must be a UUID v4 (e.g. 3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c), got '{shown}'"
    )]
    NotUuidV4 { shown: String },
}

/// A validated request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    pub fn generate() -> Self {
        RequestId(uuid::Uuid::new_v4().to_string())
    }

    /// Accepts only a hyphenated UUID of version 4 (RFC 9562 variant), as the client wrote it.
    pub fn parse(value: &str) -> Result<Self, RequestIdError> {
        if contract::envelope::is_uuid_v4(value) {
            Ok(RequestId(value.to_owned()))
        } else {
            Err(RequestIdError::NotUuidV4 {
                shown: value.chars().take(64).collect(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hyphenated_v4() {
        assert!(RequestId::parse("3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c").is_ok());
        assert!(RequestId::parse(RequestId::generate().as_str()).is_ok());
        // v1, no hyphens, braces, junk, wrong variant
        for bad in [
            "3f2b8c1e-7a4d-1e2b-9c1a-5d6e7f8a9b0c",
            "3f2b8c1e7a4d4e2b9c1a5d6e7f8a9b0c",
            "{3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c}",
            "abc",
            "3f2b8c1e-7a4d-4e2b-1c1a-5d6e7f8a9b0c",
        ] {
            assert!(RequestId::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            RequestId::parse("abc").unwrap_err().to_string(),
            "request_id must be a UUID v4 (e.g. 3f2b8c1e-7a4d-4e2b-9c1a-5d6e7f8a9b0c), got 'abc'"
        );
        let long = "x".repeat(100);
        assert_eq!(
            RequestId::parse(&long).unwrap_err(),
            RequestIdError::NotUuidV4 {
                shown: "x".repeat(64)
            }
        );
    }
}
