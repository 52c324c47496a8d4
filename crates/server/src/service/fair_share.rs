//! The service's call slots shared fairly between clients (a client is its API key, its OAuth
//! subject, else its IP address). A call takes a free slot at once only when no call waits;
//! else it waits in line, and each slot a call gives back goes to the waiting call whose client
//! holds the fewest slots, the earliest of that client's first. When the line is full, the
//! newest waiting call of the client waiting most gives its place to a call of a client waiting
//! less. So one client's flood waits behind its own calls, not everyone's, and a client alone
//! has every slot and the whole line to itself, in arrival order, as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, oneshot};
use tokio::time::Instant;

use super::admission::Gate;
use crate::sync::Unpoisoned;

/// Who holds and who waits for the slots of one service.
pub struct FairShare {
    /// The service's slots (`limits.max_concurrent_calls`).
    gate: Arc<Gate>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Slots held, by client.
    holding: HashMap<Arc<str>, u64>,
    /// Calls waiting, in arrival order.
    line: Vec<Waiter>,
    arrivals: u64,
}

struct Waiter {
    arrival: u64,
    client: Arc<str>,
    give: oneshot::Sender<Slot>,
}

/// A slot of the service, held by a client's call; given back (to the next in line, or to the
/// semaphore) when dropped.
pub struct Slot {
    permit: Option<OwnedSemaphorePermit>,
    client: Arc<str>,
    share: Arc<FairShare>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.share.give_back(&self.client, permit);
        }
    }
}

/// Why a waiting call got no slot.
#[derive(Debug, PartialEq, Eq)]
pub enum NoSlot {
    /// None came before the deadline.
    TimedOut,
    /// It gave its place in line to a call of a client waiting less.
    Yielded,
}

impl State {
    fn hold(&mut self, client: &Arc<str>) {
        *self.holding.entry(client.clone()).or_default() += 1;
    }

    fn release(&mut self, client: &Arc<str>) {
        if let Some(n) = self.holding.get_mut(client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.holding.remove(client);
            }
        }
    }

    /// The waiting call next in line: its client holds the fewest slots; the earliest first.
    fn next_in_line(&self) -> Option<usize> {
        let held = |client: &Arc<str>| self.holding.get(client).copied().unwrap_or(0);
        (0..self.line.len()).min_by_key(|&i| (held(&self.line[i].client), self.line[i].arrival))
    }

    fn waiting_of(&self, client: &str) -> usize {
        self.line.iter().filter(|w| &*w.client == client).count()
    }
}

impl FairShare {
    /// The sharing of `gate`'s slots.
    pub fn new(gate: Arc<Gate>) -> Self {
        FairShare {
            gate,
            state: Mutex::default(),
        }
    }

    /// A free slot for `client` when one is free and no call waits for one.
    pub fn try_slot(self: &Arc<Self>, client: &Arc<str>) -> Option<Slot> {
        let mut state = self.state.write_unpoisoned();
        if !state.line.is_empty() {
            return None;
        }
        let permit = self.gate.try_take()?.into_permit();
        state.hold(client);
        Some(self.slot(permit, client))
    }

    fn slot(self: &Arc<Self>, permit: OwnedSemaphorePermit, client: &Arc<str>) -> Slot {
        Slot {
            permit: Some(permit),
            client: client.clone(),
            share: self.clone(),
        }
    }

    /// A slot for `client`: at once when one is free and no call waits, else when its turn
    /// comes, until `deadline`.
    pub async fn slot_by(
        self: &Arc<Self>,
        client: &Arc<str>,
        deadline: Instant,
    ) -> Result<Slot, NoSlot> {
        if let Some(slot) = self.try_slot(client) {
            return Ok(slot);
        }
        let (give, mut given) = oneshot::channel();
        let arrival = {
            let mut state = self.state.write_unpoisoned();
            state.arrivals += 1;
            let arrival = state.arrivals;
            state.line.push(Waiter {
                arrival,
                client: client.clone(),
                give,
            });
            arrival
        };
        // A slot may have come free between the try and the queueing.
        self.dispatch();
        tokio::select! {
            slot = &mut given => slot.map_err(|_| NoSlot::Yielded),
            () = tokio::time::sleep_until(deadline) => {
                let mut state = self.state.write_unpoisoned();
                state.line.retain(|w| w.arrival != arrival);
                drop(state);
                // Given one as the time ran out: it is ours.
                given.try_recv().map_err(|_| NoSlot::TimedOut)
            }
        }
    }

