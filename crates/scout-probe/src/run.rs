//! The live probe's life (`scout probe`): attach to every UPF, read the pairs until stopped,
//! detach, collect what the kernel still holds, and write the run.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use scout_events::header::{Header, NoTwin, Source, Unmatched};
use scout_events::writer::RunWriter;
use scout_ingest::pcap::journey::{Inner, Journeys, Seen};
use serde_json::{json, Value};

use super::{
    load, now_mono_ns, now_real_ns, pfcp_live, read_pending, staged, Loaded, Options, PairRecord, ProbeError, Side,
    COUNTERS, WAYS,
};

/// One pair from the kernel as a journey through the UPF (times from the probe's start).
fn pair_to_journey(
    p: &PairRecord,
    mono0: i64,
    slice: u8,
    upf: usize,
    slice_name: &str,
    journeys: &mut Journeys,
    w: &mut RunWriter,
) {
    let first_n3 = p.first_side == 0;
    let a = Seen { t_ns: p.t_first as i64 - mono0, n3: first_n3, bytes: p.bytes_first };
    let b = Seen { t_ns: p.t_second as i64 - mono0, n3: !first_n3, bytes: p.bytes_second };
    let inner = Inner {
        src: p.addr(&p.src),
        dst: p.addr(&p.dst),
        proto: p.proto,
        ports: matches!(p.proto, 6 | 17 | 132).then_some((p.sport, p.dport)),
        teid: Some(p.teid),
        qfi: (p.qfi != 0xff).then_some(p.qfi),
        gtp_seq: (p.has_seq == 1).then_some(p.gtp_seq),
    };
    journeys.pair(a, b, &inner, slice, &json!({"upf": upf, "slice": slice_name}), w);
}

/// The unmatched sightings by side and reason, from each side's `[expired, evicted, busy, waiting
/// at the end]` and how many of those waiting had already waited longer than the window.
fn unmatched(u: &[[u64; 4]; 2], waiting_beyond_window: &[u64; 2]) -> Unmatched {
    let mut out = Unmatched::new(&[NoTwin::WithinWindow, NoTwin::TableFull, NoTwin::SetBusy, NoTwin::CaptureEnded]);
    for (side, n3) in [(0, true), (1, false)] {
        let (u, beyond) = (u[side], waiting_beyond_window[side]);
        out.add(n3, NoTwin::WithinWindow, u[0] + beyond);
        out.add(n3, NoTwin::TableFull, u[1]);
        out.add(n3, NoTwin::SetBusy, u[2]);
        out.add(n3, NoTwin::CaptureEnded, u[3] - beyond);
    }
    out
}

/// What the probe has seen so far (for progress lines).
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Every program is attached (the first call says so, with nothing seen yet).
    pub attached: bool,
    pub elapsed_s: f64,
    pub pairs: u64,
    /// Ring-buffer records lost.
    pub lost: u64,
}

