//! What every producer's `run.json` says first, and the one shape of a UPF capture's unmatched
//! sightings (docs/schema.md, "run.json").
//!
//! The analysis reads a run by what it [`Covers`] of a packet's path, never by the name of the
//! producer that wrote it: a new producer of a covered part needs no change there.

use serde::Serialize;
use serde_json::Value;

use crate::schema::dict_enum;

/// The producer of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Simulator,
    Emulator,
    Srsran,
    Pcap,
    Probe,
}

impl Source {
    /// What its runs cover of a packet's path.
    pub fn covers(self) -> Covers {
        match self {
            Source::Simulator | Source::Emulator => Covers::EndToEnd,
            Source::Srsran => Covers::Gnb,
            Source::Pcap | Source::Probe => Covers::Upf,
        }
    }
}

/// What part of a packet's path a run's events cover.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Covers {
    /// From ingress to egress (N6 to the UE's application, and back): one-way delay, throughput,
    /// drops and the attribution's closure.
    EndToEnd,
    /// The gNB as its log shows it: each layer's span, HARQ and RLC retransmissions.
    Gnb,
    /// A UPF's two sides, N3 and N6 (and N4): its forwarding delay and the sightings with no twin.
    Upf,
}

/// The tool that wrote the run.
#[derive(Clone, Debug, Serialize)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

impl Default for Tool {
    fn default() -> Self {
        Tool { name: "scout", version: env!("CARGO_PKG_VERSION") }
    }
}

/// The fields every run's `run.json` starts with; a producer adds its own with [`Header::json`].
#[derive(Clone, Debug, Serialize)]
pub struct Header {
    pub source: Source,
    pub covers: Covers,
    pub tool: Tool,
    /// The wall clock (Unix seconds) at the run's time 0.
    pub wall_clock_epoch_s: f64,
    /// The clocks the run's timestamps come from (`name`, `offset_ns`, `note`).
    pub clock_domains: Vec<Value>,
    /// The slices, in the order of the events' `slice` dictionary (each at least a `name`).
    pub slices: Vec<Value>,
}

impl Header {
    pub fn new(source: Source, wall_clock_epoch_s: f64, clock_domains: Vec<Value>, slices: Vec<Value>) -> Self {
        Header { source, covers: source.covers(), tool: Tool::default(), wall_clock_epoch_s, clock_domains, slices }
    }

    /// The header with the producer's own fields (`more`, an object) beside it; a field of
    /// `more` never replaces one of the header's.
    pub fn json(&self, more: Value) -> Value {
        let mut v = serde_json::to_value(self).expect("a header serializes");
        let fields = v.as_object_mut().expect("a header is an object");
        if let Value::Object(more) = more {
            for (k, x) in more {
                assert!(!fields.contains_key(&k), "run.json header field {k} given twice");
                fields.insert(k, x);
            }
        }
        v
    }
}

dict_enum! {
    /// Why a UPF capture's sighting found no twin on the other side (its name in `by_reason`).
    NoTwin {
        /// Its twin did not come within the pairing window: a UPF drop candidate, or the other
        /// side was not captured.
        WithinWindow = "no_twin_within_window",
        /// The capture (the file, or the live probe) ended while it waited, within the window.
        CaptureEnded = "capture_ended",
        /// The probe's pending table had no room for it.
        TableFull = "table_full",
        /// The probe's table set was busy (another CPU held it) when it came.
        SetBusy = "set_busy",
    }
}

/// A UPF capture's sightings with no twin: per side (`n3`, `n6`), the total and the count by
/// reason of each reason the producer can see (`run.json` `unmatched`, written by the pcap
/// ingest and the live probe alike).
#[derive(Clone, Debug, Default)]
pub struct Unmatched {
    sides: [Vec<(NoTwin, u64)>; 2],
}

impl Unmatched {
    /// Counts of the `reasons` this producer can see, all zero.
    pub fn new(reasons: &[NoTwin]) -> Self {
        let side = || reasons.iter().map(|&r| (r, 0)).collect();
        Unmatched { sides: [side(), side()] }
    }

    /// `n` sightings on N3 (`n3`) or N6 with no twin, for `why`.
    pub fn add(&mut self, n3: bool, why: NoTwin, n: u64) {
        let side = &mut self.sides[usize::from(!n3)];
        match side.iter_mut().find(|(r, _)| *r == why) {
            Some((_, c)) => *c += n,
            None => side.push((why, n)),
        }
    }

    /// All of one side's (`n3`, or N6).
    pub fn total(&self, n3: bool) -> u64 {
        self.sides[usize::from(!n3)].iter().map(|(_, n)| n).sum()
    }

    /// `{"n3": {"total": n, "by_reason": {reason: n}}, "n6": …}`.
    pub fn json(&self) -> Value {
        let side = |n3: bool| {
            let by: serde_json::Map<String, Value> =
                self.sides[usize::from(!n3)].iter().map(|(r, n)| (r.as_str().to_string(), Value::from(*n))).collect();
            serde_json::json!({"total": self.total(n3), "by_reason": by})
        };
        serde_json::json!({"n3": side(true), "n6": side(false)})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_says_what_a_run_covers_and_keeps_the_producers_fields() {
        let h = Header::new(Source::Probe, 1.5, vec![serde_json::json!({"name": "bpf_ktime"})], vec![]);
        let v = h.json(serde_json::json!({"upfs": []}));
        assert_eq!((v["source"].as_str(), v["covers"].as_str()), (Some("probe"), Some("upf")));
        assert_eq!(v["tool"]["name"], "scout");
        assert!(v["upfs"].is_array());
        assert_eq!(Source::Emulator.covers(), Covers::EndToEnd);
        assert_eq!(serde_json::to_value(Source::Srsran.covers()).unwrap(), "gnb");
    }

    #[test]
    #[should_panic(expected = "given twice")]
    fn a_producer_cannot_replace_a_header_field() {
        Header::new(Source::Pcap, 0.0, vec![], vec![]).json(serde_json::json!({"source": "other"}));
    }

    #[test]
    fn unmatched_counts_every_reason_a_producer_sees_even_at_zero() {
        let mut u = Unmatched::new(&[NoTwin::WithinWindow, NoTwin::CaptureEnded]);
        u.add(true, NoTwin::WithinWindow, 3);
        u.add(true, NoTwin::CaptureEnded, 1);
        u.add(false, NoTwin::TableFull, 2);
        let v = u.json();
        assert_eq!(v["n3"]["total"], 4);
        assert_eq!(v["n3"]["by_reason"]["capture_ended"], 1);
        assert_eq!(v["n6"]["by_reason"]["no_twin_within_window"], 0);
        assert_eq!((v["n6"]["total"].as_u64(), v["n6"]["by_reason"]["table_full"].as_u64()), (Some(2), Some(2)));
    }
}
