use super::super::reader::EntryReader;
use super::super::slots::SlotStitcher;
use super::*;
use scout_events::Reason;
use scout_events::VecSink;

/// A UL log in the 24.10 format (RLC prefix with `du=`), written from the reference's formats:
/// SDU 0 in one PDU; SDU 1 in three segments whose first is lost to HARQ and retransmitted by
/// ARQ after the others; SDU 2 held by PDCP until t-Reordering expires; SDU 1 then arrives too
/// late for PDCP; a status PDU rides in the same MAC PDU as data.
const UL_24_10: &str = "\
2024-11-25T15:08:25.000000 [PDCP    ] [I] ue=0 DRB1 UL: PDCP configured. rb_type=DRB rlc_mode=AM sn_size=18 t_reordering=80
2024-11-25T15:08:25.001000 [SCHED   ] [I] [   10.1] Slot decisions pci=1 t=4us (0 PDSCHs, 1 PUSCH): UL: ue=0 rnti=0x4601 h_id=0 ss_id=2 rb=[3..50) rv=0 tbs=301 k2=4
2024-11-25T15:08:25.002000 [UL-PHY1 ] [I] [   10.1] PUSCH: rnti=0x4601 h_id=0 prb=[3, 50) symb=[0, 14) mod=QPSK rv=0 tbs=301 crc=OK iter=1.0 sinr=2.8dB t=109.9us
2024-11-25T15:08:25.002100 [MAC     ] [I] [   10.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=3, lcid=4: len=102, SBSR: lcg=1 bs=14, PAD: len=3]
2024-11-25T15:08:25.002110 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX status PDU. ack_sn=4 n_nack=0
2024-11-25T15:08:25.002120 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=102 dc=data p=0 si=full sn=0
2024-11-25T15:08:25.002130 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX SDU. sn=0 sdu_len=100
2024-11-25T15:08:25.002140 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=100 sn=0 count=0
2024-11-25T15:08:25.002150 [PDCP    ] [I] ue=0 DRB1 UL: RX SDU. count=0
2024-11-25T15:08:25.002160 [GTPU    ] [I] ue=0 UL teid=0x00affa: TX PDU. pdu_len=113 teid=0x00affa qfi=QFI=1
2024-11-25T15:08:25.006000 [UL-PHY1 ] [I] [   11.1] PUSCH: rnti=0x4601 h_id=1 prb=[3, 50) symb=[0, 14) mod=QPSK rv=0 tbs=301 crc=KO iter=6.0 sinr=-2.0dB t=100.0us
2024-11-25T15:08:25.009900 [UL-PHY1 ] [I] [   11.5] PUSCH: rnti=0x4601 h_id=1 prb=[3, 50) symb=[0, 14) mod=QPSK rv=2 tbs=301 crc=OK iter=1.0 sinr=2.8dB t=100.0us
2024-11-25T15:08:25.010000 [MAC     ] [I] [   11.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=55, lcid=4: len=54, lcid=4: len=53]
2024-11-25T15:08:25.010010 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=55 dc=data p=0 si=mid sn=1 so=50
2024-11-25T15:08:25.010020 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=54 dc=data p=0 si=last sn=1 so=101
2024-11-25T15:08:25.010030 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=53 dc=data p=1 si=full sn=2
2024-11-25T15:08:25.010040 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX SDU. sn=2 sdu_len=51
2024-11-25T15:08:25.010050 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=51 sn=2 count=2
2024-11-25T15:08:25.090000 [PDCP    ] [I] ue=0 DRB1 UL: Reordering timer expired. rx_reord=2 queued_sdus=1
2024-11-25T15:08:25.090010 [GTPU    ] [I] ue=0 UL teid=0x00affa: TX PDU. pdu_len=64 teid=0x00affa qfi=QFI=1
2024-11-25T15:08:25.100000 [MAC     ] [I] [   20.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=52]
2024-11-25T15:08:25.100010 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX PDU. pdu_len=52 dc=data p=0 si=first sn=1
2024-11-25T15:08:25.100020 [RLC     ] [I] du=1 ue=0 DRB1 UL: RX SDU. sn=1 sdu_len=151
2024-11-25T15:08:25.100030 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=151 sn=1 count=1
";

