//! The one place where layers meet: a cell (gNB CU-UP + DU), its UEs, and a UPF stage per slice.
//!
//! Downlink: DN app → N6 → UPF (executor, GTP-U encapsulation) → N3 → CU-UP GTP-U rx executor →
//! CU-UP worker (SDAP, PDCP) → F1-U executor → midhaul → DU RLC queue → MAC scheduler / HARQ → air →
//! UE RLC reassembly → UE PDCP reordering → UE app.
//! Uplink: UE app → UE PDCP → UE RLC queue → SR/BSR → UL grant → PUSCH / HARQ → DU RLC → midhaul →
//! CU-UP worker (PDCP reordering) → GTP-U executor → N3 → UPF → N6 → DN app.
//!
//! Call contract (quinn-style): the driver calls [`Stack::send`] for new
//! packets and [`Stack::handle_timeout`] whenever `now` reaches [`Stack::poll_timeout`], with `now`
//! never decreasing; it drains [`Stack::poll_delivery`] after each call. All telemetry goes to the
//! sink passed to each call.
//!
//! Where each part is: `cu_up.rs` (UPF, N3, the CU-UP's executors, F1-U out), `bearer.rs` (a
//! bearer's RLC and PDCP entities at both ends, their outputs and timers), `air.rs` (slots, the
//! gNB MAC's scheduling, TBs, HARQ), `ue.rs` (the per-UE state); this file holds the types, the
//! construction, the driver's entry points and the telemetry helpers.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use scout_events::{Dir, Layer, Node, PacketEvent, Point, Queue, Reason, Sink, SlotEvent};

use crate::config::*;
use crate::control::Control;
// The stack's configuration types, where its callers have always found them.
pub use crate::config::{ConfigError, StackConfig, UeSpec, MAX_SR_PERIOD_SLOTS};
use crate::executor::{Executor, Link, Submit};
use crate::f1u::F1uTx;
use crate::mac::anbr::{AnbrParams, Recommendation};
use crate::mac::gnb::{GnbMac, SlotBudget, Tb, DL, MIN_TB_BYTES, UL};
use crate::mac::harq::rv;
use crate::mac::lcp::{LchCfg, Lcp};
use crate::mac::ue::{UeMac, UlGrant};
use crate::packet::Packet;
use crate::pdcp::{PdcpRx, PdcpTx, RxOut, TxVerdict};
use crate::phy::channel::SinrSource;
use crate::phy::link;
use crate::phy::slot::{SlotGrid, SlotPoint};
use crate::phy::tdd::Duplex;
use crate::rlc::l4s::{L4sMark, CE, ECT0, ECT1};
use crate::rlc::{self, RlcEntity, RlcOut, RlcPdu, Sdu};
use crate::rng::Rng;
use crate::Instant;

use self::agenda::Agenda;

mod agenda;
mod air;
mod bearer;
mod cu_up;
#[cfg(test)]
mod tests;
mod ue;

use self::ue::*;

/// GTP-U over UDP/IPv4 with the PDU Session Container: IPv4 20 + UDP 8 + GTP-U 8 + optional fields 4
/// + PDU Session Container extension 4 (TS 29.281 §5.1, TS 38.415 §5.5.2).
pub const GTPU_OVERHEAD: u32 = 44;

/// A packet an application sends: its direction, flow, UE, the index of the UE's DRB that carries
/// it, its IP size and the ECN field of its IP header (RFC 3168: 0 Not-ECT, 1 ECT(1), 2 ECT(0),
/// 3 CE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offer {
    pub dir: Dir,
    pub flow: u32,
    pub ue: u32,
    pub drb: usize,
    pub bytes: u32,
    pub ecn: u8,
}

impl Offer {
    /// A Not-ECT packet.
    pub fn new(dir: Dir, flow: u32, ue: u32, drb: usize, bytes: u32) -> Offer {
        Offer { dir, flow, ue, drb, bytes, ecn: 0 }
    }

    /// With the ECN field `ecn`.
    pub fn ecn(self, ecn: u8) -> Offer {
        Offer { ecn, ..self }
    }
}

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
    /// Uplink packets handed to a slice's real UPF at the gNB's N3 (`upf_process`), and
    /// downlink packets that came from one: their journeys in the model end or begin there.
    pub to_core_pkts: u64,
    pub from_core_pkts: u64,
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

