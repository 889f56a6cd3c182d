//! Which srsRAN Project release wrote a log, from the formats of its lines (reference §2.10).
//!
//! srsRAN logs its commit and branch at start (`GNB [I] Built in Release mode using commit 374200d
//! on branch main`) but not its release, and `main` moves between releases. The formats of a few
//! lines changed at known releases, so each one seen narrows the range:
//!
//! | marker | releases |
//! |---|---|
//! | RLC prefix without `du=` (`ue=0 DRB1 DL: `) | 23.10 |
//! | RLC prefix with `du=` (`du=1 ue=0 DRB1 DL: `) | 24.04 and later |
//! | `Slot decisions cell=` | 23.10 |
//! | `Slot decisions pci=`, without a PUCCH count | 24.04 – 25.04 |
//! | `Slot decisions pci=` with a PUCCH count (`… 1 PUSCH, 2 PUCCHs)`) | 25.10 and later |
//! | GTP-U `RX SDU. sdu_len= teid= qos_flow=` | 23.10 |
//! | GTP-U `RX SDU. sdu_len= qos_flow= sn=` | 24.04 and later |
//! | PDCP `TX PDU. type=data …` of a DRB without `is_retx=` | up to 24.04 |
//! | PDCP `TX PDU. type=data … is_retx=` | 24.10 and later |
//! | SCHED `DL HARQ … Discarding HARQ process tb=` | 23.10 – 25.04 (the 23.10 and 24.10 fixtures) |
//! | RLC `RETX PDU. … retx_count=` | 24.04 and later |
//! | MAC `DL PDU: … SDU: lcid= size=` | 23.10 |
//! | MAC `DL PDU: … SDU: lcid= nof_sdus= total_size=` | 24.04 and later |
//! | PDCP `Dropping SDU to avoid going over the TX window size` | 23.10 |
//! | PDCP `Drop burst finished. nof_sdus=` | 25.04 and later |
//! | `optional(…)` / `none` in a field | 25.04 |
//!
//! A 24.10 gNB logs its SRBs' PDCP PDUs without `is_retx=` (the 24.10 fixture), so only a DRB's
//! line without it says "up to 24.04". A log with SRB traffic only therefore cannot be told from
//! 24.04 by its lines: the 24.10 fixture reads as `24.04–25.04`, a range that holds its release.
//!
//! Markers are looked for in the first [`INSPECT_ENTRIES`] entries. The parsers accept every
//! format whatever the range says; the range is reported (`run.json`
//! `srsran`) so a user knows which release's behaviour the reconstruction assumed, and an
//! inconsistent set of markers (a log concatenated from two releases) is reported as such.

use serde_json::{json, Value};

use super::reader::Entry;

/// Releases whose formats differ, oldest first.
pub const RELEASES: [&str; 5] = ["23.10", "24.04", "24.10", "25.04", "25.10"];

const R23_10: usize = 0;
const R24_04: usize = 1;
const R24_10: usize = 2;
const R25_04: usize = 3;
const R25_10: usize = 4;
const LAST: usize = RELEASES.len() - 1;

/// One format marker seen: its name, first line, and the releases it allows (indexes into
/// [`RELEASES`], inclusive).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    pub marker: &'static str,
    pub line: u64,
    pub releases: (usize, usize),
}

/// Entries inspected: every marker of a real log shows within its first seconds of traffic, and
/// the check then costs nothing on a long log.
pub const INSPECT_ENTRIES: u64 = 200_000;

#[derive(Default)]
pub struct VersionDetector {
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub evidence: Vec<Evidence>,
    seen: u64,
}

impl VersionDetector {
    fn mark(&mut self, marker: &'static str, line: u64, lo: usize, hi: usize) {
        if !self.evidence.iter().any(|e| e.marker == marker) {
            self.evidence.push(Evidence { marker, line, releases: (lo, hi) });
        }
    }

