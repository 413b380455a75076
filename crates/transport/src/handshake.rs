//! The connection handshake: version, job, and proof of the job secret.
//!
//! Steps, on a fresh TCP connection (all integers little-endian):
//!
//! 1. The connector sends **Hello** (56 B): magic `TWHS`, protocol version,
//!    kind 1, 2 zero bytes, job id (u64), its node number (u32), 4 zero bytes,
//!    a 32-byte random nonce `Nc`.
//! 2. The acceptor checks magic, version and job id, and answers
//!    **Challenge** (88 B): magic, version, kind 2, 2 zero bytes, job id, its
//!    node number, 4 zero bytes, its nonce `Na`, and
//!    `HMAC(secret, "threadwire acceptor" ‖ Hello ‖ Challenge[0..56])`.
//! 3. The connector checks that proof and sends **Proof** (32 B):
//!    `HMAC(secret, "threadwire connector" ‖ Hello ‖ Challenge)`.
//! 4. The acceptor checks it and sends **Welcome** (8 B): `TWOK` and 4 zero
//!    bytes. From here on both sides exchange frames. Or, when it already
//!    has a connection to the connector or is opening one itself and its
//!    own wins (the caller's verdict, [`Acceptor::advance_with`]), it
//!    sends **Busy** (8 B): `TWBZ` and 4 zero bytes, and closes: the
//!    connector gets [`HandshakeError::Busy`] and waits for the pair's
//!    other connection instead, so that two nodes that connect to each
//!    other at once end with one connection.
//!
//! Each side proves the secret over a nonce the other chose, so a recorded
//! handshake cannot be replayed. Any mismatch closes the connection with a
//! typed [`HandshakeError`]; the acceptor never reads more than 56 + 32 bytes
//! from a stranger, so garbage and oversized input cost nothing.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use threadwire_wire::PROTOCOL_VERSION;

const MAGIC: [u8; 4] = *b"TWHS";
const HELLO_LEN: usize = 56;
const CHALLENGE_LEN: usize = 88;
const PROOF_LEN: usize = 32;
const WELCOME: [u8; 8] = *b"TWOK\0\0\0\0";
const BUSY: [u8; 8] = *b"TWBZ\0\0\0\0";

