//! Log output: JSON lines (default) or human-readable, level from the config unless RUST_LOG
//! is set. Each request's lines carry its request id through the `request` span.
//!
//! Lines are formatted where they happen and written to stdout by a thread of their own
//! (tracing-appender's non-blocking writer): a request never waits on a write(2) to a slow
//! pipe, and the one access-log line per request costs no syscall on the request's thread.
//! The writer never drops a line (a full buffer makes the logger wait instead); the returned
//! [`LogFlush`] writes out what is buffered when it drops, at the end of `serve`.

use std::io::BufWriter;

use tracing_appender::non_blocking::{NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

use crate::config::LogFormat;

/// Keeps the log writer's thread; dropping it writes out every buffered line.
pub struct LogFlush(#[allow(dead_code)] WorkerGuard);

/// Installs the global subscriber. `level` is a tracing filter such as `info` or
/// `mcp_http_gateway=debug,info`; RUST_LOG, when set, wins.
pub fn init(format: LogFormat, level: &str) -> LogFlush {
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("log-writer")
        // Buffered: the writer thread flushes each time it has drained what was sent, so
        // lines go out in one write(2) per batch, not one per line, and none waits long.
        .finish(BufWriter::with_capacity(64 * 1024, std::io::stdout()));
    // tantivy (the search provider's index) narrates every segment merge at info.
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(format!("{level},tantivy=warn")))
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_env_filter(filter)
        .with_span_events(FmtSpan::NONE);
    match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
        LogFormat::Pretty => builder.init(),
    }
    LogFlush(guard)
}
