//! A response body sent as the parts it was spliced from: a successful envelope around JSON
//! text serialised once per change (GET /tools's list, 10 KB and more) goes out as three
//! buffers, the shared text among them, so no request copies it. hyper writes the parts
//! together (one vectored write) and, the length being known, with a `Content-Length`.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

/// `N` parts sent in order, each once (held inline: no allocation per body).
pub struct Spliced<const N: usize> {
    parts: std::array::IntoIter<Bytes, N>,
    remaining: u64,
}

impl<const N: usize> Spliced<N> {
    pub fn new(parts: [Bytes; N]) -> Spliced<N> {
        let remaining = parts.iter().map(|p| p.len() as u64).sum();
        Spliced {
            parts: parts.into_iter(),
            remaining,
        }
    }
}

impl<const N: usize> HttpBody for Spliced<N> {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        // Empty parts are skipped: an empty data frame would mean nothing to a client.
        let next = self.parts.by_ref().find(|p| !p.is_empty());
        if let Some(part) = &next {
            self.remaining -= part.len() as u64;
        }
        Poll::Ready(next.map(|part| Ok(Frame::data(part))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn the_parts_in_order_with_their_exact_length() {
        let parts = [
            Bytes::from_static(b"{\"a\":"),
            Bytes::new(),
            Bytes::from_static(b"[1,2]"),
            Bytes::from_static(b"}"),
        ];
        let body = Body::new(Spliced::new(parts));
        assert_eq!(body.size_hint().exact(), Some(11));
        let bytes = body.collect().await.unwrap().to_bytes();
        assert_eq!(&bytes[..], b"{\"a\":[1,2]}");
    }

    #[tokio::test]
    async fn no_parts_is_an_empty_body_at_its_end() {
        let body = Spliced::new([]);
        assert!(body.is_end_stream());
        assert_eq!(body.size_hint().exact(), Some(0));
    }
}
