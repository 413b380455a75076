//! Mailboxes: each thread's posted receives and unexpected messages.
//!
//! Rules that keep matching correct:
//!
//! 1. A mailbox is read by one thread only, its owner; anyone may deliver.
//! 2. Both queues sit behind the mailbox's one lock, held only to match and
//!    enqueue: never while waking, never while taking another lock but a
//!    receive slot's (a leaf: nothing is locked while holding it).
//! 3. A delivered message goes to the first posted receive (in posting
//!    order) that matches — same context exactly, then source and tag —
//!    else to the back of the unexpected queue; a new
//!    receive takes the first unexpected message (in arrival order) that
//!    matches, else is posted. With per-connection FIFO delivery this keeps
//!    messages from one thread to another in the order they were sent.
//! 4. After any delivery the owner is unparked, so a waiting owner
//!    re-checks — unless the owner is the delivering thread, which
//!    re-checks anyway before it parks.
//! 5. The unexpected queue stays in arrival order (every message is stamped
//!    on delivery), also when a withdrawn receive gives its message back.

use crate::error::{PeerLost, RecvError};
use crate::lock;
use crate::stats::Counters;
use crate::{Address, Message, Source, Status, TagMatch};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use threadwire_fiber::Unparker;

pub(crate) mod slot;

use slot::Slot;

/// Where a posted receive's result lands ([`slot`], rules 1–4): completed
/// by the delivery that matches it, under the mailbox lock, or by
/// `fail_for` after removing it under that lock; read by the owner.
pub(crate) type RecvSlot = Slot<Result<Message, RecvError>>;

struct Posted {
    context: u32,
    source: Source,
    tag: TagMatch,
    slot: Arc<RecvSlot>,
}

#[derive(Default)]
struct Queues {
    posted: VecDeque<Posted>,
    /// Messages with their arrival stamps, in arrival order.
    unexpected: VecDeque<(u64, Message)>,
    /// The next arrival stamp: messages delivered so far.
    arrivals: u64,
}

/// A thread's matching queues.
#[derive(Default)]
pub(crate) struct Mailbox {
    queues: Mutex<Queues>,
    /// The unexpected queue's length, stored under the lock whenever it
    /// changes: the owner's probes look at it first and take the lock only
    /// when something is queued (a collective's wait probes for aborts
    /// at every call; the lock was most of that probe's cost).
    queued: AtomicUsize,
    owner: OnceLock<Unparker>,
    /// Sent by the owner, received under `queues`' lock.
    pub(crate) counters: Counters,
}

/// The outcome of posting a receive.
pub(crate) enum Posting {
    /// A message was waiting.
    Matched(Message),
    /// Posted; the slot completes later.
    Pending(Arc<RecvSlot>),
}

impl Mailbox {
    pub(crate) fn set_owner(&self, owner: Unparker) -> bool {
        self.owner.set(owner).is_ok()
    }

    pub(crate) fn wake_owner(&self) {
        match self.owner.get() {
            // The owner delivering to itself (while polling in its own
            // wait) re-checks before it parks.
            Some(owner) if !owner.is_current_thread() => owner.unpark(),
            _ => {}
        }
    }

    /// Delivers a message (rule 3) and wakes the owner (rule 4).
    pub(crate) fn deliver(&self, message: Message) {
        {
            let mut q = lock(&self.queues);
            self.counters.received(message.len());
            let arrival = q.arrivals;
            q.arrivals += 1;
            let at = q.posted.iter().position(|p| {
                p.context == message.context
                    && p.source.matches(message.source)
                    && p.tag.matches(message.tag)
            });
            match at {
                Some(i) => {
                    let posted = q.posted.remove(i).expect("index from position");
                    // Completed before the lock is released: a `cancel` in
                    // between would find the receive neither posted nor
                    // complete, and the message would be lost.
                    // SAFETY: removed from the posted queue just now, under
                    // the lock: this is its one completion (slot rule 1).
                    unsafe { posted.slot.complete(Ok(message), arrival) };
                }
                None => {
                    q.unexpected.push_back((arrival, message));
                    self.queued.store(q.unexpected.len(), Ordering::Release);
                }
            }
        }
        self.wake_owner();
    }

