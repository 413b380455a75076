//! The machine as a program sees it: every node of the job, whether it is
//! alive, where it runs and how many threads it has started.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let me = threadwire::init()?;
//! for n in me.machine() {
//!     println!("n{} {:?} on {:?} (pid {:?}, {:?} threads) via {}", n.node, n.state, n.host, n.pid, n.threads, n.route);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! 1. [`Endpoint::machine`] sends a request to the built-in inline
//!    handler `threadwire.machine` of every node not known lost (its own
//!    included).
//! 2. Each answers with its host name, process id, listen address and the
//!    number of thread numbers it has given out.
//! 3. A node lost before it answers shows as lost, with the cause.

use crate::am::ActiveMessage;
use crate::error::LossCause;
use crate::{Endpoint, Packer};
use std::net::SocketAddr;
use threadwire_wire::Encoding;

/// The built-in handler's name.
pub(crate) const MACHINE_HANDLER: &str = "threadwire.machine";

/// Whether a node is in the job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeState {
    /// It answered.
    Alive,
    /// It has left the job in order.
    Finished,
    /// It failed; the text says how.
    Failed(String),
}

/// One node of the job ([`Endpoint::machine`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    /// The node's number.
    pub node: u32,
    /// Alive, finished or failed.
    pub state: NodeState,
    /// Its host's name (a live node's).
    pub host: Option<String>,
    /// Its process id (a live node's).
    pub pid: Option<u32>,
    /// The address it accepts peer connections on (a live node's).
    pub listen: Option<SocketAddr>,
    /// Thread numbers it has given out: its threads, finished ones
    /// included (a live node's).
    pub threads: Option<u32>,
    /// The channel this node uses to it (`self` for itself).
    pub route: String,
}

impl Endpoint {
    /// Every node of the job, as of now (steps 1–3): one active-message
    /// round trip to each live node, side by side.
    pub fn machine(&self) -> Vec<NodeInfo> {
        let router = &self.node.shared.router;
        let handler = crate::am::Handler::builtin(MACHINE_HANDLER);
        let asked: Vec<_> = (0..router.nodes())
            .map(|n| {
                let known_lost = n != router.id && router.peers[n as usize].lost().is_some();
                (!known_lost).then(|| self.am_request(n, &handler, Vec::new()))
            })
            .collect();
        asked
            .into_iter()
            .enumerate()
            .map(|(n, request)| {
                let node = n as u32;
                let route = match node == router.id {
                    true => "self".to_string(),
                    false => router.peers[n].route().to_string(),
                };
                let answer = request.and_then(|r| r.wait().ok()).and_then(|p| decode(p).ok());
                match answer {
                    Some((host, pid, listen, threads)) => NodeInfo {
                        node,
                        state: NodeState::Alive,
                        host: Some(host),
                        pid: Some(pid),
                        listen: listen.parse().ok(),
                        threads: Some(threads),
                        route,
                    },
                    None => NodeInfo {
                        node,
                        state: match router.peers[n].lost().map(|l| &l.cause) {
                            Some(LossCause::Finished) => NodeState::Finished,
                            Some(LossCause::Failed(why)) => NodeState::Failed(why.to_string()),
                            None => NodeState::Failed("did not answer".into()),
                        },
                        host: None,
                        pid: None,
                        listen: None,
                        threads: None,
                        route,
                    },
                }
            })
            .collect()
    }
}

/// Step 2, inline.
pub(crate) fn serve(am: &mut ActiveMessage<'_>) {
    let Some(node) = am.router().am.node() else {
        return; // Shutting down: answered `NoReply`.
    };
    let mut p = Packer::new(Encoding::Portable);
    p.pack_str(&host_name());
    p.pack(std::process::id());
    p.pack_str(&node.listen_address().map(|a| a.to_string()).unwrap_or_default());
    p.pack(node.threads_started());
    let _ = am.reply(p.finish());
}

fn decode(payload: threadwire_wire::Payload) -> Result<(String, u32, String, u32), threadwire_wire::UnpackError> {
    let mut u = payload.unpack()?;
    Ok((u.unpack_string()?, u.unpack()?, u.unpack_string()?, u.unpack()?))
}

/// This host's name, as `uname -n` gives it.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its length; gethostname writes at most
    // that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}
