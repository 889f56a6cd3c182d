//! srsRAN's event-tracer file (reference §3.2): Chrome/Perfetto trace JSON, one event per line.
//!
//! ```text
//! [
//! {"args": {}, "pid": {}, "cpu": 3, "tid": "up_phy_dl#0", "dur": 12, "ts": 1234567, "cat": "process", "ph": "X", "name": "cu_up_ue_dl_exec_0_enqueue"},
//! {"args": {"tstamp": "20:04:32.597693"}, "pid": {}, "cpu": 1, "tid": "x", "ts": 6722000, "cat": "process", "ph": "i", "s": "g", "name": "on_late_resource_grid"}
//! ]
//! ```
//!
//! - Executor tracing writes, per task, `<executor>_enqueue` (enqueue until start: the task's wait)
//!   and `<executor>_run` (run time). They carry no packet identifier, so they become control
//!   events `exec_queueing` and `exec_run` (`value` = ns, `detail` = executor, thread, CPU), per
//!   executor, not per packet. Other duration events (the compile-time tracers: `pdcp_tx_pdu`,
//!   `mac_sched`, …) become `trace_span`, instant events `trace_instant` (with srsRAN's severe
//!   events such as `on_late_resource_grid`), and the tracer's own `trace_overflow` a `trace_gap`.
//! - `"pid": {}` is written literally (not valid for strict readers) and a crashed process leaves no
//!   closing `]`: both are accepted. A line that is not an event is counted with its line number.
//! - Clock: `ts` is µs of the steady clock since process start; instant events carry `tstamp`, the
//!   UTC time of day. The first `tstamp` gives the offset to the log's UTC clock (the date is the one
//!   that puts the process start nearest the log's first entry). A trace with no `tstamp` is
//!   aligned by taking process start as the log's first entry (srsRAN logs its build line at start),
//!   and `run.json` says which was used.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;

use scout_events::{ControlEvent, ControlKind, Layer, Node, Sink};
use serde_json::{json, Value};

/// What reading the trace files saw, for `run.json`.
#[derive(Debug, Default, Clone)]
pub struct TraceStats {
    pub files: Vec<String>,
    pub lines: u64,
    pub events: u64,
    pub exec_tasks: u64,
    pub spans: u64,
    pub instants: u64,
    pub overflows: u64,
    /// Lines that are not trace events (first examples as `file:line`).
    pub bad_lines: u64,
    pub first_bad: Vec<String>,
    /// µs to add to `ts` to get UTC µs since the Unix epoch.
    pub offset_us: i64,
    pub aligned_by: String,
}

impl TraceStats {
    pub fn to_json(&self) -> Value {
        json!({
            "files": self.files, "lines": self.lines, "events": self.events,
            "executor_tasks": self.exec_tasks, "spans": self.spans, "instants": self.instants,
            "overflows": self.overflows, "bad_lines": self.bad_lines, "first_bad_lines": self.first_bad,
            "clock_offset_us": self.offset_us, "aligned_by": self.aligned_by,
        })
    }
}

/// One trace line as an event object, or `None` for `[`, `]` and blank lines.
fn parse_line(line: &str) -> Option<Result<Value, ()>> {
    let s = line.trim().trim_start_matches(',').trim();
    if s.is_empty() || s == "[" || s == "]" {
        return None;
    }
    let s = s.trim_end_matches(',');
    // srsRAN writes `"pid": {}` literally.
    let fixed;
    let s = if s.contains("\"pid\": {}") {
        fixed = s.replace("\"pid\": {}", "\"pid\": 0");
        &fixed
    } else {
        s
    };
    Some(serde_json::from_str::<Value>(s).map_err(|_| ()).and_then(|v| if v.is_object() { Ok(v) } else { Err(()) }))
}

/// `HH:MM:SS.uuuuuu` → µs of the day.
fn time_of_day_us(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 15 || b[2] != b':' || b[5] != b':' || b[8] != b'.' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    Some(((n(0..2)? * 60 + n(3..5)?) * 60 + n(6..8)?) * 1_000_000 + n(9..15)?)
}

fn open(path: &Path) -> io::Result<BufReader<File>> {
    Ok(BufReader::with_capacity(1 << 20, File::open(path)?))
}

