//! The memory of a node's shared space: one `memfd` mapped twice.
//!
//! - The **program's view** sits at the same address on every node (the
//!   address is part of the job's agreement, so that pointers stored in
//!   shared memory mean the same everywhere). It is registered with the
//!   userfaultfd: its pages are mapped only while they are valid here, and
//!   write-protected until the node writes them.
//! - The **engine's view** sits wherever the kernel puts it and is never
//!   watched: through it the engine installs fetched pages, takes twins,
//!   computes diffs and applies other nodes' diffs without taking a fault.
//!
//! Invalidating a page drops its mapping in the program's view only
//! (`MADV_DONTNEED` on a shared mapping leaves the memfd's page): the next
//! access faults, and the engine decides whether the contents it holds are
//! current or must be fetched.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

/// A `memfd` and its two views.
#[derive(Debug)]
pub struct Space {
    memfd: OwnedFd,
    program: NonNull<u8>,
    engine: NonNull<u8>,
    len: usize,
}

// SAFETY: the views are plain memory shared by design; every access is
// through raw pointers whose rules the engine states (module `engine`).
unsafe impl Send for Space {}
// SAFETY: as above.
unsafe impl Sync for Space {}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl Space {
    /// Maps `len` bytes (a multiple of the system's page) with the program's
    /// view at `base`, failing with `EEXIST` if anything is mapped there.
    pub fn new(base: usize, len: usize) -> io::Result<Space> {
        // SAFETY: memfd_create takes a NUL-terminated name and flags.
        let fd =
            check(unsafe { libc::memfd_create(c"threadwire-dsm".as_ptr(), libc::MFD_CLOEXEC) })?;
        // SAFETY: the descriptor was just created and is owned here only.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: ftruncate on our own descriptor.
        check(unsafe { libc::ftruncate(memfd.as_raw_fd(), len as libc::off_t) })?;
        let program = map(base, len, &memfd, libc::MAP_FIXED_NOREPLACE)?;
        if program.as_ptr() as usize != base {
            // Kernels before 4.17 ignore MAP_FIXED_NOREPLACE and treat the
            // address as a hint.
            unmap(program, len);
            return Err(io::Error::from_raw_os_error(libc::EEXIST));
        }
        let engine = match map(0, len, &memfd, 0) {
            Ok(engine) => engine,
            Err(e) => {
                unmap(program, len);
                return Err(e);
            }
        };
        Ok(Space {
            memfd,
            program,
            engine,
            len,
        })
    }

    /// Where the program sees the space.
    pub fn program(&self) -> *mut u8 {
        self.program.as_ptr()
    }

    /// Where the engine sees the same bytes.
    pub fn engine(&self) -> *mut u8 {
        self.engine.as_ptr()
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Drops the program's mapping of `[offset, offset + len)`: its next
    /// access faults.
    pub fn invalidate(&self, offset: usize, len: usize) -> io::Result<()> {
        debug_assert!(offset + len <= self.len);
        // SAFETY: the range lies in the program's view, which we mapped;
        // MADV_DONTNEED on a shared mapping keeps the memfd's contents.
        check(unsafe {
            libc::madvise(
                self.program.as_ptr().add(offset).cast(),
                len,
                libc::MADV_DONTNEED,
            )
        })?;
        Ok(())
    }

    /// Gives the never-written pages of `[offset, offset + len)` their
    /// memfd pages (zeros), so that the program's view can map them: a
    /// missing fault becomes a page the engine can resolve like a minor one.
    pub fn populate(&self, offset: usize, len: usize) -> io::Result<()> {
        // SAFETY: allocating inside our own memfd's size; existing pages
        // are kept.
        check(unsafe {
            libc::fallocate(
                self.memfd.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                len as libc::off_t,
            )
        })?;
        Ok(())
    }
}

impl Drop for Space {
    fn drop(&mut self) {
        unmap(self.program, self.len);
        unmap(self.engine, self.len);
    }
}

fn map(at: usize, len: usize, memfd: &OwnedFd, fixed: libc::c_int) -> io::Result<NonNull<u8>> {
    // SAFETY: a new shared mapping of our memfd; with MAP_FIXED_NOREPLACE
    // the kernel refuses rather than replace an existing mapping.
    let p = unsafe {
        libc::mmap(
            at as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | fixed,
            memfd.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(NonNull::new(p.cast()).expect("mmap returned a mapping at 0"))
}

fn unmap(p: NonNull<u8>, len: usize) {
    // SAFETY: `p` is a mapping of `len` bytes made by `map` and used by no
    // one after this (the space is being dropped or was never returned).
    unsafe { libc::munmap(p.as_ptr().cast(), len) };
}
