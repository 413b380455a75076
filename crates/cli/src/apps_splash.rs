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
    /// Non-contiguous blocked LU, 1024x1024 row-major, block 32 (small:
    /// 128x128, block 16).
    #[value(name = "lu-n")]
    LuN,
    /// Radix sort, 1M keys, radix 1024 (small: 64K keys).
    Radix,
    /// Six-step FFT, 2^20 complex points (small: 2^12).
    Fft,
    /// Ocean with contiguous partitions, 258x258 grid, 3 time steps
    /// (small: 66x66, 2).
    #[value(name = "ocean-c")]
    OceanC,
    /// MRI deblurring, 14 frequency points on a 256x256 phantom (small: 6
    /// on 32x32).
    Mri,
    /// O(n^2) water, 4096 molecules, 3 steps (small: 64, 2).
    #[value(name = "water-n2")]
    WaterN2,
    /// Spatial water, 1000 molecules, 3 steps (small: 343, 2).
    #[value(name = "water-sp")]
    WaterSp,
    /// Every program in turn (with --figure, --compare or --plain).
    All,
}

impl ProgramArg {
    /// The programs it names.
    fn programs(self) -> &'static [Program] {
        match self {
            ProgramArg::Sor => &[Program::Sor],
            ProgramArg::Matmult => &[Program::Matmult],
            ProgramArg::LuC => &[Program::LuContiguous],
            ProgramArg::LuN => &[Program::LuNoncontiguous],
            ProgramArg::Radix => &[Program::Radix],
            ProgramArg::Fft => &[Program::Fft],
            ProgramArg::OceanC => &[Program::OceanContiguous],
            ProgramArg::Mri => &[Program::Mri],
            ProgramArg::WaterN2 => &[Program::WaterNsquared],
            ProgramArg::WaterSp => &[Program::WaterSpatial],
            ProgramArg::All => &Program::ALL,
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
    /// Processes (OS threads) per node, all taking part in the barriers
    /// (default 1; 4 with --figure).
    #[arg(long)]
    pub threads: Option<usize>,
    /// The small size, for quick checks, instead of the seed's.
    #[arg(long)]
    pub small: bool,
    /// The seed's size scaled up: the order of matmult's, lu-c's and
    /// lu-n's matrices, or the molecules of water-n2 and water-sp, times
    /// SCALE (computation then outgrows communication, as in 1998).
    #[arg(long, default_value_t = 1, conflicts_with = "small")]
    pub scale: usize,
    /// Run with plain threads sharing this process's memory and no DSM
    /// (one node): the baseline of the DSM's runs.
    #[arg(long, conflicts_with_all = ["compare", "link"])]
    pub plain: bool,
    /// Run --rounds times each, alternating: plain threads, then the DSM on
    /// -n nodes x --threads, as many processes in both; print both and
    /// their ratio.
    #[arg(long, conflicts_with = "link")]
    pub compare: bool,
    /// The seed's figure of the program and its Table 3 row: the DSM on
    /// 1, 2 and 4 nodes (one a host with --link), --threads each
    /// (default 4: the seed's 16 tasks on 4 hosts).
    #[arg(long, conflicts_with_all = ["compare", "nodes", "plain"])]
    pub figure: bool,
    /// Runs of each kind with --compare (default 3) or of each node count
    /// with --figure (default 1); the median is reported.
    #[arg(long)]
    pub rounds: Option<usize>,
    /// A node reports its time and prints nothing (--compare's nodes).
    #[arg(long, hide = true)]
    pub result_only: bool,
    #[command(flatten)]
    pub on: OnHosts,
}

impl SplashJob {
    /// The configuration of its one program.
    fn config(&self) -> splash::Config {
        splash::Config {
            program: self.program.programs()[0],
            threads: self.threads.unwrap_or(if self.figure { 4 } else { 1 }),
            small: self.small,
            scale: self.scale,
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
        if cfg.scale != 1 {
            args.extend(["--scale".into(), cfg.scale.to_string()]);
        }
        if self.compare || self.figure {
            args.push("--result-only".into());
        }
        args.into_iter().map(OsString::from).collect()
    }
}

/// Runs `threadwire apps splash`: a node's side under the launcher, the
/// plain run, the comparison or the job.
pub fn run(job: SplashJob) -> Result<Outcome> {
    if let ProgramArg::All = job.program {
        anyhow::ensure!(
            job.figure || job.compare || job.plain,
            "all runs every program with --figure, --compare or --plain"
        );
        // Scaled, the programs that scale.
        let programs: &[Program] = match job.scale {
            1 => &Program::ALL,
            _ => &splash::SCALABLE,
        };
        for &program in programs {
            let one = SplashJob {
                program: ProgramArg::value_variants()
                    .iter()
                    .copied()
                    .find(|p| p.programs() == [program])
                    .expect("every program has its NAME"),
                ..job.clone()
            };
            run(one)?;
        }
        return Ok(Outcome::Exit(0));
    }
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
            let u = report.utilization();
            NodeResult::DsmTraffic {
                mean_message: u.mean_message,
                mbps: u.mbps,
                latency_ms: u.latency_ms,
            }
            .send(ep.node())?;
        }
        return Ok(Outcome::Exit(0));
    }
    if job.figure {
        return figure(&job, cfg);
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

/// What node 0 of a job on the DSM reported: its time and the seed's
/// Table 3 of its run.
#[derive(Clone, Copy, Debug, Default)]
struct Ran {
    seconds: f64,
    traffic: [f64; 3],
}

/// The job on the DSM: its status, and what node 0 reported.
fn dsm(job: &SplashJob, nodes: u32, hosts: &Hosts) -> Result<(i32, Option<Ran>)> {
    let spec = JobArgs {
        nodes,
        ..JobArgs::default()
    };
    let program = JobSpec::new(nodes, std::env::current_exe()?).args(job.node_args());
    let one = !(job.compare || job.figure);
    let (status, results) = launch_collecting(&spec, program, hosts, one)?;
    let seconds = results.iter().find_map(|r| match r {
        NodeResult::Timed { seconds } => Some(*seconds),
        _ => None,
    });
    let traffic = results.iter().find_map(|r| match r {
        NodeResult::DsmTraffic {
            mean_message,
            mbps,
            latency_ms,
        } => Some([*mean_message, *mbps, *latency_ms]),
        _ => None,
    });
    let ran = seconds.filter(|_| status == 0).map(|seconds| Ran {
        seconds,
        traffic: traffic.unwrap_or_default(),
    });
    Ok((status, ran))
}

/// The job on the DSM, `rounds` times: the run of median time.
fn dsm_rounds(job: &SplashJob, nodes: u32, hosts: &Hosts, rounds: usize) -> Result<Ran> {
    let mut runs = Vec::new();
    for round in 1..=rounds.max(1) {
        let (status, ran) = dsm(job, nodes, hosts)?;
        let Some(ran) = ran else {
            anyhow::bail!("the DSM's run {round} on {nodes} nodes failed (status {status})");
        };
        runs.push(ran);
    }
    runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    Ok(runs[runs.len() / 2])
}

/// `--figure`: the DSM on 1, 2 and 4 nodes, then the seed's Table 3 row
/// of the link beside ours at 4.
fn figure(job: &SplashJob, cfg: splash::Config) -> Result<Outcome> {
    const NODES: [u32; 3] = [1, 2, 4];
    cfg.check(4)?;
    let title = cfg.program.title();
    let link = job.on.link.map(|l| l.to_string());
    let hosts = job.on.hosts(4)?;
    let number = threadwire_bench::seeds::strings_figure(title);
    let scaled = match cfg.scale {
        1 => String::new(),
        k => format!(" at {k} times the seed's size"),
    };
    println!(
        "splash {title}{scaled}, {} threads a node, {}{}",
        cfg.threads,
        link.as_deref()
            .map_or("nodes on this host".into(), |l| format!(
                "a node a host on {l}"
            )),
        number.map_or(String::new(), |n| format!(" (Strings' Fig. {n})"))
    );
    if hosts.link().is_some() {
        println!("on {hosts}, nodes round robin");
    }
    println!(
        "{:>5} {:>10} {:>10} {:>10} {:>12}",
        "hosts", "time (s)", "B/message", "Mbit/s", "ms/request"
    );
    for nodes in NODES {
        let ran = dsm_rounds(job, nodes, &hosts, job.rounds.unwrap_or(1))?;
        let [size, mbps, ms] = ran.traffic;
        println!(
            "{nodes:>5} {:>10.4} {size:>10.0} {mbps:>10.2} {ms:>12.3}",
            ran.seconds
        );
    }
    let seed = link
        .as_deref()
        .and_then(|l| threadwire_bench::seeds::strings_utilization(title, l));
    if let Some((size, mbps, ms)) = seed {
        println!("{:>5} {:>10} {size:>10} {mbps:>10} {ms:>12}", "seed", "");
        println!("(seed: Strings' Table 3, 4 hosts x 4 threads)");
    }
    Ok(Outcome::Exit(0))
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
    let rounds = job.rounds.unwrap_or(3).max(1);
    for round in 1..=rounds {
        let report = plain(alone)?;
        size.clone_from(&report.size);
        plains.push(report.measured.elapsed.as_secs_f64());
        let seconds = dsm_rounds(job, nodes, &hosts, 1)?.seconds;
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
        rounds
    );
    println!("plain threads, no DSM:      {p:.4} s ({pmin:.4}-{pmax:.4})");
    println!(
        "DSM, {nodes} nodes x {} threads: {d:.4} s ({dmin:.4}-{dmax:.4})",
        cfg.threads
    );
    println!("DSM / plain: {:.2}", d / p);
    Ok(Outcome::Exit(0))
}
