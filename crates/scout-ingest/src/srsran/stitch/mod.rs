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
//!
//! This file holds the state (what each layer's lines left for the next layer's to link to) and
//! the dispatch; each layer's lines are handled in its own file: `gtpu.rs` (NG-U), `sdap.rs`,
//! `pdcp.rs`, `f1u.rs` (F1-U bearers and NR-U), `rlc.rs`, `mac.rs`, `harq.rs` (PUSCH attempts and
//! DL retransmission grants).

use std::collections::{HashMap, VecDeque};

use scout_events::{Dir, Layer, Node, PacketEvent, Point, Sink};

mod f1u;
mod gtpu;
mod harq;
mod mac;
mod pdcp;
mod rlc;
mod sdap;

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

/// One entry of a per-packet logger, its message parsed once for every handler.
struct Line<'a> {
    /// ns since the stitcher's epoch.
    t: i64,
    m: Message<'a>,
    /// The UE index of the line's prefix (CU-UP's on CU-UP lines, DU's on DU lines).
    ue: Option<u32>,
    dl: bool,
    ul: bool,
    drb: Option<u8>,
    /// The entry's line in its file.
    line: u64,
    /// The whole message text.
    body: &'a str,
    /// `[sfn.slot]` where the line has one.
    slot: Option<(u32, u32)>,
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

fn rb_key(m: &Message) -> Option<u8> {
    let rb = m.prefix.rb?;
    let n: u8 = rb[3..].parse().ok()?;
    match &rb[..3] {
        "SRB" => Some(n),
        _ => n.checked_add(DRB0),
    }
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

    /// A line of a kind the handlers take whose packet could not be linked (or whose fields are
    /// missing): counted under `cause`, and the line is handled (`true`).
    fn unlinked_line(&mut self, cause: &'static str) -> bool {
        self.unlinked(cause);
        true
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

    /// Handles one entry, writing its events to `sink`: parsed once, then handed to its layer's
    /// handler (one file each: [`gtpu`], [`sdap`], [`pdcp`], [`f1u`], [`rlc`], [`mac`], [`harq`]).
    pub fn entry<S: Sink>(&mut self, e: &Entry<'_>, sink: &mut S) {
        self.at.1 = e.line;
        let h = e.header;
        // The logger as a code, so that each handler compares message names only for its own
        // logger's lines (string matches of every kind on every entry were the ingest's largest cost).
        let lg = match h.logger {
            "GTPU" => Lg::Gtpu,
            "PDCP" => Lg::Pdcp,
            "RLC" => Lg::Rlc,
            "MAC" => Lg::Mac,
            "SDAP" => Lg::Sdap,
            "DU-F1-U" => Lg::DuF1u,
            "CU-F1-U" => Lg::CuF1u,
            l if l.starts_with("UL-PHY") || l == "PHY" => return self.phy(h.t_us, h.body),
            "SCHED" => return self.sched(e, sink),
            _ => return,
        };
        let m = parse_message(h.body);
        let l = Line {
            t: t_of(h.t_us, self.epoch_us),
            ue: m.prefix.ue,
            dl: m.prefix.dir == Some("DL"),
            ul: m.prefix.dir == Some("UL"),
            drb: drb_of(&m),
            line: e.line,
            body: h.body,
            slot: h.slot,
            m,
        };
        self.note_file_role(lg, &l);
        let handled = match lg {
            Lg::Gtpu => self.gtpu(&l, sink),
            Lg::Sdap => self.sdap(&l, sink),
            Lg::Pdcp => self.pdcp(&l, sink),
            Lg::CuF1u => self.cu_f1u(&l, sink),
            Lg::DuF1u => self.du_f1u(&l, sink),
            Lg::Rlc => self.rlc(&l, sink),
            Lg::Mac => self.mac(&l, sink),
        };
        if !handled {
            self.count_not_handled(h.logger, &l);
        }
    }

    /// Which node the entry's file logs (see `file_role`).
    fn note_file_role(&mut self, lg: Lg, l: &Line<'_>) {
        let role = match lg {
            Lg::Pdcp | Lg::Sdap | Lg::CuF1u => 1,
            Lg::Gtpu if l.dl || l.ul => 1,
            Lg::Rlc | Lg::Mac | Lg::DuF1u => 2,
            _ => 0,
        };
        if role != 0 {
            if self.file_role.len() <= self.at.0 {
                self.file_role.resize(self.at.0 + 1, 0);
            }
            self.file_role[self.at.0] |= role;
        }
    }

    /// A line no handler took: an SRB's is counted as such, a UE's by its logger and message.
    fn count_not_handled(&mut self, logger: &str, l: &Line<'_>) {
        if l.m.prefix.rb.is_some_and(|rb| rb.starts_with("SRB")) {
            self.stats.srb_lines += 1;
        } else if l.ue.is_some() {
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
            match names.get_mut(l.m.name) {
                Some(n) => n.0 += 1,
                None => {
                    names.insert(l.m.name.to_string(), (1, self.at));
                }
            }
        }
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
mod tests;
