//! Distributed locks: a token per lock that travels from node to node
//! along the queue of nodes waiting for it, carrying the write notices its
//! holders knew; within a node the lock passes between threads with no
//! message at all.
//!
//! Each lock has a *manager*, node `id mod nodes`, that knows only the
//! *tail*: the last node to ask for the lock. The token starts at the
//! manager's disposal.
//!
//! 1. A thread wants the lock. If its node holds the token and no thread
//!    of the node holds the lock, it takes it (no message). If the node's
//!    token is on its way, or another thread holds the lock, it waits on
//!    the node's condition variable.
//! 2. Otherwise the thread gets the token for its node: it asks the
//!    manager (`dsm.acquire`), which makes the node the tail and answers
//!    *granted* if there was no tail (the token was never used) or the
//!    previous tail to follow.
//! 3. The thread asks the node it follows for the token (`dsm.follow`).
//!    That node's handler — a fiber, which may wait — waits until its
//!    node holds the token and no thread of it holds the lock, letting its
//!    own waiting threads go first for up to [`LOCAL_TURNS`] hand-offs
//!    (combining within a node, bounded so that other nodes do not
//!    starve). It then gives the token up: it releases the node's writes
//!    (engine rule 4) and answers with its epoch and every notice the node
//!    knows (module `consistency`) — the grant.
//! 4. The thread acquires the grant's notices if they are of its epoch
//!    (older ones are covered by the barrier in between) and holds the
//!    lock; its node holds the token.
//! 5. A release by a thread only marks the lock free and wakes the node's
//!    waiters and a follower's handler: the token leaves the node only
//!    when a follower takes it (step 3), and stays otherwise, so that the
//!    node's next acquire costs no message.
//!
//! A node lost on the way fails the acquire of the node that asked it with
//! `PeerLost`; the lock is then *broken* on that node, and the followers
//! waiting on it are answered with the failure rather than left waiting.

use crate::consistency::Consistency;
use crate::engine::Engine;
use crate::protocol::{self, Handlers, OK, OTHER};
use crate::traffic::Kind;
use crate::DsmError;
use std::collections::HashMap;
use std::sync::Arc;
use threadwire::Endpoint;
use threadwire_fiber::sync::{Condvar, Mutex};

/// How many times in a row the lock may pass between threads of one node
/// while another node waits for it.
pub const LOCAL_TURNS: u32 = 16;

/// One lock as one node sees it.
#[derive(Debug, Default)]
struct LockState {
    /// The node holds the token.
    token: bool,
    /// A thread of the node holds the lock.
    held: bool,
    /// A thread of the node is getting the token (steps 2–4).
    fetching: bool,
    /// Threads of the node waiting for the lock.
    waiting: usize,
    /// A follower's handler is waiting for the token.
    follower: bool,
    /// Local hand-offs since a follower began waiting.
    turns: u32,
    /// Why the lock can no longer be had here.
    broken: Option<String>,
}

#[derive(Debug, Default)]
struct Lock {
    state: Mutex<LockState>,
    changed: Condvar,
}

/// Every lock of one node, and the tails of the locks it manages.
#[derive(Debug)]
pub struct Locks {
    node: u32,
    nodes: u32,
    locks: std::sync::Mutex<HashMap<u32, Arc<Lock>>>,
    tails: std::sync::Mutex<HashMap<u32, u32>>,
}

impl Locks {
    /// The locks of node `node` of `nodes`.
    pub fn new(node: u32, nodes: u32) -> Locks {
        Locks {
            node,
            nodes,
            locks: Default::default(),
            tails: Default::default(),
        }
    }

    fn lock(&self, id: u32) -> Arc<Lock> {
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(id).or_default().clone()
    }

    /// The manager's answer to `from` asking for lock `id` (step 2).
    pub fn manage(&self, id: u32, from: u32) -> Vec<u8> {
        let mut tails = self.tails.lock().unwrap_or_else(|p| p.into_inner());
        match tails.insert(id, from) {
            None => vec![OK],
            Some(tail) => {
                let mut r = vec![OTHER];
                r.extend_from_slice(&tail.to_le_bytes());
                r
            }
        }
    }

    /// Takes lock `id` for the calling thread (steps 1–4).
    pub fn acquire(
        &self,
        id: u32,
        engine: &Engine,
        consistency: &Consistency,
        ep: &Endpoint,
        handlers: &Handlers,
    ) -> Result<(), DsmError> {
        let lock = self.lock(id);
        let mut s = lock.state.lock();
        loop {
            if let Some(why) = &s.broken {
                return Err(DsmError::Lost(why.clone()));
            }
            let followers_turn = s.follower && s.turns >= LOCAL_TURNS;
            if s.token && !s.held && !followers_turn {
                s.held = true;
                if s.follower {
                    s.turns += 1;
                }
                return Ok(());
            }
            if !s.token && !s.fetching {
                s.fetching = true;
                drop(s);
                let got = self.fetch_token(id, engine, consistency, ep, handlers);
                s = lock.state.lock();
                s.fetching = false;
                match got {
                    Ok(()) => {
                        s.token = true;
                        s.held = true;
                        s.turns = 0;
                        lock.changed.notify_all();
                        return Ok(());
                    }
                    Err(e) => {
                        s.broken = Some(e.to_string());
                        lock.changed.notify_all();
                        return Err(e);
                    }
                }
            }
            s.waiting += 1;
            s = lock.changed.wait(s);
            s.waiting -= 1;
        }
    }

