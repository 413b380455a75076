//! Corking a connection that streams, so that small frames share packets.
//!
//! Every channel sets `TCP_NODELAY`: a frame leaves at once, which a
//! conversation (a request, its answer) needs. A thread that sends small
//! frames back to back without hearing from its peer pays for it: each
//! frame is a packet and a pass through both hosts' network stacks. Between
//! two emulated hosts on a 100 Mbit link, 8-byte messages went one to a
//! 118-byte packet, the sender's core busy in the kernel (docs/PERFORMANCE.md,
//! "PVM programs"). While a connection streams, Nagle's algorithm is the
//! better rule: Linux (Minshall's variant) holds a small segment only while
//! an earlier small one is unacknowledged, so the frames written meanwhile
//! leave together in full segments, each write a copy into the socket.
//!
//! 1. A channel counts the frames with a payload it sends since it last
//!    read bytes from its peer. Bare headers (doorbells, heartbeats, the
//!    goodbye) do not count: they are the conversation.
//! 2. At [`CORK_AFTER`] such frames, if a [`Corking`] watches the channel
//!    ([`TcpChannel::watch_corking`](super::TcpChannel::watch_corking)), it
//!    corks: clears `TCP_NODELAY`, and the watch counts it and runs its
//!    hook (which wakes whoever uncorks idle channels). Unwatched channels
//!    never cork.
//! 3. Reading bytes from the peer starts the count again; a corked channel
//!    stays corked.
//! 4. The channel uncorks — sets `TCP_NODELAY` again, which sends at once
//!    whatever Nagle holds — when its owner says so
//!    ([`TcpChannel::uncork`](super::TcpChannel::uncork)): threadwire does
//!    when any of the node's threads starts to wait, since an answer may
//!    depend on the frames held; and when the channel has sent nothing
//!    since the owner's previous look
//!    ([`TcpChannel::uncork_if_idle`](super::TcpChannel::uncork_if_idle)),
//!    which threadwire's timer thread takes every millisecond while any
//!    channel of the node is corked. Closing the channel uncorks it too.
//!
//! So the last frames of a stream wait for nothing when their sender goes
//! on to wait for an answer, and at most about two milliseconds when it
//! goes on computing; a conversation never corks.

use mio::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Frames with a payload sent without hearing from the peer before a
/// channel corks (step 2). A conversation sends one or a few; a stream
/// many more.
pub const CORK_AFTER: u32 = 16;

/// The channels of one owner that may cork: how many are corked, and what
/// to do when one corks (step 2).
pub struct Corking {
    corked: AtomicUsize,
    on_cork: Box<dyn Fn() + Send + Sync>,
}

impl Corking {
    /// A watch that calls `on_cork` each time one of its channels corks.
    pub fn new(on_cork: impl Fn() + Send + Sync + 'static) -> Arc<Corking> {
        Arc::new(Corking {
            corked: AtomicUsize::new(0),
            on_cork: Box::new(on_cork),
        })
    }

    /// Whether any channel watched is corked now.
    #[inline]
    pub fn any(&self) -> bool {
        self.corked.load(Ordering::SeqCst) > 0
    }
}

impl std::fmt::Debug for Corking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Corking")
            .field("corked", &self.corked.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// One channel's part (steps 1–4).
#[derive(Default)]
pub(super) struct Cork {
    watch: OnceLock<Arc<Corking>>,
    /// Frames with a payload sent since bytes were last read (step 1).
    streak: AtomicU32,
    /// A copy of `state` for the senders' look, which takes no lock.
    corked: AtomicBool,
    /// Whether a frame went out since the owner's last idle look.
    sent_since_look: AtomicBool,
    /// Whether the socket is corked: changed, with the socket option and
    /// the watch's count, under this lock alone.
    state: Mutex<bool>,
}

impl Cork {
    pub(super) fn watch(&self, watch: Arc<Corking>) {
        let _ = self.watch.set(watch);
    }

    /// Steps 1 and 2, after a frame whose payload is `len` bytes was
    /// accepted.
    #[inline]
    pub(super) fn sent(&self, socket: &TcpStream, len: u64) {
        if len == 0 {
            return;
        }
        if self.corked.load(Ordering::Relaxed) {
            if !self.sent_since_look.load(Ordering::Relaxed) {
                self.sent_since_look.store(true, Ordering::Relaxed);
            }
            return;
        }
        if self.streak.fetch_add(1, Ordering::Relaxed) + 1 >= CORK_AFTER {
            self.cork(socket);
        }
    }

    #[cold]
    fn cork(&self, socket: &TcpStream) {
        let Some(watch) = self.watch.get() else {
            return;
        };
        let mut corked = super::lock(&self.state);
        if *corked || socket.set_nodelay(false).is_err() {
            return;
        }
        *corked = true;
        self.sent_since_look.store(true, Ordering::Relaxed);
        self.corked.store(true, Ordering::Relaxed);
        watch.corked.fetch_add(1, Ordering::SeqCst);
        drop(corked);
        (watch.on_cork)();
    }

    /// Step 3: bytes came from the peer.
    #[inline]
    pub(super) fn heard(&self) {
        if self.streak.load(Ordering::Relaxed) != 0 {
            self.streak.store(0, Ordering::Relaxed);
        }
    }

    /// Step 4: `true` if the channel was corked.
    #[inline]
    pub(super) fn uncork(&self, socket: &TcpStream) -> bool {
        if !self.corked.load(Ordering::Relaxed) {
            return false;
        }
        self.uncork_now(socket)
    }

    /// Step 4, for a channel that sent nothing since the last such look.
    pub(super) fn uncork_if_idle(&self, socket: &TcpStream) -> bool {
        if !self.corked.load(Ordering::Relaxed) {
            return false;
        }
        if self.sent_since_look.swap(false, Ordering::Relaxed) {
            return false;
        }
        self.uncork_now(socket)
    }

    #[cold]
    fn uncork_now(&self, socket: &TcpStream) -> bool {
        let mut corked = super::lock(&self.state);
        if !*corked {
            return false;
        }
        // A socket that refuses is closed or broken: nothing waits on it.
        let _ = socket.set_nodelay(true);
        *corked = false;
        self.corked.store(false, Ordering::Relaxed);
        self.streak.store(0, Ordering::Relaxed);
        if let Some(watch) = self.watch.get() {
            watch.corked.fetch_sub(1, Ordering::SeqCst);
        }
        true
    }

    pub(super) fn is_corked(&self) -> bool {
        self.corked.load(Ordering::Relaxed)
    }
}

impl Drop for Cork {
    fn drop(&mut self) {
        let corked = *self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if let (true, Some(watch)) = (corked, self.watch.get()) {
            watch.corked.fetch_sub(1, Ordering::SeqCst);
        }
    }
}
