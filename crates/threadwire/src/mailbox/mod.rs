//! Mailboxes: each thread's posted receives and unexpected messages.
//!
//! Rules that keep matching correct:
//!
//! 1. A mailbox's queues ([`queues`]) are read and changed on its owner's
//!    thread only, with no lock: the owner posts, takes, probes and
//!    withdraws, and matches what arrives. Anyone may deliver.
//! 2. A delivery on the owner's thread (the owner driving progress in its
//!    own wait, or sending to itself) is matched at once. Any other
//!    thread pushes the message onto the mailbox's [`incoming`] stack and
//!    unparks the owner; failures (a lost node, a revoked group) travel
//!    the same way. Every operation of the owner first takes in the whole
//!    stack, oldest first, so what came from other threads is matched
//!    before anything newer, in the order it was handed over.
//! 3. An arriving message goes to the first posted receive (in posting
//!    order) that matches — same context exactly, then source and tag —
//!    else to the back of the unexpected queue; a new receive takes the
//!    first unexpected message (in arrival order) that matches, else is
//!    posted. With per-connection FIFO delivery this keeps messages from
//!    one thread to another in the order they were sent.
//! 4. A pusher pushes, then looks up the owner to unpark it; the owner
//!    sets itself, then takes the stack with its head exchanged
//!    (`incoming`, step 4). The exchanges order the two, so either the
//!    owner's take finds the message or the pusher finds the owner to
//!    wake. A delivery on the
//!    owner's thread wakes nobody: the owner re-checks before it parks.
//! 5. The unexpected queue stays in arrival order (every message is
//!    stamped when it arrives), also when a withdrawn receive gives its
//!    message back.

use crate::error::{PeerLost, RecvError};
use crate::message::Tail;
use crate::stats::Counters;
use crate::{Address, Message, Source, Status, TagMatch};
use std::cell::UnsafeCell;
use std::sync::OnceLock;
use threadwire_fiber::Unparker;

pub(crate) mod incoming;
mod queues;

use incoming::Incoming;
use queues::Queues;
pub(crate) use queues::Ticket;

/// What other threads hand the owner (rule 2).
enum Item {
    Message(Message),
    /// Fail the receives this loss may have been meant to satisfy.
    Lost(PeerLost),
    /// Fail the receives posted in these contexts.
    Failed(Box<[u32]>, RecvError),
}

/// A thread's matching queues.
#[derive(Default)]
pub(crate) struct Mailbox {
    incoming: Incoming<Item>,
    /// The owner's alone (rule 1).
    own: UnsafeCell<Queues>,
    owner: OnceLock<Unparker>,
    /// Sent by the owner, received by the owner.
    pub(crate) counters: Counters,
}

// SAFETY: `own` is touched on the owner's thread only (rule 1): by the
// owner's operations, which its endpoint and requests call (neither is
// `Send`), and by deliveries that found the owner to be the calling
// thread. Everything else goes through `incoming`, which is `Sync`.
unsafe impl Sync for Mailbox {}

/// The outcome of posting a receive.
pub(crate) enum Posting {
    /// A message was waiting.
    Matched(Message),
    /// Posted; the ticket finds its result later.
    Pending(Ticket),
}

impl Mailbox {
    /// Makes the calling thread the owner (rule 4: then it looks at the
    /// stack, exchanging its head); `false` if it had one.
    pub(crate) fn set_owner(&self, owner: Unparker) -> bool {
        if self.owner.set(owner).is_err() {
            return false;
        }
        // SAFETY: the calling thread is the owner now (rule 1), and no
        // operation of its is under way.
        let q = unsafe { &mut *self.own.get() };
        for item in self.incoming.take_all_synchronized() {
            self.take_item(q, item);
        }
        true
    }

    pub(crate) fn wake_owner(&self) {
        match self.owner.get() {
            // The owner delivering to itself (while polling in its own
            // wait) re-checks before it parks.
            Some(owner) if !owner.is_current_thread() => owner.unpark(),
            _ => {}
        }
    }

