//! An emulation's life: set-up (the model, the namespaces, the real UPFs, the run's writer, the
//! probe and the capture), the threads (data path, device writer, TCP tracepoints) while this one
//! starts the applications and reports progress, and the closing summary (`run.json`).

use std::io;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;

use scout_events::header::Source;
use scout_events::writer::RunWriter;
use scout_events::{ControlEvent, Sink};
use scout_ran::stack::Stack;
use scout_sim::scenario::Loaded;
use scout_sim::Outcome;
use serde_json::{json, Value};

use super::{
    run_datapath, CoreLinks, Datapath, Done, Options, Progress, Shared, Tap, ADMIT_LAG_NS, EGRESS_PRIORITY,
    MIN_SLEEP_NS, PROGRESS_EVERY_NS, READ_GUARD_NS, REALTIME_PRIORITY, SPIN_CPU_MAX, SPIN_NS, TCP_READ_EVERY_NS,
};
use crate::apps::Apps;
use crate::egress::{self, Egress};
use crate::feed::Feed;
use crate::iperf3;
use crate::netns::{self, Topology};
use crate::qos::QosRules;
use crate::tcp::{TcpProbe, TcpRows};
use crate::thread;
use crate::timing::{mono_ns, Admission};
use crate::EmuError;

/// Runs the emulation of `loaded` into the new run directory `out` until the duration has passed,
/// the `--shell` exits or `progress` (called about every 100 ms) returns `Break`. `ready` is called
/// once the namespaces are up (with their names, the DN's first), before the clock starts.
pub fn emulate(
    loaded: &Loaded,
    out: &Path,
    opts: &Options,
    ready: &mut dyn FnMut(&[String]),
    progress: &mut dyn FnMut(Progress) -> ControlFlow<()>,
) -> Result<Value, EmuError> {
    let seed = opts.seed.unwrap_or(loaded.scenario.seed);
    let duration = opts.duration_s.unwrap_or(loaded.scenario.duration_s);
    if !(duration > 0.0 && duration <= 86_400.0) {
        return Err(EmuError::Setup {
            what: "--duration".into(),
            message: format!("{duration}; accepted: 0 < duration <= 86400 s"),
        });
    }
    let end = (duration * 1e9) as i64;
    // The model, built as the simulator builds it (its traffic generators are not used: the
    // traffic is the applications').
    let (stack, _, _) = scout_sim::build(loaded, seed, duration)?;
    let n_ues = stack.nof_ues() as u32;
    // What killed emulators left behind: their namespaces (and the processes in them), and their
    // tracefs instances, whose tracepoints would go on recording every TCP segment.
    let stale = crate::remove_stale()?;
    let mut topo = Topology::create(n_ues, opts.offload)?;
    let (real_core, core) = start_core(loaded, &stack, &topo, opts)?;
    let mut names: Vec<String> = topo.namespaces().map(str::to_string).collect();
    names.extend(real_core.as_ref().map(|c| c.namespaces()).unwrap_or_default());
    let slices: Vec<String> = loaded.scenario.core.slices.iter().map(|s| s.name.clone()).collect();
    // The UEs' live feeds, bound before the data path drops its privileges.
    let mut feed = Feed::open(out, n_ues).map_err(|e| EmuError::Setup {
        what: format!("the UEs' feed sockets in {}", crate::feed::dir(out).display()),
        message: e.to_string(),
    })?;
    // Checkpointed every second: `kill -9` loses at most the last second (`scout recover`).
    let mut w = RunWriter::create_checkpointed(out, run_meta(loaded, seed, duration, n_ues, &names, &feed), &slices)?;
    if let Some(tap) = &opts.live {
        w.set_tap(tap.clone());
    }
    // The probe on the real UPFs, attached before any application starts; the capture likewise.
    let probe = start_probe(real_core.as_ref(), opts, out)?;
    let capture = start_capture(real_core.as_ref(), opts, out)?;
    let mut apps = Apps::new(&loaded.scenario.apps, out, &names, opts.shell);
    ready(&names);

    let tcp = TcpProbe::start(topo.pid);
    let (tcp_tx, tcp_rx) = std::sync::mpsc::channel();
    let t0 = mono_ns();
    let (egress, egress_side) = Egress::new(&topo, t0);
    feed.start(t0, &stack.describe());
    let mut dp = Datapath::new(stack, w, feed, &topo, egress, QosRules::new(&loaded.scenario.qos_rules), t0, core);
    let ue_of = dp.ue_of.clone();
    // The TCP tracepoints' rows reach the data path through `tcp_rx`, or why not.
    let (tcp, tcp_why_not) = connect_tcp(tcp, &mut dp, tcp_rx);
    let epoch_s = wall_clock_at(t0);
    // The data path runs on a thread of its own, unprivileged, and so does the device writer;
    // this thread keeps what needs root (starting the apps in their namespaces, the cleanup) and
    // talks to the caller (progress).
    let shared = Shared::default();
    let mut app_error = None;
    // Until the emulation ends: no CPU idles where a timer cannot wake the data path on time.
    let (cpu_latency, cpu_wakeup_latency) = thread::hold_cpu_wakeup_latency();
    let (done, egress, tcp) = std::thread::scope(|s| {
        let h = spawn(s, "scout-datapath", || run_datapath(dp, end, &shared));
        let (topo, stop) = (&topo, &shared.stop);
        let egress = spawn(s, "scout-egress", move || {
            let realtime = thread::realtime(EGRESS_PRIORITY);
            thread::drop_privileges();
            (realtime, egress::run(topo, t0, egress_side, stop))
        });
        let (shared_ref, ue_of) = (&shared, &ue_of);
        let feed =
            tcp.map(|probe| spawn(s, "scout-tcpinfo", move || run_tcp_feed(probe, tcp_tx, t0, ue_of, shared_ref)));
        app_error = watch(&h, &shared, &mut apps, progress, duration, t0);
        shared.stop.store(true, Ordering::Relaxed);
        let feed = feed.map(|f| f.join().expect("the scout-tcpinfo thread panicked"));
        // The data path hangs up on the device writer when it ends.
        let done = h.join().expect("the scout-datapath thread panicked");
        (done, egress.join().expect("the scout-egress thread panicked"), feed)
    });
    // The emulation is over: the CPUs may idle again.
    drop(cpu_latency);
    let Done { dp, now, realtime, privileges, error } = done;
    // The data path's own writes ended its loop on their first error (`error`); the device
    // writer's thread hands its own back.
    let (egress_realtime, mut written) = egress;
    if let Some(e) = error.or(written.error.take()) {
        // Dropping `topo` tears the namespaces down (from this thread, which may).
        return Err(e.into());
    }
    let ending = Ending {
        out,
        end,
        now,
        realtime,
        egress_realtime,
        privileges,
        cpu_wakeup_latency,
        epoch_s,
        tcp,
        tcp_why_not,
        apps,
        real_core,
        probe,
        capture,
        slices,
        offload: opts.offload,
        stale_namespaces: stale.namespaces,
        stale_trace_instances: stale.trace_instances,
        app_error,
    };
    let (w, mut extra) = close(dp, written, ending);
    // With the real UPFs gone, the namespaces are torn down (from this thread, which may).
    let mut problems = topo.teardown();
    problems.extend(stale.problems);
    extra["emulator"]["cleanup_problems"] = json!(problems);
    Ok(w.finish(extra)?)
}

