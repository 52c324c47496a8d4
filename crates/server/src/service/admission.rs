//! Admission control: which tool calls run now, which wait, which are turned away.
//!
//! A call needs a slot of its tool (when limited), of its provider (when limited) and of the
//! service (`limits.max_concurrent_calls`), taken in that order so two calls never wait on
//! each other. A call that cannot have all three at once waits in one bounded queue
//! (`limits.queue_depth` calls at most, each for `limits.queue_timeout_ms` at most); past
//! either bound it is refused with a reason the HTTP and MCP surfaces answer as 503. The
//! service's slots are shared between clients ([`FairShare`]): a freed slot goes to the waiting
//! client holding the fewest, and a full queue makes room by refusing the newest call of the
//! client waiting most, so one client's flood waits behind its own calls.
//!
//! Gates are kept across tool-list rebuilds and reloads as long as their limit is unchanged,
//! so a rebuild never hands out a fresh set of slots while the old ones are still held.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::fair_share::{FairShare, NoSlot, Slot};
use crate::sync::Unpoisoned;

/// Where a call waited when it was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Service,
    Provider,
    Tool,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Service => "service",
            Scope::Provider => "provider",
            Scope::Tool => "tool",
        }
    }
}

/// Why a call was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the queue is full ({depth} calls already wait for a slot)")]
    QueueFull { depth: u64 },
    #[error(
        "no free slot of the {} within {} ms (limit {limit} at once)",
        scope.as_str(),
        waited.as_millis()
    )]
    Waited {
        scope: Scope,
        limit: u64,
        waited: Duration,
    },
    #[error(
        "the queue is full ({depth} calls wait) and this client had the most of them: its newest gave its place to another client's call"
    )]
    Yielded { depth: u64 },
}

impl Refusal {
    /// Where the call was when refused: the queue (full) or the gate it waited at.
    pub fn scope(&self) -> Scope {
        match self {
            Refusal::QueueFull { .. } | Refusal::Yielded { .. } => Scope::Service,
            Refusal::Waited { scope, .. } => *scope,
        }
    }
}

/// Seconds a refused client is told to wait: long enough for running calls to finish their
/// slot, short enough that a retry is not late.
pub const RETRY_AFTER_SECONDS: u64 = 1;

/// `limit` slots, shared by every call that needs them. A reloaded limit changes the gate in
/// place, never by a new set of slots beside the old: a raised limit adds slots at once; a
/// lowered one takes back the free slots and owes the rest, kept back from the calls running
/// as they end. So however calls and reloads interleave, no more calls hold a slot than the
/// limit in force, once the calls that held one before it was lowered have ended.
pub struct Gate {
    limit: AtomicU64,
    slots: Arc<Semaphore>,
    /// Slots a lowered limit has still to take back from the calls running.
    owed: AtomicU64,
    /// One resize at a time.
    resizing: Mutex<()>,
}

fn permits(n: u64) -> usize {
    usize::try_from(n)
        .unwrap_or(usize::MAX)
        .min(Semaphore::MAX_PERMITS)
}

impl Gate {
    pub(super) fn new(limit: u64) -> Arc<Gate> {
        Arc::new(Gate {
            limit: AtomicU64::new(limit),
            slots: Arc::new(Semaphore::new(permits(limit))),
            owed: AtomicU64::new(0),
            resizing: Mutex::new(()),
        })
    }

    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Acquire)
    }

    /// A free slot now, if there is one.
    pub(super) fn try_take(self: &Arc<Self>) -> Option<GateSlot> {
        let permit = self.slots.clone().try_acquire_owned().ok()?;
        Some(self.slot(permit))
    }

    /// A slot, when one is free.
    async fn take(self: &Arc<Self>) -> GateSlot {
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("a gate's semaphore is never closed");
        self.slot(permit)
    }

    fn slot(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> GateSlot {
        GateSlot {
            permit: Some(permit),
            gate: self.clone(),
        }
    }

    /// A slot a call gives back: kept (forgotten) while a lowered limit owes slots, else
    /// returned to the caller to pass on or let go to the semaphore.
    pub(super) fn given_back(&self, permit: OwnedSemaphorePermit) -> Option<OwnedSemaphorePermit> {
        if self
            .owed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
        {
            permit.forget();
            return None;
        }
        Some(permit)
    }

    /// Applies a reloaded limit in place; calls running keep their slots.
    pub(super) fn resize(&self, limit: u64) {
        let _one = self.resizing.write_unpoisoned();
        let old = self.limit.swap(limit, Ordering::AcqRel);
        match limit.cmp(&old) {
            std::cmp::Ordering::Greater => {
                // What is owed is forgiven first; the rest are new slots.
                let raised = limit - old;
                let forgiven = self.pay(raised).min(raised);
                self.slots.add_permits(permits(raised - forgiven));
            }
            std::cmp::Ordering::Less => {
                // Owed before the free slots are taken, so a slot given back meanwhile is kept
                // too; what that paid of the debt is not taken twice.
                let cut = old - limit;
                self.owed.fetch_add(cut, Ordering::AcqRel);
                let taken = self.slots.forget_permits(permits(cut)) as u64;
                let was = self.pay(taken);
                self.slots.add_permits(permits(taken.saturating_sub(was)));
            }
            std::cmp::Ordering::Equal => {}
        }
    }

    /// Takes `n` off what is owed (never below nothing); what was owed before.
    fn pay(&self, n: u64) -> u64 {
        self.owed
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |owed| {
                Some(owed.saturating_sub(n))
            })
            .unwrap_or_default()
    }

    /// Free slots now (tests).
    #[cfg(test)]
    pub(super) fn available(&self) -> usize {
        self.slots.available_permits()
    }
}

