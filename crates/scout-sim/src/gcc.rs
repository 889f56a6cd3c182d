//! Google Congestion Control's delay-based estimator and rate controller, as WebRTC's send side
//! runs them (Carlucci et al., "Analysis and Design of the Google Congestion Control for
//! WebRTC", MMSys 2016; draft-ietf-rmcat-gcc-02 §5; WebRTC's trendline estimator, which replaced
//! the draft's Kalman filter): the seed's third delay-sensitive application (seed 004 §5.3).
//!
//! - **Arrival groups**: packets sent within 5 ms of a group's first belong to it (§5.2). Between
//!   two consecutive groups the delay variation is d = (arrival difference) − (send difference)
//!   of their last packets.
//! - **Trendline**: the accumulated d, smoothed (α = 0.9), against arrival time over the last 20
//!   groups; its least-squares slope is the delay trend. The detector compares
//!   min(groups seen, 60) × slope × 4 (WebRTC's threshold gain) with an adaptive threshold γ:
//!   above it for more than 10 ms with the trend not falling — overuse; below −γ — underuse;
//!   else normal. γ (from 12.5) follows |m| at k_u = 0.0087 per ms when |m| > γ, else k_d =
//!   0.039, within 6–600 (WebRTC's values for the trendline; the draft's, for its Kalman
//!   filter's m, are 0.01 and 0.00018, §5.4).
//! - **Rate**: overuse — decrease to 0.85 × the rate received over the last 500 ms (once per
//!   response time); underuse — hold; normal — increase, by 8 % a second far from the last
//!   decrease's rate, or by about a packet per response time (RTT + 100 ms) near it; never above
//!   1.5 × the received rate (§5.5).
//!
//! Not modelled: GCC's loss-based controller (the paths Scout studies with it do not lose), probing,
//! the application's encoder limits. Sans-IO: the caller hands in each packet's feedback (its send
//! and arrival times) in the order it arrives.

use std::collections::VecDeque;

const MS: f64 = 1e6;
/// Packets sent within this long of a group's first belong to it.
const BURST_NS: i64 = 5_000_000;
/// Trendline window (groups), smoothing and gain.
const WINDOW: usize = 20;
const SMOOTHING: f64 = 0.9;
const GAIN: f64 = 4.0;
/// Overuse detector: the time above the threshold that makes an overuse, ms; the threshold's
/// gains per ms (up, down) and bounds.
const OVERUSE_MS: f64 = 10.0;
const K_UP: f64 = 0.0087;
const K_DOWN: f64 = 0.039;
const THRESHOLD_MIN: f64 = 6.0;
const THRESHOLD_MAX: f64 = 600.0;
/// Rate control: multiplicative decrease, increase per second, received-rate window.
const BETA: f64 = 0.85;
const ETA: f64 = 1.08;
const RECEIVED_WINDOW_NS: i64 = 500_000_000;

/// What the detector says of the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Normal,
    Overuse,
    Underuse,
}

#[derive(Clone, Copy, Debug)]
struct Group {
    first_send: i64,
    last_send: i64,
    last_arrival: i64,
}

#[derive(Clone, Debug)]
pub struct Gcc {
    group: Option<Group>,
    prev: Option<Group>,
    first_arrival: Option<i64>,
    accumulated_ms: f64,
    smoothed_ms: f64,
    history: VecDeque<(f64, f64)>,
    groups: u32,
    pub threshold: f64,
    last_threshold_update: Option<i64>,
    /// Time spent above the threshold (ms), None when not above.
    over_ms: Option<f64>,
    over_count: u32,
    prev_trend: f64,
    pub signal: Signal,
    /// The latest trend as the detector compares it (m).
    pub modified_trend: f64,
    pub rate_bps: f64,
    last_change: Option<i64>,
    last_decrease: Option<i64>,
    /// The received rate at decreases: its running mean and variance (normalised), bit/s.
    max_mean_bps: Option<f64>,
    max_var: f64,
    received: VecDeque<(i64, u32)>,
    received_bytes: u64,
    first_received: Option<i64>,
    rtt_ns: f64,
    max_bps: f64,
    /// Overuse signals seen (each a decrease unless one came within the response time).
    pub overuses: u32,
}