/// What the end of an emulation gathers besides the data path: how its threads ran, its parts
/// still to finish (applications, real UPFs, probe, capture, the TCP tracepoints).
struct Ending<'a> {
    out: &'a Path,
    end: i64,
    /// When the data path's loop ended.
    now: i64,
    realtime: bool,
    egress_realtime: bool,
    privileges: Value,
    cpu_wakeup_latency: Value,
    epoch_s: f64,
    tcp: Option<TcpDone>,
    tcp_why_not: Option<String>,
    apps: Apps,
    real_core: Option<crate::upf::RealCore>,
    probe: Option<scout_probe::Running>,
    capture: Option<crate::capture::Capture>,
    slices: Vec<String>,
    offload: bool,
    stale_namespaces: Vec<String>,
    stale_trace_instances: Vec<String>,
    app_error: Option<EmuError>,
}

/// The run's end: the model's last deliveries, the applications' and the parts' summaries and
/// the last rows written; returns the writer and `run.json`'s closing section (without the
/// cleanup, which follows).
fn close(mut dp: Datapath<'_>, mut written: egress::DeviceWriter<'_>, mut e: Ending<'_>) -> (RunWriter, Value) {
    let t_end = e.now.min(e.end).max(dp.clock().min(e.end));
    let in_flight = dp.stack.finish(t_end, &mut Tap { w: &mut dp.w, dropped: &mut dp.dropped, feed: &mut dp.feed });
    let apps_json = e.apps.finish();
    let iperf3_json = iperf3_rows(&apps_json, e.out, e.epoch_s, &dp.ue_of, &mut dp.w);
    // The rows the data path had not written yet, then the pipe's last lines.
    dp.write_tcp_rows(true);
    let tcp_json = tcp_summary(e.tcp, e.tcp_why_not, &mut dp, t_end);
    let (writer_waits, writer_wait_ns) = dp.w.waits();
    let Datapath {
        stack, w, flows, delays, late, slot_late, long_turns, admit, rtts, counts, qos, egress, feed, ..
    } = dp;
    let feed_json = feed.close();
    let (inline_batches, handed_over) = (egress.inline_batches, egress.handed_over);
    written.absorb(egress.inline);
    let (packets_written, device_full, segments_and_writes) =
        (written.late.json(), written.device_full, written.segments_and_writes());
    let mut real_core = e.real_core;
    let core_json = real_core.as_mut().map(|c| c.finish());
    // The probe last (it sees the sessions' deletion on N4), while the UPFs' namespaces exist.
    let probe_json = e.probe.map(probe_summary);
    let capture_json = e.capture.map(|c| c.finish());
    drop(real_core);
    let mut outcome = Outcome {
        stats: stack.stats.clone(),
        in_flight,
        delays_ns: delays,
        rtts_ns: rtts,
        duration_ns: t_end,
        flows: flows.json,
        cell: stack.describe(),
        slices: e.slices,
        radio: scout_sim::radio::describe(&stack.sinr_sources(), t_end),
    };
    let mut extra = scout_sim::closing(&mut outcome);
    let closing = Closing {
        stopped_early: e.now < e.end,
        realtime: e.realtime,
        egress_realtime: e.egress_realtime,
        privileges: e.privileges,
        cpu_wakeup_latency: e.cpu_wakeup_latency,
        timing: json!({
            "slots": slot_late.json(),
            "long_turns": long_turns.json(),
            "actions": late.json(),
            "packets_written": packets_written,
            "writes": {"batches_written_by_the_data_path": inline_batches, "batches_handed_to_the_device_writer": handed_over,
                       "note": "the data path writes a batch of deliveries itself when it holds at most 4 packets and the device writer's thread has nothing left to write; else that thread writes it"},
            "writer_waits": {"n": writer_waits, "total_us": writer_wait_ns / 1000, "note": "times the data path found the event writer's queue full and waited"},
            "writer_behind": {"n": counts.writer_behind, "note": "times the data path stopped reading the devices because the event writer's queue was half full, until it had caught up"},
            "admission": admission_json(&admit),
            "note": "lateness in µs (bucket upper bounds): of each slot, when it ran minus when it was due; of each model action, likewise; of each packet written to a device, when written minus when the model delivered it",
        }),
        device_full,
        segments_and_writes,
        qos_json: json!({"packets_per_rule": qos.matched, "packets_by_default_rule": qos.default}),
        offload: e.offload,
        stale_namespaces: e.stale_namespaces,
        stale_trace_instances: e.stale_trace_instances,
        core_json,
        probe_json,
        capture_json,
        tcp_json,
        feed_json,
    };
    extra["emulator"] = closing.json(&counts, &stack);
    extra["apps"] = apps_json;
    extra["emulator"]["iperf3"] = iperf3_json;
    if let Some(err) = e.app_error {
        extra["emulator"]["app_error"] = json!(err.to_string());
    }
    extra["counts"]["skipped_inputs"] = json!({
        "packets_not_ip": counts.not_ip,
        "dn_packets_to_no_ue": counts.no_ue,
    });
    (w, extra)
}

