//! The coherence engine of one node: the state of every coherence unit,
//! the two halves of a release and an acquire; the fault service, from a
//! fault to the unit usable here, is module `faults`.
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
//!    per unit). The fault path holds more than one only in rule 9's
//!    batch, which takes the others with `try_lock`: it never waits while
//!    holding a unit's lock.
//! 2. Faults (the fault service thread):
//!    - on an unmapped unit that is `Clean` or `Dirty`: map it,
//!      write-protected for a read of a `Clean` unit; a write first makes
//!      the unit `Dirty` (rule 3);
//!    - on an `Invalid` unit: mark it `Fetching` and hand it to the fetcher
//!      thread, which asks its home for it (a `fetch` request; every unit
//!      waiting is asked at once), writes the reply into the memfd and maps
//!      it write-protected, which wakes every thread waiting on it. A home
//!      that cannot answer (lost) ends the node: the threads waiting are
//!      inside a load or a store, with no error to return;
//!    - on a `Fetching` unit: nothing (the thread waits for the reply);
//!    - a write to a write-protected unit: rule 3, then lift protection.
//! 3. A unit becomes `Dirty` on its first write since its last release:
//!    away from its home the engine first copies it into a twin; the unit
//!    joins the node's dirty list (a lock-free stack).
//! 4. A release (`flush`) takes each dirty unit: write-protects it (a
//!    thread writing it meanwhile faults and waits for the unit's lock),
//!    encodes its diff against the twin for the home, drops the twin and
//!    makes it `Clean`. The diffs go to their homes, one request per home
//!    (module `consistency`); each home applies them under the unit's lock
//!    and answers with the unit's new version. A dirty unit at its home
//!    needs no diff: its version goes up at once. The (unit, version)
//!    pairs are the release's *write notices*.
//! 5. An acquire (`invalidate`) takes write notices: each unit, away from
//!    its home, whose copy here is older than the notice is unmapped and
//!    made `Invalid` (a unit being fetched instead records the version its
//!    fetch must bring, and a reply older than that is asked again), so that the next access fetches the home's copy,
//!    which by rule 4 holds every write released before the notice. A unit
//!    to be invalidated that has unreleased writes here is released first
//!    (releasing early is allowed by release consistency).
//! 6. Versions: a home counts the releases that changed each unit; a fetch
//!    returns the version with the bytes; a node whose diff took its unit
//!    from version v to v + 1, holding version v, now holds v + 1 (its copy
//!    is the home's); otherwise it keeps the older number, and a notice of
//!    the newer one will invalidate it.
//! 7. A unit no other node has ever fetched needs no tracking at its
//!    home: a release leaves it writable and tells no one (a node on its
//!    own, or writing its own block, takes one fault per unit, not one per
//!    unit per release). Its first fetch write-protects it, under its lock,
//!    before its bytes are copied: the copy holds every write so far, and
//!    later writes fault and are released with notices as any other.
//! 8. Allocation is collective but not synchronized: a node may touch a
//!    new region before its home has allocated it. The home answers such
//!    a fetch "not yet" and the fetcher asks again, until the home has
//!    made the allocation (and knows the unit's home is itself).
//! 9. A fault on an unmapped unit homed here that no other node has
//!    fetched (rule 7's) maps it writable and `Dirty` whatever the access
//!    (and an allocation maps its units homed here so at once, `premap`),
//!    with up to [`BATCH`] − 1 following units in the same condition
//!    (allocated, homed here, unmapped, never fetched, their locks free):
//!    one fault, one `fallocate` and one `UFFDIO_CONTINUE` for a run that
//!    a node's first sweep over its own data would otherwise take a fault
//!    per unit, and two (read, then write) per unit it reads first.
//! 10. Read-ahead: a fault on an `Invalid` unit just after the units the
//!     last one fetched (a sequential sweep over others' data) asks for the
//!     following `Invalid` units of the same home with it, a window that
//!     doubles up to [`BATCH`] − 1 while the sweep goes on and closes at
//!     the first miss elsewhere. The fetcher has them all in flight at
//!     once, so that a sweep waits for about one round trip per window
//!     instead of one per unit.
//! 11. A program that knows what it will read next asks for it ahead
//!     (`Region::prefetch`): every `Invalid` unit of the range is asked at
//!     once, as rule 10 asks a window, and the program computes on what it
//!     has meanwhile.

mod faults;

