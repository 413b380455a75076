//! Agreement among the survivors of a group, and the group of survivors
//! (MPI ULFM's `MPIX_Comm_agree` and `MPIX_Comm_shrink`).
//!
//! After a member's node is lost, the group's collectives fail with
//! `PeerLost`; [`Group::agree`] still completes among the members left,
//! and [`Group::shrink`] builds the group of them.
//!
//! # The protocol
//!
//! Each agreement of a group has a number (the group's count of calls to
//! `agree`); members on every node keep their part of it in their node's
//! [`Table`], keyed by (member thread, group id, number), so that it can be
//! asked for even after the member has returned.
//!
//! 1. A member stores its *contribution* — its flag and the ranks it
//!    knows lost (their nodes are lost at its node) — and wakes any
//!    request waiting for it (step 3).
//! 2. The *coordinator* is the lowest rank whose node the member does not
//!    know lost. A member that is not the coordinator waits until a
//!    decision is stored for it (step 4) or the coordinator's node is
//!    lost; then it goes back to step 2 with one more rank lost. When the
//!    coordinator has changed so, the member first asks the new one for
//!    its part (as in step 3): it may have been told its predecessor's
//!    decision and returned, and then it never coordinates; the member
//!    adopts that decision.
//! 3. The coordinator asks every other member it does not know lost for
//!    its part (active message `threadwire.agree.get`, a fiber handler
//!    that waits until the member has contributed): its contribution, and
//!    the decision it holds, if any. A member whose node is lost meanwhile
//!    is counted lost.
//! 4. If any member (the coordinator included) already holds a decision —
//!    a coordinator before it decided, and died while telling the others
//!    — the coordinator adopts it. Otherwise it decides: the AND of the
//!    flags it gathered, and the union of the ranks known lost, sorted.
//!    It stores the decision, tells every member it reached
//!    (`threadwire.agree.set`, inline: stores it and wakes the member),
//!    waits for their acknowledgements, and returns it.
//!
//! So every member that returns returns the same decision, provided that
//! a node counted lost is really gone (a lost node's frames are no longer
//! read, so a coordinator wrongly thought lost reaches only the members
//! that have not yet counted it lost). A member that returned and then
//! died may have returned a decision the survivors replace. Each member
//! keeps the parts of its last [`KEPT`] agreements per group.

use super::{CollError, Group};
use crate::am::{ActiveMessage, AmError};
use crate::lock;
use crate::progress::Origin;
use crate::{Address, Endpoint};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use threadwire_fiber::Unparker;

/// The built-in handlers' names.
pub(crate) const GET_HANDLER: &str = "threadwire.agree.get";
pub(crate) const SET_HANDLER: &str = "threadwire.agree.set";

/// Agreements kept per member and group.
const KEPT: u64 = 8;

/// What the members agreed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agreement {
    /// The AND of the flags the coordinator gathered (those of every
    /// member that was alive when asked).
    pub flag: bool,
    /// Ranks whose nodes were known lost, sorted.
    pub failed: Vec<usize>,
}

/// (member thread, group id, agreement number).
type Key = (u32, u32, u64);

#[derive(Default)]
struct Part {
    contribution: Option<(bool, Vec<u32>)>,
    decision: Option<Agreement>,
    /// Get requests waiting for the contribution (step 3).
    askers: Vec<Unparker>,
    /// The member, waiting for a decision (step 2).
    member: Option<Unparker>,
}

/// This node's members' parts of their agreements.
#[derive(Default)]
pub(crate) struct Table {
    parts: Mutex<HashMap<Key, Part>>,
}

impl Table {
    /// Step 1.
    fn contribute(&self, key: Key, flag: bool, failed: Vec<u32>) {
        let mut parts = lock(&self.parts);
        let (thread, group, seq) = key;
        parts.retain(|&(t, g, s), _| t != thread || g != group || s + KEPT > seq);
        let part = parts.entry(key).or_default();
        part.contribution = Some((flag, failed));
        part.member = Some(threadwire_fiber::current_unparker());
        for asker in part.askers.drain(..) {
            asker.unpark();
        }
    }

    fn decision(&self, key: Key) -> Option<Agreement> {
        lock(&self.parts).get(&key).and_then(|p| p.decision.clone())
    }

    /// Step 4 at a member: the first decision stands.
    fn decide(&self, key: Key, decision: Agreement) {
        let mut parts = lock(&self.parts);
        let part = parts.entry(key).or_default();
        if part.decision.is_none() {
            part.decision = Some(decision);
        }
        if let Some(member) = &part.member {
            member.unpark();
        }
    }
}

