//! The reader on the real srsRAN logs in `../shared/fixtures/srsran/` (skipped with a message when
//! `../shared` is absent, as in a user's clone).

use std::path::PathBuf;

use scout_ingest::srsran::{open_log, parse_header};

fn fixture(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/srsran").join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipping: {} not found (the shared fixtures sit beside the project in CI)", p.display());
        None
    }
}

/// Independent count: lines that start with a header, and the rest.
fn line_counts(text: &str) -> (u64, u64, std::collections::BTreeMap<String, u64>) {
    let (mut headers, mut other) = (0, 0);
    let mut by_logger = std::collections::BTreeMap::new();
    for l in text.lines() {
        match parse_header(l) {
            Some(h) => {
                headers += 1;
                *by_logger.entry(h.logger.to_string()).or_insert(0) += 1;
            }
            None => other += 1,
        }
    }
    (headers, other, by_logger)
}

#[test]
fn every_line_of_the_real_logs_is_an_entry_or_attached_to_one() {
    for name in ["srsran-23.10-info-drb.gnb.log", "srsran-24.10-debug-srb.gnb.log"] {
        let Some(path) = fixture(name) else { return };
        let text = std::fs::read_to_string(&path).unwrap();
        let (headers, other, by_logger) = line_counts(&text);
        let mut r = open_log(&path).unwrap();
        let mut seen = std::collections::BTreeMap::new();
        let mut last_line = 0;
        while let Some(e) = r.next_entry().unwrap() {
            assert!(e.line > last_line, "{name}: entries in file order");
            last_line = e.line;
            *seen.entry(e.header.logger.to_string()).or_insert(0u64) += 1;
        }
        let st = &r.stats;
        assert_eq!(st.entries, headers, "{name}");
        assert_eq!(st.continuation_lines + st.orphan_lines, other, "{name}");
        assert_eq!(seen, by_logger, "{name}: entries per logger");
        assert_eq!(st.bytes, text.len() as u64, "{name}");
        assert!(st.first_t_us.unwrap() < st.last_t_us.unwrap());
    }
}

#[test]
fn the_23_10_log_has_per_packet_lines_of_each_layer() {
    let Some(path) = fixture("srsran-23.10-info-drb.gnb.log") else { return };
    let mut r = open_log(&path).unwrap();
    let mut pdcp_tx = 0;
    let mut sib1_json = false;
    while let Some(e) = r.next_entry().unwrap() {
        let h = e.header;
        if h.logger == "PDCP" && h.body.contains("TX PDU. type=data") {
            pdcp_tx += 1;
        }
        if h.logger == "DU-MNG" && h.body.starts_with("SIB1") {
            sib1_json = e.continuation.contains("cellSelectionInfo");
        }
        if h.logger == "MAC" || h.logger == "SCHED" {
            assert!(h.slot.is_some(), "MAC/SCHED lines carry [sfn.slot]: line {}", e.line);
        }
    }
    assert!(pdcp_tx > 0);
    assert!(sib1_json, "the SIB1 JSON dump is attached to its DU-MNG entry");
}
