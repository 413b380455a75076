//! The TCP channel: one connection per node pair, non-blocking, framed.
//!
//! Senders write from their own thread: a send on an idle connection goes
//! straight to the socket with one vectored write (header and payload
//! segments, no copy); whatever the socket does not take is queued and the
//! progress engine finishes it when the socket becomes writable. Frames are
//! never interleaved: a frame is queued whole, behind the ones before it.
//!
//! Senders that meet on one connection combine their writes:
//!
//! 1. A sender takes the writer with `try_lock`. If it gets it, it first
//!    moves every frame handed over (step 2) into the queue, then writes
//!    the queue and its own frame together: one `writev` for all.
//! 2. A sender that finds the writer busy does not wait for it: it hands
//!    its frame over and returns. The frame is accepted (`Queued`); a
//!    failure to write it shows as the connection's loss, as for any
//!    queued frame.
//! 3. Whoever releases the writer (a sender, or the engine's `flush`)
//!    looks at the handed-over bytes once more and, if any, takes the
//!    writer again to write them: a frame handed over just before the
//!    release is never left behind. A SeqCst fence between the release and
//!    the look, and between the hand-over and the sender's own second
//!    `try_lock`, makes sure one of the two sees the other.
//!
//! One thread's frames keep their order: each is either written by its
//! sender after everything handed over before it, or handed over behind
//! its predecessors. Under contention a `writev` carries many frames, so
//! the message rate grows with the number of sending threads instead of
//! being one system call per message.
//!
//! Receiving is done by the progress engine alone ([`TcpChannel::receive`]);
//! small frames are parsed out of one 64 KiB buffer per read, large payloads
//! are read straight into their own allocation, and the bulk frame of a
//! rendezvous straight into the buffer its receiver registered
//! ([`TcpChannel::place`]).
//!
//! How long a connection has been quiet each way ([`TcpChannel::quiet`])
//! is the kernel's count, not the channel's: it costs the senders and the
//! reader nothing, and it goes on counting bytes that arrive while nobody
//! reads them.
//!
//! A connection that streams small frames corks (`cork`, steps 1–4):
//! its frames share packets until its owner uncorks it.
//!
//! A connection whose two ends are on this host uses Reno congestion
//! control, whatever the system's default (`SAME_HOST_CONGESTION_CONTROL`
//! says why).

mod cork;
mod reader;
mod writer;

pub use cork::{Corking, CORK_AFTER};

use mio::net::TcpStream;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;
use threadwire_wire::{FrameBytes, FrameError, FrameHeader, Payload};

use cork::Cork;
use reader::FrameReader;
use writer::{Handoff, WriteQueue};

/// A frame as received: header and the payload's bytes.
#[derive(Debug)]
pub struct Frame {
    /// The validated header.
    pub header: FrameHeader,
    /// Exactly `header.len` bytes; short ones in place (no allocation).
    pub payload: FrameBytes,
}

/// Why a channel stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChannelError {
    /// The peer closed the connection at a frame boundary.
    #[error("connection closed by peer")]
    Closed,
    /// The connection failed, or closed in the middle of a frame.
    #[error("connection failed: {0}")]
    Io(#[from] io::Error),
    /// The peer sent a frame this node refuses.
    #[error("malformed frame: {0}")]
    Frame(#[from] FrameError),
    /// A shared-memory channel's peer broke the protocol, or its memory
    /// could not be read.
    #[cfg(not(loom))]
    #[error(transparent)]
    Shm(#[from] crate::shm::ShmError),
}

/// What [`TcpChannel::send`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcome {
    /// The socket took the whole frame.
    Written,
    /// Part or all of the frame waits in the queue for the socket.
    Queued,
}

/// What [`TcpChannel::receive`] left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// The socket had nothing: not a byte was read.
    Empty,
    /// Bytes were read (whole frames or part of one), and the socket has
    /// nothing more for now.
    Drained,
    /// The read budget ran out with data left: call again without waiting
    /// for readiness (edge-triggered polling will not report it again).
    More,
}

/// How long a connection has carried no data, each way
/// ([`TcpChannel::quiet`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quiet {
    /// Since the kernel last received data from the peer (read or not).
    pub received: Duration,
    /// Since the kernel last sent data to the peer.
    pub sent: Duration,
}

/// A framed, authenticated TCP connection to one peer node.
pub struct TcpChannel {
    stream: TcpStream,
    writer: Mutex<WriteQueue>,
    /// Frames of senders that found the writer busy (combining step 2).
    handoff: Handoff,
    reader: Mutex<FrameReader>,
    cork: Cork,
}

impl TcpChannel {
    /// Wraps an authenticated stream; frames longer than `max_frame` are refused.
    pub fn new(stream: std::net::TcpStream, max_frame: u64) -> io::Result<TcpChannel> {
        stream.set_nonblocking(true)?;
        Self::from_mio(TcpStream::from_std(stream), max_frame)
    }

