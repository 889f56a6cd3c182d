//! RLC tests against TS 38.322 behaviour: segmentation, AM recovery of a lost PDU, UM reassembly
//! timeout.

use super::*;
use crate::config::{RlcCfg, RlcMode};
use scout_events::Dir;

fn sdu(n: u64, len: u32) -> Sdu {
    Sdu {
        pkt: Packet { pkt: n, flow: 0, ue: 0, dir: Dir::Dl, bytes: len, qfi: 9, drb: 1, slice: 0, ecn: 0 },
        pdcp_sn: n as u32,
        len,
    }
}

fn mac(_: u32) -> u32 {
    2
}

fn delivered(e: &mut RlcEntity) -> Vec<u64> {
    e.out
        .drain(..)
        .filter_map(|o| match o {
            RlcOut::Delivered { sdu } => Some(sdu.pkt.pkt),
            _ => None,
        })
        .collect()
}

#[test]
fn segments_sum_to_the_sdu_and_headers_follow_6_2_2() {
    let mut tx = RlcEntity::new(&RlcCfg::default());
    tx.handle_sdu(0, sdu(0, 1000));
    let mut pdus = Vec::new();
    for _ in 0..10 {
        pdus.extend(tx.pull(0, 300, mac));
    }
    let mut total = 0;
    for (i, p) in pdus.iter().enumerate() {
        let RlcPdu::Data { offset, len, header, .. } = p else { panic!("data expected") };
        assert_eq!(*offset, total);
        // 18-bit AM SN: 3 bytes; SO adds 2 bytes for every segment but the first.
        assert_eq!(*header, if i == 0 { 3 } else { 5 });
        assert!(p.bytes() + 2 <= 300);
        total += len;
    }
    assert_eq!(total, 1000);
    assert_eq!(tx.queue_bytes(), 0);
}

#[test]
fn am_recovers_a_lost_pdu_by_status_and_retransmission() {
    let cfg = RlcCfg::default();
    let mut tx = RlcEntity::new(&cfg);
    let mut rx = RlcEntity::new(&cfg);
    for n in 0..4 {
        tx.handle_sdu(0, sdu(n, 500));
    }
    let pdus = tx.pull(0, 4 * 510, mac);
    assert_eq!(pdus.len(), 4);
    // The last PDU carries a poll (the buffer became empty, §5.3.3.2).
    assert!(matches!(pdus[3], RlcPdu::Data { poll: true, .. }));
    // PDU with SN 1 is lost on the air.
    for (i, p) in pdus.iter().enumerate() {
        if i != 1 {
            rx.handle_data(1_000_000, p);
        }
    }
    // NR RLC delivers reassembled SDUs at once, out of order.
    assert_eq!(delivered(&mut rx), vec![0, 2, 3]);
    // The poll is answered once t-Reassembly (20 ms) has set RX_Highest_Status past the gap.
    assert!(rx.pull(1_000_000, 100, mac).is_empty());
    rx.handle_timeout(1_000_000 + 20 * MS);
    let status = rx.pull(1_000_000 + 20 * MS, 100, mac);
    let [RlcPdu::Status { ack_sn, nacks, .. }] = status.as_slice() else { panic!("status expected: {status:?}") };
    assert_eq!(*ack_sn, 4);
    assert_eq!(nacks, &vec![Nack { sn: 1, so: None }]);
    tx.handle_status(30 * MS, *ack_sn, nacks);
    let acked: Vec<u32> =
        tx.out.iter().filter_map(|o| if let RlcOut::Acked { pdcp_sn } = o { Some(*pdcp_sn) } else { None }).collect();
    assert_eq!(acked, vec![0, 2, 3]);
    let retx = tx.pull(30 * MS, 1000, mac);
    let [p @ RlcPdu::Data { sn: 1, retx: 1, .. }] = retx.as_slice() else { panic!("retx of SN 1 expected: {retx:?}") };
    rx.handle_data(40 * MS, p);
    assert_eq!(delivered(&mut rx), vec![1]);
    // The retransmission carried a poll: the receiver reports everything received...
    rx.handle_timeout(40 * MS);
    let st = rx.pull(40 * MS, 100, mac);
    assert!(matches!(st.as_slice(), [RlcPdu::Status { ack_sn: 4, nacks, .. }] if nacks.is_empty()), "{st:?}");
    // ...and t-StatusProhibit (10 ms) holds a new report until it expires.
    rx.handle_data(41 * MS, p);
    assert!(rx.pull(41 * MS, 100, mac).is_empty());
    rx.handle_timeout(50 * MS);
    assert_eq!(rx.pull(50 * MS, 100, mac).len(), 1);
}

#[test]
fn am_gives_up_after_max_retx_threshold() {
    let mut cfg = RlcCfg::default();
    cfg.am.tx.max_retx_threshold = 2;
    let mut tx = RlcEntity::new(&cfg);
    tx.handle_sdu(0, sdu(7, 100));
    tx.pull(0, 200, mac);
    let nack = [Nack { sn: 0, so: None }];
    for i in 0..3 {
        tx.handle_status(i, 1, &nack);
        tx.pull(i, 200, mac);
    }
    assert!(tx.out.iter().any(|o| matches!(o, RlcOut::Dropped { reason: Reason::RlcMaxRetx, .. })));
}

#[test]
fn queue_limits_drop_and_count() {
    let mut cfg = RlcCfg::default();
    cfg.am.tx.queue_size = 2;
    let mut tx = RlcEntity::new(&cfg);
    for n in 0..3 {
        tx.handle_sdu(0, sdu(n, 100));
    }
    let drops = tx.out.iter().filter(|o| matches!(o, RlcOut::Dropped { reason: Reason::RlcQueueFull, .. })).count();
    assert_eq!(drops, 1);
    assert_eq!(tx.queue_pkts(), 2);
}

#[test]
fn um_discards_incomplete_sdu_on_t_reassembly() {
    let cfg = RlcCfg { mode: RlcMode::UmBidir, ..Default::default() };
    let mut tx = RlcEntity::new(&cfg);
    let mut rx = RlcEntity::new(&cfg);
    tx.handle_sdu(0, sdu(0, 600));
    tx.handle_sdu(0, sdu(1, 100));
    let a = tx.pull(0, 300, mac); // first segment of SDU 0
    let _lost = tx.pull(0, 300, mac); // middle segment lost
    let c = tx.pull(0, 400, mac); // last segment of 0 + whole SDU 1 (1-byte header, no SN)
    for p in a.iter().chain(c.iter()) {
        rx.handle_data(0, p);
    }
    assert_eq!(delivered(&mut rx), vec![1]);
    rx.handle_timeout(50 * MS);
    assert!(rx
        .out
        .iter()
        .any(|o| matches!(o, RlcOut::Dropped { sdu, reason: Reason::RlcReassemblyTimeout } if sdu.pkt.pkt == 0)));
    assert!(matches!(c.last(), Some(RlcPdu::Data { header: 1, whole: true, .. })));
}