    /// Takes a matching unexpected message of `context` or posts a receive.
    pub(crate) fn post(&self, context: u32, source: Source, tag: TagMatch) -> Posting {
        let mut q = lock(&self.queues);
        if let Some(m) = self.take_unexpected(&mut q, context, source, tag) {
            return Posting::Matched(m);
        }
        let slot = Arc::new(RecvSlot::new());
        q.posted.push_back(Posted {
            context,
            source,
            tag,
            slot: slot.clone(),
        });
        Posting::Pending(slot)
    }

    /// Takes a matching unexpected message of `context` without posting.
    pub(crate) fn try_take(&self, context: u32, source: Source, tag: TagMatch) -> Option<Message> {
        if self.nothing_queued() {
            return None;
        }
        self.take_unexpected(&mut lock(&self.queues), context, source, tag)
    }

    /// The owner's lock-free look (rule 1: only it takes messages out):
    /// nothing queued now. A delivery racing with it is seen by the next
    /// look, as if it had come a moment later.
    fn nothing_queued(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0
    }

    /// Removes and returns the first matching unexpected message.
    fn take_unexpected(
        &self,
        q: &mut Queues,
        context: u32,
        source: Source,
        tag: TagMatch,
    ) -> Option<Message> {
        let i = q.unexpected.iter().position(|(_, m)| {
            m.context == context && source.matches(m.source) && tag.matches(m.tag)
        })?;
        let taken = q.unexpected.remove(i).map(|(_, m)| m);
        self.queued.store(q.unexpected.len(), Ordering::Release);
        taken
    }

    /// Status of the first matching unexpected message of `context`.
    pub(crate) fn probe(&self, context: u32, source: Source, tag: TagMatch) -> Option<Status> {
        if self.nothing_queued() {
            return None;
        }
        let q = lock(&self.queues);
        q.unexpected
            .iter()
            .find(|(_, m)| m.context == context && source.matches(m.source) && tag.matches(m.tag))
            .map(|(_, m)| m.status())
    }

    /// Withdraws a pending receive only if no message matched it yet:
    /// `true` if it was still posted.
    pub(crate) fn withdraw(&self, slot: &Arc<RecvSlot>) -> bool {
        let mut q = lock(&self.queues);
        match q.posted.iter().position(|p| Arc::ptr_eq(&p.slot, slot)) {
            Some(i) => {
                q.posted.remove(i);
                true
            }
            None => false,
        }
    }

    /// Withdraws a pending receive; if it completed meanwhile, its message
    /// goes back into the unexpected queue where it arrived (rule 5). Not
    /// simply to the front: messages of the same sender that arrived before
    /// it, but did not match this receive, may still be queued, and a
    /// wildcard receive must not see it overtake them.
    pub(crate) fn cancel(&self, slot: &Arc<RecvSlot>) {
        let mut q = lock(&self.queues);
        if let Some(i) = q.posted.iter().position(|p| Arc::ptr_eq(&p.slot, slot)) {
            q.posted.remove(i);
            return;
        }
        // SAFETY: the owner withdraws its own receives (rule 1).
        if let Some(Ok(m)) = unsafe { slot.take() } {
            let arrival = slot.arrival();
            let at = q
                .unexpected
                .iter()
                .position(|(a, _)| *a > arrival)
                .unwrap_or(q.unexpected.len());
            q.unexpected.insert(at, (arrival, m));
            self.queued.store(q.unexpected.len(), Ordering::Release);
        }
    }