/// The stack's links, each a lane of its agenda.
#[derive(Clone, Copy, Debug)]
enum LinkId {
    N6Dl,
    N6Ul,
    N3Dl,
    N3Ul,
    MidhaulDl,
    MidhaulUl,
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
    DlDecode { ue: u32, harq: u8, ok: bool, slot: u64 },
    DlFeedback { ue: u32, harq: u8, ack: bool, slot: u64 },
    UlDecode { ue: u32, harq: u8, ok: bool, slot: u64 },
    Timer { ue: u32, drb: u8, owner: TimerOwner },
    DddsSend { ue: u32, drb: u8 },
    DddsArrive { ue: u32, drb: u8, highest: u32, desired: u64 },
}

/// The cell, its UEs, the CU-UP and the UPF.
pub struct Stack {
    cfg: StackConfig,
    duplex: Duplex,
    grid: SlotGrid,
    prbs: u16,
    sr_period_slots: u64,
    csi_period_slots: u64,
    /// CSI reports on their way: (the slot from which the gNB uses it, UE, CQI, RI), in that order.
    csi_pending: std::collections::VecDeque<(u64, usize, u8, u8)>,
    /// Slots from a CSI-RS measurement to the earliest report of it: n_CSI_ref = 4·2^µ (TS 38.214
    /// §5.2.2.5, periodic CSI on one CSI-RS resource).
    csi_ref_slots: u64,
    ues: Vec<Ue>,
    /// Some UE's link is replayed from a recording (`phy::replay`): its MCS is set before each
    /// scheduling decision.
    replaying: bool,
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
    agenda: Agenda<Action>,
    /// The gNB's MAC: scheduling, HARQ, link adaptation, the UEs' UL buffers as it knows them.
    mac: GnbMac,
    next_pkt: u64,
    live: IdMap<Packet>,
    deliveries: Vec<Delivery>,
    /// Uplink packets leaving at the gNB's N3 for a real UPF (`SliceCfg::upf_process`).
    handoffs: Vec<Delivery>,
    /// Per slice: its UPF is a real process outside the model.
    upf_process: Vec<bool>,
    /// ANBR recommendations the gNB sent, for the driver (the UE's applications).
    recommendations: Vec<Recommendation>,
    /// Retransmission events for the driver, when it asked for them (`keep_retx_events`): (UE,
    /// direction, end, T_M).
    retx_events: Option<Vec<(u32, Dir, Instant, i64)>>,
    pub stats: Stats,
}

const MS: i64 = 1_000_000;

