//! Groups of endpoints and the collectives between them.
//!
//! A [`Group`] is an ordered set of endpoint addresses; each member has a
//! *rank*, its place in the order. Members may be threads of one node,
//! threads of many, or both — a collective spans the fibers of many nodes.
//!
//! ```
//! use threadwire::{Group, Op};
//!
//! let ep = threadwire::Config::new().standalone(true).init().unwrap();
//! let node = ep.node().clone();
//! // Four fibers of this node form a group: the first 4 threads of every
//! // node (here one node; thread 0 is the main thread).
//! let workers: Vec<_> = (1..4)
//!     .map(|_| node.spawn(|ep| {
//!         let g = Group::world_threads(&ep, 4).unwrap();
//!         let mut v = [g.rank() as u64 + 1];
//!         g.allreduce(&mut v, Op::Sum).unwrap();
//!         v[0]
//!     }))
//!     .collect();
//! let g = Group::world_threads(&ep, 4).unwrap();
//! let mut v = [g.rank() as u64 + 1];
//! g.allreduce(&mut v, Op::Sum).unwrap();
//! assert_eq!(v, [10]);
//! for w in workers {
//!     assert_eq!(w.join().unwrap(), 10);
//! }
//! ```
//!
//! # Building groups
//!
//! Every way is *collective*: every member calls it, in the same order
//! relative to its other collective calls on the groups it shares.
//!
//! - [`Group::new`] from an explicit list (the same list at every member);
//! - [`Group::world`]: thread 0 of every node, rank = node — one member
//!   per process, MPI's `COMM_WORLD` for nodes × 1 programs;
//! - [`Group::world_threads`]: the first `t` threads of every node, rank
//!   = node · t + thread — for nodes × fibers programs whose threads are
//!   numbered alike on every node (thread 0 and `t − 1` spawned threads);
//! - [`Group::split`] by colour and key and [`Group::dup`], over a group;
//! - [`Group::mesh`]: the row and column groups of an r × c arrangement
//!   of a group's members (as SUMMA needs).
//!
//! # Contexts
//!
//! Messages of one group never match receives of another, nor plain
//! point-to-point ones: every frame carries a context (see [`context`]),
//! and each group has its own — one for its members' point-to-point
//! messages ([`Group::send`], [`Group::recv`]) and one for its
//! collectives — agreed by its members when it is built.
//!
//! # Collectives and their algorithms
//!
//! Blocking collectives take slices; nonblocking ones (`i…`) take owned
//! vectors and return a [`CollRequest`] that `wait`, `test`,
//! [`wait_all`](crate::wait_all) and [`wait_any`](crate::wait_any)
//! complete, and that advances when tested or waited (see [`schedule`]).
//! All run over point-to-point messages in the group's collective context;
//! the algorithm is chosen by size at every member alike ([`tuning`] holds
//! the thresholds, MPICH's and Open MPI's to start with) and can be forced
//! per group ([`Group::set_algorithms`]).
//!
//! Costs in the usual model: α per message, β per byte, γ per byte
//! combined; `p` members, `n` bytes (the whole buffer).
//!
//! | collective | algorithm | when | cost |
//! |---|---|---|---|
//! | barrier | per-node stage, dissemination among leaders | > 1 member on a node | ⌈log₂L⌉ α + node stage |
//! | barrier | host stage, dissemination among host leaders | one member a node, all on one host (or forced) | ⌈log₂H⌉ α + host stage + node stage |
//! | barrier | dissemination | otherwise | ⌈log₂p⌉ α |
//! | bcast | once by the root's multicast stream (binomial tree where it does not reach every node) | UDP channel between hosts | α + nβ whatever p, + repairs of what the network lost |
//! | bcast | per-node stage, binomial among leaders | n ≤ 4 KiB, > 1 member on a node | ⌈log₂L⌉ (α + nβ) + node stage |
//! | bcast | binomial tree | n ≤ 12 KiB or p = 2 | ⌈log₂p⌉ (α + nβ) |
//! | bcast | pipelined chain, segments of s = 32 KiB | larger, p ≤ 16 or n ≥ (p − 2) s | (p − 2 + ⌈n/s⌉) (α + sβ) |
//! | bcast | scatter + ring allgather | larger, p > 16, n < (p − 2) s | (⌈log₂p⌉ + p − 1) α + 2 (p−1)/p nβ |
//! | reduce | binomial tree (to rank 0 and forwarded if not commutative) | always | ⌈log₂p⌉ (α + nβ + nγ) |
//! | allreduce | per-node stage, flat among leaders | n ≤ 4 KiB, > 1 member on a node | (⌊log₂L⌋ + 2) (α + nβ) + ⌊log₂L⌋ nγ + node stage |
//! | allreduce | host stage, flat among host leaders | n ≤ 48 B, as for barrier | flat over H + host stage + node stage |
//! | allreduce | recursive doubling, non-power-of-two fold | n ≤ 8 KiB, or not commutative | (⌊log₂p⌋ + 2) (α + nβ) + ⌊log₂p⌋ nγ |
//! | allreduce | Rabenseifner: halving reduce-scatter + doubling allgather | between | 2 log₂p α + 2 (p−1)/p nβ + (p−1)/p nγ (+ fold) |
//! | allreduce | ring reduce-scatter + ring allgather (by multicast streams from n/p ≥ 128 KiB on the UDP channel between hosts: one step) | n/p ≥ 32 KiB | 2 (p−1) α + 2 (p−1)/p nβ + (p−1)/p nγ |
//! | reduce_scatter | ring | commutative | (p−1) α + (p−1)/p nβ + (p−1)/p nγ |
//! | reduce_scatter | reduce to 0 + scatterv | not commutative | reduce + (p−1) α + nβ |
//! | scan, exscan | recursive doubling | always | ⌈log₂p⌉ (α + nβ + 2nγ) |
//! | gather, scatter | binomial tree | always | ⌈log₂p⌉ α + (p−1)/p nβ |
//! | gatherv, scatterv | linear (root to each) | always | (p−1) α + nβ |
//! | allgather | every block once by its node's multicast stream, at once (to each directly where the stream does not reach every node) | n > 80 KiB gathered, UDP channel between hosts | α + (p−1)/p nβ, + repairs |
//! | allgather | Bruck | n ≤ 80 KiB gathered | ⌈log₂p⌉ α + (p−1)/p nβ |
//! | allgather(v) | ring | larger, other channels (allgatherv: always) | (p−1) α + (p−1)/p nβ |
//! | alltoall | Bruck | block ≤ 256 B | ⌈log₂p⌉ α + ⌈log₂p⌉ n/2 β |
//! | alltoall(v) | pairwise exchange | larger (alltoallv: always) | (p−1) α + nβ |
//!
//! `L` is the number of nodes with members (one leader each); the node
//! stage — members of one node combining through memory — costs a few
//! cache-line transfers and `q − 1` combines for `q` members on a node
//! (`group/algorithms/node_stage.rs` gives its protocol, rules and
//! failures). `H` is the number of hosts; the host stage — the nodes of
//! one host combining through one shared segment, a line per node — costs
//! one or two crossings of the host (`group/algorithms/host_stage.rs`).
//! It is built with every group spanning several nodes of one host and
//! taken where it measured faster (one member a node, one host) or where
//! forced (`host-stage`, `THREADWIRE_HOST_STAGE=1`).
//!
//! Non-commutative reductions ([`Reduction::ordered`]) combine in rank
//! order — `x0 ∘ x1 ∘ … ∘ x(p−1)` — with the algorithms that keep blocks
//! of consecutive ranks together (recursive doubling, the rank-0 tree,
//! scan's doubling); forcing a ring or Rabenseifner on one is an error.
//!
//! # Failures
//!
//! Argument errors ([`CollError`]) are reported at every member, not
//! only where they were made. With the argument check (`check.rs`; on by
//! default in debug builds, [`Group::set_checks`],
//! `THREADWIRE_COLL_CHECKS`) every call starts with the members agreeing
//! on their arguments: a root out of range, counts that do not cover the
//! group, or a root, length, element type, operation, forced algorithm or
//! collective that differs between members fails the call at every
//! member with one typed error ([`CollError::CallsDiffer`] for a
//! difference), before any data moves, so none waits for messages nobody
//! sends. Without it (release builds by default: it costs one small
//! allreduce a call), the member that sees an error sends an abort to the others,
//! which end the call with the same error if they are still in it; but
//! members that finished first keep their result, and arguments that
//! differ without being wrong anywhere may hang, as in MPI.
//!
//! A member's node lost mid-call fails the call with
//! [`CollError::PeerLost`] at every member still in it, also at those
//! waiting on a live member that waits on the dead one. Members calling
//! collectives in different orders, or building groups from different
//! lists, is an error the check sees only where the calls differ in
//! kind or arguments.
//!
//! # Later
//!
//! The per-node stage serves barrier, allreduce and bcast of small
//! buffers, blocking and nonblocking, one call of the stage under way per
//! member at a time (a later one waits for its turn, advancing the
//! earlier); the host stage serves barrier and allreduce up to 48 B.
//! Still to come: the host stage for bcast, the node stage for reduce and
//! allgather, more than one stage call under way per member (a slot per
//! call), and thresholds moved by measurement.