fn run(log: &str) -> (Stitcher, SlotStitcher, VecSink) {
    let mut r = EntryReader::new(log.as_bytes());
    let epoch = super::super::line::parse_timestamp(log.as_bytes()).unwrap();
    let mut g = super::super::run::Gnb::new(epoch);
    let mut sink = VecSink::default();
    while let Some(e) = r.next_entry().unwrap() {
        g.entry(&e, 0, &mut sink);
    }
    g.finish(&mut sink);
    let super::super::run::Gnb { st, slots, .. } = g;
    (st, slots, sink)
}

fn journey(sink: &VecSink, pkt: u64) -> Vec<(Layer, Point, u32, u8)> {
    sink.packets.iter().filter(|e| e.pkt == pkt).map(|e| (e.layer, e.point, e.bytes, e.retx)).collect()
}

/// Two UEs whose CU-UP and DU indexes are swapped (CU-UP 5 is DU 2, CU-UP 2 is DU 5), both
/// with PDCP SN 0 in flight at once: each packet ends up with its own UE's DU index.
const SWAPPED: &str = "\
2024-11-25T15:08:25.000000 [GTPU    ] [I] ue=5 DL teid=0x000001: RX SDU. sdu_len=100 qos_flow=QFI=1 sn={na}
2024-11-25T15:08:25.000001 [GTPU    ] [I] ue=2 DL teid=0x000002: RX SDU. sdu_len=200 qos_flow=QFI=1 sn={na}
2024-11-25T15:08:25.000010 [PDCP    ] [I] ue=5 DRB1 DL: TX PDU. type=data pdu_len=102 sn=0 count=0 is_retx=false
2024-11-25T15:08:25.000011 [PDCP    ] [I] ue=2 DRB1 DL: TX PDU. type=data pdu_len=202 sn=0 count=0 is_retx=false
2024-11-25T15:08:25.000020 [RLC     ] [I] du=0 ue=5 DRB1 DL: TX SDU. sdu_len=202 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=202
2024-11-25T15:08:25.000021 [RLC     ] [I] du=0 ue=2 DRB1 DL: TX SDU. sdu_len=102 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=102
2024-11-25T15:08:25.001000 [MAC     ] [I] [   10.1] UL rnti=0x4602 ue=5 subPDUs: [lcid=4: len=52]
2024-11-25T15:08:25.001010 [RLC     ] [I] du=0 ue=5 DRB1 UL: RX PDU. pdu_len=52 dc=data p=0 si=full sn=0
2024-11-25T15:08:25.001020 [RLC     ] [I] du=0 ue=5 DRB1 UL: RX SDU. sn=0 sdu_len=50
2024-11-25T15:08:25.001030 [PDCP    ] [I] ue=2 DRB1 UL: RX PDU. type=data pdu_len=50 sn=0 count=0
2024-11-25T15:08:25.001040 [PDCP    ] [I] ue=2 DRB1 UL: RX SDU. count=0
2024-11-25T15:08:25.001050 [GTPU    ] [I] ue=2 UL teid=0x000003: TX PDU. pdu_len=64 teid=0x000003 qfi=QFI=1
";

