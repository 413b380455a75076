//! `threadwire apps matmul`: its arguments, and its dispatch — a node's
//! side under the launcher, a `threadwire_apps::matmul::Sweep` of jobs
//! into a seed's table (`--compare`, comma lists), or one job.

use crate::apps::{launch_collecting, OnHosts};
use crate::args::JobArgs;
use crate::bench::{under_launcher, Outcome};
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::ffi::OsString;
use threadwire_apps::figures::spread;
use threadwire_apps::hosts::Hosts;
use threadwire_apps::matmul::{Kernel, Layout, Mesh, Sweep, NCS_TABLE_1_SIZE};
use threadwire_bench::node_result::NodeResult;
use threadwire_bench::peers::pdgemm;
use threadwire_launch::JobSpec;

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
    /// Number of nodes (SUMMA: R x C; default: the mesh's, or 4); a comma
    /// list sweeps.
    #[arg(
        short = 'n',
        long = "nodes",
        value_name = "N,...",
        value_delimiter = ','
    )]
    pub nodes: Vec<u32>,
    /// How the work is shared among the nodes.
    #[arg(long, value_enum, default_value_t = LayoutArg::Summa)]
    pub layout: LayoutArg,
    /// SUMMA's mesh, RxC (default: the squarest of -n).
    #[arg(long, value_name = "RxC")]
    pub mesh: Option<Mesh>,
    /// Who multiplies a node's blocks.
    #[arg(long, value_enum, default_value_t = KernelArg::Blas)]
    pub kernel: KernelArg,
    /// Threads per node (default 2, or 1 with --serial); a comma list
    /// sweeps, against the serial baseline.
    #[arg(long, value_name = "T,...", value_delimiter = ',')]
    pub threads: Vec<u32>,
    /// Matrices are SIZE x SIZE (default 512; see --compare); a comma
    /// list sweeps.
    #[arg(
        long = "sizes",
        visible_alias = "size",
        value_name = "SIZE,...",
        value_delimiter = ','
    )]
    pub sizes: Vec<usize>,
    /// One thread per node and no overlap: the distributed, unthreaded
    /// baseline.
    #[arg(long, conflicts_with = "compare")]
    pub serial: bool,
    /// The serial baseline against --threads, a job each, at every -n and
    /// size, into the seed's table: NCS' Table 1 (host-node) or the
    /// thesis' Table 5.4 (summa).
    #[arg(long)]
    pub compare: bool,
    /// SUMMA's panel width, at most (columns of A and rows of B broadcast
    /// at once).
    #[arg(long, default_value_t = 256)]
    pub panel: usize,
    /// Also run ScaLAPACK's pdgemm (Open MPI, Debian's BLAS) on the same
    /// size, on a grid of as many ranks shaped as the mesh, each rank with
    /// the same threads, and print it beside ours with the ratio.
    #[arg(long, conflicts_with_all = ["compare", "link"])]
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
    #[arg(long, conflicts_with_all = ["peers", "compare", "link"])]
    pub reference: bool,
    #[command(flatten)]
    pub on: OnHosts,
    /// A node of a sweep's job: report the time to the launcher, print
    /// no report.
    #[arg(long, hide = true)]
    pub result_only: bool,
}

/// Timed products of `apps matmul --reference`, after one untimed.
const REFERENCE_ROUNDS: usize = 5;

/// The sizes of the thesis' Table 5.4.
const THESIS_SIZES: [usize; 5] = [100, 200, 400, 800, 1600];
/// The node counts of NCS' Table 1 with host-node: its 1, 2, 4 and 8
/// worker nodes, beside the host.
const NCS_NODES: [u32; 4] = [2, 3, 5, 9];

impl MatmulJob {
    /// Whether this runs a sweep of jobs into a seed's table.
    fn sweeps(&self) -> bool {
        self.compare || self.nodes.len() > 1 || self.sizes.len() > 1 || self.threads.len() > 1
    }

    fn layout(&self) -> Layout {
        match self.layout {
            LayoutArg::HostNode => Layout::HostNode,
            LayoutArg::Summa => Layout::Summa,
        }
    }

    /// -n, or its default: NCS' node counts for its table, else the mesh's
    /// places, else 4.
    fn node_counts(&self) -> Vec<u32> {
        match (&self.nodes[..], self.mesh) {
            ([], _) if self.compare && self.layout() == Layout::HostNode => NCS_NODES.to_vec(),
            ([], Some(mesh)) => vec![(mesh.rows * mesh.cols) as u32],
            ([], None) => vec![4],
            (nodes, _) => nodes.to_vec(),
        }
    }

    /// --sizes, or its default: the seed's sizes for its tables, else 512.
    fn size_list(&self) -> Vec<usize> {
        if !self.sizes.is_empty() {
            return self.sizes.clone();
        }
        match (self.sweeps(), self.layout()) {
            (false, _) => vec![512],
            (true, Layout::HostNode) => vec![NCS_TABLE_1_SIZE],
            (true, Layout::Summa) if self.threads.len() > 1 => THESIS_SIZES[..4].to_vec(),
            (true, Layout::Summa) => THESIS_SIZES.to_vec(),
        }
    }

