//! The transport to a child MCP server over its stdin and stdout: JSON lines in rmcp's codec,
//! each line the child writes shown to [`WireRequests::note`] before rmcp parses it. Closing it
//! ends the child the way the MCP spec's stdio shutdown says: stdin closed, then SIGTERM, then
//! SIGKILL, each after a grace; dropping it kills the child (its wrapper is `KillOnDrop`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use process_wrap::tokio::ChildWrapper;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout};

use super::wire::WireRequests;

/// How long the child has to exit after its stdin closes, and again after SIGTERM.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// A line longer than this is not shown whole to [`WireRequests`] (a request it keeps is a
/// few KiB; tool results can be megabytes, and are passed on without a copy kept).
const MAX_NOTED_LINE: usize = 1 << 20;

/// `inner`, with each complete line it yields also handed to `wire`.
pub struct WireTap<R> {
    inner: R,
    wire: Arc<WireRequests>,
    line: Vec<u8>,
    /// The current line outgrew [`MAX_NOTED_LINE`]: skipped up to its newline.
    skipping: bool,
}

impl<R> WireTap<R> {
    pub fn new(inner: R, wire: Arc<WireRequests>) -> Self {
        WireTap {
            inner,
            wire,
            line: Vec::new(),
            skipping: false,
        }
    }

    fn saw(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, ended) = match bytes.iter().position(|b| *b == b'\n') {
                Some(at) => (&bytes[..at], Some(at + 1)),
                None => (bytes, None),
            };
            if !self.skipping {
                if self.line.len() + part.len() > MAX_NOTED_LINE {
                    self.skipping = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(part);
                }
            }
            let Some(rest) = ended else { return };
            if !self.skipping
                && let Ok(text) = std::str::from_utf8(&self.line)
            {
                self.wire.note(text);
            }
            self.line.clear();
            self.skipping = false;
            bytes = &bytes[rest..];
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for WireTap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let this = &mut *self;
            this.saw(&buf.filled()[before..]);
        }
        polled
    }
}

/// A running child and the JSON-lines transport over its stdio.
pub struct ChildTransport {
    child: Option<Box<dyn ChildWrapper>>,
    transport: AsyncRwTransport<RoleClient, WireTap<ChildStdout>, ChildStdin>,
}

impl ChildTransport {
    /// Takes the child's stdin and stdout (both must be piped).
    pub fn new(mut child: Box<dyn ChildWrapper>, wire: Arc<WireRequests>) -> std::io::Result<Self> {
        let taken = || std::io::Error::other("the child's stdin or stdout is not piped");
        let stdin = child.stdin().take().ok_or_else(taken)?;
        let stdout = child.stdout().take().ok_or_else(taken)?;
        Ok(ChildTransport {
            child: Some(child),
            transport: AsyncRwTransport::new_client(WireTap::new(stdout, wire), stdin),
        })
    }

    pub fn id(&self) -> Option<u32> {
        self.child.as_ref()?.id()
    }

    async fn shut_down(&mut self) -> std::io::Result<()> {
        self.transport.close().await?;
        let Some(child) = self.child.as_mut() else {
            return Ok(());
        };
        if tokio::time::timeout(EXIT_GRACE, child.wait())
            .await
            .is_err()
        {
            #[cfg(unix)]
            if child.signal(libc::SIGTERM).is_ok()
                && tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok()
            {
                self.child = None;
                return Ok(());
            }
            Box::into_pin(child.kill()).await?;
        }
        self.child = None;
        Ok(())
    }
}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.shut_down()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::RequestId;
    use tokio::io::AsyncReadExt;

    const ASK: &str = r#"{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"string"}}}}}"#;

    #[tokio::test]
    async fn every_line_is_passed_on_unchanged_and_a_kept_request_noted_across_reads() {
        let wire = Arc::new(WireRequests::default());
        let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(MAX_NOTED_LINE));
        let stream = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n{big}\n{ASK}\n");
        // Read in small pieces, so lines straddle reads.
        let (mut client, server) = tokio::io::duplex(7);
        let writer = tokio::spawn({
            let stream = stream.clone();
            async move {
                use tokio::io::AsyncWriteExt;
                let mut server = server;
                server.write_all(stream.as_bytes()).await.unwrap();
            }
        });
        let mut tap = WireTap::new(&mut client, wire.clone());
        let mut read = String::new();
        tap.read_to_string(&mut read).await.unwrap();
        writer.await.unwrap();
        assert_eq!(read, stream);
        let params = wire.take(&RequestId::Number(3)).unwrap();
        assert!(
            params.to_string().contains(r#"{"b":{"type":"string"},"a""#),
            "{params}"
        );
    }

    #[test]
    fn a_line_past_the_bound_is_skipped_whole_and_the_next_one_noted() {
        let wire = Arc::new(WireRequests::default());
        let mut tap = WireTap::new(tokio::io::empty(), wire.clone());
        // The kept method's name inside an over-long line: not noted, and not run on into the next.
        tap.saw(b"{\"id\":1,\"method\":\"elicitation/create\",\"params\":{\"x\":\"");
        tap.saw(&vec![b'y'; MAX_NOTED_LINE]);
        tap.saw(b"\"}}\n");
        assert!(wire.take(&RequestId::Number(1)).is_none());
        tap.saw(format!("{ASK}\n").as_bytes());
        assert!(wire.take(&RequestId::Number(3)).is_some());
    }
}
