//! `scout ingest srsran`: log files in, a run directory out (through the one event writer).

use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use scout_events::header::{Header, Source};
use scout_events::writer::{RunOutput, RunWriter, WriteError};
use scout_events::{ControlEvent, ControlKind, Layer, Node, Sink};
use serde_json::{json, Value};

use super::prefetch::{FileBytes, LogStream};
use super::slots::SlotStitcher;
use super::stitch::Stitcher;
use super::ues::UeMap;
use super::version::VersionDetector;

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The progress callback asked to stop (Ctrl-C, SIGTERM) after `done` bytes.
    #[error("interrupted after {done} bytes")]
    Interrupted { done: u64 },
}

/// A log to read: a file, or bytes already in memory (fuzz targets, tests).
#[derive(Clone, Debug)]
pub enum LogInput {
    File(PathBuf),
    Bytes { name: String, data: Arc<[u8]> },
}

impl LogInput {
    /// The file's path, or the name given to the bytes.
    pub fn name(&self) -> String {
        match self {
            LogInput::File(p) => p.display().to_string(),
            LogInput::Bytes { name, .. } => name.clone(),
        }
    }
}

/// Reads the logs (any number: rotated files, split CU and DU logs), merged by time, and writes the run.
///
/// `traces` are srsRAN event-tracer files (Chrome trace JSON) and `metrics` files of srsRAN JSON
/// metrics (one object per line), both put on the log's clock.
pub fn ingest(
    paths: &[PathBuf],
    traces: &[PathBuf],
    metrics: &[PathBuf],
    out: &Path,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<()>,
) -> Result<Value, IngestError> {
    let logs: Vec<LogInput> = paths.iter().cloned().map(LogInput::File).collect();
    ingest_logs(&logs, traces, metrics, |meta, slices| Ok(RunWriter::create(out, meta, slices)?), progress)
}

/// One log being read: its name, its reader, and how many of its bytes were read so far.
type LogFile<'a> = (&'a String, LogStream, FileBytes);

/// Reads `logs` (merged by time) into the output `create` makes from the run's metadata and slice
/// names, and returns the finished run's metadata (`run.json`).
pub fn ingest_logs<O: RunOutput>(
    logs: &[LogInput],
    traces: &[PathBuf],
    metrics: &[PathBuf],
    create: impl FnOnce(Value, &[String]) -> Result<O, IngestError>,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<()>,
) -> Result<Value, IngestError> {
    if logs.is_empty() {
        return Err(IngestError::Input { path: "LOG".into(), message: "no log files given".into() });
    }
    let paths: Vec<String> = logs.iter().map(LogInput::name).collect();
    let (mut files, total) = open_logs(logs, &paths)?;
    // The epoch is the earliest entry.
    let mut epoch_us = None;
    for (p, r, _) in &mut files {
        if let Some(t) = r.peek_t_us().map_err(|e| input(p, e))? {
            epoch_us = Some(epoch_us.map_or(t, |e: i64| e.min(t)));
        }
    }
    let Some(epoch_us) = epoch_us else {
        return Err(IngestError::Input {
            path: paths.join(", "),
            message: "no srsRAN log entries (expected lines like `2023-11-06T20:04:25.872601 [PDCP    ] [I] ...`)"
                .into(),
        });
    };
    let mut w = create(run_meta(&paths, epoch_us), &["default".to_string()])?;
    let mut g = Gnb::new(epoch_us);
    let mut version = VersionDetector::default();
    let merged_steps_back = merge(&mut files, &mut g, &mut version, &mut w, epoch_us, total, progress)?;
    let (damaged, read_stats) = file_stats(&files);
    let _ = progress(total, total);
    g.finish(&mut w);
    let Gnb { st, slots, ues, health, .. } = g;
    let trace_stats = if traces.is_empty() {
        Value::Null
    } else {
        let refs: Vec<&Path> = traces.iter().map(PathBuf::as_path).collect();
        let st = super::trace::ingest_traces(&refs, epoch_us, epoch_us, &mut w).map_err(|e| IngestError::Input {
            path: traces.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            message: e.to_string(),
        })?;
        st.to_json()
    };
    let metrics_stats = if metrics.is_empty() {
        Value::Null
    } else {
        let refs: Vec<&Path> = metrics.iter().map(PathBuf::as_path).collect();
        let st = super::metrics::ingest_metrics(&refs, epoch_us, &mut w).map_err(|e| IngestError::Input {
            path: metrics.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            message: e.to_string(),
        })?;
        st.to_json()
    };
    let s = &st.stats;
    let mut ue_identity = st.ids.to_json();
    if let (Some(a), Value::Object(b)) = (ue_identity.as_object_mut(), ues.to_json()) {
        a.extend(b);
    }
    let cut_lines: Vec<Value> = read_stats
        .iter()
        .filter(|f| !f["cut_last_line"].is_null())
        .map(|f| json!({"file": f["file"], "line": f["cut_last_line"]}))
        .collect();
    let extra = json!({
        "flows": ues.flows_json(),
        "srsran": version.to_json(),
        "ue_identity": ue_identity,
        "trace": trace_stats,
        "metrics": metrics_stats,
        "ingest": {
            "files": read_stats,
            "srb_lines": s.srb_lines,
            "merged_entries_out_of_order": merged_steps_back,
            "packets": s.packets,
            "pending_at_end": st.pending_packets(),
            "slots": slots_summary(&slots.stats, &paths),
            "log_health": {
                "cut_last_lines": cut_lines,
                "warnings_and_errors": health.to_json(&paths, 10),
            },
        },
        "counts": counts(s, &paths, damaged),
    });
    Ok(w.finish_run(extra)?)
}

