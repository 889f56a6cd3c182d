//! The gNB MAC's HARQ and the UE MAC through the whole stack, on a small harness: a cell of a few
//! UEs at fixed SINRs, srsRAN's defaults otherwise, stepped slot by slot (as quinn-proto's `Pair`
//! steps two endpoints).

use std::collections::HashMap;

use scout_events::VecSink;

use super::*;

/// A cell and what it wrote.
struct Harness {
    stack: Stack,
    sink: VecSink,
}

/// `cell` with OLLA held at a 10 % first-transmission BLER both ways (srsRAN's default is 1 %):
/// retransmissions throughout, for the tests of what happens to them.
fn bler10(mut cell: CellCfg) -> CellCfg {
    cell.pdsch.olla_target_bler = 0.1;
    cell.pdsch.olla_cqi_inc_step = 0.05;
    cell.pusch.olla_target_bler = 0.1;
    cell.pusch.olla_snr_inc_step = 0.05;
    cell
}

impl Harness {
    /// `ues` UEs with one DRB of 5QI 9, each at (DL, UL) SINR dB.
    fn new(ues: &[(f64, f64)]) -> Harness {
        Harness::with_cell(CellCfg::default(), ues)
    }

    /// As [`Harness::new`] with the cell `cell`.
    fn with_cell(cell: CellCfg, ues: &[(f64, f64)]) -> Harness {
        Harness::with_qos(cell, Vec::new(), &[9], ues)
    }

    /// UEs at (DL, UL) SINR dB, each with a DRB per 5QI of `five_qis`, configured by `qos`.
    fn with_qos(cell: CellCfg, qos: Vec<QosCfg>, five_qis: &[u8], ues: &[(f64, f64)]) -> Harness {
        let cfg = StackConfig {
            cell,
            qos,
            cu_up: CuUpCfg::default(),
            core: CoreCfg::default(),
            ues: ues
                .iter()
                .map(|&(dl, ul)| UeSpec {
                    slice: 0,
                    dl_sinr: SinrSource::Constant(dl),
                    ul_sinr: SinrSource::Constant(ul),
                    five_qis: five_qis.to_vec(),
                })
                .collect(),
            seed: 1,
        };
        Harness { stack: Stack::new(cfg).expect("the default cell builds"), sink: VecSink::default() }
    }

    /// Runs everything due up to `ms`.
    fn run_to(&mut self, ms: i64) {
        self.stack.handle_timeout(ms * MS, &mut self.sink);
    }

    /// The per-UE HARQ rows of direction `dir`: (UE, HARQ id, retransmission index, ACK).
    fn harq_rows(&self, dir: Dir) -> Vec<(u32, u8, u8, bool)> {
        self.sink
            .slots
            .iter()
            .filter(|r| r.dir == dir && r.ue.is_some())
            .map(|r| (r.ue.unwrap(), r.harq_id.unwrap(), r.retx_index.unwrap(), r.ack.unwrap()))
            .collect()
    }

    fn controls(&self, kind: &str) -> Vec<&scout_events::ControlEvent> {
        self.sink.controls.iter().filter(|c| c.kind.as_str() == kind).collect()
    }
}

#[test]
fn a_tb_never_decoded_is_sent_max_retx_more_times_then_given_up() {
    // A DL far below MCS 0's threshold: every transmission fails (the SDU, segmented over several
    // TBs at MCS 0, and RLC's retransmissions after t-PollRetransmit).
    let mut h = Harness::new(&[(-30.0, 20.0)]);
    h.stack.send(0, Offer::new(Dir::Dl, 0, 0, 0, 1000), &mut h.sink);
    h.run_to(300);
    let rows = h.harq_rows(Dir::Dl);
    let max = CellCfg::default().pdsch.max_nof_harq_retxs;
    assert!(rows.len() > usize::from(max) && rows.iter().all(|r| !r.3), "all NACKed: {rows:?}");
    // Each process sends a TB, then retransmits it `max` times, before it takes the next.
    for id in 0..16u8 {
        let seq: Vec<u8> = rows.iter().filter(|r| r.1 == id).map(|r| r.2).collect();
        let expected: Vec<u8> = (0..seq.len()).map(|i| (i % (usize::from(max) + 1)) as u8).collect();
        assert_eq!(seq, expected, "HARQ process {id}");
    }
    // Every TB that reached its last retransmission was given up, once, at the DU.
    let last = rows.iter().filter(|r| r.2 == max).count();
    let fail = h.controls("harq_fail");
    assert!(last > 0 && fail.len() == last, "{last} TBs at the last retransmission, {} given up", fail.len());
    assert!(fail.iter().all(|c| (c.dir, c.node) == (Some(Dir::Dl), Node::GnbDu)));
    assert_eq!(h.stack.stats.harq_fail, [last as u64, 0]);
    assert_eq!(h.stack.stats.delivered_pkts[0], 0);
}

