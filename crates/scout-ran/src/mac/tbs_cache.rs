//! Transport block sizes by allocation, computed once: the scheduler asks, every slot, how many
//! bytes `n` PRBs carry at an MCS and allocation length, and how many PRBs carry `b` bytes.

use crate::phy::mcs::McsTable;
use crate::phy::tbs::{tbs_bytes, TbsParams};

/// The cache's dimensions: 1–4 layers (one codeword, TS 38.211 Table 7.3.1.3-1), the MCS tables
/// (TS 38.214 Tables 5.1.3.1-1 and -2), MCS indexes 0–31 of each (§5.1.3.1), and allocation
/// lengths of 0–14 OFDM symbols (§5.1.2.1).
const LAYERS: usize = 4;
const MCS_TABLES: usize = 2;
const MCS_INDEXES: usize = 32;
const SYMBOL_COUNTS: usize = 15;
const ROWS: usize = LAYERS * MCS_TABLES * MCS_INDEXES * SYMBOL_COUNTS;
const _: () = assert!(McsTable::Qam256 as usize + 1 == MCS_TABLES, "a row for each MCS table");

/// TBS rows of one cell (its PRBs and DM-RS), each computed on first use.
pub struct TbsCache {
    rows: Vec<Option<Box<[u32]>>>,
    prbs: u16,
    dmrs_re_per_prb: u32,
}

/// What a TB is sent with besides its PRBs: MCS table and index, layers, allocation length.
#[derive(Clone, Copy, Debug)]
pub struct TbShape {
    pub table: McsTable,
    pub mcs: u8,
    pub layers: u8,
    pub symbols: u32,
}

impl TbsCache {
    /// A cache for a carrier of `prbs` PRBs and `dmrs_symbols` DM-RS symbols per slot (12
    /// resource elements per PRB each).
    pub fn new(prbs: u16, dmrs_symbols: u8) -> TbsCache {
        TbsCache { rows: vec![None; ROWS], prbs, dmrs_re_per_prb: 12 * u32::from(dmrs_symbols) }
    }

    /// TBS in bytes for 1..=all PRBs of one shape (TS 38.214 §5.1.3.2).
    pub fn row(&mut self, s: TbShape) -> &[u32] {
        let layers = usize::from(s.layers.clamp(1, LAYERS as u8));
        let index = (((layers - 1) * MCS_TABLES + s.table as usize) * MCS_INDEXES
            + usize::from(s.mcs).min(MCS_INDEXES - 1))
            * SYMBOL_COUNTS
            + (s.symbols as usize).min(SYMBOL_COUNTS - 1);
        let (table, mcs, symbols, layers) = (s.table, s.mcs, s.symbols, layers as u32);
        let (dmrs, prbs) = (self.dmrs_re_per_prb, self.prbs);
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
    pub fn prbs_for(&mut self, s: TbShape, bytes: u64) -> (u16, u32) {
        let row = self.row(s);
        // TBS grows with the PRB count (TS 38.214 §5.1.3.2: N_info is linear in n_PRB and every
        // quantisation step is monotone), so the row is sorted.
        let last = row.len() - 1;
        let n = if u64::from(row[last]) <= bytes { last } else { row.partition_point(|&t| u64::from(t) < bytes) };
        (n as u16 + 1, row[n])
    }

    /// The TBS of `prbs` PRBs (at least 1, at most the carrier's).
    pub fn tbs_for(&mut self, s: TbShape, prbs: u16) -> u32 {
        let row = self.row(s);
        row[usize::from(prbs.max(1)).min(row.len()) - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_the_tables_and_sorted() {
        let mut c = TbsCache::new(106, 1);
        for (table, mcs, symbols, layers) in [
            (McsTable::Qam64, 0, 12, 2),
            (McsTable::Qam256, 27, 13, 2),
            (McsTable::Qam64, 15, 4, 2),
            (McsTable::Qam64, 15, 4, 4),
        ] {
            let row = c.row(TbShape { table, mcs, layers, symbols }).to_vec();
            assert_eq!(row.len(), 106);
            assert!(row.windows(2).all(|w| w[0] <= w[1]), "{row:?}");
            for n in [1u32, 50, 106] {
                let p = TbsParams {
                    nof_prbs: n,
                    nof_symbols: symbols,
                    dmrs_re_per_prb: 12,
                    overhead_re_per_prb: 0,
                    layers: u32::from(layers),
                };
                assert_eq!(row[n as usize - 1], tbs_bytes(p, table.entry(mcs)));
            }
        }
    }

    #[test]
    fn prbs_for_is_the_fewest_that_carry_the_bytes() {
        let mut c = TbsCache::new(52, 1);
        let s = TbShape { table: McsTable::Qam64, mcs: 10, layers: 1, symbols: 12 };
        let row = c.row(s).to_vec();
        for bytes in [1u64, 100, 1000, u64::from(row[30]), u64::from(row[30]) + 1] {
            let (n, tbs) = c.prbs_for(s, bytes);
            assert!(u64::from(tbs) >= bytes && (n == 1 || u64::from(row[usize::from(n) - 2]) < bytes), "{bytes}: {n}");
            assert_eq!(tbs, c.tbs_for(s, n));
        }
        // More than the carrier holds: all of it.
        assert_eq!(c.prbs_for(s, 1 << 40), (52, row[51]));
        // Out of range asks are clamped: 0 PRBs is 1, 99 is the carrier's 52.
        assert_eq!(c.tbs_for(s, 0), row[0]);
        assert_eq!(c.tbs_for(s, 99), row[51]);
        // Two layers carry about twice the bytes on the same PRBs (TS 38.214 §5.1.3.2: N_info ∝ υ).
        let two = c.tbs_for(TbShape { layers: 2, ..s }, 30);
        assert!(two > 2 * row[29] - 100 && two < 2 * row[29] + 100, "{two} vs {}", row[29]);
    }
}
