//! RLC, TS 38.322: UM and AM entities for one DRB end (gNB DU or UE).
//!
//! An [`RlcEntity`] is a transmitting side and a receiving side. AM status PDUs produced by the
//! receiving side are sent by the co-located transmitting side with priority over data
//! (TS 38.322 §5.3.4, §4.2.1.3.2). The entity is sans-IO: every call takes `now`, outputs are queued
//! in [`RlcEntity::out`] for the caller to drain, and [`RlcEntity::next_timeout`] says when it wants
//! [`RlcEntity::handle_timeout`].
//!
//! Implemented: SDU queue with SDU and byte limits (drops counted; [`queue`]: the discipline is a
//! trait, each SDU keeps its arrival time), segmentation with SO per grant,
//! UM/AM headers of TS 38.322 §6.2.2 (sizes only: the model carries no payload bytes), AM polling
//! (pollPDU, pollByte, empty-buffer poll, t-PollRetransmit), status reporting with NACK SO ranges and
//! t-StatusProhibit, ARQ retransmission with maxRetxThreshold, t-Reassembly (UM and AM), in-window
//! duplicate detection, and immediate delivery of each reassembled SDU (NR RLC does not reorder).
//! AM transmit window (§5.2.3.1.1): no new SN is sent beyond TX_Next_Ack + AM_Window_Size.
//! Not implemented: SN wrap-around (SNs are kept as u32 and never wrap within a run),
//! re-segmentation of a retransmitted segment beyond the NACKed range.

use std::collections::{BTreeMap, VecDeque};

use scout_events::Reason;

use self::queue::{DropTail, SduQueue};
use crate::config::{RlcCfg, RlcMode};
use crate::control::RlcControl;
use crate::packet::Packet;
use crate::Instant;

/// An RLC SDU (a PDCP PDU) with the packet it carries.
#[derive(Clone, Copy, Debug)]
pub struct Sdu {
    pub pkt: Packet,
    pub pdcp_sn: u32,
    /// RLC SDU size (PDCP PDU bytes).
    pub len: u32,
}

/// A NACK in a STATUS PDU: a whole SN or a byte range [so_start, so_end) of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nack {
    pub sn: u32,
    pub so: Option<(u32, u32)>,
}

/// An RLC PDU as the model carries it (sizes and identities, no payload).
#[derive(Clone, Debug)]
pub enum RlcPdu {
    Data {
        sn: u32,
        sdu: Sdu,
        offset: u32,
        len: u32,
        /// RLC header bytes of this PDU.
        header: u32,
        poll: bool,
        /// 0 for a first transmission; ARQ retransmission count otherwise.
        retx: u8,
        /// True when the SDU is not segmented (UM: no SN in the header).
        whole: bool,
        /// When the SN's first PDU was built, and this one (AM: the receiver's retransmission
        /// event spans them, seed 004's T_R; not on the air).
        first_tx: Instant,
        tx: Instant,
    },
    Status {
        ack_sn: u32,
        nacks: Vec<Nack>,
        bytes: u32,
    },
}

impl RlcPdu {
    /// Size of the RLC PDU in bytes (header + data).
    pub fn bytes(&self) -> u32 {
        match self {
            RlcPdu::Data { len, header, .. } => len + header,
            RlcPdu::Status { bytes, .. } => *bytes,
        }
    }
}

/// What an RLC entity reports to the stack.
#[derive(Clone, Debug)]
pub enum RlcOut {
    /// The SDU reached the head of the SDU queue.
    Hol { sdu: Sdu, queue_bytes: u64, queue_pkts: u32 },
    /// The SDU was accepted into the SDU queue.
    Enqueued { sdu: Sdu, queue_bytes: u64, queue_pkts: u32 },
    /// The SDU was dropped (queue full, maxRetx, reassembly timeout, PDCP discard).
    Dropped { sdu: Sdu, reason: Reason },
    /// The receiving side reassembled an SDU and hands it to PDCP.
    Delivered { sdu: Sdu },
    /// The last byte of an SDU was transmitted for the first time (F1-U "highest transmitted").
    Transmitted { pdcp_sn: u32 },
    /// AM: a STATUS PDU from the peer acknowledged `sdus` SDUs, the last of them (the highest
    /// RLC SN) PDCP SN `last_pdcp_sn` (F1-U "highest delivered"). One output per STATUS, not per
    /// SDU: a STATUS may acknowledge thousands.
    Acked { sdus: u32, last_pdcp_sn: u32 },
    /// The queue's discipline signalled congestion for the SDU as its first byte left (L4S: it
    /// marked it CE, or decided a mark PDCP writes).
    CeMark { sdu: Sdu },
    /// A control-plane fact for `control_events`.
    Control(RlcControl),
}

