//! Access Network Bitrate Recommendation (ANBR): the gNB's recommended bit rate for a UE's DL
//! logical channel, sent in the Recommended bit rate MAC CE (TS 38.321 §5.18.10, §6.1.3.20; LCID
//! 47 on the DL-SCH), which the UE hands to its application (TS 26.114 §10.7: the application
//! subtracts its own header overheads).
//!
//! How a gNB estimates the rate is left to it. This one: the bytes of the bearer's RLC SDUs (PDCP
//! PDUs) the UE acknowledged over a fixed window — the seed 003's estimate (§4.1.4) — plus the
//! bytes the PRBs left unused in the window's DL slots would have carried for it at its MCS
//! (shared equally among the UEs that get ANBR), as a rate, quantised to the MAC CE's bit-rate
//! table (TS 36.321 Table 6.1.3.13-1, which NR reuses) times the logical channel's
//! `bitRateMultiplier-r16` (TS 38.331 LogicalChannelConfig: x40, x70, x100, x200; x1 without it).
//! One recommendation per window.
//!
//! The table is coarse where video lives (x40: 24, 28, 32 Mbit/s around 30), so how the estimate
//! is rounded decides whether the sender can use the capacity at all. `Rounding::Down` sends the
//! highest entry not above the estimate: a sender that follows it never fills the link (up to a
//! step, ~13 %, below it). `Rounding::Dither` (the default) carries each window's rounding error
//! into the next (error diffusion): every recommendation is within one table step of its window's
//! estimate and their mean equals the estimates' mean, so a sender that follows them runs at the
//! measured rate on average — the seed's estimator, which had no table.
//!
//! The UE may ask (TS 38.321 §5.18.10, Recommended bit rate query MAC CE, LCID 53 on the UL-SCH)
//! when its application wants a rate, at most once per `bitRateQueryProhibitTimer` (TS 38.331
//! LogicalChannelConfig: 0, 0.4, 0.8, 1.6, 3, 6, 12 or 30 s). The query rides in the UE's next
//! PUSCH (it does not trigger a scheduling request, §5.4.4); the gNB answers at once with the
//! rate measured since its last recommendation, and the window restarts there.

use serde::Deserialize;

/// Bit rates of the table in kbit/s by index; index 0 is "no recommendation" (not sent here), 57 to
/// 63 are reserved.
pub const BIT_RATE_KBPS: [u32; 57] = [
    0, 0, 9, 11, 13, 17, 21, 25, 29, 32, 36, 40, 48, 56, 72, 88, 104, 120, 140, 160, 180, 200, 220, 240, 260, 280, 300,
    350, 400, 450, 500, 600, 700, 800, 900, 1000, 1100, 1200, 1300, 1400, 1500, 1750, 2000, 2250, 2500, 2750, 3000,
    3500, 4000, 4500, 5000, 5500, 6000, 6500, 7000, 7500, 8000,
];

/// The values `bitRateMultiplier-r16` may take (1: the channel has none).
pub const MULTIPLIERS: [u32; 5] = [1, 40, 70, 100, 200];

/// The values `bitRateQueryProhibitTimer` may take, ms (TS 38.331: s0 … s30).
pub const QUERY_PROHIBIT_MS: [u32; 8] = [0, 400, 800, 1600, 3000, 6000, 12000, 30000];

/// How the estimate is mapped onto the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rounding {
    /// Each window's rounding error carried into the next: the recommendations average the
    /// estimate.
    #[default]
    Dither,
    /// The highest entry not above the estimate.
    Down,
}

/// The table's index and bit rate (bit/s) for a measured `bps` with `multiplier`: the highest
/// entry not above it (index 1, 0 kbit/s, below the lowest).
pub fn quantise(bps: f64, multiplier: u32) -> (u8, u64) {
    let i = (1..BIT_RATE_KBPS.len())
        .rev()
        .find(|&i| f64::from(BIT_RATE_KBPS[i]) * 1000.0 * f64::from(multiplier) <= bps)
        .unwrap_or(1);
    (i as u8, u64::from(BIT_RATE_KBPS[i]) * 1000 * u64::from(multiplier))
}

/// A recommendation the gNB sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recommendation {
    /// When the window closed (or the query was answered).
    pub t: i64,
    pub ue: u32,
    /// The DRB's index in the UE's list.
    pub drb: usize,
    pub index: u8,
    pub multiplier: u32,
    /// The recommended bit rate, bit/s (the table's value times the multiplier).
    pub bit_rate_bps: u64,
    /// An answer to the UE's query rather than a window's end.
    pub answer: bool,
}

/// One logical channel's ANBR configuration (`qos[].anbr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnbrParams {
    pub window_ns: i64,
    pub multiplier: u32,
    pub rounding: Rounding,
    /// `bitRateQueryProhibitTimer`, ns.
    pub query_prohibit_ns: i64,
}

/// The estimator of one DL logical channel.
#[derive(Clone, Debug)]
pub struct AnbrEstimator {
    window_ns: i64,
    multiplier: u32,
    rounding: Rounding,
    /// When the current window opened, and the bytes acknowledged in it.
    start: i64,
    bytes: u64,
    /// Dither's carried rounding error, bit/s.
    carry: f64,
}

