//! One percentile definition for every figure Scout prints: the analysis tables', which is
//! DuckDB's `quantile_cont` (position `(n - 1) q` in the sorted values, interpolated linearly
//! between its neighbours). The ingests' summaries and the analysis kernel use it, so a capture's
//! p99 reads the same in `scout ingest pcap`, `run.json` and `analysis/profiles.parquet`.
//!
//! A percentile q says something about the tail only when there are at least `1 / (1 - q)`
//! samples (p99: 100): [`resolved`] tells; summaries mark the others.

/// The q-quantile (0 ≤ q ≤ 1) of ascending `sorted` values, interpolated; `None` when empty.
pub fn quantile_sorted(sorted: &[i64], q: f64) -> Option<f64> {
    quantile_ranked(sorted.len() as u64, q, |r| sorted[r as usize] as f64)
}

/// The q-quantile of `n` ascending values given the value at each rank (0-based; only the two
/// ranks around `(n - 1) q` are asked for): for values kept in a histogram or found by selection
/// rather than sorted. `None` when `n` is 0.
pub fn quantile_ranked(n: u64, q: f64, at: impl Fn(u64) -> f64) -> Option<f64> {
    if n == 0 {
        return None;
    }
    let pos = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let (f, c) = (pos.floor() as u64, pos.ceil() as u64);
    let lo = at(f);
    Some(if f == c { lo } else { lo + (at(c) - lo) * (pos - pos.floor()) })
}

/// The two ranks (0-based) the q-quantile of `n` values is interpolated between.
pub fn ranks(n: u64, q: f64) -> (u64, u64) {
    let pos = n.saturating_sub(1) as f64 * q.clamp(0.0, 1.0);
    (pos.floor() as u64, pos.ceil() as u64)
}

/// The fewest samples for which the q-quantile is more than the largest sample's neighbour:
/// `ceil(1 / (1 - q))` (p50: 2, p90: 10, p99: 100, p99.9: 1000).
pub fn samples_needed(q: f64) -> u64 {
    if q >= 1.0 {
        return u64::MAX;
    }
    (1.0 / (1.0 - q) - 1e-9).ceil() as u64
}

/// Whether `n` samples resolve the q-quantile (see [`samples_needed`]).
pub fn resolved(n: u64, q: f64) -> bool {
    n >= samples_needed(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_duckdb_quantile_cont() {
        // 1..=10: p50 = 5.5, p90 = 9.1, p99 = 9.91 (DuckDB: SELECT quantile_cont(x, 0.99) ...).
        let v: Vec<i64> = (1..=10).collect();
        assert_eq!(quantile_sorted(&v, 0.5), Some(5.5));
        assert!((quantile_sorted(&v, 0.9).unwrap() - 9.1).abs() < 1e-12);
        assert!((quantile_sorted(&v, 0.99).unwrap() - 9.91).abs() < 1e-12);
        assert_eq!(quantile_sorted(&[7], 0.99), Some(7.0));
        assert_eq!(quantile_sorted(&[], 0.5), None);
    }

    #[test]
    fn a_tail_percentile_needs_its_samples() {
        assert_eq!([0.5, 0.9, 0.99, 0.999].map(samples_needed), [2, 10, 100, 1000]);
        assert!(!resolved(99, 0.99) && resolved(100, 0.99));
    }
}
