//! The wall-clock driver: the model of `scout-ran`, built from a scenario exactly as the simulator
//! builds it, stepped on `CLOCK_MONOTONIC` with real packets.
//!
//! One loop, one thread:
//!
//! 1. read what the TUN devices hold (each packet stamped with the time it was read);
//! 2. advance the model to now, one action at a time, with the packets read merged in by their
//!    time: a packet read at `t` enters the model before any action due after `t`, so the model
//!    sees events in time order even when it runs late; at most [`STEP_BUDGET`] steps before the
//!    devices are read again (a late slot cannot starve packet I/O);
//! 3. write each packet the model delivered to the device on the other side;
//! 4. sleep in `ppoll` until the next action is due or a device is readable.
//!
//! Every action's lateness (when it ran, minus when it was due) is measured: the emulator's
//! timing error, in `run.json` `emulator.timing`.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::ops::ControlFlow;
use std::path::Path;

use scout_events::writer::RunWriter;
use scout_events::{ControlEvent, Dir, Layer, Node, PacketEvent, Point, Sink, SlotEvent};
use scout_ran::stack::Stack;
use scout_sim::scenario::Loaded;
use scout_sim::Outcome;
use serde_json::{json, Value};

use crate::apps::Apps;
use crate::netns::{self, Topology};
use crate::tcp::{TcpProbe, TcpSample};
use crate::EmuError;

/// Model steps between two reads of the devices.
pub const STEP_BUDGET: usize = 256;

/// Packets read from one device before the others are read.
const READ_BATCH: usize = 64;

/// The driver thread's `SCHED_FIFO` priority (1–99), where the process may have one: above
/// ordinary work, below the kernel's own real-time threads (50).
pub const REALTIME_PRIORITY: i32 = 10;

/// The longest sleep: how often a stop request is seen when nothing happens.
const MAX_SLEEP_NS: i64 = 5_000_000;

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Wall-clock seconds to run (default: the scenario's `duration_s`).
    pub duration_s: Option<f64>,
    pub seed: Option<u64>,
    /// An interactive shell in UE 0's namespace; the emulation ends when it exits.
    pub shell: bool,
}

/// What [`emulate`] reports about every 100 ms.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub elapsed_s: f64,
    pub duration_s: f64,
    /// Packets that entered the model so far.
    pub packets: u64,
}

/// How often the progress callback is called.
const PROGRESS_EVERY_NS: i64 = 100_000_000;

/// Where a packet came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Dn,
    Ue(u32),
}

/// A packet inside the model: its bytes and when it entered.
struct Held {
    t_in: i64,
    bytes: Vec<u8>,
}

/// Forwards events to the writer and notes which packets the model dropped (their bytes are
/// freed).
struct Tap<'a> {
    w: &'a mut RunWriter,
    dropped: &'a mut Vec<u64>,
}

impl Sink for Tap<'_> {
    fn packet(&mut self, ev: PacketEvent) {
        if ev.point == Point::Drop {
            self.dropped.push(ev.pkt);
        }
        self.w.packet(ev);
    }
    fn slot(&mut self, ev: SlotEvent) {
        self.w.slot(ev);
    }
    fn control(&mut self, ev: ControlEvent) {
        self.w.control(ev);
    }
}

/// (direction, protocol, source, destination, ports): one flow.
type FlowKey = (bool, u8, IpAddr, IpAddr, u16, u16);

/// The addresses, protocol and ports of an IP packet, when it is one.
fn five_tuple(p: &[u8]) -> Option<(u8, IpAddr, IpAddr, u16, u16)> {
    let v = p.first()? >> 4;
    let (proto, src, dst, l4): (u8, IpAddr, IpAddr, &[u8]) = match v {
        4 if p.len() >= 20 => {
            let ihl = usize::from(p[0] & 0x0f) * 4;
            let frag_offset = u16::from_be_bytes([p[6], p[7]]) & 0x1fff;
            let l4 = if frag_offset == 0 { p.get(ihl..).unwrap_or(&[]) } else { &[] };
            let s: [u8; 4] = p[12..16].try_into().ok()?;
            let d: [u8; 4] = p[16..20].try_into().ok()?;
            (p[9], s.into(), d.into(), l4)
        }
        6 if p.len() >= 40 => {
            let s: [u8; 16] = p[8..24].try_into().ok()?;
            let d: [u8; 16] = p[24..40].try_into().ok()?;
            (p[6], s.into(), d.into(), &p[40..])
        }
        _ => return None,
    };
    let ports = if matches!(proto, 6 | 17) && l4.len() >= 4 {
        (u16::from_be_bytes([l4[0], l4[1]]), u16::from_be_bytes([l4[2], l4[3]]))
    } else {
        (0, 0)
    };
    Some((proto, src, dst, ports.0, ports.1))
}

