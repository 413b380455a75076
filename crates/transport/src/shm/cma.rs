//! Cross-memory attach: reading another process's memory with one copy
//! (`process_vm_readv`). The kernel allows it where `ptrace` would be
//! allowed (same user and Yama's `ptrace_scope` ≤ 1 for siblings, or
//! `CAP_SYS_PTRACE`); the channel probes it at setup.

use std::io;

/// What a peer reads at setup to learn whether it may read this process.
static PROBE: [u8; 16] = *b"threadwire-cma\0\x01";

/// The probe's address in this process.
pub(super) fn probe_address() -> u64 {
    PROBE.as_ptr() as u64
}

/// Reads the probe of process `pid` at `address`; `Ok` when it reads back
/// as this build's probe.
pub(super) fn probe(pid: u32, address: u64) -> io::Result<()> {
    let mut got = [0u8; 16];
    let n = read_into(pid, &[(address, 16)], &mut got)?;
    if n != 16 || got != PROBE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the peer's probe reads back wrong",
        ));
    }
    Ok(())
}

/// Reads `len` bytes of process `pid`, gathered from `segments`
/// (address, length), into a new vector.
pub(super) fn read(pid: u32, segments: &[(u64, u64)], len: usize) -> io::Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(len);
    huge_pages(&mut out);
    let spare = out.spare_capacity_mut();
    // SAFETY: the spare capacity is `len` bytes that `out` owns; treating it
    // as `[u8]` for the kernel to write is fine because `read_into` only
    // writes (never reads) the local buffer, and only the bytes it reports
    // are then marked initialized.
    let buffer = unsafe { std::slice::from_raw_parts_mut(spare.as_mut_ptr().cast::<u8>(), len) };
    let n = read_into(pid, segments, buffer)?;
    if n != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("read {n} of {len} bytes from the peer"),
        ));
    }
    // SAFETY: the kernel wrote all `len` bytes.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// Asks for transparent huge pages under a large buffer about to be
/// written: the kernel then faults in and pins 2 MiB at a time instead of
/// 4 KiB (where THP is `madvise`, the common default).
fn huge_pages(v: &mut Vec<u8>) {
    const HUGE: usize = 2 << 20;
    let start = v.as_mut_ptr() as usize;
    let end = start + v.capacity();
    let (lo, hi) = (start.next_multiple_of(HUGE), end & !(HUGE - 1));
    if hi > lo {
        // SAFETY: advice only, on whole pages inside the vector's own
        // allocation; it changes no contents.
        unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
    }
}

/// Fills `buffer` from `segments` of process `pid`, continuing after
/// partial transfers; returns the bytes read (less than `buffer.len()` only
/// if the segments hold less).
pub(super) fn read_into(pid: u32, segments: &[(u64, u64)], buffer: &mut [u8]) -> io::Result<usize> {
    let mut done = 0usize;
    let mut seg = 0usize;
    let mut seg_off = 0u64;
    while done < buffer.len() && seg < segments.len() {
        let remote: Vec<libc::iovec> = segments[seg..]
            .iter()
            .enumerate()
            .take(512)
            .map(|(i, &(addr, len))| {
                let skip = if i == 0 { seg_off } else { 0 };
                libc::iovec {
                    iov_base: addr.wrapping_add(skip) as usize as *mut libc::c_void,
                    iov_len: (len - skip) as usize,
                }
            })
            .collect();
        let local = libc::iovec {
            iov_base: buffer[done..].as_mut_ptr().cast(),
            iov_len: buffer.len() - done,
        };
        // SAFETY: `local` is the unfilled rest of `buffer`, which we own
        // mutably; the remote iovecs are only addresses in the other process,
        // which the kernel checks (EFAULT) — nothing here dereferences them.
        let n = unsafe {
            libc::process_vm_readv(
                pid as libc::pid_t,
                &local,
                1,
                remote.as_ptr(),
                remote.len() as libc::c_ulong,
                0,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            break;
        }
        let mut n = n as u64;
        done += n as usize;
        while n > 0 && seg < segments.len() {
            let left = segments[seg].1 - seg_off;
            if n >= left {
                n -= left;
                seg += 1;
                seg_off = 0;
            } else {
                seg_off += n;
                n = 0;
            }
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_memory_across_segments() {
        let a = vec![1u8; 5000];
        let b: Vec<u8> = (0..=255).collect();
        let segs = [
            (a.as_ptr() as u64, a.len() as u64),
            (b.as_ptr() as u64, b.len() as u64),
        ];
        let got = read(std::process::id(), &segs, a.len() + b.len()).unwrap();
        assert_eq!(&got[..5000], &a[..]);
        assert_eq!(&got[5000..], &b[..]);
        probe(std::process::id(), probe_address()).unwrap();
    }

    #[test]
    fn bad_addresses_are_errors() {
        assert!(read(std::process::id(), &[(8, 64)], 64).is_err());
        assert!(read(std::process::id(), &[(8, 0)], 64).is_err());
        assert!(probe(std::process::id(), 16).is_err());
    }
}
