//! The send queue of a TCP channel and its vectored writes.

use super::{lock, ChannelError, SendOutcome};
use std::collections::VecDeque;
use std::io::{self, IoSlice, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use threadwire_wire::{Payload, HEADER_LEN};

/// At most this many buffers per `writev` (Linux allows 1024; more than a
/// few dozen gains nothing).
const MAX_IOV: usize = 64;

struct Outgoing {
    header: [u8; HEADER_LEN],
    payload: Payload,
}

impl Outgoing {
    /// Drops the frame unwritten: a borrowed payload's owner learns that
    /// its bytes never left.
    fn discard(mut self) {
        self.payload.mark_undelivered();
    }

    fn len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }

    /// Appends this frame's buffers past its first `skip` bytes to `iov`.
    fn gather<'a>(&'a self, mut skip: usize, iov: &mut Vec<IoSlice<'a>>) {
        for part in std::iter::once(&self.header[..]).chain(self.payload.segments()) {
            if iov.len() == MAX_IOV {
                return;
            }
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            iov.push(IoSlice::new(&part[skip..]));
            skip = 0;
        }
    }
}

/// Frames handed over by senders that found the writer busy (combining
/// steps in the module docs of `tcp`): the writer takes them all and
/// writes them with its own in one `writev`.
#[derive(Default)]
pub(super) struct Handoff {
    items: Mutex<Vec<Outgoing>>,
    /// Bytes of the frames in `items`: counted before a frame goes in, so
    /// that a look at it alone tells whether anything may be waiting.
    bytes: AtomicUsize,
}

impl Handoff {
    /// Hands a frame over, to be written in order behind those before it.
    pub(super) fn push(&self, header: [u8; HEADER_LEN], payload: Payload) {
        let item = Outgoing { header, payload };
        self.bytes.fetch_add(item.len(), Ordering::SeqCst);
        lock(&self.items).push(item);
    }

    /// Bytes handed over and not yet taken by the writer.
    pub(super) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::SeqCst)
    }
}

#[derive(Default)]
pub(super) struct WriteQueue {
    items: VecDeque<Outgoing>,
    /// Bytes of the front item already written.
    offset: usize,
    queued: usize,
    broken: bool,
}

impl Drop for WriteQueue {
    fn drop(&mut self) {
        self.discard();
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        let items = std::mem::take(self.items.get_mut().unwrap_or_else(|e| e.into_inner()));
        items.into_iter().for_each(Outgoing::discard);
    }
}

impl WriteQueue {
    pub(super) fn queued_bytes(&self) -> usize {
        self.queued
    }

    /// The connection is closed: nothing more is written, and every frame
    /// queued is dropped at once (its payload may be a caller's bytes,
    /// whose owner waits for that).
    pub(super) fn close(&mut self) {
        self.broken = true;
        self.discard();
    }

    /// Drops every frame queued: the stream is broken. (A front frame
    /// partly written counts as undelivered too: the peer drops the
    /// truncated frame.)
    fn discard(&mut self) {
        self.items.drain(..).for_each(Outgoing::discard);
        self.offset = 0;
        self.queued = 0;
    }

    /// Moves the frames handed over into the queue, behind its own, in
    /// the order they were handed over.
    pub(super) fn absorb(&mut self, handoff: &Handoff) {
        if handoff.bytes() == 0 {
            return;
        }
        let items = std::mem::take(&mut *lock(&handoff.items));
        let bytes: usize = items.iter().map(Outgoing::len).sum();
        handoff.bytes.fetch_sub(bytes, Ordering::SeqCst);
        if self.broken {
            items.into_iter().for_each(Outgoing::discard);
            return;
        }
        self.queued += bytes;
        self.items.extend(items);
    }

    pub(super) fn send(
        &mut self,
        mut stream: impl Write,
        header: [u8; HEADER_LEN],
        payload: Payload,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        if self.broken {
            return Err((io::Error::from(io::ErrorKind::BrokenPipe).into(), payload));
        }
        let item = Outgoing { header, payload };
        if !self.items.is_empty() {
            self.queued += item.len();
            self.items.push_back(item);
            // The frame is queued and so accepted; a failure now shows on the
            // next send and on the connection's read side.
            return match self.flush(stream) {
                Ok(true) => Ok(SendOutcome::Written),
                _ => Ok(SendOutcome::Queued),
            };
        }
        let mut written = 0;
        while written < item.len() {
            let mut iov = Vec::with_capacity(8);
            item.gather(written, &mut iov);
            match stream.write_vectored(&iov) {
                Ok(0) => {
                    return self.fail_unwritten(written, item, io::ErrorKind::WriteZero.into())
                }
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return self.fail_unwritten(written, item, e),
            }
        }
        if written == item.len() {
            return Ok(SendOutcome::Written);
        }
        self.offset = written;
        self.queued += item.len() - written;
        self.items.push_back(item);
        Ok(SendOutcome::Queued)
    }

