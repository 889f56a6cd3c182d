//! Traffic generators. Each yields (send time, bytes) pairs from its own seeded stream.

use scout_ran::rng::Rng;

use crate::scenario::Period;

const S: f64 = 1e9;

fn period_ns(p: &Period, rng: &mut Rng) -> i64 {
    let s = match p {
        Period::Constant { mean_s } => *mean_s,
        Period::Exponential { mean_s } => rng.exponential(*mean_s),
        Period::Pareto { mean_s, shape } => rng.pareto_mean(*mean_s, *shape),
        Period::Lognormal { mean_s, sigma } => rng.lognormal_mean(*mean_s, *sigma),
    };
    (s * S).max(1.0) as i64
}

/// A truncated Gaussian draw (rejection, falling back to clamping after 16 tries).
pub(crate) fn truncated_normal(rng: &mut Rng, mean: f64, std: f64, lo: f64, hi: f64) -> f64 {
    for _ in 0..16 {
        let x = mean + std * rng.normal();
        if (lo..=hi).contains(&x) {
            return x;
        }
    }
    mean.clamp(lo, hi)
}

pub enum Gen {
    Cbr {
        interval_ns: f64,
        size: u32,
        n: u64,
    },
    OnOff {
        interval_ns: f64,
        size: u32,
        on: Period,
        off: Period,
        on_until: i64,
        next: i64,
    },
    Video {
        frame_ns: f64,
        mean_frame: f64,
        std_frac: f64,
        jitter_std_ns: f64,
        pkt: u32,
        frame: u64,
        burst: Vec<(i64, u32)>,
    },
    Ping {
        interval_ns: f64,
        size: u32,
        n: u64,
    },
    /// FTP model 3 (TR 36.889 §A.2.1.3): files of `file` bytes arriving as a Poisson process
    /// (exponential gaps of mean `mean_gap_s`), each queued whole at its arrival in `pkt`-byte
    /// packets.
    Ftp3 {
        mean_gap_s: f64,
        file: u32,
        pkt: u32,
        /// The next file's arrival (drawn at the first call).
        next: Option<i64>,
        burst: Vec<(i64, u32)>,
    },
    /// A sender whose rate follows the network's feedback (`crate::adaptive`).
    Adaptive(Box<crate::adaptive::Adaptive>),
}

/// A generator with its time window and RNG.
pub struct Source {
    pub gen: Gen,
    pub start_ns: i64,
    pub stop_ns: i64,
    rng: Rng,
}

impl Source {
    pub fn new(gen: Gen, start_ns: i64, stop_ns: i64, rng: Rng) -> Self {
        let mut s = Source { gen, start_ns, stop_ns, rng };
        // Independent CBR sources are not phase-locked: each starts at a seeded random offset within
        // its first interval, so several flows (e.g. `ue: all`) do not arrive as synchronised bursts.
        if let Gen::Cbr { interval_ns, .. } = &s.gen {
            s.start_ns += (s.rng.uniform() * *interval_ns) as i64;
        }
        if let Gen::OnOff { on, on_until, next, .. } = &mut s.gen {
            *next = start_ns;
            *on_until = start_ns + period_ns(on, &mut s.rng);
        }
        s
    }

