//! Transport block size, TS 38.214 §5.1.3.2 (PDSCH; PUSCH uses the same procedure, §6.1.4.2).

use super::mcs::McsEntry;

/// TS 38.214 Table 5.1.3.2-1: TBS for N_info ≤ 3824.
pub const TBS_TABLE: [u32; 93] = [
    24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160, 168, 176, 184, 192, 208, 224, 240,
    256, 272, 288, 304, 320, 336, 352, 368, 384, 408, 432, 456, 480, 504, 528, 552, 576, 608, 640, 672, 704, 736, 768,
    808, 848, 888, 928, 984, 1032, 1064, 1128, 1160, 1192, 1224, 1256, 1288, 1320, 1352, 1416, 1480, 1544, 1608, 1672,
    1736, 1800, 1864, 1928, 2024, 2088, 2152, 2216, 2280, 2408, 2472, 2536, 2600, 2664, 2728, 2792, 2856, 2976, 3104,
    3240, 3368, 3496, 3624, 3752, 3824,
];

/// The time-frequency resources a transport block occupies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TbsParams {
    /// Allocated PRBs, n_PRB.
    pub nof_prbs: u32,
    /// Symbols of the PDSCH/PUSCH allocation, N_symb^sh.
    pub nof_symbols: u32,
    /// DMRS resource elements per PRB over the allocation, N_DMRS^PRB (12 per DMRS symbol for
    /// type 1 with two CDM groups without data).
    pub dmrs_re_per_prb: u32,
    /// xOverhead, N_oh^PRB (0, 6, 12 or 18).
    pub overhead_re_per_prb: u32,
    /// MIMO layers, v.
    pub layers: u32,
}

/// TBS in bits by the full procedure of TS 38.214 §5.1.3.2 (steps 1–4).
pub fn tbs_bits(p: TbsParams, mcs: McsEntry) -> u32 {
    // Step 1: resource elements.
    let n_re_prime = (12 * p.nof_symbols).saturating_sub(p.dmrs_re_per_prb + p.overhead_re_per_prb);
    let n_re = n_re_prime.min(156) * p.nof_prbs;
    // Step 2: intermediate number of information bits.
    let r = mcs.rate_x1024 / 1024.0;
    let n_info = f64::from(n_re) * r * f64::from(mcs.qm) * f64::from(p.layers);
    if n_info <= 0.0 {
        return 0;
    }
    if n_info <= 3824.0 {
        // Step 3.
        let n = (n_info.log2().floor() as i32 - 6).max(3);
        let step = f64::from(1u32 << n);
        let n_info_q = (step * (n_info / step).floor()).max(24.0) as u32;
        // Smallest TBS in Table 5.1.3.2-1 not less than N'_info.
        *TBS_TABLE.iter().find(|t| **t >= n_info_q).unwrap_or(&3824)
    } else {
        // Step 4.
        let n = (n_info - 24.0).log2().floor() as i32 - 5;
        let step = f64::from(1u32 << n);
        // round() in the spec rounds halves up; f64::round rounds half away from zero (same here).
        let n_info_q = (step * ((n_info - 24.0) / step).round()).max(3840.0);
        let ceil_div = |a: f64, b: f64| (a / b).ceil();
        let tbs = if r <= 0.25 {
            let c = ceil_div(n_info_q + 24.0, 3816.0);
            8.0 * c * ceil_div(n_info_q + 24.0, 8.0 * c) - 24.0
        } else if n_info_q > 8424.0 {
            let c = ceil_div(n_info_q + 24.0, 8424.0);
            8.0 * c * ceil_div(n_info_q + 24.0, 8.0 * c) - 24.0
        } else {
            8.0 * ceil_div(n_info_q + 24.0, 8.0) - 24.0
        };
        tbs as u32
    }
}

/// TBS in bytes.
pub fn tbs_bytes(p: TbsParams, mcs: McsEntry) -> u32 {
    tbs_bits(p, mcs) / 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phy::mcs::McsTable;

    fn p(prbs: u32, symbols: u32, dmrs: u32, layers: u32) -> TbsParams {
        TbsParams { nof_prbs: prbs, nof_symbols: symbols, dmrs_re_per_prb: dmrs, overhead_re_per_prb: 0, layers }
    }

    #[test]
    fn table_is_sorted_and_complete() {
        assert_eq!(TBS_TABLE.len(), 93);
        assert!(TBS_TABLE.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn spec_values() {
        let t2 = McsTable::Qam256;
        let t1 = McsTable::Qam64;
        // The largest NR TBS, 1 277 992 bits: 273 PRBs, N'_RE capped at 156, MCS 27 of Table 2,
        // 4 layers (well-known value of the §5.1.3.2 procedure, C = 152 code blocks).
        assert_eq!(tbs_bits(p(273, 14, 0, 4), t2.entry(27)), 1_277_992);
        // Same with one DMRS symbol over 12 symbols (N'_RE = 132): N'_info = 1 081 344, C = 129.
        assert_eq!(tbs_bits(p(273, 12, 12, 4), t2.entry(27)), 1_081_512);
        // Smallest: MCS 0, 1 PRB, 12 symbols, 12 DMRS RE: N_info = 30.9 -> 24 bits.
        assert_eq!(tbs_bits(p(1, 12, 12, 1), t1.entry(0)), 24);
        // Step-3 quantisation and table lookup: N_info = 132 * 2 * 0.5879 * 5 PRB ...
        // 5 PRBs, MCS 9 (QPSK, 679/1024): N_RE = 660, N_info = 875.3, n = 3, N'_info = 872 -> 888.
        assert_eq!(tbs_bits(p(5, 12, 12, 1), t1.entry(9)), 888);
        // Step 4 with R <= 1/4 (MCS 0): 273 PRBs: N_info = 8444.8, n = 8, N'_info = 8448,
        // C = ceil(8472/3816) = 3, TBS = 24 * ceil(8472/24) - 24 = 8448.
        assert_eq!(tbs_bits(p(273, 12, 12, 1), t1.entry(0)), 8448);
        // Step 4 without segmentation: 20 PRBs, MCS 16 (16QAM 658): N_info = 6786.6,
        // n = 7, N'_info = 6784, TBS = 8 * ceil(6808/8) - 24 = 6784.
        assert_eq!(tbs_bits(p(20, 12, 12, 1), t1.entry(16)), 6784);
    }

    #[test]
    fn tbs_grows_with_prbs_and_mcs() {
        let t = McsTable::Qam64;
        for mcs in 0..=28 {
            let mut last = 0;
            for prbs in 1..=273 {
                let tbs = tbs_bits(p(prbs, 12, 12, 1), t.entry(mcs));
                assert!(tbs >= last, "mcs {mcs} prbs {prbs}");
                last = tbs;
            }
        }
    }
}
