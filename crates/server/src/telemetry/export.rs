//! OTLP export of the gateway's spans: OTLP/HTTP with protobuf bodies (the OpenTelemetry
//! exporter's `http-proto`, sent by its blocking reqwest client from the batch processor's own
//! thread, so no gRPC stack is linked), batched, flushed when the gateway shuts down.
//!
//! Off unless configured: `monitoring.otlp_endpoint`, or the standard
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT` variables
//! (`OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off again). Nothing is
//! sent anywhere the operator did not name.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SpanData, SpanProcessor};

use crate::config::MonitoringSection;
use crate::shutdown::Shutdown;

/// How long the final flush may take before the gateway exits anyway.
const FLUSH_GRACE: Duration = Duration::from_secs(5);

/// Why the exporter could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("OTLP trace exporter: {0}")]
    Build(#[from] opentelemetry_otlp::ExporterBuildError),
}

/// Where a service's finished spans go; cheap to clone.
#[derive(Debug, Clone)]
pub struct Exporter(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    processor: BatchSpanProcessor,
    scope: InstrumentationScope,
}

impl Exporter {
    /// The exporter `monitoring` and the environment ask for, or `None` when neither names an
    /// endpoint. `service` and `version` become the resource's `service.name` and
    /// `service.version` (so each service of one process is its own service in a backend).
    pub fn from_config(
        service: &str,
        version: &str,
        monitoring: &MonitoringSection,
    ) -> Result<Option<Exporter>, ExportError> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let disabled = env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || env("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
        let from_env = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        if disabled || (monitoring.otlp_endpoint.is_none() && !from_env) {
            return Ok(None);
        }
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_timeout(monitoring.otlp_timeout);
        if let Some(base) = &monitoring.otlp_endpoint {
            // Like OTEL_EXPORTER_OTLP_ENDPOINT: a base URL, the signal's path appended.
            builder = builder.with_endpoint(traces_url(base));
        }
        let exporter = builder.build()?;
        let mut processor = BatchSpanProcessor::builder(exporter).build();
        processor.set_resource(
            &Resource::builder()
                .with_service_name(service.to_owned())
                .with_attribute(KeyValue::new("service.version", version.to_owned()))
                .build(),
        );
        let scope = InstrumentationScope::builder(env!("CARGO_PKG_NAME"))
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Ok(Some(Exporter(Arc::new(Inner { processor, scope }))))
    }

    pub(super) fn record(&self, span: SpanData) {
        self.0.processor.on_end(span);
    }

    pub(super) fn scope(&self) -> &InstrumentationScope {
        &self.0.scope
    }

    /// Sends the spans still batched when `shutdown` is cancelled, as a task shutdown waits
    /// for: the last requests' spans are not lost with the process.
    pub fn flush_on(&self, shutdown: &Shutdown) {
        let exporter = self.clone();
        let stopping = shutdown.clone();
        shutdown.spawn(async move {
            stopping.cancelled().await;
            // The processor blocks while it exports: off the async workers.
            let flushed = tokio::task::spawn_blocking(move || {
                exporter.0.processor.shutdown_with_timeout(FLUSH_GRACE)
            })
            .await;
            match flushed {
                Ok(Ok(())) => tracing::debug!("spans flushed to the OTLP endpoint"),
                Ok(Err(e)) => tracing::warn!("flushing spans to the OTLP endpoint failed: {e}"),
                Err(e) => tracing::warn!("flushing spans to the OTLP endpoint failed: {e}"),
            }
        });
    }
}

/// `base` + `/v1/traces`, the OTLP/HTTP path for traces.
fn traces_url(base: &str) -> String {
    format!("{}/v1/traces", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_appended_to_the_base_url() {
        assert_eq!(
            traces_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://collector:4318/otlp/"),
            "http://collector:4318/otlp/v1/traces"
        );
    }
}
