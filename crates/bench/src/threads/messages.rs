//! The message row: 8 bytes there and back between two endpoints of one
//! node, both fibers (on the node's one worker) or both OS threads. The
//! initiator times its own loop; the echo answers a fixed count.

use super::Error;
use std::time::{Duration, Instant};
use threadwire::{Address, Endpoint, ThreadHandle};

const TAG: u32 = 0x7468;
const SIZE: usize = 8;

/// Which kind of threads carry the endpoints.
#[derive(Clone, Copy, Debug)]
pub(super) enum Threads {
    Fibers,
    Os,
}

pub(super) fn round_trips(ep: &Endpoint, threads: Threads, ops: u64) -> Result<Duration, Error> {
    let initiator = spawn(ep, threads, move |ep| {
        let me = ep.address();
        let echo = spawn(&ep, threads, move |ep| echo(&ep, me, ops));
        let elapsed = initiate(&ep, echo.address(), ops);
        echo.join()??;
        elapsed
    });
    initiator.join()?
}

fn spawn<T: Send + 'static>(
    ep: &Endpoint,
    threads: Threads,
    body: impl FnOnce(Endpoint) -> T + Send + 'static,
) -> ThreadHandle<T> {
    match threads {
        Threads::Fibers => ep.node().spawn(body),
        Threads::Os => ep.node().spawn_os(body),
    }
}

fn initiate(ep: &Endpoint, echo: Address, ops: u64) -> Result<Duration, Error> {
    let mut buffer = vec![0u8; SIZE];
    let start = Instant::now();
    for _ in 0..ops {
        ep.send(echo, TAG, buffer).map_err(Error::Send)?;
        buffer = ep.recv(echo, TAG).map_err(Error::Recv)?.into_vec();
    }
    Ok(start.elapsed())
}

fn echo(ep: &Endpoint, initiator: Address, ops: u64) -> Result<(), Error> {
    for _ in 0..ops {
        let message = ep.recv(initiator, TAG).map_err(Error::Recv)?.into_vec();
        ep.send(initiator, TAG, message).map_err(Error::Send)?;
    }
    Ok(())
}
