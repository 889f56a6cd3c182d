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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Receiver;

use scout_events::writer::RunWriter;
use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node, PacketEvent, Point, Sink, SlotEvent};
use scout_ran::stack::{Offer, Stack};
use scout_sim::delays::Delays;
use serde_json::{json, Value};

use crate::egress::{Egress, Out};
use crate::feed::Feed;
use crate::netns::{self, Topology};
use crate::offload::{self, Partial, VnetHdr, VNET_HDR_LEN};
use crate::packet::{echo, ecn, five_tuple, set_ce, udp4, Flows, ANBR_PORT};
use crate::qos::QosRules;
use crate::thread;
use crate::timing::{mono_ns, Admission, Lateness, LongTurns};

mod run;
pub use run::emulate;

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

/// The gNB's N3 links to real UPFs, and which link serves each slice.
type CoreLinks = (Vec<crate::upf::CoreLink>, Vec<Option<usize>>);

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

impl<'t> Datapath<'t> {
    /// The data path of `stack` between `topo`'s devices, started at `t0` (`CLOCK_MONOTONIC`),
    /// writing into `w`, telling the UEs' `feed`, delivering through `egress`; it sorts the
    /// UEs' packets onto DRBs by `qos`, and sends the slices' packets that `core_of_slice` names
    /// to the real UPFs over the `core` links.
    #[allow(clippy::too_many_arguments)] // each is a part the data path is made of
    fn new(
        stack: Stack,
        w: RunWriter,
        feed: Feed,
        topo: &'t Topology,
        egress: Egress<'t>,
        qos: QosRules,
        t0: i64,
        (core, core_of_slice): CoreLinks,
    ) -> Datapath<'t> {
        let n_ues = stack.nof_ues() as u32;
        Datapath {
            stack,
            w,
            feed,
            ue_of: (0..n_ues)
                .flat_map(|i| [(IpAddr::V4(netns::ue_addr4(i)), i), (IpAddr::V6(netns::ue_addr6(i)), i)])
                .collect(),
            topo,
            flows: Flows::default(),
            held: Default::default(),
            pool: Vec::new(),
            scratch: vec![0u8; VNET_HDR_LEN + 65_536],
            egress,
            qos,
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
            core,
            core_of_slice,
            gpdu: Vec::with_capacity(65_536),
        }
    }

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
                        kind: ControlKind::AppRtt,
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