#[test]
fn a_good_channel_decodes_first_time_and_the_uplink_asks_before_it_sends() {
    let mut h = Harness::new(&[(30.0, 30.0)]);
    h.stack.send(0, Offer::new(Dir::Dl, 0, 0, 0, 1000), &mut h.sink);
    h.stack.send(0, Offer::new(Dir::Ul, 1, 0, 0, 1000), &mut h.sink);
    h.run_to(100);
    assert!(h.harq_rows(Dir::Dl).iter().all(|r| r.2 == 0 && r.3), "{:?}", h.harq_rows(Dir::Dl));
    assert_eq!(h.stack.stats.delivered_pkts, [1, 1]);
    // UL: an SR first (no grant held), then a grant, then the PUSCH carries a BSR and the data.
    let (sr, grant, bsr) = (h.controls("sr"), h.controls("grant"), h.controls("bsr"));
    assert!(!sr.is_empty() && !grant.is_empty() && !bsr.is_empty());
    assert!(sr[0].t_ns <= grant[0].t_ns && grant[0].t_ns <= bsr[0].t_ns, "SR, grant, BSR in that order");
    assert!(h.harq_rows(Dir::Ul).iter().any(|r| r.3), "a PUSCH decoded");
}

#[test]
fn a_real_upfs_slice_begins_and_ends_its_journeys_at_the_gnbs_n3() {
    let mut h = Harness::new(&[(30.0, 30.0)]);
    h.stack.upf_process = vec![true];
    // Downlink from the UPF's tunnel: enters at the gNB's N3, reaches the UE's application.
    let dl = h.stack.arrive_n3(0, Offer::new(Dir::Dl, 0, 0, 0, 1000), &mut h.sink);
    // Uplink: leaves the model at the gNB's N3, in its tunnel; nothing reaches the model's N6.
    let ul = h.stack.send(0, Offer::new(Dir::Ul, 1, 0, 0, 1000), &mut h.sink);
    h.run_to(100);
    let points = |pkt: u64| -> Vec<(Node, Layer, Point)> {
        h.sink.packets.iter().filter(|e| e.pkt == pkt).map(|e| (e.node, e.layer, e.point)).collect()
    };
    let (d, u) = (points(dl), points(ul));
    assert_eq!(d.first(), Some(&(Node::GnbCu, Layer::N3, Point::Arrive)), "{d:?}");
    assert_eq!(d.last(), Some(&(Node::Ue, Layer::App, Point::Deliver)), "{d:?}");
    assert_eq!(u.last(), Some(&(Node::GnbCu, Layer::N3, Point::Tx)), "{u:?}");
    assert!(!u.iter().any(|p| p.0 == Node::Upf || p.0 == Node::Dn), "{u:?}");
    assert!(!d.iter().any(|p| p.0 == Node::Upf || p.0 == Node::Dn), "{d:?}");
    assert_eq!(h.stack.stats.delivered_pkts, [1, 0]);
    assert_eq!((h.stack.stats.from_core_pkts, h.stack.stats.to_core_pkts), (1, 1));
    let handed = h.stack.take_handoffs();
    assert_eq!(handed.len(), 1);
    assert_eq!(handed[0].packet.pkt, ul);
    assert_eq!(h.stack.in_flight().count(), 0, "a packet handed to the core is no longer the model's");
}

#[test]
fn two_ues_share_the_cell_round_robin() {
    let mut h = Harness::new(&[(25.0, 20.0), (25.0, 20.0)]);
    // Both backlogged: more than one slot carries.
    for _ in 0..200 {
        h.stack.send(0, Offer::new(Dir::Dl, 0, 0, 0, 1400), &mut h.sink);
        h.stack.send(0, Offer::new(Dir::Dl, 1, 1, 0, 1400), &mut h.sink);
    }
    h.run_to(200);
    let first_tx: Vec<u32> = h.harq_rows(Dir::Dl).iter().filter(|r| r.2 == 0).map(|r| r.0).collect();
    let (a, b) = (first_tx.iter().filter(|&&u| u == 0).count(), first_tx.iter().filter(|&&u| u == 1).count());
    assert!(a > 5 && b > 5 && a.abs_diff(b) <= a.max(b) / 4, "new TBs per UE: {a} and {b}");
    assert_eq!(h.stack.stats.delivered_pkts[0], 400);
}

