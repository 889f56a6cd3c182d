//! MCS and CQI tables (TS 38.214 §5.1.3.1 and §5.2.2.1).

/// Which MCS table the PDSCH/PUSCH uses (srsRAN `mcs_table: qam64 | qam256`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McsTable {
    Qam64,
    Qam256,
}

/// Modulation order Qm and target code rate R × 1024 for one MCS index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct McsEntry {
    pub qm: u8,
    pub rate_x1024: f64,
}

impl McsEntry {
    /// Spectral efficiency in bits per resource element: Qm · R.
    pub fn spectral_efficiency(&self) -> f64 {
        f64::from(self.qm) * self.rate_x1024 / 1024.0
    }
}

macro_rules! m {
    ($qm:expr, $r:expr) => {
        McsEntry { qm: $qm, rate_x1024: $r }
    };
}

/// TS 38.214 Table 5.1.3.1-1: MCS index table 1 for PDSCH (64QAM), indices 0–28.
pub const MCS_TABLE_64QAM: [McsEntry; 29] = [
    m!(2, 120.0),
    m!(2, 157.0),
    m!(2, 193.0),
    m!(2, 251.0),
    m!(2, 308.0),
    m!(2, 379.0),
    m!(2, 449.0),
    m!(2, 526.0),
    m!(2, 602.0),
    m!(2, 679.0),
    m!(4, 340.0),
    m!(4, 378.0),
    m!(4, 434.0),
    m!(4, 490.0),
    m!(4, 553.0),
    m!(4, 616.0),
    m!(4, 658.0),
    m!(6, 438.0),
    m!(6, 466.0),
    m!(6, 517.0),
    m!(6, 567.0),
    m!(6, 616.0),
    m!(6, 666.0),
    m!(6, 719.0),
    m!(6, 772.0),
    m!(6, 822.0),
    m!(6, 873.0),
    m!(6, 910.0),
    m!(6, 948.0),
];

/// TS 38.214 Table 5.1.3.1-2: MCS index table 2 for PDSCH (256QAM), indices 0–27.
pub const MCS_TABLE_256QAM: [McsEntry; 28] = [
    m!(2, 120.0),
    m!(2, 193.0),
    m!(2, 308.0),
    m!(2, 449.0),
    m!(2, 602.0),
    m!(4, 378.0),
    m!(4, 434.0),
    m!(4, 490.0),
    m!(4, 553.0),
    m!(4, 616.0),
    m!(4, 658.0),
    m!(6, 466.0),
    m!(6, 517.0),
    m!(6, 567.0),
    m!(6, 616.0),
    m!(6, 666.0),
    m!(6, 719.0),
    m!(6, 772.0),
    m!(6, 822.0),
    m!(6, 873.0),
    m!(8, 682.5),
    m!(8, 711.0),
    m!(8, 754.0),
    m!(8, 797.0),
    m!(8, 841.0),
    m!(8, 885.0),
    m!(8, 916.5),
    m!(8, 948.0),
];

impl McsTable {
    pub fn entries(self) -> &'static [McsEntry] {
        match self {
            McsTable::Qam64 => &MCS_TABLE_64QAM,
            McsTable::Qam256 => &MCS_TABLE_256QAM,
        }
    }

    /// The highest MCS index with a defined code rate.
    pub fn max_mcs(self) -> u8 {
        self.entries().len() as u8 - 1
    }

    pub fn entry(self, mcs: u8) -> McsEntry {
        let e = self.entries();
        e[usize::from(mcs).min(e.len() - 1)]
    }
}

/// TS 38.214 Table 5.2.2.1-2 (4-bit CQI table 1): (Qm, R × 1024) for CQI 1–15; CQI 0 is out of range.
pub const CQI_TABLE_1: [McsEntry; 15] = [
    m!(2, 78.0),
    m!(2, 120.0),
    m!(2, 193.0),
    m!(2, 308.0),
    m!(2, 449.0),
    m!(2, 602.0),
    m!(4, 378.0),
    m!(4, 490.0),
    m!(4, 616.0),
    m!(6, 466.0),
    m!(6, 567.0),
    m!(6, 666.0),
    m!(6, 772.0),
    m!(6, 873.0),
    m!(6, 948.0),
];

