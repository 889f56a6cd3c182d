//! From log entries to events: the downlink DRB journey of each packet at info level.
//!
//! | log line (srsRAN) | event |
//! |---|---|
//! | `GTPU … DL teid=…: RX SDU. sdu_len=` | `gtpu proc_end` at the CU (a new packet) |
//! | `PDCP … DRBn DL: TX PDU. pdu_len= sn= count=` | `pdcp proc_end`, `sn` = COUNT |
//! | `PDCP … Drop burst finished. nof_sdus=N` | `pdcp drop` (`pdcp_early_drop`) for N packets |
//! | `RLC … DRBn DL: TX SDU. sdu_len= pdcp_sn= queued_sdus= queued_bytes=` | `rlc enqueue` on `rlc_sdu` |
//! | (inferred) the SDU before it in the queue completes, or the queue was empty | `rlc hol` |
//! | `RLC … DRBn DL: TX PDU. si= sn= [so=] pdu_len=` / `RETX PDU. … retx_count=` | `rlc segment` |
//! | `MAC [sfn.slot] DL PDU: ue= rnti= size=` | `mac tx` for the RLC PDUs built for it |
//!
//! Uplink (the reverse, as far as the gNB sees it):
//!
//! | log line (srsRAN) | event |
//! |---|---|
//! | `MAC [sfn.slot] UL rnti= ue= subPDUs: [lcid=4: len=N, …]` | (links: rnti, byte check) |
//! | `RLC … DRBn UL: RX PDU. pdu_len= dc=data si= sn= [so=]` | `rlc segment` at the DU (the first starts the packet) |
//! | `RLC … DRBn UL: RX SDU. sn= sdu_len=` | `rlc deliver` (reassembled) |
//! | `PDCP … DRBn UL: RX PDU. type=data pdu_len= sn= count=` | `pdcp proc_begin` at the CU, `sn` = COUNT |
//! | `PDCP … DRBn UL: RX SDU. count=` | `pdcp deliver` (in order, after any reordering hold) |
//! | `GTPU … UL teid=…: TX PDU. pdu_len= teid= qfi=` | `gtpu proc_end` (towards N3) |
//!
//! Links that the lines state: PDCP SN → RLC SDU (`pdcp_sn`); UL RLC segments → SDU (RLC SN);
//! UL PDCP PDU → SDU (COUNT). Inferred for the UL: MAC subPDU → RLC PDU (adjacency, lengths equal);
//! RLC SDU → PDCP PDU and PDCP SDU → GTP-U PDU (per-bearer / per-UE order, lengths checked). Links that are **inferred** (listed
//! in `run.json` `links`): GTP-U SDU → PDCP PDU by per-UE order; RLC SN → RLC SDU by queue order;
//! RLC PDUs → MAC PDU by adjacency (the MAC line follows the RLC lines it carried); head of line.
//! UE identity: CU-UP lines (GTP-U, PDCP) and DU lines (RLC, MAC) use different UE indexes; they
//! are bound from the traffic by [`super::identity`], and every event carries the DU index.

use std::collections::{HashMap, VecDeque};

use scout_events::{ControlEvent, Dir, Layer, Node, PacketEvent, Point, Queue, Reason, Sink};

use super::identity::UeIds;
use super::message::{parse_message, Message};
use super::reader::Entry;

/// Per message name: how many lines, and the first one as (file index, line).
type MessageCounts = HashMap<String, (u64, (usize, u64))>;

/// Counts of what was turned into events and what was not, for `run.json`.
#[derive(Debug, Default, Clone)]
pub struct StitchStats {
    pub packets: u64,
    pub events: u64,
    /// Per-packet lines of a handled kind that could not be linked (by cause).
    pub unlinked: HashMap<&'static str, u64>,
    /// Entries of per-packet loggers whose message this version does not turn into events
    /// (by `logger: name`), with the first example's line.
    not_handled_by: HashMap<&'static str, MessageCounts>,
    /// Where each cause of `unlinked` was first met: (file index, line).
    pub unlinked_first: HashMap<&'static str, (usize, u64)>,
    /// Lines of signalling bearers (SRBs): not user-plane packets, counted only.
    pub srb_lines: u64,
    /// Packets dropped, by (layer, reason).
    pub drops: std::collections::BTreeMap<(&'static str, &'static str), u64>,
}

impl StitchStats {
    /// Messages of per-packet loggers not turned into events, as (`logger: message`, count, first line),
    /// most frequent first.
    pub fn not_handled(&self) -> Vec<(String, u64, (usize, u64))> {
        let mut v: Vec<_> = self
            .not_handled_by
            .iter()
            .flat_map(|(l, names)| names.iter().map(move |(n, &(c, line))| (format!("{l}: {n}"), c, line)))
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

#[derive(Default)]
struct RlcQueue {
    /// SDUs waiting, oldest first: (pkt, bytes).
    waiting: VecDeque<(u64, u32)>,
    /// PDCP SN → (packet, its PDCP COUNT where its PDCP PDU was linked), for the SDUs waiting
    /// (what a PDCP discard names).
    by_pdcp_sn: HashMap<u64, (u64, Option<u64>)>,
    /// RLC SN → (pkt, SDU bytes).
    by_sn: HashMap<u64, (u64, u32)>,
}

/// An RLC PDU waiting for the MAC PDU that carries it.
#[derive(Clone)]
struct MacItem {
    pkt: u64,
    drb: u8,
    sn: u64,
    so: u32,
    bytes: u32,
    retx: u8,
}

/// Stitches entries into events; time is µs since the epoch in the log, written as ns since `epoch_us`.
pub struct Stitcher {
    epoch_us: i64,
    next_pkt: u64,
    gtpu_pending: HashMap<u32, VecDeque<u64>>,
    /// DL, per CU-UP UE: how many packets at the front of `gtpu_pending` SDAP has logged (debug).
    sdap_done: HashMap<u32, usize>,
    /// DL, per (CU-UP UE, DRB): PDCP PDUs not yet seen by the DU's F1-U (debug): (packet, bytes).
    f1u_pending: HashMap<(u32, u8), VecDeque<(u64, u32)>>,
    /// DL, per (CU-UP UE, DRB): PDCP PDUs not yet seen by the CU-UP's F1-U bearer (debug).
    f1u_cu_pending: HashMap<(u32, u8), VecDeque<(u64, u32)>>,
    /// DL, per CU-UP UE: PDCP PDUs not yet sent as NR-U PDUs (split CU/DU apps): (packet, bytes),
    /// with their DRBs.
    nru_dl_pending: HashMap<u32, VecDeque<(u64, u32)>>,
    nru_drb: HashMap<u64, u8>,
    /// UL, per CU-UP UE: NR-U T-PDUs received by the CU-UP, waiting for their PDCP `RX PDU`
    /// line: (t_ns, bytes).
    nru_ul_arrived: HashMap<u32, VecDeque<(i64, u32)>>,
    /// Which node each input file logs, from its lines: bit 0 CU-UP (PDCP, SDAP, NG-U GTP-U),
    /// bit 1 DU (RLC, MAC). NR-U `TX PDU` lines read the same on both nodes.
    file_role: Vec<u8>,
    /// UL, per CU-UP UE: how many packets at the front of `gtpu_ul` SDAP has logged (debug).
    sdap_ul_done: HashMap<u32, usize>,
    /// (UE, DRB, PDCP SN) → (packet, bytes, PDCP COUNT), until its RLC SDU line.
    pdcp_by_sn: HashMap<(u32, u8, u64), (u64, u32, u64)>,
    rlc: HashMap<(u32, u8), RlcQueue>,
    mac_pending: HashMap<u32, Vec<MacItem>>,
    /// UL HARQ: PUSCH attempts of each (RNTI, HARQ process) not yet decoded: (t_ns of the
    /// transmission, decode end). From the PHY `PUSCH: … crc=KO` lines.
    harq_ul: HashMap<(u16, u8), Vec<Attempt>>,
    /// UL HARQ: the attempts of each RNTI's last decoded transport block (`crc=OK`), until its MAC
    /// line, then of the MAC PDU whose RLC lines are being read, per DU UE.
    tb_decoded: HashMap<u16, Vec<Attempt>>,
    tb_of_mac: HashMap<u32, (Option<u16>, Vec<Attempt>)>,
    /// DL HARQ: each RNTI's newest first-transmission grant: (SFN, slot, HARQ id).
    dl_grant: HashMap<u16, (u32, u32, u8)>,
    /// DL HARQ: the RLC PDUs of the transport block on each (RNTI, HARQ id), with the DU UE.
    dl_tb: HashMap<(u16, u8), (u32, Vec<MacItem>)>,
    /// UL: RLC PDUs of each UE's last MAC PDUs, waiting for their RLC RX PDU lines: (LCID, length).
    mac_ul: HashMap<u32, VecDeque<(u8, u32)>>,
    /// UL: SDUs being reassembled, (UE, DRB, RLC SN) → (packet, segments received as (SO, bytes)).
    rlc_rx: HashMap<(u32, u8, u64), (u64, Segments)>,
    /// UL: SDUs RLC delivered, waiting for their PDCP RX PDU line: (packet, SDU bytes).
    rlc_delivered: HashMap<(u32, u8), VecDeque<(u64, u32)>>,
    /// UL: PDCP PDUs received, (UE, DRB, COUNT) → (packet, PDU bytes), until delivered.
    pdcp_rx: HashMap<(u32, u8, u64), (u64, u32)>,
    /// UL: PDCP SDUs delivered, per UE, waiting for their GTP-U TX PDU line: (packet, SDU bytes).
    gtpu_ul: HashMap<u32, VecDeque<(u64, u32)>>,
    /// PDCP header bytes per (UE, bearer), from `PDCP configured. … sn_size=` (TS 38.323 §6.2.2:
    /// 2 bytes for 12-bit SNs, 3 for 18-bit) plus 4 bytes of MAC-I once integrity is on.
    pdcp_hdr: HashMap<(u32, u8), (u32, bool)>,
    /// RLC mode and SN size per (UE, bearer, UL?), from `RLC AM/UM configured. tx_sn_size=` /
    /// `rx_sn_size=` lines: (acknowledged mode, SN bits). Default: AM with 12-bit SNs.
    rlc_cfg: HashMap<(u32, u8, bool), (bool, u64)>,
    /// UL: RX_DELIV per (UE, DRB) — the first COUNT not yet delivered (TS 38.323 §5.2.2).
    rx_deliv: HashMap<(u32, u8), u64>,
    /// CU-UP ↔ DU UE indexes ([`super::identity`]).
    pub ids: UeIds,
    /// The entry being handled: (index of its file in the order given, line).
    pub at: (usize, u64),
    pub stats: StitchStats,
}

fn drb_of(m: &Message) -> Option<u8> {
    m.prefix.rb.and_then(|rb| rb.strip_prefix("DRB")).and_then(|n| n.parse().ok())
}

/// Takes the entry of an in-order queue that a line links to: the first of the next few whose
/// length fits, else the head. A line that is missing or logged out of order (split logs with equal
/// timestamps) then costs one link, not every link after it.
fn take_matching(q: &mut VecDeque<(u64, u32)>, fits: impl Fn(u32) -> bool) -> Option<(u64, u32)> {
    match q.iter().take(8).position(|&(_, l)| fits(l)) {
        Some(i) => q.remove(i),
        None => q.pop_front(),
    }
}

/// The loggers whose lines become packet events.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lg {
    Gtpu,
    Sdap,
    Pdcp,
    DuF1u,
    Rlc,
    Mac,
    CuF1u,
}

fn t_of(t_us: i64, epoch_us: i64) -> i64 {
    (t_us - epoch_us) * 1000
}

/// One PUSCH transmission of a transport block.
#[derive(Clone, Copy, Debug, Default)]
struct Attempt {
    tx_ns: i64,
    decoded_ns: i64,
    ok: bool,
}

/// Segments of an SDU received so far, as (SO, bytes).
type Segments = Vec<(u32, u32)>;

/// Bearers in one key space: SRBn is n, DRBn is `DRB0 + n`.
const DRB0: u8 = 32;

/// GTP-U header (8 bytes) plus the PDU Session Container extension header (8 bytes with the next
/// extension type byte and padding): what srsRAN's `TX PDU. pdu_len=` adds to the inner packet.
const GTPU_EXT_HDR: u64 = 16;

fn rb_key(m: &Message) -> Option<u8> {
    let rb = m.prefix.rb?;
    let n: u8 = rb[3..].parse().ok()?;
    match &rb[..3] {
        "SRB" => Some(n),
        _ => n.checked_add(DRB0),
    }
}

/// The MAC SDUs of a `UL rnti=… ue=… subPDUs: [lcid=4: len=56, SBSR: …, PAD: len=3]` entry, as
/// (LCID, length); MAC CEs and padding are not RLC PDUs.
fn ul_subpdus(body: &str) -> Vec<(u8, u32)> {
    let Some(i) = body.find("subPDUs: [") else { return Vec::new() };
    let list = body[i + 10..].trim_end().trim_end_matches(']');
    list.split(", ")
        .filter_map(|sub| {
            let sub = sub.trim().strip_prefix("lcid=")?;
            let (lcid, rest) = sub.split_once(": ")?;
            let len = rest.strip_prefix("len=")?.trim();
            Some((lcid.parse().ok()?, len.parse().ok()?))
        })
        .collect()
}

impl Stitcher {
    pub fn new(epoch_us: i64) -> Self {
        Stitcher {
            epoch_us,
            next_pkt: 0,
            gtpu_pending: HashMap::new(),
            sdap_done: HashMap::new(),
            f1u_pending: HashMap::new(),
            f1u_cu_pending: HashMap::new(),
            nru_dl_pending: HashMap::new(),
            nru_drb: HashMap::new(),
            nru_ul_arrived: HashMap::new(),
            file_role: Vec::new(),
            sdap_ul_done: HashMap::new(),
            harq_ul: HashMap::new(),
            dl_grant: HashMap::new(),
            dl_tb: HashMap::new(),
            tb_decoded: HashMap::new(),
            tb_of_mac: HashMap::new(),
            pdcp_by_sn: HashMap::new(),
            rlc: HashMap::new(),
            mac_pending: HashMap::new(),
            mac_ul: HashMap::new(),
            rlc_rx: HashMap::new(),
            rlc_delivered: HashMap::new(),
            pdcp_rx: HashMap::new(),
            gtpu_ul: HashMap::new(),
            pdcp_hdr: HashMap::new(),
            rx_deliv: HashMap::new(),
            rlc_cfg: HashMap::new(),
            ids: UeIds::default(),
            at: (0, 0),
            stats: StitchStats::default(),
        }
    }