#[test]
fn a_ue_gets_one_pdsch_per_slot_even_with_a_retransmission_due() {
    // Packets arriving every millisecond, OLLA holding a 10 % first-transmission BLER: small TBs,
    // so PRBs are left when a retransmission falls due while new data waits, and the slot still
    // carries one or the other for the UE (TS 38.214 §5.1).
    let mut h = Harness::with_cell(bler10(CellCfg::default()), &[(12.0, 20.0)]);
    for ms in 0..1000 {
        h.stack.send(ms * MS, Offer::new(Dir::Dl, 0, 0, 0, 1400), &mut h.sink);
        h.run_to(ms);
    }
    let rows: Vec<(u64, u8)> = h
        .sink
        .slots
        .iter()
        .filter(|r| r.dir == Dir::Dl && r.ue.is_some())
        .map(|r| (r.slot, r.retx_index.unwrap()))
        .collect();
    let retx = rows.iter().filter(|r| r.1 > 0).count();
    assert!(retx > 20, "retransmissions happened: {retx} of {}", rows.len());
    let mut slots: Vec<u64> = rows.iter().map(|r| r.0).collect();
    slots.sort_unstable();
    let n = slots.len();
    slots.dedup();
    assert_eq!(slots.len(), n, "a slot carried two TBs for the UE");
}

#[test]
fn a_dl_retransmission_waits_the_gnb_processing_delay_after_its_nack() {
    for delay in [2, 6] {
        let mut cell = CellCfg::default();
        cell.pdsch.harq_retx_delay_slots = delay;
        let duplex = Duplex::Tdd(cell.tdd_ul_dl_cfg.clone());
        let k1s = duplex.k1_candidates(cell.pucch.min_k1);
        let mut h = Harness::with_cell(bler10(cell), &[(12.0, 20.0)]);
        for ms in 0..1000 {
            h.stack.send(ms * MS, Offer::new(Dir::Dl, 0, 0, 0, 1400), &mut h.sink);
            h.run_to(ms);
        }
        // (slot, HARQ id, retransmission index) in slot order; one UE, so its HARQ-ACK takes the
        // first k1 candidate that reaches a slot with UL symbols.
        let rows: Vec<(u64, u8, u8)> = h
            .sink
            .slots
            .iter()
            .filter(|r| r.dir == Dir::Dl && r.ue.is_some())
            .map(|r| (r.slot, r.harq_id.unwrap(), r.retx_index.unwrap()))
            .collect();
        let mut gaps = Vec::new();
        for (i, &(b, id, retx)) in rows.iter().enumerate() {
            if retx == 0 {
                continue;
            }
            let &(a, ..) = rows[..i].iter().rev().find(|r| r.1 == id).expect("a first transmission");
            let ack = k1s.iter().map(|k| a + u64::from(*k)).find(|u| duplex.slot_kind(*u).ul_symbols > 0).unwrap();
            gaps.push(b - ack);
        }
        assert!(gaps.len() > 20, "retransmissions: {}", gaps.len());
        assert_eq!(gaps.iter().min(), Some(&u64::from(delay)), "slots from HARQ-ACK to retransmission");
    }
}

#[test]
fn an_sr_is_granted_no_sooner_than_the_ul_scheduling_delay() {
    for delay in [1, 8] {
        let mut cell = CellCfg::default();
        cell.pusch.ul_sched_delay_slots = delay;
        let slot_ns = crate::phy::slot_ns(crate::phy::mu_for_scs(cell.common_scs).unwrap());
        let mut h = Harness::with_cell(cell, &[(30.0, 30.0)]);
        h.stack.send(0, Offer::new(Dir::Ul, 1, 0, 0, 1000), &mut h.sink);
        h.run_to(100);
        let (sr, grant) = (h.controls("sr")[0].t_ns / slot_ns, h.controls("grant")[0].t_ns / slot_ns);
        assert!(grant >= sr + i64::from(delay), "SR in slot {sr}, grant in slot {grant}");
        assert_eq!(h.stack.stats.delivered_pkts[1], 1);
    }
}