/// An ICMP or ICMPv6 echo request (`true`) or reply (`false`) and its identifier and sequence
/// number.
fn echo(p: &[u8]) -> Option<(bool, u16, u16)> {
    let (proto, l4) = match p.first()? >> 4 {
        4 if p.len() >= 20 => (p[9], p.get(usize::from(p[0] & 0x0f) * 4..)?),
        6 if p.len() >= 48 => (p[6], &p[40..]),
        _ => return None,
    };
    let request = match (proto, *l4.first()?) {
        (1, 8) | (58, 128) => true,
        (1, 0) | (58, 129) => false,
        _ => return None,
    };
    let f = |o: usize| Some(u16::from_be_bytes([*l4.get(o)?, *l4.get(o + 1)?]));
    Some((request, f(4)?, f(6)?))
}

/// `CLOCK_MONOTONIC` in ns: the emulator's clock, and the tracepoints' (`trace_clock` mono).
fn mono_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(2) fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// How often the TCP tracepoint's pipe is read.
const TCP_READ_EVERY_NS: i64 = 10_000_000;

/// A `tcp_probe` sample of an emulated socket as a `tcp_info` control row at emulator time `t`
/// (`value`: congestion window in segments; `sn`: SND.UNA; `dir`: the way the socket sends).
fn tcp_row(s: &TcpSample, t: i64, ue_of: &HashMap<IpAddr, u32>) -> Option<ControlEvent> {
    let dn = |a: IpAddr| a == IpAddr::V4(netns::DN_ADDR4) || a == IpAddr::V6(netns::DN_ADDR6);
    let (local, remote) = (s.src.ip(), s.dst.ip());
    let (node, dir, ue) = match (ue_of.get(&local), dn(local)) {
        (Some(&u), _) => (Node::Ue, Dir::Ul, Some(u)),
        (None, true) => (Node::Dn, Dir::Dl, ue_of.get(&remote).copied()),
        (None, false) => return None,
    };
    Some(ControlEvent {
        t_ns: t,
        node,
        layer: Layer::App,
        kind: "tcp_info",
        dir: Some(dir),
        ue,
        drb: None,
        sn: Some(i64::from(s.snd_una)),
        value: Some(f64::from(s.snd_cwnd)),
        detail: Some(
            json!({
                "src": s.src.to_string(), "dst": s.dst.to_string(), "cwnd": s.snd_cwnd, "ssthresh": s.ssthresh,
                "srtt_us": s.srtt_us, "snd_wnd": s.snd_wnd, "rcv_wnd": s.rcv_wnd, "snd_nxt": s.snd_nxt,
                "data_len": s.data_len,
            })
            .to_string(),
        ),
    })
}

/// Lateness of the model's actions, in µs buckets up to 1 s.
struct Lateness {
    counts: Vec<u64>,
    over: u64,
    n: u64,
    max_ns: i64,
}