/// What a node needs to join its job's connections.
#[derive(Clone)]
pub struct Credentials {
    /// The job id every peer must share.
    pub job_id: u64,
    /// The job secret; never sent, only proven.
    pub secret: [u8; 32],
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("job_id", &self.job_id)
            .finish_non_exhaustive()
    }
}

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandshakeError {
    /// The peer did not start with the handshake magic: not a threadwire node.
    #[error("peer is not a threadwire node (bad handshake magic)")]
    BadMagic,
    /// The peer speaks another protocol version.
    #[error("peer speaks protocol version {found}, this node speaks {PROTOCOL_VERSION}")]
    VersionMismatch {
        /// The peer's version.
        found: u8,
    },
    /// The peer belongs to another job.
    #[error("peer belongs to job {found:x}, not this job")]
    WrongJob {
        /// The peer's job id.
        found: u64,
    },
    /// The peer's proof of the secret is wrong.
    #[error("peer failed to prove the job secret")]
    BadProof,
    /// A message field that must be zero or fixed was not.
    #[error("malformed handshake message")]
    Malformed,
    /// The handshake did not finish in time.
    #[error("handshake timed out")]
    Timeout,
    /// The acceptor proved itself but keeps the pair's other connection
    /// (step 4): it has one to this node, or opens one and its own wins.
    #[error("node n{peer} keeps its own connection to this node")]
    Busy {
        /// The acceptor's node number.
        peer: u32,
    },
    /// The connection closed or failed.
    #[error("handshake I/O: {0}")]
    Io(#[from] io::Error),
}

fn random_nonce() -> [u8; 32] {
    let mut n = [0u8; 32];
    // getrandom only fails when the OS has no entropy source at all.
    getrandom::getrandom(&mut n).expect("the OS random source is unavailable");
    n
}

fn mac(secret: &[u8; 32], label: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(label);
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

fn verify(secret: &[u8; 32], label: &[u8], parts: &[&[u8]], proof: &[u8]) -> bool {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(label);
    for p in parts {
        m.update(p);
    }
    m.verify_slice(proof).is_ok() // constant time
}

fn header(kind: u8, job_id: u64, node: u32) -> [u8; 24] {
    let mut b = [0u8; 24];
    b[0..4].copy_from_slice(&MAGIC);
    b[4] = PROTOCOL_VERSION;
    b[5] = kind;
    b[8..16].copy_from_slice(&job_id.to_le_bytes());
    b[16..20].copy_from_slice(&node.to_le_bytes());
    b
}

/// Checks a Hello/Challenge prefix; returns the sender's node number.
fn check_header(b: &[u8], kind: u8, job_id: u64) -> Result<u32, HandshakeError> {
    if b[0..4] != MAGIC {
        return Err(HandshakeError::BadMagic);
    }
    if b[4] != PROTOCOL_VERSION {
        return Err(HandshakeError::VersionMismatch { found: b[4] });
    }
    if b[5] != kind || b[6..8] != [0, 0] || b[20..24] != [0; 4] {
        return Err(HandshakeError::Malformed);
    }
    let found = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
    if found != job_id {
        return Err(HandshakeError::WrongJob { found });
    }
    Ok(u32::from_le_bytes(b[16..20].try_into().expect("4 bytes")))
}

/// Connects to `addr` as node `my_node` and runs the connector's side.
/// Returns the acceptor's node number and the blocking stream.
pub fn connect(
    addr: SocketAddr,
    creds: &Credentials,
    my_node: u32,
    timeout: Duration,
) -> Result<(u32, TcpStream), HandshakeError> {
    let deadline = Instant::now() + timeout;
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_nodelay(true)?;
    let peer = connect_on(&stream, creds, my_node, deadline)?;
    stream.set_read_timeout(None)?;
    stream.set_write_timeout(None)?;
    Ok((peer, stream))
}

fn set_deadline(stream: &TcpStream, deadline: Instant) -> Result<(), HandshakeError> {
    let left = deadline
        .checked_duration_since(Instant::now())
        .ok_or(HandshakeError::Timeout)?;
    let left = left.max(Duration::from_millis(1));
    stream.set_read_timeout(Some(left))?;
    stream.set_write_timeout(Some(left))?;
    Ok(())
}

fn read_exact(
    mut stream: &TcpStream,
    buf: &mut [u8],
    deadline: Instant,
) -> Result<(), HandshakeError> {
    set_deadline(stream, deadline)?;
    stream.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => HandshakeError::Timeout,
        _ => HandshakeError::Io(e),
    })
}

fn connect_on(
    mut stream: &TcpStream,
    creds: &Credentials,
    my_node: u32,
    deadline: Instant,
) -> Result<u32, HandshakeError> {
    let mut hello = [0u8; HELLO_LEN];
    hello[..24].copy_from_slice(&header(1, creds.job_id, my_node));
    hello[24..].copy_from_slice(&random_nonce());
    set_deadline(stream, deadline)?;
    stream.write_all(&hello)?;

    let mut challenge = [0u8; CHALLENGE_LEN];
    read_exact(stream, &mut challenge, deadline)?;
    let peer = check_header(&challenge, 2, creds.job_id)?;
    if !verify(
        &creds.secret,
        b"threadwire acceptor",
        &[&hello, &challenge[..56]],
        &challenge[56..],
    ) {
        return Err(HandshakeError::BadProof);
    }
    let proof = mac(
        &creds.secret,
        b"threadwire connector",
        &[&hello, &challenge],
    );
    set_deadline(stream, deadline)?;
    stream.write_all(&proof)?;

    let mut welcome = [0u8; 8];
    read_exact(stream, &mut welcome, deadline).map_err(|e| match e {
        // The acceptor closes without a word when our proof is refused.
        HandshakeError::Io(ref io) if io.kind() == io::ErrorKind::UnexpectedEof => {
            HandshakeError::BadProof
        }
        other => other,
    })?;
    match welcome {
        WELCOME => Ok(peer),
        BUSY => Err(HandshakeError::Busy { peer }),
        _ => Err(HandshakeError::Malformed),
    }
}

