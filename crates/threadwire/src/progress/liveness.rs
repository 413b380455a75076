//! Liveness: finding peer nodes that have fallen silent.
//!
//! A peer that ends, even by SIGKILL, closes its connections, and the
//! driver sees the end of stream. A peer that goes silent closes nothing:
//! its process stopped (SIGSTOP, a debugger), its host's link cut, its
//! network namespace deleted, its host frozen. Without this module a
//! receive from it would wait forever. With it, such a peer is lost with
//! [`Failure::Silent`] within the peer timeout `T`
//! ([`Config::peer_timeout`](crate::Config::peer_timeout),
//! `THREADWIRE_PEER_TIMEOUT`, default 1 s; zero turns it off).
//!
//! # The protocol
//!
//! What counts as "heard from" is the kernel's own count of the time since
//! data last arrived on the pair's TCP connection (`TCP_INFO`,
//! [`TcpChannel::quiet`]): the send and receive paths do no work for it at
//! all, and it counts bytes that arrive while no thread of this node reads.
//! Every pair has that connection; between nodes of one host, whose data
//! goes through shared-memory rings, it carries the heartbeats alone.
//!
//! 1. Every node with peers runs a timer thread, the liveness thread, from
//!    the moment its router exists — before its own connections are made,
//!    so that a peer that finished joining sooner hears from it — until
//!    the end of finalization. It wakes every tick, `T / 8`.
//! 2. At each tick, for every peer with a connection that has not failed,
//!    and for the launcher's connection: if the kernel sent no data on it
//!    for half a tick and nothing waits in its send queue, a
//!    [`FrameKind::Heartbeat`](threadwire_wire::FrameKind::Heartbeat) frame
//!    (a bare header, the timeout in `aux`, which the launcher reads:
//!    control protocol, step 7) goes on it. A connection that carries
//!    data carries no heartbeats; a heartbeat behind queued bytes would
//!    arrive no sooner than they.
//!    Peers that have said goodbye still get them: finalizing, they wait
//!    for this node's goodbye and watch for its silence meanwhile.
//! 3. If no thread drives the progress engine (it is free, and there is no
//!    communication thread), the liveness thread polls it once, epoll
//!    included. A node whose threads all compute outside the runtime thus
//!    still reads its sockets a few times a second: otherwise a peer's
//!    data could fill its receive window, the peer's heartbeats could not
//!    land behind it, and the peer would look silent while alive.
//! 4. For every peer that has neither said goodbye nor been lost, and has
//!    a connection whose channel choice is settled (`peer`'s set-up, on
//!    both ends): if the kernel received no data from it for
//!    `T − 5/4 tick`, it is lost with [`Failure::Silent`] through [`Router::lose_peer`]:
//!    every operation pending on it ends with `PeerLost`, subscribers are
//!    told, and its connection is closed — a stopped node that resumes
//!    finds itself cut off, and its peers' ends of stream tell it so.
//!    A pair still setting up its channel is joining, not watched for
//!    silence: its set-up messages travel on TCP, the peer's heartbeats
//!    wait behind a lost one, and on a lossy link that wait outlasts `T`
//!    (TCP's first retransmission comes after one second when the
//!    connection's handshake lost a packet, then two, four …; measured
//!    with 10% loss: a live peer whose UDP offer was lost taken for
//!    silent after 844 ms, in about one all-to-all job of 20). Its
//!    set-up has a deadline instead, the dial's (10 s from the
//!    connection, `peer::dial`): a peer that falls silent while setting
//!    up is lost with [`Failure::Channel`] then. Once both ends have
//!    settled, the channel that carries the keep-alives (step 7, or the
//!    TCP connection itself) is in place on both.
//! 5. The thread also uncorks connections that stopped streaming
//!    (`threadwire_transport`'s `cork` module, step 4): it watches the
//!    node's connections for corking ([`Router::corking`], set here, so
//!    that a node without this thread never corks), a connection that
//!    corks wakes it, and while any is corked it wakes every millisecond
//!    and uncorks those that sent nothing since its last look — the last
//!    frames of a stream whose sender went on computing leave within
//!    about two milliseconds. (A thread of the node that starts to wait
//!    uncorks every connection at once: `progress`, step 11.)
//! 6. While a UDP channel of the node waits for acknowledgements
//!    (`THREADWIRE_CHANNEL=udp`), the thread also polls the engine every
//!    millisecond if nobody else does: the channel's loss and probe
//!    timers fire then, so a tail lost while every thread computes is
//!    sent again within about a millisecond of its timer.
//! 7. A pair on the UDP channel also gets a keep-alive datagram each
//!    tick (a ping the peer acknowledges), and a datagram accepted from
//!    the peer counts as hearing from it, as a TCP byte does: on a lossy
//!    network a heartbeat behind a lost TCP segment waits for the
//!    segment's retransmission (200 ms, then 400, 800 …), while each
//!    datagram is lost or not on its own. (Measured: with 10% of packets
//!    dropped, a TCP-only watch took a live peer for silent after 876 ms.)
//! 8. A node with a multicast stream announces itself each tick while a
//!    live peer has not joined it (`peer::multicast`, step 2); step 6
//!    covers the stream's timers too.
//!
//! A peer that falls silent at time `s` sent its last byte by `s`; the
//! first tick after `s + T − 5/4 tick` finds it, so by `s + T − tick/4`:
//! within `T`, with a quarter tick (31 ms by default) for the lateness of
//! this thread's own timer and the kernel's clock tick. A live peer's data
//! or heartbeat arrives at least every tick and a half (step 2), so a
//! false alarm needs about five heartbeats in a row to be late: the peer's
//! liveness thread must get no CPU for some `2T/3`.
//!
//! # What is and is not told apart
//!
//! - A node busy computing in every thread is not taken for lost: its
//!   liveness thread answers (steps 2 and 3) whatever its other threads
//!   do, fibers and communication thread or none.
//! - A node whose liveness thread gets no CPU for about `T` — the process
//!   stopped, or a host so oversubscribed that a thread that sleeps 8
//!   times a second is not run for a second — is indistinguishable from a
//!   dead one, and is lost. Raise the timeout for such hosts.
//! - Nodes of one host use the same protocol over their connection.
//!   Process liveness (a pidfd) would tell only of an exit, which the
//!   closing connection already tells; a stopped or hung process shows
//!   only by its silence.
//! - The launcher watches the same way, on its own connection to each
//!   node, with a longer timeout (launcher's `job` module, step 5): the
//!   peers find a silent node first, and the launcher ends its process
//!   later, so that a stopped node neither keeps the job from ending nor
//!   comes back to a job that has given it up. The launcher does not act
//!   on the peers' word: a node cut off from some peers only is lost to
//!   them, not killed.
//! - Before a pair's connection exists and has settled its channel
//!   nothing is checked: joining has a timeout of its own (step 4).
//! - A node stopped in a debugger is lost too: debug with the timeout at
//!   zero or well above the pauses.
//!
//! # Cost
//!
//! Nothing per message: the kernel keeps the times. Per tick and peer, a
//! `getsockopt` and, on a quiet connection, a 32-byte frame. The thread
//! itself has one price: a node process that had no other thread becomes
//! multi-threaded, and the C library and the kernel then take their slower,
//! thread-safe paths on every system call (an idle thread preloaded into
//! the old binary costs the same; a zero timeout, with no thread, costs
//! nothing; the tick rate does not matter). Measured on 8-byte TCP
//! ping-pong between single-threaded nodes: +0.15–0.2 µs one-way on a quiet
//! machine, about +0.5 µs on a loaded one; nothing on shared memory, whose
//! messages make no system call, and nothing for nodes that have threads
//! of their own (docs/PERFORMANCE-STUDIES.md, "Silent peers (issue 14)").

