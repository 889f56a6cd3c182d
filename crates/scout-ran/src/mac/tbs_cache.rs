//! Transport block sizes by allocation, computed once: the scheduler asks, every slot, how many
//! bytes `n` PRBs carry at an MCS and allocation length, and how many PRBs carry `b` bytes.

use crate::phy::mcs::McsTable;
use crate::phy::tbs::{tbs_bytes, TbsParams};

/// The cache's dimensions: the MCS tables (TS 38.214 Tables 5.1.3.1-1 and -2), MCS indexes 0–31
/// of each (§5.1.3.1), and allocation lengths of 0–14 OFDM symbols (§5.1.2.1).
const MCS_TABLES: usize = 2;
const MCS_INDEXES: usize = 32;
const SYMBOL_COUNTS: usize = 15;
const ROWS: usize = MCS_TABLES * MCS_INDEXES * SYMBOL_COUNTS;
const _: () = assert!(McsTable::Qam256 as usize + 1 == MCS_TABLES, "a row for each MCS table");

/// TBS rows of one cell (its PRBs, MIMO layers and DM-RS), each computed on first use.
pub struct TbsCache {
    rows: Vec<Option<Box<[u32]>>>,
    prbs: u16,
    layers: u32,
    dmrs_re_per_prb: u32,
}

impl TbsCache {
    /// A cache for a carrier of `prbs` PRBs, `layers` MIMO layers and `dmrs_symbols` DM-RS
    /// symbols per slot (12 resource elements per PRB each).
    pub fn new(prbs: u16, layers: u8, dmrs_symbols: u8) -> TbsCache {
        TbsCache {
            rows: vec![None; ROWS],
            prbs,
            layers: u32::from(layers),
            dmrs_re_per_prb: 12 * u32::from(dmrs_symbols),
        }
    }

    /// TBS in bytes for 1..=all PRBs at one MCS and allocation length (TS 38.214 §5.1.3.2).
    pub fn row(&mut self, table: McsTable, mcs: u8, symbols: u32) -> &[u32] {
        let index = (table as usize * MCS_INDEXES + usize::from(mcs).min(MCS_INDEXES - 1)) * SYMBOL_COUNTS
            + (symbols as usize).min(SYMBOL_COUNTS - 1);
        let (layers, dmrs, prbs) = (self.layers, self.dmrs_re_per_prb, self.prbs);
        self.rows[index].get_or_insert_with(|| {
            (1..=u32::from(prbs))
                .map(|n| {
                    let p = TbsParams {
                        nof_prbs: n,
                        nof_symbols: symbols,
                        dmrs_re_per_prb: dmrs,
                        overhead_re_per_prb: 0,
                        layers,
                    };
                    tbs_bytes(p, table.entry(mcs))
                })
                .collect()
        })
    }

    /// The fewest PRBs whose TBS carries `bytes`, or all of them; and that TBS.
    pub fn prbs_for(&mut self, table: McsTable, mcs: u8, symbols: u32, bytes: u64) -> (u16, u32) {
        let row = self.row(table, mcs, symbols);
        // TBS grows with the PRB count (TS 38.214 §5.1.3.2: N_info is linear in n_PRB and every
        // quantisation step is monotone), so the row is sorted.
        let last = row.len() - 1;
        let n = if u64::from(row[last]) <= bytes { last } else { row.partition_point(|&t| u64::from(t) < bytes) };
        (n as u16 + 1, row[n])
    }

    /// The TBS of `prbs` PRBs (at least 1, at most the carrier's).
    pub fn tbs_for(&mut self, table: McsTable, mcs: u8, symbols: u32, prbs: u16) -> u32 {
        let row = self.row(table, mcs, symbols);
        row[usize::from(prbs.max(1)).min(row.len()) - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_the_tables_and_sorted() {
        let mut c = TbsCache::new(106, 2, 1);
        for (table, mcs, symbols) in [(McsTable::Qam64, 0, 12), (McsTable::Qam256, 27, 13), (McsTable::Qam64, 15, 4)] {
            let row = c.row(table, mcs, symbols).to_vec();
            assert_eq!(row.len(), 106);
            assert!(row.windows(2).all(|w| w[0] <= w[1]), "{row:?}");
            for n in [1u32, 50, 106] {
                let p = TbsParams {
                    nof_prbs: n,
                    nof_symbols: symbols,
                    dmrs_re_per_prb: 12,
                    overhead_re_per_prb: 0,
                    layers: 2,
                };
                assert_eq!(row[n as usize - 1], tbs_bytes(p, table.entry(mcs)));
            }
        }
    }

    #[test]
    fn prbs_for_is_the_fewest_that_carry_the_bytes() {
        let mut c = TbsCache::new(52, 1, 1);
        let row = c.row(McsTable::Qam64, 10, 12).to_vec();
        for bytes in [1u64, 100, 1000, u64::from(row[30]), u64::from(row[30]) + 1] {
            let (n, tbs) = c.prbs_for(McsTable::Qam64, 10, 12, bytes);
            assert!(u64::from(tbs) >= bytes && (n == 1 || u64::from(row[usize::from(n) - 2]) < bytes), "{bytes}: {n}");
            assert_eq!(tbs, c.tbs_for(McsTable::Qam64, 10, 12, n));
        }
        // More than the carrier holds: all of it.
        assert_eq!(c.prbs_for(McsTable::Qam64, 10, 12, 1 << 40), (52, row[51]));
        // Out of range asks are clamped: 0 PRBs is 1, 99 is the carrier's 52.
        assert_eq!(c.tbs_for(McsTable::Qam64, 10, 12, 0), row[0]);
        assert_eq!(c.tbs_for(McsTable::Qam64, 10, 12, 99), row[51]);
    }
}
