//! Copa's rate law (Arun and Balakrishnan, NSDI 2018, §2; seed 004 §5.1): a delay-based
//! controller that aims at a target rate λ_t = 1 / (δ · d_q) packets per second, where the
//! queueing delay d_q = RTT_standing − RTT_min: RTT_min the least RTT over the last 10 s,
//! RTT_standing the least over the last half smoothed RTT. On each acknowledgement the window
//! moves towards the target by v / (δ · cwnd) packets — up when the current rate
//! λ = cwnd / RTT_standing is at most λ_t, down otherwise — and the velocity v doubles each RTT
//! once the window has moved the same way for three RTTs, back to 1 when the direction changes.
//! It starts in slow start (the window doubling each RTT) until the rate first exceeds the target.
//! δ = 0.5 (the paper's default). Sans-IO: the caller hands in each acknowledgement with its time.
//!
//! A RAN delay the sender cannot see — a HARQ retransmission holding a burst, the uplink's
//! BSR-paced buffer — enters RTT_standing − RTT_min as queueing and slows Copa down: what
//! seed 004's Gandalf takes out of the samples before Copa sees them.

use std::collections::VecDeque;

/// Copa's δ (the paper's default mode).
pub const DELTA: f64 = 0.5;
/// RTT_min's window.
const MIN_WINDOW_NS: i64 = 10_000_000_000;

#[derive(Clone, Debug)]
pub struct Copa {
    /// Congestion window, packets.
    pub cwnd: f64,
    pub velocity: f64,
    pub srtt_ns: f64,
    slow_start: bool,
    /// The RTT samples (time, RTT) of the last 10 s that are smaller than every later one,
    /// oldest first, so RTTs rise front to back: the least RTT since any time is the first
    /// sample from then on — both windowed minima without walking every sample per ACK.
    samples: VecDeque<(i64, i64)>,
    /// The direction the window moved in the RTT now running (+1, −1) and in the last ones.
    direction: i8,
    same_for: u32,
    round_end: i64,
    /// The window when this round began: the round's direction is where it went from there.
    round_cwnd: f64,
    /// The two windowed minima, ns.
    pub rtt_min_ns: i64,
    pub rtt_standing_ns: i64,
}

impl Copa {
    /// A controller starting with a window of `cwnd` packets.
    pub fn new(cwnd: f64) -> Copa {
        Copa {
            cwnd: cwnd.max(2.0),
            velocity: 1.0,
            srtt_ns: 0.0,
            slow_start: true,
            samples: VecDeque::new(),
            direction: 0,
            same_for: 0,
            round_end: 0,
            round_cwnd: cwnd.max(2.0),
            rtt_min_ns: i64::MAX,
            rtt_standing_ns: i64::MAX,
        }
    }

    /// The queueing delay Copa sees, ns.
    pub fn queueing_ns(&self) -> i64 {
        (self.rtt_standing_ns - self.rtt_min_ns).max(0)
    }

    /// An acknowledgement at `now` of a packet that made the round trip in `rtt_ns`.
    pub fn on_ack(&mut self, now: i64, rtt_ns: i64) {
        self.srtt_ns =
            if self.srtt_ns == 0.0 { rtt_ns as f64 } else { self.srtt_ns + (rtt_ns as f64 - self.srtt_ns) / 8.0 };
        while self.samples.back().is_some_and(|&(_, r)| r >= rtt_ns) {
            self.samples.pop_back();
        }
        self.samples.push_back((now, rtt_ns));
        while self.samples.front().is_some_and(|&(t, _)| t < now - MIN_WINDOW_NS) {
            self.samples.pop_front();
        }
        let standing_from = now - (self.srtt_ns / 2.0) as i64;
        self.rtt_min_ns = self.samples.front().map_or(rtt_ns, |s| s.1);
        let i = self.samples.partition_point(|s| s.0 < standing_from);
        self.rtt_standing_ns = self.samples.get(i).map_or(rtt_ns, |s| s.1);
        let dq = self.queueing_ns() as f64 / 1e9;
        let current = self.cwnd / (self.rtt_standing_ns as f64 / 1e9);
        let up = dq <= 0.0 || current <= 1.0 / (DELTA * dq);
        if self.slow_start {
            if up {
                // Doubling per RTT: one packet per packet acknowledged.
                self.cwnd += 1.0;
            } else {
                self.slow_start = false;
            }
        }
        if !self.slow_start {
            let step = self.velocity / (DELTA * self.cwnd);
            self.cwnd = if up { self.cwnd + step } else { (self.cwnd - step).max(2.0) };
        }
        // Velocity: per RTT, the direction the window moved over it.
        if now >= self.round_end {
            let d: i8 = if self.cwnd >= self.round_cwnd { 1 } else { -1 };
            if d == self.direction {
                self.same_for += 1;
                if self.same_for >= 3 {
                    self.velocity *= 2.0;
                }
            } else {
                self.direction = d;
                self.same_for = 1;
                self.velocity = 1.0;
            }
            self.round_cwnd = self.cwnd;
            self.round_end = now + self.srtt_ns as i64;
        }
        // The velocity never grows the window by more than it holds in an RTT.
        self.velocity = self.velocity.min(self.cwnd.max(1.0));
    }

