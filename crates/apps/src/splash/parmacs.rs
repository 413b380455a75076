//! A PARMACS-like API over threadwire's shared memory: what the SPLASH-2
//! programs were written in (the Argonne macros of Lusk, Overbeek et al.),
//! as a Rust type.
//!
//! | PARMACS               | here                                        |
//! |-----------------------|---------------------------------------------|
//! | `MAIN_INITENV`        | [`Env::new`], by thread 0 of every node     |
//! | `G_MALLOC(bytes)`     | [`Env::g_malloc`]`::<T>(n)`: collective, in the same order on every node |
//! | `CREATE(proc)`        | [`Env::create`]`(n, f)`: `n` threads at once, each told its `pid` |
//! | `WAIT_FOR_END(n)`     | [`Env::wait_for_end`]                       |
//! | `BARRIER(bar, P)`     | [`Env::barrier`]: every process of every node |
//! | `LOCK(l)`/`UNLOCK(l)` | `let held = env.lock(id)?; … drop(held)`    |
//! | `CLOCK(t)`            | [`Env::clock`]: µs since [`Env::new`]       |
//! | `LOCKDEC`, `BARDEC`, `…INIT` | nothing: locks are numbers, the barrier is the job's |
//!
//! [`Env::plain`] runs the same program with no DSM: ordinary memory
//! ([`Region::local`]) shared by the threads of one process, threadwire's
//! own barrier for threads (the one the DSM combines a node's threads
//! with) and a lock per number — PARMACS on a shared-memory machine, the
//! baseline the DSM is measured against.
//!
//! Processes are OS threads: P = nodes × threads, and process `pid` is
//! thread `pid mod threads` of node `pid div threads`, so the processes of
//! a node are neighbours (SPLASH-2's contiguous partitions then put
//! neighbouring data on one node). Where a SPLASH-2 program's main thread
//! creates P−1 processes and then works as process 0, here every node's
//! main thread creates all of its node's processes and waits for them: it
//! takes no part in barriers.
//!
//! Rules:
//!
//! 1. [`Env::create`] starts, in all, exactly the `threads` processes of
//!    [`Env::new`] on every node before any of them calls
//!    [`Env::barrier`], which waits for all of them.
//! 2. [`Env::g_malloc`] is called by the main thread, in the same order
//!    with the same sizes on every node (`dsm::Dsm::alloc`'s rule).
//! 3. Shared memory follows the crate's contract: conflicting accesses
//!    are ordered by a barrier or a lock (`threadwire_dsm`'s module docs).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;
use threadwire::fiber::sync::Barrier;
use threadwire::Endpoint;
use threadwire_dsm::{Dsm, DsmConfig, DsmError, LockGuard, Region, Stats};

/// The size of the shared space [`Env::new`] maps: the largest program
/// at the seed's size (LU-c, 2048², 32 MiB) fits many times over, and
/// MATMULT's three matrices at four times its order (384 MiB); unused
/// space costs no memory but a word of bookkeeping a unit.
pub const SPACE: usize = 1 << 30;