impl Gcc {
    pub fn new(start_bps: f64, max_bps: f64) -> Gcc {
        Gcc {
            group: None,
            prev: None,
            first_arrival: None,
            accumulated_ms: 0.0,
            smoothed_ms: 0.0,
            history: VecDeque::with_capacity(WINDOW + 1),
            groups: 0,
            threshold: 12.5,
            last_threshold_update: None,
            over_ms: None,
            over_count: 0,
            prev_trend: 0.0,
            signal: Signal::Normal,
            modified_trend: 0.0,
            rate_bps: start_bps,
            last_change: None,
            last_decrease: None,
            max_mean_bps: None,
            max_var: 0.4,
            received: VecDeque::new(),
            received_bytes: 0,
            first_received: None,
            rtt_ns: 0.0,
            max_bps,
            overuses: 0,
        }
    }

    /// The rate received over the last 500 ms, bit/s (None until packets have arrived for that
    /// long: a rate over less would cap the sender at what its first packets made).
    pub fn received_bps(&self) -> Option<f64> {
        let last = self.received.back()?.0;
        (last - self.first_received? >= RECEIVED_WINDOW_NS)
            .then(|| self.received_bytes as f64 * 8.0 * 1e9 / RECEIVED_WINDOW_NS as f64)
    }

    /// Feedback reached the sender at `now`: a packet of `bytes` sent at `sent` arrived at
    /// `arrival` (the receiver's clock: only differences matter); `rtt_ns` the round trip.
    pub fn on_feedback(&mut self, now: i64, sent: i64, arrival: i64, bytes: u32, rtt_ns: i64) {
        self.rtt_ns =
            if self.rtt_ns == 0.0 { rtt_ns as f64 } else { self.rtt_ns + (rtt_ns as f64 - self.rtt_ns) / 8.0 };
        self.first_received.get_or_insert(arrival);
        self.received.push_back((arrival, bytes));
        self.received_bytes += u64::from(bytes);
        while self.received.front().is_some_and(|&(t, _)| t < arrival - RECEIVED_WINDOW_NS) {
            let (_, b) = self.received.pop_front().expect("non-empty");
            self.received_bytes -= u64::from(b);
        }
        match &mut self.group {
            Some(g) if sent - g.first_send <= BURST_NS => {
                g.last_send = g.last_send.max(sent);
                g.last_arrival = g.last_arrival.max(arrival);
            }
            _ => {
                let done = self.group.replace(Group { first_send: sent, last_send: sent, last_arrival: arrival });
                if let Some(done) = done {
                    if let Some(prev) = self.prev.replace(done) {
                        let send_delta = (done.last_send - prev.last_send) as f64 / MS;
                        let arrival_delta = (done.last_arrival - prev.last_arrival) as f64 / MS;
                        self.trendline(done.last_arrival, arrival_delta - send_delta, send_delta, now);
                    }
                }
            }
        }
        self.control(now);
    }

    fn trendline(&mut self, arrival: i64, delta_ms: f64, send_delta_ms: f64, now: i64) {
        self.groups = (self.groups + 1).min(1000);
        let first = *self.first_arrival.get_or_insert(arrival);
        self.accumulated_ms += delta_ms;
        self.smoothed_ms = SMOOTHING * self.smoothed_ms + (1.0 - SMOOTHING) * self.accumulated_ms;
        self.history.push_back(((arrival - first) as f64 / MS, self.smoothed_ms));
        if self.history.len() > WINDOW {
            self.history.pop_front();
        }
        if self.history.len() < WINDOW {
            return;
        }
        let n = self.history.len() as f64;
        let (mx, my) = self.history.iter().fold((0.0, 0.0), |(a, b), &(x, y)| (a + x / n, b + y / n));
        let (num, den) =
            self.history.iter().fold((0.0, 0.0), |(a, b), &(x, y)| (a + (x - mx) * (y - my), b + (x - mx) * (x - mx)));
        let trend = if den > 0.0 { num / den } else { 0.0 };
        self.detect(trend, send_delta_ms, now);
    }

