//! Dynamic named groups, PVM's group library model: threads join and
//! leave a group by name at run time, get an *instance* number each, ask
//! who is in it, and [freeze](crate::Endpoint::freeze_group) its current
//! membership into a static [`Group`] for collectives.
//!
//! ```
//! let ep = threadwire::Config::new().standalone(true).init().unwrap();
//! assert_eq!(ep.join_group("workers").unwrap(), 0);
//! assert_eq!(ep.group_size("workers").unwrap(), 1);
//! assert_eq!(ep.group_address("workers", 0).unwrap(), ep.address());
//! let g = ep.freeze_group("workers").unwrap();
//! assert_eq!((g.rank(), g.size()), (0, 1));
//! ep.leave_group("workers").unwrap();
//! ```
//!
//! # Where a name lives
//!
//! There is no group server. The state of a name lives on its *home*
//! node, [`home_of`]: FNV-1a (64-bit) of the name's UTF-8 bytes, modulo
//! the number of nodes — deterministic, the same at every node, with no
//! key to share — and a copy on the home's *backup*, the next node. When
//! the home is gone (it failed or finished), the next live node of the
//! name's *chain* (the home, then the nodes after it, cyclically) serves
//! the name from its copy, and copies it on to its own backup. The node
//! serving a name handles it in its router: a request is a small frame
//! of its own kind ([`FrameKind::Named`](threadwire_wire::FrameKind)),
//! answered where it is read. The router rather than a service thread or
//! fiber because a request is one short update under one lock — no
//! wait, no allocation beyond the answer and the backup's copy — and the
//! router runs wherever progress is made, so requests are served even
//! while every thread of the node computes or waits, with no thread to
//! schedule and no extra wake-up on the path.
//!
//! # Protocol
//!
//! 1. A thread calls an operation on `name` with a request number of its
//!    node's; its node computes the *server*: the first node of the
//!    name's chain it does not know to be gone (itself, if it gets that
//!    far).
//! 2. If the server is its own node, it hands the request to its own
//!    router (step 4) and waits for the reply, polling the channels.
//! 3. Otherwise it sends a `Named` frame to the server (see [`protocol`]):
//!    its thread, the request number as tag, the operation and the name;
//!    then waits for the reply in the reserved context
//!    `REPLY_CONTEXT` (`u32::MAX`) from that node with
//!    that tag.
//! 4. The server's router decodes the request (a malformed one is a
//!    protocol error that closes that peer's channel). If by its own view
//!    it does not serve the name, it answers `NotHome`, and the thread
//!    asks again after a millisecond (views of which nodes are gone
//!    differ only until the news of a loss has reached every node; after
//!    10 s it gives up with [`GroupError::HomeLost`]). Otherwise it
//!    applies the request to its table under one lock, so requests on a
//!    name are serialized and each sees all those applied before it:
//!    join takes the lowest free instance; leave frees the caller's; the
//!    queries read. A change (join, leave, freeze) is recorded with the
//!    thread's request number and its reply, and a change whose number
//!    the thread's record already holds is not applied again: its reply
//!    is given again (step 7's retry).
//! 5. A change goes to the server's backup as the next *update*, in order,
//!    before the lock is released. The reply (to any request) is held
//!    until the backup has acknowledged every update applied before it,
//!    then sent to the requesting thread as a data frame in the reply
//!    context (or put in its mailbox, on the server's own node). So a
//!    thread sees a change only once its copy exists, and no reply tells
//!    of a state the backup lacks.
//! 6. The backup applies each update to its copy in order (the same
//!    operations in the same order give the same state) and acknowledges
//!    it.
//! 7. When a node learns that another is gone — its goodbye when it
//!    finishes, or its failure — requests waiting on it fail inside the
//!    request loop, which starts again at step 1 with the same request
//!    number: the next node of the chain serves the name now, and applies
//!    the request unless it holds it already (step 4). Frames a lost node
//!    sent before it went are ignored once its loss is known.
//! 8. The gone node's threads leave every name the node serves. If the
//!    gone node was its backup, or lay between it and the live node before
//!    it (so that it serves that node's names now, from the copies it
//!    kept), it sends its new backup a *snapshot* of every name it serves
//!    and every thread's record; the replies it holds go out once the new
//!    backup acknowledges it (or at once, with no other node left).
//!    Otherwise the departure goes to the backup as an update.
//! 9. A snapshot replaces, at its receiver, the names its sender serves
//!    (as the receiver sees it) and each thread's record where the
//!    snapshot's is newer.
//!
//! A name survives the loss of any one node at a time: the window is the
//! time a snapshot takes to reach the new backup after a loss. Two nodes
//! next to each other in a chain lost at once (or finishing at once)
//! take the names they served and backed up along; requests on them then
//! find an empty name.
//!
//! # Freezing
//!
//! [`freeze_group`](crate::Endpoint::freeze_group) is collective over the
//! membership it captures. The first member to call it makes the home
//! record the membership at that moment, in instance order; each other
//! member of that membership, when it calls it, gets the same list — even
//! if members have joined or left since — and the last to collect it
//! retires it; a member that leaves (or whose node goes) before
//! collecting is no longer waited for. Every caller then builds a
//! [`Group`] from the list ([`Group::new`], ranks = instance order),
//! agreeing on its contexts with the others, so the call returns once
//! every captured member has called it. A member that joins while a
//! freeze is being collected and calls freeze itself starts the next
//! one, which every member of *its* membership must collect — as in PVM,
//! freezing is for a group that stops changing for a while.
//!
//! # Limits
//!
//! Membership is by thread: a thread that ends without leaving stays a
//! member until its node finishes. Names are at most
//! [`MAX_NAME`](protocol::MAX_NAME) bytes.

