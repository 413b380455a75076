//! The kernel's userfaultfd, wrapped once: the ioctls the coherence engine
//! needs and nothing else.
//!
//! The `userfaultfd` crate needs libclang at build time (its constants come
//! from bindgen) and lacks `UFFDIO_CONTINUE_MODE_WP`, which maps a page and
//! write-protects it in one call; the eight structures and numbers below
//! are the kernel's stable ABI (`include/uapi/linux/userfaultfd.h`).
//!
//! How the engine uses it, on a `memfd` mapped twice (see `space`):
//!
//! 1. The program's view is registered for *missing* faults (the page was
//!    never written), *minor* faults (the page is in the memfd but not
//!    mapped in this view) and *write-protect* faults.
//! 2. A missing or minor fault is resolved by [`Uffd::map`]: the engine has put the
//!    page's current contents into the memfd through its own view; the call
//!    maps it into the program's view, write-protected unless the access was
//!    a write.
//! 3. A write-protect fault is resolved by [`Uffd::unprotect`] once the page
//!    has a twin.
//! 4. [`Uffd::protect`] re-arms write detection at a release;
//!    `MADV_DONTNEED` on the program's view (see `space`) invalidates, so
//!    that the next access is a minor fault again.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const UFFD_API: u64 = 0xAA;
const UFFDIO: u64 = 0xAA;

const fn iowr(nr: u64, size: usize) -> u64 {
    (3 << 30) | ((size as u64) << 16) | (UFFDIO << 8) | nr
}

const fn ior(nr: u64, size: usize) -> u64 {
    (2 << 30) | ((size as u64) << 16) | (UFFDIO << 8) | nr
}

#[repr(C)]
#[derive(Default)]
struct Api {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Range {
    start: u64,
    len: u64,
}

#[repr(C)]
#[derive(Default)]
struct Register {
    range: Range,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Default)]
struct Writeprotect {
    range: Range,
    mode: u64,
}

#[repr(C)]
#[derive(Default)]
struct Continue {
    range: Range,
    mode: u64,
    mapped: i64,
}

/// `struct uffd_msg` as a page fault: 32 bytes.
#[cfg(test)]
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Message {
    event: u8,
    reserved: [u8; 7],
    flags: u64,
    address: u64,
    thread: u32,
    pad: u32,
}

const UFFDIO_API: u64 = iowr(0x3F, size_of::<Api>());
const UFFDIO_REGISTER: u64 = iowr(0x00, size_of::<Register>());
const UFFDIO_WAKE: u64 = ior(0x02, size_of::<Range>());
const UFFDIO_WRITEPROTECT: u64 = iowr(0x06, size_of::<Writeprotect>());
const UFFDIO_CONTINUE: u64 = iowr(0x07, size_of::<Continue>());

const REGISTER_MODE_MISSING: u64 = 1 << 0;
const REGISTER_MODE_WP: u64 = 1 << 1;
const REGISTER_MODE_MINOR: u64 = 1 << 2;
const WRITEPROTECT_MODE_WP: u64 = 1 << 0;
const CONTINUE_MODE_WP: u64 = 1 << 1;

const FEATURE_PAGEFAULT_FLAG_WP: u64 = 1 << 0;
const FEATURE_MISSING_SHMEM: u64 = 1 << 5;
const FEATURE_SIGBUS: u64 = 1 << 7;
const FEATURE_THREAD_ID: u64 = 1 << 8;
const FEATURE_MINOR_SHMEM: u64 = 1 << 10;
const FEATURE_WP_HUGETLBFS_SHMEM: u64 = 1 << 12;
const FEATURES: u64 = FEATURE_PAGEFAULT_FLAG_WP
    | FEATURE_MISSING_SHMEM
    | FEATURE_THREAD_ID
    | FEATURE_MINOR_SHMEM
    | FEATURE_WP_HUGETLBFS_SHMEM;

