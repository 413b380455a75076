//! `threadwire apps splash NAME`: the SPLASH-2-style programs on the
//! distributed shared memory (`threadwire_apps::splash`). The command
//! relaunches itself under the launcher as the other apps do
//! (`crate::apps`); each node runs the program and node 0 prints its
//! report.

use crate::apps::{launch, OnHosts};
use crate::args::JobArgs;
use crate::bench::{under_launcher, Outcome};
use anyhow::Result;
use clap::{Args, ValueEnum};
use std::ffi::OsString;
use threadwire_apps::splash::{self, Program};
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
    /// O(n^2) water, 4096 molecules, 3 steps (small: 64, 2).
    #[value(name = "water-n2")]
    WaterN2,
    /// Spatial water, 1000 molecules, 3 steps (small: 343, 2).
    #[value(name = "water-sp")]
    WaterSp,
}

impl From<ProgramArg> for Program {
    fn from(p: ProgramArg) -> Program {
        match p {
            ProgramArg::Sor => Program::Sor,
            ProgramArg::Matmult => Program::Matmult,
            ProgramArg::LuC => Program::LuContiguous,
            ProgramArg::Radix => Program::Radix,
            ProgramArg::WaterN2 => Program::WaterNsquared,
            ProgramArg::WaterSp => Program::WaterSpatial,
        }
    }
}

#[derive(Args, Clone)]
pub struct SplashJob {
    /// The program.
    #[arg(value_enum)]
    pub program: ProgramArg,
    /// Number of nodes.
    #[arg(short = 'n', long = "nodes", default_value_t = 4)]
    pub nodes: u32,
    /// Processes (OS threads) per node, all taking part in the barriers.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// The small size, for quick checks, instead of the seed's.
    #[arg(long)]
    pub small: bool,
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
        args.into_iter().map(OsString::from).collect()
    }
}

/// Runs `threadwire apps splash`: a node's side under the launcher, or
/// the job.
pub fn run(job: SplashJob) -> Result<Outcome> {
    let cfg = job.config();
    if under_launcher() {
        if let Some(report) = splash::node(cfg)? {
            print!("{report}");
            if !report.measured.verified {
                anyhow::bail!("{} computed a wrong result", cfg.program.title());
            }
        }
        return Ok(Outcome::Exit(0));
    }
    cfg.check(job.nodes)?;
    let spec = JobArgs {
        nodes: job.nodes,
        ..JobArgs::default()
    };
    let program = JobSpec::new(job.nodes, std::env::current_exe()?).args(job.node_args());
    Ok(Outcome::Exit(launch(
        &spec,
        program,
        &job.on.hosts(job.nodes)?,
    )?))
}
