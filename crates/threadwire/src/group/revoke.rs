//! Revoking a group (MPI ULFM's `MPIX_Comm_revoke`): after a failure, one
//! member stops the whole group, so that members blocked in operations
//! that the failure does not touch — a receive from a live member that
//! will never send, a collective whose other members gave up — return
//! instead of waiting forever. The survivors then [`agree`](Group::agree)
//! and [`shrink`](Group::shrink), the two operations a revoked group
//! still allows.
//!
//! 1. [`Group::revoke`] marks the group revoked for the calling member,
//!    then sends the inline handler `threadwire.revoke` to every other
//!    member's node, once per node, naming the group (its id and a
//!    fingerprint of its member list) and that node's member threads.
//!    A member on a lost node is skipped.
//! 2. Marking (step 1 locally, or the handler) records (thread, group id,
//!    fingerprint) in the node's [`Table`], then fails each such thread's
//!    posted receives in the group's point-to-point and collective
//!    contexts with `RecvError::Revoked` and wakes it.
//! 3. Every operation on the group but `agree`, `shrink`, `size`, `rank`
//!    and the like first looks in the table (one atomic load while the
//!    node has no revocation) and fails with [`CollError::Revoked`]; a
//!    collective under way sees the mark when it is woken (step 2) and
//!    fails alike. A receive posted while the mark is being made looks
//!    again once posted, so none is left waiting.
//! 4. Revoking is idempotent, and a mark outlives the revoker: it is
//!    removed when the member itself drops the group (the group id goes
//!    back to the thread's free ids), so a later group that reuses the id
//!    is not revoked — and the fingerprint keeps a late mark for the old
//!    group from touching a new group with the same id.
//!
//! Point-to-point messages of the group already received stay received;
//! those still unexpected stay in the mailbox, unreachable once the
//! group is dropped (as with any group's leftovers).

use super::{context, CollError, Group};
use crate::am::ActiveMessage;
use crate::error::RecvError;
use crate::lock;
use crate::mailbox::MailboxTable;
use crate::Address;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The built-in handler's name.
pub(crate) const HANDLER: &str = "threadwire.revoke";

/// (member thread, group id, fingerprint of the member list).
type Mark = (u32, u32, u64);

/// The revoked groups of a node's members (step 2).
#[derive(Default)]
pub(crate) struct Table {
    /// Marks held: zero lets step 3 skip the lock.
    count: AtomicUsize,
    marks: Mutex<HashSet<Mark>>,
}

impl Table {
    /// Step 2: marks the group and fails its posted receives.
    fn mark(&self, mailboxes: &MailboxTable, mark: Mark) {
        let (thread, id, _) = mark;
        {
            let mut marks = lock(&self.marks);
            if marks.insert(mark) {
                self.count.store(marks.len(), Ordering::Release);
            }
        }
        if let Some(mailbox) = mailboxes.get(thread) {
            let contexts = [context::p2p_context(id), context::collective_context(id)];
            mailbox.fail_contexts(&contexts, &RecvError::Revoked);
        }
    }

    /// Whether any group of this node's members is revoked (step 3's
    /// one atomic load).
    pub(crate) fn any(&self) -> bool {
        self.count.load(Ordering::Acquire) != 0
    }

    /// Step 3.
    pub(crate) fn is_marked(&self, mark: Mark) -> bool {
        self.any() && lock(&self.marks).contains(&mark)
    }

    /// Step 4: `thread` dropped its group `id`.
    pub(crate) fn forget(&self, thread: u32, id: u32) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut marks = lock(&self.marks);
        marks.retain(|&(t, k, _)| (t, k) != (thread, id));
        self.count.store(marks.len(), Ordering::Release);
    }
}

/// Which group of that id is meant: a hash of its member list.
pub(crate) fn fingerprint(members: &[Address]) -> u64 {
    context::list_hash(members)
}

impl Group {
    /// Revokes the group for every member (module docs, steps 1–4): from
    /// now on their operations on it fail with [`CollError::Revoked`],
    /// those under way included, except [`agree`](Group::agree) and
    /// [`shrink`](Group::shrink). Not collective: any member may call it,
    /// once or again; it returns once every live member's node has
    /// marked it.
    ///
    /// ```
    /// use threadwire::{CollError, Group};
    ///
    /// let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// let g = Group::world(&ep).unwrap();
    /// g.revoke();
    /// assert_eq!(g.barrier(), Err(CollError::Revoked));
    /// assert_eq!(g.shrink().unwrap().size(), 1);
    /// ```
    pub fn revoke(&self) {
        let ep = &self.comm.ep;
        let router = &ep.node.shared.router;
        let print = fingerprint(self.members());
        let me = ep.address();
        router.revoked.mark(&router.mailboxes, (me.thread, self.id, print));
        let mut by_node: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for a in self.members().iter().filter(|&&a| a != me) {
            by_node.entry(a.node).or_default().push(a.thread);
        }
        let handler = crate::am::Handler::builtin(HANDLER);
        let asked: Vec<_> = by_node
            .into_iter()
            .filter(|&(node, _)| node == me.node || router.peers[node as usize].lost().is_none())
            .map(|(node, threads)| ep.am_request(node, &handler, encode(self.id, print, &threads)))
            .collect();
        for request in asked {
            // A node lost meanwhile has no member left to stop.
            let _ = request.wait();
        }
    }

    /// Step 3: `Err(Revoked)` once the group is revoked for this member.
    pub(crate) fn check_revoked(&self) -> Result<(), CollError> {
        match self.comm.revoked() {
            true => Err(CollError::Revoked),
            false => Ok(()),
        }
    }
}

fn encode(id: u32, print: u64, threads: &[u32]) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + 4 * threads.len());
    v.extend_from_slice(&id.to_le_bytes());
    v.extend_from_slice(&print.to_le_bytes());
    for t in threads {
        v.extend_from_slice(&t.to_le_bytes());
    }
    v
}

/// Step 2, inline: marks the group for the threads named, then answers.
pub(crate) fn serve(am: &mut ActiveMessage<'_>) {
    let bytes = am.payload().to_vec();
    if bytes.len() < 12 || !(bytes.len() - 12).is_multiple_of(4) {
        let _ = am.reply(Vec::new());
        return;
    }
    let id = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
    let print = u64::from_le_bytes(bytes[4..12].try_into().expect("8 bytes"));
    let router = am.router();
    for t in bytes[12..].chunks_exact(4) {
        let thread = u32::from_le_bytes(t.try_into().expect("4 bytes"));
        router.revoked.mark(&router.mailboxes, (thread, id, print));
    }
    let _ = am.reply(Vec::new());
}
