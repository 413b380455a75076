//! The proxy protocol's frames (module docs of `proxy`): encoding and
//! decoding of [`Request`] and [`Reply`] ([`Message`]), and reading and
//! writing them whole on a byte stream.

use super::{Reply, Request, MAGIC, MAX_FRAME};
use crate::NodeExit;
use std::io::{self, Read, Write};

const START: u8 = 1;
const KILL: u8 = 2;
const END: u8 = 3;

const READY: u8 = 11;
const STARTED: u8 = 12;
const FAILED: u8 = 13;
const OUTPUT: u8 = 14;
const EXITED: u8 = 15;

/// A message of either direction: the body of one frame.
pub(super) trait Message: Sized {
    fn encode(&self) -> Vec<u8>;
    fn decode(body: &[u8]) -> io::Result<Self>;
}

/// The body of a frame being written.
struct Body(Vec<u8>);

impl Body {
    fn new(kind: u8) -> Body {
        Body(vec![kind])
    }

    fn u32(&mut self, v: u32) -> &mut Body {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    fn bytes(&mut self, b: &[u8]) -> &mut Body {
        self.u32(b.len() as u32);
        self.0.extend_from_slice(b);
        self
    }
}

/// The fields of a frame being read; every read is checked, so a short or
/// lying frame is an error, never a panic.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(bad("a frame ends inside a field"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u8(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> io::Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn bytes(&mut self) -> io::Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }

    fn string(&mut self) -> io::Result<String> {
        String::from_utf8(self.bytes()?).map_err(|_| bad("a text field is not UTF-8"))
    }

    /// A count of items that each take at least one byte, so that a lying
    /// count cannot reserve more than the frame holds.
    fn count(&mut self) -> io::Result<usize> {
        let n = self.u32()? as usize;
        match n <= self.0.len() {
            true => Ok(n),
            false => Err(bad("a count larger than its frame")),
        }
    }

    fn end(&self) -> io::Result<()> {
        match self.0.is_empty() {
            true => Ok(()),
            false => Err(bad("bytes after a frame's last field")),
        }
    }
}

fn bad(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

impl Message for Request {
    fn encode(&self) -> Vec<u8> {
        let body = match self {
            Request::Start {
                node,
                program,
                args,
                env,
            } => {
                let mut b = Body::new(START);
                b.u32(*node).bytes(program).u32(args.len() as u32);
                for a in args {
                    b.bytes(a);
                }
                b.u32(env.len() as u32);
                for (k, v) in env {
                    b.bytes(k.as_bytes()).bytes(v.as_bytes());
                }
                b
            }
            Request::Kill { node } => {
                let mut b = Body::new(KILL);
                b.u32(*node);
                b
            }
            Request::End => Body::new(END),
        };
        body.0
    }

    fn decode(frame: &[u8]) -> io::Result<Request> {
        let mut f = Fields(frame);
        let request = match f.u8()? {
            START => {
                let node = f.u32()?;
                let program = f.bytes()?;
                let mut args = Vec::new();
                for _ in 0..f.count()? {
                    args.push(f.bytes()?);
                }
                let mut env = Vec::new();
                for _ in 0..f.count()? {
                    env.push((f.string()?, f.string()?));
                }
                Request::Start {
                    node,
                    program,
                    args,
                    env,
                }
            }
            KILL => Request::Kill { node: f.u32()? },
            END => Request::End,
            _ => return Err(bad("an unknown request")),
        };
        f.end()?;
        Ok(request)
    }
}

impl Message for Reply {
    fn encode(&self) -> Vec<u8> {
        let body = match self {
            Reply::Ready { version, pid } => {
                let mut b = Body::new(READY);
                b.bytes(MAGIC).u32(*version).u32(*pid);
                b
            }
            Reply::Started { node, pid } => {
                let mut b = Body::new(STARTED);
                b.u32(*node).u32(*pid);
                b
            }
            Reply::Failed { node, why } => {
                let mut b = Body::new(FAILED);
                b.u32(*node).bytes(why.as_bytes());
                b
            }
            Reply::Output { node, stderr, line } => {
                let mut b = Body::new(OUTPUT);
                b.u32(*node).u32(u32::from(*stderr)).bytes(line);
                b
            }
            Reply::Exited { node, exit } => {
                let (signalled, value) = match *exit {
                    NodeExit::Code(c) => (0, c as u32),
                    NodeExit::Signal(s) => (1, s as u32),
                };
                let mut b = Body::new(EXITED);
                b.u32(*node).u32(signalled).u32(value);
                b
            }
        };
        body.0
    }

    fn decode(frame: &[u8]) -> io::Result<Reply> {
        let mut f = Fields(frame);
        let reply = match f.u8()? {
            READY => {
                if f.bytes()? != MAGIC {
                    return Err(bad("not a threadwire proxy"));
                }
                Reply::Ready {
                    version: f.u32()?,
                    pid: f.u32()?,
                }
            }
            STARTED => Reply::Started {
                node: f.u32()?,
                pid: f.u32()?,
            },
            FAILED => Reply::Failed {
                node: f.u32()?,
                why: String::from_utf8_lossy(&f.bytes()?).into_owned(),
            },
            OUTPUT => Reply::Output {
                node: f.u32()?,
                stderr: f.u32()? != 0,
                line: f.bytes()?,
            },
            EXITED => {
                let node = f.u32()?;
                let exit = match (f.u32()?, f.u32()? as i32) {
                    (0, c) => NodeExit::Code(c),
                    (_, s) => NodeExit::Signal(s),
                };
                Reply::Exited { node, exit }
            }
            _ => return Err(bad("an unknown reply")),
        };
        f.end()?;
        Ok(reply)
    }
}

fn write_frame(out: &mut impl Write, body: &[u8]) -> io::Result<()> {
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(body);
    out.write_all(&frame)?;
    out.flush()
}

/// The next frame's body; `None` at a clean end of the stream.
fn read_frame(input: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match input.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(bad(&format!("a frame of {len} bytes")));
    }
    let mut body = vec![0u8; len];
    input.read_exact(&mut body)?;
    Ok(Some(body))
}