struct AmTxEntry {
    sdu: Sdu,
    retx_count: u32,
    /// When its first PDU was built.
    first_tx: Instant,
    /// The SDU's last byte has been sent at least once.
    fully_sent: bool,
}

/// Per-SN reassembly state at the receiver.
struct RxEntry {
    sdu: Sdu,
    /// Received byte ranges, merged and sorted.
    ranges: Vec<(u32, u32)>,
    delivered: bool,
}

impl RxEntry {
    fn complete(&self) -> bool {
        self.ranges.len() == 1 && self.ranges[0] == (0, self.sdu.len)
    }

    /// Adds [a, b); returns false if every byte was already present (a duplicate).
    fn add(&mut self, a: u32, b: u32) -> bool {
        if self.ranges.iter().any(|(x, y)| *x <= a && b <= *y) {
            return false;
        }
        self.ranges.push((a, b));
        self.ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(self.ranges.len());
        for (x, y) in self.ranges.drain(..) {
            match merged.last_mut() {
                Some(last) if x <= last.1 => last.1 = last.1.max(y),
                _ => merged.push((x, y)),
            }
        }
        self.ranges = merged;
        true
    }

    /// Missing byte ranges, for NACKs.
    fn missing(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut at = 0;
        for (x, y) in &self.ranges {
            if *x > at {
                out.push((at, *x));
            }
            at = *y;
        }
        if at < self.sdu.len {
            out.push((at, self.sdu.len));
        }
        out
    }
}

/// Header sizes of TS 38.322 §6.2.2.
fn data_header(mode: RlcMode, sn_bits: u8, whole: bool, first: bool) -> u32 {
    let so = if first { 0 } else { 2 };
    match mode {
        // UMD PDU with a complete SDU: 1 byte (SI + R), §6.2.2.3; with SN: 6-bit 1 byte, 12-bit 2.
        RlcMode::UmBidir if whole => 1,
        RlcMode::UmBidir => (if sn_bits == 6 { 1 } else { 2 }) + so,
        // AMD PDU: 12-bit SN 2 bytes, 18-bit SN 3 bytes, + SO for non-first segments, §6.2.2.4.
        RlcMode::Am => (if sn_bits == 12 { 2 } else { 3 }) + if whole { 0 } else { so },
    }
}

/// STATUS PDU size, TS 38.322 §6.2.2.5: 3 bytes (D/C, CPT, ACK_SN, E1) for 18-bit SNs, plus per NACK
/// 3 bytes (NACK_SN, E1, E2, E3) and 4 more with SOstart/SOend.
fn status_bytes(nacks: &[Nack]) -> u32 {
    3 + nacks.iter().map(|n| 3 + if n.so.is_some() { 4 } else { 0 }).sum::<u32>()
}

/// One RLC entity (one DRB at one end).
pub struct RlcEntity {
    mode: RlcMode,
    cfg: RlcCfg,
    // ---- transmitting side
    queue: SduQueue,
    tx_next: u32,
    am_tx: window::TxWindow<AmTxEntry>,
    retx: VecDeque<(u32, u32, u32)>,
    retx_bytes: u64,
    pdu_without_poll: u64,
    byte_without_poll: u64,
    poll_sn: Option<u32>,
    t_poll_retransmit: Option<Instant>,
    /// t-PollRetransmit expired: the next AMD PDU sent carries a poll (§5.3.3.4).
    force_poll: bool,
    // ---- receiving side
    rx: BTreeMap<u32, RxEntry>,
    rx_next: u32,
    rx_next_highest: u32,
    rx_highest_status: u32,
    rx_next_status_trigger: u32,
    t_reassembly: Option<Instant>,
    status_triggered: bool,
    poll_waiting_sn: Option<u32>,
    t_status_prohibit: Option<Instant>,
    /// Outputs for the caller to drain.
    pub out: Vec<RlcOut>,
}