/// Opens every log, each read by a thread of its own (`prefetch`) once the merge reaches it:
/// split CU and DU logs interleave as they happened, rotated logs follow each other (and wait
/// closed until their turn). Returns them with their total size (for progress).
fn open_logs<'a>(logs: &[LogInput], paths: &'a [String]) -> Result<(Vec<LogFile<'a>>, u64), IngestError> {
    // Each file's size (for progress) and whether it is a regular file (below), from one look.
    let mut total = 0u64;
    let mut regular = Vec::with_capacity(logs.len());
    for (l, p) in logs.iter().zip(paths) {
        let (len, file) = match l {
            LogInput::File(f) => std::fs::metadata(f).map(|m| (m.len(), m.is_file())).map_err(|e| input(p, e))?,
            LogInput::Bytes { data, .. } => (data.len() as u64, false),
        };
        total += len;
        regular.push(file);
    }
    let mut files = Vec::with_capacity(logs.len());
    for (i, (l, p)) in logs.iter().zip(paths).enumerate() {
        let (r, n) = match l {
            // A regular file is closed until its turn (then opened again); a pipe stays open.
            LogInput::File(f) if regular[i] => {
                let f = f.clone();
                let reopen = Box::new(move || -> io::Result<Box<dyn io::Read + Send>> {
                    Ok(Box::new(std::fs::File::open(&f)?))
                });
                LogStream::spawn_closed(&i.to_string(), reopen)
            }
            LogInput::File(f) => std::fs::File::open(f).and_then(|h| LogStream::spawn(&i.to_string(), Box::new(h))),
            LogInput::Bytes { data, .. } => LogStream::spawn(&i.to_string(), Box::new(io::Cursor::new(data.clone()))),
        }
        .map_err(|e| input(p, e))?;
        files.push((p, r, n));
    }
    Ok((files, total))
}

