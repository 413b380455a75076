//! A job's proxy on an ssh host: one ssh connection per host and job, over
//! which the launcher starts, watches and ends that host's nodes, as
//! Hydra's proxies do.
//!
//! The launcher runs, once per ssh host of a job (on the host's first
//! node), `ssh -T -o BatchMode=yes OPTIONS HOST 'EXE' proxy`, where `EXE` is
//! [`SshConfig::proxy`](crate::SshConfig::proxy) (by default the
//! launcher's own executable, `threadwire`, which must therefore exist at
//! the same path on the host) and `OPTIONS` are
//! [`SshConfig::options`](crate::SshConfig::options) (by default the words
//! of `$THREADWIRE_SSH`, such as `-F FILE`). `threadwire proxy` runs
//! [`serve`] on its standard input and output, which are the connection's.
//!
//! # The protocol
//!
//! Both directions carry frames: a 4-byte little-endian length, then that
//! many bytes — a kind byte and its fields (integers little-endian, byte
//! strings as a 4-byte length and the bytes). A frame longer than
//! [`MAX_FRAME`] or one that does not decode ends the connection; neither
//! side panics on what it reads.
//!
//! 1. The proxy starts and sends `Ready`: the protocol's magic
//!    and version, and its pid. Anything else first (a login script that
//!    prints) ends the connection, and the launcher names it.
//! 2. The launcher sends `Start` for each node of the job that
//!    goes on this host, now or later (nodes added to the running job,
//!    `grow` module): node number, program, arguments and the node's
//!    environment ([`threadwire::env`]), the job secret included — which
//!    so never appears on a command line, here or on the host.
//! 3. The proxy starts the program as its child (`PR_SET_PDEATHSIG`, so no
//!    node outlives the proxy) with standard input empty and the output
//!    piped, and answers `Started` with its pid, or
//!    `Failed` with why it could not start it.
//! 4. Each line a node prints comes back as `Output`, tagged with
//!    the node and the stream.
//! 5. When a node ends, the proxy sends `Exited` — its status or
//!    the signal that killed it — after its last output line (it waits at
//!    most [`OUTPUT_LINGER`] for the pipes to close, for grandchildren
//!    that hold them).
//! 6. `Kill` kills a node (SIGKILL); its exit is reported as in
//!    step 5.
//! 7. `End`, or the end of the proxy's standard input — the
//!    launcher has ended or died, or the ssh connection broke — makes the
//!    proxy kill every node it still runs, wait (at most [`END_WAIT`]) for
//!    them to be reaped, and exit. A proxy killed outright takes its nodes
//!    with it (step 3). When the launcher is killed, its ssh client dies
//!    with it (`PR_SET_PDEATHSIG`), sshd closes the session, and the proxy
//!    sees its input end: nothing of the job is left on the host.
//! 8. If the connection ends while nodes run (ssh failed to connect or
//!    authenticate, the host went away, the proxy died), the launcher
//!    reports each of them ended with status 255 (ssh's status for a
//!    failed connection), the cause naming the host and ssh's last words.
//!
//! `link` is the launcher's side, `serve` the proxy's.

mod frame;
mod link;
mod serve;

pub(crate) use link::{Proxies, ProxyHandle};
pub use serve::serve;

use std::time::Duration;

/// The longest frame either side accepts.
pub const MAX_FRAME: usize = 16 << 20;

/// How long the proxy waits for an ended node's output pipes to close
/// before it reports the exit (step 5).
pub const OUTPUT_LINGER: Duration = Duration::from_millis(500);

/// How long an ending proxy waits for its killed nodes to be reaped
/// (step 7), and an ending launcher for its proxies to exit.
pub const END_WAIT: Duration = Duration::from_secs(2);

/// The first bytes of `Ready`: this is a threadwire proxy.
const MAGIC: &[u8] = b"threadwire-proxy";

/// The protocol's version; the launcher refuses another.
const VERSION: u32 = 1;

/// What the launcher asks of a proxy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// Step 2.
    Start {
        node: u32,
        program: Vec<u8>,
        args: Vec<Vec<u8>>,
        env: Vec<(String, String)>,
    },
    /// Step 6.
    Kill { node: u32 },
    /// Step 7.
    End,
}

/// What a proxy tells the launcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// Step 1.
    Ready { version: u32, pid: u32 },
    /// Step 3: the node runs as this pid on the host.
    Started { node: u32, pid: u32 },
    /// Step 3: the node could not be started, and why.
    Failed { node: u32, why: String },
    /// Step 4; `stderr` tells the stream.
    Output {
        node: u32,
        stderr: bool,
        line: Vec<u8>,
    },
    /// Step 5: a status, or the signal that killed the node.
    Exited { node: u32, exit: crate::NodeExit },
}
