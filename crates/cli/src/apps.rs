//! `threadwire apps`: the bundled applications' arguments, and their
//! dispatch. Each app runs as a job of this same binary: the command
//! relaunches itself under the launcher with the app's arguments, and
//! under the launcher (`bench::under_launcher`) each node runs the app's
//! `node(cfg)` and node 0 prints its report.
//!
//! The jobs run on the hosts of `threadwire_apps::hosts` (this one, or
//! emulated ones built for `--link` and removed after); `apps matmul
//! --compare` and its comma lists run a `threadwire_apps::matmul::Sweep`
//! of jobs whose nodes report their times alone (`--result-only`), and
//! print its table. The arguments and dispatch of `apps matmul` are in
//! `crate::apps_matmul`, of `apps splash` in `crate::apps_splash`.

use crate::apps_matmul::{KernelArg, MatmulJob};
use crate::args::JobArgs;
use crate::bench::{under_launcher, Outcome};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use threadwire_apps::hosts::Hosts;
use threadwire_bench::node_result::NodeResult;
use threadwire_launch::JobSpec;
use threadwire_testbed::net::Link;

#[derive(Subcommand)]
pub enum App {
    /// Distributed multithreaded matrix multiply (the thesis' chapter 4):
    /// SUMMA on a mesh of nodes or host–node, with a naive, BMM,
    /// Strassen–Winograd or blas kernel on T threads per node; verified
    /// (A x I = A, and a random product against blas) and timed.
    #[command(after_help = "\
SUMMA's mesh is of nodes, not machines: -n must be R x C, node i at mesh row
i / C, column i mod C (default: the squarest mesh of -n). With --threads T >= 1
the next panel's broadcasts overlap the current multiply (a compute thread
beside the node's endpoint); --serial is one thread per node, no overlap.
The blas kernel (matrixmultiply) sizes its thread pool per process: each node
gets MATMUL_NUM_THREADS=T.

The seeds' tables: --compare runs the serial baseline, then --threads T
(default 2), one job each, at every -n and --sizes of a comma list, and prints
NCS' Table 1 (host-node; -n 2,3,5,9 by default, the seed's 1, 2, 4 and 8
worker nodes beside the host, at 128x128) or the thesis' Table 5.4 (summa;
sizes 100 to 1600 by default) with the seed's figures beside ours. Several
--threads (1,2,4,8: 1 is the serial baseline) print the thesis' Figure 5.7,
sizes 100 to 800 by default. --link L runs every job on emulated hosts
(namespaces, one per node unless --hosts; needs root) joined by ethernet10,
fast100, atm155, gige or none, nodes round robin, and removes them after;
the seed's Ethernet figures are printed beside ethernet10, its ATM ones beside
atm155, all of them beside the other links.

Examples:
  threadwire apps matmul -n 4 --mesh 2x2 --kernel blas --size 2048 --threads 2
  threadwire apps matmul -n 6 --mesh 2x3 --kernel strassen --size 800 --serial
  threadwire apps matmul -n 4 --layout host-node --kernel bmm --size 512
  threadwire apps matmul --layout host-node --compare --link ethernet10  # NCS Table 1
  threadwire apps matmul --mesh 2x3 --compare --sizes 100,200,400 --link atm155  # Table 5.4
  threadwire apps matmul -n 1 --threads 1,2,4,8               # Figure 5.7
  threadwire apps matmul --reference --size 2048 --threads 2   # the GEMM crate alone
  threadwire apps matmul -n 4 --size 2048 --peers   # beside it and ScaLAPACK's pdgemm")]
    Matmul {
        #[command(flatten)]
        job: MatmulJob,
    },
    /// Host–node DIF FFT (NCS' Table 3): sets of points transformed by T
    /// threads on each node, verified against rustfft, timed with one
    /// thread per node against T, beside the seed's figures.
    #[command(after_help = "\
