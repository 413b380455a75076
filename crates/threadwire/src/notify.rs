//! Notification as messages, after PVM's `pvm_notify`: a thread asks to be
//! told of an event — a given node's exit, any node's exit — and is told
//! by an ordinary message in its own mailbox, with a tag it chose. It
//! receives it with `recv`, `probe` or `irecv` beside its other traffic,
//! where a [`Node::on_peer_lost`](crate::Node::on_peer_lost) callback would
//! run on some runtime thread at some moment.
//!
//! ```no_run
//! use threadwire::{Notification, Notify, ExitCause, ANY_SOURCE};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! const WORKER_GONE: u32 = 9999;
//! let ep = threadwire::init()?;
//! // Told once when node 2 finishes or fails; dropping `watch` cancels.
//! let watch = ep.notify(Notify::NodeExit(2), WORKER_GONE)?;
//! let m = ep.recv(ANY_SOURCE, WORKER_GONE)?; // beside any other message
//! assert_eq!(m.source(), threadwire::Address::new(2, 0));
//! match Notification::from_message(m)? {
//!     Notification::NodeExit { node, cause: ExitCause::Finished } => println!("n{node} is done"),
//!     Notification::NodeExit { node, cause: ExitCause::Failed(why) } => println!("n{node} failed: {why}"),
//!     _ => unreachable!("this version sends no other notification"),
//! }
//! # drop(watch);
//! # Ok(())
//! # }
//! ```
//!
//! # The events
//!
//! | [`Notify`] | messages |
//! |---|---|
//! | `NodeExit(k)` | one, when node `k` finishes or fails |
//! | `AnyNodeExit` | one per other node of the job, as each finishes or fails (those gone already at once; nodes that join later included) |
//! | `HostDelete(h)` | one, when host `h` is removed from the job ([`Endpoint::remove_hosts`]); at once if it was |
//! | `HostAdd` | one per host added to the job ([`Endpoint::add_hosts`]) after the subscription |
//!
//! Hosts are numbered by their place in the job's host table (the host
//! file's order, then each added host), which never changes
//! ([`Endpoint::hosts`]). A host that crashes is seen as the failure of
//! its nodes (`NodeExit`), not as `HostDelete`: the launcher cannot tell
//! a dead host from a cut link.
//!
//! # The message
//!
//! - **source**: `n<k>.t0`, thread 0 of the node that exited, so that a
//!   receive from that node (`Source::Node(k)`, `Address::new(k, 0)`) or
//!   from anyone finds it;
//! - **tag**: the one given to [`Endpoint::notify`];
//! - **payload**: packed ([`Encoding::Portable`]), read with
//!   [`Notification::from_message`] or by hand with an [`Unpacker`](crate::Unpacker):
//!
//! | item | type | value |
//! |---|---|---|
//! | kind | `u32` | 1: a node exited; 2: a host was added; 3: a host was removed |
//! | node or host | `u32` | the node's number, or the host's |
//! | cause | `u32` | 0: it finished (said goodbye); 1: it failed; 0 for a host |
//! | why | string | the failure, as [`Failure`](crate::Failure) prints it; empty when it finished; a host's name |
//!
//! A host notification comes from thread 0 of this node.
//!
//! [`Node::lost_peers`](crate::Node::lost_peers) gives the typed cause.
//! Choose a tag no other traffic of the thread uses, as with PVM. A
//! notification counts among the thread's received messages in
//! [`Stats`](crate::Stats).
//!
//! # How it works
//!
//! 1. [`Endpoint::notify`] checks the event, then, under the node's one
//!    notification lock, delivers at once what is already due (a node that
//!    has exited already: each such node for `AnyNodeExit`) and records the
//!    subscription — thread, tag, event — unless nothing more can come.
//! 2. When the router learns that a peer is gone — a goodbye, a broken
//!    connection, the launcher's word (`Router::lose_peer`) — it calls
//!    `Notifications::exited` before anything else. Under the same lock,
//!    unless the node's exit is recorded already (the first cause wins),
//!    the exit is recorded, one message goes into the mailbox of each
//!    subscription naming that node or any node (a `NodeExit`
//!    subscription ends there, an `AnyNodeExit` one once every other node
//!    has exited), and only then is the loss written into the peer table.
//!    So whoever sees the loss — a receive or probe naming the node, a
//!    wildcard one seeing a failure — finds the notification delivered,
//!    and the receives that fail with the loss come after it.
//! 3. The message is delivered like any other: it completes the first
//!    posted receive that matches it (so a receive waiting for it gets it,
//!    instead of failing with the loss), or waits in the unexpected queue,
//!    in arrival order with the thread's other messages. A node's messages
//!    that arrived before its loss came before it; a finished node's
//!    goodbye follows all it sent, on the same channel, so nothing it sent
//!    comes after its notification.
//! 4. [`NotifyHandle::cancel`], or dropping the handle, removes the
//!    subscription under the lock: once it returns, nothing more comes of
//!    it. Messages delivered before stay in the mailbox.
//! 5. When a thread's endpoint is dropped (the thread has finished), its
//!    subscriptions are removed, so nothing accumulates for a thread that
//!    can no longer receive.
//!
//! 6. Host notifications come from the launcher's `Hosts` messages, which
//!    the progress engine reads from the control connection and delivers
//!    from this node's thread 0. A receive naming this node normally
//!    waits without polling (only its own threads can satisfy it); while
//!    a host subscription is pending, it polls like any other, so that
//!    the notification arrives at once.
//!
//! Steps 1 and 2 both run under the lock, and use the exits recorded
//! there, so every notification is delivered exactly once: a subscription
//! made while a node is being lost gets it from step 1 or from step 2,
//! never both, never neither. The notification lock is taken before a
//! mailbox's (whose lock is a leaf, mailbox rule 2), never the other way.

