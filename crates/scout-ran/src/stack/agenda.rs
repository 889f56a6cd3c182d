//! The stack's agenda: the actions it has scheduled, taken in order of due time and, among
//! actions due at the same time, in the order they were scheduled (what makes a run
//! deterministic).
//!
//! The heap holds only 24-byte keys (due time, schedule order, where the action waits); the
//! actions themselves wait in a slab. A wall-clock driver pops some seven actions per packet at a
//! few hundred thousand packets a second: sifting whole actions (72 bytes each) through the heap
//! was a tenth of its data path's time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::Instant;

pub(super) struct Agenda<A> {
    heap: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    slab: Vec<Option<A>>,
    free: Vec<u32>,
    seq: u64,
}

impl<A> Agenda<A> {
    pub fn new() -> Self {
        Agenda { heap: BinaryHeap::new(), slab: Vec::new(), free: Vec::new(), seq: 0 }
    }

    /// `action` is due at `t`, after everything already scheduled for `t`.
    pub fn push(&mut self, t: Instant, action: A) {
        let at = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(action);
                i
            }
            None => {
                self.slab.push(Some(action));
                u32::try_from(self.slab.len() - 1).expect("fewer than 2^32 actions scheduled at once")
            }
        };
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, at)));
    }

    /// When the next action is due.
    pub fn next_at(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, ..))| *t)
    }

    /// The next action, if it is due at or before `now`, with its due time.
    pub fn pop_due(&mut self, now: Instant) -> Option<(Instant, A)> {
        if self.next_at()? > now {
            return None;
        }
        let Reverse((t, _, at)) = self.heap.pop()?;
        self.free.push(at);
        Some((t, self.slab[at as usize].take().expect("a scheduled action waits in its slot")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_time_first_then_schedule_order() {
        let mut a = Agenda::new();
        for (t, x) in [(30, 'a'), (10, 'b'), (30, 'c'), (20, 'd'), (10, 'e')] {
            a.push(t, x);
        }
        assert_eq!(a.next_at(), Some(10));
        assert_eq!(a.pop_due(5), None, "nothing is due before 10");
        let mut seen = Vec::new();
        while let Some((t, x)) = a.pop_due(25) {
            seen.push((t, x));
        }
        assert_eq!(seen, [(10, 'b'), (10, 'e'), (20, 'd')]);
        // Slots are reused; order among equal times still follows scheduling.
        a.push(30, 'f');
        a.push(25, 'g');
        let rest: Vec<_> = std::iter::from_fn(|| a.pop_due(i64::MAX)).collect();
        assert_eq!(rest, [(25, 'g'), (30, 'a'), (30, 'c'), (30, 'f')]);
        assert_eq!(a.next_at(), None);
    }
}