/// Why a process could not be started or did not end well.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParmacsError {
    /// The shared memory failed (in a process, or setting it up).
    #[error(transparent)]
    Dsm(#[from] DsmError),
    /// More processes created than [`Env::new`] was told.
    #[error("{wanted} processes created on a node of {threads}")]
    TooMany {
        /// Processes created so far, these included.
        wanted: usize,
        /// Processes per node.
        threads: usize,
    },
    /// The OS refused a thread.
    #[error("starting a process: {0}")]
    Spawn(#[source] std::io::Error),
    /// The OS refused [`Env::plain`]'s memory.
    #[error("allocating memory: {0}")]
    Memory(#[source] std::io::Error),
    /// A process panicked.
    #[error("process {pid} panicked")]
    Panicked {
        /// Its global id.
        pid: usize,
    },
}

/// A created process: its pid and thread.
type Process = (usize, JoinHandle<Result<(), DsmError>>);

thread_local! {
    /// The calling process's endpoint, set as [`Env::create`] starts it.
    static ENDPOINT: std::cell::RefCell<Option<Endpoint>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with the calling process's endpoint; an error for a thread
/// [`Env::create`] did not start.
fn with_endpoint<T>(f: impl FnOnce(&Endpoint) -> Result<T, DsmError>) -> Result<T, DsmError> {
    ENDPOINT.with(|slot| match slot.borrow().as_ref() {
        Some(ep) => f(ep),
        None => Err(DsmError::Config(
            "BARRIER and LOCK are for the processes CREATE started".into(),
        )),
    })
}

/// What an environment's memory and synchronization are.
#[derive(Clone, Debug)]
enum Memory {
    /// The distributed shared memory.
    Dsm(Dsm),
    /// One process's memory ([`Env::plain`]).
    Plain(Arc<Plain>),
}

/// [`Env::plain`]'s synchronization: a barrier of the node's processes,
/// and a lock per number.
#[derive(Debug)]
struct Plain {
    barrier: Barrier,
    locks: Mutex<HashMap<u32, Arc<PlainLock>>>,
}

/// A lock of [`Env::plain`]: whether it is held, and its waiters.
#[derive(Debug, Default)]
struct PlainLock {
    held: Mutex<bool>,
    freed: Condvar,
}

/// A lock held: `UNLOCK` when dropped.
#[must_use = "the lock is released when this is dropped"]
pub struct Held<'a>(HeldBy<'a>);

enum HeldBy<'a> {
    Dsm { _guard: LockGuard<'a> },
    Plain(Arc<PlainLock>),
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let HeldBy::Plain(lock) = &self.0 {
            *lock.held.lock().unwrap_or_else(|p| p.into_inner()) = false;
            lock.freed.notify_one();
        }
    }
}

/// One node's PARMACS environment: clone it into every process.
#[derive(Clone, Debug)]
pub struct Env {
    memory: Memory,
    /// The node's runtime, through which processes get their endpoints;
    /// none for [`Env::plain`].
    handle: Option<threadwire::Node>,
    node: usize,
    nodes: usize,
    threads: usize,
    start: Instant,
    created: Arc<Mutex<Vec<Process>>>,
}

impl Env {
    /// `MAIN_INITENV`: maps the shared space for `threads` processes per
    /// node. Called once by thread 0 of every node.
    pub fn new(ep: &Endpoint, threads: usize) -> Result<Env, ParmacsError> {
        Env::with_space(ep, threads, SPACE)
    }

    /// [`new`](Self::new) with a shared space of `bytes` (a multiple of
    /// the 8 KiB unit), for programs larger than [`SPACE`] holds.
    pub fn with_space(ep: &Endpoint, threads: usize, bytes: usize) -> Result<Env, ParmacsError> {
        let config = DsmConfig {
            threads,
            size: bytes,
            ..DsmConfig::default()
        };
        let dsm = Dsm::new(ep, config)?;
        Ok(Env {
            memory: Memory::Dsm(dsm),
            handle: Some(ep.node().clone()),
            node: ep.node().id() as usize,
            nodes: ep.node().nodes() as usize,
            threads,
            start: Instant::now(),
            created: Arc::default(),
        })
    }

    /// `MAIN_INITENV` with no DSM: `threads` processes of this process
    /// alone (one node), sharing ordinary memory.
    pub fn plain(threads: usize) -> Env {
        let plain = Plain {
            barrier: Barrier::new(threads),
            locks: Mutex::default(),
        };
        Env {
            memory: Memory::Plain(Arc::new(plain)),
            handle: None,
            node: 0,
            nodes: 1,
            threads,
            start: Instant::now(),
            created: Arc::default(),
        }
    }

    /// Whether this is [`Env::plain`]'s.
    pub fn is_plain(&self) -> bool {
        matches!(self.memory, Memory::Plain(_))
    }

    /// `G_MALLOC`: `n` zeroed `T`s at the same address on every node
    /// (rule 2).
    pub fn g_malloc<T: bytemuck::Pod>(&self, n: usize) -> Result<Region<T>, ParmacsError> {
        self.g_malloc_homed(n, threadwire_dsm::Homes::RoundRobin)
    }

    /// `G_MALLOC` of an array each node writes a contiguous share of (a
    /// grid's rows): its units homed in as many contiguous shares as nodes,
    /// so that a node's writes to its own share stay local.
    pub fn g_malloc_blocks<T: bytemuck::Pod>(&self, n: usize) -> Result<Region<T>, ParmacsError> {
        self.g_malloc_homed(n, threadwire_dsm::Homes::Blocks)
    }

    /// `G_MALLOC` with the units homed as `homes` says.
    pub fn g_malloc_homed<T: bytemuck::Pod>(
        &self,
        n: usize,
        homes: threadwire_dsm::Homes,
    ) -> Result<Region<T>, ParmacsError> {
        match &self.memory {
            Memory::Dsm(dsm) => Ok(dsm.alloc_homed(n, homes)?),
            Memory::Plain(_) => Region::local(n).map_err(ParmacsError::Memory),
        }
    }

    /// `CREATE`: starts `n` more processes of this node, each running
    /// `f(pid)` on an OS thread of its own (rule 1).
    pub fn create<F>(&self, n: usize, f: F) -> Result<(), ParmacsError>
    where
        F: Fn(usize) -> Result<(), DsmError> + Send + Sync + 'static,
    {
        let f = Arc::new(f);
        let mut created = self.created.lock().unwrap_or_else(|p| p.into_inner());
        if created.len() + n > self.threads {
            return Err(ParmacsError::TooMany {
                wanted: created.len() + n,
                threads: self.threads,
            });
        }
        for _ in 0..n {
            let pid = self.node * self.threads + created.len();
            let (f, node) = (f.clone(), self.handle.clone());
            let handle = std::thread::Builder::new()
                .name(format!("splash-p{pid}"))
                .spawn(move || {
                    // The process's endpoint, through which its barriers
                    // and locks talk to other nodes: made once.
                    if let Some(node) = node {
                        let ep = node
                            .endpoint()
                            .map_err(|e| DsmError::Config(format!("process {pid}: {e}")))?;
                        ENDPOINT.with(|slot| *slot.borrow_mut() = Some(ep));
                    }
                    f(pid)
                })
                .map_err(ParmacsError::Spawn)?;
            created.push((pid, handle));
        }
        Ok(())
    }

    /// `WAIT_FOR_END`: waits for every process this node created, and
    /// returns the first failure among them.
    pub fn wait_for_end(&self) -> Result<(), ParmacsError> {
        let created = std::mem::take(&mut *self.created.lock().unwrap_or_else(|p| p.into_inner()));
        let mut first = Ok(());
        for (pid, handle) in created {
            let ended = match handle.join() {
                Ok(result) => result.map_err(ParmacsError::from),
                Err(_) => Err(ParmacsError::Panicked { pid }),
            };
            if first.is_ok() {
                first = ended;
            }
        }
        first
    }

    /// `BARRIER`: waits for every process of every node; what any wrote
    /// before it, all read after it.
    pub fn barrier(&self) -> Result<(), DsmError> {
        match &self.memory {
            Memory::Dsm(dsm) => with_endpoint(|ep| dsm.barrier(ep)),
            Memory::Plain(plain) => {
                plain.barrier.wait();
                Ok(())
            }
        }
    }

    /// `LOCK`: lock `id`, released when the guard drops (`UNLOCK`).
    pub fn lock(&self, id: u32) -> Result<Held<'_>, DsmError> {
        match &self.memory {
            Memory::Dsm(dsm) => with_endpoint(|ep| {
                Ok(Held(HeldBy::Dsm {
                    _guard: dsm.lock(ep, id)?,
                }))
            }),
            Memory::Plain(plain) => {
                let lock = plain
                    .locks
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(id)
                    .or_default()
                    .clone();
                let mut held = lock.held.lock().unwrap_or_else(|p| p.into_inner());
                while *held {
                    held = lock.freed.wait(held).unwrap_or_else(|p| p.into_inner());
                }
                *held = true;
                drop(held);
                Ok(Held(HeldBy::Plain(lock)))
            }
        }
    }

    /// `CLOCK`: microseconds since [`Env::new`] on this node.
    pub fn clock(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// P: the processes of the job.
    pub fn processes(&self) -> usize {
        self.nodes * self.threads
    }

    /// Processes per node.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// This node's number.
    pub fn node(&self) -> usize {
        self.node
    }

    /// The job's nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// This node's shared-memory counters (all zero for [`Env::plain`]).
    pub fn stats(&self) -> Stats {
        match &self.memory {
            Memory::Dsm(dsm) => dsm.stats(),
            Memory::Plain(_) => Stats::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_locks_exclude_and_plain_barriers_order() {
        let env = Env::plain(4);
        let counter: Region<u64> = env.g_malloc(2).expect("memory");
        let (env_p, c) = (env.clone(), counter.clone());
        env.create(4, move |pid| {
            for _ in 0..2000 {
                let _held = env_p.lock(3)?;
                // A read and a write apart: lost updates without the lock.
                let v = c.get(0);
                std::hint::spin_loop();
                c.set(0, v + 1);
            }
            env_p.barrier()?;
            // Everyone's increments are in before anyone reads.
            if c.get(0) != 8000 {
                c.set(1, 1 + pid as u64);
            }
            Ok(())
        })
        .expect("created");
        env.wait_for_end().expect("ended");
        assert_eq!(counter.get(0), 8000);
        assert_eq!(
            counter.get(1),
            0,
            "a process read before the barrier let it"
        );
        assert!(env.stats() == Stats::default() && env.is_plain());
    }

    #[test]
    fn plain_creates_no_more_processes_than_it_was_told() {
        let env = Env::plain(1);
        env.create(1, |_| Ok(())).expect("one");
        assert!(matches!(
            env.create(1, |_| Ok(())),
            Err(ParmacsError::TooMany {
                wanted: 2,
                threads: 1
            })
        ));
        env.wait_for_end().expect("ended");
    }
}