/// The offset from trace `ts` to UTC µs, from the first `tstamp`, or `None`.
fn offset_from_tstamp(paths: &[&Path], log_start_us: i64) -> io::Result<Option<i64>> {
    for p in paths {
        for line in open(p)?.lines() {
            let line = line?;
            if !line.contains("tstamp") {
                continue;
            }
            let Some(Ok(v)) = parse_line(&line) else { continue };
            let args = &v["args"];
            let tod = args["tstamp"].as_str().or_else(|| args["start_tstamp"].as_str()).and_then(time_of_day_us);
            let (Some(tod), Some(ts)) = (tod, v["ts"].as_i64()) else { continue };
            const DAY: i64 = 86_400_000_000;
            let day0 = log_start_us.div_euclid(DAY) * DAY;
            // The date that puts the process start (utc − ts) nearest the log's first entry.
            let best = [-DAY, 0, DAY]
                .into_iter()
                .map(|d| day0 + d + tod - ts)
                .min_by_key(|start| (start - log_start_us).abs())
                .expect("three candidates");
            return Ok(Some(best));
        }
    }
    Ok(None)
}

/// Layer of an executor, by srsRAN's executor names (reference §3.2).
fn exec_place(exec: &str) -> (Node, Layer) {
    if exec.starts_with("cu_up") {
        (Node::GnbCu, Layer::CuupExec)
    } else if exec.starts_with("rlc") || exec.starts_with("ue_dl_exec") || exec.starts_with("ue_ul_exec") {
        (Node::GnbDu, Layer::Rlc)
    } else {
        (Node::GnbDu, Layer::Mac)
    }
}