/// The TCP tracepoints, when they could be started, with their rows reaching the data path
/// through `rx`; or why there are none.
fn connect_tcp(
    tcp: io::Result<TcpProbe>,
    dp: &mut Datapath<'_>,
    rx: std::sync::mpsc::Receiver<Vec<ControlEvent>>,
) -> (Option<TcpProbe>, Option<String>) {
    match tcp {
        Ok(probe) => {
            dp.tcp_in = Some(rx);
            (Some(probe), None)
        }
        Err(e) => (None, Some(e.to_string())),
    }
}

/// Spawns `f` on a scoped thread named `name` (as `top` and the kernel show it).
fn spawn<'s, 'e, T: Send + 's>(
    s: &'s std::thread::Scope<'s, 'e>,
    name: &str,
    f: impl FnOnce() -> T + Send + 's,
) -> std::thread::ScopedJoinHandle<'s, T> {
    std::thread::Builder::new().name(name.into()).spawn_scoped(s, f).unwrap_or_else(|e| panic!("spawn {name}: {e}"))
}

/// The wall-clock time (Unix seconds) of `CLOCK_MONOTONIC`'s `t0`: the emulator's time 0, for
/// iperf3 servers' own timestamps.
fn wall_clock_at(t0: i64) -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
        - (mono_ns() - t0) as f64 / 1e9
}