use crate::lock;
use crate::mailbox::{remote_message, MailboxTable};
use crate::node::NodeShared;
use crate::control::HostEntry;
use crate::{Endpoint, LossCause, Message, PeerLost, Tag};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use threadwire_wire::{Encoding, Packer, UnpackError};

/// An event a thread can ask to be told of ([`Endpoint::notify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Notify {
    /// Node `k` leaves the job: it finishes, or it fails (its process
    /// dies, its connection breaks). One message.
    NodeExit(u32),
    /// Any other node of the job leaves it: one message per node, as it
    /// finishes or fails, those gone already at once.
    AnyNodeExit,
    /// Host `h` (its number in the job's host table) is removed. One
    /// message.
    HostDelete(u32),
    /// A host is added to the job. One message per host.
    HostAdd,
}

/// Why a subscription could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// The event names no node of this job.
    #[error("notify: no node n{0} in this job")]
    NoSuchNode(u32),
    /// The event names the caller's own node, whose exit it cannot receive.
    #[error("notify: node n{0} is the caller's own node")]
    OwnNode(u32),
    /// The event names no host of this job's host table.
    #[error("notify: no host {0} in this job's host table")]
    NoSuchHost(u32),
    /// A host event, in a job not started by a launcher: it has no host
    /// table.
    #[error("notify: {0:?}: this node was not started by a launcher, so it has no hosts")]
    NoHosts(Notify),
    /// This node has finalized.
    #[error("notify after finalize")]
    Finalized,
}

/// How a node left the job, as its notification tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitCause {
    /// It finished: said goodbye and sends nothing more.
    Finished,
    /// It failed; the text says how ([`Failure`](crate::Failure)'s).
    Failed(String),
}

/// A notification message, read ([`Notification::from_message`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notification {
    /// A node left the job (`Notify::NodeExit`, `Notify::AnyNodeExit`).
    NodeExit {
        /// The node.
        node: u32,
        /// How.
        cause: ExitCause,
    },
    /// A host was added to the job (`Notify::HostAdd`).
    HostAdded {
        /// Its number in the host table.
        host: u32,
        /// Its name (`netns:twh1`, `ssh:node17`).
        name: String,
    },
    /// A host was removed from the job (`Notify::HostDelete`).
    HostRemoved {
        /// Its number in the host table.
        host: u32,
        /// Its name.
        name: String,
    },
}

/// A message that is not a notification this version knows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotificationError {
    /// Its payload does not unpack as a notification's.
    #[error("not a notification: {0}")]
    Unpack(#[from] UnpackError),
    /// Its kind or cause is none this version sends.
    #[error("not a notification: unknown {what} {value}")]
    Unknown {
        /// `"kind"` or `"cause"`.
        what: &'static str,
        /// The value found.
        value: u32,
    },
}

const KIND_NODE_EXIT: u32 = 1;
const KIND_HOST_ADDED: u32 = 2;
const KIND_HOST_REMOVED: u32 = 3;
const CAUSE_FINISHED: u32 = 0;
const CAUSE_FAILED: u32 = 1;