/// The run's header: the files, the log's clock, and how each link between lines is made
/// (stated by the log, or inferred).
fn run_meta(paths: &[String], epoch_us: i64) -> Value {
    let clock = json!({"name": "gnb_log", "offset_ns": 0, "note": "srslog wall-clock timestamps (UTC, µs), taken on the logging thread"});
    Header::new(Source::Srsran, epoch_us as f64 / 1e6, vec![clock], vec![json!({"name": "default"})]).json(json!({
        "files": paths,
        "links": {
            "pdcp_to_rlc": "stated: RLC TX SDU pdcp_sn = PDCP TX PDU sn",
            "gtpu_to_pdcp": "inferred: per-UE order of GTP-U RX SDU and PDCP TX PDU / drop-burst lines",
            "rlc_sn_to_sdu": "inferred: RLC SNs are given to SDUs in queue order",
            "rlc_to_mac": "inferred: a MAC DL PDU line carries the UE's RLC PDUs logged since its last one",
            "hol": "inferred: an SDU reaches the head of the RLC queue when the SDU before it is fully segmented, or at enqueue into an empty queue",
            "ue_connections": "stated: DU-F1/DU-MNG UE creation lines (DU index, C-RNTI, F1AP IDs), CU-CP `UE created` (C-RNTI) or CU-CP-F1 `Added UE context` (gNB-DU UE F1AP ID), NGAP IDs; a returning UE by the 5G-S-TMSI of its RRC setup or the C-RNTI of its RRC re-establishment (RRC debug JSON)",
            "ue_identity": "stated by E1AP lines (CU-CP and CU-UP lines with one gNB-CU-CP UE E1AP ID) when logged; else inferred from traffic: a DL RLC SDU naming a CU-UP UE's PDCP SN and length, or a UL PDCP PDU with the length of a DU UE's delivered RLC SDU, binds the CU-UP index to the DU index (run.json ue_identity)",
            "ul_mac_to_rlc": "inferred: a MAC UL PDU's SDUs are the UE's next RLC RX PDU / status lines on their LCID, in order (lengths checked)",
            "ul_rlc_segments": "stated: UL RLC segments share their SDU's RLC SN",
            "ul_rlc_to_pdcp": "inferred: per-bearer order of RLC RX SDU and PDCP RX PDU lines (lengths checked)",
            "ul_pdcp_delivery": "stated: PDCP RX SDU count = RX PDU count; inferred: t-Reordering expiry releases the held SDUs (TS 38.323 5.2.2.4) and a PDU with COUNT < RX_DELIV is dropped (5.2.2.1)",
            "ul_pdcp_to_gtpu": "inferred: per-UE order of PDCP deliveries and GTP-U TX PDU lines (GTP-U = SDU + 16 bytes, checked)",
            "ul_grant_to_crc": "stated: RNTI, HARQ id and PUSCH slot",
            "dl_grant_to_harq_ack": "inferred: the latest DL grant of that RNTI and HARQ id (debug HARQ-ACK lines)",
        },
    }))
}