/// One slot of a tool's or provider's gate, held by a running call; given back when dropped.
pub struct GateSlot {
    permit: Option<OwnedSemaphorePermit>,
    gate: Arc<Gate>,
}

impl GateSlot {
    /// The permit, to hand on to another call (the service's slots, [`FairShare`]).
    pub(super) fn into_permit(mut self) -> OwnedSemaphorePermit {
        self.permit.take().expect("a slot holds its permit")
    }
}

impl Drop for GateSlot {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            // Dropped: back to the semaphore, unless the gate keeps it.
            drop(self.gate.given_back(permit));
        }
    }
}

/// The gates a call of one tool passes, resolved once per tool-list change.
#[derive(Clone, Default)]
pub struct CallGates {
    pub tool: Option<Arc<Gate>>,
    pub provider: Option<Arc<Gate>>,
}

/// The queue's bounds, read from the settings on each call (a reload applies at once).
#[derive(Debug, Clone, Copy)]
pub struct QueueBounds {
    pub depth: u64,
    pub timeout: Duration,
}

/// The slots a running call holds; dropping it frees them.
pub struct Admitted {
    /// The tool's and the provider's.
    _slots: [Option<GateSlot>; 2],
    _service: Slot,
    /// How long the call waited in the queue.
    pub queued_for: Duration,
}

pub struct Admission {
    service: Arc<Gate>,
    /// Tool and provider gates by `tool:NAME` / `provider:NAME`.
    gates: Mutex<HashMap<String, Arc<Gate>>>,
    waiting: AtomicU64,
    fair: Arc<FairShare>,
}

impl Admission {
    pub fn new(max_concurrent_calls: u64) -> Self {
        let service = Gate::new(max_concurrent_calls);
        Admission {
            fair: Arc::new(FairShare::new(service.clone())),
            service,
            gates: Mutex::new(HashMap::new()),
            waiting: AtomicU64::new(0),
        }
    }

    /// Applies a reloaded `max_concurrent_calls`; calls already running keep their slots.
    pub fn set_service_limit(&self, limit: u64) {
        self.service.resize(limit);
        // A raised limit serves the queue at once.
        self.fair.dispatch();
    }

    /// The gate of a tool or provider with this limit: the running one, resized when its
    /// limit changed.
    pub fn gate(&self, scope: Scope, name: &str, limit: Option<u64>) -> Option<Arc<Gate>> {
        let key = format!("{}:{name}", scope.as_str());
        let mut gates = self.gates.write_unpoisoned();
        let Some(limit) = limit else {
            gates.remove(&key);
            return None;
        };
        let gate = gates.entry(key).or_insert_with(|| Gate::new(limit));
        if gate.limit() != limit {
            gate.resize(limit);
        }
        Some(gate.clone())
    }

    /// Calls waiting for a slot now.
    pub fn waiting(&self) -> u64 {
        self.waiting.load(Ordering::Acquire)
    }

