//! The distributed shared memory (`threadwire-dsm`) for C programs: one
//! shared space per process, arrays allocated in it collectively, barriers
//! and numbered locks; `include/parmacs.h` builds the PARMACS macros on
//! these functions.
//!
//! Rules:
//! 1. The space is made once per process, by thread 0 of every node
//!    (`tw_dsm_init`), and lives until the process exits: a held lock's
//!    guard borrows the [`Dsm`] for as long as the C program keeps the
//!    lock, which no call can bound, so the `Dsm` is never dropped.
//!    `tw_finalize` makes the nodes meet before any says goodbye
//!    ([`meet_before_leaving`]).
//! 2. A lock taken by `tw_dsm_lock` is the caller's — its fiber, or its
//!    OS thread — until its `tw_dsm_unlock`: the guard is kept in the
//!    calling OS thread's list under the caller's identity (as
//!    `context.rs` keeps endpoints; fibers never migrate), and only that
//!    caller may unlock it. A caller that ends (its body returns, it
//!    detaches or finalizes) with locks held gives them up then
//!    ([`release_held`]).
//! 3. The list is never borrowed across a call into the runtime: a lock
//!    is taken before its guard is pushed, and a guard is removed before
//!    it is dropped (a release may wake another fiber of this thread).

use crate::context::{self, with_endpoint};
use crate::error::{call, Error, Result, TwError};
use crate::types::{non_null, write_out};
use std::cell::RefCell;
use std::ffi::{c_int, c_void};
use std::sync::OnceLock;
use threadwire_dsm::{Dsm, DsmConfig, Homes, Kind, KindStats, LockGuard};
use tw::fiber::{current_unparker, Unparker};

/// With `tw_dsm_malloc`: the units dealt to the nodes in turn (the
/// default): no node serves more than its share of an array all read.
pub const TW_DSM_ROUND_ROBIN: c_int = -1;
/// With `tw_dsm_malloc`: the units in as many contiguous shares as nodes,
/// the first on node 0, for arrays each node writes a block of (a grid's
/// rows): a node's writes to its own share stay local.
pub const TW_DSM_BLOCKS: c_int = -2;

/// The space of this process and its size (rule 1).
struct Space {
    dsm: Dsm,
    bytes: usize,
}

/// Set by `tw_dsm_init` on thread 0, the only thread that may call it.
static SPACE: OnceLock<Space> = OnceLock::new();

/// A lock held by `owner` (rule 2).
struct Held {
    owner: Unparker,
    id: u32,
    _guard: LockGuard<'static>,
}

thread_local! {
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
}

/// The space, once `tw_dsm_init` has made it.
fn space() -> Result<&'static Space> {
    context::node()?;
    SPACE.get().ok_or_else(|| {
        Error::new(
            TwError::TW_ERR_NO_DSM,
            "the shared memory is not set up: call tw_dsm_init on thread 0 of every node first",
        )
    })
}

/// Gives up the locks `owner` still holds (rule 2): its thread or fiber
/// is ending.
pub(crate) fn release_held(owner: &Unparker) {
    let mine: Vec<Held> = HELD.with(|h| {
        let mut h = h.borrow_mut();
        let (mine, others) = h.drain(..).partition(|x| x.owner.same_as(owner));
        *h = others;
        mine
    });
    drop(mine);
}

/// Called by `tw_finalize` on thread 0: with a shared space, waits until
/// thread 0 of every node is finalizing too, so that no node says goodbye
/// (after which its peers' requests for the units it homes fail, and end
/// them) while another may still read those units. A node lost meanwhile
/// fails the meeting; finalizing goes on regardless.
pub(crate) fn meet_before_leaving(ep: &tw::Endpoint) {
    if SPACE.get().is_some() {
        let _ = tw::Group::world(ep).and_then(|world| world.barrier());
    }
}

/// Maps the shared space and starts this node's engine: `space_bytes` of
/// shared memory (rounded up to a whole unit; 0: 1 GiB, which costs only
/// what is used), kept coherent in units of `unit_bytes` (a multiple of
/// 4096; 0: 8192), with `threads_per_node` threads of every node taking
/// part in `tw_dsm_barrier` (0: 1). Collective: thread 0 of every node
/// calls it once, after `tw_init`, with the same arguments; it returns
/// when every node has. The space lasts until the process exits.
///
/// Context: thread 0, once. Errors: `TW_ERR_WRONG_THREAD` (another
/// thread), `TW_ERR_ALREADY`, `TW_ERR_INVALID` (a unit not a multiple of
/// 4096, a size that does not fit), `TW_ERR_DSM` (the kernel refused the
/// mapping or userfaultfd), `TW_ERR_PEER_LOST`, `TW_ERR_NO_ENDPOINT`
/// before `tw_init`.
#[no_mangle]
pub extern "C" fn tw_dsm_init(
    space_bytes: usize,
    unit_bytes: usize,
    threads_per_node: u32,
) -> c_int {
    call(|| {
        let defaults = DsmConfig::default();
        let unit = match unit_bytes {
            0 => defaults.unit,
            u => u,
        };
        let size = match space_bytes {
            0 => defaults.size,
            s => s,
        };
        let size = size
            .checked_next_multiple_of(unit)
            .filter(|s| *s <= isize::MAX as usize)
            .ok_or_else(|| {
                Error::invalid(format!("a space of {size} bytes does not fit in memory"))
            })?;
        let config = DsmConfig {
            size,
            unit,
            threads: threads_per_node.max(1) as usize,
            ..defaults
        };
        with_endpoint(|ep| {
            if ep.address().thread != 0 {
                return Err(Error::new(
                    TwError::TW_ERR_WRONG_THREAD,
                    "tw_dsm_init is for thread 0 of every node",
                ));
            }
            if SPACE.get().is_some() {
                return Err(Error::new(
                    TwError::TW_ERR_ALREADY,
                    "tw_dsm_init was called already",
                ));
            }
            let dsm = Dsm::new(ep, config)?;
            let made = SPACE.set(Space { dsm, bytes: size });
            assert!(made.is_ok(), "only thread 0 sets it, once");
            Ok(())
        })
    })
}

