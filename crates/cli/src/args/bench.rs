//! `threadwire bench`'s subcommands and their options.

use super::{MachineReadable, OnLink};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use threadwire_testbed::net::{Link, Loss};

#[derive(Subcommand)]
pub enum Bench {
    /// Every benchmark, each run as its own command, into one report
    /// (OUT/README.md): the tables of docs/PERFORMANCE.md.
    Suite(crate::suite::SuiteArgs),
    /// One-way latency and bandwidth, thread to thread in a node and node to node over TCP.
    Pingpong(PingpongArgs),
    /// 8-byte message rate from T threads of node 0 to T threads of node 1 (as MPI's msgrate).
    Rate(RateArgs),
    /// Overlap of computation with communication: node 1 computes on every block node 0
    /// streams to it, with one thread against a second that receives meanwhile.
    Overlap(OverlapArgs),
    /// Active messages between two nodes: a request's round trip (inline and fiber
    /// handlers) beside the ping-pong's, and the rate of one-way messages from T threads
    /// (beside LCI's published 3.09 M msgs/s).
    Am(AmArgs),
    /// Mutex, semaphore, switches, create+join and message round trip: fibers beside OS threads,
    /// and SCALE's Table 1 beside them (SCALE threads, Solaris threads, 1998).
    Threads(ThreadsArgs),
    /// Start-up cost of N node processes, fibers, OS threads, nodes added to a running job and fibers started on another node, beside PVM's pvm_spawn and Open MPI's MPI_Comm_spawn into a running job, and the thesis' Table 5.1 (1998: 57.75 to 852.54 ms for 1 to 16 processes, 1.75 to 20.94 ms for threads).
    Spawn(SpawnArgs),
    /// Communication time for 1 B, 1 KB, 32 KB and 1 MB between threads, nodes and
    /// emulated hosts: one-way ping-pong ms beside the thesis' Table 5.2 (1998); over
    /// the links, bandwidth, t0 and r_max beside its Tables 5.3, 5.5 and 5.6.
    Comm(CommArgs),
    /// The distributed shared memory: a fault's round trip, a lock's hand-off and a
    /// barrier per path, and its message sizes beside the Strings DSM's Table 1.
    Dsm(DsmArgs),
    /// Ping-pong of f64 values packed and unpacked in each encoding (raw, portable,
    /// in-place, receiver-makes-right) between two nodes: one-way time and MB/s.
    Encodings(EncodingsArgs),
    /// The physical floors of this machine: a cache line between cores, a sleeping
    /// thread's wake-up, memcpy bandwidth and loopback TCP.
    Floors(FloorsArgs),
    /// Collective latency (barrier, bcast, allreduce, allgather, alltoall) among
    /// nodes × fibers, OSU-style; with --peers beside Open MPI and MPICH.
    Coll(CollArgs),
    /// The memory of a flooding sender: node 0 sends N messages of one reused
    /// buffer to node 1, whose receiver starts late; each end's peak resident set.
    Flood(FloodArgs),
    /// One broadcast's time against the number of receiving hosts (one emulated
    /// host each; needs root): threadwire's tree and multicast beside PVM's pvm_mcast and
    /// pvm_bcast under real pvmds and MPI_Bcast in Open MPI and MPICH, with the 1998 UDP
    /// broadcast's figure (10^6 B ≈ 1000 ms at 10 Mbit/s).
    ///
    /// One broadcast is timed alike in every system, by the root's clock: from
    /// its broadcast call until it has an empty acknowledgement from every
    /// receiver, sent once that receiver has the whole message; each size is
    /// broadcast once untimed first. Rounds alternate between the systems. The
    /// table per link gives the median of every timed broadcast, each system's
    /// ratio to threadwire tree's time at one receiver (÷k1), min–max, and the
    /// seed's figure where its text gives one.
    Bcast(BcastArgs),
    /// PVM programs: round trip and one-way bandwidth (8 B to 1 MB) and pvm_spawn of 1 and 16
    /// tasks, one C program (bench-peers/pvm) under threadwire's libpvm3 beside PVM 3.4.6's
    /// pvmd (direct and daemon-routed), alternating; with --link also across two emulated hosts.
    Pvm(PvmBenchArgs),
}