use crate::control::Control;
use crate::error::{Failure, LossCause};
use crate::lock;
use crate::progress::ProgressEngine;
use crate::router::Router;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use threadwire_fiber::{Parker, Unparker};
use threadwire_transport::{Channel, Corking, TcpChannel};

/// Ticks per peer timeout (step 1).
const TICKS: u32 = 8;
/// How often idle corked connections are looked for (step 5).
const CORK_LOOK: Duration = Duration::from_millis(1);
/// How long a pair may take to settle its channel once connected
/// (step 4): as long as a dial may take.
const SETUP_TIMEOUT: Duration = crate::peer::dial::DIAL_TIMEOUT;

/// What the liveness thread watches: the node, seen as its router and its
/// engine.
pub(crate) trait Watched: Send + Sync + 'static {
    fn router(&self) -> &Router;
    fn engine(&self) -> &ProgressEngine;
}

/// A node's liveness thread, if it runs one.
#[derive(Default)]
pub(crate) struct Liveness {
    signal: Arc<StopSignal>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct StopSignal {
    stop: AtomicBool,
    /// The thread's parker, once it has one.
    unparker: OnceLock<Unparker>,
}

impl StopSignal {
    fn raise(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(u) = self.unparker.get() {
            u.unpark();
        }
    }
}

impl Liveness {
    /// Step 1: starts the liveness thread of `node`, which holds it weakly
    /// and ends once it is gone, or at [`stop`](Self::stop).
    pub(crate) fn start<N: Watched>(&self, node: Weak<N>, timeout: Duration) -> std::io::Result<()> {
        let Some(me) = node.upgrade() else {
            return Ok(());
        };
        let name = format!("n{}-liveness", me.router().id);
        let signal = self.signal.clone();
        let woken = self.signal.clone();
        let corking = Corking::new(move || {
            if let Some(u) = woken.unparker.get() {
                u.unpark();
            }
        });
        let _ = me.router().corking.set(corking.clone());
        drop(me);
        let tick = timeout / TICKS;
        let handle = std::thread::Builder::new().name(name).spawn(move || {
            let parker = Parker::new();
            let _ = signal.unparker.set(parker.unparker());
            let mut next_check = Instant::now() + tick;
            let mut udp_waiting = false;
            while !signal.stop.load(Ordering::SeqCst) {
                // Steps 5 and 6: while a connection is corked or a UDP
                // channel waits, a look every millisecond.
                let wait = next_check.saturating_duration_since(Instant::now());
                match corking.any() || udp_waiting {
                    true => parker.park_timeout(wait.min(CORK_LOOK)),
                    false => parker.park_timeout(wait),
                }
                if signal.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Some(node) = node.upgrade() else {
                    return;
                };
                node.router().uncork_idle();
                udp_waiting = node.router().udp_waiting();
                if udp_waiting {
                    node.engine().sweep(node.router());
                }
                if Instant::now() >= next_check {
                    check(node.router(), node.engine(), timeout);
                    next_check = Instant::now() + tick;
                }
            }
        })?;
        *lock(&self.thread) = Some(handle);
        Ok(())
    }

