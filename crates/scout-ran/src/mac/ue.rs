//! The UE's MAC for the uplink: when it asks for resources (scheduling request, TS 38.321 §5.4.4),
//! when it reports its buffer (buffer status report, §5.4.5), and the grants it holds.
//!
//! Not modelled: the logical-channel-group split of the BSR (one Long BSR of the whole buffer),
//! sr-ProhibitTimer and sr-TransMax.

use std::collections::BTreeMap;

use super::bsr::BsrFormat;
use super::lcp::Lcp;
use crate::Instant;

/// An UL grant for one PUSCH slot: a HARQ process and, for a new TB, its allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UlGrant {
    pub harq: u8,
    /// The first of the PUSCH's PRBs (the TB's number of them from `new`, or a retransmission's
    /// TB).
    pub first_prb: u16,
    /// (PRBs, MCS, TBS bytes) of a new transmission; `None` for a retransmission.
    pub new: Option<(u16, u8, u32)>,
}

/// One UE's UL MAC state.
#[derive(Clone, Debug)]
pub struct UeMac {
    /// A regular or periodic BSR is pending (the next new TB carries one).
    pub bsr_triggered: bool,
    /// An SR is pending (sent at the UE's next SR occasion).
    pub sr_pending: bool,
    /// When periodicBSR-Timer expires.
    periodic_bsr_at: Option<Instant>,
    /// When retxBSR-Timer expires.
    retx_bsr_at: Option<Instant>,
    /// The UE's SR occasions: slots `n` with `n mod period = sr_offset` (TS 38.213 §9.2.4).
    pub sr_offset: u64,
    /// Grants by PUSCH slot.
    pub grants: BTreeMap<u64, UlGrant>,
    /// How a new TB is shared among the UE's logical channels.
    pub lcp: Lcp,
    /// A Recommended bit rate query waiting for the next new TB: (DRB index, bit/s asked).
    pub bit_rate_query: Option<(u8, u64)>,
    /// When bitRateQueryProhibitTimer expires, per DRB index (TS 38.321 §5.18.10).
    query_prohibited_until: Vec<Instant>,
    /// When the next power headroom report is due (phr-PeriodicTimer; a PHR triggers when the
    /// PHR functionality is configured: the first new TB carries one).
    phr_due_at: Instant,
}

/// srsRAN's PHR-Config (`mac_cell_group_config`): phr-PeriodicTimer sf10 and phr-ProhibitTimer
/// sf10 (TS 38.321 §5.4.6), so a PHR is triggered 10 ms after the last one — by the periodic
/// timer, or by a path loss change of phr-Tx-PowerFactorChange (1 dB) once the prohibit timer,
/// also 10 ms, has run out.
pub const PHR_PERIOD_NS: i64 = 10_000_000;

impl UeMac {
    pub fn new(sr_offset: u64, lcp: Lcp) -> UeMac {
        UeMac {
            bsr_triggered: false,
            sr_pending: false,
            periodic_bsr_at: None,
            retx_bsr_at: None,
            sr_offset,
            grants: BTreeMap::new(),
            lcp,
            bit_rate_query: None,
            query_prohibited_until: Vec::new(),
            phr_due_at: Instant::MIN,
        }
    }

    /// Bytes a new TB at `t` keeps for a Single Entry PHR MAC CE: two octets and a one-octet
    /// subheader (TS 38.321 §6.1.3.8, §6.1.2) when one is triggered, else 0.
    pub fn phr_room(&self, t: Instant) -> u32 {
        if t >= self.phr_due_at {
            3
        } else {
            0
        }
    }

    /// A PHR was sent at `t`: phr-PeriodicTimer and phr-ProhibitTimer restart (§5.4.6).
    pub fn phr_sent(&mut self, t: Instant) {
        self.phr_due_at = t + PHR_PERIOD_NS;
    }

