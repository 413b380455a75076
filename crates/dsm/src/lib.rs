//! Page-based distributed shared memory for the threads of a threadwire job.
//!
//! Every node maps one shared space at the same address; arrays allocated
//! in it collectively ([`Dsm::alloc`], PARMACS' `G_MALLOC`) are ordinary
//! memory to every thread of every node, kept consistent at barriers
//! ([`Dsm::barrier`]): what a thread wrote before a barrier, every thread
//! reads after it.
//!
//! ```no_run
//! use threadwire_dsm::{Dsm, DsmConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let me = threadwire::init()?; // thread 0 of every node
//! let dsm = Dsm::new(&me, DsmConfig::default())?;
//! let a = dsm.alloc::<u64>(1 << 20)?; // the same array on every node
//! let (node, nodes) = (me.node().id() as usize, me.node().nodes() as usize);
//! for i in (node..a.len()).step_by(nodes) {
//!     a.set(i, i as u64); // each node writes its share
//! }
//! dsm.barrier(&me)?;
//! assert_eq!(a.get(12345), 12345); // and reads everyone's
//! # Ok(())
//! # }
//! ```
//!
//! # How it works
//!
//! - The space is a `memfd` mapped twice (module `space`): the program's
//!   view, watched by the kernel's userfaultfd, and the engine's own.
//! - Memory is kept coherent in units of [`DsmConfig::unit`] bytes (8 KiB,
//!   the seed's page, by default), each with a *home* node that holds its
//!   master copy; units are dealt to homes round robin.
//! - A node reads a unit it does not hold by asking its home (one request,
//!   the unit's bytes in reply); while the fetch is under way, only the
//!   threads touching that unit wait.
//! - Several nodes may write one unit at once (multiple writers): each
//!   keeps a twin of the unit at its first write and, at the next barrier,
//!   sends the home only the bytes it changed (module `diff`).
//! - At a barrier every node sends its diffs home, then learns which units
//!   the others wrote and drops its copies of them (module `engine`, rules
//!   1–5; module `protocol`, the barrier in five steps).
//!
//! # What programs see
//!
//! A data-race-free program — one whose conflicting accesses (two threads,
//! at least one writing, the same byte) are always ordered by a barrier —
//! sees sequentially consistent memory. A racy program sees, for a byte
//! written on another node without a barrier in between, either the old
//! value or the new one, and may keep seeing the old one until its next
//! barrier; two nodes writing the same byte in one interval leave one of
//! the two values, chosen by the order their diffs reach the home. Within
//! a node, threads share the node's copy and see each other's writes as
//! threads of one process do.
//!
//! Synchronization is by barrier and by lock ([`Dsm::lock`]: a token
//! handed down the queue of waiting nodes with the write notices it must
//! carry, passed between threads of a node without a message). A thread
//! waiting for a unit parks if it is a fiber, so that its worker runs the
//! node's other fibers meanwhile (module `fault`).
//!
//! Leaving: a node serves the units it homes until its last `Dsm` handle
//! is dropped or the node ends. A node that reads others' memory at the
//! end of a run must do so before a barrier that every node passes before
//! any of them leaves (the SPLASH programs end with one; the C API's
//! `tw_finalize` meets every node first): a fetch from a node that has
//! left ends the fetching node with an error naming it.
//!
//! Limits: one space per process; a system call reading into shared
//! memory the node does not hold fails with `EFAULT` where userfaultfd is
//! limited to user-mode faults or not permitted (faults then reach the
//! engine as signals, which the kernel does not raise inside system
//! calls). Without userfaultfd the engine falls back to `mprotect` and
//! `SIGSEGV` ([`Faults`]; module `protection` says what that costs).
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod barrier;
mod consistency;
mod diff;
mod engine;
mod fault;
mod fetcher;
mod lock;
mod protection;
mod protocol;
mod region;
mod space;
mod traffic;
mod uffd;

#[cfg(test)]
mod kernel_tests;

