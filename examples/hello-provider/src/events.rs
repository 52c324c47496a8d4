//! The provider's events as CloudEvents 1.0 in structured JSON mode, fanned out to every open
//! StreamEvents call. An event nobody listens to is dropped: the stream is live, not a log.

use serde_json::{Value, json};
use tokio::sync::broadcast;

pub const TOOL_EXECUTED: &str = "provider.tool.executed";
pub const METRIC_REPORTED: &str = "provider.metric.reported";

/// One event: its type (for StreamEvents' filter) and the whole CloudEvent as JSON text.
#[derive(Clone, Debug)]
pub struct Published {
    pub kind: &'static str,
    pub json: String,
}

#[derive(Clone)]
pub struct Events {
    source: String,
    sender: broadcast::Sender<Published>,
}

impl Events {
    pub fn new(provider: &str) -> Self {
        // A listener more than 256 events behind skips ahead (see provider.rs).
        let (sender, _) = broadcast::channel(256);
        Events {
            source: format!("/providers/{provider}"),
            sender,
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Published> {
        self.sender.subscribe()
    }

    pub fn tool_executed(&self, tool: &str, duration_ms: u64, success: bool, correlation_id: &str) {
        self.publish(
            TOOL_EXECUTED,
            json!({
                "tool": tool,
                "duration_ms": duration_ms,
                "success": success,
                "correlation_id": correlation_id,
            }),
        );
    }

    pub fn metric(&self, name: &str, value: f64, unit: &str) {
        self.publish(
            METRIC_REPORTED,
            json!({"name": name, "value": value, "unit": unit}),
        );
    }

    fn publish(&self, kind: &'static str, data: Value) {
        let json = cloudevent(&self.source, kind, data).to_string();
        // An error only means that no StreamEvents call is open.
        let _ = self.sender.send(Published { kind, json });
    }
}

/// A CloudEvent 1.0: the four required attributes, a time, and JSON data.
pub fn cloudevent(source: &str, kind: &str, data: Value) -> Value {
    json!({
        "specversion": "1.0",
        "id": uuid::Uuid::new_v4().to_string(),
        "source": source,
        "type": kind,
        "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "datacontenttype": "application/json",
        "data": data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listener_receives_a_complete_cloudevent() {
        let events = Events::new("hello-rs");
        let mut listener = events.subscribe();
        events.tool_executed("echo.v1", 3, true, "req-1");
        let published = listener.recv().await.unwrap();
        assert_eq!(published.kind, TOOL_EXECUTED);
        let event: Value = serde_json::from_str(&published.json).unwrap();
        assert_eq!(event["specversion"], "1.0");
        assert_eq!(event["type"], TOOL_EXECUTED);
        assert_eq!(event["source"], "/providers/hello-rs");
        assert!(!event["id"].as_str().unwrap().is_empty());
        assert_eq!(
            event["data"],
            json!({"tool": "echo.v1", "duration_ms": 3, "success": true, "correlation_id": "req-1"})
        );
    }
}