use crate::diff;
use crate::protection::{Faults, Protection};
use crate::space::Space;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use threadwire_fiber::sync::Word;

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
    /// The home's version of the bytes held here: at the home, how many
    /// releases have changed the unit; elsewhere, the version fetched
    /// (rule 6).
    pub version: u64,
    /// While `Fetching`: the version the fetch must bring at least, raised
    /// by notices acquired meanwhile (rule 5); a reply older than that was
    /// served before the write it must show, and is asked again.
    pub wanted: u64,
    /// At its home: whether another node has ever fetched it (rule 7).
    pub shared: bool,
    /// On the dirty list (once at most: it is pushed only when not).
    pub listed: bool,
}

/// What [`Engine::flush`] gathered, by home node.
#[derive(Debug)]
pub struct Flush {
    /// Each home's batch of diffs.
    pub batches: Vec<Vec<u8>>,
    /// Each home's units in its batch's order, with the version each
    /// diff was taken against.
    pub sent: Vec<Vec<(u32, u64)>>,
    /// Write notices of the dirty units homed here.
    pub notices: Vec<(u32, u64)>,
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
    /// The most fetches in flight at once.
    pub most_in_flight: AtomicU64,
}

/// The engine of one node, shared by its threads, its fault service and
/// its handlers.
#[derive(Debug)]
pub struct Engine {
    pub space: Space,
    /// How faults reach the engine (module `protection`).
    pub protection: Protection,
    pub unit: usize,
    pub node: u32,
    pub nodes: u32,
    units: Box<[Mutex<Unit>]>,
    /// The dirty units: a lock-free stack threaded through `dirty_next`,
    /// so that the first write of a unit takes no lock but the unit's own
    /// (a unit is on it at most once: pushed, under its lock, only when
    /// not `listed`; a flush takes the whole stack and clears the marks).
    dirty_head: AtomicU32,
    /// Each unit's home node; set when the unit is allocated, before any
    /// node can touch it (round robin until then).
    homes: Box<[AtomicU32]>,
    /// Units allocated on this node so far: a fetch beyond them came from
    /// a node that allocated first, and is answered "not yet" (rule 8).
    placed: AtomicU32,
    dirty_next: Box<[AtomicU32]>,
    pub counters: Counters,
    /// Its requests by kind (module `traffic`).
    pub traffic: crate::traffic::Traffic,
    /// Units to fetch, written by faulting threads (module `fault`, step 3)
    /// and read by the fetcher.
    to_fetch: (OwnedFd, OwnedFd),
    /// Rule 10's state: the unit where the next sequential miss is
    /// expected (high half) and the last window (low half).
    read_ahead: AtomicU64,
    /// Wake-up words: a thread waiting for unit `u` waits on
    /// `wakers[u % len]` to move.
    wakers: Box<[Word]>,
}

/// A fetch's whole reply when the home has not allocated the unit yet.
pub const NOT_YET: u8 = 0xff;

/// No unit: the end of the dirty stack.
const NONE: u32 = u32::MAX;

/// How many wake-up words an engine has at most.
const WAKERS: usize = 4096;

/// The most units rule 9 maps on one fault: 128 KiB of 8 KiB units.
pub const BATCH: usize = 16;

impl Engine {
    /// The engine of a space of `units` units of `unit` bytes at `base`.
    pub fn new(
        base: usize,
        unit: usize,
        units: usize,
        node: u32,
        nodes: u32,
        faults: Faults,
    ) -> io::Result<Engine> {
        let space = Space::new(base, unit * units)?;
        let protection = Protection::open(faults, &space)?;
        let units: Box<[Mutex<Unit>]> = (0..units)
            .map(|u| {
                let home = u as u32 % nodes == node;
                Mutex::new(Unit {
                    state: if home { State::Clean } else { State::Invalid },
                    mapped: false,
                    twin: None,
                    version: 0,
                    wanted: 0,
                    shared: false,
                    listed: false,
                })
            })
            .collect();
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptors were just created and are owned here only.
        let to_fetch = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on our own descriptor: the fetcher drains it
        // without blocking.
        unsafe { libc::fcntl(fds[0], libc::F_SETFL, libc::O_NONBLOCK) };
        let dirty_next = (0..units.len()).map(|_| AtomicU32::new(NONE)).collect();
        let homes = (0..units.len() as u32)
            .map(|u| AtomicU32::new(u % nodes))
            .collect();
        let wakers = (0..units.len().min(WAKERS)).map(|_| Word::new(0)).collect();
        Ok(Engine {
            space,
            protection,
            unit,
            node,
            nodes,
            units,
            dirty_head: AtomicU32::new(NONE),
            dirty_next,
            homes,
            placed: AtomicU32::new(0),
            read_ahead: AtomicU64::new(0),
            counters: Counters::default(),
            traffic: Default::default(),
            to_fetch,
            wakers,
        })
    }