    fn fail_unwritten(
        &mut self,
        written: usize,
        item: Outgoing,
        e: io::Error,
    ) -> Result<SendOutcome, (ChannelError, Payload)> {
        self.close();
        if written == 0 {
            let mut payload = item.payload;
            payload.mark_undelivered();
            Err((e.into(), payload))
        } else {
            // Part of the frame is on the wire; the stream is now unusable
            // and the peer will see a truncated frame and drop the connection.
            item.discard();
            Err((e.into(), Payload::from_vec(Vec::new())))
        }
    }

    pub(super) fn flush(&mut self, mut stream: impl Write) -> Result<bool, ChannelError> {
        if self.broken {
            return Err(io::Error::from(io::ErrorKind::BrokenPipe).into());
        }
        while !self.items.is_empty() {
            let mut iov = Vec::with_capacity(MAX_IOV);
            let mut skip = self.offset;
            for item in &self.items {
                item.gather(skip, &mut iov);
                skip = 0;
                if iov.len() == MAX_IOV {
                    break;
                }
            }
            let mut n = match stream.write_vectored(&iov) {
                Ok(0) => {
                    drop(iov);
                    self.close();
                    return Err(io::Error::from(io::ErrorKind::WriteZero).into());
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => {
                    drop(iov);
                    self.close();
                    return Err(e.into());
                }
            };
            drop(iov);
            self.queued -= n;
            while n > 0 {
                let front_left = self.items[0].len() - self.offset;
                if n >= front_left {
                    n -= front_left;
                    self.items.pop_front();
                    self.offset = 0;
                } else {
                    self.offset += n;
                    n = 0;
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU8;
    use std::sync::Arc;

    /// A socket whose buffer takes `room` bytes, then would block.
    struct Sink {
        room: usize,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            match self.room.min(buf.len()) {
                0 => Err(io::ErrorKind::WouldBlock.into()),
                n => {
                    self.room -= n;
                    Ok(n)
                }
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A borrowed payload that records how it was released: 0 not yet,
    /// 1 undelivered, 2 delivered.
    fn borrowed(bytes: &[u8]) -> (Payload, Arc<AtomicU8>) {
        let seen = Arc::new(AtomicU8::new(0));
        let on_release = seen.clone();
        // SAFETY: every test keeps `bytes` alive past the payload.
        let payload = unsafe {
            Payload::borrowed_until(
                bytes,
                Box::new(move |delivered| on_release.store(1 + delivered as u8, Ordering::SeqCst)),
            )
        };
        (payload, seen)
    }

    #[test]
    fn a_frame_written_whole_is_delivered() {
        let bytes = vec![1u8; 1000];
        let (payload, seen) = borrowed(&bytes);
        let mut queue = WriteQueue::default();
        let outcome = queue.send(Sink { room: 1 << 20 }, [0; HEADER_LEN], payload);
        assert!(matches!(outcome, Ok(SendOutcome::Written)));
        assert_eq!(seen.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_frame_queued_and_then_closed_is_undelivered() {
        let bytes = vec![1u8; 1000];
        let (payload, seen) = borrowed(&bytes);
        let mut queue = WriteQueue::default();
        // Half written, the rest queued.
        let outcome = queue.send(Sink { room: 500 }, [0; HEADER_LEN], payload);
        assert!(matches!(outcome, Ok(SendOutcome::Queued)));
        assert_eq!(seen.load(Ordering::SeqCst), 0, "still referred to");
        queue.close();
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_frame_handed_over_to_a_broken_queue_is_undelivered() {
        let bytes = vec![1u8; 1000];
        let (payload, seen) = borrowed(&bytes);
        let mut queue = WriteQueue::default();
        queue.close();
        let handoff = Handoff::default();
        handoff.push([0; HEADER_LEN], payload);
        queue.absorb(&handoff);
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_queue_dropped_with_frames_leaves_them_undelivered() {
        let bytes = vec![1u8; 1000];
        let (payload, seen) = borrowed(&bytes);
        let mut queue = WriteQueue::default();
        let outcome = queue.send(Sink { room: 0 }, [0; HEADER_LEN], payload);
        assert!(matches!(outcome, Ok(SendOutcome::Queued)));
        drop(queue);
        assert_eq!(seen.load(Ordering::SeqCst), 1);
    }
}
