//! The emulator's clock, how late its model actions run, and how much it takes in.

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

    /// Adds `other`'s observations to these.
    pub fn absorb(&mut self, other: &Lateness) {
        for (c, o) in self.counts.iter_mut().zip(&other.counts) {
            *c += o;
        }
        self.over_1_s += other.over_1_s;
        self.n += other.n;
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// How many were 1 ms late or more (those over 1 s among them).
    pub fn over_1_ms(&self) -> u64 {
        self.counts[1000..].iter().sum::<u64>() + self.over_1_s
    }

    /// How many, p50, p99 and the largest, in µs; and how many were 1 ms late or more, and over 1 s.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "n": self.n,
            "p50_us": self.quantile_us(0.5),
            "p99_us": self.quantile_us(0.99),
            "max_us": self.max_ns / 1000,
            "over_1_ms": self.over_1_ms(),
            "over_1_s": self.over_1_s,
        })
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

/// Turns of the data path's loop that took more than [`LongTurns::OVER_NS`] beyond the sleep they
/// asked for: its thread kept from its CPU — on a virtual machine, by a host that takes a busy
/// vCPU away for milliseconds without the guest seeing it (measured on the benchmark machine:
/// 2–10 ms at a time, up to twice a second, with no context switch in the guest and no steal
/// time counted) — or a page fault, or a piece of work that long. Every slot due
/// meanwhile is late; these say how much of a run's lateness came from such pauses.
#[derive(Default)]
pub struct LongTurns {
    pub n: u64,
    pub total_ns: i64,
    pub max_ns: i64,
}

impl LongTurns {
    pub const OVER_NS: i64 = 1_000_000;

    /// A turn took `ns` beyond its sleep.
    pub fn add(&mut self, ns: i64) {
        if ns > Self::OVER_NS {
            self.n += 1;
            self.total_ns += ns;
            self.max_ns = self.max_ns.max(ns);
        }
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "n": self.n,
            "total_ms": self.total_ns as f64 / 1e6,
            "max_ms": self.max_ns as f64 / 1e6,
            "note": "turns of the data path's loop that took over 1 ms beyond the sleep they asked for: its thread kept from its CPU (on a virtual machine, the host taking a busy vCPU away, which the guest does not see), a page fault, or that much work; every slot due meanwhile is late (docs/emulator.md)",
        })
    }
}

/// Paces what the loop takes in to what it can process on time.
///
/// Every packet taken into the model commits the loop to work later (its path through UPF, CU-UP,
/// RLC, MAC, delivery: about a dozen model actions and two dozen events), mostly a millisecond or
/// more after it was read. Reading only while the loop is idle does not bound that: a TCP burst of
/// a thousand segments (a cwnd opened by ACKs that an UL grant released together) is read in a few
/// hundred µs, and its work lands on the slots of the next milliseconds. So the loop holds a credit
/// of CPU time, earned at [`Admission::SHARE`] of the wall clock up to [`Admission::BURST_NS`], and
/// each packet taken in spends the loop's measured work per packet; while the credit is spent the
/// devices are not read, and what waits there waits in the kernel's queue, as on a slower link.
pub struct Admission {
    credit_ns: f64,
    last: i64,
    /// Work per packet taken in, ns: busy time over packets, averaged over windows of
    /// [`Admission::WINDOW_NS`].
    pub cost_ns: f64,
    window_start: i64,
    slept_ns: i64,
    packets: u64,
    /// The share of the last window the loop was busy (not asleep).
    pub busy: f64,
    /// The share of a CPU the loop's thread used in the last window (its spinning included),
    /// and the thread's CPU time at the window's start (from the end of the first window: the
    /// loop is made on another thread).
    pub cpu: f64,
    cpu_start: Option<i64>,
}

/// The calling thread's CPU time, ns.
fn thread_cpu_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime(2) fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

impl Admission {
    /// The share of the wall clock the loop commits (its measured work per packet already counts
    /// its overheads: sleeping, waking, slots without packets). The rest is headroom: a packet's
    /// work does not come evenly (a TCP super-packet read at once is 44 segments whose actions
    /// fall due together a millisecond later), and at 1.0 four iperf3 streams ran slots late by
    /// p99 99–110 µs, at 0.85 by less than 100 µs (bench/RESULTS.md).
    pub const SHARE: f64 = 0.85;
    /// The most credit the loop can save up: the work of a burst taken in at once.
    pub const BURST_NS: f64 = 50_000.0;
    /// How often the work per packet is measured again.
    pub const WINDOW_NS: i64 = 50_000_000;
    /// The work per packet assumed before the first measurement.
    const FIRST_COST_NS: f64 = 4_000.0;