impl Group {
    /// Agrees with the other members on `flag` (ANDed) and on which ranks
    /// are lost, completing even when members' nodes are lost before or
    /// during the call: every member that returns gets the same
    /// [`Agreement`] (the protocol is in `group/agree.rs`). Collective:
    /// every surviving member calls it.
    ///
    /// # Errors
    ///
    /// [`CollError::Finalized`].
    pub fn agree(&self, flag: bool) -> Result<Agreement, CollError> {
        let comm = &self.comm;
        let ep = &comm.ep;
        let router = &ep.node.shared.router;
        if router.finalized.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(CollError::Finalized);
        }
        let seq = comm.agreements.get();
        comm.agreements.set(seq + 1);
        let key = (ep.address().thread, self.id, seq);
        let table = &router.agreements;
        table.contribute(key, flag, self.known_lost());
        let mut first = None;
        let mut pulled = None;
        loop {
            if let Some(decision) = table.decision(key) {
                return Ok(decision);
            }
            let lost = self.known_lost();
            let coordinator = (0..self.size() as u32)
                .find(|r| !lost.contains(r))
                .expect("the caller's own node is never lost") as usize;
            if coordinator == self.rank() {
                return Ok(self.coordinate(key, flag, lost));
            }
            let member = self.members()[coordinator];
            if *first.get_or_insert(coordinator) != coordinator && pulled != Some(coordinator) {
                // Step 2's failover: the new coordinator may have returned
                // with its predecessor's decision; ask it.
                pulled = Some(coordinator);
                let get = crate::am::Handler::builtin(GET_HANDLER);
                let asked = ep.am_request(member.node, &get, encode_key(member.thread, self.id, seq));
                if let Ok(Some((_, _, Some(decision)))) = asked.wait().map(|p| decode_part(&p.into_vec())) {
                    table.decide(key, decision);
                }
                continue;
            }
            let gone = || router.peers[member.node as usize].lost().is_some();
            ep.node.shared.engine.wait_until(router, Origin::Peer(member.node), || {
                table.decision(key).is_some() || gone()
            });
        }
    }

    /// Agrees on the lost ranks ([`agree`](Self::agree)) and builds the
    /// group of the others, in rank order. Collective over the survivors.
    ///
    /// # Errors
    ///
    /// As [`Group::new`] among the survivors (one more loss meanwhile
    /// fails it with `PeerLost`: call `shrink` again).
    pub fn shrink(&self) -> Result<Group, CollError> {
        let agreed = self.agree(true)?;
        let survivors: Vec<Address> = self
            .members()
            .iter()
            .enumerate()
            .filter(|(rank, _)| agreed.failed.binary_search(rank).is_err())
            .map(|(_, &a)| a)
            .collect();
        Group::new(&self.comm.ep, &survivors)
    }

    /// Ranks whose nodes are lost as this node knows it (never its own).
    fn known_lost(&self) -> Vec<u32> {
        let router = &self.comm.ep.node.shared.router;
        self.members()
            .iter()
            .enumerate()
            .filter(|(_, a)| a.node != router.id && router.peers[a.node as usize].lost().is_some())
            .map(|(r, _)| r as u32)
            .collect()
    }

    /// Steps 3 and 4.
    fn coordinate(&self, key: Key, flag: bool, lost: Vec<u32>) -> Agreement {
        let ep = &self.comm.ep;
        let table = &ep.node.shared.router.agreements;
        let (_, group, seq) = key;
        let get = crate::am::Handler::builtin(GET_HANDLER);
        let mut failed: BTreeSet<u32> = lost.into_iter().collect();
        let asked: Vec<_> = (0..self.size() as u32)
            .filter(|&r| r as usize != self.rank() && !failed.contains(&r))
            .map(|r| {
                let a = self.members()[r as usize];
                (r, ep.am_request(a.node, &get, encode_key(a.thread, group, seq)))
            })
            .collect();
        let mut agreed_flag = flag;
        let mut adopted = table.decision(key);
        for (rank, request) in asked {
            match request.wait().map(|p| decode_part(&p.into_vec())) {
                Ok(Some((their_flag, their_failed, decision))) => {
                    agreed_flag &= their_flag;
                    failed.extend(their_failed);
                    if adopted.is_none() {
                        adopted = decision;
                    }
                }
                Ok(None) | Err(AmError::PeerLost { .. }) => {
                    failed.insert(rank);
                }
                Err(e) => {
                    tracing::warn!("agreement: rank {rank} could not answer: {e}");
                    failed.insert(rank);
                }
            }
        }
        fault(ep, "asked");
        let decision = adopted.unwrap_or(Agreement {
            flag: agreed_flag,
            failed: failed.iter().map(|&r| r as usize).collect(),
        });
        table.decide(key, decision.clone());
        let set = crate::am::Handler::builtin(SET_HANDLER);
        for r in (0..self.size()).filter(|&r| r != self.rank() && decision.failed.binary_search(&r).is_err()) {
            let a = self.members()[r];
            let mut bytes = encode_key(a.thread, group, seq);
            encode_decision(&mut bytes, &decision);
            // One at a time: a coordinator lost midway leaves a prefix told.
            if let Err(e) = ep.am_request(a.node, &set, bytes).wait() {
                tracing::debug!("agreement: rank {r} was not told: {e}");
            }
            fault(ep, "told-one");
        }
        decision
    }
}