    /// Stops the thread and waits for it (unless called on it).
    pub(crate) fn stop(&self) {
        self.signal.raise();
        let handle = lock(&self.thread).take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

impl Drop for Liveness {
    fn drop(&mut self) {
        // Not joined: the last handle to the node may be the thread's own.
        self.signal.raise();
    }
}

/// What step 4 knows of a peer at a tick.
#[derive(Clone, Copy, Debug)]
struct Watch {
    /// Whether the pair's channel choice is settled at this end.
    settled: bool,
    /// How long the pair's connection has been installed.
    connected_for: Duration,
    /// How long nothing arrived from the peer: no TCP data, no datagram.
    quiet: Duration,
}

/// Step 4's verdict on a peer: the failure it is lost with, if any.
fn verdict(watch: Watch, timeout: Duration) -> Option<Failure> {
    let tick = timeout / TICKS;
    let silent_after = timeout - tick - tick / 4;
    match watch.settled {
        true if watch.quiet >= silent_after => Some(Failure::Silent {
            ms: watch.quiet.as_millis() as u64,
        }),
        false if watch.connected_for >= SETUP_TIMEOUT => Some(Failure::Channel(format!(
            "channel set-up unfinished {} s after connecting",
            watch.connected_for.as_secs()
        ))),
        _ => None,
    }
}

/// One tick: steps 2 to 4.
fn check(router: &Router, engine: &ProgressEngine, timeout: Duration) {
    let tick = timeout / TICKS;
    let timeout_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
    engine.sweep(router);
    router.announce_multicast();
    if let Some(launcher) = router.control.get().and_then(Channel::as_tcp) {
        if launcher.quiet().is_ok_and(|q| q.sent >= tick / 2) {
            heartbeat(launcher, timeout_ms);
        }
    }
    for (j, peer) in router.peers[..router.nodes() as usize].iter().enumerate() {
        let j = j as u32;
        let Some(tcp) = peer.tcp().and_then(Channel::as_tcp) else {
            continue;
        };
        if j == router.id || !router.readable(j) {
            continue;
        }
        let Ok(mut quiet) = tcp.quiet() else {
            continue;
        };
        if quiet.sent >= tick / 2 {
            heartbeat(tcp, timeout_ms);
        }
        if let Some(udp) = peer.udp() {
            // Step 7: a keep-alive datagram each tick, and a datagram
            // heard counts as much as a TCP byte.
            udp.ping();
            quiet.received = quiet.received.min(udp.quiet());
        }
        if peer.lost().is_some() {
            continue;
        }
        let watch = Watch {
            settled: peer.ready(),
            connected_for: peer.connected_for(),
            quiet: quiet.received,
        };
        if let Some(failure) = verdict(watch, timeout) {
            router.lose_peer(j, LossCause::Failed(failure));
        }
    }
}

/// Step 2's frame, unless bytes wait already. Peers ignore the timeout
/// it carries; the launcher watches by it.
fn heartbeat(tcp: &TcpChannel, timeout_ms: u32) {
    if tcp.queued_bytes() > 0 {
        return;
    }
    let (header, payload) = Control::Heartbeat { timeout_ms }.encode();
    // A failure shows as the connection's loss on its read side.
    let _ = tcp.send(&header, payload);
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(1);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A settled pair quiet for `T − 5/4 tick` is silent: a stopped peer
    /// is found within `T` (issue 14).
    #[test]
    fn a_settled_pair_quiet_for_the_threshold_is_silent() {
        let quiet = |q| Watch {
            settled: true,
            connected_for: ms(5000),
            quiet: q,
        };
        assert_eq!(verdict(quiet(ms(843)), T), None);
        assert_eq!(verdict(quiet(ms(844)), T), Some(Failure::Silent { ms: 844 }));
        assert!(verdict(quiet(ms(3000)), T).is_some());
    }

    /// The flake of cli_udp's lossy test: the UDP offer was lost, TCP
    /// had not sent it again 844 ms later (its first retransmission after
    /// a lost handshake packet comes at one second), and the live peer
    /// was taken for silent. A pair setting up is not watched for silence.
    #[test]
    fn a_pair_setting_up_is_not_silent_while_its_messages_are_repaired() {
        let setting_up = Watch {
            settled: false,
            connected_for: ms(900),
            quiet: ms(900),
        };
        assert_eq!(verdict(setting_up, T), None);
        let later = Watch {
            connected_for: ms(7100),
            quiet: ms(7100),
            ..setting_up
        };
        assert_eq!(verdict(later, T), None);
    }

    /// A peer that falls silent while setting up is lost by the set-up's
    /// deadline; nothing waits forever.
    #[test]
    fn a_set_up_past_its_deadline_loses_the_peer() {
        let overdue = Watch {
            settled: false,
            connected_for: SETUP_TIMEOUT,
            quiet: ms(50),
        };
        assert!(matches!(verdict(overdue, T), Some(Failure::Channel(_))));
    }

    /// A shorter timeout scales the threshold: an eighth of it per tick.
    #[test]
    fn the_threshold_follows_the_timeout() {
        let watch = |q| Watch {
            settled: true,
            connected_for: ms(5000),
            quiet: q,
        };
        let t = ms(200);
        assert_eq!(verdict(watch(ms(168)), t), None);
        assert!(verdict(watch(ms(169)), t).is_some());
    }
}
