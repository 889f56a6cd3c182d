//! Gandalf's retransmission compensation (seed 004 §4.3.1, its Figure 15b): a delay sample a
//! HARQ retransmission inflated is corrected with the retransmission event the UE's RAN feed
//! reports. A retransmission event ends when the retransmitted TB is decoded; the receiver's
//! reordering then releases, at that instant, the TB's packets and every packet held behind it —
//! a burst. The first packet of the burst (the one in the failed TB) waited T_M longer than it
//! would have: its corrected delay is its delay less T_M; the rest of the burst is brought to
//! that same corrected delay, as the seed does ("adjusting all simultaneously reported packets to
//! match this corrected delay"). Samples outside any burst pass unchanged. Sans-IO: the caller
//! hands in events and samples in time order.
//!
//! [`Lowpass`] is Gandalf's RAN-aware filter (§4.3.2): the uplink buffer fills and empties with
//! the UE's BSR period, so the delay it adds is a periodic signal at f_u = 1/T_bsr (and its
//! harmonics); network congestion moves slower. The seed takes the FFT of the delay series,
//! removes f_u and above and transforms back. A controller needs each sample as it comes, so
//! Scout filters causally: the mean over the last period, the FIR low-pass whose response is zero
//! at f_u and at every harmonic of it (a boxcar's sinc), delaying the signal by half a period.

use std::collections::VecDeque;

/// One retransmission event as the feed reports it: when it ended (the decoding that released
/// the burst) and the retransmission delay T_M, ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetxEvent {
    pub end: i64,
    pub delay: i64,
}

/// The compensator of one flow's samples.
#[derive(Clone, Debug)]
pub struct RetxCompensation {
    events: VecDeque<RetxEvent>,
    /// The burst being released: when its first packet was read and the corrected delay its
    /// packets get.
    burst: Option<(i64, i64)>,
    /// How late after an event's end its burst's first packet may be read.
    late_ns: i64,
    /// Samples corrected so far, and the delay taken out of them in total (ns).
    pub corrected: u64,
    pub removed_ns: i64,
}

impl Default for RetxCompensation {
    fn default() -> RetxCompensation {
        RetxCompensation::new()
    }
}

impl RetxCompensation {
    /// Packets read within this long of the burst's first belong to it (a TB's packets and those
    /// behind it are released within the same instant; a real receiver reads them one by one).
    pub const BURST_NS: i64 = 200_000;

    /// A compensator whose samples are taken where the model delivers (the simulator: the
    /// burst's first packet is delivered at its event's end).
    pub fn new() -> RetxCompensation {
        RetxCompensation::reading_late(Self::BURST_NS)
    }

    /// A compensator whose samples are taken up to `late_ns` after the model delivered them (a
    /// real application reading its socket during an emulation: the event's end is the model's
    /// time, the sample's the application's).
    pub fn reading_late(late_ns: i64) -> RetxCompensation {
        RetxCompensation { events: VecDeque::new(), burst: None, late_ns, corrected: 0, removed_ns: 0 }
    }

    /// The feed reported a retransmission event.
    pub fn event(&mut self, e: RetxEvent) {
        self.events.push_back(e);
    }

    /// A packet delivered at `delivered` after `delay` ns (one-way, or a round trip's sample
    /// taken at its delivery): the delay to use.
    pub fn sample(&mut self, delivered: i64, delay: i64) -> i64 {
        // Events whose burst can no longer start are done with.
        while self.events.front().is_some_and(|e| e.end + self.late_ns < delivered) {
            self.events.pop_front();
        }
        if let Some((first, target)) = self.burst {
            if delivered <= first + Self::BURST_NS {
                return self.take(delay, target);
            }
            self.burst = None;
        }
        match self.events.front() {
            Some(e) if delivered >= e.end && delay >= e.delay => {
                let e = self.events.pop_front().expect("peeked");
                let target = delay - e.delay;
                self.burst = Some((delivered, target));
                self.take(delay, target)
            }
            _ => delay,
        }
    }

    fn take(&mut self, delay: i64, target: i64) -> i64 {
        let d = target.min(delay);
        if d < delay {
            self.corrected += 1;
            self.removed_ns += delay - d;
        }
        d
    }
}

/// The RAN-aware low-pass of one flow's delay samples: the mean of the samples of the last
/// `period_ns` (the UE's uplink buffer period, `Stack::ul_buffer_period_ns`).
#[derive(Clone, Debug)]
pub struct Lowpass {
    period_ns: i64,
    window: VecDeque<(i64, i64)>,
    sum: i128,
}

