//! Large buffers backed by transparent huge pages where the kernel offers them.
//!
//! The kernel's default (`/sys/kernel/mm/transparent_hugepage/enabled` = `madvise`) backs memory
//! with 4 KiB pages unless asked: filling the kernel's hundreds of megabytes of keys then takes a
//! page fault every 4 KiB — a third of the run time in a virtual machine, where each fault also
//! exits to the hypervisor. `MADV_HUGEPAGE` asks for 2 MiB pages; it is only advice, and a kernel
//! without THP ignores it.

/// An empty vector with room for `cap` elements, its memory advised as huge pages.
pub fn huge_vec<T>(cap: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(cap);
    advise(v.as_ptr() as *const u8, cap * std::mem::size_of::<T>());
    v
}

/// `n` copies of `x` in a huge-page-advised vector.
pub fn huge_filled<T: Clone>(n: usize, x: T) -> Vec<T> {
    let mut v = huge_vec(n);
    v.resize(n, x);
    v
}

fn advise(ptr: *const u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < 2 * HUGE {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + len) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside the vector's own allocation, which stays alive; the advice
        // changes how the kernel backs the pages, never their contents or validity.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}
