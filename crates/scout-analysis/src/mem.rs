//! Memory helpers of the kernel.
//!
//! Measured on the 2-core VM of bench/RESULTS.md: touching fresh memory costs 0.6 s/GiB with 4 KiB
//! pages, seven times a rewrite, so buffers are reused between batches and tasks. Advising the large
//! buffers as transparent huge pages (`MADV_HUGEPAGE`) made the kernel *slower* (6.3–6.9 s against
//! 4.9–5.5 s on the 52.6 M-event run): a fault on a huge page is served by direct compaction there.

/// A vector's spare capacity written by several threads at disjoint indices (a counting sort's
/// placement), before the vector's length is set.
pub struct Scatter<T> {
    ptr: *mut T,
    cap: usize,
}

// SAFETY: writers only ever touch disjoint indices (the callers' contract on `write`).
unsafe impl<T: Send> Sync for Scatter<T> {}

impl<T> Scatter<T> {
    pub fn new(v: &mut Vec<T>) -> Self {
        Scatter { ptr: v.as_mut_ptr(), cap: v.capacity() }
    }

    /// Writes `x` at index `i`.
    ///
    /// # Safety
    /// No other thread writes index `i`, the vector outlives the writes and is neither moved nor
    /// resized meanwhile.
    #[inline]
    pub unsafe fn write(&self, i: usize, x: T) {
        assert!(i < self.cap, "slot {i} beyond the capacity {}", self.cap);
        self.ptr.add(i).write(x);
    }
}

/// Bytes the kernel keeps per event of a window while it is read and walked: its order key (8),
/// the enqueue records (24 per enqueue, about one event in five), the per-packet aggregates and
/// counts (about 100 bytes per packet of ~20 events), with room for the decoders' batches.
const WINDOW_BYTES_PER_EVENT: u64 = 24;

/// Bytes per event of the whole analysis in one pass (measured: 1.62 GB for 50.2 M events).
const ONE_PASS_BYTES_PER_EVENT: u64 = 32;

/// Bytes the profiles' per-packet inputs keep per event of the whole run (39 per packet of ~26
/// events); their component rows (13 per row, ~11 rows per packet) go to files in windows.
const PROFILE_BYTES_PER_EVENT: u64 = 2;

/// What `memory` leaves beside the profiles' per-packet inputs of a run of `events` events.
fn room(memory: u64, events: u64) -> u64 {
    memory.saturating_sub(events * PROFILE_BYTES_PER_EVENT)
}

/// The events a window may hold when the analysis of a run of `events` events may use `memory`
/// bytes: `None` when the run fits in one pass; else half of what the profiles' inputs leave (the
/// other half: the walk's batches, the writers, the (queue, bin) folds), at least 2^16 events
/// (below that, re-reading the row groups that straddle windows would cost more than the windows
/// save).
pub fn window_events(memory: u64, events: u64) -> Option<u64> {
    if events.saturating_mul(ONE_PASS_BYTES_PER_EVENT) <= memory {
        return None;
    }
    Some((room(memory, events) / 2 / WINDOW_BYTES_PER_EVENT).max(1 << 16))
}

/// The component values a profile thread places at a time (8 bytes each): a quarter of the room,
/// shared by `threads` threads.
pub fn profile_values(memory: u64, events: u64, threads: usize) -> usize {
    (room(memory, events) / 4 / threads.max(1) as u64 / 8).max(1 << 20) as usize
}

/// Memory available to this process: the smaller of the system's `MemAvailable` and what the
/// memory cgroup it is in (v2 `memory.max`, or v1 `memory.limit_in_bytes`) leaves; `None` when
/// neither can be read.
pub fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kb| kb * 1024)
    });
    [meminfo, cgroup_room()].into_iter().flatten().min()
}

/// The cgroup's limit minus its usage (the innermost limited cgroup on the process's path).
fn cgroup_room() -> Option<u64> {
    let me = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |p: &str| std::fs::read_to_string(p).ok()?.trim().parse::<u64>().ok();
    for line in me.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let (base, limit, usage) = match controllers {
            "" => ("/sys/fs/cgroup", "memory.max", "memory.current"),
            c if c.split(',').any(|c| c == "memory") => {
                ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes")
            }
            _ => continue,
        };
        // v2 may be mounted under /sys/fs/cgroup/unified beside v1 controllers.
        for root in [base, "/sys/fs/cgroup/unified"] {
            let mut dir = std::path::PathBuf::from(format!("{root}{path}"));
            loop {
                let lim = read(&dir.join(limit).to_string_lossy());
                if let Some(lim) = lim.filter(|&l| l < 1 << 60) {
                    let used = read(&dir.join(usage).to_string_lossy()).unwrap_or(0);
                    return Some(lim.saturating_sub(used));
                }
                if !dir.pop() || dir.as_os_str().len() <= root.len() {
                    break;
                }
            }
        }
    }
    None
}
