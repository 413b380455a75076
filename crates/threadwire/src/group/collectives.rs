//! The collectives on [`Group`]: blocking and nonblocking forms of each,
//! the arguments every member checks with the others, and the agreements
//! that build groups; which algorithm a call runs is [`super::dispatch`]'s.

use super::algorithms::{combine, exchange, tree};
use super::dispatch::{
    allgather, allreduce, alltoall, barrier, bcast, check_root, reduce,
    reduce_scatter, scan,
};
use super::element::{Element, Op, Reducible, Reduction};
use super::schedule::{self, Call, Comm};
use super::check::{self, Args};
use super::{context, CollError, CollRequest, Group};
use std::pin::pin;
use std::rc::Rc;

/// The group-building agreement: the bitwise AND of `words` over the
/// members (a recursive-doubling allreduce in `comm`'s collective context).
pub(crate) fn agree(comm: &Rc<Comm>, mut words: Vec<u64>) -> Result<Vec<u64>, CollError> {
    let call = Call::start(comm);
    let and: Reduction<u64> = Op::BitAnd.into();
    schedule::blocking(comm, call.index, pin!(async {
        let r = combine::allreduce_recursive_doubling(&call, &mut words, &and).await;
        call.finish(r).await
    }))?;
    Ok(words)
}

/// The first tag of a group built by a call of tag `tag` with id `k`: not
/// 0, so that messages left over from a dropped group of the same id
/// (an abort nobody read) are unlikely to meet the new group's.
fn first_tag(tag: u32, k: u32) -> u32 {
    tag.wrapping_mul(0x9e37_79b9) ^ k.rotate_left(16)
}

/// An id free at every member of `comm`, and the new group's first tag.
pub(crate) fn agree_on_id(comm: &Rc<Comm>) -> Result<(u32, u32), CollError> {
    let thread = comm.ep.address().thread;
    let tag = Call::peek_tag(comm);
    let free = agree(comm, comm.ep.node().shared.contexts.free_mask(thread))?;
    let k = context::choose(&free, None, 1).ok_or(CollError::ContextsExhausted)?;
    Ok((k, first_tag(tag, k)))
}

/// `split`'s agreement: every member's (colour, key), and an id free at
/// every member of the parent (the new groups are disjoint, so they share
/// it).
pub(crate) fn split_agreement(
    comm: &Rc<Comm>,
    color: Option<u32>,
    key: i64,
) -> Result<(u32, u32, Vec<i64>), CollError> {
    let call = Call::start(comm);
    let mine = [color.map_or(-1, i64::from), key];
    let all = schedule::blocking(comm, call.index, pin!(async {
        let r = exchange::allgather_bruck(&call, &mine).await;
        call.finish(r).await
    }))?;
    let (k, tag) = agree_on_id(comm)?;
    Ok((k, tag, all))
}

fn bcast_args<T: Element>(n: usize, root: usize) -> Args {
    Args::new("bcast").root(root).len::<T>(n)
}

fn reduction_args<T: Reducible>(name: &'static str, n: usize, op: &Reduction<T>) -> Args {
    Args::new(name).len::<T>(n).op(op)
}

/// A length mismatch of this member's own arguments, if `found` is not
/// `expected`.
fn own_length(g: &Group, expected: usize, found: usize) -> Result<(), CollError> {
    if expected == found {
        return Ok(());
    }
    Err(CollError::LengthMismatch {
        rank: g.rank(),
        expected,
        found,
    })
}

fn gatherv_args<T: Element>(g: &Group, len: usize, counts: &[usize], root: usize) -> Args {
    let is_root = g.rank() == root;
    let own = match is_root {
        true => own_length(g, g.size(), counts.len())
            .and_then(|()| own_length(g, counts[g.rank()], len)),
        false => Ok(()),
    };
    Args::new("gatherv")
        .root(root)
        .of::<T>()
        .gatherv_counts(counts, len, is_root)
        .failed(own)
}

fn scatter_args<T: Element>(g: &Group, len: usize, count: usize, root: usize) -> Args {
    let own = match g.rank() == root {
        true => own_length(g, count * g.size(), len),
        false => Ok(()),
    };
    Args::new("scatter").root(root).len::<T>(count).failed(own)
}

fn scatterv_args<T: Element>(g: &Group, len: usize, counts: &[usize], root: usize) -> Args {
    let own = match g.rank() == root {
        true => own_length(g, g.size(), counts.len())
            .and_then(|()| own_length(g, counts.iter().sum(), len)),
        false => Ok(()),
    };
    Args::new("scatterv").root(root).of::<T>().failed(own)
}