/// Writes `message` as one frame.
pub(super) fn write<M: Message>(out: &mut impl Write, message: &M) -> io::Result<()> {
    write_frame(out, &message.encode())
}

/// Reads the next message; `None` at the end of the stream.
pub(super) fn read<M: Message>(input: &mut impl Read) -> io::Result<Option<M>> {
    read_frame(input)?.map(|body| M::decode(&body)).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_survive_the_trip() {
        let requests = [
            Request::Start {
                node: 7,
                program: b"/bin/prog".to_vec(),
                args: vec![b"a".to_vec(), Vec::new(), vec![0xff, 0]],
                env: vec![("THREADWIRE_SECRET".into(), "ab".repeat(32))],
            },
            Request::Kill { node: 3 },
            Request::End,
        ];
        round_trip(&requests);

        let replies = [
            Reply::Ready { version: 1, pid: 9 },
            Reply::Started { node: 1, pid: 77 },
            Reply::Failed {
                node: 2,
                why: "No such file".into(),
            },
            Reply::Output {
                node: 1,
                stderr: true,
                line: b"hello".to_vec(),
            },
            Reply::Exited {
                node: 1,
                exit: NodeExit::Code(-1),
            },
            Reply::Exited {
                node: 2,
                exit: NodeExit::Signal(9),
            },
        ];
        round_trip(&replies);
    }

    /// Writes `messages` on one stream and reads them back, then its end.
    fn round_trip<M: Message + PartialEq + std::fmt::Debug>(messages: &[M]) {
        let mut stream = Vec::new();
        for m in messages {
            write(&mut stream, m).unwrap();
        }
        let mut input = &stream[..];
        for m in messages {
            assert_eq!(read::<M>(&mut input).unwrap().as_ref(), Some(m));
        }
        assert!(read::<M>(&mut input).unwrap().is_none());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut good = Vec::new();
        write(
            &mut good,
            &Request::Start {
                node: 1,
                program: b"p".to_vec(),
                args: vec![b"x".to_vec()],
                env: vec![("K".into(), "V".into())],
            },
        )
        .unwrap();
        // Every truncation of the body, and every single-byte change.
        for cut in 5..good.len() {
            let mut frame = good[..cut].to_vec();
            frame[..4].copy_from_slice(&((cut - 4) as u32).to_le_bytes());
            assert!(read::<Request>(&mut &frame[..]).is_err(), "cut at {cut}");
        }
        for i in 4..good.len() {
            for b in [0u8, 0x7f, 0xff] {
                let mut frame = good.clone();
                frame[i] = b;
                let _ = read::<Request>(&mut &frame[..]);
                let _ = read::<Reply>(&mut &frame[..]);
            }
        }
        // A login script's greeting instead of the proxy's.
        let text = b"Welcome to node17!\n".to_vec();
        assert!(read::<Reply>(&mut &text[..]).is_err());
        // A frame cut short by the end of the stream.
        assert!(read::<Request>(&mut &good[..good.len() - 1]).is_err());
    }
}