    /// Fails pending receives that `lost` may have been meant to satisfy:
    /// those naming its node and, when it failed, the wildcard ones.
    pub(crate) fn fail_for(&self, lost: &PeerLost) {
        let failed = matches!(lost.cause, crate::error::LossCause::Failed(_));
        let mut hit = Vec::new();
        {
            let mut q = lock(&self.queues);
            q.posted.retain(|p| {
                let affected = match p.source.node() {
                    Some(n) => n == lost.node,
                    None => failed,
                };
                if affected {
                    hit.push(p.slot.clone());
                }
                !affected
            });
        }
        for slot in &hit {
            // SAFETY: removed from the posted queue above, under the lock:
            // this is its one completion (slot rule 1). No stamp: a failed
            // receive gives no message back.
            unsafe { slot.complete(Err(RecvError::PeerLost(lost.clone())), 0) };
        }
        self.wake_owner();
    }
}

impl Mailbox {
    /// Fails every posted receive in one of `contexts` with `error` (a
    /// revoked group's, `group::revoke`), and wakes the owner.
    pub(crate) fn fail_contexts(&self, contexts: &[u32], error: &RecvError) {
        let mut hit = Vec::new();
        {
            let mut q = lock(&self.queues);
            q.posted.retain(|p| {
                let affected = contexts.contains(&p.context);
                if affected {
                    hit.push(p.slot.clone());
                }
                !affected
            });
        }
        for slot in &hit {
            // SAFETY: removed from the posted queue above, under the lock:
            // this is its one completion (slot rule 1).
            unsafe { slot.complete(Err(error.clone()), 0) };
        }
        self.wake_owner();
    }
}


const CHUNK: usize = 256;
const CHUNKS: usize = 256;
/// Most threads a node may have: 65,536.
pub(crate) const MAX_THREADS: u32 = (CHUNK * CHUNKS) as u32;

/// Every mailbox of a node, indexed by thread number without a lock:
/// chunks of slots created on first use. A message for a thread that does
/// not exist yet waits in its mailbox until the thread starts.
pub(crate) struct MailboxTable {
    chunks: Box<[OnceLock<Chunk>]>,
}

type Chunk = Box<[OnceLock<Mailbox>]>;