    pub fn entry(&mut self, e: &Entry<'_>) {
        if self.seen == INSPECT_ENTRIES {
            return;
        }
        self.seen += 1;
        let h = e.header;
        let b = h.body;
        let line = e.line;
        match h.logger {
            "GNB" if self.commit.is_none() => {
                if let Some(rest) = b.strip_prefix("Built in ").and_then(|r| r.split_once("using commit ")) {
                    let mut it = rest.1.split(" on branch ");
                    self.commit = it.next().map(|c| c.trim().to_string());
                    self.branch = it.next().map(|c| c.trim().to_string());
                }
            }
            "RLC" if b.starts_with("du=") => self.mark("rlc prefix with du=", line, R24_04, LAST),
            "RLC" if b.starts_with("ue=") => self.mark("rlc prefix without du=", line, R23_10, R23_10),
            "SCHED" if b.starts_with("Slot decisions cell=") => self.mark("slot decisions cell=", line, R23_10, R23_10),
            "SCHED" if b.starts_with("Slot decisions pci=") => {
                let head = b.split("):").next().unwrap_or(b);
                if head.contains("PUCCH") {
                    self.mark("slot decisions with a PUCCH count", line, R25_10, LAST);
                } else {
                    self.mark("slot decisions pci= without a PUCCH count", line, R24_04, R25_04);
                }
            }
            "GTPU" if b.contains("RX SDU. sdu_len=") => {
                if b.contains(" teid=")
                    && b.contains("qos_flow=")
                    && b.split("RX SDU.").nth(1).is_some_and(|r| r.contains("teid="))
                {
                    self.mark("gtpu rx sdu with teid=", line, R23_10, R23_10);
                } else if b.contains(" sn=") {
                    self.mark("gtpu rx sdu with sn=", line, R24_04, LAST);
                }
            }
            "PDCP" if b.contains("TX PDU. type=data") => {
                if b.contains("is_retx=") {
                    self.mark("pdcp tx pdu with is_retx=", line, R24_10, LAST);
                } else if b.contains(" DRB") {
                    self.mark("pdcp drb tx pdu without is_retx=", line, R23_10, R24_04);
                }
            }
            "SCHED" if b.contains("Discarding HARQ process tb=") => {
                self.mark("harq discard of a process tb=", line, R23_10, R25_04)
            }
            "RLC" if b.contains("RETX PDU.") && b.contains("retx_count=") => {
                self.mark("rlc retx pdu with retx_count=", line, R24_04, LAST)
            }
            "PDCP" if b.contains("Dropping SDU to avoid going over the TX window size") => {
                self.mark("pdcp early drop (tx window)", line, R23_10, R23_10)
            }
            "PDCP" if b.contains("Drop burst finished") => self.mark("pdcp drop burst", line, R25_04, LAST),
            "MAC" if b.starts_with("DL PDU:") => {
                if b.contains("nof_sdus=") {
                    self.mark("mac dl pdu with nof_sdus=", line, R24_04, LAST);
                } else if b.contains("SDU: lcid=") {
                    self.mark("mac dl pdu with size=", line, R23_10, R23_10);
                }
            }
            _ => {}
        }
        if b.contains("=optional(") || b.contains("=none ") {
            self.mark("optional(...) printing", line, R25_04, R25_04);
        }
    }

    /// The releases every marker allows, or `None` when they contradict each other.
    pub fn range(&self) -> Option<(usize, usize)> {
        let lo = self.evidence.iter().map(|e| e.releases.0).max().unwrap_or(0);
        let hi = self.evidence.iter().map(|e| e.releases.1).min().unwrap_or(LAST);
        (lo <= hi).then_some((lo, hi))
    }