    /// Steps 2–4 for the calling thread's node.
    fn fetch_token(
        &self,
        id: u32,
        engine: &Engine,
        consistency: &Consistency,
        ep: &Endpoint,
        handlers: &Handlers,
    ) -> Result<(), DsmError> {
        let manager = id % self.nodes;
        let sent = engine.traffic.sent(Kind::Acquire, 4);
        let answer = ep
            .am_request(manager, &handlers.acquire, id.to_le_bytes().to_vec())
            .wait()?
            .to_vec();
        engine.traffic.answered(&sent, answer.len());
        let follow = match answer.split_first() {
            Some((&OK, [])) => return Ok(()),
            Some((&OTHER, rest)) => protocol::id(rest),
            _ => None,
        };
        let Some(tail) = follow.filter(|&t| t != self.node && t < self.nodes) else {
            return Err(DsmError::Refused(format!(
                "lock {id}'s manager answered badly"
            )));
        };
        let sent = engine.traffic.sent(Kind::Follow, 4);
        let grant = ep
            .am_request(tail, &handlers.follow, id.to_le_bytes().to_vec())
            .wait()?
            .to_vec();
        engine.traffic.answered(&sent, grant.len());
        let (epoch, notices) = parse_grant(&grant).ok_or_else(|| match grant.split_first() {
            Some((&OTHER, why)) => DsmError::Lost(String::from_utf8_lossy(why).into_owned()),
            _ => DsmError::Refused(format!("lock {id}'s grant from node {tail} does not parse")),
        })?;
        if epoch == consistency.epoch() {
            consistency.acquire(engine, ep, handlers, &notices)?;
        }
        Ok(())
    }

    /// Frees lock `id` held by the calling thread (step 5).
    pub fn release(&self, id: u32) {
        let lock = self.lock(id);
        let mut s = lock.state.lock();
        s.held = false;
        lock.changed.notify_all();
    }

    /// A follower's handler (step 3): waits for the token, gives it up and
    /// returns the grant.
    pub fn hand_over(
        &self,
        id: u32,
        engine: &Engine,
        consistency: &Consistency,
        ep: &Endpoint,
        handlers: &Handlers,
    ) -> Vec<u8> {
        let lock = self.lock(id);
        let mut s = lock.state.lock();
        s.follower = true;
        s.turns = 0;
        loop {
            if let Some(why) = &s.broken {
                let mut r = vec![OTHER];
                r.extend_from_slice(why.as_bytes());
                s.follower = false;
                return r;
            }
            let mine_first = s.waiting > 0 && s.turns < LOCAL_TURNS;
            if s.token && !s.held && !mine_first {
                break;
            }
            s = lock.changed.wait(s);
        }
        s.token = false;
        s.follower = false;
        s.turns = 0;
        drop(s);
        // The node's waiters, if any, go for the token again (step 2).
        lock.changed.notify_all();
        match consistency.release(engine, ep, handlers) {
            Ok(_) => grant(consistency.epoch(), &consistency.known()),
            Err(e) => {
                let mut r = vec![OTHER];
                r.extend_from_slice(e.to_string().as_bytes());
                r
            }
        }
    }
}

fn grant(epoch: u64, notices: &[(u32, u64)]) -> Vec<u8> {
    let mut b = Vec::with_capacity(9 + 12 * notices.len());
    b.push(OK);
    b.extend_from_slice(&epoch.to_le_bytes());
    protocol::put_notices(&mut b, notices);
    b
}

pub(crate) fn parse_grant(b: &[u8]) -> Option<(u64, Vec<(u32, u64)>)> {
    let (&OK, rest) = b.split_first()? else {
        return None;
    };
    let epoch = u64::from_le_bytes(rest.get(..8)?.try_into().ok()?);
    Some((epoch, protocol::notices(&rest[8..])?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manager_grants_the_first_and_points_each_later_one_at_the_tail() {
        let l = Locks::new(0, 4);
        assert_eq!(l.manage(5, 2), vec![OK]);
        assert_eq!(l.manage(5, 3), [&[OTHER][..], &2u32.to_le_bytes()].concat());
        assert_eq!(l.manage(5, 1), [&[OTHER][..], &3u32.to_le_bytes()].concat());
        assert_eq!(l.manage(6, 1), vec![OK]);
    }

    #[test]
    fn grants_round_trip() {
        let g = grant(3, &[(1, 2)]);
        assert_eq!(parse_grant(&g), Some((3, vec![(1, 2)])));
        assert_eq!(parse_grant(&g[..5]), None);
        assert_eq!(parse_grant(&[OTHER]), None);
    }
}
