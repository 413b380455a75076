//! The node side of `bench flood`: node 0 sends, node 1 receives late
//! (steps 2–4 of the [module docs](super)).

use super::{Options, Role, Side};
use crate::node_result::NodeResult;
use crate::pingpong::Receive;
use std::time::Instant;
use threadwire::{Address, Endpoint, InitError, RecvError, ReportError, SendError};

const TAG: u32 = 0xf100d;
/// Node 1 to node 0: every message is in.
const DONE: u32 = TAG + 1;

/// Why a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// `init` failed.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// A send failed.
    #[error("sending")]
    Send(#[source] SendError),
    /// A receive failed.
    #[error("receiving")]
    Recv(#[source] RecvError),
    /// A message was not the one expected.
    #[error("message {index}: {len} bytes with index {found:?}, expected {size} bytes")]
    Unexpected {
        /// Its place in the flood.
        index: u64,
        /// Its length.
        len: usize,
        /// The index it carried, if it had 8 bytes.
        found: Option<u64>,
        /// The length expected.
        size: usize,
    },
    /// The peak resident set could not be read.
    #[error("reading VmHWM")]
    Memory(#[source] std::io::Error),
    /// The result could not be reported to the launcher.
    #[error("reporting the result")]
    Report(#[source] ReportError),
}

/// Runs this node's part of the job [`run`](super::run) started with
/// `options`.
pub fn node(options: &Options) -> Result<(), NodeError> {
    let ep = threadwire::init().map_err(NodeError::Init)?;
    let side = match ep.address().node {
        0 => send(&ep, options)?,
        1 => receive(&ep, options)?,
        _ => return Ok(()),
    };
    NodeResult::Flood(side)
        .send(ep.node())
        .map_err(NodeError::Report)
}

fn peak() -> Result<u64, NodeError> {
    crate::system::peak_resident_bytes().map_err(NodeError::Memory)
}

/// Node 0: `count` blocking sends of one buffer, borrowed; the peak is
/// read once node 1 has every message.
fn send(ep: &Endpoint, options: &Options) -> Result<Side, NodeError> {
    let receiver = Address::new(1, 0);
    let mut buf = vec![0x5au8; options.size];
    let start_bytes = peak()?;
    let started = Instant::now();
    for index in 0..options.count {
        if let Some(head) = buf.get_mut(..8) {
            head.copy_from_slice(&index.to_le_bytes());
        }
        ep.send(receiver, TAG, &buf[..]).map_err(NodeError::Send)?;
    }
    let time = started.elapsed();
    ep.recv(receiver, DONE).map_err(NodeError::Recv)?;
    Ok(Side {
        role: Role::Sender,
        messages: options.count,
        time,
        start_bytes,
        peak_bytes: peak()?,
    })
}

/// Node 1: starts `delay` late, receives and checks every message.
fn receive(ep: &Endpoint, options: &Options) -> Result<Side, NodeError> {
    let sender = Address::new(0, 0);
    let size = options.size;
    // The buffer of `recv_into`, filled so that it is resident before the
    // start is read, as the sender's is.
    let mut buf = match options.receive {
        Receive::Into => vec![0xa5u8; size],
        Receive::Owned => Vec::new(),
    };
    let start_bytes = peak()?;
    // The late receiver is the point: this thread does nothing for the delay.
    std::thread::sleep(options.delay);
    let started = Instant::now();
    let mut messages = 0;
    for index in 0..options.count {
        let owned;
        let (len, bytes) = match options.receive {
            Receive::Into => {
                let status = ep
                    .recv_into(sender, TAG, &mut buf)
                    .map_err(NodeError::Recv)?;
                (status.len, &buf[..status.len])
            }
            Receive::Owned => {
                owned = ep.recv(sender, TAG).map_err(NodeError::Recv)?.into_vec();
                (owned.len(), &owned[..])
            }
        };
        let found = bytes
            .get(..8)
            .map(|h| u64::from_le_bytes(h.try_into().expect("8 bytes")));
        if len != size || (size >= 8 && found != Some(index)) {
            return Err(NodeError::Unexpected {
                index,
                len,
                found,
                size,
            });
        }
        messages += 1;
    }
    let time = started.elapsed();
    ep.send(sender, DONE, Vec::new()).map_err(NodeError::Send)?;
    Ok(Side {
        role: Role::Receiver,
        messages,
        time,
        start_bytes,
        peak_bytes: peak()?,
    })
}