/// Allocates `bytes` of zeroed shared memory, aligned to a unit, at the
/// same address on every node, into `*out`; `homes` says where its units'
/// master copies live: `TW_DSM_ROUND_ROBIN`, `TW_DSM_BLOCKS`, or a node
/// number k ≥ 0 (`TW_DSM_NODE(k)`: every unit on node k, taken modulo
/// the node count). There is no free: the space is given out in order.
///
/// Collective: one thread of every node makes the same allocations (sizes
/// and homes) in the same order, and gets the same addresses. Where the
/// bytes the nodes allocated differ, their next `tw_dsm_barrier` fails
/// with `TW_ERR_DSM_DIVERGED`; other differences (homes, order) go
/// unnoticed. Not synchronized: a node may use the memory at once, before
/// others have allocated it.
///
/// Context: any thread, after `tw_dsm_init`. Errors: `TW_ERR_INVALID`
/// (NULL `out`, an unknown negative `homes`), `TW_ERR_DSM_FULL` (no room
/// left in the space), `TW_ERR_NO_DSM` before `tw_dsm_init`,
/// `TW_ERR_NO_ENDPOINT` before `tw_init` or after `tw_finalize`.
///
/// # Safety
///
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_dsm_malloc(bytes: usize, homes: c_int, out: *mut *mut c_void) -> c_int {
    call(|| {
        non_null(out, "out")?;
        let homes = match homes {
            TW_DSM_ROUND_ROBIN => Homes::RoundRobin,
            TW_DSM_BLOCKS => Homes::Blocks,
            k if k >= 0 => Homes::Node(k as u32),
            k => return Err(Error::invalid(format!("unknown homes {k}"))),
        };
        let space = space()?;
        if bytes > space.bytes {
            // Checked here: the crate's rounding up to a unit would
            // overflow for sizes near the address space's.
            return Err(Error::new(
                TwError::TW_ERR_DSM_FULL,
                format!("{bytes} bytes wanted of a shared space of {}", space.bytes),
            ));
        }
        let region = space.dsm.alloc_homed::<u8>(bytes, homes)?;
        // SAFETY: checked non-NULL; valid as the caller promises.
        unsafe { out.write(region.as_ptr().cast()) };
        Ok(())
    })
}

/// Waits until the `threads_per_node` threads (`tw_dsm_init`) of every
/// node have called it: what any of them wrote to shared memory before
/// it, all of them read after it.
///
/// Context: a thread with an endpoint (a spawned fiber or OS thread, an
/// attached thread, thread 0), after `tw_dsm_init`; exactly
/// `threads_per_node` threads of each node take part in each barrier.
/// Errors: `TW_ERR_DSM_DIVERGED` (the nodes allocated differently),
/// `TW_ERR_PEER_LOST`, `TW_ERR_DSM`, `TW_ERR_NO_DSM`,
/// `TW_ERR_NO_ENDPOINT`; every thread of the barrier gets the error.
#[no_mangle]
pub extern "C" fn tw_dsm_barrier() -> c_int {
    call(|| {
        let space = space()?;
        with_endpoint(|ep| Ok(space.dsm.barrier(ep)?))
    })
}