#[test]
fn cu_up_and_du_indexes_are_bound_from_the_traffic() {
    let (st, _, sink) = run(SWAPPED);
    assert!(st.stats.unlinked.is_empty(), "{:?}", st.stats.unlinked);
    let b: Vec<_> = st.ids.bindings.iter().map(|b| (b.cu_up, b.du)).collect();
    assert_eq!(b, vec![(2, 5), (5, 2)]);
    // Every event of a packet carries one UE: the DU index.
    let mut by_pkt: HashMap<u64, std::collections::BTreeSet<u32>> = HashMap::new();
    for e in &sink.packets {
        by_pkt.entry(e.pkt).or_default().insert(e.ue);
    }
    assert_eq!(by_pkt.len(), 3);
    assert!(by_pkt.values().all(|u| u.len() == 1), "{by_pkt:?}");
    let dl_ue = |bytes: u32| sink.packets.iter().find(|e| e.layer == Layer::Gtpu && e.bytes == bytes).unwrap().ue;
    assert_eq!((dl_ue(100), dl_ue(200)), (2, 5));
    let ul = sink.packets.iter().find(|e| e.dir == Dir::Ul && e.layer == Layer::Gtpu).unwrap();
    assert_eq!((ul.ue, ul.bytes), (5, 48));
}

/// Downlink in the current (25.10 / main) formats, with each drop cause the lines show.
const DL_MAIN: &str = "\
2026-04-27T11:25:31.000000 [PDCP    ] [I] ue=0 DRB1 DL: PDCP configured. rb_type=DRB rlc_mode=AM sn_size=18 discard_timer=100
2026-04-27T11:25:31.001000 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1000 qos_flow=QFI=1 sn={na}
2026-04-27T11:25:31.001001 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1001 qos_flow=QFI=1 sn={na}
2026-04-27T11:25:31.001002 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1002 qos_flow=QFI=1 sn={na}
2026-04-27T11:25:31.001003 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1003 qos_flow=QFI=1 sn={na}
2026-04-27T11:25:31.001010 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1003 sn=0 count=0 is_retx=false
2026-04-27T11:25:31.001011 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1004 sn=1 count=1 is_retx=false
2026-04-27T11:25:31.001012 [PDCP    ] [I] ue=0 DRB1 DL: Dropping SDU. Cause: RLC SDU queue is full
2026-04-27T11:25:31.001013 [PDCP    ] [I] ue=0 DRB1 DL: Drop burst finished. nof_sdus=1
2026-04-27T11:25:31.001014 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1006 sn=2 count=2 is_retx=false
2026-04-27T11:25:31.001020 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX SDU. sdu_len=1003 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=1003
2026-04-27T11:25:31.001021 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX SDU. sdu_len=1004 pdcp_sn=1 is_retx=false queued_sdus=2 queued_bytes=2007
2026-04-27T11:25:31.001022 [RLC     ] [W] du=0 ue=0 DRB1 DL: Dropped SDU. sdu_len=1006 pdcp_sn=2 is_retx=false queued_sdus=2 queued_bytes=2007
2026-04-27T11:25:31.001500 [SCHED   ] [I] [   10.1] Slot decisions pci=1 t=26us (1 PDSCH, 0 PUSCHs, 1 PUCCH): DL: ue=0 c-rnti=0x4601 h_id=3 ss_id=2 rb=[0..20) k1=4 newtx=true rv=0 tbs=1100 ri=1 dl_bo=1004
2026-04-27T11:25:31.001510 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX PDU. dc=data p=0 si=full sn=0 pdu_len=1005 grant_len=1100
2026-04-27T11:25:31.001511 [MAC     ] [I] [   10.1] DL PDU: ue=0 rnti=0x4601 size=1100: SDU: lcid=4 nof_sdus=1 total_size=1005
2026-04-27T11:25:31.009500 [SCHED   ] [I] [   11.1] Slot decisions pci=1 t=20us (1 PDSCH, 0 PUSCHs, 0 PUCCHs): DL: ue=0 c-rnti=0x4601 h_id=3 ss_id=2 rb=[0..20) k1=4 newtx=false rv=2 tbs=1100
2026-04-27T11:25:31.101021 [RLC     ] [I] du=0 ue=0 DRB1 DL: Discarded SDU. pdcp_sn=1
2026-04-27T11:25:31.401000 [RLC     ] [I] du=0 ue=0 DRB1 DL: Reached maximum number of RETX. sn=0 retx_count=4
";

