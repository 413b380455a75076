//! The launcher's rendezvous service: authenticates nodes, collects their
//! listen addresses, and keeps one control connection per node.

use crate::job::Internal;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;
use threadwire::control::{self as protocol, Control, LAUNCHER};
use threadwire_transport::handshake::{self, Credentials};

/// The service's door: how many node numbers the job has given out (it
/// accepts those, each once), and how to close it when the job is over.
pub(crate) struct Door {
    pub(crate) started: AtomicU32,
    closed: AtomicBool,
    addr: SocketAddr,
}

impl Door {
    pub(crate) fn new(started: u32, addr: SocketAddr) -> Arc<Door> {
        Arc::new(Door {
            started: AtomicU32::new(started),
            closed: AtomicBool::new(false),
            addr,
        })
    }

    /// Ends [`serve`]: marks the door closed and wakes its `accept`.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let mut to = self.addr;
        if to.ip().is_unspecified() {
            to.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        let _ = TcpStream::connect_timeout(&to, Duration::from_secs(1));
    }
}

/// Accepts control connections until the door closes, each node number
/// given out once; one thread per node then reads its control messages
/// until it says goodbye.
pub(crate) fn serve(
    listener: TcpListener,
    creds: Credentials,
    door: Arc<Door>,
    events: Sender<Internal>,
) {
    let mut registered: Vec<bool> = Vec::new();
    loop {
        let Ok((stream, from)) = listener.accept() else {
            return;
        };
        if door.closed.load(Ordering::Acquire) {
            return;
        }
        let accepted = handshake::accept_blocking(stream, &creds, LAUNCHER);
        let started = door.started.load(Ordering::Acquire);
        match accepted {
            Ok((node, _)) if (node as usize) < registered.len() && registered[node as usize] => {
                tracing::warn!("rendezvous: refused {from}: node n{node} has registered already")
            }
            Ok((node, stream)) if node < started => {
                if registered.len() <= node as usize {
                    registered.resize(node as usize + 1, false);
                }
                registered[node as usize] = true;
                let tx = events.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("control-n{node}"))
                    .spawn(move || control(node, stream, tx));
                if spawned.is_err() {
                    return;
                }
            }
            Ok((node, _)) => {
                tracing::warn!("rendezvous: refused {from}: node n{node} is not in this job")
            }
            Err(e) => tracing::warn!("rendezvous: refused {from}: {e}"),
        }
    }
}

/// Serves node `node`'s control connection, then says it has ended.
fn control(node: u32, stream: TcpStream, events: Sender<Internal>) {
    read_controls(node, stream, &events);
    let _ = events.send(Internal::ControlClosed { node });
}

fn read_controls(node: u32, mut stream: TcpStream, events: &Sender<Internal>) {
    let addr = match protocol::read_control(&mut stream) {
        Ok(Some(Control::Register { addr })) => addr,
        other => {
            tracing::warn!("rendezvous: n{node} did not register: {other:?}");
            return;
        }
    };
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    if events
        .send(Internal::Registered {
            node,
            addr,
            stream: writer,
        })
        .is_err()
    {
        return;
    }
    let mut watched = None;
    loop {
        match protocol::read_control(&mut stream) {
            Ok(Some(Control::Heartbeat { timeout_ms })) => {
                // The first, and any that changes the timeout.
                if watched != Some(timeout_ms) {
                    watched = Some(timeout_ms);
                    let timeout = Duration::from_millis(timeout_ms.into());
                    let _ = events.send(Internal::Watch { node, timeout });
                }
            }
            Ok(Some(Control::Stats(stats))) => {
                let _ = events.send(Internal::Stats { node, stats });
            }
            Ok(Some(Control::Channels { routes })) => {
                let _ = events.send(Internal::Channels { node, routes });
            }
            Ok(Some(Control::Report { data })) => {
                let _ = events.send(Internal::Report { node, data });
            }
            Ok(Some(Control::Vm { request, op })) => {
                let _ = events.send(Internal::Vm { node, request, op });
            }
            Ok(Some(Control::Lookup { node: peer })) => {
                let _ = events.send(Internal::Lookup { node, peer });
            }
            Ok(Some(Control::Described { threads })) => {
                let _ = events.send(Internal::Described { node, threads });
            }
            Ok(Some(other)) => tracing::warn!("rendezvous: unexpected {other:?} from n{node}"),
            Ok(None) | Err(_) => return,
        }
    }
}