    /// Delivers a message: matched at once on the owner's thread, else
    /// handed over (rule 2) with a wake-up (rule 4).
    #[inline]
    pub(crate) fn deliver(&self, message: Message) {
        let message = if self.owner.get().is_some_and(Unparker::is_current_thread) {
            match self.try_own(message, |q, m| q.arrive(m, &self.counters)) {
                Ok(()) => return,
                // Inside one of the owner's own operations: handed over.
                Err(m) => m,
            }
        } else {
            message
        };
        self.hand_over(Item::Message(message));
    }

    /// Rules 2 and 4 for another thread's delivery or failure.
    fn hand_over(&self, item: Item) {
        self.incoming.push(item);
        self.wake_owner();
    }

    /// Runs an operation of the owner on its queues, after taking in what
    /// other threads handed over (rule 2).
    #[inline]
    fn own<R>(&self, f: impl FnOnce(&mut Queues) -> R) -> R {
        match self.try_own((), |q, ()| f(q)) {
            Ok(r) => r,
            Err(()) => panic!("a mailbox operation re-entered"),
        }
    }

    /// [`own`](Self::own) with `value`, unless the owner is already inside
    /// one of its operations: then `value` comes back untouched. Only on
    /// the owner's thread (rule 1).
    #[inline]
    fn try_own<T, R>(&self, value: T, f: impl FnOnce(&mut Queues, T) -> R) -> Result<R, T> {
        // SAFETY: only the owner's thread calls the owner's operations
        // (rule 1), and `busy` refuses a second borrow from inside one.
        let q = unsafe { &mut *self.own.get() };
        if q.busy {
            return Err(value);
        }
        q.busy = true;
        self.take_in(q);
        let r = f(q, value);
        q.busy = false;
        Ok(r)
    }

    #[inline]
    fn take_in(&self, q: &mut Queues) {
        for item in self.incoming.take_all() {
            self.take_item(q, item);
        }
    }

    fn take_item(&self, q: &mut Queues, item: Item) {
        match item {
            Item::Message(m) => q.arrive(m, &self.counters),
            Item::Lost(lost) => q.fail_for(&lost),
            Item::Failed(contexts, error) => q.fail_contexts(&contexts, &error),
        }
    }

    /// Takes a matching unexpected message of `context` or posts a receive.
    #[inline]
    pub(crate) fn post(&self, context: u32, source: Source, tag: TagMatch) -> Posting {
        self.own(|q| match q.take_unexpected(context, source, tag) {
            Some(m) => Posting::Matched(m),
            None => Posting::Pending(q.post(context, source, tag)),
        })
    }

    /// Takes a matching unexpected message of `context` without posting.
    pub(crate) fn try_take(&self, context: u32, source: Source, tag: TagMatch) -> Option<Message> {
        self.own(|q| q.take_unexpected(context, source, tag))
    }

    /// Status of the first matching unexpected message of `context`.
    pub(crate) fn probe(&self, context: u32, source: Source, tag: TagMatch) -> Option<Status> {
        self.own(|q| q.probe(context, source, tag))
    }

    /// Whether the posted receive has its result.
    #[inline]
    pub(crate) fn is_done(&self, ticket: Ticket) -> bool {
        self.own(|q| q.is_done(ticket))
    }

    /// Whether the posted receive has its result, and if so whether that
    /// is a message whose bytes are still to be fetched (`rendezvous`,
    /// step 3): `None` while pending, then `Some(announced)`.
    #[inline]
    pub(crate) fn matched(&self, ticket: Ticket) -> Option<bool> {
        self.own(|q| {
            q.peek(ticket).map(|r| {
                matches!(
                    r,
                    Ok(Message {
                        tail: Tail::Announced(_),
                        ..
                    })
                )
            })
        })
    }

    /// The posted receive's result, taken; `None` while it has none.
    #[inline]
    pub(crate) fn take(&self, ticket: Ticket) -> Option<Result<Message, RecvError>> {
        self.own(|q| q.take(ticket).map(|(r, _)| r))
    }

    /// Withdraws a pending receive only if no message matched it yet:
    /// `true` if it was still posted.
    pub(crate) fn withdraw(&self, ticket: Ticket) -> bool {
        self.own(|q| q.withdraw(ticket))
    }

