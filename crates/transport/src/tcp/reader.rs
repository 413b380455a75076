//! Reading frames out of a TCP byte stream.

use super::{ChannelError, Frame, ReadOutcome};
use mio::net::TcpStream;
use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use threadwire_wire::{FrameBytes, FrameHeader, FrameKind, HEADER_LEN};

const BUFFER: usize = 64 * 1024;
/// Bytes read per call before yielding to the engine's other connections.
const READ_BUDGET: usize = 4 * 1024 * 1024;

/// A caller's buffer registered for the bulk frame of one receive id
/// ([`TcpChannel::place`](super::TcpChannel::place)).
pub(super) struct Placement {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a placement is a buffer its registrant hands over for writing
// until it withdraws it under the reader's lock (`place`'s contract);
// only the thread holding that lock writes through it.
unsafe impl Send for Placement {}

impl Placement {
    /// # Safety
    ///
    /// As [`TcpChannel::place`](super::TcpChannel::place).
    pub(super) unsafe fn new(ptr: *mut u8, len: usize) -> Placement {
        Placement { ptr, len }
    }
}

/// A frame whose payload is still arriving.
enum Partial {
    /// Read straight into its own allocation; `payload.len()` is the part
    /// received, its capacity the whole payload.
    Owned {
        header: FrameHeader,
        payload: Vec<u8>,
    },
    /// A bulk frame read straight into its registered buffer.
    Placed {
        header: FrameHeader,
        placement: Placement,
        id: u64,
        got: usize,
    },
    /// A bulk frame whose buffer was withdrawn while it arrived.
    Discard { left: usize },
}

pub(super) struct FrameReader {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    partial: Option<Partial>,
    /// Buffers waiting for their bulk frame, by receive id.
    placements: HashMap<u64, Placement>,
    max_frame: u64,
}

impl FrameReader {
    pub(super) fn new(max_frame: u64) -> FrameReader {
        FrameReader {
            buf: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
            partial: None,
            placements: HashMap::new(),
            max_frame,
        }
    }

    pub(super) fn place(&mut self, id: u64, placement: Placement) {
        self.placements.insert(id, placement);
    }

    /// Withdraws the buffer of `id`: whatever of its frame is still to
    /// come is read and dropped.
    pub(super) fn unplace(&mut self, id: u64) {
        self.placements.remove(&id);
        if let Some(Partial::Placed {
            id: current,
            header,
            got,
            ..
        }) = &self.partial
        {
            if *current == id {
                let left = header.len as usize - got;
                self.partial = Some(Partial::Discard { left });
            }
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
                let (want, got) = match p {
                    Partial::Owned { payload, .. } => {
                        let want = payload.capacity() - payload.len();
                        (want, read_uninit(stream, payload)?)
                    }
                    Partial::Placed {
                        header,
                        placement,
                        got,
                        ..
                    } => {
                        let want = header.len as usize - *got;
                        // SAFETY: the placement's buffer is ours to write
                        // until withdrawn under this reader's lock (held);
                        // `got + want` is the frame's length, checked
                        // against the buffer's when the frame began.
                        let rest = unsafe {
                            std::slice::from_raw_parts_mut(placement.ptr.add(*got), want)
                        };
                        let n = read(&mut stream, rest)?;
                        if let Some(n) = n {
                            *got += n;
                        }
                        (want, n)
                    }
                    Partial::Discard { left } => {
                        let want = *left;
                        let scratch = want.min(self.buf.len());
                        let n = read(&mut stream, &mut self.buf[..scratch])?;
                        if let Some(n) = n {
                            *left -= n;
                        }
                        (want, n)
                    }
                };
                let n = match got {
                    Some(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
                    Some(n) => n,
                    None => return Ok(drained(budget)),
                };
                budget = budget.saturating_sub(n);
                if p.complete() {
                    match self.partial.take().expect("partial frame present") {
                        Partial::Owned { header, payload } => on_frame(Frame {
                            header,
                            payload: payload.into(),
                        }),
                        Partial::Placed { header, .. } => on_frame(Frame {
                            header,
                            payload: FrameBytes::new(),
                        }),
                        Partial::Discard { .. } => {}
                    }
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
            if header.kind == FrameKind::Bulk {
                let id = header.bulk_id();
                if let Some(placement) = self.placements.remove(&id) {
                    if len > placement.len {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "bulk frame of {len} bytes for a buffer of {}",
                                placement.len
                            ),
                        )
                        .into());
                    }
                    let now = available.min(len);
                    // SAFETY: the placement's buffer is ours to write until
                    // withdrawn under this reader's lock (held), and holds
                    // at least `len` bytes (checked above).
                    unsafe {
                        std::ptr::copy_nonoverlapping(self.buf[body..].as_ptr(), placement.ptr, now)
                    };
                    self.start = body + now;
                    if now == len {
                        on_frame(Frame {
                            header,
                            payload: FrameBytes::new(),
                        });
                    } else {
                        self.partial = Some(Partial::Placed {
                            header,
                            placement,
                            id,
                            got: now,
                        });
                        self.start = 0;
                        self.end = 0;
                    }
                    continue;
                }
            }
            if available >= len {
                // Short bytes in place, longer ones in a vector of their own.
                let payload = FrameBytes::copy_from(&self.buf[body..body + len]);
                self.start = body + len;
                on_frame(Frame { header, payload });
            } else if HEADER_LEN + len > BUFFER {
                // Not zeroed: the kernel writes every byte before it is read.
                let mut payload = Vec::with_capacity(len);
                payload.extend_from_slice(&self.buf[body..self.end]);
                self.partial = Some(Partial::Owned { header, payload });
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

impl Partial {
    fn complete(&self) -> bool {
        match self {
            Partial::Owned { payload, .. } => payload.len() == payload.capacity(),
            Partial::Placed { header, got, .. } => *got == header.len as usize,
            Partial::Discard { left } => *left == 0,
        }
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
