//! [`McastChannel`] on real sockets: three nodes on 127.0.0.1 in a
//! network namespace of the test's own, so no datagram leaves the host.

use super::super::*;
use crate::Frame;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire_wire::{Format, FrameHeader, Payload};

/// Moves the calling thread into a new network namespace with `lo` up
/// and multicast routed to it; why not, if it cannot.
fn private_loopback() -> Result<(), String> {
    // SAFETY: unshare takes no pointers; it changes only the calling
    // thread's namespaces, and this thread is the test's own.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "unshare(CLONE_NEWNET): {}",
            std::io::Error::last_os_error()
        ));
    }
    // Children forked from this thread start in its namespace.
    for args in [
        &["link", "set", "lo", "up", "multicast", "on"][..],
        &["route", "add", "224.0.0.0/4", "dev", "lo"][..],
    ] {
        let status = Command::new("ip")
            .args(args)
            .status()
            .map_err(|e| format!("ip {args:?}: {e}"))?;
        if !status.success() {
            return Err(format!("ip {args:?}: {status}"));
        }
    }
    Ok(())
}

struct Node {
    socket: Arc<std::net::UdpSocket>,
    channel: McastChannel,
    got: Vec<(u32, Frame)>,
}

#[test]
fn three_channels_exchange_frames_over_loopback_multicast() {
    let outcome = std::thread::spawn(|| {
        if let Err(why) = private_loopback() {
            eprintln!("skipping: no network namespace of our own: {why}");
            return;
        }
        exchange();
    })
    .join();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

fn exchange() {
    let group = group_for(7);
    let config = McastConfig {
        lost_after: Duration::from_secs(10),
        ..McastConfig::default()
    };
    let mut nodes: Vec<Node> = (0..3)
        .map(|me| {
            let socket =
                Arc::new(open_socket(group, Ipv4Addr::LOCALHOST).expect("multicast socket"));
            let channel = McastChannel::new(
                socket.clone(),
                group,
                me,
                [5; 32],
                7,
                config.clone(),
                1 << 20,
            );
            Node {
                socket,
                channel,
                got: Vec::new(),
            }
        })
        .collect();
    const FRAMES: u32 = 50;
    let payload = |me: u32, i: u32| -> Vec<u8> {
        (0..(i as usize * 997) % 30_000 + 1)
            .map(|k| (k as u32 ^ me ^ i) as u8)
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut sent = false;
    let everyone = |nodes: &[Node]| nodes.iter().all(|n| n.channel.receivers().len() == 2);
    loop {
        if !sent && everyone(&nodes) {
            // Everyone joined everyone: each stream starts now.
            for (me, n) in nodes.iter().enumerate() {
                for i in 0..FRAMES {
                    let p = payload(me as u32, i);
                    let h = FrameHeader::data(me as u32, 0, i, Format::OPAQUE, p.len() as u64);
                    n.channel.send(&h, Payload::from_vec(p)).expect("send");
                }
            }
            sent = true;
        }
        if !sent {
            nodes.iter().for_each(|n| n.channel.announce());
        }
        if sent && nodes.iter().all(|n| n.got.len() == 2 * FRAMES as usize) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "received {:?}",
            nodes.iter().map(|n| n.got.len()).collect::<Vec<_>>()
        );
        wait(&nodes, sent);
        pump(&mut nodes);
    }
    for (me, n) in nodes.iter().enumerate() {
        for from in (0..3u32).filter(|&f| f != me as u32) {
            let frames: Vec<&Frame> = n
                .got
                .iter()
                .filter(|(f, _)| *f == from)
                .map(|(_, f)| f)
                .collect();
            assert_eq!(frames.len(), FRAMES as usize);
            for (i, f) in frames.iter().enumerate() {
                assert_eq!(f.header.tag, i as u32, "n{me} from n{from}: in order");
                assert_eq!(f.payload, payload(from, i as u32));
            }
        }
        let s = n.channel.stats();
        assert!(s.sent > 0 && s.received > 0, "n{me}: {s:?}");
    }
    // Every acknowledgement in, nothing is held.
    let held = Instant::now() + Duration::from_secs(5);
    while nodes.iter().any(|n| n.channel.queued_bytes() > 0) {
        assert!(
            Instant::now() < held,
            "held {:?}",
            nodes
                .iter()
                .map(|n| n.channel.queued_bytes())
                .collect::<Vec<_>>()
        );
        wait(&nodes, true);
        pump(&mut nodes);
    }
}

/// One turn of each node's progress: datagrams in, timers, frames out,
/// control messages carried (the unicast channels, in memory), sends.
fn pump(nodes: &mut [Node]) {
    for n in nodes.iter_mut() {
        let channel = &n.channel;
        receive_datagrams(&n.socket, 256, |d| channel.on_datagram(d)).expect("recv");
        if channel.timeout().is_some_and(|t| t <= Instant::now()) {
            assert!(
                channel.on_timeout(Instant::now()).is_empty(),
                "nobody is lost"
            );
        }
        let got = &mut n.got;
        channel
            .receive(|from, f| got.push((from, f)))
            .expect("frames");
    }
    let controls: Vec<(u32, Vec<(u32, Control)>)> = nodes
        .iter()
        .enumerate()
        .map(|(me, n)| (me as u32, n.channel.poll_control()))
        .collect();
    for (from, list) in controls {
        for (to, c) in list {
            let c = Control::decode(&c.encode()).expect("control round trip");
            nodes[to as usize].channel.on_control(from, c);
        }
    }
    nodes.iter().for_each(|n| n.channel.flush());
}

/// Waits for a datagram on any socket or the earliest channel timer
/// (10 ms while joining, when announcements repeat).
fn wait(nodes: &[Node], sent: bool) {
    let now = Instant::now();
    let mut until = now + Duration::from_millis(10);
    if sent {
        until = nodes
            .iter()
            .filter_map(|n| n.channel.timeout())
            .min()
            .unwrap_or(until)
            .min(until);
    }
    let ms = until.saturating_duration_since(now).as_millis() as i32;
    let mut fds: Vec<libc::pollfd> = nodes
        .iter()
        .map(|n| libc::pollfd {
            fd: n.socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `fds` is a live array of `fds.len()` pollfd structures.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}
