//! Traces: the W3C Trace Context a request arrives with (or a new one), the gateway's own
//! spans — one server span per request, one client span per upstream call — and their optional
//! export over OTLP/HTTP.
//!
//! A [`TraceContext`] is what travels with a call (in the request's extensions, then in
//! `CallContext`): the trace id, the id of the gateway span the work runs in, the sampled flag
//! and the caller's `tracestate`. Ids are made here whether or not spans are exported, so an
//! upstream always sees a `traceparent` and the access log always has a trace id; spans are
//! recorded only when an exporter is configured and the trace is sampled.

mod export;
pub mod traceparent;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{SpanContext, SpanId, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SpanData};

pub use self::export::{ExportError, Exporter};
pub use self::traceparent::TraceParent;
pub use opentelemetry::trace::SpanKind;

/// The trace a piece of work belongs to and the gateway span it runs in.
#[derive(Clone)]
pub struct TraceContext {
    trace_id: TraceId,
    span_id: SpanId,
    sampled: bool,
    tracestate: Option<Arc<str>>,
    exporter: Option<Exporter>,
}

impl std::fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.traceparent())
    }
}

impl TraceContext {
    /// Work outside any request (and tests): a new trace whose spans go nowhere.
    pub fn detached() -> TraceContext {
        TraceContext {
            trace_id: new_trace_id(),
            span_id: new_span_id(),
            sampled: false,
            tracestate: None,
            exporter: None,
        }
    }

    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    pub fn span_id(&self) -> SpanId {
        self.span_id
    }

    /// The `traceparent` an upstream is sent: this trace, this span as its parent.
    pub fn traceparent(&self) -> String {
        TraceParent {
            trace_id: self.trace_id,
            parent_id: self.span_id,
            flags: if self.sampled {
                traceparent::SAMPLED
            } else {
                0
            },
        }
        .format()
    }

    /// The caller's `tracestate`, passed on unchanged.
    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// A span of the gateway's below this one (an upstream call).
    pub fn child(&self, name: impl Into<Cow<'static, str>>, kind: SpanKind) -> Span {
        Span::start(
            TraceContext {
                span_id: new_span_id(),
                ..self.clone()
            },
            Some((self.span_id, false)),
            name.into(),
            kind,
        )
    }
}

/// One span of the gateway's, recorded when it is dropped (so a call cut short by its
/// caller still ends its span).
pub struct Span {
    context: TraceContext,
    /// The parent's span id and whether the parent is another process's.
    parent: Option<(SpanId, bool)>,
    name: Cow<'static, str>,
    kind: SpanKind,
    started: SystemTime,
    attributes: Vec<KeyValue>,
    status: Status,
}

impl Span {
    /// The server span of an incoming request: a child of the caller's span when it sent a
    /// valid `traceparent`, else the root of a new trace (sampled when spans are exported).
    pub fn server(
        incoming: Option<(TraceParent, Option<String>)>,
        exporter: Option<Exporter>,
        name: impl Into<Cow<'static, str>>,
    ) -> Span {
        let (context, parent) = match incoming {
            Some((parent, tracestate)) => (
                TraceContext {
                    trace_id: parent.trace_id,
                    span_id: new_span_id(),
                    sampled: parent.sampled(),
                    tracestate: tracestate.map(Arc::from),
                    exporter,
                },
                Some((parent.parent_id, true)),
            ),
            None => (
                TraceContext {
                    trace_id: new_trace_id(),
                    span_id: new_span_id(),
                    sampled: exporter.is_some(),
                    tracestate: None,
                    exporter,
                },
                None,
            ),
        };
        Span::start(context, parent, name.into(), SpanKind::Server)
    }

    fn start(
        context: TraceContext,
        parent: Option<(SpanId, bool)>,
        name: Cow<'static, str>,
        kind: SpanKind,
    ) -> Span {
        Span {
            context,
            parent,
            name,
            kind,
            started: SystemTime::now(),
            attributes: Vec::new(),
            status: Status::Unset,
        }
    }

    /// The context of this span: what the work inside it, and its upstreams, are given.
    pub fn context(&self) -> &TraceContext {
        &self.context
    }

    /// Whether anything set on this span will be exported (attributes are skipped otherwise).
    pub fn is_recording(&self) -> bool {
        self.context.sampled && self.context.exporter.is_some()
    }

    pub fn set_name(&mut self, name: impl Into<Cow<'static, str>>) {
        self.name = name.into();
    }

    /// Sets an attribute (OpenTelemetry semantic-convention names).
    pub fn set(&mut self, key: &'static str, value: impl Into<Value>) {
        if self.is_recording() {
            self.attributes.push(KeyValue::new(key, value));
        }
    }

    /// Marks the span failed: status Error and the semantic conventions' `error.type`.
    pub fn fail(
        &mut self,
        error_type: impl Into<Value>,
        description: impl Into<Cow<'static, str>>,
    ) {
        if self.is_recording() {
            self.attributes
                .push(KeyValue::new("error.type", error_type));
            self.status = Status::error(description);
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if !self.is_recording() {
            return;
        }
        let Some(exporter) = &self.context.exporter else {
            return;
        };
        let trace_state = self
            .context
            .tracestate
            .as_deref()
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        let (parent_span_id, parent_span_is_remote) =
            self.parent.unwrap_or((SpanId::INVALID, false));
        exporter.record(SpanData {
            span_context: SpanContext::new(
                self.context.trace_id,
                self.context.span_id,
                TraceFlags::SAMPLED,
                false,
                trace_state,
            ),
            parent_span_id,
            parent_span_is_remote,
            span_kind: self.kind.clone(),
            name: std::mem::take(&mut self.name),
            start_time: self.started,
            end_time: SystemTime::now(),
            attributes: std::mem::take(&mut self.attributes),
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: std::mem::replace(&mut self.status, Status::Unset),
            instrumentation_scope: exporter.scope().clone(),
        });
    }
}

fn new_trace_id() -> TraceId {
    loop {
        let id = RandomIdGenerator::default().new_trace_id();
        if id != TraceId::INVALID {
            return id;
        }
    }
}

fn new_span_id() -> SpanId {
    loop {
        let id = RandomIdGenerator::default().new_span_id();
        if id != SpanId::INVALID {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_span_continues_the_callers_trace_with_a_new_span_id() {
        let parent =
            TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        let span = Span::server(Some((parent, Some("a=b".into()))), None, "GET /tools");
        let cx = span.context();
        assert_eq!(cx.trace_id(), parent.trace_id);
        assert_ne!(cx.span_id(), parent.parent_id);
        assert_eq!(cx.tracestate(), Some("a=b"));
        let sent = TraceParent::parse(&cx.traceparent()).unwrap();
        assert_eq!(sent.trace_id, parent.trace_id);
        assert_eq!(sent.parent_id, cx.span_id());
        assert!(sent.sampled(), "the caller's sampled flag is kept");
        let child = cx.child("GET", SpanKind::Client);
        assert_eq!(child.context().trace_id(), parent.trace_id);
        assert_ne!(child.context().span_id(), cx.span_id());
        assert_eq!(child.parent, Some((cx.span_id(), false)));
    }

    #[test]
    fn without_a_caller_a_new_trace_starts_unsampled_when_nothing_is_exported() {
        let a = Span::server(None, None, "GET /health");
        let b = Span::server(None, None, "GET /health");
        assert_ne!(a.context().trace_id(), b.context().trace_id());
        assert!(a.context().traceparent().ends_with("-00"));
        assert!(TraceParent::parse(&a.context().traceparent()).is_some());
        assert!(!a.is_recording());
    }
}
