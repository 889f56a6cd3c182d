//! Senders that adapt their rate to what the network tells them (seed 003 §3.3–3.5, §4.1): UDP
//! Prague's rate law on the receiver's ECN feedback (RFC 9331, RFC 9330; the Prague requirements
//! of draft-ietf-tcpm-prague), the rate an ANBR recommendation allows (TS 26.114 §10.7), and the
//! hybrid of the two. Sans-IO like the model: the simulator hands in feedback with its time and
//! asks for the next packet's.
//!
//! The sender paces packets of a fixed size at `rate`, or, as the seed's sender (§4.1.2), is the
//! 3GPP generic video source (TR 38.838 §5.1.1) whose encoder targets `rate`: a frame every 1/fps,
//! its size a truncated Gaussian around rate/fps (STD `size_std_frac` of the mean, within 50–150
//! %), its packets paced evenly over the frame's interval (the seed's pacing at the encoding
//! rate; TR 38.838's frame-time jitter is not applied to a paced sender). Each packet delivered is
//! reported back with its ECN field, either `feedback_ns` after its delivery (a fixed feedback
//! path: [`Adaptive::delivered`]) or by an acknowledgement that crosses the model in the other
//! direction — through the UE's uplink buffer, BSR and grants for a DL flow — and then
//! `feedback_ns` of wire ([`Adaptive::received`], [`Adaptive::acked`]); the sender's RTT sample
//! is the sum. Gandalf's compensation (seed 004 §4.3) may correct each leg for the UE's
//! retransmission events and low-pass the RTT at the uplink buffer's period.
//!
//! Prague (per virtual RTT, vRTT = max(srtt, 25 ms)): α ← (1 − g)·α + g·F with g = 1/16 and F
//! the fraction of CE-marked packets reported over the last vRTT (eq. 3.3); on CE, once per vRTT,
//! cwnd ← cwnd·(1 − α/2) (eq. 3.6); each unmarked packet reported grows cwnd by size²/cwnd (one
//! packet per RTT, eq. 3.7); rate = cwnd / srtt, capped at `max_bps` (cwnd recomputed from the
//! cap, eq. 3.8). ANBR: rate = the recommendation less PDCP's 3-byte header per packet (what the
//! recommendation counts beyond the IP packet), capped. Hybrid: Prague's rate while CE marks
//! arrive (over the last vRTT), otherwise the higher of Prague's and ANBR's (cwnd follows).

use std::collections::VecDeque;

use scout_ran::rng::Rng;

use crate::traffic::truncated_normal;

/// The 3GPP generic video source's shape (TR 38.838 §5.1.1).
#[derive(Clone, Copy, Debug)]
pub struct VideoShape {
    pub fps: f64,
    pub size_std_frac: f64,
}

/// The frame being sent: when it started, bytes left, the gap between its packets.
#[derive(Clone, Copy, Debug, Default)]
struct Frame {
    start: i64,
    left: u32,
    gap_ns: f64,
    n: u32,
}

/// What drives the rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Prague,
    Anbr,
    Hybrid,
    /// The start rate throughout (the reference the others are compared with).
    Constant,
    /// Copa's delay-based rate law on the RTT samples (`crate::copa`; seed 004 §5.1).
    Copa,
    /// GCC's delay-gradient estimator and rate control on the one-way delays (`crate::gcc`;
    /// seed 004 §5.3).
    Gcc,
}

/// What reaches the sender about one packet: when, its round trip, CE, when it was sent and its
/// one-way delay (as the receiver measured it: only its changes matter).
#[derive(Clone, Copy, Debug)]
struct Report {
    at: i64,
    rtt: i64,
    ce: bool,
    sent: i64,
    one_way: i64,
}

/// Prague's EWMA gain (g = 1/16, as DCTCP and Prague).
const G: f64 = 1.0 / 16.0;
/// Prague's virtual RTT floor.
const VRTT_MIN_NS: f64 = 25e6;
/// PDCP's header in a DRB PDU with an 18-bit SN (TS 38.323 §6.2.2.2), counted in the ANBR rate.
const PDCP_HEADER: f64 = 3.0;

