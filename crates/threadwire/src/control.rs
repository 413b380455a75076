//! Messages between a node and its launcher, on the control connection:
//! the half of the launcher–node contract that is not the environment
//! ([`crate::env`]). The launcher (`threadwire-launch`) and the runtime
//! both speak it.
//!
//! The control connection is authenticated like any peer connection (the
//! launcher accepts as node [`LAUNCHER`]) and carries `Control` frames whose
//! `aux` word is the message type and whose payload is portable-packed.
//!
//! 1. Node → launcher: `Register { addr }`, the address it listens on.
//! 2. Launcher → node, once all nodes started with it registered:
//!    `Directory { addrs, gone, spread }` — for a node joining a running
//!    job, every node's address so far and the nodes already gone; for a
//!    founding node no address at all (it asks for those it needs, step
//!    11), so that start-up sends each node the same few bytes whatever
//!    the job's size — and `spread`, the number of hosts the founding
//!    nodes were placed on in turn (node `i` on host `i % spread`); then
//!    `Hosts { hosts }`, the job's host table.
//! 3. Launcher → node, at any time: `PeerLost { node, cause }`; and
//!    `Finished { nodes }` when nodes have ended in order (their processes
//!    exited with status 0), so that nodes they never connected to learn
//!    of their end too (pairs connect on first use). The launcher gathers
//!    the ends of a few milliseconds into one message, so that a job whose
//!    nodes all end at once does not send each node one per node. A node connected to it
//!    takes its end from the pair instead: the goodbye it sent there, or
//!    the pair's failure if it could not.
//! 4. Node → launcher, once joined: `Channels { routes }`.
//! 5. Node → launcher, at any time: `Report { data }`, a result the
//!    program reports ([`Node::report`](crate::Node::report)).
//! 6. Node → launcher, at finalize: `Stats`, then a `Bye` frame.
//! 7. Node → launcher, from joining until its `Bye`, whenever the
//!    connection was otherwise quiet for a liveness tick: `Heartbeat
//!    { timeout_ms }`, a bare [`FrameKind::Heartbeat`] frame whose `aux`
//!    word is the node's peer timeout (the runtime's liveness protocol).
//!    A launcher that has heard one may take a node whose connection then
//!    stays silent for longer than the timeout to be lost, and end it.
//! 8. Node → launcher, at any time: `Vm { request, op }`, a request to
//!    grow or shrink the machine ([`VmOp`]); launcher → node, once done or
//!    refused: `VmAnswer { request, answer }` ([`VmAnswer`]), exactly once
//!    per request while both live (the `vm` module's protocol).
//! 9. Launcher → node, when nodes join the job: `Grown { nodes }`, the
//!    node numbers given out so far; when the host table changes: `Hosts
//!    { hosts }` again.
//! 10. Launcher → node, at any time once it has joined: `Describe`; node
//!     → launcher, at once: `Described { threads }`, the thread numbers it
//!     has given out so far ([`Node::threads_started`](crate::Node::threads_started)).
//!     The launcher asks on behalf of `threadwire vm nodes` and does not
//!     wait for an answer that is late.
//! 11. Node → launcher, at any time: `Lookup { node }`, the first time it
//!     connects to `node` (pairs connect on first use); launcher → node,
//!     at once: `Address { node, addr }`, its listening address (empty if
//!     it has left the job or is unknown).

use crate::Stats;
use std::io::{self, Read, Write};
use threadwire_wire::{
    Encoding, FrameError, FrameHeader, FrameKind, Packer, Payload, UnpackError, Unpacker,
    HEADER_LEN,
};

/// The node number the launcher uses in handshakes.
pub const LAUNCHER: u32 = u32::MAX;
/// Longest control payload accepted.
pub const MAX_CONTROL: u64 = 1 << 20;

const REGISTER: u32 = 1;
const DIRECTORY: u32 = 2;
const PEER_LOST: u32 = 3;
const FINISHED: u32 = 13;
const LOOKUP: u32 = 14;
const ADDRESS: u32 = 15;
const STATS: u32 = 4;
const CHANNELS: u32 = 5;
const REPORT: u32 = 6;
const VM: u32 = 7;
const VM_ANSWER: u32 = 8;
const GROWN: u32 = 9;
const HOSTS: u32 = 10;
const DESCRIBE: u32 = 11;
const DESCRIBED: u32 = 12;