    /// Gives the free slots to the calls waiting, in turn (after a call queued, or when the
    /// service's limit is raised).
    pub fn dispatch(self: &Arc<Self>) {
        loop {
            let mut state = self.state.write_unpoisoned();
            let Some(next) = state.next_in_line() else {
                return;
            };
            let Some(free) = self.gate.try_take() else {
                return;
            };
            let permit = free.into_permit();
            let waiter = state.line.remove(next);
            self.hand_over(&mut state, waiter, permit);
        }
    }

    /// Hands `permit` to `waiter`; when it has stopped waiting, to the next in line; when
    /// nobody waits, back to its semaphore.
    fn hand_over(
        self: &Arc<Self>,
        state: &mut State,
        waiter: Waiter,
        permit: OwnedSemaphorePermit,
    ) {
        let mut waiter = waiter;
        let mut permit = permit;
        loop {
            state.hold(&waiter.client);
            match waiter.give.send(self.slot(permit, &waiter.client)) {
                Ok(()) => return,
                Err(mut refused) => {
                    state.release(&waiter.client);
                    permit = refused
                        .permit
                        .take()
                        .expect("a slot is sent with its permit");
                }
            }
            let Some(next) = state.next_in_line() else {
                // Back to the semaphore, unless a lowered limit keeps it.
                drop(self.gate.given_back(permit));
                return;
            };
            waiter = state.line.remove(next);
        }
    }

    fn give_back(self: &Arc<Self>, client: &Arc<str>, permit: OwnedSemaphorePermit) {
        let mut state = self.state.write_unpoisoned();
        state.release(client);
        // A lowered limit keeps the slot: it is not handed on.
        let Some(permit) = self.gate.given_back(permit) else {
            return;
        };
        if let Some(next) = state.next_in_line() {
            let waiter = state.line.remove(next);
            self.hand_over(&mut state, waiter, permit);
        }
    }

    /// The line is full and `client` wants in: the newest waiting call of the client waiting
    /// most gives its place, when that client waits for more calls than `client` would with
    /// this one. Whether a place was freed.
    pub fn make_room(&self, client: &str) -> bool {
        let mut state = self.state.write_unpoisoned();
        let mine = state.waiting_of(client);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for waiter in &state.line {
            *counts.entry(&waiter.client).or_default() += 1;
        }
        let Some((most, n)) = counts
            .into_iter()
            .max_by_key(|(c, n)| (*n, std::cmp::Reverse(*c)))
            .map(|(c, n)| (Arc::<str>::from(c), n))
        else {
            return false;
        };
        if n <= mine + 1 {
            return false;
        }
        let newest = state
            .line
            .iter()
            .enumerate()
            .filter(|(_, w)| w.client == most)
            .max_by_key(|(_, w)| w.arrival)
            .map(|(i, _)| i);
        // Dropping its sender tells it it yielded.
        newest.map(|i| state.line.remove(i)).is_some()
    }

    /// Calls waiting for a slot now, and slots held, by client (`/health`, tests).
    #[cfg(test)]
    fn held_by(&self, client: &str) -> u64 {
        self.state
            .read_unpoisoned()
            .holding
            .get(client)
            .copied()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn client(name: &str) -> Arc<str> {
        name.into()
    }

    fn later(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_alone_takes_every_slot_and_then_waits_in_arrival_order() {
        let slots = Gate::new(2);
        let share = Arc::new(FairShare::new(slots.clone()));
        let a = client("a");
        let first = share.slot_by(&a, later(10)).await.unwrap();
        let _second = share.slot_by(&a, later(10)).await.unwrap();
        assert_eq!(share.held_by("a"), 2);
        let third = tokio::spawn({
            let (share, a) = (share.clone(), a.clone());
            async move { share.slot_by(&a, later(1000)).await }
        });
        let fourth = tokio::spawn({
            let (share, a) = (share.clone(), a.clone());
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                share.slot_by(&a, later(1000)).await
            }
        });
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(first);
        // The earlier waiter first; it holds its slot, so the later one still waits.
        let _third = third.await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!fourth.is_finished());
    }