#[cfg(test)]
const EVENT_PAGEFAULT: u8 = 0x12;
#[cfg(test)]
const PAGEFAULT_FLAG_WRITE: u64 = 1 << 0;
#[cfg(test)]
const PAGEFAULT_FLAG_WP: u64 = 1 << 1;

/// Only faults taken in user mode: what an unprivileged process may ask
/// for when `vm.unprivileged_userfaultfd` is 0.
const USER_MODE_ONLY: libc::c_int = 1;

/// What a fault asks for (faults read from the descriptor: tests only;
/// the engine takes them as signals).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A read of a page that is not mapped.
    Read,
    /// A write to a page that is not mapped.
    Write,
    /// A write to a mapped, write-protected page.
    Protected,
}

/// One page fault read from the descriptor.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The faulting address (not rounded to a page).
    pub address: usize,
    /// What the access was.
    pub access: Access,
    /// The kernel's id of the faulting thread.
    pub thread: u32,
}

/// Whether faults taken inside system calls reach the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Every fault: a `read(2)` into shared memory is served like a load.
    All,
    /// Faults in user mode only (unprivileged, `vm.unprivileged_userfaultfd`
    /// = 0): a system call that touches an unmapped page fails with `EFAULT`.
    UserMode,
}

/// An open userfaultfd, its API handshake done.
#[derive(Debug)]
pub struct Uffd {
    fd: OwnedFd,
    reach: Reach,
}

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

