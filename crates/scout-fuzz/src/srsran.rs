//! `scout ingest srsran` on one log held in memory (plain or gzip): the entry reader, the line
//! parsers, UE identity, packet stitching and slot rows.

use std::ops::ControlFlow;
use std::sync::Arc;

use scout_events::writer::CountingRun;
use scout_ingest::srsran::run::{ingest_logs, IngestError, LogInput};
use serde_json::Value;

use crate::n;

const NAME: &str = "fuzz.log";

pub fn run(data: &[u8]) {
    let log = LogInput::Bytes { name: NAME.into(), data: Arc::from(data) };
    let got =
        ingest_logs(&[log], &[], &[], |meta, _| Ok(CountingRun::new(meta)), &mut |_, _| ControlFlow::Continue(()));
    match got {
        Ok(meta) => check(&meta, data),
        Err(IngestError::Input { path, message }) => {
            assert_eq!(path, NAME);
            assert!(!message.is_empty());
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// Every line read is an entry, a continuation line, an orphan, a skipped-lines marker, a
/// counted skip, or the last line cut mid-line (counted); every byte of a plain log is read.
pub fn check(meta: &Value, data: &[u8]) {
    let f = &meta["ingest"]["files"][0];
    let markers = f["skipped_log_lines_markers"].as_array().map_or(0, Vec::len) as u64;
    let lines = n(&f["entries"])
        + n(&f["continuation_lines"])
        + n(&f["orphan_lines"])
        + markers
        + n(&f["overlong_lines"])
        + n(&f["impossible_time_lines"])
        + u64::from(!f["cut_last_line"].is_null());
    assert_eq!(lines, n(&f["lines"]), "lines not accounted for: {f}");
    assert!(n(&f["entries"]) > 0, "a success that read no entry: {f}");
    let gzip = data.starts_with(&[0x1f, 0x8b]);
    if !gzip {
        assert_eq!(n(&f["bytes"]), data.len() as u64, "bytes not read: {f}");
        assert!(f["damage"].is_null(), "{f}");
    }
    assert_eq!(n(&meta["counts"]["offered_packets"]), n(&meta["ingest"]["packets"]));
}