#[test]
fn downlink_in_the_main_format_with_every_drop_cause() {
    let (st, slots, sink) = run(DL_MAIN);
    assert!(st.stats.unlinked.is_empty(), "{:?}", st.stats.unlinked);
    let by_bytes =
        |b: u32| sink.packets.iter().find(|e| e.layer == Layer::Gtpu && e.bytes == b).map(|e| e.pkt).unwrap();
    let path = |pkt: u64| -> Vec<(Layer, Point, Option<Reason>)> {
        sink.packets.iter().filter(|e| e.pkt == pkt).map(|e| (e.layer, e.point, e.reason)).collect()
    };
    use Layer::*;
    use Point::*;
    assert_eq!(
        path(by_bytes(1000)),
        vec![
            (Gtpu, ProcEnd, None),
            (Pdcp, ProcEnd, None),
            (Rlc, Enqueue, None),
            (Rlc, Hol, None),
            (Rlc, Segment, None),
            (Mac, Tx, None),
            (Mac, Tx, None),
            (Rlc, Drop, Some(Reason::RlcMaxRetx)),
        ]
    );
    assert_eq!(
        path(by_bytes(1001)),
        vec![
            (Gtpu, ProcEnd, None),
            (Pdcp, ProcEnd, None),
            (Rlc, Enqueue, None),
            (Rlc, Hol, None),
            (Pdcp, Drop, Some(Reason::PdcpDiscardTimer)),
        ]
    );
    assert_eq!(path(by_bytes(1002)), vec![(Gtpu, ProcEnd, None), (Pdcp, Drop, Some(Reason::PdcpEarlyDrop))]);
    assert_eq!(
        path(by_bytes(1003)),
        vec![(Gtpu, ProcEnd, None), (Pdcp, ProcEnd, None), (Rlc, Drop, Some(Reason::RlcQueueFull))]
    );
    // 18-bit PDCP SN: 3-byte header; RLC SDU = PDCP PDU; full RLC PDU = SDU + 2-byte header.
    let seg = sink.packets.iter().find(|e| e.point == Segment).unwrap();
    assert_eq!(seg.bytes, 1003);
    let drops: u64 = st.stats.drops.values().sum();
    assert_eq!(drops, 4);
    // The block's HARQ retransmission (the grant on the same process with newtx=false) resends
    // the packet's RLC PDU.
    let retx: Vec<u8> =
        sink.packets.iter().filter(|e| e.pkt == by_bytes(1000) && e.layer == Mac).map(|e| e.retx).collect();
    assert_eq!(retx, vec![0, 1]);
    assert_eq!(slots.stats.dl_grants, 2);
    let g = &sink.slots[0];
    assert_eq!((g.prbs, g.tbs, g.retx_index, g.layers), (20, Some(1100), Some(0), Some(1)));
}

#[test]
fn discard_timer_debug_lines_are_control_events() {
    let log = "\
2024-11-25T15:08:25.000000 [PDCP    ] [D] ue=0 DRB1 DL: Discard timer expired. st=[tx_next_ack=0 tx_trans=1 tx_next=2]
2024-11-25T15:08:25.000001 [PDCP    ] [D] ue=0 DRB1 DL: Discarding PDU. count=1
2024-11-25T15:08:25.000002 [RLC     ] [I] du=0 ue=0 DRB1 DL: Could not discard SDU. pdcp_sn=1
";
    let (st, _, sink) = run(log);
    let kinds: Vec<_> = sink.controls.iter().map(|c| (c.kind.as_str(), c.sn)).collect();
    assert_eq!(kinds, vec![("pdcp_discard_timer_expired", Some(1)), ("rlc_discard_too_late", Some(1))]);
    assert!(st.stats.drops.is_empty());
}

