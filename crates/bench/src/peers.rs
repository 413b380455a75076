//! NetPIPE peers of the ping-pong, run in the same sitting as threadwire's
//! own sweep (`threadwire bench pingpong --peers`).
//!
//! Each [`Peer`] is NetPIPE 3.7.2 over one transport, matched to the
//! threadwire path it is compared with: shared memory ↔ MPI's default
//! selection (which picks shared memory between two ranks on one host),
//! TCP ↔ `NPtcp` over loopback, MPI forced onto TCP and `NPpvm` (under a
//! PVM daemon of its own, [`pvm`]). On emulated hosts (`--link`)
//! every peer runs between the two namespaces and is compared with TCP:
//! `NPtcp` started in each, `mpirun` starting one rank in each (the
//! `mpi` module's numbered steps say how, and why UCX is held to TCP
//! there).
//!
//! NetPIPE picks its own sizes (2^k, 2^k ± 3, 1.5·2^k ± 3) up to its `-u`
//! bound; [`Measured::at`] takes the row at a size of ours, or the nearest.
//! Its `-o` file has three columns: bytes, "Mbps" (2^20 bit/s) and the
//! one-way time in seconds, the best of its trials.
//!
//! Every run has a deadline: a peer that hangs is killed with its whole
//! process group (mpirun and its ranks), so it cannot hang the benchmark.
//!
//! [`coll`] is the peers of `bench coll`: the collectives of Open MPI and
//! MPICH, timed by a program of ours built with each MPI's `mpicc`;
//! [`flood`] is the peer of `bench flood`, [`rate`] that of `bench
//! rate` and [`comm_spawn`] Open MPI's of `bench spawn`, built and run the
//! same way. [`bcast`] is the peers of `bench bcast`: PVM's `pvm_mcast`
//! and `pvm_bcast` and MPI's `MPI_Bcast`, one process on each of `k + 1`
//! emulated hosts. [`udp`] is the peers of the ping-pong's `udp` path:
//! sockperf's UDP ping-pong and the `iperf3 -u` floor. [`pdgemm`] is
//! ScaLAPACK's distributed GEMM beside `threadwire apps matmul --peers`.

use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub mod bcast;
pub mod coll;
pub mod comm_spawn;
pub mod flood;
mod mpi;
pub mod pdgemm;
pub(crate) mod process;
pub mod pvm;
pub mod rate;
pub mod udp;

use process::Group;
use threadwire_testbed::retry::retry_until;

/// Trials NetPIPE 3.7.2 runs per size, each of `-n` round trips.
const NETPIPE_TRIALS: u32 = 3;

/// A NetPIPE build and how it is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// `NPtcp`: a receiver, then a transmitter given `-h HOST`.
    Tcp,
    /// `NPopenmpi` under Open MPI's default selection (shared memory here).
    OpenMpi,
    /// `NPopenmpi` with `--mca pml ob1 --mca btl tcp,self` (and, on one
    /// host, loopback only: `--mca btl_tcp_if_include lo`).
    OpenMpiTcp,
    /// `NPmpich2` under MPICH's `mpirun.mpich`.
    Mpich,
    /// `NPpvm` under a PVM daemon.
    Pvm,
}

/// The threadwire path a peer is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Node to node over shared memory.
    Shm,
    /// Node to node over TCP.
    Tcp,
}

impl Transport {
    /// The path's name in the ping-pong's rows (`shm`, `tcp`).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Shm => "shm",
            Transport::Tcp => "tcp",
        }
    }
}

impl Peer {
    /// Every peer, in the order they are run and shown.
    pub const ALL: [Peer; 5] = [
        Peer::OpenMpi,
        Peer::Mpich,
        Peer::Tcp,
        Peer::OpenMpiTcp,
        Peer::Pvm,
    ];