    /// Takes the call's slots for `client`, waiting in the queue when one is taken; or says
    /// why not.
    pub async fn admit(
        &self,
        gates: &CallGates,
        bounds: QueueBounds,
        client: &Arc<str>,
    ) -> Result<Admitted, Refusal> {
        let order = [
            (Scope::Tool, gates.tool.clone()),
            (Scope::Provider, gates.provider.clone()),
        ];
        if let Some(slots) = try_all(&order)
            && let Some(slot) = self.fair.try_slot(client)
        {
            return Ok(Admitted {
                _slots: slots,
                _service: slot,
                queued_for: Duration::ZERO,
            });
        }
        let _place = match QueuePlace::take(&self.waiting, bounds.depth) {
            Some(place) => place,
            None if self.fair.make_room(client) => QueuePlace::forced(&self.waiting),
            None => {
                return Err(Refusal::QueueFull {
                    depth: bounds.depth,
                });
            }
        };
        let started = tokio::time::Instant::now();
        let deadline = started + bounds.timeout;
        let mut slots: [Option<GateSlot>; 2] = [None, None];
        for (i, (scope, gate)) in order.iter().enumerate() {
            let Some(gate) = gate else { continue };
            match tokio::time::timeout_at(deadline, gate.take()).await {
                Ok(slot) => slots[i] = Some(slot),
                Err(_) => {
                    return Err(Refusal::Waited {
                        scope: *scope,
                        limit: gate.limit(),
                        waited: started.elapsed(),
                    });
                }
            }
        }
        let slot = self
            .fair
            .slot_by(client, deadline)
            .await
            .map_err(|why| match why {
                NoSlot::TimedOut => Refusal::Waited {
                    scope: Scope::Service,
                    limit: self.service.limit(),
                    waited: started.elapsed(),
                },
                NoSlot::Yielded => Refusal::Yielded {
                    depth: bounds.depth,
                },
            })?;
        Ok(Admitted {
            _slots: slots,
            _service: slot,
            queued_for: started.elapsed(),
        })
    }
}

/// Every slot at once without waiting, or none.
fn try_all(order: &[(Scope, Option<Arc<Gate>>); 2]) -> Option<[Option<GateSlot>; 2]> {
    let mut slots: [Option<GateSlot>; 2] = [None, None];
    for (i, (_, gate)) in order.iter().enumerate() {
        if let Some(gate) = gate {
            slots[i] = Some(gate.try_take()?);
        }
    }
    Some(slots)
}

/// A place in the queue, given back when the call stops waiting.
struct QueuePlace<'a>(&'a AtomicU64);

