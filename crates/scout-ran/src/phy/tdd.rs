//! Duplexing: FDD, or a TDD UL/DL pattern as configured in srsRAN's `tdd_ul_dl_cfg`
//! (RRC `TDD-UL-DL-Pattern`, TS 38.331; slot format semantics TS 38.213 §11.1).
//!
//! A period of `dl_ul_tx_period` slots holds `nof_dl_slots` full DL slots first, then (if
//! `nof_dl_symbols` or `nof_ul_symbols` is non-zero) one special slot with DL symbols at its start and
//! UL symbols at its end, then `nof_ul_slots` full UL slots at the end. srsRAN's default is
//! period 10, 6 DL slots, 8 DL symbols, 3 UL slots: DDDDDDSUUU. An optional `pattern2` (RRC
//! `TDD-UL-DL-ConfigCommon.pattern2`, srsRAN `tdd_ul_dl_cfg.pattern2`) follows the first period
//! with a second of the same form; the two repeat together (e.g. DDDSU + DDSUU).

use super::SYMBOLS_PER_SLOT;

/// What a slot can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotKind {
    /// DL symbols at the start of the slot (14 for a DL slot).
    pub dl_symbols: u8,
    /// UL symbols at the end of the slot (14 for an UL slot).
    pub ul_symbols: u8,
}

impl SlotKind {
    pub fn letter(self) -> char {
        match (self.dl_symbols, self.ul_symbols) {
            (14, 0) => 'D',
            (0, 14) => 'U',
            (14, 14) => 'F',
            _ => 'S',
        }
    }
}

/// A TDD pattern (srsRAN `tdd_ul_dl_cfg`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TddPattern {
    pub dl_ul_tx_period: u32,
    pub nof_dl_slots: u32,
    pub nof_dl_symbols: u32,
    pub nof_ul_slots: u32,
    pub nof_ul_symbols: u32,
    /// The second period, if any (its own `pattern2` is not used).
    pub pattern2: Option<Box<TddPattern>>,
}

impl TddPattern {
    /// srsRAN's default: DDDDDDSUUU (`du_high_config.h`).
    pub const SRSRAN_DEFAULT: TddPattern = TddPattern {
        dl_ul_tx_period: 10,
        nof_dl_slots: 6,
        nof_dl_symbols: 8,
        nof_ul_slots: 3,
        nof_ul_symbols: 0,
        pattern2: None,
    };

    /// Checks each period holds its slots, and that the whole has a DL slot and a slot with UL
    /// symbols; the error names the offending field.
    pub fn validate(&self) -> Result<(), String> {
        self.validate_period()?;
        if let Some(p2) = &self.pattern2 {
            if p2.pattern2.is_some() {
                return Err("pattern2 cannot have a pattern2 of its own".into());
            }
            p2.validate_period().map_err(|e| format!("pattern2: {e}"))?;
        }
        let kinds: Vec<SlotKind> = (0..self.period()).map(|s| self.slot_kind(s)).collect();
        if !kinds.iter().any(|k| k.dl_symbols == 14) || !kinds.iter().any(|k| k.ul_symbols > 0) {
            return Err("the pattern needs at least one DL slot and one slot with UL symbols".into());
        }
        Ok(())
    }

    /// The slots of both periods.
    fn period(&self) -> u64 {
        u64::from(self.dl_ul_tx_period) + self.pattern2.as_ref().map_or(0, |p| u64::from(p.dl_ul_tx_period))
    }

    /// What slot `i` of one period of this pattern carries (`pattern2` not considered).
    fn period_slot_kind(&self, i: u32) -> SlotKind {
        let first_ul = self.dl_ul_tx_period - self.nof_ul_slots;
        if i < self.nof_dl_slots {
            SlotKind { dl_symbols: 14, ul_symbols: 0 }
        } else if i >= first_ul {
            SlotKind { dl_symbols: 0, ul_symbols: 14 }
        } else if i == self.nof_dl_slots {
            SlotKind { dl_symbols: self.nof_dl_symbols as u8, ul_symbols: self.nof_ul_symbols as u8 }
        } else {
            // Flexible slots between the special slot and the UL slots: unused.
            SlotKind { dl_symbols: 0, ul_symbols: 0 }
        }
    }

    /// What absolute slot `slot` carries, over both periods.
    fn slot_kind(&self, slot: u64) -> SlotKind {
        let i = (slot % self.period()) as u32;
        match &self.pattern2 {
            Some(p2) if i >= self.dl_ul_tx_period => p2.period_slot_kind(i - self.dl_ul_tx_period),
            _ => self.period_slot_kind(i),
        }
    }

