//! The barrier, combined by threads and then by nodes, carrying the write
//! notices of the epoch it ends.
//!
//! 1. The threads of a node meet first (a fiber barrier of the node's
//!    participating threads); the last to arrive is the node's leader.
//! 2. The leader releases (engine rule 4): the node's diffs go to their
//!    homes and the leader waits until every home has applied them.
//! 3. The leader sends its arrival to node 0 (`dsm.barrier`): the epoch,
//!    the bytes the node has allocated (so that a node that called `alloc`
//!    differently is caught) and every notice of its own releases this
//!    epoch (module `consistency`).
//! 4. Node 0 runs each arrival in a fiber handler ([`Meeting`]); the last
//!    to arrive merges the notices (the newest version per unit) and every
//!    handler replies with them. A node lost before all arrived fails the
//!    meeting: every handler replies with the loss.
//! 5. Each leader acquires the merged notices (engine rule 5), starts the
//!    next epoch, and lets its node's threads go; they return the leader's
//!    result.

use crate::consistency::Notices;
use crate::protocol::{self, OK, OTHER};
use threadwire_fiber::sync::{Condvar, Mutex};

/// An arrival's bytes (step 3).
pub fn arrival(epoch: u64, allocated: u64, notices: &[(u32, u64)]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + 12 * notices.len());
    b.extend_from_slice(&epoch.to_le_bytes());
    b.extend_from_slice(&allocated.to_le_bytes());
    protocol::put_notices(&mut b, notices);
    b
}

/// What every arrival of a round must agree on: (epoch, allocated bytes).
type Key = (u64, u64);

pub(crate) fn parse_arrival(b: &[u8]) -> Option<(Key, Vec<(u32, u64)>)> {
    let epoch = u64::from_le_bytes(b.get(..8)?.try_into().ok()?);
    let allocated = u64::from_le_bytes(b.get(8..16)?.try_into().ok()?);
    Some(((epoch, allocated), protocol::notices(&b[16..])?))
}

/// What the release said (step 5): the merged notices, or why the meeting
/// failed.
pub fn release(b: &[u8]) -> Result<Vec<(u32, u64)>, String> {
    match b.split_first() {
        Some((&OK, rest)) => {
            protocol::notices(rest).ok_or_else(|| "a barrier's release does not parse".into())
        }
        Some((&OTHER, why)) => Err(String::from_utf8_lossy(why).into_owned()),
        _ => Err("a barrier's release does not parse".into()),
    }
}

/// Node 0's side of the barrier (step 4).
#[derive(Debug)]
pub struct Meeting {
    nodes: usize,
    round: Mutex<Round>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct Round {
    /// Arrivals of the round being gathered.
    arrived: usize,
    /// Rounds completed: a handler waits for this to move.
    generation: u64,
    notices: Notices,
    /// (epoch, allocated) of the round's first arrival.
    expected: Option<Key>,
    /// Why the round failed, if it did.
    failure: Option<String>,
    /// The reply of the last completed round.
    reply: Vec<u8>,
    /// A node lost: every later round fails at once.
    lost: Option<u32>,
    /// Answers sent to nodes other than node 0, over every round.
    answered: u64,
}

impl Meeting {
    /// The meeting of `nodes` nodes.
    pub fn new(nodes: usize) -> Meeting {
        Meeting {
            nodes,
            round: Mutex::new(Round::default()),
            changed: Condvar::new(),
        }
    }

    /// One node's arrival: answers it through `reply` once every node has
    /// arrived. Node 0's own arrival is answered last, once every other
    /// node's answer is on its way: node 0 may leave the job right after
    /// its last barrier, and must not take the others' answers with it.
    pub fn arrive(&self, from: u32, bytes: &[u8], reply: impl FnOnce(Vec<u8>)) {
        let answer = self.meet(from, bytes);
        let mut r = self.round.lock();
        if from == 0 {
            let others = r.generation * (self.nodes as u64 - 1);
            while r.answered < others && r.lost.is_none() {
                r = self.changed.wait(r);
            }
            drop(r);
            reply(answer);
        } else {
            drop(r);
            reply(answer);
            let mut r = self.round.lock();
            r.answered += 1;
            self.changed.notify_all();
        }
    }

