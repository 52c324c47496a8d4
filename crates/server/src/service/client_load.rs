//! What each client holds of a service now: its live MCP sessions, its open MCP streams
//! (`GET /mcp`, `GET /sse`) and its calls in flight (running or queued, REST and MCP alike),
//! counted by the client's name (its API key, else its OAuth subject, else its IP address).
//! Streams are bounded per client here (`mcp.max_streams_per_client`); the session table
//! bounds sessions (`mcp/sessions.rs`) and admission shares the call slots
//! (`service/admission.rs`). `/health` shows the clients holding the most.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::sync::Unpoisoned;

/// What one client holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub sessions: u64,
    pub streams: u64,
    pub calls: u64,
}

impl Held {
    fn is_empty(&self) -> bool {
        *self == Held::default()
    }

    fn total(&self) -> u64 {
        self.sessions + self.streams + self.calls
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Session,
    Stream,
    Call,
}

impl Kind {
    fn count(self, held: &mut Held) -> &mut u64 {
        match self {
            Kind::Session => &mut held.sessions,
            Kind::Stream => &mut held.streams,
            Kind::Call => &mut held.calls,
        }
    }
}

/// Every client's holdings; a client holding nothing has no entry.
#[derive(Default)]
pub struct ClientLoad {
    held: Mutex<HashMap<Arc<str>, Held>>,
}

/// One thing a client holds, given back when dropped.
pub struct Holding {
    load: Arc<ClientLoad>,
    client: Arc<str>,
    kind: Kind,
}

impl std::fmt::Debug for Holding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holding")
            .field("client", &self.client)
            .finish()
    }
}

impl Holding {
    /// Whose it is.
    pub fn client(&self) -> &Arc<str> {
        &self.client
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.load.give_back(&self.client, self.kind);
    }
}

impl ClientLoad {
    fn take(self: &Arc<Self>, client: &Arc<str>, kind: Kind, max: Option<u64>) -> Option<Holding> {
        let mut held = self.held.write_unpoisoned();
        let entry = held.entry(client.clone()).or_default();
        if max.is_some_and(|max| *kind.count(entry) >= max) {
            if entry.is_empty() {
                held.remove(client);
            }
            return None;
        }
        *kind.count(entry) += 1;
        Some(Holding {
            load: self.clone(),
            client: client.clone(),
            kind,
        })
    }

    fn give_back(&self, client: &Arc<str>, kind: Kind) {
        let mut held = self.held.write_unpoisoned();
        if let Some(entry) = held.get_mut(client) {
            let count = kind.count(entry);
            *count = count.saturating_sub(1);
            if entry.is_empty() {
                held.remove(client);
            }
        }
    }

    /// A live session of `client` (the session table bounds them).
    pub fn session(self: &Arc<Self>, client: &Arc<str>) -> Holding {
        self.take(client, Kind::Session, None)
            .expect("an unbounded count always takes")
    }

    /// An open stream of `client`; `None` when it holds `max` already.
    pub fn stream(self: &Arc<Self>, client: &Arc<str>, max: u64) -> Option<Holding> {
        self.take(client, Kind::Stream, Some(max))
    }

    /// A call of `client` in flight (admission shares the slots).
    pub fn call(self: &Arc<Self>, client: &Arc<str>) -> Holding {
        self.take(client, Kind::Call, None)
            .expect("an unbounded count always takes")
    }

    /// Each client holding sessions, with their number (shared with the other replicas).
    pub fn sessions_by_client(&self) -> Vec<(Arc<str>, u64)> {
        self.held
            .read_unpoisoned()
            .iter()
            .filter(|(_, h)| h.sessions > 0)
            .map(|(c, h)| (c.clone(), h.sessions))
            .collect()
    }

    /// What `client` holds now.
    pub fn of(&self, client: &str) -> Held {
        self.held
            .read_unpoisoned()
            .get(client)
            .copied()
            .unwrap_or_default()
    }

    /// How many clients hold something, and the `n` holding the most (sessions, streams and
    /// calls together), most first.
    pub fn top(&self, n: usize) -> (u64, Vec<(Arc<str>, Held)>) {
        let held = self.held.read_unpoisoned();
        let mut top: Vec<(Arc<str>, Held)> = held.iter().map(|(c, h)| (c.clone(), *h)).collect();
        top.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then_with(|| a.0.cmp(&b.0)));
        top.truncate(n);
        (held.len() as u64, top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holdings_count_while_held_and_a_client_holding_nothing_is_forgotten() {
        let load = Arc::new(ClientLoad::default());
        let (a, b): (Arc<str>, Arc<str>) = ("a".into(), "b".into());
        let session = load.session(&a);
        let calls = [load.call(&a), load.call(&a)];
        let stream = load.stream(&b, 1).unwrap();
        assert_eq!(
            load.of("a"),
            Held {
                sessions: 1,
                streams: 0,
                calls: 2
            }
        );
        assert!(load.stream(&b, 1).is_none(), "b holds its one stream");
        let (clients, top) = load.top(1);
        assert_eq!((clients, top[0].0.as_ref()), (2, "a"));
        drop(calls);
        drop(session);
        assert_eq!(load.top(5).0, 1, "a holds nothing: forgotten");
        drop(stream);
        assert!(load.held.read_unpoisoned().is_empty());
        assert!(load.stream(&b, 0).is_none(), "a bound of 0 takes nothing");
        assert!(load.held.read_unpoisoned().is_empty(), "and keeps no entry");
    }
}
