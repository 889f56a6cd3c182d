//! The one place where layers meet: a cell (gNB CU-UP + DU), its UEs, and a UPF stage per slice.
//!
//! Downlink: DN app → N6 → UPF (executor, GTP-U encapsulation) → N3 → CU-UP GTP-U rx executor →
//! CU-UP worker (SDAP, PDCP) → F1-U executor → midhaul → DU RLC queue → MAC scheduler / HARQ → air →
//! UE RLC reassembly → UE PDCP reordering → UE app.
//! Uplink: UE app → UE PDCP → UE RLC queue → SR/BSR → UL grant → PUSCH / HARQ → DU RLC → midhaul →
//! CU-UP worker (PDCP reordering) → GTP-U executor → N3 → UPF → N6 → DN app.
//!
//! Call contract (quinn-style): the driver calls [`Stack::send_dl`] / [`Stack::send_ul`] for new
//! packets and [`Stack::handle_timeout`] whenever `now` reaches [`Stack::poll_timeout`], with `now`
//! never decreasing; it drains [`Stack::poll_delivery`] after each call. All telemetry goes to the
//! sink passed to each call.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use scout_events::{ControlEvent, Dir, Layer, Node, PacketEvent, Point, Queue, Reason, Sink, SlotEvent};

use crate::config::*;
// The stack's configuration types, where its callers have always found them.
pub use crate::config::{ConfigError, StackConfig, UeSpec, MAX_SR_PERIOD_SLOTS};
use crate::executor::{Executor, Link, Submit};
use crate::mac::bsr::BsrFormat;
use crate::mac::harq::{rv, HarqProcess, HarqState};
use crate::mac::scheduler::{self, Candidate, Scheduler};
use crate::mac::tbs_cache::TbsCache;
use crate::packet::Packet;
use crate::pdcp::{PdcpRx, PdcpTx, RxOut, TxVerdict};
use crate::phy::channel::{self, Olla, SinrSource};
use crate::phy::mcs::McsTable;
use crate::phy::slot::{SlotGrid, SlotPoint};
use crate::phy::tdd::Duplex;
use crate::phy::{self};
use crate::rlc::{RlcEntity, RlcOut, RlcPdu, Sdu};
use crate::rng::Rng;
use crate::Instant;

/// GTP-U over UDP/IPv4 with the PDU Session Container: IPv4 20 + UDP 8 + GTP-U 8 + optional fields 4
/// + PDU Session Container extension 4 (TS 29.281 §5.1, TS 38.415 §5.5.2).
pub const GTPU_OVERHEAD: u32 = 44;

/// A packet handed to an application at its destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub packet: Packet,
    pub t: Instant,
}

/// Counters for `run.json` and the end-of-run summary.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub offered_pkts: [u64; 2],
    pub offered_bytes: [u64; 2],
    pub delivered_pkts: [u64; 2],
    pub delivered_bytes: [u64; 2],
    /// (layer, reason) → (packets, bytes).
    pub drops: BTreeMap<(Layer, Reason), (u64, u64)>,
    pub harq_tx: [u64; 2],
    pub harq_retx: [u64; 2],
    pub harq_fail: [u64; 2],
    pub slots: u64,
}

#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ExecId {
    Upf(u8),
    Gtpu,
    Cuup,
    F1u,
}

#[derive(Clone, Copy, Debug)]
struct Job {
    p: Packet,
    count: u32,
    len: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum TimerOwner {
    GnbRlc,
    UeRlc,
    CuPdcpTx,
    CuPdcpRx,
    UePdcpTx,
    UePdcpRx,
}

#[derive(Clone, Debug)]
enum Action {
    N6Arrive(Packet),
    ExecDone { exec: ExecId, job: Job, started: Instant },
    N3Arrive(Job),
    MidhaulArrive(Job),
    N6Deliver(Packet),
    Slot(u64),
    DlDecode { ue: u32, harq: u8, ok: bool },
    DlFeedback { ue: u32, harq: u8, ack: bool, slot: u64 },
    UlDecode { ue: u32, harq: u8, ok: bool, slot: u64 },
    Timer { ue: u32, drb: u8, owner: TimerOwner },
    DddsSend { ue: u32, drb: u8 },
    DddsArrive { ue: u32, drb: u8, highest: u32 },
}

struct Scheduled {
    t: Instant,
    seq: u64,
    action: Action,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.t, self.seq).cmp(&(o.t, o.seq))
    }
}

/// A transport block in flight.
#[derive(Clone, Debug)]
struct Tb {
    pdus: Vec<(u8, RlcPdu)>,
    mcs: u8,
    prbs: u16,
    tbs: u32,
    symbols: u32,
    /// UL: BSR carried (bytes reported).
    bsr: Option<u64>,
}

struct Drb {
    id: u8,
    qfi: u8,
    priority: u8,
    /// DU side: DL transmitter, UL receiver.
    gnb_rlc: RlcEntity,
    /// UE side: UL transmitter, DL receiver.
    ue_rlc: RlcEntity,
    cu_pdcp_tx: PdcpTx,
    cu_pdcp_rx: PdcpRx,
    ue_pdcp_tx: PdcpTx,
    ue_pdcp_rx: PdcpRx,
    t_notify_ns: i64,
    du_highest_tx: Option<u32>,
    ddds_pending: bool,
    armed: [Option<Instant>; 6],
}

struct Ue {
    rnti: u16,
    slice: u8,
    drbs: Vec<Drb>,
    /// Each direction's radio link: DL (`link[DL]`), then UL.
    link: [RadioLink; 2],
    // UE MAC (UL).
    bsr_triggered: bool,
    sr_pending: bool,
    periodic_bsr_at: Option<Instant>,
    sr_offset: u64,
    // gNB's view of the UE's UL buffer.
    ul_est: u64,
    sr_received: bool,
    /// Grants by PUSCH slot.
    grants: BTreeMap<u64, UlGrant>,
}

/// An UL grant for one PUSCH slot: a HARQ process and, for a new TB, its allocation.
#[derive(Clone, Copy, Debug)]
struct UlGrant {
    harq: u8,
    /// (PRBs, MCS, TBS bytes) of a new transmission; `None` for a retransmission.
    new: Option<(u16, u8, u32)>,
}

/// Index of the DL's and the UL's entry in per-direction arrays (`Dir as usize`).
const DL: usize = Dir::Dl as usize;
const UL: usize = Dir::Ul as usize;

/// One direction of a UE's radio link: the channel, the gNB's CSI of it, link adaptation and the
/// HARQ processes (and their randomness).
struct RadioLink {
    sinr: SinrSource,
    /// The SINR of the last CSI report (dB, floored as CQI reporting quantises it).
    csi_sinr: f64,
    olla: Olla,
    harq: Vec<HarqProcess<Tb>>,
    rng: Rng,
}

impl RadioLink {
    fn new(nof_harqs: usize, sinr: &SinrSource, target_bler: f64, rng: Rng) -> RadioLink {
        RadioLink {
            csi_sinr: sinr.at(0),
            sinr: sinr.clone(),
            olla: Olla::new(target_bler),
            harq: (0..nof_harqs).map(|_| HarqProcess::default()).collect(),
            rng,
        }
    }
}

/// The cell, its UEs, the CU-UP and the UPF.
pub struct Stack {
    cfg: StackConfig,
    duplex: Duplex,
    grid: SlotGrid,
    prbs: u16,
    /// The MCS table of each direction.
    table: [McsTable; 2],
    sr_period_slots: u64,
    csi_period_slots: u64,
    ues: Vec<Ue>,
    upf: Vec<Executor<Job>>,
    gtpu: Executor<Job>,
    cuup: Executor<Job>,
    f1u: Executor<Job>,
    n6_dl: Link,
    n6_ul: Link,
    n3_dl: Link,
    n3_ul: Link,
    mh_dl: Link,
    mh_ul: Link,
    heap: BinaryHeap<Reverse<Scheduled>>,
    tbs: TbsCache,
    scheduler: Box<dyn Scheduler>,
    seq: u64,
    next_pkt: u64,
    live: IdMap<Packet>,
    deliveries: Vec<Delivery>,
    pub stats: Stats,
}

const MS: i64 = 1_000_000;

fn dir_idx(d: Dir) -> usize {
    d as usize
}

