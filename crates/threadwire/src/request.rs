//! Non-blocking operations: requests and the ways to complete them.

use crate::error::{RecvError, SendError};
use crate::mailbox::RecvSlot;
use crate::node::NodeShared;
use crate::progress::Origin;
use crate::{Message, Status};
use std::marker::PhantomData;
use std::sync::Arc;

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
    Receiving {
        shared: Arc<NodeShared>,
        thread: u32,
        slot: Arc<RecvSlot>,
        origin: Origin,
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
            State::Receiving { slot, .. } if slot.is_done() => "complete",
            State::Receiving { .. } | State::Scheduled(_) => "pending",
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

/// How a request's result is taken out of a completed receive slot.
pub trait Completion: Sized {
    #[doc(hidden)]
    fn from_slot(r: Result<Message, RecvError>) -> Self;
}

impl Completion for Result<Message, RecvError> {
    fn from_slot(r: Result<Message, RecvError>) -> Self {
        r
    }
}

impl Completion for Result<(), SendError> {
    fn from_slot(_: Result<Message, RecvError>) -> Self {
        unreachable!("sends complete at once")
    }
}

impl Completion for Result<(Vec<u8>, Status), RecvIntoError> {
    fn from_slot(_: Result<Message, RecvError>) -> Self {
        unreachable!("receives into a buffer complete through their schedule")
    }
}

impl<T> Completion for Result<T, crate::CollError> {
    fn from_slot(_: Result<Message, RecvError>) -> Self {
        unreachable!("collectives complete through their schedule")
    }
}

impl<T, E> Request<T, E>
where
    Result<T, E>: Completion,
{
    pub(crate) fn is_done(&self) -> bool {
        match &self.state {
            State::Ready(_) | State::Taken => true,
            State::Receiving { slot, .. } => slot.is_done(),
            State::Scheduled(_) => false,
        }
    }

    /// [`is_done`](Self::is_done), advancing a schedule first.
    fn advance(&mut self) -> bool {
        if let State::Scheduled(s) = &mut self.state {
            match s.poll() {
                Some(r) => self.state = State::Ready(r),
                None => return false,
            }
        }
        self.is_done()
    }

    pub(crate) fn take(&mut self) -> Result<T, E> {
        match std::mem::replace(&mut self.state, State::Taken) {
            State::Ready(r) => r,
            State::Receiving { slot, .. } => {
                // SAFETY: a request belongs to the thread that posted the
                // receive (it is not `Send`): the slot's owner.
                let r = unsafe { slot.take() }.expect("a done slot holds its result");
                <Result<T, E>>::from_slot(r)
            }
            State::Scheduled(mut s) => s.block(),
            State::Taken => panic!("request result already taken"),
        }
    }

    fn origin(&self) -> Origin {
        match self.state {
            State::Receiving { origin, .. } => origin,
            State::Scheduled(_) => Origin::Anywhere,
            _ => Origin::Local,
        }
    }

    fn shared(&self) -> Option<&Arc<NodeShared>> {
        match &self.state {
            State::Receiving { shared, .. } => Some(shared),
            State::Scheduled(s) => Some(s.node()),
            _ => None,
        }
    }

    /// Blocks the calling thread until the operation completes.
    pub fn wait(mut self) -> Result<T, E> {
        // Borrowed, not cloned: an `Arc` clone is two locked instructions
        // on the latency path.
        if let State::Receiving {
            shared,
            slot,
            origin,
            ..
        } = &self.state
        {
            shared
                .engine
                .wait_until(&shared.router, *origin, || slot.is_done());
        }
        self.take()
    }

    /// Makes progress without blocking; `true` when complete (then `wait`
    /// returns at once).
    pub fn test(&mut self) -> bool {
        if !self.is_done() {
            if let Some(shared) = self.shared().cloned() {
                shared.engine.try_progress(&shared.router);
            }
        }
        self.advance()
    }
}

impl<T, E> Drop for Request<T, E> {
    fn drop(&mut self) {
        if let State::Receiving {
            shared,
            thread,
            slot,
            ..
        } = &self.state
        {
            if let Some(mailbox) = shared.router.mailboxes.get(*thread) {
                mailbox.cancel(slot);
            }
        }
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
    let mut at = 0;
    for segment in message.payload().segments() {
        let n = segment.len().min(buf.len() - at);
        buf[at..at + n].copy_from_slice(&segment[..n]);
        at += n;
    }
    if status.len > buf.len() {
        return Err(RecvError::Truncated {
            status,
            capacity: buf.len(),
        });
    }
    Ok(status)
}

/// A receive whose message lands in the caller's buffer.
struct IntoBuffer {
    shared: Arc<NodeShared>,
    receive: Option<RecvRequest>,
    buffer: Vec<u8>,
}

impl IntoBuffer {
    fn finish(&mut self, r: Result<Message, RecvError>) -> Result<(Vec<u8>, Status), RecvIntoError> {
        let mut buffer = std::mem::take(&mut self.buffer);
        match r.and_then(|m| fill(m, &mut buffer)) {
            Ok(status) => Ok((buffer, status)),
            Err(error) => Err(RecvIntoError { error, buffer }),
        }
    }
}

impl Schedule<(Vec<u8>, Status), RecvIntoError> for IntoBuffer {
    fn poll(&mut self) -> Option<Result<(Vec<u8>, Status), RecvIntoError>> {
        let receive = self.receive.as_mut()?;
        if !receive.test() {
            return None;
        }
        let r = self.receive.take()?.take();
        Some(self.finish(r))
    }

    fn block(&mut self) -> Result<(Vec<u8>, Status), RecvIntoError> {
        let receive = self.receive.take().expect("blocked on once");
        let r = receive.wait();
        self.finish(r)
    }

    fn node(&self) -> &Arc<NodeShared> {
        &self.shared
    }
}

pub(crate) fn into_buffer(shared: Arc<NodeShared>, receive: RecvRequest, buffer: Vec<u8>) -> RecvIntoRequest {
    Request::scheduled(Box::new(IntoBuffer {
        shared,
        receive: Some(receive),
        buffer,
    }))
}