    /// Withdraws a pending receive; if it completed meanwhile, its message
    /// goes back into the unexpected queue where it arrived (rule 5).
    pub(crate) fn cancel(&self, ticket: Ticket) {
        self.own(|q| q.cancel(ticket))
    }

    /// Fails pending receives that `lost` may have been meant to satisfy:
    /// those naming its node and, when it failed, the wildcard ones.
    pub(crate) fn fail_for(&self, lost: &PeerLost) {
        self.hand_over(Item::Lost(lost.clone()));
    }

    /// Fails every posted receive in one of `contexts` with `error` (a
    /// revoked group's, `group::revoke`), and wakes the owner.
    pub(crate) fn fail_contexts(&self, contexts: &[u32], error: &RecvError) {
        self.hand_over(Item::Failed(contexts.into(), error.clone()));
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
        assert!(!mb.is_done(slot));
        mb.deliver(msg(2, 0, 0, 8));
        assert!(mb.is_done(slot));
        let m = mb.take(slot);
        assert_eq!(m.unwrap().unwrap().into_vec(), vec![8]);
        assert!(mb.take(slot).is_none(), "taken once");
    }

    #[test]
    fn cancel_returns_a_completed_message() {
        let mb = Mailbox::default();
        let Posting::Pending(slot) = mb.post(0, Source::Any, TagMatch::Any) else {
            panic!()
        };
        mb.deliver(msg(0, 1, 0, 7));
        mb.cancel(slot);
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
        mb.cancel(slot);
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
        assert!(mb.is_done(named) && mb.is_done(any) && !mb.is_done(other));
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
        assert!(!mb.is_done(group));
        mb.deliver(in_ctx(8, 2)); // another group's
        assert!(!mb.is_done(group));
        mb.deliver(in_ctx(7, 3));
        assert!(mb.is_done(group));
        assert_eq!(mb.probe(7, Source::Any, TagMatch::Any), None);
        assert_eq!(mb.probe(8, Source::Any, TagMatch::Is(5)).unwrap().len, 1);
        let m = mb.try_take(0, Source::Any, TagMatch::Is(5)).unwrap();
        assert_eq!(m.into_vec(), vec![1]);
        assert!(mb.try_take(0, Source::Any, TagMatch::Any).is_none());
    }

    #[test]
    fn other_threads_deliveries_keep_their_order() {
        let mb = std::sync::Arc::new(Mailbox::default());
        let Posting::Pending(first) = mb.post(0, Source::Any, TagMatch::Is(1)) else {
            panic!()
        };
        let pushers: Vec<_> = (0..4u32)
            .map(|t| {
                let mb = mb.clone();
                std::thread::spawn(move || {
                    for i in 0..100u8 {
                        mb.deliver(msg(1, t, 1, i));
                    }
                })
            })
            .collect();
        for p in pushers {
            p.join().unwrap();
        }
        let mut next = [0u8; 4];
        let m = mb.take(first).unwrap().unwrap();
        next[m.source().thread as usize] += 1;
        while let Some(m) = mb.try_take(0, Source::Any, TagMatch::Any) {
            let t = m.source().thread as usize;
            assert_eq!(m.into_vec(), vec![next[t]]);
            next[t] += 1;
        }
        assert_eq!(next, [100; 4]);
    }

    #[test]
    fn a_reused_cell_is_not_an_old_tickets() {
        let mb = Mailbox::default();
        let Posting::Pending(old) = mb.post(0, Source::Any, TagMatch::Is(1)) else {
            panic!()
        };
        assert!(mb.withdraw(old));
        let Posting::Pending(new) = mb.post(0, Source::Any, TagMatch::Is(2)) else {
            panic!()
        };
        mb.deliver(msg(1, 0, 2, 5));
        assert!(!mb.is_done(old) && mb.is_done(new));
        assert!(mb.take(old).is_none() && !mb.withdraw(old));
        assert_eq!(mb.take(new).unwrap().unwrap().into_vec(), vec![5]);
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