    /// Gathers one arrival: returns the round's answer once every node
    /// has arrived.
    fn meet(&self, from: u32, bytes: &[u8]) -> Vec<u8> {
        let mut r = self.round.lock();
        if let Some(node) = r.lost {
            return failed(&format!("node {node} was lost"));
        }
        match parse_arrival(bytes) {
            Some((key, notices)) => {
                match r.expected {
                    None => r.expected = Some(key),
                    Some(k) if k != key => {
                        r.failure = Some(format!(
                            "node {from} arrived at barrier {} having allocated {} bytes; others at barrier {} with {}",
                            key.0, key.1, k.0, k.1
                        ))
                    }
                    Some(_) => {}
                }
                for (u, v) in notices {
                    let e = r.notices.entry(u).or_insert(v);
                    *e = (*e).max(v);
                }
            }
            None => r.failure = Some(format!("node {from}'s arrival does not parse")),
        }
        r.arrived += 1;
        let generation = r.generation;
        if r.arrived == self.nodes {
            let notices: Vec<(u32, u64)> = r.notices.drain().collect();
            r.reply = match r.failure.take() {
                Some(why) => failed(&why),
                None => {
                    let mut b = vec![OK];
                    protocol::put_notices(&mut b, &notices);
                    b
                }
            };
            r.arrived = 0;
            r.expected = None;
            r.generation += 1;
            self.changed.notify_all();
            return r.reply.clone();
        }
        while r.generation == generation && r.lost.is_none() {
            r = self.changed.wait(r);
        }
        match (r.generation == generation, r.lost) {
            (true, Some(node)) => failed(&format!("node {node} was lost")),
            _ => r.reply.clone(),
        }
    }

    /// A node is gone: the meeting fails now and from now on.
    pub fn lost(&self, node: u32) {
        let mut r = self.round.lock();
        r.lost.get_or_insert(node);
        self.changed.notify_all();
    }
}

fn failed(why: &str) -> Vec<u8> {
    let mut b = vec![OTHER];
    b.extend_from_slice(why.as_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn answer(m: &Meeting, from: u32, bytes: &[u8]) -> Vec<u8> {
        let mut got = None;
        m.arrive(from, bytes, |a| got = Some(a));
        got.expect("answered")
    }

    #[test]
    fn arrivals_merge_the_newest_version_of_each_unit() {
        let m = Arc::new(Meeting::new(2));
        let other = {
            let m = m.clone();
            std::thread::spawn(move || answer(&m, 1, &arrival(0, 8192, &[(3, 2), (4, 1)])))
        };
        let mine = answer(&m, 0, &arrival(0, 8192, &[(3, 5)]));
        let theirs = other.join().unwrap();
        assert_eq!(mine, theirs);
        let mut got = release(&mine).unwrap();
        got.sort();
        assert_eq!(got, vec![(3, 5), (4, 1)]);
    }

    #[test]
    fn a_node_that_allocated_differently_fails_the_round_everywhere() {
        let m = Arc::new(Meeting::new(2));
        let other = {
            let m = m.clone();
            std::thread::spawn(move || answer(&m, 1, &arrival(0, 16384, &[])))
        };
        let mine = release(&answer(&m, 0, &arrival(0, 8192, &[])));
        assert!(mine.unwrap_err().contains("allocated"));
        assert!(release(&other.join().unwrap()).is_err());
        // The next round starts clean.
        let other = {
            let m = m.clone();
            std::thread::spawn(move || answer(&m, 1, &arrival(1, 8192, &[])))
        };
        assert_eq!(release(&answer(&m, 0, &arrival(1, 8192, &[]))), Ok(vec![]));
        other.join().unwrap();
    }

    #[test]
    fn a_lost_node_fails_the_waiting_arrivals() {
        let m = Arc::new(Meeting::new(3));
        let waiting = {
            let m = m.clone();
            std::thread::spawn(move || answer(&m, 1, &arrival(0, 0, &[])))
        };
        // Whether it is already waiting or arrives after, it fails.
        m.lost(2);
        assert!(release(&waiting.join().unwrap())
            .unwrap_err()
            .contains("node 2"));
        assert!(release(&answer(&m, 0, &arrival(0, 0, &[]))).is_err());
    }
}