    #[tokio::test(start_paused = true)]
    async fn a_freed_slot_goes_to_the_waiting_client_holding_fewest() {
        let slots = Gate::new(2);
        let share = Arc::new(FairShare::new(slots.clone()));
        let (flood, quiet) = (client("flood"), client("quiet"));
        let held = [
            share.slot_by(&flood, later(10)).await.unwrap(),
            share.slot_by(&flood, later(10)).await.unwrap(),
        ];
        // The flood queues first, then the quiet client.
        let flood_waits = tokio::spawn({
            let (share, flood) = (share.clone(), flood.clone());
            async move { share.slot_by(&flood, later(1000)).await }
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        let quiet_waits = tokio::spawn({
            let (share, quiet) = (share.clone(), quiet.clone());
            async move { share.slot_by(&quiet, later(1000)).await }
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        let [one, _two] = held;
        drop(one);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(
            quiet_waits.is_finished(),
            "the quiet client holds none: its turn"
        );
        assert!(!flood_waits.is_finished());
        let _quiet = quiet_waits.await.unwrap().unwrap();
        assert_eq!(share.held_by("quiet"), 1);
        assert_eq!(share.held_by("flood"), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_past_its_deadline_ends_and_leaves_the_line() {
        let slots = Gate::new(1);
        let share = Arc::new(FairShare::new(slots.clone()));
        let a = client("a");
        let held = share.slot_by(&a, later(10)).await.unwrap();
        assert_eq!(
            share.slot_by(&a, later(50)).await.err(),
            Some(NoSlot::TimedOut)
        );
        assert!(share.state.read_unpoisoned().line.is_empty());
        drop(held);
        assert_eq!(slots.available(), 1, "back to the semaphore: nobody waits");
        assert_eq!(share.held_by("a"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_client_waiting_most_gives_a_place_and_a_client_alone_never_does() {
        let slots = Gate::new(1);
        let share = Arc::new(FairShare::new(slots.clone()));
        let (flood, quiet) = (client("flood"), client("quiet"));
        let _held = share.slot_by(&flood, later(10)).await.unwrap();
        let mut waits = Vec::new();
        for _ in 0..3 {
            let (share, flood) = (share.clone(), flood.clone());
            waits.push(tokio::spawn(async move {
                share.slot_by(&flood, later(1000)).await.map(|_| ())
            }));
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(
            !share.make_room("flood"),
            "a client does not displace itself"
        );
        assert!(share.make_room("quiet"));
        let newest = waits.pop().unwrap();
        assert_eq!(newest.await.unwrap(), Err(NoSlot::Yielded));
        assert!(
            waits.iter().all(|w| !w.is_finished()),
            "the older ones still wait"
        );
        assert_eq!(share.state.read_unpoisoned().line.len(), 2);
        let _ = quiet;
    }

    #[tokio::test(start_paused = true)]
    async fn a_raised_limit_serves_the_line_at_once() {
        let old = Gate::new(1);
        let share = Arc::new(FairShare::new(old.clone()));
        let a = client("a");
        let _held = share.slot_by(&a, later(10)).await.unwrap();
        let waiting = tokio::spawn({
            let (share, a) = (share.clone(), a.clone());
            async move { share.slot_by(&a, later(1000)).await }
        });
        tokio::time::sleep(Duration::from_millis(1)).await;
        old.resize(2);
        share.dispatch();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(waiting.is_finished());
        let _given = waiting.await.unwrap().unwrap();
        assert_eq!(old.available(), 0);
    }
}