/// Every decoder of bytes a peer sends the engine, for the fuzz target
/// `dsm_messages`; not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    /// Runs every decoder over `data`; none may panic, whatever the bytes.
    pub fn decode_everything(data: &[u8]) {
        let mut page = vec![0u8; 8192];
        if crate::diff::check(data, page.len()).is_ok() {
            crate::diff::apply(&mut page, data).expect("a checked diff applies");
        } else {
            assert!(crate::diff::apply(&mut page, data).is_err());
        }
        let _ = crate::engine::parse_batch(data, |u| u % 3 == 0, 8192);
        let _ = crate::protocol::notices(data);
        let _ = crate::protocol::versions(data);
        let _ = crate::protocol::id(data);
        let _ = crate::barrier::parse_arrival(data);
        let _ = crate::barrier::release(data);
        let _ = crate::lock::parse_grant(data);
    }
}

pub use protection::Faults;
pub use region::Region;
pub use traffic::{Kind, KindStats};

use barrier::Meeting;
use consistency::Consistency;
use engine::Engine;
use lock::Locks;
use std::fmt;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use threadwire::Endpoint;
use threadwire_fiber::sync::Barrier;

/// How a node's shared space is laid out; every node must use the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DsmConfig {
    /// Where the space starts in every node's address space.
    pub base: usize,
    /// Its size in bytes: the most that can be allocated.
    pub size: usize,
    /// The coherence unit in bytes: a multiple of the system's 4 KiB page.
    pub unit: usize,
    /// How many threads of each node take part in [`Dsm::barrier`].
    pub threads: usize,
    /// How the engine learns of accesses: userfaultfd, or `mprotect`
    /// where it is not permitted ([`Faults`]).
    pub faults: Faults,
}

impl Default for DsmConfig {
    fn default() -> DsmConfig {
        DsmConfig {
            base: 0x6d00_0000_0000,
            size: 1 << 30,
            unit: 8192,
            threads: 1,
            faults: Faults::Auto,
        }
    }
}

/// What went wrong in the shared memory.
#[derive(Debug)]
pub enum DsmError {
    /// The configuration cannot work (its text says why).
    Config(String),
    /// The kernel refused (mapping the space, userfaultfd).
    Os(std::io::Error),
    /// A message of the engine failed (a node lost, a handler missing).
    Am(threadwire::AmError),
    /// A collective among the nodes failed.
    Coll(threadwire::CollError),
    /// The space has no room for the allocation.
    Full {
        /// Bytes asked for.
        wanted: usize,
        /// Bytes left.
        left: usize,
    },
    /// The nodes called [`Dsm::alloc`] differently, or were at different
    /// barriers.
    Diverged,
    /// A home refused a diff, or a peer's answer did not parse (its text
    /// says why): a bug, or memory corrupted.
    Refused(String),
    /// A node the operation needed is gone (its text says which and why).
    Lost(String),
}

impl fmt::Display for DsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DsmError::Config(why) => write!(f, "shared memory configuration: {why}"),
            DsmError::Os(e) => write!(f, "shared memory: {e}"),
            DsmError::Am(e) => write!(f, "shared memory message: {e}"),
            DsmError::Coll(e) => write!(f, "shared memory collective: {e}"),
            DsmError::Full { wanted, left } => {
                write!(f, "shared space full: {wanted} bytes wanted, {left} left")
            }
            DsmError::Diverged => write!(
                f,
                "the nodes allocated differently or met at different barriers"
            ),
            DsmError::Refused(why) => write!(f, "shared memory protocol: {why}"),
            DsmError::Lost(why) => write!(f, "shared memory: {why}"),
        }
    }
}

impl DsmError {
    /// The same failure, for the other threads of a node that met it
    /// together (a barrier's leader's error, given to every thread of the
    /// round); errors of other layers keep their text.
    fn again(&self) -> DsmError {
        match self {
            DsmError::Config(why) => DsmError::Config(why.clone()),
            DsmError::Os(e) => DsmError::Os(std::io::Error::new(e.kind(), e.to_string())),
            DsmError::Am(e) => DsmError::Lost(e.to_string()),
            DsmError::Coll(e) => DsmError::Lost(e.to_string()),
            DsmError::Full { wanted, left } => DsmError::Full {
                wanted: *wanted,
                left: *left,
            },
            DsmError::Diverged => DsmError::Diverged,
            DsmError::Refused(why) => DsmError::Refused(why.clone()),
            DsmError::Lost(why) => DsmError::Lost(why.clone()),
        }
    }
}