/// The real UPF processes of the slices that ask for one (docs/upf.md): their namespaces, links
/// and sessions; and which link serves each slice.
fn start_core(
    loaded: &Loaded,
    stack: &Stack,
    topo: &Topology,
    opts: &Options,
) -> Result<(Option<crate::upf::RealCore>, CoreLinks), EmuError> {
    let n_ues = stack.nof_ues() as u32;
    // Slices served by a real UPF process (docs/upf.md): their namespaces, links and sessions.
    let real: Vec<crate::upf::RealSlice> = loaded
        .scenario
        .core
        .slices
        .iter()
        .enumerate()
        .filter(|(_, s)| s.upf_process)
        .map(|(i, s)| crate::upf::RealSlice {
            slice: i as u8,
            name: s.name.clone(),
            modify_every_ms: s.upf_modify_every_ms,
            ues: (0..n_ues)
                .filter(|&u| usize::from(stack.slice_of(u)) == i)
                .map(|u| (u, netns::ue_addr4(u), stack.qfi_of(u, 0)))
                .collect(),
        })
        .collect();
    let (real_core, core_links) = if real.is_empty() {
        (None, Vec::new())
    } else {
        let bin = opts.upf_binary.as_deref().ok_or_else(|| EmuError::Setup {
            what: "core.slices[].upf_process".into(),
            message: "needs the scout-upf executable (cargo build --release -p scout-emu --bin scout-upf; scripts/setup.sh builds it)".into(),
        })?;
        let (c, l) = crate::upf::RealCore::start(topo.pid, &topo.dn.ns, bin, &real)?;
        (Some(c), l)
    };
    let mut core_of_slice = vec![None; loaded.scenario.core.slices.len()];
    for (k, l) in core_links.iter().enumerate() {
        core_of_slice[usize::from(l.slice)] = Some(k);
    }
    Ok((real_core, (core_links, core_of_slice)))
}

