//! The node side of `bench overlap` (the steps are in the module docs):
//! node 0 sends and times, node 1 receives and computes.

use super::{compute_per_block, Error, Mode, Options, Sample, Spread};
use crate::node_result::NodeResult;
use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use threadwire::fiber::sync::{Mutex, Semaphore};
use threadwire::{Address, Endpoint, InitError, ReportError, Tag};

const GO: Tag = 0x6f76_0001;
const READY: Tag = 0x6f76_0002;
const BLOCK: Tag = 0x6f76_0003;
const DONE: Tag = 0x6f76_0004;
/// A *go* with this mode code ends node 1's loop.
const STOP: u8 = 0xff;

/// Why a node failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// `init` failed.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// The measurement failed.
    #[error(transparent)]
    Overlap(#[from] Error),
    /// A sample could not be reported to the launcher.
    #[error("reporting a result")]
    Report(#[source] ReportError),
}

/// Runs this node's side of the job [`run`](super::run) started.
pub fn node(options: &Options) -> Result<(), NodeError> {
    let ep = threadwire::init().map_err(NodeError::Init)?;
    match ep.address().node {
        0 => sender(&ep, options),
        1 => Ok(worker(&ep, options)?),
        _ => Ok(()),
    }
}

/// Block `i`'s bytes: a pattern of its index.
fn block(i: u32, len: usize) -> Vec<u8> {
    let seed = u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..len)
        .map(|k| {
            (seed
                .wrapping_add(k as u64)
                .wrapping_mul(0xbf58_476d_1ce4_e5b9)
                >> 56) as u8
        })
        .collect()
}

/// The checksum of a block, folded into `sum`.
fn checksum(sum: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(sum, |s, &b| s.rotate_left(5) ^ u64::from(b))
}

