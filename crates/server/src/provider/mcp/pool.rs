//! The children of one stdio MCP provider (`instances: N`): each is an [`Inner`] with its own
//! process, supervisor, restarts and health. A call goes to the least-loaded live child; what
//! belongs to one client session (its calls, so that the server's sampling and elicitation
//! requests come back through the child that holds them, its subscriptions, resources,
//! prompts and completions) goes to the child the session is pinned to. The tools served are
//! the first live child's; a child that lists other tools is reported, not merged.
//!
//! With `max_instances` the pool grows while calls queue: a call that finds every live child
//! with `scale_up_at` calls in flight starts one more child (one at a time), and a child so
//! started is stopped once it has been idle for `scale_down_after`. Sessions are pinned among
//! the `instances` that always run, so stopping a grown child loses no session's state.
//!
//! Only for servers that keep no state per client between calls: two calls of one HTTP client
//! may run in different children.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use contract::{DependencyState, InstanceReport, ToolSchema};
use tokio::task::JoinHandle;

use super::Inner;
use crate::config::{Growth, OutlierConfig};
use crate::dependency::outlier::{self, Ended, least_loaded, now_ms};
use crate::provider::clients::{Caller, ClientSession};
use crate::shutdown::Shutdown;
use crate::sync::Unpoisoned;

/// Makes the child of a given place in the pool (not started yet).
pub(super) type MakeChild = Box<dyn Fn(Instance) -> Arc<Inner> + Send + Sync>;

/// How long a stopped child's calls in flight may still run before it is stopped anyway.
const DRAIN_BOUND: Duration = Duration::from_secs(60);
/// How long a child's MCP stdio shutdown sequence may take before its process group is killed.
const STOP_BOUND: Duration = Duration::from_secs(8);

pub(super) struct Pool {
    /// The `instances` children that always run (at least one); sessions are pinned among
    /// these.
    base: Vec<Arc<Inner>>,
    /// Children started while calls queued (`max_instances`), each stopped when idle.
    grown: RwLock<Vec<Arc<Inner>>>,
    growth: Option<Grower>,
    make: MakeChild,
    /// Stops every child, the growing and the shrinking.
    shutdown: Shutdown,
    /// Each running child's supervisor, by its instance number.
    supervisors: Mutex<Vec<(u32, JoinHandle<()>)>>,
    /// Restarts of grown children stopped since, so that the total never goes down.
    retired_restarts: AtomicU64,
    /// Where the next least-loaded search starts, so that idle children take turns.
    next: AtomicUsize,
    /// The disagreement last logged, so each is logged once.
    logged: Mutex<Vec<String>>,
    /// When a child is left out of rotation (`resilience.outlier`).
    outlier: OutlierConfig,
}

struct Grower {
    config: Growth,
    /// A child is being started: the pool grows by one at a time.
    starting: AtomicBool,
}

impl Pool {
    /// A pool of `instances` children, growing as `growth` says; `make` makes each child.
    pub(super) fn new(
        instances: u32,
        growth: Option<Growth>,
        outlier: OutlierConfig,
        make: MakeChild,
        shutdown: Shutdown,
    ) -> Pool {
        assert!(instances >= 1, "a pool has at least one child");
        let of = growth.map_or(instances, |g| g.max);
        Pool {
            base: (1..=instances)
                .map(|index| make(Instance { index, of }))
                .collect(),
            grown: RwLock::default(),
            growth: growth.map(|config| Grower {
                config,
                starting: AtomicBool::new(false),
            }),
            make,
            shutdown,
            supervisors: Mutex::default(),
            retired_restarts: AtomicU64::new(0),
            next: AtomicUsize::new(0),
            logged: Mutex::default(),
            outlier,
        }
    }

    pub(super) fn first(&self) -> &Arc<Inner> {
        &self.base[0]
    }

    /// Every child running now: the base ones, then the grown ones.
    pub(super) fn children(&self) -> Vec<Arc<Inner>> {
        let mut all = self.base.clone();
        if self.growth.is_some() {
            all.extend(self.grown.read_unpoisoned().iter().cloned());
        }
        all
    }