    fn config(&self) -> threadwire_apps::matmul::Config {
        let threads = match self.threads.first() {
            Some(&t) => t,
            None if self.serial => 1,
            None => 2,
        };
        threadwire_apps::matmul::Config {
            size: self.size_list()[0],
            layout: self.layout(),
            mesh: self.mesh,
            kernel: self.kernel.into(),
            threads,
            serial: self.serial,
            panel: self.panel,
            ..Default::default()
        }
    }

    /// The sweep: the serial baseline against each of --threads but 1
    /// (default 2).
    fn sweep(&self) -> Sweep {
        let mut threads: Vec<u32> = self.threads.iter().copied().filter(|&t| t != 1).collect();
        if self.threads.is_empty() {
            threads.push(2);
        }
        Sweep {
            nodes: self.node_counts(),
            sizes: self.size_list(),
            threads,
            base: self.config(),
        }
    }

    /// The arguments the nodes run again.
    fn node_args(&self, cfg: &threadwire_apps::matmul::Config) -> Vec<OsString> {
        let mut args = cfg.node_args();
        if self.reference {
            args.push("--reference".into());
        }
        args.into_iter().map(OsString::from).collect()
    }
}

/// Runs `threadwire apps matmul`: a node's side under the launcher, a
/// sweep into a seed's table, or one job.
pub fn run(job: MatmulJob) -> Result<Outcome> {
    let exit = |code| Ok(Outcome::Exit(code));
    let cfg = job.config();
    if under_launcher() && job.reference {
        let ep = threadwire::init()?;
        let times = threadwire_apps::matmul::reference(cfg.size, cfg.seed, REFERENCE_ROUNDS);
        let seconds = spread(times.iter().map(|d| d.as_secs_f64()).collect()).0;
        NodeResult::Timed { seconds }.send(ep.node())?;
        return exit(0);
    }
    if under_launcher() {
        let ep = threadwire::init()?;
        if let Some(report) = threadwire_apps::matmul::run(&ep, cfg)? {
            if !job.result_only {
                println!("{report}");
            }
            let seconds = report.elapsed.as_secs_f64();
            NodeResult::Timed { seconds }.send(ep.node())?;
        }
        return exit(0);
    }
    if job.sweeps() {
        if job.peers || job.reference || job.serial {
            anyhow::bail!(
                "--peers, --reference and --serial run one configuration: not with --compare or lists"
            );
        }
        let sweep = job.sweep();
        sweep.check()?;
        let most = sweep.nodes.iter().copied().max().unwrap_or(1);
        let hosts = job.on.hosts(most)?;
        let table = sweep.run(
            &hosts,
            &std::env::current_exe()?,
            |e| crate::render::event(e, false),
            |cell| {
                let mode = cell
                    .threads
                    .map_or("serial".into(), |t| format!("{t} threads/node"));
                eprintln!(
                    "threadwire: matmul {n}x{n} on {} nodes, {mode}: {:.4} s",
                    cell.nodes,
                    cell.seconds,
                    n = cell.size
                );
            },
        )?;
        println!("{table}");
        return exit(0);
    }
    let nodes = job.node_counts()[0];
    if job.reference {
        let (status, seconds) = matmul_job(&job, &cfg, 1, &Hosts::here())?;
        if let Some(seconds) = seconds {
            print_reference(&cfg, seconds, None);
        }
        return exit(status);
    }
    cfg.check(nodes)?;
    let (status, ours) = matmul_job(&job, &cfg, nodes, &job.on.hosts(nodes)?)?;
    if status == 0 && job.peers {
        // The crate's single-process multithreaded rate: all the host's
        // cores, whatever the job's threads per node.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let reference = MatmulJob {
            reference: true,
            peers: false,
            threads: vec![cores],
            serial: false,
            ..job.clone()
        };
        let alone_cfg = reference.config();
        if let (0, Some(alone)) = matmul_job(&reference, &alone_cfg, 1, &Hosts::here())? {
            print_reference(&alone_cfg, alone, ours);
        }
        pdgemm_beside(nodes, &cfg, &job, ours);
    }
    exit(status)
}

/// Runs `job` (the multiply, or its reference) as a job of `nodes`
/// nodes on `hosts`: its status and the time node 0 reported.
fn matmul_job(
    job: &MatmulJob,
    cfg: &threadwire_apps::matmul::Config,
    nodes: u32,
    hosts: &Hosts,
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
    let (status, results) = launch_collecting(&spec, program, hosts, true)?;
    let seconds = results.iter().find_map(|r| match r {
        NodeResult::Timed { seconds } => Some(*seconds),
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
fn pdgemm_beside(
    nodes: u32,
    cfg: &threadwire_apps::matmul::Config,
    job: &MatmulJob,
    ours: Option<f64>,
) {
    let mesh = cfg.mesh.unwrap_or_else(|| Mesh::squarest(nodes));
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
