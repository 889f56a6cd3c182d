//! The wall-clock driver: the model of `scout-ran`, built from a scenario exactly as the simulator
//! builds it, stepped on `CLOCK_MONOTONIC` with real packets.
//!
//! One loop, on a thread of its own (`scout-datapath`):
//!
//! 1. read what the TUN devices hold, each packet stamped with the time it was read — but only
//!    while reading is open (below);
//! 2. advance the model to now, one action at a time, with the packets read merged in by their
//!    time: a packet read at `t` enters the model before any action due after `t`, so the model
//!    sees events in time order even when it runs late; at most [`STEP_BUDGET`] steps before the
//!    devices are read again (a late slot cannot starve packet I/O);
//! 3. hand each packet the model delivered to the device writer ([`crate::egress`]), for the
//!    device on the other side;
//! 4. sleep in `ppoll` until the next action is due or (while reading is open) a device is
//!    readable, spinning through the last `SPIN_NS` before a slot (the kernel wakes a sleeper
//!    late).
//!
//! Reading is open until [`READ_GUARD_NS`] before the next slot (the slot keeps its appointment),
//! while no action is overdue by more than [`ADMIT_LAG_NS`] (the model's work comes before new
//! packets), while the loop's [`Admission`] credit covers the work a packet brings (a burst read
//! at once would land its work on the slots of the next milliseconds), and while the event writer
//! is not behind (the loop would soon wait for it). What the loop does not
//! take in waits in the devices' queues, where the kernel's TCP sees a slower link, instead of
//! every later slot running late. The lateness of every slot (when it ran, minus when it was due),
//! of every model action and of every packet written (when written, minus when the model delivered
//! it) is measured: the emulator's timing error, in `run.json` `emulator.timing`.
//!
//! Three more threads: `scout-egress` writes the delivered packets to the devices, `scout-tcpinfo`
//! reads the TCP tracepoints and hands their rows over, and the writer's thread turns rows into
//! Parquet; the caller's thread starts the applications and reports progress.

use std::collections::VecDeque;
use std::io;
use std::net::IpAddr;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender};

use scout_events::writer::RunWriter;
use scout_events::{ControlEvent, Dir, Layer, Node, PacketEvent, Point, Sink, SlotEvent};
use scout_ran::stack::{Offer, Stack};
use scout_sim::delays::Delays;
use scout_sim::scenario::Loaded;
use scout_sim::Outcome;
use serde_json::{json, Value};

use crate::apps::Apps;
use crate::egress::{self, Egress, Out};
use crate::feed::Feed;
use crate::iperf3;
use crate::netns::{self, Topology};
use crate::offload::{self, Partial, VnetHdr, VNET_HDR_LEN};
use crate::packet::{echo, ecn, five_tuple, set_ce, udp4, Flows, ANBR_PORT};
use crate::qos::QosRules;
use crate::tcp::{TcpProbe, TcpRows};
use crate::thread;
use crate::timing::{mono_ns, Admission, Lateness, LongTurns};
use crate::EmuError;

/// Model steps between two reads of the devices.
pub const STEP_BUDGET: usize = 256;

/// Packets read from one device before the others are read.
const READ_BATCH: usize = 64;

/// Reading stops this long before the next slot is due, so that what was read enters the model
/// (and the actions it starts run) before the slot does.
pub const READ_GUARD_NS: i64 = 25_000;

/// The devices are not read while a model action is overdue by more than this.
pub const ADMIT_LAG_NS: i64 = 20_000;

/// The driver thread's `SCHED_FIFO` priority (1–99), where the process may have one: above
/// ordinary work, below the kernel's own real-time threads (50).
pub const REALTIME_PRIORITY: i32 = 10;

/// The device writer's: above the applications, below the model's slots.
pub const EGRESS_PRIORITY: i32 = 9;

/// The last stretch of a sleep before a slot, spent spinning on the clock (the kernel's wake-up
/// comes late). Only before slots: spinning before every action took, under load, the CPU time
/// the applications and the event writer needed (four iperf3 streams: slots late p99 0.25 ms
/// with it, 0.1 ms without).
const SPIN_NS: i64 = 20_000;

/// A sleep shorter than this is spun instead (see [`Datapath::sleep`]): with it the data path's
/// sleeps under load fell from 11 k to 3 k a second and its slots' median lateness from 14 to 7 µs
/// (bench/RESULTS.md).
const MIN_SLEEP_NS: i64 = 30_000;

/// Short sleeps are spun only while the loop's thread used less than this share of its CPU in
/// the last window (spinning included).
const SPIN_CPU_MAX: f64 = 0.92;

/// While spinning with reading open, how often the devices are looked at (a zero-timeout `ppoll`,
/// some 0.25 µs).
const SPIN_POLL_NS: i64 = 4_000;

/// While the loop was busy less than this share of the last window, it spins before every
/// action, not only before slots (an idle cell's ping sees one wake-up less).
const SPIN_ALL_BELOW: f64 = 0.25;

/// How often the loop looks again whether the event writer has caught up, at most.
const BEHIND_RECHECK_NS: i64 = 100_000;

/// The longest sleep: how often a stop request is seen when nothing happens.
const MAX_SLEEP_NS: i64 = 5_000_000;

/// How often the progress callback is called and the applications looked after.
const PROGRESS_EVERY_NS: i64 = 100_000_000;
/// How often the events so far are made durable (closed Parquet parts, `run.json` counts).
const CHECKPOINT_EVERY_NS: i64 = 1_000_000_000;

/// How often the TCP tracepoints' pipe is read (by a thread of its own).
const TCP_READ_EVERY_NS: i64 = 10_000_000;

/// TCP rows the data path writes per turn of its loop, at most (a few µs: the rows come from the
/// tracepoint thread in batches of up to 10 ms, which would otherwise make a slot late).
const TCP_ROWS_PER_TURN: usize = 32;