    /// The application asks at `t` for `bps` on DRB `drb` (TS 38.321 §5.18.10): the query is
    /// taken when bitRateQueryProhibitTimer is not running (`prohibit_ns` restarts it) and none is
    /// waiting; it rides in the next new TB. Whether it was taken.
    pub fn query_bit_rate(&mut self, t: Instant, drb: u8, bps: u64, prohibit_ns: i64) -> bool {
        let i = usize::from(drb);
        if self.query_prohibited_until.len() <= i {
            self.query_prohibited_until.resize(i + 1, Instant::MIN);
        }
        if self.bit_rate_query.is_some() || self.query_prohibited_until[i] > t {
            return false;
        }
        self.bit_rate_query = Some((drb, bps));
        self.query_prohibited_until[i] = t + prohibit_ns;
        true
    }

    /// Bytes a new TB keeps for a waiting query's MAC CE: two octets and a one-octet subheader
    /// (TS 38.321 §6.1.3.20, §6.1.2).
    pub fn query_room(&self) -> u32 {
        if self.bit_rate_query.is_some() {
            3
        } else {
            0
        }
    }

    /// New UL data arrived in a buffer that was empty: a regular BSR triggers (§5.4.5), and an SR
    /// with it when the UE holds no grant to carry the BSR (§5.4.4).
    pub fn new_data(&mut self) {
        self.bsr_triggered = true;
        if self.grants.is_empty() {
            self.sr_pending = true;
        }
    }

    /// At the start of the slot at `t`, the UE's buffer holding data or not (§5.4.5): an expired
    /// periodicBSR-Timer triggers a (periodic) BSR; an expired retxBSR-Timer with data waiting
    /// triggers a regular BSR, and an SR with it when the UE holds no grant (§5.4.4) — how a UE
    /// whose BSR or SR went unanswered asks again.
    pub fn slot_start(&mut self, t: Instant, has_data: bool) {
        if self.periodic_bsr_at.is_some_and(|p| p <= t) {
            self.periodic_bsr_at = None;
            self.bsr_triggered = true;
        }
        if self.retx_bsr_at.is_some_and(|r| r <= t) {
            self.retx_bsr_at = None;
            if has_data {
                self.new_data();
            }
        }
    }

    /// A grant for a new transmission received at `t` restarts retxBSR-Timer (`retx_ms`, §5.4.5).
    pub fn new_grant(&mut self, t: Instant, retx_ms: i64) {
        self.retx_bsr_at = Some(t + retx_ms * 1_000_000);
    }

    /// At slot `s`, which carries PUCCH, with SR period `period` slots: whether the UE sends its
    /// pending SR now (its occasion).
    pub fn sr_occasion(&mut self, s: u64, period: u64) -> bool {
        let send = self.sr_pending && s % period == self.sr_offset;
        if send {
            self.sr_pending = false;
        }
        send
    }

    /// Bytes a new TB keeps for a triggered BSR's MAC CE (a Long BSR, TS 38.321 §6.1.3.1).
    pub fn bsr_room(&self) -> u32 {
        if self.bsr_triggered {
            BsrFormat::Long.ce_bytes()
        } else {
            0
        }
    }

    /// Whether a new TB of `tbs` bytes with `used` bytes filled carries a BSR: a triggered one, or a
    /// padding BSR where the padding holds one (§5.4.5).
    pub fn carries_bsr(&self, tbs: u32, used: u32) -> bool {
        self.bsr_triggered || tbs.saturating_sub(used) >= BsrFormat::Long.ce_bytes()
    }