fn mcs_table(t: McsTableName) -> McsTable {
    match t {
        McsTableName::Qam64 => McsTable::Qam64,
        McsTableName::Qam256 => McsTable::Qam256,
    }
}

/// MAC subheader for a MAC SDU of `len` bytes: R/F/LCID/L with 8- or 16-bit L (TS 38.321 §6.1.2).
fn mac_subheader(len: u32) -> u32 {
    if len <= 255 {
        2
    } else {
        3
    }
}

impl Stack {
    /// Builds the stack, validating what the types cannot (each error names its key).
    pub fn new(cfg: StackConfig) -> Result<Self, ConfigError> {
        let Checked { mu, prbs, duplex, sr_period_slots } = check(&cfg)?;
        let c = &cfg.cell;
        let slot_ns = phy::slot_ns(mu);
        let seed = cfg.seed;
        let mut ues = Vec::new();
        for (i, spec) in cfg.ues.iter().enumerate() {
            let mut drbs = Vec::new();
            for (d, fq) in spec.five_qis.iter().enumerate() {
                let q =
                    cfg.qos.iter().find(|q| q.five_qi == *fq).cloned().unwrap_or_else(|| QosCfg::srsran_default(*fq));
                let gnb_rlc = RlcEntity::new(&q.rlc);
                let ue_rlc = RlcEntity::new(&q.rlc);
                let limit = gnb_rlc.queue_bytes_limit();
                drbs.push(Drb {
                    id: d as u8 + 1,
                    qfi: *fq,
                    priority: q.priority,
                    cu_pdcp_tx: PdcpTx::new(&q.pdcp, limit),
                    cu_pdcp_rx: PdcpRx::new(&q.pdcp),
                    ue_pdcp_tx: PdcpTx::new(
                        &PdcpCfg { tx: PdcpTxCfg { early_drop_bytes: 0, ..q.pdcp.tx.clone() }, ..q.pdcp.clone() },
                        limit,
                    ),
                    ue_pdcp_rx: PdcpRx::new(&q.pdcp),
                    gnb_rlc,
                    ue_rlc,
                    t_notify_ns: q.f1u_du.t_notify.max(0) * MS,
                    du_highest_tx: None,
                    ddds_pending: false,
                    armed: [None; 6],
                });
            }
            let nh = usize::from(c.pdsch.nof_harqs);
            ues.push(Ue {
                rnti: 0x4601 + i as u16,
                slice: spec.slice,
                drbs,
                link: [
                    RadioLink::new(
                        nh,
                        &spec.dl_sinr,
                        c.pdsch.olla_target_bler,
                        Rng::new(seed, &format!("ue{i}.dl.harq")),
                    ),
                    RadioLink::new(
                        nh,
                        &spec.ul_sinr,
                        c.pusch.olla_target_bler,
                        Rng::new(seed, &format!("ue{i}.ul.harq")),
                    ),
                ],
                bsr_triggered: false,
                sr_pending: false,
                periodic_bsr_at: None,
                sr_offset: i as u64,
                ul_est: 0,
                sr_received: false,
                grants: BTreeMap::new(),
            });
        }
        // SR occasions (TS 38.213 §9.2.4: slot n with (n − offset) mod period = 0) are given to each
        // UE on a slot that carries UL symbols, round robin over those slots, as srsRAN places PUCCH
        // SR resources in UL slots; an offset on a DL-only slot would never let the UE ask for a grant.
        let ul_offsets: Vec<u64> = (0..sr_period_slots).filter(|r| duplex.slot_kind(*r).ul_symbols > 0).collect();
        for (i, u) in ues.iter_mut().enumerate() {
            u.sr_offset =
                if ul_offsets.is_empty() { i as u64 % sr_period_slots } else { ul_offsets[i % ul_offsets.len()] };
        }
        let slots_per_ms = (MS / slot_ns) as f64;
        let csi_period_slots = ((c.pucch.csi_report_period_ms * slots_per_ms).round() as u64).max(1);
        let upf =
            cfg.core.slices.iter().map(|s| Executor::new(&s.upf, Rng::new(seed, &format!("upf.{}", s.name)))).collect();
        let mut stack = Stack {
            duplex,
            grid: SlotGrid::new(mu),
            prbs,
            table: [mcs_table(c.pdsch.mcs_table), mcs_table(c.pusch.mcs_table)],
            sr_period_slots,
            csi_period_slots,
            ues,
            upf,
            gtpu: Executor::new(&cfg.cu_up.gtpu_rx, Rng::new(seed, "cuup.gtpu")),
            cuup: Executor::new(&cfg.cu_up.cuup, Rng::new(seed, "cuup.workers")),
            f1u: Executor::new(&cfg.cu_up.f1u, Rng::new(seed, "cuup.f1u")),
            n6_dl: Link::new(&cfg.core.n6),
            n6_ul: Link::new(&cfg.core.n6),
            n3_dl: Link::new(&cfg.core.n3),
            n3_ul: Link::new(&cfg.core.n3),
            mh_dl: Link::new(&cfg.core.midhaul),
            mh_ul: Link::new(&cfg.core.midhaul),
            heap: BinaryHeap::new(),
            tbs: TbsCache::new(prbs, c.layers, c.dmrs_symbols),
            scheduler: scheduler::from_config(&c.scheduler, cfg.ues.len()),
            seq: 0,
            next_pkt: 0,
            live: IdMap::default(),
            deliveries: Vec::new(),
            stats: Stats::default(),
            cfg,
        };
        stack.schedule(0, Action::Slot(0));
        Ok(stack)
    }

    /// Cell facts for `run.json`.
    pub fn describe(&self) -> String {
        format!(
            "{{\"prbs\":{},\"slot_ns\":{},\"pattern\":\"{}\",\"sr_period_slots\":{}}}",
            self.prbs,
            self.grid.slot_ns(),
            self.duplex.describe(),
            self.sr_period_slots
        )
    }

    pub fn nof_prbs(&self) -> u16 {
        self.prbs
    }

    /// The number of UEs in the cell.
    pub fn nof_ues(&self) -> usize {
        self.ues.len()
    }

    pub fn slot_ns(&self) -> i64 {
        self.grid.slot_ns()
    }

    /// When the next slot not yet run is due: slot `s` starts at `s × slot_ns` (TS 38.211 §4.3.2:
    /// slots of equal length from time 0). A real-time driver keeps this appointment first.
    pub fn next_slot_at(&self) -> Instant {
        self.grid.start(self.stats.slots)
    }

    fn schedule(&mut self, t: Instant, action: Action) {
        self.seq += 1;
        self.heap.push(Reverse(Scheduled { t, seq: self.seq, action }));
    }

