//! The coherence engine of one node: the state of every coherence unit,
//! the fault service, and the two halves of a release and an acquire.
//!
//! # States of a unit
//!
//! | state      | the program's view        | the memfd holds            |
//! |------------|---------------------------|----------------------------|
//! | `Invalid`  | unmapped                  | stale bytes, or none       |
//! | `Fetching` | unmapped, faults waiting  | about to be replaced       |
//! | `Clean`    | unmapped or write-protected | the unit as last fetched (or, at its home, the master copy) |
//! | `Dirty`    | writable                  | this node's writes; a twin holds the bytes before them (not at the home) |
//!
//! A unit's home starts `Clean` (its memfd bytes are the master copy);
//! every other node starts `Invalid`.
//!
//! # Rules
//!
//! 1. A unit's state, twin and mapping change only under its own lock (one
//!    per unit; no lock spans units on the fault path).
//! 2. Faults (the fault service thread):
//!    - on an unmapped unit that is `Clean` or `Dirty`: map it,
//!      write-protected for a read of a `Clean` unit; a write first makes
//!      the unit `Dirty` (rule 3);
//!    - on an `Invalid` unit: ask its home for it (a `fetch` request), mark
//!      it `Fetching`; the installer thread writes the reply into the
//!      memfd and maps it write-protected, which wakes every thread waiting
//!      on it;
//!    - on a `Fetching` unit: nothing (the thread waits for the reply);
//!    - a write to a write-protected unit: rule 3, then lift protection.
//! 3. A unit becomes `Dirty` on its first write since its last release:
//!    away from its home the engine first copies it into a twin; the unit
//!    joins the node's dirty list.
//! 4. A release (`flush`) takes each dirty unit: write-protects it (a
//!    thread writing it meanwhile faults and waits for the unit's lock),
//!    encodes its diff against the twin for the home, drops the twin and
//!    makes it `Clean`. The diffs go to their homes, one request per home,
//!    and the release waits until every home has applied them. The units
//!    it flushed are its *write notices*.
//! 5. An acquire (`invalidate`) takes the write notices of the other nodes:
//!    each unit they wrote, away from its home, is unmapped and made
//!    `Invalid`, so that the next access fetches the home's copy, which by
//!    rule 4 holds every write released before this acquire.

use crate::diff;
use crate::space::Space;
use crate::uffd::{Access, Fault, Uffd};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use threadwire::{AmRequest, Endpoint, Handler, Node};

/// Where a unit stands on this node (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Not valid here.
    Invalid,
    /// Asked of its home.
    Fetching,
    /// Valid, not written since the last release.
    Clean,
    /// Written since the last release.
    Dirty,
}

/// One coherence unit's bookkeeping.
#[derive(Debug)]
pub struct Unit {
    pub state: State,
    /// Whether the program's view maps it.
    pub mapped: bool,
    /// Its bytes at its first write since the last release (not at home).
    pub twin: Option<Box<[u8]>>,
}

/// Counters of one node's engine, for the statistics table.
#[derive(Debug, Default)]
pub struct Counters {
    pub read_faults: AtomicU64,
    pub write_faults: AtomicU64,
    pub fetches: AtomicU64,
    pub fetch_bytes: AtomicU64,
    pub diffs: AtomicU64,
    pub diff_bytes: AtomicU64,
    pub invalidations: AtomicU64,
}

/// The engine of one node, shared by its threads, its fault service and
/// its handlers.
#[derive(Debug)]
pub struct Engine {
    pub space: Space,
    uffd: Uffd,
    pub unit: usize,
    pub node: u32,
    pub nodes: u32,
    units: Box<[Mutex<Unit>]>,
    dirty: Mutex<Vec<u32>>,
    pub counters: Counters,
}

impl Engine {
    /// The engine of a space of `units` units of `unit` bytes at `base`.
    pub fn new(
        base: usize,
        unit: usize,
        units: usize,
        node: u32,
        nodes: u32,
    ) -> io::Result<Engine> {
        let uffd = Uffd::open()?;
        if uffd.reach() == crate::uffd::Reach::UserMode {
            tracing::warn!(
                "userfaultfd serves user-mode faults only (vm.unprivileged_userfaultfd=0): \
                 a system call reading or writing shared memory not yet mapped fails with EFAULT"
            );
        }
        let space = Space::new(base, unit * units)?;
        uffd.register(space.program() as usize, space.len())?;
        let units = (0..units)
            .map(|u| {
                let home = u as u32 % nodes == node;
                Mutex::new(Unit {
                    state: if home { State::Clean } else { State::Invalid },
                    mapped: false,
                    twin: None,
                })
            })
            .collect();
        Ok(Engine {
            space,
            uffd,
            unit,
            node,
            nodes,
            units,
            dirty: Mutex::new(Vec::new()),
            counters: Counters::default(),
        })
    }