    /// A DL packet event at `at` = (node, layer, point); the caller fills the layer's fields.
    fn ev(&mut self, t_ns: i64, at: (Node, Layer, Point), ue: u32, drb: Option<u8>, pkt: u64) -> PacketEvent {
        self.ev_dir(t_ns, at, Dir::Dl, ue, drb, pkt)
    }

    /// A UL packet event.
    fn ul(&mut self, t_ns: i64, at: (Node, Layer, Point), ue: u32, drb: Option<u8>, pkt: u64) -> PacketEvent {
        self.ev_dir(t_ns, at, Dir::Ul, ue, drb, pkt)
    }

    fn ev_dir(
        &mut self,
        t_ns: i64,
        at: (Node, Layer, Point),
        dir: Dir,
        ue: u32,
        drb: Option<u8>,
        pkt: u64,
    ) -> PacketEvent {
        self.stats.events += 1;
        PacketEvent { ue, drb, flow: ue, ..PacketEvent::new(t_ns, at, dir, pkt) }
    }

    fn new_pkt(&mut self) -> u64 {
        self.next_pkt += 1;
        self.stats.packets += 1;
        self.next_pkt
    }

    fn unlinked(&mut self, cause: &'static str) {
        *self.stats.unlinked.entry(cause).or_insert(0) += 1;
        self.stats.unlinked_first.entry(cause).or_insert(self.at);
    }

    /// The linked packet, or a new one when the line before it is missing (counted under `cause`).
    fn linked_or_new(&mut self, found: Option<u64>, cause: &'static str) -> u64 {
        match found {
            Some(p) => p,
            None => {
                self.unlinked(cause);
                self.new_pkt()
            }
        }
    }

