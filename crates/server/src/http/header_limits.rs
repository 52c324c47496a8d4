//! The request's header fields, bounded: more than `limits.max_headers` fields, or more than
//! `limits.max_header_bytes` of them, is answered 431 `HEADERS_TOO_LARGE` as the envelope.
//!
//! hyper enforces a hard bound of its own, above these ([`hard_limits`]), where it answers
//! 431 with an empty body and closes the connection before any layer runs; between the two,
//! this layer answers with the envelope.

use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use contract::ErrorCode;

use super::reply::Reply;
use crate::config::LimitsSection;
use crate::service::Service;

/// The check ([`super::guard`]).
pub fn header_limits(service: &Service, request: &mut Request) -> Option<Response> {
    let settings = service.settings();
    refusal(request.headers(), &settings.config.limits).map(IntoResponse::into_response)
}

/// The bytes of the header fields as sent: `name: value` and CRLF for each.
pub fn header_bytes(headers: &HeaderMap) -> usize {
    headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum()
}

fn refusal(headers: &HeaderMap, limits: &LimitsSection) -> Option<Reply> {
    let count = headers.len();
    if count > limits.max_headers {
        return Some(Reply::error(
            ErrorCode::HeadersTooLarge,
            format!(
                "Request has {count} header fields, more than the limit of {}",
                limits.max_headers
            ),
        ));
    }
    let bytes = header_bytes(headers);
    if bytes > limits.max_header_bytes {
        return Some(Reply::error(
            ErrorCode::HeadersTooLarge,
            format!(
                "Request header fields take {bytes} bytes, more than the limit of {}",
                limits.max_header_bytes
            ),
        ));
    }
    None
}

/// hyper's own bounds for a connection: (header section bytes, header fields). Four times the
/// configured ones, so the usual oversized request still gets the envelope and memory stays
/// bounded per connection.
pub fn hard_limits(limits: &LimitsSection) -> (usize, usize) {
    (limits.max_header_bytes * 4, limits.max_headers * 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn count_and_bytes_are_bounded() {
        let limits = LimitsSection {
            max_headers: 3,
            max_header_bytes: 1024,
            ..LimitsSection::default()
        };
        let mut headers = HeaderMap::new();
        headers.insert("host", HeaderValue::from_static("h"));
        headers.insert("x-a", HeaderValue::from_static("1"));
        assert_eq!(header_bytes(&headers), 4 + 1 + 4 + 3 + 1 + 4);
        assert!(refusal(&headers, &limits).is_none());
        headers.insert("x-big", HeaderValue::from_str(&"v".repeat(1100)).unwrap());
        let big = refusal(&headers, &limits).unwrap();
        assert_eq!(big.status().as_u16(), 431);
        headers.remove("x-big");
        headers.insert("x-b", HeaderValue::from_static("2"));
        headers.insert("x-c", HeaderValue::from_static("3"));
        let many = refusal(&headers, &limits).unwrap();
        assert!(
            format!("{:?}", many.outcome).contains("4 header fields"),
            "{:?}",
            many.outcome
        );
    }

    #[test]
    fn each_limit_is_inclusive() {
        let mut headers = HeaderMap::new();
        headers.insert("x-a", HeaderValue::from_static("12345"));
        headers.insert("x-b", HeaderValue::from_static("1"));
        let bytes = header_bytes(&headers);
        assert_eq!(
            bytes,
            (3 + 5 + 4) + (3 + 1 + 4),
            "name, value, ': ' and CRLF"
        );
        let at = |max_headers, max_header_bytes| LimitsSection {
            max_headers,
            max_header_bytes,
            ..LimitsSection::default()
        };
        assert!(refusal(&headers, &at(2, bytes)).is_none(), "at both limits");
        let count = refusal(&headers, &at(1, bytes)).expect("one field too many");
        let (code, message) = count.outcome.unwrap_err();
        assert_eq!(code, ErrorCode::HeadersTooLarge);
        assert_eq!(
            message,
            "Request has 2 header fields, more than the limit of 1"
        );
        let size = refusal(&headers, &at(2, bytes - 1)).expect("one byte too many");
        assert_eq!(size.status().as_u16(), 431);
        assert_eq!(
            size.outcome.unwrap_err().1,
            format!(
                "Request header fields take {bytes} bytes, more than the limit of {}",
                bytes - 1
            )
        );
    }

    #[test]
    fn hyper_is_given_four_times_the_configured_bounds() {
        let limits = LimitsSection {
            max_headers: 10,
            max_header_bytes: 1000,
            ..LimitsSection::default()
        };
        assert_eq!(hard_limits(&limits), (4000, 40));
    }

    #[test]
    fn the_check_reads_the_service_limits() {
        let service = crate::service::unit_service("limits: { max_headers: 8 }\n");
        let mut request = axum::http::Request::get("/tools")
            .body(axum::body::Body::empty())
            .unwrap();
        for name in ["x-1", "x-2", "x-3", "x-4", "x-5", "x-6", "x-7", "x-8"] {
            request
                .headers_mut()
                .insert(name, HeaderValue::from_static("v"));
        }
        assert!(header_limits(&service, &mut request).is_none());
        request
            .headers_mut()
            .insert("x-9", HeaderValue::from_static("v"));
        let answer = header_limits(&service, &mut request).expect("refused");
        assert_eq!(answer.status().as_u16(), 431);
        assert!(answer.extensions().get::<Reply>().is_some());
    }
}
