//! PDCP against TS 38.323: COUNTs, discard timer and early drop, reordering and t-Reordering.

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
    let mut tx = PdcpTx::new(&cfg, 1000, 0);
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

#[test]
fn early_drop_follows_the_desired_buffer_size_and_a_zero_one_drops_everything() {
    // srsRAN's check_early_drop: outstanding + PDU > desired buffer size, or a desired size of 0.
    let mut tx = PdcpTx::new(&PdcpCfg::default(), 1000, 0);
    assert_eq!(tx.handle_sdu(0, 400), TxVerdict::Send { count: 0, len: 403 });
    tx.handle_desired_buffer_size(500);
    assert_eq!(tx.handle_sdu(1, 400), TxVerdict::Drop(Reason::PdcpEarlyDrop), "806 > 500");
    tx.handle_desired_buffer_size(0);
    tx.handle_transmitted(0);
    assert_eq!(tx.handle_sdu(2, 1), TxVerdict::Drop(Reason::PdcpEarlyDrop), "desired buffer size 0");
    // With flow control the F1-U transmit queue's bytes come on top.
    let mut held = PdcpTx::new(&PdcpCfg::default(), 0, 1000);
    assert_eq!(held.handle_sdu(0, 400), TxVerdict::Send { count: 0, len: 403 });
    assert_eq!(held.handle_sdu(1, 400), TxVerdict::Send { count: 1, len: 403 });
    assert_eq!(held.handle_sdu(2, 400), TxVerdict::Drop(Reason::PdcpEarlyDrop));
    // A fixed threshold ignores the desired buffer size.
    let mut cfg = PdcpCfg::default();
    cfg.tx.early_drop_bytes = 500;
    let mut fixed = PdcpTx::new(&cfg, 0, 0);
    fixed.handle_desired_buffer_size(0);
    assert_eq!(fixed.handle_sdu(0, 400), TxVerdict::Send { count: 0, len: 403 });
}