#[derive(Clone, Debug)]
pub struct Options {
    /// Wall-clock seconds to run (default: the scenario's `duration_s`).
    pub duration_s: Option<f64>,
    pub seed: Option<u64>,
    /// An interactive shell in UE 0's namespace; the emulation ends when it exits.
    pub shell: bool,
    /// TUN devices with TCP segmentation and checksum offloads (the default; `false`: one
    /// packet per read and write).
    pub offload: bool,
    /// The `scout-upf` executable, for slices whose scenario asks for a real UPF
    /// (`core.slices[].upf_process`).
    pub upf_binary: Option<std::path::PathBuf>,
    /// Run `scout probe` on every real UPF's N3, N6 and N4 during the emulation, into the run
    /// directory `upf/` inside the run.
    pub probe: bool,
    /// Capture every real UPF's N3, N6 and N4 into pcap files in `capture/` inside the run.
    pub capture: bool,
    /// A tap that sees every event as it is written (the live view, `scout-live`).
    pub live: Option<scout_events::tap::SharedTap>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            duration_s: None,
            seed: None,
            shell: false,
            offload: true,
            upf_binary: None,
            probe: false,
            capture: false,
            live: None,
        }
    }
}

/// What [`emulate`] reports about every 100 ms.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub elapsed_s: f64,
    pub duration_s: f64,
    /// Packets that entered the model so far.
    pub packets: u64,
}

/// Where a packet came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Dn,
    Ue(u32),
    /// A real UPF's downlink G-PDU at the gNB's N3: to UE `ue`, with the QFI it carried.
    Core {
        ue: u32,
        qfi: Option<u8>,
    },
}

/// A packet inside the model: its bytes, when it entered and where its checksum is left for the
/// kernel to complete (a segment of a super-packet).
struct Held {
    t_in: i64,
    bytes: Vec<u8>,
    partial: Partial,
}

/// Forwards events to the writer and notes which packets the model dropped (their bytes are
/// freed).
struct Tap<'a> {
    w: &'a mut RunWriter,
    dropped: &'a mut Vec<u64>,
    /// The UEs' live feeds (`crate::feed`).
    feed: &'a mut Feed,
}

impl Sink for Tap<'_> {
    fn packet(&mut self, ev: PacketEvent) {
        if ev.point == Point::Drop {
            self.dropped.push(ev.pkt);
        }
        self.w.packet(ev);
    }
    fn slot(&mut self, ev: SlotEvent) {
        self.feed.slot(&ev);
        self.w.slot(ev);
    }
    fn control(&mut self, ev: ControlEvent) {
        self.feed.control(&ev);
        self.w.control(ev);
    }
}

/// Packets read from the devices that the model did not take.
#[derive(Default)]
struct Counts {
    not_ip: u64,
    no_ue: u64,
    /// Super-packets of a kind the emulator does not cut (not TCP, or malformed).
    gso_refused: u64,
    /// Reads from the devices, and the packets they held once cut.
    reads: u64,
    /// Times reading stopped because the event writer was behind (and whether it was at the
    /// last read, to count each time once).
    writer_behind: u64,
    was_behind: bool,
    /// Packets the model marked Congestion Experienced whose IP header was written CE.
    ce_marked: u64,
    /// ANBR recommendations handed to the UEs' applications.
    anbr_sent: u64,
    /// ANBR queries from the UEs' applications: taken by the UE's MAC, refused (no ANBR on the
    /// bearer, bitRateQueryProhibitTimer running, one waiting), not understood.
    anbr_queries: u64,
    anbr_queries_refused: u64,
    anbr_query_invalid: u64,
    /// The gNB's N3 towards real UPFs: G-PDUs received; datagrams that are not G-PDUs, or
    /// whose TEID is no UE's of that UPF's slice; uplink packets not sent (not IPv4 — the UPF
    /// forwards IPv4 — or the socket's queue full).
    n3_gpdus: u64,
    n3_not_gpdu: u64,
    n3_unknown_teid: u64,
    n3_ul_sent: u64,
    n3_ul_not_ipv4: u64,
    n3_ul_send_failed: u64,
}

/// The model, the devices and what lies between them: one step of the loop at a time.
struct Datapath<'t> {
    stack: Stack,
    w: RunWriter,
    feed: Feed,
    topo: &'t Topology,
    ue_of: crate::netns::UeOf,
    flows: Flows,
    /// The bytes of each packet in the model, by its id (foldhash: SipHash was 1.5 % of the
    /// data path).
    held: foldhash::HashMap<u64, Held>,
    /// Packet buffers to reuse, and the one every read lands in first.
    pool: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    /// Packets read, with the time they were read, not yet in the model.
    inbound: VecDeque<(i64, Side, Vec<u8>, Partial)>,
    /// The devices still to be read in this round of [`Datapath::read`] (kept for its buffer).
    open: Vec<usize>,
    /// Where the packets the model delivered go: the device writer's thread, or written at once.
    egress: Egress<'t>,
    qos: QosRules,
    dropped: Vec<u64>,
    /// Each delivered packet's delay through the model, DL and UL: histograms of fixed size (the
    /// run's summary; a vector of every delay grew without bound and took page faults here).
    delays: [Delays; 2],
    /// Lateness of every model action, of every slot, of every packet written.
    late: Lateness,
    slot_late: Lateness,
    long_turns: LongTurns,
    /// What the loop may take in.
    admit: Admission,
    /// Echo requests a UE sent, by (UE, identifier, sequence number): when they entered.
    echoes: foldhash::HashMap<(u32, u16, u16), i64>,
    rtts: Vec<i64>,
    counts: Counts,
    /// Rows of the TCP tracepoints, from their thread, and those received not yet written.
    tcp_in: Option<Receiver<Vec<ControlEvent>>>,
    tcp_pending: VecDeque<ControlEvent>,
    /// `CLOCK_MONOTONIC` at the emulation's start.
    t0: i64,
    /// The gNB's N3 links to real UPFs, and which link serves each slice.
    core: Vec<crate::upf::CoreLink>,
    core_of_slice: Vec<Option<usize>>,
    /// A G-PDU's bytes on the way out.
    gpdu: Vec<u8>,
}

