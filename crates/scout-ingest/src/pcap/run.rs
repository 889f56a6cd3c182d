//! `scout ingest pcap`: captures in, UPF forwarding-delay journeys and PFCP pairs out.
//!
//! Two passes over the captures, each merged by time across files: the first decodes PFCP (N4)
//! — sessions, their tunnels, UE addresses and slices — and collects the inner address pairs of
//! every G-PDU; the second pairs each packet's N3 sighting (inside GTP-U) with its N6 sighting
//! (plain, between the same inner addresses) by identity ([`scout_wire::ip::identity`]), never by
//! nearest timestamp. A paired packet is one journey of two events: its arrival at the UPF (`n3
//! arrive` uplink, `n6 arrive` downlink) and its departure (`upf proc_end`), so `scout analyze`
//! gives the UPF's forwarding delay as `upf processing` (from outside, queueing and processing
//! cannot be told apart).

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use scout_events::header::{Header, Source};
use scout_events::writer::{RunOutput, RunWriter};
use serde_json::{json, Value};

use super::decode::{Decoder, Kind};
use super::file::CaptureReader;
use super::journey::{Fast, Inner, Journeys, Seen};
use super::pair::{SecondPass, Sight};
use super::pfcp::Tracker;
use crate::srsran::run::IngestError;
use scout_wire::pfcp::session;
use scout_wire::Cause;

#[derive(Clone, Debug)]
pub struct Options {
    /// UDP ports carrying GTP-U (TS 29.281 §4.4.2: 2152).
    pub gtp_ports: Vec<u16>,
    /// Which frames are N3 / N6: interface names (pcapng `if_name`) or IP addresses (outer source
    /// or destination). Empty: N3 is any GTP-U, N6 any plain packet between a tunnel's inner
    /// addresses.
    pub n3: Vec<String>,
    pub n6: Vec<String>,
    /// How long a packet waits for its twin before it is counted unmatched.
    pub window_ns: i64,
}

impl Default for Options {
    fn default() -> Self {
        Options { gtp_ports: vec![2152], n3: Vec::new(), n6: Vec::new(), window_ns: 2_000_000_000 }
    }
}

/// A capture to read: a file, or bytes already in memory (fuzz targets, tests).
#[derive(Clone, Debug)]
pub enum Capture {
    File(PathBuf),
    Bytes { name: String, data: Arc<[u8]> },
}

impl Capture {
    /// The file's path, or the name given to the bytes.
    pub fn name(&self) -> String {
        match self {
            Capture::File(p) => p.display().to_string(),
            Capture::Bytes { name, .. } => name.clone(),
        }
    }

    /// Its size in bytes, for progress (a file is not opened for it: the passes do).
    fn size(&self) -> Result<u64, IngestError> {
        match self {
            Capture::File(p) => std::fs::metadata(p).map(|m| m.len()).map_err(|e| input(&self.name(), e)),
            Capture::Bytes { data, .. } => Ok(data.len() as u64),
        }
    }

    fn open(&self) -> Result<CaptureReader, IngestError> {
        match self {
            Capture::File(p) => CaptureReader::open(p),
            Capture::Bytes { name, data } => CaptureReader::from_bytes(name, data.clone()),
        }
        .map_err(|e| input(&self.name(), e))
    }
}

/// Files merged by time.
pub(super) struct Merged {
    pub(super) files: Vec<(String, CaptureReader, bool)>,
}

impl Merged {
    fn open(captures: &[Capture]) -> Result<Self, IngestError> {
        let mut files = Vec::new();
        for c in captures {
            files.push((c.name(), c.open()?, false));
        }
        Ok(Merged { files })
    }

    /// Loads every file's next frame where none is loaded; returns the file whose frame is earliest.
    fn next(&mut self) -> Result<Option<usize>, IngestError> {
        let mut best: Option<(usize, i64)> = None;
        for i in 0..self.files.len() {
            let (p, r, loaded) = &mut self.files[i];
            if !*loaded {
                *loaded = r.advance().map_err(|e| input(p, e))?;
            }
            if *loaded {
                let t = r.current().t_ns;
                if best.is_none_or(|(_, b)| t < b) {
                    best = Some((i, t));
                }
            }
        }
        if let Some((i, _)) = best {
            self.files[i].2 = false;
        }
        Ok(best.map(|b| b.0))
    }
}

#[derive(Default)]
pub(super) struct Causes {
    by: HashMap<&'static str, (u64, String)>,
}