    /// When the stack next needs [`Stack::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(s)| s.t)
    }

    /// Packets delivered to applications since the last call.
    pub fn poll_delivery(&mut self) -> Option<Delivery> {
        self.deliveries.pop()
    }

    /// Drains all deliveries, oldest first.
    pub fn take_deliveries(&mut self) -> Vec<Delivery> {
        std::mem::take(&mut self.deliveries)
    }

    /// Packets currently inside the system.
    pub fn in_flight(&self) -> impl Iterator<Item = &Packet> {
        self.live.values()
    }

    // ----------------------------------------------------------------- telemetry helpers

    fn ev(&self, t: Instant, node: Node, layer: Layer, point: Point, p: &Packet) -> PacketEvent {
        let rnti = matches!(node, Node::GnbDu | Node::Ue).then(|| self.ues[p.ue as usize].rnti);
        PacketEvent {
            ue: p.ue,
            rnti,
            drb: Some(p.drb),
            qfi: Some(p.qfi),
            slice: p.slice,
            flow: p.flow,
            bytes: p.bytes,
            ecn: p.ecn,
            ..PacketEvent::new(t, (node, layer, point), p.dir, p.pkt)
        }
    }

    fn emit<S: Sink>(&self, sink: &mut S, t: Instant, node: Node, layer: Layer, point: Point, p: &Packet) {
        sink.packet(self.ev(t, node, layer, point, p));
    }

    fn drop_packet<S: Sink>(&mut self, sink: &mut S, t: Instant, node: Node, layer: Layer, p: &Packet, reason: Reason) {
        if self.live.remove(&p.pkt).is_none() {
            return; // already accounted (e.g. a duplicate's twin)
        }
        let mut e = self.ev(t, node, layer, Point::Drop, p);
        e.reason = Some(reason);
        sink.packet(e);
        let d = self.stats.drops.entry((layer, reason)).or_default();
        d.0 += 1;
        d.1 += u64::from(p.bytes);
    }

    fn deliver<S: Sink>(&mut self, sink: &mut S, t: Instant, node: Node, p: &Packet) {
        if self.live.remove(&p.pkt).is_none() {
            return;
        }
        self.emit(sink, t, node, Layer::App, Point::Deliver, p);
        let d = dir_idx(p.dir);
        self.stats.delivered_pkts[d] += 1;
        self.stats.delivered_bytes[d] += u64::from(p.bytes);
        self.deliveries.push(Delivery { packet: *p, t });
    }

    #[allow(clippy::too_many_arguments)] // one argument per control_events column
    fn control<S: Sink>(
        &self,
        sink: &mut S,
        t: Instant,
        node: Node,
        layer: Layer,
        kind: &'static str,
        ue: Option<u32>,
        drb: Option<u8>,
        sn: Option<i64>,
        value: Option<f64>,
        detail: String,
    ) {
        sink.control(ControlEvent {
            t_ns: t,
            node,
            layer,
            kind,
            dir: None,
            ue,
            drb,
            sn,
            value,
            detail: (!detail.is_empty()).then_some(detail),
        });
    }

    // ----------------------------------------------------------------- ingress

    fn new_packet(&mut self, flow: u32, ue: u32, dir: Dir, bytes: u32, drb_idx: usize) -> Packet {
        let u = &self.ues[ue as usize];
        let d = &u.drbs[drb_idx];
        let p = Packet { pkt: self.next_pkt, flow, ue, dir, bytes, qfi: d.qfi, drb: d.id, slice: u.slice, ecn: 0 };
        self.next_pkt += 1;
        self.live.insert(p.pkt, p);
        let i = dir_idx(dir);
        self.stats.offered_pkts[i] += 1;
        self.stats.offered_bytes[i] += u64::from(bytes);
        p
    }

    /// Index of the UE's DRB carrying `five_qi`, if it has one.
    pub fn drb_index(&self, ue: u32, five_qi: u8) -> Option<usize> {
        self.ues.get(ue as usize)?.drbs.iter().position(|d| d.qfi == five_qi)
    }

    /// A DN application sends `bytes` to UE `ue` on its DRB `drb_idx` at `now`. Returns the packet id.
    pub fn send_dl<S: Sink>(
        &mut self,
        now: Instant,
        flow: u32,
        ue: u32,
        drb_idx: usize,
        bytes: u32,
        sink: &mut S,
    ) -> u64 {
        let p = self.new_packet(flow, ue, Dir::Dl, bytes, drb_idx);
        self.emit(sink, now, Node::Dn, Layer::App, Point::Tx, &p);
        let at = self.n6_dl.send(now, bytes);
        self.schedule(at, Action::N6Arrive(p));
        p.pkt
    }

    /// UE `ue`'s application sends `bytes` towards the DN on DRB `drb_idx` at `now`.
    pub fn send_ul<S: Sink>(
        &mut self,
        now: Instant,
        flow: u32,
        ue: u32,
        drb_idx: usize,
        bytes: u32,
        sink: &mut S,
    ) -> u64 {
        let p = self.new_packet(flow, ue, Dir::Ul, bytes, drb_idx);
        self.emit(sink, now, Node::Ue, Layer::App, Point::Tx, &p);
        // UE PDCP: zero processing time in the model (docs/model.md).
        let verdict = self.ues[ue as usize].drbs[drb_idx].ue_pdcp_tx.handle_sdu(now, bytes);
        match verdict {
            TxVerdict::Drop(r) => self.drop_packet(sink, now, Node::Ue, Layer::Pdcp, &p, r),
            TxVerdict::Send { count, len } => {
                let mut e = self.ev(now, Node::Ue, Layer::Pdcp, Point::ProcEnd, &p);
                e.sn = Some(count);
                e.bytes = len;
                sink.packet(e);
                let was_empty = self.ue_ul_buffer(ue as usize) == 0;
                self.ues[ue as usize].drbs[drb_idx].ue_rlc.handle_sdu(now, Sdu { pkt: p, pdcp_sn: count, len });
                self.drain_rlc(now, ue as usize, drb_idx, true, sink);
                // Regular BSR on new UL data when the buffer was empty (TS 38.321 §5.4.5), which
                // triggers an SR when no UL-SCH resource is available (§5.4.4).
                let u = &mut self.ues[ue as usize];
                if was_empty {
                    u.bsr_triggered = true;
                    if u.grants.is_empty() {
                        u.sr_pending = true;
                    }
                }
                self.arm(now, ue as usize, drb_idx, TimerOwner::UePdcpTx);
            }
        }
        p.pkt
    }

    fn ue_ul_buffer(&self, ue: usize) -> u64 {
        self.ues[ue].drbs.iter().map(|d| d.ue_rlc.buffer_status()).sum()
    }

    fn gnb_dl_buffer(&self, ue: usize) -> u64 {
        self.ues[ue].drbs.iter().map(|d| d.gnb_rlc.buffer_status()).sum()
    }

    // ----------------------------------------------------------------- executors

    fn exec_mut(&mut self, id: ExecId) -> &mut Executor<Job> {
        match id {
            ExecId::Upf(s) => &mut self.upf[usize::from(s)],
            ExecId::Gtpu => &mut self.gtpu,
            ExecId::Cuup => &mut self.cuup,
            ExecId::F1u => &mut self.f1u,
        }
    }

    fn exec_meta(id: ExecId) -> (Node, Layer, Queue) {
        match id {
            ExecId::Upf(_) => (Node::Upf, Layer::Upf, Queue::UpfExec),
            ExecId::Gtpu => (Node::GnbCu, Layer::Gtpu, Queue::GtpuRxExec),
            ExecId::Cuup => (Node::GnbCu, Layer::CuupExec, Queue::CuupExec),
            ExecId::F1u => (Node::GnbCu, Layer::F1u, Queue::F1uExec),
        }
    }

    fn submit<S: Sink>(&mut self, now: Instant, id: ExecId, job: Job, sink: &mut S) {
        let (node, layer, queue) = Self::exec_meta(id);
        let bytes = job.len;
        let (job, service) = match self.exec_mut(id).submit(now, job, bytes, job.p.ue) {
            Submit::Started { job, service_ns } => (job, Some(service_ns)),
            Submit::Queued => (job, None),
            Submit::Rejected(job) => return self.drop_packet(sink, now, node, layer, &job.p, Reason::ExecQueueFull),
        };
        let ex = self.exec_mut(id);
        let (qb, qp) = (ex.queue_bytes(), ex.queue_pkts());
        let mut e = self.ev(now, node, layer, Point::Enqueue, &job.p);
        e.queue = Some(queue);
        e.queue_bytes = Some(qb);
        e.queue_pkts = Some(qp);
        e.bytes = job.len;
        sink.packet(e);
        if let Some(service_ns) = service {
            self.schedule(now + service_ns, Action::ExecDone { exec: id, job, started: now });
        }
    }

    fn exec_done<S: Sink>(&mut self, now: Instant, id: ExecId, job: Job, started: Instant, sink: &mut S) {
        // The worker takes the next job.
        if let Some((next, service)) = self.exec_mut(id).finish(job.p.ue) {
            self.schedule(now + service, Action::ExecDone { exec: id, job: next, started: now });
        }
        let p = job.p;
        match (id, p.dir) {
            (ExecId::Upf(_), dir) => {
                self.emit(sink, started, Node::Upf, Layer::Upf, Point::ProcBegin, &p);
                self.emit(sink, now, Node::Upf, Layer::Upf, Point::ProcEnd, &p);
                if dir == Dir::Dl {
                    let len = p.bytes + GTPU_OVERHEAD;
                    let at = self.n3_dl.send(now, len);
                    self.schedule(at, Action::N3Arrive(Job { p, count: 0, len }));
                } else {
                    let at = self.n6_ul.send(now, p.bytes);
                    self.schedule(at, Action::N6Deliver(p));
                }
            }
            (ExecId::Gtpu, Dir::Dl) => {
                self.emit(sink, started, Node::GnbCu, Layer::Gtpu, Point::ProcBegin, &p);
                self.emit(sink, now, Node::GnbCu, Layer::Gtpu, Point::ProcEnd, &p);
                self.submit(now, ExecId::Cuup, Job { p, count: 0, len: p.bytes }, sink);
            }
            (ExecId::Gtpu, Dir::Ul) => {
                self.emit(sink, started, Node::GnbCu, Layer::Gtpu, Point::ProcBegin, &p);
                self.emit(sink, now, Node::GnbCu, Layer::Gtpu, Point::ProcEnd, &p);
                let len = p.bytes + GTPU_OVERHEAD;
                let at = self.n3_ul.send(now, len);
                self.schedule(at, Action::N3Arrive(Job { p, count: 0, len }));
            }
            (ExecId::Cuup, Dir::Dl) => {
                // SDAP then PDCP on the same worker.
                let sdap_end = (started + self.cfg.cu_up.sdap_proc_ns).min(now);
                self.emit(sink, started, Node::GnbCu, Layer::Sdap, Point::ProcBegin, &p);
                self.emit(sink, sdap_end, Node::GnbCu, Layer::Sdap, Point::ProcEnd, &p);
                self.emit(sink, sdap_end, Node::GnbCu, Layer::Pdcp, Point::ProcBegin, &p);
                let (ui, di) = (p.ue as usize, self.drb_idx_of(&p));
                let verdict = self.ues[ui].drbs[di].cu_pdcp_tx.handle_sdu(now, p.bytes);
                match verdict {
                    TxVerdict::Drop(r) => self.drop_packet(sink, now, Node::GnbCu, Layer::Pdcp, &p, r),
                    TxVerdict::Send { count, len } => {
                        let mut e = self.ev(now, Node::GnbCu, Layer::Pdcp, Point::ProcEnd, &p);
                        e.sn = Some(count);
                        e.bytes = len;
                        sink.packet(e);
                        self.arm(now, ui, di, TimerOwner::CuPdcpTx);
                        self.submit(now, ExecId::F1u, Job { p, count, len }, sink);
                    }
                }
            }
            (ExecId::Cuup, Dir::Ul) => {
                self.emit(sink, started, Node::GnbCu, Layer::Pdcp, Point::ProcBegin, &p);
                let mut e = self.ev(now, Node::GnbCu, Layer::Pdcp, Point::ProcEnd, &p);
                e.sn = Some(job.count);
                sink.packet(e);
                let (ui, di) = (p.ue as usize, self.drb_idx_of(&p));
                self.ues[ui].drbs[di].cu_pdcp_rx.handle_pdu(now, job.count, p);
                self.drain_pdcp_rx(now, ui, di, false, sink);
                self.arm(now, ui, di, TimerOwner::CuPdcpRx);
            }
            (ExecId::F1u, _) => {
                self.emit(sink, started, Node::GnbCu, Layer::F1u, Point::ProcBegin, &p);
                self.emit(sink, now, Node::GnbCu, Layer::F1u, Point::ProcEnd, &p);
                let at = self.mh_dl.send(now, job.len);
                self.schedule(at, Action::MidhaulArrive(job));
            }
        }
    }

    fn drb_idx_of(&self, p: &Packet) -> usize {
        usize::from(p.drb) - 1
    }

    // ----------------------------------------------------------------- RLC / PDCP outputs

    /// Turns what the DU's (`at_ue` false) or the UE's RLC entity of a bearer produced into
    /// events and hand-overs, then re-arms its timers.
    fn drain_rlc<S: Sink>(&mut self, now: Instant, ui: usize, di: usize, at_ue: bool, sink: &mut S) {
        let d = &mut self.ues[ui].drbs[di];
        let out = std::mem::take(if at_ue { &mut d.ue_rlc.out } else { &mut d.gnb_rlc.out });
        let node = if at_ue { Node::Ue } else { Node::GnbDu };
        for o in out {
            match o {
                RlcOut::Enqueued { sdu, queue_bytes, queue_pkts } | RlcOut::Hol { sdu, queue_bytes, queue_pkts } => {
                    let point = if matches!(o, RlcOut::Hol { .. }) { Point::Hol } else { Point::Enqueue };
                    let mut e = self.ev(now, node, Layer::Rlc, point, &sdu.pkt);
                    e.queue = Some(Queue::RlcSdu);
                    e.queue_bytes = Some(queue_bytes);
                    e.queue_pkts = Some(queue_pkts);
                    e.sn = Some(sdu.pdcp_sn);
                    e.bytes = sdu.len;
                    sink.packet(e);
                }
                RlcOut::Dropped { sdu, reason } => self.drop_packet(sink, now, node, Layer::Rlc, &sdu.pkt, reason),
                RlcOut::Delivered { sdu } => {
                    let mut e = self.ev(now, node, Layer::Rlc, Point::Deliver, &sdu.pkt);
                    e.sn = Some(sdu.pdcp_sn);
                    e.bytes = sdu.len;
                    sink.packet(e);
                    if at_ue {
                        // DL: reassembled at the UE, into PDCP reordering.
                        self.ues[ui].drbs[di].ue_pdcp_rx.handle_pdu(now, sdu.pdcp_sn, sdu.pkt);
                        self.drain_pdcp_rx(now, ui, di, true, sink);
                        self.arm(now, ui, di, TimerOwner::UePdcpRx);
                    } else {
                        // UL: reassembled at the DU, forwarded over F1-U.
                        let at = self.mh_ul.send(now, sdu.len);
                        self.schedule(at, Action::MidhaulArrive(Job { p: sdu.pkt, count: sdu.pdcp_sn, len: sdu.len }));
                    }
                }
                RlcOut::Transmitted { pdcp_sn } if at_ue => {
                    self.ues[ui].drbs[di].ue_pdcp_tx.handle_transmitted(pdcp_sn);
                }
                RlcOut::Transmitted { pdcp_sn } => {
                    let d = &mut self.ues[ui].drbs[di];
                    d.du_highest_tx = Some(d.du_highest_tx.map_or(pdcp_sn, |h| h.max(pdcp_sn)));
                    if !d.ddds_pending {
                        d.ddds_pending = true;
                        let at = now + d.t_notify_ns;
                        self.schedule(at, Action::DddsSend { ue: ui as u32, drb: di as u8 });
                    }
                }
                RlcOut::Acked { .. } => {}
                RlcOut::Control { kind, sn, value, detail } => self.control(
                    sink,
                    now,
                    node,
                    Layer::Rlc,
                    kind,
                    Some(ui as u32),
                    Some(di as u8 + 1),
                    sn,
                    value,
                    detail,
                ),
            }
        }
        self.arm(now, ui, di, if at_ue { TimerOwner::UeRlc } else { TimerOwner::GnbRlc });
    }

    fn drain_pdcp_rx<S: Sink>(&mut self, now: Instant, ui: usize, di: usize, at_ue: bool, sink: &mut S) {
        let d = &mut self.ues[ui].drbs[di];
        let out = std::mem::take(if at_ue { &mut d.ue_pdcp_rx.out } else { &mut d.cu_pdcp_rx.out });
        let node = if at_ue { Node::Ue } else { Node::GnbCu };
        for o in out {
            match o {
                RxOut::Deliver(p, count) => {
                    let mut e = self.ev(now, node, Layer::Pdcp, Point::Deliver, &p);
                    e.sn = Some(count);
                    sink.packet(e);
                    if at_ue {
                        self.deliver(sink, now, Node::Ue, &p);
                    } else {
                        self.submit(now, ExecId::Gtpu, Job { p, count, len: p.bytes }, sink);
                    }
                }
                RxOut::Discard(p, _) => {
                    if self.live.contains_key(&p.pkt) {
                        // A duplicate of a packet still in flight is not a drop of that packet.
                        self.control(
                            sink,
                            now,
                            node,
                            Layer::Pdcp,
                            "pdcp_duplicate",
                            Some(ui as u32),
                            Some(di as u8 + 1),
                            None,
                            None,
                            String::new(),
                        );
                    }
                }
                RxOut::ReorderingExpired(reord) => self.control(
                    sink,
                    now,
                    node,
                    Layer::Pdcp,
                    "timer_expiry",
                    Some(ui as u32),
                    Some(di as u8 + 1),
                    Some(i64::from(reord)),
                    None,
                    "{\"timer\":\"t-Reordering\"}".into(),
                ),
            }
        }
    }

    /// Makes sure a Timer action is pending for the entity's next timeout.
    fn arm(&mut self, _now: Instant, ui: usize, di: usize, owner: TimerOwner) {
        let d = &mut self.ues[ui].drbs[di];
        let next = match owner {
            TimerOwner::GnbRlc => d.gnb_rlc.next_timeout(),
            TimerOwner::UeRlc => d.ue_rlc.next_timeout(),
            TimerOwner::CuPdcpTx => d.cu_pdcp_tx.next_timeout(),
            TimerOwner::CuPdcpRx => d.cu_pdcp_rx.next_timeout(),
            TimerOwner::UePdcpTx => d.ue_pdcp_tx.next_timeout(),
            TimerOwner::UePdcpRx => d.ue_pdcp_rx.next_timeout(),
        };
        let slot = &mut d.armed[owner as usize];
        if let Some(t) = next {
            if slot.is_none_or(|a| t < a) {
                *slot = Some(t);
                self.schedule(t, Action::Timer { ue: ui as u32, drb: di as u8, owner });
            }
        }
    }

    fn handle_timer<S: Sink>(&mut self, now: Instant, ui: usize, di: usize, owner: TimerOwner, sink: &mut S) {
        {
            let slot = &mut self.ues[ui].drbs[di].armed[owner as usize];
            if *slot != Some(now) {
                return; // superseded by an earlier arming that already ran
            }
            *slot = None;
        }
        match owner {
            TimerOwner::GnbRlc => {
                self.ues[ui].drbs[di].gnb_rlc.handle_timeout(now);
                self.drain_rlc(now, ui, di, false, sink);
            }
            TimerOwner::UeRlc => {
                self.ues[ui].drbs[di].ue_rlc.handle_timeout(now);
                self.drain_rlc(now, ui, di, true, sink);
                self.ue_data_arrived(ui);
            }
            TimerOwner::CuPdcpRx | TimerOwner::UePdcpRx => {
                let at_ue = owner == TimerOwner::UePdcpRx;
                let d = &mut self.ues[ui].drbs[di];
                if at_ue {
                    d.ue_pdcp_rx.handle_timeout(now)
                } else {
                    d.cu_pdcp_rx.handle_timeout(now)
                }
                self.drain_pdcp_rx(now, ui, di, at_ue, sink);
            }
            TimerOwner::CuPdcpTx | TimerOwner::UePdcpTx => {
                let at_ue = owner == TimerOwner::UePdcpTx;
                let d = &mut self.ues[ui].drbs[di];
                let expired = if at_ue { d.ue_pdcp_tx.expire(now) } else { d.cu_pdcp_tx.expire(now) };
                for count in expired {
                    // TS 38.323 §5.3: the discard is indicated to RLC, which removes the SDU if no
                    // segment of it was sent (TS 38.322 §5.4). The F1-U indication is modelled as
                    // immediate.
                    let d = &mut self.ues[ui].drbs[di];
                    let rlc = if at_ue { &mut d.ue_rlc } else { &mut d.gnb_rlc };
                    if let Some(sdu) = rlc.discard(count) {
                        let node = if at_ue { Node::Ue } else { Node::GnbCu };
                        self.drop_packet(sink, now, node, Layer::Pdcp, &sdu.pkt, Reason::PdcpDiscardTimer);
                        self.drain_rlc(now, ui, di, at_ue, sink)
                    }
                }
            }
        }
        self.arm(now, ui, di, owner);
    }

    /// The UE may have new UL data after a timer (e.g. an RLC retransmission): trigger BSR/SR.
    fn ue_data_arrived(&mut self, ui: usize) {
        if self.ue_ul_buffer(ui) > 0 && self.ues[ui].ul_est == 0 && self.ues[ui].grants.is_empty() {
            let u = &mut self.ues[ui];
            u.bsr_triggered = true;
            u.sr_pending = true;
        }
    }

    // ----------------------------------------------------------------- the air

    /// The MCS for UE `ui`'s next new transmission in direction `d` (`DL`, `UL`): the highest whose
    /// BLER at the reported SINR, corrected by outer-loop link adaptation, meets the target.
    fn mcs(&self, ui: usize, d: usize) -> u8 {
        let link = &self.ues[ui].link[d];
        let (target, min, max) = match d {
            DL => {
                (self.cfg.cell.pdsch.olla_target_bler, self.cfg.cell.pdsch.min_ue_mcs, self.cfg.cell.pdsch.max_ue_mcs)
            }
            _ => (self.cfg.cell.pusch.olla_target_bler, self.cfg.cell.pusch.min_ue_mcs, self.cfg.cell.pusch.max_ue_mcs),
        };
        channel::select_mcs(self.table[d], link.csi_sinr + link.olla.offset_db, target, max).max(min)
    }

    fn handle_slot<S: Sink>(&mut self, s: u64, sink: &mut S) {
        let SlotPoint { t, sfn, slot_in_frame: sif } = self.grid.point(s);
        self.stats.slots += 1;
        let kind = self.duplex.slot_kind(s);
        // CSI reports and periodic BSR at the UE.
        let csi = s.is_multiple_of(self.csi_period_slots);
        for ui in 0..self.ues.len() {
            let u = &mut self.ues[ui];
            if csi {
                u.link[DL].csi_sinr = u.link[DL].sinr.at(t).floor();
                u.link[UL].csi_sinr = u.link[UL].sinr.at(t).floor();
            }
            if u.periodic_bsr_at.is_some_and(|p| p <= t) {
                u.periodic_bsr_at = None;
                u.bsr_triggered = true;
            }
        }
        // SR occasions on slots with UL symbols (PUCCH).
        if kind.ul_symbols > 0 {
            for ui in 0..self.ues.len() {
                let period = self.sr_period_slots;
                let u = &mut self.ues[ui];
                if u.sr_pending && s % period == u.sr_offset {
                    u.sr_pending = false;
                    u.sr_received = true;
                    self.control(sink, t, Node::Ue, Layer::Mac, "sr", Some(ui as u32), None, None, None, String::new());
                }
            }
        }
        let pdcch = u32::from(self.cfg.cell.pdcch_symbols);
        if u32::from(kind.dl_symbols) >= pdcch + 3 {
            self.schedule_dl(s, t, u32::from(kind.dl_symbols) - pdcch, sfn, sif, sink);
        }
        if kind.dl_symbols > 0 {
            for u_slot in self.duplex.pusch_slots_for_pdcch(s, self.cfg.cell.pusch.min_k2) {
                self.schedule_ul(s, u_slot, sink);
            }
        }
        if kind.ul_symbols == 14 {
            self.transmit_pusch(s, t, sfn, sif, sink);
        }
        self.schedule(t + self.grid.slot_ns(), Action::Slot(s + 1));
    }

    fn schedule_dl<S: Sink>(&mut self, s: u64, t: Instant, symbols: u32, sfn: u16, sif: u8, sink: &mut S) {
        let mut free = self.prbs;
        let mut scheduled = 0u16;
        let max_ues = self.cfg.cell.scheduler.max_ues_per_slot as u16;
        let pdsch_start = t + i64::from(self.cfg.cell.pdcch_symbols) * self.grid.symbol_ns();
        let pdsch_end = pdsch_start + i64::from(symbols) * self.grid.symbol_ns();
        // Retransmissions first.
        for ui in 0..self.ues.len() {
            for h in 0..self.ues[ui].link[DL].harq.len() {
                let hp = &self.ues[ui].link[DL].harq[h];
                let ready = matches!(hp.state, HarqState::PendingRetx { ready } if ready <= s);
                let Some(tb) = hp.tb.as_ref() else { continue };
                if !ready || tb.prbs > free || symbols < tb.symbols || scheduled >= max_ues {
                    continue;
                }
                free -= tb.prbs;
                scheduled += 1;
                self.ues[ui].link[DL].harq[h].retx();
                self.transmit_dl(ui, h, s, t, pdsch_start, pdsch_end, sink);
            }
        }
        // New transmissions.
        let mut cands = Vec::new();
        for ui in 0..self.ues.len() {
            if self.gnb_dl_buffer(ui) == 0 || !self.ues[ui].link[DL].harq.iter().any(|h| h.state == HarqState::Idle) {
                continue;
            }
            let mcs = self.mcs(ui, DL);
            let rate = f64::from(self.tbs.tbs_for(self.table[DL], mcs, symbols, 1));
            cands.push(Candidate { ue: ui, rate });
        }
        let mut served = vec![0u64; self.ues.len()];
        for ui in self.scheduler.order(Dir::Dl, &cands) {
            if free == 0 || scheduled >= max_ues {
                break;
            }
            let mcs = self.mcs(ui, DL);
            let need = self.gnb_dl_buffer(ui) + 16;
            let (mut prbs, _) = self.tbs.prbs_for(self.table[DL], mcs, symbols, need);
            prbs = prbs.min(free);
            let tbs = self.tbs.tbs_for(self.table[DL], mcs, symbols, prbs);
            let pdus = self.pull(ui, tbs, true, t, sink);
            if pdus.is_empty() {
                continue;
            }
            free -= prbs;
            scheduled += 1;
            served[ui] = u64::from(tbs);
            let h = self.ues[ui].link[DL]
                .harq
                .iter()
                .position(|h| h.state == HarqState::Idle)
                .expect("candidate has an idle process");
            self.ues[ui].link[DL].harq[h].new_tx(Tb { pdus, mcs, prbs, tbs, symbols, bsr: None });
            self.transmit_dl(ui, h, s, t, pdsch_start, pdsch_end, sink);
        }
        self.scheduler.served(Dir::Dl, &served);
        sink.slot(SlotEvent {
            prbs: self.prbs - free,
            prbs_used: Some(self.prbs - free),
            prbs_total: Some(self.prbs),
            nof_ues_scheduled: Some(scheduled),
            ..SlotEvent::cell(t, s, sfn, sif, Dir::Dl)
        });
    }

    /// Pulls RLC PDUs for a TB of `tbs` bytes from the UE's DRBs in priority order (DL: the DU's
    /// entities; UL: the UE's), emitting an RLC `segment` event per data PDU.
    fn pull<S: Sink>(&mut self, ui: usize, tbs: u32, dl: bool, t: Instant, sink: &mut S) -> Vec<(u8, RlcPdu)> {
        let mut budget = tbs;
        let mut order: Vec<usize> = (0..self.ues[ui].drbs.len()).collect();
        order.sort_by_key(|d| (self.ues[ui].drbs[*d].priority, *d));
        let mut pdus = Vec::new();
        for di in order {
            if budget < 8 {
                break;
            }
            let d = &mut self.ues[ui].drbs[di];
            let rlc = if dl { &mut d.gnb_rlc } else { &mut d.ue_rlc };
            let got = rlc.pull(t, budget, mac_subheader);
            for pdu in got {
                budget = budget.saturating_sub(pdu.bytes() + mac_subheader(pdu.bytes()));
                if let RlcPdu::Data { sn, sdu, offset, len, retx, .. } = &pdu {
                    let node = if dl { Node::GnbDu } else { Node::Ue };
                    let mut e = self.ev(t, node, Layer::Rlc, Point::Segment, &sdu.pkt);
                    e.sn = Some(*sn);
                    e.seg_offset = Some(*offset);
                    e.seg_last = Some(offset + len == sdu.len);
                    e.bytes = *len;
                    e.retx = *retx;
                    sink.packet(e);
                }
                pdus.push((di as u8, pdu));
            }
            self.drain_rlc(t, ui, di, !dl, sink);
        }
        pdus
    }

    #[allow(clippy::too_many_arguments)]
    fn transmit_dl<S: Sink>(
        &mut self,
        ui: usize,
        h: usize,
        s: u64,
        t: Instant,
        start: Instant,
        end: Instant,
        sink: &mut S,
    ) {
        let u = &self.ues[ui];
        let hp = &u.link[DL].harq[h];
        let tb = hp.tb.as_ref().expect("transmitting a process with a TB");
        let retx = hp.nof_tx - 1;
        self.tb_sent(sink, start, Node::GnbDu, &tb.pdus, retx);
        let sinr = u.link[DL].sinr.at(t);
        let p_err = channel::bler(self.table[DL], tb.mcs, sinr, hp.nof_tx);
        let ok = !self.ues[ui].link[DL].rng.bernoulli(p_err);
        self.stats.harq_tx[0] += 1;
        if retx > 0 {
            self.stats.harq_retx[0] += 1;
        }
        let ack_slot = self.duplex.harq_ack_slot(s, self.cfg.cell.pucch.min_k1);
        self.schedule(end, Action::DlDecode { ue: ui as u32, harq: h as u8, ok });
        let fb = self.grid.start(ack_slot + 1);
        self.schedule(fb, Action::DlFeedback { ue: ui as u32, harq: h as u8, ack: ok, slot: s });
    }

    /// The event of an RLC data PDU of a TB at (`node`, `layer`, `point`); `retx`: the TB's
    /// retransmission index. A STATUS PDU has none.
    #[allow(clippy::too_many_arguments)] // the event's own columns
    fn pdu_event<S: Sink>(
        &self,
        sink: &mut S,
        t: Instant,
        node: Node,
        layer: Layer,
        point: Point,
        pdu: &RlcPdu,
        retx: u32,
    ) {
        if let RlcPdu::Data { sdu, offset, len, sn, .. } = pdu {
            let mut e = self.ev(t, node, layer, point, &sdu.pkt);
            e.sn = Some(*sn);
            e.seg_offset = Some(*offset);
            e.bytes = *len;
            e.retx = retx as u8;
            sink.packet(e);
        }
    }

    /// A TB sent on the air at `t` by `node`: the MAC `tx` event of each of its data PDUs.
    fn tb_sent<S: Sink>(&self, sink: &mut S, t: Instant, node: Node, pdus: &[(u8, RlcPdu)], retx: u32) {
        for (_, pdu) in pdus {
            self.pdu_event(sink, t, node, Layer::Mac, Point::Tx, pdu, retx);
        }
    }

    /// A TB decoded at the UE (`at_ue`: DL) or at the DU (UL): each RLC PDU to its bearer's
    /// receiving entity, a PHY `rx` event per data PDU.
    fn receive_tb<S: Sink>(
        &mut self,
        now: Instant,
        ui: usize,
        pdus: &[(u8, RlcPdu)],
        nof_tx: u32,
        at_ue: bool,
        sink: &mut S,
    ) {
        let node = if at_ue { Node::Ue } else { Node::GnbDu };
        for (di, pdu) in pdus {
            let di = usize::from(*di);
            self.pdu_event(sink, now, node, Layer::Phy, Point::Rx, pdu, nof_tx - 1);
            let d = &mut self.ues[ui].drbs[di];
            let rlc = if at_ue { &mut d.ue_rlc } else { &mut d.gnb_rlc };
            match pdu {
                RlcPdu::Data { .. } => rlc.handle_data(now, pdu),
                RlcPdu::Status { ack_sn, nacks, .. } => rlc.handle_status(now, *ack_sn, nacks),
            }
            self.drain_rlc(now, ui, di, at_ue, sink);
        }
    }

    fn dl_decode<S: Sink>(&mut self, now: Instant, ui: usize, h: usize, ok: bool, sink: &mut S) {
        if !ok {
            return;
        }
        let hp = &self.ues[ui].link[DL].harq[h];
        let Some(tb) = hp.tb.as_ref() else { return };
        let (pdus, nof_tx) = (tb.pdus.clone(), hp.nof_tx);
        self.receive_tb(now, ui, &pdus, nof_tx, true, sink);
        // STATUS PDUs or retransmissions may now be waiting at the UE.
        self.ue_data_arrived(ui);
    }

    fn dl_feedback<S: Sink>(&mut self, now: Instant, ui: usize, h: usize, ack: bool, slot: u64, sink: &mut S) {
        let max = u32::from(self.cfg.cell.pdsch.max_nof_harq_retxs);
        let next = self.grid.at(now) + 1;
        self.ues[ui].link[DL].olla.update(ack);
        let Some(row) = self.harq_row(DL, ui, h, slot, ack) else { return };
        sink.slot(row);
        if let Some((tb, delivered)) = self.ues[ui].link[DL].harq[h].feedback(ack, max, next) {
            if !delivered {
                self.harq_lost(now, ui, tb, Dir::Dl, sink);
            }
        }
    }

    /// The `slot_events` row of HARQ process `h`'s TB of UE `ui` in direction `d`, sent in `slot`
    /// and decoded (`ack`) or not; `None` when the process holds no TB.
    fn harq_row(&self, d: usize, ui: usize, h: usize, slot: u64, ack: bool) -> Option<SlotEvent> {
        let u = &self.ues[ui];
        let link = &u.link[d];
        let hp = &link.harq[h];
        let tb = hp.tb.as_ref()?;
        let SlotPoint { t, sfn, slot_in_frame } = self.grid.point(slot);
        let dl = d == DL;
        Some(SlotEvent {
            t_ns: t,
            slot,
            sfn,
            slot_in_frame,
            dir: if dl { Dir::Dl } else { Dir::Ul },
            ue: Some(ui as u32),
            rnti: Some(u.rnti),
            prbs: tb.prbs,
            mcs: Some(tb.mcs),
            tbs: Some(tb.tbs),
            // The UL is single-layer in the model (docs/model.md).
            layers: Some(if dl { self.cfg.cell.layers } else { 1 }),
            harq_id: Some(h as u8),
            rv: Some(rv(hp.nof_tx - 1)),
            ndi: Some(hp.ndi),
            retx_index: Some((hp.nof_tx - 1) as u8),
            ack: Some(ack),
            bsr_bytes: tb.bsr,
            // The CQI the UE reported (DL only: the UL has no CQI).
            cqi: dl.then(|| channel::cqi_for_sinr(link.csi_sinr)),
            sinr_db: Some(link.sinr.at(t) as f32),
            prbs_used: None,
            prbs_total: None,
            nof_ues_scheduled: None,
        })
    }

    fn harq_lost<S: Sink>(&mut self, now: Instant, ui: usize, tb: Tb, dir: Dir, sink: &mut S) {
        self.stats.harq_fail[dir_idx(dir)] += 1;
        let node = if dir == Dir::Dl { Node::GnbDu } else { Node::Ue };
        self.control(
            sink,
            now,
            node,
            Layer::Mac,
            "harq_fail",
            Some(ui as u32),
            None,
            None,
            Some(f64::from(tb.tbs)),
            String::new(),
        );
        // RLC UM complete SDUs are lost with the TB; AM recovers by ARQ, and UM segments are dropped
        // by the receiver's t-Reassembly.
        for (di, pdu) in tb.pdus {
            if let RlcPdu::Data { sdu, whole: true, .. } = pdu {
                let d = &self.ues[ui].drbs[usize::from(di)];
                let um = d.gnb_rlc_is_um();
                if um {
                    self.drop_packet(sink, now, node, Layer::Mac, &sdu.pkt, Reason::HarqMaxRetx);
                }
            }
        }
    }

    fn schedule_ul<S: Sink>(&mut self, s: u64, u_slot: u64, sink: &mut S) {
        let t = self.grid.start(s);
        let mut free = self.prbs;
        let symbols = 14 - u32::from(self.cfg.cell.dmrs_symbols).min(1);
        let max_ues = self.cfg.cell.scheduler.max_ues_per_slot;
        let mut n = 0;
        // Retransmissions (adaptive: same PRBs and MCS).
        for ui in 0..self.ues.len() {
            for h in 0..self.ues[ui].link[UL].harq.len() {
                let hp = &self.ues[ui].link[UL].harq[h];
                let ready = matches!(hp.state, HarqState::PendingRetx { ready } if ready <= s);
                let Some(tb) = hp.tb.as_ref() else { continue };
                if !ready || tb.prbs > free || n >= max_ues || self.ues[ui].grants.contains_key(&u_slot) {
                    continue;
                }
                free -= tb.prbs;
                n += 1;
                self.ues[ui].link[UL].harq[h].retx();
                self.ues[ui].grants.insert(u_slot, UlGrant { harq: h as u8, new: None });
            }
        }
        let mut cands = Vec::new();
        for ui in 0..self.ues.len() {
            let u = &self.ues[ui];
            if (u.ul_est == 0 && !u.sr_received)
                || u.grants.contains_key(&u_slot)
                || !u.link[UL].harq.iter().any(|h| h.state == HarqState::Idle)
            {
                continue;
            }
            let mcs = self.mcs(ui, UL);
            let rate = f64::from(self.tbs.tbs_for(self.table[UL], mcs, symbols, 1));
            cands.push(Candidate { ue: ui, rate });
        }
        let mut served = vec![0u64; self.ues.len()];
        for ui in self.scheduler.order(Dir::Ul, &cands) {
            if free == 0 || n >= max_ues {
                break;
            }
            let mcs = self.mcs(ui, UL);
            let u = &self.ues[ui];
            let want = if u.ul_est > 0 { u.ul_est + 8 } else { u64::from(self.cfg.cell.pusch.sr_grant_bytes) };
            let (mut prbs, _) = self.tbs.prbs_for(self.table[UL], mcs, symbols, want);
            prbs = prbs.min(free);
            let tbs = self.tbs.tbs_for(self.table[UL], mcs, symbols, prbs);
            if tbs < 8 {
                continue;
            }
            free -= prbs;
            n += 1;
            served[ui] = u64::from(tbs);
            let h = self.ues[ui].link[UL]
                .harq
                .iter()
                .position(|h| h.state == HarqState::Idle)
                .expect("candidate has an idle process");
            // Reserve the process now; the TB is built by the UE at the PUSCH slot.
            let u = &mut self.ues[ui];
            u.link[UL].harq[h].state = HarqState::WaitAck;
            u.grants.insert(u_slot, UlGrant { harq: h as u8, new: Some((prbs, mcs, tbs)) });
            u.ul_est = u.ul_est.saturating_sub(u64::from(tbs));
            u.sr_received = false;
            self.control(
                sink,
                t,
                Node::GnbDu,
                Layer::Mac,
                "grant",
                Some(ui as u32),
                None,
                Some(u_slot as i64),
                Some(f64::from(tbs)),
                String::new(),
            );
        }
        self.scheduler.served(Dir::Ul, &served);
    }

    fn transmit_pusch<S: Sink>(&mut self, s: u64, t: Instant, sfn: u16, sif: u8, sink: &mut S) {
        let symbols = 14 - u32::from(self.cfg.cell.dmrs_symbols).min(1);
        let mut used = 0u16;
        let mut n = 0u16;
        for ui in 0..self.ues.len() {
            let Some(grant) = self.ues[ui].grants.remove(&s) else { continue };
            let h = usize::from(grant.harq);
            n += 1;
            if let Some((prbs, mcs, tbs)) = grant.new {
                // New TB built now by the UE: BSR (if triggered or padding room) + RLC PDUs.
                let bsr_room = if self.ues[ui].bsr_triggered { BsrFormat::Long.ce_bytes() } else { 0 };
                let mut pdus = self.pull(ui, tbs.saturating_sub(bsr_room), false, t, sink);
                let left = self.ue_ul_buffer(ui);
                let used_bytes: u32 =
                    pdus.iter().map(|(_, p)| p.bytes() + mac_subheader(p.bytes())).sum::<u32>() + bsr_room;
                let padding_bsr = tbs.saturating_sub(used_bytes) >= BsrFormat::Long.ce_bytes();
                let bsr = (self.ues[ui].bsr_triggered || padding_bsr).then_some(left);
                if bsr.is_some() {
                    let u = &mut self.ues[ui];
                    u.bsr_triggered = false;
                    let p = self.cfg.cell.mac_cell_group.bsr_cfg.periodic_bsr_timer;
                    u.periodic_bsr_at = (p > 0).then_some(t + p * MS);
                    self.control(
                        sink,
                        t,
                        Node::Ue,
                        Layer::Mac,
                        "bsr",
                        Some(ui as u32),
                        None,
                        None,
                        Some(left as f64),
                        format!("{{\"index\":{}}}", BsrFormat::Long.index(left)),
                    );
                }
                pdus.shrink_to_fit();
                self.ues[ui].link[UL].harq[h].new_tx(Tb { pdus, mcs, prbs, tbs, symbols, bsr });
            }
            used += self.ues[ui].link[UL].harq[h].tb.as_ref().map_or(0, |tb| tb.prbs);
            let u = &self.ues[ui];
            let hp = &u.link[UL].harq[h];
            let Some(tb) = hp.tb.as_ref() else { continue };
            let retx = hp.nof_tx - 1;
            let start = t + self.grid.symbol_ns();
            self.tb_sent(sink, start, Node::Ue, &tb.pdus, retx);
            let p_err = channel::bler(self.table[UL], tb.mcs, u.link[UL].sinr.at(t), hp.nof_tx);
            self.stats.harq_tx[1] += 1;
            if retx > 0 {
                self.stats.harq_retx[1] += 1;
            }
            let ok = !self.ues[ui].link[UL].rng.bernoulli(p_err);
            self.schedule(t + self.grid.slot_ns(), Action::UlDecode { ue: ui as u32, harq: h as u8, ok, slot: s });
        }
        sink.slot(SlotEvent {
            prbs: used,
            prbs_used: Some(used),
            prbs_total: Some(self.prbs),
            nof_ues_scheduled: Some(n),
            ..SlotEvent::cell(t, s, sfn, sif, Dir::Ul)
        });
    }

    fn ul_decode<S: Sink>(&mut self, now: Instant, ui: usize, h: usize, ok: bool, slot: u64, sink: &mut S) {
        let max = u32::from(self.cfg.cell.pusch.max_nof_harq_retxs);
        self.ues[ui].link[UL].olla.update(ok);
        let Some(row) = self.harq_row(UL, ui, h, slot, ok) else { return };
        sink.slot(row);
        let hp = &self.ues[ui].link[UL].harq[h];
        let Some(tb) = hp.tb.clone() else { return };
        if ok {
            let nof_tx = hp.nof_tx;
            if let Some(b) = tb.bsr {
                // The BSR reflects the buffer after this TB; grants already issued for later PUSCH
                // slots will serve part of it.
                let outstanding: u64 = self.ues[ui]
                    .grants
                    .range(slot + 1..)
                    .filter_map(|(_, g)| g.new)
                    .map(|(_, _, tbs)| u64::from(tbs))
                    .sum();
                let idx = BsrFormat::Long.index(b);
                self.ues[ui].ul_est = BsrFormat::Long.bytes(idx).saturating_sub(outstanding);
            }
            self.receive_tb(now, ui, &tb.pdus, nof_tx, false, sink);
        }
        let next = slot + 1;
        if let Some((tb, delivered)) = self.ues[ui].link[UL].harq[h].feedback(ok, max, next.max(self.grid.at(now))) {
            if !delivered {
                self.harq_lost(now, ui, tb, Dir::Ul, sink);
            }
        }
        self.ue_data_arrived(ui);
    }

    // ----------------------------------------------------------------- driver entry points

    /// Runs everything due at or before `now`.
    pub fn handle_timeout<S: Sink>(&mut self, now: Instant, sink: &mut S) {
        self.handle_timeout_bounded(now, usize::MAX, sink);
    }

    /// Runs at most `max_steps` of the actions due at or before `now`, in the same order as
    /// [`Stack::handle_timeout`]; returns whether more are due. A wall-clock driver interleaves
    /// packet I/O between bounded calls, so that a slot that falls behind cannot starve it.
    pub fn handle_timeout_bounded<S: Sink>(&mut self, now: Instant, max_steps: usize, sink: &mut S) -> bool {
        for _ in 0..max_steps {
            match self.heap.peek() {
                Some(Reverse(top)) if top.t <= now => {}
                _ => return false,
            }
            let Some(Reverse(Scheduled { t, action, .. })) = self.heap.pop() else { return false };
            self.run(t, action, sink);
        }
        self.heap.peek().is_some_and(|Reverse(top)| top.t <= now)
    }

    fn run<S: Sink>(&mut self, t: Instant, action: Action, sink: &mut S) {
        match action {
            Action::N6Arrive(p) => {
                self.emit(sink, t, Node::Upf, Layer::N6, Point::Arrive, &p);
                self.submit(t, ExecId::Upf(p.slice), Job { p, count: 0, len: p.bytes }, sink);
            }
            Action::ExecDone { exec, job, started } => self.exec_done(t, exec, job, started, sink),
            Action::N3Arrive(job) => {
                if job.p.dir == Dir::Dl {
                    let mut e = self.ev(t, Node::GnbCu, Layer::N3, Point::Arrive, &job.p);
                    e.bytes = job.len;
                    sink.packet(e);
                    self.submit(t, ExecId::Gtpu, job, sink);
                } else {
                    let mut e = self.ev(t, Node::Upf, Layer::N3, Point::Arrive, &job.p);
                    e.bytes = job.len;
                    sink.packet(e);
                    self.submit(t, ExecId::Upf(job.p.slice), Job { len: job.p.bytes, ..job }, sink);
                }
            }
            Action::MidhaulArrive(job) => {
                let p = job.p;
                let (ui, di) = (p.ue as usize, self.drb_idx_of(&p));
                if p.dir == Dir::Dl {
                    let mut e = self.ev(t, Node::GnbDu, Layer::F1u, Point::Arrive, &p);
                    e.sn = Some(job.count);
                    e.bytes = job.len;
                    sink.packet(e);
                    self.ues[ui].drbs[di].gnb_rlc.handle_sdu(t, Sdu { pkt: p, pdcp_sn: job.count, len: job.len });
                    self.drain_rlc(t, ui, di, false, sink);
                } else {
                    let mut e = self.ev(t, Node::GnbCu, Layer::F1u, Point::Arrive, &p);
                    e.sn = Some(job.count);
                    e.bytes = job.len;
                    sink.packet(e);
                    self.submit(t, ExecId::Cuup, job, sink);
                }
            }
            Action::N6Deliver(p) => {
                self.emit(sink, t, Node::Dn, Layer::N6, Point::Arrive, &p);
                self.deliver(sink, t, Node::Dn, &p);
            }
            Action::Slot(s) => self.handle_slot(s, sink),
            Action::DlDecode { ue, harq, ok } => self.dl_decode(t, ue as usize, usize::from(harq), ok, sink),
            Action::DlFeedback { ue, harq, ack, slot } => {
                self.dl_feedback(t, ue as usize, usize::from(harq), ack, slot, sink)
            }
            Action::UlDecode { ue, harq, ok, slot } => {
                self.ul_decode(t, ue as usize, usize::from(harq), ok, slot, sink)
            }
            Action::Timer { ue, drb, owner } => self.handle_timer(t, ue as usize, usize::from(drb), owner, sink),
            Action::DddsSend { ue, drb } => {
                let d = &mut self.ues[ue as usize].drbs[usize::from(drb)];
                d.ddds_pending = false;
                if let Some(h) = d.du_highest_tx {
                    let at = self.mh_ul.send(t, 32);
                    self.schedule(at, Action::DddsArrive { ue, drb, highest: h });
                }
            }
            Action::DddsArrive { ue, drb, highest } => {
                self.ues[ue as usize].drbs[usize::from(drb)].cu_pdcp_tx.handle_transmitted(highest);
                self.control(
                    sink,
                    t,
                    Node::GnbCu,
                    Layer::F1u,
                    "delivery_status",
                    Some(ue),
                    Some(drb + 1),
                    Some(i64::from(highest)),
                    None,
                    String::new(),
                );
                self.arm(t, ue as usize, usize::from(drb), TimerOwner::CuPdcpTx);
            }
        }
    }

    /// Ends the run at `now`: reports every packet still inside as an `in_flight` control event
    /// (with the packet id in `sn`) so that offered = delivered + dropped + in flight.
    pub fn finish<S: Sink>(&mut self, now: Instant, sink: &mut S) -> u64 {
        let mut live: Vec<Packet> = self.live.values().copied().collect();
        live.sort_by_key(|p| p.pkt);
        for p in &live {
            sink.control(ControlEvent {
                t_ns: now,
                node: Node::App,
                layer: Layer::App,
                kind: "in_flight",
                dir: Some(p.dir),
                ue: Some(p.ue),
                drb: Some(p.drb),
                sn: Some(p.pkt as i64),
                value: Some(f64::from(p.bytes)),
                detail: None,
            });
        }
        live.len() as u64
    }
}

impl Drb {
    fn gnb_rlc_is_um(&self) -> bool {
        self.gnb_rlc.is_um()
    }
}