/// Split CU and DU apps (25.x format) log F1-U as NR-U GTP-U lines: the CU-UP's `TX PDU` and
/// the DU's `RX DL user data` (DL), the DU's `TX PDU` and the CU-UP's `RX DL data delivery
/// status` (UL; srsRAN's text for every UL NR-U PDU).
const SPLIT_CU: &str = "\
2025-10-01T10:00:00.000000 [PDCP    ] [I] ue=0 DRB1 DL: PDCP configured. rb_type=DRB rlc_mode=AM sn_size=18 discard_timer=100
2025-10-01T10:00:00.000001 [PDCP    ] [I] ue=0 DRB1 UL: PDCP configured. rb_type=DRB rlc_mode=AM sn_size=18 t_reordering=80
2025-10-01T10:00:01.000000 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1000 qos_flow=QFI=1 sn={na}
2025-10-01T10:00:01.000010 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1003 sn=0 count=0 is_retx=false
2025-10-01T10:00:01.000020 [GTPU    ] [I] ue=0 TX teid=0x000005: TX PDU. pdu_len=1023 teid=0x000005
2025-10-01T10:00:01.003000 [GTPU    ] [I] ue=0 RX teid=0x000006: RX DL data delivery status. t_pdu_len=53
2025-10-01T10:00:01.003010 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=53 sn=0 count=0
2025-10-01T10:00:01.003020 [PDCP    ] [I] ue=0 DRB1 UL: RX SDU. count=0
2025-10-01T10:00:01.003030 [GTPU    ] [I] ue=0 UL teid=0x000003: TX PDU. pdu_len=66 teid=0x000003 qfi=QFI=1
";
const SPLIT_DU: &str = "\
2025-10-01T10:00:01.000200 [GTPU    ] [I] ue=0 RX teid=0x000005: RX DL user data. t_pdu_len=1003
2025-10-01T10:00:01.000210 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX SDU. sdu_len=1003 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=1003
2025-10-01T10:00:01.002000 [MAC     ] [I] [   10.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=55]
2025-10-01T10:00:01.002010 [RLC     ] [I] du=0 ue=0 DRB1 UL: RX PDU. pdu_len=55 dc=data p=0 si=full sn=0
2025-10-01T10:00:01.002020 [RLC     ] [I] du=0 ue=0 DRB1 UL: RX SDU. sn=0 sdu_len=53
2025-10-01T10:00:01.002030 [GTPU    ] [I] ue=0 TX teid=0x000006: TX PDU. pdu_len=73 teid=0x000006
";

#[test]
fn split_cu_du_nru_lines_add_the_f1u_hop() {
    let mut files = [EntryReader::new(SPLIT_CU.as_bytes()), EntryReader::new(SPLIT_DU.as_bytes())];
    let epoch = super::super::line::parse_timestamp(SPLIT_CU.as_bytes()).unwrap();
    let mut g = super::super::run::Gnb::new(epoch);
    let mut sink = VecSink::default();
    loop {
        let t: Vec<_> = files.iter_mut().map(|r| r.peek_t_us().unwrap()).collect();
        let Some(i) = (0..2).filter(|&i| t[i].is_some()).min_by_key(|&i| t[i]) else { break };
        let e = files[i].next_entry().unwrap().unwrap();
        g.entry(&e, i, &mut sink);
    }
    g.finish(&mut sink);
    let st = &g.st;
    assert!(st.stats.unlinked.is_empty(), "{:?}", st.stats.unlinked);
    let path = |dir: Dir| -> Vec<(Node, Layer, Point)> {
        let mut evs: Vec<_> = sink.packets.iter().filter(|e| e.dir == dir).collect();
        evs.sort_by_key(|e| e.t_ns);
        evs.iter().map(|e| (e.node, e.layer, e.point)).collect()
    };
    use Layer::*;
    use Node::*;
    use Point::*;
    assert_eq!(
        path(Dir::Dl),
        vec![
            (GnbCu, Gtpu, ProcEnd),
            (GnbCu, Pdcp, ProcEnd),
            (GnbCu, F1u, ProcEnd),
            (GnbDu, F1u, Arrive),
            (GnbDu, Rlc, Enqueue),
            (GnbDu, Rlc, Hol)
        ]
    );
    assert_eq!(
        path(Dir::Ul),
        vec![
            (GnbDu, Rlc, Segment),
            (GnbDu, Rlc, Deliver),
            (GnbCu, F1u, Arrive),
            (GnbCu, Pdcp, ProcBegin),
            (GnbCu, Pdcp, Deliver),
            (GnbCu, Gtpu, ProcEnd)
        ]
    );
    // The DU's UL NR-U `TX PDU` is not an event yet: counted, with its line.
    let nh = st.stats.not_handled();
    assert!(nh.iter().any(|(k, n, _)| k == "GTPU: TX PDU" && *n == 1), "{nh:?}");
}