    /// Wraps an authenticated non-blocking mio stream.
    pub fn from_mio(stream: TcpStream, max_frame: u64) -> io::Result<TcpChannel> {
        stream.set_nodelay(true)?;
        if same_host(&stream) {
            if let Err(e) = set_congestion_control(&stream, SAME_HOST_CONGESTION_CONTROL) {
                tracing::debug!(
                    "keeping the system's congestion control on a same-host connection: {e}"
                );
            }
        }
        Ok(TcpChannel {
            stream,
            writer: Mutex::new(WriteQueue::default()),
            handoff: Handoff::default(),
            reader: Mutex::new(FrameReader::new(max_frame)),
            cork: Cork::default(),
        })
    }

    /// Registers the connection for readable and writable readiness.
    pub fn register(&mut self, registry: &mio::Registry, token: mio::Token) -> io::Result<()> {
        registry.register(
            &mut self.stream,
            token,
            mio::Interest::READABLE | mio::Interest::WRITABLE,
        )
    }

    /// Registers the connection like [`register`](Self::register), once it
    /// is shared: a channel made visible to other threads first and
    /// registered after loses no readiness, as registering reports what is
    /// ready already.
    pub fn register_shared(&self, registry: &mio::Registry, token: mio::Token) -> io::Result<()> {
        registry.register(
            &mut mio::unix::SourceFd(&self.stream.as_raw_fd()),
            token,
            mio::Interest::READABLE | mio::Interest::WRITABLE,
        )
    }

    /// Removes the connection from `registry`.
    pub fn deregister(&mut self, registry: &mio::Registry) -> io::Result<()> {
        registry.deregister(&mut self.stream)
    }

    /// Sends one frame. On failure nothing of the frame was written and the
    /// payload is given back.
    pub fn send(
        &self,
        header: &FrameHeader,
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        let Some(mut queue) = self.try_writer() else {
            // Combining step 2.
            self.handoff.push(header.encode(), payload);
            fence(Ordering::SeqCst);
            self.write_handed_over();
            self.cork.sent(&self.stream, header.len);
            return Ok(SendOutcome::Queued);
        };
        // Step 1.
        queue.absorb(&self.handoff);
        let outcome = queue.send(&self.stream, header.encode(), payload);
        drop(queue);
        self.write_handed_over();
        if outcome.is_ok() {
            self.cork.sent(&self.stream, header.len);
        }
        outcome
    }

    /// Lets the channel cork while it streams, counted by `watch`
    /// (`cork`, step 2); a channel never watched never corks. Only the
    /// first watch given counts.
    pub fn watch_corking(&self, watch: Arc<Corking>) {
        self.cork.watch(watch);
    }

    /// Uncorks the channel (`cork`, step 4): what Nagle's algorithm holds
    /// leaves at once. `true` if it was corked; costs one load otherwise.
    #[inline]
    pub fn uncork(&self) -> bool {
        self.cork.uncork(&self.stream)
    }

    /// Uncorks the channel if it sent nothing since the last call
    /// (`cork`, step 4): a timer's look at a stream that may have ended.
    pub fn uncork_if_idle(&self) -> bool {
        self.cork.uncork_if_idle(&self.stream)
    }

    /// Whether the channel is corked.
    pub fn is_corked(&self) -> bool {
        self.cork.is_corked()
    }

    /// Writes queued frames until the socket is full. `Ok(true)` when the
    /// queue is empty.
    pub fn flush(&self) -> Result<bool, ChannelError> {
        let mut queue = lock(&self.writer);
        queue.absorb(&self.handoff);
        let flushed = queue.flush(&self.stream);
        drop(queue);
        self.write_handed_over();
        flushed.map(|empty| empty && self.handoff.bytes() == 0)
    }

    /// Bytes waiting in the send queue, handed-over frames included.
    pub fn queued_bytes(&self) -> usize {
        lock(&self.writer).queued_bytes() + self.handoff.bytes()
    }