    /// A short name: the program and, where it differs, the selection.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Tcp => "NPtcp",
            Peer::OpenMpi => "NPopenmpi",
            Peer::OpenMpiTcp => "NPopenmpi/ob1-tcp",
            Peer::Mpich => "NPmpich2",
            Peer::Pvm => "NPpvm",
        }
    }

    /// The threadwire path it is compared with when placed so: an MPI's
    /// default selection picks shared memory on one host, and its network
    /// between two.
    pub fn transport(self, placement: &Placement) -> Transport {
        match (self, placement) {
            (Peer::OpenMpi | Peer::Mpich, Placement::Local) => Transport::Shm,
            _ => Transport::Tcp,
        }
    }

    /// The Debian packages that provide it.
    pub fn packages(self) -> &'static str {
        match self {
            Peer::Tcp => "netpipe-tcp",
            Peer::OpenMpi | Peer::OpenMpiTcp => "netpipe-openmpi openmpi-bin",
            Peer::Mpich => "netpipe-mpich2 mpich",
            Peer::Pvm => "netpipe-pvm pvm",
        }
    }

    /// The programs it needs on `PATH`.
    fn programs(self) -> &'static [&'static str] {
        match self {
            Peer::Tcp => &["NPtcp"],
            Peer::OpenMpi | Peer::OpenMpiTcp => &["NPopenmpi", "mpirun.openmpi"],
            Peer::Mpich => &["NPmpich2", "mpirun.mpich"],
            Peer::Pvm => &["NPpvm", "pvm", "pvmd"],
        }
    }
}

/// Where the two sides run.
#[derive(Clone, Debug, Default)]
pub enum Placement {
    /// Both on this host: loopback for `NPtcp`, one `mpirun` of two ranks.
    #[default]
    Local,
    /// On two emulated hosts (network namespaces), one side on each.
    Namespaces {
        /// The receiver's host (NPtcp's listening side, MPI's rank 1).
        receiver: threadwire_testbed::net::Host,
        /// The transmitter's host (MPI's rank 0).
        transmitter: threadwire_testbed::net::Host,
        /// This host's address as the emulated hosts see it (the bridge's).
        gateway: Ipv4Addr,
    },
}

impl Placement {
    /// The first two hosts of `net`, or [`Placement::Local`] if it has
    /// fewer.
    pub fn on(net: &threadwire_testbed::net::Net) -> Placement {
        match &net.hosts[..] {
            [receiver, transmitter, ..] => Placement::Namespaces {
                receiver: receiver.clone(),
                transmitter: transmitter.clone(),
                gateway: net.bridge_addr,
            },
            _ => Placement::Local,
        }
    }

    /// The receiver's namespace and address, and the transmitter's
    /// namespace: none and loopback on this host.
    pub(crate) fn sides(&self) -> (Option<&str>, Ipv4Addr, Option<&str>) {
        match self {
            Placement::Local => (None, Ipv4Addr::LOCALHOST, None),
            Placement::Namespaces {
                receiver,
                transmitter,
                ..
            } => (
                Some(receiver.name.as_str()),
                receiver.addr,
                Some(transmitter.name.as_str()),
            ),
        }
    }
}

/// How one peer is run.
#[derive(Clone, Debug)]
pub struct Options {
    /// NetPIPE's `-u`: its largest size (it may go 3 B past it).
    pub upper_bound: usize,
    /// NetPIPE's `-n`: round trips per trial, the same at every size.
    pub repeats: u32,
    /// Killed after this.
    pub deadline: Duration,
    /// Where the two sides run.
    pub placement: Placement,
}