/// Attaches the probes, writes pairs to a run in `out` until `duration` passes or `stop` is set,
/// detaches and finishes the run. `progress` is called once when every program is attached, then
/// about once a second.
pub fn run(
    opts: &Options,
    out: &Path,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(&Progress),
) -> Result<Value, ProbeError> {
    if opts.upfs.is_empty() {
        return Err(ProbeError::Usage("give at least one --n3 NETNS:IFACE and --n6 NETNS:IFACE".into()));
    }
    opts.check()?;
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(ProbeError::Usage(
            "scout probe needs root (CAP_BPF, CAP_NET_ADMIN and CAP_SYS_ADMIN for setns)".into(),
        ));
    }
    // The kernel's per-program run time and count (kernel.bpf_stats_enabled while this fd is open).
    let stats_fd = aya::sys::enable_stats(aya::sys::Stats::RunTime).ok();
    let mut slices: Vec<String> = vec![];
    for u in &opts.upfs {
        if !slices.contains(&u.slice) {
            slices.push(u.slice.clone());
        }
    }
    let mut loaded = Vec::new();
    for u in &opts.upfs {
        match load(u, opts) {
            Ok(l) => loaded.push(l),
            Err(e) => return Err(detached(&mut loaded, e)),
        }
    }
    let (mono0, real0) = (now_mono_ns(), now_real_ns());
    // Checkpointed every second: a probe that is killed leaves a run `scout recover` reads.
    let mut w = match RunWriter::create_checkpointed(out, run_meta(opts, &slices, real0), &slices) {
        Ok(w) => w,
        Err(e) => return Err(detached(&mut loaded, e.into())),
    };
    if let Some(tap) = &opts.live {
        w.set_tap(tap.clone());
    }
    // N4, captured live.
    let stop_pfcp = std::sync::Arc::new(AtomicBool::new(false));
    let mut pfcp_threads = Vec::new();
    for side in &opts.pfcp {
        match pfcp_live::start(side, stop_pfcp.clone(), real0) {
            Ok(h) => pfcp_threads.push((side.clone(), h)),
            Err(e) => {
                stop_pfcp.store(true, Ordering::Relaxed);
                return Err(detached(&mut loaded, e));
            }
        }
    }
    let start = Instant::now();
    let mut journeys = Journeys::new(false);
    let mut upfs = Upfs { loaded, slices, mono0 };
    progress(&Progress { attached: true, elapsed_s: 0.0, pairs: 0, lost: 0 });
    upfs.read_until_stopped(opts, stop, start, &mut journeys, &mut w, progress);
    let mut end = upfs.finish(opts, &mut journeys, &mut w);
    let per_upf = upfs.summaries(opts, std::mem::take(&mut end.costs), &mut end.unmatched);
    drop(stats_fd);
    stop_pfcp.store(true, Ordering::Relaxed);
    let pfcp_json = finish_pfcp(pfcp_threads, real0, &mut w);
    let extra = result_json(start, &journeys, &end, per_upf, pfcp_json);
    Ok(w.finish(extra)?)
}

/// Detaches what was attached (the run could not start: `e`).
fn detached(loaded: &mut [Loaded], e: ProbeError) -> ProbeError {
    for l in loaded {
        l.detach();
    }
    e
}

/// The run's header: the UPFs probed, the clock, how sightings are paired.
fn run_meta(opts: &Options, slices: &[String], real0: i64) -> Value {
    let clock = json!({"name": "bpf_ktime", "offset_ns": 0, "note": "CLOCK_MONOTONIC of the probe's host (bpf_ktime_get_ns), from the probe's start"});
    let slice_list = slices.iter().map(|n| json!({"name": n})).collect();
    Header::new(Source::Probe, real0 as f64 / 1e9, vec![clock], slice_list).json(json!({
        "upfs": opts.upfs.iter().map(|u| json!({"n3": u.n3.to_string(), "n6": u.n6.to_string(), "slice": u.slice})).collect::<Vec<_>>(),
        "links": {"n3_to_n6": "stated by identity, in the kernel: the key of scout_wire::ip::identity (inner IP fields the UPF does not change and 16 bytes after the fixed IP header)"},
        "probe": {"histogram_only": opts.histogram_only, "window_s": opts.window.as_secs_f64(), "gtp_port": opts.gtp_port, "table_sets": opts.table_sets, "table_sightings": opts.table_sets as usize * WAYS, "pairing": opts.pairing.name()},
    }))
}

/// The UPFs' loaded probes, their slices, and the probe's start on the kernel's clock.
struct Upfs {
    loaded: Vec<Loaded>,
    slices: Vec<String>,
    mono0: i64,
}

/// What the probe's end found besides the pairs: per side, the unmatched sightings by reason
/// (expired, evicted, busy, waiting at the end) and those waiting beyond the window; the tables
/// that could not be read; each UPF's programs' cost.
struct End {
    unmatched: [[u64; 4]; 2],
    waiting_beyond_window: [u64; 2],
    unread: Vec<String>,
    costs: Vec<Vec<Value>>,
}

impl Upfs {
    /// UPF `ui`'s slice index.
    fn slice(&self, ui: usize) -> u8 {
        self.slices.iter().position(|s| *s == self.loaded[ui].upf.slice).unwrap_or(0) as u8
    }

