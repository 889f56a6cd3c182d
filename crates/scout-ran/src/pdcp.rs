//! PDCP, TS 38.323, for one DRB end: COUNT assignment, header, discard timer and the srsRAN early-drop
//! rule on the transmitting side; reordering with t-Reordering and in-order delivery on the receiving
//! side (§5.2.2.2). Sans-IO like every entity: outputs go to [`PdcpTx::out`] / [`PdcpRx::out`].

use std::collections::BTreeMap;

use scout_events::Reason;

use crate::config::PdcpCfg;
use crate::packet::Packet;
use crate::Instant;

/// PDCP Data PDU header for DRBs, TS 38.323 §6.2.2: 2 bytes with a 12-bit SN, 3 with an 18-bit SN.
pub fn header_bytes(sn_bits: u8) -> u32 {
    if sn_bits == 12 {
        2
    } else {
        3
    }
}

/// What the transmitting side decided for an SDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxVerdict {
    /// Sent to the lower layer as a PDU of `len` bytes with this COUNT.
    Send { count: u32, len: u32 },
    /// Dropped before a COUNT was assigned.
    Drop(Reason),
}

struct Outstanding {
    len: u32,
    discard_at: Option<Instant>,
}

/// The transmitting side.
pub struct PdcpTx {
    sn_bits: u8,
    discard_ns: Option<i64>,
    /// Early-drop threshold in bytes (0 = off).
    early_drop_bytes: u64,
    tx_next: u32,
    /// PDUs handed down and not yet reported transmitted (or discarded), by COUNT.
    outstanding: BTreeMap<u32, Outstanding>,
    outstanding_bytes: u64,
}

impl PdcpTx {
    /// `rlc_queue_bytes` is the RLC SDU queue's byte limit, the default early-drop threshold.
    pub fn new(cfg: &PdcpCfg, rlc_queue_bytes: u64) -> Self {
        let early = match cfg.tx.early_drop_bytes {
            e if e < 0 => rlc_queue_bytes,
            e => e as u64,
        };
        PdcpTx {
            sn_bits: cfg.tx.sn,
            discard_ns: cfg.tx.discard_timer.ns(),
            early_drop_bytes: early,
            tx_next: 0,
            outstanding: BTreeMap::new(),
            outstanding_bytes: 0,
        }
    }

    /// Volume handed down and not yet reported transmitted.
    pub fn outstanding_bytes(&self) -> u64 {
        self.outstanding_bytes
    }

    /// Processes an SDU of `bytes` at `now` (TS 38.323 §5.2.1; early drop as srsRAN's CU-UP).
    pub fn handle_sdu(&mut self, now: Instant, bytes: u32) -> TxVerdict {
        let len = bytes + header_bytes(self.sn_bits);
        if self.early_drop_bytes > 0 && self.outstanding_bytes + u64::from(len) > self.early_drop_bytes {
            return TxVerdict::Drop(Reason::PdcpEarlyDrop);
        }
        let count = self.tx_next;
        self.tx_next += 1;
        let discard_at = self.discard_ns.map(|d| now + d);
        self.outstanding.insert(count, Outstanding { len, discard_at });
        self.outstanding_bytes += u64::from(len);
        TxVerdict::Send { count, len }
    }

    /// When the next discard timer expires.
    pub fn next_timeout(&self) -> Option<Instant> {
        // Discard deadlines grow with COUNT (one timer value per entity), so the first is earliest.
        self.outstanding.values().next().and_then(|o| o.discard_at)
    }

    /// COUNTs whose discard timer expired at or before `now` (TS 38.323 §5.3); the caller asks
    /// the lower layer to discard them.
    pub fn expire(&mut self, now: Instant) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some((&count, o)) = self.outstanding.iter().next() {
            if o.discard_at.is_some_and(|t| t <= now) {
                self.outstanding_bytes -= u64::from(o.len);
                self.outstanding.remove(&count);
                out.push(count);
            } else {
                break;
            }
        }
        out
    }

    /// The lower layer reports every COUNT ≤ `highest` transmitted (F1-U DDDS, TS 38.425 §5.4.2.1;
    /// or the local RLC at the UE): they stop counting towards early drop and their discard timers stop.
    pub fn handle_transmitted(&mut self, highest: u32) {
        while let Some((&count, o)) = self.outstanding.iter().next() {
            if count > highest {
                break;
            }
            self.outstanding_bytes -= u64::from(o.len);
            self.outstanding.remove(&count);
        }
    }
}

/// What the receiving side reports.
#[derive(Clone, Copy, Debug)]
pub enum RxOut {
    /// Delivered in order to the upper layer.
    Deliver(Packet, u32),
    /// Discarded (duplicate or below RX_DELIV).
    Discard(Packet, u32),
    /// t-Reordering expired; value is RX_REORD.
    ReorderingExpired(u32),
}

/// The receiving side (TS 38.323 §5.2.2.2).
pub struct PdcpRx {
    t_reordering_ns: Option<i64>,
    rx_next: u32,
    rx_deliv: u32,
    rx_reord: u32,
    timer: Option<Instant>,
    buffer: BTreeMap<u32, Packet>,
    pub out: Vec<RxOut>,
}

impl PdcpRx {
    pub fn new(cfg: &PdcpCfg) -> Self {
        PdcpRx {
            t_reordering_ns: cfg.rx.t_reordering.ns(),
            rx_next: 0,
            rx_deliv: 0,
            rx_reord: 0,
            timer: None,
            buffer: BTreeMap::new(),
            out: Vec::new(),
        }
    }

