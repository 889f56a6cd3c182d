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
//! Links that the lines state: PDCP SN → RLC SDU (`pdcp_sn`). Links that are **inferred** (listed
//! in `run.json` `links`): GTP-U SDU → PDCP PDU by per-UE order; RLC SN → RLC SDU by queue order;
//! RLC PDUs → MAC PDU by adjacency (the MAC line follows the RLC lines it carried); head of line.
//! UE identity: the CU-UP and DU `ue=` indexes are taken as the same UE (true for the monolithic
//! `gnb` app with one CU-UP and one DU).

use std::collections::{HashMap, VecDeque};

use scout_events::{Dir, Layer, Node, PacketEvent, Point, Queue, Reason, Sink};

use super::message::{parse_message, Message};
use super::reader::Entry;

/// Counts of what was turned into events and what was not, for `run.json`.
#[derive(Debug, Default, Clone)]
pub struct StitchStats {
    pub packets: u64,
    pub events: u64,
    /// Per-packet lines of a handled kind that could not be linked (by cause).
    pub unlinked: HashMap<&'static str, u64>,
    /// Entries of per-packet loggers whose message this version does not turn into events
    /// (by `logger: name`), with the first example's line.
    pub not_handled: HashMap<String, (u64, u64)>,
    pub drops: u64,
}

#[derive(Default)]
struct RlcQueue {
    /// SDUs waiting, oldest first: (pkt, bytes).
    waiting: VecDeque<(u64, u32)>,
    /// RLC SN → (pkt, SDU bytes).
    by_sn: HashMap<u64, (u64, u32)>,
}

/// An RLC PDU waiting for the MAC PDU that carries it.
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
    /// (UE, DRB, PDCP SN) → packet, until its RLC SDU line.
    pdcp_by_sn: HashMap<(u32, u8, u64), u64>,
    rlc: HashMap<(u32, u8), RlcQueue>,
    mac_pending: HashMap<u32, Vec<MacItem>>,
    pub stats: StitchStats,
}

fn drb_of(m: &Message) -> Option<u8> {
    m.prefix.rb.and_then(|rb| rb.strip_prefix("DRB")).and_then(|n| n.parse().ok())
}

impl Stitcher {
    pub fn new(epoch_us: i64) -> Self {
        Stitcher {
            epoch_us,
            next_pkt: 0,
            gtpu_pending: HashMap::new(),
            pdcp_by_sn: HashMap::new(),
            rlc: HashMap::new(),
            mac_pending: HashMap::new(),
            stats: StitchStats::default(),
        }
    }

    /// A DL packet event at `at` = (node, layer, point); the caller fills the layer's fields.
    fn ev(&mut self, t_ns: i64, at: (Node, Layer, Point), ue: u32, drb: Option<u8>, pkt: u64) -> PacketEvent {
        let (node, layer, point) = at;
        self.stats.events += 1;
        PacketEvent {
            t_ns,
            node,
            layer,
            point,
            dir: Dir::Dl,
            ue,
            rnti: None,
            drb,
            qfi: None,
            slice: 0,
            flow: ue,
            pkt,
            sn: None,
            seg_offset: None,
            seg_last: None,
            bytes: 0,
            queue: None,
            queue_bytes: None,
            queue_pkts: None,
            retx: 0,
            reason: None,
            ecn: 0,
        }
    }

    fn new_pkt(&mut self) -> u64 {
        self.next_pkt += 1;
        self.stats.packets += 1;
        self.next_pkt
    }