    /// The node that keeps unit `u`'s master copy ([`Engine::place`]).
    pub fn home(&self, u: u32) -> u32 {
        self.homes[u as usize].load(Ordering::Relaxed)
    }

    /// Gives units `[first, first + count)` — never touched yet, as a new
    /// allocation's are — their homes: `home(k)` for the k-th of them. Each
    /// starts `Clean` at its home and `Invalid` elsewhere.
    pub fn place(&self, first: u32, count: u32, home: impl Fn(u32) -> u32) {
        let placed = self.placed.load(Ordering::Acquire);
        for k in 0..count {
            let u = first + k;
            let h = home(k) % self.nodes;
            let mut unit = self.lock(u);
            self.homes[u as usize].store(h, Ordering::Relaxed);
            unit.state = if h == self.node {
                State::Clean
            } else {
                State::Invalid
            };
        }
        self.placed
            .store(placed.max(first + count), Ordering::Release);
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
        if unit.listed {
            return;
        }
        unit.listed = true;
        let mut head = self.dirty_head.load(Ordering::Acquire);
        loop {
            self.dirty_next[u as usize].store(head, Ordering::Relaxed);
            match self.dirty_head.compare_exchange_weak(
                head,
                u,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => head = now,
            }
        }
    }

    /// Takes the whole dirty stack.
    fn take_dirty(&self) -> Vec<u32> {
        let mut u = self.dirty_head.swap(NONE, Ordering::AcqRel);
        let mut dirty = Vec::new();
        while u != NONE {
            dirty.push(u);
            u = self.dirty_next[u as usize].load(Ordering::Relaxed);
        }
        dirty
    }

    /// Whether every unit of a batch of diffs is allocated here: else the
    /// batch came from a node that allocated first, and is answered "not
    /// yet" (rule 8).
    pub fn placed_all(&self, batch: &[u8]) -> bool {
        let placed = self.placed.load(Ordering::Acquire);
        let ours = |u: u32| (u as usize) < self.units();
        match parse_batch(batch, ours, self.unit) {
            Ok(entries) => entries.iter().all(|&(u, _)| u < placed),
            Err(_) => true, // refused by `apply`, with the reason
        }
    }

    /// Whether `address` lies in the program's view of the space.
    pub fn contains(&self, address: usize) -> bool {
        let start = self.space.program() as usize;
        (start..start + self.space.len()).contains(&address)
    }

    fn waker(&self, u: u32) -> &Word {
        &self.wakers[u as usize % self.wakers.len()]
    }

    /// Rule 4's first half: every dirty unit protected, its diff appended
    /// to its home's batch (`[unit u32][len u32][diff]` entries), and made
    /// `Clean`; a dirty unit homed here gets its next version at once.
    pub fn flush(&self) -> io::Result<Flush> {
        let dirty = self.take_dirty();
        let mut flush = Flush {
            batches: vec![Vec::new(); self.nodes as usize],
            sent: vec![Vec::new(); self.nodes as usize],
            notices: Vec::new(),
        };
        let mut diff = Vec::new();
        for &u in &dirty {
            let mut unit = self.lock(u);
            unit.listed = false;
            if unit.state != State::Dirty {
                // Made `Clean` meanwhile by its first fetch (rule 7): its
                // home writes so far went out with that copy.
                continue;
            }
            if self.home(u) == self.node && !unit.shared {
                // No other node holds a copy: nothing to tell, nothing to
                // track (rule 7). It stays writable, off the dirty list.
                continue;
            }
            if unit.mapped {
                self.protection.protect(self.program(u), self.unit)?;
            }
            unit.state = State::Clean;
            let Some(twin) = unit.twin.take() else {
                unit.version += 1;
                flush.notices.push((u, unit.version));
                continue;
            };
            diff.clear();
            // SAFETY: the unit is write-protected and we hold its lock:
            // writers fault and wait for it.
            diff::encode(unsafe { self.bytes(u) }, &twin, &mut diff);
            if diff.is_empty() {
                continue;
            }
            let home = self.home(u) as usize;
            let batch = &mut flush.batches[home];
            batch.extend_from_slice(&u.to_le_bytes());
            batch.extend_from_slice(&(diff.len() as u32).to_le_bytes());
            batch.extend_from_slice(&diff);
            flush.sent[home].push((u, unit.version));
            self.counters.diffs.fetch_add(1, Ordering::Relaxed);
            self.counters
                .diff_bytes
                .fetch_add(diff.len() as u64, Ordering::Relaxed);
        }
        Ok(flush)
    }