Points must be a power of two, at least 2 x nodes x threads (a butterfly row
for every worker thread); nodes and threads must be powers of two; at most
2^26 points in all. Node 0's thread 0 is the host; every node, node 0 too,
runs the worker threads. With --link L the job runs on emulated hosts joined by L (one per node
unless --hosts; needs root), built for it and removed after.

Examples:
  threadwire apps fft -n 4                        # 512 points x 8 sets, as the seed
  threadwire apps fft -n 2 --points 1048576 --sets 2
  threadwire apps fft -n 4 --threads 1            # one thread per node alone")]
    Fft {
        #[command(flatten)]
        job: FftJob,
    },
    /// JPEG compression and decompression pipeline (NCS' Table 2): half
    /// the nodes compress strips of an image, half decompress them, node
    /// 0 combines them and checks the PSNR; timed stage by stage with one
    /// thread per node against T, beside the seed's figures.
    #[command(after_help = "\
Nodes 0 .. N/2-1 compress, N/2 .. N-1 decompress; node i sends to node N-i,
node 0 to N/2. -n 1 runs both halves on one node. The image is synthetic
(--width x --height, default 448x448 RGB: 602112 bytes, the seed's 600 KB)
or a binary PPM file (--image, P6 with maximum value 255: convert others
with e.g. `pngtopnm x.png > x.ppm`). It is cut into N/2 x T strips of rows
(T x 1 on one node); thread k of every compressing node takes a strip of
the k-th part of the image, as in the seed. At most 64 MiB of
pixels and 65535 pixels a side (baseline JPEG); each strip at least a row.
The job fails if the PSNR of the image or of any strip is under 10 +
quality/5 dB (25 dB at the default quality 75). On one host the strips
move through shared memory in microseconds; for links where communication
matters, as in the seed, --link L runs the job on emulated hosts joined by L
(one per node unless --hosts; needs root), built for it and removed after.

Examples:
  threadwire apps jpeg -n 4                       # 448x448, 1 thread vs 2
  threadwire apps jpeg -n 8 --width 1024 --height 768 --quality 90
  threadwire apps jpeg -n 2 --image photo.ppm --threads 1
  threadwire apps jpeg -n 4 --link ethernet10     # Table 2 on the seed's Ethernet")]
    Jpeg {
        #[command(flatten)]
        job: JpegJob,
    },
    /// Agenda-parallel matrix multiply over active messages (SCALE's
    /// Figs 16-17): node 0 serves tasks of GRANULARITY rows of A to
    /// slaves that keep CONCURRENCY requests outstanding; swept, verified
    /// against blas, the best combination per size marked.
    #[command(after_help = "\
Node 0 is the master: it holds A, answers each request for work with the next
GRANULARITY rows of A and collects C, and computes on CONCURRENCY threads of
its own. Every other node runs CONCURRENCY computing threads, each asking for
its next task before it multiplies the current one. B is broadcast to every
node before the clock starts; the times include handing out A and collecting
C. Speedup is against one node computing the whole product on one thread.
Each node gets MATMUL_NUM_THREADS=1 (one core per computing thread). With
--link L the job runs on emulated hosts joined by L (one per node unless
--hosts; needs root), built for it and removed after.

Examples:
  threadwire apps agenda-matmul -n 4 --sizes 256,512
  threadwire apps agenda-matmul -n 2 --size 1024 --granularity 8,32 --concurrency 1,2
  threadwire apps agenda-matmul -n 8 --kernel naive --size 100 --granularity 7")]
    AgendaMatmul {
        #[command(flatten)]
        job: AgendaJob,
    },
    /// SPLASH-2-style programs on the distributed shared memory (the
    /// Strings DSM's Table 2): FFT, LU-c, LU-n, RADIX, OCEAN-c, WATER-n2,
    /// WATER-sp, MATMULT, SOR and MRI on N nodes x T processes, timed
    /// without initialization, verified, with each node's DSM counters.
    #[command(after_help = "\
Processes are OS threads: P = nodes x threads, process p is thread p mod T of
node p div T. Each program runs at the seed's size, or at --small for quick
checks; process 0 verifies the result against the same computation run
sequentially or an invariant, and the job fails if it is wrong. Node 0
prints the time from the barrier after initialization to the barrier after
the computation, every node's faults, fetches and diffs over it, and the
seed's Table 3 of the run. With --link L the job runs on emulated hosts
joined by L (one per node unless --hosts; needs root), built for it and
removed after. --plain runs plain threads sharing memory with no DSM;
--compare alternates plain threads and the DSM; --figure runs the DSM on
1, 2 and 4 nodes (the seed's Figs 3-12 and its Table 3 row); NAME all runs
every program in turn with one of those three.

Examples:
  threadwire apps splash sor -n 4                  # 2002x1002, 100 iterations
  threadwire apps splash lu-c -n 4 --threads 2
  threadwire apps splash radix -n 2 --small
  threadwire apps splash matmult -n 4 --link fast100
  threadwire apps splash all --compare -n 1 --threads 2
  threadwire apps splash water-n2 --figure --link fast100")]
    Splash {
        #[command(flatten)]
        job: crate::apps_splash::SplashJob,
    },
}

/// `--link` and `--hosts` of the apps.
#[derive(Args, Clone, Copy, Default)]
pub struct OnHosts {
    /// Run on emulated hosts joined by this link (ethernet10, fast100,
    /// atm155, gige or none; needs root), nodes round robin, built for the
    /// run and removed after it.
    #[arg(long)]
    pub link: Option<Link>,
    /// How many emulated hosts with --link (default: one per node).
    #[arg(long, requires = "link", value_name = "COUNT")]
    pub hosts: Option<u32>,
}

impl OnHosts {
    /// The hosts of a run of jobs of at most `nodes` nodes.
    pub fn hosts(&self, nodes: u32) -> Result<Hosts> {
        if self.link.is_some() {
            // Before any thread starts: a signal then removes the hosts.
            threadwire_testbed::interrupt::install(crate::progress::report_interrupt);
        }
        Ok(Hosts::new(self.link, self.hosts.unwrap_or(nodes))?)
    }
}

#[derive(Args, Clone)]
pub struct JpegJob {
    /// Number of nodes: 1, or even up to 64 (half compress, half
    /// decompress).
    #[arg(short = 'n', long = "nodes", default_value_t = 4)]
    pub nodes: u32,
    /// Width of the synthetic image, in pixels.
    #[arg(long, default_value_t = 448, conflicts_with = "image")]
    pub width: usize,
    /// Height of the synthetic image, in pixels.
    #[arg(long, default_value_t = 448, conflicts_with = "image")]
    pub height: usize,
    /// A binary PPM (P6, maximum value 255) to use instead of the
    /// synthetic image.
    #[arg(long, value_name = "FILE")]
    pub image: Option<PathBuf>,
    /// JPEG quality, 1 to 100.
    #[arg(long, default_value_t = 75)]
    pub quality: u8,
    /// Threads per node in each role in the threaded configuration,
    /// timed against one per node (1: that configuration alone).
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
    /// Timed rounds of each configuration (after one untimed round).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    #[command(flatten)]
    pub on: OnHosts,
}

impl JpegJob {
    fn config(&self) -> threadwire_apps::jpeg::Config {
        use threadwire_apps::jpeg::{Config, Picture};
        let picture = match &self.image {
            Some(path) => Picture::Ppm(path.clone()),
            None => Picture::Synthetic {
                width: self.width,
                height: self.height,
                seed: 1995,
            },
        };
        Config {
            picture,
            quality: self.quality,
            threads: self.threads,
            rounds: self.rounds,
        }
    }

    /// The arguments the nodes run again: the image's path made absolute,
    /// since a node may start elsewhere.
    fn node_args(&self) -> Result<Vec<OsString>> {
        let mut args: Vec<OsString> = ["apps", "jpeg"].map(OsString::from).to_vec();
        let numbers = [
            ("--quality", self.quality.to_string()),
            ("--threads", self.threads.to_string()),
            ("--rounds", self.rounds.to_string()),
        ];
        match &self.image {
            Some(path) => {
                let path = std::path::absolute(path)
                    .with_context(|| format!("locating {}", path.display()))?;
                args.extend(["--image".into(), path.into_os_string()]);
            }
            None => {
                args.extend(["--width".into(), self.width.to_string().into()]);
                args.extend(["--height".into(), self.height.to_string().into()]);
            }
        }
        for (flag, value) in numbers {
            args.extend([flag.into(), value.into()]);
        }
        Ok(args)
    }
}

#[derive(Args, Clone)]
pub struct AgendaJob {
    /// Number of nodes: node 0 the master, the others slaves.
    #[arg(short = 'n', long = "nodes", default_value_t = 4)]
    pub nodes: u32,
    /// Matrices are SIZE x SIZE, for each size of a comma list.
    #[arg(long = "sizes", visible_alias = "size", value_name = "SIZE,...", value_delimiter = ',', default_values_t = [256, 512])]
    pub sizes: Vec<usize>,
    /// Rows of A in a task, for each value of a comma list.
    #[arg(long = "granularity", value_name = "ROWS,...", value_delimiter = ',', default_values_t = [1, 4, 16, 64, 256])]
    pub granularities: Vec<usize>,
    /// Computing threads per node (outstanding requests per slave), for
    /// each value of a comma list.
    #[arg(long = "concurrency", value_name = "THREADS,...", value_delimiter = ',', default_values_t = [1, 2, 4])]
    pub concurrencies: Vec<u32>,
    /// Who multiplies a task's rows.
    #[arg(long, value_enum, default_value_t = KernelArg::Blas)]
    pub kernel: KernelArg,
    /// Timed rounds of each combination (after one untimed round).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    #[command(flatten)]
    pub on: OnHosts,
}

impl AgendaJob {
    fn config(&self) -> threadwire_apps::agenda::Config {
        threadwire_apps::agenda::Config {
            sizes: self.sizes.clone(),
            granularities: self.granularities.clone(),
            concurrencies: self.concurrencies.clone(),
            kernel: self.kernel.into(),
            rounds: self.rounds,
            ..Default::default()
        }
    }

    /// The arguments the nodes run again.
    fn node_args(&self, cfg: &threadwire_apps::agenda::Config) -> Vec<OsString> {
        fn list<T: ToString>(values: &[T]) -> String {
            values
                .iter()
                .map(T::to_string)
                .collect::<Vec<_>>()
                .join(",")
        }
        [
            "apps".into(),
            "agenda-matmul".into(),
            "--sizes".into(),
            list(&cfg.sizes),
            "--granularity".into(),
            list(&cfg.granularities),
            "--concurrency".into(),
            list(&cfg.concurrencies),
            "--kernel".into(),
            cfg.kernel.name().into(),
            "--rounds".into(),
            cfg.rounds.to_string(),
        ]
        .into_iter()
        .map(OsString::from)
        .collect()
    }
}

#[derive(Args, Clone)]
pub struct FftJob {
    /// Number of nodes: a power of two.
    #[arg(short = 'n', long = "nodes", default_value_t = 4)]
    pub nodes: u32,
    /// Points of a set: a power of two.
    #[arg(long, default_value_t = 512)]
    pub points: usize,
    /// Sets transformed one after another in a round.
    #[arg(long, default_value_t = 8)]
    pub sets: usize,
    /// Worker threads per node of the threaded configuration, timed
    /// against one per node (1: that configuration alone).
    #[arg(long, default_value_t = 2)]
    pub threads: u32,
    /// Timed rounds of each configuration (after one untimed round).
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    #[command(flatten)]
    pub on: OnHosts,
}

/// `--layout`.
/// Runs `threadwire apps …`.
pub fn run(app: App) -> Result<Outcome> {
    let exit = |code| Ok(Outcome::Exit(code));
    match app {
        App::Matmul { job } => crate::apps_matmul::run(job),
        App::Fft { job } => {
            let cfg = threadwire_apps::fft::Config {
                points: job.points,
                sets: job.sets,
                threads: job.threads,
                rounds: job.rounds,
                ..Default::default()
            };
            if under_launcher() {
                if let Some(report) = threadwire_apps::fft::node(cfg)? {
                    println!("{report}");
                }
                return exit(0);
            }
            cfg.check(job.nodes)?;
            let spec = JobArgs {
                nodes: job.nodes,
                ..JobArgs::default()
            };
            let [points, sets, threads, rounds] =
                [job.points, job.sets, job.threads as usize, job.rounds].map(|v| v.to_string());
            let args = [
                "apps",
                "fft",
                "--points",
                &points,
                "--sets",
                &sets,
                "--threads",
                &threads,
                "--rounds",
                &rounds,
            ];
            let args = args.map(OsString::from).to_vec();
            let program = JobSpec::new(job.nodes, std::env::current_exe()?).args(args);
            exit(launch(&spec, program, &job.on.hosts(job.nodes)?)?)
        }
        App::Jpeg { job } => jpeg(job),
        App::Splash { job } => crate::apps_splash::run(job),
        App::AgendaMatmul { job } => {
            let cfg = job.config();
            if under_launcher() {
                if let Some(report) = threadwire_apps::agenda::node(&cfg)? {
                    println!("{report}");
                }
                return exit(0);
            }
            cfg.check()?;
            let spec = JobArgs {
                nodes: job.nodes,
                ..JobArgs::default()
            };
            let program = JobSpec::new(job.nodes, std::env::current_exe()?)
                .args(job.node_args(&cfg))
                .env("MATMUL_NUM_THREADS", "1");
            exit(launch(&spec, program, &job.on.hosts(job.nodes)?)?)
        }
    }
}

/// Runs `threadwire apps jpeg`.
fn jpeg(job: JpegJob) -> Result<Outcome> {
    let cfg = job.config();
    if under_launcher() {
        if let Some(report) = threadwire_apps::jpeg::node(cfg)? {
            println!("{report}");
        }
        return Ok(Outcome::Exit(0));
    }
    cfg.check(job.nodes)?;
    let spec = JobArgs {
        nodes: job.nodes,
        ..JobArgs::default()
    };
    let program = JobSpec::new(job.nodes, std::env::current_exe()?).args(job.node_args()?);
    let hosts = job.on.hosts(job.nodes)?;
    Ok(Outcome::Exit(launch(&spec, program, &hosts)?))
}

/// Runs the app's job on `hosts` and returns its status.
pub fn launch(job: &JobArgs, program: JobSpec, hosts: &Hosts) -> Result<i32> {
    Ok(launch_collecting(job, program, hosts, true)?.0)
}

/// Runs the app's job on `hosts`: its status, and the results its nodes
/// reported (every other event shown as `threadwire run` shows it); says
/// which hosts it ran on if `tell_hosts`.
pub fn launch_collecting(
    job: &JobArgs,
    program: JobSpec,
    hosts: &Hosts,
    tell_hosts: bool,
) -> Result<(i32, Vec<NodeResult>)> {
    let spec = crate::configure(job, program)?;
    let finished = hosts.run(spec, |e| crate::render::event(e, job.verbose))?;
    if tell_hosts && hosts.link().is_some() {
        println!("ran on {hosts}, nodes round robin");
    }
    if job.stats {
        crate::render::stats(&finished.report);
    }
    Ok((finished.report.status, finished.results))
}
