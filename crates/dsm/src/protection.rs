//! How the engine learns of the program's accesses: userfaultfd, or, where
//! the kernel does not permit it, `mprotect` and `SIGSEGV`.
//!
//! Both give the engine the same four operations on ranges of the
//! program's view, so that the engine's rules read the same with either:
//!
//! | operation   | userfaultfd (module `uffd`)            | `mprotect`              |
//! |-------------|-----------------------------------------|-------------------------|
//! | [`map`](Protection::map) | `UFFDIO_CONTINUE` (write-protected or not) | `PROT_READ` or `PROT_READ \| PROT_WRITE` |
//! | [`protect`](Protection::protect) | `UFFDIO_WRITEPROTECT` on | `PROT_READ`   |
//! | [`unprotect`](Protection::unprotect) | `UFFDIO_WRITEPROTECT` off | `PROT_READ \| PROT_WRITE` |
//! | [`unmap`](Protection::unmap) | `MADV_DONTNEED` (module `space`) | `PROT_NONE` |
//!
//! A fault arrives as `SIGBUS` from userfaultfd (its `UFFD_FEATURE_SIGBUS`)
//! and as `SIGSEGV` from `mprotect`, in the faulting thread either way
//! (module `fault`).
//!
//! The fallback's costs: an `mprotect` takes 3–8 µs against 1–2 µs for the
//! ioctls, and every boundary between units of different protection
//! splits the view's mapping in the kernel, whose count per process is
//! bounded by `vm.max_map_count` (65,530 by default): a node holding
//! copies of tens of thousands of scattered units may reach it, and then
//! the engine stops the node with that sysctl named. Runs of units mapped
//! alike (engine rule 9) share one mapping.

use crate::space::Space;
use crate::uffd::{Reach, Uffd};
use std::io;

/// Which mechanism tells the engine of the program's accesses
/// ([`DsmConfig::faults`](crate::DsmConfig::faults)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Faults {
    /// userfaultfd where the kernel permits it, else `mprotect`; the
    /// environment variable `THREADWIRE_DSM_FAULTS` (`userfaultfd` or
    /// `mprotect`) chooses instead when set.
    #[default]
    Auto,
    /// userfaultfd only: write protection without splitting mappings,
    /// faults inside system calls served (when permitted for the user).
    Userfaultfd,
    /// `mprotect` and `SIGSEGV`, as the seed's DSM did.
    Mprotect,
}

impl Faults {
    /// `Auto` resolved by `THREADWIRE_DSM_FAULTS`; a value it does not
    /// know is an error.
    fn chosen(self) -> io::Result<Faults> {
        if self != Faults::Auto {
            return Ok(self);
        }
        match std::env::var("THREADWIRE_DSM_FAULTS").as_deref() {
            Err(_) | Ok("") | Ok("auto") => Ok(Faults::Auto),
            Ok("userfaultfd") => Ok(Faults::Userfaultfd),
            Ok("mprotect") => Ok(Faults::Mprotect),
            Ok(other) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("THREADWIRE_DSM_FAULTS={other}: auto, userfaultfd or mprotect"),
            )),
        }
    }
}

/// The mechanism in use for one space.
#[derive(Debug)]
pub enum Protection {
    /// userfaultfd, registered on the program's view.
    Uffd(Uffd),
    /// `mprotect`: the program's view starts `PROT_NONE`.
    Mprotect,
}

impl Protection {
    /// The mechanism `faults` asks for, set up on `space`'s program view.
    pub fn open(faults: Faults, space: &Space) -> io::Result<Protection> {
        let faults = faults.chosen()?;
        if faults != Faults::Mprotect {
            let opened = Uffd::open(true).and_then(|uffd| {
                uffd.register(space.program() as usize, space.len())?;
                Ok(uffd)
            });
            match opened {
                Ok(uffd) => {
                    if uffd.reach() == Reach::UserMode {
                        tracing::warn!(
                            "userfaultfd serves user-mode faults only (vm.unprivileged_userfaultfd=0): \
                             a system call reading or writing shared memory not yet mapped fails with EFAULT"
                        );
                    }
                    return Ok(Protection::Uffd(uffd));
                }
                Err(e) if faults == Faults::Userfaultfd => return Err(e),
                Err(e) => tracing::info!("userfaultfd unavailable ({e}): mprotect instead"),
            }
        }
        set(space.program() as usize, space.len(), libc::PROT_NONE)?;
        Ok(Protection::Mprotect)
    }

    /// The signal a fault arrives as.
    pub fn signal(&self) -> libc::c_int {
        match self {
            Protection::Uffd(_) => libc::SIGBUS,
            Protection::Mprotect => libc::SIGSEGV,
        }
    }

    /// Maps `[start, start + len)` of the program's view to the memfd's
    /// bytes: read-only if `protected`, else writable.
    pub fn map(&self, start: usize, len: usize, protected: bool) -> io::Result<()> {
        match self {
            Protection::Uffd(uffd) => uffd.map(start, len, protected),
            Protection::Mprotect if protected => set(start, len, libc::PROT_READ),
            Protection::Mprotect => set(start, len, libc::PROT_READ | libc::PROT_WRITE),
        }
    }

    /// Makes the next write to the mapped range fault.
    pub fn protect(&self, start: usize, len: usize) -> io::Result<()> {
        match self {
            Protection::Uffd(uffd) => uffd.protect(start, len),
            Protection::Mprotect => set(start, len, libc::PROT_READ),
        }
    }

    /// Lets writes to the mapped range through.
    pub fn unprotect(&self, start: usize, len: usize) -> io::Result<()> {
        match self {
            Protection::Uffd(uffd) => uffd.unprotect(start, len),
            Protection::Mprotect => set(start, len, libc::PROT_READ | libc::PROT_WRITE),
        }
    }

    /// Unmaps `[offset, offset + len)` of `space`'s program view: the next
    /// access faults (the memfd keeps its bytes).
    pub fn unmap(&self, space: &Space, offset: usize, len: usize) -> io::Result<()> {
        match self {
            Protection::Uffd(_) => space.invalidate(offset, len),
            Protection::Mprotect => set(space.program() as usize + offset, len, libc::PROT_NONE),
        }
    }
}

/// `mprotect`, its `ENOMEM` of too many mappings named.
fn set(start: usize, len: usize, prot: libc::c_int) -> io::Result<()> {
    // SAFETY: the range lies in the program's view of our space; changing
    // its protection touches no memory.
    if unsafe { libc::mprotect(start as *mut libc::c_void, len, prot) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOMEM) => Err(io::Error::new(
            io::ErrorKind::OutOfMemory,
            "mprotect: the view's mappings exceed vm.max_map_count (raise it, or run with userfaultfd)",
        )),
        _ => Err(e),
    }
}
