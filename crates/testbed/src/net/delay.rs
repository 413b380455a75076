//! The delay queue: the process (`threadwire net delay-queue`) that holds
//! each packet a host receives for the net's delay ± jitter, then lets it
//! through ("Impairments" in the module docs).
//!
//! 1. The host's `INPUT` chain sends what arrives on `eth0` to NFQUEUE
//!    queue 0, with `--queue-bypass`: while no process has bound the queue
//!    (before it starts, after it is killed) packets pass undelayed.
//! 2. This process binds queue 0 of its namespace over netlink (the `nfq`
//!    crate), asking for metadata only (no payload is copied) and a kernel
//!    queue of at most [`LIMIT`] packets: the kernel keeps each packet
//!    until its verdict, and drops those that find the queue full (counted
//!    as `queue_dropped` in the namespace's
//!    `/proc/net/netfilter/nfnetlink_queue`, which `net show` reads).
//! 3. Each packet gets a due time as it is read: its arrival, plus the
//!    delay, plus a jitter drawn evenly from ±jitter; never before the
//!    packet ahead of it, so that jitter never reorders (TCP takes reordering
//!    for loss, and real paths rarely reorder).
//! 4. The process sleeps in `ppoll` until the first due time or a packet
//!    arrives, whichever comes first, with a timer slack of 1 ns (the
//!    default 50 µs would add to every delay), and gives each due packet
//!    its ACCEPT verdict in arrival order.
//!
//! Memory is bounded: at most [`LIMIT`] packets are held, each as the
//! kernel's copy and, here, one page of netlink buffer: 16 MiB at most
//! (measured: 22 MB resident with 4096 held, 5 MB idle).
//!
//! Throughput: a packet costs a `recv` and a verdict, two system calls;
//! measured, a TCP stream over `gige` with a 1 ms delay moved 953 Mbit/s
//! (956 without), the two queues taking 15% and 30% of a core.
//!
//! Precision, measured with `ping -U` between two hosts (user-space times:
//! plain `ping` reads the kernel's arrival stamp, taken before the queue),
//! 1000 pings 5 ms apart on a 2-core machine shared with other work,
//! `--delay 5ms`: round trips of 10.10 ms at least, 10.20 ms median,
//! 10.40 ms at the 90th percentile, 13.8 ms at the 99th, 15.3 ms at most,
//! against 0.01 ms undelayed. So 2D + 0.1 to 0.4 ms, the wake-up and
//! verdict of two queues, and a tail of a few ms when a queue waits for a
//! core. With `5ms/1ms`: 8.24 ms least, 10.20 median, 11.40 at the 90th
//! percentile (the sum of two ±1 ms jitters).

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use super::Delay;

/// The most packets held at once; the kernel drops what comes beyond.
/// Enough for 49 ms of delay at 1 Gbit/s in 1514-byte frames (490 ms at
/// 100 Mbit/s).
pub const LIMIT: u32 = 4096;

/// The queue every host's rule sends to (each namespace has its own).
pub(super) const QUEUE: u16 = 0;

/// The netlink socket's receive buffer: notices of [`LIMIT`] packets, of
/// about 1 KiB each as the kernel counts them, with room to spare.
const RECEIVE_BUFFER: libc::c_int = 8 << 20;

/// Binds the namespace's queue, calls `ready`, then holds and releases
/// packets until killed (module docs). Returns only on an error.
pub(super) fn serve(delay: Delay, ready: impl FnOnce()) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer and only sets this
    // thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
    let mut queue = nfq::Queue::open()?;
    queue.bind(QUEUE)?;
    queue.set_copy_range(QUEUE, 0)?;
    queue.set_queue_max_len(QUEUE, LIMIT)?;
    let fd = netfilter_socket()?;
    let size = RECEIVE_BUFFER;
    // SAFETY: `fd` is an open socket; the option value is a live c_int of
    // the length given.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    queue.set_nonblocking(true);
    ready();

    let mut jitter = Jitter::new(delay.jitter);
    let mut held: VecDeque<(Instant, nfq::Message)> = VecDeque::new();
    let mut last_due = Instant::now();
    loop {
        let now = Instant::now();
        while held.front().is_some_and(|(due, _)| *due <= now) {
            if let Some((_, message)) = held.pop_front() {
                // A message's verdict is ACCEPT unless set otherwise.
                queue.verdict(message)?;
            }
        }
        let timeout = held
            .front()
            .map(|(due, _)| due.saturating_duration_since(now));
        if !readable(fd, timeout)? {
            continue;
        }
        loop {
            match queue.recv() {
                Ok(message) => {
                    let due = jitter.apply(Instant::now() + delay.delay).max(last_due);
                    last_due = due;
                    held.push_back((due, message));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// The process's netfilter netlink socket, the one `nfq::Queue::open`
/// made: the crate does not give its descriptor out, and this process has
/// no other (a helper opens nothing else).
fn netfilter_socket() -> io::Result<RawFd> {
    let option = |fd: RawFd, name: libc::c_int| -> Option<libc::c_int> {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `value` and `len` are live and sized for a c_int; a
        // descriptor that is not a socket makes the call fail, no more.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(value)
    };
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Some(fd) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if option(fd, libc::SO_DOMAIN) == Some(libc::AF_NETLINK)
            && option(fd, libc::SO_PROTOCOL) == Some(libc::NETLINK_NETFILTER)
        {
            return Ok(fd);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        "no netfilter netlink socket among this process's descriptors",
    ))
}

/// Waits until `fd` is readable or `timeout` has passed (forever if
/// `None`); says whether it is readable.
fn readable(fd: RawFd, timeout: Option<Duration>) -> io::Result<bool> {
    let mut pollfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let spec = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let spec_ptr = spec
        .as_ref()
        .map_or(std::ptr::null(), |s| s as *const libc::timespec);
    // SAFETY: `pollfd` is one live pollfd; `spec_ptr` is null or points to
    // a live timespec; no signal mask is passed.
    let rc = unsafe { libc::ppoll(&mut pollfd, 1, spec_ptr, std::ptr::null()) };
    match rc {
        -1 => {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => Ok(false),
                _ => Err(e),
            }
        }
        0 => Ok(false),
        _ => Ok(true),
    }
}

/// Uniform jitter in ±`spread` (xorshift64*: fast, and good enough to
/// spread delays).
struct Jitter {
    spread_ns: u64,
    state: u64,
}

impl Jitter {
    fn new(spread: Duration) -> Jitter {
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Jitter {
            spread_ns: spread.as_nanos() as u64,
            state: (clock ^ u64::from(std::process::id()).rotate_left(32)) | 1,
        }
    }

    fn apply(&mut self, due: Instant) -> Instant {
        if self.spread_ns == 0 {
            return due;
        }
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let random = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let offset = random % (2 * self.spread_ns + 1);
        let shifted = due + Duration::from_nanos(offset);
        shifted
            .checked_sub(Duration::from_nanos(self.spread_ns))
            .unwrap_or(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_within_its_spread() {
        let spread = Duration::from_micros(500);
        let mut jitter = Jitter::new(spread);
        let base = Instant::now() + Duration::from_secs(1);
        let (mut early, mut late) = (false, false);
        for _ in 0..10_000 {
            let due = jitter.apply(base);
            assert!(due + spread >= base && due <= base + spread);
            early |= due + spread / 2 < base;
            late |= due > base + spread / 2;
        }
        assert!(early && late, "the jitter does not spread both ways");
        assert_eq!(Jitter::new(Duration::ZERO).apply(base), base);
    }
}
