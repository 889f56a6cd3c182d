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
    assert_eq!(tx.unacked_sns(), vec![0, 1, 2, 3]);
    tx.handle_status(30 * MS, *ack_sn, nacks);
    assert_eq!(tx.unacked_sns(), vec![1]);
    assert_eq!(acked(&mut tx), vec![(3, 3)]);
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

/// The acknowledgements reported since the last call: (SDUs, PDCP SN of the last) per STATUS.
fn acked(tx: &mut RlcEntity) -> Vec<(u32, u32)> {
    tx.out
        .drain(..)
        .filter_map(|o| if let RlcOut::Acked { sdus, last_pdcp_sn } = o { Some((sdus, last_pdcp_sn)) } else { None })
        .collect()
}

/// TS 38.322 §5.3.4: a STATUS PDU too small for every NACK sets ACK_SN to the first missing SN it
/// leaves out, so the transmitter still retransmits what was not listed.
#[test]
fn am_status_that_cannot_list_every_loss_acks_only_up_to_the_first_unlisted_one() {
    let cfg = RlcCfg::default();
    let mut tx = RlcEntity::new(&cfg);
    let mut rx = RlcEntity::new(&cfg);
    for n in 0..40 {
        tx.handle_sdu(0, sdu(n, 100));
    }
    let pdus = tx.pull(0, 40 * 110, mac);
    assert_eq!(pdus.len(), 40);
    // Every odd SN but the last (it carries the poll) is lost on the air: 19 gaps.
    for p in pdus.iter().step_by(2).chain(pdus.last()) {
        rx.handle_data(MS, p);
    }
    // t-Reassembly runs twice (its first run covers the first gap only, §5.2.3.2.4), after which
    // RX_Highest_Status is 40.
    rx.handle_timeout(21 * MS);
    rx.handle_timeout(41 * MS);
    // 3 bytes of header + 3 per NACK (§6.2.2.5) + a 2-byte MAC subheader: room for 5 NACKs.
    let st = rx.pull(41 * MS, 3 + 5 * 3 + 2, mac);
    let [RlcPdu::Status { ack_sn, nacks, bytes }] = st.as_slice() else { panic!("status expected: {st:?}") };
    assert_eq!(nacks.iter().map(|n| n.sn).collect::<Vec<_>>(), vec![1, 3, 5, 7, 9]);
    assert_eq!((*ack_sn, *bytes), (11, 18));
    tx.out.clear();
    tx.handle_status(30 * MS, *ack_sn, nacks);
    // Only SNs below ACK_SN that were received count as acknowledged (0, 2, …, 10); 11..39 stay
    // outstanding.
    assert_eq!(acked(&mut tx), vec![(6, 10)]);
    assert_eq!(tx.unacked_sns(), [1, 3, 5, 7, 9].into_iter().chain(11..40).collect::<Vec<u32>>());
    let retx: Vec<u32> = tx
        .pull(30 * MS, 10_000, mac)
        .iter()
        .filter_map(|p| if let RlcPdu::Data { sn, retx: 1, .. } = p { Some(*sn) } else { None })
        .collect();
    assert_eq!(retx, vec![1, 3, 5, 7, 9]);
    // With room for all, the next report NACKs all 19 gaps (none was retransmitted to it) and
    // acknowledges everything else.
    rx.handle_timeout(60 * MS);
    rx.trigger_status(60 * MS);
    let st = rx.pull(60 * MS, 1000, mac);
    let [RlcPdu::Status { ack_sn, nacks, .. }] = st.as_slice() else { panic!("status expected: {st:?}") };
    assert_eq!(*ack_sn, 40);
    assert_eq!(nacks.len(), 19);
    tx.handle_status(70 * MS, *ack_sn, nacks);
    // 12, 14, …, 38 and 39 acknowledged: the 19 gaps stay.
    assert_eq!(acked(&mut tx), vec![(15, 39)]);
    assert_eq!(tx.unacked_sns(), (1..39).step_by(2).collect::<Vec<u32>>());
}

