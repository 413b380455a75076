//! Datagrams by the run: one system call sends a run of datagrams to a
//! peer, and one reads a run the kernel kept together (Linux's UDP
//! segmentation offload, `UDP_SEGMENT` and `UDP_GRO`, since 4.18).
//!
//! 1. **Sending.** The datagrams of a run lie end to end in one buffer,
//!    all of one size but the last, which may be shorter. One `sendmsg`
//!    with a `UDP_SEGMENT` control message of that size hands them to the
//!    kernel as one packet, which is cut into the datagrams as late as
//!    the path allows (by the device, a queueing discipline, or the
//!    receiving socket). Each datagram is whole and sealed on its own: a
//!    receiver that gets them one by one sees what it would have seen
//!    without the run.
//! 2. **Refusal.** A kernel or a device that does not segment fails the
//!    call (`EINVAL`, `EIO`, `ENOPROTOOPT`, `EOPNOTSUPP`, `EMSGSIZE`);
//!    the run then goes one datagram per call, and the caller sends no
//!    runs on that socket any more ([`Runs`]). A full send buffer
//!    (`EAGAIN`, `ENOBUFS`) refuses the whole run: its datagrams are lost
//!    for the protocol to send again, as one datagram would be.
//! 3. **Receiving.** A socket with `UDP_GRO` on ([`enable_receive_runs`])
//!    may read a run of one sender's datagrams at once, with a control
//!    message giving their size; the run is cut back into its datagrams.
//!    Without it (or the control message), a read is one datagram.

use std::io;
use std::mem::MaybeUninit;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// The largest datagram this channel reads: a UDP datagram's limit, and so
/// also a run's.
pub(super) const MAX_READ: usize = 65_536;
/// The most payload of one UDP packet over IPv4 (65535 less IP and UDP
/// headers); a run is at most this long.
const MAX_RUN_BYTES: usize = 65_507;
/// The most datagrams the kernel cuts one run into (`UDP_MAX_SEGMENTS`).
const MAX_RUN_DATAGRAMS: usize = 64;

/// Whether a socket's channel still sends runs, and how long they are.
#[derive(Clone, Copy, Debug)]
pub(super) struct Runs {
    /// Datagrams in a run at most: 1 once the kernel refused a run.
    pub(super) datagrams: usize,
}

impl Runs {
    /// Runs of datagrams of `segment` bytes, as long as `limit` datagrams
    /// (at least one) and the kernel allow.
    pub(super) fn new(segment: usize, limit: usize) -> Runs {
        let fit = (MAX_RUN_BYTES / segment.max(1)).min(MAX_RUN_DATAGRAMS);
        Runs {
            datagrams: limit.min(fit).max(1),
        }
    }
}

/// How a run fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RunOutcome {
    /// Datagrams the socket refused (lost for the protocol to send again).
    pub(super) refused: u64,
    /// The kernel refused segmentation: send no more runs (step 2).
    pub(super) runs_refused: bool,
}

/// Sends the datagrams of `run`, each `segment` bytes but the last, to
/// `to`: with one call unless the run is one datagram or `runs` is off,
/// falling back to one call each if the kernel refuses (step 2).
pub(super) fn send_run(
    socket: &UdpSocket,
    to: SocketAddr,
    run: &[u8],
    segment: usize,
    runs: bool,
) -> RunOutcome {
    let mut outcome = RunOutcome {
        refused: 0,
        runs_refused: false,
    };
    if runs && run.len() > segment {
        match send_segmented(socket, to, run, segment) {
            Ok(()) => return outcome,
            Err(e) if refuses_segmentation(&e) => {
                tracing::debug!(
                    "udp send to {to}: segmentation refused ({e}): one datagram a call"
                );
                outcome.runs_refused = true;
            }
            Err(e) => {
                tracing::trace!("udp send to {to}: {e}");
                outcome.refused = run.len().div_ceil(segment) as u64;
                return outcome;
            }
        }
    }
    for datagram in run.chunks(segment) {
        if let Err(e) = send_one(socket, to, datagram) {
            tracing::trace!("udp send to {to}: {e}");
            outcome.refused += 1;
        }
    }
    outcome
}

fn refuses_segmentation(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::EIO | libc::ENOPROTOOPT | libc::EOPNOTSUPP | libc::EMSGSIZE)
    )
}

fn send_one(socket: &UdpSocket, to: SocketAddr, datagram: &[u8]) -> io::Result<()> {
    loop {
        match socket.send_to(datagram, to) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

/// One `sendmsg` of `run` with a `UDP_SEGMENT` control message.
fn send_segmented(
    socket: &UdpSocket,
    to: SocketAddr,
    run: &[u8],
    segment: usize,
) -> io::Result<()> {
    let segment = u16::try_from(segment).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let address = socket2::SockAddr::from(to);
    let mut iov = libc::iovec {
        iov_base: run.as_ptr() as *mut libc::c_void,
        iov_len: run.len(),
    };
    // Room for one control message of a u16, aligned as `cmsghdr` is.
    let mut control = [0u64; 4];
    // SAFETY: a msghdr of zeroes is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = address.as_ptr() as *mut libc::c_void;
    msg.msg_namelen = address.len();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(2) } as usize;
    debug_assert!(msg.msg_controllen <= std::mem::size_of_val(&control));
    // SAFETY: `msg` points at `control`, large enough for one header and
    // a u16 (checked above), so the first header and its data lie in it.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = libc::UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(2) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), segment);
    }
    loop {
        // SAFETY: every pointer in `msg` is to a live local or to `run`,
        // which the kernel only reads.
        let n = unsafe { libc::sendmsg(socket.as_raw_fd(), &msg, 0) };
        if n >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Lets `socket` read runs of datagrams (step 3); a kernel without
/// `UDP_GRO` reads them one by one, as before.
pub fn enable_receive_runs(socket: &UdpSocket) {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a live int of the size passed.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        tracing::debug!("UDP_GRO: {}", io::Error::last_os_error());
    }
}

/// Reads datagrams from the non-blocking `socket` until it is empty or
/// `budget` reads are done, handing each datagram to `on_datagram` (a run
/// cut into its datagrams, step 3); how many reads there were.
pub(super) fn read_datagrams(
    socket: &UdpSocket,
    budget: usize,
    mut on_datagram: impl FnMut(&[u8]),
) -> io::Result<usize> {
    let mut buf = [MaybeUninit::<u8>::uninit(); MAX_READ];
    let mut n = 0;
    while n < budget {
        match receive(socket, &mut buf) {
            Ok((len, segment)) => {
                n += 1;
                // SAFETY: the kernel wrote the first `len` bytes.
                let run = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), len) };
                match segment {
                    Some(size) if size > 0 => run.chunks(size).for_each(&mut on_datagram),
                    _ => on_datagram(run),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// One `recvmsg` into `buf`: the length read, and the size of the
/// datagrams if it read a run.
fn receive(socket: &UdpSocket, buf: &mut [MaybeUninit<u8>]) -> io::Result<(usize, Option<usize>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = [0u64; 8];
    // SAFETY: a msghdr of zeroes is a valid empty message.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control);
    // SAFETY: `msg` points at `buf` and `control`, both live and of the
    // lengths given; the kernel writes within them.
    let n = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut segment = None;
    // SAFETY: the kernel filled `msg_controllen` bytes of `control` with
    // well-formed headers; the CMSG_* walk stays within them.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == libc::UDP_GRO {
                let size = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                segment = usize::try_from(size).ok();
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, segment))
}
