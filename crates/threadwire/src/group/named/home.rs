//! A node's side of the names it serves and backs up: the table, the
//! updates it sends its backup, and the replies that wait for the
//! backup's acknowledgement (the module docs' steps 4–9 in `named`).
//!
//! One lock covers the table, the update counter and the replies
//! waiting, and updates and snapshots go to the backup while it is held,
//! so that the backup receives them in the order they were applied.
//! Nothing here waits: a request is applied and its reply queued or sent
//! where it is read.

use super::protocol::{encode_reply, Op, Replica, Reply, Status, Update};
use super::table::{changes, Table};
use crate::error::{Failure, LossCause};
use crate::router::Router;
use crate::{lock, Address};
use std::collections::VecDeque;
use std::sync::Mutex;
use threadwire_wire::{Format, FrameHeader, FrameKind, Payload};

/// The names a node serves or keeps for the node before it.
#[derive(Default)]
pub(crate) struct Home {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    table: Table,
    /// Updates sent to the backup so far (the last one's number).
    sent: u64,
    /// The backup's acknowledgement: every update up to it is applied.
    acked: u64,
    /// The backup the updates go to; `None` alone.
    backup: Option<u32>,
    /// Replies held until the backup has the update they follow.
    waiting: VecDeque<Held>,
}

/// A reply held until the backup acknowledges update `after`.
struct Held {
    after: u64,
    to: Address,
    tag: u32,
    reply: Reply,
}

/// The first live node of `name`'s chain (its home, then the nodes after
/// it, cyclically) as this node sees them: the node that serves it.
pub(crate) fn server_of(router: &Router, name: &str) -> u32 {
    let home = super::home_of(name, router.founders);
    (0..router.founders)
        .map(|k| (home + k) % router.founders)
        .find(|&n| live(router, n))
        .unwrap_or(router.id)
}

fn live(router: &Router, node: u32) -> bool {
    node == router.id || router.peers[node as usize].lost().is_none()
}

/// Whether `node` lies between this node and the live node before it
/// (cyclically): then the names `node` served are this node's now.
fn before_me(router: &Router, node: u32) -> bool {
    (1..router.founders)
        .map(|k| (router.id + router.founders - k) % router.founders)
        .take_while(|&n| n == node || !live(router, n))
        .any(|n| n == node)
}

/// This node's backup: the first live node after it, cyclically.
fn backup_of(router: &Router) -> Option<u32> {
    (1..router.founders)
        .map(|k| (router.id + k) % router.founders)
        .find(|&n| live(router, n))
}

impl Home {
    /// Step 4: request `id` of thread `from` on `name`, applied if this
    /// node serves the name (else answered `NotHome`); its reply goes out
    /// once the backup has every update before it.
    pub(crate) fn request(&self, router: &Router, from: Address, id: u32, op: Op, name: &str) {
        let mut failed = Vec::new();
        let out = {
            let mut st = lock(&self.state);
            let reply = match server_of(router, name) == router.id {
                false => Err((Status::NotHome, 0)),
                true => {
                    let reply = st.table.apply(from, id, op, name);
                    if changes(op) {
                        let update = Update::Request {
                            from,
                            id,
                            op,
                            name: name.to_owned(),
                        };
                        st.update(router, update, &mut failed);
                    }
                    reply
                }
            };
            let after = st.sent;
            st.waiting.push_back(Held {
                after,
                to: from,
                tag: id,
                reply,
            });
            st.ready()
        };
        deliver(router, out, failed);
    }

    /// Steps 6 and 8 at the backup, and the acknowledgement at the home:
    /// a [`Replica`] message from node `peer`.
    pub(crate) fn replica(&self, router: &Router, peer: u32, message: Replica) {
        // A lost node's last frames, read after its loss: what it served is
        // this node's (or another's) now, and its clients ask again.
        if !live(router, peer) {
            return;
        }
        let mut failed = Vec::new();
        let out = {
            let mut st = lock(&self.state);
            match message {
                Replica::Update { seq, update } => {
                    match update {
                        Update::Request { from, id, op, name } => {
                            // The reply is the home's to give.
                            let _ = st.table.apply(from, id, op, &name);
                        }
                        Update::Gone(node) => st.table.remove_node(node, |_| true),
                    }
                    send(router, peer, &Replica::Ack { seq }, &mut failed);
                    Vec::new()
                }
                Replica::Snapshot { seq, table } => {
                    // The names the sender serves, as this node sees it,
                    // are replaced (a name this node does not know to be
                    // the sender's yet is kept: it may be the copy of a
                    // node whose loss has not reached this one).
                    st.table.retain(|name| server_of(router, name) != peer);
                    st.table.merge(table);
                    send(router, peer, &Replica::Ack { seq }, &mut failed);
                    Vec::new()
                }
                Replica::Ack { seq } => {
                    if st.backup == Some(peer) {
                        st.acked = st.acked.max(seq);
                    }
                    st.ready()
                }
            }
        };
        deliver(router, out, failed);
    }