    /// Starts the base children's supervisors (and, for a pool that grows, the task that
    /// stops idle grown children); a second call does nothing.
    pub(super) fn start(self: &Arc<Self>) {
        let mut supervisors = self.supervisors.write_unpoisoned();
        if !supervisors.is_empty() {
            return;
        }
        *supervisors = self
            .base
            .iter()
            .map(|i| (i.instance.index, i.shutdown.spawn(i.clone().supervise())))
            .collect();
        if let Some(grower) = &self.growth {
            let pool = Arc::downgrade(self);
            let every = (grower.config.scale_down_after / 4)
                .clamp(Duration::from_millis(25), Duration::from_secs(5));
            let shutdown = self.shutdown.clone();
            self.shutdown.spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = shutdown.cancelled() => break,
                        _ = tick.tick() => {}
                    }
                    let Some(pool) = pool.upgrade() else { break };
                    pool.stop_idle();
                }
            });
        }
    }

    /// Tells every child to stop and waits for their supervisors, at most [`STOP_BOUND`];
    /// false when some did not stop in time.
    pub(super) async fn stop(&self) -> bool {
        self.shutdown.cancel();
        let handles = std::mem::take(&mut *self.supervisors.write_unpoisoned());
        let stopped = futures::future::join_all(handles.into_iter().map(|(_, h)| h));
        tokio::time::timeout(STOP_BOUND, stopped).await.is_ok()
    }

    /// The child whose tool list is served: the first live one (the first, while none is).
    pub(super) fn lister(&self) -> Arc<Inner> {
        // Read per MCP request (the upstream's capabilities): no list of the children is built.
        let live = |i: &&Arc<Inner>| i.current_peer().is_some();
        if let Some(child) = self.base.iter().find(live) {
            return child.clone();
        }
        if self.growth.is_some()
            && let Some(child) = self.grown.read_unpoisoned().iter().find(live)
        {
            return child.clone();
        }
        self.first().clone()
    }

    /// The child a call or request of `caller` goes to: its session's pinned child, or the
    /// least-loaded live one for calls of no session (HTTP, stateless MCP requests).
    pub(super) fn for_caller(&self, caller: Option<&Caller>) -> Arc<Inner> {
        match caller {
            Some(caller) if caller.is_session() => self.pinned(caller.session.as_ref()),
            _ => self.least_loaded(),
        }
    }

    /// The child a client session's state lives in: one of the base children, fixed by the
    /// session's id while that child is live; a session whose child is down goes to a live
    /// one (its state there was lost with the child anyway).
    pub(super) fn pinned(&self, session: &dyn ClientSession) -> Arc<Inner> {
        let index = (session.id() as usize) % self.base.len();
        let pinned = &self.base[index];
        if (self.base.len() == 1 && self.growth.is_none()) || pinned.current_peer().is_some() {
            pinned.clone()
        } else {
            self.least_loaded()
        }
    }

    /// The live child with the fewest calls in flight; ties go round in turn.
    pub(super) fn least_loaded(&self) -> Arc<Inner> {
        if self.base.len() == 1 && self.growth.is_none() {
            return self.first().clone();
        }
        let grown = self.grown.read_unpoisoned();
        if grown.is_empty() {
            return self.least_loaded_of(&self.base);
        }
        let children: Vec<Arc<Inner>> = self.base.iter().chain(grown.iter()).cloned().collect();
        drop(grown);
        self.least_loaded_of(&children)
    }

    fn least_loaded_of(&self, children: &[Arc<Inner>]) -> Arc<Inner> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let now = now_ms();
        // Ejected children are left out, unless that leaves none.
        let in_rotation: Vec<Option<usize>> = loads(children)
            .into_iter()
            .zip(children)
            .map(|(load, child)| load.filter(|_| !child.outlier.ejected(now)))
            .collect();
        let chosen =
            least_loaded(&in_rotation, start).or_else(|| least_loaded(&loads(children), start));
        match chosen {
            Some(k) => children[k].clone(),
            None => self.first().clone(),
        }
    }

    /// A call of no session on `child` ended: recorded, and the child ejected when it is an
    /// outlier and another child stays in rotation.
    pub(super) fn ended(&self, child: &Arc<Inner>, ended: Ended) {
        if !self.outlier.enabled || (self.base.len() == 1 && self.growth.is_none()) {
            return;
        }
        let children = self.children();
        let others = children
            .iter()
            .filter(|c| !Arc::ptr_eq(c, child) && c.current_peer().is_some())
            .map(|c| &c.outlier);
        let Some((interval, why)) = outlier::judge(&child.outlier, others, ended, &self.outlier)
        else {
            return;
        };
        tracing::warn!(
            service = %child.service, provider = %child.name, instance = child.instance.index,
            ejected_ms = interval.as_millis() as u64,
            "child left out of rotation: {why}; it gets calls again after the interval"
        );
    }

    /// Before a call of no session goes to its child: when every live child already has
    /// `scale_up_at` calls in flight and the pool may grow, one more child is started (the
    /// call itself does not wait for it).
    pub(super) fn grow_if_queueing(self: &Arc<Self>) {
        let Some(grower) = &self.growth else { return };
        let children = self.children();
        if !should_grow(&loads(&children), grower.config) {
            return;
        }
        if grower.starting.swap(true, Ordering::AcqRel) {
            return;
        }
        let taken: BTreeSet<u32> = children.iter().map(|c| c.instance.index).collect();
        let Some(index) = (1..=grower.config.max).find(|k| !taken.contains(k)) else {
            grower.starting.store(false, Ordering::Release);
            return;
        };
        let child = (self.make)(Instance {
            index,
            of: grower.config.max,
        });
        tracing::info!(
            service = %child.service, provider = %child.name, instance = index, of = grower.config.max,
            "starting another child: every live child has {} or more calls in flight", grower.config.scale_up_at
        );
        child.mark_idle_now();
        let supervisor = child.shutdown.spawn(child.clone().supervise());
        self.supervisors
            .write_unpoisoned()
            .push((index, supervisor));
        self.grown.write_unpoisoned().push(child.clone());
        let pool = Arc::downgrade(self);
        let shutdown = self.shutdown.clone();
        self.shutdown.spawn(async move {
            let mut done = child.first_attempt_done.subscribe();
            tokio::select! {
                _ = done.wait_for(|d| *d) => {}
                _ = shutdown.cancelled() => return,
            }
            if let Some(pool) = pool.upgrade()
                && let Some(grower) = &pool.growth
            {
                grower.starting.store(false, Ordering::Release);
            }
        });
    }

    /// Stops the grown children idle for `scale_down_after`: out of the pool first, so no
    /// new call goes to one, then, once its calls in flight are done, stopped.
    fn stop_idle(self: &Arc<Self>) {
        let Some(grower) = &self.growth else { return };
        let idle_for = grower.config.scale_down_after;
        let leaving: Vec<Arc<Inner>> = {
            let mut grown = self.grown.write_unpoisoned();
            let (leaving, staying) = std::mem::take(&mut *grown)
                .into_iter()
                .partition(|c| c.idle_for() >= Some(idle_for));
            *grown = staying;
            leaving
        };
        for child in leaving {
            let supervisor = {
                let mut supervisors = self.supervisors.write_unpoisoned();
                supervisors
                    .iter()
                    .position(|(k, _)| *k == child.instance.index)
                    .map(|at| supervisors.swap_remove(at).1)
            };
            let pool = Arc::downgrade(self);
            self.shutdown.spawn(async move {
                // Bounded, and cut short when the whole pool stops.
                let drained = tokio::select! {
                    drained = tokio::time::timeout(DRAIN_BOUND, child.drained()) => drained.is_ok(),
                    _ = child.shutdown.cancelled() => false,
                };
                child.shutdown.cancel();
                let stopped = match supervisor {
                    Some(s) => tokio::time::timeout(STOP_BOUND, s).await.is_ok(),
                    None => true,
                };
                tracing::info!(
                    service = %child.service, provider = %child.name, instance = child.instance.index,
                    drained, stopped, "stopped a grown child: idle for {} ms", idle_for.as_millis()
                );
                if let Some(pool) = pool.upgrade() {
                    pool.retired_restarts
                        .fetch_add(child.restarts(), Ordering::AcqRel);
                }
            });
        }
    }

    /// Restarts of every child, those stopped since included.
    pub(super) fn restarts(&self) -> u64 {
        self.children().iter().map(|c| c.restarts()).sum::<u64>()
            + self.retired_restarts.load(Ordering::Acquire)
    }

    /// The tools served: the lister's. A live child listing other tools is logged once per
    /// disagreement (and shown in /health, [`Pool::reports`]).
    pub(super) fn tools(&self) -> Vec<ToolSchema> {
        let lister = self.lister();
        let tools = lister.tools.read_unpoisoned().clone();
        let children = self.children();
        if children.len() > 1 {
            let found: Vec<String> = children
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

    /// Each child's state for /health (a pool only, or one that may grow).
    pub(super) fn reports(&self) -> Vec<InstanceReport> {
        if self.base.len() == 1 && self.growth.is_none() {
            return Vec::new();
        }
        let served = self.lister().tools.read_unpoisoned().clone();
        self.children()
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
                    restarts: i.restarts(),
                    ejected_for_ms: i.outlier.state(now_ms()).0,
                    ejections: i.outlier.state(now_ms()).1,
                    error: (!connected).then_some(status.error).flatten(),
                    tools_differ: disagreement(&served, i),
                }
            })
            .collect()
    }
}

