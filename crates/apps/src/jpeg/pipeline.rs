//! The compressing and decompressing threads: the node side of the
//! pipeline, steps 2 to 5 of the [`jpeg`](super) module's protocol.

use super::{
    address, check_size, compress, compressing_nodes, decompress, partner, sender, strip_rows,
    Error, Role, MASTER, MAX_THREADS, TAG_DECODED, TAG_FAILED, TAG_JPEG, TAG_START, TAG_STRIP,
    TAG_TIMES,
};
use std::time::Instant;
use threadwire::{Encoding, Endpoint, Message, Packer, ANY_TAG};

/// A round's start, as a pipeline thread receives it.
struct Start {
    threads: u32,
    width: usize,
    height: usize,
    quality: u8,
}

/// Compressing or decompressing thread `k` of the `spawned` of its role
/// on this node: one round after another until told to stop (a start
/// with no threads). A round that fails here is told downstream before
/// this thread returns the error: a compressing thread tells its
/// decompressing partner, which tells the master, so that no thread
/// waits for a strip that will not come.
pub(super) fn pipeline_thread(
    ep: &Endpoint,
    role: Role,
    k: u32,
    spawned: u32,
) -> Result<(), Error> {
    let (id, nodes) = (ep.node().id(), ep.node().nodes());
    let downstream = match role {
        Role::Compress => address(Role::Decompress, partner(id, nodes), k, nodes, spawned),
        Role::Decompress => MASTER,
    };
    loop {
        let mut start = ep.recv(MASTER, TAG_START)?.unpack()?;
        let start = Start {
            threads: start.unpack()?,
            width: start.unpack::<u64>()? as usize,
            height: start.unpack::<u64>()? as usize,
            quality: start.unpack()?,
        };
        if start.threads == 0 {
            return Ok(());
        }
        if let Err(e) = pipeline_round(ep, role, k, spawned, &start) {
            let reason = match &e {
                Error::Failed { at, reason } => format!("{at} failed: {reason}"),
                e => e.to_string(),
            };
            let _ = ep.send(downstream, TAG_FAILED, reason.into_bytes());
            return Err(e);
        }
    }
}

/// One round of a pipeline thread (see [`pipeline_thread`]).
fn pipeline_round(
    ep: &Endpoint,
    role: Role,
    k: u32,
    spawned: u32,
    start: &Start,
) -> Result<(), Error> {
    let (id, nodes) = (ep.node().id(), ep.node().nodes());
    // This round's clock: the master's, less the start's latency.
    let started = Instant::now();
    let at = || started.elapsed().as_secs_f64();
    let &Start {
        threads,
        width,
        height,
        quality,
    } = start;
    let strips = (compressing_nodes(nodes) * threads) as usize;
    let fits = check_size(width, height).is_ok() && height >= strips;
    if k >= threads || threads > MAX_THREADS || !fits || !(1..=100).contains(&quality) {
        return Err(Error::Protocol(format!(
            "a start for thread {k} of {threads}, {width}x{height} at quality {quality}"
        )));
    }
    let mut times = Packer::new(Encoding::InPlace);
    match role {
        Role::Compress => {
            let strip = (k * compressing_nodes(nodes) + id) as usize;
            let rows = strip_rows(height, strips, strip).len();
            let pixels = ep.recv(MASTER, TAG_STRIP)?.into_vec();
            let received = at();
            let jpeg = compress(&pixels, width, rows, quality)?;
            times.pack(received).pack(at()).pack(jpeg.len() as u64);
            let to = address(Role::Decompress, partner(id, nodes), k, nodes, spawned);
            ep.isend(to, TAG_JPEG, jpeg).wait()?;
        }
        Role::Decompress => {
            let strip = (k * compressing_nodes(nodes) + sender(id, nodes)) as usize;
            let rows = strip_rows(height, strips, strip).len();
            let from = address(Role::Compress, sender(id, nodes), k, nodes, spawned);
            let jpeg = accept(ep.recv(from, ANY_TAG)?, TAG_JPEG)?.into_vec();
            let received = at();
            let pixels = decompress(&jpeg, width, rows)?;
            times.pack(received).pack(at());
            ep.isend(MASTER, TAG_DECODED, pixels).wait()?;
        }
    }
    ep.send(MASTER, TAG_TIMES, times)?;
    Ok(())
}

/// `message` if it has tag `expected`, else the error it makes.
fn accept(message: Message, expected: u32) -> Result<Message, Error> {
    match message.tag() == expected {
        true => Ok(message),
        false => Err(unexpected(message, expected)),
    }
}

/// The failure that `message` tells of, or the protocol error it is when
/// `expected` was due.
pub(super) fn unexpected(message: Message, expected: u32) -> Error {
    let at = message.source();
    match message.tag() {
        TAG_FAILED => Error::Failed {
            at,
            reason: String::from_utf8_lossy(&message.into_vec()).into_owned(),
        },
        tag => Error::Protocol(format!("tag {tag} from {at} where {expected} was expected")),
    }
}