    /// Every pair in UPF `ui`'s ring buffers, as journeys; returns how many.
    fn drain(&mut self, ui: usize, journeys: &mut Journeys, w: &mut RunWriter) -> u64 {
        let (slice, mono0) = (self.slice(ui), self.mono0);
        let l = &mut self.loaded[ui];
        let mut got = 0;
        for ring in &mut l.rings {
            while let Some(item) = ring.next() {
                for p in PairRecord::all_in(&item) {
                    got += 1;
                    pair_to_journey(&p, mono0, slice, ui, &l.upf.slice, journeys, w);
                }
            }
        }
        got
    }

    /// Reads the rings until `stop` or the duration, checkpointing and reporting about once a
    /// second.
    fn read_until_stopped(
        &mut self,
        opts: &Options,
        stop: &AtomicBool,
        start: Instant,
        journeys: &mut Journeys,
        w: &mut RunWriter,
        progress: &mut dyn FnMut(&Progress),
    ) {
        let mut last_progress = Instant::now();
        loop {
            let done = stop.load(Ordering::Relaxed) || opts.duration.is_some_and(|d| start.elapsed() >= d);
            let mut got = 0;
            for ui in 0..self.loaded.len() {
                got += self.drain(ui, journeys, w);
            }
            if last_progress.elapsed() >= Duration::from_secs(1) {
                last_progress = Instant::now();
                w.checkpoint(json!({"elapsed_s": start.elapsed().as_secs_f64()}));
                let lost = self.loaded.iter().map(|l| l.counters().get(3).copied().unwrap_or(0)).sum();
                progress(&Progress {
                    attached: true,
                    elapsed_s: start.elapsed().as_secs_f64(),
                    pairs: journeys.packets(),
                    lost,
                });
            }
            if done {
                return;
            }
            if got == 0 {
                // Nothing in the ring buffers: look again in 10 ms (the programs never wake the reader).
                let mut fds: Vec<libc::pollfd> = self
                    .loaded
                    .iter()
                    .flat_map(|l| &l.rings)
                    .map(|r| libc::pollfd { fd: r.as_raw_fd(), events: libc::POLLIN, revents: 0 })
                    .collect();
                if fds.is_empty() {
                    std::thread::sleep(Duration::from_millis(50));
                } else {
                    // SAFETY: poll on valid descriptors for at most 10 ms.
                    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 10) };
                }
            }
        }
    }

    /// Detaches each UPF's programs, then drains its rings once more (pairs made between the
    /// last read and the detach), takes the pairs still staged on each CPU and reads the
    /// sightings still waiting.
    fn finish(&mut self, opts: &Options, journeys: &mut Journeys, w: &mut RunWriter) -> End {
        let mut end = End { unmatched: [[0; 4]; 2], waiting_beyond_window: [0; 2], unread: vec![], costs: vec![] };
        for ui in 0..self.loaded.len() {
            end.costs.push(self.loaded[ui].cost());
            self.loaded[ui].detach();
            self.drain(ui, journeys, w);
            let (slice, l) = (self.slice(ui), &self.loaded[ui]);
            if !opts.histogram_only {
                match staged(&l.bpf) {
                    Some(recs) => {
                        for p in &recs {
                            pair_to_journey(p, self.mono0, slice, ui, &l.upf.slice, journeys, w);
                        }
                    }
                    None => end.unread.push(format!("{} (staged pairs)", l.upf.n3)),
                }
            }
            match read_pending(&l.bpf, opts.pairing, opts.window.as_nanos() as u64, now_mono_ns() as u64, None) {
                Some(wt) => {
                    for side in 0..2 {
                        end.unmatched[side][3] += wt.within_window[side] + wt.beyond_window[side];
                        end.waiting_beyond_window[side] += wt.beyond_window[side];
                    }
                }
                None => end.unread.push(l.upf.n3.to_string()),
            }
        }
        end
    }

    /// Each UPF's counters, histogram and programs' cost, for `run.json`; the counters of the
    /// sightings the kernel gave up are added to `unmatched`.
    fn summaries(&self, opts: &Options, costs: Vec<Vec<Value>>, unmatched: &mut [[u64; 4]; 2]) -> Vec<Value> {
        let mut per_upf = Vec::new();
        for (l, cost) in self.loaded.iter().zip(costs) {
            let c = l.counters();
            for side in 0..2 {
                for (k, name) in ["expired", "evicted", "busy"].iter().enumerate() {
                    let i =
                        COUNTERS.iter().position(|n| *n == format!("{name}_{}", ["n3", "n6"][side])).expect("counter");
                    unmatched[side][k] += c.get(i).copied().unwrap_or(0);
                }
            }
            let h = l.histogram();
            let hist = |d: usize| -> Vec<Value> {
                h[d].iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(b, &n)| json!({"from_ns": 1u64 << b, "to_ns": 1u64 << (b + 1).min(63), "count": n}))
                    .collect()
            };
            per_upf.push(json!({
                "n3": l.upf.n3.to_string(), "n6": l.upf.n6.to_string(), "slice": l.upf.slice,
                "counters": COUNTERS.iter().zip(c.iter()).map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "histogram": if opts.histogram_only { json!({"ul": hist(0), "dl": hist(1)}) } else { Value::Null },
                "programs": cost,
            }));
        }
        per_upf
    }
}

