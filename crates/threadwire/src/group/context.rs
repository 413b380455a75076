//! Context ids: which group a message belongs to.
//!
//! A data frame carries a 32-bit context (the header's `aux` word) and a
//! receive matches only messages of its own context. A group holds one
//! *group id* `k` and derives three contexts from it:
//!
//! | context       | value        | carries                                   |
//! |---------------|--------------|-------------------------------------------|
//! | point-to-point| `k << 2`     | the user's [`Group::send`](super::Group::send) traffic |
//! | collective    | `k << 2 | 1` | collectives, one tag per call (the call's sequence number) |
//! | abort         | `k << 2 | 2` | a member's error, telling the others to stop |
//! | multicast     | `k << 2 | 3` | broadcasts and allgathers by multicast stream, one tag per call (`algorithms::multicast`) |
//!
//! Outside this scheme, context `u32::MAX` carries the replies of a named
//! group's home ([`named::protocol::REPLY_CONTEXT`](super::named::protocol)),
//! `u32::MAX - 1` the answers to active-message requests (`am`), and
//! `u32::MAX - 3` the results of remotely spawned threads
//! (`remote_spawn`), and `u32::MAX - 4` the launcher's answers to a
//! thread's requests to grow or shrink the machine (`vm`).
//!
//! Id 0 is not a group: context 0 is plain point-to-point between
//! endpoints, and contexts 1 and 2 carry the agreement that builds a group
//! from an explicit list (before it has an id of its own).
//!
//! Ids are agreed, never guessed: every thread keeps a mask of the ids its
//! groups use, and a new group takes an id free at *every* member — the
//! members combine their free masks with a bitwise AND (an allreduce, as
//! MPICH does) and all pick the same bit from the result. A group from an
//! explicit list first proposes an id derived from the list (so that the
//! common case agrees on the first candidate), and checks it in the same
//! allreduce.

use crate::lock;
use std::collections::HashMap;
use std::sync::Mutex;

/// Group ids per thread: `1..MAX_GROUP_IDS`.
pub(crate) const MAX_GROUP_IDS: usize = 4096;
/// Words of a free-id mask.
pub(crate) const MASK_WORDS: usize = MAX_GROUP_IDS / 64;
/// Ids from here up are where explicit lists propose theirs; `split` and
/// `dup` take the lowest free one, so the two rarely meet.
pub(crate) const LIST_IDS_FROM: u32 = (MAX_GROUP_IDS / 2) as u32;

/// The contexts of the agreement that builds a group from a list.
pub(crate) const BOOTSTRAP: u32 = 0;

/// The point-to-point context of group id `k`.
pub(crate) fn p2p_context(k: u32) -> u32 {
    k << 2
}

/// The collective context of group id `k`.
pub(crate) fn collective_context(k: u32) -> u32 {
    k << 2 | 1
}

/// The abort context of group id `k`.
pub(crate) fn abort_context(k: u32) -> u32 {
    k << 2 | 2
}

/// The context of group id `k`'s broadcasts by multicast stream.
pub(crate) fn multicast_context(k: u32) -> u32 {
    k << 2 | 3
}

/// The ids in use by each thread of this node that belongs to a group.
#[derive(Default)]
pub(crate) struct ContextTable {
    used: Mutex<HashMap<u32, Box<[u64; MASK_WORDS]>>>,
}

impl ContextTable {
    /// `thread`'s free ids as a mask (bit set: free); id 0 never is.
    pub(crate) fn free_mask(&self, thread: u32) -> Vec<u64> {
        let used = lock(&self.used);
        let mut mask: Vec<u64> = match used.get(&thread) {
            Some(u) => u.iter().map(|w| !w).collect(),
            None => vec![u64::MAX; MASK_WORDS],
        };
        mask[0] &= !1;
        mask
    }

    /// Marks `k` used by `thread`.
    pub(crate) fn take(&self, thread: u32, k: u32) {
        let mut used = lock(&self.used);
        let mask = used.entry(thread).or_insert_with(|| Box::new([0; MASK_WORDS]));
        mask[k as usize / 64] |= 1 << (k % 64);
    }

    /// Gives `k` back (a group was dropped).
    pub(crate) fn release(&self, thread: u32, k: u32) {
        if let Some(mask) = lock(&self.used).get_mut(&thread) {
            mask[k as usize / 64] &= !(1 << (k % 64));
        }
    }
}

/// Whether `k` is set in `mask`.
pub(crate) fn is_free(mask: &[u64], k: u32) -> bool {
    mask.get(k as usize / 64)
        .is_some_and(|w| w & (1 << (k % 64)) != 0)
}

/// The id every member picks from the AND of their free masks: `preferred`
/// if free, else the lowest free id at or above `from`, else the lowest.
pub(crate) fn choose(mask: &[u64], preferred: Option<u32>, from: u32) -> Option<u32> {
    if let Some(k) = preferred.filter(|&k| is_free(mask, k)) {
        return Some(k);
    }
    let lowest = |start: u32| (start..MAX_GROUP_IDS as u32).find(|&k| is_free(mask, k));
    lowest(from).or_else(|| lowest(1))
}

/// The id an explicit list proposes: FNV-1a of its addresses, in the upper
/// half of the id space.
pub(crate) fn list_hash(members: &[crate::Address]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for a in members {
        for b in a.node.to_le_bytes().into_iter().chain(a.thread.to_le_bytes()) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The id proposed for a list of hash `h`.
pub(crate) fn proposed(h: u64) -> u32 {
    LIST_IDS_FROM + (h % u64::from(MAX_GROUP_IDS as u32 - LIST_IDS_FROM)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_taken_and_given_back() {
        let t = ContextTable::default();
        let m = t.free_mask(3);
        assert!(!is_free(&m, 0) && is_free(&m, 1));
        assert_eq!(choose(&m, None, 1), Some(1));
        t.take(3, 1);
        t.take(3, 2);
        let m = t.free_mask(3);
        assert_eq!(choose(&m, None, 1), Some(3));
        assert_eq!(choose(&m, Some(2), 1), Some(3));
        assert_eq!(choose(&m, Some(2500), 1), Some(2500));
        t.release(3, 1);
        assert_eq!(choose(&t.free_mask(3), None, 1), Some(1));
        assert_eq!(choose(&vec![0; MASK_WORDS], None, 1), None);
    }

    #[test]
    fn contexts_are_distinct() {
        let k = 77;
        let all = [p2p_context(k), collective_context(k), abort_context(k)];
        assert_eq!(all, [308, 309, 310]);
        assert!(all.iter().all(|&c| c != 0));
        let p = proposed(list_hash(&[crate::Address::new(0, 0)]));
        assert!((LIST_IDS_FROM..MAX_GROUP_IDS as u32).contains(&p));
    }
}