/// A node that left the job before another joined it
/// ([`Control::Directory`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gone {
    /// The node.
    pub node: u32,
    /// Whether it finished in order (else it failed).
    pub finished: bool,
    /// How it left, in words.
    pub cause: String,
}

/// One host of the job's host table ([`Control::Hosts`]): numbered by its
/// place, which never changes; a removed host keeps its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// As the host file names it (`local`, `netns:NAME`, `ssh:HOST`).
    pub name: String,
    /// Whether it is still in the job (not removed).
    pub present: bool,
}

/// What a node asks of the launcher ([`Control::Vm`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmOp {
    /// Start `count` nodes that join the job.
    AddNodes {
        /// How many.
        count: u32,
        /// Their program; empty for the job's.
        program: String,
        /// Their arguments; `None` for the job's.
        args: Option<Vec<String>>,
        /// The host they run on; empty for the job's hosts in turn.
        host: String,
        /// Variables added to their environment.
        env: Vec<(String, String)>,
    },
    /// Add hosts to the job's host table.
    AddHosts {
        /// As a host file names them.
        hosts: Vec<String>,
    },
    /// Remove hosts from the table, killing the nodes that run on them.
    RemoveHosts {
        /// As a host file names them.
        hosts: Vec<String>,
    },
}

/// The launcher's answer to a [`VmOp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VmAnswer {
    /// Done; for `AddNodes` the new nodes' numbers, once every one has
    /// joined; for `RemoveHosts` the nodes killed.
    Nodes(Vec<u32>),
    /// Refused or failed, and why.
    Refused(String),
}

/// A control message.
#[derive(Debug, Clone, PartialEq)]
pub enum Control {
    /// The address a node listens on for its peers.
    Register {
        /// `ip:port`.
        addr: String,
    },
    /// Every node's listen address, by node number, for a node that
    /// joins a running job; none for a founding node (step 2).
    Directory {
        /// `ip:port` of each node; empty for a gone one.
        addrs: Vec<String>,
        /// The nodes gone already.
        gone: Vec<Gone>,
        /// The founding nodes were placed on this many hosts in turn.
        spread: u32,
    },
    /// A node asks for another's listening address (step 11).
    Lookup {
        /// The node whose address it needs.
        node: u32,
    },
    /// The answer to a [`Control::Lookup`] (step 11).
    Address {
        /// The node asked about.
        node: u32,
        /// `ip:port`; empty if the node has left or is unknown.
        addr: String,
    },
    /// A request to change the machine (step 8).
    Vm {
        /// The node's number for it, echoed in the answer.
        request: u32,
        /// What to do.
        op: VmOp,
    },
    /// The answer to a [`Control::Vm`] (step 8).
    VmAnswer {
        /// The request's number.
        request: u32,
        /// The outcome.
        answer: VmAnswer,
    },
    /// Node numbers given out so far (step 9).
    Grown {
        /// Nodes, gone ones included.
        nodes: u32,
    },
    /// The job's host table (steps 2 and 9).
    Hosts {
        /// By host number.
        hosts: Vec<HostEntry>,
    },
    /// The launcher asks a joined node to describe itself (step 10).
    Describe,
    /// A node's answer to [`Control::Describe`] (step 10).
    Described {
        /// Thread numbers the node has given out so far, finished threads
        /// included.
        threads: u32,
    },
    /// A node has died.
    PeerLost {
        /// The node.
        node: u32,
        /// How it died.
        cause: String,
    },
    /// Nodes have ended in order (step 3).
    Finished {
        /// The nodes.
        nodes: Vec<u32>,
    },
    /// A node's final counters.
    Stats(Stats),
    /// The channel a node uses to each peer, by node number (`-` for
    /// itself), sent once it has joined.
    Channels {
        /// One entry per node.
        routes: Vec<String>,
    },
    /// A result the node's program reports, in a codec of the program's.
    Report {
        /// The report's bytes.
        data: Vec<u8>,
    },
    /// The node is alive (step 7); sent as a [`FrameKind::Heartbeat`]
    /// frame, not a `Control` one.
    Heartbeat {
        /// The node's peer timeout, in milliseconds.
        timeout_ms: u32,
    },
}

const OP_ADD_NODES: u32 = 1;
const OP_ADD_HOSTS: u32 = 2;
const OP_REMOVE_HOSTS: u32 = 3;

/// A list of strings: its length, then each.
fn pack_strings(p: &mut Packer, strings: &[String]) {
    p.pack(strings.len() as u32);
    for s in strings {
        p.pack_str(s);
    }
}