#[test]
fn ul_logical_channel_prioritisation_lets_a_lower_priority_channel_share_beyond_the_pbr() {
    // Two backlogged UL channels: 5QI 8 first in priority. With PBR infinity (srsRAN's default)
    // it takes every grant (strict priority); at 8 kB/s it gets its bucket and 5QI 9 the rest
    // (TS 38.321 §5.4.3.1).
    let delivered = |pbr: u32| {
        let mut first = QosCfg::srsran_default(8);
        first.priority = 1;
        first.mac = LcMacCfg { prioritized_bit_rate_kbps: pbr, bucket_size_duration_ms: 100 };
        let mut h = Harness::with_qos(CellCfg::default(), vec![first], &[8, 9], &[(30.0, 30.0)]);
        for i in 0..400 {
            h.stack.send(0, Offer::new(Dir::Ul, i % 2, 0, (i % 2) as usize, 1400), &mut h.sink);
        }
        // 100 ms: part of the backlog is through.
        h.run_to(100);
        let mut n = [0u32; 2];
        for e in h.sink.packets.iter().filter(|e| e.point == Point::Deliver && e.layer == Layer::App) {
            n[usize::from(e.drb.unwrap()) - 1] += 1;
        }
        n
    };
    let strict = delivered(LcMacCfg::INFINITY);
    let shared = delivered(8);
    assert!(strict[0] > 20 && strict[1] == 0, "strict priority: {strict:?}");
    assert!(shared[1] > 20 && shared[0] < shared[1], "8 kB/s for the first: {shared:?} (strict {strict:?})");
}

#[test]
fn f1u_flow_control_holds_at_the_cu_up_what_the_du_does_not_desire() {
    // A 3000-packet burst against a DU that desires 30 kB beyond the highest SN it transmitted
    // (TS 38.425 §5.4.2.1). srsRAN's reaction: PDCP drops early what exceeds it. Flow control:
    // the excess waits in the CU-UP's F1-U transmit queue and the DU's RLC queue never holds more
    // than the desired buffer size.
    let run = |flow_control: bool| {
        let mut q = QosCfg::srsran_default(9);
        q.f1u_du.desired_buffer_bytes = 30_000;
        q.f1u_cu_up = F1uCuUpCfg { flow_control, queue_bytes: 10_000_000 };
        let mut h = Harness::with_qos(CellCfg::default(), vec![q], &[9], &[(25.0, 20.0)]);
        for _ in 0..3000 {
            h.stack.send(0, Offer::new(Dir::Dl, 0, 0, 0, 1400), &mut h.sink);
        }
        h.run_to(3000);
        h
    };
    let at = |h: &Harness, layer: Layer, point: Point| -> Vec<PacketEvent> {
        h.sink.packets.iter().filter(|e| e.layer == layer && e.point == point).cloned().collect()
    };

    let srsran = run(false);
    assert!(at(&srsran, Layer::F1u, Point::Enqueue).iter().all(|e| e.queue != Some(Queue::F1uTx)));
    let early = srsran.stack.stats.drops.get(&(Layer::Pdcp, Reason::PdcpEarlyDrop)).map_or(0, |d| d.0);
    assert!(early > 2000, "srsRAN sheds the burst at PDCP: {early} early drops");

    let held = run(true);
    let enq: Vec<PacketEvent> =
        at(&held, Layer::F1u, Point::Enqueue).into_iter().filter(|e| e.queue == Some(Queue::F1uTx)).collect();
    let deq = at(&held, Layer::F1u, Point::Dequeue);
    assert!(enq.len() > 2500, "held at the CU-UP: {}", enq.len());
    assert_eq!(deq.len(), enq.len(), "every held PDU left the queue");
    assert!(enq.iter().zip(&deq).all(|(e, d)| e.pkt == d.pkt && d.t_ns > e.t_ns), "in order, after a DDDS");
    let rlc_max = at(&held, Layer::Rlc, Point::Enqueue).iter().filter_map(|e| e.queue_bytes).max().unwrap();
    assert!(rlc_max <= 30_000, "the DU's RLC queue held {rlc_max} bytes");
    assert!(held.stack.stats.drops.is_empty(), "nothing lost: {:?}", held.stack.stats.drops);
    assert_eq!(held.stack.stats.delivered_pkts[0], 3000);
    // Each DDDS carries the desired buffer size.
    let ddds = held.controls("delivery_status");
    assert!(!ddds.is_empty() && ddds.iter().all(|c| c.value == Some(30_000.0)));
}