impl Notification {
    /// Reads a notification message (the payload layout is in the
    /// [module docs](self)).
    pub fn from_message(message: Message) -> Result<Notification, NotificationError> {
        let mut u = message.unpack()?;
        let kind: u32 = u.unpack()?;
        let node: u32 = u.unpack()?;
        let cause: u32 = u.unpack()?;
        let why = u.unpack_string()?;
        match kind {
            KIND_NODE_EXIT => {}
            KIND_HOST_ADDED => return Ok(Notification::HostAdded { host: node, name: why }),
            KIND_HOST_REMOVED => return Ok(Notification::HostRemoved { host: node, name: why }),
            _ => {
                return Err(NotificationError::Unknown {
                    what: "kind",
                    value: kind,
                })
            }
        }
        let cause = match cause {
            CAUSE_FINISHED => ExitCause::Finished,
            CAUSE_FAILED => ExitCause::Failed(why),
            value => {
                return Err(NotificationError::Unknown {
                    what: "cause",
                    value,
                })
            }
        };
        Ok(Notification::NodeExit { node, cause })
    }
}

/// A subscription made with [`Endpoint::notify`]. Dropping it cancels the
/// subscription, as [`cancel`](Self::cancel) does; [`detach`](Self::detach)
/// lets it run on its own until it is done or its thread finishes.
#[must_use = "dropping a NotifyHandle cancels its subscription; `detach` keeps it"]
#[derive(Debug)]
pub struct NotifyHandle {
    node: Weak<NodeShared>,
    /// `None` when nothing more could come at subscription time.
    id: Option<u64>,
    event: Notify,
    tag: Tag,
}

impl NotifyHandle {
    /// The event subscribed to.
    pub fn event(&self) -> Notify {
        self.event
    }

    /// The tag its messages carry.
    pub fn tag(&self) -> Tag {
        self.tag
    }

    /// Whether more messages may come of it: `false` once its event has
    /// been delivered (for `AnyNodeExit`, every other node's exit) or its
    /// thread has finished.
    pub fn is_active(&self) -> bool {
        match (self.id, self.node.upgrade()) {
            (Some(id), Some(node)) => node.router.notify.is_active(id),
            _ => false,
        }
    }

    /// Cancels the subscription: once this returns, no message comes of
    /// it; those delivered already stay in the mailbox. `true` if it was
    /// still active.
    pub fn cancel(mut self) -> bool {
        self.cancel_now()
    }

    /// Lets the subscription run on without its handle, until its event
    /// is delivered or its thread finishes (PVM's behaviour).
    pub fn detach(mut self) {
        self.id = None;
    }

    fn cancel_now(&mut self) -> bool {
        match (self.id.take(), self.node.upgrade()) {
            (Some(id), Some(node)) => node.router.notify.cancel(id),
            _ => false,
        }
    }
}

impl Drop for NotifyHandle {
    fn drop(&mut self) {
        self.cancel_now();
    }
}

impl Endpoint {
    /// Subscribes this thread to `event` (PVM's `pvm_notify`): each time
    /// it happens, one message with `tag` arrives in this thread's
    /// mailbox, from thread 0 of the node concerned, its payload packed
    /// as the [module docs](crate::notify) say. An exit that has
    /// happened already is delivered at once. The subscription lasts until
    /// it is done, cancelled (the handle dropped or
    /// [`cancel`](NotifyHandle::cancel)led), or this thread finishes.
    ///
    /// ```
    /// use threadwire::{Notify, NotifyError};
    ///
    /// let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// // A one-node job that cannot grow: there is no other node to exit.
    /// assert_eq!(ep.notify(Notify::NodeExit(1), 5).unwrap_err(), NotifyError::NoSuchNode(1));
    /// let any = ep.notify(Notify::AnyNodeExit, 5).unwrap();
    /// assert!(!any.is_active());
    /// assert!(matches!(ep.notify(Notify::HostAdd, 6), Err(NotifyError::NoHosts(_))));
    /// ```
    pub fn notify(&self, event: Notify, tag: Tag) -> Result<NotifyHandle, NotifyError> {
        let shared = &self.node.shared;
        let router = &shared.router;
        if router.finalized.load(Ordering::Acquire) {
            return Err(NotifyError::Finalized);
        }
        match event {
            Notify::NodeExit(k) if k >= router.nodes() => return Err(NotifyError::NoSuchNode(k)),
            Notify::NodeExit(k) if k == router.id => return Err(NotifyError::OwnNode(k)),
            Notify::NodeExit(_) | Notify::AnyNodeExit => {}
            Notify::HostDelete(_) | Notify::HostAdd => {}
        }
        let id = router
            .notify
            .subscribe(&router.mailboxes, router.id, self.address.thread, event, tag)?;
        Ok(NotifyHandle {
            node: Arc::downgrade(shared),
            id,
            event,
            tag,
        })
    }
}