impl Options {
    /// Options that give the peer about `budget` at the largest of `sizes`,
    /// taking `one_way_at_largest` (threadwire's time there, if known) as
    /// its guess of the peer's time: NetPIPE repeats every size the same
    /// number of times, so the largest sets how long a run takes.
    pub fn for_budget(
        sizes: &[usize],
        budget: Duration,
        one_way_at_largest: Option<Duration>,
    ) -> Options {
        let largest = sizes.iter().copied().max().unwrap_or(1).max(1);
        let upper_bound = largest.next_power_of_two();
        let round_trip = one_way_at_largest.map_or(1e-3, |t| 2.0 * t.as_secs_f64().max(1e-7));
        // At least 50 round trips, as NetPIPE times a trial with a 1 µs
        // clock; but where the largest size takes a millisecond or more (a
        // slow link), 50 would take minutes there, and 3 round trips of
        // even the smallest size are timed to ±2%.
        let floor = if round_trip < 1e-3 { 50.0 } else { 3.0 };
        let repeats = (budget.as_secs_f64() / (f64::from(NETPIPE_TRIALS) * round_trip))
            .clamp(floor, 100_000.0) as u32;
        // About 3 sizes per power of two: their bytes add up to about 6
        // times the largest, which sets the time on any link where size
        // matters; below that each size costs a start-up, bounded here by
        // 100 µs a round trip.
        let sizes_run = 3.0 * f64::from(upper_bound.trailing_zeros() + 1);
        let expected = f64::from(NETPIPE_TRIALS * repeats) * (6.0 * round_trip + sizes_run * 1e-4);
        Options {
            upper_bound,
            repeats,
            deadline: Duration::from_secs(30) + Duration::from_secs_f64(10.0 * expected),
            placement: Placement::Local,
        }
    }
}

/// One NetPIPE row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Message size in bytes.
    pub size: usize,
    /// One-way time (round trip / 2), best of NetPIPE's trials.
    pub one_way: Duration,
}

impl Point {
    /// Bandwidth in MB/s (10^6 bytes per second).
    pub fn mbps(&self) -> f64 {
        self.size as f64 / self.one_way.as_secs_f64() / 1e6
    }
}

/// A peer's rows, ascending by size.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// The rows of its `-o` file.
    pub points: Vec<Point>,
}

/// The row taken for a size of ours.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Match {
    /// The row.
    pub point: Point,
    /// Whether its size is exactly ours (else it is the nearest).
    pub exact: bool,
}

impl Measured {
    /// The row at `size`, or the nearest (the smaller on a tie).
    pub fn at(&self, size: usize) -> Option<Match> {
        let point = *self
            .points
            .iter()
            .min_by_key(|p| (p.size.abs_diff(size), p.size))?;
        Some(Match {
            point,
            exact: point.size == size,
        })
    }

    /// Reads NetPIPE's `-o` output: `bytes Mbps seconds` per line.
    pub fn parse(text: &str) -> Measured {
        let mut points: Vec<Point> = text
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                let size = f.first()?.parse().ok()?;
                let seconds: f64 = f.get(2)?.parse().ok()?;
                (seconds.is_finite() && seconds > 0.0).then(|| Point {
                    size,
                    one_way: Duration::from_secs_f64(seconds),
                })
            })
            .collect();
        points.sort_by_key(|p| p.size);
        Measured { points }
    }
}

