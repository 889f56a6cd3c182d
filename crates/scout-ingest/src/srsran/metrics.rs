//! srsRAN JSON metrics (remote control WebSocket in 25.10 and later, UDP before; reference §4),
//! saved one JSON object per line, kept as aggregates: control events `metrics_*` on the log's
//! clock, whose `value` is the metric the report cross-checks against the per-packet events and
//! whose `detail` is the object as srsRAN sent it.
//!
//! | object | control events (`value`) |
//! |---|---|
//! | `{"timestamp", "rlc_metrics": {"du_id", "ue_id", "drb_id", "tx": {…}, "rx": {…}}}` | `metrics_rlc_tx` (`tx.num_sdus`), `metrics_rlc_rx` (`rx.num_sdus`); `ue`, `drb` |
//! | `{"timestamp", "cu-up": {"pdcp": {"dl": {…}, "ul": {…}}}}` | `metrics_pdcp_dl`, `metrics_pdcp_ul` (`average_latency_us`, in ns) |
//! | `{"timestamp", "du": {"du_high": {"mac": {"dl": [{…}]}}}}` | `metrics_mac_dl` (`average_latency_us`, in ns) per cell |
//! | `{"timestamp", "cells": [{"cell_metrics": {…}, "ue_list": [{…}]}]}` | `metrics_sched_cell` (`average_latency`), `metrics_sched_ue` (`dl_brate`, bit/s) per UE |
//!
//! `timestamp` is seconds since the Unix epoch (a number; milliseconds when above 10^11) or an
//! ISO-8601 UTC text. Lines that are not JSON objects, or objects without a timestamp or of a kind
//! not listed, are counted (the first examples as `file:line`).

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node, Sink};
use serde_json::{json, Value};

use super::line::parse_timestamp;

#[derive(Debug, Default, Clone)]
pub struct MetricsStats {
    pub files: Vec<String>,
    pub lines: u64,
    pub objects: u64,
    pub rows: u64,
    pub unknown_objects: u64,
    pub bad_lines: u64,
    pub first_bad: Vec<String>,
}

impl MetricsStats {
    pub fn to_json(&self) -> Value {
        json!({
            "files": self.files, "lines": self.lines, "objects": self.objects, "control_rows": self.rows,
            "unknown_objects": self.unknown_objects, "bad_lines": self.bad_lines, "first_bad_lines": self.first_bad,
        })
    }
}

/// UTC µs of a metrics `timestamp`.
fn timestamp_us(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => {
            let x = n.as_f64()?;
            let s = if x > 1e11 { x / 1e3 } else { x };
            // Up to 2200-01-01 (as log times): a larger number is not a time.
            let us = (s * 1e6).round();
            (0.0..=7_258_118_400_000_000.0).contains(&us).then_some(us as i64)
        }
        Value::String(s) => {
            // `2024-11-25T15:08:25.160955` with optional fraction digits and `Z`.
            let s = s.trim_end_matches('Z');
            let (head, frac) = s.split_once('.').unwrap_or((s, ""));
            let mut us = String::from(head);
            us.push('.');
            us.push_str(&format!("{:0<6}", &frac[..frac.len().min(6)]));
            parse_timestamp(us.as_bytes())
        }
        _ => None,
    }
}

struct Out<'a, S: Sink> {
    sink: &'a mut S,
    t_ns: i64,
    rows: u64,
}

impl<S: Sink> Out<'_, S> {
    /// One row; `who` is (UE, DRB).
    fn row(
        &mut self,
        kind: ControlKind,
        layer: Layer,
        dir: Option<Dir>,
        who: (Option<u32>, Option<u8>),
        value: Option<f64>,
        detail: &Value,
    ) {
        let (ue, drb) = who;
        self.rows += 1;
        self.sink.control(ControlEvent {
            t_ns: self.t_ns,
            node: if layer == Layer::Pdcp { Node::GnbCu } else { Node::GnbDu },
            layer,
            kind,
            dir,
            ue,
            drb,
            sn: None,
            value,
            detail: Some(detail.to_string()),
        });
    }
}