/// Reads trace files and writes their events as control events on the log's time axis
/// (`t_ns` = ns since `epoch_us`). `log_start_us` is the log's first entry (UTC µs).
pub fn ingest_traces<S: Sink>(
    paths: &[&Path],
    epoch_us: i64,
    log_start_us: i64,
    sink: &mut S,
) -> io::Result<TraceStats> {
    let mut st = TraceStats::default();
    match offset_from_tstamp(paths, log_start_us)? {
        Some(off) => {
            st.offset_us = off;
            st.aligned_by = "tstamp: the first instant event's UTC time of day against its ts".into();
        }
        None => {
            st.offset_us = log_start_us;
            st.aligned_by =
                "approximate: no tstamp in the trace; process start (ts = 0) taken as the log's first entry".into();
        }
    }
    for p in paths {
        let name = p.display().to_string();
        st.files.push(name.clone());
        for (i, line) in open(p)?.lines().enumerate() {
            let line = line?;
            st.lines += 1;
            let v = match parse_line(&line) {
                None => continue,
                Some(Ok(v)) => v,
                Some(Err(())) => {
                    st.bad_lines += 1;
                    if st.first_bad.len() < 5 {
                        st.first_bad.push(format!("{name}:{}", i + 1));
                    }
                    continue;
                }
            };
            let (Some(ts), Some(ev_name), Some(ph)) = (v["ts"].as_i64(), v["name"].as_str(), v["ph"].as_str()) else {
                st.bad_lines += 1;
                if st.first_bad.len() < 5 {
                    st.first_bad.push(format!("{name}:{}", i + 1));
                }
                continue;
            };
            st.events += 1;
            let t_ns = (st.offset_us + ts - epoch_us) * 1000;
            let dur_ns = v["dur"].as_i64().map(|d| (d * 1000) as f64);
            let detail = |exec: Option<&str>| {
                json!({"name": ev_name, "executor": exec, "tid": v["tid"], "cpu": v["cpu"], "file": name, "line": i + 1})
                    .to_string()
            };
            let (kind, node, layer, exec) = if let Some(exec) = ev_name.strip_suffix("_enqueue") {
                st.exec_tasks += 1;
                let (n, l) = exec_place(exec);
                (ControlKind::ExecQueueing, n, l, Some(exec))
            } else if let Some(exec) = ev_name.strip_suffix("_run") {
                let (n, l) = exec_place(exec);
                (ControlKind::ExecRun, n, l, Some(exec))
            } else if ev_name == "trace_overflow" {
                st.overflows += 1;
                (ControlKind::TraceGap, Node::GnbDu, Layer::App, None)
            } else if ph == "X" {
                st.spans += 1;
                (ControlKind::TraceSpan, Node::GnbDu, Layer::App, None)
            } else {
                st.instants += 1;
                (ControlKind::TraceInstant, Node::GnbDu, Layer::App, None)
            };
            sink.control(ControlEvent {
                t_ns,
                node,
                layer,
                kind,
                dir: None,
                ue: None,
                drb: None,
                sn: None,
                value: dur_ns,
                detail: Some(detail(exec)),
            });
        }
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scout_events::VecSink;

    #[test]
    fn executor_events_are_aligned_by_tstamp_and_odd_lines_counted() {
        let dir = std::env::temp_dir().join(format!("scout-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("gnb_trace.json");
        // As srsRAN writes it: `"pid": {}`, events on their own lines, no closing `]` (crash).
        std::fs::write(
            &p,
            "[\n\
{\"args\": {}, \"pid\": {}, \"cpu\": 3, \"tid\": \"cu_up#0\", \"dur\": 12, \"ts\": 6000000, \"cat\": \"process\", \"ph\": \"X\", \"name\": \"cu_up_ue_dl_exec_0_enqueue\"},\n\
{\"args\": {}, \"pid\": {}, \"cpu\": 3, \"tid\": \"cu_up#0\", \"dur\": 40, \"ts\": 6000012, \"cat\": \"process\", \"ph\": \"X\", \"name\": \"cu_up_ue_dl_exec_0_run\"},\n\
{\"args\": {\"tstamp\": \"20:04:32.000000\"}, \"pid\": {}, \"cpu\": 1, \"tid\": \"l1\", \"ts\": 6500000, \"cat\": \"process\", \"ph\": \"i\", \"s\": \"g\", \"name\": \"on_late_resource_grid\"},\n\
{\"args\": {}, \"pid\": {}, \"cpu\": 0, \"tid\": \"mac\", \"dur\": 7, \"ts\": 7000000, \"cat\": \"process\", \"ph\": \"X\", \"name\": \"mac_cell_exec#0_enqueue\"},\n\
{\"args\": {}, \"pid\": {}, \"cpu\": 0, \"tid\": \"tr\", \"ts\": 7100000, \"cat\": \"process\", \"ph\": \"i\", \"s\": \"g\", \"name\": \"trace_overflow\"},\n\
{\"args\": {}, \"pid\": {}, \"cpu\": 0, \"tid\": \"mac\", \"dur\": 7, \"ts\": 71\n",
        )
        .unwrap();
        // The log started at 2023-11-06T20:04:25.872601 (the 23.10 fixture's first entry).
        let log_start = 1_699_301_065_872_601;
        let mut sink = VecSink::default();
        let st = ingest_traces(&[p.as_path()], log_start, log_start, &mut sink).unwrap();
        // tstamp 20:04:32.000000 at ts 6.5 s → process start 20:04:25.500000.
        assert_eq!(st.offset_us, 1_699_301_065_500_000);
        assert!(st.aligned_by.starts_with("tstamp"));
        assert_eq!((st.events, st.exec_tasks, st.instants, st.overflows, st.bad_lines), (5, 2, 1, 1, 1));
        assert_eq!(st.first_bad, vec![format!("{}:7", p.display())]);
        let kinds: Vec<_> = sink.controls.iter().map(|c| (c.kind, c.layer, c.value)).collect();
        assert_eq!(
            kinds,
            vec![
                (ControlKind::ExecQueueing, Layer::CuupExec, Some(12_000.0)),
                (ControlKind::ExecRun, Layer::CuupExec, Some(40_000.0)),
                (ControlKind::TraceInstant, Layer::App, None),
                (ControlKind::ExecQueueing, Layer::Mac, Some(7_000.0)),
                (ControlKind::TraceGap, Layer::App, None),
            ]
        );
        // ts 6 s after a process start 0.372601 s before the log's first entry.
        assert_eq!(sink.controls[0].t_ns, (6_000_000 - 372_601) * 1000);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn time_of_day() {
        assert_eq!(time_of_day_us("20:04:32.597693"), Some(((20 * 60 + 4) * 60 + 32) * 1_000_000 + 597_693));
        assert_eq!(time_of_day_us("20:04"), None);
    }
}