#[test]
fn l4s_marks_ect_packets_whose_rlc_sojourn_passes_the_threshold_and_ce_reaches_the_receiver() {
    // Two DL flows into a queue that builds (a burst the cell needs ~100 ms for): flow 0 ECT(1),
    // flow 1 Not-ECT. Marking at RLC (the SDU itself) or at PDCP (the next ECT packet, before
    // ciphering).
    let run = |mark_at: MarkAt| {
        let mut q = QosCfg::srsran_default(9);
        q.l4s = Some(L4sCfg { min_ms: 5.0, max_ms: 7.0, classic_ecn: false, mark_at });
        let mut h = Harness::with_qos(CellCfg::default(), vec![q], &[9], &[(25.0, 20.0)]);
        for ms in 0..300 {
            for flow in 0..2 {
                let ecn = if flow == 0 { ECT1 } else { 0 };
                h.stack.send(ms * MS, Offer::new(Dir::Dl, flow, 0, 0, 1400).ecn(ecn), &mut h.sink);
            }
            if ms < 150 {
                // A second burst of Not-ECT load for the first 150 ms keeps the queue long.
                for _ in 0..6 {
                    h.stack.send(ms * MS, Offer::new(Dir::Dl, 2, 0, 0, 1400), &mut h.sink);
                }
            }
            h.run_to(ms);
        }
        h.run_to(2000);
        h
    };
    for mark_at in [MarkAt::Rlc, MarkAt::Pdcp] {
        let h = run(mark_at);
        let marks: Vec<&PacketEvent> = h.sink.packets.iter().filter(|e| e.point == Point::CeMark).collect();
        let want = if mark_at == MarkAt::Rlc { (Node::GnbDu, Layer::Rlc) } else { (Node::GnbCu, Layer::Pdcp) };
        assert!(marks.len() > 20, "{mark_at:?}: {} marks", marks.len());
        assert!(marks.iter().all(|e| (e.node, e.layer) == want && e.flow == 0), "{mark_at:?}: only ECT(1), there");
        let delivered: Vec<&PacketEvent> =
            h.sink.packets.iter().filter(|e| e.point == Point::Deliver && e.layer == Layer::App).collect();
        let ce: Vec<u64> = delivered.iter().filter(|e| e.ecn == CE).map(|e| e.pkt).collect();
        let mut marked: Vec<u64> = marks.iter().map(|e| e.pkt).collect();
        marked.sort_unstable();
        assert_eq!(ce, marked, "{mark_at:?}: every mark reaches the receiver, nothing else is CE");
        assert!(delivered.iter().filter(|e| e.flow != 0).all(|e| e.ecn == 0));
    }
    // At RLC, each marked SDU had waited at least min_ms at the head of the queue.
    let h = run(MarkAt::Rlc);
    let enq: HashMap<u64, i64> = h
        .sink
        .packets
        .iter()
        .filter(|e| e.layer == Layer::Rlc && e.point == Point::Enqueue && e.node == Node::GnbDu)
        .map(|e| (e.pkt, e.t_ns))
        .collect();
    for m in h.sink.packets.iter().filter(|e| e.point == Point::CeMark) {
        assert!(m.t_ns - enq[&m.pkt] >= 5 * MS, "marked after {} ns", m.t_ns - enq[&m.pkt]);
    }
}

#[test]
fn anbr_recommends_what_the_ue_got_and_what_the_unused_prbs_would_have_carried() {
    // One UE, `mbps` of 1400-byte packets for 2 s, ANBR every 40 ms with x40.
    let run = |mbps: i64| {
        let mut q = QosCfg::srsran_default(9);
        q.anbr = Some(AnbrCfg {
            window_ms: 40.0,
            multiplier: 40,
            rounding: crate::mac::anbr::Rounding::Down,
            query_prohibit_ms: 400,
        });
        let mut h = Harness::with_qos(CellCfg::default(), vec![q], &[9], &[(25.0, 20.0)]);
        let interval = 1400 * 8 * 1000 / mbps; // ns between packets
        let mut t = 0;
        while t < 2000 * MS {
            h.stack.send(t, Offer::new(Dir::Dl, 0, 0, 0, 1400), &mut h.sink);
            h.stack.handle_timeout(t, &mut h.sink);
            t += interval;
        }
        let delivered = h.stack.stats.delivered_bytes[0] as f64 * 8.0 / 2.0;
        (h.stack.take_recommendations(), delivered, h)
    };
    // Overloaded: no PRB is left, so the recommendation is the rate the UE acknowledged (PDCP PDUs:
    // 1403 bytes a packet), rounded down to the table x 40 — or a step lower when a window's last
    // TB is acknowledged in the next.
    let (recs, capacity, h) = run(200);
    assert_eq!(recs.len(), 49, "one per 40-ms window in 2 s (the last closes at 1.96 s)");
    let (top, _) = crate::mac::anbr::quantise(capacity * 1403.0 / 1400.0 * 1.02, 40);
    for r in &recs[5..] {
        assert!(r.index <= top && r.index + 2 >= top, "{r:?}: the cell carries {capacity} bit/s");
        assert_eq!((r.ue, r.drb, r.multiplier), (0, 0, 40));
    }
    // As control events: kind anbr, the bit rate in value.
    let rows = h.controls("anbr");
    assert_eq!(rows.len(), recs.len());
    assert_eq!(rows[10].value, Some(recs[10].bit_rate_bps as f64));
    // Light load: the UE gets what it is sent, and the recommendation still says what the cell
    // could give it — far above its own rate, near the overloaded one.
    let (light, got, _) = run(5);
    assert!(got < 6e6);
    for r in &light[5..] {
        let b = r.bit_rate_bps as f64;
        assert!(b > 0.7 * capacity && b < 1.1 * capacity, "{r:?} at 5 Mbit/s; capacity {capacity}");
    }
}