pub(crate) mod agree;
pub(crate) mod revoke;
mod algorithms;
mod check;
pub mod context;
mod element;
mod error;
mod collectives;
mod dispatch;
pub mod named;
pub mod schedule;
pub mod tuning;

pub(crate) use algorithms::node_stage::NodeTeams;
pub(crate) use context::ContextTable;
pub use agree::Agreement;
pub use element::{Element, Op, Reducible, Reduction, ValueLoc};
pub use error::CollError;
pub use named::GroupError;
pub use tuning::{
    AllgatherAlgorithm, AllreduceAlgorithm, Algorithms, AlltoallAlgorithm, BarrierAlgorithm,
    BcastAlgorithm, ParseAlgorithmError, ReduceScatterAlgorithm,
};

use crate::{Address, Endpoint, Message, RecvRequest, Source, Tag, TagMatch};
use algorithms::node_stage::NodeStage;
use schedule::Comm;
use std::rc::Rc;
use std::sync::Arc;
use threadwire_wire::Payload;

/// A collective under way: complete it with `wait`, `test`,
/// [`wait_all`](crate::wait_all) or [`wait_any`](crate::wait_any).
pub type CollRequest<T> = crate::Request<T, CollError>;

/// An ordered set of endpoints with a rank for each, and their own
/// contexts; see the [module docs](self). Belongs to the thread that built
/// it (it is not `Send`); dropping it gives its context ids back once its
/// last nonblocking call is over ([`schedule`] rule 6).
pub struct Group {
    comm: Rc<Comm>,
    id: u32,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Group(rank {} of {}, id {})",
            self.rank(),
            self.size(),
            self.id
        )
    }
}