/// Debug level adds SDAP and the DU's F1-U lines: the journeys gain those hops, and an F1-U
/// queue drop is a drop.
const DEBUG_HOPS: &str = "\
2024-11-25T15:08:25.000000 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1000 qos_flow=QFI=1 sn={na}
2024-11-25T15:08:25.000001 [GTPU    ] [I] ue=0 DL teid=0x000001: RX SDU. sdu_len=1100 qos_flow=QFI=1 sn={na}
2024-11-25T15:08:25.000005 [SDAP    ] [D] ue=0 psi=1 QFI=1 DRB1 DL: TX PDU. QFI=1 pdu_len=1000
2024-11-25T15:08:25.000006 [SDAP    ] [D] ue=0 psi=1 QFI=1 DRB1 DL: TX PDU. QFI=1 pdu_len=1100
2024-11-25T15:08:25.000010 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1002 sn=0 count=0 is_retx=false
2024-11-25T15:08:25.000011 [PDCP    ] [I] ue=0 DRB1 DL: TX PDU. type=data pdu_len=1102 sn=1 count=1 is_retx=false
2024-11-25T15:08:25.000012 [CU-F1-U ] [D] ue=0 DRB1 ul-teid=0x000002: F1-U bearer received SDU. size=1002 is_retx=false
2024-11-25T15:08:25.000013 [CU-F1-U ] [D] ue=0 DRB1 ul-teid=0x000002: F1-U bearer received SDU. size=1102 is_retx=false
2024-11-25T15:08:25.000049 [DU-F1-U ] [D] ue=0 DRB1 addr=127.0.10.2 dl-teid=0x000001: F1-U bearer received PDU
2024-11-25T15:08:25.000050 [DU-F1-U ] [D] ue=0 DRB1 addr=127.0.10.2 dl-teid=0x000001: Delivering T-PDU. size=1002
2024-11-25T15:08:25.000051 [DU-F1-U ] [I] ue=0 DRB1 addr=0.0.0.0 dl-teid=0x000001: Dropped F1-U PDU, queue is full
2024-11-25T15:08:25.000060 [RLC     ] [I] du=0 ue=0 DRB1 DL: TX SDU. sdu_len=1002 pdcp_sn=0 is_retx=false queued_sdus=1 queued_bytes=1002
2024-11-25T15:08:25.001000 [MAC     ] [I] [   10.6] UL rnti=0x4601 ue=0 subPDUs: [lcid=4: len=52]
2024-11-25T15:08:25.001010 [RLC     ] [I] du=0 ue=0 DRB1 UL: RX PDU. pdu_len=52 dc=data p=0 si=full sn=0
2024-11-25T15:08:25.001020 [RLC     ] [I] du=0 ue=0 DRB1 UL: RX SDU. sn=0 sdu_len=50
2024-11-25T15:08:25.001030 [PDCP    ] [I] ue=0 DRB1 UL: RX PDU. type=data pdu_len=50 sn=0 count=0
2024-11-25T15:08:25.001040 [PDCP    ] [I] ue=0 DRB1 UL: RX SDU. count=0
2024-11-25T15:08:25.001045 [SDAP    ] [D] ue=0 psi=1 QFI=1 DRB1 UL: RX SDU. QFI=1 sdu_len=48
2024-11-25T15:08:25.001050 [GTPU    ] [I] ue=0 UL teid=0x000003: TX PDU. pdu_len=64 teid=0x000003 qfi=QFI=1
";