#[derive(Args)]
pub struct PvmBenchArgs {
    /// Message sizes in bytes, comma-separated, each rounded up to whole ints (4 bytes).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "8,100,1000,10000,100000,1000000",
        value_parser = clap::value_parser!(u32).range(1..=(1 << 28))
    )]
    pub sizes: Vec<u32>,
    /// Tasks per pvm_spawn, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,16",
        value_parser = clap::value_parser!(u32).range(1..=256)
    )]
    pub counts: Vec<u32>,
    /// Runs of the program per row, alternating between the rows.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Milliseconds each measurement lasts inside the program.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..))]
    pub ms: u64,
    /// pvm_initsend's encoding: raw (PvmDataRaw), default (PvmDataDefault) or inplace.
    #[arg(long, default_value = "raw")]
    pub encoding: threadwire_bench::pvm::Encoding,
    /// Also run the two tasks on two emulated hosts joined by this link
    /// (10mbit, 100mbit, 155mbit, 1000mbit, or ethernet10, fast100, atm155,
    /// gige, none; needs root, else those rows are skipped with the reason).
    #[arg(long)]
    pub link: Option<Link>,
    #[command(flatten)]
    pub output: MachineReadable,
}

/// `bench bcast` ([`Bench::Bcast`] says what it times).
#[derive(Args)]
pub struct BcastArgs {
    /// Links, comma-separated, one net of emulated hosts and one table each:
    /// ethernet10, fast100, atm155, gige, none (or 10mbit, 100mbit, …).
    #[arg(
        long = "link",
        value_delimiter = ',',
        default_value = "ethernet10,fast100"
    )]
    pub links: Vec<Link>,
    /// Receivers k, comma-separated: the root on host 0 and one receiver on
    /// each of hosts 1 to k (k + 1 emulated hosts).
    #[arg(
        long = "hosts",
        value_delimiter = ',',
        default_value = "1,2,4,8",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(threadwire_bench::bcast::MAX_RECEIVERS))
    )]
    pub receivers: Vec<u32>,
    /// Message sizes in bytes, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "8,100,1000,60000,1000000",
        value_parser = clap::value_parser!(u32).range(1..=(1 << 28))
    )]
    pub sizes: Vec<u32>,
    /// Rounds, each running every system once, in turn.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Per run and size, timed broadcasts go on while they have taken less
    /// than this many milliseconds (at least one).
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    pub ms: u64,
    /// Systems, comma-separated: tree (threadwire over TCP, its own
    /// algorithm), multicast (threadwire over UDP with
    /// --multicast-algorithm forced), pvm-mcast, pvm-bcast, openmpi, mpich.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "tree,multicast,pvm-mcast,pvm-bcast,openmpi,mpich"
    )]
    pub systems: Vec<threadwire_bench::bcast::System>,
    /// What the multicast row forces, COLL=ALG as `bench coll --algorithm`
    /// takes it, passed to the runtime as it is; a runtime that refuses it
    /// has the row skipped with the reason.
    #[arg(long, default_value = "bcast=multicast", value_name = "COLL=ALG")]
    pub multicast_algorithm: String,
    /// Also plot time against receivers, one chart per link and size, a
    /// line per system, into this directory (created if missing):
    /// bcast-<link>-<size>.svg/.png.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct FloodArgs {
    /// Messages node 0 sends.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: u64,
    /// Bytes per message (one buffer, reused for every send).
    #[arg(long, default_value_t = 1 << 20)]
    pub size: usize,
    /// Seconds node 1's receiving thread starts late.
    #[arg(long, default_value_t = 3.0)]
    pub delay: f64,
    /// Receive into one reused buffer (recv_into) instead of owned messages (recv).
    #[arg(long)]
    pub into: bool,
    /// Paths, comma-separated, one job each: `shm`, `tcp`.
    #[arg(long, value_delimiter = ',', default_value = "shm,tcp", value_parser = ["shm", "tcp"])]
    pub paths: Vec<String>,
    /// Also run the same flood in Open MPI (bench-peers/flood/flood.c, mpicc)
    /// on the same paths: its default selection for shm, --mca btl self,tcp for tcp.
    #[arg(long)]
    pub peers: bool,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct CollArgs {
    /// Layouts NODESxTHREADS, comma-separated, one job each: N node
    /// processes of T members (the main thread and T − 1 fibers); at most
    /// 64 members.
    #[arg(long = "layout", value_delimiter = ',', default_value = "4x1,2x8,1x16")]
    pub layouts: Vec<threadwire_bench::coll::Layout>,
    /// Collectives, comma-separated: barrier, bcast, allreduce, allgather, alltoall.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "barrier,bcast,allreduce,allgather,alltoall"
    )]
    pub operations: Vec<threadwire_bench::coll::Operation>,
    /// Largest size as a power of two (default 24 = 16 MiB): every power
    /// of two from 8 B up to it.
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(3..=30))]
    pub max_power: u32,
    /// Sizes in bytes, comma-separated, instead of the sweep of
    /// --max-power (allreduce sums doubles: multiples of 8).
    #[arg(long, value_delimiter = ',', conflicts_with = "max_power")]
    pub sizes: Option<Vec<usize>>,
    /// Repetitions per operation and size.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Milliseconds per repetition (the iterations are calibrated to it).
    #[arg(long, default_value_t = 100)]
    pub ms: u64,
    /// Stop a size's repetitions once they have taken this many
    /// milliseconds, after at least 3 (0: no limit).
    #[arg(long, default_value_t = 2000)]
    pub max_ms_per_size: u64,
    /// Force an algorithm for the measurement, COLL=ALG, repeatable or
    /// comma-separated: barrier=dissemination|hierarchical|host-stage,
    /// allreduce=recursive-doubling|rabenseifner|ring|hierarchical|host-stage,
    /// bcast=binomial|scatter-allgather|chain|hierarchical|host-stage|multicast,
    /// allgather=bruck|ring|multicast,
    /// alltoall=bruck|pairwise.
    #[arg(long = "algorithm", value_delimiter = ',', value_name = "COLL=ALG")]
    pub algorithms: Vec<String>,
    /// The channel between the nodes: auto (the default), tcp, shm, or udp
    /// (the reliable UDP channel, with multicast streams between hosts).
    #[arg(long)]
    pub channel: Option<String>,
    /// Print the algorithm each collective would use at each size for
    /// each layout, and measure nothing.
    #[arg(long)]
    pub explain: bool,
    /// Also run the same collectives in Open MPI and MPICH (mpicc, -fopenmp)
    /// beside each layout: 4 ranks beside 4x1; 16 ranks oversubscribed and
    /// 2 ranks × 8 OpenMP threads beside 2x8 and 1x16.
    #[arg(long)]
    pub peers: bool,
    /// Run the nodes on emulated hosts joined by this link, node i on host
    /// i mod H, H the most nodes of the layouts and at least 2 (needs
    /// root), built for the run and removed after it.
    #[arg(long)]
    pub link: Option<Link>,
    /// Also plot each collective's time against size, one line per layout
    /// and per peer configuration, into this directory (created if
    /// missing): coll-<collective>.svg/.png (none for the barrier, which
    /// has no size).
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct PingpongArgs {
    /// Largest size as a power of two (default 24 = 16 MiB): the sweep
    /// is every power of two from 1 B and the classic sizes 8, 20, 100,
    /// 1000, 60000, 250000, 1000000 and 10000000 B up to it.
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(0..=30))]
    pub max_power: u32,
    /// Sizes in bytes, comma-separated, instead of the sweep of --max-power.
    #[arg(long, value_delimiter = ',', conflicts_with = "max_power")]
    pub sizes: Option<Vec<usize>>,
    /// Paths to measure, comma-separated: `thread` (two fibers of one
    /// node), `shm`, `tcp` and `udp` (node to node, one job each).
    #[arg(long, value_delimiter = ',', default_value = "thread,shm,tcp",
          value_parser = ["thread", "shm", "tcp", "udp"])]
    pub paths: Vec<String>,
    /// Repetitions per size.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Milliseconds per repetition.
    #[arg(long, default_value_t = 100)]
    pub ms: u64,
    /// Also plot latency and bandwidth against size, with the 1998
    /// figures, into this directory (created if missing):
    /// pingpong-latency.svg/.png and pingpong-bandwidth.svg/.png.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// Also run the peers, where installed, on the same paths and show
    /// their figures and our ratio to them: NetPIPE's NPopenmpi and
    /// NPmpich2 beside shm, NPtcp and NPopenmpi over TCP beside tcp; beside
    /// udp, sockperf's UDP ping-pong (its median one-way time, at sizes up
    /// to 65000 B, 14 B at least) and the `iperf3 -u` floor (what the
    /// receiver gets at the link's rate, 1472-byte datagrams), set against
    /// our bandwidth at 1 MB (or the largest size) and the link's rate.
    /// sockperf (once per message size) and iperf3 run for about a size's
    /// budget in whole seconds, 1 to 10; with --loss sockperf sends one
    /// message at a time under load (its ping-pong stalls at a loss). A
    /// peer not installed says so and which package provides it.
    #[arg(long)]
    pub peers: bool,
    /// Also measure every size receiving into a reused buffer, as NetPIPE
    /// does (recv_into; sent back from the same buffer): a second row per
    /// size, `into` beside `owned`; the peers are then compared with it.
    #[arg(long)]
    pub into: bool,
    #[command(flatten)]
    pub link: OnLink,
    /// With --link: each emulated host drops this share of the packets it
    /// receives, in percent (`1`, `0.5%`), as `net up --loss`; the table's
    /// header names it. Needs iptables.
    #[arg(long, requires = "link", value_name = "PERCENT")]
    pub loss: Option<Loss>,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct RateArgs {
    /// Thread counts T, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8",
        value_parser = clap::value_parser!(u32).range(1..=64)
    )]
    pub threads: Vec<u32>,
    /// Messages per thread per repetition (msgrate.c's N is 200000).
    #[arg(long, default_value_t = 50_000)]
    pub messages: u64,
    /// Timed repetitions per thread count (after one untimed warm-up).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Sends (receives) started before they are completed together.
    #[arg(long, default_value_t = 64)]
    pub window: usize,
    /// Kinds of threads to measure, comma-separated: os (as msgrate.c's pthreads), fibers.
    #[arg(long, value_delimiter = ',', default_value = "os")]
    pub kinds: Vec<threadwire_bench::rate::ThreadKind>,
    /// Also run Open MPI's msgrate (bench-peers/shm/msgrate.c, mpicc) with
    /// MPI_THREAD_MULTIPLE at each T, with the same N and W: shared memory
    /// only, so not with --link.
    #[arg(long, conflicts_with = "link")]
    pub peers: bool,
    /// Receive each message as an owned one (irecv: a new vector per
    /// message) instead of into reused buffers (irecv_into, as msgrate's
    /// MPI_Irecv).
    #[arg(long)]
    pub owned: bool,
    #[command(flatten)]
    pub link: OnLink,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct OverlapArgs {
    /// Bytes per block (1 MiB: beyond the eager budget, so that a block's
    /// bytes move only once a receive is posted).
    #[arg(long, default_value_t = 1 << 20)]
    pub block: usize,
    /// Blocks per run.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub blocks: u32,
    /// Compute time per block as multiples of the communication time per
    /// block, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2")]
    pub ratios: Vec<f64>,
    /// Modes, comma-separated: serial (one thread), posted (one thread,
    /// the next receive posted before computing), fiber, os (a second
    /// thread receives).
    #[arg(long, value_delimiter = ',', default_value = "serial,posted,fiber,os")]
    pub modes: Vec<threadwire_bench::overlap::Mode>,
    /// Timed runs per mode and ratio.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    #[command(flatten)]
    pub link: OnLink,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct AmArgs {
    /// Paths, comma-separated, one job each: `shm`, `tcp`.
    #[arg(long, value_delimiter = ',', default_value = "shm,tcp", value_parser = ["shm", "tcp"])]
    pub paths: Vec<String>,
    /// Payload sizes of the round trip in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,8")]
    pub sizes: Vec<usize>,
    /// Round-trip repetitions per size (each method's interleaved).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Milliseconds per repetition of each method (the round count is calibrated to it).
    #[arg(long, default_value_t = 100)]
    pub ms: u64,
    /// Sending thread counts T of the rate, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,4,8",
        value_parser = clap::value_parser!(u32).range(1..=64)
    )]
    pub threads: Vec<u32>,
    /// One-way messages per thread per repetition of the rate.
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub messages: u64,
    /// Timed repetitions of the rate per kind and thread count (after one untimed warm-up).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_repetitions: u32,
    /// Kinds of the sending threads, comma-separated: os, fibers.
    #[arg(long, value_delimiter = ',', default_value = "os")]
    pub kinds: Vec<threadwire_bench::rate::ThreadKind>,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct ThreadsArgs {
    /// Operations per repetition of the cheapest rows (costlier rows run a fixed fraction).
    #[arg(long, default_value_t = 200_000)]
    pub iterations: u64,
    /// Timed repetitions per row and column.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct SpawnArgs {
    /// Numbers N to start, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,4,8,16",
        value_parser = clap::value_parser!(u32).range(1..=256)
    )]
    pub counts: Vec<u32>,
    /// Timed repetitions per row (after one untimed warm-up).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Only whole jobs under launchers (threadwire run, mpiexec.hydra and
    /// srun of threadwire nodes; Open MPI's mpirun and MPICH's mpiexec of
    /// an MPI ring) and pvm_spawn, their 1998 peer (issue 15).
    #[arg(long)]
    pub launchers_only: bool,
    /// Start the node processes on two emulated hosts joined by this
    /// link, node i on host i mod 2 (needs root); the other rows stay
    /// on this host.
    #[arg(long)]
    pub link: Option<Link>,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct CommArgs {
    /// Links of the host-to-host rows, comma-separated, each built for its
    /// run and removed after (ethernet10, fast100, atm155, gige, none; root).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ethernet10,fast100,atm155,gige"
    )]
    pub links: Vec<Link>,
    /// Repetitions per size (fewer on slow links, to fit --seconds).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Milliseconds per repetition, at least.
    #[arg(long, default_value_t = 50)]
    pub ms: u64,
    /// Seconds a size's repetitions may take on a link, by its rate
    /// (at least one repetition).
    #[arg(long, default_value_t = 7.0)]
    pub seconds: f64,
    /// Leave out the bandwidth sizes of the thesis' Tables 5.3 and 5.6
    /// (80 to 5120 KB; about 75 s over ethernet10).
    #[arg(long)]
    pub no_bandwidth: bool,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct DsmArgs {
    /// Links of the host-to-host rows (four emulated hosts each, built for
    /// the run and removed after; root), comma-separated: ethernet10,
    /// fast100, atm155, gige, none. Default: shm only.
    #[arg(long = "link", value_delimiter = ',')]
    pub links: Vec<Link>,
    /// Repetitions of every measurement.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Faults per repetition.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub faults: u32,
    /// Lock hand-offs per repetition.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(2..))]
    pub hand_offs: u32,
    /// Barriers per repetition.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..))]
    pub barriers: u32,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct EncodingsArgs {
    /// Largest size as a power of two (default 24 = 16 MiB), swept as
    /// `bench pingpong` does; sizes are rounded up to whole f64 values.
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(0..=30))]
    pub max_power: u32,
    /// Sizes in bytes, comma-separated, instead of the sweep of --max-power.
    #[arg(long, value_delimiter = ',', conflicts_with = "max_power")]
    pub sizes: Option<Vec<usize>>,
    /// Repetitions per size and encoding.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Milliseconds per repetition.
    #[arg(long, default_value_t = 100)]
    pub ms: u64,
    #[command(flatten)]
    pub link: OnLink,
    #[command(flatten)]
    pub output: MachineReadable,
}

#[derive(Args)]
pub struct FloorsArgs {
    /// Timed repetitions per row (after one untimed warm-up).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: u32,
    /// Milliseconds per repetition (iteration counts are calibrated to it).
    #[arg(long, default_value_t = 100)]
    pub ms: u64,
    #[command(flatten)]
    pub output: MachineReadable,
}