impl Causes {
    pub(super) fn add(&mut self, cause: &'static str, at: impl FnOnce() -> String) {
        self.by.entry(cause).or_insert_with(|| (0, at())).0 += 1;
    }
    pub(super) fn total(&self) -> u64 {
        self.by.values().map(|v| v.0).sum()
    }
    pub(super) fn to_json(&self) -> Value {
        let mut v: Vec<_> = self.by.iter().collect();
        v.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
        Value::Array(v.into_iter().map(|(k, (n, f))| json!({"cause": k, "count": n, "first": f})).collect())
    }
}

/// What the first pass finds in one capture: its first frame's time, the inner address pairs of
/// its tunnels and its PFCP frames in file order (decoded, or why not and where).
#[derive(Default)]
struct FirstPass {
    epoch: Option<i64>,
    tunnels: HashSet<(IpAddr, IpAddr), Fast>,
    pfcp: Vec<PfcpFrame>,
    /// What the file held, when it held no packet.
    empty: String,
}

type PfcpFrame = (i64, Result<(u64, SocketAddr, SocketAddr, session::Msg), (Cause, String)>);

/// The first pass over every capture, the files shared among up to as many threads as there are
/// cores: each reads and decodes its files whole. `read` counts the bytes read; `progress` is
/// called with it from this thread every 50 ms and stops the pass when it says so.
fn first_pass(
    captures: &[Capture],
    gtp_ports: &[u16],
    read: &AtomicU64,
    progress: &mut dyn FnMut(u64) -> ControlFlow<()>,
) -> Result<Vec<FirstPass>, IngestError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(captures.len()).max(1);
    let (next, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
    let (next, stop) = (&next, &stop);
    let mut done: Vec<(usize, Result<FirstPass, IngestError>)> = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let tx = tx.clone();
                s.spawn(move || loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(c) = captures.get(i) else { break };
                    let _ = tx.send((i, first_pass_file(c, gtp_ports, read, stop)));
                    // rx outlives tx
                })
            })
            .collect();
        drop(tx);
        // Each file's pass as soon as it ends (a small capture takes microseconds, not a poll's
        // 50 ms), and the progress every 50 ms meanwhile.
        let tick = Duration::from_millis(50);
        let (mut done, mut last) = (Vec::with_capacity(captures.len()), Instant::now());
        loop {
            match rx.recv_timeout(tick.saturating_sub(last.elapsed())) {
                Ok(d) => done.push(d),
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if last.elapsed() >= tick {
                last = Instant::now();
                if progress(read.load(Ordering::Relaxed)).is_break() {
                    stop.store(true, Ordering::Relaxed);
                }
            }
        }
        for h in hs {
            h.join().expect("first-pass thread panicked");
        }
        done
    });
    done.sort_by_key(|d| d.0);
    if stop.load(Ordering::Relaxed) {
        return Err(IngestError::Interrupted { done: read.load(Ordering::Relaxed) });
    }
    done.into_iter().map(|(_, r)| r).collect()
}

/// The first pass over one capture (`stop`: give up at the next 4096th frame).
fn first_pass_file(
    c: &Capture,
    gtp_ports: &[u16],
    read: &AtomicU64,
    stop: &AtomicBool,
) -> Result<FirstPass, IngestError> {
    let mut r = c.open()?;
    let name = c.name();
    let mut dec = Decoder::new(gtp_ports);
    let mut out = FirstPass::default();
    let mut bytes = 0u64;
    let mut frames = 0u32;
    while r.advance().map_err(|e| input(&name, e))? {
        let f = r.current();
        bytes += f.data.len() as u64 + 16;
        frames += 1;
        if frames.is_multiple_of(4096) {
            read.fetch_add(std::mem::take(&mut bytes), Ordering::Relaxed);
            if stop.load(Ordering::Relaxed) {
                return Ok(out);
            }
        }
        out.epoch.get_or_insert(f.t_ns);
        let (t, off) = (f.t_ns, f.offset);
        match dec.decode(f.t_ns, f.linktype, f.data) {
            Ok((Kind::Pfcp(src, dst, id, d), _, _)) => out.pfcp.push((
                t,
                session::parse(d).map(|m| (id, src, dst, m)).map_err(|cause| (cause, format!("{name}: byte {off}"))),
            )),
            Ok((Kind::GPdu(_, _, _, inner), _, _)) => {
                out.tunnels.insert(ordered(inner.src, inner.dst));
            }
            _ => {}
        }
    }
    read.fetch_add(bytes, Ordering::Relaxed);
    if out.epoch.is_none() {
        out.empty = no_packets(&r);
    }
    Ok(out)
}

