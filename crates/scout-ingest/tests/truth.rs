//! What `run.json` says about a log is what the log shows (issue 49), on a log in the format of a
//! 2026 srsRAN fork at info level (`tests/data/info-2026-unknown-outcomes.gnb.log`, written for
//! this test): its configuration dump states `common_scs: 30`, its DL grants carry no HARQ
//! outcome (info level has no HARQ-ACK lines) but show retransmissions and a discard after the
//! maximum number of retransmissions, it has fronthaul, RF and PHY warnings and errors, and it is
//! cut mid-line at its end.

mod common;

use std::path::PathBuf;

use scout_ingest::srsran::run::ingest;
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn shared(name: &str) -> Option<PathBuf> {
    common::shared_fixture("srsran", name)
}

fn run(log: PathBuf) -> Value {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = std::env::temp_dir().join(format!("scout-truth-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let meta = ingest(&[log], &[], &[], &out, &mut |_, _| std::ops::ControlFlow::Continue(())).expect("ingest");
    let _ = std::fs::remove_dir_all(&out);
    meta
}

#[test]
fn the_numerology_the_log_states_is_used_not_guessed() {
    let meta = run(data("info-2026-unknown-outcomes.gnb.log"));
    let sl = &meta["ingest"]["slots"];
    // The slot indices seen (0..9) fit 15 kHz too: the guess would have been 10 slots per frame.
    assert_eq!(sl["slots_per_frame"], 20, "{sl}");
    let num = &sl["numerology"];
    assert_eq!(num["stated"], true);
    assert_eq!(num["scs_khz"], 30);
    assert!(num["from"].as_str().unwrap().contains("common_scs"), "{num}");
    assert!(num["at"].as_str().unwrap().ends_with("info-2026-unknown-outcomes.gnb.log:7"), "{num}");
    assert_eq!(sl["numerology_conflicts"], 0, "the cell line says 30 kHz too");
    // The real logs state it in their cell line (15 kHz), before any slot line.
    for name in ["srsran-23.10-info-drb.gnb.log", "srsran-24.10-debug-srb.gnb.log"] {
        let Some(p) = shared(name) else { return };
        let sl = &run(p)["ingest"]["slots"];
        assert_eq!(
            (sl["slots_per_frame"].as_u64(), sl["numerology"]["stated"].as_bool()),
            (Some(10), Some(true)),
            "{name}"
        );
        assert_eq!(sl["numerology"]["scs_khz"], 15, "{name}");
    }
}

#[test]
fn an_outcome_the_log_does_not_carry_is_unknown_and_what_it_implies_is_counted() {
    let meta = run(data("info-2026-unknown-outcomes.gnb.log"));
    let dl = &meta["ingest"]["slots"]["harq"]["dl"];
    // 8 DL transmissions (the ninth is on the cut last line): h_id 0 sent 4 times then discarded
    // after the maximum retransmissions, h_id 2 twice, h_id 1 and 3 once.
    assert_eq!(dl["transmissions"], 8, "{dl}");
    assert_eq!(dl["retransmissions"], 4, "{dl}");
    assert_eq!(dl["new_transport_blocks"], 4, "{dl}");
    assert_eq!(dl["outcome_logged"], 0, "{dl}");
    assert_eq!((dl["ack"].as_u64(), dl["nack"].as_u64()), (Some(0), Some(0)), "{dl}");
    assert_eq!(dl["outcome_not_logged"], 8, "{dl}");
    assert_eq!(dl["lost_after_max_retx"], 1, "{dl}");
    assert_eq!(dl["failed_attempts_implied"], 5, "{dl}");
    assert_eq!(meta["ingest"]["slots"]["dl_max_retx_discards"], 1);
}

#[test]
fn the_logs_own_warnings_errors_and_a_cut_last_line_are_counted() {
    let meta = run(data("info-2026-unknown-outcomes.gnb.log"));
    let h = &meta["ingest"]["log_health"];
    let we = &h["warnings_and_errors"];
    assert_eq!((we["warnings"].as_u64(), we["errors"].as_u64()), (Some(4), Some(1)), "{we}");
    assert_eq!(we["by_component"]["OFH"]["warnings"], 3);
    assert_eq!(we["by_component"]["RF"]["errors"], 1);
    assert_eq!(we["by_component"]["PHY"]["warnings"], 1);
    let top = &we["top_messages"][0];
    assert_eq!(top["count"], 3);
    assert!(top["message"].as_str().unwrap().contains("missed incoming User-Plane PRACH messages"), "{top}");
    assert!(top["first"].as_str().unwrap().ends_with(":20"), "{top}");
    let cut = h["cut_last_lines"].as_array().unwrap();
    assert_eq!(cut.len(), 1);
    assert_eq!(cut[0]["line"], 25);
    assert_eq!(meta["ingest"]["files"][0]["cut_last_line"], 25);
    // The real logs end with a line end and have no warning or error entries.
    let Some(p) = shared("srsran-23.10-info-drb.gnb.log") else { return };
    let h = &run(p)["ingest"]["log_health"];
    assert!(h["cut_last_lines"].as_array().unwrap().is_empty());
}
