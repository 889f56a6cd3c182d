//! The slot grid of a numerology: which slot is when, and its SFN and slot-in-frame.

use super::{slot_ns, slots_per_frame, symbol_ns};
use crate::Instant;

/// Slots of numerology μ from time 0: slot `n` starts at `n × slot` (TS 38.211 §4.3.2, slots of
/// equal length), frames of `10 · 2^μ` slots, SFN counted modulo 1024 (§4.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotGrid {
    slot_ns: i64,
    symbol_ns: i64,
    per_frame: u64,
}

/// Where a slot is: its start, SFN and index in its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotPoint {
    pub t: Instant,
    pub sfn: u16,
    pub slot_in_frame: u8,
}

impl SlotGrid {
    pub fn new(mu: u8) -> SlotGrid {
        SlotGrid { slot_ns: slot_ns(mu), symbol_ns: symbol_ns(mu), per_frame: u64::from(slots_per_frame(mu)) }
    }

    /// A slot's duration in ns.
    pub fn slot_ns(&self) -> i64 {
        self.slot_ns
    }

    /// An OFDM symbol's nominal duration in ns ([`super::symbol_ns`]).
    pub fn symbol_ns(&self) -> i64 {
        self.symbol_ns
    }

    /// When slot `s` starts.
    pub fn start(&self, s: u64) -> Instant {
        s as i64 * self.slot_ns
    }

    /// Slot `s`'s start, SFN and index in its frame.
    pub fn point(&self, s: u64) -> SlotPoint {
        SlotPoint {
            t: self.start(s),
            sfn: ((s / self.per_frame) % 1024) as u16,
            slot_in_frame: (s % self.per_frame) as u8,
        }
    }

    /// The slot in progress at `t` (`t` ≥ 0).
    pub fn at(&self, t: Instant) -> u64 {
        (t / self.slot_ns) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_frames_and_sfn_wrap() {
        // μ1: 0.5 ms slots, 20 per frame (TS 38.211 Table 4.3.2-1).
        let g = SlotGrid::new(1);
        assert_eq!((g.slot_ns(), g.symbol_ns()), (500_000, 35_714));
        assert_eq!(g.point(0), SlotPoint { t: 0, sfn: 0, slot_in_frame: 0 });
        assert_eq!(g.point(21), SlotPoint { t: 10_500_000, sfn: 1, slot_in_frame: 1 });
        // SFN wraps after 1024 frames (10.24 s).
        assert_eq!(g.point(1024 * 20 + 3), SlotPoint { t: 10_240_000_000 + 1_500_000, sfn: 0, slot_in_frame: 3 });
        assert_eq!((g.at(0), g.at(499_999), g.at(500_000)), (0, 0, 1));
        // μ3: 125 µs slots, 80 per frame.
        let g = SlotGrid::new(3);
        assert_eq!(g.point(80).sfn, 1);
        assert_eq!(g.start(8), 1_000_000);
    }
}
