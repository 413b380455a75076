//! All-to-all exchange: every thread sends PER_PAIR messages to every other
//! thread of the job (threads of its own node included) with random tags and
//! sizes from 0 B to 4 MiB, and receives with `ANY_SOURCE`/`ANY_TAG`,
//! checking each message's tag, length and bytes, and that every sender's
//! messages arrive in the order sent, each exactly once.
//!
//! `node-alltoall THREADS PER_PAIR SEED`. A message's tag, size and bytes
//! are a pure function of (SEED, sender, receiver, sequence number), so the
//! receiver recomputes what it must get and a failure replays with the same
//! SEED. Prints one line per node: `alltoall nK: ok received=.. bytes=..
//! sent=..` or `alltoall nK: FAILED ..` (and exits with status 1).

mod common;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::HashMap;
use threadwire::{Address, Endpoint, Message, ANY_SOURCE, ANY_TAG};

const MIB: usize = 1 << 20;
/// Bytes of the message header: sender, receiver, sequence number.
const HEADER: usize = 24;

#[derive(Clone, Copy)]
struct Plan {
    nodes: u32,
    threads: u32,
    per_pair: u64,
    seed: u64,
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn key(a: Address) -> u64 {
    (u64::from(a.node) << 32) | u64::from(a.thread)
}

fn message_hash(plan: Plan, from: Address, to: Address, seq: u64) -> u64 {
    splitmix(splitmix(splitmix(plan.seed ^ key(from)) ^ key(to)) ^ seq)
}

/// A number in `[2^lo, 2^hi)`, log-uniformly from `h`.
fn log_uniform(h: u64, lo: u32, hi: u32) -> usize {
    let bits = f64::from(lo) + (h % 1_000_000) as f64 / 1e6 * f64::from(hi - lo);
    2f64.powf(bits) as usize
}

/// Tag and length of message `seq` from `from` to `to`: mostly small, a few
/// up to 4 MiB, and exactly 4 MiB for the first message from each node's
/// thread 0 to the next node's thread 0.
fn params(plan: Plan, from: Address, to: Address, seq: u64) -> (u32, usize) {
    let h = message_hash(plan, from, to, seq);
    let tag = (h >> 40) as u32 % 1000;
    let pick = (h >> 20) % 1000;
    let len = if seq == 0
        && from.thread == 0
        && to == Address::new((from.node + 1) % plan.nodes, 0)
        && plan.nodes > 1
    {
        4 * MIB
    } else if pick < 15 {
        log_uniform(h, 16, 22)
    } else if pick < 50 {
        0
    } else {
        log_uniform(h, 0, 14)
    };
    (tag, len)
}

/// The bytes of message `seq` from `from` to `to`: the header (cut short
/// for tiny messages) and then a pattern no other message shares.
fn payload(plan: Plan, from: Address, to: Address, seq: u64, len: usize) -> Vec<u8> {
    let mut head = [0u8; HEADER];
    head[0..4].copy_from_slice(&from.node.to_le_bytes());
    head[4..8].copy_from_slice(&from.thread.to_le_bytes());
    head[8..12].copy_from_slice(&to.node.to_le_bytes());
    head[12..16].copy_from_slice(&to.thread.to_le_bytes());
    head[16..24].copy_from_slice(&seq.to_le_bytes());
    let mut bytes = Vec::with_capacity(len);
    bytes.extend_from_slice(&head[..len.min(HEADER)]);
    let base = message_hash(plan, from, to, seq) | 1;
    let mut word = 0u64;
    while bytes.len() < len {
        let w = base
            .wrapping_mul(word.wrapping_add(0x2545_f491_4f6c_dd1d))
            .to_le_bytes();
        let take = (len - bytes.len()).min(8);
        bytes.extend_from_slice(&w[..take]);
        word += 1;
    }
    bytes
}

struct Receiver {
    plan: Plan,
    me: Address,
    next_seq: HashMap<Address, u64>,
    received: u64,
    bytes: u64,
}

impl Receiver {
    fn check(&mut self, m: Message) -> Result<(), String> {
        let from = m.source();
        let me = self.me;
        let seq = *self.next_seq.get(&from).ok_or_else(|| {
            format!("{me}: message from {from}, which is not a thread of this job")
        })?;
        if seq >= self.plan.per_pair {
            return Err(format!(
                "{me}: message {seq} from {from}, but it sends only {}",
                self.plan.per_pair
            ));
        }
        let (tag, len) = params(self.plan, from, me, seq);
        let (got_tag, got_len) = (m.tag(), m.len());
        let bytes = m.into_vec();
        if got_tag != tag || got_len != len || bytes != payload(self.plan, from, me, seq, len) {
            let got_seq = (bytes.len() >= HEADER)
                .then(|| u64::from_le_bytes(bytes[16..24].try_into().expect("8 bytes")));
            return Err(format!(
                "{me}: expected message {seq} from {from} (tag {tag}, {len} B), got tag \
                 {got_tag}, {got_len} B, sequence number in payload {got_seq:?} \
                 (out of order, duplicated, lost or corrupted)"
            ));
        }
        self.next_seq.insert(from, seq + 1);
        self.received += 1;
        self.bytes += len as u64;
        Ok(())
    }
}

/// Sends everything this thread owes, draining arrivals in between, then
/// receives the rest. Returns (messages, bytes) received. Sends are
/// `isend`s completed at the end: large messages are announced and wait
/// for their receives, so blocking sends from every thread before any
/// receives would rely on buffering (as under MPI).
fn exchange(ep: &Endpoint, plan: Plan) -> Result<(u64, u64), String> {
    let me = ep.address();
    let everyone: Vec<Address> = (0..plan.nodes)
        .flat_map(|n| (0..plan.threads).map(move |t| Address::new(n, t)))
        .collect();
    let others: Vec<Address> = everyone.iter().copied().filter(|&a| a != me).collect();
    let mut rx = Receiver {
        plan,
        me,
        next_seq: others.iter().map(|&a| (a, 0)).collect(),
        received: 0,
        bytes: 0,
    };
    let mut rng = StdRng::seed_from_u64(splitmix(plan.seed ^ key(me)));
    let mut sends = Vec::new();
    for seq in 0..plan.per_pair {
        let mut order = others.clone();
        order.shuffle(&mut rng);
        for to in order {
            let (tag, len) = params(plan, me, to, seq);
            sends.push(ep.isend(to, tag, payload(plan, me, to, seq, len)));
            while ep
                .iprobe(ANY_SOURCE, ANY_TAG)
                .map_err(|e| format!("{me}: {e}"))?
                .is_some()
            {
                let m = ep
                    .recv(ANY_SOURCE, ANY_TAG)
                    .map_err(|e| format!("{me}: {e}"))?;
                rx.check(m)?;
            }
        }
    }
    let expected = plan.per_pair * others.len() as u64;
    while rx.received < expected {
        let m = ep
            .recv(ANY_SOURCE, ANY_TAG)
            .map_err(|e| format!("{me}: {e}"))?;
        rx.check(m)?;
    }
    for r in threadwire::wait_all(sends) {
        r.map_err(|e| format!("{me}: {e}"))?;
    }
    if let Some((from, n)) = rx.next_seq.iter().find(|(_, &n)| n != plan.per_pair) {
        return Err(format!(
            "{me}: {n} messages from {from}, expected {}",
            plan.per_pair
        ));
    }
    Ok((rx.received, rx.bytes))
}

/// Runs [`exchange`]; on a failed check prints it and ends the node at
/// once, so that its peers learn of the failure instead of waiting.
fn exchange_or_exit(ep: &Endpoint, plan: Plan) -> (u64, u64) {
    exchange(ep, plan).unwrap_or_else(|e| {
        println!(
            "alltoall n{}: FAILED {e} (seed {})",
            ep.address().node,
            plan.seed
        );
        std::process::exit(1);
    })
}

fn main() {
    common::exit_on_panic();
    let threads: u32 = common::arg(1, 3);
    let per_pair: u64 = common::arg(2, 10);
    let seed: u64 = common::arg(3, 1);
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    let plan = Plan {
        nodes: node.nodes(),
        threads,
        per_pair,
        seed,
    };
    let workers: Vec<_> = (1..threads)
        .map(|_| node.spawn(move |ep| exchange_or_exit(&ep, plan)))
        .collect();
    let mut counts = vec![exchange_or_exit(&ep, plan)];
    counts.extend(
        workers
            .into_iter()
            .map(|w| w.join().expect("worker panicked")),
    );
    let received: u64 = counts.iter().map(|c| c.0).sum();
    let bytes: u64 = counts.iter().map(|c| c.1).sum();
    println!(
        "alltoall n{}: ok received={received} bytes={bytes} sent={} seed={seed}",
        node.id(),
        node.stats().messages_sent
    );
}
