//! The MAC scheduler's policy: in which order UEs with data get new transmissions in a slot. A
//! plug point, as srsRAN's `time_rr` / `time_pf` / `time_qos` policies are: the gNB MAC asks it for
//! an order and tells it what each UE was given; how PRBs are then allocated is the MAC's.

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
}

/// The policy `cfg` names, for a cell of `nof_ues` UEs.
pub fn from_config(cfg: &SchedulerCfg, nof_ues: usize) -> Box<dyn Scheduler> {
    match cfg.policy {
        SchedulerPolicy::TimeRr => Box::new(RoundRobin::new(nof_ues)),
        SchedulerPolicy::TimePf => Box::new(ProportionalFair::new(nof_ues, cfg.pf_window_slots)),
    }
}

/// Round robin (srsRAN `time_rr`): each slot of a direction the first place moves one UE on.
pub struct RoundRobin {
    nof_ues: usize,
    /// Slots of each direction so far: where this slot's order starts.
    turn: [usize; 2],
}

impl RoundRobin {
    pub fn new(nof_ues: usize) -> RoundRobin {
        RoundRobin { nof_ues: nof_ues.max(1), turn: [0; 2] }
    }
}

impl Scheduler for RoundRobin {
    fn order(&mut self, dir: Dir, candidates: &[Candidate]) -> Vec<usize> {
        let n = self.nof_ues;
        let turn = &mut self.turn[dir as usize];
        let start = *turn % n;
        *turn = turn.wrapping_add(1);
        let mut v: Vec<usize> = candidates.iter().map(|c| c.ue).collect();
        v.sort_by_key(|u| (u + n - start) % n);
        v
    }

    fn served(&mut self, _: Dir, _: &[u64]) {}
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
    fn round_robin_moves_the_first_place_each_slot_per_direction() {
        let mut rr = RoundRobin::new(4);
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 1, 2, 3])), [0, 1, 2, 3]);
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 1, 2, 3])), [1, 2, 3, 0]);
        // A slot's turn passes whether or not UEs have data; UL keeps its own turn.
        assert_eq!(rr.order(Dir::Dl, &[]), Vec::<usize>::new());
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 2])), [0, 2]);
        assert_eq!(rr.order(Dir::Dl, &cands(&[0, 2])), [0, 2]);
        assert_eq!(rr.order(Dir::Ul, &cands(&[3, 1])), [1, 3]);
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