    /// The (inferred) moment an RLC SDU reaches the head of its queue.
    fn hol<S: Sink>(&mut self, sink: &mut S, t: i64, ue: u32, drb: Option<u8>, pkt: u64, bytes: u32) {
        let mut h = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Hol), ue, drb, pkt);
        h.queue = Some(Queue::RlcSdu);
        h.bytes = bytes;
        sink.packet(h);
    }

    /// Handles one entry, writing its events to `sink`.
    pub fn entry<S: Sink>(&mut self, e: &Entry<'_>, sink: &mut S) {
        self.at.1 = e.line;
        let h = e.header;
        let logger = h.logger;
        // The logger as a code, so that each arm below compares a message name only for its own
        // logger (string matches of every arm on every entry were the ingest's largest cost).
        let lg = match logger {
            "GTPU" => Lg::Gtpu,
            "PDCP" => Lg::Pdcp,
            "RLC" => Lg::Rlc,
            "MAC" => Lg::Mac,
            "SDAP" => Lg::Sdap,
            "DU-F1-U" => Lg::DuF1u,
            "CU-F1-U" => Lg::CuF1u,
            l if l.starts_with("UL-PHY") || l == "PHY" => {
                if h.body.starts_with("PUSCH: ") {
                    self.pusch(h.t_us, h.body);
                }
                return;
            }
            "SCHED" => {
                // `UL HARQ rnti=… h_id=…: Discarding HARQ …` (23.10) or `rnti=… h_id=…: Discarding UL
                // HARQ process TB …`: the process gave up on its block; its failed attempts end here
                // (retransmissions may reuse rv 0, so only this line tells a new block apart).
                let b = h.body;
                if (b.starts_with("UL HARQ") || b.starts_with("rnti="))
                    && b.contains("Discarding")
                    && b.contains("UL HARQ")
                {
                    let f = super::message::parse_fields(b);
                    let get =
                        |k: &str| f.iter().find(|(key, _)| *key == k).and_then(|(_, v)| super::message::parse_num(v));
                    if let (Some(r), Some(hid)) = (get("rnti"), get("h_id")) {
                        self.harq_ul.remove(&(r as u16, hid as u8));
                    }
                } else if b.starts_with("Slot decisions") {
                    if let Some(slot) = h.slot {
                        self.dl_grants(t_of(h.t_us, self.epoch_us), slot, b, e.continuation, sink);
                    }
                }
                return;
            }
            _ => return,
        };
        let m = parse_message(h.body);
        let t = (h.t_us - self.epoch_us) * 1000;
        let ue = m.prefix.ue;
        let dl = m.prefix.dir == Some("DL");
        let ul = m.prefix.dir == Some("UL");
        let drb = drb_of(&m);
        let role = match lg {
            Lg::Pdcp | Lg::Sdap | Lg::CuF1u => 1,
            Lg::Gtpu if dl || ul => 1,
            Lg::Rlc | Lg::Mac | Lg::DuF1u => 2,
            _ => 0,
        };
        if role != 0 {
            if self.file_role.len() <= self.at.0 {
                self.file_role.resize(self.at.0 + 1, 0);
            }
            self.file_role[self.at.0] |= role;
        }
        let handled = match (lg, m.name) {
            (Lg::Gtpu, "RX SDU") if dl => {
                let (Some(ue), Some(len)) = (ue, m.num("sdu_len")) else { return self.unlinked("gtpu_fields") };
                let pkt = self.new_pkt();
                let mut ev = self.ev(t, (Node::GnbCu, Layer::Gtpu, Point::ProcEnd), ue, None, pkt);
                ev.bytes = len as u32;
                ev.qfi = m.get("qos_flow").and_then(|q| q.strip_prefix("QFI=")).and_then(|q| q.parse().ok());
                self.ids.cu_event(ev, sink);
                self.gtpu_pending.entry(ue).or_default().push_back(pkt);
                true
            }
            (Lg::Pdcp, "TX PDU") if dl && drb.is_some() && m.get("type") == Some("data") => {
                let (Some(ue), Some(len), Some(sn), Some(count)) = (ue, m.num("pdu_len"), m.num("sn"), m.num("count"))
                else {
                    return self.unlinked("pdcp_fields");
                };
                let pending = self.pop_gtpu_dl(ue);
                let pkt = self.linked_or_new(pending, "pdcp_without_gtpu");
                let mut ev = self.ev(t, (Node::GnbCu, Layer::Pdcp, Point::ProcEnd), ue, drb, pkt);
                ev.bytes = len as u32;
                ev.sn = Some(count as u32);
                self.ids.cu_event(ev, sink);
                self.pdcp_by_sn.insert((ue, drb.unwrap_or(0), sn), (pkt, len as u32, count));
                // Info-level logs of the gnb app have no F1-U lines: keep only a window.
                for f in [
                    self.f1u_pending.entry((ue, drb.unwrap_or(0))).or_default(),
                    self.f1u_cu_pending.entry((ue, drb.unwrap_or(0))).or_default(),
                    self.nru_dl_pending.entry(ue).or_default(),
                ] {
                    f.push_back((pkt, len as u32));
                    if f.len() > 4096 {
                        f.pop_front();
                    }
                }
                self.nru_drb.insert(pkt, drb.unwrap_or(0));
                if self.nru_drb.len() > 1 << 16 {
                    self.nru_drb.clear();
                }
                true
            }
            (Lg::Pdcp, "Drop burst finished") if dl => {
                let (Some(ue), Some(n)) = (ue, m.num("nof_sdus")) else { return self.unlinked("pdcp_fields") };
                for _ in 0..n {
                    let pending = self.pop_gtpu_dl(ue);
                    let pkt = self.linked_or_new(pending, "pdcp_drop_without_gtpu");
                    let mut ev = self.ev(t, (Node::GnbCu, Layer::Pdcp, Point::Drop), ue, drb, pkt);
                    ev.reason = Some(Reason::PdcpEarlyDrop);
                    self.ids.cu_event(ev, sink);
                    *self.stats.drops.entry(("pdcp", Reason::PdcpEarlyDrop.as_str())).or_insert(0) += 1;
                }
                true
            }
            (Lg::Rlc, "TX SDU") if dl && drb.is_some() => {
                let (Some(ue), Some(len), Some(psn)) = (ue, m.num("sdu_len"), m.num("pdcp_sn")) else {
                    return self.unlinked("rlc_fields");
                };
                let d = drb.unwrap_or(0);
                let cu = self.cu_up_for_rlc_sdu(ue, d, psn, len as u32, e.line, sink);
                let pdcp = cu.and_then(|cu| self.pdcp_by_sn.remove(&(cu, d, psn)));
                let count = pdcp.map(|(_, _, c)| c);
                let pkt = self.linked_or_new(pdcp.map(|(p, ..)| p), "rlc_sdu_without_pdcp");
                let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Enqueue), ue, drb, pkt);
                ev.bytes = len as u32;
                // The SDU's PDCP COUNT, as on every producer's RLC SDU rows (the line's `pdcp_sn`
                // wraps; unknown where its PDCP PDU was not linked).
                ev.sn = count.map(|c| c as u32);
                ev.queue = Some(Queue::RlcSdu);
                ev.queue_bytes = m.num("queued_bytes");
                ev.queue_pkts = m.num("queued_sdus").map(|q| q as u32);
                sink.packet(ev);
                let q = self.rlc.entry((ue, d)).or_default();
                q.waiting.push_back((pkt, len as u32));
                q.by_pdcp_sn.insert(psn, (pkt, count));
                if q.waiting.len() == 1 {
                    // An empty queue: the SDU is at the head of the line at once (inferred).
                    self.hol(sink, t, ue, drb, pkt, len as u32);
                }
                true
            }
            (Lg::Rlc, "TX PDU" | "RETX PDU") if dl && drb.is_some() && m.get("dc") == Some("data") => {
                let (Some(ue), Some(sn), Some(pdu_len), Some(si)) = (ue, m.num("sn"), m.num("pdu_len"), m.get("si"))
                else {
                    return self.unlinked("rlc_fields");
                };
                let d = drb.unwrap_or(0);
                // A RETX PDU is an ARQ retransmission whether or not the version logs `retx_count`
                // (23.10 does not).
                let retx = if m.name == "RETX PDU" { m.num("retx_count").unwrap_or(1).clamp(1, 255) as u8 } else { 0 };
                let so = m.num("so").unwrap_or(0);
                let q = self.rlc.entry((ue, d)).or_default();
                let starts = si == "full" || si == "first";
                let completes = si == "full" || si == "last";
                // AM header: 2 bytes with a 12-bit SN, 3 with an 18-bit SN; +2 for SO. Payload is
                // taken as pdu_len minus the smallest header consistent with the SDU size.
                let found = if starts && retx == 0 {
                    q.waiting.pop_front().inspect(|(p, len)| {
                        q.by_sn.insert(sn, (*p, *len));
                        q.by_pdcp_sn.retain(|_, v| v.0 != *p);
                    })
                } else {
                    q.by_sn.get(&sn).copied()
                };
                let Some((pkt, sdu_len)) = found else { return self.unlinked("rlc_pdu_without_sdu") };
                let next_hol = if completes && retx == 0 { q.waiting.front().copied() } else { None };
                let hdr = self.rlc_header(ue, DRB0 + d, false, si, so as u32);
                let payload = if si == "full" { sdu_len } else { (pdu_len as u32).saturating_sub(hdr) };
                let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Segment), ue, drb, pkt);
                ev.sn = Some(sn as u32);
                ev.seg_offset = Some(so as u32);
                ev.seg_last = Some(completes);
                ev.bytes = payload;
                ev.retx = retx;
                sink.packet(ev);
                self.mac_pending.entry(ue).or_default().push(MacItem {
                    pkt,
                    drb: d,
                    sn,
                    so: so as u32,
                    bytes: payload,
                    retx,
                });
                if let Some((p, len)) = next_hol {
                    self.hol(sink, t, ue, drb, p, len);
                }
                true
            }
            (Lg::Sdap, "TX PDU") if dl => {
                // Debug: `ue=1 psi=4 QFI=1 DRB1 DL: TX PDU. QFI=1 pdu_len=1278` — SDAP maps the UE's
                // next GTP-U SDU (in order) to its DRB.
                let (Some(ue), Some(len)) = (ue, m.num("pdu_len")) else { return self.unlinked("sdap_fields") };
                let done = self.sdap_done.entry(ue).or_insert(0);
                let Some(&pkt) = self.gtpu_pending.get(&ue).and_then(|q| q.get(*done)) else {
                    return self.unlinked("sdap_pdu_without_gtpu");
                };
                *done += 1;
                let mut ev = self.ev(t, (Node::GnbCu, Layer::Sdap, Point::ProcEnd), ue, drb, pkt);
                ev.bytes = len as u32;
                ev.qfi = m.prefix.qfi.map(|q| q as u8);
                self.ids.cu_event(ev, sink);
                true
            }
            (Lg::Sdap, "RX SDU") if ul => {
                // Debug: the UE's next PDCP delivery (in order) passes SDAP towards GTP-U.
                let (Some(ue), Some(len)) = (ue, m.num("sdu_len")) else { return self.unlinked("sdap_fields") };
                let done = self.sdap_ul_done.entry(ue).or_insert(0);
                let Some(&(pkt, _)) = self.gtpu_ul.get(&ue).and_then(|q| q.get(*done)) else {
                    return self.unlinked("ul_sdap_sdu_without_pdcp");
                };
                *done += 1;
                let mut ev = self.ul(t, (Node::GnbCu, Layer::Sdap, Point::ProcEnd), ue, drb, pkt);
                ev.bytes = len as u32;
                ev.qfi = m.prefix.qfi.map(|q| q as u8);
                self.ids.cu_event(ev, sink);
                true
            }
            (Lg::CuF1u, "F1-U bearer received SDU") if drb.is_some() && m.get("is_retx") != Some("true") => {
                // Debug, CU-UP side (`ue=0 DRB1 ul-teid=…: F1-U bearer received SDU. size=N
                // is_retx=false`): PDCP handed the PDU to the F1-U bearer (its next one, length checked).
                let (Some(cu), Some(len)) = (ue, m.num("size")) else { return self.unlinked("f1u_fields") };
                let d = drb.unwrap_or(0);
                let Some((pkt, _)) =
                    self.f1u_cu_pending.get_mut(&(cu, d)).and_then(|q| take_matching(q, |l| u64::from(l) == len))
                else {
                    return self.unlinked("f1u_sdu_without_pdcp");
                };
                let mut ev = self.ev(t, (Node::GnbCu, Layer::F1u, Point::ProcBegin), cu, drb, pkt);
                ev.bytes = len as u32;
                self.ids.cu_event(ev, sink);
                true
            }
            (Lg::DuF1u, "Delivering T-PDU") if drb.is_some() => {
                // Debug, DU side (`ue=0 DRB1 addr=… dl-teid=…: Delivering T-PDU. size=N`): the DL
                // PDCP PDU reached the DU's F1-U bearer, which hands it to RLC.
                let (Some(du), Some(len)) = (ue, m.num("size")) else { return self.unlinked("f1u_fields") };
                self.f1u_arrive(t, du, drb, len, sink)
            }
            (Lg::Gtpu, "RX DL user data") if m.prefix.dir == Some("RX") => {
                // NR-U at the DU (split CU/DU apps): `ue=0 RX teid=…: RX DL user data. t_pdu_len=N`;
                // the T-PDU is the PDCP PDU. The DRB is the UE's whose next PDU has that length.
                let (Some(du), Some(len)) = (ue, m.num("t_pdu_len")) else { return self.unlinked("nru_fields") };
                self.f1u_arrive(t, du, None, len, sink)
            }
            (Lg::Gtpu, "RX DL data delivery status") if m.prefix.dir == Some("RX") => {
                // NR-U at the CU-UP: srsRAN logs every UL NR-U PDU with this text; one with a
                // T-PDU carries UL user data (a PDCP PDU) towards PDCP (reference §2.2).
                let Some(cu) = ue else { return self.unlinked("nru_fields") };
                if let Some(len) = m.num("t_pdu_len") {
                    let q = self.nru_ul_arrived.entry(cu).or_default();
                    q.push_back((t, len as u32));
                    if q.len() > 4096 {
                        q.pop_front();
                    }
                }
                true
            }
            (Lg::Gtpu, "TX PDU") if m.prefix.dir == Some("TX") && self.file_role.get(self.at.0) == Some(&1) => {
                // NR-U at the CU-UP (a file with CU-UP lines only): `ue=0 TX teid=…: TX PDU.
                // pdu_len=N teid=…`, the DL PDCP PDU leaving for the DU. N adds the GTP-U and NR
                // RAN container headers (TS 29.281, TS 38.425 §5.5.2.1) to the PDCP PDU: the
                // UE's next PDCP PDU shorter than N by at most 64 bytes (inferred).
                let (Some(cu), Some(len)) = (ue, m.num("pdu_len")) else { return self.unlinked("nru_fields") };
                let fits = |l: u32| len > u64::from(l) && len - u64::from(l) <= 64;
                let Some((pkt, bytes)) = self.nru_dl_pending.get_mut(&cu).and_then(|q| {
                    let i = q.iter().take(8).position(|&(_, l)| fits(l))?;
                    q.remove(i)
                }) else {
                    return self.unlinked("nru_tx_without_pdcp");
                };
                let drb = self.nru_drb.get(&pkt).copied();
                let mut ev = self.ev(t, (Node::GnbCu, Layer::F1u, Point::ProcEnd), cu, drb, pkt);
                ev.bytes = bytes;
                self.ids.cu_event(ev, sink);
                true
            }
            (Lg::DuF1u, n) if n.starts_with("Dropped F1-U PDU") && drb.is_some() => {
                // `Dropped F1-U PDU, queue is full`: the DL PDU could not be handed to the DU's UE
                // executor; it is the bearer's next PDCP PDU not yet seen by F1-U.
                let Some(du) = ue else { return self.unlinked("f1u_fields") };
                let d = drb.unwrap_or(0);
                let cu = self.ids.cu(du).unwrap_or(du);
                let Some((pkt, len)) = self.f1u_pending.get_mut(&(cu, d)).and_then(VecDeque::pop_front) else {
                    return self.unlinked("f1u_drop_without_pdcp");
                };
                self.pdcp_by_sn.retain(|_, v| v.0 != pkt);
                let mut ev = self.ev(t, (Node::GnbDu, Layer::F1u, Point::Drop), du, drb, pkt);
                ev.bytes = len;
                ev.reason = Some(Reason::F1uQueueFull);
                sink.packet(ev);
                *self.stats.drops.entry(("f1u", Reason::F1uQueueFull.as_str())).or_insert(0) += 1;
                true
            }
            (Lg::Rlc, "Dropped SDU") if dl && drb.is_some() => {
                // The RLC SDU queue is full (by SDUs or bytes): the SDU never enters it.
                let (Some(ue), Some(len), Some(psn)) = (ue, m.num("sdu_len"), m.num("pdcp_sn")) else {
                    return self.unlinked("rlc_fields");
                };
                let d = drb.unwrap_or(0);
                let cu = self.cu_up_for_rlc_sdu(ue, d, psn, len as u32, e.line, sink);
                let pdcp = cu.and_then(|cu| self.pdcp_by_sn.remove(&(cu, d, psn)));
                let pkt = self.linked_or_new(pdcp.map(|(p, ..)| p), "rlc_drop_without_pdcp");
                let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Drop), ue, drb, pkt);
                ev.bytes = len as u32;
                ev.sn = pdcp.map(|(_, _, c)| c as u32);
                ev.queue = Some(Queue::RlcSdu);
                ev.queue_bytes = m.num("queued_bytes");
                ev.queue_pkts = m.num("queued_sdus").map(|q| q as u32);
                ev.reason = Some(Reason::RlcQueueFull);
                sink.packet(ev);
                *self.stats.drops.entry(("rlc", Reason::RlcQueueFull.as_str())).or_insert(0) += 1;
                true
            }
            (Lg::Rlc, "Discarded SDU") if dl && drb.is_some() => {
                // PDCP's discard timer expired for an SDU still waiting in the RLC queue; RLC removes
                // it (`Discarded SDU. pdcp_sn=`). Dropped by PDCP's rule, where RLC held it.
                let (Some(ue), Some(psn)) = (ue, m.num("pdcp_sn")) else { return self.unlinked("rlc_fields") };
                let d = drb.unwrap_or(0);
                let q = self.rlc.entry((ue, d)).or_default();
                let Some((pkt, count)) = q.by_pdcp_sn.remove(&psn) else {
                    return self.unlinked("rlc_discard_without_sdu");
                };
                let at = q.waiting.iter().position(|(p, _)| *p == pkt);
                let (bytes, next_hol) = match at {
                    Some(i) => {
                        let (_, b) = q.waiting.remove(i).unwrap_or_default();
                        (b, if i == 0 { q.waiting.front().copied() } else { None })
                    }
                    None => (0, None),
                };
                let mut ev = self.ev(t, (Node::GnbDu, Layer::Pdcp, Point::Drop), ue, drb, pkt);
                ev.bytes = bytes;
                ev.sn = count.map(|c| c as u32);
                ev.queue = Some(Queue::RlcSdu);
                ev.reason = Some(Reason::PdcpDiscardTimer);
                sink.packet(ev);
                *self.stats.drops.entry(("pdcp", Reason::PdcpDiscardTimer.as_str())).or_insert(0) += 1;
                if let Some((p, len)) = next_hol {
                    self.hol(sink, t, ue, drb, p, len);
                }
                true
            }
            (Lg::Pdcp, "Discarding PDU") if dl && drb.is_some() => {
                // Debug: PDCP's discard timer expired for COUNT c (TS 38.323 §5.2.1; after a
                // `Discard timer expired` line). The packet is dropped only if RLC still holds the
                // SDU, which RLC's `Discarded SDU` line then says; else it was already sent (`Could
                // not discard SDU`) and only PDCP's copy goes. A control event either way.
                let (Some(cu), Some(count)) = (ue, m.num("count")) else { return self.unlinked("pdcp_fields") };
                sink.control(ControlEvent {
                    t_ns: t,
                    node: Node::GnbCu,
                    layer: Layer::Pdcp,
                    kind: "pdcp_discard_timer_expired",
                    dir: Some(Dir::Dl),
                    ue: Some(self.ids.du(cu).unwrap_or(cu)),
                    drb,
                    sn: Some(count as i64),
                    value: None,
                    detail: None,
                });
                true
            }
            (Lg::Rlc, "Could not discard SDU") if dl && drb.is_some() => {
                // The SDU PDCP asked to discard has (partly) left the RLC queue: no drop.
                let Some(du) = ue else { return self.unlinked("rlc_fields") };
                sink.control(ControlEvent {
                    t_ns: t,
                    node: Node::GnbDu,
                    layer: Layer::Rlc,
                    kind: "rlc_discard_too_late",
                    dir: Some(Dir::Dl),
                    ue: Some(du),
                    drb,
                    sn: m.num("pdcp_sn").map(|v| v as i64),
                    value: None,
                    detail: None,
                });
                true
            }
            (Lg::Rlc, "Reached maximum number of RETX") if dl && drb.is_some() => {
                // maxRetxThreshold reached for an RLC SN (TS 38.322 §5.3.2): the SDU is lost (and
                // srsRAN reports a radio link failure).
                let (Some(ue), Some(sn)) = (ue, m.num("sn")) else { return self.unlinked("rlc_fields") };
                let d = drb.unwrap_or(0);
                let Some((pkt, bytes)) = self.rlc.entry((ue, d)).or_default().by_sn.remove(&sn) else {
                    return self.unlinked("rlc_max_retx_without_sdu");
                };
                let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Drop), ue, drb, pkt);
                ev.bytes = bytes;
                ev.sn = Some(sn as u32);
                ev.retx = m.num("retx_count").unwrap_or(0).min(255) as u8;
                ev.reason = Some(Reason::RlcMaxRetx);
                sink.packet(ev);
                *self.stats.drops.entry(("rlc", Reason::RlcMaxRetx.as_str())).or_insert(0) += 1;
                true
            }
            (Lg::Mac, "DL PDU") => {
                let Some(mue) = m.num("ue").map(|u| u as u32) else { return self.unlinked("mac_fields") };
                let rnti = m.num("rnti").map(|r| r as u16);
                if let Some(r) = rnti {
                    self.ids.rnti_of_du.insert(mue, r);
                }
                let items = self.mac_pending.remove(&mue).unwrap_or_default();
                for it in &items {
                    let mut ev = self.ev(t, (Node::GnbDu, Layer::Mac, Point::Tx), mue, Some(it.drb), it.pkt);
                    ev.rnti = rnti;
                    ev.sn = Some(it.sn as u32);
                    ev.seg_offset = Some(it.so);
                    ev.bytes = it.bytes;
                    ev.retx = it.retx;
                    sink.packet(ev);
                }
                // The HARQ process carrying this block: the grant SCHED logged for this RNTI in
                // this slot. Its retransmissions then resend these RLC PDUs.
                if let (Some(r), Some(slot)) = (rnti, h.slot) {
                    if let Some(&(sfn, sl, hid)) = self.dl_grant.get(&r) {
                        if (sfn, sl) == slot && !items.is_empty() {
                            self.dl_tb.insert((r, hid), (mue, items));
                        }
                    }
                }
                true
            }
            (Lg::Pdcp, "PDCP configured") => {
                if let (Some(ue), Some(rb)) = (ue, rb_key(&m)) {
                    let hdr = if m.num("sn_size") == Some(18) { 3 } else { 2 };
                    self.pdcp_hdr.entry((ue, rb)).or_insert((2, false)).0 = hdr;
                    // A (re)configured bearer starts its COUNTs again (TS 38.323 §5.1.1), and its UE's
                    // CU-UP index may now name another DU index.
                    if let Some(d) = rb.checked_sub(DRB0) {
                        self.rx_deliv.remove(&(ue, d));
                        self.ids.forget_cu_up(ue);
                    }
                }
                true
            }
            (Lg::Pdcp, "Set") if m.get("integrity_enabled") == Some("on") => {
                if let (Some(ue), Some(rb)) = (ue, rb_key(&m)) {
                    self.pdcp_hdr.entry((ue, rb)).or_insert((2, false)).1 = true;
                }
                true
            }
            (Lg::Rlc, "RLC AM configured" | "RLC UM configured") => {
                if let (Some(ue), Some(rb)) = (ue, rb_key(&m)) {
                    let am = m.name == "RLC AM configured";
                    if rb >= DRB0 {
                        self.ids.forget_du(ue);
                    }
                    for (key, is_ul) in [("tx_sn_size", false), ("rx_sn_size", true)] {
                        if let Some(bits) = m.num(key) {
                            self.rlc_cfg.insert((ue, rb, is_ul), (am, bits));
                        }
                    }
                }
                true
            }
            (Lg::Mac, "UL") if h.body.contains(": Discarding SDU.") => {
                // `UL rnti=… ue=… lcid=4 UL-DCCH: Discarding SDU. Cause: Inexistent LCID`: the
                // MAC drops the UE's SDUs on a bearer that no longer exists.
                let (Some(mue), Some(lcid)) = (m.num("ue").map(|u| u as u32), m.num("lcid")) else {
                    return self.unlinked("mac_fields");
                };
                let lost: Vec<u32> = {
                    let q = self.mac_ul.entry(mue).or_default();
                    let lost = q.iter().filter(|(l, _)| u64::from(*l) == lcid).map(|(_, n)| *n).collect();
                    q.retain(|(l, _)| u64::from(*l) != lcid);
                    lost
                };
                let drb = (lcid >= 4).then(|| (lcid - 3) as u8);
                for bytes in lost {
                    let pkt = self.new_pkt();
                    let mut ev = self.ul(t, (Node::GnbDu, Layer::Mac, Point::Drop), mue, drb, pkt);
                    ev.bytes = bytes;
                    ev.reason = Some(Reason::NoSession);
                    sink.packet(ev);
                    *self.stats.drops.entry(("mac", Reason::NoSession.as_str())).or_insert(0) += 1;
                }
                true
            }
            (Lg::Mac, "UL") if h.body.contains(" subPDUs: [") => {
                // Msg3 on CCCH (`UL rnti=… subPDUs: [CCCH48: …]`) comes before the UE has an index.
                let Some(mue) = m.num("ue").map(|u| u as u32) else { return };
                if let Some(r) = m.num("rnti") {
                    self.ids.rnti_of_du.insert(mue, r as u16);
                }
                let q = self.mac_ul.entry(mue).or_default();
                if !q.is_empty() {
                    // RLC PDUs of the previous MAC PDU that no RLC line claimed.
                    *self.stats.unlinked.entry("ul_mac_subpdu_without_rlc_pdu").or_insert(0) += q.len() as u64;
                    self.stats.unlinked_first.entry("ul_mac_subpdu_without_rlc_pdu").or_insert(self.at);
                    q.clear();
                }
                q.extend(ul_subpdus(h.body));
                // The transport block this MAC PDU came in: the RNTI's last decoded one.
                let rnti = m.num("rnti").map(|r| r as u16);
                let tb = rnti.and_then(|r| self.tb_decoded.remove(&r)).unwrap_or_default();
                self.tb_of_mac.insert(mue, (rnti, tb));
                true
            }
            (Lg::Rlc, "RX PDU") if ul && m.get("dc") == Some("data") => {
                let (Some(ue), Some(rb), Some(sn), Some(pdu_len), Some(si)) =
                    (ue, rb_key(&m), m.num("sn"), m.num("pdu_len"), m.get("si"))
                else {
                    return self.unlinked("rlc_fields");
                };
                self.take_mac_ul(ue, rb, Some(pdu_len));
                let Some(drb) = rb.checked_sub(DRB0) else { return };
                let so = m.num("so").unwrap_or(0) as u32;
                let completes = si == "full" || si == "last";
                let hdr = self.rlc_header(ue, rb, true, si, so);
                let payload = (pdu_len as u32).saturating_sub(hdr);
                // Segments of one SDU share its RLC SN; they may come in any order once ARQ
                // retransmits a lost one (then it is marked `retx`: a segment arriving after one
                // further into the SDU, or one already received, is a retransmission).
                let key = (ue, drb, sn);
                let (pkt, retx) = match self.rlc_rx.get_mut(&key) {
                    Some((p, segs)) => {
                        let retx = segs.iter().any(|(o, _)| *o >= so);
                        segs.push((so, payload));
                        (*p, retx)
                    }
                    None => {
                        if !(si == "full" || si == "first") {
                            // The SDU's earlier segments are missing (lost, or a log gap).
                            self.unlinked("ul_rlc_segment_before_first");
                        }
                        let p = self.new_pkt();
                        self.rlc_rx.insert(key, (p, vec![(so, payload)]));
                        (p, false)
                    }
                };
                // The segment's transport block: each PUSCH attempt (HARQ retransmissions marked) and
                // its decoding at the gNB.
                let (rnti, tb) = self.tb_of_mac.get(&ue).cloned().unwrap_or_default();
                for (i, a) in tb.iter().enumerate() {
                    let mut tx = self.ul(a.tx_ns, (Node::Ue, Layer::Mac, Point::Tx), ue, Some(drb), pkt);
                    tx.rnti = rnti;
                    tx.bytes = payload;
                    tx.retx = i.min(255) as u8;
                    sink.packet(tx);
                    if a.ok {
                        let mut rx = self.ul(a.decoded_ns, (Node::GnbDu, Layer::Phy, Point::Rx), ue, Some(drb), pkt);
                        rx.rnti = rnti;
                        rx.bytes = payload;
                        sink.packet(rx);
                    }
                }
                let mut ev = self.ul(t, (Node::GnbDu, Layer::Rlc, Point::Segment), ue, Some(drb), pkt);
                ev.sn = Some(sn as u32);
                ev.seg_offset = Some(so);
                ev.seg_last = Some(completes);
                ev.bytes = payload;
                ev.retx = u8::from(retx);
                ev.rnti = rnti;
                sink.packet(ev);
                true
            }
            (Lg::Rlc, "RX status PDU") if ul => {
                // A status PDU from the UE (acknowledging DL data) also came in a MAC subPDU.
                let (Some(ue), Some(rb)) = (ue, rb_key(&m)) else { return self.unlinked("rlc_fields") };
                self.take_mac_ul(ue, rb, None);
                self.status(t, Dir::Dl, ue, drb, &m, sink);
                true
            }
            (Lg::Rlc, "TX status PDU") if dl => {
                let Some(ue) = ue else { return self.unlinked("rlc_fields") };
                self.status(t, Dir::Ul, ue, drb, &m, sink);
                true
            }
            (Lg::Pdcp, "Reordering timer expired") if ul && drb.is_some() => {
                let Some(ue) = ue else { return self.unlinked("pdcp_fields") };
                let d = drb.unwrap_or(0);
                let queued = m.num("queued_sdus");
                // t-Reordering expired (TS 38.323 §5.2.2.4): the stored SDUs with COUNT < RX_REORD,
                // then those consecutive from RX_REORD, go up in COUNT order — without an `RX SDU`
                // line each.
                let mut held: Vec<u64> =
                    self.pdcp_rx.keys().filter(|(u, b, _)| *u == ue && *b == d).map(|k| k.2).collect();
                held.sort_unstable();
                let reord = m.num("rx_reord").unwrap_or(u64::MAX);
                let mut next = reord;
                let release: Vec<u64> = held
                    .into_iter()
                    .take_while(|&c| {
                        let go = c < reord || c == next;
                        if c == next {
                            next += 1;
                        }
                        go
                    })
                    .collect();
                if queued.is_some_and(|q| q != release.len() as u64) {
                    self.unlinked("ul_pdcp_reordering_queue_differs");
                }
                for count in release {
                    self.pdcp_deliver(t, ue, d, count, sink);
                }
                sink.control(ControlEvent {
                    t_ns: t,
                    node: Node::GnbCu,
                    layer: Layer::Pdcp,
                    kind: "pdcp_t_reordering_expired",
                    dir: Some(Dir::Ul),
                    ue: Some(self.ids.du(ue).unwrap_or(ue)),
                    drb,
                    sn: m.num("rx_reord").map(|v| v as i64),
                    value: queued.map(|q| q as f64),
                    detail: None,
                });
                true
            }
            // (Debug level adds `RX SDU. payload_len=… sn=…` per PDU; the SDU line has `sdu_len`.)
            (Lg::Rlc, "RX SDU") if ul && drb.is_some() && m.get("sdu_len").is_some() => {
                let (Some(ue), Some(sn), Some(len)) = (ue, m.num("sn"), m.num("sdu_len")) else {
                    return self.unlinked("rlc_fields");
                };
                let d = drb.unwrap_or(0);
                let Some((pkt, mut segs)) = self.rlc_rx.remove(&(ue, d, sn)) else {
                    return self.unlinked("ul_rlc_sdu_without_pdu");
                };
                // Bytes covered by the segments (retransmitted ones may overlap).
                segs.sort_unstable();
                let (mut got, mut end) = (0u32, 0u32);
                for (o, n) in segs {
                    let e = o + n;
                    got += e.saturating_sub(o.max(end));
                    end = end.max(e);
                }
                if u64::from(got) != len {
                    self.unlinked("ul_rlc_segments_do_not_sum_to_sdu");
                }
                let mut ev = self.ul(t, (Node::GnbDu, Layer::Rlc, Point::Deliver), ue, drb, pkt);
                // (`sn` is the PDCP COUNT on RLC SDU rows; the UL's comes with the PDCP line, later.)
                ev.bytes = len as u32;
                sink.packet(ev);
                self.rlc_delivered.entry((ue, d)).or_default().push_back((pkt, len as u32));
                true
            }
            (Lg::Pdcp, "RX PDU") if ul && drb.is_some() && m.get("type") == Some("data") => {
                let (Some(ue), Some(len), Some(count)) = (ue, m.num("pdu_len"), m.num("count")) else {
                    return self.unlinked("pdcp_fields");
                };
                let d = drb.unwrap_or(0);
                let du = self.du_for_pdcp_pdu(ue, d, len as u32, e.line, sink);
                let from_rlc = du
                    .and_then(|du| self.rlc_delivered.get_mut(&(du, d)))
                    .and_then(|q| take_matching(q, |l| u64::from(l) == len));
                if from_rlc.is_some_and(|(_, l)| u64::from(l) != len) {
                    self.unlinked("ul_pdcp_pdu_length_differs_from_rlc_sdu");
                }
                let pkt = self.linked_or_new(from_rlc.map(|(p, _)| p), "ul_pdcp_pdu_without_rlc_sdu");
                // Split CU/DU: the NR-U T-PDU of this length that reached the CU-UP before it.
                let arrived = self.nru_ul_arrived.get_mut(&ue).and_then(|q| {
                    let i = q.iter().take(8).position(|&(_, l)| u64::from(l) == len)?;
                    q.remove(i)
                });
                if let Some((ta, l)) = arrived {
                    let mut ev = self.ul(ta, (Node::GnbCu, Layer::F1u, Point::Arrive), ue, drb, pkt);
                    ev.bytes = l;
                    self.ids.cu_event(ev, sink);
                }
                let mut ev = self.ul(t, (Node::GnbCu, Layer::Pdcp, Point::ProcBegin), ue, drb, pkt);
                ev.sn = Some(count as u32);
                ev.bytes = len as u32;
                self.ids.cu_event(ev, sink);
                if count < self.rx_deliv.get(&(ue, d)).copied().unwrap_or(0) {
                    // COUNT < RX_DELIV: PDCP discards it (TS 38.323 §5.2.2.1) — it arrives after
                    // t-Reordering gave up on it. Inferred: info-level logs print no line for it.
                    let mut ev = self.ul(t, (Node::GnbCu, Layer::Pdcp, Point::Drop), ue, drb, pkt);
                    ev.sn = Some(count as u32);
                    ev.bytes = len as u32;
                    ev.reason = Some(Reason::PdcpRxOutOfWindow);
                    self.ids.cu_event(ev, sink);
                    *self.stats.drops.entry(("pdcp", Reason::PdcpRxOutOfWindow.as_str())).or_insert(0) += 1;
                } else {
                    self.pdcp_rx.insert((ue, d, count), (pkt, len as u32));
                }
                true
            }
            (Lg::Pdcp, "RX SDU") if ul && drb.is_some() => {
                let (Some(ue), Some(count)) = (ue, m.num("count")) else { return self.unlinked("pdcp_fields") };
                self.pdcp_deliver(t, ue, drb.unwrap_or(0), count, sink);
                true
            }
            (Lg::Gtpu, "TX PDU") if ul => {
                let (Some(ue), Some(len)) = (ue, m.num("pdu_len")) else { return self.unlinked("gtpu_fields") };
                let pending = self
                    .gtpu_ul
                    .get_mut(&ue)
                    .and_then(|q| take_matching(q, |sdu| u64::from(sdu) + GTPU_EXT_HDR == len));
                if let Some(done) = self.sdap_ul_done.get_mut(&ue) {
                    *done = done.saturating_sub(1);
                }
                // GTP-U header with the PDU Session Container extension: 8 + 8 bytes
                // (TS 29.281 §5.1, §5.2.2.7; TS 38.415 §5.5.2.2).
                if pending.is_some_and(|(_, sdu)| u64::from(sdu) + GTPU_EXT_HDR != len) {
                    self.unlinked("ul_gtpu_pdu_length_differs_from_pdcp_sdu");
                }
                let pkt = self.linked_or_new(pending.map(|(p, _)| p), "ul_gtpu_pdu_without_pdcp_sdu");
                let mut ev = self.ul(t, (Node::GnbCu, Layer::Gtpu, Point::ProcEnd), ue, None, pkt);
                ev.bytes = len.saturating_sub(GTPU_EXT_HDR) as u32;
                ev.qfi = m.get("qfi").and_then(|q| q.strip_prefix("QFI=")).and_then(|q| q.parse().ok());
                self.ids.cu_event(ev, sink);
                true
            }
            _ => false,
        };
        if !handled && m.prefix.rb.is_some_and(|rb| rb.starts_with("SRB")) {
            self.stats.srb_lines += 1;
        } else if !handled && ue.is_some() {
            // Counted by message without allocating once the message has been seen.
            let layer: &'static str = match logger {
                "GTPU" => "GTPU",
                "PDCP" => "PDCP",
                "RLC" => "RLC",
                "SDAP" => "SDAP",
                "CU-F1-U" => "CU-F1-U",
                "DU-F1-U" => "DU-F1-U",
                _ => return,
            };
            let names = self.stats.not_handled_by.entry(layer).or_default();
            match names.get_mut(m.name) {
                Some(n) => n.0 += 1,
                None => {
                    names.insert(m.name.to_string(), (1, self.at));
                }
            }
        }
    }

    /// RLC data PDU header bytes (TS 38.322 §6.2.2.3–6.2.2.4): AM: 2 bytes with a 12-bit SN, 3
    /// with an 18-bit SN; UM: 1 byte for a complete SDU (no SN), else 1 (6-bit SN) or 2 (12-bit
    /// SN); plus a 2-byte SO on a middle or last segment.
    fn rlc_header(&self, ue: u32, rb: u8, ul: bool, si: &str, so: u32) -> u32 {
        let (am, bits) = self.rlc_cfg.get(&(ue, rb, ul)).copied().unwrap_or((true, 12));
        let has_so = so > 0 || si == "mid" || si == "last";
        let base = match (am, bits) {
            (true, 18) => 3,
            (true, _) => 2,
            (false, _) if si == "full" => 1,
            (false, 6) => 1,
            (false, _) => 2,
        };
        base + if has_so { 2 } else { 0 }
    }

    /// The UE's oldest DL packet waiting for PDCP (SDAP's count of it goes with it).
    fn pop_gtpu_dl(&mut self, ue: u32) -> Option<u64> {
        let p = self.gtpu_pending.get_mut(&ue).and_then(VecDeque::pop_front);
        if let Some(done) = self.sdap_done.get_mut(&ue) {
            *done = done.saturating_sub(1);
        }
        p
    }

    /// The CU-UP index whose PDCP PDU a DL RLC SDU line (DU index `du`) names, binding the two
    /// when not yet bound: the unbound CU-UP UE with a PDU of that DRB, SN and length (equal indexes
    /// first).
    fn cu_up_for_rlc_sdu<S: Sink>(
        &mut self,
        du: u32,
        d: u8,
        psn: u64,
        len: u32,
        line: u64,
        sink: &mut S,
    ) -> Option<u32> {
        if let Some(cu) = self.ids.cu(du) {
            return Some(cu);
        }
        let fits = |cu: u32| self.pdcp_by_sn.get(&(cu, d, psn)).is_some_and(|&(_, l, _)| l == len);
        let cu = if fits(du) && self.ids.du(du).is_none() {
            Some(du)
        } else {
            self.ids.unbound_cu_up().find(|&cu| fits(cu))
        }?;
        self.ids.bind(cu, du, line, "dl: an RLC SDU named the PDCP SN and length of this UE's PDU", sink);
        Some(cu)
    }

    /// The DU index whose delivered RLC SDU a UL PDCP PDU line (CU-UP index `cu`) continues,
    /// binding the two when not yet bound: the unbound DU UE with a delivered SDU of that DRB and
    /// length (equal indexes first).
    fn du_for_pdcp_pdu<S: Sink>(&mut self, cu: u32, d: u8, len: u32, line: u64, sink: &mut S) -> Option<u32> {
        if let Some(du) = self.ids.du(cu) {
            return Some(du);
        }
        let fits = |du: u32| {
            self.ids.cu(du).is_none()
                && self.rlc_delivered.get(&(du, d)).is_some_and(|q| q.iter().take(8).any(|&(_, l)| l == len))
        };
        let du = if fits(cu) {
            Some(cu)
        } else {
            let mut dus: Vec<u32> = self.rlc_delivered.keys().filter(|k| k.1 == d).map(|k| k.0).collect();
            dus.sort_unstable();
            dus.into_iter().find(|&du| fits(du))
        }?;
        self.ids.bind(cu, du, line, "ul: a PDCP PDU had the length of an SDU this UE's RLC delivered", sink);
        Some(du)
    }

    /// Writes the events still held for UEs whose DU index was never learned.
    pub fn finish<S: Sink>(&mut self, sink: &mut S) {
        self.ids.finish(sink);
    }

    /// A DL PDCP PDU reached the DU (`f1u arrive`): the bearer's next PDU not yet there whose length
    /// is `len` (on any of the UE's DRBs when the line names none).
    fn f1u_arrive<S: Sink>(&mut self, t: i64, du: u32, drb: Option<u8>, len: u64, sink: &mut S) -> bool {
        let cu = self.ids.cu(du).unwrap_or(du);
        let keys: Vec<(u32, u8)> = match drb {
            Some(d) => vec![(cu, d)],
            None => {
                let mut k: Vec<_> = self.f1u_pending.keys().filter(|k| k.0 == cu).copied().collect();
                k.sort_unstable();
                k
            }
        };
        let found = keys.iter().find_map(|k| {
            let q = self.f1u_pending.get_mut(k)?;
            let i = q.iter().take(8).position(|&(_, l)| u64::from(l) == len)?;
            q.remove(i).map(|(p, _)| (p, k.1))
        });
        let Some((pkt, d)) = found else {
            self.unlinked("f1u_sdu_without_pdcp");
            return true;
        };
        let mut ev = self.ev(t, (Node::GnbDu, Layer::F1u, Point::Arrive), du, Some(d), pkt);
        ev.bytes = len as u32;
        sink.packet(ev);
        true
    }

    /// The DL grants of a `Slot decisions` entry (info: `DL: ue= c-rnti= … h_id= … rv= …` entries;
    /// debug: `- UE PDSCH: …` children). A first transmission is remembered for the MAC PDU of its
    /// slot; a retransmission (`newtx=false`, `nrtx>0`, or rv ≠ 0 in srsRAN's sequence 0, 2, 3, 1)
    /// resends the block of its HARQ process: its RLC PDUs get a `mac tx` with the retransmission
    /// index.
    fn dl_grants<S: Sink>(&mut self, t: i64, slot: (u32, u32), body: &str, children: &str, sink: &mut S) {
        let mut grants: Vec<&str> = Vec::new();
        if let Some(i) = body.find("): ") {
            grants.extend(body[i + 3..].split(", ").filter_map(|g| g.strip_prefix("DL: ")));
        }
        grants.extend(children.split('\n').filter_map(|c| c.strip_prefix("- UE PDSCH: ")));
        for g in grants {
            let f = super::message::parse_fields(g);
            let get = |k: &str| super::message::get_field(&f, k);
            let (Some(rnti), Some(hid)) =
                (get("c-rnti").and_then(super::message::parse_num), get("h_id").and_then(super::message::parse_num))
            else {
                continue;
            };
            let (rnti, hid) = (rnti as u16, hid as u8);
            let retx = match (get("newtx"), get("nrtx").and_then(super::message::parse_num), get("rv")) {
                (Some("true"), _, _) => 0,
                (_, Some(n), _) => n.min(255) as u8,
                (Some("false"), _, _) => 1,
                (_, _, Some(rv)) => match rv {
                    "0" => 0,
                    "2" => 1,
                    "3" => 2,
                    _ => 3,
                },
                _ => 0,
            };
            if retx == 0 {
                self.dl_grant.insert(rnti, (slot.0, slot.1, hid));
                continue;
            }
            let Some((ue, items)) = self.dl_tb.get(&(rnti, hid)) else { continue };
            let (ue, items) = (*ue, items.clone());
            for it in items {
                let mut ev = self.ev(t, (Node::GnbDu, Layer::Mac, Point::Tx), ue, Some(it.drb), it.pkt);
                ev.rnti = Some(rnti);
                ev.sn = Some(it.sn as u32);
                ev.seg_offset = Some(it.so);
                ev.bytes = it.bytes;
                ev.retx = retx;
                sink.packet(ev);
            }
        }
    }

    /// A PHY `PUSCH: rnti= h_id= … crc=OK|KO … t=N.Nus` line: one attempt of the HARQ process. The
    /// transmission time is the line's time less the decoding time `t=` (the line is written when
    /// decoding ends); a `KO` waits for the process's retransmission, an `OK` completes the block.
    fn pusch(&mut self, t_us: i64, body: &str) {
        // Four fields of a long line: looked up directly rather than parsing all of them. The body
        // starts `PUSCH: rnti=…`, so every key follows a space.
        let get = |k: &str| {
            let at = body.find(k)?;
            let v = &body[at + k.len()..];
            Some(&v[..v.find(' ').unwrap_or(v.len())])
        };
        let (Some(rnti), Some(h), Some(crc)) = (
            get(" rnti=").and_then(super::message::parse_num),
            get(" h_id=").and_then(super::message::parse_num),
            get(" crc="),
        ) else {
            return;
        };
        // A decoding time is microseconds; one that cannot be (negative, not finite, over a
        // second: a corrupt line once overflowed the subtraction below) counts as none.
        let decode_us = get(" t=")
            .and_then(|v| v.trim_end_matches("us").parse::<f64>().ok())
            .filter(|d| (0.0..=1e6).contains(d))
            .unwrap_or(0.0);
        let decoded_ns = (t_us - self.epoch_us) * 1000;
        let a = Attempt { tx_ns: decoded_ns - (decode_us * 1000.0) as i64, decoded_ns, ok: crc == "OK" };
        let key = (rnti as u16, h as u8);
        let tries = self.harq_ul.entry(key).or_default();
        tries.push(a);
        if a.ok || tries.len() > 32 {
            let tb = std::mem::take(tries);
            if a.ok {
                self.tb_decoded.insert(key.0, tb);
            }
        }
    }

    /// Takes the MAC subPDU that carried a UL RLC PDU: the UE's next one on the bearer's LCID
    /// (srsRAN maps SRBn to LCID n and DRBn to LCID n + 3), checking its length when known.
    fn take_mac_ul(&mut self, ue: u32, rb: u8, len: Option<u64>) {
        let lcid = if rb >= DRB0 { rb - DRB0 + 3 } else { rb };
        let q = self.mac_ul.entry(ue).or_default();
        match q.iter().position(|(l, _)| *l == lcid) {
            Some(i) => {
                let (_, got) = q.remove(i).unwrap_or_default();
                if len.is_some_and(|l| l != u64::from(got)) {
                    self.unlinked("ul_mac_subpdu_length_mismatch");
                }
            }
            None => self.unlinked("ul_rlc_pdu_without_mac_subpdu"),
        }
    }

    /// A UL PDCP SDU delivered upwards (in order, or at t-Reordering expiry).
    fn pdcp_deliver<S: Sink>(&mut self, t: i64, ue: u32, d: u8, count: u64, sink: &mut S) {
        let Some((pkt, pdu_len)) = self.pdcp_rx.remove(&(ue, d, count)) else {
            return self.unlinked("ul_pdcp_sdu_without_pdu");
        };
        let (hdr, mac_i) = self.pdcp_hdr.get(&(ue, DRB0 + d)).copied().unwrap_or((2, false));
        let sdu = pdu_len.saturating_sub(hdr + if mac_i { 4 } else { 0 });
        let deliv = self.rx_deliv.entry((ue, d)).or_insert(0);
        *deliv = (*deliv).max(count + 1);
        let mut ev = self.ul(t, (Node::GnbCu, Layer::Pdcp, Point::Deliver), ue, Some(d), pkt);
        ev.sn = Some(count as u32);
        ev.bytes = sdu;
        self.ids.cu_event(ev, sink);
        self.gtpu_ul.entry(ue).or_default().push_back((pkt, sdu));
    }

    /// An RLC status PDU, as a control event: `dir` is the data it acknowledges (a status the gNB
    /// receives acknowledges DL data), `sn` its ACK_SN, `value` its number of NACKs. A DL packet
    /// is acknowledged by the first status whose ACK_SN is past its RLC SN and does not NACK it.
    fn status<S: Sink>(&mut self, t: i64, dir: Dir, ue: u32, drb: Option<u8>, m: &Message, sink: &mut S) {
        sink.control(ControlEvent {
            t_ns: t,
            node: Node::GnbDu,
            layer: Layer::Rlc,
            kind: "rlc_status",
            dir: Some(dir),
            ue: Some(ue),
            drb,
            sn: m.num("ack_sn").map(|v| v as i64),
            value: m.num("n_nack").map(|v| v as f64),
            detail: None,
        });
    }

    /// Packets still waiting anywhere at the end of the log.
    pub fn pending_packets(&self) -> u64 {
        let g: usize = self.gtpu_pending.values().map(VecDeque::len).sum();
        let r: usize = self.rlc.values().map(|q| q.waiting.len()).sum();
        let d: usize = self.rlc_delivered.values().map(VecDeque::len).sum();
        let u: usize = self.gtpu_ul.values().map(VecDeque::len).sum();
        (g + self.pdcp_by_sn.len() + r + self.rlc_rx.len() + d + self.pdcp_rx.len() + u) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::super::reader::EntryReader;
    use super::super::slots::SlotStitcher;
    use super::*;
    use scout_events::VecSink;

    /// A UL log in the 24.10 format (RLC prefix with `du=`), written from the reference's formats:
    /// SDU 0 in one PDU; SDU 1 in three segments whose first is lost to HARQ and retransmitted by
    /// ARQ after the others; SDU 2 held by PDCP until t-Reordering expires; SDU 1 then arrives too
    /// late for PDCP; a status PDU rides in the same MAC PDU as data.
    const UL_24_10: &str = "\
2024-11-25T15:08:25.000000 [PDCP    ] [I] ue=0 DRB1 UL: PDCP configured. rb_type=DRB rlc_mode=AM sn_size=18 t_reordering=80
2024-11-25T15:08:25.001000 [SCHED   ] [I] [   10.1] Slot decisions pci=1 t=4us (0 PDSCHs, 1 PUSCH): UL: ue=0 rnti=0x4601 h_id=0 ss_id=2 rb=[3..50) rv=0 tbs=301 k2=4
2024-11-25T15:08:25.002000 [UL-PHY1 ] [I] [   10.1] PUSCH: rnti=0x4601 h_id=0 prb=[3, 50) symb=[0, 14) mod=QPSK rv=0 tbs=301 crc=OK iter=1.0 sinr=2.8dB t=109.9us
2024-11-25T15:08:25.002100 [MAC     ] [I] [   10.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=3, lcid=4: len=102, SBSR: lcg=1 bs=14, PAD: len=3]
2024-11-25T15:08:25.002110 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX status PDU. ack_sn=4 n_nack=0
2024-11-25T15:08:25.002120 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=102 dc=data p=0 si=full sn=0
2024-11-25T15:08:25.002130 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX SDU. sn=0 sdu_len=100
2024-11-25T15:08:25.002140 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=100 sn=0 count=0
2024-11-25T15:08:25.002150 [PDCP    ] [I] ue=0 DRB1 UL: RX SDU. count=0
2024-11-25T15:08:25.002160 [GTPU    ] [I] ue=0 UL teid=0x00affa: TX PDU. pdu_len=113 teid=0x00affa qfi=QFI=1
2024-11-25T15:08:25.006000 [UL-PHY1 ] [I] [   11.1] PUSCH: rnti=0x4601 h_id=1 prb=[3, 50) symb=[0, 14) mod=QPSK rv=0 tbs=301 crc=KO iter=6.0 sinr=-2.0dB t=100.0us
2024-11-25T15:08:25.009900 [UL-PHY1 ] [I] [   11.5] PUSCH: rnti=0x4601 h_id=1 prb=[3, 50) symb=[0, 14) mod=QPSK rv=2 tbs=301 crc=OK iter=1.0 sinr=2.8dB t=100.0us
2024-11-25T15:08:25.010000 [MAC     ] [I] [   11.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=55, lcid=4: len=54, lcid=4: len=53]
2024-11-25T15:08:25.010010 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=55 dc=data p=0 si=mid sn=1 so=50
2024-11-25T15:08:25.010020 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=54 dc=data p=0 si=last sn=1 so=101
2024-11-25T15:08:25.010030 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=53 dc=data p=1 si=full sn=2
2024-11-25T15:08:25.010040 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX SDU. sn=2 sdu_len=51
2024-11-25T15:08:25.010050 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=51 sn=2 count=2
2024-11-25T15:08:25.090000 [PDCP    ] [I] ue=0 DRB1 UL: Reordering timer expired. rx_reord=2 queued_sdus=1
2024-11-25T15:08:25.090010 [GTPU    ] [I] ue=0 UL teid=0x00affa: TX PDU. pdu_len=64 teid=0x00affa qfi=QFI=1
2024-11-25T15:08:25.100000 [MAC     ] [I] [   20.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=52]
2024-11-25T15:08:25.100010 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=52 dc=data p=0 si=first sn=1
2024-11-25T15:08:25.100020 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX SDU. sn=1 sdu_len=151
2024-11-25T15:08:25.100030 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=151 sn=1 count=1
";

    fn run(log: &str) -> (Stitcher, SlotStitcher, VecSink) {
        let mut r = EntryReader::new(log.as_bytes());
        let epoch = super::super::line::parse_timestamp(log.as_bytes()).unwrap();
        let mut g = super::super::run::Gnb::new(epoch);
        let mut sink = VecSink::default();
        while let Some(e) = r.next_entry().unwrap() {
            g.entry(&e, 0, &mut sink);
        }
        g.finish(&mut sink);
        let super::super::run::Gnb { st, slots, .. } = g;
        (st, slots, sink)
    }

    fn journey(sink: &VecSink, pkt: u64) -> Vec<(Layer, Point, u32, u8)> {
        sink.packets.iter().filter(|e| e.pkt == pkt).map(|e| (e.layer, e.point, e.bytes, e.retx)).collect()
    }

    /// Two UEs whose CU-UP and DU indexes are swapped (CU-UP 5 is DU 2, CU-UP 2 is DU 5), both
    /// with PDCP SN 0 in flight at once: each packet ends up with its own UE's DU index.
    const SWAPPED: &str = "\
2024-11-25T15:08:25.000000 [GTPU    ] [I] ue=5 DL teid=0x000001: RX SDU. sdu_len=100 qos_flow=QFI=1 sn={na}
2024-11-25T15:08:25.000001 [GTPU    ] [I] ue=2 DL teid=0x000002: RX SDU. sdu_len=200 qos_flow=QFI=1 sn={na}
2024-11-25T15:08:25.000010 [PDCP    ] [I] ue=5 DRB1 DL: TX PDU. type=data pdu_len=102 sn=0 count=0 is_retx=false
2024-11-25T15:08:25.000011 [PDCP    ] [I] ue=2 DRB1 DL: TX PDU. type=data pdu_len=202 sn=0 count=0 is_retx=false
2024-11-25T15:08:25.000020 [RLC     ] [I] du=0 ue=5 DRB1 DL: TX SDU. sdu_len=202 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=202
2024-11-25T15:08:25.000021 [RLC     ] [I] du=0 ue=2 DRB1 DL: TX SDU. sdu_len=102 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=102
2024-11-25T15:08:25.001000 [MAC     ] [I] [   10.1] UL rnti=0x4602 ue=5 subPDUs: [lcid=4: len=52]
2024-11-25T15:08:25.001010 [RLC     ] [I] du=0 ue=5 DRB1 UL: RX PDU. pdu_len=52 dc=data p=0 si=full sn=0
2024-11-25T15:08:25.001020 [RLC     ] [I] du=0 ue=5 DRB1 UL: RX SDU. sn=0 sdu_len=50
2024-11-25T15:08:25.001030 [PDCP    ] [I] ue=2 DRB1 UL: RX PDU. type=data pdu_len=50 sn=0 count=0
2024-11-25T15:08:25.001040 [PDCP    ] [I] ue=2 DRB1 UL: RX SDU. count=0
2024-11-25T15:08:25.001050 [GTPU    ] [I] ue=2 UL teid=0x000003: TX PDU. pdu_len=64 teid=0x000003 qfi=QFI=1
";

    #[test]
    fn cu_up_and_du_indexes_are_bound_from_the_traffic() {
        let (st, _, sink) = run(SWAPPED);
        assert!(st.stats.unlinked.is_empty(), "{:?}", st.stats.unlinked);
        let b: Vec<_> = st.ids.bindings.iter().map(|b| (b.cu_up, b.du)).collect();
        assert_eq!(b, vec![(2, 5), (5, 2)]);
        // Every event of a packet carries one UE: the DU index.
        let mut by_pkt: HashMap<u64, std::collections::BTreeSet<u32>> = HashMap::new();
        for e in &sink.packets {
            by_pkt.entry(e.pkt).or_default().insert(e.ue);
        }
        assert_eq!(by_pkt.len(), 3);
        assert!(by_pkt.values().all(|u| u.len() == 1), "{by_pkt:?}");
        let dl_ue = |bytes: u32| sink.packets.iter().find(|e| e.layer == Layer::Gtpu && e.bytes == bytes).unwrap().ue;
        assert_eq!((dl_ue(100), dl_ue(200)), (2, 5));
        let ul = sink.packets.iter().find(|e| e.dir == Dir::Ul && e.layer == Layer::Gtpu).unwrap();
        assert_eq!((ul.ue, ul.bytes), (5, 48));
    }

    /// Downlink in the current (25.10 / main) formats, with each drop cause the lines show.
    const DL_MAIN: &str = "\
2026-04-27T11:25:31.000000 [PDCP    ] [I] ue=0 DRB1 DL: PDCP configured. rb_type=DRB rlc_mode=AM sn_size=18 discard_timer=100
2026-04-27T11:25:31.001000 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1000 qos_flow=QFI=1 sn={na}
2026-04-27T11:25:31.001001 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1001 qos_flow=QFI=1 sn={na}
2026-04-27T11:25:31.001002 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1002 qos_flow=QFI=1 sn={na}
2026-04-27T11:25:31.001003 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1003 qos_flow=QFI=1 sn={na}
2026-04-27T11:25:31.001010 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1003 sn=0 count=0 is_retx=false
2026-04-27T11:25:31.001011 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1004 sn=1 count=1 is_retx=false
2026-04-27T11:25:31.001012 [PDCP    ] [I] ue=0 DRB1 DL: Dropping SDU. Cause: RLC SDU queue is full
2026-04-27T11:25:31.001013 [PDCP    ] [I] ue=0 DRB1 DL: Drop burst finished. nof_sdus=1
2026-04-27T11:25:31.001014 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1006 sn=2 count=2 is_retx=false
2026-04-27T11:25:31.001020 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX SDU. sdu_len=1003 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=1003
2026-04-27T11:25:31.001021 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX SDU. sdu_len=1004 pdcp_sn=1 is_retx=false queued_sdus=2 queued_bytes=2007
2026-04-27T11:25:31.001022 [RLC     ] [W] du=0 ue=0 DRB1 DL: Dropped SDU. sdu_len=1006 pdcp_sn=2 is_retx=false queued_sdus=2 queued_bytes=2007
2026-04-27T11:25:31.001500 [SCHED   ] [I] [   10.1] Slot decisions pci=1 t=26us (1 PDSCH, 0 PUSCHs, 1 PUCCH): DL: ue=0 c-rnti=0x4601 h_id=3 ss_id=2 rb=[0..20) k1=4 newtx=true rv=0 tbs=1100 ri=1 dl_bo=1004
2026-04-27T11:25:31.001510 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX PDU. dc=data p=0 si=full sn=0 pdu_len=1005 grant_len=1100
2026-04-27T11:25:31.001511 [MAC     ] [I] [   10.1] DL PDU: ue=0 rnti=0x4601 size=1100: SDU: lcid=4 nof_sdus=1 total_size=1005
2026-04-27T11:25:31.009500 [SCHED   ] [I] [   11.1] Slot decisions pci=1 t=20us (1 PDSCH, 0 PUSCHs, 0 PUCCHs): DL: ue=0 c-rnti=0x4601 h_id=3 ss_id=2 rb=[0..20) k1=4 newtx=false rv=2 tbs=1100
2026-04-27T11:25:31.101021 [RLC     ] [I] du=0 ue=0 DRB1 DL: Discarded SDU. pdcp_sn=1
2026-04-27T11:25:31.401000 [RLC     ] [I] du=0 ue=0 DRB1 DL: Reached maximum number of RETX. sn=0 retx_count=4
";

    #[test]
    fn downlink_in_the_main_format_with_every_drop_cause() {
        let (st, slots, sink) = run(DL_MAIN);
        assert!(st.stats.unlinked.is_empty(), "{:?}", st.stats.unlinked);
        let by_bytes =
            |b: u32| sink.packets.iter().find(|e| e.layer == Layer::Gtpu && e.bytes == b).map(|e| e.pkt).unwrap();
        let path = |pkt: u64| -> Vec<(Layer, Point, Option<Reason>)> {
            sink.packets.iter().filter(|e| e.pkt == pkt).map(|e| (e.layer, e.point, e.reason)).collect()
        };
        use Layer::*;
        use Point::*;
        assert_eq!(
            path(by_bytes(1000)),
            vec![
                (Gtpu, ProcEnd, None),
                (Pdcp, ProcEnd, None),
                (Rlc, Enqueue, None),
                (Rlc, Hol, None),
                (Rlc, Segment, None),
                (Mac, Tx, None),
                (Mac, Tx, None),
                (Rlc, Drop, Some(Reason::RlcMaxRetx)),
            ]
        );
        assert_eq!(
            path(by_bytes(1001)),
            vec![
                (Gtpu, ProcEnd, None),
                (Pdcp, ProcEnd, None),
                (Rlc, Enqueue, None),
                (Rlc, Hol, None),
                (Pdcp, Drop, Some(Reason::PdcpDiscardTimer)),
            ]
        );
        assert_eq!(path(by_bytes(1002)), vec![(Gtpu, ProcEnd, None), (Pdcp, Drop, Some(Reason::PdcpEarlyDrop))]);
        assert_eq!(
            path(by_bytes(1003)),
            vec![(Gtpu, ProcEnd, None), (Pdcp, ProcEnd, None), (Rlc, Drop, Some(Reason::RlcQueueFull))]
        );
        // 18-bit PDCP SN: 3-byte header; RLC SDU = PDCP PDU; full RLC PDU = SDU + 2-byte header.
        let seg = sink.packets.iter().find(|e| e.point == Segment).unwrap();
        assert_eq!(seg.bytes, 1003);
        let drops: u64 = st.stats.drops.values().sum();
        assert_eq!(drops, 4);
        // The block's HARQ retransmission (the grant on the same process with newtx=false) resends
        // the packet's RLC PDU.
        let retx: Vec<u8> =
            sink.packets.iter().filter(|e| e.pkt == by_bytes(1000) && e.layer == Mac).map(|e| e.retx).collect();
        assert_eq!(retx, vec![0, 1]);
        assert_eq!(slots.stats.dl_grants, 2);
        let g = &sink.slots[0];
        assert_eq!((g.prbs, g.tbs, g.retx_index, g.layers), (20, Some(1100), Some(0), Some(1)));
    }

    #[test]
    fn discard_timer_debug_lines_are_control_events() {
        let log = "\
2024-11-25T15:08:25.000000 [PDCP    ] [D] ue=0 DRB1 DL: Discard timer expired. st=[tx_next_ack=0 tx_trans=1 tx_next=2]
2024-11-25T15:08:25.000001 [PDCP    ] [D] ue=0 DRB1 DL: Discarding PDU. count=1
2024-11-25T15:08:25.000002 [RLC     ] [I] du=0 ue=0 DRB1 DL: Could not discard SDU. pdcp_sn=1
";
        let (st, _, sink) = run(log);
        let kinds: Vec<_> = sink.controls.iter().map(|c| (c.kind, c.sn)).collect();
        assert_eq!(kinds, vec![("pdcp_discard_timer_expired", Some(1)), ("rlc_discard_too_late", Some(1))]);
        assert!(st.stats.drops.is_empty());
    }

    /// Split CU and DU apps (25.x format) log F1-U as NR-U GTP-U lines: the CU-UP's `TX PDU` and
    /// the DU's `RX DL user data` (DL), the DU's `TX PDU` and the CU-UP's `RX DL data delivery
    /// status` (UL; srsRAN's text for every UL NR-U PDU).
    const SPLIT_CU: &str = "\
2025-10-01T10:00:00.000000 [PDCP    ] [I] ue=0 DRB1 DL: PDCP configured. rb_type=DRB rlc_mode=AM sn_size=18 discard_timer=100
2025-10-01T10:00:00.000001 [PDCP    ] [I] ue=0 DRB1 UL: PDCP configured. rb_type=DRB rlc_mode=AM sn_size=18 t_reordering=80
2025-10-01T10:00:01.000000 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1000 qos_flow=QFI=1 sn={na}
2025-10-01T10:00:01.000010 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1003 sn=0 count=0 is_retx=false
2025-10-01T10:00:01.000020 [GTPU    ] [I] ue=0 TX teid=0x000005: TX PDU. pdu_len=1023 teid=0x000005
2025-10-01T10:00:01.003000 [GTPU    ] [I] ue=0 RX teid=0x000006: RX DL data delivery status. t_pdu_len=53
2025-10-01T10:00:01.003010 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=53 sn=0 count=0
2025-10-01T10:00:01.003020 [PDCP    ] [I] ue=0 DRB1 UL: RX SDU. count=0
2025-10-01T10:00:01.003030 [GTPU    ] [I] ue=0 UL teid=0x000003: TX PDU. pdu_len=66 teid=0x000003 qfi=QFI=1
";
    const SPLIT_DU: &str = "\
2025-10-01T10:00:01.000200 [GTPU    ] [I] ue=0 RX teid=0x000005: RX DL user data. t_pdu_len=1003
2025-10-01T10:00:01.000210 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX SDU. sdu_len=1003 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=1003
2025-10-01T10:00:01.002000 [MAC     ] [I] [   10.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=55]
2025-10-01T10:00:01.002010 [RLC     ] [I] du=0 ue=0 DRB1 UL: RX PDU. pdu_len=55 dc=data p=0 si=full sn=0
2025-10-01T10:00:01.002020 [RLC     ] [I] du=0 ue=0 DRB1 UL: RX SDU. sn=0 sdu_len=53
2025-10-01T10:00:01.002030 [GTPU    ] [I] ue=0 TX teid=0x000006: TX PDU. pdu_len=73 teid=0x000006
";

    #[test]
    fn split_cu_du_nru_lines_add_the_f1u_hop() {
        let mut files = [EntryReader::new(SPLIT_CU.as_bytes()), EntryReader::new(SPLIT_DU.as_bytes())];
        let epoch = super::super::line::parse_timestamp(SPLIT_CU.as_bytes()).unwrap();
        let mut g = super::super::run::Gnb::new(epoch);
        let mut sink = VecSink::default();
        loop {
            let t: Vec<_> = files.iter_mut().map(|r| r.peek_t_us().unwrap()).collect();
            let Some(i) = (0..2).filter(|&i| t[i].is_some()).min_by_key(|&i| t[i]) else { break };
            let e = files[i].next_entry().unwrap().unwrap();
            g.entry(&e, i, &mut sink);
        }
        g.finish(&mut sink);
        let st = &g.st;
        assert!(st.stats.unlinked.is_empty(), "{:?}", st.stats.unlinked);
        let path = |dir: Dir| -> Vec<(Node, Layer, Point)> {
            let mut evs: Vec<_> = sink.packets.iter().filter(|e| e.dir == dir).collect();
            evs.sort_by_key(|e| e.t_ns);
            evs.iter().map(|e| (e.node, e.layer, e.point)).collect()
        };
        use Layer::*;
        use Node::*;
        use Point::*;
        assert_eq!(
            path(Dir::Dl),
            vec![
                (GnbCu, Gtpu, ProcEnd),
                (GnbCu, Pdcp, ProcEnd),
                (GnbCu, F1u, ProcEnd),
                (GnbDu, F1u, Arrive),
                (GnbDu, Rlc, Enqueue),
                (GnbDu, Rlc, Hol)
            ]
        );
        assert_eq!(
            path(Dir::Ul),
            vec![
                (GnbDu, Rlc, Segment),
                (GnbDu, Rlc, Deliver),
                (GnbCu, F1u, Arrive),
                (GnbCu, Pdcp, ProcBegin),
                (GnbCu, Pdcp, Deliver),
                (GnbCu, Gtpu, ProcEnd)
            ]
        );
        // The DU's UL NR-U `TX PDU` is not an event yet: counted, with its line.
        let nh = st.stats.not_handled();
        assert!(nh.iter().any(|(k, n, _)| k == "GTPU: TX PDU" && *n == 1), "{nh:?}");
    }

    /// Debug level adds SDAP and the DU's F1-U lines: the journeys gain those hops, and an F1-U
    /// queue drop is a drop.
    const DEBUG_HOPS: &str = "\
2024-11-25T15:08:25.000000 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1000 qos_flow=QFI=1 sn={na}
2024-11-25T15:08:25.000001 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1100 qos_flow=QFI=1 sn={na}
2024-11-25T15:08:25.000005 [SDAP    ] [D] ue=0 psi=1 QFI=1 DRB1 DL: TX PDU. QFI=1 pdu_len=1000
2024-11-25T15:08:25.000006 [SDAP    ] [D] ue=0 psi=1 QFI=1 DRB1 DL: TX PDU. QFI=1 pdu_len=1100
2024-11-25T15:08:25.000010 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1002 sn=0 count=0 is_retx=false
2024-11-25T15:08:25.000011 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1102 sn=1 count=1 is_retx=false
2024-11-25T15:08:25.000012 [CU-F1-U ] [D] ue=0 DRB1 ul-teid=0x000002: F1-U bearer received SDU. size=1002 is_retx=false
2024-11-25T15:08:25.000013 [CU-F1-U ] [D] ue=0 DRB1 ul-teid=0x000002: F1-U bearer received SDU. size=1102 is_retx=false
2024-11-25T15:08:25.000049 [DU-F1-U ] [D] ue=0 DRB1 addr=127.0.10.2 dl-teid=0x000001: F1-U bearer received PDU
2024-11-25T15:08:25.000050 [DU-F1-U ] [D] ue=0 DRB1 addr=127.0.10.2 dl-teid=0x000001: Delivering T-PDU. size=1002
2024-11-25T15:08:25.000051 [DU-F1-U ] [I] ue=0 DRB1 addr=0.0.0.0 dl-teid=0x000001: Dropped F1-U PDU, queue is full
2024-11-25T15:08:25.000060 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX SDU. sdu_len=1002 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=1002
2024-11-25T15:08:25.001000 [MAC     ] [I] [   10.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=52]
2024-11-25T15:08:25.001010 [RLC     ] [I] du=0 ue=0 DRB1 UL: RX PDU. pdu_len=52 dc=data p=0 si=full sn=0
2024-11-25T15:08:25.001020 [RLC     ] [I] du=0 ue=0 DRB1 UL: RX SDU. sn=0 sdu_len=50
2024-11-25T15:08:25.001030 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=50 sn=0 count=0
2024-11-25T15:08:25.001040 [PDCP    ] [I] ue=0 DRB1 UL: RX SDU. count=0
2024-11-25T15:08:25.001045 [SDAP    ] [D] ue=0 psi=1 QFI=1 DRB1 UL: RX SDU. QFI=1 sdu_len=48
2024-11-25T15:08:25.001050 [GTPU    ] [I] ue=0 UL teid=0x000003: TX PDU. pdu_len=64 teid=0x000003 qfi=QFI=1
";

    #[test]
    fn sdap_and_f1u_debug_lines_add_their_hops() {
        let (st, _, sink) = run(DEBUG_HOPS);
        assert!(st.stats.unlinked.is_empty(), "{:?}", st.stats.unlinked);
        let path = |gtpu_bytes: u32, dir: Dir| -> Vec<(Layer, Point)> {
            let pkt = sink
                .packets
                .iter()
                .find(|e| e.layer == Layer::Gtpu && e.bytes == gtpu_bytes && e.dir == dir)
                .unwrap()
                .pkt;
            // In time order (events of a UE whose CU-UP index is not yet bound are written later).
            let mut evs: Vec<_> = sink.packets.iter().filter(|e| e.pkt == pkt).collect();
            evs.sort_by_key(|e| e.t_ns);
            evs.iter().map(|e| (e.layer, e.point)).collect()
        };
        use Layer::*;
        use Point::*;
        assert_eq!(
            path(1000, Dir::Dl),
            vec![
                (Gtpu, ProcEnd),
                (Sdap, ProcEnd),
                (Pdcp, ProcEnd),
                (F1u, ProcBegin),
                (F1u, Arrive),
                (Rlc, Enqueue),
                (Rlc, Hol)
            ]
        );
        assert_eq!(
            path(1100, Dir::Dl),
            vec![(Gtpu, ProcEnd), (Sdap, ProcEnd), (Pdcp, ProcEnd), (F1u, ProcBegin), (F1u, Drop)]
        );
        assert_eq!(st.stats.drops.get(&("f1u", "f1u_queue_full")), Some(&1));
        assert_eq!(
            path(48, Dir::Ul),
            vec![(Rlc, Segment), (Rlc, Deliver), (Pdcp, ProcBegin), (Pdcp, Deliver), (Sdap, ProcEnd), (Gtpu, ProcEnd)]
        );
        assert_eq!(st.pending_packets(), 1, "the first DL SDU is still in the RLC queue");
    }

    #[test]
    fn rlc_header_sizes_follow_ts_38_322() {
        let mut st = Stitcher::new(0);
        // Defaults: AM, 12-bit SN.
        assert_eq!(st.rlc_header(0, DRB0 + 1, true, "full", 0), 2);
        assert_eq!(st.rlc_header(0, DRB0 + 1, true, "mid", 10), 4);
        st.rlc_cfg.insert((0, DRB0 + 1, true), (true, 18));
        assert_eq!((st.rlc_header(0, DRB0 + 1, true, "first", 0), st.rlc_header(0, DRB0 + 1, true, "last", 9)), (3, 5));
        st.rlc_cfg.insert((0, DRB0 + 2, false), (false, 6));
        assert_eq!(st.rlc_header(0, DRB0 + 2, false, "full", 0), 1);
        assert_eq!(
            (st.rlc_header(0, DRB0 + 2, false, "first", 0), st.rlc_header(0, DRB0 + 2, false, "mid", 5)),
            (1, 3)
        );
        st.rlc_cfg.insert((0, DRB0 + 3, false), (false, 12));
        assert_eq!(
            (st.rlc_header(0, DRB0 + 3, false, "full", 0), st.rlc_header(0, DRB0 + 3, false, "last", 5)),
            (1, 4)
        );
    }

    #[test]
    fn ul_journeys_reassembly_reordering_and_late_drop() {
        let (st, slots, sink) = run(UL_24_10);
        // The only line that could not be linked on arrival: SDU 1's middle segment, before its first.
        assert_eq!(st.stats.unlinked, HashMap::from([("ul_rlc_segment_before_first", 1)]));
        assert!(sink.packets.iter().all(|e| e.dir == Dir::Ul));
        let pkts: std::collections::BTreeSet<u64> = sink.packets.iter().map(|e| e.pkt).collect();
        assert_eq!(pkts.len(), 3, "three SDUs");
        let by_sn = |sn: u32| {
            sink.packets
                .iter()
                .find(|e| e.layer == Layer::Rlc && e.sn == Some(sn) && e.point == Point::Segment)
                .unwrap()
                .pkt
        };
        use Layer::*;
        use Point::*;
        // SDU 0: one PDU, in order all the way; 18-bit PDCP SN → 3-byte header; +16 at GTP-U.
        assert_eq!(
            journey(&sink, by_sn(0)),
            vec![
                (Mac, Tx, 100, 0),
                (Phy, Rx, 100, 0),
                (Rlc, Segment, 100, 0),
                (Rlc, Deliver, 100, 0),
                (Pdcp, ProcBegin, 100, 0),
                (Pdcp, Deliver, 97, 0),
                (Gtpu, ProcEnd, 97, 0)
            ]
        );
        // SDU 2: its transport block failed its first PUSCH (crc=KO) and was decoded on the HARQ
        // retransmission; then held by PDCP, released when t-Reordering expires (no RX SDU line).
        let j2 = journey(&sink, by_sn(2));
        assert_eq!(
            j2.iter().map(|x| (x.0, x.1, x.3)).collect::<Vec<_>>(),
            vec![
                (Mac, Tx, 0),
                (Mac, Tx, 1),
                (Phy, Rx, 0),
                (Rlc, Segment, 0),
                (Rlc, Deliver, 0),
                (Pdcp, ProcBegin, 0),
                (Pdcp, Deliver, 0),
                (Gtpu, ProcEnd, 0)
            ]
        );
        let tx: Vec<i64> =
            sink.packets.iter().filter(|e| e.pkt == by_sn(2) && e.layer == Mac).map(|e| e.t_ns).collect();
        assert_eq!(tx, vec![5_900_000, 9_800_000], "each PUSCH at its line's time less its decoding time");
        let deliver2 =
            sink.packets.iter().find(|e| e.pkt == by_sn(2) && e.layer == Pdcp && e.point == Deliver).unwrap();
        assert_eq!(deliver2.t_ns, 90_000_000, "delivered at the expiry");
        // SDU 1: mid and last first, then the first segment (an ARQ retransmission, marked), the
        // segments cover the SDU, and PDCP drops it: COUNT 1 < RX_DELIV 3.
        let j1 = journey(&sink, by_sn(1));
        assert_eq!(
            j1,
            vec![
                (Mac, Tx, 51, 0),
                (Mac, Tx, 51, 1),
                (Phy, Rx, 51, 0),
                (Rlc, Segment, 51, 0),
                (Mac, Tx, 50, 0),
                (Mac, Tx, 50, 1),
                (Phy, Rx, 50, 0),
                (Rlc, Segment, 50, 0),
                (Rlc, Segment, 50, 1),
                (Rlc, Deliver, 151, 0),
                (Pdcp, ProcBegin, 151, 0),
                (Pdcp, Drop, 151, 0)
            ]
        );
        assert_eq!(st.stats.drops.get(&("pdcp", "pdcp_rx_out_of_window")), Some(&1));
        assert_eq!(st.pending_packets(), 0);
        // Control: the status PDU and the expiry.
        let kinds: Vec<_> = sink.controls.iter().map(|c| (c.kind, c.sn)).collect();
        assert_eq!(kinds, vec![("rlc_status", Some(4)), ("pdcp_t_reordering_expired", Some(2))]);
        // Slots: one UL grant with its CRC and SINR; one BSR (short, index 14 → TS 38.321 Table
        // 6.1.3.1-1 upper bound 1 552... bytes as the table gives).
        assert_eq!(slots.stats.ul_grants, 1);
        let g = sink.slots.iter().find(|s| s.tbs == Some(301)).unwrap();
        assert_eq!((g.prbs, g.ack, g.harq_id, g.retx_index), (47, Some(true), Some(0), Some(0)));
        assert!((g.sinr_db.unwrap() - 2.8).abs() < 1e-6);
        let b = sink.slots.iter().find(|s| s.bsr_bytes.is_some()).unwrap();
        assert_eq!(b.bsr_bytes, Some(u64::from(scout_ran::mac::bsr::BSR_5BIT[14])));
    }
}