    pub fn new(now: i64) -> Admission {
        Admission {
            credit_ns: Self::BURST_NS,
            last: now,
            cost_ns: Self::FIRST_COST_NS,
            window_start: now,
            slept_ns: 0,
            packets: 0,
            busy: 0.0,
            cpu: 0.0,
            cpu_start: None,
        }
    }

    /// Whether the loop may take more in at `now`.
    pub fn open(&mut self, now: i64) -> bool {
        self.credit_ns = (self.credit_ns + (now - self.last) as f64 * Self::SHARE).min(Self::BURST_NS);
        self.last = now;
        self.credit_ns > 0.0
    }

    /// When the credit is earned back (the loop may take more in), as of the last [`Admission::open`].
    pub fn open_at(&self) -> i64 {
        self.last + (-self.credit_ns / Self::SHARE).max(0.0).ceil() as i64 + 1
    }

    /// `packets` were taken in.
    pub fn took(&mut self, packets: usize) {
        self.credit_ns -= packets as f64 * self.cost_ns;
        self.packets += packets as u64;
    }

    /// The loop slept `ns` until `now`; at the end of a window, how busy it was and how much CPU
    /// its thread used (the caller's: call it from the loop's thread), and with enough
    /// packets to measure, the work per packet is measured again (an average that weighs the
    /// newest window 30 %).
    pub fn slept(&mut self, ns: i64, now: i64) {
        self.slept_ns += ns;
        let elapsed = now - self.window_start;
        if elapsed >= Self::WINDOW_NS {
            self.busy = (elapsed - self.slept_ns).max(0) as f64 / elapsed as f64;
            let cpu = thread_cpu_ns();
            if let Some(start) = self.cpu_start {
                self.cpu = (cpu - start) as f64 / elapsed as f64;
            }
            self.cpu_start = Some(cpu);
            if self.packets >= 1000 {
                let busy = (elapsed - self.slept_ns).max(0) as f64;
                self.cost_ns = 0.7 * self.cost_ns + 0.3 * busy / self.packets as f64;
            }
            (self.window_start, self.slept_ns, self.packets) = (now, 0, 0);
        }
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
        // 1 ms or later: the one over 1 s, and 1 ms itself, not 999.999 µs.
        assert_eq!(l.over_1_ms(), 1);
        l.add(999_999);
        l.add(1_000_000);
        assert_eq!((l.over_1_ms(), l.json()["over_1_ms"].as_u64()), (2, Some(2)));
    }

    #[test]
    fn only_turns_over_a_millisecond_count_as_long() {
        let mut l = LongTurns::default();
        for ns in [5_000, 999_999, 1_000_000, 1_000_001, 8_000_000] {
            l.add(ns);
        }
        assert_eq!((l.n, l.total_ns, l.max_ns), (2, 9_000_001, 8_000_000));
        assert_eq!(l.json()["max_ms"], serde_json::json!(8.0));
    }

    #[test]
    fn admission_spends_credit_per_packet_and_earns_it_back() {
        let mut a = Admission::new(0);
        assert!(a.open(0));
        // A burst of 13 packets at the first 4 µs each overdraws the 50-µs credit by 2 µs.
        a.took(13);
        assert!(!a.open(0));
        // SHARE ns of credit per ns of wall clock: back above zero after 2 µs / SHARE.
        let back = (2_000.0 / Admission::SHARE).ceil() as i64 + 1;
        assert_eq!(a.open_at(), back);
        assert!(!a.open(back - 2));
        assert!(a.open(back));
        // However long the loop idles, it saves up one burst's credit.
        assert!(a.open(1_000_000_000));
        a.took(13);
        assert!(!a.open(1_000_000_000));
    }

    #[test]
    fn admission_measures_the_work_per_packet() {
        let mut a = Admission::new(0);
        // A window of 50 ms: 20 ms asleep, 10 000 packets → 3 µs each; the average moves 30 % there.
        a.took(10_000);
        a.slept(20_000_000, Admission::WINDOW_NS);
        assert!((a.cost_ns - (0.7 * 4_000.0 + 0.3 * 3_000.0)).abs() < 1e-6, "{}", a.cost_ns);
        // A window with too few packets to tell keeps the estimate.
        let before = a.cost_ns;
        a.took(10);
        a.slept(0, 2 * Admission::WINDOW_NS);
        assert_eq!(a.cost_ns, before);
    }
}
