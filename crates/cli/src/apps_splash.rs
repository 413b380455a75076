//! `threadwire apps splash NAME`: the SPLASH-2-style programs on the
//! distributed shared memory (`threadwire_apps::splash`). The command
//! relaunches itself under the launcher as the other apps do
//! (`crate::apps`); each node runs the program and node 0 prints its
//! report. `--plain` runs the same program with plain threads and no
//! DSM; `--compare` alternates the two.

use crate::apps::{launch_collecting, OnHosts};
use crate::args::JobArgs;
use crate::bench::{under_launcher, Outcome};
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::ffi::OsString;
use threadwire_apps::figures::spread;
use threadwire_apps::hosts::Hosts;
use threadwire_apps::splash::{self, Program};
use threadwire_bench::node_result::NodeResult;
use threadwire_launch::JobSpec;

/// `NAME` of `apps splash`.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum ProgramArg {
    /// Red-black SOR, 2002x1002 grid, 100 iterations (small: 130x66, 10).
    Sor,
    /// Blocked matrix multiply, 1024x1024 in 16 blocks (small: 128x128).
    Matmult,
    /// Contiguous blocked LU, 2048x2048, block 128 (small: 128x128, block 16).
    #[value(name = "lu-c")]
    LuC,
    /// Radix sort, 1M keys, radix 1024 (small: 64K keys).
    Radix,
}

impl From<ProgramArg> for Program {
    fn from(p: ProgramArg) -> Program {
        match p {
            ProgramArg::Sor => Program::Sor,
            ProgramArg::Matmult => Program::Matmult,
            ProgramArg::LuC => Program::LuContiguous,
            ProgramArg::Radix => Program::Radix,
        }
    }
}

#[derive(Args, Clone)]
pub struct SplashJob {
    /// The program.
    #[arg(value_enum)]
    pub program: ProgramArg,
    /// Number of nodes (default 4; 1 with --plain).
    #[arg(short = 'n', long = "nodes")]
    pub nodes: Option<u32>,
    /// Processes (OS threads) per node, all taking part in the barriers.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// The small size, for quick checks, instead of the seed's.
    #[arg(long)]
    pub small: bool,
    /// Run with plain threads sharing this process's memory and no DSM
    /// (one node): the baseline of the DSM's runs.
    #[arg(long, conflicts_with_all = ["compare", "link"])]
    pub plain: bool,
    /// Run --rounds times each, alternating: plain threads, then the DSM on
    /// -n nodes x --threads, as many processes in both; print both and
    /// their ratio.
    #[arg(long, conflicts_with = "link")]
    pub compare: bool,
    /// Runs of each kind with --compare.
    #[arg(long, default_value_t = 3, requires = "compare")]
    pub rounds: usize,
    /// A node reports its time and prints nothing (--compare's nodes).
    #[arg(long, hide = true)]
    pub result_only: bool,
    #[command(flatten)]
    pub on: OnHosts,
}

impl SplashJob {
    fn config(&self) -> splash::Config {
        splash::Config {
            program: self.program.into(),
            threads: self.threads,
            small: self.small,
        }
    }

    fn nodes(&self) -> u32 {
        self.nodes.unwrap_or(if self.plain { 1 } else { 4 })
    }

    /// The arguments the nodes run again.
    fn node_args(&self) -> Vec<OsString> {
        let cfg = self.config();
        let mut args = vec![
            "apps".to_string(),
            "splash".into(),
            cfg.program.name().into(),
            "--threads".into(),
            cfg.threads.to_string(),
        ];
        if cfg.small {
            args.push("--small".into());
        }
        if self.compare {
            args.push("--result-only".into());
        }
        args.into_iter().map(OsString::from).collect()
    }
}

/// Runs `threadwire apps splash`: a node's side under the launcher, the
/// plain run, the comparison or the job.
pub fn run(job: SplashJob) -> Result<Outcome> {
    let cfg = job.config();
    if under_launcher() {
        let ep = threadwire::init()?;
        if let Some(report) = splash::run(&ep, cfg)? {
            if !job.result_only {
                print!("{report}");
            }
            if !report.measured.verified {
                anyhow::bail!("{} computed a wrong result", cfg.program.title());
            }
            let seconds = report.measured.elapsed.as_secs_f64();
            NodeResult::Timed { seconds }.send(ep.node())?;
        }
        return Ok(Outcome::Exit(0));
    }
    let nodes = job.nodes();
    if job.plain {
        anyhow::ensure!(
            nodes == 1,
            "--plain runs one node (its threads share memory): not -n {nodes}"
        );
        let report = plain(cfg)?;
        print!("{report}");
        return Ok(Outcome::Exit(0));
    }
    cfg.check(nodes)?;
    if job.compare {
        return compare(&job, cfg, nodes);
    }
    Ok(Outcome::Exit(dsm(&job, nodes, &job.on.hosts(nodes)?)?.0))
}

/// The plain run of `cfg`, verified.
fn plain(cfg: splash::Config) -> Result<splash::Report> {
    let report = splash::run_plain(cfg)?;
    anyhow::ensure!(
        report.measured.verified,
        "{} computed a wrong result",
        cfg.program.title()
    );
    Ok(report)
}

/// The job on the DSM: its status, and node 0's time.
fn dsm(job: &SplashJob, nodes: u32, hosts: &Hosts) -> Result<(i32, Option<f64>)> {
    let spec = JobArgs {
        nodes,
        ..JobArgs::default()
    };
    let program = JobSpec::new(nodes, std::env::current_exe()?).args(job.node_args());
    let (status, results) = launch_collecting(&spec, program, hosts)?;
    let seconds = results.iter().find_map(|r| match r {
        NodeResult::Timed { seconds } => Some(*seconds),
        _ => None,
    });
    Ok((status, seconds))
}

/// `--compare`: plain threads and the DSM, as many processes each,
/// alternating, then their medians and ratio.
fn compare(job: &SplashJob, cfg: splash::Config, nodes: u32) -> Result<Outcome> {
    let processes = nodes as usize * cfg.threads;
    let alone = splash::Config {
        threads: processes,
        ..cfg
    };
    let hosts = job.on.hosts(nodes)?;
    let (mut plains, mut dsms) = (Vec::new(), Vec::new());
    let mut size = String::new();
    for round in 1..=job.rounds.max(1) {
        let report = plain(alone)?;
        size.clone_from(&report.size);
        plains.push(report.measured.elapsed.as_secs_f64());
        let (status, seconds) = dsm(job, nodes, &hosts)?;
        let Some(seconds) = seconds.filter(|_| status == 0) else {
            anyhow::bail!("the DSM's run {round} failed (status {status})");
        };
        dsms.push(seconds);
        eprintln!(
            "threadwire: splash {} round {round}: plain {:.4} s, DSM {seconds:.4} s",
            cfg.program.title(),
            plains[round - 1]
        );
    }
    let (p, pmin, pmax) = spread(plains);
    let (d, dmin, dmax) = spread(dsms);
    println!(
        "splash {}: {size}, {processes} processes, median of {} rounds (min-max)",
        cfg.program.title(),
        job.rounds.max(1)
    );
    println!("plain threads, no DSM:      {p:.4} s ({pmin:.4}-{pmax:.4})");
    println!(
        "DSM, {nodes} nodes x {} threads: {d:.4} s ({dmin:.4}-{dmax:.4})",
        cfg.threads
    );
    println!("DSM / plain: {:.2}", d / p);
    Ok(Outcome::Exit(0))
}
