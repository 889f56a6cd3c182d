//! The emulator's clock and how late its model actions run.

/// `CLOCK_MONOTONIC` in ns: the emulator's clock, and the tracepoints' (`trace_clock` mono).
pub fn mono_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(2) fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Lateness of the model's actions (when each ran minus when it was due), in µs buckets up to 1 s.
pub struct Lateness {
    counts: Vec<u64>,
    pub over_1_s: u64,
    pub n: u64,
    pub max_ns: i64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness { counts: vec![0; 1_000_000], over_1_s: 0, n: 0, max_ns: 0 }
    }
}

impl Lateness {
    pub fn add(&mut self, ns: i64) {
        let ns = ns.max(0);
        self.n += 1;
        self.max_ns = self.max_ns.max(ns);
        match self.counts.get_mut((ns / 1000) as usize) {
            Some(c) => *c += 1,
            None => self.over_1_s += 1,
        }
    }

    /// The `q` quantile in µs (the upper bound of its bucket).
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((self.n as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(i as u64 + 1);
            }
        }
        Some(1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_bucket_upper_bounds() {
        let mut l = Lateness::default();
        assert_eq!(l.quantile_us(0.5), None);
        for ns in [500, 1500, 2500, 9_999_999_999] {
            l.add(ns);
        }
        assert_eq!((l.quantile_us(0.5), l.quantile_us(0.75), l.quantile_us(1.0)), (Some(2), Some(3), Some(1_000_000)));
        assert_eq!((l.n, l.over_1_s, l.max_ns), (4, 1, 9_999_999_999));
    }
}
