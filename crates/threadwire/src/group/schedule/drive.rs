//! Driving a call to completion: a blocking one inside the progress
//! engine's wait (rule 1), a nonblocking one through its request and its
//! group's calls under way (rules 2 and 5).

use super::{Comm, CollError};
use crate::node::NodeShared;
use crate::request::{Request, Schedule};
use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

fn poll_once<F: Future + ?Sized>(fut: Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

/// Runs `fut`, call `first` of `comm` (or calls from `first` on), to
/// completion on this thread (rule 1), advancing the group's earlier
/// nonblocking calls before each poll (rule 5).
pub(crate) fn block_on<F: Future + ?Sized>(
    comm: &Comm,
    first: u64,
    fut: Pin<&mut F>,
) -> F::Output {
    let was_blocking = comm.blocking.replace(true);
    let out = block_on_inner(comm, first, fut);
    comm.blocking.set(was_blocking);
    out
}

fn block_on_inner<F: Future + ?Sized>(comm: &Comm, first: u64, mut fut: Pin<&mut F>) -> F::Output {
    let mut poll = || {
        comm.advance_before(first);
        poll_once(fut.as_mut())
    };
    if let Poll::Ready(v) = poll() {
        return v;
    }
    let node = comm.node();
    let mut out = None;
    node.engine.wait_until(&node.router, comm.origin, || match poll() {
        Poll::Ready(v) => {
            out = Some(v);
            true
        }
        Poll::Pending => false,
    });
    out.expect("the wait ends on completion")
}

/// A blocking collective, from call `first` of `comm`: `body` run to
/// completion. Pinned by the caller (`pin!(async { … })`), so that the
/// future is built where it is polled and never moved (a collective's is
/// hundreds of bytes).
pub(crate) fn blocking<T>(
    comm: &Comm,
    first: u64,
    body: Pin<&mut impl Future<Output = Result<T, CollError>>>,
) -> Result<T, CollError> {
    block_on(comm, first, body)
}

/// A nonblocking collective's request (rules 2 and 5): the call `index`
/// of `comm`, kept in the group's calls under way until complete.
pub(crate) fn nonblocking<T: 'static>(
    comm: &Rc<Comm>,
    index: u64,
    body: impl Future<Output = Result<T, CollError>> + 'static,
) -> Request<T, CollError> {
    let call = Rc::new(RefCell::new(UnderWay {
        body: Some(Box::pin(body)),
        result: None,
    }));
    let mut in_flight = comm.in_flight.borrow_mut();
    in_flight.retain(|(_, call)| call.try_borrow().map_or(true, |c| !c.is_complete()));
    in_flight.push((index, call.clone()));
    drop(in_flight);
    Request::scheduled(Box::new(Nonblocking {
        comm: comm.clone(),
        first: index,
        call,
    }))
}

type Body<T> = Pin<Box<dyn Future<Output = Result<T, CollError>>>>;

/// A nonblocking call in its group's list (rule 5).
pub(super) type InFlight = Rc<RefCell<dyn Advance>>;

/// A nonblocking call as its group sees it: advanced by its request, or
/// by a later call that waits for it (rule 5).
pub(crate) trait Advance {
    fn advance(&mut self);
    fn is_complete(&self) -> bool;
}

struct UnderWay<T> {
    /// Dropped once complete: it holds the group's `Comm`.
    body: Option<Body<T>>,
    result: Option<Result<T, CollError>>,
}

impl<T> Advance for UnderWay<T> {
    fn advance(&mut self) {
        if let Some(body) = self.body.as_mut() {
            if let Poll::Ready(r) = poll_once(body.as_mut()) {
                self.result = Some(r);
                self.body = None;
            }
        }
    }

    fn is_complete(&self) -> bool {
        self.body.is_none()
    }
}

struct Nonblocking<T> {
    comm: Rc<Comm>,
    /// The call's number (its check's, if it has one).
    first: u64,
    call: Rc<RefCell<UnderWay<T>>>,
}

impl<T> Nonblocking<T> {
    fn take(&mut self) -> Option<Result<T, CollError>> {
        self.comm.advance_before(self.first);
        let mut call = self.call.borrow_mut();
        call.advance();
        call.result.take()
    }
}

impl<T> Schedule<T, CollError> for Nonblocking<T> {
    fn poll(&mut self) -> Option<Result<T, CollError>> {
        self.take()
    }

    fn block(&mut self) -> Result<T, CollError> {
        if let Some(r) = self.take() {
            return r;
        }
        let origin = self.comm.origin;
        let mut out = None;
        let node = self.comm.node().clone();
        node.engine.wait_until(&node.router, origin, || {
            out = self.take();
            out.is_some()
        });
        out.expect("the wait ends on completion")
    }

    fn node(&self) -> &Arc<NodeShared> {
        self.comm.node()
    }
}
