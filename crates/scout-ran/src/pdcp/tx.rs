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

/// When new SDUs are dropped before a COUNT is assigned (srsRAN `check_early_drop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EarlyDrop {
    Off,
    /// While the outstanding volume would exceed this many bytes.
    Fixed(u64),
    /// While it would exceed the lower layer's desired buffer size (F1-U DDDS, TS 38.425
    /// §5.4.2.1), plus `hold` bytes the CU-UP's F1-U transmit queue may hold beyond it. srsRAN:
    /// `hold` 0, so a desired buffer size of 0 drops everything.
    Desired {
        desired: u64,
        hold: u64,
    },
}

/// The transmitting side.
pub struct PdcpTx {
    sn_bits: u8,
    discard_ns: Option<i64>,
    early_drop: EarlyDrop,
    tx_next: u32,
    /// PDUs handed down and not yet reported transmitted (or discarded), oldest COUNT first:
    /// COUNTs are assigned in order and leave from the front (transmitted, or discarded in COUNT
    /// order as their timers expire), so a queue holds them; a status covering thousands of
    /// COUNTs at once costs one pop each.
    outstanding: VecDeque<Outstanding>,
    outstanding_bytes: u64,
}

impl PdcpTx {
    /// `desired` is the lower layer's desired buffer size until it reports one (srsRAN seeds it
    /// with the DU's RLC queue byte limit) and `hold` what the F1-U transmit queue may hold
    /// beyond it; they set the early-drop threshold when `early_drop_bytes` is -1 (the default).
    pub fn new(cfg: &PdcpCfg, desired: u64, hold: u64) -> Self {
        let early_drop = match cfg.tx.early_drop_bytes {
            e if e < 0 => EarlyDrop::Desired { desired, hold },
            0 => EarlyDrop::Off,
            e => EarlyDrop::Fixed(e as u64),
        };
        PdcpTx {
            sn_bits: cfg.tx.sn,
            discard_ns: cfg.tx.discard_timer.ns(),
            early_drop,
            tx_next: 0,
            outstanding: VecDeque::new(),
            outstanding_bytes: 0,
        }
    }

    /// Volume handed down and not yet reported transmitted.
    pub fn outstanding_bytes(&self) -> u64 {
        self.outstanding_bytes
    }

    /// The lower layer's desired buffer size arrived (a DDDS): the early-drop threshold follows it
    /// when it is tied to it.
    pub fn handle_desired_buffer_size(&mut self, bytes: u64) {
        if let EarlyDrop::Desired { desired, .. } = &mut self.early_drop {
            *desired = bytes;
        }
    }

    /// Processes an SDU of `bytes` at `now` (TS 38.323 §5.2.1; early drop as srsRAN's CU-UP).
    pub fn handle_sdu(&mut self, now: Instant, bytes: u32) -> TxVerdict {
        let len = bytes + header_bytes(self.sn_bits);
        let limit = match self.early_drop {
            EarlyDrop::Off => u64::MAX,
            EarlyDrop::Fixed(b) => b,
            EarlyDrop::Desired { desired, hold } => desired + hold,
        };
        if self.outstanding_bytes + u64::from(len) > limit {
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