/// The compute kernel: `steps` dependent multiply-adds over the block's
/// words, which the compiler cannot skip.
fn compute(bytes: &[u8], steps: u64) -> u64 {
    let words: Vec<u64> = bytes
        .chunks(8)
        .map(|c| c.iter().fold(0u64, |w, &b| w << 8 | u64::from(b)))
        .collect();
    let mut acc = 1u64;
    if words.is_empty() {
        for _ in 0..steps {
            acc = black_box(acc.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
        }
        return acc;
    }
    for k in 0..steps {
        let w = words[k as usize % words.len()];
        acc = black_box(acc.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(w));
    }
    acc
}

/// Steps of [`compute`] per millisecond on this node (step 1).
fn calibrate(len: usize) -> f64 {
    let bytes = block(0, len);
    let mut steps = 1u64 << 16;
    loop {
        let t = Instant::now();
        black_box(compute(&bytes, steps));
        let took = t.elapsed();
        if took >= Duration::from_millis(20) {
            return steps as f64 / took.as_secs_f64() / 1e3;
        }
        steps *= 2;
    }
}

/// Node 0: the comm-only run, then every mode at every ratio.
fn sender(ep: &Endpoint, options: &Options) -> Result<(), NodeError> {
    let worker = Address::new(1, 0);
    let blocks: Vec<Vec<u8>> = (0..options.blocks)
        .map(|i| block(i, options.block))
        .collect();
    let sent = blocks.iter().fold(0, |s, b| checksum(s, b));
    let report = |sample: Sample| {
        NodeResult::Overlap(sample)
            .send(ep.node())
            .map_err(NodeError::Report)
    };
    let comm = measure(ep, worker, options, None, Duration::ZERO, &blocks, sent)?;
    let comm_spread = comm.total;
    report(comm)?;
    for &ratio in &options.ratios {
        let per_block = compute_per_block(&comm_spread, options.blocks, ratio);
        for &mode in &options.modes {
            let mut sample = measure(ep, worker, options, Some(mode), per_block, &blocks, sent)?;
            sample.ratio = ratio;
            report(sample)?;
        }
    }
    ep.send(worker, GO, &go(STOP, Duration::ZERO)[..])
        .map_err(Error::from)?;
    Ok(())
}

fn go(mode: u8, per_block: Duration) -> Vec<u8> {
    let mut m = vec![mode];
    m.extend_from_slice(&(per_block.as_nanos() as u64).to_le_bytes());
    m
}

/// The repetitions of one mode (or the comm-only run) at `per_block`.
fn measure(
    ep: &Endpoint,
    worker: Address,
    options: &Options,
    mode: Option<Mode>,
    per_block: Duration,
    blocks: &[Vec<u8>],
    sent: u64,
) -> Result<Sample, Error> {
    let (mut ms, mut compute_ms) = (Vec::new(), Vec::new());
    for _ in 0..options.repetitions.max(1) {
        let code = mode.unwrap_or(Mode::Serial).code();
        ep.send(worker, GO, &go(code, per_block)[..])?;
        // The thread that receives the blocks: node 1's main thread, or
        // the one it started to receive them.
        let ready = ep.recv(worker, READY)?.into_vec();
        let thread: [u8; 4] = ready[..]
            .try_into()
            .map_err(|_| Error::Protocol("a ready of 4 bytes"))?;
        let to = Address::new(1, u32::from_le_bytes(thread));
        let t0 = Instant::now();
        for b in blocks {
            ep.send(to, BLOCK, &b[..])?;
        }
        let done = ep.recv(worker, DONE)?.into_vec();
        ms.push(t0.elapsed().as_secs_f64() * 1e3);
        let word = |i: usize| {
            done.get(i * 8..i * 8 + 8)
                .and_then(|w| w.try_into().ok())
                .map(u64::from_le_bytes)
                .ok_or(Error::Protocol("a done of 16 bytes"))
        };
        let (got, compute_ns) = (word(0)?, word(1)?);
        if got != sent {
            return Err(Error::Checksum { sent, got });
        }
        compute_ms.push(compute_ns as f64 / 1e6);
    }
    let total = Spread::of(&mut ms);
    Ok(Sample {
        mode,
        ratio: 0.0,
        total,
        compute_ms: Spread::of(&mut compute_ms).median,
    })
}

/// Node 1: calibrates, then serves runs until node 0's stop.
fn worker(ep: &Endpoint, options: &Options) -> Result<(), Error> {
    let sender = Address::new(0, 0);
    let per_ms = calibrate(options.block);
    loop {
        let m = ep.recv(sender, GO)?.into_vec();
        let (&code, ns) = m.split_first().ok_or(Error::Protocol("an empty go"))?;
        if code == STOP {
            return Ok(());
        }
        let mode = Mode::from_code(code).ok_or(Error::Protocol("a go of an unknown mode"))?;
        let ns: [u8; 8] = ns
            .try_into()
            .map_err(|_| Error::Protocol("a go of 9 bytes"))?;
        let per_block = u64::from_le_bytes(ns);
        let steps = (per_block as f64 / 1e6 * per_ms) as u64;
        let (sum, computing) = match mode {
            Mode::Serial => serial(ep, options.blocks, steps)?,
            Mode::Posted => posted(ep, options.blocks, steps)?,
            Mode::Fiber | Mode::Os => threaded(ep, options.blocks, steps, mode)?,
        };
        let mut done = sum.to_le_bytes().to_vec();
        done.extend_from_slice(&(computing.as_nanos() as u64).to_le_bytes());
        ep.send(sender, DONE, &done[..])?;
    }
}

/// What node 1 keeps of a run: the checksum and the time spent computing.
struct Tally {
    sum: u64,
    computing: Duration,
    steps: u64,
}

impl Tally {
    fn new(steps: u64) -> Tally {
        Tally {
            sum: 0,
            computing: Duration::ZERO,
            steps,
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        self.sum = checksum(self.sum, bytes);
        if self.steps > 0 {
            let t = Instant::now();
            black_box(compute(bytes, self.steps));
            self.computing += t.elapsed();
        }
    }
}

/// Tells node 0 which thread of this node receives the blocks.
fn ready(ep: &Endpoint, receiver: Address) -> Result<(), Error> {
    let thread = receiver.thread.to_le_bytes();
    Ok(ep.send(Address::new(0, 0), READY, &thread[..])?)
}

fn serial(ep: &Endpoint, blocks: u32, steps: u64) -> Result<(u64, Duration), Error> {
    let sender = Address::new(0, 0);
    ready(ep, ep.address())?;
    let mut tally = Tally::new(steps);
    for _ in 0..blocks {
        tally.take(&ep.recv(sender, BLOCK)?.into_vec());
    }
    Ok((tally.sum, tally.computing))
}

fn posted(ep: &Endpoint, blocks: u32, steps: u64) -> Result<(u64, Duration), Error> {
    let sender = Address::new(0, 0);
    let mut tally = Tally::new(steps);
    let mut next = (blocks > 0).then(|| ep.irecv(sender, BLOCK));
    ready(ep, ep.address())?;
    for i in 0..blocks {
        let this = next.take().ok_or(Error::Protocol("a posted receive"))?;
        let m = this.wait()?;
        if i + 1 < blocks {
            next = Some(ep.irecv(sender, BLOCK));
        }
        tally.take(&m.into_vec());
    }
    Ok((tally.sum, tally.computing))
}

/// A queue of at most two blocks between the receiving thread and the
/// computing one, for fibers and OS threads alike.
struct Handoff {
    blocks: Mutex<VecDeque<Result<Vec<u8>, Error>>>,
    slots: Semaphore,
    ready: Semaphore,
}

fn threaded(ep: &Endpoint, blocks: u32, steps: u64, mode: Mode) -> Result<(u64, Duration), Error> {
    let sender = Address::new(0, 0);
    let handoff = Arc::new(Handoff {
        blocks: Mutex::new(VecDeque::new()),
        slots: Semaphore::new(2),
        ready: Semaphore::new(0),
    });
    let receive = {
        let handoff = handoff.clone();
        move |ep: Endpoint| {
            for _ in 0..blocks {
                handoff.slots.wait();
                let got = ep.recv(sender, BLOCK).map(|m| m.into_vec());
                let failed = got.is_err();
                handoff.blocks.lock().push_back(got.map_err(Error::from));
                handoff.ready.post();
                if failed {
                    return;
                }
            }
        }
    };
    let receiver = match mode {
        Mode::Os => ep.node().spawn_os(receive),
        _ => ep.node().spawn(receive),
    };
    ready(ep, receiver.address())?;
    let mut tally = Tally::new(steps);
    for _ in 0..blocks {
        handoff.ready.wait();
        let bytes = handoff
            .blocks
            .lock()
            .pop_front()
            .ok_or(Error::Protocol("a block handed over"))??;
        handoff.slots.post();
        tally.take(&bytes);
    }
    receiver.join()?;
    Ok((tally.sum, tally.computing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_takes_longer_with_more_steps() {
        let bytes = block(3, 4096);
        assert_ne!(compute(&bytes, 1000), compute(&bytes, 1001));
        assert!(calibrate(4096) > 0.0);
        assert_eq!(compute(&[], 0), 1);
    }

    #[test]
    fn blocks_differ_and_checksums_see_it() {
        let (a, b) = (block(0, 100), block(1, 100));
        assert_ne!(a, b);
        assert_ne!(checksum(0, &a), checksum(0, &b));
    }
}
