//! Message buffers: what `pvm_pk*` fills and `pvm_upk*` reads, and the
//! bytes a PVM message travels as inside one threadwire message.
//!
//! # Layout of a message
//!
//! | bytes | field |
//! |---|---|
//! | 0 | `P` |
//! | 1 | layout version, 2 |
//! | 2 | flags: bits 0–1 the encoding (`PvmDataDefault` 0, `PvmDataRaw` 1, `PvmDataInPlace` 2), bit 2 a big-endian body, bit 3 a context follows |
//! | 4, if bit 3 | the context, little-endian `i32` (none: the base context) |
//! | up to the runs | the body: the elements, no padding |
//! | 5 bytes per run | kind (`u8`), element count (little-endian `u32`) |
//! | the last 4 | the number of runs, little-endian `u32` |
//!
//! The tag travels as the threadwire message's own. An 8-byte message
//! costs 12 bytes besides its own (3 + 5 + 4), PVM's XDR messages about
//! 48: over a slow link, where frames take one packet each, every byte
//! counts.
//!
//! A run is a stretch of elements of one kind, as packed: `pvm_pkint` of
//! 10 then of 5 makes one run of 15 ints, which may be unpacked as 3 and 12,
//! as PVM allows. Unpacking another kind than the next element's is refused
//! with `PvmBadMsg` instead of reinterpreting bytes (real PVM cannot tell
//! and returns garbage); signed and unsigned of one width are one kind, and
//! a complex number is two reals. `PvmDataDefault` (PVM's portable XDR)
//! writes the body big-endian, `PvmDataRaw` and `PvmDataInPlace` in the
//! sender's order; a reader of the other order swaps or, for raw data,
//! refuses. A string is a 4-byte length and its bytes, without the NUL.
//!
//! The body is packed where it is sent from: a buffer's bytes start with
//! room for the header, and a send fills it in and appends the runs for
//! as long as the send takes, so a large message is read where it lies
//! (threadwire's rendezvous) and a receiver keeps the bytes it got,
//! copying none but what it unpacks.
//!
//! `PvmDataInPlace` keeps a pointer to contiguous data instead of copying
//! it, and reads it when the message is sent, as PVM does: the program
//! must leave that memory alone until then.

use crate::consts::*;

const MAGIC: u8 = b'P';
const VERSION: u8 = 2;
const ENCODING_BITS: u8 = 0b11;
const BIG_ENDIAN_FLAG: u8 = 0b100;
const CONTEXT_FLAG: u8 = 0b1000;
/// Room kept before a body being packed: the longest header.
const HEADER: usize = 7;
const RUN: usize = 5;
const TRAILER: usize = 4;

/// The kind of an element, for PVM's type check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Byte = 1,
    Short = 2,
    Int = 3,
    Long = 4,
    Float = 5,
    Double = 6,
    Str = 7,
}

impl Kind {
    fn from_code(code: u8) -> Option<Kind> {
        Some(match code {
            1 => Kind::Byte,
            2 => Kind::Short,
            3 => Kind::Int,
            4 => Kind::Long,
            5 => Kind::Float,
            6 => Kind::Double,
            7 => Kind::Str,
            _ => return None,
        })
    }

    /// Bytes of one element in the body (a string's are its own).
    pub fn width(self) -> usize {
        match self {
            Kind::Byte => 1,
            Kind::Short => 2,
            Kind::Int | Kind::Float => 4,
            Kind::Long | Kind::Double => 8,
            Kind::Str => 0,
        }
    }

    /// The kind and elements-per-item of a `PVM_*` data type
    /// (`pvm_psend`, `pvm_reduce`); `None` for `PVM_STR` and unknown ones.
    pub fn of_datatype(datatype: i32) -> Option<(Kind, usize)> {
        Some(match datatype {
            PVM_BYTE => (Kind::Byte, 1),
            PVM_SHORT | PVM_USHORT => (Kind::Short, 1),
            PVM_INT | PVM_UINT => (Kind::Int, 1),
            PVM_LONG | PVM_ULONG => (Kind::Long, 1),
            PVM_FLOAT => (Kind::Float, 1),
            PVM_CPLX => (Kind::Float, 2),
            PVM_DOUBLE => (Kind::Double, 1),
            PVM_DCPLX => (Kind::Double, 2),
            _ => return None,
        })
    }
}

/// Contiguous user memory a `PvmDataInPlace` buffer reads when sent.
struct InPlace {
    /// Where in the body it goes.
    at: usize,
    ptr: *const u8,
    len: usize,
}