impl Datapath<'_> {
    fn clock(&self) -> i64 {
        mono_ns() - self.t0
    }

    /// Step 1 of the loop: reads what the devices hold, each packet stamped with the time it was
    /// read, a packet from each device in turn (at most [`READ_BATCH`] from each), until `until`.
    fn read(&mut self, until: i64) -> io::Result<()> {
        // Nor while the event writer is behind: the loop would soon wait for it.
        let behind = self.w.behind();
        self.counts.writer_behind += u64::from(behind && !self.counts.was_behind);
        self.counts.was_behind = behind;
        if behind {
            return Ok(());
        }
        let mut open = std::mem::take(&mut self.open);
        open.clear();
        open.extend(0..=self.topo.ues.len() + self.core.len());
        let mut result = Ok(());
        'rounds: for _ in 0..READ_BATCH {
            let mut i = 0;
            while i < open.len() {
                let now = self.clock();
                if now >= until || !self.admit.open(now) {
                    break 'rounds;
                }
                let before = self.inbound.len();
                match self.read_one(open[i]) {
                    Ok(true) => {
                        self.admit.took(self.inbound.len() - before);
                        i += 1;
                    }
                    Ok(false) => _ = open.remove(i),
                    Err(e) => {
                        result = Err(e);
                        break 'rounds;
                    }
                }
            }
            if open.is_empty() {
                break;
            }
        }
        self.open = open;
        result
    }

    /// Reads one packet from device `dev` (the DN's, then each UE's) into `inbound`; returns
    /// whether there was one.
    fn read_one(&mut self, dev: usize) -> io::Result<bool> {
        if dev > self.topo.ues.len() {
            return self.read_n3(dev - self.topo.ues.len() - 1);
        }
        let side = if dev == 0 { Side::Dn } else { Side::Ue(dev as u32 - 1) };
        let Some(tun) = self.topo.device(dev) else { return Ok(false) };
        // Read into one large buffer, kept in one of packet size: a packet waiting in a deep RLC
        // queue holds its own bytes, not 64 KiB.
        let n = match tun.read(&mut self.scratch)? {
            Some(n) if n > 0 => n,
            _ => return Ok(false),
        };
        self.counts.reads += 1;
        let t = mono_ns() - self.t0;
        let (pool, inbound) = (&mut self.pool, &mut self.inbound);
        let mut take = |headers: &[u8], payload: &[u8], partial: Partial| {
            let mut buf = pool.pop().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(headers);
            buf.extend_from_slice(payload);
            inbound.push_back((t, side, buf, partial));
        };
        if !tun.vnet {
            take(&self.scratch[..n], &[], None);
            return Ok(true);
        }
        // A super-packet enters the model as the segments the kernel would have sent.
        let refused = match VnetHdr::parse(&self.scratch[..n]) {
            Some(h) => offload::segment(&h, &self.scratch[VNET_HDR_LEN..n], take).is_err(),
            None => true,
        };
        self.counts.gso_refused += u64::from(refused);
        Ok(true)
    }

    /// Reads one datagram from the gNB's N3 link `k` to a real UPF: a downlink G-PDU's inner
    /// packet goes to `inbound` for the UE its TEID names; returns whether there was one.
    fn read_n3(&mut self, k: usize) -> io::Result<bool> {
        let n = match self.core[k].sock.recv(&mut self.scratch) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => return Ok(false),
            Err(e) => return Err(e),
        };
        self.counts.reads += 1;
        let t = mono_ns() - self.t0;
        let g = match scout_wire::gtpu::decode(&self.scratch[..n]) {
            Ok(g) if g.msg_type == scout_wire::gtpu::GTPU_G_PDU => g,
            _ => {
                self.counts.n3_not_gpdu += 1;
                return Ok(true);
            }
        };
        let ue = g.teid & 0x0fff_ffff;
        let ours = g.teid == crate::upf::gnb_teid(ue)
            && (ue as usize) < self.topo.ues.len()
            && self.core_of_slice.get(usize::from(self.stack.slice_of(ue))) == Some(&Some(k));
        if !ours {
            self.counts.n3_unknown_teid += 1;
            return Ok(true);
        }
        self.counts.n3_gpdus += 1;
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(g.payload);
        self.inbound.push_back((t, Side::Core { ue, qfi: g.qfi }, buf, None));
        Ok(true)
    }

    /// Until when the devices may be read: [`READ_GUARD_NS`] before the next slot is due, and only
    /// while no model action is overdue by more than [`ADMIT_LAG_NS`] (else never: the model's
    /// work comes before new packets, so the loop catches up before it takes more in).
    fn read_until(&self) -> i64 {
        let slot = self.stack.next_slot_at() - READ_GUARD_NS;
        self.stack.poll_timeout().map_or(slot, |due| slot.min(due + ADMIT_LAG_NS))
    }

    /// Step 2: runs the model up to `now`, packets and actions in time order, at most `STEP_BUDGET`
    /// steps; returns whether the budget ran out.
    fn advance(&mut self, now: i64) -> bool {
        for _ in 0..STEP_BUDGET {
            let due = self.stack.poll_timeout().filter(|&t| t <= now);
            let next_in = self.inbound.front().map(|x| x.0);
            if next_in.is_some_and(|ti| due.is_none_or(|ta| ti <= ta)) {
                let (t, side, bytes, partial) = self.inbound.pop_front().expect("peeked");
                self.inject(t, side, bytes, partial);
            } else if let Some(ta) = due {
                self.late.add(now - ta);
                let slot_due = self.stack.next_slot_at();
                let started = if ta == slot_due { self.clock() } else { 0 };
                let mut tap = Tap { w: &mut self.w, dropped: &mut self.dropped, feed: &mut self.feed };
                self.stack.handle_timeout_bounded(ta, 1, &mut tap);
                if self.stack.next_slot_at() != slot_due {
                    self.slot_late.add(started - slot_due);
                }
            } else {
                self.free_dropped();
                return false;
            }
        }
        self.free_dropped();
        true
    }

    fn free_dropped(&mut self) {
        for pkt in self.dropped.drain(..) {
            if let Some(h) = self.held.remove(&pkt) {
                self.pool.push(h.bytes);
            }
        }
    }

    /// A datagram from UE `ue`'s namespace to the DN's address at port ANBR_PORT: its
    /// application's bit rate query (docs/l4s-anbr.md), one JSON object
    /// `{"bit_rate_bps": N, "drb": D}` (`drb` from 1, default 1), handed to the UE's MAC.
    fn anbr_query(&mut self, t: i64, ue: u32, bytes: &[u8]) {
        let ihl = usize::from(bytes[0] & 0x0f) * 4;
        let v = bytes.get(ihl + 8..).and_then(|p| serde_json::from_slice::<serde_json::Value>(p).ok());
        let asked = v.as_ref().and_then(|v| Some((v["bit_rate_bps"].as_u64()?, v["drb"].as_u64().unwrap_or(1))));
        let Some((bps, drb)) = asked.filter(|&(_, d)| d >= 1) else {
            self.counts.anbr_query_invalid += 1;
            return;
        };
        let mut tap = Tap { w: &mut self.w, dropped: &mut self.dropped, feed: &mut self.feed };
        if self.stack.query_bit_rate(t, ue, drb as usize - 1, bps, &mut tap) {
            self.counts.anbr_queries += 1;
        } else {
            self.counts.anbr_queries_refused += 1;
        }
    }

    /// Puts one packet read from `side`'s device into the model at `t`: from a UE at its PDCP,
    /// from the DN at N6 (to the UE its destination names). A packet that is not IP, or from the
    /// DN to no UE, is counted and freed.
    fn inject(&mut self, t: i64, side: Side, bytes: Vec<u8>, partial: Partial) {
        let Some(tuple) = five_tuple(&bytes) else {
            self.counts.not_ip += 1;
            self.pool.push(bytes);
            return;
        };
        if let (Side::Ue(i), (17, _, IpAddr::V4(netns::DN_ADDR4), _, ANBR_PORT)) = (side, tuple) {
            // The UE's application asks its modem for a recommendation: not a packet to send.
            self.anbr_query(t, i, &bytes);
            self.pool.push(bytes);
            return;
        }
        let (ue, ul) = match side {
            Side::Ue(i) => (i, true),
            Side::Core { ue, qfi } => {
                // The real UPF chose the QoS flow: the UE's DRB of that QFI (its first when none).
                let drb_idx = qfi.and_then(|q| self.stack.drb_index(ue, q)).unwrap_or(0);
                let flow = self.flows.id(false, ue, drb_idx, tuple);
                let len = bytes.len() as u32;
                let mut tap = Tap { w: &mut self.w, dropped: &mut self.dropped, feed: &mut self.feed };
                let offer = Offer::new(Dir::Dl, flow, ue, drb_idx, len).ecn(ecn(&bytes));
                let pkt = self.stack.arrive_n3(t, offer, &mut tap);
                self.held.insert(pkt, Held { t_in: t, bytes, partial });
                return;
            }
            Side::Dn => match self.ue_of.get(&tuple.2) {
                Some(&i) => (i, false),
                None => {
                    self.counts.no_ue += 1;
                    self.pool.push(bytes);
                    return;
                }
            },
        };
        // The scenario's QoS rules pick the DRB (its first when none matches).
        let stack = &self.stack;
        let drb_idx = self.qos.drb(tuple, ul, |q| stack.drb_index(ue, q));
        let flow = self.flows.id(ul, ue, drb_idx, tuple);
        let len = bytes.len() as u32;
        let mut tap = Tap { w: &mut self.w, dropped: &mut self.dropped, feed: &mut self.feed };
        let dir = if ul { Dir::Ul } else { Dir::Dl };
        let pkt = self.stack.send(t, Offer::new(dir, flow, ue, drb_idx, len).ecn(ecn(&bytes)), &mut tap);
        if let (true, Some((true, id, seq))) = (ul, echo(&bytes)) {
            self.echoes.insert((ue, id, seq), t);
        }
        self.held.insert(pkt, Held { t_in: t, bytes, partial });
    }

    /// Step 3: hands each packet the model delivered to the device writer, for the device on
    /// the other side (or writes a few itself: [`Egress`]); takes back the buffers written.
    fn deliver(&mut self) {
        let mut batch = Vec::new();
        for d in self.stack.take_deliveries() {
            let Some(mut h) = self.held.remove(&d.packet.pkt) else { continue };
            let dir = d.packet.dir;
            // The model marked it Congestion Experienced (L4S): so does its IP header.
            if d.packet.ecn == 3 && ecn(&h.bytes) != 3 && set_ce(&mut h.bytes) {
                self.counts.ce_marked += 1;
            }
            self.delays[usize::from(dir == Dir::Ul)].push(d.t - h.t_in);
            if let (Dir::Dl, Some((false, id, seq))) = (dir, echo(&h.bytes)) {
                if let Some(t_req) = self.echoes.remove(&(d.packet.ue, id, seq)) {
                    // The same row the simulator writes for its ping flows.
                    let rtt = d.t - t_req;
                    self.rtts.push(rtt);
                    self.w.control(ControlEvent {
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
            let dev = if dir == Dir::Ul { 0 } else { 1 + d.packet.ue as usize };
            batch.push(Out { dev, t: d.t, bytes: h.bytes, partial: h.partial });
        }
        // Uplink packets of real UPFs' slices: into their tunnels, to the UPF, at once.
        for d in self.stack.take_handoffs() {
            let Some(mut h) = self.held.remove(&d.packet.pkt) else { continue };
            let link = self.core_of_slice.get(usize::from(d.packet.slice)).copied().flatten();
            match (link, h.bytes.first().map(|b| b >> 4)) {
                (Some(k), Some(4)) => {
                    offload::complete_checksum(&mut h.bytes, h.partial);
                    let ue = d.packet.ue;
                    let teid = crate::upf::upf_teid(ue);
                    let pdu = scout_wire::gtpu::UL_PDU_SESSION_INFORMATION;
                    scout_wire::gtpu::encap(&mut self.gpdu, teid, pdu, d.packet.qfi, &h.bytes);
                    let link = &self.core[k];
                    match link.sock.send_to(&self.gpdu, link.upf_n3) {
                        Ok(_) => self.counts.n3_ul_sent += 1,
                        Err(_) => self.counts.n3_ul_send_failed += 1,
                    }
                }
                _ => self.counts.n3_ul_not_ipv4 += 1,
            }
            self.pool.push(h.bytes);
        }
        // ANBR recommendations the UEs' MACs received: to their applications, a UDP datagram each
        // to port ANBR_PORT from the DN's address, one JSON line.
        for r in self.stack.take_recommendations() {
            let line = json!({
                "kind": "anbr", "t_ns": r.t, "drb": r.drb + 1, "bit_rate_bps": r.bit_rate_bps,
                "index": r.index, "multiplier": r.multiplier, "answer": r.answer,
            })
            .to_string();
            let bytes = udp4(netns::DN_ADDR4, netns::ue_addr4(r.ue), ANBR_PORT, line.as_bytes());
            self.counts.anbr_sent += 1;
            batch.push(Out { dev: 1 + r.ue as usize, t: r.t, bytes, partial: None });
        }
        self.egress.send(batch, &mut self.pool);
    }

    /// Writes a few of the TCP tracepoints' rows (all of them with `all`).
    fn write_tcp_rows(&mut self, all: bool) {
        let limit = if all { usize::MAX } else { TCP_ROWS_PER_TURN };
        for _ in 0..limit {
            if self.tcp_pending.is_empty() {
                match self.tcp_in.as_ref().map(|rx| rx.try_recv()) {
                    Some(Ok(batch)) => self.tcp_pending.extend(batch),
                    _ => return,
                }
            }
            match self.tcp_pending.pop_front() {
                Some(row) => self.w.control(row),
                None => return,
            }
        }
    }

    /// Step 4: sleeps until the next action is due, `end`, or — while reading is open (before
    /// [`Datapath::read_until`], with [`Admission`] credit, the event writer not behind) — a
    /// device is readable; while only the credit is lacking, until it is earned back; while the
    /// writer is behind, [`BEHIND_RECHECK_NS`] at most. Returns how long it meant to wait.
    fn sleep(&mut self, fds: &mut [libc::pollfd], end: i64) -> i64 {
        let now = self.clock();
        let mut wait =
            self.stack.poll_timeout().map_or(MAX_SLEEP_NS, |t| t - now).clamp(0, MAX_SLEEP_NS).min(end - now);
        let until = self.read_until();
        let behind = self.w.behind();
        let reading = now < until && self.admit.open(now) && !behind;
        if behind {
            wait = wait.min(BEHIND_RECHECK_NS);
        } else if now < until && !reading {
            wait = wait.min(self.admit.open_at() - now);
        }
        // The kernel wakes a sleeper late here (on this 2-vCPU VM: 19 µs on average under load,
        // p99 ~65 µs), and a sleep costs the thread some 25 µs of CPU time (timer programming,
        // two context switches, the wake-up). So the last SPIN_NS before a slot are spent
        // spinning on the clock instead, and before any action while the loop is mostly idle
        // (when it is not, spinning takes the CPU time the applications need); and a sleep
        // shorter than MIN_SLEEP_NS is not taken at all: spun, it is both cheaper and on time.
        let spin = now + wait == self.stack.next_slot_at() || self.admit.busy < SPIN_ALL_BELOW;
        let sleep = wait - if spin { SPIN_NS } else { 0 };
        let nfds = if reading { fds.len() } else { 0 };
        let mut ready = 0;
        // Not while the thread used more than SPIN_CPU_MAX of its CPU: the kernel stops a
        // real-time thread that takes more than 95 % of one (sched_rt_runtime_us), for the rest
        // of the second.
        let min_sleep = if self.admit.cpu < SPIN_CPU_MAX { MIN_SLEEP_NS } else { 0 };
        if sleep >= min_sleep {
            let ts = libc::timespec { tv_sec: sleep / 1_000_000_000, tv_nsec: sleep % 1_000_000_000 };
            // SAFETY: `fds` is a valid array of at least `nfds` pollfd structures.
            ready = unsafe { libc::ppoll(fds.as_mut_ptr(), nfds as libc::nfds_t, &ts, std::ptr::null()) };
        }
        if ready == 0 && wait > 0 {
            // Spinning while reading is open, the devices are looked at every SPIN_POLL_NS, so
            // that a packet ends the wait as it would end a sleep.
            let (at, zero) = (now + wait, libc::timespec { tv_sec: 0, tv_nsec: 0 });
            let mut next_poll = now;
            loop {
                let t = self.clock();
                if t >= at {
                    break;
                }
                if nfds > 0 && t >= next_poll {
                    next_poll = t + SPIN_POLL_NS;
                    // SAFETY: as above; a zero timeout only looks.
                    if unsafe { libc::ppoll(fds.as_mut_ptr(), nfds as libc::nfds_t, &zero, std::ptr::null()) } > 0 {
                        break;
                    }
                }
                std::hint::spin_loop();
            }
        }
        let woke = self.clock();
        self.admit.slept(woke - now, woke);
        wait
    }
}

/// What the control thread and the data path thread share.
#[derive(Default)]
struct Shared {
    /// Set by the control thread: the data path ends its loop.
    stop: AtomicBool,
    /// Packets that entered the model so far (for progress).
    packets: AtomicU64,
}

/// What the data path thread hands back.
struct Done<'t> {
    dp: Datapath<'t>,
    /// Emulator time when the loop ended.
    now: i64,
    realtime: bool,
    privileges: Value,
    error: Option<io::Error>,
}

/// The data path: after its real-time setup, drops its privileges and runs the loop until the
/// end, `Shared::stop` or an I/O error; hands everything back for the run to be written.
fn run_datapath<'t>(mut dp: Datapath<'t>, end: i64, shared: &Shared) -> Done<'t> {
    // A real-time priority, where allowed, so that a slot is not late because other work (the
    // applications themselves) holds the core.
    let realtime = thread::realtime(REALTIME_PRIORITY);
    let privileges = thread::drop_privileges();
    let mut fds: Vec<libc::pollfd> = std::iter::once(&dp.topo.dn)
        .chain(dp.topo.ues.iter())
        .map(|e| e.tun.as_ref().map_or(-1, |t| t.raw_fd()))
        .chain(dp.core.iter().map(|c| std::os::fd::AsRawFd::as_raw_fd(&c.sock)))
        .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
        .collect();
    let (mut next_checkpoint, mut next_count) = (CHECKPOINT_EVERY_NS, 0);
    let mut now;
    let error = loop {
        now = dp.clock();
        if now >= end || shared.stop.load(Ordering::Relaxed) {
            break None;
        }
        if now >= next_count {
            next_count = now + PROGRESS_EVERY_NS / 2;
            shared.packets.store(dp.stack.stats.offered_pkts.iter().sum(), Ordering::Relaxed);
        }
        if now >= next_checkpoint {
            next_checkpoint = now + CHECKPOINT_EVERY_NS;
            dp.w.checkpoint(json!({"t_ns": now}));
        }
        let until = dp.read_until();
        if let Err(e) = dp.read(until) {
            break Some(e);
        }
        dp.write_tcp_rows(false);
        let busy = dp.advance(dp.clock());
        // The feed first: an application that reads its feed before each packet has then seen
        // the RAN events that released the packet (a retransmission event is made at the
        // decoding that delivers its burst; docs/ue-view.md).
        dp.feed.poll(dp.clock());
        dp.deliver();
        if let Some(e) = dp.egress.inline.error.take() {
            break Some(e);
        }
        let asked = if !busy && dp.inbound.is_empty() { dp.sleep(&mut fds, end) } else { 0 };
        dp.long_turns.add(dp.clock() - now - asked);
    };
    dp.egress.hang_up();
    Done { dp, now, realtime, privileges, error }
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
    let (mut real_core, core_links) = if real.is_empty() {
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
    let mut names: Vec<String> = topo.namespaces().map(str::to_string).collect();
    names.extend(real_core.as_ref().map(|c| c.namespaces()).unwrap_or_default());
    let slices: Vec<String> = loaded.scenario.core.slices.iter().map(|s| s.name.clone()).collect();
    let clock = json!({"name": "emulator", "offset_ns": 0, "note": "CLOCK_MONOTONIC since the emulation started; model time is wall time"});
    let mut meta = scout_sim::run_meta(loaded, "emulator", seed, duration, clock);
    meta["emulator"] = json!({
        "namespaces": names,
        "device": netns::DEVICE, "mtu": netns::MTU,
        "dn": {"ipv4": netns::DN_ADDR4.to_string(), "ipv6": netns::DN_ADDR6.to_string()},
        "ues": (0..n_ues).map(|i| json!({"ue": i, "ipv4": netns::ue_addr4(i).to_string(), "ipv6": netns::ue_addr6(i).to_string()})).collect::<Vec<_>>(),
    });
    // Checkpointed every second: `kill -9` loses at most the last second (`scout recover`).
    // The UEs' live feeds, bound before the data path drops its privileges.
    let feed = Feed::open(out, n_ues).map_err(|e| EmuError::Setup {
        what: format!("the UEs' feed sockets in {}", crate::feed::dir(out).display()),
        message: e.to_string(),
    })?;
    meta["emulator"]["feed"] = json!(feed.paths());
    let mut w = RunWriter::create_checkpointed(out, meta, &slices)?;
    if let Some(tap) = &opts.live {
        w.set_tap(tap.clone());
    }
    // The probe on the real UPFs, attached before any application starts.
    let probe = match (&real_core, opts.probe) {
        (_, false) => None,
        (None, true) => {
            return Err(EmuError::Setup {
                what: "--probe".into(),
                message: "no slice has a real UPF to probe; accepted with core.slices[].upf_process: true".into(),
            })
        }
        (Some(core), true) => {
            let p = scout_probe::Running::start(core.probe_options(), out.join("upf")).map_err(|e| {
                EmuError::Setup { what: "--probe (scout probe on the real UPFs)".into(), message: e.to_string() }
            })?;
            Some(p)
        }
    };
    let capture =
        match (&real_core, opts.capture) {
            (_, false) => None,
            (None, true) => return Err(EmuError::Setup {
                what: "--capture".into(),
                message:
                    "no slice has a real UPF whose interfaces to capture; accepted with core.slices[].upf_process: true"
                        .into(),
            }),
            (Some(core), true) => Some(crate::capture::Capture::start(core.capture_points(&out.join("capture")))?),
        };
    let mut apps = Apps::new(&loaded.scenario.apps, out, &names, opts.shell);
    ready(&names);

    let tcp = TcpProbe::start(topo.pid);
    let (tcp_tx, tcp_rx) = std::sync::mpsc::channel();
    let t0 = mono_ns();
    let (egress, egress_side) = Egress::new(&topo, t0);
    let mut feed = feed;
    feed.start(t0, &stack.describe());
    let mut dp = Datapath {
        stack,
        w,
        feed,
        ue_of: (0..n_ues)
            .flat_map(|i| [(IpAddr::V4(netns::ue_addr4(i)), i), (IpAddr::V6(netns::ue_addr6(i)), i)])
            .collect(),
        topo: &topo,
        flows: Flows::default(),
        held: Default::default(),
        pool: Vec::new(),
        scratch: vec![0u8; VNET_HDR_LEN + 65_536],
        egress,
        qos: QosRules::new(&loaded.scenario.qos_rules),
        inbound: VecDeque::new(),
        open: Vec::new(),
        dropped: Vec::new(),
        delays: [Delays::Histogram(Default::default()), Delays::Histogram(Default::default())],
        late: Lateness::default(),
        slot_late: Lateness::default(),
        long_turns: LongTurns::default(),
        admit: Admission::new(0),
        echoes: Default::default(),
        rtts: Vec::new(),
        counts: Counts::default(),
        tcp_in: None,
        tcp_pending: VecDeque::new(),
        t0,
        core: core_links,
        core_of_slice,
        gpdu: Vec::with_capacity(65_536),
    };
    let ue_of = dp.ue_of.clone();
    let (tcp, tcp_why_not) = match tcp {
        Ok(probe) => {
            dp.tcp_in = Some(tcp_rx);
            (Some(probe), None)
        }
        Err(e) => (None, Some(e.to_string())),
    };
    // The wall-clock time of the emulator's time 0 (for iperf3 servers' own timestamps).
    let epoch_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
        - (mono_ns() - t0) as f64 / 1e9;
    // The data path runs on a thread of its own, unprivileged, and so does the device writer;
    // this thread keeps what needs root (starting the apps in their namespaces, the cleanup) and
    // talks to the caller (progress).
    let shared = Shared::default();
    let mut app_error = None;
    // Until the emulation ends: no CPU idles where a timer cannot wake the data path on time.
    let (cpu_latency, cpu_wakeup_latency) = thread::hold_cpu_wakeup_latency();
    let (done, egress, tcp) = std::thread::scope(|s| {
        let h = std::thread::Builder::new()
            .name("scout-datapath".into())
            .spawn_scoped(s, || run_datapath(dp, end, &shared))
            .expect("spawn the data path thread");
        let (topo, stop) = (&topo, &shared.stop);
        let egress = std::thread::Builder::new()
            .name("scout-egress".into())
            .spawn_scoped(s, move || {
                let realtime = thread::realtime(EGRESS_PRIORITY);
                thread::drop_privileges();
                (realtime, egress::run(topo, t0, egress_side, stop))
            })
            .expect("spawn the device writer's thread");
        let feed = tcp.map(|probe| {
            let (shared, ue_of) = (&shared, &ue_of);
            std::thread::Builder::new()
                .name("scout-tcpinfo".into())
                .spawn_scoped(s, move || run_tcp_feed(probe, tcp_tx, t0, ue_of, shared))
                .expect("spawn the TCP tracepoints' thread")
        });
        loop {
            let now = mono_ns() - t0;
            let packets = shared.packets.load(Ordering::Relaxed);
            let stop = progress(Progress { elapsed_s: now as f64 / 1e9, duration_s: duration, packets }).is_break()
                || match apps.poll(now) {
                    Ok(ended) => ended,
                    Err(e) => {
                        app_error = Some(e);
                        true
                    }
                };
            if stop || h.is_finished() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_nanos(PROGRESS_EVERY_NS as u64));
        }
        shared.stop.store(true, Ordering::Relaxed);
        let feed = feed.map(|f| f.join().expect("the TCP tracepoints' thread panicked"));
        // The data path hangs up on the device writer when it ends.
        let done = h.join().expect("the data path thread panicked");
        (done, egress.join().expect("the device writer's thread panicked"), feed)
    });
    // The emulation is over: the CPUs may idle again.
    drop(cpu_latency);
    let Done { mut dp, now, realtime, privileges, error } = done;
    // The data path's own writes ended its loop on their first error (`error`); the device
    // writer's thread hands its own back.
    let (egress_realtime, mut written) = egress;
    if let Some(e) = error.or(written.error.take()) {
        // Dropping `topo` tears the namespaces down (from this thread, which may).
        return Err(e.into());
    }
    let stopped_early = now < end;
    let t_end = now.min(end).max(dp.clock().min(end));
    let in_flight = dp.stack.finish(t_end, &mut Tap { w: &mut dp.w, dropped: &mut dp.dropped, feed: &mut dp.feed });
    let apps_json = apps.finish();
    let iperf3_json = iperf3_rows(&apps_json, out, epoch_s, &dp.ue_of, &mut dp.w);
    // The rows the data path had not written yet, then the pipe's last lines.
    dp.write_tcp_rows(true);
    let tcp_json = match tcp {
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
        None => json!({"source": null, "why_not": tcp_why_not}),
    };
    let (writer_waits, writer_wait_ns) = dp.w.waits();
    let Datapath {
        stack, w, flows, delays, late, slot_late, long_turns, admit, rtts, counts, qos, egress, feed, ..
    } = dp;
    let feed_json = feed.close();
    let (inline_batches, handed_over) = (egress.inline_batches, egress.handed_over);
    written.absorb(egress.inline);
    let (segments, writes) = written.segments_and_writes();
    let (write_late, device_full) = (written.late, written.device_full);
    let core_json = real_core.as_mut().map(|c| c.finish());
    // The probe last (it sees the sessions' deletion on N4), while the UPFs' namespaces exist.
    let probe_json = probe.map(|p| match p.finish() {
        Ok(m) => {
            let r = &m["probe_result"];
            json!({"run": "upf", "pairs": r["pairs"], "unmatched": r["unmatched"],
                   "unmatched_by_reason": r["unmatched_by_reason"], "ringbuf_lost": r["ringbuf_lost"],
                   "pfcp_pairs": r["pfcp"].as_array().map(|a| a.iter().filter_map(|x| x["pairs"].as_u64()).sum::<u64>()),
                   "note": "scout probe on every real UPF's n3, n6 and n4: a run of its own in upf/ (scout analyze RUN/upf)"})
        }
        Err(e) => json!({"error": e.to_string()}),
    });
    let capture_json = capture.map(|c| c.finish());
    drop(real_core);
    let mut problems = topo.teardown();
    problems.extend(stale.problems);
    let mut outcome = Outcome {
        stats: stack.stats.clone(),
        in_flight,
        delays_ns: delays,
        rtts_ns: rtts,
        duration_ns: t_end,
        flows: flows.json,
        cell: stack.describe(),
        slices,
        radio: scout_sim::radio::describe(&stack.sinr_sources(), t_end),
    };
    let mut extra = scout_sim::closing(&mut outcome);
    extra["emulator"] = json!({
        "stopped_early": stopped_early,
        "realtime_priorities": {
            "datapath": realtime.then_some(REALTIME_PRIORITY),
            "device_writer": egress_realtime.then_some(EGRESS_PRIORITY),
            "note": "SCHED_FIFO priorities of the emulator's threads (null: not granted); the event writer's thread and the applications run as ordinary threads below them",
        },
        "datapath_privileges": privileges,
        "cpu_wakeup_latency": cpu_wakeup_latency,
        "kernel_preemption": thread::kernel_preemption(),
        "timing": {
            "slots": slot_late.json(),
            "long_turns": long_turns.json(),
            "actions": late.json(),
            "packets_written": write_late.json(),
            "writes": {"batches_written_by_the_data_path": inline_batches, "batches_handed_to_the_device_writer": handed_over,
                       "note": "the data path writes a batch of deliveries itself when it holds at most 4 packets and the device writer's thread has nothing left to write; else that thread writes it"},
            "writer_waits": {"n": writer_waits, "total_us": writer_wait_ns / 1000, "note": "times the data path found the event writer's queue full and waited"},
            "writer_behind": {"n": counts.writer_behind, "note": "times the data path stopped reading the devices because the event writer's queue was half full, until it had caught up"},
            "admission": {
                "read_guard_us": READ_GUARD_NS / 1000,
                "admit_lag_us": ADMIT_LAG_NS / 1000,
                "share": Admission::SHARE,
                "burst_us": Admission::BURST_NS / 1000.0,
                "work_per_packet_ns": admit.cost_ns.round(),
                "spin_us": SPIN_NS / 1000,
                "min_sleep_us": MIN_SLEEP_NS / 1000,
                "spin_cpu_max": SPIN_CPU_MAX,
                "note": "devices are read only until read_guard_us before each slot, while no action is overdue by more than admit_lag_us, and while the loop's credit of CPU time (earned at share of the wall clock, up to burst_us) covers the measured work per packet; the last spin_us of each sleep before a slot are spent spinning, and a wait shorter than min_sleep_us is spun (the devices looked at every few µs) while the loop's thread used less than spin_cpu_max of its CPU; devices are not read while the event writer is behind (writer_behind)",
            },
            "note": "lateness in µs (bucket upper bounds): of each slot, when it ran minus when it was due; of each model action, likewise; of each packet written to a device, when written minus when the model delivered it",
        },
        "packets_not_ip": counts.not_ip,
        "dn_packets_to_no_ue": counts.no_ue,
        "device_queue_full": device_full,
        "ce_marked": counts.ce_marked,
        "anbr_sent": counts.anbr_sent,
        "anbr_queries": counts.anbr_queries,
        "anbr_queries_refused": counts.anbr_queries_refused,
        "anbr_query_invalid": counts.anbr_query_invalid,
        "qos_rules": {"packets_per_rule": qos.matched, "packets_by_default_rule": qos.default},
        "offload": json!({
            "enabled": opts.offload,
            "reads": counts.reads,
            "super_packets_refused": counts.gso_refused,
            "packets_delivered_to_offload_devices": segments,
            "device_writes": writes,
            "note": "TCP super-packets (GSO) are cut into the segments the kernel would have sent before the model sees them; a flow's segments delivered together are joined again (as GRO) on the way out",
        }),
        "cleanup_problems": problems,
        "stale_removed": {"namespaces": stale.namespaces, "trace_instances": stale.trace_instances,
                          "note": "what emulators that are gone (killed) had left, removed before this one started"},
        "core": core_json,
        "probe": probe_json,
        "capture": capture_json,
        "n3": {
            "gpdus_received": counts.n3_gpdus, "not_gpdu": counts.n3_not_gpdu, "unknown_teid": counts.n3_unknown_teid,
            "uplink_sent": counts.n3_ul_sent, "uplink_not_ipv4": counts.n3_ul_not_ipv4, "uplink_send_failed": counts.n3_ul_send_failed,
            "to_core_packets": stack.stats.to_core_pkts, "from_core_packets": stack.stats.from_core_pkts,
            "note": "the gNB's N3 towards real UPF processes (core.slices[].upf_process): the model's journeys of these slices' packets begin (downlink) and end (uplink) at the gNB's N3; the UPF's own counters are in core[].upf",
        },
        "tcp_info": tcp_json,
        "feed": feed_json,
    });
    extra["apps"] = apps_json;
    extra["emulator"]["iperf3"] = iperf3_json;
    if let Some(e) = app_error {
        extra["emulator"]["app_error"] = json!(e.to_string());
    }
    extra["counts"]["skipped_inputs"] = json!({
        "packets_not_ip": counts.not_ip,
        "dn_packets_to_no_ue": counts.no_ue,
    });
    Ok(w.finish(extra)?)
}
