//! The PFCP decoder and request/response pairing, on a sequence of messages. The input is
//! records of `[control byte][length: u16 big-endian][message]`: bit 0 of the control byte gives
//! the direction (SMF → UPF or back), bit 1 makes the record a second sighting of the previous
//! IP packet, and bits 2–7 the time since the previous record in 10 ms steps.

use std::net::SocketAddr;

use scout_ingest::pcap::pfcp::Tracker;
use scout_wire::pfcp::session::parse;
use serde_json::{json, Value};

use crate::n;

pub fn run(data: &[u8]) {
    let smf: SocketAddr = "10.0.0.1:8805".parse().expect("address");
    let upf: SocketAddr = "10.0.0.2:8805".parse().expect("address");
    let mut tr = Tracker::default();
    let (mut t, mut rest, mut records, mut undecodable, mut identity) = (0i64, data, 0u64, 0u64, 0u64);
    while rest.len() >= 3 {
        let (ctl, len) = (rest[0], usize::from(u16::from_be_bytes([rest[1], rest[2]])));
        rest = &rest[3..];
        let m = &rest[..len.min(rest.len())];
        rest = &rest[m.len()..];
        t += i64::from(ctl >> 2) * 10_000_000;
        let (src, dst) = if ctl & 1 == 0 { (smf, upf) } else { (upf, smf) };
        if ctl & 2 == 0 {
            identity = records + 1;
        }
        records += 1;
        match parse(m) {
            Ok(msg) => {
                tr.sighting(t, identity, src, dst, &msg);
            }
            Err(cause) => {
                assert!(!cause.is_empty());
                undecodable += 1;
            }
        }
    }
    tr.finish(0);
    assert_eq!(records, tr.messages + tr.duplicate_sightings + undecodable);
    check_messages(&json!({
        "messages": tr.messages,
        "pairs": tr.pairs.len(),
        "unanswered_requests": tr.unanswered,
        "responses_without_request": tr.responses_without_request,
        "retransmissions": tr.retransmissions,
        "unknown_message_types": tr.unknown_types,
    }));
}

/// Every PFCP message is one side of a pair, an unanswered request, a retransmission, a
/// response without its request, or of an unknown type.
pub fn check_messages(pf: &Value) {
    let unanswered = pf["unanswered_requests"].as_array().map_or(0, Vec::len) as u64;
    assert_eq!(
        2 * n(&pf["pairs"])
            + unanswered
            + n(&pf["responses_without_request"])
            + n(&pf["retransmissions"])
            + n(&pf["unknown_message_types"]),
        n(&pf["messages"]),
        "PFCP messages not accounted for: {pf}"
    );
}