/// A PVM message buffer: being packed, or received and being unpacked.
pub struct Buffer {
    encoding: i32,
    big_endian: bool,
    runs: Vec<(Kind, u32)>,
    /// Room for the header, then the body; a received message's bytes
    /// (`body_end` marks where its runs begin).
    bytes: Vec<u8>,
    body_start: usize,
    body_end: usize,
    in_place: Vec<InPlace>,
    /// Bytes the in-place segments add to the body.
    in_place_len: usize,
    /// Reading: run index, elements of it taken, offset in `bytes`.
    cursor: (usize, u32, usize),
    /// A received message that did not decode: every unpack fails.
    bad: bool,
    /// A received message's source tid, tag and context.
    pub src: i32,
    pub tag: i32,
    pub ctx: i32,
}

/// Why an unpack failed: PVM's code.
pub type Code = i32;

impl Buffer {
    /// An empty buffer to pack into, in `encoding`; `None` for an unknown
    /// encoding.
    pub fn new(encoding: i32) -> Option<Buffer> {
        let big_endian = match encoding {
            DATA_DEFAULT => true,
            DATA_RAW | DATA_IN_PLACE => cfg!(target_endian = "big"),
            _ => return None,
        };
        Some(Buffer {
            encoding,
            big_endian,
            runs: Vec::new(),
            bytes: vec![0; HEADER],
            body_start: HEADER,
            body_end: HEADER,
            in_place: Vec::new(),
            in_place_len: 0,
            cursor: (0, 0, HEADER),
            bad: false,
            src: -1,
            tag: -1,
            ctx: BASE_CONTEXT,
        })
    }

    pub fn encoding(&self) -> i32 {
        self.encoding
    }

    /// Bytes of data in the message (what `pvm_bufinfo` reports).
    pub fn len(&self) -> usize {
        if self.bad {
            return self.bytes.len();
        }
        self.body_end - self.body_start + self.in_place_len
    }

    fn add_run(&mut self, kind: Kind, count: u32) {
        match self.runs.last_mut() {
            Some((k, n)) if *k == kind && n.checked_add(count).is_some() => *n += count,
            _ => self.runs.push((kind, count)),
        }
    }

    /// Whether elements must be byte-swapped between memory and body.
    fn swaps(&self) -> bool {
        self.big_endian != cfg!(target_endian = "big")
    }

    /// Packs `count` elements of `kind` found every `stride` elements
    /// from `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads of `(count - 1) * stride + 1`
    /// elements of the kind's width (and, in place, stay so until sent).
    pub unsafe fn pack(
        &mut self,
        kind: Kind,
        ptr: *const u8,
        count: i32,
        stride: i32,
    ) -> Result<(), Code> {
        if count < 0 || stride < 1 || (ptr.is_null() && count > 0) || self.bad {
            return Err(PVM_BAD_PARAM);
        }
        if count == 0 {
            return Ok(());
        }
        let (width, count, stride) = (kind.width(), count as usize, stride as usize);
        let len = count.checked_mul(width).ok_or(PVM_OVERFLOW)?;
        if self.encoding == DATA_IN_PLACE && stride == 1 {
            self.add_run(kind, count as u32);
            self.in_place.push(InPlace {
                at: self.bytes.len(),
                ptr,
                len,
            });
            self.in_place_len += len;
            return Ok(());
        }
        self.bytes.reserve(len);
        if stride == 1 {
            // SAFETY: the caller vouches for `count` contiguous elements.
            let data = unsafe { std::slice::from_raw_parts(ptr, len) };
            match self.swaps() {
                false => self.bytes.extend_from_slice(data),
                true => {
                    for element in data.chunks_exact(width) {
                        self.bytes.extend(element.iter().rev());
                    }
                }
            }
        } else {
            for i in 0..count {
                // SAFETY: the caller vouches for `count` elements every `stride`.
                let element =
                    unsafe { std::slice::from_raw_parts(ptr.add(i * stride * width), width) };
                match self.swaps() {
                    false => self.bytes.extend_from_slice(element),
                    true => self.bytes.extend(element.iter().rev()),
                }
            }
        }
        self.body_end = self.bytes.len();
        self.add_run(kind, count as u32);
        Ok(())
    }