const MS: i64 = 1_000_000;

/// The drop-tail limits of the mode `cfg` sets (srsRAN `queue-size`, `queue-bytes`).
pub fn limits(cfg: &RlcCfg) -> DropTail {
    let (max_sdus, max_bytes) = match cfg.mode {
        RlcMode::Am => (cfg.am.tx.queue_size, cfg.am.tx.queue_bytes),
        RlcMode::UmBidir => (cfg.um_bidir.tx.queue_size, cfg.um_bidir.tx.queue_bytes),
    };
    DropTail { max_sdus, max_bytes }
}

impl RlcEntity {
    /// An entity with the drop-tail SDU queue `cfg` sets (srsRAN's).
    pub fn new(cfg: &RlcCfg) -> Self {
        RlcEntity::with_discipline(cfg, Box::new(limits(cfg)))
    }

    /// An entity whose SDU queue follows `discipline` (admission and what happens on dequeue).
    pub fn with_discipline(cfg: &RlcCfg, discipline: Box<dyn queue::Discipline>) -> Self {
        RlcEntity {
            mode: cfg.mode,
            cfg: cfg.clone(),
            queue: SduQueue::new(discipline),
            tx_next: 0,
            am_tx: window::TxWindow::default(),
            retx: VecDeque::new(),
            retx_bytes: 0,
            pdu_without_poll: 0,
            byte_without_poll: 0,
            poll_sn: None,
            t_poll_retransmit: None,
            force_poll: false,
            rx: BTreeMap::new(),
            rx_next: 0,
            rx_next_highest: 0,
            rx_highest_status: 0,
            rx_next_status_trigger: 0,
            t_reassembly: None,
            status_triggered: false,
            poll_waiting_sn: None,
            t_status_prohibit: None,
            out: Vec::new(),
        }
    }

    fn tx_sn_bits(&self) -> u8 {
        match self.mode {
            RlcMode::Am => self.cfg.am.tx.sn,
            RlcMode::UmBidir => self.cfg.um_bidir.tx.sn,
        }
    }

    /// The SDU queue's byte limit (PDCP's early-drop threshold defaults to it).
    pub fn queue_bytes_limit(&self) -> u64 {
        limits(&self.cfg).max_bytes
    }

    /// How long the SDU at the head of the queue has waited at `now`.
    pub fn head_sojourn(&self, now: Instant) -> Option<i64> {
        self.queue.head_sojourn(now)
    }

    /// Bytes waiting in the SDU queue (unsent parts of queued SDUs).
    pub fn queue_bytes(&self) -> u64 {
        self.queue.bytes
    }

    pub fn queue_pkts(&self) -> u32 {
        self.queue.sdus.len() as u32
    }

    /// Bytes the MAC would need to empty this entity now, headers included (TS 38.322 §5.5 buffer
    /// occupancy: status + retransmissions + new data).
    pub fn buffer_status(&self) -> u64 {
        let status = if self.status_ready() { self.status_size() } else { 0 };
        let per_sdu = u64::from(data_header(self.mode, self.tx_sn_bits(), false, true));
        status
            + self.retx_bytes
            + 5 * self.retx.len() as u64
            + self.queue.bytes
            + per_sdu * self.queue.sdus.len() as u64
    }

    /// The size of a STATUS PDU that NACKs every gap (§6.2.2.5): 3 bytes per SN not received at
    /// all, 7 per SN partly received (one byte range assumed).
    fn status_size(&self) -> u64 {
        let span = u64::from(self.rx_highest_status.saturating_sub(self.rx_next));
        let (mut partial, mut received) = (0, 0);
        for e in self.rx.range(self.rx_next..self.rx_highest_status).map(|(_, e)| e) {
            if e.delivered {
                received += 1;
            } else {
                partial += 1;
            }
        }
        3 + 3 * (span - received - partial) + 7 * partial
    }