    /// The next packet (time, bytes), or `None` when the source is finished.
    pub fn next_packet(&mut self) -> Option<(i64, u32)> {
        let start = self.start_ns;
        let t = match &mut self.gen {
            Gen::Cbr { interval_ns, size, n } | Gen::Ping { interval_ns, size, n } => {
                let t = start + (*n as f64 * *interval_ns) as i64;
                *n += 1;
                (t, *size)
            }
            Gen::OnOff { interval_ns, size, on, off, on_until, next } => {
                if *next >= *on_until {
                    let off_ns = period_ns(off, &mut self.rng);
                    *next = *on_until + off_ns;
                    *on_until = *next + period_ns(on, &mut self.rng);
                }
                let t = *next;
                *next += *interval_ns as i64;
                (t, *size)
            }
            Gen::Adaptive(a) => a.next_packet(&mut self.rng),
            Gen::Ftp3 { mean_gap_s, file, pkt, next, burst } => {
                if burst.is_empty() {
                    let t = match *next {
                        Some(t) => t,
                        None => start + (self.rng.exponential(*mean_gap_s) * S) as i64,
                    };
                    *next = Some(t + (self.rng.exponential(*mean_gap_s) * S).max(1.0) as i64);
                    let mut left = *file;
                    while left > 0 {
                        burst.push((t, left.min(*pkt).max(20)));
                        left = left.saturating_sub(*pkt);
                    }
                    burst.reverse();
                }
                burst.pop().expect("a file has at least one packet")
            }
            Gen::Video { frame_ns, mean_frame, std_frac, jitter_std_ns, pkt, frame, burst } => {
                if burst.is_empty() {
                    let nominal = start + (*frame as f64 * *frame_ns) as i64;
                    *frame += 1;
                    let j = truncated_normal(
                        &mut self.rng,
                        0.0,
                        *jitter_std_ns,
                        -2.0 * *jitter_std_ns,
                        2.0 * *jitter_std_ns,
                    );
                    let t = (nominal + j as i64).max(start);
                    let size = truncated_normal(
                        &mut self.rng,
                        *mean_frame,
                        *std_frac * *mean_frame,
                        0.5 * *mean_frame,
                        1.5 * *mean_frame,
                    );
                    let mut left = size.round().max(1.0) as u32;
                    while left > 0 {
                        let b = left.min(*pkt).max(20);
                        burst.push((t, b));
                        left = left.saturating_sub(*pkt);
                    }
                    burst.reverse();
                }
                burst.pop().expect("a frame has at least one packet")
            }
        };
        (t.0 < self.stop_ns).then_some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut s: Source) -> Vec<(i64, u32)> {
        std::iter::from_fn(|| s.next_packet()).collect()
    }

    #[test]
    fn cbr_rate_is_exact() {
        // 12 Mbit/s of 1500-byte packets = 1000 packets/s.
        let v = drain(Source::new(Gen::Cbr { interval_ns: 1e6, size: 1500, n: 0 }, 0, 1_000_000_000, Rng::new(1, "t")));
        assert_eq!(v.len(), 1000);
        assert_eq!(v[1].0 - v[0].0, 1_000_000);
    }

    #[test]
    fn video_matches_tr_38_838_rate() {
        // 30 Mbit/s at 60 fps: mean frame 62 500 bytes; over 10 s the rate is within 2 %.
        let g = Gen::Video {
            frame_ns: 1e9 / 60.0,
            mean_frame: 62_500.0,
            std_frac: 0.105,
            jitter_std_ns: 2e6,
            pkt: 1400,
            frame: 0,
            burst: vec![],
        };
        let v = drain(Source::new(g, 0, 10_000_000_000, Rng::new(2, "v")));
        let bits: f64 = v.iter().map(|(_, b)| f64::from(*b) * 8.0).sum();
        assert!((bits / 10.0 / 30e6 - 1.0).abs() < 0.02, "{}", bits / 10.0);
        assert!(v.windows(2).all(|w| w[1].0 >= w[0].0 - 8_000_000));
    }

    /// FTP model 3: Poisson file arrivals (exponential gaps), each file queued whole: over 500 s
    /// at 2 files/s the offered bytes are within 10 % of 2 × 0.5 MB per second, and every file's
    /// packets share its arrival time.
    #[test]
    fn ftp3_offers_its_load_in_whole_files() {
        let g = Gen::Ftp3 { mean_gap_s: 0.5, file: 500_000, pkt: 1400, next: None, burst: vec![] };
        let v = drain(Source::new(g, 0, 500_000_000_000, Rng::new(4, "f")));
        let bytes: u64 = v.iter().map(|(_, b)| u64::from(*b)).sum();
        assert!((bytes as f64 / 500.0 / 1e6 - 1.0).abs() < 0.1, "{}", bytes as f64 / 500.0);
        let files: std::collections::BTreeMap<i64, u64> = v.iter().fold(Default::default(), |mut m, (t, b)| {
            *m.entry(*t).or_default() += u64::from(*b);
            m
        });
        assert!(files.values().all(|&b| b == 500_000), "each arrival is one whole file");
        // Exponential gaps: their coefficient of variation is about 1.
        let t: Vec<f64> = files.keys().map(|&t| t as f64).collect();
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let cv = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.15, "{cv}");
    }

    #[test]
    fn on_off_duty_cycle() {
        let g = Gen::OnOff {
            interval_ns: 1e6,
            size: 1000,
            on: Period::Exponential { mean_s: 0.5 },
            off: Period::Exponential { mean_s: 0.5 },
            on_until: 0,
            next: 0,
        };
        let v = drain(Source::new(g, 0, 200_000_000_000, Rng::new(3, "o")));
        let frac = v.len() as f64 / 200_000.0;
        assert!((frac - 0.5).abs() < 0.05, "{frac}");
    }
}