impl<'a> QueuePlace<'a> {
    fn take(waiting: &'a AtomicU64, depth: u64) -> Option<Self> {
        waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < depth).then_some(n + 1)
            })
            .ok()
            .map(|_| QueuePlace(waiting))
    }

    /// A place taken past the depth: the place a call that yielded gives back as it leaves.
    fn forced(waiting: &'a AtomicU64) -> Self {
        waiting.fetch_add(1, Ordering::AcqRel);
        QueuePlace(waiting)
    }
}

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> Arc<str> {
        "a".into()
    }

    fn bounds(depth: u64, timeout_ms: u64) -> QueueBounds {
        QueueBounds {
            depth,
            timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn beyond_the_slots_calls_queue_in_order_and_beyond_the_queue_they_are_refused() {
        let admission = Arc::new(Admission::new(1));
        let none = CallGates::default();
        let first = admission
            .admit(&none, bounds(1, 1000), &client())
            .await
            .unwrap();
        assert_eq!(first.queued_for, Duration::ZERO);
        // The second waits in the queue (depth 1) ...
        let second = tokio::spawn({
            let admission = admission.clone();
            async move {
                admission
                    .admit(&CallGates::default(), bounds(1, 1000), &client())
                    .await
            }
        });
        while admission.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        // ... so a third finds the queue full at once.
        assert_eq!(
            admission
                .admit(&none, bounds(1, 1000), &client())
                .await
                .err(),
            Some(Refusal::QueueFull { depth: 1 })
        );
        tokio::time::advance(Duration::from_millis(300)).await;
        drop(first);
        let second = second.await.unwrap().unwrap();
        assert_eq!(second.queued_for, Duration::from_millis(300));
        assert_eq!(admission.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_waits_no_longer_than_the_queue_timeout_and_says_where_it_waited() {
        let admission = Admission::new(10);
        let tool = admission.gate(Scope::Tool, "slow", Some(1));
        let gates = CallGates {
            tool,
            provider: None,
        };
        let _running = admission
            .admit(&gates, bounds(5, 250), &client())
            .await
            .unwrap();
        let refused = admission
            .admit(&gates, bounds(5, 250), &client())
            .await
            .err()
            .unwrap();
        assert_eq!(
            refused,
            Refusal::Waited {
                scope: Scope::Tool,
                limit: 1,
                waited: Duration::from_millis(250)
            }
        );
        assert_eq!(
            admission.waiting(),
            0,
            "the place in the queue is given back"
        );
        // Other tools are not held up by the full one.
        assert!(
            admission
                .admit(&CallGates::default(), bounds(5, 250), &client())
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_queue_of_zero_refuses_as_soon_as_the_slots_are_taken() {
        let admission = Admission::new(1);
        let none = CallGates::default();
        let _running = admission
            .admit(&none, bounds(0, 1000), &client())
            .await
            .unwrap();
        assert!(matches!(
            admission.admit(&none, bounds(0, 1000), &client()).await,
            Err(Refusal::QueueFull { depth: 0 })
        ));
    }

    #[test]
    fn gates_survive_a_rebuild_unless_their_limit_changes() {
        let admission = Admission::new(1);
        let a = admission.gate(Scope::Provider, "p", Some(2)).unwrap();
        let b = admission.gate(Scope::Provider, "p", Some(2)).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        // A changed limit resizes the gate in place: no second set of slots beside the first.
        let c = admission.gate(Scope::Provider, "p", Some(3)).unwrap();
        assert!(Arc::ptr_eq(&a, &c));
        assert_eq!(c.limit(), 3);
        assert!(admission.gate(Scope::Provider, "p", None).is_none());
    }

    #[tokio::test]
    async fn a_reloaded_service_limit_applies_to_new_calls() {
        let admission = Admission::new(1);
        let none = CallGates::default();
        let _one = admission
            .admit(&none, bounds(0, 10), &client())
            .await
            .unwrap();
        // The same limit again keeps the gate: the running call still holds its slot.
        admission.set_service_limit(1);
        assert!(
            admission
                .admit(&none, bounds(0, 10), &client())
                .await
                .is_err()
        );
        admission.set_service_limit(2);
        assert!(
            admission
                .admit(&none, bounds(0, 10), &client())
                .await
                .is_ok()
        );
    }

    /// `n` calls released at one barrier on a multi-threaded runtime, each holding its slots
    /// a moment: the most that ever held them at once, and the refusals.
    async fn admitted_together(
        admission: &Arc<Admission>,
        gates: &CallGates,
        n: usize,
    ) -> (u64, Vec<Refusal>) {
        let barrier = Arc::new(tokio::sync::Barrier::new(n));
        let (running, most) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let calls: Vec<_> = (0..n)
            .map(|i| {
                let (admission, gates, barrier) =
                    (admission.clone(), gates.clone(), barrier.clone());
                let (running, most) = (running.clone(), most.clone());
                let who: Arc<str> = format!("c{}", i % 3).into();
                tokio::spawn(async move {
                    barrier.wait().await;
                    let admitted = admission
                        .admit(&gates, bounds(n as u64, 10_000), &who)
                        .await?;
                    let now = running.fetch_add(1, Ordering::AcqRel) + 1;
                    most.fetch_max(now, Ordering::AcqRel);
                    tokio::task::yield_now().await;
                    running.fetch_sub(1, Ordering::AcqRel);
                    drop(admitted);
                    Ok::<(), Refusal>(())
                })
            })
            .collect();
        let mut refusals = Vec::new();
        for call in calls {
            if let Err(refusal) = call.await.unwrap() {
                refusals.push(refusal);
            }
        }
        (most.load(Ordering::Acquire), refusals)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn calls_admitted_together_never_hold_more_slots_than_a_limit() {
        for (service, tool) in [(3, None), (8, Some(2))] {
            let admission = Arc::new(Admission::new(service));
            let gates = CallGates {
                tool: admission.gate(Scope::Tool, "t", tool),
                provider: None,
            };
            let (most, refusals) = admitted_together(&admission, &gates, 64).await;
            assert!(refusals.is_empty(), "{refusals:?}");
            assert!(most <= tool.unwrap_or(service), "{most} at once");
            assert_eq!(admission.waiting(), 0);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_lowered_limit_takes_back_the_slots_of_the_calls_that_end() {
        let admission = Arc::new(Admission::new(4));
        let none = CallGates::default();
        let mut running = Vec::new();
        for _ in 0..4 {
            running.push(
                admission
                    .admit(&none, bounds(8, 10_000), &client())
                    .await
                    .unwrap(),
            );
        }
        let queued: Vec<_> = (0..4)
            .map(|_| {
                let admission = admission.clone();
                tokio::spawn(async move {
                    admission
                        .admit(&CallGates::default(), bounds(8, 10_000), &client())
                        .await
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1)).await;
        admission.set_service_limit(2);
        // Four run, the limit is two: the first two slots given back are kept.
        running.truncate(2);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(
            queued.iter().all(|q| !q.is_finished()),
            "none passes the limit"
        );
        // Two run now: the next slot given back goes to the line.
        running.pop();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(queued.iter().filter(|q| q.is_finished()).count(), 1);
        // Raised again: what was owed is forgiven first, the rest is new.
        admission.set_service_limit(3);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(queued.iter().filter(|q| q.is_finished()).count(), 2);
        // Lowered while all three run (one owed), then raised by one: the debt is forgiven,
        // no slot added; the next one given back goes to the line.
        admission.set_service_limit(2);
        admission.set_service_limit(3);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(queued.iter().filter(|q| q.is_finished()).count(), 2);
        running.pop();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(queued.iter().filter(|q| q.is_finished()).count(), 3);
        // A tool's gate, lowered with its slots taken, the same way.
        let gate = admission.gate(Scope::Tool, "t", Some(2)).unwrap();
        let held = [gate.try_take().unwrap(), gate.try_take().unwrap()];
        let same = admission.gate(Scope::Tool, "t", Some(1)).unwrap();
        assert!(Arc::ptr_eq(&gate, &same));
        let [first, second] = held;
        drop(first);
        assert!(
            gate.try_take().is_none(),
            "the first slot given back is kept"
        );
        drop(second);
        let one = gate.try_take();
        assert!(one.is_some(), "the next is free");
        assert!(gate.try_take().is_none(), "one at once");
    }

    /// The provider's gate is passed after the tool's: a full provider refuses a call of any
    /// of its tools, and the refusal says so in the words the 503 answers with.
    #[tokio::test(start_paused = true)]
    async fn a_full_provider_refuses_and_says_where() {
        let admission = Admission::new(10);
        let gates = CallGates {
            tool: admission.gate(Scope::Tool, "t", Some(5)),
            provider: admission.gate(Scope::Provider, "p", Some(1)),
        };
        let _running = admission
            .admit(&gates, bounds(1, 250), &client())
            .await
            .unwrap();
        let refused = admission
            .admit(&gates, bounds(1, 250), &client())
            .await
            .err()
            .unwrap();
        assert_eq!(refused.scope(), Scope::Provider);
        assert_eq!(
            refused.to_string(),
            "no free slot of the provider within 250 ms (limit 1 at once)"
        );
        let full = Refusal::QueueFull { depth: 3 };
        assert_eq!(full.scope(), Scope::Service);
        assert_eq!(
            full.to_string(),
            "the queue is full (3 calls already wait for a slot)"
        );
        assert_eq!(
            [Scope::Service, Scope::Provider, Scope::Tool].map(Scope::as_str),
            ["service", "provider", "tool"]
        );
    }

    /// Two clients: the flood holds both slots and the queue; another client's call takes the
    /// place of the flood's newest queued call (refused, saying why) and the slot freed next
    /// (the flood still holds one, the other client none).
    #[tokio::test(start_paused = true)]
    async fn a_full_queue_takes_another_clients_call_in_place_of_the_floods_newest() {
        let admission = Arc::new(Admission::new(2));
        let (flood, quiet): (Arc<str>, Arc<str>) = ("flood".into(), "quiet".into());
        let none = CallGates::default();
        let running = admission
            .admit(&none, bounds(2, 1000), &flood)
            .await
            .unwrap();
        let _still_running = admission
            .admit(&none, bounds(2, 1000), &flood)
            .await
            .unwrap();
        let queue = |who: &Arc<str>| {
            let (admission, who) = (admission.clone(), who.clone());
            tokio::spawn(async move {
                admission
                    .admit(&CallGates::default(), bounds(2, 1000), &who)
                    .await
            })
        };
        let older = queue(&flood);
        tokio::time::sleep(Duration::from_millis(1)).await;
        let newer = queue(&flood);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(admission.waiting(), 2);
        assert_eq!(
            admission.admit(&none, bounds(2, 1000), &flood).await.err(),
            Some(Refusal::QueueFull { depth: 2 }),
            "the flood's own call finds the queue full"
        );
        let other = queue(&quiet);
        tokio::time::sleep(Duration::from_millis(1)).await;
        let yielded = newer.await.unwrap().err().unwrap();
        assert_eq!(yielded, Refusal::Yielded { depth: 2 });
        assert_eq!(yielded.scope(), Scope::Service);
        assert!(yielded.to_string().contains("gave its place"), "{yielded}");
        assert_eq!(
            admission.waiting(),
            2,
            "the other client's call holds the place"
        );
        drop(running);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(
            other.is_finished(),
            "the freed slot goes to the client holding none"
        );
        assert!(!older.is_finished());
        assert!(other.await.unwrap().is_ok());
        assert!(older.await.unwrap().is_ok(), "then the flood's");
    }
}