/// TS 38.322 §5.2.3.1.1: no new SN outside TX_Next_Ack + AM_Window_Size (2048 with 12-bit SNs);
/// the last PDU before the stall polls (§5.3.3.2), and an acknowledgement opens the window.
#[test]
fn am_transmitter_stalls_when_the_window_is_full() {
    let mut cfg = RlcCfg::default();
    cfg.am.tx.sn = 12;
    let mut tx = RlcEntity::new(&cfg);
    for n in 0..2100 {
        tx.handle_sdu(0, sdu(n, 10));
    }
    let pdus = tx.pull(0, 1_000_000, mac);
    assert_eq!(pdus.len(), 2048);
    assert!(matches!(pdus.last(), Some(RlcPdu::Data { sn: 2047, poll: true, .. })));
    assert!(tx.pull(MS, 1_000_000, mac).is_empty(), "stalled");
    assert_eq!(tx.queue_pkts(), 52);
    tx.handle_status(2 * MS, 30, &[]);
    let more = tx.pull(2 * MS, 1_000_000, mac);
    assert_eq!(more.len(), 30);
    assert!(matches!(more.last(), Some(RlcPdu::Data { sn: 2077, .. })));
    // Stalled with nothing to retransmit: t-PollRetransmit resends the highest SN with a poll.
    tx.handle_timeout(2 * MS + cfg.am.tx.t_poll_retransmit * MS);
    let again = tx.pull(200 * MS, 1_000_000, mac);
    assert!(matches!(again.as_slice(), [RlcPdu::Data { sn: 2077, retx: 1, poll: true, .. }]), "{again:?}");
}

/// TS 38.322 §5.3.3.2: a poll when the PDU leaves both buffers empty, not while an SDU still waits.
#[test]
fn am_polls_when_the_buffer_empties_not_before() {
    let mut tx = RlcEntity::new(&RlcCfg::default());
    for n in 0..3 {
        tx.handle_sdu(0, sdu(n, 100));
    }
    let polls: Vec<bool> = (0..3)
        .map(|_| match tx.pull(0, 110, mac).as_slice() {
            [RlcPdu::Data { poll, .. }] => *poll,
            other => panic!("one data PDU expected: {other:?}"),
        })
        .collect();
    assert_eq!(polls, vec![false, false, true]);
}

/// The queue discipline's dequeue hook sees each SDU's sojourn once, as its first byte leaves, and
/// what it sets on the SDU (an ECN mark) rides in every PDU of it.
#[test]
fn the_discipline_sees_each_sdu_leave_once_and_its_mark_rides_in_the_pdus() {
    use std::sync::{Arc, Mutex};
    struct MarkAbove(i64, Arc<Mutex<Vec<i64>>>);
    impl queue::Discipline for MarkAbove {
        fn admit(&mut self, _: Instant, _: u32, _: u64, _: u32) -> Result<(), Reason> {
            Ok(())
        }
        fn dequeue(&mut self, _: Instant, sojourn_ns: i64, _: u64, sdu: &mut Sdu) -> bool {
            self.1.lock().unwrap().push(sojourn_ns);
            if sojourn_ns > self.0 {
                sdu.pkt.ecn = 3;
            }
            sojourn_ns > self.0
        }
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut tx = RlcEntity::with_discipline(&RlcCfg::default(), Box::new(MarkAbove(5 * MS, seen.clone())));
    tx.handle_sdu(0, sdu(0, 1000));
    tx.handle_sdu(8 * MS, sdu(1, 100));
    // SDU 0 leaves in three segments from 10 ms; SDU 1 with its last one.
    let mut pdus = Vec::new();
    for _ in 0..4 {
        pdus.extend(tx.pull(10 * MS, 400, mac));
    }
    let marks: Vec<(u64, u8)> = pdus
        .iter()
        .filter_map(|p| if let RlcPdu::Data { sdu, .. } = p { Some((sdu.pkt.pkt, sdu.pkt.ecn)) } else { None })
        .collect();
    assert_eq!(marks, vec![(0, 3), (0, 3), (0, 3), (1, 0)]);
    assert_eq!(*seen.lock().unwrap(), vec![10 * MS, 2 * MS], "one sojourn per SDU");
    // The entity reports the signal once, for SDU 0.
    let signals: Vec<u64> =
        tx.out.iter().filter_map(|o| if let RlcOut::CeMark { sdu } = o { Some(sdu.pkt.pkt) } else { None }).collect();
    assert_eq!(signals, vec![0]);
}