impl AnbrEstimator {
    pub fn new(window_ns: i64, multiplier: u32, rounding: Rounding) -> AnbrEstimator {
        AnbrEstimator { window_ns, multiplier, rounding, start: 0, bytes: 0, carry: 0.0 }
    }

    /// The UE acknowledged `bytes` of the channel's RLC SDUs.
    pub fn delivered(&mut self, bytes: u32) {
        self.bytes += u64::from(bytes);
    }

    /// At `now`: when a window has closed, its rate quantised — (index, bit/s) — and the next one
    /// opens where it ended.
    pub fn poll(&mut self, now: i64) -> Option<(u8, u64)> {
        if now < self.start + self.window_ns {
            return None;
        }
        let bps = self.bytes as f64 * 8.0 * 1e9 / self.window_ns as f64;
        self.start += self.window_ns * ((now - self.start) / self.window_ns);
        Some(self.recommend(bps))
    }

    /// The UE asked at `now`: the rate since the window opened, quantised; the window restarts
    /// at `now`. `None` when no time has passed since it opened.
    pub fn answer(&mut self, now: i64) -> Option<(u8, u64)> {
        if now <= self.start {
            return None;
        }
        let bps = self.bytes as f64 * 8.0 * 1e9 / (now - self.start) as f64;
        self.start = now;
        Some(self.recommend(bps))
    }

    fn recommend(&mut self, bps: f64) -> (u8, u64) {
        self.bytes = 0;
        match self.rounding {
            Rounding::Down => quantise(bps, self.multiplier),
            Rounding::Dither => {
                let (i, q) = quantise(bps + self.carry, self.multiplier);
                // Below the table's lowest entry or above its highest, the error is not carried
                // (it could never be paid back).
                let top = u64::from(BIT_RATE_KBPS[BIT_RATE_KBPS.len() - 1]) * 1000 * u64::from(self.multiplier);
                self.carry = if q == 0 || q >= top { 0.0 } else { bps + self.carry - q as f64 };
                (i, q)
            }
        }
    }

    pub fn multiplier(&self) -> u32 {
        self.multiplier
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_down_to_the_table_times_the_multiplier() {
        assert_eq!(quantise(0.0, 1), (1, 0));
        assert_eq!(quantise(8_999.0, 1), (1, 0));
        assert_eq!(quantise(9_000.0, 1), (2, 9_000));
        assert_eq!(quantise(1_349_000.0, 1), (38, 1_300_000));
        assert_eq!(quantise(1e9, 1), (56, 8_000_000), "the table's top");
        // 50 Mbit/s with x40: 1250 kbit/s × 40 lies between 1200 and 1300.
        assert_eq!(quantise(50e6, 40), (37, 48_000_000));
        assert_eq!(quantise(50e6, 200), (23, 48_000_000), "250 kbit/s x 200: 240");
    }

    #[test]
    fn one_recommendation_per_window_of_what_was_acknowledged() {
        let ms = 1_000_000;
        let mut e = AnbrEstimator::new(40 * ms, 40, Rounding::Down);
        // 250 kB in 40 ms: 50 Mbit/s.
        for _ in 0..250 {
            e.delivered(1000);
        }
        assert_eq!(e.poll(39 * ms), None);
        assert_eq!(e.poll(40 * ms), Some((37, 48_000_000)));
        assert_eq!(e.poll(41 * ms), None, "the next window runs to 80 ms");
        assert_eq!(e.poll(80 * ms), Some((1, 0)), "nothing acknowledged");
    }

    #[test]
    fn dithered_recommendations_average_the_estimate_each_within_a_step() {
        let ms = 1_000_000;
        // 30 Mbit/s with x40 lies between 28 (700 kbit/s) and 32 (800): rounding down would say 28
        // every time; dithering says 28 or 32, averaging 30.
        let mut e = AnbrEstimator::new(40 * ms, 40, Rounding::Dither);
        let mut sum = 0u64;
        for w in 1..=100 {
            e.delivered(150_000); // 150 kB in 40 ms: 30 Mbit/s
            let (_, bps) = e.poll(w * 40 * ms).expect("a window closed");
            assert!(bps == 28_000_000 || bps == 32_000_000, "window {w}: {bps}");
            sum += bps;
        }
        let mean = sum as f64 / 100.0;
        assert!((mean - 30e6).abs() < 0.05e6, "mean {mean}");
    }

    #[test]
    fn a_query_is_answered_with_the_rate_since_the_window_opened() {
        let ms = 1_000_000;
        let mut e = AnbrEstimator::new(200 * ms, 40, Rounding::Down);
        e.delivered(100_000); // 100 kB in 20 ms: 40 Mbit/s
        assert_eq!(e.answer(20 * ms), Some((35, 40_000_000)));
        assert_eq!(e.poll(200 * ms), None, "the window restarted at 20 ms");
        assert_eq!(e.poll(220 * ms), Some((1, 0)));
        assert_eq!(e.answer(220 * ms), None, "no time since the window opened");
    }
}
