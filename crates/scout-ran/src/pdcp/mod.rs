//! PDCP, TS 38.323, for one DRB end: COUNT assignment, header, discard timer and the srsRAN early-drop
//! rule on the transmitting side; reordering with t-Reordering and in-order delivery on the receiving
//! side (§5.2.2.2). Sans-IO like every entity: outputs go to [`PdcpTx::out`] / [`PdcpRx::out`].

use std::collections::{BTreeMap, VecDeque};

use scout_events::Reason;

use crate::config::PdcpCfg;
use crate::packet::Packet;
use crate::Instant;

pub use self::rx::{PdcpRx, RxOut};
pub use self::tx::{PdcpTx, TxVerdict};

/// PDCP Data PDU header for DRBs, TS 38.323 §6.2.2: 2 bytes with a 12-bit SN, 3 with an 18-bit SN.
pub fn header_bytes(sn_bits: u8) -> u32 {
    if sn_bits == 12 {
        2
    } else {
        3
    }
}

mod rx;
mod tx;

#[cfg(test)]
mod tests;
