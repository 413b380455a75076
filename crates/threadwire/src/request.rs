//! Non-blocking operations: requests and the ways to complete them.

use crate::error::{RecvError, SendError};
use crate::node::NodeShared;
use crate::progress::Origin;
use crate::receive::{Got, Receive};
use crate::rendezvous::Done;
use crate::{Address, Message, Status};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An operation of several steps (a nonblocking collective) that advances
/// when its request is tested or waited.
pub(crate) trait Schedule<T, E> {
    /// Advances without blocking; the result once complete.
    fn poll(&mut self) -> Option<Result<T, E>>;
    /// Advances until complete, blocking the calling thread.
    fn block(&mut self) -> Result<T, E>;
    /// The node whose engine its waits drive.
    fn node(&self) -> &Arc<NodeShared>;
}

pub(crate) enum State<T, E> {
    Ready(Result<T, E>),
    Scheduled(Box<dyn Schedule<T, E>>),
    Receiving(Receive),
    /// An announced send waiting for its receiver (`rendezvous`).
    Sending {
        shared: Arc<NodeShared>,
        done: Arc<Done>,
        to: Address,
    },
    Taken,
}

/// An operation under way, started by [`Endpoint::isend`](crate::Endpoint::isend)
/// or [`Endpoint::irecv`](crate::Endpoint::irecv). Complete it with
/// [`wait`](Request::wait), [`test`](Request::test), [`wait_all`] or
/// [`wait_any`]; dropping a pending receive withdraws it without losing a
/// message. Belongs to the thread that started it.
#[must_use = "a request does nothing unless waited for"]
pub struct Request<T, E> {
    pub(crate) state: State<T, E>,
    pub(crate) _not_send: PhantomData<*const ()>,
}

/// A send under way.
pub type SendRequest = Request<(), SendError>;
/// A receive under way.
pub type RecvRequest = Request<Message, RecvError>;
/// A receive into the caller's buffer under way
/// ([`Endpoint::irecv_into`](crate::Endpoint::irecv_into)): the buffer
/// comes back with the status, or with the error.
pub type RecvIntoRequest = Request<(Vec<u8>, Status), RecvIntoError>;

/// Why a receive into a buffer failed, with the buffer given back.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct RecvIntoError {
    /// What went wrong.
    pub error: RecvError,
    /// The caller's buffer (for [`RecvError::Truncated`], holding the
    /// message's first bytes).
    pub buffer: Vec<u8>,
}

impl<T, E> std::fmt::Debug for Request<T, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Ready(_) => "complete",
            State::Receiving(r) if r.is_ready() => "complete",
            State::Sending { done, .. } if done.is_done() => "complete",
            State::Receiving(_) | State::Sending { .. } | State::Scheduled(_) => "pending",
            State::Taken => "taken",
        };
        write!(f, "Request({state})")
    }
}

impl<T, E> Request<T, E> {
    pub(crate) fn ready(result: Result<T, E>) -> Self {
        Request {
            state: State::Ready(result),
            _not_send: PhantomData,
        }
    }

    /// A request for `schedule`, advanced once at once (so that its first
    /// messages leave now) and completed by whoever tests or waits.
    pub(crate) fn scheduled(mut schedule: Box<dyn Schedule<T, E>>) -> Self {
        let state = match schedule.poll() {
            Some(r) => State::Ready(r),
            None => State::Scheduled(schedule),
        };
        Request {
            state,
            _not_send: PhantomData,
        }
    }
}

/// How a request's result is taken out of the operation that completed.
pub trait Completion: Sized {
    #[doc(hidden)]
    #[allow(private_interfaces)]
    fn from_receive(r: &mut Receive) -> Self;
    #[doc(hidden)]
    fn from_send(r: Result<(), SendError>) -> Self;
}

impl Completion for Result<Message, RecvError> {
    #[allow(private_interfaces)]
    #[inline]
    fn from_receive(r: &mut Receive) -> Self {
        r.take().map(Got::into_message)
    }
    fn from_send(_: Result<(), SendError>) -> Self {
        unreachable!("a receive is no send")
    }
}

impl Completion for Result<(), SendError> {
    #[allow(private_interfaces)]
    fn from_receive(_: &mut Receive) -> Self {
        unreachable!("a send is no receive")
    }
    fn from_send(r: Result<(), SendError>) -> Self {
        r
    }
}

impl Completion for Result<(Vec<u8>, Status), RecvIntoError> {
    #[allow(private_interfaces)]
    fn from_receive(r: &mut Receive) -> Self {
        let got = r.take();
        let buffer = r.take_buffer();
        match got {
            Ok(got) => Ok((buffer, got.into_status())),
            Err(error) => Err(RecvIntoError { error, buffer }),
        }
    }
    fn from_send(_: Result<(), SendError>) -> Self {
        unreachable!("a receive is no send")
    }
}

impl<T> Completion for Result<T, crate::CollError> {
    #[allow(private_interfaces)]
    fn from_receive(_: &mut Receive) -> Self {
        unreachable!("collectives complete through their schedule")
    }
    fn from_send(_: Result<(), SendError>) -> Self {
        unreachable!("collectives complete through their schedule")
    }
}

/// The outcome of an announced send to `to`, once `done`.
pub(crate) fn send_outcome(done: &Done, to: Address) -> Result<(), SendError> {
    done.outcome().map_err(|lost| SendError::PeerLost {
        to,
        lost,
        payload: threadwire_wire::Payload::from_vec(Vec::new()),
    })
}

