//! Log output: JSON lines (default) or human-readable, level from the config unless RUST_LOG
//! is set. Each request's lines carry its request id through the `request` span.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

use crate::config::LogFormat;

/// Installs the global subscriber. `level` is a tracing filter such as `info` or
/// `mcp_http_gateway=debug,info`; RUST_LOG, when set, wins.
pub fn init(format: LogFormat, level: &str) {
    // tantivy (the search provider's index) narrates every segment merge at info.
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(format!("{level},tantivy=warn")))
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
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
}
