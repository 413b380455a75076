//! Matched probes: a message taken out of matching before it is received
//! ([`Endpoint::mprobe`](crate::Endpoint::mprobe), MPI's `MPI_Mprobe`), so
//! that no later receive — a wildcard one included — can get it first.

use crate::node::NodeShared;
use crate::receive::{Dest, Got, Receive};
use crate::{Message, RecvError, Status};
use std::marker::PhantomData;
use std::sync::Arc;

/// A message matched by a probe and held for this thread: its status is
/// known, and only [`mrecv`](Self::mrecv) or
/// [`mrecv_into`](Self::mrecv_into) receive it. Dropped unreceived, the
/// message is received and discarded (its sender is not left waiting).
#[must_use = "a matched message is received with mrecv or mrecv_into"]
pub struct Matched {
    shared: Arc<NodeShared>,
    thread: u32,
    message: Option<Message>,
    _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for Matched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Matched({:?})", self.message.as_ref().map(Message::status))
    }
}

impl Matched {
    pub(crate) fn new(shared: Arc<NodeShared>, thread: u32, message: Message) -> Matched {
        Matched {
            shared,
            thread,
            message: Some(message),
            _not_send: PhantomData,
        }
    }

    /// Sender, tag and length of the matched message.
    pub fn status(&self) -> Status {
        self.message.as_ref().expect("held until received").status()
    }

    /// Receives the matched message (MPI's `MPI_Mrecv`).
    pub fn mrecv(mut self) -> Result<Message, RecvError> {
        self.receive(Dest::Owned).take().map(Got::into_message)
    }

    /// Receives the matched message into `buf`, as
    /// [`Endpoint::recv_into`](crate::Endpoint::recv_into).
    pub fn mrecv_into(mut self, buf: &mut [u8]) -> Result<Status, RecvError> {
        let dest = Dest::Slice {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
        };
        // Finished or dropped here, before `buf`'s borrow ends.
        self.receive(dest).take().map(Got::into_status)
    }

    fn receive(&mut self, dest: Dest) -> Receive {
        let m = self.message.take().expect("received once");
        Receive::matched(self.shared.clone(), self.thread, m, dest)
    }
}

impl Drop for Matched {
    fn drop(&mut self) {
        if self.message.is_some() {
            let _ = self.receive(Dest::Owned).take();
        }
    }
}