/// The run's header: the scenario's, with the emulator's namespaces, devices, addresses and the
/// UEs' feeds.
fn run_meta(loaded: &Loaded, seed: u64, duration: f64, n_ues: u32, names: &[String], feed: &Feed) -> Value {
    let clock = json!({"name": "emulator", "offset_ns": 0, "note": "CLOCK_MONOTONIC since the emulation started; model time is wall time"});
    let mut meta = scout_sim::run_meta(loaded, Source::Emulator, seed, duration, clock);
    meta["emulator"] = json!({
        "namespaces": names,
        "device": netns::DEVICE, "mtu": netns::MTU,
        "dn": {"ipv4": netns::DN_ADDR4.to_string(), "ipv6": netns::DN_ADDR6.to_string()},
        "ues": (0..n_ues).map(|i| json!({"ue": i, "ipv4": netns::ue_addr4(i).to_string(), "ipv6": netns::ue_addr6(i).to_string()})).collect::<Vec<_>>(),
    });
    meta["emulator"]["feed"] = json!(feed.paths());
    meta
}

/// `scout probe` on the real UPFs (`--probe`).
fn start_probe(
    real_core: Option<&crate::upf::RealCore>,
    opts: &Options,
    out: &Path,
) -> Result<Option<scout_probe::Running>, EmuError> {
    match (real_core, opts.probe) {
        (_, false) => Ok(None),
        (None, true) => Err(EmuError::Setup {
            what: "--probe".into(),
            message: "no slice has a real UPF to probe; accepted with core.slices[].upf_process: true".into(),
        }),
        (Some(core), true) => {
            let p = scout_probe::Running::start(core.probe_options(), out.join("upf")).map_err(|e| {
                EmuError::Setup { what: "--probe (scout probe on the real UPFs)".into(), message: e.to_string() }
            })?;
            Ok(Some(p))
        }
    }
}

/// pcap captures of the real UPFs' interfaces (`--capture`).
fn start_capture(
    real_core: Option<&crate::upf::RealCore>,
    opts: &Options,
    out: &Path,
) -> Result<Option<crate::capture::Capture>, EmuError> {
    match (real_core, opts.capture) {
        (_, false) => Ok(None),
        (None, true) => Err(EmuError::Setup {
            what: "--capture".into(),
            message:
                "no slice has a real UPF whose interfaces to capture; accepted with core.slices[].upf_process: true"
                    .into(),
        }),
        (Some(core), true) => Ok(Some(crate::capture::Capture::start(core.capture_points(&out.join("capture")))?)),
    }
}

/// While the data path runs: progress every [`PROGRESS_EVERY_NS`], and the applications looked
/// after, until the caller asks to stop, the applications end (`--shell`) or fail, or the data
/// path ends by itself. Returns the applications' error, if that was why.
fn watch<T>(
    datapath: &std::thread::ScopedJoinHandle<'_, T>,
    shared: &Shared,
    apps: &mut Apps,
    progress: &mut dyn FnMut(Progress) -> ControlFlow<()>,
    duration: f64,
    t0: i64,
) -> Option<EmuError> {
    loop {
        let now = mono_ns() - t0;
        let packets = shared.packets.load(Ordering::Relaxed);
        let mut app_error = None;
        let stop = progress(Progress { elapsed_s: now as f64 / 1e9, duration_s: duration, packets }).is_break()
            || match apps.poll(now) {
                Ok(ended) => ended,
                Err(e) => {
                    app_error = Some(e);
                    true
                }
            };
        if stop || datapath.is_finished() {
            return app_error;
        }
        std::thread::sleep(std::time::Duration::from_nanos(PROGRESS_EVERY_NS as u64));
    }
}

/// `run.json`'s `emulator.tcp_info`: the tracepoints' rows (the pipe's last lines written now),
/// or why there are none.
fn tcp_summary(tcp: Option<TcpDone>, why_not: Option<String>, dp: &mut Datapath<'_>, t_end: i64) -> Value {
    match tcp {
        Some(TcpDone { probe, mut rows, error }) => {
            let (lines, unparsed, overruns) =
                probe.stop(|l| rows.row(&l, dp.t0, t_end, &dp.ue_of).into_iter().for_each(|r| dp.w.control(r)));
            json!({
                "source": "tcp:tcp_probe and tcp:tcp_retransmit_skb tracepoints", "rows": rows.rows,
                "retransmit_rows": rows.retransmit_rows, "lines": lines, "unparsed_lines": unparsed,
                "other_sockets_or_times": rows.other, "lost_in_kernel": overruns,
                "read_error": error.map(|e| e.to_string()),
            })
        }
        None => json!({"source": null, "why_not": why_not}),
    }
}