    /// Steps 7 and 9: node `node` is gone. The names this node serves now
    /// (its own, and those of a lost node before it, whose copies it
    /// kept) lose the gone node's threads; if the backup changed or this
    /// node serves new names, the new backup gets a snapshot, else the
    /// backup gets the change as an update.
    pub(crate) fn lost(&self, router: &Router, node: u32) {
        let mut failed = Vec::new();
        let out = {
            let mut st = lock(&self.state);
            let serves = |name: &str| server_of(router, name) == router.id;
            st.table.remove_node(node, serves);
            let backup = backup_of(router);
            if st.table.is_empty() && st.sent == st.acked {
                // Nothing to back up: no message, and so no connection
                // made for one (pairs connect on first use) when the
                // nodes of a job that never named a group finish.
                st.backup = backup;
            } else if backup != st.backup || before_me(router, node) {
                st.backup = backup;
                st.snapshot(router, &mut failed);
            } else {
                st.update(router, Update::Gone(node), &mut failed);
            }
            st.ready()
        };
        deliver(router, out, failed);
    }
}

impl State {
    /// Sends `update` to the backup as the next update, if there is one.
    fn update(&mut self, router: &Router, update: Update, failed: &mut Vec<(u32, String)>) {
        let Some(backup) = self.backup_now(router, failed) else {
            return;
        };
        self.sent += 1;
        let seq = self.sent;
        send(router, backup, &Replica::Update { seq, update }, failed);
    }

    /// Sends the backup every name this node serves, as the next update.
    fn snapshot(&mut self, router: &Router, failed: &mut Vec<(u32, String)>) {
        let Some(backup) = self.backup else {
            return;
        };
        let mut table = self.table.clone();
        table.retain(|name| server_of(router, name) == router.id);
        self.sent += 1;
        let seq = self.sent;
        send(router, backup, &Replica::Snapshot { seq, table }, failed);
    }

    /// The backup, after a snapshot to a new one if it changed since.
    fn backup_now(&mut self, router: &Router, failed: &mut Vec<(u32, String)>) -> Option<u32> {
        let backup = backup_of(router);
        if backup != self.backup {
            self.backup = backup;
            self.snapshot(router, failed);
        }
        self.backup
    }

    /// The replies whose updates the backup has (all, with no backup).
    fn ready(&mut self) -> Vec<Held> {
        let acked = match self.backup {
            Some(_) => self.acked,
            None => u64::MAX,
        };
        let n = self.waiting.iter().take_while(|h| h.after <= acked).count();
        self.waiting.drain(..n).collect()
    }
}

/// Sends `message` to node `to`; a failure is noted, to lose the peer
/// once the lock is released.
fn send(router: &Router, to: u32, message: &Replica, failed: &mut Vec<(u32, String)>) {
    let bytes = message.encode();
    let header = FrameHeader {
        kind: FrameKind::Named,
        format: Format::OPAQUE,
        source_thread: 0,
        dest_thread: 0,
        tag: 0,
        aux: 0,
        len: bytes.len() as u64,
    };
    if let Err((e, _)) = router.peers[to as usize].send(&header, Payload::from_vec(bytes)) {
        failed.push((to, e.to_string()));
    }
}

/// Step 5: the replies out (to this node's threads through their
/// mailboxes), then the peers whose sends failed lost.
fn deliver(router: &Router, replies: Vec<Held>, failed: Vec<(u32, String)>) {
    for held in replies {
        router.named_reply(held.to, held.tag, encode_reply(&held.reply));
    }
    for (peer, why) in failed {
        router.lose_peer(peer, LossCause::Failed(Failure::Channel(why)));
    }
}