    /// Checks one period: its length, and that its slots and special slot fit.
    fn validate_period(&self) -> Result<(), String> {
        if self.dl_ul_tx_period == 0 || self.dl_ul_tx_period > 160 {
            return Err(format!("dl_ul_tx_period = {} slots; accepted: 1..=160", self.dl_ul_tx_period));
        }
        let special = u32::from(self.nof_dl_symbols > 0 || self.nof_ul_symbols > 0);
        if self.nof_dl_slots + self.nof_ul_slots + special > self.dl_ul_tx_period {
            return Err(format!(
                "nof_dl_slots ({}) + nof_ul_slots ({}) + a special slot ({}) exceed dl_ul_tx_period ({})",
                self.nof_dl_slots, self.nof_ul_slots, special, self.dl_ul_tx_period
            ));
        }
        if self.nof_dl_symbols + self.nof_ul_symbols >= SYMBOLS_PER_SLOT {
            return Err(format!(
                "nof_dl_symbols ({}) + nof_ul_symbols ({}) must leave a guard: < 14",
                self.nof_dl_symbols, self.nof_ul_symbols
            ));
        }
        Ok(())
    }
}

/// FDD or TDD, answering what each slot carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Duplex {
    /// Paired spectrum: every slot carries DL and UL.
    Fdd,
    Tdd(TddPattern),
}

impl Duplex {
    /// What absolute slot `slot` carries.
    pub fn slot_kind(&self, slot: u64) -> SlotKind {
        match self {
            Duplex::Fdd => SlotKind { dl_symbols: 14, ul_symbols: 14 },
            Duplex::Tdd(p) => p.slot_kind(slot),
        }
    }

    /// The period in slots (1 for FDD).
    pub fn period(&self) -> u64 {
        match self {
            Duplex::Fdd => 1,
            Duplex::Tdd(p) => p.period(),
        }
    }

    /// The pattern as letters, e.g. `DDDDDDSUUU` (`F` for FDD).
    pub fn describe(&self) -> String {
        (0..self.period()).map(|s| self.slot_kind(s).letter()).collect()
    }

    /// The first slot ≥ `from` whose kind satisfies `pred`; searched over two periods.
    pub fn next_slot(&self, from: u64, pred: impl Fn(SlotKind) -> bool) -> Option<u64> {
        (from..from + 2 * self.period() + 1).find(|s| pred(self.slot_kind(*s)))
    }

    /// The cell's k1 candidates (PDSCH → HARQ-ACK delays in slots), the `dl-DataToUL-ACK` list of
    /// TS 38.331 PUCCH-Config (at most 8 values of 0..=15, TS 38.213 §9.2.3): every k1 ≥ `min_k1`
    /// that takes some slot with a PDSCH to a slot with UL symbols (PUCCH), smallest first, as
    /// srsRAN derives its list from the TDD pattern. For FDD: min_k1 .. min_k1 + 7.
    pub fn k1_candidates(&self, min_k1: u32) -> Vec<u32> {
        let p = self.period();
        (min_k1..=15)
            .filter(|&k| {
                (0..p).any(|n| self.slot_kind(n).dl_symbols > 0 && self.slot_kind(n + u64::from(k)).ul_symbols > 0)
            })
            .take(8)
            .collect()
    }

