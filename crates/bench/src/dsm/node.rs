//! The node side of `bench dsm`: the operations of this node's job, as
//! the module docs of [`dsm`](super) say, each reported as it is measured
//! ([`NodeResult::Dsm`]) by the node that timed it.
//!
//! Every node allocates the same regions in the same order (the shared
//! memory's rule), so a region's units, and their homes (unit `u` at node
//! `u mod nodes`), are the same everywhere.

use super::{Error, Job, Operation, Options, Sample, JOB_VAR, PATH_VAR, UNIT};
use crate::am::Times;
use crate::node_result::NodeResult;
use std::hint::black_box;
use std::time::{Duration, Instant};
use threadwire::{Address, Endpoint, Node};
use threadwire_dsm::{Dsm, DsmConfig, Region};

/// `u64`s in a unit.
const PER_UNIT: usize = UNIT / 8;
/// The lock passed between the nodes (managed by node 1).
const LOCK_NODES: u32 = 1;
/// The lock passed between two threads of node 0 (managed by node 0).
const LOCK_THREADS: u32 = 2;
/// The tag of the messages that tell the other side of a lock's
/// ping-pong that this side holds the lock ([`PingPong::take_turns`]).
const TURN_TAG: u32 = 0xd5d0;

/// Node side: measures this node's share of its job (module docs).
pub fn node(options: &Options) -> Result<(), Error> {
    let name = std::env::var(JOB_VAR).ok();
    let job = name
        .as_deref()
        .and_then(Job::parse)
        .ok_or_else(|| Error::NoJob(name.clone()))?;
    let ep = threadwire::init().map_err(Error::Init)?;
    let config = DsmConfig {
        threads: job.threads(),
        unit: UNIT,
        size: options.space(),
        ..DsmConfig::default()
    };
    let dsm = Dsm::new(&ep, config).map_err(Error::Dsm)?;
    let bench = Bench {
        options,
        base: DsmConfig::default().base,
        repetitions: options.repetitions.max(1),
        path: std::env::var(PATH_VAR).unwrap_or_default(),
        node: ep.node().clone(),
        ep: &ep,
        dsm,
        job,
    };
    if job == Job::Pair {
        bench.faults()?;
        bench.locks()?;
    }
    bench.barriers()?;
    // Node 0 answers the shared memory's barriers from fiber handlers: it
    // must not exit before each has sent its node the release, which its
    // own thread's return from the last barrier does not wait for.
    threadwire::Group::world(&ep)
        .and_then(|world| world.barrier())
        .map_err(Error::Coll)
}

struct Bench<'a> {
    options: &'a Options,
    base: usize,
    repetitions: u32,
    path: String,
    node: Node,
    ep: &'a Endpoint,
    dsm: Dsm,
    job: Job,
}

