//! Whole-stack properties over random scenarios, and the phenomena the built-in scenarios must show.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use proptest::prelude::*;
use scout_events::{Layer, Point, VecSink};
use scout_ran::stack::Offer;

fn scenario(text: &str) -> scout_sim::scenario::Loaded {
    let (scenario, resolved) = scout_sim::scenario::parse(text, "test.yaml", &[]).expect("valid scenario");
    scout_sim::scenario::Loaded { scenario, dir: Path::new(".").into(), file: "test.yaml".into(), resolved }
}

fn builtin(name: &str) -> scout_sim::scenario::Loaded {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(format!("{name}.yaml"));
    scout_sim::scenario::load(&p, &[]).expect("built-in scenario loads")
}

fn run(l: &scout_sim::scenario::Loaded, seed: u64, dur: f64) -> (VecSink, scout_sim::Outcome) {
    let mut sink = VecSink::default();
    let o = scout_sim::run(l, seed, dur, &mut sink, &mut |_| std::ops::ControlFlow::Continue(())).expect("runs");
    (sink, o)
}

/// Checks conservation, ordering, non-negative durations and layer coverage on one run.
fn check_invariants(sink: &VecSink, o: &scout_sim::Outcome) {
    // Per packet: its events.
    let mut by_pkt: HashMap<u64, Vec<&scout_events::PacketEvent>> = HashMap::new();
    for e in &sink.packets {
        by_pkt.entry(e.pkt).or_default().push(e);
    }
    let in_flight: std::collections::HashSet<u64> = sink
        .controls
        .iter()
        .filter(|c| c.kind == scout_events::ControlKind::InFlight)
        .map(|c| c.sn.unwrap() as u64)
        .collect();
    let (mut offered, mut delivered, mut dropped) = ([0u64; 2], [0u64; 2], [0u64; 2]);
    let mut deliveries_per_flow: BTreeMap<u32, Vec<(i64, u64)>> = BTreeMap::new();
    for (pkt, evs) in &by_pkt {
        let tx =
            evs.iter().find(|e| e.layer == Layer::App && e.point == Point::Tx).expect("every packet has an app tx");
        let d = tx.dir as usize;
        offered[d] += u64::from(tx.bytes);
        let delivers: Vec<_> = evs.iter().filter(|e| e.layer == Layer::App && e.point == Point::Deliver).collect();
        let drops: Vec<_> = evs.iter().filter(|e| e.point == Point::Drop).collect();
        assert!(delivers.len() + drops.len() <= 1, "packet {pkt} delivered/dropped more than once");
        if let Some(dv) = delivers.first() {
            delivered[d] += u64::from(tx.bytes);
            assert!(dv.t_ns >= tx.t_ns, "negative one-way delay for {pkt}");
            deliveries_per_flow.entry(tx.flow).or_default().push((dv.t_ns, *pkt));
            // Every layer crossed left an event.
            let layers: std::collections::HashSet<Layer> = evs.iter().map(|e| e.layer).collect();
            for l in [
                Layer::App,
                Layer::N6,
                Layer::Upf,
                Layer::N3,
                Layer::Gtpu,
                Layer::Pdcp,
                Layer::F1u,
                Layer::Rlc,
                Layer::Mac,
                Layer::Phy,
            ] {
                assert!(layers.contains(&l), "delivered packet {pkt} has no {l} event");
            }
            // Events along the path never go back in time for checkpoints of one packet's journey:
            // proc_begin <= proc_end per layer.
            for l in [Layer::Upf, Layer::Gtpu, Layer::Pdcp, Layer::F1u] {
                let b = evs.iter().filter(|e| e.layer == l && e.point == Point::ProcBegin).map(|e| e.t_ns).min();
                let en = evs.iter().filter(|e| e.layer == l && e.point == Point::ProcEnd).map(|e| e.t_ns).max();
                if let (Some(b), Some(en)) = (b, en) {
                    assert!(en >= b, "negative processing at {l} for {pkt}");
                }
            }
        } else if drops.len() == 1 {
            dropped[d] += u64::from(tx.bytes);
        } else {
            assert!(in_flight.contains(pkt), "packet {pkt} neither delivered, dropped nor in flight");
        }
    }
    let in_flight_bytes: [u64; 2] = {
        let mut b = [0u64; 2];
        for c in sink.controls.iter().filter(|c| c.kind == scout_events::ControlKind::InFlight) {
            b[c.dir.unwrap() as usize] += c.value.unwrap() as u64;
        }
        b
    };
    for d in 0..2 {
        assert_eq!(offered[d], delivered[d] + dropped[d] + in_flight_bytes[d], "bytes conservation, dir {d}");
        assert_eq!(offered[d], o.stats.offered_bytes[d]);
        assert_eq!(delivered[d], o.stats.delivered_bytes[d]);
    }
    // Per-flow in-order delivery (PDCP delivers in COUNT order, and a flow maps to one DRB).
    for (flow, v) in deliveries_per_flow {
        let mut v = v;
        v.sort();
        assert!(v.windows(2).all(|w| w[0].1 < w[1].1), "flow {flow} delivered out of order");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    #[test]
    fn random_scenarios_conserve_and_deliver_in_order(
        ues in 1u32..4,
        dl_rate in 1.0f64..40.0,
        ul_rate in 0.5f64..8.0,
        sinr in 3.0f64..28.0,
        um in any::<bool>(),
        scs in prop::sample::select(vec![15u32, 30]),
        seed in 0u64..1000,
        policy in prop::sample::select(vec!["time_rr", "time_pf"]),
        queue in prop::sample::select(vec![50_000u64, 6_172_672]),
        flow_control in any::<bool>(),
        desired in prop::sample::select(vec![-1i64, 20_000]),
    ) {
        let mode = if um { "um-bidir" } else { "am" };
        let bw = if scs == 15 { 20 } else { 40 };
        let text = format!(
            "name: prop\nduration_s: 1.5\ncell_cfg: {{channel_bandwidth_MHz: {bw}, common_scs: {scs}, scheduler: {{policy: {policy}}}}}\n\
             qos: [{{five_qi: 9, rlc: {{mode: {mode}, am: {{tx: {{queue-bytes: {queue}}}}}, um-bidir: {{tx: {{queue-bytes: {queue}}}}}}}, \
             f1u_du: {{desired_buffer_bytes: {desired}}}, f1u_cu_up: {{flow_control: {flow_control}}}}}]\n\
             ues: [{{count: {ues}, channel: {{dl_sinr_db: {sinr}, ul_sinr_db: {ul}}}}}]\n\
             traffic:\n  - {{type: udp_cbr, ue: all, dir: dl, rate_mbps: {dl_rate}, stop_s: 1.0}}\n  - {{type: udp_cbr, ue: all, dir: ul, rate_mbps: {ul_rate}, stop_s: 1.0}}\n  - {{type: ping, ue: 0, interval_ms: 30}}\n",
            ul = sinr - 4.0,
        );
        let l = scenario(&text);
        let (sink, o) = run(&l, seed, 1.5);
        check_invariants(&sink, &o);
    }
}

#[test]
fn same_seed_gives_identical_events_and_another_seed_differs() {
    let l = builtin("mixed");
    let (a, _) = run(&l, 5, 2.0);
    let (b, _) = run(&l, 5, 2.0);
    let (c, _) = run(&l, 6, 2.0);
    assert_eq!(a.packets, b.packets);
    assert_eq!(a.slots, b.slots);
    assert_eq!(a.controls, b.controls);
    assert_ne!(a.packets, c.packets);
}

#[test]
fn builtin_mixed_scenario_holds_invariants() {
    let l = builtin("mixed");
    let (sink, o) = run(&l, 7, 3.0);
    check_invariants(&sink, &o);
    assert!(o.stats.delivered_pkts[1] > 0, "uplink delivers");
    assert!(!o.rtts_ns.is_empty(), "pings produce RTT samples");
}

#[test]
fn udp_flood_builds_up_saturates_and_drains() {
    let l = builtin("udp-flood");
    let (sink, o) = run(&l, 1, 20.0);
    let s = 1_000_000_000i64;
    // RLC SDU queue occupancy over time (DU side).
    let rlc: Vec<(i64, u64)> = sink
        .packets
        .iter()
        .filter(|e| e.layer == Layer::Rlc && e.point == Point::Enqueue && e.node == scout_events::Node::GnbDu)
        .map(|e| (e.t_ns, e.queue_bytes.unwrap()))
        .collect();
    let limit = 6_172_672u64;
    let first_near_full = rlc.iter().find(|(_, q)| *q > limit * 8 / 10).map(|(t, _)| *t).expect("RLC queue fills");
    let first_pdcp_drop = sink
        .packets
        .iter()
        .filter(|e| e.point == Point::Drop && e.layer == Layer::Pdcp)
        .map(|e| e.t_ns)
        .min()
        .expect("PDCP drops once RLC is full");
    // PDCP sheds when its outstanding volume — the F1-U backlog and the RLC queue — reaches the
    // desired buffer size (the RLC queue's limit): RLC is most of the way there, and fills after.
    let rlc_at_drop = rlc.iter().take_while(|(t, _)| *t <= first_pdcp_drop).map(|(_, q)| *q).max().unwrap();
    assert!(rlc_at_drop > limit / 2, "RLC holds {rlc_at_drop} B when PDCP first sheds");
    assert!(
        first_near_full <= first_pdcp_drop + 2 * s,
        "RLC fills ({first_near_full}) as PDCP sheds ({first_pdcp_drop})"
    );
    assert!(first_pdcp_drop > s / 2, "buffers absorb the overload first");
    // Steady state: occupancy stays high between 5 s and 15 s.
    let steady: Vec<u64> = rlc.iter().filter(|(t, _)| *t > 5 * s && *t < 15 * s).map(|(_, q)| *q).collect();
    assert!(steady.iter().all(|q| *q > limit / 2), "steady overloaded state");
    // Drain: deliveries continue after the sender stopped at 15 s.
    let last_delivery = sink
        .packets
        .iter()
        .filter(|e| e.point == Point::Deliver && e.layer == Layer::App)
        .map(|e| e.t_ns)
        .max()
        .unwrap();
    let last_send =
        sink.packets.iter().filter(|e| e.point == Point::Tx && e.layer == Layer::App).map(|e| e.t_ns).max().unwrap();
    assert!(
        last_send < 15 * s && last_delivery > last_send + s / 2,
        "delivery outlasts sending: {last_send} vs {last_delivery}"
    );
    assert_eq!(o.in_flight, 0, "the queue fully drains before 20 s");

    // SCOUT §6's layers: GTP-U queueing present but small (< 15 ms); F1-U in the hundreds of ms
    // while RLC fills, collapsing once PDCP sheds; RLC above 1 s in the steady state.
    let gtpu = executor_waits(&sink, Layer::Gtpu);
    assert!(gtpu.iter().any(|w| w.1 > 0) && gtpu.iter().all(|w| w.1 < 15_000_000), "GTP-U waits present, small");
    let f1u = executor_waits(&sink, Layer::F1u);
    let before = f1u.iter().filter(|w| w.0 < first_pdcp_drop).map(|w| w.1).max().unwrap();
    let after: Vec<i64> = f1u.iter().filter(|w| w.0 > first_pdcp_drop + 2 * s && w.0 < 15 * s).map(|w| w.1).collect();
    let after_mean = after.iter().sum::<i64>() / after.len() as i64;
    assert!(before > 200_000_000, "F1-U queueing builds to hundreds of ms before PDCP sheds: {before} ns");
    assert!(after_mean < before / 50, "and collapses after: mean {after_mean} ns");
    let mut steady_delay: Vec<i64> = Vec::new();
    let sent: HashMap<u64, i64> = sink
        .packets
        .iter()
        .filter(|e| e.point == Point::Tx && e.layer == Layer::App && e.t_ns > 5 * s)
        .map(|e| (e.pkt, e.t_ns))
        .collect();
    for e in sink.packets.iter().filter(|e| e.point == Point::Deliver && e.layer == Layer::App) {
        if let Some(t) = sent.get(&e.pkt) {
            steady_delay.push(e.t_ns - t);
        }
    }
    steady_delay.sort_unstable();
    assert!(
        steady_delay[steady_delay.len() / 2] > s,
        "RLC above 1 s: median delay {}",
        steady_delay[steady_delay.len() / 2]
    );
}

/// Each DL packet's wait for a worker of the CU-UP executor at `layer`: (enqueued at, waited ns).
fn executor_waits(sink: &VecSink, layer: Layer) -> Vec<(i64, i64)> {
    let mut enq: HashMap<u64, i64> = HashMap::new();
    let mut waits = Vec::new();
    for e in sink.packets.iter().filter(|e| e.layer == layer && e.dir == scout_events::Dir::Dl) {
        match e.point {
            Point::Enqueue => {
                enq.insert(e.pkt, e.t_ns);
            }
            Point::ProcBegin => {
                if let Some(t) = enq.remove(&e.pkt) {
                    waits.push((t, e.t_ns - t));
                }
            }
            _ => {}
        }
    }
    waits
}

#[test]
fn executor_queueing_grows_with_load() {
    let mut waits = Vec::new();
    for name in ["attribution-light", "attribution-medium", "attribution-heavy"] {
        let l = builtin(name);
        let (sink, _) = run(&l, 1, 2.0);
        // Mean wait at the GTP-U executor: enqueue -> proc_begin per packet.
        let w = executor_waits(&sink, Layer::Gtpu);
        waits.push(w.iter().map(|w| w.1 as f64).sum::<f64>() / w.len() as f64);
    }
    assert!(waits[0] < waits[1] && waits[1] < waits[2], "GTP-U queueing by load: {waits:?}");
}

#[test]
fn capacity_trace_drives_the_delivered_rate() {
    // traces/step-24-6mbps.trace: 24 Mbit/s for 5 s, then 6 Mbit/s. The flow offers 15 Mbit/s, so the
    // first half carries it all and the second half is capped near the trace's 6 Mbit/s.
    let l = builtin("capacity-trace");
    let (sink, o) = run(&l, 1, 10.0);
    check_invariants(&sink, &o);
    let mut bytes = [0u64; 2];
    for e in sink.packets.iter().filter(|e| e.layer == Layer::App && e.point == Point::Deliver) {
        let half = usize::from(e.t_ns >= 5_000_000_000);
        if (1_000_000_000..4_000_000_000).contains(&e.t_ns) || (6_000_000_000..9_000_000_000).contains(&e.t_ns) {
            bytes[half] += u64::from(e.bytes);
        }
    }
    let mbps = bytes.map(|b| b as f64 * 8.0 / 3.0 / 1e6);
    assert!((14.0..16.0).contains(&mbps[0]), "first half carries the offered 15 Mbit/s: {mbps:?}");
    // IP bytes against 1500-byte link opportunities, CQI and MCS granularity, OLLA: 70-100 % of 6.
    assert!((4.2..6.0).contains(&mbps[1]), "second half follows the trace's 6 Mbit/s: {mbps:?}");
}

#[test]
fn bad_capacity_trace_names_file_and_line() {
    let dir = std::env::temp_dir().join(format!("scout-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.trace"), "0\n1\nabc\n").unwrap();
    let yaml = "name: t\nduration_s: 1\nues: [{count: 1, channel: {mahimahi_trace: bad.trace}}]\n\
                traffic: [{type: udp_cbr, ue: 0, dir: dl, rate_mbps: 1}]\n";
    std::fs::write(dir.join("s.yaml"), yaml).unwrap();
    let l = scout_sim::scenario::load(&dir.join("s.yaml"), &[]).expect("parses");
    let e = scout_sim::build(&l, 1, 1.0).err().expect("bad trace is an error").to_string();
    assert!(e.contains("bad.trace:3") && e.contains("abc"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_ue_gets_sr_occasions_and_uplink_grants() {
    // Regression: SR offsets used to follow the UE index, so UEs whose offset fell on a DL-only slot
    // of the TDD pattern never sent an SR and their uplink never moved.
    let l = builtin("attribution-light");
    let (sink, o) = run(&l, 1, 2.0);
    check_invariants(&sink, &o);
    let mut delivered_ul = std::collections::BTreeSet::new();
    for e in sink
        .packets
        .iter()
        .filter(|e| e.dir == scout_events::Dir::Ul && e.layer == Layer::App && e.point == Point::Deliver)
    {
        delivered_ul.insert(e.ue);
    }
    assert_eq!(delivered_ul.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3], "every UE's pings cross the uplink");
}

/// A wall-clock driver steps the model a bounded number of actions at a time (the emulator, so a
/// late slot cannot starve packet I/O): in any bounds, the same events as whole steps.
#[test]
fn bounded_steps_give_the_same_events_as_whole_steps() {
    let l = builtin("mixed");
    let drive = |bound: usize| {
        let (mut st, _, _) = scout_sim::build(&l, 3, 0.3).expect("builds");
        let mut sink = VecSink::default();
        let mut calls = 0u64;
        let mut step_to = |st: &mut scout_ran::stack::Stack, t: i64, sink: &mut VecSink| {
            while st.handle_timeout_bounded(t, bound, sink) {
                calls += 1;
            }
        };
        for i in 0..300i64 {
            let t = i * 700_000;
            step_to(&mut st, t, &mut sink);
            st.send(t, Offer::new(scout_events::Dir::Dl, 0, 0, 0, 1400), &mut sink);
            st.send(t, Offer::new(scout_events::Dir::Ul, 1, 1, 0, 300), &mut sink);
        }
        step_to(&mut st, 300_000_000, &mut sink);
        assert!(!st.handle_timeout_bounded(300_000_000, bound, &mut sink), "nothing left due");
        (sink, calls)
    };
    let (whole, whole_calls) = drive(usize::MAX);
    let (one, one_calls) = drive(1);
    let (some, _) = drive(7);
    assert_eq!(whole_calls, 0, "an unbounded call runs everything due at once");
    assert!(one_calls > 1000, "{one_calls}");
    assert_eq!(whole.packets, one.packets);
    assert_eq!(whole.slots, one.slots);
    assert_eq!(whole.controls, some.controls);
    assert_eq!(whole.packets, some.packets);
}

/// The emulator keeps the slot appointment first: `next_slot_at` is the due time of the next slot
/// not yet run, `slot_ns` after the one before, and a step to it runs that slot (and its row).
#[test]
fn next_slot_at_names_the_slot_a_step_runs() {
    let l = builtin("mixed");
    let (mut st, _, _) = scout_sim::build(&l, 3, 0.1).expect("builds");
    let mut sink = VecSink::default();
    assert_eq!(st.next_slot_at(), 0, "slot 0 starts at time 0");
    for s in 0..200i64 {
        let due = st.next_slot_at();
        assert_eq!(due, s * st.slot_ns());
        // Everything before the slot runs without running it.
        st.handle_timeout(due - 1, &mut sink);
        assert_eq!(st.next_slot_at(), due);
        let before = sink.slots.len();
        st.handle_timeout(due, &mut sink);
        assert_eq!(st.next_slot_at(), due + st.slot_ns());
        assert!(sink.slots[before..].iter().any(|e| e.t_ns == due), "slot {s} wrote a row at {due}");
    }
}

#[test]
fn a_prague_sender_through_l4s_marking_keeps_the_queue_short_where_constant_rate_floods_it() {
    // Seed 003 §5.1: into a 20 MHz cell shared with 10 Mbit/s of background, a constant 60 Mbit/s
    // sees seconds of delay; UDP Prague on L4S marks at 5-7 ms holds tens of ms or less at most of
    // what the cell leaves it; the ANBR-driven sender stays below what the cell gives too.
    let text = |source: &str| {
        format!(
            "name: l4s\nduration_s: 10\ncell_cfg: {{channel_bandwidth_MHz: 20, common_scs: 30, band: 78}}\n\
             qos: [{{five_qi: 9, l4s: {{min_ms: 5, max_ms: 7}}, anbr: {{window_ms: 40}}}}]\n\
             ues: [{{count: 2, channel: {{dl_sinr_db: 22, ul_sinr_db: 15}}}}]\n\
             traffic:\n  - {source}\n  - {{type: udp_cbr, ue: 1, dir: dl, rate_mbps: 10}}\n"
        )
    };
    let flow0 = |src: &str| {
        let (sink, o) = run(&scenario(&text(src)), 1, 10.0);
        check_invariants(&sink, &o);
        let mut sent: HashMap<u64, i64> = HashMap::new();
        let (mut delay, mut n, mut bytes, mut ce) = (0i64, 0i64, 0u64, 0u64);
        for e in sink.packets.iter().filter(|e| e.flow == 0 && e.layer == Layer::App) {
            match e.point {
                Point::Tx => _ = sent.insert(e.pkt, e.t_ns),
                Point::Deliver if e.t_ns > 2_000_000_000 => {
                    delay += e.t_ns - sent[&e.pkt];
                    n += 1;
                    bytes += u64::from(e.bytes);
                    ce += u64::from(e.ecn == 3);
                }
                _ => {}
            }
        }
        (delay as f64 / n as f64 / 1e6, bytes as f64 * 8.0 / 8.0 / 1e6, ce)
    };
    let (cbr_ms, cbr_mbps, _) = flow0("{type: udp_cbr, ue: 0, dir: dl, rate_mbps: 60, ecn: ect1}");
    let (prague_ms, prague_mbps, marks) = flow0("{type: adaptive, ue: 0, control: prague, max_rate_mbps: 60}");
    let (anbr_ms, anbr_mbps, _) = flow0("{type: adaptive, ue: 0, control: anbr, max_rate_mbps: 60}");
    assert!(cbr_ms > 500.0, "constant rate floods the RLC queue: {cbr_ms} ms");
    assert!(prague_ms < 20.0 && marks > 100, "Prague on L4S: {prague_ms} ms, {marks} CE");
    assert!(prague_mbps > 0.6 * cbr_mbps, "at most of the rate: {prague_mbps} of {cbr_mbps} Mbit/s");
    assert!(anbr_ms < 20.0 && anbr_mbps > 0.5 * cbr_mbps, "ANBR: {anbr_ms} ms at {anbr_mbps} Mbit/s");
}