    /// The node that keeps unit `u`'s master copy: units are dealt round
    /// robin, so an array spreads over every node.
    pub fn home(&self, u: u32) -> u32 {
        u % self.nodes
    }

    /// How many units the space has.
    pub fn units(&self) -> usize {
        self.units.len()
    }

    fn lock(&self, u: u32) -> MutexGuard<'_, Unit> {
        self.units[u as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn program(&self, u: u32) -> usize {
        self.space.program() as usize + u as usize * self.unit
    }

    /// Unit `u`'s bytes as the engine sees them.
    ///
    /// # Safety
    ///
    /// The bytes may change under the reader (other threads write the
    /// program's view of the same memory); callers copy them out at once
    /// or hold the unit's lock with the unit write-protected.
    #[allow(clippy::mut_from_ref)] // the engine view is shared memory; see # Safety
    pub unsafe fn bytes(&self, u: u32) -> &mut [u8] {
        // SAFETY: `u` is a unit of the space; the caller takes the rule.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.space.engine().add(u as usize * self.unit),
                self.unit,
            )
        }
    }

    /// Rule 3, under the unit's lock.
    fn make_dirty(&self, u: u32, unit: &mut Unit) {
        if unit.state == State::Dirty {
            return;
        }
        if self.home(u) != self.node {
            // SAFETY: the unit is unmapped or write-protected, so no one
            // writes it while it is copied.
            unit.twin = Some(unsafe { self.bytes(u) }.to_vec().into_boxed_slice());
        }
        unit.state = State::Dirty;
        self.dirty.lock().unwrap_or_else(|p| p.into_inner()).push(u);
    }

    /// Serves one fault (rule 2). A unit that must be fetched is handed to
    /// the fetcher.
    pub fn fault(&self, f: &Fault, fetcher: &mpsc::Sender<u32>) -> io::Result<()> {
        let offset = f.address - self.space.program() as usize;
        let u = (offset / self.unit) as u32;
        let at = self.program(u);
        let mut unit = self.lock(u);
        match (f.access, unit.state) {
            (Access::Protected, _) => {
                self.counters.write_faults.fetch_add(1, Ordering::Relaxed);
                self.make_dirty(u, &mut unit);
                self.uffd.unprotect(at, self.unit)
            }
            (_, State::Fetching) => Ok(()),
            (access, State::Clean | State::Dirty) => {
                let counter = match access {
                    Access::Read => &self.counters.read_faults,
                    _ => &self.counters.write_faults,
                };
                counter.fetch_add(1, Ordering::Relaxed);
                if self.home(u) == self.node {
                    // A unit never written is a hole in the memfd.
                    self.space.populate(u as usize * self.unit, self.unit)?;
                }
                if access == Access::Write {
                    self.make_dirty(u, &mut unit);
                }
                unit.mapped = true;
                self.uffd.map(at, self.unit, unit.state == State::Clean)
            }
            (_, State::Invalid) => {
                unit.state = State::Fetching;
                drop(unit);
                // The fetcher gone means the engine is shutting down.
                let _ = fetcher.send(u);
                Ok(())
            }
        }
    }

    /// Installs a fetched unit and wakes its waiters (rule 2).
    pub fn install(&self, u: u32, bytes: &[u8]) -> io::Result<()> {
        let mut unit = self.lock(u);
        if bytes.len() != self.unit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a fetched unit of the wrong size",
            ));
        }
        // SAFETY: the unit is `Fetching`, so unmapped: no one else touches it.
        unsafe { self.bytes(u) }.copy_from_slice(bytes);
        self.counters
            .fetch_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        unit.state = State::Clean;
        unit.mapped = true;
        self.uffd.map(self.program(u), self.unit, true)
    }

    /// Marks a unit whose fetch failed `Invalid` again and wakes its
    /// waiters, who fault anew (and so ask again).
    pub fn fetch_failed(&self, u: u32) -> io::Result<()> {
        let mut unit = self.lock(u);
        unit.state = State::Invalid;
        self.uffd.wake(self.program(u), self.unit)
    }

    /// Rule 4's first half: every dirty unit protected, its diff appended
    /// to its home's batch (`[unit u32][len u32][diff]` entries), and made
    /// `Clean`. Returns the batches by home and the units flushed.
    pub fn flush(&self) -> io::Result<(Vec<Vec<u8>>, Vec<u32>)> {
        let dirty = std::mem::take(&mut *self.dirty.lock().unwrap_or_else(|p| p.into_inner()));
        let mut batches = vec![Vec::new(); self.nodes as usize];
        let mut diff = Vec::new();
        for &u in &dirty {
            let mut unit = self.lock(u);
            if unit.mapped {
                self.uffd.protect(self.program(u), self.unit)?;
            }
            if let Some(twin) = unit.twin.take() {
                diff.clear();
                // SAFETY: the unit is write-protected and we hold its lock:
                // writers fault and wait for it.
                diff::encode(unsafe { self.bytes(u) }, &twin, &mut diff);
                if !diff.is_empty() {
                    let batch = &mut batches[self.home(u) as usize];
                    batch.extend_from_slice(&u.to_le_bytes());
                    batch.extend_from_slice(&(diff.len() as u32).to_le_bytes());
                    batch.extend_from_slice(&diff);
                    self.counters.diffs.fetch_add(1, Ordering::Relaxed);
                    self.counters
                        .diff_bytes
                        .fetch_add(diff.len() as u64, Ordering::Relaxed);
                }
            }
            unit.state = State::Clean;
        }
        Ok((batches, dirty))
    }

    /// Applies a batch of diffs at this home (rule 4's second half).
    pub fn apply(&self, mut batch: &[u8]) -> Result<(), diff::DiffError> {
        while !batch.is_empty() {
            let header = batch.get(..8).ok_or(diff::DiffError::Truncated)?;
            let u = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
            let n = u32::from_le_bytes(header[4..].try_into().expect("4 bytes")) as usize;
            let d = batch.get(8..8 + n).ok_or(diff::DiffError::Truncated)?;
            if u as usize >= self.units() || self.home(u) != self.node {
                return Err(diff::DiffError::OutOfPage {
                    offset: u as usize,
                    len: n,
                });
            }
            // SAFETY: data-race-free programs do not write the bytes a diff
            // carries while it is applied (they were released, not yet
            // acquired by anyone); other bytes of the unit may change.
            diff::apply(unsafe { self.bytes(u) }, d)?;
            batch = &batch[8 + n..];
        }
        Ok(())
    }

    /// Rule 5: the units in `notices`, away from their home, made `Invalid`.
    pub fn invalidate(&self, notices: impl IntoIterator<Item = u32>) -> io::Result<()> {
        for u in notices {
            if u as usize >= self.units() || self.home(u) == self.node {
                continue;
            }
            let mut unit = self.lock(u);
            if unit.mapped {
                self.space.invalidate(u as usize * self.unit, self.unit)?;
                unit.mapped = false;
            }
            if unit.state != State::Invalid {
                self.counters.invalidations.fetch_add(1, Ordering::Relaxed);
            }
            unit.state = State::Invalid;
            unit.twin = None;
        }
        Ok(())
    }

    /// The fetcher: asks homes for the units the fault service hands it,
    /// all those waiting at once, and installs each as its reply comes.
    fn fetch(&self, ep: &Endpoint, handler: &Handler, units: mpsc::Receiver<u32>) {
        let mut pending: Vec<AmRequest> = Vec::new();
        let mut asked: Vec<u32> = Vec::new();
        loop {
            if pending.is_empty() {
                match units.recv() {
                    Ok(u) => asked.push(u),
                    Err(_) => return,
                }
            }
            asked.extend(units.try_iter());
            for &u in &asked[pending.len()..] {
                self.counters.fetches.fetch_add(1, Ordering::Relaxed);
                pending.push(ep.am_request(self.home(u), handler, u.to_le_bytes().to_vec()));
            }
            let Some((i, reply)) = threadwire::wait_any(&mut pending) else {
                continue;
            };
            let u = asked.remove(i);
            let installed = match reply {
                Ok(bytes) => self.install(u, &bytes.to_vec()),
                Err(e) => Err(io::Error::other(e.to_string())),
            };
            if installed.is_err() {
                // Its waiters fault again and ask again; a lost home fails
                // the program's next barrier.
                let _ = self.fetch_failed(u);
            }
        }
    }

    /// The fault service: reads faults until `stop` is readable, handing
    /// fetches to a fetcher thread of its own.
    pub fn serve(
        self: &Arc<Engine>,
        node: &Node,
        fetch: Handler,
        stop: &std::os::fd::OwnedFd,
    ) -> io::Result<()> {
        let (tx, rx) = mpsc::channel::<u32>();
        let engine = self.clone();
        let node = node.clone();
        let fetcher = std::thread::Builder::new()
            .name("dsm-fetcher".into())
            .spawn(move || match node.endpoint() {
                Ok(ep) => engine.fetch(&ep, &fetch, rx),
                Err(e) => tracing::error!("the shared memory's fetcher has no endpoint: {e}"),
            })?;
        let mut faults = Vec::with_capacity(16);
        let result = loop {
            let mut fds = [
                libc::pollfd {
                    fd: self.uffd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: stop.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two pollfds, no timeout.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                break Err(e);
            }
            if fds[1].revents != 0 {
                break Ok(());
            }
            faults.clear();
            if let Err(e) = self.uffd.read(&mut faults, 16) {
                break Err(e);
            }
            if let Some(e) = faults.iter().find_map(|f| self.fault(f, &tx).err()) {
                break Err(e);
            }
        };
        drop(tx);
        let _ = fetcher.join();
        result
    }
}