impl Group {
    /// Builds the group of `members`, in that order; every member calls it
    /// with the same list. The members agree on the group's context ids
    /// (one allreduce among them), so this returns once all have called it.
    ///
    /// Errors: an empty list, a duplicate, an address of no endpoint of this
    /// job, the caller not in the list ([`CollError::NotMember`]), the
    /// members' lists differing ([`CollError::MembersDiffer`]), a member
    /// lost.
    pub fn new(ep: &Endpoint, members: &[Address]) -> Result<Group, CollError> {
        let me = ep.address();
        if members.is_empty() {
            return Err(CollError::Empty);
        }
        let nodes = ep.node().nodes();
        let mut seen = std::collections::HashSet::with_capacity(members.len());
        for &a in members {
            if a.node >= nodes || a.thread >= crate::mailbox::MAX_THREADS {
                return Err(CollError::NoSuchEndpoint(a));
            }
            if !seen.insert(a) {
                return Err(CollError::DuplicateMember(a));
            }
        }
        let rank = members
            .iter()
            .position(|&a| a == me)
            .ok_or(CollError::NotMember(me))?;
        let members: Arc<[Address]> = members.into();
        let hash = context::list_hash(&members);
        let bootstrap = Rc::new(Comm::new(
            ep,
            members.clone(),
            rank,
            context::BOOTSTRAP,
            hash as u32,
        ));
        let mut words = vec![hash, !hash];
        words.extend(ep.node().shared.contexts.free_mask(me.thread));
        let agreed = collectives::agree(&bootstrap, words)?;
        if agreed[0] != !agreed[1] {
            return Err(CollError::MembersDiffer);
        }
        let k = context::choose(
            &agreed[2..],
            Some(context::proposed(hash)),
            context::LIST_IDS_FROM,
        )
        .ok_or(CollError::ContextsExhausted)?;
        Ok(Group::with_id(ep, members, rank, k, hash as u32))
    }