    fn status_ready(&self) -> bool {
        self.mode == RlcMode::Am && self.status_triggered && self.t_status_prohibit.is_none()
    }

    /// True for an RLC UM entity.
    pub fn is_um(&self) -> bool {
        self.mode == RlcMode::UmBidir
    }

    // ------------------------------------------------------------------ timers

    /// The earliest running timer.
    pub fn next_timeout(&self) -> Option<Instant> {
        [self.t_poll_retransmit, self.t_reassembly, self.t_status_prohibit].into_iter().flatten().min()
    }

    /// Runs every timer that expired at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.t_status_prohibit.is_some_and(|t| t <= now) {
            self.t_status_prohibit = None;
        }
        if self.t_reassembly.is_some_and(|t| t <= now) {
            self.t_reassembly = None;
            self.out.push(RlcOut::Control(RlcControl::ReassemblyExpired { trigger: self.rx_next_status_trigger }));
            match self.mode {
                RlcMode::Am => {
                    // §5.2.3.2.4: RX_Highest_Status = first SN >= trigger not completely received.
                    let mut x = self.rx_next_status_trigger.max(self.rx_next);
                    while self.rx.get(&x).is_some_and(|e| e.delivered) {
                        x += 1;
                    }
                    self.rx_highest_status = x;
                    self.trigger_status(now);
                    if self.rx_next_highest > self.rx_highest_status + 1
                        || (self.rx_next_highest == self.rx_highest_status + 1
                            && self.rx.get(&self.rx_highest_status).is_some_and(|e| !e.complete()))
                    {
                        self.t_reassembly = Some(now + self.cfg.am.rx.t_reassembly * MS);
                        self.rx_next_status_trigger = self.rx_next_highest;
                    }
                }
                RlcMode::UmBidir => {
                    // §5.2.2.2.4: discard incomplete SNs below RX_Timer_Trigger.
                    let trig = self.rx_next_status_trigger;
                    let stale: Vec<u32> = self.rx.range(..trig).map(|(sn, _)| *sn).collect();
                    for sn in stale {
                        if let Some(e) = self.rx.remove(&sn) {
                            if !e.delivered {
                                self.out.push(RlcOut::Dropped { sdu: e.sdu, reason: Reason::RlcReassemblyTimeout });
                            }
                        }
                    }
                    self.rx_next = self.rx_next.max(trig);
                    while self.rx.get(&self.rx_next).is_some_and(|e| e.delivered) {
                        self.rx.remove(&self.rx_next);
                        self.rx_next += 1;
                    }
                    self.update_reassembly_timer(now);
                }
            }
        }
        if self.t_poll_retransmit.is_some_and(|t| t <= now) {
            self.t_poll_retransmit = None;
            self.out.push(RlcOut::Control(RlcControl::PollRetransmitExpired { poll_sn: self.poll_sn }));
            // §5.3.3.4: retransmit the highest SN sent if nothing new can be sent (both buffers
            // empty, or the window stalled), and poll.
            if self.retx.is_empty() && (self.queue.sdus.is_empty() || self.window_full()) {
                if let Some((sn, e)) = self.am_tx.last_mut() {
                    e.retx_count += 1;
                    if e.retx_count > self.cfg.am.tx.max_retx_threshold {
                        let sdu = e.sdu;
                        self.am_tx.remove(sn);
                        self.out.push(RlcOut::Dropped { sdu, reason: Reason::RlcMaxRetx });
                    } else {
                        self.retx.push_back((sn, 0, e.sdu.len));
                        self.retx_bytes += u64::from(e.sdu.len);
                    }
                }
            }
            self.force_poll = true;
        }
    }

    /// SDUs and bytes still held (queued, awaiting ACK, or partially reassembled), for accounting.
    pub fn held(&self) -> usize {
        self.queue.sdus.len() + self.am_tx.len() + self.rx.len()
    }
}

pub mod l4s;
pub mod queue;
mod rx;
mod tx;
mod window;

#[cfg(test)]
mod tests;
