//! L4S marking at the RLC SDU queue ([`crate::config::L4sCfg`]): a queue discipline that admits as
//! drop-tail does and, as each SDU's first byte leaves, marks it Congestion Experienced with a
//! probability that ramps linearly with its head-of-line sojourn between two thresholds (RFC 9330
//! §4.2: a shallow, immediate step on sojourn time; the seed 003's eq. 3.1). Only ECN-capable
//! packets are marked (RFC 9331 §5.1: ECT(1); ECT(0) too as a classic ECN AQM would).

use scout_events::Reason;

use super::queue::{Discipline, DropTail};
use super::Sdu;
use crate::config::{L4sCfg, MarkAt};
use crate::rng::Rng;
use crate::Instant;

/// ECN field values (RFC 3168 §5).
pub const ECT1: u8 = 1;
pub const ECT0: u8 = 2;
pub const CE: u8 = 3;

/// The L4S marking discipline of one DL RLC entity.
pub struct L4sMark {
    tail: DropTail,
    min_ns: i64,
    max_ns: i64,
    classic: bool,
    in_place: bool,
    rng: Rng,
}

impl L4sMark {
    /// Marking as `cfg` sets, admitting within `tail`'s limits, drawing from `rng`.
    pub fn new(cfg: &L4sCfg, tail: DropTail, rng: Rng) -> L4sMark {
        L4sMark {
            tail,
            min_ns: (cfg.min_ms * 1e6) as i64,
            max_ns: (cfg.max_ms * 1e6) as i64,
            classic: cfg.classic_ecn,
            in_place: cfg.mark_at == MarkAt::Rlc,
            rng,
        }
    }

    /// The probability of marking an SDU that waited `sojourn_ns` (eq. 3.1).
    pub fn probability(&self, sojourn_ns: i64) -> f64 {
        if sojourn_ns < self.min_ns {
            0.0
        } else if sojourn_ns >= self.max_ns {
            1.0
        } else {
            (sojourn_ns - self.min_ns) as f64 / (self.max_ns - self.min_ns) as f64
        }
    }
}

impl Discipline for L4sMark {
    fn admit(&mut self, now: Instant, len: u32, bytes: u64, sdus: u32) -> Result<(), Reason> {
        self.tail.admit(now, len, bytes, sdus)
    }

    fn dequeue(&mut self, _now: Instant, sojourn_ns: i64, _bytes: u64, sdu: &mut Sdu) -> bool {
        let capable = sdu.pkt.ecn == ECT1 || (self.classic && sdu.pkt.ecn == ECT0);
        let p = self.probability(sojourn_ns);
        // A draw only where the ramp is open, so that marking leaves the other draws alone.
        if !capable || p == 0.0 || (p < 1.0 && !self.rng.bernoulli(p)) {
            return false;
        }
        if self.in_place {
            sdu.pkt.ecn = CE;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;
    use scout_events::Dir;

    fn mark(classic: bool) -> L4sMark {
        let cfg = L4sCfg { min_ms: 5.0, max_ms: 7.0, classic_ecn: classic, mark_at: MarkAt::Rlc };
        L4sMark::new(&cfg, DropTail { max_sdus: 10, max_bytes: 1 << 20 }, Rng::new(1, "l4s"))
    }

    fn sdu(ecn: u8) -> Sdu {
        Sdu {
            pkt: Packet { pkt: 0, flow: 0, ue: 0, dir: Dir::Dl, bytes: 100, qfi: 9, drb: 1, slice: 0, ecn },
            pdcp_sn: 0,
            len: 100,
        }
    }

    #[test]
    fn the_marking_probability_follows_the_ramp() {
        let mut m = mark(false);
        let ms = 1_000_000;
        assert_eq!((m.probability(4 * ms), m.probability(7 * ms), m.probability(20 * ms)), (0.0, 1.0, 1.0));
        // At 5.5 ms a quarter of the way up the ramp, at 6.5 three quarters: 20 000 draws each
        // land within 1.5 % of it (about 5 standard deviations).
        for (sojourn, want) in [(5_500_000, 0.25), (6_500_000, 0.75)] {
            let n = 20_000;
            let marked = (0..n).filter(|_| m.dequeue(0, sojourn, 0, &mut sdu(ECT1))).count();
            let share = marked as f64 / f64::from(n);
            assert!((share - want).abs() < 0.015, "{share} marked at {sojourn} ns, want {want}");
        }
    }

    #[test]
    fn only_ecn_capable_packets_are_marked_and_the_mark_is_ce() {
        let mut l4s = mark(false);
        let mut classic = mark(true);
        let late = 10_000_000;
        for (ecn, l4s_marks, classic_marks) in [(0, false, false), (ECT1, true, true), (ECT0, false, true)] {
            let mut a = sdu(ecn);
            assert_eq!(l4s.dequeue(0, late, 0, &mut a), l4s_marks, "ECN {ecn}, L4S only");
            assert_eq!(a.pkt.ecn, if l4s_marks { CE } else { ecn });
            assert_eq!(classic.dequeue(0, late, 0, &mut sdu(ecn)), classic_marks, "ECN {ecn}, classic too");
        }
        // Marking at PDCP: the decision, not the write.
        let cfg = L4sCfg { min_ms: 5.0, max_ms: 7.0, classic_ecn: false, mark_at: MarkAt::Pdcp };
        let mut at_pdcp = L4sMark::new(&cfg, DropTail { max_sdus: 10, max_bytes: 1 << 20 }, Rng::new(1, "l4s"));
        let mut a = sdu(ECT1);
        assert!(at_pdcp.dequeue(0, late, 0, &mut a));
        assert_eq!(a.pkt.ecn, ECT1);
    }
}