    /// Thread 0 of every node, ranked by node. Called by thread 0 of
    /// every node. In a job that grows ([`Endpoint::add_nodes`]), every
    /// node the caller counts ([`Node::nodes`](crate::Node::nodes)): make
    /// it once every member counts the same nodes (a list with
    /// [`Group::new`] needs no such care). A group never gains members:
    /// the nodes that join later make a new one.
    pub fn world(ep: &Endpoint) -> Result<Group, CollError> {
        Group::world_threads(ep, 1)
    }

    /// The first `threads` threads of every node, rank `node · threads +
    /// thread`. Called by each of them.
    pub fn world_threads(ep: &Endpoint, threads: u32) -> Result<Group, CollError> {
        let members: Vec<Address> = (0..ep.node().nodes())
            .flat_map(|n| (0..threads).map(move |t| Address::new(n, t)))
            .collect();
        Group::new(ep, &members)
    }

    fn with_id(
        ep: &Endpoint,
        members: Arc<[Address]>,
        rank: usize,
        k: u32,
        first_tag: u32,
    ) -> Group {
        let lease = schedule::IdLease::take(ep, k);
        let hash = context::list_hash(&members);
        let stage = NodeStage::new(ep, &members, rank, k, hash);
        let mut comm = Comm::new(ep, members, rank, k, first_tag);
        comm.node_stage = Some(stage);
        comm.lease = Some(lease);
        let comm = Rc::new(comm);
        if let Some(host) = algorithms::host_stage::HostStage::build(ep, &comm, k) {
            let _ = comm.host_stage.set(host);
        }
        Group { comm, id: k }
    }

    /// Members in the group.
    pub fn size(&self) -> usize {
        self.comm.size()
    }

    /// The caller's rank.
    pub fn rank(&self) -> usize {
        self.comm.rank
    }

