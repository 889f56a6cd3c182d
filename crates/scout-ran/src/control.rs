//! Every control event the model writes, typed, and the one place each becomes a
//! `control_events` row (`docs/schema.md` lists the kinds and what `sn`, `value` and `detail` hold).

use scout_events::{ControlEvent, ControlKind, Dir, Layer, Node};

use crate::mac::anbr::Recommendation;
use crate::mac::bsr::BsrFormat;
use crate::packet::Packet;
use crate::Instant;

/// What an RLC entity reports (TS 38.322).
#[derive(Clone, Debug, PartialEq)]
pub enum RlcControl {
    /// A STATUS PDU built (§5.3.4): ACK_SN and the NACKed SNs.
    Status { ack_sn: u32, nacks: Vec<u32> },
    /// A poll set in an AMD PDU (§5.3.3.2); POLL_SN.
    Poll { poll_sn: Option<u32> },
    /// A duplicate AMD PDU discarded at the receiver (§5.2.3.2.2).
    Duplicate { sn: u32, len: u32 },
    /// t-Reassembly expired (§5.2.3.2.4 AM, §5.2.2.2.4 UM); RX_Next_Status_Trigger.
    ReassemblyExpired { trigger: u32 },
    /// t-PollRetransmit expired (§5.3.3.4); POLL_SN.
    PollRetransmitExpired { poll_sn: Option<u32> },
    /// An AMD PDU retransmitted by ARQ completed SDU `sn` at the receiver after `nof_tx`
    /// transmissions, the first built at `start`: a retransmission event at the RLC layer (seed
    /// 004 §3.1.1), `delay` T_R from the first transmission to the last.
    RetxEvent { sn: u32, nof_tx: u32, start: Instant, delay: i64 },
}

/// A control event of the model.
#[derive(Clone, Debug, PartialEq)]
pub enum Control {
    /// A scheduling request at the UE's SR occasion (TS 38.321 §5.4.4).
    Sr { ue: u32 },
    /// An UL grant issued for PUSCH slot `pusch_slot`, of `tbs` bytes.
    Grant { ue: u32, pusch_slot: u64, tbs: u32 },
    /// A Long BSR reporting `bytes` buffered (TS 38.321 §6.1.3.1).
    Bsr { ue: u32, bytes: u64 },
    /// A TB given up after the last HARQ retransmission.
    HarqFail { ue: u32, dir: Dir, tbs: u32 },
    /// The gNB sent a Recommended bit rate MAC CE for a DL logical channel (TS 38.321 §6.1.3.20).
    Anbr(Recommendation),
    /// A TB of UE `ue` in `dir` decoded after `nof_tx` transmissions of HARQ process `harq`, the
    /// first in `first_slot` (starting at `start`), the last in `slot`: a retransmission event
    /// (seed 004 §3.1.1); `delay` is the retransmission delay T_M, first to last transmission.
    /// `k`: the first retransmission's two delays in slots (DL: k1, kd; UL: ku, k2).
    RetxEvent {
        ue: u32,
        dir: Dir,
        harq: u8,
        nof_tx: u32,
        first_slot: u64,
        slot: u64,
        start: i64,
        delay: i64,
        k: Option<(u64, u64)>,
    },
    /// A Recommended bit rate query MAC CE (TS 38.321 §5.18.10) for a DL logical channel: taken by
    /// the UE's MAC (`node` UE) or decoded by the gNB (`node` gNB-DU); the bit rate asked, bit/s.
    AnbrQuery { node: Node, ue: u32, drb: u8, bps: u64 },
    /// An F1-U DL Data Delivery Status reached the CU-UP (TS 38.425 §5.5.2.2): the highest PDCP SN
    /// the DU transmitted and its desired buffer size in bytes.
    DeliveryStatus { ue: u32, drb: u8, highest: u32, desired: u64 },
    /// A PDCP duplicate discarded while the packet is still in flight.
    PdcpDuplicate { node: Node, ue: u32, drb: u8 },
    /// PDCP t-Reordering expired (TS 38.323 §5.2.2.4); RX_REORD.
    PdcpReorderingExpired { node: Node, ue: u32, drb: u8, rx_reord: u32 },
    /// What a bearer's RLC entity at `node` reported.
    Rlc { node: Node, ue: u32, drb: u8, event: RlcControl },
    /// A packet still inside the system when the run ended.
    InFlight { packet: Packet },
}