impl Lowpass {
    pub fn new(period_ns: i64) -> Lowpass {
        Lowpass { period_ns: period_ns.max(1), window: VecDeque::new(), sum: 0 }
    }

    /// A sample `delay` taken at `t` (in time order): the filtered delay.
    pub fn sample(&mut self, t: i64, delay: i64) -> i64 {
        self.window.push_back((t, delay));
        self.sum += i128::from(delay);
        while self.window.front().is_some_and(|&(t0, _)| t0 <= t - self.period_ns) {
            let (_, d) = self.window.pop_front().expect("non-empty");
            self.sum -= i128::from(d);
        }
        (self.sum / self.window.len() as i128) as i64
    }
}

/// The uplink's time-shift synchronisation (§4.3.1, "Handling uplink retransmissions"): the UE's
/// feed reports retransmission events on the UE's clock, the delays are measured at the remote
/// receiver on its own. Packets a retransmission held show its signature at the receiver — an
/// idle gap, then a burst whose first packet's delay jumped by about T_M — so events can be
/// found in the packets alone ([`packet_events`]), some missed, some false; the shift that makes
/// the most reported events meet one of them is the clocks' offset ([`time_shift`]).
///
/// Arrival times of packets that look like the end of a retransmission event, from the
/// receiver's samples `(arrival, delay)` in arrival order: the packet's delay exceeds the
/// previous packet's by at least `min_jump_ns`, it arrived at least that long after it (the
/// idle period), and the next packet follows within [`RetxCompensation::BURST_NS`] (the burst).
pub fn packet_events(samples: &[(i64, i64)], min_jump_ns: i64) -> Vec<i64> {
    samples
        .windows(3)
        .filter(|w| {
            let ((a0, d0), (a1, d1), (a2, _)) = (w[0], w[1], w[2]);
            d1 - d0 >= min_jump_ns && a1 - a0 >= min_jump_ns && a2 - a1 <= RetxCompensation::BURST_NS
        })
        .map(|w| w[1].0)
        .collect()
}