/// `scout ingest pcap`: reads the capture files and writes the run directory `out`.
pub fn ingest(
    paths: &[PathBuf],
    opts: &Options,
    out: &Path,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<()>,
) -> Result<Value, IngestError> {
    if paths.is_empty() {
        return Err(IngestError::Input { path: "FILE".into(), message: "no capture files given".into() });
    }
    for p in paths {
        let m = std::fs::metadata(p).map_err(|e| input(&p.display().to_string(), e))?;
        if !m.is_file() {
            // Pass 2 would open it again and find it drained.
            return Err(IngestError::Input {
                path: p.display().to_string(),
                message: "not a regular file (a pipe or device): captures are read twice, PFCP and tunnels first, \
                          then pairing; save it to a file first"
                    .into(),
            });
        }
    }
    let captures: Vec<Capture> = paths.iter().cloned().map(Capture::File).collect();
    ingest_captures(&captures, opts, |meta, slices| Ok(RunWriter::create(out, meta, slices)?), progress)
}

/// Reads `captures` (merged by time) into the output `create` makes from the run's metadata and
/// slice names, and returns the finished run's metadata (`run.json`).
pub fn ingest_captures<O: RunOutput>(
    captures: &[Capture],
    opts: &Options,
    create: impl FnOnce(Value, &[String]) -> Result<O, IngestError>,
    progress: &mut dyn FnMut(u64, u64) -> ControlFlow<()>,
) -> Result<Value, IngestError> {
    // Pass 1: PFCP, the inner address pairs of tunnels, the epoch — each file on a thread of its
    // own, its PFCP messages then replayed merged by time.
    let total: u64 = captures.iter().map(Capture::size).sum::<Result<u64, _>>()?;
    let read = AtomicU64::new(0);
    let firsts = first_pass(captures, &opts.gtp_ports, &read, &mut |done| progress(done.min(total), 2 * total))?;
    let (mut pfcp, pfcp_bad) = replay_pfcp(&firsts);
    let mut tunnels: HashSet<(IpAddr, IpAddr), Fast> = HashSet::default();
    for f in &firsts {
        tunnels.extend(f.tunnels.iter().copied());
    }
    let Some(epoch) = firsts.iter().filter_map(|f| f.epoch).min() else {
        // Never a success that read nothing: say what each file held instead.
        let what: Vec<String> =
            captures.iter().zip(&firsts).map(|(c, f)| format!("{}: {}", c.name(), f.empty)).collect();
        return Err(IngestError::Input {
            path: captures.iter().map(Capture::name).collect::<Vec<_>>().join(", "),
            message: format!("no packets to read ({})", what.join("; ")),
        });
    };
    pfcp.finish(epoch);
    let (slice_names, slice_of_session) = slices(&pfcp);
    let mut w = create(run_meta(captures, opts, epoch, &slice_names), &slice_names)?;
    pfcp.write_pairs(epoch, &mut w);

    // Pass 2: pair the user plane.
    let mut journeys = Journeys::new(true);
    // UEs the PFCP sessions name come first, in session order.
    for s in &pfcp.sessions {
        for &a in &s.ue_addrs {
            journeys.ue(a);
        }
    }
    let mut m = Merged::open(captures)?;
    let mut pass = SecondPass::new(opts);
    let mut last_report = read.load(Ordering::Relaxed);
    let mut done_bytes = total;
    let mut last_t = i64::MIN;
    // A new flow's label in `run.json`, per slice.
    let labels: Vec<Value> = slice_names.iter().map(|n| json!({ "slice": n })).collect();
    while let Some(i) = m.next()? {
        pass.frames += 1;
        let (p, r, _) = &m.files[i];
        let f = r.current();
        done_bytes += f.data.len() as u64 + 16;
        if done_bytes - last_report > 64 << 20 {
            last_report = done_bytes;
            if progress(done_bytes.min(2 * total), 2 * total).is_break() {
                return Err(IngestError::Interrupted { done: done_bytes });
            }
        }
        let iface_name = r.ifaces.get(f.iface as usize).and_then(|x| x.name.as_deref());
        let t = f.t_ns;
        if t > last_t + 100_000_000 || last_t == i64::MIN {
            // Expire at most every 100 ms of capture time.
            pass.pairing.expire(t - opts.window_ns);
            pass.dec.frag.expire(t);
            last_t = t;
        }
        let Some((key, s)) = pass.sight(i, p, f, iface_name, &tunnels, opts) else { continue };
        if let Some((a, b)) = pass.pairing.sight(key, s) {
            let (inner, slice) = joined(a, b, &pfcp, &slice_of_session);
            let seen = |x: Sight| Seen { t_ns: x.t - epoch, n3: x.n3, bytes: x.bytes };
            journeys.pair(seen(a), seen(b), &inner, slice, &labels[usize::from(slice)], &mut w);
        }
    }
    pass.pairing.expire(i64::MAX);
    let _ = progress(2 * total, 2 * total);
    let extra = json!({
        "flows": journeys.flows,
        "ues": journeys.ues_json(),
        "pcap": pass.summary(&m, &journeys, opts),
        "unmatched": pass.pairing.unmatched().json(),
        "pfcp": pfcp_summary(&pfcp, &pfcp_bad, &slice_names, &slice_of_session),
        "counts": {
            "skipped_inputs": {
                "frames_not_decoded": pass.causes.to_json(),
                "frames_not_decoded_total": pass.causes.total(),
                "damaged_files": m.files.iter().filter_map(|(p, r, _)| r.stats.damage.as_ref().map(|d| json!({
                    "file": p, "offset": d.offset, "reason": d.reason, "bytes_not_read": d.bytes_not_read,
                }))).collect::<Vec<_>>(),
            },
            "offered_packets": journeys.packets(),
            "delivered_packets": 0,
            "in_flight_packets": 0,
        },
    });
    Ok(w.finish_run(extra)?)
}