/// Writes the metrics objects of the files as control events (`t_ns` since `epoch_us`, UTC µs).
pub fn ingest_metrics<S: Sink>(paths: &[&Path], epoch_us: i64, sink: &mut S) -> io::Result<MetricsStats> {
    let mut st = MetricsStats::default();
    for p in paths {
        let name = p.display().to_string();
        st.files.push(name.clone());
        for (i, line) in BufReader::new(File::open(p)?).lines().enumerate() {
            let line = line?;
            st.lines += 1;
            let s = line.trim();
            if s.is_empty() {
                continue;
            }
            let bad = |st: &mut MetricsStats| {
                st.bad_lines += 1;
                if st.first_bad.len() < 5 {
                    st.first_bad.push(format!("{name}:{}", i + 1));
                }
            };
            let Ok(v) = serde_json::from_str::<Value>(s) else {
                bad(&mut st);
                continue;
            };
            let Some(t_us) = v.get("timestamp").and_then(timestamp_us) else {
                bad(&mut st);
                continue;
            };
            st.objects += 1;
            let mut out = Out { sink, t_ns: (t_us - epoch_us) * 1000, rows: 0 };
            let f = |x: &Value, k: &str| x.get(k).and_then(Value::as_f64);
            let u = |x: &Value, k: &str| x.get(k).and_then(Value::as_u64);
            if let Some(r) = v.get("rlc_metrics") {
                let ue = u(r, "ue_id").map(|x| x as u32);
                let drb = u(r, "drb_id").map(|x| x as u8);
                if let Some(tx) = r.get("tx") {
                    out.row(ControlKind::MetricsRlcTx, Layer::Rlc, Some(Dir::Dl), (ue, drb), f(tx, "num_sdus"), r);
                }
                if let Some(rx) = r.get("rx") {
                    out.row(ControlKind::MetricsRlcRx, Layer::Rlc, Some(Dir::Ul), (ue, drb), f(rx, "num_sdus"), r);
                }
            } else if let Some(pdcp) = v.get("cu-up").and_then(|c| c.get("pdcp")) {
                for (k, kind, dir) in
                    [("dl", ControlKind::MetricsPdcpDl, Dir::Dl), ("ul", ControlKind::MetricsPdcpUl, Dir::Ul)]
                {
                    if let Some(d) = pdcp.get(k) {
                        out.row(
                            kind,
                            Layer::Pdcp,
                            Some(dir),
                            (None, None),
                            f(d, "average_latency_us").map(|x| x * 1e3),
                            d,
                        );
                    }
                }
            } else if let Some(mac) = v.pointer("/du/du_high/mac/dl").and_then(Value::as_array) {
                for cell in mac {
                    out.row(
                        ControlKind::MetricsMacDl,
                        Layer::Mac,
                        Some(Dir::Dl),
                        (None, None),
                        f(cell, "average_latency_us").map(|x| x * 1e3),
                        cell,
                    );
                }
            } else if let Some(cells) = v.get("cells").and_then(Value::as_array) {
                for c in cells {
                    if let Some(cm) = c.get("cell_metrics") {
                        out.row(
                            ControlKind::MetricsSchedCell,
                            Layer::Mac,
                            None,
                            (None, None),
                            f(cm, "average_latency"),
                            cm,
                        );
                    }
                    for ue in c.get("ue_list").and_then(Value::as_array).into_iter().flatten() {
                        let id = u(ue, "ue").map(|x| x as u32);
                        out.row(ControlKind::MetricsSchedUe, Layer::Mac, None, (id, None), f(ue, "dl_brate"), ue);
                    }
                }
            } else {
                st.unknown_objects += 1;
            }
            st.rows += out.rows;
        }
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scout_events::VecSink;

    #[test]
    fn each_metrics_object_kind_and_bad_lines() {
        let dir = std::env::temp_dir().join(format!("scout-metrics-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("metrics.jsonl");
        std::fs::write(
            &p,
            r#"{"timestamp": 1699301066.0, "rlc_metrics": {"du_id": 0, "ue_id": 0, "drb_id": 1, "tx": {"num_sdus": 11, "num_sdu_bytes": 957}, "rx": {"num_sdus": 12, "num_pdus": 24}}}
{"timestamp": "2023-11-06T20:04:27.5Z", "cu-up": {"pdcp": {"dl": {"average_latency_us": 58.25}, "ul": {"average_latency_us": 12.0}}}}
{"timestamp": 1699301068000, "cells": [{"cell_metrics": {"average_latency": 40}, "ue_list": [{"ue": 0, "rnti": 17921, "dl_brate": 1200000.0}]}]}
{"timestamp": 1699301069.0, "du": {"du_high": {"mac": {"dl": [{"pci": 1, "average_latency_us": 30.0}]}}}}
{"timestamp": 1699301070.0, "app_usage": {}}
not json
{"no_timestamp": 1}
"#,
        )
        .unwrap();
        let epoch = 1_699_301_065_000_000;
        let mut sink = VecSink::default();
        let st = ingest_metrics(&[p.as_path()], epoch, &mut sink).unwrap();
        assert_eq!((st.objects, st.rows, st.unknown_objects, st.bad_lines), (5, 7, 1, 2));
        assert_eq!(st.first_bad, vec![format!("{}:6", p.display()), format!("{}:7", p.display())]);
        let rows: Vec<_> = sink.controls.iter().map(|c| (c.kind.as_str(), c.t_ns, c.ue, c.drb, c.value)).collect();
        assert_eq!(
            rows,
            vec![
                ("metrics_rlc_tx", 1_000_000_000, Some(0), Some(1), Some(11.0)),
                ("metrics_rlc_rx", 1_000_000_000, Some(0), Some(1), Some(12.0)),
                ("metrics_pdcp_dl", 2_500_000_000, None, None, Some(58_250.0)),
                ("metrics_pdcp_ul", 2_500_000_000, None, None, Some(12_000.0)),
                ("metrics_sched_cell", 3_000_000_000, None, None, Some(40.0)),
                ("metrics_sched_ue", 3_000_000_000, Some(0), None, Some(1_200_000.0)),
                ("metrics_mac_dl", 4_000_000_000, None, None, Some(30_000.0)),
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