    /// Packs a string (without its NUL).
    pub fn pack_str(&mut self, text: &[u8]) -> Result<(), Code> {
        let len = u32::try_from(text.len()).map_err(|_| PVM_OVERFLOW)?;
        let len = match self.big_endian {
            true => len.to_be_bytes(),
            false => len.to_le_bytes(),
        };
        self.bytes.extend_from_slice(&len);
        self.bytes.extend_from_slice(text);
        self.body_end = self.bytes.len();
        self.add_run(Kind::Str, 1);
        Ok(())
    }

    /// Where `count` elements of `kind` end if read now: the cursor after
    /// them, or why they cannot be read.
    fn reach(&self, kind: Kind, count: u32) -> Result<(usize, u32, usize), Code> {
        if self.bad {
            return Err(PVM_BAD_MSG);
        }
        let (mut run, mut used, mut at) = self.cursor;
        let mut left = count;
        while left > 0 {
            let Some(&(k, n)) = self.runs.get(run) else {
                return Err(PVM_NO_DATA);
            };
            if used == n {
                (run, used) = (run + 1, 0);
                continue;
            }
            if k != kind {
                return Err(PVM_BAD_MSG);
            }
            let take = left.min(n - used);
            at += take as usize * kind.width();
            (used, left) = (used + take, left - take);
        }
        match at <= self.body_end {
            true => Ok((run, used, at)),
            false => Err(PVM_NO_DATA),
        }
    }

    /// Unpacks `count` elements of `kind` to every `stride`-th element
    /// from `ptr`. Nothing is consumed when it fails.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writes of `(count - 1) * stride + 1`
    /// elements of the kind's width.
    pub unsafe fn unpack(
        &mut self,
        kind: Kind,
        ptr: *mut u8,
        count: i32,
        stride: i32,
    ) -> Result<(), Code> {
        if count < 0 || stride < 1 || (ptr.is_null() && count > 0) {
            return Err(PVM_BAD_PARAM);
        }
        let end = self.reach(kind, count as u32)?;
        let (width, stride) = (kind.width(), stride as usize);
        let data = &self.bytes[self.cursor.2..end.2];
        if stride == 1 && !self.swaps() {
            // SAFETY: the caller vouches for room for `count` elements.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len()) };
        } else {
            for (i, element) in data.chunks_exact(width).enumerate() {
                let mut e = [0u8; 8];
                e[..width].copy_from_slice(element);
                if self.swaps() {
                    e[..width].reverse();
                }
                // SAFETY: the caller vouches for `count` elements every `stride`.
                unsafe {
                    std::ptr::copy_nonoverlapping(e.as_ptr(), ptr.add(i * stride * width), width)
                };
            }
        }
        self.cursor = end;
        Ok(())
    }

    /// Unpacks the next string.
    pub fn unpack_str(&mut self) -> Result<&[u8], Code> {
        let (run, used, _) = self.reach(Kind::Str, 1)?;
        let start = self.cursor.2;
        let Some(len) = self.bytes[..self.body_end].get(start..start + 4) else {
            return Err(PVM_NO_DATA);
        };
        let len: [u8; 4] = len.try_into().expect("four bytes");
        let len = match self.big_endian {
            true => u32::from_be_bytes(len),
            false => u32::from_le_bytes(len),
        } as usize;
        let end = start + 4 + len;
        if end > self.body_end {
            return Err(PVM_NO_DATA);
        }
        self.cursor = (run, used, end);
        Ok(&self.bytes[start + 4..end])
    }

    /// Hands `send` the message's bytes in context `ctx` — the header,
    /// the body and the runs — and returns what it returns. The bytes are
    /// the buffer's own, read where they are, unless in-place data must
    /// be gathered into a copy.
    pub fn with_message<R>(&mut self, ctx: i32, send: impl FnOnce(&[u8]) -> R) -> R {
        let mut header = [0u8; HEADER];
        let mut flags = self.encoding as u8 & ENCODING_BITS;
        if self.big_endian {
            flags |= BIG_ENDIAN_FLAG;
        }
        let mut len = 3;
        if ctx != BASE_CONTEXT {
            flags |= CONTEXT_FLAG;
            header[3..7].copy_from_slice(&ctx.to_le_bytes());
            len = 7;
        }
        header[..3].copy_from_slice(&[MAGIC, VERSION, flags]);
        let start = HEADER - len;
        self.bytes[start..HEADER].copy_from_slice(&header[..len]);
        let body_end = self.bytes.len();
        if !self.in_place.is_empty() {
            let size = len + self.len() + self.runs.len() * RUN + TRAILER;
            let mut out = Vec::with_capacity(size);
            let mut from = start;
            for seg in &self.in_place {
                out.extend_from_slice(&self.bytes[from..seg.at]);
                // SAFETY: `pack` took the pointer on the promise that the
                // memory stays valid until the message is sent, which is now.
                out.extend_from_slice(unsafe { std::slice::from_raw_parts(seg.ptr, seg.len) });
                from = seg.at;
            }
            out.extend_from_slice(&self.bytes[from..]);
            push_runs(&mut out, &self.runs);
            return send(&out);
        }
        push_runs(&mut self.bytes, &self.runs);
        let r = send(&self.bytes[start..]);
        self.bytes.truncate(body_end);
        r
    }