impl Control {
    /// The row of this event at `t`.
    pub fn row(&self, t: i64) -> ControlEvent {
        let row = |node, layer, kind, ue: u32| ControlEvent {
            t_ns: t,
            node,
            layer,
            kind,
            dir: None,
            ue: Some(ue),
            drb: None,
            sn: None,
            value: None,
            detail: None,
        };
        match self {
            Control::Sr { ue } => row(Node::Ue, Layer::Mac, ControlKind::Sr, *ue),
            Control::Grant { ue, pusch_slot, tbs } => ControlEvent {
                sn: Some(*pusch_slot as i64),
                value: Some(f64::from(*tbs)),
                ..row(Node::GnbDu, Layer::Mac, ControlKind::Grant, *ue)
            },
            Control::Bsr { ue, bytes } => ControlEvent {
                value: Some(*bytes as f64),
                detail: Some(format!("{{\"index\":{}}}", BsrFormat::Long.index(*bytes))),
                ..row(Node::Ue, Layer::Mac, ControlKind::Bsr, *ue)
            },
            Control::HarqFail { ue, dir, tbs } => {
                let node = if *dir == Dir::Dl { Node::GnbDu } else { Node::Ue };
                ControlEvent {
                    dir: Some(*dir),
                    value: Some(f64::from(*tbs)),
                    ..row(node, Layer::Mac, ControlKind::HarqFail, *ue)
                }
            }
            Control::Anbr(r) => ControlEvent {
                dir: Some(Dir::Dl),
                drb: Some(r.drb as u8 + 1),
                value: Some(r.bit_rate_bps as f64),
                detail: Some(format!(
                    "{{\"index\":{},\"multiplier\":{},\"answer\":{}}}",
                    r.index, r.multiplier, r.answer
                )),
                ..row(Node::GnbDu, Layer::Mac, ControlKind::Anbr, r.ue)
            },
            Control::RetxEvent { ue, dir, harq, nof_tx, first_slot, slot, start, delay, k } => ControlEvent {
                dir: Some(*dir),
                sn: Some(i64::from(*harq)),
                value: Some(*delay as f64),
                detail: Some(format!(
                    "{{\"layer\":\"mac\",\"harq_id\":{harq},\"nof_tx\":{nof_tx},\"first_slot\":{first_slot},\"slot\":{slot},\"start_ns\":{start}{}}}",
                    match (k, dir) {
                        (Some((a, b)), Dir::Dl) => format!(",\"k1\":{a},\"kd\":{b}"),
                        (Some((a, b)), Dir::Ul) => format!(",\"ku\":{a},\"k2\":{b}"),
                        (None, _) => String::new(),
                    }
                )),
                // Where the reordering holds the data: the UE for DL, the gNB-DU for UL.
                ..row(if *dir == Dir::Dl { Node::Ue } else { Node::GnbDu }, Layer::Mac, ControlKind::RetxEvent, *ue)
            },
            Control::AnbrQuery { node, ue, drb, bps } => ControlEvent {
                dir: Some(Dir::Dl),
                drb: Some(*drb),
                value: Some(*bps as f64),
                ..row(*node, Layer::Mac, ControlKind::AnbrQuery, *ue)
            },
            Control::DeliveryStatus { ue, drb, highest, desired } => ControlEvent {
                drb: Some(*drb),
                sn: Some(i64::from(*highest)),
                value: Some(*desired as f64),
                ..row(Node::GnbCu, Layer::F1u, ControlKind::DeliveryStatus, *ue)
            },
            Control::PdcpDuplicate { node, ue, drb } => {
                ControlEvent { drb: Some(*drb), ..row(*node, Layer::Pdcp, ControlKind::PdcpDuplicate, *ue) }
            }
            Control::PdcpReorderingExpired { node, ue, drb, rx_reord } => ControlEvent {
                dir: Some(received(*node)),
                drb: Some(*drb),
                sn: Some(i64::from(*rx_reord)),
                ..row(*node, Layer::Pdcp, ControlKind::PdcpTReorderingExpired, *ue)
            },
            Control::Rlc { node, ue, drb, event } => {
                // The kind is the event's, which rlc_row sets.
                rlc_row(event, *node, ControlEvent { drb: Some(*drb), ..row(*node, Layer::Rlc, ControlKind::RlcStatus, *ue) })
            }
            Control::InFlight { packet: p } => ControlEvent {
                dir: Some(p.dir),
                drb: Some(p.drb),
                sn: Some(p.pkt as i64),
                value: Some(f64::from(p.bytes)),
                ..row(Node::App, Layer::App, ControlKind::InFlight, p.ue)
            },
        }
    }
}