    /// The sending rate, bit/s, for packets of `size` bytes: the window over RTT_standing.
    pub fn rate_bps(&self, size: u32) -> f64 {
        let rtt = if self.rtt_standing_ns == i64::MAX { 0.1 } else { (self.rtt_standing_ns as f64 / 1e9).max(1e-4) };
        self.cwnd * f64::from(size) * 8.0 / rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    /// Copa against a path whose RTT is `base` plus what its own window queues at a bottleneck
    /// of `capacity` packets per second (plus `extra(t)`), for `secs`; returns the mean rate
    /// (packets/s, at most the capacity) and the mean queue (packets) over the second half.
    fn against(capacity: f64, base: i64, extra: impl Fn(i64) -> i64, secs: i64) -> (f64, f64) {
        let mut c = Copa::new(10.0);
        let (mut t, mut n, mut rate, mut queue) = (0, 0.0, 0.0, 0.0);
        let pipe = capacity * base as f64 / 1e9;
        while t < secs * 1000 * MS {
            // The queue the window keeps beyond the pipe (cwnd − capacity·base), as delay.
            let queued = (c.cwnd - pipe).max(0.0);
            let rtt = base + (queued / capacity * 1e9) as i64 + extra(t);
            c.on_ack(t, rtt);
            if t > secs * 500 * MS {
                n += 1.0;
                rate += (c.cwnd / (base as f64 / 1e9)).min(capacity);
                queue += queued;
            }
            t += (1e9 / capacity) as i64;
        }
        (rate / n, queue / n)
    }

    #[test]
    fn it_keeps_about_one_over_delta_packets_queued() {
        // Copa's equilibrium: λ = 1/(δ·d_q) with λ ≈ capacity, so d_q ≈ 1/(δ·capacity): a couple
        // of packets' worth of queueing, whatever the path's RTT.
        for base in [20 * MS, 60 * MS] {
            let (rate, queue) = against(2000.0, base, |_| 0, 20);
            assert!(queue < 8.0, "base {base}: {queue} packets queued on average");
            assert!(rate > 0.7 * 2000.0, "base {base}: {rate} packets/s of 2000");
        }
    }

    #[test]
    fn delay_it_cannot_see_as_congestion_slows_it_down() {
        // The same path with the uplink buffer's delay on top (seed 004 §3.2): 3 to 8 ms, BSR
        // period by BSR period, and 0 only now and then (a grant larger than the buffer) — which
        // RTT_min catches and RTT_standing does not: Copa reads ≥ 3 ms of queueing where there is
        // none and its rate falls to about 1/(δ·3 ms) (seed 004 §5.1, its Figure 17).
        let (clean, _) = against(2000.0, 20 * MS, |_| 0, 20);
        let bsr = |t: i64| if t % (2000 * MS) < 2 * MS { 0 } else { 3 * MS + t % (5 * MS) };
        let (ran, _) = against(2000.0, 20 * MS, bsr, 20);
        assert!(ran < 0.6 * clean, "with the UL buffer's delay {ran}, clean {clean}");
    }
}
