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