/// The N4 captures' threads, stopped: their PFCP pairs written, their summaries.
fn finish_pfcp(
    threads: Vec<(Side, std::thread::JoinHandle<Result<pfcp_live::Capture, ProbeError>>)>,
    real0: i64,
    w: &mut RunWriter,
) -> Vec<Value> {
    let mut pfcp_json = Vec::new();
    for (side, h) in threads {
        let Ok(Ok(cap)) = h.join() else { continue };
        cap.tracker.write_pairs(real0, w);
        pfcp_json.push(json!({
            "interface": side.to_string(), "frames": cap.frames, "messages": cap.tracker.messages,
            "pairs": cap.tracker.pairs.len(), "unanswered_requests": cap.tracker.unanswered,
            "responses_without_request": cap.tracker.responses_without_request,
            "retransmissions": cap.tracker.retransmissions, "sequence_number_reuse": cap.tracker.sequence_number_reuse,
            "undecodable": cap.undecodable,
            "sessions": cap.tracker.sessions.len(),
        }));
    }
    pfcp_json
}

/// `run.json`'s closing part: the pairs, what did not pair and why, the programs' cost, N4.
fn result_json(start: Instant, journeys: &Journeys, end: &End, per_upf: Vec<Value>, pfcp_json: Vec<Value>) -> Value {
    let unread = &end.unread;
    let total_counter =
        |i: usize| -> u64 { per_upf.iter().map(|u| u["counters"][COUNTERS[i]].as_u64().unwrap_or(0)).sum() };
    let (runs, run_ns): (u64, u64) = per_upf
        .iter()
        .flat_map(|u| u["programs"].as_array().cloned().unwrap_or_default())
        .map(|p| (p["run_count"].as_u64().unwrap_or(0), p["run_time_ns"].as_u64().unwrap_or(0)))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    json!({
        "flows": journeys.flows,
        "ues": journeys.ues_json(),
        "unmatched": unmatched(&end.unmatched, &end.waiting_beyond_window).json(),
        "probe_result": {
            "duration_s": start.elapsed().as_secs_f64(),
            "pairs": {"ul": journeys.pairs[0], "dl": journeys.pairs[1]},
            "pairs_in_kernel": total_counter(2),
            "ringbuf_lost": total_counter(3),
            "pending_table_unread": unread,
            "cost_ns_per_packet": if runs > 0 { Some(run_ns as f64 / runs as f64) } else { None },
            "pfcp": pfcp_json,
            "cost_from": "the kernel's BPF run-time statistics (BPF_ENABLE_STATS): run_time_ns / run_count over every program invocation",
            "upfs": per_upf,
        },
        "counts": {"offered_packets": journeys.packets(), "delivered_packets": 0, "in_flight_packets": 0, "skipped_inputs": {}},
    })
}