/// Takes lock `id` — any number: every node means the same lock by it —
/// waiting until it is free; what its previous holders wrote to shared
/// memory before unlocking it is visible once this returns. The lock is
/// the calling thread's (or fiber's) until it calls `tw_dsm_unlock(id)`;
/// one that ends holding locks gives them up. Locks are not recursive.
///
/// Context: a thread with an endpoint, after `tw_dsm_init`. Errors:
/// `TW_ERR_ALREADY` (the caller holds it already), `TW_ERR_PEER_LOST`
/// (a node on the lock's way is gone), `TW_ERR_NO_DSM`,
/// `TW_ERR_NO_ENDPOINT`.
#[no_mangle]
pub extern "C" fn tw_dsm_lock(id: u32) -> c_int {
    call(|| {
        let space = space()?;
        let me = current_unparker();
        let mine = HELD.with(|h| {
            h.borrow()
                .iter()
                .any(|x| x.id == id && x.owner.same_as(&me))
        });
        if mine {
            return Err(Error::new(
                TwError::TW_ERR_ALREADY,
                format!("lock {id} is held by the caller already"),
            ));
        }
        let guard = with_endpoint(|ep| Ok(space.dsm.lock(ep, id)?))?;
        HELD.with(|h| {
            h.borrow_mut().push(Held {
                owner: me,
                id,
                _guard: guard,
            })
        });
        Ok(())
    })
}

/// Gives up lock `id`, taken by the calling thread (or fiber) with
/// `tw_dsm_lock`.
///
/// Context: the thread or fiber that took it. Errors: `TW_ERR_NOT_HELD`
/// (the caller does not hold it), `TW_ERR_NO_DSM`.
#[no_mangle]
pub extern "C" fn tw_dsm_unlock(id: u32) -> c_int {
    call(|| {
        space()?;
        let me = current_unparker();
        let held = HELD.with(|h| {
            let mut h = h.borrow_mut();
            let i = h.iter().position(|x| x.id == id && x.owner.same_as(&me))?;
            Some(h.swap_remove(i))
        });
        match held {
            Some(held) => {
                drop(held);
                Ok(())
            }
            None => Err(Error::new(
                TwError::TW_ERR_NOT_HELD,
                format!("lock {id} is not held by the caller"),
            )),
        }
    })
}

/// One kind of request of a node's shared-memory engine: how many it sent,
/// their bytes, and the time until their replies.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tw_dsm_traffic {
    /// Requests sent.
    pub requests: u64,
    /// Their payload bytes.
    pub request_bytes: u64,
    /// Replies received.
    pub replies: u64,
    /// Their payload bytes.
    pub reply_bytes: u64,
    /// Nanoseconds from sending the requests to holding their replies,
    /// summed.
    pub round_trip_ns: u64,
}

/// What this node's shared-memory engine has done, as `tw_dsm_stats` gives
/// it.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default)]
pub struct tw_dsm_counters {
    /// Faults of reads on units not mapped (served here or fetched).
    pub read_faults: u64,
    /// Faults of writes on units not mapped, or write-protected.
    pub write_faults: u64,
    /// Units fetched from their homes.
    pub fetches: u64,
    /// Bytes of the units fetched.
    pub fetch_bytes: u64,
    /// Diffs sent to homes.
    pub diffs: u64,
    /// Bytes of the diffs sent.
    pub diff_bytes: u64,
    /// Units made invalid by other nodes' writes.
    pub invalidations: u64,
    /// The most fetches in flight at once.
    pub most_in_flight: u64,
    /// Units asked of their homes.
    pub fetch: tw_dsm_traffic,
    /// Diffs sent to homes.
    pub diff: tw_dsm_traffic,
    /// Arrivals at barriers.
    pub barrier: tw_dsm_traffic,
    /// Locks asked of their managers.
    pub lock_acquire: tw_dsm_traffic,
    /// Lock tokens asked of the node before in the lock's queue.
    pub lock_grant: tw_dsm_traffic,
}

impl From<KindStats> for tw_dsm_traffic {
    fn from(k: KindStats) -> tw_dsm_traffic {
        tw_dsm_traffic {
            requests: k.requests,
            request_bytes: k.request_bytes,
            replies: k.replies,
            reply_bytes: k.reply_bytes,
            round_trip_ns: k.round_trip.as_nanos().try_into().unwrap_or(u64::MAX),
        }
    }
}

/// This node's shared-memory counters so far into `*stats`.
///
/// Context: any thread, after `tw_dsm_init`. Errors: `TW_ERR_INVALID`
/// (NULL), `TW_ERR_NO_DSM`.
///
/// # Safety
///
/// `stats` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tw_dsm_stats(stats: *mut tw_dsm_counters) -> c_int {
    call(|| {
        non_null(stats, "stats")?;
        let s = space()?.dsm.stats();
        let mut out = tw_dsm_counters {
            read_faults: s.read_faults,
            write_faults: s.write_faults,
            fetches: s.fetches,
            fetch_bytes: s.fetch_bytes,
            diffs: s.diffs,
            diff_bytes: s.diff_bytes,
            invalidations: s.invalidations,
            most_in_flight: s.most_in_flight,
            ..tw_dsm_counters::default()
        };
        for k in s.traffic {
            let slot = match k.kind {
                Kind::Fetch => &mut out.fetch,
                Kind::Diff => &mut out.diff,
                Kind::Barrier => &mut out.barrier,
                Kind::Acquire => &mut out.lock_acquire,
                Kind::Follow => &mut out.lock_grant,
            };
            *slot = k.into();
        }
        // SAFETY: NULL or valid, as the caller promises.
        unsafe { write_out(stats, "stats", out) }
    })
}
