//! `StreamEvents`: the provider's CloudEvents 1.0 (structured JSON mode), followed for as long
//! as a connection lives and subscribed again on the next one. Each event is checked (the
//! required attributes `specversion` "1.0", `id`, `source`, `type`), written as one structured
//! log line, counted by type (GET /metrics), and forwarded to the service's MCP client sessions
//! as a `notifications/message` (level info, logger `{provider}`, data the event).
//!
//! A provider without events (UNIMPLEMENTED) is fine: nothing is followed. A stream that ends
//! is opened again after a heartbeat interval; one that breaks with a transport failure is a
//! lost connection (the provider goes to ERROR at once, without waiting for the heartbeat).

#![allow(deprecated)] // MCP logging is deprecated by SEP-2577, still in the versions served

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use provider_proto::v1::StreamEventsRequest;
use provider_proto::v1::provider_client::ProviderClient;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use serde_json::Value;
use tonic::transport::Channel;

use super::Inner;
use super::calls::is_transport;
use super::connection::status_text;
use super::error::GrpcError;
use crate::provider::clients::ClientNotice;
use crate::sync::Unpoisoned;

/// Distinct event types counted by name; past this, further types count as `other` (the
/// label's values come from the provider, so they are bounded here).
const MAX_TYPES: usize = 64;
/// The count of events that failed the check.
pub(super) const INVALID: &str = "invalid";

/// Events received, by type (and [`INVALID`]).
#[derive(Default)]
pub(super) struct EventCounts(Mutex<BTreeMap<String, u64>>);

impl EventCounts {
    fn count(&self, kind: &str) {
        let mut counts = self.0.write_unpoisoned();
        let key = if counts.contains_key(kind) || counts.len() < MAX_TYPES {
            kind
        } else {
            "other"
        };
        *counts.entry(key.to_owned()).or_default() += 1;
    }

    pub(super) fn snapshot(&self) -> Vec<(String, u64)> {
        let counts = self.0.read_unpoisoned();
        counts.iter().map(|(k, v)| (k.clone(), *v)).collect()
    }
}

/// A CloudEvent that passed the check.
#[derive(Debug, PartialEq)]
pub(super) struct CloudEvent {
    pub(super) id: String,
    pub(super) source: String,
    pub(super) kind: String,
    /// The whole event as sent.
    pub(super) event: Value,
}

/// Checks one event in the JSON event format: a JSON object with `specversion` "1.0" and
/// non-empty string `id`, `source` and `type`.
pub(super) fn check(text: &str) -> Result<CloudEvent, GrpcError> {
    let event: Value = serde_json::from_str(text).map_err(GrpcError::EventNotJson)?;
    let Value::Object(attributes) = &event else {
        return Err(GrpcError::EventNotObject);
    };
    let text_attribute = |name: &'static str| match attributes.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(_) => Err(GrpcError::AttributeNotText(name)),
        None => Err(GrpcError::AttributeMissing(name)),
    };
    let version = text_attribute("specversion")?;
    if version != "1.0" {
        return Err(GrpcError::SpecVersion(version));
    }
    Ok(CloudEvent {
        id: text_attribute("id")?,
        source: text_attribute("source")?,
        kind: text_attribute("type")?,
        event,
    })
}

impl Inner {
    /// Follows `StreamEvents` on the connection `generation` until it is lost or aborted.
    pub(super) async fn follow_events(self: Arc<Self>, channel: Channel, generation: u64) {
        loop {
            let opened = ProviderClient::new(channel.clone())
                .stream_events(StreamEventsRequest { types: Vec::new() })
                .await;
            let mut stream = match opened {
                Ok(answer) => answer.into_inner(),
                Err(status) if status.code() == tonic::Code::Unimplemented => {
                    tracing::info!(service = %self.service, provider = %self.name, "the provider streams no events");
                    return;
                }
                Err(status) if is_transport(&status) => {
                    self.connection_failed(
                        generation,
                        format!("StreamEvents failed: {}", status_text(&status)),
                    );
                    return;
                }
                Err(status) => {
                    tracing::warn!(service = %self.service, provider = %self.name, "StreamEvents refused: {}", status_text(&status));
                    tokio::time::sleep(self.heartbeat_every).await;
                    continue;
                }
            };
            loop {
                match stream.message().await {
                    Ok(Some(event)) => self.event_received(&event.cloudevent_json).await,
                    Ok(None) => break,
                    Err(status) if is_transport(&status) => {
                        self.connection_failed(
                            generation,
                            format!("the event stream broke: {}", status_text(&status)),
                        );
                        return;
                    }
                    Err(status) => {
                        tracing::warn!(service = %self.service, provider = %self.name, "the event stream ended: {}", status_text(&status));
                        break;
                    }
                }
            }
            tokio::time::sleep(self.heartbeat_every).await;
        }
    }

