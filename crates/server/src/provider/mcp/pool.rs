//! The children of one stdio MCP provider (`instances: N`): each is an [`Inner`] with its own
//! process, supervisor, restarts and health. A call goes to the least-loaded live child; what
//! belongs to one client session (its calls, so that the server's sampling and elicitation
//! requests come back through the child that holds them, its subscriptions, resources,
//! prompts and completions) goes to the child the session is pinned to. The tools served are
//! the first live child's; a child that lists other tools is reported, not merged.
//!
//! Only for servers that keep no state per client between calls: two calls of one HTTP client
//! may run in different children.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use contract::{DependencyState, InstanceReport, ToolSchema};

use super::Inner;
use super::downstream::{Caller, Downstream};
use crate::sync::Unpoisoned;

pub(super) struct Pool {
    /// At least one.
    pub(super) instances: Vec<Arc<Inner>>,
    /// Where the next least-loaded search starts, so that idle children take turns.
    next: AtomicUsize,
    /// The disagreement last logged, so each is logged once.
    logged: Mutex<Vec<String>>,
}

impl Pool {
    pub(super) fn new(instances: Vec<Arc<Inner>>) -> Pool {
        assert!(!instances.is_empty(), "a pool has at least one child");
        Pool {
            instances,
            next: AtomicUsize::new(0),
            logged: Mutex::default(),
        }
    }

    pub(super) fn first(&self) -> &Arc<Inner> {
        &self.instances[0]
    }

    /// The child whose tool list is served: the first live one (the first, while none is).
    pub(super) fn lister(&self) -> &Arc<Inner> {
        self.live().next().unwrap_or_else(|| self.first())
    }

    /// The child a call or request of `caller` goes to: its session's pinned child, or the
    /// least-loaded live one for calls of no session (HTTP, stateless MCP requests).
    pub(super) fn for_caller(&self, caller: Option<&Caller>) -> &Arc<Inner> {
        match caller {
            Some(caller) if caller.downstream.is_session() => self.pinned(&caller.downstream),
            _ => self.least_loaded(),
        }
    }

    /// The child a client session's state lives in: fixed by the session's id while that
    /// child is live; a session whose child is down goes to a live one (its state there was
    /// lost with the child anyway).
    pub(super) fn pinned(&self, downstream: &Downstream) -> &Arc<Inner> {
        let index = (downstream.id() as usize) % self.instances.len();
        let pinned = &self.instances[index];
        if self.instances.len() == 1 || pinned.current_peer().is_some() {
            pinned
        } else {
            self.least_loaded()
        }
    }

    /// The live child with the fewest calls in flight; ties go round in turn.
    pub(super) fn least_loaded(&self) -> &Arc<Inner> {
        let n = self.instances.len();
        if n == 1 {
            return self.first();
        }
        let loads: Vec<Option<usize>> = self
            .instances
            .iter()
            .map(|i| {
                i.current_peer()
                    .map(|_| i.in_flight.load(Ordering::Relaxed))
            })
            .collect();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        least_loaded(&loads, start).map_or_else(|| self.first(), |k| &self.instances[k])
    }

    fn live(&self) -> impl Iterator<Item = &Arc<Inner>> {
        self.instances.iter().filter(|i| i.current_peer().is_some())
    }

    /// The tools served: the lister's. A live child listing other tools is logged once per
    /// disagreement (and shown in /health, [`Pool::reports`]).
    pub(super) fn tools(&self) -> Vec<ToolSchema> {
        let lister = self.lister();
        let tools = lister.tools.read_unpoisoned().clone();
        if self.instances.len() > 1 {
            let found: Vec<String> = self
                .instances
                .iter()
                .filter_map(|i| {
                    let why = disagreement(&tools, i)?;
                    Some(format!("instance {}: {why}", i.instance.index))
                })
                .collect();
            let mut logged = self.logged.write_unpoisoned();
            if *logged != found {
                for why in &found {
                    tracing::warn!(service = %lister.service, provider = %lister.name, "children disagree on tools/list ({why}); serving instance {}'s", lister.instance.index);
                }
                *logged = found;
            }
        }
        tools
    }

