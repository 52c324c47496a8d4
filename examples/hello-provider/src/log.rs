//! One JSON line per request, to a file or stderr. The gateway's request id arrives as the
//! `x-correlation-id` metadata and is written on every line, so one id finds a call in the
//! gateway's log and in the provider's.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tonic::metadata::MetadataMap;

#[derive(Clone)]
pub struct Log {
    provider: String,
    out: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl Log {
    /// Appends to `path`, or writes to stderr when there is none.
    pub fn open(provider: &str, path: Option<&Path>) -> std::io::Result<Self> {
        let out: Box<dyn Write + Send> = match path {
            Some(path) => Box::new(OpenOptions::new().create(true).append(true).open(path)?),
            None => Box::new(std::io::stderr()),
        };
        Ok(Log {
            provider: provider.to_owned(),
            out: Arc::new(Mutex::new(out)),
        })
    }

    /// Writes one line: time, provider, the message, the call's trace ids, then `fields`.
    pub fn line(&self, message: &str, trace: &Trace, fields: Value) {
        let mut line = Map::new();
        line.insert("time".into(), json!(chrono::Utc::now().to_rfc3339()));
        line.insert("provider".into(), json!(self.provider));
        line.insert("message".into(), json!(message));
        line.insert("correlation_id".into(), json!(trace.correlation_id));
        line.insert("traceparent".into(), json!(trace.traceparent));
        if let Value::Object(fields) = fields {
            line.extend(fields);
        }
        let mut out = self
            .out
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // A log line that cannot be written is not worth failing the call for.
        let _ = writeln!(out, "{}", Value::Object(line));
        let _ = out.flush();
    }
}

/// The trace metadata of one call (empty strings when the caller sent none).
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub correlation_id: String,
    pub traceparent: String,
}

impl Trace {
    pub fn from_metadata(metadata: &MetadataMap) -> Self {
        let text = |key| {
            metadata
                .get(key)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        Trace {
            correlation_id: text("x-correlation-id"),
            traceparent: text("traceparent"),
        }
    }
}
