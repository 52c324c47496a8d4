//! The server-to-client requests kept as the server wrote them. rmcp reads an
//! `elicitation/create` into typed structs that keep what they know in an order of their own
//! (each property's keywords, any keyword they do not know is dropped); the client must see the
//! requested schema as the server sent it, so each transport hands every message it reads to
//! [`WireRequests::note`] before rmcp parses it, and the handler asks its client with the params
//! [`WireRequests::take`] gives back (serde_json keeps object keys in the order read).

use std::collections::VecDeque;
use std::sync::Mutex;

use rmcp::model::RequestId;
use serde::Deserialize;
use serde_json::Value;

use crate::sync::Unpoisoned;

/// The methods whose params are kept.
const KEPT: &[&str] = &["elicitation/create"];

/// How many are kept at most: each is taken as soon as its handler runs, so more than a few
/// means the handler never ran (a message rmcp refused); the oldest go first.
const MAX_KEPT: usize = 64;

/// The params of the requests read and not yet asked of a client, by the server's request id.
#[derive(Default)]
pub struct WireRequests {
    kept: Mutex<VecDeque<(RequestId, Value)>>,
}

#[derive(Deserialize)]
struct Request {
    id: RequestId,
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

impl WireRequests {
    /// Reads one JSON-RPC message as it came off the wire (a JSON line, an SSE event's data);
    /// keeps its params when it is a request of a kept method. Every other message costs a
    /// substring search.
    pub fn note(&self, message: &str) {
        if !KEPT.iter().any(|method| message.contains(method)) {
            return;
        }
        let Ok(request) = serde_json::from_str::<Request>(message) else {
            return;
        };
        let (true, Some(params)) = (KEPT.contains(&request.method.as_str()), request.params) else {
            return;
        };
        let mut kept = self.kept.write_unpoisoned();
        kept.retain(|(id, _)| *id != request.id);
        if kept.len() == MAX_KEPT {
            kept.pop_front();
        }
        kept.push_back((request.id, params));
    }

    /// The params of the server's request `id` as it sent them, once.
    pub fn take(&self, id: &RequestId) -> Option<Value> {
        let mut kept = self.kept.write_unpoisoned();
        let at = kept.iter().position(|(kept_id, _)| kept_id == id)?;
        kept.remove(at).map(|(_, params)| params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASK: &str = r#"{"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"z":{"type":"string","x-widget":"radio","enum":["b","a"]},"a":{"type":"boolean"}}}}}"#;

    #[test]
    fn an_elicitation_is_given_back_once_as_written_keys_in_order() {
        let wire = WireRequests::default();
        wire.note(ASK);
        let params = wire.take(&RequestId::Number(7)).unwrap();
        let written: Value = serde_json::from_str(ASK).unwrap();
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            serde_json::to_string(&written["params"]).unwrap()
        );
        assert!(
            serde_json::to_string(&params)
                .unwrap()
                .contains(r#"{"z":{"type":"string","x-widget":"radio","enum":["b","a"]},"a""#),
            "{params}"
        );
        assert!(wire.take(&RequestId::Number(7)).is_none(), "given once");
    }

    #[test]
    fn other_messages_and_other_methods_are_not_kept() {
        let wire = WireRequests::default();
        for message in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"elicitation/create"}]}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"elicitation/create","params":{}}"#,
            "not json elicitation/create",
        ] {
            wire.note(message);
        }
        assert!(wire.kept.write_unpoisoned().is_empty());
    }

    #[test]
    fn the_oldest_go_first_past_the_bound_and_a_reused_id_replaces() {
        let wire = WireRequests::default();
        for id in 0..=MAX_KEPT {
            wire.note(&ASK.replace(r#""id":7"#, &format!(r#""id":{id}"#)));
        }
        assert_eq!(wire.kept.write_unpoisoned().len(), MAX_KEPT);
        assert!(
            wire.take(&RequestId::Number(0)).is_none(),
            "the oldest went"
        );
        assert!(wire.take(&RequestId::Number(MAX_KEPT as i64)).is_some());
        wire.note(ASK);
        wire.note(&ASK.replace(r#""message":"m""#, r#""message":"again""#));
        assert_eq!(
            wire.take(&RequestId::Number(7)).unwrap()["message"],
            "again"
        );
    }
}