    async fn event_received(&self, text: &str) {
        let event = match check(text) {
            Ok(event) => event,
            Err(why) => {
                self.events.count(INVALID);
                tracing::warn!(service = %self.service, provider = %self.name, "provider event dropped, not a CloudEvent 1.0: {why}");
                return;
            }
        };
        self.events.count(&event.kind);
        let data = event.event.get("data");
        let data_text = data.map(Value::to_string).unwrap_or_default();
        let correlation_id = data
            .and_then(|d| d.get("correlation_id"))
            .and_then(Value::as_str)
            .unwrap_or("");
        tracing::info!(
            service = %self.service, provider = %self.name,
            event_id = %event.id, event_source = %event.source, event_type = %event.kind,
            correlation_id, data = %data_text,
            "provider event"
        );
        let params = LoggingMessageNotificationParam::new(LoggingLevel::Info, event.event)
            .with_logger(self.name.clone());
        for session in self.sessions.live() {
            session.notify(ClientNotice::Log(params.clone())).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cloudevent_needs_specversion_1_0_and_id_source_type() {
        let ok = r#"{"specversion":"1.0","id":"1","source":"hello-rs","type":"provider.tool.executed","data":{"tool":"echo.v1"}}"#;
        let event = check(ok).unwrap();
        assert_eq!(event.kind, "provider.tool.executed");
        assert_eq!(event.source, "hello-rs");
        for (bad, says) in [
            (r#"{"id":"1","source":"s","type":"t"}"#, "specversion"),
            (
                r#"{"specversion":"0.3","id":"1","source":"s","type":"t"}"#,
                "0.3",
            ),
            (r#"{"specversion":"1.0","source":"s","type":"t"}"#, "`id`"),
            (r#"{"specversion":"1.0","id":"1","type":"t"}"#, "`source`"),
            (r#"{"specversion":"1.0","id":"1","source":"s"}"#, "`type`"),
            (
                r#"{"specversion":"1.0","id":"","source":"s","type":"t"}"#,
                "`id`",
            ),
            (
                r#"{"specversion":"1.0","id":7,"source":"s","type":"t"}"#,
                "`id`",
            ),
            ("[1]", "object"),
            ("{", "JSON"),
        ] {
            let why = check(bad).unwrap_err().to_string();
            assert!(why.contains(says), "{bad}: {why}");
        }
    }

    #[test]
    fn the_reasons_read_as_before() {
        let why = |text: &str| check(text).unwrap_err().to_string();
        assert_eq!(
            why(r#"{"specversion":"0.3","id":"1","source":"s","type":"t"}"#),
            "specversion is '0.3', not '1.0'"
        );
        assert_eq!(
            why(r#"{"specversion":"1.0","source":"s","type":"t"}"#),
            "`id` is missing"
        );
        assert_eq!(
            why(r#"{"specversion":"1.0","id":7,"source":"s","type":"t"}"#),
            "`id` is not a non-empty string"
        );
        assert_eq!(why("[1]"), "not a JSON object");
        assert!(why("{").starts_with("not JSON: EOF"), "{}", why("{"));
    }

    #[test]
    fn counts_are_by_type_and_bounded() {
        let counts = EventCounts::default();
        counts.count("a");
        counts.count("a");
        counts.count(INVALID);
        assert_eq!(
            counts.snapshot(),
            vec![("a".to_owned(), 2), (INVALID.to_owned(), 1)]
        );
        for i in 0..(MAX_TYPES * 2) {
            counts.count(&format!("t{i}"));
        }
        let snapshot = counts.snapshot();
        assert_eq!(snapshot.len(), MAX_TYPES + 1, "the bound, plus `other`");
        assert!(snapshot.iter().any(|(k, n)| k == "other" && *n > 0));
    }
}
