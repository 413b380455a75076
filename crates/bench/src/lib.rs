//! Benchmarks of threadwire, written against its public API.
//!
//! - [`am`]: active messages: a request's round trip beside the
//!   ping-pong's, and the rate of one-way messages from T threads.
//! - [`bcast`]: one broadcast's time against the number of receiving
//!   hosts (1 to 8, one emulated host each, on ethernet10 and fast100),
//!   threadwire's tree and multicast beside PVM's `pvm_mcast` and
//!   `pvm_bcast` under real pvmds and `MPI_Bcast` in Open MPI and MPICH,
//!   with the 1998 UDP broadcast's figures (`threadwire bench bcast`).
//! - [`coll`]: collective latency (barrier, bcast, allreduce, allgather,
//!   alltoall) among nodes × fibers, beside Open MPI and MPICH.
//! - [`comm`]: communication time for 1 B … 1 MB between threads, nodes
//!   and emulated hosts beside the thesis' Table 5.2 (1998), and over the
//!   links bandwidth, t0 and r_max beside its Tables 5.3, 5.5 and 5.6.
//! - [`dsm`]: the distributed shared memory's faults, lock hand-offs and
//!   barriers per path, and its messages' sizes beside the Strings DSM's
//!   (`threadwire bench dsm`).
//! - [`encodings`]: the ping-pong with typed values packed and unpacked
//!   in each encoding (raw, portable, in-place, receiver-makes-right).
//! - [`fit`]: Hockney's t(n) = α + β·n through a ping-pong sweep: start-up
//!   latency, asymptotic bandwidth r∞ and n½.
//! - [`flood`]: the memory of a sender flooding a late receiver (N
//!   blocking sends of one 1 MiB buffer), each end's peak resident set,
//!   beside Open MPI's.
//! - [`floors`]: the physical floors of this machine that the other
//!   benchmarks are judged against: a cache line between cores, a
//!   thread's wake-up, memcpy bandwidth and loopback TCP.
//! - [`node_result`]: the one typed channel from a benchmark's nodes to
//!   the command that launched them (results on the control connection,
//!   never parsed stdout lines).
//! - [`overlap`]: a node that must compute on every block it receives,
//!   with one thread against a second that receives meanwhile: the gain
//!   of overlapping computation with communication.
//! - [`peers`]: NetPIPE over TCP, Open MPI, MPICH and PVM, run beside
//!   the ping-pong (`bench pingpong --peers`); [`peers::pvm`] is PVM 3.4,
//!   the 1998 peer: a private virtual machine per run, NetPIPE's `NPpvm`
//!   under it and the time of `pvm_spawn`; [`peers::coll`] is Open MPI's
//!   and MPICH's collectives, the peers of `bench coll`.
//! - [`pingpong`]: one-way latency and bandwidth between two endpoints.
//! - [`pvm`]: PVM programs on threadwire's libpvm3 beside real PVM 3.4.6:
//!   round trip and bandwidth at 8 B to 1 MB, direct and through pvmd,
//!   and `pvm_spawn` of 1 and 16 tasks, timed inside one C program, on
//!   one host and across emulated hosts.
//! - [`plot`]: latency and bandwidth charts of a ping-pong sweep (SVG, PNG).
//! - [`report`]: the one [`Report`](report::Report) trait every
//!   benchmark's result implements: a table, JSON and CSV into any
//!   `Write`.
//! - [`rate`]: 8-byte message rate from T threads of one node to T of
//!   another, as MPI's msgrate / osu_mbw_mr.
//! - [`seeds`]: the seed papers' tables the benchmarks reproduce, typed
//!   in once as printed (SCALE's Table 1, the thesis' Tables 5.1–5.6).
//! - [`spawn`]: start-up cost of N processes, fibers and OS threads
//!   beside the thesis' Table 5.1 (1998).
//! - [`suite`]: every benchmark into one report (`threadwire bench
//!   suite`): which steps, with which arguments, and the report's text.
//! - [`threads`]: the classic thread-package measurements, fibers beside
//!   OS threads, SCALE's Table 1 (SCALE and Solaris threads) beside them.
//!
//! The emulated hosts, the cleanup on a signal and the child processes
//! with deadlines that the benchmarks run on are `threadwire-testbed`'s.
//!
//! Each benchmark is a folder: `mod.rs` its options and run, `node.rs` the
//! side its launched nodes run, `report.rs` its report. Nothing here
//! prints: results are returned, node results reported to the launcher.
#![warn(missing_docs)]

pub mod am;
pub mod bcast;
pub mod coll;
pub mod comm;
pub mod dsm;
pub mod encodings;
pub mod fit;
pub mod flood;
pub mod floors;
pub mod node_result;
pub mod overlap;
pub mod peers;
pub mod pingpong;
pub mod plot;
pub mod pvm;
pub mod rate;
pub mod report;
pub mod seeds;
pub mod spawn;
pub mod suite;
mod system;
pub mod threads;

/// Two emulated hosts joined by `link`, if given (`--link` of the
/// benchmarks between two nodes): node 0 runs on the first, node 1 on the
/// second; both are removed when the net is dropped.
pub fn two_hosts(
    link: Option<threadwire_testbed::net::Link>,
) -> Result<Option<threadwire_testbed::net::ScopedNet>, threadwire_testbed::net::NetError> {
    link.map(|link| threadwire_testbed::net::ScopedNet::up_with_free_prefix("twb", 2, link))
        .transpose()
}

/// Median, minimum and maximum of the repetitions of one measurement.
fn spread<T: Copy + PartialOrd>(values: &mut [T]) -> (T, T, T) {
    assert!(!values.is_empty(), "a measurement has repetitions");
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    (
        values[values.len() / 2],
        values[0],
        values[values.len() - 1],
    )
}