fn dir_idx(d: Dir) -> usize {
    d as usize
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
        let Checked { mu, prbs, duplex, sr_period_slots, csi_period_slots } = check(&cfg)?;
        let c = &cfg.cell;
        let seed = cfg.seed;
        let mut ues: Vec<Ue> = cfg.ues.iter().enumerate().map(|(i, spec)| Ue::new(i, spec, &cfg, seed)).collect();
        // SR occasions (TS 38.213 §9.2.4: slot n with (n − offset) mod period = 0) are given to each
        // UE on a slot that carries UL symbols, round robin over those slots, as srsRAN places PUCCH
        // SR resources in UL slots; an offset on a DL-only slot would never let the UE ask for a grant.
        let ul_offsets: Vec<u64> = (0..sr_period_slots).filter(|r| duplex.slot_kind(*r).ul_symbols > 0).collect();
        for (i, u) in ues.iter_mut().enumerate() {
            u.mac.sr_offset =
                if ul_offsets.is_empty() { i as u64 % sr_period_slots } else { ul_offsets[i % ul_offsets.len()] };
        }
        let upf =
            cfg.core.slices.iter().map(|s| Executor::new(&s.upf, Rng::new(seed, &format!("upf.{}", s.name)))).collect();
        let csi: Vec<[f64; 2]> = cfg.ues.iter().map(|u| [u.dl_sinr.at(0), u.ul_sinr.at(0)]).collect();
        let mut mac = GnbMac::new(c, &duplex, prbs, &csi);
        // A replayed UE starts from the recording's first CSI report (phy::replay).
        for (ui, u) in cfg.ues.iter().enumerate() {
            if let Some((cqi, ri)) = u.dl_sinr.replayed_csi(0) {
                mac.csi_report(ui, cqi, ri);
            }
        }
        // Until its first rank indicator a UE whose channel models antennas gets the configured
        // layers, within what its channel carries.
        for (ui, u) in cfg.ues.iter().enumerate() {
            if let Some(most) = u.dl_sinr.max_layers() {
                let l = &mut mac.ue_mut(ui).link[DL];
                l.layers = l.layers.min(most).max(1);
            }
        }
        // Connection setup carried each UE's first power headroom report (TS 38.321 §5.4.6: one is
        // triggered when the PHR function is configured), on a one-PRB PUSCH.
        for (ui, u) in cfg.ues.iter().enumerate() {
            if let Some(ph) = u.ul_sinr.power_headroom_db(0, 1) {
                mac.phr_received(ui, air::ph_report_db(ph), 1);
            }
        }
        for (ui, u) in ues.iter().enumerate() {
            mac.configure_anbr(ui, &u.drbs.iter().map(|d| d.anbr).collect::<Vec<_>>());
        }
        let mut stack = Stack {
            duplex,
            grid: SlotGrid::new(mu),
            prbs,
            sr_period_slots,
            csi_period_slots,
            csi_pending: Default::default(),
            csi_ref_slots: 4 << mu,
            replaying: ues.iter().any(|u| u.air.iter().any(|a| matches!(a.sinr, SinrSource::Replay(_)))),
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
            agenda: Agenda::new(),
            mac,
            next_pkt: 0,
            live: IdMap::default(),
            deliveries: Vec::new(),
            handoffs: Vec::new(),
            upf_process: cfg.core.slices.iter().map(|s| s.upf_process).collect(),
            recommendations: Vec::new(),
            retx_events: None,
            stats: Stats::default(),
            cfg,
        };
        stack.schedule(0, Action::Slot(0));
        Ok(stack)
    }

    /// Cell facts for `run.json` and the UE feed's first line: what the UE's RRC configuration
    /// tells it, and the period of its uplink buffer's delay derived from them
    /// ([`Stack::ul_buffer_period_ns`]: Gandalf's low-pass needs it).
    pub fn describe(&self) -> String {
        let bsr = &self.cfg.cell.mac_cell_group.bsr_cfg;
        format!(
            "{{\"prbs\":{},\"slot_ns\":{},\"pattern\":\"{}\",\"sr_period_slots\":{},\"periodic_bsr_ms\":{},\"retx_bsr_ms\":{},\"ul_buffer_period_ns\":{}}}",
            self.prbs,
            self.grid.slot_ns(),
            self.duplex.describe(),
            self.sr_period_slots,
            bsr.periodic_bsr_timer,
            bsr.retx_bsr_timer,
            self.ul_buffer_period_ns()
        )
    }

    /// The period of the delay a UE's uplink buffer adds (seed 004 §3.2, §4.3.2): the UE may send
    /// only in the UL slots of the TDD pattern, which repeats every duplex period (TS 38.213
    /// §11.1); with data waiting it reports its buffer every periodicBSR-Timer (TS 38.321
    /// §5.4.5), and once its buffer has emptied new data waits for its next scheduling-request
    /// occasion (§5.4.4; srsRAN's `sr_period_ms`). The buffer's delay repeats with the least
    /// common multiple of the three (of the other two when the timer is infinity). In ns.
    pub fn ul_buffer_period_ns(&self) -> i64 {
        let gcd = |mut a: i64, mut b: i64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let lcm = |a: i64, b: i64| a / gcd(a, b) * b;
        let slot = self.grid.slot_ns();
        let mut period = lcm(self.duplex.period() as i64 * slot, self.sr_period_slots as i64 * slot);
        let bsr = self.cfg.cell.mac_cell_group.bsr_cfg.periodic_bsr_timer;
        if bsr > 0 {
            period = lcm(period, bsr * MS);
        }
        period
    }

    pub fn nof_prbs(&self) -> u16 {
        self.prbs
    }

    /// The number of UEs in the cell.
    /// Each UE's DL and UL SINR source (its radio link, where modelled).
    pub fn sinr_sources(&self) -> Vec<(&crate::phy::channel::SinrSource, &crate::phy::channel::SinrSource)> {
        self.ues.iter().map(|u| (&u.air[0].sinr, &u.air[1].sinr)).collect()
    }

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
        self.agenda.push(t, action);
    }

    /// Schedules the arrival at the far end of `link` (its arrivals come in the order they are
    /// sent: one lane of the agenda).
    fn schedule_arrival(&mut self, link: LinkId, t: Instant, action: Action) {
        self.agenda.push_in_lane(link as usize, t, action);
    }

    /// When the stack next needs [`Stack::handle_timeout`].
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.agenda.next_at()
    }

    /// Packets delivered to applications since the last call.
    pub fn poll_delivery(&mut self) -> Option<Delivery> {
        self.deliveries.pop()
    }

    /// Drains all deliveries, oldest first.
    pub fn take_deliveries(&mut self) -> Vec<Delivery> {
        std::mem::take(&mut self.deliveries)
    }

    /// Drains the uplink packets that left at the gNB's N3 for a real UPF, oldest first: the
    /// driver puts each into its GTP-U tunnel.
    pub fn take_handoffs(&mut self) -> Vec<Delivery> {
        std::mem::take(&mut self.handoffs)
    }

    /// The slice of UE `ue`.
    pub fn slice_of(&self, ue: u32) -> u8 {
        self.ues[ue as usize].slice
    }

    /// The QFI of UE `ue`'s DRB `drb_idx`.
    pub fn qfi_of(&self, ue: u32, drb_idx: usize) -> u8 {
        self.ues[ue as usize].drbs[drb_idx].qfi
    }

    /// A downlink packet that a real UPF sent into the gNB's tunnel arrives at the gNB's N3 at
    /// `now` (`offer.bytes`: the inner packet) and goes on through GTP-U, SDAP and PDCP as any
    /// other. Its journey in the model begins here. Returns its id.
    pub fn arrive_n3<S: Sink>(&mut self, now: Instant, offer: Offer, sink: &mut S) -> u64 {
        debug_assert_eq!(offer.dir, Dir::Dl);
        let p = self.new_packet(&offer);
        self.stats.from_core_pkts += 1;
        let len = p.bytes + GTPU_OVERHEAD;
        self.run(now, Action::N3Arrive(Job { p, count: 0, len }), sink);
        p.pkt
    }

    /// The ANBR recommendations sent since the last call, oldest first (`qos[].anbr`): what each
    /// UE's MAC hands its applications (TS 26.114 §10.7).
    pub fn take_recommendations(&mut self) -> Vec<Recommendation> {
        std::mem::take(&mut self.recommendations)
    }

    /// From now on, keep each retransmission event (`retx_event`) for
    /// [`Stack::take_retx_events`]: what the UE's RAN feed tells its applications.
    pub fn keep_retx_events(&mut self) {
        self.retx_events.get_or_insert_with(Vec::new);
    }

    /// The retransmission events since the last call, oldest first: (UE, direction, when the
    /// retransmitted TB was decoded, the retransmission delay T_M in ns).
    pub fn take_retx_events(&mut self) -> Vec<(u32, Dir, Instant, i64)> {
        self.retx_events.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// UE `ue`'s application asks at `now` for `bps` on its DRB `drb` (index; the UE's modem
    /// command, 3GPP TS 27.007 +CGBRRREQ): the UE's MAC sends a Recommended bit rate query in its
    /// next PUSCH unless bitRateQueryProhibitTimer runs (TS 38.321 §5.18.10); the gNB answers with
    /// a recommendation (`take_recommendations`). The query does not trigger a scheduling request:
    /// a UE with no UL data holds it until it has some. Whether the MAC took it (`false`: the
    /// bearer has no ANBR, the timer runs, or a query waits).
    pub fn query_bit_rate<S: Sink>(&mut self, now: Instant, ue: u32, drb: usize, bps: u64, sink: &mut S) -> bool {
        let Some(u) = self.ues.get_mut(ue as usize) else { return false };
        let Some(a) = u.drbs.get(drb).and_then(|d| d.anbr) else { return false };
        if !u.mac.query_bit_rate(now, drb as u8, bps, a.query_prohibit_ns) {
            return false;
        }
        self.control(sink, now, Control::AnbrQuery { node: Node::Ue, ue, drb: drb as u8 + 1, bps });
        true
    }

    /// Packets currently inside the system.
    pub fn in_flight(&self) -> impl Iterator<Item = &Packet> {
        self.live.values()
    }

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

    /// Writes control event `c` at `t` (its row: [`Control::row`]).
    fn control<S: Sink>(&self, sink: &mut S, t: Instant, c: Control) {
        sink.control(c.row(t));
    }

    fn new_packet(&mut self, o: &Offer) -> Packet {
        let u = &self.ues[o.ue as usize];
        let d = &u.drbs[o.drb];
        let (flow, ue, dir, bytes, ecn) = (o.flow, o.ue, o.dir, o.bytes, o.ecn);
        let p = Packet { pkt: self.next_pkt, flow, ue, dir, bytes, qfi: d.qfi, drb: d.id, slice: u.slice, ecn };
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

    /// An application sends a packet at `now`: a DN application towards a UE (`Dir::Dl`, entering
    /// at N6) or a UE's towards the DN (`Dir::Ul`, entering at the UE's PDCP). Returns its id.
    pub fn send<S: Sink>(&mut self, now: Instant, offer: Offer, sink: &mut S) -> u64 {
        let p = self.new_packet(&offer);
        let node = if offer.dir == Dir::Dl { Node::Dn } else { Node::Ue };
        self.emit(sink, now, node, Layer::App, Point::Tx, &p);
        if offer.dir == Dir::Dl {
            let at = self.n6_dl.send(now, p.bytes);
            self.schedule_arrival(LinkId::N6Dl, at, Action::N6Arrive(p));
        } else {
            self.send_ul(now, p, offer.drb, sink);
        }
        p.pkt
    }

    /// The UE's PDCP and RLC take packet `p` of DRB `drb_idx`.
    fn send_ul<S: Sink>(&mut self, now: Instant, p: Packet, drb_idx: usize, sink: &mut S) {
        let ue = p.ue;
        // UE PDCP: zero processing time in the model (docs/model.md).
        if let Some((count, len)) = self.pdcp_send(sink, now, Node::Ue, ue as usize, drb_idx, &p) {
            let was_empty = self.ue_ul_buffer(ue as usize) == 0;
            self.ues[ue as usize].drbs[drb_idx].ue_rlc.handle_sdu(now, Sdu { pkt: p, pdcp_sn: count, len });
            self.drain_rlc(now, ue as usize, drb_idx, true, sink);
            // Regular BSR on new UL data when the buffer was empty (TS 38.321 §5.4.5), which
            // triggers an SR when no UL-SCH resource is available (§5.4.4).
            if was_empty {
                self.ues[ue as usize].mac.new_data();
            }
            self.arm(now, ue as usize, drb_idx, TimerOwner::UePdcpTx);
        }
    }

    fn ue_ul_buffer(&self, ue: usize) -> u64 {
        self.ues[ue].drbs.iter().map(|d| d.ue_rlc.buffer_status()).sum()
    }

    fn gnb_dl_buffer(&self, ue: usize) -> u64 {
        self.ues[ue].drbs.iter().map(|d| d.gnb_rlc.buffer_status()).sum()
    }

    /// Runs everything due at or before `now`.
    pub fn handle_timeout<S: Sink>(&mut self, now: Instant, sink: &mut S) {
        self.handle_timeout_bounded(now, usize::MAX, sink);
    }

    /// Runs at most `max_steps` of the actions due at or before `now`, in the same order as
    /// [`Stack::handle_timeout`]; returns whether more are due. A wall-clock driver interleaves
    /// packet I/O between bounded calls, so that a slot that falls behind cannot starve it.
    pub fn handle_timeout_bounded<S: Sink>(&mut self, now: Instant, max_steps: usize, sink: &mut S) -> bool {
        for _ in 0..max_steps {
            let Some((t, action)) = self.agenda.pop_due(now) else { return false };
            self.run(t, action, sink);
        }
        self.agenda.next_at().is_some_and(|t| t <= now)
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
            Action::DlDecode { ue, harq, ok, slot } => {
                self.dl_decode(t, ue as usize, usize::from(harq), ok, slot, sink)
            }
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
                    let desired = d.du_desired_buffer;
                    let at = self.mh_ul.send(t, 32);
                    self.schedule_arrival(LinkId::MidhaulUl, at, Action::DddsArrive { ue, drb, highest: h, desired });
                }
            }
            Action::DddsArrive { ue, drb, highest, desired } => {
                let (ui, di) = (ue as usize, usize::from(drb));
                let d = &mut self.ues[ui].drbs[di];
                d.cu_pdcp_tx.handle_transmitted(highest);
                d.cu_pdcp_tx.handle_desired_buffer_size(desired);
                d.cu_f1u.handle_ddds(Some(highest), desired);
                self.control(sink, t, Control::DeliveryStatus { ue, drb: drb + 1, highest, desired });
                self.f1u_release(t, ui, di, sink);
                self.arm(t, ui, di, TimerOwner::CuPdcpTx);
            }
        }
    }

    /// Ends the run at `now`: reports every packet still inside as an `in_flight` control event
    /// (with the packet id in `sn`) so that offered = delivered + dropped + in flight.
    pub fn finish<S: Sink>(&mut self, now: Instant, sink: &mut S) -> u64 {
        let mut live: Vec<Packet> = self.live.values().copied().collect();
        live.sort_by_key(|p| p.pkt);
        for &packet in &live {
            self.control(sink, now, Control::InFlight { packet });
        }
        live.len() as u64
    }
}