/// One adaptive sender.
#[derive(Clone, Debug)]
pub struct Adaptive {
    pub control: Control,
    size: u32,
    max_bps: f64,
    feedback_ns: i64,
    /// Bits per second now.
    pub rate_bps: f64,
    /// Prague's state: congestion window (bytes), α, smoothed RTT (ns).
    pub cwnd: f64,
    pub alpha: f64,
    pub srtt_ns: f64,
    /// Reports not yet arrived at the sender.
    reports: VecDeque<Report>,
    /// ANBR recommendations not yet arrived: (arrival time, bit/s).
    recommended: VecDeque<(i64, f64)>,
    anbr_bps: Option<f64>,
    /// The current vRTT round: when it ends, packets reported and marked in it.
    round_end: i64,
    round_pkts: u32,
    round_marks: u32,
    /// When the last CE reduction happened (one per vRTT).
    last_cut: Option<i64>,
    /// Whether the last completed round saw marks (the hybrid's switch).
    marked_lately: bool,
    /// When the last packet left (or the first leaves).
    next: i64,
    first: bool,
    video: Option<(VideoShape, Frame)>,
    /// ANBR queries: every so often (ns), and when the next is due.
    query_every: Option<i64>,
    next_query: i64,
    /// Copa's state (`Control::Copa`), GCC's (`Control::Gcc`).
    pub copa: Option<crate::copa::Copa>,
    pub gcc: Option<crate::gcc::Gcc>,
    /// Gandalf's retransmission compensation of the delay samples, when switched on: of the data
    /// packets' path, and of the acknowledgements' (when they ride the model back).
    pub compensation: Option<crate::gandalf::RetxCompensation>,
    pub ack_compensation: Option<crate::gandalf::RetxCompensation>,
    /// Gandalf's RAN-aware low-pass of the RTT samples, when switched on.
    pub lowpass: Option<crate::gandalf::Lowpass>,
    /// The delay samples the controller took (Copa, GCC), kept for the driver to write when it
    /// asked ([`Adaptive::recording`]): (when it reached the sender, as measured, as used) of the
    /// signal the controller reads.
    pub samples: Option<Vec<(i64, i64, i64)>>,
}

impl Adaptive {
    /// A sender of `size`-byte packets starting at `start_bps`, capped at `max_bps`, hearing back
    /// `feedback_ns` after each delivery.
    pub fn new(control: Control, size: u32, start_bps: f64, max_bps: f64, feedback_ns: i64, start: i64) -> Adaptive {
        let srtt_ns = VRTT_MIN_NS;
        Adaptive {
            control,
            size,
            max_bps,
            feedback_ns,
            rate_bps: start_bps,
            cwnd: start_bps / 8.0 * srtt_ns / 1e9,
            // As DCTCP and Prague: α starts at 1, so the first marks halve the window.
            alpha: 1.0,
            srtt_ns,
            reports: VecDeque::new(),
            recommended: VecDeque::new(),
            anbr_bps: None,
            round_end: start,
            round_pkts: 0,
            round_marks: 0,
            last_cut: None,
            marked_lately: false,
            next: start,
            first: true,
            video: None,
            query_every: None,
            next_query: start,
            compensation: None,
            ack_compensation: None,
            lowpass: None,
            samples: None,
            gcc: (control == Control::Gcc).then(|| crate::gcc::Gcc::new(start_bps, max_bps)),
            copa: (control == Control::Copa)
                .then(|| crate::copa::Copa::new(start_bps / 8.0 * VRTT_MIN_NS / 1e9 / f64::from(size))),
        }
    }

    /// The receiving application asks the UE's modem for a recommendation every `every_ns` while
    /// the sender runs below its cap (ANBR and the hybrid; TS 26.114 §10.7.3, the seed's §3.4.1:
    /// "to request an increase in bitrate at intervals").
    pub fn with_queries(mut self, every_ns: i64) -> Adaptive {
        self.query_every = Some(every_ns.max(1));
        self
    }