    fn detect(&mut self, trend: f64, send_delta_ms: f64, now: i64) {
        let m = f64::from(self.groups.min(60)) * trend * GAIN;
        self.modified_trend = m;
        if m > self.threshold {
            let over = self.over_ms.map_or(send_delta_ms / 2.0, |o| o + send_delta_ms);
            self.over_ms = Some(over);
            self.over_count += 1;
            if over > OVERUSE_MS && self.over_count > 1 && trend >= self.prev_trend {
                self.over_ms = Some(0.0);
                self.over_count = 0;
                self.signal = Signal::Overuse;
            }
        } else if m < -self.threshold {
            self.over_ms = None;
            self.over_count = 0;
            self.signal = Signal::Underuse;
        } else {
            self.over_ms = None;
            self.over_count = 0;
            self.signal = Signal::Normal;
        }
        self.prev_trend = trend;
        // The threshold follows |m|, but not an outlier far above it (§5.4).
        let last = self.last_threshold_update.replace(now).unwrap_or(now);
        if m.abs() > self.threshold + 15.0 {
            return;
        }
        let k = if m.abs() < self.threshold { K_DOWN } else { K_UP };
        let dt_ms = ((now - last) as f64 / MS).min(100.0);
        self.threshold = (self.threshold + k * (m.abs() - self.threshold) * dt_ms).clamp(THRESHOLD_MIN, THRESHOLD_MAX);
    }

    /// The response time: a round trip and 100 ms (§5.5).
    fn response_ns(&self) -> f64 {
        self.rtt_ns + 100.0 * MS
    }