impl std::error::Error for DsmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DsmError::Os(e) => Some(e),
            DsmError::Am(e) => Some(e),
            DsmError::Coll(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for DsmError {
    fn from(e: std::io::Error) -> DsmError {
        DsmError::Os(e)
    }
}

impl From<threadwire::AmError> for DsmError {
    fn from(e: threadwire::AmError) -> DsmError {
        DsmError::Am(e)
    }
}

impl From<threadwire::CollError> for DsmError {
    fn from(e: threadwire::CollError) -> DsmError {
        DsmError::Coll(e)
    }
}

/// Where the units of an allocation keep their master copies
/// ([`Dsm::alloc_homed`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Homes {
    /// Unit by unit over every node in turn (the default): no node serves
    /// more than its share of an array read by all.
    RoundRobin,
    /// In N contiguous shares, the first on node 0: for arrays each node
    /// writes a block of (a grid's rows, a matrix's block rows).
    Blocks,
    /// All on one node (taken modulo the node count).
    Node(u32),
}

/// What one node's engine has done: [`Dsm::stats`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Faults of reads on units not mapped (served locally or fetched).
    pub read_faults: u64,
    /// Faults of writes: on units not mapped, or write-protected.
    pub write_faults: u64,
    /// Units fetched from their homes.
    pub fetches: u64,
    /// Bytes of the units fetched.
    pub fetch_bytes: u64,
    /// Diffs sent to homes.
    pub diffs: u64,
    /// Bytes of the diffs sent (run headers included).
    pub diff_bytes: u64,
    /// Units made invalid by other nodes' writes.
    pub invalidations: u64,
    /// The most fetches that were in flight at once: more than one when
    /// threads waiting for units let others run and fault in turn.
    pub most_in_flight: u64,
    /// This node's requests by kind, with their replies and round trips
    /// (the seed's Table 3), in [`Kind::ALL`]'s order.
    pub traffic: [KindStats; 5],
}

impl Default for Stats {
    /// Nothing done yet.
    fn default() -> Stats {
        Stats {
            read_faults: 0,
            write_faults: 0,
            fetches: 0,
            fetch_bytes: 0,
            diffs: 0,
            diff_bytes: 0,
            invalidations: 0,
            most_in_flight: 0,
            traffic: Kind::ALL.map(|kind| KindStats {
                kind,
                requests: 0,
                request_bytes: 0,
                replies: 0,
                reply_bytes: 0,
                round_trip: std::time::Duration::ZERO,
            }),
        }
    }
}