fn alltoall_args<T: Element>(g: &Group, len: usize) -> Args {
    let p = g.size();
    Args::new("alltoall")
        .len::<T>(len)
        .failed(own_length(g, len / p * p, len))
}

fn alltoallv_args<T: Element>(g: &Group, len: usize, counts: &[usize]) -> Args {
    let own = own_length(g, g.size(), counts.len())
        .and_then(|()| own_length(g, counts.iter().sum(), len));
    Args::new("alltoallv").of::<T>().failed(own)
}

/// Whether a call may take the per-node stage.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Path {
    Flat,
    MayStage,
}

impl Group {
    /// Starts the next call, queued for the stage's turn if it may take it.
    fn call(&self, path: Path) -> Call {
        let call = Call::start(&self.comm);
        if path == Path::MayStage {
            call.queue_for_stage();
        }
        call
    }
}

/// Collectives. Every member calls the same collectives in the same order
/// with matching arguments (the same root, operation and lengths); an
/// argument error found at one member fails the call at every member.
impl Group {
    /// What the argument check compares, made only if it runs.
    fn args(&self, args: impl FnOnce() -> Args) -> Option<Args> {
        self.checks().then(args)
    }

    /// A blocking call: the argument check of `args`, if any, then `body`.
    fn blocking<R>(
        &self,
        args: Option<Args>,
        body: impl AsyncFnOnce(&Call) -> Result<R, CollError>,
    ) -> Result<R, CollError> {
        self.blocking_in(Path::Flat, args, body)
    }

    /// [`blocking`](Self::blocking) of a call that may take `path`.
    fn blocking_in<R>(
        &self,
        path: Path,
        args: Option<Args>,
        body: impl AsyncFnOnce(&Call) -> Result<R, CollError>,
    ) -> Result<R, CollError> {
        self.check_revoked()?;
        let check = self.check_call(args);
        let call = self.call(path);
        let first = check.as_ref().map_or(call.index, |(check, _)| check.index);
        let body = pin!(async {
            let r = async {
                if let Some((check, args)) = check {
                    check::agree(&check, &call, args).await?;
                }
                body(&call).await
            }
            .await;
            call.finish(r).await
        });
        schedule::blocking(&self.comm, first, body)
    }

    /// The argument check of a call, if it runs: a call of its own, made
    /// just before the call it checks.
    fn check_call(&self, args: Option<Args>) -> Option<(Call, Args)> {
        args.map(|args| {
            let check = self.call(Path::MayStage);
            check.ignore_forced_algorithms();
            (check, args)
        })
    }

