//! The load's source: the process (`threadwire net load-source`) in the
//! net's namespace `pload` that sends every host UDP at a fraction of its
//! link's rate ("Impairments" in the module docs).
//!
//! 1. Every millisecond (a deadline slept to, not a poll), each host is
//!    owed `F × rate × elapsed` bytes of frames, counted as `tc` counts
//!    them: 1472 bytes of payload are a 1514-byte Ethernet frame.
//! 2. What is owed goes out in whole frames, to the host's port 9
//!    (discard), up to 44 frames per `sendmsg` with UDP segmentation
//!    offload (`UDP_SEGMENT`): one system call per 64 KiB keeps the
//!    source's CPU small at 1 Gbit/s. Where the kernel refuses
//!    segmentation, one datagram per frame.
//! 3. Debt is capped at 4 ms of the rate, so a source that was
//!    descheduled does not catch up in one burst.
//!
//! The frames reach the host through its receive link's token bucket,
//! where they compete with the job's packets, and a rule at the head of
//! the host's `INPUT` chain drops them (neither lost nor delayed by the
//! other impairments, nor answered).

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use super::Load;

/// The port the load is sent to (discard) and dropped at.
pub(super) const PORT: u16 = 9;
/// UDP payload per frame: a 1500-byte IP packet.
const PAYLOAD: usize = 1472;
/// What `tc` counts per frame: payload, UDP, IP and Ethernet headers.
const FRAME: u64 = PAYLOAD as u64 + 8 + 20 + 14;
/// Frames per `sendmsg` with segmentation: 64,768 bytes, under UDP's
/// 65,507.
const FRAMES_PER_SEND: u64 = 44;
const TICK: Duration = Duration::from_millis(1);
/// The most debt, in ticks of the rate.
const MAX_DEBT_TICKS: u64 = 4;
/// `UDP_SEGMENT` (linux/udp.h), which the libc crate does not name.
const UDP_SEGMENT: libc::c_int = 103;

/// Sends `load` of `rate_kbit` to each of `hosts` until killed, having
/// called `ready` once its socket is open. Returns only on an error.
pub(super) fn serve(
    load: Load,
    rate_kbit: u32,
    hosts: &[Ipv4Addr],
    ready: impl FnOnce(),
) -> io::Result<()> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    let mut segmented = enable_segmentation(&socket);
    ready();
    let bytes_per_second = u64::from(rate_kbit) * 1000 / 8 * u64::from(load.permille()) / 1000;
    let max_debt = bytes_per_second * MAX_DEBT_TICKS * TICK.as_micros() as u64 / 1_000_000;
    let payload = vec![0u8; PAYLOAD * FRAMES_PER_SEND as usize];
    let mut debt = vec![0u64; hosts.len()];
    let mut last = Instant::now();
    let mut next = last + TICK;
    loop {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let now = Instant::now();
        let owed = bytes_per_second * now.duration_since(last).as_micros() as u64 / 1_000_000;
        last = now;
        next += TICK;
        if next < now {
            next = now + TICK;
        }
        for (host, debt) in hosts.iter().zip(&mut debt) {
            *debt = (*debt + owed).min(max_debt.max(FRAME));
            let mut frames = *debt / FRAME;
            *debt -= frames * FRAME;
            let to = SocketAddrV4::new(*host, PORT);
            while frames > 0 {
                let batch = if segmented {
                    frames.min(FRAMES_PER_SEND)
                } else {
                    1
                };
                match socket.send_to(&payload[..batch as usize * PAYLOAD], to) {
                    Ok(_) => {}
                    // A host's queue or ARP entry can refuse a moment's
                    // frames: load not sent is load not owed.
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) if e.raw_os_error() == Some(libc::EHOSTUNREACH) => {}
                    Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                    // A device that cannot checksum segments refuses them
                    // only at the first send.
                    Err(e) if segmented && e.raw_os_error() == Some(libc::EIO) => {
                        segmented = false;
                        continue;
                    }
                    Err(e) => return Err(e),
                }
                frames -= batch;
            }
        }
    }
}

/// Asks the kernel to cut each datagram into `PAYLOAD`-byte frames;
/// whether it agreed.
fn enable_segmentation(socket: &UdpSocket) -> bool {
    let size = PAYLOAD as libc::c_int;
    // SAFETY: the socket is open; the option value is a live c_int of the
    // length given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            UDP_SEGMENT,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    rc == 0
}
