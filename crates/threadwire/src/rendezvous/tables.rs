//! This node's tables of announced sends and of fetches under way
//! (protocol steps 1, 3 and 4 of [`super`]).

use super::Done;
use crate::lock;
use crate::PeerLost;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use threadwire_wire::Payload;

/// An announced send waiting for its receiver.
pub(crate) struct Outbound {
    pub(crate) node: u32,
    pub(crate) dest_thread: u32,
    /// The bytes, kept where they are until fetched (`None` when they
    /// travelled inline).
    pub(crate) payload: Option<Payload>,
    /// Budget bytes it holds while buffered (its send already returned).
    pub(crate) held: usize,
    /// Announced for a pull: the peer reads this process's memory.
    pub(crate) pull: bool,
    /// Its sender's wait; `None` for a buffered send, complete already.
    pub(crate) done: Option<Arc<Done>>,
}

impl Outbound {
    /// The receive has its bytes (or asked for them): the send is complete.
    pub(crate) fn succeed(&self) {
        if let Some(done) = &self.done {
            done.succeed();
        }
    }

    pub(crate) fn fail(&self, lost: &PeerLost) {
        if let Some(done) = &self.done {
            done.fail(lost);
        }
    }
}

/// Announced sends by send id.
#[derive(Default)]
pub(crate) struct Sends {
    next: AtomicU64,
    table: Mutex<HashMap<u64, Outbound>>,
    /// Sends announced for a pull and not yet answered.
    pulls: AtomicUsize,
    /// When the last of them was announced (`since`'s clock, ns).
    last_pull: AtomicU64,
}

impl Sends {
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn insert(&self, id: u64, out: Outbound) {
        if out.pull {
            self.pulls.fetch_add(1, Ordering::Relaxed);
            self.last_pull.store(since_start_ns(), Ordering::Relaxed);
        }
        lock(&self.table).insert(id, out);
    }

    pub(crate) fn remove(&self, id: u64) -> Option<Outbound> {
        let out = lock(&self.table).remove(&id)?;
        self.unpulled(&out);
        Some(out)
    }

    fn unpulled(&self, out: &Outbound) {
        if out.pull {
            self.pulls.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Whether a peer is probably reading this process's memory now: a
    /// pull announced less than `window` ago is unanswered (progress
    /// engine, step 7; a peer that leaves it longer is busy elsewhere).
    pub(crate) fn being_pulled(&self, window: std::time::Duration) -> bool {
        self.pulls.load(Ordering::Relaxed) > 0
            && since_start_ns().saturating_sub(self.last_pull.load(Ordering::Relaxed))
                < window.as_nanos() as u64
    }

    /// Fails every send to the lost node (their budget is moot).
    pub(crate) fn fail_node(&self, lost: &PeerLost) {
        let failed = remove_where(&mut lock(&self.table), |o| o.node == lost.node);
        for out in failed {
            self.unpulled(&out);
            out.fail(lost);
        }
    }
}

/// A receive's buffer waiting for its bytes.
pub(crate) struct FetchEntry {
    pub(crate) node: u32,
    ptr: *mut u8,
    len: usize,
    pub(crate) done: Arc<Done>,
}

// SAFETY: the buffer is handed over by its receive until the entry leaves
// the table (`Fetches::register`'s contract); whoever removes the entry is
// then the only one to write it.
unsafe impl Send for FetchEntry {}

impl FetchEntry {
    /// Copies a `Bulk` frame's bytes into the buffer; `false` if they are
    /// more than it holds.
    pub(crate) fn fill(&self, bytes: &[u8]) -> bool {
        if bytes.len() > self.len {
            return false;
        }
        // SAFETY: removed from the table by the caller, so it alone holds
        // the buffer (`register`'s contract), and `bytes` fits.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr, bytes.len()) };
        true
    }
}

/// Fetches under way by receive id.
#[derive(Default)]
pub(crate) struct Fetches {
    next: AtomicU64,
    table: Mutex<HashMap<u64, FetchEntry>>,
}

impl Fetches {
    /// Registers `len` bytes at `ptr` for the bytes of a message from
    /// `node`; returns the receive id.
    ///
    /// # Safety
    ///
    /// The bytes must stay valid for writes, and untouched by the caller,
    /// until `done` is set and the entry removed, or the caller removed it
    /// with [`withdraw`](Self::withdraw) and found it still there.
    pub(crate) unsafe fn register(&self, node: u32, ptr: *mut u8, len: usize, done: Arc<Done>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.table).insert(
            id,
            FetchEntry {
                node,
                ptr,
                len,
                done,
            },
        );
        id
    }

    /// Takes the entry of `id` to complete it.
    pub(crate) fn remove(&self, id: u64) -> Option<FetchEntry> {
        lock(&self.table).remove(&id)
    }

    /// The receive gives up on `id`: `true` if the entry was still there
    /// (nobody will write the buffer), `false` if someone took it (and
    /// will set its `done`).
    pub(crate) fn withdraw(&self, id: u64) -> bool {
        lock(&self.table).remove(&id).is_some()
    }

    /// Fails every fetch from the lost node.
    pub(crate) fn fail_node(&self, lost: &PeerLost) {
        let failed = remove_where(&mut lock(&self.table), |e| e.node == lost.node);
        for entry in failed {
            entry.done.fail(lost);
        }
    }
}

/// Takes the entries `pick` chooses out of `table` (failed outside its lock).
fn remove_where<V>(table: &mut HashMap<u64, V>, pick: impl Fn(&V) -> bool) -> Vec<V> {
    let ids: Vec<u64> = table
        .iter()
        .filter(|(_, v)| pick(v))
        .map(|(&id, _)| id)
        .collect();
    ids.iter().filter_map(|id| table.remove(id)).collect()
}

/// Nanoseconds on a process-wide monotonic clock.
fn since_start_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}