/// `run.json`'s `emulator.probe`: what the probe on the real UPFs found (its own run is `upf/`).
fn probe_summary(p: scout_probe::Running) -> Value {
    match p.finish() {
        Ok(m) => {
            let r = &m["probe_result"];
            json!({"run": "upf", "pairs": r["pairs"], "unmatched": m["unmatched"], "ringbuf_lost": r["ringbuf_lost"],
                   "pfcp_pairs": r["pfcp"].as_array().map(|a| a.iter().filter_map(|x| x["pairs"].as_u64()).sum::<u64>()),
                   "note": "scout probe on every real UPF's n3, n6 and n4: a run of its own in upf/ (scout analyze RUN/upf)"})
        }
        Err(e) => json!({"error": e.to_string()}),
    }
}

/// `emulator.timing.admission`: the rules by which the loop takes packets in.
fn admission_json(admit: &Admission) -> Value {
    json!({
            "read_guard_us": READ_GUARD_NS / 1000,
            "admit_lag_us": ADMIT_LAG_NS / 1000,
            "share": Admission::SHARE,
            "burst_us": Admission::BURST_NS / 1000.0,
            "work_per_packet_ns": admit.cost_ns.round(),
            "spin_us": SPIN_NS / 1000,
            "min_sleep_us": MIN_SLEEP_NS / 1000,
            "spin_cpu_max": SPIN_CPU_MAX,
            "note": "devices are read only until read_guard_us before each slot, while no action is overdue by more than admit_lag_us, and while the loop's credit of CPU time (earned at share of the wall clock, up to burst_us) covers the measured work per packet; the last spin_us of each sleep before a slot are spent spinning, and a wait shorter than min_sleep_us is spun (the devices looked at every few µs) while the loop's thread used less than spin_cpu_max of its CPU; devices are not read while the event writer is behind (writer_behind)",
    })
}

/// What `run.json`'s `emulator` section says beyond the data path's counts: how the threads ran,
/// what the run's end found, each part's own summary.
struct Closing {
    stopped_early: bool,
    realtime: bool,
    egress_realtime: bool,
    privileges: Value,
    cpu_wakeup_latency: Value,
    timing: Value,
    device_full: u64,
    segments_and_writes: (u64, u64),
    qos_json: Value,
    offload: bool,
    stale_namespaces: Vec<String>,
    stale_trace_instances: Vec<String>,
    core_json: Option<Value>,
    probe_json: Option<Value>,
    capture_json: Option<Value>,
    tcp_json: Value,
    feed_json: Value,
}