    /// At `now`: the bit rate to ask for (the cap), when a query is due.
    pub fn wants_query(&mut self, now: i64) -> Option<f64> {
        let every = self.query_every?;
        if now < self.next_query || !matches!(self.control, Control::Anbr | Control::Hybrid) {
            return None;
        }
        self.next_query = now + every;
        (self.rate_bps < self.max_bps).then_some(self.max_bps)
    }

    /// The sender is the generic video source of `shape`, its encoder at the rate.
    pub fn with_video(mut self, shape: VideoShape) -> Adaptive {
        self.video = Some((shape, Frame::default()));
        self
    }

    /// A packet sent at `sent` was delivered at `delivered` with ECN field `ecn` (3 = CE); the
    /// report reaches the sender `feedback_ns` later (a fixed feedback path).
    pub fn delivered(&mut self, sent: i64, delivered: i64, ecn: u8) {
        let delay = self.received(sent, delivered);
        let raw = delivered - sent;
        let r = Report {
            at: delivered + self.feedback_ns,
            rtt: delay + self.feedback_ns,
            ce: ecn == 3,
            sent,
            one_way: delay,
        };
        self.sample(r, raw + self.feedback_ns, raw);
    }

    /// A packet sent at `sent` reached the receiver at `delivered`: its one-way delay as the
    /// receiver reports it (compensated for the data path's retransmission events, when that is
    /// on). With acknowledgements riding the model, [`Adaptive::acked`] follows when the
    /// acknowledgement arrives.
    pub fn received(&mut self, sent: i64, delivered: i64) -> i64 {
        let delay = delivered - sent;
        self.compensation.as_mut().map_or(delay, |c| c.sample(delivered, delay))
    }

    /// The acknowledgement of a packet sent at `sent` whose one-way delay was `data_delay`
    /// (from [`Adaptive::received`]), itself sent at `ack_sent`, crossed the model back by
    /// `ack_delivered`; it reaches the sender `feedback_ns` later (the wired rest of the path).
    /// CE when `ce`.
    pub fn acked(&mut self, sent: i64, data_delay: i64, ack_sent: i64, ack_delivered: i64, ce: bool) {
        let back = ack_delivered - ack_sent;
        let back = self.ack_compensation.as_mut().map_or(back, |c| c.sample(ack_delivered, back));
        let at = ack_delivered + self.feedback_ns;
        let r = Report { at, rtt: data_delay + back + self.feedback_ns, ce, sent, one_way: data_delay };
        // The receiver acknowledges at the delivery: the raw one-way delay ends where the ack began.
        self.sample(r, at - sent, ack_sent - sent);
    }

    /// An acknowledgement reaches the sender at `at`: a packet that made the round trip in
    /// `rtt_ns`, CE marked or not (a real sender's, which knows no one-way delay: GCC reads the
    /// RTT's changes instead; reports arrive in time order).
    pub fn report(&mut self, at: i64, rtt_ns: i64, ce: bool) {
        self.sample(Report { at, rtt: rtt_ns, ce, sent: at - rtt_ns, one_way: rtt_ns }, rtt_ns, rtt_ns);
    }

    /// A sample on its way to the sender, through the low-pass when that is on — of the signal
    /// the controller reads: the RTT (Copa, Prague), the one-way delay (GCC). `raw_rtt`,
    /// `raw_one_way`: the signals as measured, before any compensation.
    fn sample(&mut self, mut r: Report, raw_rtt: i64, raw_one_way: i64) {
        if let Some(l) = &mut self.lowpass {
            if self.control == Control::Gcc {
                r.one_way = l.sample(r.at, r.one_way);
            } else {
                r.rtt = l.sample(r.at, r.rtt);
            }
        }
        if let Some(v) = &mut self.samples {
            match self.control {
                Control::Copa => v.push((r.at, raw_rtt, r.rtt)),
                Control::Gcc => v.push((r.at, raw_one_way, r.one_way)),
                _ => {}
            }
        }
        self.reports.push_back(r);
    }

