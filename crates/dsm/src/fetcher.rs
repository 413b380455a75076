//! The fetcher thread (engine rule 2): faulting threads write the units
//! they wait for into a pipe (module `fault`, step 3); the fetcher asks
//! their homes for all those waiting at once, and installs each as its
//! reply comes, until the engine stops.
//!
//! 1. With nothing in flight it sleeps in `poll` on the pipe (and the
//!    stop descriptor); with requests in flight it only drains the pipe.
//! 2. Every unit read is asked of its home (`dsm.fetch`).
//! 3. It waits for any reply, and installs it. A reply older than a notice
//!    acquired meanwhile, or a home's "not yet" (rules 5 and 8), is asked
//!    again; a home that cannot answer ends the node (`engine::fatal`).
//!
//! A spin before sleeping was measured and dropped: on 2 cores the
//! spinning fetcher took the core of the thread it served (remote faults
//! 33–116 µs against 26–37 µs).

use crate::engine::{fatal, Engine};
use crate::traffic::{Kind, Sent};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::Ordering;
use threadwire::{AmRequest, Endpoint, Handler, Payload};

/// Runs the fetcher of `engine` until `stop` is readable.
pub fn run(engine: &Engine, ep: &Endpoint, handler: &Handler, stop: &OwnedFd) {
    let mut pending: Vec<AmRequest> = Vec::new();
    let mut asked: Vec<(u32, Sent)> = Vec::new();
    let mut arrived: Vec<u32> = Vec::new();
    let ask = |u: u32, pending: &mut Vec<AmRequest>, asked: &mut Vec<(u32, Sent)>| {
        let sent = engine.traffic.sent(Kind::Fetch, 4);
        pending.push(ep.am_request(engine.home(u), handler, u.to_le_bytes().to_vec()));
        asked.push((u, sent));
    };
    loop {
        arrived.clear();
        if waiting_units(engine.to_fetch(), &mut arrived, pending.is_empty(), stop).is_none() {
            return;
        }
        for &u in &arrived {
            ask(u, &mut pending, &mut asked);
        }
        engine
            .counters
            .most_in_flight
            .fetch_max(pending.len() as u64, Ordering::Relaxed);
        let Some((i, reply)) = threadwire::wait_any(&mut pending) else {
            continue;
        };
        let (u, sent) = asked.remove(i);
        let installed = match reply {
            Ok(bytes) => {
                engine.traffic.answered(&sent, bytes.len());
                with_bytes(&bytes, |b| engine.install(u, b))
            }
            Err(e) => Err(io::Error::other(e.to_string())),
        };
        match installed {
            Ok(true) => {}
            Ok(false) => ask(u, &mut pending, &mut asked),
            Err(e) => {
                let what = format!("cannot be fetched from its home, node {}", engine.home(u));
                fatal(u, &what, &e)
            }
        }
    }
}

/// `f` over a reply's bytes: in place when they are in one piece (as a
/// unit's reply is), else gathered.
fn with_bytes<T>(payload: &Payload, f: impl FnOnce(&[u8]) -> T) -> T {
    let mut segments = payload.segments();
    match (segments.next(), segments.next()) {
        (Some(one), None) => f(one),
        (None, _) => f(&[]),
        _ => f(&payload.to_vec()),
    }
}

/// Step 1: reads the units waiting in the pipe `read`; blocks for the
/// first when `wait`. `None` once `stop` is readable.
fn waiting_units(read: RawFd, into: &mut Vec<u32>, wait: bool, stop: &OwnedFd) -> Option<()> {
    if wait {
        let mut fds = [
            libc::pollfd {
                fd: read,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two pollfds, no timeout; EINTR only retries.
        while unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {}
        if fds[1].revents != 0 {
            return None;
        }
    }
    let mut buf = [0u8; 4 * 256];
    loop {
        // SAFETY: reading into our buffer from our non-blocking pipe.
        let n = unsafe { libc::read(read, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return Some(());
        }
        // Writes of 4 bytes are atomic, so reads come in whole units.
        let n = n as usize;
        into.extend(
            buf[..n]
                .chunks_exact(4)
                .map(|c| u32::from_ne_bytes(c.try_into().expect("4 bytes"))),
        );
        if n < buf.len() {
            return Some(());
        }
    }
}