    /// For a PDCCH in slot `n`, the PUSCH slots it schedules: every UL slot `u` whose latest PDCCH
    /// slot at or before `u − min_k2` is `n` (so each UL slot is scheduled exactly once; k2 = u − n,
    /// TS 38.214 §6.1.2.1).
    pub fn pusch_slots_for_pdcch(&self, n: u64, min_k2: u32) -> Vec<u64> {
        let has_pdcch = |k: SlotKind| k.dl_symbols > 0;
        if !has_pdcch(self.slot_kind(n)) {
            return Vec::new();
        }
        let k2 = u64::from(min_k2);
        let next_pdcch = self.next_slot(n + 1, has_pdcch).unwrap_or(n + 1);
        // UL slots u with n <= u - k2 < next_pdcch.
        (n + k2..next_pdcch + k2).filter(|u| self.slot_kind(*u).ul_symbols == 14).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tdd(period: u32, dl: u32, dls: u32, ul: u32, uls: u32) -> Duplex {
        Duplex::Tdd(TddPattern {
            dl_ul_tx_period: period,
            nof_dl_slots: dl,
            nof_dl_symbols: dls,
            nof_ul_slots: ul,
            nof_ul_symbols: uls,
            pattern2: None,
        })
    }

    #[test]
    fn patterns_from_srsran_configs() {
        assert_eq!(Duplex::Tdd(TddPattern::SRSRAN_DEFAULT).describe(), "DDDDDDSUUU");
        assert_eq!(tdd(5, 3, 10, 1, 2).describe(), "DDDSU");
        // srsRAN configs/low_latency.yml: period 4, 2 DL slots, 10 DL symbols, 1 UL slot.
        assert_eq!(tdd(4, 2, 10, 1, 0).describe(), "DDSU");
        assert_eq!(Duplex::Fdd.describe(), "F");
        assert!(TddPattern { nof_ul_slots: 5, ..TddPattern::SRSRAN_DEFAULT }.validate().is_err());
        assert!(TddPattern::SRSRAN_DEFAULT.validate().is_ok());
    }

    #[test]
    fn a_second_pattern_follows_the_first_and_the_two_repeat() {
        let Duplex::Tdd(mut p) = tdd(5, 3, 10, 1, 2) else { unreachable!() };
        let Duplex::Tdd(p2) = tdd(5, 2, 10, 2, 2) else { unreachable!() };
        p.pattern2 = Some(Box::new(p2));
        assert!(p.validate().is_ok());
        let d = Duplex::Tdd(p.clone());
        assert_eq!(d.describe(), "DDDSUDDSUU");
        assert_eq!(d.period(), 10);
        assert_eq!(d.slot_kind(13).letter(), 'S');
        assert_eq!(d.slot_kind(19).letter(), 'U');
        // Each period is checked on its own; pattern2 may carry no DL slot (DDDSU + UUUUU).
        p.pattern2.as_mut().unwrap().nof_ul_slots = 6;
        assert!(p.validate().unwrap_err().starts_with("pattern2: "));
        let Duplex::Tdd(ul_only) = tdd(5, 0, 0, 5, 0) else { unreachable!() };
        p.pattern2 = Some(Box::new(ul_only));
        assert_eq!(Duplex::Tdd(p.clone()).describe(), "DDDSUUUUUU");
        assert!(p.validate().is_ok());
    }

    #[test]
    fn k1_candidates_reach_ul_slots_from_every_pdsch_slot() {
        // DDDDDDSUUU, UL slots 7, 8, 9 (17, 18, 19): from slots 0..=6, k1 >= 4 lands on UL with
        // 4..=9 and 11..=15 (slot 6 + 10 = 16 is DL); the first 8 are kept (TS 38.331: SIZE(1..8)).
        let d = Duplex::Tdd(TddPattern::SRSRAN_DEFAULT);
        assert_eq!(d.k1_candidates(4), vec![4, 5, 6, 7, 8, 9, 11, 12]);
        // The special slot's first reachable UL slot is 17: k1 = 11 is in the list.
        assert_eq!(Duplex::Fdd.k1_candidates(4), vec![4, 5, 6, 7, 8, 9, 10, 11]);
        assert_eq!(Duplex::Fdd.k1_candidates(10), vec![10, 11, 12, 13, 14, 15]);
        // DDSU (srsRAN low_latency.yml), min_k1 2: slots 0, 1, 2 reach the UL slots (3 mod 4) with
        // k1 = 3, 2, 1 (mod 4).
        assert_eq!(tdd(4, 2, 10, 1, 0).k1_candidates(2), vec![2, 3, 5, 6, 7, 9, 10, 11]);
        for d in [Duplex::Tdd(TddPattern::SRSRAN_DEFAULT), tdd(5, 3, 10, 1, 2), tdd(4, 2, 10, 1, 0), Duplex::Fdd] {
            // Every slot with a PDSCH has a candidate that reaches PUCCH.
            let k1s = d.k1_candidates(4);
            for n in (0..d.period()).filter(|n| d.slot_kind(*n).dl_symbols > 0) {
                assert!(k1s.iter().any(|k| d.slot_kind(n + u64::from(*k)).ul_symbols > 0), "{} slot {n}", d.describe());
            }
        }
    }

    #[test]
    fn every_ul_slot_is_scheduled_by_exactly_one_pdcch() {
        for d in [Duplex::Tdd(TddPattern::SRSRAN_DEFAULT), tdd(5, 3, 10, 1, 2), tdd(4, 2, 10, 1, 0), Duplex::Fdd] {
            for k2 in [2, 4] {
                let mut seen = std::collections::BTreeMap::new();
                for n in 0..200 {
                    for u in d.pusch_slots_for_pdcch(n, k2) {
                        assert!(u >= n + u64::from(k2));
                        *seen.entry(u).or_insert(0) += 1;
                    }
                }
                for u in 40..160 {
                    let expect = u32::from(d.slot_kind(u).ul_symbols == 14);
                    assert_eq!(seen.get(&u).copied().unwrap_or(0), expect, "{} k2={k2} slot {u}", d.describe());
                }
            }
        }
    }
}