    /// Applies a batch of diffs at this home (rule 4's second half) and
    /// returns each unit's new version, in the batch's order. A batch with
    /// any bad entry is refused whole.
    pub fn apply(&self, batch: &[u8]) -> Result<Vec<u64>, diff::DiffError> {
        let placed = self.placed.load(Ordering::Acquire);
        let ours = |u: u32| u < placed && self.home(u) == self.node;
        let entries = parse_batch(batch, ours, self.unit)?;
        let mut versions = Vec::with_capacity(entries.len());
        for (u, d) in entries {
            let mut unit = self.lock(u);
            // SAFETY: under the unit's lock (fetches copy under it);
            // data-race-free programs do not write the bytes a diff
            // carries while it is applied (they were released, not yet
            // acquired by anyone); other bytes of the unit may change.
            diff::apply(unsafe { self.bytes(u) }, d).expect("checked above");
            unit.version += 1;
            versions.push(unit.version);
        }
        Ok(versions)
    }

    /// Rule 6 for the units of one home's batch, once it has answered
    /// with their new versions: the write notices of the release. A copy
    /// whose version was the one just before its diff's is now the home's
    /// (no one else's diff came in between) and takes the new version.
    pub fn acknowledged(&self, sent: &[(u32, u64)], versions: &[u64]) -> Vec<(u32, u64)> {
        sent.iter()
            .zip(versions)
            .map(|(&(u, before), &after)| {
                let mut unit = self.lock(u);
                if unit.version == before && after == before + 1 {
                    unit.version = after;
                }
                (u, after)
            })
            .collect()
    }

    /// Rule 5: each unit in `notices`, away from its home and older here
    /// than the notice, unmapped and made `Invalid`. Units with writes
    /// not yet released are left as they are and returned: the caller
    /// releases them and tries those again.
    pub fn invalidate(&self, notices: &[(u32, u64)]) -> io::Result<Vec<(u32, u64)>> {
        let mut dirty = Vec::new();
        for &(u, v) in notices {
            if u as usize >= self.units() || self.home(u) == self.node {
                continue;
            }
            let mut unit = self.lock(u);
            if unit.version >= v || unit.state == State::Invalid {
                continue;
            }
            if unit.state == State::Fetching {
                unit.wanted = unit.wanted.max(v);
                continue;
            }
            if unit.state == State::Dirty {
                dirty.push((u, v));
                continue;
            }
            if unit.mapped {
                self.protection
                    .unmap(&self.space, u as usize * self.unit, self.unit)?;
                unit.mapped = false;
            }
            self.counters.invalidations.fetch_add(1, Ordering::Relaxed);
            unit.state = State::Invalid;
            unit.twin = None;
        }
        Ok(dirty)
    }

    /// The read end of the pipe of units to fetch (module `fetcher`).
    pub fn to_fetch(&self) -> std::os::fd::RawFd {
        self.to_fetch.0.as_raw_fd()
    }
}

/// A batch of diffs' entries (`[unit u32][len u32][diff]`…), each
/// checked: its unit one of `ours`, its diff fitting a unit of `unit`
/// bytes.
pub(crate) fn parse_batch(
    batch: &[u8],
    ours: impl Fn(u32) -> bool,
    unit: usize,
) -> Result<Vec<(u32, &[u8])>, diff::DiffError> {
    let mut entries = Vec::new();
    let mut rest = batch;
    while !rest.is_empty() {
        let header = rest.get(..8).ok_or(diff::DiffError::Truncated)?;
        let u = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
        let n = u32::from_le_bytes(header[4..].try_into().expect("4 bytes")) as usize;
        let d = rest.get(8..8 + n).ok_or(diff::DiffError::Truncated)?;
        if !ours(u) {
            return Err(diff::DiffError::OutOfPage {
                offset: u as usize,
                len: n,
            });
        }
        diff::check(d, unit)?;
        entries.push((u, d));
        rest = &rest[8 + n..];
    }
    Ok(entries)
}

/// The threads waiting for a unit are inside a load or a store: there is
/// no error to give them, and without the unit they cannot go on.
pub(crate) fn fatal(u: u32, what: &str, e: &io::Error) -> ! {
    tracing::error!("shared memory: unit {u} {what}: {e}; this node cannot go on");
    std::process::exit(1);
}