/// A node's handle on the shared space: clone it to every thread.
#[derive(Clone, Debug)]
pub struct Dsm {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    engine: Arc<Engine>,
    handlers: protocol::Handlers,
    consistency: Arc<Consistency>,
    locks: Arc<Locks>,
    allocated: Mutex<usize>,
    local: Barrier,
    /// A barrier's failure, for the node's other threads of that round.
    failed: Mutex<Option<DsmError>>,
    stop: OwnedFd,
    fetcher: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Dsm {
    /// Maps the shared space and starts this node's engine. Called once by
    /// thread 0 of every node with the same configuration; returns when
    /// every node has.
    ///
    /// # Errors
    ///
    /// [`DsmError::Config`] for a unit that is not a multiple of 4 KiB or a
    /// size not a multiple of the unit; [`DsmError::Os`] when the base is
    /// taken or userfaultfd is not permitted; [`DsmError::Coll`] when the
    /// nodes cannot meet.
    pub fn new(ep: &Endpoint, config: DsmConfig) -> Result<Dsm, DsmError> {
        if config.unit == 0 || !config.unit.is_multiple_of(4096) {
            return Err(DsmError::Config(format!(
                "unit {} is not a multiple of 4096",
                config.unit
            )));
        }
        if config.size == 0 || !config.size.is_multiple_of(config.unit) {
            return Err(DsmError::Config(format!(
                "size {} is not a multiple of the unit",
                config.size
            )));
        }
        if config.size / config.unit > u32::MAX as usize {
            return Err(DsmError::Config("more than 2^32 units".into()));
        }
        let node = ep.node().clone();
        let engine = Arc::new(Engine::new(
            config.base,
            config.unit,
            config.size / config.unit,
            node.id(),
            node.nodes(),
            config.faults,
        )?);
        let consistency = Arc::new(Consistency::default());
        let meeting = Arc::new(Meeting::new(node.nodes() as usize));
        let locks = Arc::new(Locks::new(node.id(), node.nodes()));
        let handlers = protocol::register(protocol::Parts {
            node: &node,
            engine: &engine,
            consistency: &consistency,
            meeting: &meeting,
            locks: &locks,
        })?;
        {
            let meeting = meeting.clone();
            node.on_peer_lost(move |lost| meeting.lost(lost.node));
        }
        // SAFETY: eventfd(2) returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        // SAFETY: the descriptor was just created and is owned here only.
        let stop = unsafe { OwnedFd::from_raw_fd(fd) };
        if fault::activate(&engine).is_err() {
            return Err(DsmError::Config(
                "this process already has a shared space".into(),
            ));
        }
        let fetcher = {
            let (engine, node, fetch) = (engine.clone(), node.clone(), handlers.fetch.clone());
            let stop = stop.try_clone()?;
            std::thread::Builder::new()
                .name("dsm-fetcher".into())
                .spawn(move || match node.endpoint() {
                    Ok(ep) => fetcher::run(&engine, &ep, &fetch, &stop),
                    Err(e) => tracing::error!("the shared memory's fetcher has no endpoint: {e}"),
                })
        };
        let fetcher = match fetcher {
            Ok(f) => f,
            Err(e) => {
                fault::deactivate(&engine);
                return Err(e.into());
            }
        };
        let dsm = Dsm {
            shared: Arc::new(Shared {
                engine,
                handlers,
                consistency,
                locks,
                allocated: Mutex::new(0),
                local: Barrier::new(config.threads),
                failed: Mutex::new(None),
                stop,
                fetcher: Mutex::new(Some(fetcher)),
            }),
        };
        // Every node's handlers are registered before any node calls them.
        threadwire::Group::world(ep)?.barrier()?;
        Ok(dsm)
    }

    /// Allocates an array of `n` zeroed `T`s, aligned to a coherence unit.
    /// Collective: every node allocates the same sizes in the same order
    /// (one thread per node), and gets the same address; the next barrier
    /// fails with [`DsmError::Diverged`] where they did not.
    ///
    /// # Errors
    ///
    /// [`DsmError::Full`] when the space has no room.
    pub fn alloc<T: bytemuck::Pod>(&self, n: usize) -> Result<Region<T>, DsmError> {
        self.alloc_homed(n, Homes::RoundRobin)
    }

    /// [`alloc`](Self::alloc), with the region's units homed as `homes`
    /// says: where a node writes its own share of an array, homing that
    /// share on it keeps its writes local (no twin, no diff).
    ///
    /// Like `alloc`, collective but not synchronized: a node may touch the
    /// region before others have made the allocation; a home asked for a
    /// unit it has not allocated yet answers "not yet", and is asked again
    /// (engine rule 8).
    ///
    /// # Errors
    ///
    /// [`DsmError::Full`] when the space has no room.
    pub fn alloc_homed<T: bytemuck::Pod>(
        &self,
        n: usize,
        homes: Homes,
    ) -> Result<Region<T>, DsmError> {
        let unit = self.shared.engine.unit;
        let space = self.shared.engine.space.len();
        let bytes = n
            .checked_mul(std::mem::size_of::<T>())
            .map(|b| b.div_ceil(unit).max(1))
            .and_then(|units| units.checked_mul(unit))
            .unwrap_or(usize::MAX);
        let mut allocated = self
            .shared
            .allocated
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let left = space - *allocated;
        if bytes > left {
            return Err(DsmError::Full {
                wanted: bytes,
                left,
            });
        }
        // SAFETY: the offset lies inside the program's view.
        let at = unsafe { self.shared.engine.space.program().add(*allocated) };
        let (first, count) = ((*allocated / unit) as u32, (bytes / unit) as u32);
        let nodes = self.shared.engine.nodes;
        match homes {
            Homes::RoundRobin => self.shared.engine.place(first, count, |k| first + k),
            Homes::Blocks => self.shared.engine.place(first, count, |k| {
                (k as u64 * nodes as u64 / count as u64) as u32
            }),
            Homes::Node(node) => self.shared.engine.place(first, count, |_| node),
        }
        self.shared.engine.premap(first, count)?;
        *allocated += bytes;
        Ok(Region::new(at.cast(), n, self.clone()))
    }

    /// Engine rule 11 for `[address, address + len)` of the space
    /// ([`Region::prefetch`]).
    pub(crate) fn prefetch(&self, address: usize, len: usize) {
        self.shared.engine.prefetch_range(address, len);
    }

    /// What this node's engine has done so far.
    pub fn stats(&self) -> Stats {
        let c = &self.shared.engine.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            read_faults: get(&c.read_faults),
            write_faults: get(&c.write_faults),
            fetches: get(&c.fetches),
            fetch_bytes: get(&c.fetch_bytes),
            diffs: get(&c.diffs),
            diff_bytes: get(&c.diff_bytes),
            invalidations: get(&c.invalidations),
            most_in_flight: get(&c.most_in_flight),
            traffic: self.shared.engine.traffic.snapshot(),
        }
    }