/// Fault injection for the tests: with `THREADWIRE_FAULT_AGREE=<node>:<point>`
/// the coordinator on that node kills itself at that point of step 4
/// (`asked`: parts gathered, nothing decided; `told-one`: one member
/// told). Read only on the coordinator's path.
fn fault(ep: &Endpoint, point: &str) {
    let Ok(spec) = std::env::var(crate::env::FAULT_AGREE) else {
        return;
    };
    if spec == format!("{}:{point}", ep.address().node) {
        tracing::warn!("{}: agreement fault {point}: killing this node", ep.address());
        // SAFETY: kill(2) of this process; SIGKILL ends it.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// `threadwire.agree.get` (step 3): waits in a pool fiber until the
/// member has contributed, then answers its part.
pub(crate) fn serve_get(ep: &Endpoint, am: &mut ActiveMessage<'_>) {
    let Some(key) = decode_key(&am.payload().to_vec()) else {
        return; // Malformed: answered `NoReply`.
    };
    let table = &ep.node.shared.router.agreements;
    let answer = loop {
        {
            let mut parts = lock(&table.parts);
            let part = parts.entry(key).or_default();
            if let Some((flag, failed)) = &part.contribution {
                break encode_part(*flag, failed, part.decision.as_ref());
            }
            part.askers.push(threadwire_fiber::current_unparker());
        }
        threadwire_fiber::park();
    };
    let _ = am.reply(answer);
}

/// `threadwire.agree.set` (step 4), inline.
pub(crate) fn serve_set(am: &mut ActiveMessage<'_>) {
    let bytes = am.payload().to_vec();
    let Some(key) = decode_key(&bytes) else {
        return;
    };
    let mut r = Reader(&bytes[16..]);
    let Some(decision) = decode_decision(&mut r) else {
        return;
    };
    am.router().agreements.decide(key, decision);
    let _ = am.reply(Vec::new());
}

fn encode_key(thread: u32, group: u32, seq: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(64);
    b.extend_from_slice(&thread.to_le_bytes());
    b.extend_from_slice(&group.to_le_bytes());
    b.extend_from_slice(&seq.to_le_bytes());
    b
}

fn decode_key(b: &[u8]) -> Option<Key> {
    let mut r = Reader(b);
    Some((r.u32()?, r.u32()?, r.u64()?))
}

fn encode_ranks(b: &mut Vec<u8>, ranks: impl ExactSizeIterator<Item = u32>) {
    b.extend_from_slice(&(ranks.len() as u32).to_le_bytes());
    for r in ranks {
        b.extend_from_slice(&r.to_le_bytes());
    }
}

fn encode_decision(b: &mut Vec<u8>, d: &Agreement) {
    b.push(d.flag as u8);
    encode_ranks(b, d.failed.iter().map(|&r| r as u32));
}

fn decode_decision(r: &mut Reader<'_>) -> Option<Agreement> {
    let flag = r.u8()? != 0;
    let failed = r.ranks()?.into_iter().map(|x| x as usize).collect();
    Some(Agreement { flag, failed })
}

fn encode_part(flag: bool, failed: &[u32], decision: Option<&Agreement>) -> Vec<u8> {
    let mut b = vec![flag as u8];
    encode_ranks(&mut b, failed.iter().copied());
    match decision {
        Some(d) => {
            b.push(1);
            encode_decision(&mut b, d);
        }
        None => b.push(0),
    }
    b
}

/// A member's part; `None` for bytes no correct node sends.
fn decode_part(b: &[u8]) -> Option<(bool, Vec<u32>, Option<Agreement>)> {
    let mut r = Reader(b);
    let flag = r.u8()? != 0;
    let failed = r.ranks()?;
    let decision = match r.u8()? {
        0 => None,
        _ => Some(decode_decision(&mut r)?),
    };
    Some((flag, failed, decision))
}

/// Little-endian reads that fail instead of panicking.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|b| b[0])
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
    fn ranks(&mut self) -> Option<Vec<u32>> {
        let n = self.u32()? as usize;
        if n > self.0.len() / 4 {
            return None;
        }
        (0..n).map(|_| self.u32()).collect()
    }
}

/// The handlers every node has from its start.
pub(crate) fn builtins() -> [(&'static str, crate::am::registry::Run); 2] {
    use crate::am::registry::Run;
    use std::sync::Arc;
    [
        (GET_HANDLER, Run::Fiber(Arc::new(serve_get))),
        (SET_HANDLER, Run::Inline(Arc::new(serve_set))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_round_trip_and_garbage_is_refused() {
        let d = Agreement {
            flag: false,
            failed: vec![1, 5],
        };
        let b = encode_part(true, &[5], Some(&d));
        assert_eq!(decode_part(&b), Some((true, vec![5], Some(d.clone()))));
        assert_eq!(decode_part(&encode_part(false, &[], None)), Some((false, vec![], None)));
        for garbage in [&[][..], &[1], &[1, 255, 255, 255, 255], &[1, 0, 0, 0, 0, 1]] {
            assert_eq!(decode_part(garbage), None, "{garbage:?}");
        }
        assert_eq!(decode_key(&encode_key(3, 4, 5)), Some((3, 4, 5)));
        assert_eq!(decode_key(&[1, 2]), None);
    }
}
