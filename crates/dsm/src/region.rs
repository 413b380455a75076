//! A shared array: [`Dsm::alloc`](crate::Dsm::alloc)'s result, or
//! [`Region::local`]'s array of one process's memory with the same
//! interface.

use crate::Dsm;
use std::marker::PhantomData;
use std::sync::Arc;

/// An array of `T` in the shared space, at the same address on every node.
/// Clone it to every thread; element access is by value ([`get`](Self::get),
/// [`set`](Self::set)) or, for loops that need slices, through the
/// `unsafe` [`as_slice`](Self::as_slice) and
/// [`as_mut_slice`](Self::as_mut_slice), whose contract is the program's
/// freedom from data races.
#[derive(Debug)]
pub struct Region<T> {
    at: *mut T,
    len: usize,
    owner: Owner,
    _t: PhantomData<T>,
}

/// What holds a region's memory.
#[derive(Clone, Debug)]
enum Owner {
    /// The shared space.
    Shared(Dsm),
    /// An anonymous mapping of this process, unmapped with the last clone.
    Local { _mapping: Arc<Mapping> },
}

/// An anonymous private mapping.
#[derive(Debug)]
struct Mapping {
    at: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is plain memory; who may touch it is the region's
// contract.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped by `Region::local`, unmapped once, here.
        unsafe { libc::munmap(self.at, self.len) };
    }
}

// SAFETY: the region is memory shared by every thread by design; `T` is
// plain data (`Pod`) and every access goes through the methods below,
// whose rules are the program's (module docs of the crate).
unsafe impl<T: Send> Send for Region<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Region<T> {}

impl<T> Clone for Region<T> {
    fn clone(&self) -> Self {
        Region {
            at: self.at,
            len: self.len,
            owner: self.owner.clone(),
            _t: PhantomData,
        }
    }
}

impl<T: bytemuck::Pod> Region<T> {
    pub(crate) fn new(at: *mut T, len: usize, dsm: Dsm) -> Region<T> {
        Region {
            at,
            len,
            owner: Owner::Shared(dsm),
            _t: PhantomData,
        }
    }

    /// `n` zeroed `T`s of this process's own memory, with a region's
    /// interface: the threads of the process share it, other nodes never
    /// see it. It is what a program written against regions runs on
    /// without the distributed shared memory — the baseline the DSM is
    /// measured against. Its pages are mapped at once (`MAP_POPULATE`):
    /// a first touch page by page costs a fault per 4 KiB page, several
    /// µs each in a virtual machine, which the shared space's faults (a
    /// run of units at once, engine rule 9) do not, and a baseline that
    /// paid them would flatter the DSM.
    ///
    /// ```
    /// let a = threadwire_dsm::Region::<u64>::local(1000).unwrap();
    /// a.set(7, 49);
    /// assert_eq!(a.get(7), 49);
    /// assert!(a.dsm().is_none());
    /// ```
    ///
    /// # Errors
    ///
    /// When the OS refuses the mapping.
    pub fn local(n: usize) -> std::io::Result<Region<T>> {
        let len = n
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?
            .max(1);
        // SAFETY: a fresh anonymous private mapping; checked below.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Region {
            at: at.cast(),
            len: n,
            owner: Owner::Local {
                _mapping: Arc::new(Mapping { at, len }),
            },
            _t: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its address, the same on every node: a pointer to it may be stored
    /// in shared memory and followed anywhere.
    pub fn as_ptr(&self) -> *mut T {
        self.at
    }

    /// Asks the homes of elements `range` for the units this node does
    /// not hold, all at once, and returns without waiting: a thread that
    /// computes on one part of an array while the next arrives hides the
    /// fetches' latency (engine rule 11). Nothing for units already here
    /// or on their way, and for a [`local`](Self::local) region.
    ///
    /// # Panics
    ///
    /// When `range` is not within the region.
    pub fn prefetch(&self, range: std::ops::Range<usize>) {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "{range:?} out of {}",
            self.len
        );
        if let Owner::Shared(dsm) = &self.owner {
            let size = std::mem::size_of::<T>();
            // SAFETY: within the region (checked above); only the address
            // is computed.
            let at = unsafe { self.at.add(range.start) } as usize;
            dsm.prefetch(at, range.len() * size);
        }
    }

    /// The shared space it belongs to; `None` for a [`local`](Self::local)
    /// region.
    pub fn dsm(&self) -> Option<&Dsm> {
        match &self.owner {
            Owner::Shared(dsm) => Some(dsm),
            Owner::Local { .. } => None,
        }
    }

    /// Element `i`.
    ///
    /// # Panics
    ///
    /// When `i` is out of bounds.
    pub fn get(&self, i: usize) -> T {
        assert!(i < self.len, "index {i} out of a region of {}", self.len);
        // SAFETY: in bounds; a volatile read, because another thread may
        // write the element (a racy program sees old or new, never torn
        // for a `T` the machine reads at once).
        unsafe { self.at.add(i).read_volatile() }
    }

    /// Writes element `i`.
    ///
    /// # Panics
    ///
    /// When `i` is out of bounds.
    pub fn set(&self, i: usize, value: T) {
        assert!(i < self.len, "index {i} out of a region of {}", self.len);
        // SAFETY: in bounds; volatile for the reason `get` gives.
        unsafe { self.at.add(i).write_volatile(value) }
    }

    /// The elements as a slice.
    ///
    /// # Safety
    ///
    /// No thread of any node may write the elements read through it while
    /// it lives, unless a barrier orders the two.
    pub unsafe fn as_slice(&self) -> &[T] {
        // SAFETY: the mapping holds `len` elements; the caller keeps writers
        // away.
        unsafe { std::slice::from_raw_parts(self.at, self.len) }
    }

    /// Elements `range` as a slice.
    ///
    /// # Safety
    ///
    /// As [`as_slice`](Self::as_slice), for the elements in `range`.
    ///
    /// # Panics
    ///
    /// When `range` is not within the region.
    pub unsafe fn slice(&self, range: std::ops::Range<usize>) -> &[T] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "{range:?} out of {}",
            self.len
        );
        // SAFETY: within the mapping; the caller keeps writers away.
        unsafe { std::slice::from_raw_parts(self.at.add(range.start), range.len()) }
    }

    /// Elements `range` as a mutable slice: threads may hold slices of
    /// disjoint ranges at once.
    ///
    /// # Safety
    ///
    /// As [`as_mut_slice`](Self::as_mut_slice), for the elements in `range`.
    ///
    /// # Panics
    ///
    /// When `range` is not within the region.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut(&self, range: std::ops::Range<usize>) -> &mut [T] {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "{range:?} out of {}",
            self.len
        );
        // SAFETY: within the mapping; the caller keeps other accesses away.
        unsafe { std::slice::from_raw_parts_mut(self.at.add(range.start), range.len()) }
    }

    /// The elements as a mutable slice.
    ///
    /// # Safety
    ///
    /// No other thread of any node may read or write the elements written
    /// through it while it lives, unless a barrier orders them; threads
    /// may hold such slices of disjoint parts at once (split it).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice(&self) -> &mut [T] {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts_mut(self.at, self.len) }
    }
}
