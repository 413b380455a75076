//! The collective peers alone, until `threadwire bench coll --peers` runs
//! them beside threadwire: every MPI × configuration × operation of
//! issue 12, one table row per operation and size on stdout (Markdown),
//! progress on stderr.
//!
//! ```text
//! cargo run --release -p threadwire-bench --example coll_peers -- \
//!     [--mpis openmpi,mpich] [--configurations 2,4,16,2x8] \
//!     [--operations barrier,bcast,allreduce,allgather,alltoall] \
//!     [--sizes 8,65536,1048576,16777216] [--repetitions 5] [--ms 100] \
//!     [--max-ms-per-size 2000] [--wait-policy default|passive|active]
//! ```

use std::process::ExitCode;

use threadwire_bench::peers::coll::{
    self, Configuration, Mpi, Operation, Options, Outcome, WaitPolicy,
};

struct Args {
    mpis: Vec<Mpi>,
    configurations: Vec<Configuration>,
    operations: Vec<Operation>,
    options: Options,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        mpis: Mpi::ALL.to_vec(),
        configurations: Configuration::ISSUE.to_vec(),
        operations: Operation::ALL.to_vec(),
        options: Options::default(),
    };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or(format!("{flag} without its value"))?;
        let list = || value.split(',').map(str::to_string).collect::<Vec<_>>();
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--mpis" => {
                args.mpis = list()
                    .iter()
                    .map(|m| match m.as_str() {
                        "openmpi" => Ok(Mpi::OpenMpi),
                        "mpich" => Ok(Mpi::Mpich),
                        _ => Err(format!("unknown MPI {m} (openmpi, mpich)")),
                    })
                    .collect::<Result<_, _>>()?
            }
            "--configurations" => {
                args.configurations = list()
                    .iter()
                    .map(|c| {
                        let (ranks, threads) = c.split_once('x').unwrap_or((c, "1"));
                        Ok(Configuration {
                            ranks: number(ranks)? as u32,
                            threads: number(threads)? as u32,
                        })
                    })
                    .collect::<Result<_, String>>()?
            }
            "--operations" => {
                args.operations = list()
                    .iter()
                    .map(|o| o.parse().map_err(|e| format!("{e}")))
                    .collect::<Result<_, _>>()?
            }
            "--sizes" => {
                args.options.sizes = list()
                    .iter()
                    .map(|s| number(s).map(|n| n as usize))
                    .collect::<Result<_, _>>()?
            }
            "--repetitions" => args.options.repetitions = number(&value)? as u32,
            "--ms" => args.options.ms = number(&value)?,
            "--max-ms-per-size" => args.options.max_ms_per_size = Some(number(&value)?),
            "--wait-policy" => {
                args.options.openmp_wait_policy = match value.as_str() {
                    "default" => WaitPolicy::Default,
                    "passive" => WaitPolicy::Passive,
                    "active" => WaitPolicy::Active,
                    _ => return Err(format!("unknown wait policy {value}")),
                }
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

fn size(bytes: usize) -> String {
    match bytes {
        0 => "–".into(),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn micros(d: std::time::Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    match us {
        us if us < 10.0 => format!("{us:.2}"),
        us if us < 1000.0 => format!("{us:.1}"),
        us => format!("{us:.0}"),
    }
}

fn main() -> ExitCode {
    threadwire_testbed::interrupt::install(|done| eprintln!("{done}"));
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("coll_peers: {e}");
            return ExitCode::from(2);
        }
    };
    let started = std::time::Instant::now();
    let progress = |o: &Outcome| {
        let what = match &o.result {
            Ok(rows) => format!("{} rows", rows.len()),
            Err(e) => format!("failed: {e}"),
        };
        eprintln!(
            "[{:>5.0} s] {} {} {}: {what}",
            started.elapsed().as_secs_f64(),
            o.mpi.name(),
            o.configuration,
            o.operation
        );
    };
    let reports = coll::run_beside(
        &args.mpis,
        &args.configurations,
        &args.operations,
        &args.options,
        progress,
    );
    println!(
        "| MPI | configuration | operation | size | median µs | min–max µs | reps × iterations |"
    );
    println!("|---|---|---|---|---:|---:|---:|");
    let mut failed = false;
    for report in &reports {
        let outcomes = match &report.result {
            Ok(outcomes) => outcomes,
            Err(e) => {
                println!("| {} | | | | {e} | | |", report.mpi.name());
                failed = true;
                continue;
            }
        };
        for o in outcomes {
            match &o.result {
                Ok(rows) => {
                    for r in rows {
                        println!(
                            "| {} | {} | {} | {} | {} | {}–{} | {} × {} |",
                            r.mpi.name(),
                            r.configuration,
                            r.operation,
                            size(r.size),
                            micros(r.median),
                            micros(r.min),
                            micros(r.max),
                            r.repetitions,
                            r.iterations
                        );
                    }
                }
                Err(e) => {
                    failed = true;
                    let first = e.to_string().lines().next().unwrap_or_default().to_string();
                    println!(
                        "| {} | {} | {} | | failed: {first} | | |",
                        o.mpi.name(),
                        o.configuration,
                        o.operation
                    );
                }
            }
            for &s in &o.skipped {
                println!(
                    "| {} | {} | {} | {} | not run: {} MiB of buffers | | |",
                    o.mpi.name(),
                    o.configuration,
                    o.operation,
                    size(s),
                    coll::buffer_bytes(o.configuration, o.operation, s) >> 20
                );
            }
        }
    }
    match failed {
        true => ExitCode::FAILURE,
        false => ExitCode::SUCCESS,
    }
}
