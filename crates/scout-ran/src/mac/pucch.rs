//! The gNB's PUCCH bookkeeping for HARQ-ACK timing: which k1 a PDSCH gets (TS 38.213 §9.2.3: the
//! HARQ-ACK of a PDSCH in slot n goes in slot n + k1, k1 from the UE's `dl-DataToUL-ACK` list) and
//! how many UEs' PUCCHs each UL slot already carries (srsRAN `max_pucchs_per_slot`).
//!
//! A UE's HARQ-ACK bits for several PDSCHs that land in one UL slot share its one PUCCH (the
//! HARQ-ACK codebook, TS 38.213 §9.1), so a slot's capacity counts UEs. Not modelled: SR and CSI
//! PUCCH resources (srsRAN reserves them apart), the codebook's size limit, PUCCH formats.

use std::collections::BTreeMap;

use crate::phy::tdd::Duplex;

/// The HARQ-ACK PUCCHs the gNB has planned, by UL slot.
#[derive(Debug)]
pub struct PucchGrid {
    duplex: Duplex,
    /// `dl-DataToUL-ACK`, smallest first ([`Duplex::k1_candidates`]).
    k1s: Vec<u32>,
    max_per_slot: usize,
    /// UL slot → the UEs with a HARQ-ACK in it.
    slots: BTreeMap<u64, Vec<u32>>,
}

impl PucchGrid {
    pub fn new(duplex: &Duplex, min_k1: u32, max_per_slot: u32) -> PucchGrid {
        PucchGrid {
            duplex: duplex.clone(),
            k1s: duplex.k1_candidates(min_k1),
            max_per_slot: max_per_slot as usize,
            slots: BTreeMap::new(),
        }
    }

    /// The slot of the HARQ-ACK of a PDSCH to `ue` in slot `n`: the smallest k1 of the list whose
    /// slot has UL symbols and a PUCCH for the UE (its own, or room for one), as srsRAN's scheduler
    /// tries its k1 candidates in order. `None`: no candidate has room, the UE gets no PDSCH in `n`.
    pub fn harq_ack_slot(&self, n: u64, ue: u32) -> Option<u64> {
        self.k1s.iter().map(|k| n + u64::from(*k)).find(|&u| {
            self.duplex.slot_kind(u).ul_symbols > 0
                && self.slots.get(&u).is_none_or(|ues| ues.contains(&ue) || ues.len() < self.max_per_slot)
        })
    }

    /// Books `ue`'s HARQ-ACK in UL slot `u`.
    pub fn reserve(&mut self, u: u64, ue: u32) {
        let ues = self.slots.entry(u).or_default();
        if !ues.contains(&ue) {
            ues.push(ue);
        }
    }

    /// Forgets the UL slots before `s` (their PUCCHs are past).
    pub fn release_before(&mut self, s: u64) {
        while self.slots.first_key_value().is_some_and(|(u, _)| *u < s) {
            self.slots.pop_first();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::tdd::TddPattern;

    #[test]
    fn a_full_ul_slot_moves_the_harq_ack_to_the_next_k1_or_refuses() {
        // DDDDDDSUUU, k1 candidates 4..=9, 11, 12; two PUCCHs per slot.
        let d = Duplex::Tdd(TddPattern::SRSRAN_DEFAULT);
        let mut g = PucchGrid::new(&d, 4, 2);
        assert_eq!(g.harq_ack_slot(0, 0), Some(7));
        g.reserve(7, 0);
        g.reserve(7, 1);
        // UE 0 shares its PUCCH in slot 7; UE 2 finds slot 7 full and takes 8.
        assert_eq!(g.harq_ack_slot(0, 0), Some(7));
        assert_eq!(g.harq_ack_slot(0, 2), Some(8));
        g.reserve(8, 2);
        g.reserve(8, 3);
        g.reserve(9, 4);
        g.reserve(9, 5);
        // From slot 0 every candidate (7, 8, 9; 11 and 12 are DL) is full: no PDSCH for UE 6.
        assert_eq!(g.harq_ack_slot(0, 6), None);
        // From slot 6 (special) the candidates reach 17, 18: free.
        assert_eq!(g.harq_ack_slot(6, 6), Some(17));
        g.release_before(10);
        assert_eq!(g.harq_ack_slot(0, 6), Some(7), "past slots forgotten");
    }
}
