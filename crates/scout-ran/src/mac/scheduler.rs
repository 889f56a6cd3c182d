//! The MAC scheduler's policy: in which order UEs with data get new transmissions in a slot, and
//! how many PRBs one new transmission may take. A plug point, as srsRAN's `time_rr` / `time_pf` /
//! `time_qos` policies are: the gNB MAC asks it for an order and a cap and tells it whom it served;
//! how PRBs are then allocated is the MAC's.

use scout_events::Dir;

use crate::config::{SchedulerCfg, SchedulerPolicy};

/// A UE that may get a new transmission this slot: its index and its instantaneous rate (the
/// bytes one PRB carries at its current MCS).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    pub ue: usize,
    pub rate: f64,
}

/// A scheduling policy, one per cell, for both directions.
pub trait Scheduler: Send {
    /// The order in which `candidates` get new transmissions in a slot of direction `dir`.
    fn order(&mut self, dir: Dir, candidates: &[Candidate]) -> Vec<usize>;
    /// What each UE was given in that slot (bytes of new transmissions, 0 for none; indexed by UE).
    fn served(&mut self, dir: Dir, bytes: &[u64]);
    /// UE `ue` got the first allocation of a pass over an order (srsRAN's round robin starts its
    /// next pass at the UE after it).
    fn first_allocated(&mut self, _dir: Dir, _ue: usize) {}
    /// At most how many PRBs one new transmission gets in this slot (`None`: as many as it needs;
    /// `Some(0)`: no new transmissions).
    fn newtx_prb_cap(&self, _dir: Dir, _slot: &SlotShare) -> Option<u16> {
        None
    }
}

/// What a policy's PRB cap for new transmissions looks at in a slot.
#[derive(Clone, Copy, Debug)]
pub struct SlotShare {
    /// UEs with new data waiting (DL: buffered at the gNB; UL: reported by BSR, or an SR).
    pub with_data: usize,
    /// `scheduler.max_ues_per_slot` (srsRAN's `max_pdschs_per_slot` / `max_puschs_per_slot`).
    pub max_per_slot: u32,
    /// CCEs of the UE-specific CORESET (0: no CORESET limit).
    pub cces: u32,
    /// DL DCIs already placed in the slot (the DL retransmissions', scheduled before).
    pub dl_pdcchs_used: usize,
    /// PRBs of the bandwidth part.
    pub bwp_prbs: u16,
}

/// srsRAN `time_rr`'s UEs to serve per slot by UEs with new data (an implementation-defined
/// heuristic of `scheduler_time_rr.cpp`, 23.10–24.10, "to ensure multiple UEs are scheduled per
/// slot rather than single UE hogging all the resource in a slot under full buffer"): up to 3 UEs
/// with data, one; up to 7, three; up to 15, four; up to 32, six; more, eight.
const RR_UES_PER_SLOT: [(usize, u32); 5] = [(3, 1), (7, 3), (15, 4), (32, 6), (usize::MAX, 8)];

/// The PRBs of one new transmission under srsRAN `time_rr` (`compute_max_nof_rbs_per_ue_per_slot`):
/// the bandwidth part shared among the UEs to serve this slot (`RR_UES_PER_SLOT`), no more of them
/// than `max_per_slot` nor than the PDCCH candidates the CORESET holds for the direction — its
/// CCEs halved between DL and UL, at aggregation level 2 (two CCEs per DCI), the DL's less those
/// its retransmissions already took.
pub fn rr_fair_share(dir: Dir, s: &SlotShare) -> u16 {
    let (_, mut n) =
        RR_UES_PER_SLOT.iter().copied().find(|(m, _)| s.with_data <= *m).expect("the last row takes any count");
    n = n.min(s.max_per_slot);
    if s.cces > 0 {
        let mut candidates = s.cces / 2 / 2;
        let used = u32::try_from(s.dl_pdcchs_used).unwrap_or(u32::MAX);
        if dir == Dir::Dl && used <= candidates {
            candidates -= used;
        }
        n = n.min(candidates);
    }
    if n == 0 {
        0
    } else {
        s.bwp_prbs / n as u16
    }
}

/// The policy `cfg` names, for a cell of `nof_ues` UEs.
pub fn from_config(cfg: &SchedulerCfg, nof_ues: usize) -> Box<dyn Scheduler> {
    match cfg.policy {
        SchedulerPolicy::TimeRr => Box::new(RoundRobin::new(nof_ues)),
        SchedulerPolicy::TimePf => Box::new(ProportionalFair::new(nof_ues, cfg.pf_window_slots)),
    }
}

/// Round robin (srsRAN `time_rr`, `round_robin_apply`): a pass over the UEs starts at the UE after
/// the one that got the first allocation of the direction's previous pass, so each UE in turn is
/// the first to be allocated; a new transmission takes at most its share of the slot
/// ([`rr_fair_share`]).
pub struct RoundRobin {
    nof_ues: usize,
    /// Per direction, the UE the next pass starts at.
    next: [usize; 2],
}

impl RoundRobin {
    pub fn new(nof_ues: usize) -> RoundRobin {
        RoundRobin { nof_ues: nof_ues.max(1), next: [0; 2] }
    }
}

impl Scheduler for RoundRobin {
    fn order(&mut self, dir: Dir, candidates: &[Candidate]) -> Vec<usize> {
        let (n, start) = (self.nof_ues, self.next[dir as usize]);
        let mut v: Vec<usize> = candidates.iter().map(|c| c.ue).collect();
        v.sort_by_key(|u| (u + n - start) % n);
        v
    }

    fn served(&mut self, _: Dir, _: &[u64]) {}

    fn first_allocated(&mut self, dir: Dir, ue: usize) {
        self.next[dir as usize] = (ue + 1) % self.nof_ues;
    }