/// Pass 1's PFCP messages replayed merged by time across the files (ties: the file given first,
/// as in pass 2), and the frames that did not decode.
fn replay_pfcp(firsts: &[FirstPass]) -> (Tracker, Causes) {
    let mut pfcp = Tracker::default();
    let mut bad = Causes::default();
    let mut heads = vec![0usize; firsts.len()];
    loop {
        let next = (0..firsts.len())
            .filter_map(|i| firsts[i].pfcp.get(heads[i]).map(|r| (r.0, i)))
            .min_by_key(|&(t, i)| (t, i));
        let Some((_, i)) = next else { break };
        let (t, rec) = &firsts[i].pfcp[heads[i]];
        heads[i] += 1;
        match rec {
            Ok((id, src, dst, msg)) => {
                pfcp.sighting(*t, *id, *src, *dst, msg);
            }
            Err((cause, at)) => bad.add(cause, || at.clone()),
        }
    }
    (pfcp, bad)
}

/// The run's slices ("default" first, then each session's in order of appearance) and each
/// session's slice index.
fn slices(pfcp: &Tracker) -> (Vec<String>, Vec<u8>) {
    let mut slice_names = vec!["default".to_string()];
    let mut slice_of_session = Vec::new();
    for s in &pfcp.sessions {
        let name = s.slice.clone().unwrap_or_else(|| "default".into());
        let idx = match slice_names.iter().position(|n| *n == name) {
            Some(i) => i,
            None => {
                slice_names.push(name);
                slice_names.len() - 1
            }
        };
        slice_of_session.push(idx.min(255) as u8);
    }
    (slice_names, slice_of_session)
}

/// The run's header: its files, clock, slices, how its links are stated, the pairing's options.
fn run_meta(captures: &[Capture], opts: &Options, epoch: i64, slice_names: &[String]) -> Value {
    let clock = json!({"name": "capture", "offset_ns": 0, "note": "capture timestamps (one host's clock when all files come from one host)"});
    let slices = slice_names.iter().map(|n| json!({"name": n})).collect();
    Header::new(Source::Pcap, epoch as f64 / 1e9, vec![clock], slices).json(json!({
        "files": captures.iter().map(Capture::name).collect::<Vec<_>>(),
        "links": {
            "n3_to_n6": "stated by identity: inner IP addresses, protocol, IPv4 identification and fragment field / IPv6 flow label, length and the first 16 bytes after the fixed IP header are equal (TTL and header checksum excluded)",
            "pfcp_request_to_response": "stated: sequence number and the peers' addresses (TS 29.244 7.2.2.2)",
            "teid_to_session": "stated by PFCP: F-TEIDs of PDIs / Created PDRs and outer header creation TEIDs of FARs",
        },
        "pairing": {"window_s": opts.window_ns as f64 / 1e9, "gtp_ports": opts.gtp_ports, "n3": opts.n3, "n6": opts.n6},
    }))
}

