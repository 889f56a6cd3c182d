//! The receiving PDCP entity (TS 38.323 §5.2.2.2): RX_NEXT, RX_DELIV, RX_REORD, t-Reordering and
//! in-order delivery.

use super::*;

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
