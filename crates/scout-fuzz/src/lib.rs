//! Scout's fuzz targets: each reader and loader a user can reach from the command line, fed
//! arbitrary bytes. A target panics — and the fuzzer reports a crash — when the code under it
//! panics, or when a success's counts do not add up (a silent loss: every frame, line and
//! message read must be accounted for somewhere in `run.json`).
//!
//! The targets are plain functions, engine-free: `fuzz/` wraps each in libFuzzer
//! (`bench/fuzz.sh TARGET MINUTES`), and `tests/regressions.rs` runs every seed and every input
//! that ever crashed one (`fuzz/seeds/`, `fuzz/regressions/`) in the ordinary test suite.
//! `docs/robustness.md` describes the limits they hold the readers to.

pub mod pcap;
pub mod pfcp;
pub mod scenario;
pub mod srsran;

/// A fuzz target: arbitrary bytes in, a panic on any failure.
pub type Target = fn(&[u8]);

/// Every target, by the name `bench/fuzz.sh` and the corpus directories use.
pub const TARGETS: &[(&str, Target)] =
    &[("pcap", pcap::run), ("pfcp", pfcp::run), ("srsran", srsran::run), ("scenario", scenario::run)];

/// A `run.json` count (0 when absent).
pub(crate) fn n(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The sum of `key` over an array of objects.
pub(crate) fn sum(arr: &serde_json::Value, key: &str) -> u64 {
    arr.as_array().map_or(0, |a| a.iter().map(|x| n(&x[key])).sum())
}
