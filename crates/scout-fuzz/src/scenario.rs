//! The scenario loader (YAML, then keys, then ranges), and a short run of what it accepts: the
//! first 20 ms of simulated time, whose packets must each be delivered, dropped or in flight.

use std::ops::ControlFlow;
use std::path::PathBuf;

use scout_events::NullSink;
use scout_sim::scenario::{parse, Loaded};

/// Simulated time run per accepted scenario: enough for the first packets of each flow to cross
/// every layer (a few ms) and for HARQ retransmissions.
const RUN_S: f64 = 0.02;

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (scenario, resolved) = match parse(text, "fuzz.yaml", &[]) {
        Ok(s) => s,
        Err(e) => {
            assert!(e.to_string().contains("fuzz.yaml"), "an error that does not name the file: {e}");
            return;
        }
    };
    // Traces are files beside the scenario: the built-in scenarios' traces are there to be named.
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios"));
    let loaded = Loaded { scenario, dir, file: "fuzz.yaml".into(), resolved };
    let duration = loaded.scenario.duration_s.min(RUN_S);
    let seed = loaded.scenario.seed;
    let Ok(o) = scout_sim::run(&loaded, seed, duration, &mut NullSink, &mut |_| ControlFlow::Continue(())) else {
        return;
    };
    let s = &o.stats;
    let offered: u64 = s.offered_pkts.iter().sum();
    let delivered: u64 = s.delivered_pkts.iter().sum();
    let dropped: u64 = s.drops.values().map(|d| d.0).sum();
    assert_eq!(offered, delivered + dropped + o.in_flight, "packets not accounted for");
}