#[test]
fn a_bit_rate_query_rides_the_next_pusch_and_is_answered_at_once() {
    // One UE, 5 Mbit/s DL and 1 Mbit/s UL; ANBR every second, queries at most every 400 ms. The
    // application asks at 100 ms, 200 ms and 500 ms.
    let run = || {
        let mut q = QosCfg::srsran_default(9);
        q.anbr =
            Some(AnbrCfg { window_ms: 1000.0, multiplier: 40, rounding: Default::default(), query_prohibit_ms: 400 });
        let mut h = Harness::with_qos(CellCfg::default(), vec![q], &[9], &[(25.0, 20.0)]);
        let mut taken = vec![];
        let mut asks = vec![500 * MS, 200 * MS, 100 * MS];
        let (mut t, mut next_ul) = (0, 0);
        while t < 800 * MS {
            h.stack.send(t, Offer::new(Dir::Dl, 0, 0, 0, 1400), &mut h.sink);
            if t >= next_ul {
                h.stack.send(t, Offer::new(Dir::Ul, 1, 0, 0, 1250), &mut h.sink);
                next_ul += 10 * MS;
            }
            if asks.last().is_some_and(|&a| t >= a) {
                asks.pop();
                taken.push((t, h.stack.query_bit_rate(t, 0, 0, 60_000_000, &mut h.sink)));
            }
            h.stack.handle_timeout(t, &mut h.sink);
            t += 2_240_000; // 1400 bytes at 5 Mbit/s
        }
        (taken, h.stack.take_recommendations(), h)
    };
    let (taken, recs, h) = run();
    let took: Vec<bool> = taken.iter().map(|x| x.1).collect();
    assert_eq!(took, [true, false, true], "{taken:?}: the second within bitRateQueryProhibitTimer");
    let answers: Vec<_> = recs.iter().filter(|r| r.answer).collect();
    assert_eq!(answers.len(), 2, "{recs:?}");
    for (a, (t, _)) in answers.iter().zip(taken.iter().filter(|x| x.1)) {
        // It waits for the next PUSCH (the UE has UL data: grants every few slots) and its decode.
        assert!(a.t > *t && a.t - t < 20 * MS, "asked at {t}, answered at {}", a.t);
        // The answer is the rate since the window opened: the 5 Mbit/s the UE gets plus the
        // unused PRBs' share, far above 5.
        assert!(a.bit_rate_bps > 20_000_000, "{a:?}");
    }
    let ue_rows = h.controls("anbr_query");
    assert_eq!(ue_rows.iter().filter(|r| r.node == Node::Ue).count(), 2);
    assert_eq!(ue_rows.iter().filter(|r| r.node == Node::GnbDu).count(), 2);
    assert!(ue_rows.iter().all(|r| r.value == Some(60e6) && r.drb == Some(1)));
}