impl Bench<'_> {
    fn me(&self) -> u32 {
        self.node.id()
    }

    fn nodes(&self) -> usize {
        self.node.nodes() as usize
    }

    /// The global number of `region`'s first unit.
    fn first_unit(&self, region: &Region<u64>) -> usize {
        (region.as_ptr() as usize - self.base) / UNIT
    }

    fn report(
        &self,
        operation: Operation,
        mut per_operation: Vec<Duration>,
        operations: u32,
        bytes: Option<f64>,
    ) -> Result<(), Error> {
        NodeResult::Dsm(Sample {
            path: self.path.clone(),
            operation,
            nodes: self.job.nodes(),
            threads: self.job.threads() as u32,
            times: Times::of(&mut per_operation),
            operations,
            repetitions: self.repetitions,
            bytes,
        })
        .send(&self.node)
        .map_err(Error::Report)
    }

    /// The faults: node 1 reads fresh units homed on node 0 and then
    /// writes them; node 0 then reads the same units, its own, never
    /// mapped here. Each repetition walks a stretch of its own.
    fn faults(&self) -> Result<(), Error> {
        let faults = self.options.faults.max(1) as usize;
        let stretch = 2 * faults;
        let walk: Region<u64> = self
            .dsm
            .alloc(stretch * self.repetitions as usize * PER_UNIT)
            .map_err(Error::Dsm)?;
        let first = self.first_unit(&walk);
        let (mut remote, mut write, mut home) = (Vec::new(), Vec::new(), Vec::new());
        let (mut fetched, mut fetches) = (0, 0);
        for r in 0..self.repetitions as usize {
            let units: Vec<usize> = (r * stretch..(r + 1) * stretch)
                .filter(|k| (first + k).is_multiple_of(self.nodes()))
                .map(|k| k * PER_UNIT)
                .collect();
            let n = units.len() as u32;
            self.barrier()?;
            if self.me() == 1 {
                let before = self.dsm.stats();
                let start = Instant::now();
                for &i in &units {
                    black_box(walk.get(i));
                }
                remote.push(start.elapsed() / n);
                let after = self.dsm.stats();
                fetched += after.fetch_bytes - before.fetch_bytes;
                fetches += after.fetches - before.fetches;
                let start = Instant::now();
                for &i in &units {
                    walk.set(i, 1);
                }
                write.push(start.elapsed() / n);
            }
            // Node 1's diffs reach node 0 here: node 0's reads below find
            // its own units changed by the home's engine in place.
            self.barrier()?;
            if self.me() == 0 {
                let start = Instant::now();
                for &i in &units {
                    black_box(walk.get(i + 1));
                }
                home.push(start.elapsed() / n);
            }
        }
        let n = faults as u32;
        match self.me() {
            1 => {
                let bytes = (fetches > 0).then(|| fetched as f64 / fetches as f64);
                self.report(Operation::RemoteReadFault, remote, n, bytes)?;
                self.report(Operation::WriteFault, write, n, None)
            }
            _ => self.report(Operation::HomeReadAfterDiffs, home, n, None),
        }
    }

    /// The lock, passed between the nodes, then between two threads of
    /// node 0, as turns at incrementing a counter under it.
    fn locks(&self) -> Result<(), Error> {
        let counters: Region<u64> = self.dsm.alloc(PER_UNIT).map_err(Error::Dsm)?;
        let turns = u64::from((self.options.hand_offs / 2).max(1));
        let hand_offs = 2 * turns as u32;
        let between = PingPong {
            counter: counters.clone(),
            at: 0,
            lock: LOCK_NODES,
        };
        let mut between_nodes = Vec::new();
        let other = Address::new(1 - self.me(), 0);
        for r in 0..u64::from(self.repetitions) {
            self.barrier()?;
            let start = Instant::now();
            let (side, from) = (self.me().into(), r * 2 * turns);
            between.take_turns(self.ep, other, side, from, turns)?;
            between_nodes.push(start.elapsed() / hand_offs);
        }
        // Node 1 takes the last turn: its time spans every hand-off.
        if self.me() == 1 {
            self.report(Operation::LockBetweenNodes, between_nodes, hand_offs, None)?;
        }
        let mut between_threads = Vec::new();
        for r in 0..u64::from(self.repetitions) {
            self.barrier()?;
            if self.me() != 0 {
                continue;
            }
            let from = r * 2 * turns;
            let me = self.ep.address();
            let within = PingPong {
                counter: counters.clone(),
                at: 1,
                lock: LOCK_THREADS,
            };
            let partner = {
                let within = within.clone();
                self.node
                    .spawn(move |ep| within.take_turns(&ep, me, 1, from, turns))
            };
            let start = Instant::now();
            within.take_turns(self.ep, partner.address(), 0, from, turns)?;
            partner.join().map_err(|_| Error::Thread)??;
            between_threads.push(start.elapsed() / hand_offs);
        }
        if self.me() == 0 {
            self.report(
                Operation::LockBetweenThreads,
                between_threads,
                hand_offs,
                None,
            )?;
        }
        Ok(())
    }

    /// Barriers of every participating thread, without writes and after
    /// each node wrote one unit homed on the next node; thread 0 of node 0
    /// reports.
    fn barriers(&self) -> Result<(), Error> {
        let nodes = self.nodes();
        let written: Region<u64> = self.dsm.alloc(nodes * PER_UNIT).map_err(Error::Dsm)?;
        let first = self.first_unit(&written);
        let next = (self.me() as usize + 1) % nodes;
        let mine = (0..nodes)
            .find(|j| (first + j) % nodes == next)
            .expect("nodes consecutive units have every home");
        let threads = self.job.threads();
        let (dsm, written) = (&self.dsm, &written);
        let (repetitions, barriers) = (self.repetitions, self.options.barriers.max(1));
        let run = move |t: usize, ep: &Endpoint| {
            measure_barriers(dsm, ep, written, mine * PER_UNIT + t, repetitions, barriers)
        };
        let node = &self.node;
        let ours = std::thread::scope(|scope| {
            let others: Vec<_> = (1..threads)
                .map(|t| {
                    scope.spawn(move || {
                        let ep = node.endpoint().map_err(|_| Error::Thread)?;
                        run(t, &ep)
                    })
                })
                .collect();
            let ours = run(0, self.ep);
            for other in others {
                other.join().map_err(|_| Error::Thread)??;
            }
            ours
        })?;
        if self.me() == 0 {
            let n = self.options.barriers.max(1);
            self.report(Operation::Barrier, ours.plain, n, None)?;
            let bytes = ours.bytes_per_diff;
            self.report(Operation::BarrierAfterWrites, ours.after_writes, n, bytes)?;
        }
        Ok(())
    }

    fn barrier(&self) -> Result<(), Error> {
        self.dsm.barrier(self.ep).map_err(Error::Dsm)
    }
}

