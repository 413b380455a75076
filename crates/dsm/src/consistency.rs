//! Release and acquire: what every synchronization of the shared memory
//! does to the node's copies (engine rules 4–6), and the write notices a
//! node knows.
//!
//! A node keeps, for the current barrier epoch:
//!
//! - `written`: the notices of its own releases;
//! - `known`: every notice it has released or acquired, the newest version
//!   per unit. A lock's grant carries it to the next holder, so that
//!   what happened before a release reaches whoever acquires after it,
//!   transitively.
//!
//! A barrier exchanges `written` among all nodes, after which every node
//! holds everything written before it: both sets start empty in the next
//! epoch, and notices that a lock carries from an earlier epoch are
//! dropped.

use crate::engine::Engine;
use crate::protocol::{self, Handlers};
use crate::traffic::Kind;
use crate::DsmError;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use threadwire::Endpoint;
use threadwire_fiber::sync::Mutex as FiberMutex;

/// A set of write notices: unit → newest version.
pub type Notices = HashMap<u32, u64>;

/// A node's notices of this epoch.
#[derive(Debug, Default)]
pub struct Consistency {
    epoch: AtomicU64,
    /// Held through a whole release: one that finds nothing left to flush
    /// (another took it) must still wait until those writes are home and
    /// their notices known, or a lock could leave without them.
    releasing: FiberMutex<()>,
    written: Mutex<Notices>,
    known: Mutex<Notices>,
}

fn merge(into: &mut Notices, notices: &[(u32, u64)]) {
    for &(u, v) in notices {
        let e = into.entry(u).or_insert(v);
        *e = (*e).max(v);
    }
}

impl Consistency {
    /// The barrier epoch the node is in.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Releases every write of this node (engine rule 4) and waits until
    /// their homes hold them; returns the notices of this release.
    pub fn release(
        &self,
        engine: &Engine,
        ep: &Endpoint,
        handlers: &Handlers,
    ) -> Result<Vec<(u32, u64)>, DsmError> {
        let _one_at_a_time = self.releasing.lock();
        let flush = engine.flush()?;
        let mut notices = flush.notices;
        // Kept for a home that answers "not yet" (engine rule 8).
        let requests: Vec<_> = flush
            .batches
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.is_empty())
            .map(|(home, b)| {
                let sent = engine.traffic.sent(Kind::Diff, b.len());
                (
                    home,
                    sent,
                    ep.am_request(home as u32, &handlers.diff, b.clone()),
                )
            })
            .collect();
        for (home, sent, request) in requests {
            let mut reply = request.wait()?.to_vec();
            engine.traffic.answered(&sent, reply.len());
            while reply == [crate::engine::NOT_YET] {
                // The home has not made the allocation yet (engine rule 8).
                let again = engine.traffic.sent(Kind::Diff, flush.batches[home].len());
                reply = ep
                    .am_request(home as u32, &handlers.diff, flush.batches[home].clone())
                    .wait()?
                    .to_vec();
                engine.traffic.answered(&again, reply.len());
            }
            let versions = protocol::versions(&reply)?;
            let sent = &flush.sent[home];
            if versions.len() != sent.len() {
                return Err(DsmError::Refused(format!(
                    "node {home} answered {} versions for {} diffs",
                    versions.len(),
                    sent.len()
                )));
            }
            notices.extend(engine.acknowledged(sent, &versions));
        }
        merge(
            &mut self.written.lock().unwrap_or_else(|p| p.into_inner()),
            &notices,
        );
        merge(
            &mut self.known.lock().unwrap_or_else(|p| p.into_inner()),
            &notices,
        );
        Ok(notices)
    }

    /// Acquires `notices` (engine rule 5): they join what the node knows,
    /// and the copies they make stale are dropped.
    pub fn acquire(
        &self,
        engine: &Engine,
        ep: &Endpoint,
        handlers: &Handlers,
        notices: &[(u32, u64)],
    ) -> Result<(), DsmError> {
        let mut left = engine.invalidate(notices)?;
        // A unit written here and not yet released is released first; a
        // thread of this node that writes it again meanwhile sends it
        // round once more.
        while !left.is_empty() {
            self.release(engine, ep, handlers)?;
            left = engine.invalidate(&left)?;
        }
        merge(
            &mut self.known.lock().unwrap_or_else(|p| p.into_inner()),
            notices,
        );
        Ok(())
    }

    /// Everything the node knows this epoch, for a lock's grant.
    pub fn known(&self) -> Vec<(u32, u64)> {
        let known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        known.iter().map(|(&u, &v)| (u, v)).collect()
    }

    /// The node's own notices this epoch, for a barrier's arrival.
    pub fn written(&self) -> Vec<(u32, u64)> {
        let written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        written.iter().map(|(&u, &v)| (u, v)).collect()
    }

    /// Ends the epoch after a barrier: every node holds what anyone wrote.
    pub fn next_epoch(&self) {
        self.written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.known.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }
}
