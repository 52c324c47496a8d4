//! One service's listener: connections accepted up to `limits.max_connections` (more wait in
//! the listen backlog until one closes), each served over HTTP/1.1 with a header read timeout
//! (a client that does not finish its headers in time, or idles that long between requests,
//! is disconnected) and hyper's hard header bounds; on drain, no more accepts, and open
//! connections finish their requests and close.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::config::LimitsSection;
use crate::http::header_limits;
use crate::service::Service;
use crate::shutdown::Shutdown;

/// hyper's default read buffer (8 KiB + 100 × 4 KiB): never made smaller.
const DEFAULT_READ_BUFFER: usize = 8192 + 4096 * 100;

/// After an accept error (out of file descriptors, most likely), how long before the next
/// accept: retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `app` on `listener` until `stopped`, then waits for open connections to finish.
pub async fn serve(listener: TcpListener, service: Arc<Service>, app: Router, stopped: Shutdown) {
    let max_connections = service.settings().config.limits.max_connections;
    let slots = Arc::new(Semaphore::new(max_connections));
    let graceful = GracefulShutdown::new();
    loop {
        // A slot first: past the limit, connections wait in the backlog, not in our memory.
        let permit = tokio::select! {
            _ = stopped.cancelled() => break,
            permit = slots.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            _ = stopped.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(service = %service.name, "accept failed: {e}");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        // Every answer goes out as soon as it is written. With Nagle's algorithm on, a
        // streamed answer (an MCP call's SSE stream, a legacy SSE event) whose head and body are
        // written apart waits for the client's delayed ACK: 40 ms per call on a kept-alive
        // connection (docs/performance.md, "The per-call floor on kept-alive connections").
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, "TCP_NODELAY not set: {e}");
        }
        // Read per connection, so a reload applies to the connections after it.
        let builder = connection_builder(&service.settings().config.limits);
        let app = app
            .clone()
            .map_request(move |mut request: axum::http::Request<Incoming>| {
                request
                    .extensions_mut()
                    .insert(ConnectInfo::<SocketAddr>(peer));
                request
            });
        let connection = graceful
            .watch(builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app)));
        tokio::spawn(async move {
            let _slot = permit;
            if let Err(e) = connection.await {
                // A header read timeout, a client gone mid-request: nothing to answer.
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// HTTP/1.1 as the limits say: header read timeout, hyper's hard header bounds, a read
/// buffer large enough for them.
fn connection_builder(limits: &LimitsSection) -> http1::Builder {
    let (hard_bytes, hard_count) = header_limits::hard_limits(limits);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_header_size(hard_bytes)
        .max_headers(hard_count)
        .max_buf_size((hard_bytes + 8192).max(DEFAULT_READ_BUFFER));
    builder
}