fn unpack_strings(u: &mut Unpacker) -> Result<Vec<String>, UnpackError> {
    let n = u.unpack::<u32>()?;
    let mut strings = Vec::with_capacity(n.min(1 << 16) as usize);
    for _ in 0..n {
        strings.push(u.unpack_string()?);
    }
    Ok(strings)
}

/// A control stream that does not follow the protocol.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// I/O failure or end of stream.
    #[error("control connection: {0}")]
    Io(#[from] io::Error),
    /// Bad frame header.
    #[error("control connection: {0}")]
    Frame(#[from] FrameError),
    /// Bad payload.
    #[error("control connection: bad message: {0}")]
    Unpack(#[from] UnpackError),
    /// Unknown message type or frame kind.
    #[error("control connection: unexpected message {0}")]
    Unexpected(u32),
}

impl Control {
    /// The frame header and payload of this message.
    pub fn encode(&self) -> (FrameHeader, Payload) {
        if let Control::Heartbeat { timeout_ms } = self {
            let header = FrameHeader::control(FrameKind::Heartbeat, *timeout_ms, 0);
            return (header, Payload::from_vec(Vec::new()));
        }
        let mut p = Packer::new(Encoding::Portable);
        let kind = match self {
            Control::Register { addr } => {
                p.pack_str(addr);
                REGISTER
            }
            Control::Directory {
                addrs,
                gone,
                spread,
            } => {
                pack_strings(&mut p, addrs);
                p.pack(gone.len() as u32);
                for g in gone {
                    p.pack(g.node).pack(u32::from(g.finished)).pack_str(&g.cause);
                }
                p.pack(*spread);
                DIRECTORY
            }
            Control::Lookup { node } => {
                p.pack(*node);
                LOOKUP
            }
            Control::Address { node, addr } => {
                p.pack(*node).pack_str(addr);
                ADDRESS
            }
            Control::Vm { request, op } => {
                p.pack(*request);
                match op {
                    VmOp::AddNodes {
                        count,
                        program,
                        args,
                        host,
                        env,
                    } => {
                        p.pack(OP_ADD_NODES).pack(*count).pack_str(program).pack_str(host);
                        p.pack(u32::from(args.is_some()));
                        pack_strings(&mut p, args.as_deref().unwrap_or_default());
                        let (keys, values): (Vec<String>, Vec<String>) = env.iter().cloned().unzip();
                        pack_strings(&mut p, &keys);
                        pack_strings(&mut p, &values);
                    }
                    VmOp::AddHosts { hosts } => {
                        p.pack(OP_ADD_HOSTS);
                        pack_strings(&mut p, hosts);
                    }
                    VmOp::RemoveHosts { hosts } => {
                        p.pack(OP_REMOVE_HOSTS);
                        pack_strings(&mut p, hosts);
                    }
                }
                VM
            }
            Control::VmAnswer { request, answer } => {
                p.pack(*request);
                match answer {
                    VmAnswer::Nodes(nodes) => {
                        p.pack(0u32).pack_slice(nodes);
                    }
                    VmAnswer::Refused(why) => {
                        p.pack(1u32).pack_str(why);
                    }
                }
                VM_ANSWER
            }
            Control::Grown { nodes } => {
                p.pack(*nodes);
                GROWN
            }
            Control::Hosts { hosts } => {
                p.pack(hosts.len() as u32);
                for h in hosts {
                    p.pack_str(&h.name).pack(u32::from(h.present));
                }
                HOSTS
            }
            Control::Describe => DESCRIBE,
            Control::Described { threads } => {
                p.pack(*threads);
                DESCRIBED
            }
            Control::PeerLost { node, cause } => {
                p.pack(*node).pack_str(cause);
                PEER_LOST
            }
            Control::Finished { nodes } => {
                p.pack(nodes.len() as u32);
                p.pack_slice(nodes);
                FINISHED
            }
            Control::Stats(s) => {
                p.pack_slice(&[
                    s.messages_sent,
                    s.bytes_sent,
                    s.messages_received,
                    s.bytes_received,
                ]);
                STATS
            }
            Control::Channels { routes } => {
                pack_strings(&mut p, routes);
                CHANNELS
            }
            Control::Report { data } => {
                p.pack_bytes(data);
                REPORT
            }
            Control::Heartbeat { .. } => unreachable!("encoded above"),
        };
        let payload = p.finish();
        let mut header = FrameHeader::control(FrameKind::Control, kind, payload.len() as u64);
        header.format = payload.format();
        (header, payload)
    }

    /// Decodes a control frame's payload.
    pub fn decode(header: &FrameHeader, payload: Vec<u8>) -> Result<Control, ControlError> {
        if header.kind == FrameKind::Heartbeat {
            return Ok(Control::Heartbeat {
                timeout_ms: header.aux,
            });
        }
        if header.kind != FrameKind::Control {
            return Err(ControlError::Unexpected(header.kind as u32));
        }
        let mut u = Payload::from_wire(header.format, payload).unpack()?;
        Ok(match header.aux {
            REGISTER => Control::Register {
                addr: u.unpack_string()?,
            },
            DIRECTORY => {
                let addrs = unpack_strings(&mut u)?;
                let n = u.unpack::<u32>()?;
                let mut gone = Vec::with_capacity(n.min(1 << 16) as usize);
                for _ in 0..n {
                    gone.push(Gone {
                        node: u.unpack()?,
                        finished: u.unpack::<u32>()? != 0,
                        cause: u.unpack_string()?,
                    });
                }
                Control::Directory {
                    addrs,
                    gone,
                    spread: u.unpack()?,
                }
            }
            LOOKUP => Control::Lookup { node: u.unpack()? },
            ADDRESS => Control::Address {
                node: u.unpack()?,
                addr: u.unpack_string()?,
            },
            VM => {
                let request = u.unpack()?;
                let op = match u.unpack::<u32>()? {
                    OP_ADD_NODES => {
                        let count = u.unpack()?;
                        let program = u.unpack_string()?;
                        let host = u.unpack_string()?;
                        let has_args = u.unpack::<u32>()? != 0;
                        let args = unpack_strings(&mut u)?;
                        let keys = unpack_strings(&mut u)?;
                        let values = unpack_strings(&mut u)?;
                        if keys.len() != values.len() {
                            return Err(ControlError::Unexpected(OP_ADD_NODES));
                        }
                        let env = keys.into_iter().zip(values).collect();
                        VmOp::AddNodes {
                            count,
                            program,
                            args: has_args.then_some(args),
                            host,
                            env,
                        }
                    }
                    OP_ADD_HOSTS => VmOp::AddHosts {
                        hosts: unpack_strings(&mut u)?,
                    },
                    OP_REMOVE_HOSTS => VmOp::RemoveHosts {
                        hosts: unpack_strings(&mut u)?,
                    },
                    other => return Err(ControlError::Unexpected(other)),
                };
                Control::Vm { request, op }
            }
            VM_ANSWER => {
                let request = u.unpack()?;
                let answer = match u.unpack::<u32>()? {
                    0 => VmAnswer::Nodes(u.unpack_vec()?),
                    _ => VmAnswer::Refused(u.unpack_string()?),
                };
                Control::VmAnswer { request, answer }
            }
            GROWN => Control::Grown { nodes: u.unpack()? },
            HOSTS => {
                let n = u.unpack::<u32>()?;
                let mut hosts = Vec::with_capacity(n.min(1 << 16) as usize);
                for _ in 0..n {
                    hosts.push(HostEntry {
                        name: u.unpack_string()?,
                        present: u.unpack::<u32>()? != 0,
                    });
                }
                Control::Hosts { hosts }
            }
            DESCRIBE => Control::Describe,
            DESCRIBED => Control::Described {
                threads: u.unpack()?,
            },
            PEER_LOST => Control::PeerLost {
                node: u.unpack()?,
                cause: u.unpack_string()?,
            },
            FINISHED => {
                let n = u.unpack::<u32>()?;
                let mut nodes = vec![0u32; n.min(1 << 20) as usize];
                u.unpack_into(&mut nodes)?;
                Control::Finished { nodes }
            }
            STATS => {
                let mut v = [0u64; 4];
                u.unpack_into(&mut v)?;
                Control::Stats(Stats {
                    messages_sent: v[0],
                    bytes_sent: v[1],
                    messages_received: v[2],
                    bytes_received: v[3],
                })
            }
            CHANNELS => Control::Channels {
                routes: unpack_strings(&mut u)?,
            },
            REPORT => Control::Report {
                data: u.unpack_bytes()?,
            },
            other => return Err(ControlError::Unexpected(other)),
        })
    }
}

/// Writes a frame on a blocking stream.
pub fn write_frame(mut w: impl Write, header: &FrameHeader, payload: &Payload) -> io::Result<()> {
    w.write_all(&header.encode())?;
    for seg in payload.segments() {
        w.write_all(seg)?;
    }
    w.flush()
}

/// Writes a control message on a blocking stream.
pub fn write_control(w: impl Write, msg: &Control) -> io::Result<()> {
    let (h, p) = msg.encode();
    write_frame(w, &h, &p)
}

/// Reads one control message from a blocking stream; `None` on a `Bye` frame.
pub fn read_control(mut r: impl Read) -> Result<Option<Control>, ControlError> {
    let mut h = [0u8; HEADER_LEN];
    r.read_exact(&mut h)?;
    let header = FrameHeader::decode(&h, MAX_CONTROL)?;
    let mut payload = vec![0u8; header.len as usize];
    r.read_exact(&mut payload)?;
    if header.kind == FrameKind::Bye {
        return Ok(None);
    }
    Control::decode(&header, payload).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let msgs = [
            Control::Register {
                addr: "127.0.0.1:4000".into(),
            },
            Control::Directory {
                addrs: vec!["a".into(), "b".into()],
                gone: vec![],
                spread: 1,
            },
            Control::Directory {
                addrs: vec!["a".into(), String::new(), "c".into()],
                gone: vec![Gone {
                    node: 1,
                    finished: false,
                    cause: "killed by signal 9".into(),
                }],
                spread: 2,
            },
            Control::Lookup { node: 9 },
            Control::Address {
                node: 9,
                addr: "10.0.0.1:4000".into(),
            },
            Control::Vm {
                request: 7,
                op: VmOp::AddNodes {
                    count: 4,
                    program: String::new(),
                    args: None,
                    host: "netns:twh1".into(),
                    env: vec![],
                },
            },
            Control::Vm {
                request: 8,
                op: VmOp::AddNodes {
                    count: 1,
                    program: "/bin/worker".into(),
                    args: Some(vec!["-x".into(), String::new()]),
                    host: String::new(),
                    env: vec![("PVM_PARENT".into(), "40001".into()), ("E".into(), String::new())],
                },
            },
            Control::Vm {
                request: 9,
                op: VmOp::RemoveHosts {
                    hosts: vec!["netns:twh1".into()],
                },
            },
            Control::Vm {
                request: 10,
                op: VmOp::AddHosts { hosts: vec![] },
            },
            Control::VmAnswer {
                request: 7,
                answer: VmAnswer::Nodes(vec![4, 5, 6, 7]),
            },
            Control::VmAnswer {
                request: 8,
                answer: VmAnswer::Refused("no such program".into()),
            },
            Control::Grown { nodes: 8 },
            Control::Describe,
            Control::Described { threads: 4 },
            Control::Described { threads: 0 },
            Control::Hosts {
                hosts: vec![
                    HostEntry {
                        name: "local".into(),
                        present: true,
                    },
                    HostEntry {
                        name: "netns:twh1".into(),
                        present: false,
                    },
                ],
            },
            Control::PeerLost {
                node: 3,
                cause: "killed by signal 9".into(),
            },
            Control::Finished { nodes: vec![5, 7] },
            Control::Stats(Stats {
                messages_sent: 1,
                bytes_sent: 2,
                messages_received: 3,
                bytes_received: 4,
            }),
            Control::Channels {
                routes: vec![
                    "-".into(),
                    "shm (large messages in chunks)".into(),
                    "tcp".into(),
                ],
            },
            Control::Report {
                data: b"{\"rows\": []}".to_vec(),
            },
            Control::Report { data: Vec::new() },
            Control::Heartbeat { timeout_ms: 1000 },
        ];
        let mut buf = Vec::new();
        for m in &msgs {
            write_control(&mut buf, m).unwrap();
        }
        let mut r = &buf[..];
        for m in &msgs {
            assert_eq!(&read_control(&mut r).unwrap().unwrap(), m);
        }
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(read_control(&[7u8; 64][..]).is_err());
        let (mut h, p) = Control::Register { addr: "x".into() }.encode();
        h.aux = 99;
        let mut buf = Vec::new();
        write_frame(&mut buf, &h, &p).unwrap();
        assert!(matches!(
            read_control(&buf[..]),
            Err(ControlError::Unexpected(99))
        ));
    }
}