impl Uffd {
    /// Opens a descriptor (kernel and user faults if permitted, user faults
    /// otherwise) and agrees on the features the engine needs: minor faults
    /// and write protection on shared memory, the faulting thread's id,
    /// and, if `sigbus`, faults raised as `SIGBUS` in the faulting thread
    /// instead of queued here (module `fault`).
    pub fn open(sigbus: bool) -> io::Result<Uffd> {
        let flags = libc::O_CLOEXEC | libc::O_NONBLOCK;
        // SAFETY: userfaultfd(2) takes flags and returns a new descriptor.
        let all = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        let (fd, reach) = if all >= 0 {
            (all, Reach::All)
        } else {
            // SAFETY: as above.
            let user = unsafe { libc::syscall(libc::SYS_userfaultfd, flags | USER_MODE_ONLY) };
            (check(user)?, Reach::UserMode)
        };
        // SAFETY: the descriptor was just returned to us and is owned here only.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let mut api = Api {
            api: UFFD_API,
            features: FEATURES | if sigbus { FEATURE_SIGBUS } else { 0 },
            ioctls: 0,
        };
        // SAFETY: UFFDIO_API reads and writes one `struct uffdio_api`.
        check(unsafe { libc::ioctl(fd.as_raw_fd(), UFFDIO_API as _, &mut api) } as _)?;
        Ok(Uffd { fd, reach })
    }

    /// Which faults reach this descriptor.
    pub fn reach(&self) -> Reach {
        self.reach
    }

    /// Registers `[start, start + len)` for faults on unmapped pages (never
    /// in the memfd, or not mapped in this view) and write-protect faults.
    pub fn register(&self, start: usize, len: usize) -> io::Result<()> {
        let mut register = Register {
            range: Range {
                start: start as u64,
                len: len as u64,
            },
            mode: REGISTER_MODE_MISSING | REGISTER_MODE_MINOR | REGISTER_MODE_WP,
            ioctls: 0,
        };
        // SAFETY: UFFDIO_REGISTER reads and writes one `struct uffdio_register`.
        let ret = unsafe { libc::ioctl(self.fd.as_raw_fd(), UFFDIO_REGISTER as _, &mut register) };
        check(ret as _)?;
        Ok(())
    }

    /// Maps the memfd's pages at `[start, start + len)` into the registered
    /// view (step 2), write-protected if `protected`, and wakes the threads
    /// waiting on them. `EEXIST` (another thread's fault mapped them first)
    /// is success.
    pub fn map(&self, start: usize, len: usize, protected: bool) -> io::Result<()> {
        let mut cont = Continue {
            range: Range {
                start: start as u64,
                len: len as u64,
            },
            mode: if protected { CONTINUE_MODE_WP } else { 0 },
            mapped: 0,
        };
        // SAFETY: UFFDIO_CONTINUE reads and writes one `struct uffdio_continue`.
        let ret = unsafe { libc::ioctl(self.fd.as_raw_fd(), UFFDIO_CONTINUE as _, &mut cont) };
        match check(ret as _) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => self.wake(start, len),
            Err(e) => Err(e),
        }
    }

    /// Write-protects the mapped pages of `[start, start + len)` (step 4).
    pub fn protect(&self, start: usize, len: usize) -> io::Result<()> {
        self.writeprotect(start, len, WRITEPROTECT_MODE_WP)
    }

    /// Lifts write protection from `[start, start + len)` and wakes the
    /// threads waiting on it (step 3).
    pub fn unprotect(&self, start: usize, len: usize) -> io::Result<()> {
        self.writeprotect(start, len, 0)
    }

    fn writeprotect(&self, start: usize, len: usize, mode: u64) -> io::Result<()> {
        let mut wp = Writeprotect {
            range: Range {
                start: start as u64,
                len: len as u64,
            },
            mode,
        };
        // SAFETY: UFFDIO_WRITEPROTECT reads one `struct uffdio_writeprotect`.
        check(unsafe { libc::ioctl(self.fd.as_raw_fd(), UFFDIO_WRITEPROTECT as _, &mut wp) } as _)?;
        Ok(())
    }

    /// Wakes the threads waiting on `[start, start + len)` without changing
    /// the mapping: they retry the access.
    pub fn wake(&self, start: usize, len: usize) -> io::Result<()> {
        let mut range = Range {
            start: start as u64,
            len: len as u64,
        };
        // SAFETY: UFFDIO_WAKE reads one `struct uffdio_range`.
        check(unsafe { libc::ioctl(self.fd.as_raw_fd(), UFFDIO_WAKE as _, &mut range) } as _)?;
        Ok(())
    }

    #[cfg(test)]
    /// Reads the faults waiting, up to `into.len()`, without blocking.
    /// Events other than page faults (none are asked for) are skipped.
    pub fn read(&self, into: &mut Vec<Fault>, max: usize) -> io::Result<()> {
        let mut messages = [Message::default(); 16];
        let want = max.min(messages.len());
        // SAFETY: the buffer holds `want` messages of the kernel's layout.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                messages.as_mut_ptr().cast(),
                want * size_of::<Message>(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock => Ok(()),
                _ => Err(e),
            };
        }
        for m in &messages[..n as usize / size_of::<Message>()] {
            if m.event != EVENT_PAGEFAULT {
                continue;
            }
            let access = if m.flags & PAGEFAULT_FLAG_WP != 0 {
                Access::Protected
            } else if m.flags & PAGEFAULT_FLAG_WRITE != 0 {
                Access::Write
            } else {
                Access::Read
            };
            into.push(Fault {
                address: m.address as usize,
                access,
                thread: m.thread,
            });
        }
        Ok(())
    }
}

impl AsRawFd for Uffd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structures_have_the_kernels_sizes() {
        assert_eq!(size_of::<Api>(), 24);
        assert_eq!(size_of::<Register>(), 32);
        assert_eq!(size_of::<Writeprotect>(), 24);
        assert_eq!(size_of::<Continue>(), 32);
        assert_eq!(size_of::<Message>(), 32);
        // The numbers glibc's headers give on x86-64.
        assert_eq!(UFFDIO_API, 0xc018aa3f);
        assert_eq!(UFFDIO_REGISTER, 0xc020aa00);
        assert_eq!(UFFDIO_CONTINUE, 0xc020aa07);
    }
}