    /// Keep the delay samples the controller takes ([`Adaptive::samples`]; the driver drains them).
    pub fn recording(mut self) -> Adaptive {
        self.samples = Some(Vec::new());
        self
    }

    /// The signal a controller reads: `rtt` or `one_way`.
    pub fn signal(&self) -> &'static str {
        if self.control == Control::Gcc {
            "one_way"
        } else {
            "rtt"
        }
    }

    /// Compensate the delay samples for the retransmission events the UE's RAN feed reports
    /// (`crate::gandalf`; seed 004 §4.3.1): on the data's path, and on the acknowledgements'.
    pub fn with_retx_compensation(mut self) -> Adaptive {
        self.compensation = Some(crate::gandalf::RetxCompensation::new());
        self.ack_compensation = Some(crate::gandalf::RetxCompensation::new());
        self
    }

    /// Filter the RTT samples with Gandalf's RAN-aware low-pass at the UE's uplink buffer period
    /// (`crate::gandalf::Lowpass`; seed 004 §4.3.2).
    pub fn with_lowpass(mut self, period_ns: i64) -> Adaptive {
        self.lowpass = Some(crate::gandalf::Lowpass::new(period_ns));
        self
    }

    /// The UE's RAN feed reported a retransmission event ending at `end` with delay `delay`, in
    /// the direction of the data (`on_data_path`) or of the acknowledgements.
    pub fn retx_event(&mut self, on_data_path: bool, end: i64, delay: i64) {
        let c = if on_data_path { &mut self.compensation } else { &mut self.ack_compensation };
        if let Some(c) = c {
            c.event(crate::gandalf::RetxEvent { end, delay });
        }
    }

    /// The UE's MAC received an ANBR recommendation of `bps` at `t` (it reaches the sender
    /// `feedback_ns` later).
    pub fn recommendation(&mut self, t: i64, bps: f64) {
        self.recommendation_at(t + self.feedback_ns, bps);
    }

    /// An ANBR recommendation of `bps` reaches the sender at `at`.
    pub fn recommendation_at(&mut self, at: i64, bps: f64) {
        self.recommended.push_back((at, bps));
    }

    fn vrtt(&self) -> f64 {
        self.srtt_ns.max(VRTT_MIN_NS)
    }

    /// Takes in everything that reached the sender by `now`.
    fn learn(&mut self, now: i64) {
        while let Some(&Report { at: t, rtt, ce, sent, one_way }) = self.reports.front() {
            if t > now {
                break;
            }
            self.reports.pop_front();
            self.srtt_ns += (rtt as f64 - self.srtt_ns) / 8.0;
            if let Some(c) = &mut self.copa {
                c.on_ack(t, rtt);
            }
            if let Some(g) = &mut self.gcc {
                g.on_feedback(t, sent, sent + one_way, self.size, rtt);
            }
            while t >= self.round_end {
                // A vRTT round ends: α learns its mark fraction (eq. 3.3).
                let f =
                    if self.round_pkts > 0 { f64::from(self.round_marks) / f64::from(self.round_pkts) } else { 0.0 };
                if self.round_pkts > 0 {
                    self.alpha = (1.0 - G) * self.alpha + G * f;
                }
                self.marked_lately = self.round_marks > 0;
                self.round_pkts = 0;
                self.round_marks = 0;
                self.round_end += self.vrtt() as i64;
            }
            self.round_pkts += 1;
            let mss = f64::from(self.size);
            if ce {
                self.round_marks += 1;
                self.marked_lately = true;
                if self.last_cut.is_none_or(|c| (t - c) as f64 >= self.vrtt()) {
                    self.cwnd = (self.cwnd * (1.0 - self.alpha / 2.0)).max(2.0 * mss);
                    self.last_cut = Some(t);
                }
            } else {
                self.cwnd += mss * mss / self.cwnd;
            }
            self.set_rate();
        }
        while let Some(&(t, bps)) = self.recommended.front() {
            if t > now {
                break;
            }
            self.recommended.pop_front();
            let size = f64::from(self.size);
            self.anbr_bps = Some(bps * size / (size + PDCP_HEADER));
            self.set_rate();
        }
    }

    fn set_rate(&mut self) {
        let prague = self.cwnd * 8.0 * 1e9 / self.srtt_ns;
        let rate = match (self.control, self.anbr_bps) {
            (Control::Prague, _) | (Control::Hybrid, None) => prague,
            (Control::Anbr, Some(a)) => a,
            (Control::Anbr, None) => self.rate_bps,
            (Control::Hybrid, Some(a)) if !self.marked_lately && a > prague => a,
            (Control::Hybrid, Some(_)) => prague,
            (Control::Constant, _) => self.rate_bps,
            (Control::Copa, _) => self.copa.as_ref().map_or(self.rate_bps, |c| c.rate_bps(self.size)),
            (Control::Gcc, _) => self.gcc.as_ref().map_or(self.rate_bps, |g| g.rate_bps),
        };
        self.rate_bps = rate.clamp(f64::from(self.size) * 8.0, self.max_bps);
        // The window follows the rate it allows (eq. 3.8, and the hybrid taking ANBR's rate).
        self.cwnd = self.rate_bps / 8.0 * self.srtt_ns / 1e9;
    }

    /// The next packet's time and size: the first at the start, then each one interval at the
    /// rate learnt by the time the previous one left (the simulator asks as it sends it). Video:
    /// the frame's next packet, or the next frame's first, sized at the rate learnt by then.
    pub fn next_packet(&mut self, rng: &mut Rng) -> (i64, u32) {
        let first = std::mem::replace(&mut self.first, false);
        if !first {
            self.learn(self.next);
        }
        let Some((shape, f)) = &mut self.video else {
            if !first {
                self.next += (f64::from(self.size) * 8.0 * 1e9 / self.rate_bps) as i64;
            }
            return (self.next, self.size);
        };
        if f.left == 0 {
            let frame_ns = 1e9 / shape.fps;
            f.start = if first { self.next } else { f.start + frame_ns as i64 };
            let mean = self.rate_bps / 8.0 / shape.fps;
            let bytes = truncated_normal(rng, mean, shape.size_std_frac * mean, 0.5 * mean, 1.5 * mean);
            f.left = bytes.round().max(1.0) as u32;
            f.n = f.left.div_ceil(self.size);
            f.gap_ns = frame_ns / f64::from(f.n);
            self.next = f.start;
        } else {
            self.next = f.start + (f.gap_ns * f64::from(f.n - f.left.div_ceil(self.size))) as i64;
        }
        let b = f.left.min(self.size).max(20);
        f.left = f.left.saturating_sub(self.size);
        (self.next, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn rng() -> Rng {
        Rng::new(1, "adaptive")
    }

    /// Runs a Prague sender against a path of fixed one-way delay that marks a fraction `f` of
    /// packets (every 1/f-th), for `secs`; returns the sender.
    fn against(f: f64, secs: i64) -> Adaptive {
        let mut s = Adaptive::new(Control::Prague, 1000, 10e6, 1e9, 10 * MS, 0);
        let mut n = 0u64;
        let every = if f > 0.0 { (1.0 / f).round() as u64 } else { u64::MAX };
        loop {
            let (t, _) = s.next_packet(&mut rng());
            if t > secs * 1000 * MS {
                return s;
            }
            n += 1;
            s.delivered(t, t + 10 * MS, if n.is_multiple_of(every) { 3 } else { 1 });
        }
    }

    #[test]
    fn alpha_converges_to_the_marked_fraction() {
        for f in [0.05, 0.2, 0.5] {
            let s = against(f, 20);
            assert!((s.alpha - f).abs() < 0.2 * f, "marked {f}: alpha {}", s.alpha);
        }
    }

    #[test]
    fn the_rate_falls_as_the_marked_fraction_rises() {
        // RFC 9331 §4.3 / Prague: a scalable sender's rate is inversely proportional to the
        // marking probability (for a fixed RTT), so more marks, lower rate; no marks, the cap.
        let rates: Vec<f64> = [0.0, 0.02, 0.1, 0.4].iter().map(|&f| against(f, 20).rate_bps).collect();
        assert!(rates[0] > 3e8, "unmarked: it grows a packet per RTT ({})", rates[0]);
        assert!(rates.windows(2).all(|w| w[1] < w[0]), "{rates:?}");
        // Steady state: cwnd cut by α/2 once per vRTT and grown by one packet per RTT balance at
        // cwnd ≈ 2·size/(α·vRTT/RTT) packets...: 5× the marks, about 5× less rate (within 2×).
        let ratio = rates[1] / rates[2];
        assert!((2.5..10.0).contains(&ratio), "0.02 vs 0.1 marked: {ratio}");
    }

    #[test]
    fn anbr_follows_the_recommendation_less_pdcp_and_the_hybrid_takes_it_without_marks() {
        let mut a = Adaptive::new(Control::Anbr, 1397, 5e6, 100e6, 10 * MS, 0);
        a.recommendation(0, 28e6);
        a.next_packet(&mut rng());
        a.next_packet(&mut rng());
        assert_eq!(a.rate_bps, 5e6, "not arrived yet");
        a.next = 10 * MS;
        a.next_packet(&mut rng());
        assert!((a.rate_bps - 28e6 * 1397.0 / 1400.0).abs() < 1.0, "{}", a.rate_bps);
        let mut h = Adaptive::new(Control::Hybrid, 1397, 5e6, 100e6, 10 * MS, 0);
        h.next_packet(&mut rng());
        h.recommendation(0, 28e6);
        h.next = 10 * MS;
        h.next_packet(&mut rng());
        assert!(h.rate_bps > 27e6, "no marks: ANBR's higher rate ({})", h.rate_bps);
        // A mark: Prague's rate, cut.
        h.delivered(10 * MS, 11 * MS, 3);
        h.next = 30 * MS;
        h.next_packet(&mut rng());
        assert!(h.rate_bps < 27e6, "marked: Prague's rate ({})", h.rate_bps);
    }

    #[test]
    fn video_frames_follow_the_rate_and_are_paced_across_their_interval() {
        // 30 Mbit/s at 60 fps: 62.5 kB frames (TR 38.838), 45 packets of 1400 bytes each spread
        // over 16.7 ms; over 10 s the bytes make 30 Mbit/s within 2 %.
        let mut s = Adaptive::new(Control::Constant, 1400, 30e6, 30e6, 10 * MS, 0)
            .with_video(VideoShape { fps: 60.0, size_std_frac: 0.105 });
        let mut r = rng();
        let mut pkts = vec![];
        loop {
            let p = s.next_packet(&mut r);
            if p.0 >= 10_000 * MS {
                break;
            }
            pkts.push(p);
        }
        let bits: f64 = pkts.iter().map(|p| f64::from(p.1) * 8.0).sum();
        assert!((bits / 10.0 / 30e6 - 1.0).abs() < 0.02, "{}", bits / 10.0);
        assert!(pkts.windows(2).all(|w| w[1].0 >= w[0].0), "in time order");
        // Paced: no two packets at the same instant, none more than a frame's interval apart.
        let gaps: Vec<i64> = pkts.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps.iter().all(|&g| g > 0 && g < 17 * MS), "{:?}", gaps.iter().max());
        // 600 frames in 10 s.
        let frames = pkts.iter().filter(|p| p.1 < 1400).count();
        assert!((590..=610).contains(&frames), "{frames} frames end in a short packet");
    }
}