/// The acceptor's side as a non-blocking state machine, fed by the progress
/// engine whenever the socket is readable; a stranger that sends nothing
/// costs one small buffer until its deadline.
pub struct Acceptor {
    creds: Credentials,
    my_node: u32,
    received: Vec<u8>,
    hello: Option<[u8; HELLO_LEN]>,
    challenge: [u8; CHALLENGE_LEN],
    deadline: Instant,
}

/// Progress of an [`Acceptor`].
#[derive(Debug)]
pub enum AcceptProgress {
    /// Needs more bytes; call [`Acceptor::advance`] again when readable.
    Pending,
    /// Authenticated: the peer's node number. Frames may flow.
    Done(u32),
    /// Authenticated, and told to use the pair's other connection (step
    /// 4): this one is finished and should be dropped.
    Busy(u32),
}

impl Acceptor {
    /// Starts accepting as node `my_node`; the handshake must end within `timeout`.
    pub fn new(creds: Credentials, my_node: u32, timeout: Duration) -> Acceptor {
        Acceptor {
            creds,
            my_node,
            received: Vec::with_capacity(HELLO_LEN),
            hello: None,
            challenge: [0; CHALLENGE_LEN],
            deadline: Instant::now() + timeout,
        }
    }

    /// When this handshake must be given up.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Reads what is available from `stream` and moves the handshake on,
    /// welcoming every proven peer.
    pub fn advance<S: Read + Write>(
        &mut self,
        stream: S,
    ) -> Result<AcceptProgress, HandshakeError> {
        self.advance_with(stream, |_| true)
    }

    /// As [`advance`](Self::advance), asking `admit` with the peer's node
    /// number, once it has proven the secret, whether to welcome it (step
    /// 4) or answer Busy.
    pub fn advance_with<S: Read + Write>(
        &mut self,
        mut stream: S,
        admit: impl FnOnce(u32) -> bool,
    ) -> Result<AcceptProgress, HandshakeError> {
        loop {
            let want = if self.hello.is_none() {
                HELLO_LEN
            } else {
                PROOF_LEN
            };
            let mut buf = [0u8; HELLO_LEN];
            let missing = want - self.received.len();
            match stream.read(&mut buf[..missing]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into()),
                Ok(n) => self.received.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Ok(AcceptProgress::Pending)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
            if self.received.len() < want {
                continue;
            }
            match self.hello {
                None => {
                    let hello: [u8; HELLO_LEN] = self.received[..].try_into().expect("full hello");
                    check_header(&hello, 1, self.creds.job_id)?;
                    self.challenge[..24].copy_from_slice(&header(
                        2,
                        self.creds.job_id,
                        self.my_node,
                    ));
                    self.challenge[24..56].copy_from_slice(&random_nonce());
                    let proof = mac(
                        &self.creds.secret,
                        b"threadwire acceptor",
                        &[&hello, &self.challenge[..56]],
                    );
                    self.challenge[56..].copy_from_slice(&proof);
                    write_small(&mut stream, &self.challenge)?;
                    self.hello = Some(hello);
                    self.received.clear();
                }
                Some(hello) => {
                    if !verify(
                        &self.creds.secret,
                        b"threadwire connector",
                        &[&hello, &self.challenge],
                        &self.received,
                    ) {
                        return Err(HandshakeError::BadProof);
                    }
                    let peer = u32::from_le_bytes(hello[16..20].try_into().expect("4 bytes"));
                    if !admit(peer) {
                        write_small(&mut stream, &BUSY)?;
                        return Ok(AcceptProgress::Busy(peer));
                    }
                    write_small(&mut stream, &WELCOME)?;
                    return Ok(AcceptProgress::Done(peer));
                }
            }
        }
    }
}