/// A counter under a lock, for two threads to take strict turns at:
/// `counter[at]` under `lock`.
#[derive(Clone)]
struct PingPong {
    counter: Region<u64>,
    at: usize,
    lock: u32,
}

impl PingPong {
    /// `turns` turns at incrementing the counter, alternating with the
    /// thread at `other`: `side` 0 takes the first turn, side 1 the second,
    /// the count standing at `from` before. A side asks for the lock only
    /// once the other holds it (told by a message sent meanwhile), so that
    /// the lock changes hands at every turn rather than going back to the
    /// thread that released it; the count each turn finds checks that the
    /// lock carried the other's write.
    fn take_turns(
        &self,
        ep: &Endpoint,
        other: Address,
        side: u64,
        from: u64,
        turns: u64,
    ) -> Result<(), Error> {
        let dsm = self.counter.dsm().expect("allocated in the shared space");
        for k in 0..turns {
            if side == 1 || k > 0 {
                ep.recv(other, TURN_TAG).map_err(Error::Recv)?;
            }
            let held = dsm.lock(ep, self.lock).map_err(Error::Dsm)?;
            if side == 0 || k + 1 < turns {
                ep.send(other, TURN_TAG, Vec::new()).map_err(Error::Send)?;
            }
            let expected = from + 2 * k + side;
            let found = self.counter.get(self.at);
            if found != expected {
                return Err(Error::Counter { expected, found });
            }
            self.counter.set(self.at, found + 1);
            drop(held);
        }
        Ok(())
    }
}

/// One thread's times per barrier, a repetition each.
struct Barriers {
    plain: Vec<Duration>,
    after_writes: Vec<Duration>,
    /// The node's bytes per diff over the barriers after writes.
    bytes_per_diff: Option<f64>,
}

/// One thread's barriers (module docs of [`dsm`](super)): per repetition
/// the time per barrier without writes, and after writing `written[at]`;
/// and the node's bytes per diff over the latter.
fn measure_barriers(
    dsm: &Dsm,
    ep: &Endpoint,
    written: &Region<u64>,
    at: usize,
    repetitions: u32,
    barriers: u32,
) -> Result<Barriers, Error> {
    let barrier = || dsm.barrier(ep).map_err(Error::Dsm);
    let mut plain = Vec::new();
    for _ in 0..repetitions {
        barrier()?;
        let start = Instant::now();
        for _ in 0..barriers {
            barrier()?;
        }
        plain.push(start.elapsed() / barriers);
    }
    // Untimed: the first write fetches the unit; the writer keeps it
    // valid from then on (its own diff made it the home's version).
    written.set(at, 0);
    barrier()?;
    let mut writes = Vec::new();
    let (mut diffs, mut diff_bytes) = (0, 0);
    for _ in 0..repetitions {
        barrier()?;
        let before = dsm.stats();
        let start = Instant::now();
        for i in 0..barriers {
            written.set(at, u64::from(i) + 1);
            barrier()?;
        }
        writes.push(start.elapsed() / barriers);
        let after = dsm.stats();
        diffs += after.diffs - before.diffs;
        diff_bytes += after.diff_bytes - before.diff_bytes;
    }
    Ok(Barriers {
        plain,
        after_writes: writes,
        bytes_per_diff: (diffs > 0).then(|| diff_bytes as f64 / diffs as f64),
    })
}