/// Why a peer has no figures.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A program it needs is not on `PATH`.
    #[error("not installed ({program} missing): apt-get install {packages}")]
    Missing {
        /// The first missing program.
        program: &'static str,
        /// The Debian packages that provide the peer.
        packages: &'static str,
    },
    /// It cannot run where it was asked to.
    #[error("not supported yet: {0}")]
    Unsupported(&'static str),
    /// A process could not be started, or its output read.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The failure.
        source: io::Error,
    },
    /// It ran past its deadline and was killed.
    #[error("killed after {0:?}, its deadline")]
    TimedOut(Duration),
    /// It ended with a failure status.
    #[error("{status}: {output}")]
    Failed {
        /// Its exit status.
        status: ExitStatus,
        /// The last lines it printed.
        output: String,
    },
    /// It succeeded but wrote no rows.
    #[error("no rows in NetPIPE's output")]
    Empty,
    /// It succeeded but its output lacks the figure named.
    #[error("no {0} in its output")]
    Unreadable(&'static str),
    /// PVM's private virtual machine could not be started or stopped.
    #[error(transparent)]
    Pvm(#[from] threadwire_testbed::pvm::Error),
}

impl Error {
    /// Whether what it needs is not installed: a reason to skip, not a
    /// failure.
    pub fn is_missing(&self) -> bool {
        matches!(
            self,
            Error::Missing { .. } | Error::Pvm(threadwire_testbed::pvm::Error::Missing { .. })
        )
    }
}

/// Runs `peer` once with `options`.
pub fn run(peer: Peer, options: &Options) -> Result<Measured, Error> {
    process::require(peer.programs(), peer.packages())?;
    let dir = ScratchDir::new(peer)?;
    let output = dir.0.join("np.out");
    let netpipe = |program: &str| {
        let mut args: Vec<String> = vec![program.into()];
        args.extend(
            [
                "-u",
                &options.upper_bound.to_string(),
                "-n",
                &options.repeats.to_string(),
            ]
            .map(String::from),
        );
        args
    };
    let deadline = Instant::now() + options.deadline;
    let log = dir.0.join("log.txt");
    match peer {
        Peer::Tcp => {
            let port = free_port()?.to_string();
            let (receiver_ns, host, transmitter_ns) = options.placement.sides();
            let mut receiver_args = netpipe("NPtcp");
            receiver_args.extend(["-P".into(), port.clone()]);
            let receiver_log = dir.0.join("receiver.txt");
            let mut receiver = Group::spawn(
                in_namespace(receiver_ns, &receiver_args),
                &receiver_log,
                &receiver_log,
            )?;
            let mut transmitter_args = netpipe("NPtcp");
            transmitter_args.extend([
                "-P".into(),
                port,
                "-h".into(),
                host.to_string(),
                "-o".into(),
            ]);
            transmitter_args.push(output.display().to_string());
            // The receiver listens soon after it starts; until then the
            // transmitter exits at once ("Cannot Connect"): try again. A
            // retry, as NPtcp gives no sign of listening (retry_until).
            let mut refused = None;
            let sent = retry_until(deadline, || {
                let mut transmitter =
                    match Group::spawn(in_namespace(transmitter_ns, &transmitter_args), &log, &log)
                    {
                        Ok(transmitter) => transmitter,
                        Err(e) => return Some(Err(e)),
                    };
                match transmitter.wait(deadline) {
                    Ok(status) if status.success() => Some(Ok(())),
                    Ok(status) if receiver.process().has_exited() => {
                        Some(Err(transmitter.failed(status)))
                    }
                    Ok(status) => {
                        refused = Some(transmitter.failed(status));
                        None
                    }
                    Err(e) => Some(Err(e)),
                }
            });
            match sent {
                Some(sent) => sent?,
                None => return Err(refused.unwrap_or(Error::TimedOut(options.deadline))),
            }
            receiver.wait(deadline)?;
        }
        Peer::OpenMpi | Peer::OpenMpiTcp | Peer::Mpich => {
            let mut program = netpipe(if peer == Peer::Mpich {
                "NPmpich2"
            } else {
                "NPopenmpi"
            });
            program.extend(["-o".into(), output.display().to_string()]);
            let args = mpi::mpirun(peer, &options.placement, program, &dir.0)?;
            let mut mpirun = Group::spawn(in_namespace(None, &args), &log, &log)?;
            let status = mpirun.wait(deadline)?;
            if !status.success() {
                return Err(mpirun.failed(status));
            }
        }
        Peer::Pvm => pvm::netpipe(options, &output, &log, deadline)?,
    }
    let text = std::fs::read_to_string(&output).map_err(|source| Error::Io {
        what: "reading NetPIPE's output",
        source,
    })?;
    let measured = Measured::parse(&text);
    if measured.points.is_empty() {
        return Err(Error::Empty);
    }
    Ok(measured)
}

/// One peer's outcome beside a ping-pong sweep.
#[derive(Debug)]
pub struct Report {
    /// The peer.
    pub peer: Peer,
    /// The ping-pong path it is compared with (`shm`, `tcp`, `tcp/<link>`).
    pub path: String,
    /// Its rows, or why there are none.
    pub result: Result<Measured, Error>,
}

/// Runs, one after the other, every peer whose transport is among the
/// measured `paths`, with NetPIPE's `-u` and `-n` from our `sizes` and the
/// `budget` per size ([`Options::for_budget`]); `one_way_at_largest` gives
/// threadwire's time at the largest size over a transport. `link` names
/// the emulated link the TCP path runs on, if any.
pub fn run_beside(
    paths: &[String],
    sizes: &[usize],
    budget: Duration,
    one_way_at_largest: impl Fn(Transport) -> Option<Duration>,
    placement: &Placement,
    link: Option<&str>,
) -> Vec<Report> {
    Peer::ALL
        .into_iter()
        .filter(|peer| paths.iter().any(|p| p == peer.transport(placement).name()))
        .map(|peer| {
            let transport = peer.transport(placement);
            let mut options = Options::for_budget(sizes, budget, one_way_at_largest(transport));
            options.placement = placement.clone();
            let path = match (transport, link) {
                (Transport::Tcp, Some(link)) => format!("tcp/{link}"),
                _ => transport.name().to_string(),
            };
            tracing::debug!(?peer, ?options, "running a peer");
            Report {
                peer,
                path,
                result: run(peer, &options),
            }
        })
        .collect()
}

/// A port that was free a moment ago (NPtcp takes a port, not a listener).
fn free_port() -> Result<u16, Error> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| Error::Io {
            what: "finding a free port",
            source,
        })
}