    /// The calling member's endpoint.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.comm.ep
    }

    /// The members, in rank order.
    pub fn members(&self) -> &[Address] {
        &self.comm.members
    }

    /// The address of `rank`.
    pub fn address(&self, rank: usize) -> Option<Address> {
        self.comm.members.get(rank).copied()
    }

    /// The rank of `address`, if it is a member.
    pub fn rank_of(&self, address: Address) -> Option<usize> {
        self.comm.members.iter().position(|&a| a == address)
    }

    /// The algorithms forced on this group's collectives (none by default).
    pub fn algorithms(&self) -> Algorithms {
        self.comm.algorithms.get()
    }

    /// Forces algorithms on this group's collectives; every member must
    /// force the same ones before the same calls.
    pub fn set_algorithms(&self, algorithms: Algorithms) {
        self.comm.algorithms.set(algorithms);
    }

    /// Whether this group's collectives first check that every member
    /// passed the same arguments (`group/check.rs`; by default on in debug
    /// builds, or as `THREADWIRE_COLL_CHECKS` says).
    pub fn checks(&self) -> bool {
        self.comm.checks.get()
    }

    /// Turns the argument check on or off for this group's collectives;
    /// every member must set the same before the same calls.
    pub fn set_checks(&self, on: bool) {
        self.comm.checks.set(on);
    }

    fn member(&self, rank: usize) -> Result<Address, CollError> {
        self.address(rank).ok_or(CollError::RankOutOfRange {
            rank,
            size: self.size(),
        })
    }

    /// Sends `data` to member `to` in the group's point-to-point context:
    /// only the group's receives match it. (The payload is not given back
    /// on failure.)
    pub fn send(&self, to: usize, tag: Tag, data: impl Into<Payload>) -> Result<(), CollError> {
        self.check_revoked()?;
        let to = self.member(to)?;
        let c = &self.comm;
        c.ep.send_in(context::p2p_context(self.id), to, tag, data.into())
            .map_err(CollError::from)
    }

    /// Starts a send to member `to` in the group's point-to-point context
    /// (complete at once, as [`Endpoint::isend`]).
    pub fn isend(
        &self,
        to: usize,
        tag: Tag,
        data: impl Into<Payload>,
    ) -> Result<crate::SendRequest, CollError> {
        self.check_revoked()?;
        let to = self.member(to)?;
        let c = &self.comm;
        Ok(c.ep.isend_in(context::p2p_context(self.id), to, tag, data.into()))
    }

    /// Starts a receive in the group's point-to-point context from member
    /// `from` (`None`: any member).
    pub fn irecv(
        &self,
        from: Option<usize>,
        tag: impl Into<TagMatch>,
    ) -> Result<RecvRequest, CollError> {
        self.check_revoked()?;
        let source = match from {
            Some(r) => Source::Thread(self.member(r)?),
            None => Source::Any,
        };
        let mut request = self
            .comm
            .ep
            .irecv_in(context::p2p_context(self.id), source, tag.into());
        // Revoked while it was being posted (`revoke`, step 3): the sweep
        // may have missed it.
        if self.check_revoked().is_err() && request.cancel() {
            return Err(CollError::Revoked);
        }
        Ok(request)
    }

    /// Receives in the group's point-to-point context from member `from`
    /// (`None`: any member); [`rank_of`](Self::rank_of) the message's
    /// source gives the sender's rank.
    pub fn recv(&self, from: Option<usize>, tag: impl Into<TagMatch>) -> Result<Message, CollError> {
        self.irecv(from, tag)?.wait().map_err(CollError::from)
    }

    /// A new group of the same members in the same order, with contexts
    /// of its own (collective).
    pub fn dup(&self) -> Result<Group, CollError> {
        self.check_revoked()?;
        let (k, tag) = collectives::agree_on_id(&self.comm)?;
        Ok(Group::with_id(
            &self.comm.ep,
            self.comm.members.clone(),
            self.rank(),
            k,
            tag,
        ))
    }

    /// Splits the group (collective): members passing the same `color`
    /// form a new group, ranked by `key` and then by rank here; `None`
    /// (MPI's `UNDEFINED`) joins none and returns `None`.
    pub fn split(&self, color: Option<u32>, key: i64) -> Result<Option<Group>, CollError> {
        self.check_revoked()?;
        let (k, tag, all) = collectives::split_agreement(&self.comm, color, key)?;
        let Some(color) = color else {
            return Ok(None);
        };
        let mut mine: Vec<(i64, usize)> = all
            .chunks(2)
            .enumerate()
            .filter(|(_, ck)| ck[0] == i64::from(color))
            .map(|(rank, ck)| (ck[1], rank))
            .collect();
        mine.sort_unstable();
        let members: Arc<[Address]> = mine.iter().map(|&(_, r)| self.comm.members[r]).collect();
        let rank = mine
            .iter()
            .position(|&(_, r)| r == self.rank())
            .expect("the caller has its own colour");
        Ok(Some(Group::with_id(&self.comm.ep, members, rank, k, tag)))
    }

    /// The row and column groups of the members arranged as `rows` ×
    /// `cols` in rank order (rank = row · cols + col): the row group holds
    /// the caller's row ranked by column, the column group its column
    /// ranked by row. Collective; the group's size must be `rows · cols`.
    pub fn mesh(&self, rows: usize, cols: usize) -> Result<(Group, Group), CollError> {
        if rows * cols != self.size() {
            return Err(CollError::LengthMismatch {
                rank: self.rank(),
                expected: self.size(),
                found: rows * cols,
            });
        }
        let (row, col) = (self.rank() / cols, self.rank() % cols);
        let by_row = self.split(Some(row as u32), col as i64)?;
        let by_col = self.split(Some(col as u32), row as i64)?;
        Ok((
            by_row.expect("a colour was given"),
            by_col.expect("a colour was given"),
        ))
    }

}