impl MailboxTable {
    pub(crate) fn new() -> MailboxTable {
        MailboxTable {
            chunks: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The mailbox of `thread`, created if needed; `None` past [`MAX_THREADS`].
    pub(crate) fn get(&self, thread: u32) -> Option<&Mailbox> {
        let (c, i) = (thread as usize / CHUNK, thread as usize % CHUNK);
        let chunk = self
            .chunks
            .get(c)?
            .get_or_init(|| (0..CHUNK).map(|_| OnceLock::new()).collect());
        Some(chunk[i].get_or_init(Mailbox::default))
    }

    /// Every mailbox created so far.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Mailbox)) {
        for chunk in self.chunks.iter().filter_map(OnceLock::get) {
            for mailbox in chunk.iter().filter_map(OnceLock::get) {
                f(mailbox);
            }
        }
    }
}

/// Who sent a message received from the network, in which context.
pub(crate) fn remote_message(
    node: u32,
    thread: u32,
    context: u32,
    tag: u32,
    payload: threadwire_wire::Payload,
) -> Message {
    Message {
        source: Address::new(node, thread),
        context,
        tag,
        payload,
        tail: crate::message::Tail::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use threadwire_wire::Payload;

    fn msg(node: u32, thread: u32, tag: u32, byte: u8) -> Message {
        remote_message(node, thread, 0, tag, Payload::from_vec(vec![byte]))
    }

    #[test]
    fn unexpected_then_posted_in_order() {
        let mb = Mailbox::default();
        mb.deliver(msg(1, 0, 5, 1));
        mb.deliver(msg(1, 0, 6, 2));
        mb.deliver(msg(1, 0, 5, 3));
        let Posting::Matched(m) = mb.post(0, Source::Any, TagMatch::Is(5)) else {
            panic!()
        };
        assert_eq!(m.into_vec(), vec![1]);
        assert_eq!(mb.probe(0, Source::Any, TagMatch::Any).unwrap().tag, 6);
        let Posting::Matched(m) = mb.post(0, Source::Node(1), TagMatch::Is(5)) else {
            panic!()
        };
        assert_eq!(m.into_vec(), vec![3]);
        let Posting::Pending(slot) = mb.post(0, Source::Thread(Address::new(2, 0)), TagMatch::Any)
        else {
            panic!()
        };
        mb.deliver(msg(2, 1, 0, 9)); // other thread: unexpected
        assert!(!slot.is_done());
        mb.deliver(msg(2, 0, 0, 8));
        assert!(slot.is_done());
        // SAFETY: this thread owns the mailbox.
        let m = unsafe { slot.take() };
        assert_eq!(m.unwrap().unwrap().into_vec(), vec![8]);
    }

    #[test]
    fn cancel_returns_a_completed_message() {
        let mb = Mailbox::default();
        let Posting::Pending(slot) = mb.post(0, Source::Any, TagMatch::Any) else {
            panic!()
        };
        mb.deliver(msg(0, 1, 0, 7));
        mb.cancel(&slot);
        assert_eq!(
            mb.try_take(0, Source::Any, TagMatch::Any).unwrap().into_vec(),
            vec![7]
        );
    }

    #[test]
    fn cancel_keeps_arrival_order() {
        let mb = Mailbox::default();
        let Posting::Pending(slot) = mb.post(0, Source::Any, TagMatch::Is(2)) else {
            panic!()
        };
        mb.deliver(msg(1, 0, 1, 1)); // unexpected
        mb.deliver(msg(1, 0, 2, 2)); // completes the receive
        mb.deliver(msg(1, 0, 3, 3)); // unexpected
        mb.cancel(&slot);
        for byte in 1..=3 {
            let m = mb.try_take(0, Source::Any, TagMatch::Any).unwrap();
            assert_eq!(m.into_vec(), vec![byte]);
        }
    }

    #[test]
    fn loss_fails_named_and_wildcard_receives() {
        let mb = Mailbox::default();
        let Posting::Pending(named) = mb.post(0, Source::Node(3), TagMatch::Any) else {
            panic!()
        };
        let Posting::Pending(any) = mb.post(0, Source::Any, TagMatch::Any) else {
            panic!()
        };
        let Posting::Pending(other) = mb.post(0, Source::Node(2), TagMatch::Any) else {
            panic!()
        };
        mb.fail_for(&PeerLost {
            node: 3,
            cause: crate::error::LossCause::Failed(crate::error::Failure::ReportedByLauncher(
                "killed".into(),
            )),
        });
        assert!(named.is_done() && any.is_done() && !other.is_done());
    }

    #[test]
    fn contexts_never_cross() {
        let mb = Mailbox::default();
        let in_ctx = |ctx, byte| {
            remote_message(1, 0, ctx, 5, Payload::from_vec(vec![byte]))
        };
        let Posting::Pending(group) = mb.post(7, Source::Any, TagMatch::Any) else {
            panic!()
        };
        mb.deliver(in_ctx(0, 1)); // plain: not for the group's receive
        assert!(!group.is_done());
        mb.deliver(in_ctx(8, 2)); // another group's
        assert!(!group.is_done());
        mb.deliver(in_ctx(7, 3));
        assert!(group.is_done());
        assert_eq!(mb.probe(7, Source::Any, TagMatch::Any), None);
        assert_eq!(mb.probe(8, Source::Any, TagMatch::Is(5)).unwrap().len, 1);
        let m = mb.try_take(0, Source::Any, TagMatch::Is(5)).unwrap();
        assert_eq!(m.into_vec(), vec![1]);
        assert!(mb.try_take(0, Source::Any, TagMatch::Any).is_none());
    }

    #[test]
    fn table_creates_on_demand() {
        let t = MailboxTable::new();
        assert!(t.get(70_000).is_none());
        t.get(300).unwrap().deliver(msg(0, 0, 0, 0));
        let mut n = 0;
        t.for_each(|_| n += 1);
        assert_eq!(n, 1);
    }
}
