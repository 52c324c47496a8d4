//! Counts over a sliding window of time, in ten buckets: what the circuit breaker (calls and
//! failures) and the retry budget (calls and retries) judge by. A bucket older than the window
//! is emptied when its slot comes round again, so memory stays fixed whatever the rate.

use std::time::{Duration, Instant};

const BUCKETS: usize = 10;

/// Two counts per bucket over the last `span`.
#[derive(Debug)]
pub struct Window {
    epoch: Instant,
    bucket: Duration,
    slots: [Slot; BUCKETS],
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Which bucket of time (since `epoch`) the counts are of.
    index: u64,
    counts: [u64; 2],
}

impl Window {
    pub fn new(span: Duration, now: Instant) -> Window {
        Window {
            epoch: now,
            bucket: (span / BUCKETS as u32).max(Duration::from_millis(1)),
            slots: [Slot::default(); BUCKETS],
        }
    }

    fn index(&self, now: Instant) -> u64 {
        (now.saturating_duration_since(self.epoch).as_nanos() / self.bucket.as_nanos()) as u64
    }

    /// Adds `n` to count `which` (0 or 1) now.
    pub fn add(&mut self, now: Instant, which: usize, n: u64) {
        let index = self.index(now);
        let slot = &mut self.slots[(index % BUCKETS as u64) as usize];
        if slot.index != index {
            *slot = Slot {
                index,
                counts: [0, 0],
            };
        }
        slot.counts[which] += n;
    }

    /// Both counts over the window ending now.
    pub fn totals(&self, now: Instant) -> [u64; 2] {
        let index = self.index(now);
        let oldest = index.saturating_sub(BUCKETS as u64 - 1);
        self.slots
            .iter()
            .filter(|s| s.index >= oldest && s.index <= index && (s.counts != [0, 0]))
            .fold([0, 0], |acc, s| {
                [acc[0] + s.counts[0], acc[1] + s.counts[1]]
            })
    }

    /// Forgets every count.
    pub fn clear(&mut self) {
        self.slots = [Slot::default(); BUCKETS];
    }

    /// How long the window is.
    pub fn span(&self) -> Duration {
        self.bucket * BUCKETS as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_leave_the_window_as_time_passes() {
        let start = Instant::now();
        let mut w = Window::new(Duration::from_secs(10), start);
        w.add(start, 0, 3);
        w.add(start + Duration::from_secs(4), 1, 2);
        assert_eq!(w.totals(start + Duration::from_secs(5)), [3, 2]);
        // The first second's bucket is out of the window 10 s later; the fifth's is not.
        assert_eq!(w.totals(start + Duration::from_millis(10_500)), [0, 2]);
        assert_eq!(w.totals(start + Duration::from_secs(15)), [0, 0]);
        // A slot reused by a later bucket starts from nothing.
        w.add(start + Duration::from_secs(20), 0, 1);
        assert_eq!(w.totals(start + Duration::from_secs(20)), [1, 0]);
        w.clear();
        assert_eq!(w.totals(start + Duration::from_secs(20)), [0, 0]);
        assert_eq!(w.span(), Duration::from_secs(10));
    }
}