    /// The message of a `pvm_notify`: one int, `about` (the tid or host
    /// that the event concerns), encoded in context `ctx`.
    pub fn notice(about: i32, ctx: i32) -> Vec<u8> {
        let mut b = Buffer::new(DATA_DEFAULT).expect("a known encoding");
        let about = [about];
        // SAFETY: one int, from a live array.
        unsafe { b.pack(Kind::Int, about.as_ptr().cast(), 1, 1) }.expect("one int packs");
        b.encode(ctx)
    }

    /// The message's bytes in context `ctx`, copied.
    pub fn encode(&mut self, ctx: i32) -> Vec<u8> {
        self.with_message(ctx, <[u8]>::to_vec)
    }

    /// A received message's buffer, from `src` with `tag`; one that does
    /// not decode is kept, marked bad (its unpacks fail with `PvmBadMsg`),
    /// with context -1 so that only wildcards take it.
    pub fn decode(bytes: Vec<u8>, src: i32, tag: i32) -> Buffer {
        let mut buffer = Buffer::new(DATA_RAW).expect("a known encoding");
        buffer.src = src;
        buffer.tag = tag;
        match parse(&bytes) {
            Some(p) => {
                buffer.encoding = p.encoding;
                buffer.big_endian = p.big_endian;
                buffer.ctx = p.ctx;
                buffer.runs = p.runs;
                buffer.body_start = p.body.start;
                buffer.body_end = p.body.end;
                buffer.cursor = (0, 0, p.body.start);
                buffer.bytes = bytes;
            }
            None => {
                buffer.bad = true;
                buffer.ctx = -1;
                buffer.bytes = bytes;
            }
        }
        buffer
    }
}

/// Appends the runs and their number (the trailer).
fn push_runs(out: &mut Vec<u8>, runs: &[(Kind, u32)]) {
    for &(kind, count) in runs {
        out.push(kind as u8);
        out.extend_from_slice(&count.to_le_bytes());
    }
    out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
}

/// What a message's header and runs say.
struct Parsed {
    encoding: i32,
    big_endian: bool,
    ctx: i32,
    runs: Vec<(Kind, u32)>,
    body: std::ops::Range<usize>,
}