mod home;
pub mod protocol;
mod table;

pub(crate) use home::Home;

use crate::error::{Failure, LossCause, PeerLost, RecvError};
use crate::{Address, Endpoint, Group, Source, TagMatch};
use protocol::{decode_reply, encode_request, Op, Status, REPLY_CONTEXT};
use std::sync::atomic::Ordering;
use threadwire_transport::SendOutcome;
use threadwire_wire::{Format, FrameHeader, FrameKind, Payload};

/// Why a named-group operation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// No thread is a member of the name (a name exists while it has
    /// members).
    #[error("no group named {0:?}")]
    UnknownName(String),
    /// The caller (or the address asked about) is not a member.
    #[error("not a member of group {0:?}")]
    NotMember(String),
    /// The caller is a member already, with this instance.
    #[error("already a member of group {name:?} (instance {instance})")]
    AlreadyMember {
        /// The name.
        name: String,
        /// The caller's instance.
        instance: u32,
    },
    /// No member holds this instance.
    #[error("group {name:?} has no instance {instance}")]
    NoSuchInstance {
        /// The name.
        name: String,
        /// The instance asked about.
        instance: u32,
    },
    /// The name is longer than [`MAX_NAME`](protocol::MAX_NAME) bytes.
    #[error("group name of {0} bytes is too long")]
    NameTooLong(usize),
    /// No node serves the name: the node asked kept answering that it
    /// does not (protocol step 4) for 10 s.
    #[error("home of group {name:?} lost: {lost}")]
    HomeLost {
        /// The name.
        name: String,
        /// The home node, and why it is gone.
        lost: PeerLost,
    },
    /// The home's reply was malformed.
    #[error("malformed reply from n{home}, home of group {name:?}")]
    BadReply {
        /// The name.
        name: String,
        /// The home node.
        home: u32,
    },
    /// Building the frozen group failed.
    #[error("freezing group {name:?}: {error}")]
    Freeze {
        /// The name.
        name: String,
        /// Why.
        error: crate::CollError,
    },
    /// This node has finalized.
    #[error("group operation after finalize")]
    Finalized,
}

