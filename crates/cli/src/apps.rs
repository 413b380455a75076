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
use std::path::PathBuf;
use threadwire_apps::figures::spread;
use threadwire_apps::matmul::{Kernel, Layout, Mesh};
use threadwire_bench::node_result::NodeResult;
use threadwire_bench::peers::pdgemm;
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
  threadwire apps matmul -n 4 --layout host-node --kernel bmm --size 512
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
matters, as in the seed, make emulated hosts (`threadwire net up --hosts 4
--link gige`) and start the same command under `threadwire run --hosts FILE
-n N -- threadwire apps jpeg ...`.

Examples:
  threadwire apps jpeg -n 4                       # 448x448, 1 thread vs 2
  threadwire apps jpeg -n 8 --width 1024 --height 768 --quality 90
  threadwire apps jpeg -n 2 --image photo.ppm --threads 1")]
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
    /// Also run ScaLAPACK's pdgemm (Open MPI, Debian's BLAS) on the same
    /// size, on a grid of as many ranks shaped as the mesh, each rank with
    /// the same threads, and print it beside ours with the ratio.
    #[arg(long)]
    pub peers: bool,
    /// ScaLAPACK's block size with --peers.
    #[arg(long, default_value_t = 128, value_name = "NB")]
    pub peer_block: usize,
    /// Timed pdgemm calls with --peers (after one untimed).
    #[arg(long, default_value_t = 5)]
    pub peer_rounds: u32,
    /// Instead of the job: the GEMM crate alone, one process multiplying
    /// the app's operands on --threads, the reference of the blas
    /// kernel's figures (--peers runs it too).
    #[arg(long, conflicts_with = "peers")]
    pub reference: bool,
}

/// Timed products of `apps matmul --reference`, after one untimed.
const REFERENCE_ROUNDS: usize = 5;

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
        if self.reference {
            args.push("--reference".into());
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
            if under_launcher() && job.reference {
                let ep = threadwire::init()?;
                let times =
                    threadwire_apps::matmul::reference(cfg.size, cfg.seed, REFERENCE_ROUNDS);
                let seconds = spread(times.iter().map(|d| d.as_secs_f64()).collect()).0;
                NodeResult::Matmul { seconds }.send(ep.node())?;
                return exit(0);
            }
            if under_launcher() {
                let ep = threadwire::init()?;
                if let Some(report) = threadwire_apps::matmul::run(&ep, cfg)? {
                    println!("{report}");
                    let seconds = report.elapsed.as_secs_f64();
                    NodeResult::Matmul { seconds }.send(ep.node())?;
                }
                return exit(0);
            }
            if job.reference {
                let (status, seconds) = matmul_job(&job, &cfg, 1)?;
                if let Some(seconds) = seconds {
                    print_reference(&cfg, seconds, None);
                }
                return exit(status);
            }
            cfg.check(job.nodes)?;
            let (status, ours) = matmul_job(&job, &cfg, job.nodes)?;
            if status == 0 && job.peers {
                // The crate's single-process multithreaded rate: all the
                // host's cores, whatever the job's threads per node.
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
                let reference = MatmulJob {
                    reference: true,
                    peers: false,
                    threads: Some(cores),
                    serial: false,
                    ..job.clone()
                };
                let alone_cfg = reference.config();
                if let (0, Some(alone)) = matmul_job(&reference, &alone_cfg, 1)? {
                    print_reference(&alone_cfg, alone, ours);
                }
                pdgemm_beside(&job, &cfg, ours);
            }
            exit(status)
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
        App::Jpeg { job } => jpeg(job),
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
    Ok(Outcome::Exit(launch(&spec, program)?))
}

/// Runs the app's job and returns its status.
fn launch(job: &JobArgs, program: JobSpec) -> Result<i32> {
    Ok(launch_collecting(job, program)?.0)
}