    /// A short text: `24.04–25.04`, `23.10`, `25.10 or later`, `unknown`, or `inconsistent`.
    pub fn describe(&self) -> String {
        if self.evidence.is_empty() {
            return "unknown (no format markers seen)".into();
        }
        match self.range() {
            None => "inconsistent (markers of different releases; concatenated logs?)".into(),
            Some((lo, hi)) if lo == hi && hi == LAST => format!("{} or later", RELEASES[lo]),
            Some((lo, hi)) if lo == hi => RELEASES[lo].to_string(),
            Some((lo, hi)) if hi == LAST => format!("{} or later", RELEASES[lo]),
            Some((lo, hi)) => format!("{}–{}", RELEASES[lo], RELEASES[hi]),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "release_from_formats": self.describe(),
            "commit": self.commit,
            "branch": self.branch,
            "evidence": self.evidence.iter().map(|e| json!({
                "marker": e.marker,
                "first_line": e.line,
                "releases": format!("{}–{}", RELEASES[e.releases.0], RELEASES[e.releases.1]),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::reader::EntryReader;
    use super::*;

    fn detect(log: &str) -> VersionDetector {
        let mut r = EntryReader::new(log.as_bytes());
        let mut v = VersionDetector::default();
        while let Some(e) = r.next_entry().unwrap() {
            v.entry(&e);
        }
        v
    }

    #[test]
    fn each_release_is_told_apart_by_its_lines() {
        // 23.10, lines from the real fixture.
        let v = detect(
            "2023-11-06T20:04:25.872601 [GNB     ] [I] Built in Release mode using commit 374200d on branch main
2023-11-06T20:04:33.436029 [RLC     ] [I] ue=0 DRB1 DL: TX status PDU. pdu_len=3 grant_len=3
2023-11-06T20:04:33.436016 [SCHED   ] [I] [   720.6] Slot decisions cell=0 t=20us (1 PDSCH, 0 PUSCHs): DL: ue=0 c-rnti=0x4601 rb=[0..1) h_id=0 ss_id=2 k1=4 rv=0 tbs=14
2023-11-06T20:04:33.436030 [MAC     ] [I] [   720.6] DL PDU: ue=0 rnti=0x4601 size=14: SDU: lcid=4 size=5
",
        );
        assert_eq!(v.describe(), "23.10");
        assert_eq!((v.commit.as_deref(), v.branch.as_deref()), (Some("374200d"), Some("main")));
        // 24.10: du= prefix, pci=, is_retx=.
        let v = detect(
            "2024-11-25T15:08:25.216599 [RLC     ] [I] du=1 ue=0 SRB1 UL: RX PDU. pdu_len=35 dc=data p=1 si=full sn=0
2024-11-25T15:08:25.165496 [SCHED   ] [I] [    19.7] Slot decisions pci=1 t=63us (1 PDSCH, 0 PUSCHs): DL: ue=0 c-rnti=0x4601 h_id=0 ss_id=1 rb=[0..92) k1=4 rv=0 tbs=325
2024-11-25T15:08:25.165496 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1403 sn=0 count=0 is_retx=false
",
        );
        assert_eq!(v.describe(), "24.10–25.04");
        // 24.10 with SRB traffic only (the 24.10 fixture's lines): an SRB's PDCP PDU has no
        // is_retx= and says nothing of the release, so the range is the one the other lines allow
        // (it used to read "24.04", a release this log is not from).
        let v = detect(
            "2024-11-25T15:08:25.165496 [SCHED   ] [I] [    19.7] Slot decisions pci=1 t=63us (1 PDSCH, 0 PUSCHs): DL: ue=0 c-rnti=0x4601 h_id=0 ss_id=1 rb=[0..92) k1=4 rv=0 tbs=325
2024-11-25T15:08:25.221896 [PDCP    ] [I] ue=0 SRB1 DL: TX PDU. type=data pdu_len=51 sn=0 count=0
2024-11-25T15:08:25.223622 [SCHED   ] [I] [    23.9] DL HARQ rnti=0x4601 cell=0 h_id=0: Discarding HARQ process tb=0 with tbs=325. Cause: Maximum number of reTxs 4 exceeded
2024-11-25T15:08:28.866696 [RLC     ] [I] du=1 ue=0 SRB1 DL: RETX PDU. dc=data p=1 si=full sn=6 pdu_len=10 grant_len=10 retx_count=0
",
        );
        assert_eq!(v.describe(), "24.04–25.04");
        // A DRB's PDCP PDU without is_retx= is 24.04 at the latest.
        let v = detect(
            "2024-05-02T10:00:00.000000 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1403 sn=0 count=0
2024-05-02T10:00:00.000100 [SCHED   ] [I] [   12.3] Slot decisions pci=1 t=20us (1 PDSCH, 0 PUSCHs): DL: ue=0
",
        );
        assert_eq!(v.describe(), "24.04");
        // main: a PUCCH count in the slot decisions and drop bursts.
        let v = detect(
            "2026-01-19T08:57:06.466216 [SCHED   ] [I] [   10.1] Slot decisions pci=1 t=4us (1 PDSCH, 1 PUSCH, 2 PUCCHs): DL: ue=0
2026-01-19T08:57:06.466316 [PDCP    ] [I] ue=0 DRB1 DL: Drop burst finished. nof_sdus=12
",
        );
        assert_eq!(v.describe(), "25.10 or later");
        // 25.04: fmt 11 printed optionals as `optional(x)` / `none`, slot decisions had no PUCCH count.
        let v = detect(
            "2025-05-02T10:00:00.000000 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1400 qos_flow=QFI=1 sn=none rx_deliv=optional(3)
2025-05-02T10:00:00.000100 [SCHED   ] [I] [   12.3] Slot decisions pci=1 t=20us (1 PDSCH, 0 PUSCHs): DL: ue=0 c-rnti=0x4601 h_id=0 ss_id=2 rb=[0..5) k1=4 newtx=true rv=0 tbs=309
2025-05-02T10:00:00.000200 [PDCP    ] [I] ue=0 DRB1 DL: Drop burst finished. nof_sdus=3
",
        );
        assert_eq!(v.describe(), "25.04");
        // Two releases concatenated.
        let v = detect(
            "2023-11-06T20:04:33.436029 [RLC     ] [I] ue=0 DRB1 DL: TX status PDU. pdu_len=3 grant_len=3
2024-11-25T15:08:25.216599 [RLC     ] [I] du=1 ue=0 SRB1 UL: RX PDU. pdu_len=35 dc=data p=1 si=full sn=0
",
        );
        assert!(v.describe().starts_with("inconsistent"));
        assert_eq!(detect("").describe(), "unknown (no format markers seen)");
    }
}
