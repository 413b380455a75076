//! The fault service: from a fault on a unit to the unit usable here
//! (engine rules 2 and 8–11), and the home's side of a fetch.
//!
//! 1. A fault on a unit valid here maps it (or takes a twin and lifts
//!    write protection) and returns ([`Engine::fault`]).
//! 2. A fault on a unit homed here that no other node fetched maps it
//!    writable with the run of like units after it (rule 9,
//!    [`Engine::premap`] at allocation, `map_run` at a fault).
//! 3. A fault on an `Invalid` unit marks it `Fetching` and hands it to the
//!    fetcher (`ask`), with a read-ahead window when the faults sweep
//!    (rule 10) or the range a program asked for ahead (rule 11,
//!    [`Engine::prefetch_range`]).
//! 4. The home copies the unit out under its lock ([`Engine::serve_fetch`],
//!    rule 7's write protection first), and the requester installs the
//!    reply and wakes the threads waiting on it ([`Engine::install`]), or
//!    asks again when the reply is older than a notice it saw (rule 5).

use super::{fatal, Engine, State, Unit, BATCH, NOT_YET};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

impl Engine {
    /// Serves a fault of the calling thread at `address` (rule 2; module
    /// `fault`), returning once the access can be retried. Runs in the
    /// `SIGBUS` handler: it must not panic, and reports failures of the
    /// kernel calls by ending the process (the thread is inside a load or
    /// store, with no error to return).
    pub fn fault(&self, address: usize, write: bool) {
        let u = ((address - self.space.program() as usize) / self.unit) as u32;
        let at = self.program(u);
        loop {
            let seen = self.waker(u).load();
            let mut unit = self.lock(u);
            let mut ahead = 0;
            let done = match (unit.state, unit.mapped) {
                (State::Fetching, _) => None,
                (State::Invalid, _) => {
                    let counter = match write {
                        true => &self.counters.write_faults,
                        false => &self.counters.read_faults,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    let asked = self.ask(u, &mut unit);
                    ahead = self.read_ahead(u);
                    asked.err().map(Err)
                }
                // Mapped meanwhile (the fetch this thread waited for, or
                // another thread's fault): a read goes through now.
                (State::Clean, true) if !write && crate::fault::WRITES_KNOWN => Some(Ok(())),
                (State::Clean, true) => {
                    // Mapped, so the fault was a write to a protected unit.
                    self.counters.write_faults.fetch_add(1, Ordering::Relaxed);
                    self.make_dirty(u, &mut unit);
                    Some(self.protection.unprotect(at, self.unit))
                }
                (State::Dirty, true) => Some(Ok(())), // another thread got here first
                (State::Clean | State::Dirty, false)
                    if self.home(u) == self.node && !unit.shared =>
                {
                    let counter = match write {
                        true => &self.counters.write_faults,
                        false => &self.counters.read_faults,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    Some(self.map_run(u, &mut unit).map(|_| ()))
                }
                (State::Clean | State::Dirty, false) => {
                    let counter = match write {
                        true => &self.counters.write_faults,
                        false => &self.counters.read_faults,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                    let populated = match self.home(u) == self.node {
                        // A unit never written is a hole in the memfd.
                        true => self.space.populate(u as usize * self.unit, self.unit),
                        false => Ok(()),
                    };
                    if write {
                        self.make_dirty(u, &mut unit);
                    }
                    unit.mapped = true;
                    Some(populated.and_then(|()| {
                        self.protection
                            .map(at, self.unit, unit.state == State::Clean)
                    }))
                }
            };
            drop(unit);
            // Rule 10, outside the unit's lock (the others' locks are only
            // tried).
            for v in u + 1..=u.saturating_add(ahead) {
                if !self.prefetch(v, self.home(u)) {
                    break;
                }
            }
            match done {
                Some(Ok(())) => return,
                Some(Err(e)) => fatal(u, "cannot be mapped", &e),
                None => {
                    self.waker(u).wait_until(|now| now != seen);
                }
            }
        }
    }

    /// Rule 2: unit `u` (locked, `Invalid`) made `Fetching` and handed
    /// to the fetcher.
    fn ask(&self, u: u32, unit: &mut Unit) -> io::Result<()> {
        unit.state = State::Fetching;
        self.counters.fetches.fetch_add(1, Ordering::Relaxed);
        let bytes = u.to_ne_bytes();
        // SAFETY: writing 4 bytes (atomic, under PIPE_BUF) to our pipe;
        // async-signal-safe.
        let n = unsafe { libc::write(self.to_fetch.1.as_raw_fd(), bytes.as_ptr().cast(), 4) };
        match n {
            4 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Rule 10: how many units after `u`, a unit just missed, to fetch
    /// with it: none unless the miss is where the last read-ahead ended,
    /// then a window doubling from 1 to [`BATCH`] − 1.
    fn read_ahead(&self, u: u32) -> u32 {
        let now = self.read_ahead.load(Ordering::Relaxed);
        let (expected, window) = ((now >> 32) as u32, now as u32);
        let window = match u == expected {
            true => (window * 2).clamp(1, BATCH as u32 - 1),
            false => 0,
        };
        let next = u.saturating_add(1 + window);
        self.read_ahead.store(
            (u64::from(next) << 32) | u64::from(window),
            Ordering::Relaxed,
        );
        window
    }

    /// Rule 10: asks for unit `v` ahead of a fault, if it is allocated,
    /// `Invalid`, homed at `home` and its lock free; whether it was.
    fn prefetch(&self, v: u32, home: u32) -> bool {
        if v >= self.placed.load(Ordering::Acquire) || v as usize >= self.units() {
            return false;
        }
        let Ok(mut unit) = self.units[v as usize].try_lock() else {
            return false;
        };
        if unit.state != State::Invalid || self.home(v) != home {
            return false;
        }
        self.ask(v, &mut unit).is_ok()
    }

    /// Rule 11: asks for every `Invalid` unit overlapping the program's
    /// bytes `[address, address + len)` at once, without waiting; the
    /// threads that touch them later wait only for what has not come.
    /// How many were asked.
    pub fn prefetch_range(&self, address: usize, len: usize) -> usize {
        let start = self.space.program() as usize;
        if len == 0 || address < start {
            return 0;
        }
        let first = (address - start) / self.unit;
        let end = (address - start + len)
            .div_ceil(self.unit)
            .min(self.units());
        let mut asked = 0;
        for u in first..end {
            let u = u as u32;
            if self.home(u) != self.node && self.prefetch(u, self.home(u)) {
                asked += 1;
            }
        }
        asked
    }

    /// Rule 9: unit `u` (locked, unmapped, homed here, never fetched) and
    /// the run of following units in the same condition, mapped writable
    /// and `Dirty` together.
    fn map_run(&self, u: u32, first: &mut Unit) -> io::Result<usize> {
        let end = (u as usize + BATCH)
            .min(self.placed.load(Ordering::Acquire) as usize)
            .min(self.units());
        let mut others: [Option<MutexGuard<'_, Unit>>; BATCH] = Default::default();
        let mut len = 1;
        for v in u as usize + 1..end {
            let Ok(unit) = self.units[v].try_lock() else {
                break;
            };
            let fits = !unit.mapped
                && !unit.shared
                && matches!(unit.state, State::Clean | State::Dirty)
                && self.home(v as u32) == self.node;
            if !fits {
                break;
            }
            others[len] = Some(unit);
            len += 1;
        }
        // A unit never written is a hole in the memfd.
        self.space
            .populate(u as usize * self.unit, len * self.unit)?;
        self.make_dirty(u, first);
        first.mapped = true;
        for (k, unit) in others.iter_mut().enumerate().take(len).skip(1) {
            let unit = unit.as_mut().expect("locked above");
            self.make_dirty(u + k as u32, unit);
            unit.mapped = true;
        }
        // Mapped while every unit of the run is still locked.
        self.protection
            .map(self.program(u), len * self.unit, false)
            .map(|()| len)
    }

    /// Rule 9 ahead of the first touch: the units of `[first, first +
    /// count)` homed here, just allocated, mapped in runs at once — as a
    /// program's own memory would be populated when allocated — so that
    /// the node's first sweep over its share takes no fault.
    pub fn premap(&self, first: u32, count: u32) -> io::Result<()> {
        let mut u = first;
        while u < first + count {
            if self.home(u) != self.node {
                u += 1;
                continue;
            }
            let mut unit = self.lock(u);
            let fresh =
                !unit.mapped && !unit.shared && matches!(unit.state, State::Clean | State::Dirty);
            u += match fresh {
                true => self.map_run(u, &mut unit)? as u32,
                false => 1,
            };
        }
        Ok(())
    }

    /// The reply to a fetch at this home: the unit's version (u64) and
    /// bytes, or nothing for a unit that is not homed here.
    pub fn serve_fetch(&self, u: u32) -> Vec<u8> {
        if u >= self.placed.load(Ordering::Acquire) && (u as usize) < self.units() {
            return vec![NOT_YET];
        }
        if u as usize >= self.units() || self.home(u) != self.node {
            return Vec::new();
        }
        let mut unit = self.lock(u);
        if !unit.shared {
            // Its first copy away (rule 7): from now on the home's writes
            // are tracked, so that their notices reach the copy.
            unit.shared = true;
            if unit.state == State::Dirty && unit.mapped {
                if let Err(e) = self.protection.protect(self.program(u), self.unit) {
                    fatal(u, "cannot be write-protected", &e);
                }
                unit.state = State::Clean;
            }
        }
        let mut reply = Vec::with_capacity(8 + self.unit);
        reply.extend_from_slice(&unit.version.to_le_bytes());
        // SAFETY: copied out at once, under the unit's lock (diffs are
        // applied under it too); the home's own threads may write other
        // bytes meanwhile, which data-race-free programs release later.
        reply.extend_from_slice(unsafe { self.bytes(u) });
        reply
    }

    /// Installs a fetch's reply and wakes the unit's waiters (rule 2);
    /// `false` for a reply older than a notice acquired while it was on its
    /// way (rule 5), or from a home that has not allocated the unit yet
    /// (rule 8): the unit must be asked again.
    pub fn install(&self, u: u32, reply: &[u8]) -> io::Result<bool> {
        if reply == [NOT_YET] {
            return Ok(false);
        }
        let mut unit = self.lock(u);
        if reply.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "its home does not hold it (the nodes allocated differently?)",
            ));
        }
        if reply.len() != 8 + self.unit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a fetched unit of {} bytes, not {}",
                    reply.len(),
                    8 + self.unit
                ),
            ));
        }
        let (version, bytes) = reply.split_at(8);
        let version = u64::from_le_bytes(version.try_into().expect("8 bytes"));
        self.counters
            .fetch_bytes
            .fetch_add(reply.len() as u64, Ordering::Relaxed);
        if version < unit.wanted {
            return Ok(false);
        }
        // SAFETY: the unit is `Fetching`, so unmapped: no one else touches it.
        unsafe { self.bytes(u) }.copy_from_slice(bytes);
        unit.version = version;
        unit.wanted = 0;
        unit.state = State::Clean;
        unit.mapped = true;
        let mapped = self.protection.map(self.program(u), self.unit, true);
        drop(unit);
        self.waker(u).fetch_add(1);
        mapped.map(|()| true)
    }
}
