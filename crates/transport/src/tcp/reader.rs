//! Reading frames out of a TCP byte stream.

use super::{ChannelError, Frame, ReadOutcome};
use mio::net::TcpStream;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use threadwire_wire::{FrameHeader, HEADER_LEN};

const BUFFER: usize = 64 * 1024;
/// Bytes read per call before yielding to the engine's other connections.
const READ_BUDGET: usize = 4 * 1024 * 1024;

/// A frame whose payload is read straight into its own allocation;
/// `payload.len()` is the part received, its capacity the whole payload.
struct Partial {
    header: FrameHeader,
    payload: Vec<u8>,
}

pub(super) struct FrameReader {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    partial: Option<Partial>,
    max_frame: u64,
}

impl FrameReader {
    pub(super) fn new(max_frame: u64) -> FrameReader {
        FrameReader {
            buf: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            partial: None,
            max_frame,
        }
    }

    /// Reads until the socket is drained or the budget is spent. A read
    /// that fills less than it asked for means the socket was empty at that
    /// moment; with edge-triggered readiness a later arrival raises a new
    /// event, so the engine stops there instead of paying for one more
    /// `read` that would fail with `EAGAIN` (one syscall less per message).
    pub(super) fn receive(
        &mut self,
        mut stream: &TcpStream,
        mut on_frame: impl FnMut(Frame),
    ) -> Result<ReadOutcome, ChannelError> {
        let mut budget = READ_BUDGET;
        loop {
            if let Some(p) = &mut self.partial {
                let want = p.payload.capacity() - p.payload.len();
                let n = match read_uninit(stream, &mut p.payload)? {
                    Some(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
                    Some(n) => n,
                    None => return Ok(drained(budget)),
                };
                budget = budget.saturating_sub(n);
                if p.payload.len() == p.payload.capacity() {
                    let p = self.partial.take().expect("partial frame present");
                    on_frame(Frame {
                        header: p.header,
                        payload: p.payload,
                    });
                }
                if n < want {
                    return Ok(drained(budget));
                }
            } else {
                self.parse_buffered(&mut on_frame)?;
                if self.partial.is_some() {
                    continue;
                }
                if self.start > 0 {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                }
                let want = self.buf.len() - self.end;
                match read(&mut stream, &mut self.buf[self.end..])? {
                    Some(0) if self.end == 0 => return Err(ChannelError::Closed),
                    Some(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
                    Some(n) => {
                        self.end += n;
                        budget = budget.saturating_sub(n);
                        if n < want {
                            self.parse_buffered(&mut on_frame)?;
                            if self.partial.is_none() {
                                return Ok(drained(budget));
                            }
                            // A large frame began: its payload may be waiting.
                        }
                    }
                    None => return Ok(drained(budget)),
                }
            }
            if budget == 0 {
                self.parse_buffered(&mut on_frame)?;
                return Ok(ReadOutcome::More);
            }
        }
    }

    /// Hands out every complete frame in the buffer; a frame too large to
    /// finish in the buffer becomes the partial frame.
    fn parse_buffered(&mut self, on_frame: &mut impl FnMut(Frame)) -> Result<(), ChannelError> {
        while self.partial.is_none() && self.end - self.start >= HEADER_LEN {
            let raw: &[u8; HEADER_LEN] = self.buf[self.start..self.start + HEADER_LEN]
                .try_into()
                .expect("header length");
            let header = FrameHeader::decode(raw, self.max_frame)?;
            let len = header.len as usize;
            let body = self.start + HEADER_LEN;
            let available = self.end - body;
            if available >= len {
                let payload = self.buf[body..body + len].to_vec();
                self.start = body + len;
                on_frame(Frame { header, payload });
            } else if HEADER_LEN + len > BUFFER {
                // Not zeroed: the kernel writes every byte before it is read.
                let mut payload = Vec::with_capacity(len);
                payload.extend_from_slice(&self.buf[body..self.end]);
                self.partial = Some(Partial { header, payload });
                self.start = 0;
                self.end = 0;
            } else {
                break;
            }
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        Ok(())
    }
}

/// Reads into `v`'s spare capacity and extends it: `Some(n)` bytes (0 = end
/// of stream), `None` when it would block.
fn read_uninit(stream: &impl AsRawFd, v: &mut Vec<u8>) -> io::Result<Option<usize>> {
    let spare = v.spare_capacity_mut();
    loop {
        // SAFETY: recv writes at most `spare.len()` bytes into the spare
        // capacity, which `v` owns; only the bytes it reports are then
        // marked initialized.
        let n = unsafe {
            libc::recv(
                stream.as_raw_fd(),
                spare.as_mut_ptr().cast(),
                spare.len(),
                0,
            )
        };
        if n >= 0 {
            let n = n as usize;
            // SAFETY: recv initialized the first `n` spare bytes.
            unsafe { v.set_len(v.len() + n) };
            return Ok(Some(n));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// One read: `Some(n)` bytes (0 = end of stream), `None` when it would block.
fn read(stream: &mut impl Read, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        match stream.read(buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
        }
    }
}

/// The outcome of a call that stopped at an empty socket with `budget` of
/// [`READ_BUDGET`] left: whether it read anything at all.
fn drained(budget: usize) -> ReadOutcome {
    if budget == READ_BUDGET {
        ReadOutcome::Empty
    } else {
        ReadOutcome::Drained
    }
}