    /// The writer, unless another thread holds it.
    fn try_writer(&self) -> Option<std::sync::MutexGuard<'_, WriteQueue>> {
        match self.writer.try_lock() {
            Ok(queue) => Some(queue),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Combining step 3, after releasing the writer (or handing a frame
    /// over): writes what was handed over meanwhile, unless another thread
    /// holds the writer, which then does it on its release. A failure marks
    /// the queue broken; the next send and the read side report it.
    fn write_handed_over(&self) {
        fence(Ordering::SeqCst);
        while self.handoff.bytes() > 0 {
            let Some(mut queue) = self.try_writer() else {
                return;
            };
            queue.absorb(&self.handoff);
            let _ = queue.flush(&self.stream);
            drop(queue);
            fence(Ordering::SeqCst);
        }
    }

    /// Reads available frames and hands each to `on_frame`.
    pub fn receive(&self, on_frame: impl FnMut(Frame)) -> Result<ReadOutcome, ChannelError> {
        let outcome = lock(&self.reader).receive(&self.stream, on_frame);
        if !matches!(outcome, Ok(ReadOutcome::Empty)) {
            // `cork`, step 3.
            self.cork.heard();
        }
        outcome
    }

    /// Registers `len` bytes at `buffer` for the bulk frame
    /// ([`FrameKind::Bulk`](threadwire_wire::FrameKind::Bulk)) of receive
    /// `id`: its payload is read straight into them, and
    /// [`receive`](Self::receive) reports the frame with an empty payload
    /// (`header.len` bytes placed). A bulk frame longer than `len` fails
    /// the channel; one with no buffer registered arrives as any frame.
    ///
    /// # Safety
    ///
    /// The `len` bytes at `buffer` must stay valid for writes, and be
    /// neither read nor written by anyone else, until the frame has been
    /// reported or [`unplace`](Self::unplace) with the same id has
    /// returned.
    pub unsafe fn place(&self, id: u64, buffer: *mut u8, len: usize) {
        // SAFETY: the caller's contract is the placement's.
        let placement = unsafe { reader::Placement::new(buffer, len) };
        lock(&self.reader).place(id, placement);
    }

    /// [`place`](Self::place) unless the reader is busy at this moment —
    /// perhaps with the very frame whose handling calls this, which holds
    /// it: then `false`, nothing is placed, and the frame arrives in a
    /// buffer of its own.
    ///
    /// # Safety
    ///
    /// As for [`place`](Self::place), when it returns `true`.
    pub unsafe fn try_place(&self, id: u64, buffer: *mut u8, len: usize) -> bool {
        let Some(mut reader) = try_lock(&self.reader) else {
            return false;
        };
        // SAFETY: the caller's contract is the placement's.
        let placement = unsafe { reader::Placement::new(buffer, len) };
        reader.place(id, placement);
        true
    }

    /// [`unplace`](Self::unplace) unless the reader is busy at this
    /// moment: `false` then, and the buffer may still be written.
    pub fn try_unplace(&self, id: u64) -> bool {
        match try_lock(&self.reader) {
            Some(mut reader) => {
                reader.unplace(id);
                true
            }
            None => false,
        }
    }

    /// Withdraws the buffer of receive `id`: once this returns nothing
    /// writes to it any more (what of its frame is still to come is read
    /// and dropped).
    pub fn unplace(&self, id: u64) {
        lock(&self.reader).unplace(id);
    }

    /// How long the connection has carried no data each way, from the
    /// kernel's `TCP_INFO` (millisecond resolution at best, one clock tick
    /// at worst): one system call, and nothing on the send or receive path.
    pub fn quiet(&self) -> io::Result<Quiet> {
        quiet(&self.stream)
    }

    /// Closes both directions; the peer sees end of stream. Every frame
    /// still queued is dropped by the time this returns (so the owner of
    /// borrowed bytes in one may stop waiting for them).
    pub fn close(&self) {
        self.cork.uncork(&self.stream);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        let mut queue = lock(&self.writer);
        queue.absorb(&self.handoff);
        queue.close();
    }
}

/// [`TcpChannel::quiet`] for any TCP socket (the launcher's control
/// connections, which are not channels).
pub fn quiet(socket: &impl AsRawFd) -> io::Result<Quiet> {
    // SAFETY: `tcp_info` is plain old data; all zeroes is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `info`, which is
    // that long, and stores the length it wrote in `len`.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Quiet {
        received: Duration::from_millis(info.tcpi_last_data_recv.into()),
        sent: Duration::from_millis(info.tcpi_last_data_sent.into()),
    })
}

/// The congestion control of a connection within one host. Over loopback
/// there is no queue to control, and with BBR (the system default on some
/// hosts) a 1 MiB `writev` took 243–284 µs against 102–110 µs with Reno,
/// its segments leaving two per returning ACK; the receiver follows the
/// sender, so the one-way time doubled from 1 MiB up (222 against 117 µs;
/// docs/PERFORMANCE-STUDIES.md, "TCP: the cliff between 512 KiB and
/// 1 MiB"). Reno is always built in and open to unprivileged processes.
const SAME_HOST_CONGESTION_CONTROL: &str = "reno";

/// Whether both ends of `stream` are on this host: a loopback peer, or a
/// peer at this end's own address (which Linux routes through loopback).
fn same_host(stream: &TcpStream) -> bool {
    match (stream.local_addr(), stream.peer_addr()) {
        (Ok(local), Ok(peer)) => peer.ip().is_loopback() || peer.ip() == local.ip(),
        _ => false,
    }
}

fn set_congestion_control(stream: &TcpStream, name: &str) -> io::Result<()> {
    // SAFETY: the option value is `name.len()` readable bytes; the kernel
    // copies them and keeps no pointer.
    let r = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Locks `m`; a panic elsewhere while holding it leaves the queue consistent
/// (every mutation is completed before any call that could panic).
fn try_lock<T>(m: &Mutex<T>) -> Option<std::sync::MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(guard) => Some(guard),
        Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