#[test]
fn every_harq_retransmission_ends_in_a_retx_event_with_its_process_slot_and_delay() {
    // One UE at 12 dB both ways (OLLA holds ~10 % BLER: retransmissions throughout), 2 Mbit/s
    // each way for 8 s, lightly loaded.
    let mut h = Harness::with_cell(bler10(CellCfg::default()), &[(12.0, 12.0)]);
    let mut t = 0;
    while t < 8000 * MS {
        h.stack.send(t, Offer::new(Dir::Dl, 0, 0, 0, 1250), &mut h.sink);
        h.stack.send(t, Offer::new(Dir::Ul, 1, 0, 0, 1250), &mut h.sink);
        t += 5 * MS;
        h.stack.handle_timeout(t, &mut h.sink);
    }
    let slot_ns = h.stack.grid.slot_ns();
    let period = h.stack.duplex.period();
    for dir in [Dir::Dl, Dir::Ul] {
        // The decoded retransmissions, and each process's first transmission before them.
        let mut first: HashMap<u8, u64> = HashMap::new();
        let mut expected = vec![];
        for r in h.sink.slots.iter().filter(|r| r.dir == dir && r.ue.is_some()) {
            let id = r.harq_id.unwrap();
            if r.retx_index == Some(0) {
                first.insert(id, r.slot);
            }
            if r.ack == Some(true) && r.retx_index > Some(0) {
                expected.push((id, first[&id], r.slot, r.retx_index.unwrap()));
            }
        }
        let events: Vec<_> =
            h.controls("retx_event").into_iter().filter(|c| c.dir == Some(dir) && c.layer == Layer::Mac).collect();
        assert!(expected.len() > 20, "{dir:?}: {} decoded retransmissions", expected.len());
        assert_eq!(events.len(), expected.len(), "{dir:?}: one event per decoded retransmission");
        let mut by_index: HashMap<u64, Vec<i64>> = HashMap::new();
        for (e, (id, s0, s, retx)) in events.iter().zip(&expected) {
            let d: serde_json::Value = serde_json::from_str(e.detail.as_deref().unwrap()).unwrap();
            assert_eq!(e.sn, Some(i64::from(*id)));
            assert_eq!((d["first_slot"].as_u64(), d["slot"].as_u64()), (Some(*s0), Some(*s)));
            assert_eq!(d["nof_tx"].as_u64(), Some(u64::from(*retx) + 1));
            let delay = e.value.unwrap() as i64;
            assert_eq!(delay, (*s - *s0) as i64 * slot_ns, "T_M is first to last transmission");
            assert!(e.t_ns >= h.stack.grid.start(*s), "it ends when the last transmission is decoded");
            assert_eq!(e.node, if dir == Dir::Dl { Node::Ue } else { Node::GnbDu });
            if *retx == 1 {
                by_index.entry(s0 % period).or_default().push(delay);
                // Its two parts (seed 004's Tables 4-6): DL k1 to a UL slot carrying the NACK,
                // then kd to the DL slot of the retransmission; UL ku to the DL slot whose PDCCH
                // grants it, then k2 (at least min_k2) to the UL slot of the retransmission.
                let dl = dir == Dir::Dl;
                let (a, b) = if dl { ("k1", "kd") } else { ("ku", "k2") };
                let (ka, kb) = (d[a].as_u64().expect(a), d[b].as_u64().expect(b));
                assert_eq!(ka + kb, s - s0, "{dir:?}: {a} + {b} is the retransmission's delay");
                let has = |slot: u64, ul: bool| {
                    let k = h.stack.duplex.slot_kind(slot % period);
                    if ul {
                        k.ul_symbols > 0
                    } else {
                        k.dl_symbols > 0
                    }
                };
                // DL: the NACK in a UL slot, the retransmission in a DL one; UL the other way.
                assert!(has(s0 + ka, dl) && has(s0 + ka + kb, !dl), "{dir:?}: {d}");
                let least = if dir == Dir::Dl { (4, 2) } else { (1, 4) };
                assert!(ka >= least.0 && kb >= least.1, "{dir:?}: {d}");
            }
        }
        // A single retransmission's delay is fixed by where in the TDD pattern the first
        // transmission was (seed 004 §3.1.2): one value per slot index for most, the others
        // having waited a slot more behind another retransmission of the UE (one PDSCH or PUSCH
        // per UE a slot; in the UL both slots of the period often carry a TB).
        assert!(by_index.len() > 1, "{dir:?}: {by_index:?}");
        let (mut at_least, mut all) = (0, 0);
        for (i, ds) in &by_index {
            let least = *ds.iter().min().unwrap();
            at_least += ds.iter().filter(|&&d| d == least).count();
            all += ds.len();
            assert!(ds.iter().all(|d| (d - least) % slot_ns == 0), "{dir:?} slot index {i}: {ds:?}");
        }
        assert!(at_least * 2 > all, "{dir:?}: {at_least} of {all} at their slot index's least delay: {by_index:?}");
    }
}