    fn newtx_prb_cap(&self, dir: Dir, slot: &SlotShare) -> Option<u16> {
        Some(rr_fair_share(dir, slot))
    }
}

/// Proportional fair (srsRAN `time_pf`): highest instantaneous rate over the UE's average served
/// bytes per slot first (an exponential average over `window` slots), lower UE index on a tie.
pub struct ProportionalFair {
    window: f64,
    average: [Vec<f64>; 2],
}

impl ProportionalFair {
    pub fn new(nof_ues: usize, window_slots: f64) -> ProportionalFair {
        ProportionalFair { window: window_slots.max(1.0), average: [vec![1.0; nof_ues], vec![1.0; nof_ues]] }
    }

    /// UE `ue`'s average served bytes per slot in direction `dir`.
    pub fn average(&self, dir: Dir, ue: usize) -> f64 {
        self.average[dir as usize][ue]
    }
}

impl Scheduler for ProportionalFair {
    fn order(&mut self, dir: Dir, candidates: &[Candidate]) -> Vec<usize> {
        let avg = &self.average[dir as usize];
        let mut v: Vec<(usize, f64)> = candidates.iter().map(|c| (c.ue, c.rate / avg[c.ue].max(1e-9))).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        v.into_iter().map(|(u, _)| u).collect()
    }

    fn served(&mut self, dir: Dir, bytes: &[u64]) {
        let w = self.window;
        for (avg, b) in self.average[dir as usize].iter_mut().zip(bytes) {
            *avg = *avg * (1.0 - 1.0 / w) + *b as f64 / w;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(ues: &[usize]) -> Vec<Candidate> {
        ues.iter().map(|&ue| Candidate { ue, rate: 100.0 }).collect()
    }

    #[test]
    fn round_robin_starts_each_pass_after_the_first_ue_allocated_in_the_last() {
        let mut rr = RoundRobin::new(4);
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 1, 2, 3])), [0, 1, 2, 3]);
        // Nobody allocated: the next pass starts at the same UE.
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 1, 2, 3])), [0, 1, 2, 3]);
        rr.first_allocated(Dir::Dl, 0);
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 1, 2, 3])), [1, 2, 3, 0]);
        // Two UEs with data alternate in first place, whatever the UEs between them.
        rr.first_allocated(Dir::Dl, 2);
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 2])), [0, 2]);
        rr.first_allocated(Dir::Dl, 0);
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 2])), [2, 0]);
        rr.first_allocated(Dir::Dl, 3);
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 2])), [0, 2]);
        // The UL keeps its own place.
        assert_eq!(rr.order(Dir::Ul, &cands(&[3, 1])), [1, 3]);
    }

    fn share(with_data: usize, cces: u32, dl_used: usize) -> SlotShare {
        SlotShare { with_data, max_per_slot: 16, cces, dl_pdcchs_used: dl_used, bwp_prbs: 106 }
    }

    #[test]
    fn round_robin_shares_the_slot_as_srsran_time_rr_does() {
        // 40 MHz at 30 kHz: 106 PRBs, CORESET#1 of 17 six-PRB groups × 2 symbols = 34 CCEs, so
        // (34 / 2) / 2 = 8 candidates per direction.
        for (with_data, ues) in [(1, 1), (3, 1), (4, 3), (7, 3), (8, 4), (15, 4), (16, 6), (32, 6), (33, 8), (500, 8)] {
            assert_eq!(rr_fair_share(Dir::Ul, &share(with_data, 34, 0)), 106 / ues, "{with_data} UEs with data");
        }
        // The CORESET caps the UEs per slot: 20 MHz (51 PRBs: 8 groups × 2 symbols = 16 CCEs, 4
        // candidates), and in DL less the retransmissions' DCIs.
        let narrow = |dir, n, used| rr_fair_share(dir, &SlotShare { bwp_prbs: 51, ..share(n, 16, used) });
        assert_eq!(narrow(Dir::Ul, 40, 3), 51 / 4);
        assert_eq!(narrow(Dir::Dl, 40, 3), 51);
        assert_eq!(narrow(Dir::Dl, 40, 4), 0, "no candidates left: no new transmissions");
        assert_eq!(narrow(Dir::Dl, 40, 5), 51 / 4, "more used than candidates: srsRAN subtracts none");
        // max_ues_per_slot caps them too; no CORESET (0 CCEs): no candidate limit.
        assert_eq!(rr_fair_share(Dir::Dl, &SlotShare { max_per_slot: 2, ..share(40, 34, 0) }), 53);
        assert_eq!(rr_fair_share(Dir::Dl, &share(40, 0, 0)), 106 / 8);
    }

    #[test]
    fn proportional_fair_serves_the_starved_ue_first() {
        let mut pf = ProportionalFair::new(2, 10.0);
        let c = [Candidate { ue: 0, rate: 200.0 }, Candidate { ue: 1, rate: 100.0 }];
        // Equal averages: the better channel first.
        assert_eq!(pf.order(Dir::Dl, &c), [0, 1]);
        // UE 0 served for a while: its average grows until UE 1's metric wins.
        for _ in 0..5 {
            pf.served(Dir::Dl, &[5000, 0]);
        }
        assert!(pf.average(Dir::Dl, 0) > 2000.0 && pf.average(Dir::Dl, 1) < 1.0);
        assert_eq!(pf.order(Dir::Dl, &c), [1, 0]);
        // The UL's averages are its own.
        assert_eq!(pf.order(Dir::Ul, &c), [0, 1]);
        // A tie goes to the lower index.
        let tie = [Candidate { ue: 1, rate: 1.0 }, Candidate { ue: 0, rate: 1.0 }];
        assert_eq!(ProportionalFair::new(2, 10.0).order(Dir::Ul, &tie), [0, 1]);
    }
}