impl Lateness {
    fn new() -> Self {
        Lateness { counts: vec![0; 1_000_000], over: 0, n: 0, max_ns: 0 }
    }
    fn add(&mut self, ns: i64) {
        let ns = ns.max(0);
        self.n += 1;
        self.max_ns = self.max_ns.max(ns);
        match self.counts.get_mut((ns / 1000) as usize) {
            Some(c) => *c += 1,
            None => self.over += 1,
        }
    }
    /// The `q` quantile in µs (upper bound of its bucket).
    fn quantile_us(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((self.n as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(i as u64 + 1);
            }
        }
        Some(1_000_000)
    }
}

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
    let (mut stack, _, _) = scout_sim::build(loaded, seed, duration)?;
    let n_ues = stack.nof_ues() as u32;
    netns::remove_stale()?;
    let mut topo = Topology::create(n_ues)?;
    let names: Vec<String> = topo.namespaces().map(str::to_string).collect();
    let slices: Vec<String> = loaded.scenario.core.slices.iter().map(|s| s.name.clone()).collect();
    let clock = json!({"name": "emulator", "offset_ns": 0, "note": "CLOCK_MONOTONIC since the emulation started; model time is wall time"});
    let mut meta = scout_sim::run_meta(loaded, "emulator", seed, duration, clock);
    meta["emulator"] = json!({
            "namespaces": names,
            "device": netns::DEVICE, "mtu": netns::MTU,
            "dn": {"ipv4": netns::DN_ADDR4.to_string(), "ipv6": netns::DN_ADDR6.to_string()},
            "ues": (0..n_ues).map(|i| json!({"ue": i, "ipv4": netns::ue_addr4(i).to_string(), "ipv6": netns::ue_addr6(i).to_string()})).collect::<Vec<_>>(),
    });
    let mut w = RunWriter::create(out, meta, &slices)?;
    let mut apps = Apps::new(&loaded.scenario.apps, out, &names, opts.shell);
    ready(&names);

    // Timer slack of 1 ns: `ppoll` wakes when asked, not up to 50 µs later.
    // SAFETY: prctl(2) with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    // A real-time priority, where allowed, so that a slot is not late because other work (the
    // applications themselves) holds the core; the kernel's RT throttling (95 % of each second by
    // default) keeps the machine responsive whatever the loop does.
    // SCHED_RESET_ON_FORK: the applications the loop starts run as ordinary processes.
    let param = libc::sched_param { sched_priority: REALTIME_PRIORITY };
    // SAFETY: sched_setscheduler(2) of the calling thread with a valid parameter.
    let realtime = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param) } == 0;
    let ue_of: HashMap<IpAddr, u32> =
        (0..n_ues).flat_map(|i| [(IpAddr::V4(netns::ue_addr4(i)), i), (IpAddr::V6(netns::ue_addr6(i)), i)]).collect();
    let mut fds: Vec<libc::pollfd> = std::iter::once(&topo.dn)
        .chain(topo.ues.iter())
        .map(|e| libc::pollfd { fd: e.tun.as_ref().map_or(-1, |t| t.raw_fd()), events: libc::POLLIN, revents: 0 })
        .collect();
    let mut flows: HashMap<FlowKey, u32> = HashMap::new();
    let mut flows_json: Vec<Value> = Vec::new();
    let mut held: HashMap<u64, Held> = HashMap::new();
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut scratch = vec![0u8; 65_536];
    let mut inbound: VecDeque<(i64, Side, Vec<u8>)> = VecDeque::new();
    let mut dropped: Vec<u64> = Vec::new();
    let mut delays: [Vec<i64>; 2] = [Vec::new(), Vec::new()];
    let mut late = Lateness::new();
    // Echo requests a UE sent, by (UE, identifier, sequence number): when they entered.
    let mut echoes: HashMap<(u32, u16, u16), i64> = HashMap::new();
    let mut rtts: Vec<i64> = Vec::new();
    let mut counts = Counts::default();
    let mut tcp = TcpProbe::start(topo.pid);
    let mut tcp_rows = 0u64;
    // Samples of sockets that are not the emulation's (the tracepoint sees the whole machine), or
    // from before its start.
    let mut tcp_other = 0u64;
    let mut next_tcp_read = 0;
    let t0 = mono_ns();
    let clock = || mono_ns() - t0;
    let mut now: i64;
    let mut next_progress = 0;
    let mut app_error = None;
    loop {
        now = clock();
        if now >= end {
            break;
        }
        if now >= next_progress {
            next_progress = now + PROGRESS_EVERY_NS;
            let p = Progress {
                elapsed_s: now as f64 / 1e9,
                duration_s: duration,
                packets: stack.stats.offered_pkts.iter().sum(),
            };
            if progress(p).is_break() {
                break;
            }
            match apps.poll(now) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    app_error = Some(e);
                    break;
                }
            }
        }
        // 1. Read.
        for (k, side) in std::iter::once(Side::Dn).chain((0..n_ues).map(Side::Ue)).enumerate() {
            let ep = if k == 0 { &topo.dn } else { &topo.ues[k - 1] };
            let Some(tun) = ep.tun.as_ref() else { continue };
            for _ in 0..READ_BATCH {
                // Read into one large buffer, kept in one of packet size: a packet waiting in a
                // deep RLC queue holds its own bytes, not 64 KiB.
                match tun.read(&mut scratch)? {
                    Some(n) if n > 0 => {
                        let mut buf = pool.pop().unwrap_or_default();
                        buf.clear();
                        buf.extend_from_slice(&scratch[..n]);
                        inbound.push_back((clock(), side, buf));
                    }
                    _ => break,
                }
            }
        }
        if let (Ok(probe), true) = (tcp.as_mut(), now >= next_tcp_read) {
            next_tcp_read = now + TCP_READ_EVERY_NS;
            probe.read(|s| match tcp_row(&s, s.t_mono_ns - t0, &ue_of).filter(|r| r.t_ns >= 0) {
                Some(row) => {
                    tcp_rows += 1;
                    w.control(row);
                }
                None => tcp_other += 1,
            })?;
        }
        // 2. Advance the model to `now`, packets and actions in time order.
        now = clock();
        let mut steps = 0;
        while steps < STEP_BUDGET {
            let due = stack.poll_timeout().filter(|&t| t <= now);
            let next_in = inbound.front().map(|x| x.0);
            let mut tap = Tap { w: &mut w, dropped: &mut dropped };
            let packet_first = next_in.is_some_and(|ti| due.is_none_or(|ta| ti <= ta));
            match due {
                _ if packet_first => {
                    let (t, side, bytes) = inbound.pop_front().expect("peeked");
                    if let Some(pkt) =
                        inject(&mut stack, t, side, &bytes, &ue_of, &mut flows, &mut flows_json, &mut counts, &mut tap)
                    {
                        if let (Side::Ue(ue), Some((true, id, seq))) = (side, echo(&bytes)) {
                            echoes.insert((ue, id, seq), t);
                        }
                        held.insert(pkt, Held { t_in: t, bytes });
                    } else {
                        pool.push(bytes);
                    }
                }
                Some(ta) => {
                    late.add(now - ta);
                    stack.handle_timeout_bounded(ta, 1, &mut tap);
                }
                None => break,
            }
            steps += 1;
        }
        for pkt in dropped.drain(..) {
            if let Some(h) = held.remove(&pkt) {
                pool.push(h.bytes);
            }
        }
        // 3. Deliver.
        for d in stack.take_deliveries() {
            let Some(h) = held.remove(&d.packet.pkt) else { continue };
            let dir = d.packet.dir;
            delays[usize::from(dir == Dir::Ul)].push(d.t - h.t_in);
            if dir == Dir::Dl {
                if let Some((false, id, seq)) = echo(&h.bytes) {
                    if let Some(t_req) = echoes.remove(&(d.packet.ue, id, seq)) {
                        // The same row the simulator writes for its ping flows.
                        let rtt = d.t - t_req;
                        rtts.push(rtt);
                        w.control(ControlEvent {
                            t_ns: d.t,
                            node: Node::Ue,
                            layer: Layer::App,
                            kind: "app_rtt",
                            dir: None,
                            ue: Some(d.packet.ue),
                            drb: Some(d.packet.drb),
                            sn: Some(d.packet.pkt as i64),
                            value: Some(rtt as f64),
                            detail: Some(json!({"icmp_id": id, "icmp_seq": seq}).to_string()),
                        });
                    }
                }
            }
            let ep = if dir == Dir::Ul { Some(&topo.dn) } else { topo.ues.get(d.packet.ue as usize) };
            if let Some(tun) = ep.and_then(|e| e.tun.as_ref()) {
                if !tun.write(&h.bytes)? {
                    counts.device_full += 1;
                }
            }
            pool.push(h.bytes);
        }
        // 4. Sleep until the next action or a packet.
        if steps >= STEP_BUDGET || !inbound.is_empty() {
            continue;
        }
        let wait = stack.poll_timeout().map_or(MAX_SLEEP_NS, |t| t - clock()).clamp(0, MAX_SLEEP_NS).min(end - clock());
        if wait > 0 {
            let ts = libc::timespec { tv_sec: wait / 1_000_000_000, tv_nsec: wait % 1_000_000_000 };
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd structures.
            unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
        }
    }
    let stopped_early = now < end;
    let t_end = now.min(end).max(clock().min(end));
    let in_flight = stack.finish(t_end, &mut Tap { w: &mut w, dropped: &mut dropped });
    let apps_json = apps.finish();
    let tcp_json = match tcp {
        Ok(probe) => {
            let (lines, unparsed, overruns) = probe.stop(|s| {
                match tcp_row(&s, s.t_mono_ns - t0, &ue_of).filter(|r| r.t_ns >= 0 && r.t_ns <= t_end) {
                    Some(row) => {
                        tcp_rows += 1;
                        w.control(row);
                    }
                    None => tcp_other += 1,
                }
            });
            json!({
                "source": "tcp:tcp_probe tracepoint", "rows": tcp_rows, "lines": lines, "unparsed_lines": unparsed,
                "other_sockets_or_times": tcp_other, "lost_in_kernel": overruns,
            })
        }
        Err(e) => json!({"source": null, "why_not": e.to_string()}),
    };
    let problems = topo.teardown();
    if realtime {
        // Back to an ordinary thread for the writing of the run.
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: as above.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    }
    let mut outcome = Outcome {
        stats: stack.stats.clone(),
        in_flight,
        delays_ns: delays,
        rtts_ns: rtts,
        duration_ns: t_end,
        flows: flows_json,
        cell: stack.describe(),
        slices,
    };
    let mut extra = scout_sim::closing(&mut outcome);
    extra["emulator"] = json!({
        "stopped_early": stopped_early,
        "realtime_priority": realtime.then_some(REALTIME_PRIORITY),
        "timing": {
            "actions": late.n,
            "lateness_p50_us": late.quantile_us(0.5),
            "lateness_p99_us": late.quantile_us(0.99),
            "lateness_max_us": late.max_ns / 1000,
            "over_1_s": late.over,
            "note": "when each model action ran minus when it was due (µs bucket upper bounds)",
        },
        "packets_not_ip": counts.not_ip,
        "dn_packets_to_no_ue": counts.no_ue,
        "device_queue_full": counts.device_full,
        "cleanup_problems": problems,
        "tcp_info": tcp_json,
    });
    extra["apps"] = apps_json;
    if let Some(e) = app_error {
        extra["emulator"]["app_error"] = json!(e.to_string());
    }
    extra["counts"]["skipped_inputs"] = json!({
        "packets_not_ip": counts.not_ip,
        "dn_packets_to_no_ue": counts.no_ue,
    });
    Ok(w.finish(extra)?)
}

