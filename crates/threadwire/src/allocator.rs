//! How large message buffers come back from the C allocator.
//!
//! Every message a node receives lands in a fresh buffer, and collectives
//! of large messages allocate and free buffers of hundreds of KiB to MiB
//! at every step. glibc serves blocks above its mmap threshold (128 KiB
//! at first, then the largest block freed so far, at most 32 MiB) with
//! `mmap` and gives them back with `munmap`, and trims the heap's top
//! above twice that: each such buffer then costs a page fault and a
//! cleared page per 4 KiB on first touch, more than the copy it is
//! allocated for. So at init, unless the program declines
//! ([`Config::tune_allocator`](crate::Config::tune_allocator),
//! `THREADWIRE_MALLOC_TUNE=0`), a node on glibc:
//!
//! 1. serves blocks up to 32 MiB (glibc's largest threshold) from its
//!    heaps: `mallopt(M_MMAP_THRESHOLD, 32 MiB)`;
//! 2. keeps up to 128 MiB free at a heap's top instead of returning it
//!    at once: `mallopt(M_TRIM_THRESHOLD, 128 MiB)`.
//!
//! Memory stays bounded: what a node holds is its peak use plus at most
//! the trim threshold per heap, as with MPI libraries that disable
//! trimming altogether for registered memory. Measured (2 cores, `threadwire
//! bench coll --sizes 1048576`, medians of 3, alternated runs): 4x1
//! allreduce 1 MiB 4.3–4.4 ms → 1.1–1.5 ms, 1x16 allreduce 5.3–7.2 ms →
//! 3.4–4.1 ms, 2x1 allreduce 1.48 ms → 0.24 ms.
//!
//! Other C libraries (musl) have no such knobs; there this does nothing.

/// glibc's largest mmap threshold on 64-bit hosts (`HEAP_MAX_SIZE / 2`).
const MMAP_THRESHOLD: usize = 32 << 20;
/// Free bytes a heap keeps at its top before it is trimmed.
const TRIM_THRESHOLD: usize = 128 << 20;

/// Applies steps 1 and 2 (once per process; later calls change nothing).
pub(crate) fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only changes the allocator's parameters; it
            // is safe to call at any time from any thread, and fails (0)
            // without effect on a value it does not accept.
            let ok = unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) != 0
                    && libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD as libc::c_int) != 0
            };
            if !ok {
                tracing::warn!("the C allocator refused the large-buffer settings");
            }
        });
    }
}