/// Writes a handshake message to a fresh socket. Its send buffer is empty, so
/// a short write means the peer is not reading: treated as a failure.
fn write_small<S: Write>(stream: &mut S, bytes: &[u8]) -> Result<(), HandshakeError> {
    match stream.write(bytes) {
        Ok(n) if n == bytes.len() => Ok(()),
        Ok(_) => Err(HandshakeError::Timeout),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(HandshakeError::Timeout),
        Err(e) => Err(e.into()),
    }
}

/// Runs the acceptor's side on a blocking stream (the launcher uses this).
pub fn accept_blocking(
    stream: TcpStream,
    creds: &Credentials,
    my_node: u32,
) -> Result<(u32, TcpStream), HandshakeError> {
    let mut acceptor = Acceptor::new(creds.clone(), my_node, Duration::from_secs(10));
    stream.set_nodelay(true)?;
    loop {
        set_deadline(&stream, acceptor.deadline)?;
        match acceptor.advance(&stream) {
            Ok(AcceptProgress::Done(peer) | AcceptProgress::Busy(peer)) => {
                stream.set_read_timeout(None)?;
                stream.set_write_timeout(None)?;
                return Ok((peer, stream));
            }
            Ok(AcceptProgress::Pending) => continue,
            Err(HandshakeError::Io(e)) if e.kind() == io::ErrorKind::TimedOut => {
                return Err(HandshakeError::Timeout)
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn pair(
        server: Credentials,
        client: Credentials,
    ) -> (Result<u32, HandshakeError>, Result<u32, HandshakeError>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            accept_blocking(s, &server, 3).map(|(p, _)| p)
        });
        let c = connect(addr, &client, 5, Duration::from_secs(5)).map(|(p, _)| p);
        (t.join().unwrap(), c)
    }

    #[test]
    fn same_secret_succeeds() {
        let creds = Credentials {
            job_id: 1,
            secret: [9; 32],
        };
        let (s, c) = pair(creds.clone(), creds);
        assert_eq!(s.unwrap(), 5);
        assert_eq!(c.unwrap(), 3);
    }

    #[test]
    fn wrong_secret_is_refused_on_both_sides() {
        let (s, c) = pair(
            Credentials {
                job_id: 1,
                secret: [9; 32],
            },
            Credentials {
                job_id: 1,
                secret: [8; 32],
            },
        );
        // The connector detects the acceptor's bad proof first and hangs up.
        assert!(matches!(c, Err(HandshakeError::BadProof)), "{c:?}");
        assert!(s.is_err());
    }

    #[test]
    fn wrong_job_is_refused() {
        let (s, _c) = pair(
            Credentials {
                job_id: 1,
                secret: [9; 32],
            },
            Credentials {
                job_id: 2,
                secret: [9; 32],
            },
        );
        assert!(
            matches!(s, Err(HandshakeError::WrongJob { found: 2 })),
            "{s:?}"
        );
    }

    #[test]
    fn a_busy_acceptor_is_told_apart_from_a_failure() {
        let creds = Credentials {
            job_id: 1,
            secret: [9; 32],
        };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = creds.clone();
        let t = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let mut acceptor = Acceptor::new(server, 3, Duration::from_secs(5));
            loop {
                match acceptor.advance_with(&s, |peer| peer != 5) {
                    Ok(AcceptProgress::Pending) => std::thread::sleep(Duration::from_millis(1)),
                    other => return other,
                }
            }
        });
        let c = connect(addr, &creds, 5, Duration::from_secs(5)).map(|(p, _)| p);
        assert!(matches!(c, Err(HandshakeError::Busy { peer: 3 })), "{c:?}");
        assert!(matches!(t.join().unwrap(), Ok(AcceptProgress::Busy(5))));
    }

    #[test]
    fn garbage_is_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            accept_blocking(
                s,
                &Credentials {
                    job_id: 1,
                    secret: [0; 32],
                },
                0,
            )
            .map(|(p, _)| p)
        });
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(&[0xffu8; 200]).unwrap();
        assert!(matches!(t.join().unwrap(), Err(HandshakeError::BadMagic)));
    }
}