    fn nonblocking<R: 'static>(
        &self,
        args: Option<Args>,
        body: impl AsyncFnOnce(&Call) -> Result<R, CollError> + 'static,
    ) -> CollRequest<R> {
        self.nonblocking_in(Path::Flat, args, body)
    }

    fn nonblocking_in<R: 'static>(
        &self,
        path: Path,
        args: Option<Args>,
        body: impl AsyncFnOnce(&Call) -> Result<R, CollError> + 'static,
    ) -> CollRequest<R> {
        let revoked = self.check_revoked();
        let check = self.check_call(args);
        let call = self.call(path);
        let first = check.as_ref().map_or(call.index, |(check, _)| check.index);
        schedule::nonblocking(&self.comm, first, async move {
            revoked?;
            let r = async {
                if let Some((check, args)) = check {
                    check::agree(&check, &call, args).await?;
                }
                body(&call).await
            }
            .await;
            call.finish(r).await
        })
    }

    /// Returns once every member has called it.
    pub fn barrier(&self) -> Result<(), CollError> {
        self.blocking_in(Path::MayStage, self.args(|| Args::new("barrier")), async |c| barrier(c).await)
    }

    /// Nonblocking [`barrier`](Self::barrier).
    pub fn ibarrier(&self) -> CollRequest<()> {
        self.nonblocking_in(Path::MayStage, self.args(|| Args::new("barrier")), async |c| barrier(c).await)
    }

    /// Copies `root`'s `buf` into every member's `buf` (of the same length).
    ///
    /// ```
    /// # let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// let g = threadwire::Group::world(&ep).unwrap();
    /// let mut v = [1.5f64, 2.5];
    /// g.bcast(&mut v, 0).unwrap();
    /// # assert_eq!(v, [1.5, 2.5]);
    /// ```
    pub fn bcast<T: Element>(&self, buf: &mut [T], root: usize) -> Result<(), CollError> {
        let n = buf.len();
        self.blocking_in(Path::MayStage, self.args(|| bcast_args::<T>(n, root)), async |c| bcast(c, buf, root).await)
    }

    /// Nonblocking [`bcast`](Self::bcast); the request gives `buf` back.
    pub fn ibcast<T: Element>(&self, mut buf: Vec<T>, root: usize) -> CollRequest<Vec<T>> {
        let n = buf.len();
        self.nonblocking_in(Path::MayStage, self.args(|| bcast_args::<T>(n, root)), async move |c| {
            bcast(c, &mut buf, root).await?;
            Ok(buf)
        })
    }

    /// Combines every member's `data` element-wise at `root`, which gets
    /// `Some(result)`; the others get `None`.
    pub fn reduce<T: Reducible>(
        &self,
        data: &[T],
        op: impl Into<Reduction<T>>,
        root: usize,
    ) -> Result<Option<Vec<T>>, CollError> {
        let op = op.into();
        self.blocking(
            self.args(|| reduction_args("reduce", data.len(), &op).root(root)),
            async |c| reduce(c, data.to_vec(), &op, root).await,
        )
    }

    /// Nonblocking [`reduce`](Self::reduce).
    pub fn ireduce<T: Reducible>(
        &self,
        data: Vec<T>,
        op: impl Into<Reduction<T>>,
        root: usize,
    ) -> CollRequest<Option<Vec<T>>> {
        let op = op.into();
        let n = data.len();
        self.nonblocking(
            self.args(|| reduction_args("reduce", n, &op).root(root)),
            async move |c| reduce(c, data, &op, root).await,
        )
    }

    /// Combines every member's `buf` element-wise and leaves the result in
    /// every member's `buf`.
    ///
    /// ```
    /// use threadwire::{Group, Op, Reduction};
    /// # let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// let g = Group::world(&ep).unwrap();
    /// let mut v = [3u32, 4];
    /// g.allreduce(&mut v, Op::Max).unwrap();
    /// // A user reduction; not commutative, so combined in rank order.
    /// g.allreduce(&mut v, Reduction::ordered(|acc: &mut [u32], b: &[u32]| {
    ///     for (x, y) in acc.iter_mut().zip(b) {
    ///         *x = *x * 2 + *y;
    ///     }
    /// })).unwrap();
    /// # assert_eq!(v, [3, 4]);
    /// ```
    pub fn allreduce<T: Reducible>(
        &self,
        buf: &mut [T],
        op: impl Into<Reduction<T>>,
    ) -> Result<(), CollError> {
        let op = op.into();
        let n = buf.len();
        self.blocking_in(
            Path::MayStage,
            self.args(|| reduction_args("allreduce", n, &op)),
            async |c| allreduce(c, buf, &op).await,
        )
    }

    /// Nonblocking [`allreduce`](Self::allreduce); the request gives the
    /// result back in `buf`.
    ///
    /// ```
    /// use threadwire::{wait_all, Group, Op};
    /// # let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// let g = Group::world(&ep).unwrap();
    /// let sum = g.iallreduce(vec![1i64, 2], Op::Sum);
    /// let max = g.iallreduce(vec![5i64], Op::Max);
    /// let results = wait_all(vec![sum, max]);
    /// # assert_eq!(results[0].as_ref().unwrap(), &vec![1, 2]);
    /// ```
    pub fn iallreduce<T: Reducible>(
        &self,
        mut buf: Vec<T>,
        op: impl Into<Reduction<T>>,
    ) -> CollRequest<Vec<T>> {
        let op = op.into();
        let n = buf.len();
        let args = self.args(|| reduction_args("allreduce", n, &op));
        self.nonblocking_in(Path::MayStage, args, async move |c| {
            allreduce(c, &mut buf, &op).await?;
            Ok(buf)
        })
    }

    /// Combines every member's `data` element-wise and scatters the result:
    /// member i gets `counts[i]` elements, in order (`counts` sums to
    /// `data.len()`, at every member alike).
    pub fn reduce_scatter<T: Reducible>(
        &self,
        data: &[T],
        counts: &[usize],
        op: impl Into<Reduction<T>>,
    ) -> Result<Vec<T>, CollError> {
        let op = op.into();
        self.blocking(
            self.args(|| reduction_args("reduce_scatter", data.len(), &op).words(counts)),
            async |c| reduce_scatter(c, data.to_vec(), counts, &op).await,
        )
    }

    /// Nonblocking [`reduce_scatter`](Self::reduce_scatter).
    pub fn ireduce_scatter<T: Reducible>(
        &self,
        data: Vec<T>,
        counts: Vec<usize>,
        op: impl Into<Reduction<T>>,
    ) -> CollRequest<Vec<T>> {
        let op = op.into();
        let args = self.args(|| reduction_args("reduce_scatter", data.len(), &op).words(&counts));
        self.nonblocking(args, async move |c| {
            reduce_scatter(c, data, &counts, &op).await
        })
    }

    /// Inclusive prefix reduction: rank r gets `data(0) ∘ … ∘ data(r)`.
    pub fn scan<T: Reducible>(
        &self,
        data: &[T],
        op: impl Into<Reduction<T>>,
    ) -> Result<Vec<T>, CollError> {
        let op = op.into();
        self.blocking(
            self.args(|| reduction_args("scan", data.len(), &op)),
            async |c| scan(c, data.to_vec(), &op, true).await,
        )
            .map(|r| r.expect("an inclusive scan has a result everywhere"))
    }

    /// Nonblocking [`scan`](Self::scan).
    pub fn iscan<T: Reducible>(
        &self,
        data: Vec<T>,
        op: impl Into<Reduction<T>>,
    ) -> CollRequest<Vec<T>> {
        let op = op.into();
        let args = self.args(|| reduction_args("scan", data.len(), &op));
        self.nonblocking(args, async move |c| {
            scan(c, data, &op, true)
                .await
                .map(|r| r.expect("an inclusive scan has a result everywhere"))
        })
    }

    /// Exclusive prefix reduction: rank r > 0 gets `data(0) ∘ … ∘
    /// data(r−1)`, rank 0 `None`.
    pub fn exscan<T: Reducible>(
        &self,
        data: &[T],
        op: impl Into<Reduction<T>>,
    ) -> Result<Option<Vec<T>>, CollError> {
        let op = op.into();
        self.blocking(
            self.args(|| reduction_args("exscan", data.len(), &op)),
            async |c| scan(c, data.to_vec(), &op, false).await,
        )
    }

    /// Nonblocking [`exscan`](Self::exscan).
    pub fn iexscan<T: Reducible>(
        &self,
        data: Vec<T>,
        op: impl Into<Reduction<T>>,
    ) -> CollRequest<Option<Vec<T>>> {
        let op = op.into();
        let args = self.args(|| reduction_args("exscan", data.len(), &op));
        self.nonblocking(args, async move |c| scan(c, data, &op, false).await)
    }

    /// Every member's `data` (of one length at every member) at `root`,
    /// in rank order; the others get `None`.
    pub fn gather<T: Element>(&self, data: &[T], root: usize) -> Result<Option<Vec<T>>, CollError> {
        let args = self.args(|| Args::new("gather").root(root).len::<T>(data.len()));
        self.blocking(args, async |c| {
            check_root(c, root)?;
            tree::gather(c, data, root).await
        })
    }

    /// Nonblocking [`gather`](Self::gather).
    pub fn igather<T: Element>(&self, data: Vec<T>, root: usize) -> CollRequest<Option<Vec<T>>> {
        let args = self.args(|| Args::new("gather").root(root).len::<T>(data.len()));
        self.nonblocking(args, async move |c| {
            check_root(c, root)?;
            tree::gather(c, &data, root).await
        })
    }

    /// Every member's `data`, of any length, at `root`: one vector per
    /// rank. `counts` (significant at the root only) gives each member's
    /// length, and a member sending another fails the call.
    pub fn gatherv<T: Element>(
        &self,
        data: &[T],
        counts: &[usize],
        root: usize,
    ) -> Result<Option<Vec<Vec<T>>>, CollError> {
        let args = self.args(|| gatherv_args::<T>(self, data.len(), counts, root));
        self.blocking(args, async |c| {
            check_root(c, root)?;
            tree::gatherv(c, data, counts, root).await
        })
    }

    /// Nonblocking [`gatherv`](Self::gatherv).
    pub fn igatherv<T: Element>(
        &self,
        data: Vec<T>,
        counts: Vec<usize>,
        root: usize,
    ) -> CollRequest<Option<Vec<Vec<T>>>> {
        let args = self.args(|| gatherv_args::<T>(self, data.len(), &counts, root));
        self.nonblocking(args, async move |c| {
            check_root(c, root)?;
            tree::gatherv(c, &data, &counts, root).await
        })
    }

    /// Block i of `root`'s `data` (`count` elements each; `data` is
    /// significant at the root only) to member i.
    pub fn scatter<T: Element>(
        &self,
        data: &[T],
        count: usize,
        root: usize,
    ) -> Result<Vec<T>, CollError> {
        let args = self.args(|| scatter_args::<T>(self, data.len(), count, root));
        self.blocking(args, async |c| {
            check_root(c, root)?;
            tree::scatter(c, data, count, root).await
        })
    }

    /// Nonblocking [`scatter`](Self::scatter).
    pub fn iscatter<T: Element>(
        &self,
        data: Vec<T>,
        count: usize,
        root: usize,
    ) -> CollRequest<Vec<T>> {
        let args = self.args(|| scatter_args::<T>(self, data.len(), count, root));
        self.nonblocking(args, async move |c| {
            check_root(c, root)?;
            tree::scatter(c, &data, count, root).await
        })
    }

    /// Block i of `root`'s `data`, `counts[i]` elements long, to member i
    /// (`data` and `counts` are significant at the root only).
    pub fn scatterv<T: Element>(
        &self,
        data: &[T],
        counts: &[usize],
        root: usize,
    ) -> Result<Vec<T>, CollError> {
        let args = self.args(|| scatterv_args::<T>(self, data.len(), counts, root));
        self.blocking(args, async |c| {
            check_root(c, root)?;
            tree::scatterv(c, data, counts, root).await
        })
    }

    /// Nonblocking [`scatterv`](Self::scatterv).
    pub fn iscatterv<T: Element>(
        &self,
        data: Vec<T>,
        counts: Vec<usize>,
        root: usize,
    ) -> CollRequest<Vec<T>> {
        let args = self.args(|| scatterv_args::<T>(self, data.len(), &counts, root));
        self.nonblocking(args, async move |c| {
            check_root(c, root)?;
            tree::scatterv(c, &data, &counts, root).await
        })
    }

    /// Every member's `data` (of one length) at every member, in rank order.
    pub fn allgather<T: Element>(&self, data: &[T]) -> Result<Vec<T>, CollError> {
        self.blocking(
            self.args(|| Args::new("allgather").len::<T>(data.len())),
            async |c| allgather(c, data).await,
        )
    }

    /// Nonblocking [`allgather`](Self::allgather).
    pub fn iallgather<T: Element>(&self, data: Vec<T>) -> CollRequest<Vec<T>> {
        let args = self.args(|| Args::new("allgather").len::<T>(data.len()));
        self.nonblocking(args, async move |c| allgather(c, &data).await)
    }

    /// Every member's `data`, of any length, at every member: one vector
    /// per rank.
    pub fn allgatherv<T: Element>(&self, data: &[T]) -> Result<Vec<Vec<T>>, CollError> {
        self.blocking(
            self.args(|| Args::new("allgatherv").of::<T>()),
            async |c| exchange::allgatherv_ring(c, data).await,
        )
    }

    /// Nonblocking [`allgatherv`](Self::allgatherv).
    pub fn iallgatherv<T: Element>(&self, data: Vec<T>) -> CollRequest<Vec<Vec<T>>> {
        self.nonblocking(
            self.args(|| Args::new("allgatherv").of::<T>()),
            async move |c| exchange::allgatherv_ring(c, &data).await,
        )
    }

    /// Block j of every member's `data` (p equal blocks) to member j: the
    /// result's block i comes from member i.
    pub fn alltoall<T: Element>(&self, data: &[T]) -> Result<Vec<T>, CollError> {
        self.blocking(
            self.args(|| alltoall_args::<T>(self, data.len())),
            async |c| alltoall(c, data).await,
        )
    }

    /// Nonblocking [`alltoall`](Self::alltoall).
    pub fn ialltoall<T: Element>(&self, data: Vec<T>) -> CollRequest<Vec<T>> {
        let args = self.args(|| alltoall_args::<T>(self, data.len()));
        self.nonblocking(args, async move |c| alltoall(c, &data).await)
    }

    /// `counts[j]` elements of `data` (in order) to member j; the result's
    /// vector i comes from member i.
    pub fn alltoallv<T: Element>(
        &self,
        data: &[T],
        counts: &[usize],
    ) -> Result<Vec<Vec<T>>, CollError> {
        self.blocking(
            self.args(|| alltoallv_args::<T>(self, data.len(), counts)),
            async |c| exchange::alltoallv_pairwise(c, data, counts).await,
        )
    }

    /// Nonblocking [`alltoallv`](Self::alltoallv).
    pub fn ialltoallv<T: Element>(
        &self,
        data: Vec<T>,
        counts: Vec<usize>,
    ) -> CollRequest<Vec<Vec<T>>> {
        let args = self.args(|| alltoallv_args::<T>(self, data.len(), &counts));
        self.nonblocking(args, async move |c| {
            exchange::alltoallv_pairwise(c, &data, &counts).await
        })
    }
}