    fn control(&mut self, now: i64) {
        let last = self.last_change.replace(now).unwrap_or(now);
        let dt_s = ((now - last) as f64 / 1e9).min(1.0);
        let received = self.received_bps();
        match self.signal {
            Signal::Overuse => {
                let may = self.last_decrease.is_none_or(|t| (now - t) as f64 >= self.response_ns());
                if may {
                    // Before the received rate is known, the rate sent stands for it (WebRTC's
                    // AIMD controller does the same).
                    let r = received.unwrap_or(self.rate_bps);
                    self.overuses += 1;
                    self.last_decrease = Some(now);
                    self.rate_bps = (BETA * r).min(self.rate_bps);
                    // The received rate at decreases: where the path's capacity lies.
                    let mean = self.max_mean_bps.map_or(r, |m| 0.95 * m + 0.05 * r);
                    let norm = mean.max(1.0);
                    self.max_var = (0.95 * self.max_var + 0.05 * (mean - r).powi(2) / norm).clamp(0.4, 2.5);
                    self.max_mean_bps = Some(mean);
                }
            }
            Signal::Underuse => {}
            Signal::Normal => {
                let near = match (self.max_mean_bps, received) {
                    (Some(m), Some(r)) => {
                        let sd = (self.max_var * m).sqrt();
                        if r > m + 3.0 * sd {
                            // Far above the last decreases: the capacity moved; forget it.
                            self.max_mean_bps = None;
                            false
                        } else {
                            r >= m - 3.0 * sd
                        }
                    }
                    _ => false,
                };
                if near {
                    // About a packet per response time (of ~1200-byte packets, at least 4 kbit/s).
                    let per_s = (1200.0 * 8.0 * 1e9 / self.response_ns()).max(4000.0);
                    self.rate_bps += per_s * dt_s;
                } else {
                    self.rate_bps *= ETA.powf(dt_s);
                }
            }
        }
        if let Some(r) = received {
            self.rate_bps = self.rate_bps.min(1.5 * r + 10_000.0);
        }
        self.rate_bps = self.rate_bps.clamp(10_000.0, self.max_bps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSI: i64 = 1_000_000;

    /// A sender at GCC's rate through a bottleneck of `capacity_bps` (a FIFO) and `base_ns` of
    /// propagation, with feedback `base_ns` back; `extra(t)` adds a delay the queue does not
    /// (a RAN's). Returns (the controller, the mean received rate over the last half, the
    /// largest queueing delay in it).
    fn through(capacity_bps: f64, secs: i64, extra: impl Fn(i64) -> i64) -> (Gcc, f64, i64) {
        let base = 20 * MSI;
        let size = 1200u32;
        let mut g = Gcc::new(1e6, 100e6);
        let (mut t, mut free_at) = (0i64, 0i64);
        let mut pending: VecDeque<(i64, i64, i64)> = VecDeque::new();
        let (mut bytes_late, mut max_q) = (0u64, 0i64);
        let end = secs * 1000 * MSI;
        while t < end {
            while pending.front().is_some_and(|p| p.0 <= t) {
                let (at, sent, arrival) = pending.pop_front().expect("peeked");
                g.on_feedback(at, sent, arrival, size, at - sent);
            }
            let service = (f64::from(size) * 8.0 * 1e9 / capacity_bps) as i64;
            let start = free_at.max(t);
            free_at = start + service;
            let arrival = free_at + base + extra(t);
            pending.push_back((arrival + base, t, arrival));
            if t > end / 2 {
                bytes_late += u64::from(size);
                max_q = max_q.max(free_at - t);
            }
            t += (f64::from(size) * 8.0 * 1e9 / g.rate_bps) as i64;
        }
        (g, bytes_late as f64 * 8.0 / (secs as f64 / 2.0), max_q)
    }

    #[test]
    fn it_fills_a_bottleneck_without_a_standing_queue() {
        // 10 Mbit/s: GCC climbs to it, detects the queue building, backs off, and stays near it
        // with the queue short (WebRTC's aim: a few tens of ms at most).
        let (g, rate, max_q) = through(10e6, 60, |_| 0);
        assert!(g.overuses >= 2, "it met the bottleneck: {} overuses", g.overuses);
        assert!((6e6..=10.5e6).contains(&rate), "sent {rate:.0} bit/s into 10 Mbit/s");
        assert!(max_q < 150 * MSI, "queue up to {} ms", max_q / MSI);
    }

    #[test]
    fn uplink_grant_jitter_without_a_queue_reads_as_overuse() {
        // No bottleneck within reach (1 Gbit/s), but every packet waits in a UE's uplink buffer
        // for the next grant, and each grant releases what waited at once (seed 004 §3.2, §5.3):
        // grants every 10 ms, or irregularly 5-25 ms apart (an LCG). The delay's mean is steady,
        // yet its gradient crosses GCC's threshold: overuse, and less rate than on the clean path.
        let mut grants = vec![0i64];
        let mut x = 12345u64;
        while *grants.last().unwrap() < 40_000 * MSI {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            grants.push(grants.last().unwrap() + (5 + (x >> 33) % 21) as i64 * MSI);
        }
        let irregular = |t: i64| grants[grants.partition_point(|&g| g < t)] - t;
        let periodic = |t: i64| 10 * MSI - t % (10 * MSI);
        let (clean, clean_rate, _) = through(1e9, 30, |_| 0);
        assert_eq!(clean.overuses, 0, "a clean path never overuses");
        for (name, (g, rate, _)) in
            [("periodic", through(1e9, 30, periodic)), ("irregular", through(1e9, 30, irregular))]
        {
            assert!(
                g.overuses > 0 && rate < 0.8 * clean_rate,
                "{name}: {rate:.0} vs {clean_rate:.0}, {} overuses",
                g.overuses
            );
        }
    }
}