    /// A BSR was sent at `t`: the trigger is served, periodicBSR-Timer (`periodic_ms` ms; -1:
    /// infinity) and retxBSR-Timer (`retx_ms`) restart (§5.4.5).
    pub fn bsr_sent(&mut self, t: Instant, periodic_ms: i64, retx_ms: i64) {
        self.bsr_triggered = false;
        self.periodic_bsr_at = (periodic_ms > 0).then_some(t + periodic_ms * 1_000_000);
        self.retx_bsr_at = Some(t + retx_ms * 1_000_000);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// srsRAN's PHR-Config: the first new TB carries a PHR, the next one 10 ms after (3 bytes:
    /// the Single Entry PHR MAC CE and its subheader).
    #[test]
    fn a_phr_goes_out_every_ten_ms() {
        let mut m = UeMac::new(0, Lcp::new(&[]));
        assert_eq!(m.phr_room(0), 3);
        m.phr_sent(0);
        assert_eq!(m.phr_room(9_999_999), 0);
        assert_eq!(m.phr_room(10_000_000), 3);
    }

    #[test]
    fn a_query_waits_out_the_prohibit_timer() {
        let ms = 1_000_000;
        let mut m = UeMac::new(3, Lcp::new(&[]));
        assert!(m.query_bit_rate(0, 0, 30_000_000, 400 * ms));
        assert_eq!(m.query_room(), 3);
        assert!(!m.query_bit_rate(ms, 0, 30_000_000, 400 * ms), "one waiting already");
        m.bit_rate_query = None; // sent
        assert!(!m.query_bit_rate(399 * ms, 0, 30_000_000, 400 * ms), "bitRateQueryProhibitTimer runs");
        assert!(m.query_bit_rate(400 * ms, 0, 30_000_000, 400 * ms));
    }

    #[test]
    fn new_data_asks_for_a_grant_only_without_one() {
        let mut m = UeMac::new(3, Lcp::new(&[]));
        m.new_data();
        assert!(m.bsr_triggered && m.sr_pending);
        let mut m = UeMac::new(3, Lcp::new(&[]));
        m.grants.insert(10, UlGrant { harq: 0, first_prb: 0, new: Some((5, 9, 300)) });
        m.new_data();
        assert!(m.bsr_triggered && !m.sr_pending, "the BSR rides on the grant already held");
    }

    #[test]
    fn sr_waits_for_its_occasion() {
        let mut m = UeMac::new(3, Lcp::new(&[]));
        assert!(!m.sr_occasion(3, 10), "nothing pending");
        m.new_data();
        assert!(!m.sr_occasion(4, 10) && !m.sr_occasion(12, 10));
        assert!(m.sr_occasion(13, 10));
        assert!(!m.sr_pending && !m.sr_occasion(23, 10), "sent once");
    }

    #[test]
    fn bsr_room_padding_and_the_periodic_timer() {
        let mut m = UeMac::new(0, Lcp::new(&[]));
        let ce = BsrFormat::Long.ce_bytes();
        assert_eq!(m.bsr_room(), 0);
        assert!(!m.carries_bsr(100, 100 - ce + 1), "padding too small for a BSR");
        assert!(m.carries_bsr(100, 100 - ce), "a padding BSR");
        m.new_data();
        assert_eq!(m.bsr_room(), ce);
        assert!(m.carries_bsr(100, 100));
        assert!(m.sr_occasion(0, 10), "its SR goes out");
        // Sent at 5 ms with periodicBSR-Timer 10 ms: due again at 15 ms.
        m.bsr_sent(5_000_000, 10, 10_000);
        assert!(!m.bsr_triggered);
        m.slot_start(14_999_999, true);
        assert!(!m.bsr_triggered);
        m.slot_start(15_000_000, true);
        assert!(m.bsr_triggered && !m.sr_pending, "a periodic BSR asks for no SR");
        // Infinity: never again.
        m.bsr_sent(20_000_000, -1, 10_000);
        m.slot_start(1_000_000_000, false);
        assert!(!m.bsr_triggered);
    }

    #[test]
    fn retx_bsr_timer_asks_again_when_data_waits_unserved() {
        const MS: i64 = 1_000_000;
        let mut m = UeMac::new(0, Lcp::new(&[]));
        m.new_data();
        m.sr_occasion(0, 10);
        // A BSR went out at 10 ms (retxBSR-Timer 80 ms); no grant followed.
        m.bsr_sent(10 * MS, -1, 80);
        m.slot_start(89 * MS, true);
        assert!(!m.bsr_triggered && !m.sr_pending);
        m.slot_start(90 * MS, true);
        assert!(m.bsr_triggered && m.sr_pending, "a regular BSR and an SR (no grant held)");
        // A grant for new data restarts the timer; with the buffer empty at expiry nothing triggers.
        let mut m = UeMac::new(0, Lcp::new(&[]));
        m.bsr_sent(0, -1, 80);
        m.new_grant(50 * MS, 80);
        m.slot_start(80 * MS, true);
        assert!(!m.bsr_triggered, "restarted at 50 ms");
        m.slot_start(130 * MS, false);
        assert!(!m.bsr_triggered && !m.sr_pending);
    }
}