    /// Packets held for reordering.
    pub fn held(&self) -> usize {
        self.buffer.len()
    }

    pub fn held_bytes(&self) -> u64 {
        self.buffer.values().map(|p| u64::from(p.bytes)).sum()
    }

    /// A PDU with COUNT `count` from the lower layer.
    pub fn handle_pdu(&mut self, now: Instant, count: u32, pkt: Packet) {
        if count < self.rx_deliv || self.buffer.contains_key(&count) {
            self.out.push(RxOut::Discard(pkt, count));
            return;
        }
        self.buffer.insert(count, pkt);
        if count >= self.rx_next {
            self.rx_next = count + 1;
        }
        if count == self.rx_deliv {
            self.deliver_consecutive_from(self.rx_deliv);
        }
        if self.timer.is_some() && self.rx_deliv >= self.rx_reord {
            self.timer = None;
        }
        self.maybe_start_timer(now);
    }

    fn deliver_consecutive_from(&mut self, from: u32) {
        let mut c = from;
        while let Some(p) = self.buffer.remove(&c) {
            self.out.push(RxOut::Deliver(p, c));
            c += 1;
        }
        self.rx_deliv = c;
    }

    fn maybe_start_timer(&mut self, now: Instant) {
        if self.timer.is_none() && self.rx_deliv < self.rx_next {
            self.rx_reord = self.rx_next;
            match self.t_reordering_ns {
                // t-Reordering = 0: expire at once.
                Some(0) => self.expire(now),
                Some(t) => self.timer = Some(now + t),
                None => {}
            }
        }
    }

    pub fn next_timeout(&self) -> Option<Instant> {
        self.timer
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.timer.is_some_and(|t| t <= now) {
            self.timer = None;
            self.expire(now);
        }
    }

    /// §5.2.2.2.4: deliver everything below RX_REORD, then consecutively from RX_REORD.
    fn expire(&mut self, now: Instant) {
        self.out.push(RxOut::ReorderingExpired(self.rx_reord));
        let below: Vec<u32> = self.buffer.range(..self.rx_reord).map(|(c, _)| *c).collect();
        for c in below {
            if let Some(p) = self.buffer.remove(&c) {
                self.out.push(RxOut::Deliver(p, c));
            }
        }
        self.deliver_consecutive_from(self.rx_reord.max(self.rx_deliv));
        self.maybe_start_timer(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MaybeMs;
    use scout_events::Dir;

    fn pkt(n: u64) -> Packet {
        Packet { pkt: n, flow: 0, ue: 0, dir: Dir::Dl, bytes: 100, qfi: 9, drb: 1, slice: 0, ecn: 0 }
    }

    fn delivered(rx: &mut PdcpRx) -> Vec<u32> {
        rx.out
            .drain(..)
            .filter_map(|o| match o {
                RxOut::Deliver(_, c) => Some(c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn reordering_holds_until_gap_filled() {
        let mut rx = PdcpRx::new(&PdcpCfg::default());
        rx.handle_pdu(0, 0, pkt(0));
        rx.handle_pdu(1, 2, pkt(2));
        rx.handle_pdu(2, 3, pkt(3));
        assert_eq!(delivered(&mut rx), vec![0]);
        assert_eq!(rx.next_timeout(), Some(1 + 220_000_000));
        rx.handle_pdu(5, 1, pkt(1));
        assert_eq!(delivered(&mut rx), vec![1, 2, 3]);
        assert_eq!(rx.next_timeout(), None);
    }

    #[test]
    fn discarded_sn_leaves_a_gap_waited_out_by_t_reordering() {
        let mut cfg = PdcpCfg::default();
        cfg.rx.t_reordering = MaybeMs::Ms(50);
        let mut rx = PdcpRx::new(&cfg);
        rx.handle_pdu(0, 0, pkt(0));
        rx.handle_pdu(10, 2, pkt(2)); // COUNT 1 was discarded at the transmitter
        assert_eq!(delivered(&mut rx), vec![0]);
        rx.handle_timeout(10 + 50_000_000 - 1);
        assert!(delivered(&mut rx).is_empty(), "timer has not expired yet");
        rx.handle_timeout(10 + 50_000_000);
        assert_eq!(delivered(&mut rx), vec![2]);
        // A late duplicate below RX_DELIV is discarded.
        rx.handle_pdu(60_000_000, 1, pkt(1));
        assert!(matches!(rx.out.pop(), Some(RxOut::Discard(_, 1))));
    }

    #[test]
    fn discard_timer_and_early_drop() {
        let mut cfg = PdcpCfg::default();
        cfg.tx.discard_timer = MaybeMs::Ms(100);
        let mut tx = PdcpTx::new(&cfg, 1000);
        assert_eq!(tx.handle_sdu(0, 400), TxVerdict::Send { count: 0, len: 403 });
        assert_eq!(tx.handle_sdu(1, 400), TxVerdict::Send { count: 1, len: 403 });
        assert_eq!(tx.handle_sdu(2, 400), TxVerdict::Drop(Reason::PdcpEarlyDrop));
        tx.handle_transmitted(0);
        assert_eq!(tx.outstanding_bytes(), 403);
        assert_eq!(tx.handle_sdu(3, 400), TxVerdict::Send { count: 2, len: 403 });
        assert_eq!(tx.next_timeout(), Some(1 + 100_000_000));
        assert_eq!(tx.expire(100_000_000), Vec::<u32>::new());
        assert_eq!(tx.expire(1 + 100_000_000), vec![1]);
        assert_eq!(tx.expire(3 + 100_000_000), vec![2]);
    }
}