/// A node's subscriptions, the exits seen so far and the job's host
/// table (steps 1–5).
pub(crate) struct Notifications {
    /// The most nodes the job may have.
    capacity: u32,
    /// Host subscriptions pending: while there are any, a receive from
    /// this node polls too, since the engine delivers host notifications
    /// from the control connection (step 6).
    host_watchers: AtomicUsize,
    state: Mutex<State>,
}

struct State {
    next_id: u64,
    subscriptions: Vec<Subscription>,
    /// Every exit seen, in the order seen; at most one per node.
    exits: Vec<PeerLost>,
    /// Node numbers given out so far.
    nodes: u32,
    /// The job's host table, once the launcher has sent it.
    hosts: Option<Vec<HostEntry>>,
}

struct Subscription {
    id: u64,
    thread: u32,
    tag: Tag,
    /// `NodeExit` or `AnyNodeExit`.
    event: Notify,
}

impl Subscription {
    fn wants(&self, node: u32) -> bool {
        match self.event {
            Notify::NodeExit(k) => k == node,
            Notify::AnyNodeExit => true,
            Notify::HostDelete(_) | Notify::HostAdd => false,
        }
    }
}

impl Notifications {
    pub(crate) fn new(nodes: u32, capacity: u32) -> Notifications {
        Notifications {
            capacity,
            host_watchers: AtomicUsize::new(0),
            state: Mutex::new(State {
                next_id: 0,
                subscriptions: Vec::new(),
                exits: Vec::new(),
                nodes,
                hosts: None,
            }),
        }
    }

    /// Whether a thread waits for a host's notification (step 6).
    #[inline]
    pub(crate) fn hosts_watched(&self) -> bool {
        self.host_watchers.load(Ordering::Relaxed) != 0
    }

    /// Counts the host subscriptions again, under the lock.
    fn recount(&self, s: &State) {
        let n = s
            .subscriptions
            .iter()
            .filter(|sub| matches!(sub.event, Notify::HostAdd | Notify::HostDelete(_)))
            .count();
        self.host_watchers.store(n, Ordering::Relaxed);
    }

    /// Whether every other node has exited and no more can join.
    fn all_gone(&self, s: &State) -> bool {
        s.nodes == self.capacity && s.exits.len() + 1 >= s.nodes as usize
    }

    /// Step 1: delivers what `event` already calls for, and records the
    /// subscription if more may come (its id).
    pub(crate) fn subscribe(
        &self,
        mailboxes: &MailboxTable,
        me: u32,
        thread: u32,
        event: Notify,
        tag: Tag,
    ) -> Result<Option<u64>, NotifyError> {
        let mut s = lock(&self.state);
        if let Notify::HostDelete(_) | Notify::HostAdd = event {
            let Some(hosts) = &s.hosts else {
                return Err(NotifyError::NoHosts(event));
            };
            if let Notify::HostDelete(h) = event {
                let Some(host) = hosts.get(h as usize) else {
                    return Err(NotifyError::NoSuchHost(h));
                };
                if !host.present {
                    let sub = Subscription { id: 0, thread, tag, event };
                    deliver_host(mailboxes, me, &sub, KIND_HOST_REMOVED, h, &host.name);
                    return Ok(None);
                }
            }
        }
        let id = s.next_id;
        s.next_id += 1;
        let sub = Subscription {
            id,
            thread,
            tag,
            event,
        };
        for exit in s.exits.iter().filter(|e| sub.wants(e.node)) {
            deliver(mailboxes, &sub, exit);
        }
        let done = match event {
            Notify::NodeExit(k) => s.exits.iter().any(|e| e.node == k),
            Notify::AnyNodeExit => self.all_gone(&s),
            Notify::HostDelete(_) | Notify::HostAdd => false,
        };
        if done {
            return Ok(None);
        }
        s.subscriptions.push(sub);
        self.recount(&s);
        Ok(Some(id))
    }

    /// Nodes up to `nodes` have joined: `AnyNodeExit` waits for them too.
    pub(crate) fn grown(&self, nodes: u32) {
        let mut s = lock(&self.state);
        s.nodes = s.nodes.max(nodes);
    }