/// The home node of `name` in a job of `nodes` nodes: FNV-1a (64-bit) of
/// its UTF-8 bytes modulo `nodes`.
pub fn home_of(name: &str, nodes: u32) -> u32 {
    (crate::name_hash::name_hash(name) % u64::from(nodes.max(1))) as u32
}

/// How long a request keeps asking nodes that answer `NotHome` (views of
/// which nodes are gone disagree only until every node has heard of a
/// loss) before it fails with [`GroupError::HomeLost`].
const NOT_HOME_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs `op` on `name` at the node that serves it (protocol steps 1–5),
/// again at the next one while a node it asks is lost.
fn request(ep: &Endpoint, name: &str, op: Op) -> Result<Vec<u32>, GroupError> {
    if name.len() > protocol::MAX_NAME {
        return Err(GroupError::NameTooLong(name.len()));
    }
    let shared = &*ep.node().shared;
    let s = &shared.router;
    if s.finalized.load(Ordering::Relaxed) {
        return Err(GroupError::Finalized);
    }
    let me = ep.address();
    let id = s.named_requests.fetch_add(1, Ordering::Relaxed);
    let bytes = encode_request(op, name);
    let mut not_home_since = None;
    let reply = loop {
        let server = home::server_of(s, name);
        if server == s.id {
            s.named.request(s, me, id, op, name);
        } else {
            let header = FrameHeader {
                kind: FrameKind::Named,
                format: Format::OPAQUE,
                source_thread: me.thread,
                dest_thread: 0,
                tag: id,
                aux: 0,
                len: bytes.len() as u64,
            };
            let peer = &s.peers[server as usize];
            match peer.send(&header, Payload::from_vec(bytes.clone())) {
                Ok(SendOutcome::Queued) => shared.engine.try_progress(s),
                Ok(_) => {}
                Err((e, _)) => {
                    s.lose_peer(server, LossCause::Failed(Failure::Channel(e.to_string())));
                    continue;
                }
            }
        }
        if server == s.id {
            // The reply waits for the backup's acknowledgement, which only
            // polling the channels brings in (a receive from this node
            // alone would not poll them).
            let tag = TagMatch::Is(id);
            let arrived = || ep.mailbox().probe(REPLY_CONTEXT, Source::Node(s.id), tag).is_some();
            shared.engine.wait_until(s, crate::progress::Origin::Anywhere, arrived);
        }
        let m = match ep.recv_in(REPLY_CONTEXT, Source::Node(server), TagMatch::Is(id)) {
            Ok(m) => m,
            // Step 7: the next live node of the chain serves the name now.
            Err(RecvError::PeerLost(_)) => continue,
            Err(_) => return Err(GroupError::Finalized),
        };
        let reply = decode_reply(&m.into_vec()).map_err(|_| GroupError::BadReply {
            name: name.to_owned(),
            home: server,
        })?;
        if reply != Err((Status::NotHome, 0)) {
            break reply;
        }
        let since = *not_home_since.get_or_insert_with(std::time::Instant::now);
        if since.elapsed() > NOT_HOME_FOR {
            let lost = PeerLost {
                node: server,
                cause: LossCause::Failed(Failure::Channel(
                    "it does not serve the name, and no other node does".into(),
                )),
            };
            return Err(GroupError::HomeLost {
                name: name.to_owned(),
                lost,
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let name = name.to_owned();
    reply.map_err(|(status, word)| match status {
        Status::UnknownName => GroupError::UnknownName(name),
        Status::NotMember | Status::Ok | Status::NotHome => GroupError::NotMember(name),
        Status::AlreadyMember => GroupError::AlreadyMember {
            name,
            instance: word,
        },
        Status::NoSuchInstance => GroupError::NoSuchInstance {
            name,
            instance: word,
        },
    })
}

fn bad_reply(ep: &Endpoint, name: &str) -> GroupError {
    GroupError::BadReply {
        name: name.to_owned(),
        home: home_of(name, ep.node().shared.router.founders),
    }
}

fn one(ep: &Endpoint, name: &str, words: Vec<u32>) -> Result<u32, GroupError> {
    match words.as_slice() {
        &[w] => Ok(w),
        _ => Err(bad_reply(ep, name)),
    }
}

fn addresses(ep: &Endpoint, name: &str, words: &[u32]) -> Result<Vec<Address>, GroupError> {
    if !words.len().is_multiple_of(2) {
        return Err(bad_reply(ep, name));
    }
    Ok(words
        .chunks_exact(2)
        .map(|w| Address::new(w[0], w[1]))
        .collect())
}

impl Endpoint {
    /// Joins the group `name` (creating it if it has no members) and
    /// returns this thread's instance: the lowest not held by a member,
    /// as in PVM. Errors: [`GroupError::AlreadyMember`], a lost home.
    pub fn join_group(&self, name: &str) -> Result<u32, GroupError> {
        let words = request(self, name, Op::Join)?;
        one(self, name, words)
    }

    /// Leaves the group `name`; the instance becomes free for the next
    /// join. Errors: [`GroupError::UnknownName`],
    /// [`GroupError::NotMember`], a lost home.
    pub fn leave_group(&self, name: &str) -> Result<(), GroupError> {
        request(self, name, Op::Leave).map(drop)
    }

    /// The number of members of `name`, as of every join and leave its
    /// home has seen so far.
    pub fn group_size(&self, name: &str) -> Result<usize, GroupError> {
        let words = request(self, name, Op::Size)?;
        one(self, name, words).map(|n| n as usize)
    }

    /// The members of `name` with their instances, in instance order.
    pub fn group_members(&self, name: &str) -> Result<Vec<(u32, Address)>, GroupError> {
        let words = request(self, name, Op::Members)?;
        if !words.len().is_multiple_of(3) {
            return Err(bad_reply(self, name));
        }
        Ok(words
            .chunks_exact(3)
            .map(|w| (w[0], Address::new(w[1], w[2])))
            .collect())
    }

    /// The instance of member `address` of `name` (PVM's `pvm_getinst`).
    pub fn group_instance(&self, name: &str, address: Address) -> Result<u32, GroupError> {
        let words = request(self, name, Op::InstanceOf(address))?;
        one(self, name, words)
    }

    /// The member of `name` holding `instance` (PVM's `pvm_gettid`).
    pub fn group_address(&self, name: &str, instance: u32) -> Result<Address, GroupError> {
        let words = request(self, name, Op::AddressOf(instance))?;
        match addresses(self, name, &words)?.as_slice() {
            &[a] => Ok(a),
            _ => Err(bad_reply(self, name)),
        }
    }

    /// Freezes the membership of `name` into a static [`Group`], ranks in
    /// instance order (see [Freezing](crate::group::named#freezing)):
    /// every member of the captured membership calls it and gets the same
    /// group; it returns once all have. The name lives on, and members may
    /// join and leave it while the frozen group runs collectives.
    pub fn freeze_group(&self, name: &str) -> Result<Group, GroupError> {
        let words = request(self, name, Op::Freeze)?;
        let members = addresses(self, name, &words)?;
        Group::new(self, &members).map_err(|error| GroupError::Freeze {
            name: name.to_owned(),
            error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn homes_are_fixed_and_spread() {
        assert_eq!(home_of("", 7), (0xcbf2_9ce4_8422_2325u64 % 7) as u32);
        assert_eq!(home_of("workers", 1), 0);
        let homes: std::collections::HashSet<u32> =
            (0..64).map(|i| home_of(&format!("g{i}"), 4)).collect();
        assert_eq!(homes.len(), 4);
    }
}