    /// Each child's state for /health (a pool only).
    pub(super) fn reports(&self) -> Vec<InstanceReport> {
        if self.instances.len() == 1 {
            return Vec::new();
        }
        let served = self.lister().tools.read_unpoisoned().clone();
        self.instances
            .iter()
            .map(|i| {
                let status = i.current_status();
                let connected = i.current_peer().is_some();
                InstanceReport {
                    instance: i.instance.index,
                    status: if connected {
                        DependencyState::Connected
                    } else {
                        status.status
                    },
                    calls_in_flight: i.in_flight.load(Ordering::Relaxed) as u64,
                    restarts: i.generation.load(Ordering::Acquire).saturating_sub(1),
                    error: (!connected).then_some(status.error).flatten(),
                    tools_differ: disagreement(&served, i),
                }
            })
            .collect()
    }
}

/// Of children with their calls in flight (`None`: not live), the one with the fewest,
/// looking from `start` on so that ties go round in turn.
fn least_loaded(loads: &[Option<usize>], start: usize) -> Option<usize> {
    let n = loads.len();
    (0..n)
        .map(|k| (start + k) % n)
        .filter_map(|i| Some((i, loads[i]?)))
        .min_by_key(|&(_, load)| load)
        .map(|(i, _)| i)
}

/// How a live child's tool list differs from the one served, by name; `None` when it agrees
/// or is not live.
fn disagreement(served: &[ToolSchema], child: &Inner) -> Option<String> {
    child.current_peer()?;
    differ(served, &child.tools.read_unpoisoned())
}

/// How `theirs` differs from `served`, by tool name.
fn differ(served: &[ToolSchema], theirs: &[ToolSchema]) -> Option<String> {
    let theirs: BTreeSet<&str> = theirs.iter().map(|t| t.name.as_str()).collect();
    let ours: BTreeSet<&str> = served.iter().map(|t| t.name.as_str()).collect();
    if theirs == ours {
        return None;
    }
    let missing: Vec<&str> = ours.difference(&theirs).copied().collect();
    let extra: Vec<&str> = theirs.difference(&ours).copied().collect();
    Some(match (missing.is_empty(), extra.is_empty()) {
        (false, true) => format!("lacks {}", missing.join(", ")),
        (true, false) => format!("also lists {}", extra.join(", ")),
        _ => format!(
            "lacks {}; also lists {}",
            missing.join(", "),
            extra.join(", ")
        ),
    })
}

/// A call counted in its child's load while it runs.
pub(super) struct InFlight(Arc<Inner>);

impl InFlight {
    pub(super) fn enter(child: &Arc<Inner>) -> InFlight {
        child.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(child.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Which child of its pool an [`Inner`] is (1-based, as /health and logs say it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::provider) struct Instance {
    pub(in crate::provider) index: u32,
    pub(in crate::provider) of: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_loaded_live_child_takes_the_call_and_ties_go_round() {
        assert_eq!(least_loaded(&[Some(3), Some(1), Some(2)], 0), Some(1));
        // Not live: never chosen, however idle.
        assert_eq!(least_loaded(&[Some(3), None, Some(2)], 0), Some(2));
        assert_eq!(least_loaded(&[None, None], 5), None);
        // Idle children take turns as `start` moves on.
        let picks: Vec<usize> = (0..4)
            .map(|start| least_loaded(&[Some(0), Some(0)], start).unwrap())
            .collect();
        assert_eq!(picks, [0, 1, 0, 1]);
    }

    fn tools(names: &[&str]) -> Vec<ToolSchema> {
        names
            .iter()
            .map(|n| serde_json::from_value(serde_json::json!({"name": n, "description": "", "input_schema": {"type": "object"}})).unwrap())
            .collect()
    }

    #[test]
    fn a_child_with_other_tools_is_described_by_name() {
        let served = tools(&["a", "b"]);
        assert_eq!(differ(&served, &tools(&["b", "a"])), None);
        assert_eq!(differ(&served, &tools(&["a"])).unwrap(), "lacks b");
        assert_eq!(
            differ(&served, &tools(&["a", "b", "c"])).unwrap(),
            "also lists c"
        );
        assert_eq!(
            differ(&served, &tools(&["a", "c"])).unwrap(),
            "lacks b; also lists c"
        );
    }
}