/// A pair's inner header (from its N3 sighting) and slice: the session by the N3 TEID, else by
/// the UE's address (the source uplink, the destination downlink; uplink when N3 came first).
fn joined(a: Sight, b: Sight, pfcp: &Tracker, slice_of_session: &[u8]) -> (Inner, u8) {
    let n3s = if a.n3 { a } else { b };
    let ul = if a.t <= b.t { a.n3 } else { b.n3 };
    let ue_addr = if ul { n3s.src } else { n3s.dst };
    let session = n3s.teid.and_then(|t| pfcp.by_teid.get(&t)).or_else(|| pfcp.by_ue.get(&ue_addr)).copied();
    let slice = session.and_then(|s| slice_of_session.get(s).copied()).unwrap_or(0);
    let inner = Inner {
        src: n3s.src,
        dst: n3s.dst,
        proto: n3s.proto,
        ports: n3s.ports,
        teid: n3s.teid,
        qfi: n3s.qfi,
        gtp_seq: n3s.seq,
    };
    (inner, slice)
}

/// `run.json`'s `pfcp`: messages, procedures, pairs and what did not pair, sessions.
fn pfcp_summary(pfcp: &Tracker, bad: &Causes, slice_names: &[String], slice_of_session: &[u8]) -> Value {
    let sessions: Vec<Value> = pfcp
        .sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "cp_seid": s.cp_seid.map(|x| format!("{x:#x}")), "up_seid": s.up_seid.map(|x| format!("{x:#x}")),
                "ue_addrs": s.ue_addrs.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "teids": s.teids.iter().map(|t| format!("{t:#x}")).collect::<Vec<_>>(),
                "slice": slice_names[usize::from(slice_of_session[i])],
            })
        })
        .collect();
    json!({
        "messages": pfcp.messages,
        "duplicate_sightings": pfcp.duplicate_sightings,
        "by_procedure": pfcp.by_type,
        "pairs": pfcp.pairs.len(),
        "unanswered_requests": pfcp.unanswered,
        "responses_without_request": pfcp.responses_without_request,
        "retransmissions": pfcp.retransmissions,
        "sequence_number_reuse": pfcp.sequence_number_reuse,
        "unknown_message_types": pfcp.unknown_types,
        "undecodable": bad.to_json(),
        "sessions": sessions,
    })
}

/// A pcapng block type as `run.json` names it.
pub(super) fn block_name(t: u32) -> String {
    match t {
        4 => "name_resolution".into(),
        5 => "interface_statistics".into(),
        9 => "systemd_journal_export".into(),
        10 => "decryption_secrets".into(),
        0xBAD | 0x4000_0BAD => "custom".into(),
        _ => format!("unknown {t:#x}"),
    }
}

/// What a capture without a single packet held.
fn no_packets(r: &CaptureReader) -> String {
    let st = &r.stats;
    let mut parts = vec![format!("{} interface(s)", r.ifaces.len())];
    if st.sections > 0 {
        parts.insert(0, format!("{} pcapng section(s)", st.sections));
    }
    if st.other_blocks > 0 {
        let types: Vec<String> = st.other_block_types.iter().map(|(t, n)| format!("{n} {}", block_name(*t))).collect();
        parts.push(format!("{} block(s) without packets: {}", st.other_blocks, types.join(", ")));
    }
    if st.impossible_time_frames > 0 {
        parts.push(format!("{} packet(s) with a time before 1970 or after 2200, skipped", st.impossible_time_frames));
    }
    if let Some(d) = &st.damage {
        parts.push(format!("unreadable from byte {}: {}", d.offset, d.reason));
    } else if st.truncated_frames > 0 {
        parts.push("cut short inside its first record".into());
    }
    parts.join(", ")
}

pub(super) fn ordered(a: IpAddr, b: IpAddr) -> (IpAddr, IpAddr) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Which of the side's interface names or addresses a frame is on (the first that matches).
pub(super) fn matches_side(specs: &[String], iface: Option<&str>, addrs: Option<(IpAddr, IpAddr)>) -> Option<usize> {
    specs.iter().position(|s| {
        iface == Some(s.as_str())
            || s.parse::<IpAddr>().ok().is_some_and(|a| addrs.is_some_and(|(x, y)| x == a || y == a))
    })
}

/// An input error naming the file once (the reader's own errors already begin with it).
fn input(path: &str, e: std::io::Error) -> IngestError {
    let path = path.to_string();
    let m = e.to_string();
    let message = match m.strip_prefix(&format!("{path}: ")) {
        Some(rest) => rest.to_string(),
        None => m,
    };
    IngestError::Input { path, message }
}