    fn unlinked(&mut self, cause: &'static str) {
        *self.stats.unlinked.entry(cause).or_insert(0) += 1;
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
        let h = e.header;
        let logger = h.logger;
        if !matches!(logger, "GTPU" | "PDCP" | "RLC" | "MAC") {
            return;
        }
        let m = parse_message(h.body);
        let t = (h.t_us - self.epoch_us) * 1000;
        let ue = m.prefix.ue;
        let dl = m.prefix.dir == Some("DL");
        let drb = drb_of(&m);
        let handled = match (logger, m.name) {
            ("GTPU", "RX SDU") if dl => {
                let (Some(ue), Some(len)) = (ue, m.num("sdu_len")) else { return self.unlinked("gtpu_fields") };
                let pkt = self.new_pkt();
                let mut ev = self.ev(t, (Node::GnbCu, Layer::Gtpu, Point::ProcEnd), ue, None, pkt);
                ev.bytes = len as u32;
                ev.qfi = m.get("qos_flow").and_then(|q| q.strip_prefix("QFI=")).and_then(|q| q.parse().ok());
                sink.packet(ev);
                self.gtpu_pending.entry(ue).or_default().push_back(pkt);
                true
            }
            ("PDCP", "TX PDU") if dl && drb.is_some() && m.get("type") == Some("data") => {
                let (Some(ue), Some(len), Some(sn), Some(count)) = (ue, m.num("pdu_len"), m.num("sn"), m.num("count"))
                else {
                    return self.unlinked("pdcp_fields");
                };
                let pending = self.gtpu_pending.get_mut(&ue).and_then(VecDeque::pop_front);
                let pkt = self.linked_or_new(pending, "pdcp_without_gtpu");
                let mut ev = self.ev(t, (Node::GnbCu, Layer::Pdcp, Point::ProcEnd), ue, drb, pkt);
                ev.bytes = len as u32;
                ev.sn = Some(count as u32);
                sink.packet(ev);
                self.pdcp_by_sn.insert((ue, drb.unwrap_or(0), sn), pkt);
                true
            }
            ("PDCP", "Drop burst finished") if dl => {
                let (Some(ue), Some(n)) = (ue, m.num("nof_sdus")) else { return self.unlinked("pdcp_fields") };
                for _ in 0..n {
                    let pending = self.gtpu_pending.get_mut(&ue).and_then(VecDeque::pop_front);
                    let pkt = self.linked_or_new(pending, "pdcp_drop_without_gtpu");
                    let mut ev = self.ev(t, (Node::GnbCu, Layer::Pdcp, Point::Drop), ue, drb, pkt);
                    ev.reason = Some(Reason::PdcpEarlyDrop);
                    sink.packet(ev);
                    self.stats.drops += 1;
                }
                true
            }
            ("RLC", "TX SDU") if dl && drb.is_some() => {
                let (Some(ue), Some(len), Some(psn)) = (ue, m.num("sdu_len"), m.num("pdcp_sn")) else {
                    return self.unlinked("rlc_fields");
                };
                let d = drb.unwrap_or(0);
                let pdcp = self.pdcp_by_sn.remove(&(ue, d, psn));
                let pkt = self.linked_or_new(pdcp, "rlc_sdu_without_pdcp");
                let mut ev = self.ev(t, (Node::GnbDu, Layer::Rlc, Point::Enqueue), ue, drb, pkt);
                ev.bytes = len as u32;
                ev.sn = Some(psn as u32);
                ev.queue = Some(Queue::RlcSdu);
                ev.queue_bytes = m.num("queued_bytes");
                ev.queue_pkts = m.num("queued_sdus").map(|q| q as u32);
                sink.packet(ev);
                let q = self.rlc.entry((ue, d)).or_default();
                q.waiting.push_back((pkt, len as u32));
                if q.waiting.len() == 1 {
                    // An empty queue: the SDU is at the head of the line at once (inferred).
                    self.hol(sink, t, ue, drb, pkt, len as u32);
                }
                true
            }
            ("RLC", "TX PDU" | "RETX PDU") if dl && drb.is_some() && m.get("dc") == Some("data") => {
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
                    })
                } else {
                    q.by_sn.get(&sn).copied()
                };
                let Some((pkt, sdu_len)) = found else { return self.unlinked("rlc_pdu_without_sdu") };
                let next_hol = if completes && retx == 0 { q.waiting.front().copied() } else { None };
                let hdr = if so > 0 || si == "mid" || si == "last" { 4 } else { 2 };
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
            ("MAC", "DL PDU") => {
                let Some(mue) = m.num("ue").map(|u| u as u32) else { return self.unlinked("mac_fields") };
                let rnti = m.num("rnti").map(|r| r as u16);
                for it in self.mac_pending.remove(&mue).unwrap_or_default() {
                    let mut ev = self.ev(t, (Node::GnbDu, Layer::Mac, Point::Tx), mue, Some(it.drb), it.pkt);
                    ev.rnti = rnti;
                    ev.sn = Some(it.sn as u32);
                    ev.seg_offset = Some(it.so);
                    ev.bytes = it.bytes;
                    ev.retx = it.retx;
                    sink.packet(ev);
                }
                true
            }
            _ => false,
        };
        if !handled && matches!(logger, "GTPU" | "PDCP" | "RLC") && ue.is_some() {
            let key = format!("{logger}: {}", m.name);
            let n = self.stats.not_handled.entry(key).or_insert((0, e.line));
            n.0 += 1;
        }
    }

    /// Packets still waiting anywhere at the end of the log.
    pub fn pending_packets(&self) -> u64 {
        let g: usize = self.gtpu_pending.values().map(VecDeque::len).sum();
        let r: usize = self.rlc.values().map(|q| q.waiting.len()).sum();
        (g + self.pdcp_by_sn.len() + r) as u64
    }
}
