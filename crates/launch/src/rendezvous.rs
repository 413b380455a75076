//! The launcher's rendezvous service: authenticates nodes, collects their
//! listen addresses, and keeps one control connection per node.

use crate::job::Internal;
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::Sender;
use std::time::Duration;
use threadwire::control::{self as protocol, Control, LAUNCHER};
use threadwire_transport::handshake::{self, Credentials};

/// Accepts control connections until `nodes` have registered; one thread
/// per node then reads its control messages until it says goodbye.
pub(crate) fn serve(
    listener: TcpListener,
    creds: Credentials,
    nodes: u32,
    events: Sender<Internal>,
) {
    let mut registered = 0;
    while registered < nodes {
        let Ok((stream, from)) = listener.accept() else {
            return;
        };
        match handshake::accept_blocking(stream, &creds, LAUNCHER) {
            Ok((node, stream)) if node < nodes => {
                registered += 1;
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
            Ok(Some(other)) => tracing::warn!("rendezvous: unexpected {other:?} from n{node}"),
            Ok(None) | Err(_) => return,
        }
    }
}
