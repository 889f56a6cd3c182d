//! Gandalf's retransmission compensation (seed 004 §4.3.1, its Figure 15b): a delay sample a
//! HARQ retransmission inflated is corrected with the retransmission event the UE's RAN feed
//! reports. A retransmission event ends when the retransmitted TB is decoded; the receiver's
//! reordering then releases, at that instant, the TB's packets and every packet held behind it —
//! a burst. The first packet of the burst (the one in the failed TB) waited T_M longer than it
//! would have: its corrected delay is its delay less T_M; the rest of the burst is brought to
//! that same corrected delay, as the seed does ("adjusting all simultaneously reported packets to
//! match this corrected delay"). Samples outside any burst pass unchanged. Sans-IO: the caller
//! hands in events and samples in time order.

use std::collections::VecDeque;

/// One retransmission event as the feed reports it: when it ended (the decoding that released
/// the burst) and the retransmission delay T_M, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetxEvent {
    pub end: i64,
    pub delay: i64,
}

/// The compensator of one flow's samples.
#[derive(Clone, Debug, Default)]
pub struct RetxCompensation {
    events: VecDeque<RetxEvent>,
    /// The burst being released: its event's end and the corrected delay its packets get.
    burst: Option<(i64, i64)>,
    /// Samples corrected so far, and the delay taken out of them in total (ns).
    pub corrected: u64,
    pub removed_ns: i64,
}

impl RetxCompensation {
    /// Packets released within this long of an event's end belong to its burst (a TB's packets
    /// and those behind it reach the application within the same instant in the model; a real
    /// receiver's socket adds a little).
    pub const BURST_NS: i64 = 200_000;

    pub fn new() -> RetxCompensation {
        RetxCompensation::default()
    }

    /// The feed reported a retransmission event.
    pub fn event(&mut self, e: RetxEvent) {
        self.events.push_back(e);
    }

    /// A packet delivered at `delivered` after `delay` ns (one-way, or a round trip's sample
    /// taken at its delivery): the delay to use.
    pub fn sample(&mut self, delivered: i64, delay: i64) -> i64 {
        // Events whose burst has passed are done with.
        while self.events.front().is_some_and(|e| e.end + Self::BURST_NS < delivered) {
            self.events.pop_front();
        }
        if let Some((end, target)) = self.burst {
            if delivered <= end + Self::BURST_NS {
                return self.take(delay, target);
            }
            self.burst = None;
        }
        match self.events.front() {
            Some(e) if delivered >= e.end && delay >= e.delay => {
                let e = self.events.pop_front().expect("peeked");
                let target = delay - e.delay;
                self.burst = Some((e.end, target));
                self.take(delay, target)
            }
            _ => delay,
        }
    }

    fn take(&mut self, delay: i64, target: i64) -> i64 {
        let d = target.min(delay);
        if d < delay {
            self.corrected += 1;
            self.removed_ns += delay - d;
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn a_retransmissions_delay_is_taken_out_of_its_burst() {
        // Packets sent every 1 ms, 10 ms one-way delay. The TB of the packet sent at 20 ms fails
        // and is retransmitted 4 ms later (T_M = 4 ms): it and the packets sent at 21–23 ms are
        // held and released together at 34 ms, with delays 14, 13, 12, 11 ms.
        let mut sent_and_delivered: Vec<(i64, i64)> = (0..40).map(|i| (i * MS, i * MS + 10 * MS)).collect();
        for p in sent_and_delivered.iter_mut().filter(|p| (20 * MS..24 * MS).contains(&p.0)) {
            p.1 = 34 * MS;
        }
        let mut g = RetxCompensation::new();
        g.event(RetxEvent { end: 34 * MS, delay: 4 * MS });
        let out: Vec<i64> = sent_and_delivered.iter().map(|&(s, d)| g.sample(d, d - s)).collect();
        // Every sample back at the path's 10 ms: the failed packet by T_M, its burst to match.
        assert!(out.iter().all(|&d| d == 10 * MS), "{:?}", out.iter().map(|d| d / MS).collect::<Vec<_>>());
        assert_eq!(g.corrected, 4);
        assert_eq!(g.removed_ns, (4 + 3 + 2 + 1) * MS);
    }

    #[test]
    fn samples_outside_a_burst_pass_unchanged() {
        let mut g = RetxCompensation::new();
        g.event(RetxEvent { end: 50 * MS, delay: 4 * MS });
        assert_eq!(g.sample(10 * MS, 12 * MS), 12 * MS, "before the event ends");
        assert_eq!(g.sample(51 * MS, 12 * MS), 12 * MS, "after its burst");
        assert_eq!(g.corrected, 0);
    }
}
