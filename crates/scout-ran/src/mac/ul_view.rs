//! The gNB's view of one UE's uplink buffer: what its SRs and BSRs told the scheduler, from the
//! slot the scheduler may act on each (`pusch.ul_sched_delay_slots` after it arrived), and what
//! the grants issued since took off (TS 38.321 §5.4.5: the BSR reports the buffer after the MAC PDU
//! that carries it).

use std::collections::BTreeMap;

use super::bsr::BsrFormat;
use super::ue::UlGrant;

#[derive(Clone, Debug, Default)]
pub struct UlBufferView {
    /// Bytes the gNB believes wait at the UE.
    est: u64,
    /// An SR received: the first PDCCH slot that may grant on it.
    sr_from: Option<u64>,
    /// A BSR decoded and not yet taken in: (first PDCCH slot that uses it, bytes reported, the
    /// PUSCH slot that carried it).
    bsr: Option<(u64, u64, u64)>,
}

impl UlBufferView {
    /// The bytes the gNB believes wait at the UE.
    pub fn estimate(&self) -> u64 {
        self.est
    }

    /// An SR in slot `s`, usable `delay` slots later.
    pub fn sr(&mut self, s: u64, delay: u32) {
        self.sr_from = Some(s + u64::from(delay));
    }

    /// A BSR of `bytes` decoded from the PUSCH of slot `pusch_slot`, usable `delay` slots later (a
    /// later BSR replaces one not yet used).
    pub fn bsr(&mut self, pusch_slot: u64, bytes: u64, delay: u32) {
        self.bsr = Some((pusch_slot + u64::from(delay), bytes, pusch_slot));
    }

    /// At slot `s`: a BSR due is taken in as its level's upper bound (Long BSR, Table 6.1.3.1-2),
    /// less the grants already issued for PUSCH slots after the one that carried it.
    pub fn slot_start(&mut self, s: u64, grants: &BTreeMap<u64, UlGrant>) {
        if let Some((_, bytes, pusch_slot)) = self.bsr.take_if(|b| b.0 <= s) {
            let outstanding: u64 =
                grants.range(pusch_slot + 1..).filter_map(|(_, g)| g.new).map(|(_, _, tbs)| u64::from(tbs)).sum();
            self.est = BsrFormat::Long.bytes(BsrFormat::Long.index(bytes)).saturating_sub(outstanding);
        }
    }

    /// Whether the scheduler has reason to grant at PDCCH slot `s`: a buffer it knows of, or an SR.
    pub fn wants_grant(&self, s: u64) -> bool {
        self.est > 0 || self.sr_pending(s)
    }

    /// Whether an SR waits for a grant at PDCCH slot `s` (srsRAN serves those UEs first).
    pub fn sr_pending(&self, s: u64) -> bool {
        self.sr_from.is_some_and(|f| f <= s)
    }

    /// The bytes to grant: the estimate (+ room for a BSR), or `sr_grant` on an SR alone.
    pub fn want_bytes(&self, sr_grant: u32) -> u64 {
        if self.est > 0 {
            self.est + 8
        } else {
            u64::from(sr_grant)
        }
    }

    /// A grant of `tbs` bytes was issued: it serves the estimate and answers the SR.
    pub fn granted(&mut self, tbs: u32) {
        self.est = self.est.saturating_sub(u64::from(tbs));
        self.sr_from = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sr_and_bsr_count_from_the_scheduling_delay_and_grants_take_off_what_they_serve() {
        let mut v = UlBufferView::default();
        v.sr(10, 3);
        assert!(!v.wants_grant(12) && v.wants_grant(13));
        assert_eq!(v.want_bytes(256), 256);
        v.granted(256);
        assert!(!v.wants_grant(20), "the SR is answered");
        // A BSR of 10 000 bytes in the PUSCH of slot 20, usable from 21; a grant of 3000 bytes for
        // slot 24 was issued before it was taken in.
        v.bsr(20, 10_000, 1);
        let mut grants = BTreeMap::new();
        grants.insert(24, UlGrant { harq: 0, first_prb: 0, new: Some((10, 9, 3000)) });
        v.slot_start(20, &grants);
        assert_eq!(v.estimate(), 0, "not yet");
        v.slot_start(21, &grants);
        let level = BsrFormat::Long.bytes(BsrFormat::Long.index(10_000));
        assert!(level >= 10_000);
        assert_eq!(v.estimate(), level - 3000);
        assert_eq!(v.want_bytes(256), level - 3000 + 8);
        v.granted(u32::MAX);
        assert_eq!(v.estimate(), 0);
    }
}