/// The shift (ns, to add to the feed's times) within ±`range_ns`, tried in steps of `step_ns`,
/// at which the most `reported` event ends (feed clock, in order) fall within `tolerance_ns` of
/// an `identified` one (receiver clock, in order), and the fraction of reported events matched
/// there; `None` without reported events. Ties go to the smallest |shift|.
pub fn time_shift(
    reported: &[i64],
    identified: &[i64],
    range_ns: i64,
    step_ns: i64,
    tolerance_ns: i64,
) -> Option<(i64, f64)> {
    if reported.is_empty() || step_ns <= 0 {
        return None;
    }
    let matched = |shift: i64| {
        reported
            .iter()
            .filter(|&&r| {
                let t = r + shift;
                let i = identified.partition_point(|&x| x < t - tolerance_ns);
                identified.get(i).is_some_and(|&x| x <= t + tolerance_ns)
            })
            .count()
    };
    let n = range_ns / step_ns;
    let best = (-n..=n)
        .map(|k| k * step_ns)
        .map(|shift| (matched(shift), std::cmp::Reverse(shift.abs()), shift))
        .max()
        .expect("at least the zero shift");
    Some((best.2, best.0 as f64 / reported.len() as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn a_retransmissions_delay_is_taken_out_of_its_burst() {
        // Packets sent every 1 ms, 10 ms one-way delay. The TB of the packet sent at 20 ms fails
        // and is retransmitted 4 ms later (T_M = 4 ms): it and the packets sent at 21–23 ms are
        // held and released together at 34 ms, with delays 14, 13, 12, 11 ms.
        let mut sent_and_delivered: Vec<(i64, i64)> = (0..40).map(|i| (i * MS, i * MS + 10 * MS)).collect();
        for p in sent_and_delivered.iter_mut().filter(|p| (20 * MS..24 * MS).contains(&p.0)) {
            p.1 = 34 * MS;
        }
        let mut g = RetxCompensation::new();
        g.event(RetxEvent { end: 34 * MS, delay: 4 * MS });
        let out: Vec<i64> = sent_and_delivered.iter().map(|&(s, d)| g.sample(d, d - s)).collect();
        // Every sample back at the path's 10 ms: the failed packet by T_M, its burst to match.
        assert!(out.iter().all(|&d| d == 10 * MS), "{:?}", out.iter().map(|d| d / MS).collect::<Vec<_>>());
        assert_eq!(g.corrected, 4);
        assert_eq!(g.removed_ns, (4 + 3 + 2 + 1) * MS);
    }

    #[test]
    fn a_burst_read_late_is_corrected_by_a_compensator_that_allows_for_it() {
        // The same burst released at 34 ms, read by an application 0.7 ms later, 50 µs apart.
        let run = |mut g: RetxCompensation| {
            g.event(RetxEvent { end: 34 * MS, delay: 4 * MS });
            let read = |i: i64| 34 * MS + 700_000 + i * 50_000;
            let out: Vec<i64> = (0..4).map(|i| g.sample(read(i), read(i) - (20 + i) * MS)).collect();
            (out, g.corrected)
        };
        let (out, n) = run(RetxCompensation::reading_late(MS));
        assert_eq!(n, 4);
        assert!(out.iter().all(|&d| d == 10 * MS + 700_000), "{out:?}");
        assert_eq!(run(RetxCompensation::new()).1, 0, "the simulator's compensator expects no read delay");
    }

    #[test]
    fn samples_outside_a_burst_pass_unchanged() {
        let mut g = RetxCompensation::new();
        g.event(RetxEvent { end: 50 * MS, delay: 4 * MS });
        assert_eq!(g.sample(10 * MS, 12 * MS), 12 * MS, "before the event ends");
        assert_eq!(g.sample(51 * MS, 12 * MS), 12 * MS, "after its burst");
        assert_eq!(g.corrected, 0);
    }

    #[test]
    fn the_lowpass_removes_the_uplink_buffers_period_and_keeps_a_slower_rise() {
        // A sample every 0.25 ms: 20 ms of path delay, a sawtooth of 0–8 ms repeating every 10 ms
        // (the buffer filling between BSRs and emptying at the grant), and from 1 s a queue
        // building at 10 ms per second. After one period the filtered delay is the path's plus
        // the sawtooth's mean (4 ms) plus the queue, within a sample's share of the tooth.
        let period = 10 * MS;
        let mut f = Lowpass::new(period);
        let q = MS / 4;
        for i in 0..8_000i64 {
            let t = i * q;
            let tooth = 8 * MS - (t % period) * 8 / 10;
            let queue = ((t - 1_000 * MS).max(0)) / 100;
            let out = f.sample(t, 20 * MS + tooth + queue);
            if t >= period {
                // The mean over the window trails the queue by half a period (10 ms/s × 5 ms).
                let want = 24 * MS + ((t - period / 2 - 1_000 * MS).max(0)) / 100;
                assert!((out - want).abs() <= MS / 2, "t {t}: {out} vs {want}");
            }
        }
        // The raw samples swing 8 ms within each period; the filtered ones by a few µs.
        let mut g = Lowpass::new(period);
        let outs: Vec<i64> =
            (0..400i64).map(|i| g.sample(i * q, 20 * MS + 8 * MS - (i * q % period) * 8 / 10)).collect();
        let (lo, hi) = (outs[40..].iter().min().unwrap(), outs[40..].iter().max().unwrap());
        assert!(hi - lo < MS / 4, "{lo}..{hi}");
    }

    #[test]
    fn the_uplink_clocks_offset_is_found_from_the_packets_alone() {
        // An uplink flow, a packet every 1 ms over a path of 15 ms; the receiver's clock runs
        // 37.3 ms ahead of the UE's. At random (one ms in 40, an LCG) a TB fails and is
        // retransmitted 5 ms later: the packets sent in those 5 ms arrive together at its end.
        // The feed reports those events on the UE's clock — but misses one in five; and one ms
        // in 150 something the feed does not know of holds the packets 4 ms the same way (false
        // signatures).
        let offset = 37_300_000i64;
        let (mut samples, mut reported) = (vec![], vec![]);
        let mut held_until = i64::MIN;
        let mut x = 7u64;
        for i in 0..20_000i64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = x >> 33;
            let sent = i * MS;
            let mut arrive = sent + 15 * MS;
            if arrive >= held_until && r.is_multiple_of(40) {
                held_until = arrive + 5 * MS;
                if !r.is_multiple_of(200) {
                    reported.push(held_until);
                }
            } else if arrive >= held_until && r % 150 == 1 {
                held_until = arrive + 4 * MS;
            }
            arrive = arrive.max(held_until);
            samples.push((arrive + offset, arrive - sent + offset));
        }
        let found = packet_events(&samples, 3 * MS);
        assert!(found.len() >= reported.len(), "{} found, {} reported", found.len(), reported.len());
        let (shift, ratio) = time_shift(&reported, &found, 100 * MS, 100_000, 200_000).expect("events");
        assert!((shift - offset).abs() <= 200_000, "shift {shift} vs {offset}");
        assert!(ratio > 0.95, "{ratio}");
        assert_eq!(time_shift(&[], &found, 100 * MS, 100_000, 200_000), None);
    }
}
