//! Loopback TCP between two threads of this process: the floor of
//! threadwire's TCP channel between two nodes of one host, with the
//! kernel's network stack and nothing else in the way.
//!
//! The client connects before either thread starts (the connection waits
//! in the listener's backlog), so a failure on one side closes the
//! connection and ends the other side's read, rather than leaving it
//! waiting in `accept` or `read`.

use super::{measured, on_two_threads, repeat, Measured, Options, Timed, MIB};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::Instant;

/// Bytes per write of the stream row.
const WRITE: usize = MIB;

/// One byte there and back, `TCP_NODELAY` on both ends, blocking reads.
pub(super) fn round_trip(options: &Options) -> (Measured, String) {
    let note = "127.0.0.1, TCP_NODELAY, blocking reads; round trip / 2".to_string();
    let result = connected(
        |mut stream| {
            let mut byte = [1u8];
            repeat(options, |round_trips| {
                let start = Instant::now();
                for _ in 0..round_trips {
                    stream.write_all(&byte)?;
                    stream.read_exact(&mut byte)?;
                }
                Ok(start.elapsed())
            })
        },
        |mut stream| {
            let mut byte = [0u8];
            while stream.read(&mut byte)? == 1 {
                stream.write_all(&byte)?;
            }
            Ok(())
        },
    );
    let result = result.map(|t| t.nanoseconds(2.0));
    (measured(result, "loopback TCP"), note)
}

/// Writes of [`WRITE`] bytes, timed until the receiver acknowledges that
/// it has read them all.
///
/// 1. The sender sends the number of writes to come, 8 bytes little-endian.
/// 2. It writes them; the receiver reads until it has them all.
/// 3. The receiver sends one byte; the sender's time ends when it arrives.
pub(super) fn stream(options: &Options) -> (Measured, String) {
    let note =
        "127.0.0.1, one connection, 1 MiB writes, until the receiver has read them all".to_string();
    let result = connected(
        |mut stream| {
            let data = vec![0x5au8; WRITE];
            repeat(options, |writes| {
                let start = Instant::now();
                stream.write_all(&writes.to_le_bytes())?;
                for _ in 0..writes {
                    stream.write_all(&data)?;
                }
                stream.read_exact(&mut [0u8])?;
                Ok(start.elapsed())
            })
        },
        |mut stream| {
            let mut buffer = vec![0u8; WRITE];
            loop {
                let mut header = [0u8; 8];
                match stream.read_exact(&mut header) {
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
                    other => other?,
                }
                let mut left = u64::from_le_bytes(header) * WRITE as u64;
                while left > 0 {
                    let want = buffer
                        .len()
                        .min(usize::try_from(left).unwrap_or(usize::MAX));
                    match stream.read(&mut buffer[..want])? {
                        0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                        n => left -= n as u64,
                    }
                }
                stream.write_all(&[1])?;
            }
        },
    );
    let result = result.map(|t| t.megabytes_per_second(WRITE));
    (measured(result, "loopback TCP"), note)
}

/// A connection over 127.0.0.1 with `TCP_NODELAY` on both ends: `client`
/// runs on one thread with its end, `server` on another with the other;
/// the client's result.
fn connected(
    client: impl FnOnce(TcpStream) -> io::Result<Timed> + Send,
    server: impl FnOnce(TcpStream) -> io::Result<()> + Send,
) -> io::Result<Timed> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let stream = TcpStream::connect(listener.local_addr()?)?;
    stream.set_nodelay(true)?;
    on_two_threads(
        None,
        move |_| client(stream),
        move |_| {
            let (stream, _) = listener.accept()?;
            stream.set_nodelay(true)?;
            server(stream)
        },
    )
}
