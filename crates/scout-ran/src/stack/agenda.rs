//! The stack's agenda: the actions it has scheduled, taken in order of due time and, among
//! actions due at the same time, in the order they were scheduled (what makes a run
//! deterministic).
//!
//! The heap holds only 24-byte keys (due time, schedule order, where the action waits); the
//! actions themselves wait in a slab. A wall-clock driver pops some seven actions per packet at a
//! few hundred thousand packets a second: sifting whole actions (72 bytes each) through the heap
//! was a tenth of its data path's time.
//!
//! Actions whose due times never decrease in the order they are scheduled — a link's arrivals:
//! it serialises packets one after another and adds a constant delay — wait in a lane of their
//! own, a queue whose first action alone is in the heap. A packet spends most of its time on
//! links, so the heap stays small: a few lanes, executors and timers instead of every packet in
//! flight. The order is the same: each lane is sorted by (due time, schedule order), and the heap
//! holds each lane's least.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::Instant;

/// A heap key's place marks a lane's first action (the rest: its lane) instead of a slab slot.
const LANE: u32 = 1 << 31;

pub(super) struct Agenda<A> {
    heap: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    slab: Vec<Option<A>>,
    free: Vec<u32>,
    lanes: Vec<VecDeque<(Instant, u64, A)>>,
    seq: u64,
}

impl<A> Agenda<A> {
    pub fn new() -> Self {
        Agenda { heap: BinaryHeap::new(), slab: Vec::new(), free: Vec::new(), lanes: Vec::new(), seq: 0 }
    }

    /// `action` is due at `t`, after everything already scheduled for `t`.
    pub fn push(&mut self, t: Instant, action: A) {
        self.seq += 1;
        self.push_slab(t, action);
    }

    /// As [`Agenda::push`], for an action of `lane`, whose actions are scheduled in the order of
    /// their due times (one that is not joins the heap itself: the order holds either way).
    pub fn push_in_lane(&mut self, lane: usize, t: Instant, action: A) {
        self.seq += 1;
        if self.lanes.len() <= lane {
            self.lanes.resize_with(lane + 1, VecDeque::new);
        }
        let q = &mut self.lanes[lane];
        match q.back() {
            Some(&(last, ..)) if t < last => self.push_slab(t, action),
            _ => {
                if q.is_empty() {
                    self.heap.push(Reverse((t, self.seq, LANE | lane as u32)));
                }
                q.push_back((t, self.seq, action));
            }
        }
    }

    fn push_slab(&mut self, t: Instant, action: A) {
        let at = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(action);
                i
            }
            None => {
                self.slab.push(Some(action));
                let at = self.slab.len() - 1;
                assert!(at < LANE as usize, "fewer than 2^31 actions scheduled at once");
                at as u32
            }
        };
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
        if at & LANE != 0 {
            let q = &mut self.lanes[(at & !LANE) as usize];
            let (_, _, action) = q.pop_front().expect("a lane in the heap has an action");
            if let Some(&(next, seq, _)) = q.front() {
                self.heap.push(Reverse((next, seq, at)));
            }
            return Some((t, action));
        }
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

    #[test]
    fn lanes_keep_the_order_of_one_heap() {
        // The same schedule into one heap and into lanes (one out of order, which joins the heap)
        // comes out in the same order.
        let plan = [(0, 10, 'a'), (1, 10, 'b'), (0, 10, 'c'), (2, 5, 'd'), (0, 20, 'e'), (1, 15, 'f'), (0, 12, 'g')];
        let (mut one, mut lanes) = (Agenda::new(), Agenda::new());
        for (lane, t, x) in plan {
            one.push(t, x);
            lanes.push_in_lane(lane, t, x);
        }
        lanes.push(10, 'h');
        one.push(10, 'h');
        let (first, second): (Vec<_>, Vec<_>) = (
            std::iter::from_fn(|| one.pop_due(i64::MAX)).collect(),
            std::iter::from_fn(|| lanes.pop_due(i64::MAX)).collect(),
        );
        assert_eq!(first, second);
        assert_eq!(first, [(5, 'd'), (10, 'a'), (10, 'b'), (10, 'c'), (10, 'h'), (12, 'g'), (15, 'f'), (20, 'e')]);
    }
}
