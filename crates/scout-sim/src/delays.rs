//! Packets' delays through the model, for a run's summary (`run.json` `summary.directions[].delay`).
//!
//! The simulator keeps every delay and reports exact percentiles, by the analysis's definition
//! (linear interpolation between the two nearest ranks), so that its summary and `scout analyze`
//! agree to the nanosecond. The emulator cannot: it runs on a wall clock for as long as its user
//! likes (an hour of three Gbit/s is a billion packets, 8 GB of delays) and its data path, a
//! real-time thread, must not touch new memory — a first touch of a page costs a page fault, and
//! on a virtual machine whose host took the page back, milliseconds (measured on the benchmark
//! machine: up to 4.8 ms for one fault, with every slot behind it late). So it counts delays in a
//! histogram of fixed size whose buckets are at most 1/512 of their value wide: percentiles
//! within 0.2 %, the mean and the largest exact.

use serde_json::{json, Value};

/// Sub-buckets per power of two: a bucket is at most 1/2^SUB_BITS of its lower bound wide.
const SUB_BITS: u32 = 9;
const SUB: usize = 1 << SUB_BITS;

/// Every delay of a run's direction, or a histogram of them.
pub enum Delays {
    Exact(Vec<i64>),
    Histogram(LogHistogram),
}

impl Delays {
    pub fn push(&mut self, ns: i64) {
        match self {
            Delays::Exact(v) => v.push(ns),
            Delays::Histogram(h) => h.add(ns),
        }
    }

    /// `{p50_ns, p90_ns, p99_ns, max_ns, mean_ns}` (a histogram's with `relative_precision`), or
    /// null without any delay.
    pub fn summary(&mut self) -> Value {
        match self {
            Delays::Exact(v) => percentiles(v),
            Delays::Histogram(h) => h.summary(),
        }
    }
}

/// Exact percentiles of `v` (sorted in place) as everything in Scout computes them
/// (docs/attribution.md): linear interpolation between the order statistics around position
/// `(n - 1) q`, DuckDB's `quantile_cont`, the analysis kernel's and numpy's default. The summary
/// and `scout analyze` agree on a run.
pub fn percentiles(v: &mut [i64]) -> Value {
    if v.is_empty() {
        return Value::Null;
    }
    v.sort_unstable();
    let q = |p: f64| scout_events::quantile::quantile_sorted(v, p);
    let mean = v.iter().map(|x| *x as f64).sum::<f64>() / v.len() as f64;
    json!({"p50_ns": q(0.5), "p90_ns": q(0.9), "p99_ns": q(0.99), "max_ns": v[v.len() - 1], "mean_ns": mean})
}

/// Buckets for every non-negative `i64`: SUB exact ones, then SUB per power of two up to 2^63.
const BUCKETS: usize = (64 - SUB_BITS as usize) * SUB;

/// Counts of non-negative values (ns) in log-linear buckets: exact below 2^SUB_BITS, then
/// SUB buckets per power of two. Its size is fixed (28 160 buckets, 220 KB) whatever it counts.
pub struct LogHistogram {
    counts: Vec<u64>,
    n: u64,
    sum: i128,
    min: i64,
    max: i64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram { counts: vec![0; BUCKETS], n: 0, sum: 0, min: i64::MAX, max: 0 }
    }
}

/// The bucket of `v` (≥ 0).
fn bucket(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // 2^e ≤ v, e ≥ SUB_BITS
    let shift = e - SUB_BITS;
    (shift as usize + 1) * SUB + ((v >> shift) as usize - SUB)
}

/// Bucket `i`'s lower bound and width.
fn bounds(i: usize) -> (u64, u64) {
    if i < SUB {
        return (i as u64, 1);
    }
    let (k, r) = (i / SUB, i % SUB);
    (((SUB + r) as u64) << (k - 1), 1 << (k - 1))
}

impl LogHistogram {
    /// Counts `ns` (a negative value counts as 0).
    pub fn add(&mut self, ns: i64) {
        let v = ns.max(0);
        self.counts[bucket(v as u64)] += 1;
        self.n += 1;
        self.sum += i128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// The value of rank `r` (0-based, in sorted order): its bucket's lower bound plus its share
    /// of the bucket's width, the bucket's values taken as spread evenly across it (exact in a
    /// bucket one wide), within the smallest and largest values counted.
    fn at_rank(&self, r: u64) -> f64 {
        let mut before = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 && before + c > r {
                let (lo, w) = bounds(i);
                let v = if w == 1 { lo as f64 } else { lo as f64 + w as f64 * ((r - before) as f64 + 0.5) / c as f64 };
                return v.clamp(self.min as f64, self.max as f64);
            }
            before += c;
        }
        self.max as f64
    }

    /// As [`percentiles`], from the buckets.
    pub fn summary(&self) -> Value {
        if self.n == 0 {
            return Value::Null;
        }
        let q = |p: f64| scout_events::quantile::quantile_ranked(self.n, p, |r| self.at_rank(r));
        json!({
            "p50_ns": q(0.5), "p90_ns": q(0.9), "p99_ns": q(0.99), "max_ns": self.max,
            "mean_ns": self.sum as f64 / self.n as f64, "relative_precision": 1.0 / SUB as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_line_and_stay_narrow() {
        let mut next = 0u64;
        for i in 0..BUCKETS {
            let (lo, w) = bounds(i);
            assert_eq!(lo, next, "bucket {i} starts where the last ended");
            assert_eq!(bucket(lo), i);
            assert_eq!(bucket(lo + w - 1), i);
            assert!(w == 1 || w as f64 / lo as f64 <= 1.0 / SUB as f64, "bucket {i}: {w} wide at {lo}");
            next = lo + w;
        }
        assert_eq!(next, 1 << 63, "the last bucket ends past i64::MAX");
        assert_eq!(bucket(i64::MAX as u64), BUCKETS - 1);
    }

    #[test]
    fn percentiles_agree_with_the_exact_ones_within_the_precision() {
        // A skewed spread of delays, from µs to seconds, as a deep queue makes them.
        let mut rng = scout_ran::rng::Rng::new(7, "delays");
        let mut exact = Vec::new();
        let mut h = LogHistogram::default();
        for _ in 0..200_000 {
            let v = (1_000.0 * (1.0 + 20.0 * rng.uniform()).powf(4.0)) as i64;
            exact.push(v);
            h.add(v);
        }
        let (e, a) = (percentiles(&mut exact), h.summary());
        for k in ["p50_ns", "p90_ns", "p99_ns", "mean_ns"] {
            let (x, y) = (e[k].as_f64().unwrap(), a[k].as_f64().unwrap());
            assert!((y - x).abs() <= x / SUB as f64, "{k}: exact {x}, histogram {y}");
        }
        assert_eq!(e["max_ns"], a["max_ns"]);
        assert_eq!(a["relative_precision"], json!(1.0 / 512.0));
    }

    #[test]
    fn small_values_are_exact_and_one_value_is_itself() {
        let mut h = LogHistogram::default();
        for v in [3, 1, 2, -5] {
            h.add(v);
        }
        let s = h.summary();
        // 0, 1, 2, 3: the exact definition gives 1.5 at the median.
        assert_eq!(s["p50_ns"].as_f64(), Some(1.5));
        assert_eq!(s["max_ns"], json!(3));
        let mut one = LogHistogram::default();
        one.add(5_000_000);
        assert_eq!(one.summary()["p99_ns"].as_f64(), Some(5_000_000.0));
        assert_eq!(LogHistogram::default().summary(), Value::Null);
    }
}