#[test]
fn sdap_and_f1u_debug_lines_add_their_hops() {
    let (st, _, sink) = run(DEBUG_HOPS);
    assert!(st.stats.unlinked.is_empty(), "{:?}", st.stats.unlinked);
    let path = |gtpu_bytes: u32, dir: Dir| -> Vec<(Layer, Point)> {
        let pkt =
            sink.packets.iter().find(|e| e.layer == Layer::Gtpu && e.bytes == gtpu_bytes && e.dir == dir).unwrap().pkt;
        // In time order (events of a UE whose CU-UP index is not yet bound are written later).
        let mut evs: Vec<_> = sink.packets.iter().filter(|e| e.pkt == pkt).collect();
        evs.sort_by_key(|e| e.t_ns);
        evs.iter().map(|e| (e.layer, e.point)).collect()
    };
    use Layer::*;
    use Point::*;
    assert_eq!(
        path(1000, Dir::Dl),
        vec![
            (Gtpu, ProcEnd),
            (Sdap, ProcEnd),
            (Pdcp, ProcEnd),
            (F1u, ProcBegin),
            (F1u, Arrive),
            (Rlc, Enqueue),
            (Rlc, Hol)
        ]
    );
    assert_eq!(
        path(1100, Dir::Dl),
        vec![(Gtpu, ProcEnd), (Sdap, ProcEnd), (Pdcp, ProcEnd), (F1u, ProcBegin), (F1u, Drop)]
    );
    assert_eq!(st.stats.drops.get(&("f1u", "f1u_queue_full")), Some(&1));
    assert_eq!(
        path(48, Dir::Ul),
        vec![(Rlc, Segment), (Rlc, Deliver), (Pdcp, ProcBegin), (Pdcp, Deliver), (Sdap, ProcEnd), (Gtpu, ProcEnd)]
    );
    assert_eq!(st.pending_packets(), 1, "the first DL SDU is still in the RLC queue");
}

#[test]
fn rlc_header_sizes_follow_ts_38_322() {
    let mut st = Stitcher::new(0);
    // Defaults: AM, 12-bit SN.
    assert_eq!(st.rlc_header(0, DRB0 + 1, true, "full", 0), 2);
    assert_eq!(st.rlc_header(0, DRB0 + 1, true, "mid", 10), 4);
    st.rlc_cfg.insert((0, DRB0 + 1, true), (true, 18));
    assert_eq!((st.rlc_header(0, DRB0 + 1, true, "first", 0), st.rlc_header(0, DRB0 + 1, true, "last", 9)), (3, 5));
    st.rlc_cfg.insert((0, DRB0 + 2, false), (false, 6));
    assert_eq!(st.rlc_header(0, DRB0 + 2, false, "full", 0), 1);
    assert_eq!((st.rlc_header(0, DRB0 + 2, false, "first", 0), st.rlc_header(0, DRB0 + 2, false, "mid", 5)), (1, 3));
    st.rlc_cfg.insert((0, DRB0 + 3, false), (false, 12));
    assert_eq!((st.rlc_header(0, DRB0 + 3, false, "full", 0), st.rlc_header(0, DRB0 + 3, false, "last", 5)), (1, 4));
}