impl Closing {
    fn json(self, counts: &super::Counts, stack: &Stack) -> Value {
        json!({
            "stopped_early": self.stopped_early,
            "realtime_priorities": {
                "datapath": self.realtime.then_some(REALTIME_PRIORITY),
                "device_writer": self.egress_realtime.then_some(EGRESS_PRIORITY),
                "note": "SCHED_FIFO priorities of the emulator's threads (null: not granted); the event writer's thread and the applications run as ordinary threads below them",
            },
            "datapath_privileges": self.privileges,
            "cpu_wakeup_latency": self.cpu_wakeup_latency,
            "kernel_preemption": thread::kernel_preemption(),
                "timing": self.timing,
            "packets_not_ip": counts.not_ip,
            "dn_packets_to_no_ue": counts.no_ue,
            "device_queue_full": self.device_full,
            "ce_marked": counts.ce_marked,
            "anbr_sent": counts.anbr_sent,
            "anbr_queries": counts.anbr_queries,
            "anbr_queries_refused": counts.anbr_queries_refused,
            "anbr_query_invalid": counts.anbr_query_invalid,
            "qos_rules": self.qos_json,
            "offload": json!({
                "enabled": self.offload,
                "reads": counts.reads,
                "super_packets_refused": counts.gso_refused,
                "packets_delivered_to_offload_devices": self.segments_and_writes.0,
                "device_writes": self.segments_and_writes.1,
                "note": "TCP super-packets (GSO) are cut into the segments the kernel would have sent before the model sees them; a flow's segments delivered together are joined again (as GRO) on the way out",
            }),
            "stale_removed": {"namespaces": self.stale_namespaces, "trace_instances": self.stale_trace_instances,
                              "note": "what emulators that are gone (killed) had left, removed before this one started"},
            "core": self.core_json,
            "probe": self.probe_json,
            "capture": self.capture_json,
            "n3": {
                "gpdus_received": counts.n3_gpdus, "not_gpdu": counts.n3_not_gpdu, "unknown_teid": counts.n3_unknown_teid,
                "uplink_sent": counts.n3_ul_sent, "uplink_not_ipv4": counts.n3_ul_not_ipv4, "uplink_send_failed": counts.n3_ul_send_failed,
                "to_core_packets": stack.stats.to_core_pkts, "from_core_packets": stack.stats.from_core_pkts,
                "note": "the gNB's N3 towards real UPF processes (core.slices[].upf_process): the model's journeys of these slices' packets begin (downlink) and end (uplink) at the gNB's N3; the UPF's own counters are in core[].upf",
            },
            "tcp_info": self.tcp_json,
            "feed": self.feed_json,
        })
    }
}

/// What the TCP tracepoints' thread hands back.
struct TcpDone {
    probe: TcpProbe,
    rows: TcpRows,
    error: Option<io::Error>,
}

/// The TCP tracepoints' thread: reads the pipe every [`TCP_READ_EVERY_NS`] and sends the rows to
/// the data path, which writes them a few at a time (parsing a 10-ms batch on the data path made
/// slots late by up to 1 ms). Unprivileged, as the data path.
fn run_tcp_feed(
    mut probe: TcpProbe,
    tx: Sender<Vec<ControlEvent>>,
    t0: i64,
    ue_of: &crate::netns::UeOf,
    shared: &Shared,
) -> TcpDone {
    thread::drop_privileges();
    let mut rows = TcpRows::default();
    let mut error = None;
    while !shared.stop.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_nanos(TCP_READ_EVERY_NS as u64));
        let mut batch = Vec::new();
        if let Err(e) = probe.read(|l| batch.extend(rows.row(&l, t0, i64::MAX, ue_of))) {
            error = Some(e);
            break;
        }
        if !batch.is_empty() && tx.send(batch).is_err() {
            break;
        }
    }
    TcpDone { probe, rows, error }
}

/// The iperf3 tests in the apps' outputs as control rows (`crate::iperf3`); returns what was
/// written, for `run.json`.
fn iperf3_rows(apps: &Value, out: &Path, epoch_s: f64, ue_of: &crate::netns::UeOf, w: &mut RunWriter) -> Value {
    let texts: Vec<(String, String, i64, String)> = apps
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| {
            let text = std::fs::read_to_string(out.join(a["stdout"].as_str()?)).ok()?;
            let started = (a["started_s"].as_f64()? * 1e9) as i64;
            Some((a["name"].as_str()?.to_string(), a["ns"].as_str()?.to_string(), started, text))
        })
        .collect();
    let outputs: Vec<iperf3::AppOutput> = texts
        .iter()
        .map(|(name, ns, started_ns, stdout)| iperf3::AppOutput { name, ns, started_ns: *started_ns, stdout })
        .collect();
    let found = iperf3::rows(&outputs, epoch_s, ue_of);
    let n = found.rows.len();
    for r in found.rows {
        w.control(r);
    }
    json!({"tests": found.tests, "rows": n})
}