/// Every entry of every file, merged by time, through the gNB's stages; a `log_gap` event where
/// srslog says it skipped lines. Returns how many merged entries stepped back in time.
fn merge<O: RunOutput>(
    files: &mut [LogFile<'_>],
    g: &mut Gnb,
    version: &mut VersionDetector,
    w: &mut O,
    epoch_us: i64,
    total: u64,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<()>,
) -> Result<u64, IngestError> {
    let mut gaps = vec![0usize; files.len()];
    let mut last_report = 0u64;
    let mut merged_steps_back = 0u64;
    let mut last_t = i64::MIN;
    let mut last_pick = None;
    while let Some(i) = pick_next(files)? {
        // Which files read changes only when the merge moves to another file.
        if files.len() > 1 && last_pick != Some(i) {
            read_next_ahead(files, i)?;
            last_pick = Some(i);
        }
        let (p, r, _) = &mut files[i];
        let (t_us, line) = {
            // (After a peek that saw an entry this is one; a single file is not peeked.)
            let Some(e) = r.next_entry().map_err(|e| input(p, e))? else { break };
            g.entry(&e, i, w);
            version.entry(&e);
            (e.header.t_us, e.line)
        };
        if t_us < last_t {
            merged_steps_back += 1;
        }
        last_t = last_t.max(t_us);
        let markers = r.markers();
        if markers > gaps[i] {
            w.control(ControlEvent {
                t_ns: (t_us - epoch_us) * 1000,
                node: Node::GnbCu,
                layer: Layer::App,
                kind: ControlKind::LogGap,
                dir: None,
                ue: None,
                drb: None,
                sn: Some(line as i64),
                value: None,
                detail: Some(
                    json!({"file": p, "line": line, "cause": "srslog: Potentially skipped log lines"}).to_string(),
                ),
            });
            gaps[i] = markers;
        }
        let done: u64 = files.iter().map(|f| f.2.get()).sum();
        if done - last_report > 8 << 20 {
            last_report = done;
            if progress(done, total).is_break() {
                return Err(IngestError::Interrupted { done });
            }
        }
    }
    Ok(merged_steps_back)
}

/// The file whose next entry is earliest; on a tie (µs timestamps), the entry earlier on its
/// packet's path (see `path_rank`), then the order given. `None` when every file has ended.
fn pick_next(files: &mut [LogFile<'_>]) -> Result<Option<usize>, IngestError> {
    if files.len() == 1 {
        return Ok(Some(0));
    }
    let mut pick: Option<(usize, i64)> = None;
    for i in 0..files.len() {
        let (p, r, _) = &mut files[i];
        let Some(t) = r.peek_t_us().map_err(|e| input(p, e))? else { continue };
        let better = match pick {
            None => true,
            Some((_, best)) if t != best => t < best,
            Some((j, _)) => path_rank(files[i].1.peek_line()) < path_rank(files[j].1.peek_line()),
        };
        if better {
            pick = Some((i, t));
        }
    }
    Ok(pick.map(|(i, _)| i))
}

/// Each file's damage (where it could not be read on), and what its reading counted.
fn file_stats(files: &[LogFile<'_>]) -> (Vec<Value>, Vec<Value>) {
    let damaged: Vec<Value> = files
        .iter()
        .filter_map(|(p, r, _)| {
            r.stats.damage.as_ref().map(
                |d| json!({"file": p, "after_line": d.after_line, "reason": d.reason, "bytes_not_read": Value::Null}),
            )
        })
        .collect();
    let read_stats: Vec<Value> = files
        .iter()
        .map(|(p, r, _)| {
            json!({
                "file": p,
                "bytes": r.stats.bytes,
                "lines": r.stats.lines,
                "entries": r.stats.entries,
                "continuation_lines": r.stats.continuation_lines,
                "orphan_lines": r.stats.orphan_lines,
                "invalid_utf8_lines": r.stats.invalid_utf8_lines,
                "overlong_lines": r.stats.overlong_lines,
                "first_overlong_line": r.stats.first_overlong_line,
                "impossible_time_lines": r.stats.impossible_time_lines,
                "damage": r.stats.damage.as_ref().map(|d| json!({"after_line": d.after_line, "reason": d.reason})),
                "first_impossible_time_line": r.stats.first_impossible_time_line,
                "skipped_log_lines_markers": r.stats.skipped_markers,
                "out_of_order_entries": r.stats.out_of_order,
                "max_step_back_us": r.stats.max_step_back_us,
                "first_t_us": r.stats.first_t_us,
                "last_t_us": r.stats.last_t_us,
                "cut_last_line": r.stats.cut_last_line,
            })
        })
        .collect();
    (damaged, read_stats)
}

/// `run.json`'s `ingest.slots`: grants, HARQ outcomes and what the log leaves out, reports, the
/// numerology (stated, or inferred from slot indices).
fn slots_summary(ss: &super::slots::SlotStats, paths: &[String]) -> Value {
    json!({
        "dl_grants": ss.dl_grants, "ul_grants": ss.ul_grants,
        "dl_retx_grants": ss.dl_retx_grants, "ul_retx_grants": ss.ul_retx_grants,
        "ul_crc_ok": ss.ul_crc_ok, "ul_crc_ko": ss.ul_crc_ko, "dl_harq_ack": ss.dl_ack, "dl_harq_nack": ss.dl_nack,
        "grants_without_outcome": ss.without_outcome,
        "dl_grants_without_outcome": ss.dl_without_outcome, "ul_grants_without_outcome": ss.ul_without_outcome,
        "outcomes_without_grant": ss.outcome_without_grant,
        "bsr_reports": ss.bsr_reports, "csi_reports": ss.csi_reports, "harq_discards": ss.harq_discards,
        "dl_max_retx_discards": ss.dl_max_retx_discards, "ul_max_retx_discards": ss.ul_max_retx_discards,
        "harq": {"dl": harq_summary(ss.dl_grants, ss.dl_retx_grants, ss.dl_ack, ss.dl_nack, ss.dl_without_outcome, ss.dl_max_retx_discards),
                 "ul": harq_summary(ss.ul_grants, ss.ul_retx_grants, ss.ul_crc_ok, ss.ul_crc_ko, ss.ul_without_outcome, ss.ul_max_retx_discards)},
        "slots_per_frame": ss.slots_per_frame,
        "numerology": match &ss.stated {
            Some(st) => json!({"stated": true, "scs_khz": st.khz, "from": st.what,
                "at": format!("{}:{}", paths.get(st.file).map_or("?", String::as_str), st.line)}),
            None => json!({"stated": false, "scs_khz": ss.slots_per_frame.map(|s| s * 15 / 10),
                "from": format!("inferred: the log states no subcarrier spacing (configuration dump, cell line or RRC \
                    configuration); from the largest slot index ({}) among the first {} slot-stamped lines (10 x 2^mu)",
                    ss.inferred_from.0, ss.inferred_from.1)}),
        },
        "numerology_conflicts": ss.numerology_conflicts,
    })
}

/// `run.json`'s `counts`: drops by layer and reason, and every input line not turned into an
/// event, by why.
fn counts(s: &super::stitch::StitchStats, paths: &[String], damaged: Vec<Value>) -> Value {
    let not_handled = s.not_handled();
    let mut drops = serde_json::Map::new();
    for ((layer, reason), n) in &s.drops {
        drops.entry(*layer).or_insert_with(|| json!({}))[*reason] = json!(n);
    }
    json!({
        "drops": drops,
        "skipped_inputs": {
            "unlinked_lines": s.unlinked,
            "unlinked_first": s.unlinked_first.iter().map(|(k, &(f, line))| (k.to_string(), json!(format!("{}:{line}", paths[f])))).collect::<serde_json::Map<_, _>>(),
            "damaged_files": damaged,
            "per_packet_lines_not_turned_into_events_total": not_handled.iter().map(|x| x.1).sum::<u64>(),
            "per_packet_lines_not_turned_into_events": not_handled.iter().map(|(k, n, (f, line))| json!({"message": k, "count": n, "first_line": line, "first": format!("{}:{line}", paths[*f])})).collect::<Vec<_>>(),
        },
        "offered_packets": s.packets,
        "delivered_packets": 0,
        "in_flight_packets": 0,
    })
}

/// What the log shows of one direction's HARQ: transmissions, retransmissions, the outcomes
/// logged, and what the log implies where it logs none (info level has no HARQ-ACK lines): each
/// retransmission follows a failed attempt (NACK, DTX or CRC KO), and a discard after the
/// maximum number of retransmissions follows one more (the block is lost to HARQ).
fn harq_summary(grants: u64, retx: u64, ok: u64, ko: u64, unknown: u64, max_retx: u64) -> Value {
    json!({
        "transmissions": grants,
        "new_transport_blocks": grants.saturating_sub(retx),
        "retransmissions": retx,
        "outcome_logged": ok + ko,
        "ack": ok,
        "nack": ko,
        "outcome_not_logged": unknown,
        "failed_attempts_implied": retx + max_retx,
        "lost_after_max_retx": max_retx,
    })
}

/// Keeps one file besides `current` reading ahead: when no other file's thread runs, starts the
/// one of the files not yet reached whose first entry is earliest (rotated logs: the next one),
/// so that its first batches are ready when the merge reaches it and no more threads run than
/// files overlap in time, plus one.
fn read_next_ahead(files: &mut [(&String, LogStream, FileBytes)], current: usize) -> Result<(), IngestError> {
    if files.iter().enumerate().any(|(k, f)| k != current && f.1.reading()) {
        return Ok(());
    }
    let mut next: Option<(i64, usize)> = None;
    for (k, (p, r, _)) in files.iter_mut().enumerate() {
        if r.waiting() {
            if let Some(t) = r.peek_t_us().map_err(|e| input(p, e))? {
                next = next.filter(|&(best, _)| best <= t).or(Some((t, k)));
            }
        }
    }
    if let Some((_, k)) = next {
        let (p, r, _) = &mut files[k];
        r.start().map_err(|e| input(p, e))?;
    }
    Ok(())
}

/// The per-entry stages of a gNB log: UE identity, packet journeys and slot rows.
pub struct Gnb {
    epoch_us: i64,
    pub st: Stitcher,
    pub slots: SlotStitcher,
    pub ues: UeMap,
    pub health: super::health::LogHealth,
}

impl Gnb {
    pub fn new(epoch_us: i64) -> Self {
        Gnb {
            epoch_us,
            st: Stitcher::new(epoch_us),
            slots: SlotStitcher::new(epoch_us),
            ues: UeMap::default(),
            health: Default::default(),
        }
    }

    /// One entry of file number `file` (of the files given).
    pub fn entry<S: Sink>(&mut self, e: &super::reader::Entry, file: usize, sink: &mut S) {
        self.st.at.0 = file;
        self.ues.entry(e, file, (e.header.t_us - self.epoch_us) * 1000, &mut self.st.ids, sink);
        let mut s = self.ues.sink(sink);
        self.st.entry(e, &mut s);
        self.slots.entry(e, file, &mut s);
        self.health.entry(e, file);
    }

    pub fn finish<S: Sink>(&mut self, sink: &mut S) {
        self.st.finish(&mut self.ues.sink(sink));
        self.slots.finish(&mut self.ues.sink(sink));
        self.ues.finish(sink);
    }
}

/// Where a line sits on its packet's path through the gNB, for ordering lines of split CU and DU
/// logs that carry the same µs timestamp: downlink GTP-U → SDAP → PDCP → F1-U → RLC → MAC, uplink
/// the reverse; other lines after.
fn path_rank(header_line: &str) -> u8 {
    let Some(h) = super::line::parse_header(header_line) else { return u8::MAX };
    let pos = match h.logger {
        "GTPU" => 0,
        "SDAP" => 1,
        "PDCP" => 2,
        "CU-F1-U" | "DU-F1-U" => 3,
        "RLC" => 4,
        "MAC" | "SCHED" => 5,
        _ => return u8::MAX,
    };
    let ul = h.body.contains(" UL: ") || h.body.contains(" UL teid=") || h.body.starts_with("UL ");
    if ul {
        10 - pos
    } else {
        pos
    }
}

fn input(p: &str, e: std::io::Error) -> IngestError {
    IngestError::Input { path: p.to_string(), message: e.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rotated logs: besides the one being merged, only the next one (by its first entry) reads
    /// ahead; the one after it waits without a thread until its turn.
    #[test]
    fn of_rotated_logs_only_the_next_reads_ahead() {
        let log = |sec: u32| {
            (0..100)
                .map(|i| format!("2023-11-06T20:04:{sec:02}.{i:06} [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. sn={i}\n"))
                .collect::<String>()
        };
        let names: Vec<String> = (0..3).map(|k| format!("gnb.log.{k}")).collect();
        // Given out of order: the third file is the second in time.
        let mut files: Vec<(&String, LogStream, FileBytes)> = [(10, &names[0]), (30, &names[1]), (20, &names[2])]
            .into_iter()
            .map(|(sec, name)| {
                let (r, n) = LogStream::spawn("t", Box::new(io::Cursor::new(log(sec).into_bytes()))).unwrap();
                (name, r, n)
            })
            .collect();
        assert!(files.iter().all(|f| f.1.waiting()));
        files[0].1.next_entry().unwrap();
        read_next_ahead(&mut files, 0).unwrap();
        assert_eq!(files.iter().map(|f| f.1.waiting()).collect::<Vec<_>>(), [false, true, false]);
        read_next_ahead(&mut files, 0).unwrap();
        assert!(files[1].1.waiting(), "a third file started while the next one reads ahead");
        while files[0].1.next_entry().unwrap().is_some() {}
        read_next_ahead(&mut files, 2).unwrap();
        assert!(!files[1].1.waiting(), "the last file reads ahead once the first is done");
    }
}