/// The uplink buffer's period is the least common multiple of the TDD period, the SR period
/// and periodicBSR-Timer: srsRAN's defaults (DDDDDDSUUU at 30 kHz: 5 ms; SR 20 ms; BSR 10 ms)
/// give 20 ms; DDDSU (2.5 ms) with a 4 ms SR and an 8 ms BSR timer gives 40 ms; with the
/// timer at infinity (-1), only the TDD and SR periods count (lcm of 2.5 and 4 ms: 20 ms).
#[test]
fn the_uplink_buffer_period_is_the_lcm_of_tdd_sr_and_bsr_periods() {
    assert_eq!(Harness::new(&[(20.0, 20.0)]).stack.ul_buffer_period_ns(), 20 * MS);
    let dddsu = crate::phy::tdd::TddPattern {
        dl_ul_tx_period: 5,
        nof_dl_slots: 3,
        nof_dl_symbols: 10,
        nof_ul_slots: 1,
        nof_ul_symbols: 2,
        pattern2: None,
    };
    let mut cell = CellCfg { tdd_ul_dl_cfg: dddsu, ..CellCfg::default() };
    cell.pucch.sr_period_ms = 4.0;
    cell.mac_cell_group.bsr_cfg.periodic_bsr_timer = 8;
    assert_eq!(Harness::with_cell(cell.clone(), &[(20.0, 20.0)]).stack.ul_buffer_period_ns(), 40 * MS);
    cell.mac_cell_group.bsr_cfg.periodic_bsr_timer = -1;
    assert_eq!(Harness::with_cell(cell, &[(20.0, 20.0)]).stack.ul_buffer_period_ns(), 20 * MS);
}

/// A TB the MAC gives up loses its RLC PDUs; RLC AM's ARQ sends them again (TS 38.322 §5.3.2)
/// and the retransmission that completes an SDU at the receiver ends a retransmission event at
/// the RLC layer (seed 004 §3.1.1): T_R from the SN's first transmission to that one — longer
/// than any HARQ one, since it waits for the receiver's STATUS (t-Reassembly, the report) or
/// t-PollRetransmit — and it reaches the driver's feed with the MAC's.
#[test]
fn an_rlc_retransmission_ends_a_retransmission_event_at_the_rlc_layer() {
    let mut cell = CellCfg::default();
    cell.pdsch.max_nof_harq_retxs = 0;
    cell.pusch.max_nof_harq_retxs = 0;
    let mut h = Harness::with_cell(bler10(cell), &[(12.0, 12.0)]);
    h.stack.keep_retx_events();
    let mut t = 0;
    let mut fed = vec![];
    while t < 4000 * MS {
        h.stack.send(t, Offer::new(Dir::Dl, 0, 0, 0, 1250), &mut h.sink);
        h.stack.send(t, Offer::new(Dir::Ul, 1, 0, 0, 1250), &mut h.sink);
        t += 5 * MS;
        h.stack.handle_timeout(t, &mut h.sink);
        fed.extend(h.stack.take_retx_events());
    }
    assert!(h.controls("retx_event").iter().all(|e| !e.detail.as_deref().unwrap().contains("\"mac\"")), "no HARQ retx");
    for dir in [Dir::Dl, Dir::Ul] {
        let events: Vec<_> = h.controls("retx_event").into_iter().filter(|c| c.dir == Some(dir)).collect();
        assert!(events.len() > 10, "{dir:?}: {} RLC retransmission events", events.len());
        let lost = h.controls("harq_fail").iter().filter(|c| c.dir == Some(dir)).count();
        assert!(events.len() <= lost * 8, "{dir:?}: {} events from {lost} lost TBs", events.len());
        for e in &events {
            let d: serde_json::Value = serde_json::from_str(e.detail.as_deref().unwrap()).unwrap();
            assert_eq!((e.layer, d["layer"].as_str()), (Layer::Rlc, Some("rlc")));
            assert_eq!(e.node, if dir == Dir::Dl { Node::Ue } else { Node::GnbDu });
            assert_eq!(d["rlc_sn"].as_i64(), e.sn);
            let (start, t_r) = (d["start_ns"].as_i64().unwrap(), e.value.unwrap() as i64);
            // At least a round of HARQ feedback and a STATUS: well over a slot; and it ended
            // after its last transmission began.
            assert!(t_r > 2 * MS && start + t_r <= e.t_ns, "{dir:?}: {e:?}");
        }
        let ours: Vec<i64> = fed.iter().filter(|f| f.1 == dir).map(|f| f.3).collect();
        assert_eq!(ours, events.iter().map(|e| e.value.unwrap() as i64).collect::<Vec<_>>(), "{dir:?}: fed");
    }
}
