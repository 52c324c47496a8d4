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
use std::sync::{Arc, Mutex, RwLock};
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

/// `limit` slots, shared by every call that needs them.
pub struct Gate {
    limit: u64,
    slots: Arc<Semaphore>,
}

impl Gate {
    fn new(limit: u64) -> Arc<Gate> {
        let permits = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .min(Semaphore::MAX_PERMITS);
        Arc::new(Gate {
            limit,
            slots: Arc::new(Semaphore::new(permits)),
        })
    }

    pub fn limit(&self) -> u64 {
        self.limit
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
    _slots: [Option<OwnedSemaphorePermit>; 2],
    _service: Slot,
    /// How long the call waited in the queue.
    pub queued_for: Duration,
}

pub struct Admission {
    service: RwLock<Arc<Gate>>,
    /// Tool and provider gates by `tool:NAME` / `provider:NAME`.
    gates: Mutex<HashMap<String, Arc<Gate>>>,
    waiting: AtomicU64,
    fair: Arc<FairShare>,
}

impl Admission {
    pub fn new(max_concurrent_calls: u64) -> Self {
        Admission {
            service: RwLock::new(Gate::new(max_concurrent_calls)),
            gates: Mutex::new(HashMap::new()),
            waiting: AtomicU64::new(0),
            fair: Arc::default(),
        }
    }

    /// Applies a reloaded `max_concurrent_calls`; calls already running keep their slots.
    pub fn set_service_limit(&self, limit: u64) {
        let mut gate = self.service.write_unpoisoned();
        if gate.limit != limit {
            *gate = Gate::new(limit);
            // A raised limit serves the queue at once.
            self.fair.dispatch(&gate.slots);
        }
    }

    /// The gate of a tool or provider with this limit: the running one when its limit is
    /// unchanged, else a new one.
    pub fn gate(&self, scope: Scope, name: &str, limit: Option<u64>) -> Option<Arc<Gate>> {
        let key = format!("{}:{name}", scope.as_str());
        let mut gates = self.gates.write_unpoisoned();
        let Some(limit) = limit else {
            gates.remove(&key);
            return None;
        };
        let gate = gates
            .entry(key)
            .and_modify(|g| {
                if g.limit != limit {
                    *g = Gate::new(limit);
                }
            })
            .or_insert_with(|| Gate::new(limit));
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
        let service = self.service.read_unpoisoned().clone();
        let order = [
            (Scope::Tool, gates.tool.clone()),
            (Scope::Provider, gates.provider.clone()),
        ];
        if let Some(slots) = try_all(&order)
            && let Some(slot) = self.fair.try_slot(&service.slots, client)
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
        let mut slots: [Option<OwnedSemaphorePermit>; 2] = [None, None];
        for (i, (scope, gate)) in order.iter().enumerate() {
            let Some(gate) = gate else { continue };
            match tokio::time::timeout_at(deadline, gate.slots.clone().acquire_owned()).await {
                Ok(Ok(permit)) => slots[i] = Some(permit),
                // A gate's semaphore is never closed; treat it as a full one.
                Ok(Err(_)) | Err(_) => {
                    return Err(Refusal::Waited {
                        scope: *scope,
                        limit: gate.limit,
                        waited: started.elapsed(),
                    });
                }
            }
        }
        let slot = self
            .fair
            .slot_by(&service.slots, client, deadline)
            .await
            .map_err(|why| match why {
                NoSlot::TimedOut => Refusal::Waited {
                    scope: Scope::Service,
                    limit: service.limit,
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
fn try_all(order: &[(Scope, Option<Arc<Gate>>); 2]) -> Option<[Option<OwnedSemaphorePermit>; 2]> {
    let mut slots: [Option<OwnedSemaphorePermit>; 2] = [None, None];
    for (i, (_, gate)) in order.iter().enumerate() {
        if let Some(gate) = gate {
            slots[i] = Some(gate.slots.clone().try_acquire_owned().ok()?);
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
        let c = admission.gate(Scope::Provider, "p", Some(3)).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
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