/// An RLC entity's control row: `r` (its node, UE and DRB) with the event's kind and fields.
fn rlc_row(event: &RlcControl, node: Node, r: ControlEvent) -> ControlEvent {
    match event {
        RlcControl::Status { ack_sn, nacks } => ControlEvent {
            kind: ControlKind::RlcStatus,
            dir: Some(received(node)),
            sn: Some(i64::from(*ack_sn)),
            value: Some(nacks.len() as f64),
            detail: Some(format!(
                "{{\"ack_sn\":{ack_sn},\"nacks\":[{}]}}",
                nacks.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
            )),
            ..r
        },
        RlcControl::Poll { poll_sn } => ControlEvent { kind: ControlKind::Poll, sn: poll_sn.map(i64::from), ..r },
        RlcControl::Duplicate { sn, len } => ControlEvent {
            kind: ControlKind::RlcDuplicate,
            sn: Some(i64::from(*sn)),
            value: Some(f64::from(*len)),
            ..r
        },
        RlcControl::ReassemblyExpired { trigger } => ControlEvent {
            kind: ControlKind::RlcTReassemblyExpired,
            dir: Some(received(node)),
            sn: Some(i64::from(*trigger)),
            ..r
        },
        RlcControl::PollRetransmitExpired { poll_sn } => ControlEvent {
            kind: ControlKind::RlcTPollRetransmitExpired,
            dir: Some(sent(node)),
            sn: poll_sn.map(i64::from),
            ..r
        },
        RlcControl::RetxEvent { sn, nof_tx, start, delay } => ControlEvent {
            kind: ControlKind::RetxEvent,
            dir: Some(received(node)),
            sn: Some(i64::from(*sn)),
            value: Some(*delay as f64),
            detail: Some(format!("{{\"layer\":\"rlc\",\"rlc_sn\":{sn},\"nof_tx\":{nof_tx},\"start_ns\":{start}}}")),
            ..r
        },
    }
}

/// The direction of the data a receiving entity at `node` handles: the UE receives the DL.
fn received(node: Node) -> Dir {
    if node == Node::Ue {
        Dir::Dl
    } else {
        Dir::Ul
    }
}

/// The direction of the data a transmitting entity at `node` sends: the UE sends the UL.
fn sent(node: Node) -> Dir {
    if node == Node::Ue {
        Dir::Ul
    } else {
        Dir::Dl
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_name_their_kind_and_fill_their_columns() {
        let bsr = Control::Bsr { ue: 2, bytes: 5000 }.row(7);
        assert_eq!(
            (bsr.t_ns, bsr.node, bsr.layer, bsr.kind, bsr.ue),
            (7, Node::Ue, Layer::Mac, ControlKind::Bsr, Some(2))
        );
        assert_eq!(bsr.value, Some(5000.0));
        assert_eq!(bsr.detail.as_deref(), Some(format!("{{\"index\":{}}}", BsrFormat::Long.index(5000)).as_str()));
        let st =
            Control::Rlc { node: Node::Ue, ue: 0, drb: 1, event: RlcControl::Status { ack_sn: 9, nacks: vec![3, 5] } }
                .row(1);
        assert_eq!((st.kind, st.sn, st.value, st.drb), (ControlKind::RlcStatus, Some(9), Some(2.0), Some(1)));
        assert_eq!(st.dir, Some(Dir::Dl), "a STATUS the UE sends acknowledges DL data");
        assert_eq!(st.detail.as_deref(), Some("{\"ack_sn\":9,\"nacks\":[3,5]}"));
        let fail = Control::HarqFail { ue: 1, dir: Dir::Ul, tbs: 300 }.row(0);
        assert_eq!((fail.node, fail.dir), (Node::Ue, Some(Dir::Ul)));
        for (event, kind, dir) in [
            (RlcControl::ReassemblyExpired { trigger: 1 }, ControlKind::RlcTReassemblyExpired, Dir::Ul),
            (RlcControl::PollRetransmitExpired { poll_sn: Some(1) }, ControlKind::RlcTPollRetransmitExpired, Dir::Dl),
        ] {
            let r = Control::Rlc { node: Node::GnbDu, ue: 0, drb: 1, event }.row(0);
            assert_eq!((r.kind, r.dir), (kind, Some(dir)), "at the DU");
        }
    }
}
