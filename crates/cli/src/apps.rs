//! `threadwire apps`: the bundled applications' arguments, and their
//! dispatch. Each app runs as a job of this same binary: the command
//! relaunches itself under the launcher with the app's arguments, and
//! under the launcher (`bench::under_launcher`) each node runs the app's
//! `node(cfg)` and node 0 prints its report.

use crate::args::JobArgs;
use crate::bench::{under_launcher, Outcome};
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use std::ffi::OsString;
use threadwire_apps::matmul::{Kernel, Layout, Mesh};
use threadwire_launch::JobSpec;

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
gets MATMUL_NUM_THREADS=T. On emulated hosts, start the same command under
`threadwire run --hosts FILE -n N -- threadwire apps matmul ...`.

Examples:
  threadwire apps matmul -n 4 --mesh 2x2 --kernel blas --size 2048 --threads 2
  threadwire apps matmul -n 6 --mesh 2x3 --kernel strassen --size 800 --serial
  threadwire apps matmul -n 4 --layout host-node --kernel bmm --size 512")]
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
runs the worker threads. On emulated hosts, start the same command under
`threadwire run --hosts FILE -n N -- threadwire apps fft ...`.

Examples:
  threadwire apps fft -n 4                        # 512 points x 8 sets, as the seed
  threadwire apps fft -n 2 --points 1048576 --sets 2
  threadwire apps fft -n 4 --threads 1            # one thread per node alone")]
    Fft {
        #[command(flatten)]
        job: FftJob,
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
Each node gets MATMUL_NUM_THREADS=1 (one core per computing thread). On
emulated hosts, start the same command under
`threadwire run --hosts FILE -n N -- threadwire apps agenda-matmul ...`.

Examples:
  threadwire apps agenda-matmul -n 4 --sizes 256,512
  threadwire apps agenda-matmul -n 2 --size 1024 --granularity 8,32 --concurrency 1,2
  threadwire apps agenda-matmul -n 8 --kernel naive --size 100 --granularity 7")]
    AgendaMatmul {
        #[command(flatten)]
        job: AgendaJob,
    },
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
    #[arg(long = "granularity", value_name = "ROWS,...", value_delimiter = ',', default_values_t = [1, 4, 16, 64])]
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
}

/// `--layout`.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum LayoutArg {
    /// Node 0 sends rows of A and all of B to worker threads.
    HostNode,
    /// SUMMA on an R x C mesh of nodes.
    Summa,
}

/// `--kernel`.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum KernelArg {
    /// The triple loop, one thread.
    Naive,
    /// The thesis' block multiply: threads share blocks of rows.
    Bmm,
    /// Strassen–Winograd, cutoff 12, dynamic peeling; BMM for long shapes.
    Strassen,
    /// matrixmultiply's GEMM.
    Blas,
}

impl From<KernelArg> for Kernel {
    fn from(kernel: KernelArg) -> Kernel {
        match kernel {
            KernelArg::Naive => Kernel::Naive,
            KernelArg::Bmm => Kernel::Bmm,
            KernelArg::Strassen => Kernel::Strassen,
            KernelArg::Blas => Kernel::Blas,
        }
    }
}

#[derive(Args, Clone)]
pub struct MatmulJob {
    /// Number of nodes (SUMMA: R x C).
    #[arg(short = 'n', long = "nodes", default_value_t = 4)]
    pub nodes: u32,
    /// How the work is shared among the nodes.
    #[arg(long, value_enum, default_value_t = LayoutArg::Summa)]
    pub layout: LayoutArg,
    /// SUMMA's mesh, RxC (default: the squarest of -n).
    #[arg(long, value_name = "RxC")]
    pub mesh: Option<Mesh>,
    /// Who multiplies a node's blocks.
    #[arg(long, value_enum, default_value_t = KernelArg::Blas)]
    pub kernel: KernelArg,
    /// Threads per node (default 2, or 1 with --serial).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Matrices are SIZE x SIZE.
    #[arg(long, default_value_t = 512)]
    pub size: usize,
    /// One thread per node and no overlap: the distributed, unthreaded
    /// baseline.
    #[arg(long)]
    pub serial: bool,
    /// SUMMA's panel width, at most (columns of A and rows of B broadcast
    /// at once).
    #[arg(long, default_value_t = 256)]
    pub panel: usize,
}

impl MatmulJob {
    fn config(&self) -> threadwire_apps::matmul::Config {
        threadwire_apps::matmul::Config {
            size: self.size,
            layout: match self.layout {
                LayoutArg::HostNode => Layout::HostNode,
                LayoutArg::Summa => Layout::Summa,
            },
            mesh: self.mesh,
            kernel: self.kernel.into(),
            threads: self.threads.unwrap_or(if self.serial { 1 } else { 2 }),
            serial: self.serial,
            panel: self.panel,
            ..Default::default()
        }
    }

    /// The arguments the nodes run again.
    fn node_args(&self, cfg: &threadwire_apps::matmul::Config) -> Vec<OsString> {
        let mut args: Vec<String> = [
            "apps",
            "matmul",
            "--layout",
            cfg.layout.name(),
            "--kernel",
            cfg.kernel.name(),
        ]
        .map(String::from)
        .to_vec();
        args.extend(["--threads".into(), cfg.threads.to_string()]);
        args.extend(["--size".into(), cfg.size.to_string()]);
        args.extend(["--panel".into(), cfg.panel.to_string()]);
        if let Some(mesh) = cfg.mesh {
            args.extend(["--mesh".into(), mesh.to_string()]);
        }
        if cfg.serial {
            args.push("--serial".into());
        }
        args.into_iter().map(OsString::from).collect()
    }
}

/// Runs `threadwire apps …`.
pub fn run(app: App) -> Result<Outcome> {
    let exit = |code| Ok(Outcome::Exit(code));
    match app {
        App::Matmul { job } => {
            let cfg = job.config();
            if under_launcher() {
                if let Some(report) = threadwire_apps::matmul::node(cfg)? {
                    println!("{report}");
                }
                return exit(0);
            }
            cfg.check(job.nodes)?;
            // Each node's message counts after the report, as ever.
            let spec = JobArgs {
                nodes: job.nodes,
                stats: true,
                ..JobArgs::default()
            };
            let program = JobSpec::new(job.nodes, std::env::current_exe()?)
                .args(job.node_args(&cfg))
                .env("MATMUL_NUM_THREADS", cfg.threads.to_string());
            exit(launch(&spec, program)?)
        }
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
            exit(launch(&spec, program)?)
        }
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
            exit(launch(&spec, program)?)
        }
    }
}

/// Runs the app's job and returns its status.
fn launch(job: &JobArgs, program: JobSpec) -> Result<i32> {
    let spec = crate::configure(job, program)?;
    let report = threadwire_launch::run(&spec, |e| crate::render::event(e, job.verbose))
        .with_context(|| format!("starting {}", spec.program.display()))?;
    if job.stats {
        crate::render::stats(&report);
    }
    Ok(report.status)
}