    /// Waits until [`DsmConfig::threads`] threads of every node have called
    /// it; every write made before it by any of them is then visible to
    /// all (module docs, and `protocol`'s five steps). `ep` is the calling
    /// thread's endpoint (its own: a fiber's from `spawn`, an OS thread's
    /// from `node.endpoint()`, made once), through which the node's last
    /// arrival talks to the others.
    ///
    /// # Errors
    ///
    /// [`DsmError::Am`] when a node is lost, [`DsmError::Diverged`] when
    /// the nodes allocated differently, [`DsmError::Refused`] when a home
    /// refused a diff; every thread of the round gets the error.
    pub fn barrier(&self, ep: &Endpoint) -> Result<(), DsmError> {
        let s = &self.shared;
        if s.engine.nodes == 1 {
            // Every unit is homed here and no other node holds a copy: the
            // node's threads share its memory, and a barrier among them is
            // all there is to do (rule 7 leaves nothing to release).
            s.local.wait();
            return Ok(());
        }
        if s.local.wait().is_leader() {
            let result = self.global_barrier(ep);
            *s.failed.lock().unwrap_or_else(|p| p.into_inner()) =
                result.as_ref().err().map(DsmError::again);
            s.local.wait();
            return result;
        }
        s.local.wait();
        match s.failed.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            Some(e) => Err(e.again()),
            None => Ok(()),
        }
    }

    /// Steps 2–5 of the barrier (module `barrier`), in the node's leader.
    fn global_barrier(&self, ep: &Endpoint) -> Result<(), DsmError> {
        let s = &self.shared;
        s.consistency.release(&s.engine, ep, &s.handlers)?;
        let allocated = *s.allocated.lock().unwrap_or_else(|p| p.into_inner()) as u64;
        let arrival = barrier::arrival(s.consistency.epoch(), allocated, &s.consistency.written());
        let sent = s.engine.traffic.sent(traffic::Kind::Barrier, arrival.len());
        let reply = ep
            .am_request(0, &s.handlers.barrier, arrival)
            .wait()?
            .to_vec();
        s.engine.traffic.answered(&sent, reply.len());
        let notices = barrier::release(&reply).map_err(|why| match why.contains("allocated") {
            true => DsmError::Diverged,
            false => DsmError::Lost(why),
        })?;
        s.consistency
            .acquire(&s.engine, ep, &s.handlers, &notices)?;
        s.consistency.next_epoch();
        Ok(())
    }

    /// Takes lock `id` (any number: every node means the same lock by it),
    /// waiting until it is free; what its previous holders wrote before
    /// releasing it is visible once it returns. Between threads of one
    /// node the lock passes without a message (module `lock`); `ep` is the
    /// calling thread's endpoint, as for [`barrier`](Self::barrier).
    ///
    /// # Errors
    ///
    /// [`DsmError::Am`] or [`DsmError::Lost`] when a node on the lock's
    /// way is lost.
    pub fn lock(&self, ep: &Endpoint, id: u32) -> Result<LockGuard<'_>, DsmError> {
        let s = &self.shared;
        s.locks
            .acquire(id, &s.engine, &s.consistency, ep, &s.handlers)?;
        Ok(LockGuard { dsm: self, id })
    }
}

/// A held lock: dropping it releases the lock ([`Dsm::lock`]).
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct LockGuard<'a> {
    dsm: &'a Dsm,
    id: u32,
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.dsm.shared.locks.release(self.id);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writing 8 bytes to our eventfd.
        unsafe {
            libc::write(
                std::os::fd::AsRawFd::as_raw_fd(&self.stop),
                one.as_ptr().cast(),
                8,
            )
        };
        let fetcher = self
            .fetcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(fetcher) = fetcher {
            let _ = fetcher.join();
        }
        fault::deactivate(&self.engine);
    }
}