/// Runs the app's job: its status, and the results its nodes reported
/// (every other event shown as `threadwire run` shows it).
fn launch_collecting(job: &JobArgs, program: JobSpec) -> Result<(i32, Vec<NodeResult>)> {
    let spec = crate::configure(job, program)?;
    let mut results = Vec::new();
    let report = threadwire_launch::run(&spec, |e| match NodeResult::decode(e) {
        Some((_, result)) => results.push(result),
        None => crate::render::event(e, job.verbose),
    })
    .with_context(|| format!("starting {}", spec.program.display()))?;
    if job.stats {
        crate::render::stats(&report);
    }
    Ok((report.status, results))
}

/// Runs `job` (the multiply, or its reference) as a job of `nodes`
/// nodes: its status and the time node 0 reported.
fn matmul_job(
    job: &MatmulJob,
    cfg: &threadwire_apps::matmul::Config,
    nodes: u32,
) -> Result<(i32, Option<f64>)> {
    // Each node's message counts after the multiply's report, as ever.
    let spec = JobArgs {
        nodes,
        stats: !job.reference,
        ..JobArgs::default()
    };
    let program = JobSpec::new(nodes, std::env::current_exe()?)
        .args(job.node_args(cfg))
        .env("MATMUL_NUM_THREADS", cfg.threads.to_string());
    let (status, results) = launch_collecting(&spec, program)?;
    let seconds = results.iter().find_map(|r| match r {
        NodeResult::Matmul { seconds } => Some(*seconds),
        _ => None,
    });
    Ok((status, seconds))
}

/// The reference's line, and our share of its rate when `ours` is known.
fn print_reference(cfg: &threadwire_apps::matmul::Config, alone: f64, ours: Option<f64>) {
    let gflops = |t: f64| 2.0 * (cfg.size as f64).powi(3) / t / 1e9;
    println!(
        "reference: matrixmultiply alone, one process, {} thread(s): median {:.2} ms of {REFERENCE_ROUNDS}, {:.2} GFLOP/s",
        cfg.threads,
        alone * 1e3,
        gflops(alone)
    );
    if let Some(ours) = ours {
        println!(
            "threadwire's rate is {:.0}% of the GEMM crate's alone",
            100.0 * alone / ours
        );
    }
}

/// `apps matmul --peers`: pdgemm on the same size and ranks, shaped as
/// the mesh (host–node: the squarest grid of the nodes), with one BLAS
/// thread per rank and with the job's threads per node, printed beside
/// `ours` (seconds) with the ratio to pdgemm's faster run. A peer that
/// cannot run says why; ours stands.
fn pdgemm_beside(job: &MatmulJob, cfg: &threadwire_apps::matmul::Config, ours: Option<f64>) {
    let mesh = cfg.mesh.unwrap_or_else(|| Mesh::squarest(job.nodes));
    let mut threads = vec![1, cfg.threads];
    threads.dedup();
    let mut best: Option<f64> = None;
    for threads in threads {
        let options = pdgemm::Options {
            size: cfg.size,
            rows: mesh.rows as u32,
            cols: mesh.cols as u32,
            threads,
            block: job.peer_block,
            rounds: job.peer_rounds.clamp(1, 100),
        };
        let shape = format!(
            "{}x{} ranks, {threads} BLAS thread(s) each, NB {}",
            options.rows, options.cols, options.block
        );
        match pdgemm::run(&options) {
            Err(e) => println!("peer: {} ({shape}): not measured: {e}", pdgemm::NAME),
            Ok(measured) => {
                let (median, min, max) = measured.median_min_max();
                let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
                println!(
                    "peer: {} ({shape}): median {:.2} ms ({:.2}–{:.2}) of {}, {:.2} GFLOP/s",
                    pdgemm::NAME,
                    ms(median),
                    ms(min),
                    ms(max),
                    measured.times.len(),
                    2.0 * (cfg.size as f64).powi(3) / median.as_secs_f64() / 1e9,
                );
                let t = median.as_secs_f64();
                best = Some(best.map_or(t, |b| b.min(t)));
            }
        }
    }
    if let (Some(ours), Some(best)) = (ours, best) {
        println!(
            "threadwire ÷ pdgemm's faster run: {:.2}× the time (below 1: threadwire is faster)",
            ours / best
        );
    }
}