#[derive(Default)]
struct Counts {
    not_ip: u64,
    no_ue: u64,
    device_full: u64,
}

/// Puts one packet read from `side`'s device into the model at `t`; its packet id, or `None`
/// when it is not IP or (from the DN) addressed to no UE.
#[allow(clippy::too_many_arguments)]
fn inject(
    stack: &mut Stack,
    t: i64,
    side: Side,
    bytes: &[u8],
    ue_of: &HashMap<IpAddr, u32>,
    flows: &mut HashMap<FlowKey, u32>,
    flows_json: &mut Vec<Value>,
    counts: &mut Counts,
    sink: &mut Tap,
) -> Option<u64> {
    let Some((proto, src, dst, sp, dp)) = five_tuple(bytes) else {
        counts.not_ip += 1;
        return None;
    };
    let (ue, ul) = match side {
        Side::Ue(i) => (i, true),
        Side::Dn => match ue_of.get(&dst) {
            Some(&i) => (i, false),
            None => {
                counts.no_ue += 1;
                return None;
            }
        },
    };
    // Every packet rides the UE's first DRB (QoS rules that map flows to other DRBs: not yet).
    let drb_idx = 0;
    let n = flows.len() as u32;
    let flow = *flows.entry((ul, proto, src, dst, sp, dp)).or_insert_with(|| {
        let kind = match proto {
            1 => "icmp",
            58 => "icmpv6",
            6 => "tcp",
            17 => "udp",
            _ => "ip",
        };
        flows_json.push(json!({
            "flow": n, "type": kind, "ue": ue, "dir": if ul { "ul" } else { "dl" }, "drb": drb_idx + 1,
            "src": src.to_string(), "dst": dst.to_string(), "sport": sp, "dport": dp, "protocol": proto,
        }));
        n
    });
    let len = bytes.len() as u32;
    Some(if ul {
        stack.send_ul(t, flow, ue, drb_idx, len, sink)
    } else {
        stack.send_dl(t, flow, ue, drb_idx, len, sink)
    })
}