impl<T, E> Request<T, E>
where
    Result<T, E>: Completion,
{
    /// Whether complete, advancing the operation first (a schedule's
    /// steps, a receive's fetch) without waiting.
    pub(crate) fn advance(&mut self) -> bool {
        match &mut self.state {
            State::Ready(_) | State::Taken => true,
            State::Receiving(r) => r.advance(),
            State::Sending { done, .. } => done.is_done(),
            State::Scheduled(s) => match s.poll() {
                Some(r) => {
                    self.state = State::Ready(r);
                    true
                }
                None => false,
            },
        }
    }

    pub(crate) fn take(&mut self) -> Result<T, E> {
        match std::mem::replace(&mut self.state, State::Taken) {
            State::Ready(r) => r,
            State::Receiving(mut r) => <Result<T, E>>::from_receive(&mut r),
            State::Sending { shared, done, to } => {
                let origin = Self::sending_origin(&shared, to);
                shared
                    .engine
                    .wait_until(&shared.router, origin, || done.is_done());
                <Result<T, E>>::from_send(send_outcome(&done, to))
            }
            State::Scheduled(mut s) => s.block(),
            State::Taken => panic!("request result already taken"),
        }
    }

    fn origin(&self) -> Origin {
        match &self.state {
            State::Receiving(r) => r.origin,
            State::Sending { shared, to, .. } => Self::sending_origin(shared, *to),
            State::Scheduled(_) => Origin::Anywhere,
            _ => Origin::Local,
        }
    }

    /// Where the completion of a send to `to` comes from.
    fn sending_origin(shared: &NodeShared, to: Address) -> Origin {
        match to.node == shared.router.id {
            true => Origin::Local,
            false => Origin::Peer(to.node),
        }
    }

    fn shared(&self) -> Option<&Arc<NodeShared>> {
        match &self.state {
            State::Receiving(r) => Some(&r.shared),
            State::Sending { shared, .. } => Some(shared),
            State::Scheduled(s) => Some(s.node()),
            _ => None,
        }
    }

    /// Blocks the calling thread until the operation completes.
    pub fn wait(mut self) -> Result<T, E> {
        if let State::Receiving(r) = &mut self.state {
            r.wait();
        }
        self.take()
    }

    /// Waits until the operation completes or `timeout` passes: whether
    /// it completed (then [`wait`](Self::wait) returns at once). A receive
    /// that a message has matched is completed whatever the time; one
    /// that none has stays posted, to be waited on again or
    /// [cancelled](Self::cancel).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// let mut req = ep.irecv(threadwire::ANY_SOURCE, 7);
    /// assert!(!req.wait_timeout(Duration::from_millis(10)));
    /// ep.send(ep.address(), 7, b"late".to_vec()).unwrap();
    /// assert!(req.wait_timeout(Duration::from_secs(10)));
    /// assert_eq!(req.wait().unwrap().into_vec(), b"late");
    /// ```
    pub fn wait_timeout(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        if let State::Receiving(r) = &mut self.state {
            return r.wait_deadline(deadline);
        }
        if self.advance() {
            return true;
        }
        let Some(shared) = self.shared().cloned() else {
            return true;
        };
        let origin = self.origin();
        let done = || self.advance();
        shared.engine.wait_until_deadline(&shared.router, origin, done, deadline)
    }

    /// Cancels a receive that no message has matched yet: `true` if it
    /// was, and then [`wait`](Self::wait) returns
    /// [`RecvError::Cancelled`] (as `MPI_Cancel` followed by a wait). A
    /// receive already matched — and any send — is not cancelled and
    /// completes as usual.
    pub fn cancel(&mut self) -> bool {
        match &mut self.state {
            State::Receiving(r) => r.cancel(),
            _ => false,
        }
    }

    /// Makes progress without blocking; `true` when complete (then `wait`
    /// returns at once).
    pub fn test(&mut self) -> bool {
        if self.advance() {
            return true;
        }
        if let Some(shared) = self.shared().cloned() {
            shared.engine.try_progress(&shared.router);
        }
        self.advance()
    }
}

/// Waits for every request; results in the same order.
pub fn wait_all<T, E>(requests: Vec<Request<T, E>>) -> Vec<Result<T, E>>
where
    Result<T, E>: Completion,
{
    requests.into_iter().map(Request::wait).collect()
}

/// Waits until one of `requests` completes, removes it and returns its
/// index and result; `None` when `requests` is empty.
pub fn wait_any<T, E>(requests: &mut Vec<Request<T, E>>) -> Option<(usize, Result<T, E>)>
where
    Result<T, E>: Completion,
{
    if requests.is_empty() {
        return None;
    }
    if let Some(i) = requests.iter_mut().position(Request::advance) {
        return Some((i, requests.remove(i).take()));
    }
    let shared = requests
        .iter()
        .find_map(|r| r.shared().cloned())
        .expect("a pending request has a node");
    let origin = Origin::combine(requests.iter().map(Request::origin));
    let mut found = None;
    shared.engine.wait_until(&shared.router, origin, || {
        found = requests.iter_mut().position(Request::advance);
        found.is_some()
    });
    let i = found.expect("wait ended on a completed request");
    Some((i, requests.remove(i).take()))
}

/// Copies a received message into `buf`: its status, or
/// [`RecvError::Truncated`] with `buf` holding the first bytes.
pub(crate) fn fill(message: Message, buf: &mut [u8]) -> Result<Status, RecvError> {
    let status = message.status();
    message.payload().copy_to(buf);
    if status.len > buf.len() {
        return Err(RecvError::Truncated {
            status,
            capacity: buf.len(),
        });
    }
    Ok(status)
}

