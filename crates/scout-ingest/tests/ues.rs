//! One UE identity across connections, index spaces and reuse of indexes, on a log written in the
//! 24.10 format (debug RRC with its JSON contents; `tests/data/ue-continuity.gnb.log`):
//!
//! 1. UE A connects (DU 0, CU-CP 0, C-RNTI 0x4601; random value in its RRC setup request, full
//!    5G-S-TMSI in the setup complete); E1AP lines state that its CU-UP index is 3.
//! 2. UE B connects on the same DU and CU-CP indexes (C-RNTI 0x4602) without a 5G-S-TMSI.
//! 3. UE A returns on DU index 1 (C-RNTI 0x4603) with part 1 of its 5G-S-TMSI.
//! 4. UE A re-establishes (DU index 2, C-RNTI 0x4604), naming C-RNTI 0x4603.

use scout_events::VecSink;
use scout_ingest::srsran::run::Gnb;
use scout_ingest::srsran::EntryReader;

const LOG: &str = include_str!("data/ue-continuity.gnb.log");

fn run() -> (Gnb, VecSink) {
    let mut r = EntryReader::new(LOG.as_bytes());
    let mut g: Option<Gnb> = None;
    let mut sink = VecSink::default();
    while let Some(e) = r.next_entry().unwrap() {
        g.get_or_insert_with(|| Gnb::new(e.header.t_us)).entry(&e, 0, &mut sink);
    }
    let mut g = g.unwrap();
    g.finish(&mut sink);
    (g, sink)
}

#[test]
fn a_returning_ue_keeps_its_identity_and_a_new_ue_on_reused_indexes_gets_its_own() {
    let (g, sink) = run();
    let conns: Vec<_> = g.ues.conns.iter().map(|c| (c.du, c.rnti.unwrap(), c.cu_cp, c.ue.unwrap())).collect();
    assert_eq!(
        conns,
        vec![(0, 0x4601, Some(0), 0), (0, 0x4602, Some(0), 1), (1, 0x4603, Some(1), 0), (2, 0x4604, Some(2), 0)]
    );
    assert_eq!(g.ues.returning, 2);
    assert_eq!(g.ues.conns[0].tmsi48, Some(0x2F0312345678));
    assert_eq!(g.ues.conns[2].tmsi39, Some(0x2F0312345678 & ((1 << 39) - 1)));
    assert_eq!((g.ues.conns[0].ran_ue_id, g.ues.conns[0].amf_ue_id), (Some(0), Some(4)));
    // Slot rows: each grant carries the UE of its connection (those of connections 2–4 were held
    // until their RRC setup decided).
    let mut rows: Vec<_> = sink.slots.iter().filter_map(|s| Some((s.rnti?, s.ue?))).collect();
    rows.sort();
    assert_eq!(rows, vec![(0x4601, 0), (0x4602, 1), (0x4603, 0), (0x4604, 0)]);
    // The DL packet of CU-UP index 3 is UE A's: bound by E1AP, not guessed from traffic.
    assert!(!sink.packets.is_empty());
    assert!(sink.packets.iter().all(|p| p.ue == 0));
    let b = &g.st.ids.bindings;
    assert_eq!((b[0].cu_up, b[0].du), (3, 0));
    assert!(b[0].via.starts_with("stated: E1AP"), "{}", b[0].via);
}
