//! Shared memory between two node processes: an anonymous `memfd`, mapped
//! by its creator and opened by the peer through `/proc/<pid>/fd/<fd>`.
//!
//! No name is ever created in `/dev/shm` or any file system, so nothing can
//! be left behind: the memory is freed by the kernel when the last mapping
//! and descriptor are gone, whether the processes exit normally or are
//! killed. The `memfd` name (seen only in `/proc/<pid>/maps`) carries the
//! job id and the two nodes, for whoever debugs a live job.
//!
//! 1. The creator makes the memfd, sizes it and maps it, and tells the peer
//!    (over their authenticated TCP connection) its pid, the descriptor
//!    number and the length.
//! 2. The peer opens `/proc/<pid>/fd/<fd>` — allowed only to the same user
//!    (or root), as for any `/proc/<pid>` access — checks the size and maps
//!    it, then says so.
//! 3. The creator closes its descriptor; both mappings stay valid.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

/// A shared mapping, unmapped on drop.
#[derive(Debug)]
pub struct Region {
    base: NonNull<u8>,
    len: usize,
    /// The creator's descriptor, until the peer has opened its own.
    fd: Option<OwnedFd>,
}

// SAFETY: the mapping is plain memory valid for the Region's life; what is
// stored in it and how it is accessed is the business of its users (the
// ring, which uses atomics only).
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    /// Step 1: a new zeroed shared region of `len` bytes named `name`.
    pub fn create(name: &str, len: usize) -> io::Result<Region> {
        let cname = CString::new(name).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: a valid C string; flags are constants.
        let raw = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a fresh descriptor we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a valid descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let base = map(&fd, len)?;
        Ok(Region {
            base,
            len,
            fd: Some(fd),
        })
    }

    /// Step 2: maps the region `fd` of process `pid`, which must be exactly
    /// `len` bytes long.
    pub fn open_peer(pid: u32, fd: i32, len: usize) -> io::Result<Region> {
        let path = CString::new(format!("/proc/{pid}/fd/{fd}")).expect("no NUL in a path");
        // SAFETY: a valid C string; flags are constants.
        let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: open returned a fresh descriptor we now own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: a zeroed stat is a valid buffer for fstat to fill.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and buffer.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if stat.st_size as u64 != len as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("shared region is {} bytes, expected {len}", stat.st_size),
            ));
        }
        let base = map(&fd, len)?;
        Ok(Region {
            base,
            len,
            fd: None,
        })
    }

    /// The descriptor number to tell the peer (step 1), while held.
    pub fn raw_fd(&self) -> Option<i32> {
        self.fd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Step 3: the peer has its own mapping; drop our descriptor.
    pub fn close_fd(&mut self) {
        self.fd = None;
    }

    /// Start of the mapping (page-aligned).
    pub fn as_ptr(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn map(fd: &OwnedFd, len: usize) -> io::Result<NonNull<u8>> {
    // SAFETY: mapping a descriptor we hold, shared, with no fixed address.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped; nothing refers to it
        // after the Region is gone (its users borrow it).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_sees_what_the_creator_wrote() {
        let mut created = Region::create("threadwire-test", 1 << 16).unwrap();
        let fd = created.raw_fd().unwrap();
        let opened = Region::open_peer(std::process::id(), fd, 1 << 16).unwrap();
        created.close_fd();
        // SAFETY: both regions are live mappings of 64 KiB.
        unsafe {
            created.as_ptr().add(100).write_volatile(42);
            assert_eq!(opened.as_ptr().add(100).read_volatile(), 42);
        }
        assert_ne!(created.as_ptr(), opened.as_ptr());
    }

    #[test]
    fn wrong_length_and_missing_descriptor_are_errors() {
        let created = Region::create("threadwire-test", 4096).unwrap();
        let fd = created.raw_fd().unwrap();
        let e = Region::open_peer(std::process::id(), fd, 8192).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(Region::open_peer(std::process::id(), 9999, 4096).is_err());
    }
}