/// TS 38.214 Table 5.2.2.1-3 (4-bit CQI table 2, with 256QAM): (Qm, R × 1024) for CQI 1–15.
pub const CQI_TABLE_2: [McsEntry; 15] = [
    m!(2, 78.0),
    m!(2, 193.0),
    m!(2, 449.0),
    m!(4, 378.0),
    m!(4, 490.0),
    m!(4, 616.0),
    m!(6, 466.0),
    m!(6, 567.0),
    m!(6, 666.0),
    m!(6, 772.0),
    m!(6, 873.0),
    m!(8, 711.0),
    m!(8, 797.0),
    m!(8, 885.0),
    m!(8, 948.0),
];

impl McsTable {
    /// The CQI table a UE reports against with this MCS table: CQI table 1 with MCS table 1
    /// (64QAM), CQI table 2 with MCS table 2 (256QAM), as srsRAN pairs `cqi_table` and `mcs_table`.
    pub fn cqi_table(self) -> &'static [McsEntry; 15] {
        match self {
            McsTable::Qam64 => &CQI_TABLE_1,
            McsTable::Qam256 => &CQI_TABLE_2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_table_values() {
        // Spot checks against TS 38.214 Tables 5.1.3.1-1/-2 (Qm, R x 1024, efficiency).
        let t1 = McsTable::Qam64;
        assert_eq!(t1.max_mcs(), 28);
        assert_eq!(t1.entry(0), McsEntry { qm: 2, rate_x1024: 120.0 });
        assert_eq!(t1.entry(10), McsEntry { qm: 4, rate_x1024: 340.0 });
        assert_eq!(t1.entry(17), McsEntry { qm: 6, rate_x1024: 438.0 });
        assert!((t1.entry(28).spectral_efficiency() - 5.5547).abs() < 1e-4);
        let t2 = McsTable::Qam256;
        assert_eq!(t2.max_mcs(), 27);
        assert_eq!(t2.entry(20), McsEntry { qm: 8, rate_x1024: 682.5 });
        assert!((t2.entry(27).spectral_efficiency() - 7.4063).abs() < 1e-4);
        assert!((t2.entry(5).spectral_efficiency() - 1.4766).abs() < 1e-4);
        // Efficiency grows within each table, except the spec's own dip in Table 5.1.3.1-1 from MCS 16
        // (16QAM, 2.5703) to MCS 17 (64QAM, 2.5664).
        for t in [t1, t2] {
            for (i, w) in t.entries().windows(2).enumerate() {
                let dip = t == t1 && i == 16;
                assert_eq!(w[1].spectral_efficiency() > w[0].spectral_efficiency(), !dip, "{t:?} MCS {i}");
            }
        }
        assert!((CQI_TABLE_1[14].spectral_efficiency() - 5.5547).abs() < 1e-4);
    }

    /// TS 38.214 Table 5.2.2.1-2 and -3: every CQI's efficiency as the tables print it (4 decimals).
    #[test]
    fn cqi_tables_match_the_spec() {
        let t1 = [
            0.1523, 0.2344, 0.3770, 0.6016, 0.8770, 1.1758, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023, 4.5234,
            5.1152, 5.5547,
        ];
        let t2 = [
            0.1523, 0.3770, 0.8770, 1.4766, 1.9141, 2.4063, 2.7305, 3.3223, 3.9023, 4.5234, 5.1152, 5.5547, 6.2266,
            6.9141, 7.4063,
        ];
        for (table, want) in [(McsTable::Qam64, t1), (McsTable::Qam256, t2)] {
            for (i, (e, w)) in table.cqi_table().iter().zip(want).enumerate() {
                assert!(
                    (e.spectral_efficiency() - w).abs() < 1e-4,
                    "{table:?} CQI {}: {}",
                    i + 1,
                    e.spectral_efficiency()
                );
            }
        }
    }
}
