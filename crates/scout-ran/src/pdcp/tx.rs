//! The transmitting PDCP entity (TS 38.323 §5.2.1): COUNT and header, the discard timer (§5.3)
//! and srsRAN's early drop.

use super::*;

/// What the transmitting side decided for an SDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxVerdict {
    /// Sent to the lower layer as a PDU of `len` bytes with this COUNT.
    Send { count: u32, len: u32 },
    /// Dropped before a COUNT was assigned.
    Drop(Reason),
}

struct Outstanding {
    count: u32,
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
    /// PDUs handed down and not yet reported transmitted (or discarded), oldest COUNT first:
    /// COUNTs are assigned in order and leave from the front (transmitted, or discarded in COUNT
    /// order as their timers expire), so a queue holds them; a status covering thousands of
    /// COUNTs at once costs one pop each.
    outstanding: VecDeque<Outstanding>,
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
            outstanding: VecDeque::new(),
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
        self.outstanding.push_back(Outstanding { count, len, discard_at });
        self.outstanding_bytes += u64::from(len);
        TxVerdict::Send { count, len }
    }

    /// When the next discard timer expires.
    pub fn next_timeout(&self) -> Option<Instant> {
        // Discard deadlines grow with COUNT (one timer value per entity), so the first is earliest.
        self.outstanding.front().and_then(|o| o.discard_at)
    }

    /// COUNTs whose discard timer expired at or before `now` (TS 38.323 §5.3); the caller asks
    /// the lower layer to discard them.
    pub fn expire(&mut self, now: Instant) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(o) = self.outstanding.pop_front_if(|o| o.discard_at.is_some_and(|t| t <= now)) {
            self.outstanding_bytes -= u64::from(o.len);
            out.push(o.count);
        }
        out
    }

    /// The lower layer reports every COUNT ≤ `highest` transmitted (F1-U DDDS, TS 38.425 §5.4.2.1;
    /// or the local RLC at the UE): they stop counting towards early drop and their discard timers stop.
    pub fn handle_transmitted(&mut self, highest: u32) {
        while let Some(o) = self.outstanding.pop_front_if(|o| o.count <= highest) {
            self.outstanding_bytes -= u64::from(o.len);
        }
    }
}