#[test]
fn ul_journeys_reassembly_reordering_and_late_drop() {
    let (st, slots, sink) = run(UL_24_10);
    // The only line that could not be linked on arrival: SDU 1's middle segment, before its first.
    assert_eq!(st.stats.unlinked, HashMap::from([("ul_rlc_segment_before_first", 1)]));
    assert!(sink.packets.iter().all(|e| e.dir == Dir::Ul));
    let pkts: std::collections::BTreeSet<u64> = sink.packets.iter().map(|e| e.pkt).collect();
    assert_eq!(pkts.len(), 3, "three SDUs");
    let by_sn = |sn: u32| {
        sink.packets
            .iter()
            .find(|e| e.layer == Layer::Rlc && e.sn == Some(sn) && e.point == Point::Segment)
            .unwrap()
            .pkt
    };
    use Layer::*;
    use Point::*;
    // SDU 0: one PDU, in order all the way; 18-bit PDCP SN → 3-byte header; +16 at GTP-U.
    assert_eq!(
        journey(&sink, by_sn(0)),
        vec![
            (Mac, Tx, 100, 0),
            (Phy, Rx, 100, 0),
            (Rlc, Segment, 100, 0),
            (Rlc, Deliver, 100, 0),
            (Pdcp, ProcBegin, 100, 0),
            (Pdcp, Deliver, 97, 0),
            (Gtpu, ProcEnd, 97, 0)
        ]
    );
    // SDU 2: its transport block failed its first PUSCH (crc=KO) and was decoded on the HARQ
    // retransmission; then held by PDCP, released when t-Reordering expires (no RX SDU line).
    let j2 = journey(&sink, by_sn(2));
    assert_eq!(
        j2.iter().map(|x| (x.0, x.1, x.3)).collect::<Vec<_>>(),
        vec![
            (Mac, Tx, 0),
            (Mac, Tx, 1),
            (Phy, Rx, 0),
            (Rlc, Segment, 0),
            (Rlc, Deliver, 0),
            (Pdcp, ProcBegin, 0),
            (Pdcp, Deliver, 0),
            (Gtpu, ProcEnd, 0)
        ]
    );
    let tx: Vec<i64> = sink.packets.iter().filter(|e| e.pkt == by_sn(2) && e.layer == Mac).map(|e| e.t_ns).collect();
    assert_eq!(tx, vec![5_900_000, 9_800_000], "each PUSCH at its line's time less its decoding time");
    let deliver2 = sink.packets.iter().find(|e| e.pkt == by_sn(2) && e.layer == Pdcp && e.point == Deliver).unwrap();
    assert_eq!(deliver2.t_ns, 90_000_000, "delivered at the expiry");
    // SDU 1: mid and last first, then the first segment (an ARQ retransmission, marked), the
    // segments cover the SDU, and PDCP drops it: COUNT 1 < RX_DELIV 3.
    let j1 = journey(&sink, by_sn(1));
    assert_eq!(
        j1,
        vec![
            (Mac, Tx, 51, 0),
            (Mac, Tx, 51, 1),
            (Phy, Rx, 51, 0),
            (Rlc, Segment, 51, 0),
            (Mac, Tx, 50, 0),
            (Mac, Tx, 50, 1),
            (Phy, Rx, 50, 0),
            (Rlc, Segment, 50, 0),
            (Rlc, Segment, 50, 1),
            (Rlc, Deliver, 151, 0),
            (Pdcp, ProcBegin, 151, 0),
            (Pdcp, Drop, 151, 0)
        ]
    );
    assert_eq!(st.stats.drops.get(&("pdcp", "pdcp_rx_out_of_window")), Some(&1));
    assert_eq!(st.pending_packets(), 0);
    // Control: the status PDU and the expiry.
    let kinds: Vec<_> = sink.controls.iter().map(|c| (c.kind.as_str(), c.sn)).collect();
    assert_eq!(kinds, vec![("rlc_status", Some(4)), ("pdcp_t_reordering_expired", Some(2))]);
    // Slots: one UL grant with its CRC and SINR; one BSR (short, index 14 → TS 38.321 Table
    // 6.1.3.1-1 upper bound 1 552... bytes as the table gives).
    assert_eq!(slots.stats.ul_grants, 1);
    let g = sink.slots.iter().find(|s| s.tbs == Some(301)).unwrap();
    assert_eq!((g.prbs, g.ack, g.harq_id, g.retx_index), (47, Some(true), Some(0), Some(0)));
    assert!((g.sinr_db.unwrap() - 2.8).abs() < 1e-6);
    let b = sink.slots.iter().find(|s| s.bsr_bytes.is_some()).unwrap();
    assert_eq!(b.bsr_bytes, Some(u64::from(scout_ran::mac::bsr::BSR_5BIT[14])));
}