fn in_namespace(namespace: Option<&str>, args: &[String]) -> Command {
    let mut cmd = match namespace {
        Some(ns) => {
            let mut cmd = Command::new("ip");
            cmd.args(["netns", "exec", ns]).args(args);
            cmd
        }
        None => {
            let mut cmd = Command::new(&args[0]);
            cmd.args(&args[1..]);
            cmd
        }
    };
    cmd.stdin(Stdio::null());
    cmd
}

/// A directory for one peer's files, removed when dropped.
pub(crate) struct ScratchDir(pub(crate) PathBuf);

impl ScratchDir {
    fn new(peer: Peer) -> Result<ScratchDir, Error> {
        ScratchDir::named(&peer.name().replace('/', "-")).map_err(|source| Error::Io {
            what: "creating a scratch directory",
            source,
        })
    }

    /// `$TMPDIR/threadwire-peer-<pid>-<name>`, registered for removal on a
    /// signal.
    pub(crate) fn named(name: &str) -> io::Result<ScratchDir> {
        let dir =
            std::env::temp_dir().join(format!("threadwire-peer-{}-{name}", std::process::id()));
        threadwire_testbed::interrupt::create_scratch_dir(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = threadwire_testbed::interrupt::remove_scratch_dir(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NETPIPE_OUTPUT: &str = "       1 51.200000   0.00000015\n\
                                        8 353.103448   0.00000017\n\
                                     1021 18406.76   0.00000042\n\
                                     1024 28493.91   0.00000027\n";

    #[test]
    fn rows_are_read_and_matched_exactly_or_to_the_nearest() {
        let m = Measured::parse(NETPIPE_OUTPUT);
        assert_eq!(m.points.len(), 4);
        let eight = m.at(8).unwrap();
        assert!(eight.exact);
        assert_eq!(eight.point.one_way, Duration::from_nanos(170));
        let thousand = m.at(1000).unwrap();
        assert_eq!((thousand.point.size, thousand.exact), (1021, false));
        assert!(Measured::default().at(8).is_none());
    }

    #[test]
    fn the_budget_sets_the_repeats_and_the_bound() {
        let o = Options::for_budget(
            &[8, 1000],
            Duration::from_millis(10),
            Some(Duration::from_micros(10)),
        );
        assert_eq!(o.upper_bound, 1024);
        assert_eq!(o.repeats, 166);
        let tiny = Options::for_budget(&[8], Duration::ZERO, None);
        assert_eq!((tiny.upper_bound, tiny.repeats), (8, 3));
        let fast = Options::for_budget(&[8], Duration::ZERO, Some(Duration::from_micros(5)));
        assert_eq!(fast.repeats, 50);
    }

    #[test]
    fn a_missing_peer_names_its_packages() {
        let e = Error::Missing {
            program: "NPpvm",
            packages: Peer::Pvm.packages(),
        };
        assert!(e.to_string().contains("netpipe-pvm pvm"), "{e}");
    }
}