/// Each child's calls in flight; `None` for one that is not live.
fn loads(children: &[Arc<Inner>]) -> Vec<Option<usize>> {
    children
        .iter()
        .map(|i| {
            i.current_peer()
                .map(|_| i.in_flight.load(Ordering::Relaxed))
        })
        .collect()
}

/// Whether a pool of children with these loads (`None`: not live) should start another: it
/// has room, and every live child has at least `scale_up_at` calls in flight. A pool with no
/// live child does not grow: whatever stops its children would stop the new one too.
fn should_grow(loads: &[Option<usize>], growth: Growth) -> bool {
    let mut live = loads.iter().flatten().peekable();
    loads.len() < growth.max as usize
        && live.peek().is_some()
        && live.all(|&load| load >= growth.scale_up_at as usize)
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
        self.0.mark_idle_now();
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.no_call_in_flight.notify_waiters();
        }
    }
}

impl Inner {
    fn mark_idle_now(&self) {
        self.last_call_ended_ms.store(now_ms(), Ordering::Release);
    }

    /// How long it has had no call in flight; `None` while it has one.
    fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let since = self.last_call_ended_ms.load(Ordering::Acquire);
        Some(Duration::from_millis(now_ms().saturating_sub(since)))
    }

    /// Resolves once it has no call in flight.
    async fn drained(&self) {
        loop {
            let notified = self.no_call_in_flight.notified();
            tokio::pin!(notified);
            // Registered before the count is read, so a last call ending in between wakes it.
            notified.as_mut().enable();
            if self.in_flight.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Times it was connected again after its first connection.
    pub(super) fn restarts(&self) -> u64 {
        self.generation.load(Ordering::Acquire).saturating_sub(1)
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
    fn the_pool_grows_when_every_live_child_has_scale_up_at_calls_and_there_is_room() {
        let growth = Growth {
            max: 3,
            scale_up_at: 2,
            scale_down_after: Duration::from_secs(1),
        };
        assert!(should_grow(&[Some(2)], growth));
        assert!(should_grow(&[Some(5), Some(2)], growth));
        // One live child below the mark takes the next call.
        assert!(!should_grow(&[Some(5), Some(1)], growth));
        assert!(!should_grow(&[Some(1)], growth));
        // A child not live (starting, or down) is not counted either way.
        assert!(should_grow(&[Some(2), None], growth));
        // No live child: nothing to relieve, and a new child would fail as they do.
        assert!(!should_grow(&[None], growth));
        assert!(!should_grow(&[None, None], growth));
        // Full.
        assert!(!should_grow(&[Some(9), Some(9), Some(9)], growth));
        assert!(!should_grow(&[Some(9), Some(9), None], growth));
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