fn parse(bytes: &[u8]) -> Option<Parsed> {
    let &[magic, version, flags, ..] = bytes else {
        return None;
    };
    if magic != MAGIC || version != VERSION {
        return None;
    }
    let encoding = i32::from(flags & ENCODING_BITS);
    if encoding > DATA_IN_PLACE {
        return None;
    }
    let (ctx, body_start) = match flags & CONTEXT_FLAG != 0 {
        true => (i32::from_le_bytes(bytes.get(3..7)?.try_into().ok()?), 7),
        false => (BASE_CONTEXT, 3),
    };
    let trailer = bytes.len().checked_sub(TRAILER)?;
    let runs = u32::from_le_bytes(bytes[trailer..].try_into().ok()?) as usize;
    let table = trailer.checked_sub(runs.checked_mul(RUN)?)?;
    if table < body_start {
        return None;
    }
    let mut parsed = Vec::with_capacity(runs);
    for run in bytes[table..trailer].chunks_exact(RUN) {
        let kind = Kind::from_code(run[0])?;
        parsed.push((
            kind,
            u32::from_le_bytes(run[1..5].try_into().expect("4 bytes")),
        ));
    }
    Some(Parsed {
        encoding,
        big_endian: flags & BIG_ENDIAN_FLAG != 0,
        ctx,
        runs: parsed,
        body: body_start..table,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack_ints(b: &mut Buffer, v: &[i32], stride: i32) {
        // SAFETY: `v` holds the elements the stride reaches.
        unsafe {
            b.pack(
                Kind::Int,
                v.as_ptr().cast(),
                v.len() as i32 / stride,
                stride,
            )
        }
        .unwrap();
    }

    #[test]
    fn a_run_unpacks_in_other_groupings_and_checks_kinds() {
        for encoding in [DATA_DEFAULT, DATA_RAW, DATA_IN_PLACE] {
            let mut b = Buffer::new(encoding).unwrap();
            let ints: Vec<i32> = (1..=10).collect();
            pack_ints(&mut b, &ints, 1);
            b.pack_str(b"hello").unwrap();
            let d = [2.5f64];
            // SAFETY: one double.
            unsafe { b.pack(Kind::Double, d.as_ptr().cast(), 1, 1) }.unwrap();
            let mut r = Buffer::decode(b.encode(3), 0x40001, 7);
            assert_eq!((r.ctx, r.tag, r.src, r.len()), (3, 7, 0x40001, 40 + 9 + 8));
            let mut got = [0i32; 10];
            // SAFETY: `got` has 10 ints.
            unsafe {
                r.unpack(Kind::Int, got.as_mut_ptr().cast(), 3, 1).unwrap();
                assert_eq!(
                    r.unpack(Kind::Double, got.as_mut_ptr().cast(), 1, 1),
                    Err(PVM_BAD_MSG)
                );
                assert_eq!(
                    r.unpack(Kind::Int, got.as_mut_ptr().cast(), 8, 1),
                    Err(PVM_BAD_MSG)
                );
                r.unpack(Kind::Int, got[3..].as_mut_ptr().cast(), 7, 1)
                    .unwrap();
            }
            assert_eq!(got.to_vec(), ints);
            assert_eq!(r.unpack_str().unwrap(), b"hello");
            let mut x = [0f64];
            // SAFETY: one double.
            unsafe { r.unpack(Kind::Double, x.as_mut_ptr().cast(), 1, 1) }.unwrap();
            assert_eq!(x[0], 2.5);
            // SAFETY: one double.
            let past = unsafe { r.unpack(Kind::Double, x.as_mut_ptr().cast(), 1, 1) };
            assert_eq!(past, Err(PVM_NO_DATA));
        }
    }

    #[test]
    fn strides_pick_and_place_every_nth_element() {
        let mut b = Buffer::new(DATA_DEFAULT).unwrap();
        pack_ints(&mut b, &[1, 0, 2, 0, 3, 0], 2);
        let mut r = Buffer::decode(b.encode(0), 1, 0);
        let mut out = [9i32; 5];
        // SAFETY: stride 2 over 3 elements reaches index 4.
        unsafe { r.unpack(Kind::Int, out.as_mut_ptr().cast(), 3, 2) }.unwrap();
        assert_eq!(out, [1, 9, 2, 9, 3]);
    }

    #[test]
    fn garbage_and_lies_are_bad_messages_not_crashes() {
        for bytes in [vec![], b"PV".to_vec(), vec![0; 64]] {
            let mut r = Buffer::decode(bytes, 1, 0);
            assert_eq!(r.unpack_str(), Err(PVM_BAD_MSG));
        }
        // Runs that claim more than the body holds.
        let mut b = Buffer::new(DATA_RAW).unwrap();
        pack_ints(&mut b, &[1, 2], 1);
        let mut bytes = b.encode(0);
        let run = bytes.len() - TRAILER - RUN;
        bytes[run + 1..run + 5].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut r = Buffer::decode(bytes, 1, 0);
        let mut out = [0i32; 3];
        // SAFETY: three ints.
        let got = unsafe { r.unpack(Kind::Int, out.as_mut_ptr().cast(), 3, 1) };
        assert_eq!(got, Err(PVM_NO_DATA));
        // A string whose length runs past the end.
        let mut b = Buffer::new(DATA_DEFAULT).unwrap();
        b.pack_str(b"abc").unwrap();
        let mut bytes = b.encode(0);
        bytes[3..7].copy_from_slice(&1000u32.to_be_bytes());
        assert_eq!(Buffer::decode(bytes, 1, 0).unpack_str(), Err(PVM_NO_DATA));
        // A trailer that claims more runs than the message holds.
        let mut bytes = Buffer::new(DATA_RAW).unwrap().encode(0);
        let at = bytes.len() - TRAILER;
        bytes[at..].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(Buffer::decode(bytes, 1, 0).unpack_str(), Err(PVM_BAD_MSG));
    }
}