    /// The job's host table, as the launcher last sent it.
    pub(crate) fn hosts(&self) -> Option<Vec<HostEntry>> {
        lock(&self.state).hosts.clone()
    }

    /// The launcher sent the host table: the first time it is only
    /// recorded; after that, each host added or removed is delivered to
    /// the subscriptions that want it.
    pub(crate) fn hosts_changed(&self, mailboxes: &MailboxTable, me: u32, hosts: Vec<HostEntry>) {
        let mut s = lock(&self.state);
        let Some(before) = s.hosts.replace(hosts.clone()) else {
            return;
        };
        for (h, host) in hosts.iter().enumerate() {
            let was = before.get(h).map(|b| b.present);
            let kind = match (was, host.present) {
                (None, true) => KIND_HOST_ADDED,
                (Some(true) | None, false) => KIND_HOST_REMOVED,
                _ => continue,
            };
            s.subscriptions.retain(|sub| match (sub.event, kind) {
                (Notify::HostAdd, KIND_HOST_ADDED) => {
                    deliver_host(mailboxes, me, sub, kind, h as u32, &host.name);
                    true
                }
                (Notify::HostDelete(k), KIND_HOST_REMOVED) if k == h as u32 => {
                    deliver_host(mailboxes, me, sub, kind, h as u32, &host.name);
                    false
                }
                _ => true,
            });
        }
        self.recount(&s);
    }

    /// Step 2: `lost` has exited. Unless an exit of that node was
    /// recorded already (then `false`, and nothing happens), delivers its
    /// notifications and then runs `record` (the peer table's), all under
    /// the lock.
    pub(crate) fn exited(
        &self,
        mailboxes: &MailboxTable,
        lost: &PeerLost,
        record: impl FnOnce() -> bool,
    ) -> bool {
        let mut s = lock(&self.state);
        if s.exits.iter().any(|e| e.node == lost.node) {
            return false;
        }
        s.exits.push(lost.clone());
        let all_gone = self.all_gone(&s);
        s.subscriptions.retain(|sub| {
            if !sub.wants(lost.node) {
                return true;
            }
            deliver(mailboxes, sub, lost);
            matches!(sub.event, Notify::AnyNodeExit) && !all_gone
        });
        let recorded = record();
        debug_assert!(recorded, "every loss is recorded here first");
        recorded
    }

    /// Step 4: `true` if the subscription was still active.
    pub(crate) fn cancel(&self, id: u64) -> bool {
        let mut s = lock(&self.state);
        let before = s.subscriptions.len();
        s.subscriptions.retain(|sub| sub.id != id);
        self.recount(&s);
        s.subscriptions.len() != before
    }

    pub(crate) fn is_active(&self, id: u64) -> bool {
        lock(&self.state)
            .subscriptions
            .iter()
            .any(|sub| sub.id == id)
    }

    /// Step 5: `thread` has finished.
    pub(crate) fn thread_finished(&self, thread: u32) {
        let mut s = lock(&self.state);
        s.subscriptions.retain(|sub| sub.thread != thread);
        self.recount(&s);
    }
}

/// A host's notification into `sub`'s mailbox, from thread 0 of `me`.
fn deliver_host(mailboxes: &MailboxTable, me: u32, sub: &Subscription, kind: u32, host: u32, name: &str) {
    let Some(mailbox) = mailboxes.get(sub.thread) else {
        return;
    };
    let mut p = Packer::new(Encoding::Portable);
    p.pack(kind).pack(host).pack(0u32).pack_str(name);
    mailbox.deliver(remote_message(me, 0, 0, sub.tag, p.finish()));
}

/// The notification of `exit` into `sub`'s mailbox (step 3).
fn deliver(mailboxes: &MailboxTable, sub: &Subscription, exit: &PeerLost) {
    let Some(mailbox) = mailboxes.get(sub.thread) else {
        return;
    };
    let (cause, why) = match &exit.cause {
        LossCause::Finished => (CAUSE_FINISHED, String::new()),
        LossCause::Failed(f) => (CAUSE_FAILED, f.to_string()),
    };
    let mut p = Packer::new(Encoding::Portable);
    p.pack(KIND_NODE_EXIT)
        .pack(exit.node)
        .pack(cause)
        .pack_str(&why);
    mailbox.deliver(remote_message(exit.node, 0, 0, sub.tag, p.finish()));
}

#[cfg(test)]
mod tests;
