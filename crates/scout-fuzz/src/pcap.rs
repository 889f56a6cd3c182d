//! `scout ingest pcap` on one capture held in memory: the pcap/pcapng reader, the link, IP, UDP,
//! GTP-U and PFCP decoders, IP reassembly, N3/N6 pairing and PFCP request pairing.

use std::ops::ControlFlow;
use std::sync::Arc;

use scout_events::writer::CountingRun;
use scout_ingest::pcap::run::{ingest_captures, Capture, Options};
use scout_ingest::srsran::run::IngestError;
use serde_json::Value;

use crate::{n, sum};

const NAME: &str = "fuzz.pcap";

pub fn run(data: &[u8]) {
    let cap = Capture::Bytes { name: NAME.into(), data: Arc::from(data) };
    let got = ingest_captures(&[cap], &Options::default(), |meta, _| Ok(CountingRun::new(meta)), &mut |_, _| {
        ControlFlow::Continue(())
    });
    match got {
        Ok(meta) => check(&meta, data.len() as u64),
        // A capture that cannot be read says which file and where.
        Err(IngestError::Input { path, message }) => {
            assert_eq!(path, NAME);
            assert!(!message.is_empty());
        }
        Err(e) => panic!("unexpected error: {e}"),
    }
}

/// Every frame is accounted for once, every PFCP message once, every pairing outcome once.
pub fn check(meta: &Value, size: u64) {
    let pc = &meta["pcap"];
    let pf = &meta["pfcp"];
    let frames = n(&pc["frames"]);
    let file = &pc["files"][0];
    assert_eq!(n(&file["frames"]), frames, "the reader's frames are the frames handled: {pc}");
    let types: u64 = file["other_block_types"].as_object().map_or(0, |o| o.values().map(n).sum());
    assert_eq!(types, n(&file["other_blocks"]), "{pc}");
    assert!(frames > 0, "a success with no frames: {pc}");
    if let Some(d) = file["damage"].as_object() {
        assert!(n(&d["offset"]) <= size, "damage beyond the end: {pc}");
        assert_eq!(n(&d["bytes_not_read"]), size - n(&d["offset"]), "{pc}");
    }
    let sightings = sum(&pc["capture_points"], "n3_sightings") + sum(&pc["capture_points"], "n6_sightings");
    let other_gtp: u64 = pc["gtpu_other_messages"].as_object().map_or(0, |o| o.values().map(n).sum());
    let undecoded = sum(&meta["counts"]["skipped_inputs"]["frames_not_decoded"], "count");
    let accounted = sightings
        + other_gtp
        + n(&pc["pfcp_frames"])
        + n(&pc["ip_fragments"]["frames_held"])
        + n(&pc["not_user_plane_frames"])
        + n(&pc["excluded_by_side_options"]["n3"])
        + n(&pc["excluded_by_side_options"]["n6"])
        + undecoded;
    assert_eq!(accounted, frames, "frames not accounted for: {meta}");
    // Each sighting is one side of a journey, a duplicate or unmatched.
    let journeys = n(&meta["counts"]["offered_packets"]);
    let un = &meta["unmatched"];
    let by_reason = |s: &str| un[s]["by_reason"].as_object().map_or(0, |r| r.values().map(n).sum::<u64>());
    let unmatched: u64 = ["n3", "n6"].iter().map(|s| n(&un[s]["total"])).sum();
    assert_eq!(unmatched, by_reason("n3") + by_reason("n6"), "unmatched totals are their reasons' sums: {un}");
    let dups = n(&pc["duplicate_sightings"]["n3"]) + n(&pc["duplicate_sightings"]["n6"]);
    assert_eq!(2 * journeys + unmatched + dups, sightings, "sightings not accounted for: {pc}");
    assert_eq!(n(&pc["upf_delay"]["ul"]["pairs"]) + n(&pc["upf_delay"]["dl"]["pairs"]), journeys, "{pc}");
    assert_eq!(n(&meta["counts"]["events"]["packet_events"]), 2 * journeys);
    // PFCP: every frame is a message, a duplicate sighting or undecodable; every message a
    // request answered, unanswered or retransmitted, a response with or without its request, or
    // of an unknown type.
    let undecodable = sum(&pf["undecodable"], "count");
    assert_eq!(n(&pc["pfcp_frames"]), n(&pf["messages"]) + n(&pf["duplicate_sightings"]) + undecodable, "{pf}");
    crate::pfcp::check_messages(pf);
    assert_eq!(n(&meta["counts"]["events"]["control_events"]), n(&pf["pairs"]));
}
