//! `threadwire bench …`: each benchmark's options from its arguments, its
//! run behind a progress bar, and its report for `main` to write; under
//! the launcher, the benchmark's node side instead.

use crate::args::{Bench, MachineReadable, OnLink};
use crate::progress::Progress;
use anyhow::{Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;
use threadwire_bench::pingpong::{self, Budget};
use threadwire_bench::plot::PlotError;
use threadwire_bench::report::{Format, Report};
use threadwire_bench::{
    am, bcast, coll, comm, dsm, encodings, flood, floors, overlap, pvm, rate, spawn, threads,
};
use threadwire_testbed::interrupt;
use threadwire_testbed::net::ScopedNet;

/// What a command leaves to `main`.
pub enum Outcome {
    /// A report to write in a format.
    Report(Box<dyn Report>, Format),
    /// An exit status, all said (a node's side, the suite, a job).
    Exit(i32),
}

/// Whether this process is a node of a job (the benchmark's node side).
pub fn under_launcher() -> bool {
    std::env::var_os(threadwire::env::JOB).is_some()
}

/// The command line the nodes run again: this one.
fn own_command() -> Result<(PathBuf, Vec<OsString>)> {
    Ok((
        std::env::current_exe()?,
        std::env::args_os().skip(1).collect(),
    ))
}

impl OnLink {
    fn net(&self) -> Result<Option<ScopedNet>> {
        threadwire_bench::two_hosts(self.link).context("building the emulated hosts for --link")
    }
}

/// Runs `measure` behind a progress bar of `steps`, cleared before its
/// report is written in `output`'s format.
fn measured<R: Report + 'static>(
    name: &'static str,
    steps: usize,
    output: MachineReadable,
    measure: impl FnOnce(&Progress) -> Result<R>,
) -> Result<Outcome> {
    let progress = Progress::new(name, steps);
    let report = measure(&progress)?;
    drop(progress);
    Ok(Outcome::Report(Box::new(report), output.format()))
}

/// Plots `report` into `dir`, if given, naming each file written on
/// stderr: stdout carries the results alone (--json, --csv).
fn plot_into<R>(
    progress: &Progress,
    dir: Option<&Path>,
    report: &R,
    plot: impl FnOnce(&R, &Path) -> Result<Vec<PathBuf>, PlotError>,
) -> Result<()> {
    if let Some(dir) = dir {
        for file in plot(report, dir)? {
            progress.aside_line(format!("threadwire: wrote {}", file.display()));
        }
    }
    Ok(())
}

pub fn run(bench: Bench) -> Result<Outcome> {
    let exit = |code| Ok(Outcome::Exit(code));
    match bench {
        Bench::Suite(args) => exit(crate::suite::run(&args)?),
        Bench::Pingpong(a) => {
            let (program, args) = own_command()?;
            let options = pingpong::Options {
                sizes: pingpong::listed_or_swept(a.sizes, a.max_power),
                paths: a.paths,
                budget: Budget::from_millis(a.repetitions, a.ms),
                peers: a.peers,
                into: a.into,
                program,
                args,
            };
            if under_launcher() {
                pingpong::node(&options)?;
                return exit(0);
            }
            // Before any thread starts: a signal then removes the emulated
            // hosts and peers too. Not in the nodes, nor in PVM's tasks.
            interrupt::install(crate::progress::report_interrupt);
            let net = pingpong::hosts(a.link.link, a.loss)
                .context("building the emulated hosts for --link")?;
            let steps = pingpong::steps(&options);
            measured("bench pingpong", steps, a.output, |progress| {
                let step = || progress.step();
                let report =
                    pingpong::sweep(&options, net.as_deref(), step, |e| progress.aside(e))?;
                plot_into(progress, a.plot.as_deref(), &report, pingpong::plot)?;
                Ok(report)
            })
        }
        Bench::Rate(a) => {
            let options = rate::Options {
                threads: a.threads,
                messages: a.messages,
                repetitions: a.repetitions,
                window: a.window,
                kinds: a.kinds,
                peers: a.peers,
                owned: a.owned,
                ..rate::Options::default()
            };
            if under_launcher() {
                rate::node(&options)?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            let (program, args) = own_command()?;
            let net = a.link.net()?;
            measured("bench rate", rate::steps(&options), a.output, |progress| {
                let step = || progress.step();
                let net = net.as_deref();
                Ok(rate::run(&options, program, args, net, step, |e| {
                    progress.aside(e)
                })?)
            })
        }
        Bench::Overlap(a) => {
            let options = overlap::Options {
                block: a.block,
                blocks: a.blocks,
                ratios: a.ratios,
                modes: a.modes,
                repetitions: a.repetitions,
            };
            if under_launcher() {
                overlap::node(&options)?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            let (program, args) = own_command()?;
            let net = a.link.net()?;
            measured(
                "bench overlap",
                overlap::steps(&options),
                a.output,
                |progress| {
                    let step = || progress.step();
                    let net = net.as_deref();
                    Ok(overlap::run(&options, program, args, net, step, |e| {
                        progress.aside(e)
                    })?)
                },
            )
        }
        Bench::Am(a) => {
            let (program, args) = own_command()?;
            let options = am::Options {
                paths: a.paths,
                sizes: a.sizes,
                budget: Budget::from_millis(a.repetitions, a.ms),
                threads: a.threads,
                messages: a.messages,
                rate_repetitions: a.rate_repetitions,
                kinds: a.kinds,
                ..am::Options::new(program, args)
            };
            if under_launcher() {
                am::node(&options)?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            measured("bench am", am::steps(&options), a.output, |progress| {
                Ok(am::run(
                    &options,
                    || progress.step(),
                    |e| progress.aside(e),
                )?)
            })
        }
        Bench::Threads(a) => {
            let options = threads::Options {
                iterations: a.iterations.max(1),
                repetitions: a.repetitions.max(1),
                ..threads::Options::default()
            };
            let ep = threads::node_config()
                .init()
                .context("starting a standalone node")?;
            measured("bench threads", threads::STEPS, a.output, |progress| {
                Ok(threads::run(&ep, &options, || progress.step())?)
            })
        }
        Bench::Comm(a) => {
            let (program, args) = own_command()?;
            let options = comm::Options {
                links: a.links,
                repetitions: a.repetitions,
                per_repetition: Duration::from_millis(a.ms),
                per_size: Duration::try_from_secs_f64(a.seconds).context("--seconds")?,
                bandwidth: !a.no_bandwidth,
                ..comm::Options::new(program, args)
            };
            if under_launcher() {
                comm::node(&options)?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            measured("bench comm", comm::cells(&options), a.output, |progress| {
                Ok(comm::run(
                    &options,
                    || progress.step(),
                    |e| progress.aside(e),
                )?)
            })
        }
        Bench::Dsm(a) => {
            let (program, args) = own_command()?;
            let options = dsm::Options {
                links: a.links,
                repetitions: a.repetitions,
                faults: a.faults,
                hand_offs: a.hand_offs,
                barriers: a.barriers,
                ..dsm::Options::new(program, args)
            };
            if under_launcher() {
                dsm::node(&options)?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            measured("bench dsm", dsm::steps(&options), a.output, |progress| {
                Ok(dsm::run(
                    &options,
                    || progress.step(),
                    |e| progress.aside(e),
                )?)
            })
        }
        Bench::Encodings(a) => {
            let (program, args) = own_command()?;
            let options = encodings::Options {
                sizes: a.sizes.unwrap_or_else(|| pingpong::sizes(a.max_power)),
                budget: Budget::from_millis(a.repetitions, a.ms),
                program,
                args,
            };
            if under_launcher() {
                encodings::node(&options)?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            let net = a.link.net()?;
            let rows = encodings::rows(&options);
            measured("bench encodings", rows, a.output, |progress| {
                let step = || progress.step();
                let net = net.as_deref();
                Ok(encodings::run(&options, net, step, |e| progress.aside(e))?)
            })
        }
        Bench::Spawn(a) => {
            // The pvm_spawn rows run this command again as PVM tasks.
            if let Some(done) = threadwire_bench::peers::pvm::task_main() {
                return exit(done.map_or_else(
                    |e| {
                        eprintln!("threadwire pvm task: {e}");
                        e.exit_status()
                    },
                    |()| 0,
                ));
            }
            // The launcher rows' nodes run under process managers too.
            if under_launcher() || std::env::var_os(spawn::launchers::RING_VARIABLE).is_some() {
                spawn::node()?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            let net = OnLink { link: a.link }.net()?;
            let node_args = vec!["bench".into(), "spawn".into()];
            let program = std::env::current_exe()?;
            let options = spawn::Options {
                counts: a.counts,
                repetitions: a.repetitions,
                hosts: net.as_ref().map_or(Vec::new(), |n| n.launch_hosts()),
                kinds: match a.launchers_only {
                    true => vec![spawn::Kind::PvmSpawn],
                    false => spawn::Kind::ALL.to_vec(),
                },
                launchers: Some(spawn::launchers::Options {
                    run: (program.clone(), vec!["run".into()]),
                }),
                ..spawn::Options::new(program, node_args)
            };
            let ep = spawn::node_config()
                .init()
                .context("starting a standalone node")?;
            measured(
                "bench spawn",
                spawn::steps(&options),
                a.output,
                |progress| {
                    let step = |_, _| progress.step();
                    let mut report = spawn::run(&ep, &options, |e| progress.aside(e), step)?;
                    report.emulated_hosts = net.as_ref().map(|net| spawn::EmulatedHosts {
                        names: [net.hosts[0].name.clone(), net.hosts[1].name.clone()],
                        link: net.link,
                    });
                    Ok(report)
                },
            )
        }
        Bench::Coll(a) => {
            let (program, args) = own_command()?;
            let sizes = a.sizes.unwrap_or_else(|| coll::sizes(a.max_power));
            let mut options = coll::Options {
                layouts: a.layouts,
                operations: a.operations,
                repetitions: a.repetitions,
                per_repetition: Duration::from_millis(a.ms),
                max_ms_per_size: (a.max_ms_per_size > 0).then_some(a.max_ms_per_size),
                peers: a.peers,
                channel: a.channel,
                ..coll::Options::new(sizes, program, args)
            };
            for forced in &a.algorithms {
                options.algorithms.force(forced)?;
            }
            if under_launcher() {
                coll::node(&options)?;
                return exit(0);
            }
            if a.explain {
                let explanation = coll::explain(&options);
                return Ok(Outcome::Report(Box::new(explanation), a.output.format()));
            }
            interrupt::install(crate::progress::report_interrupt);
            let hosts = options.layouts.iter().map(|l| l.nodes).max().unwrap_or(1);
            let net = a
                .link
                .map(|link| ScopedNet::up_with_free_prefix("twc", hosts.max(2), link))
                .transpose()
                .context("building the emulated hosts for --link")?;
            measured("bench coll", coll::steps(&options), a.output, |progress| {
                let step = || progress.step();
                let report = coll::sweep(&options, net.as_deref(), step, |e| progress.aside(e))?;
                plot_into(progress, a.plot.as_deref(), &report, coll::plot)?;
                Ok(report)
            })
        }
        Bench::Bcast(a) => {
            let (program, args) = own_command()?;
            let options = bcast::Options {
                links: a.links,
                receivers: a.receivers,
                sizes: a.sizes.iter().map(|&s| s as usize).collect(),
                repetitions: a.repetitions,
                per_size: Duration::from_millis(a.ms),
                systems: a.systems,
                multicast_algorithm: a.multicast_algorithm,
                ..bcast::Options::new(program, args)
            };
            if under_launcher() {
                bcast::node(&options)?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            measured(
                "bench bcast",
                bcast::steps(&options),
                a.output,
                |progress| {
                    let step = || progress.step();
                    let report = bcast::run(&options, step, |e| progress.aside(e));
                    plot_into(progress, a.plot.as_deref(), &report, bcast::plot)?;
                    Ok(report)
                },
            )
        }
        Bench::Flood(a) => {
            let (program, args) = own_command()?;
            let options = flood::Options {
                count: a.count,
                size: a.size,
                delay: Duration::try_from_secs_f64(a.delay).context("--delay")?,
                receive: match a.into {
                    true => pingpong::Receive::Into,
                    false => pingpong::Receive::Owned,
                },
                paths: a.paths,
                peers: a.peers,
                ..flood::Options::new(program, args)
            };
            if under_launcher() {
                flood::node(&options)?;
                return exit(0);
            }
            interrupt::install(crate::progress::report_interrupt);
            measured(
                "bench flood",
                flood::steps(&options),
                a.output,
                |progress| {
                    Ok(flood::run(
                        &options,
                        || progress.step(),
                        |e| progress.aside(e),
                    )?)
                },
            )
        }
        Bench::Pvm(a) => {
            interrupt::install(crate::progress::report_interrupt);
            let options = pvm::Options {
                sizes: a
                    .sizes
                    .iter()
                    .map(|&s| s.div_ceil(4) as usize * 4)
                    .collect(),
                counts: a.counts,
                repetitions: a.repetitions,
                per_measurement: Duration::from_millis(a.ms),
                encoding: a.encoding,
                link: a.link,
                ..pvm::Options::new(std::env::current_exe()?)
            };
            measured("bench pvm", pvm::steps(&options), a.output, |progress| {
                Ok(pvm::run(&options, || progress.step()))
            })
        }
        Bench::Floors(a) => {
            let options = floors::Options {
                repetitions: a.repetitions,
                per_repetition: Duration::from_millis(a.ms),
                ..floors::Options::default()
            };
            measured(
                "bench floors",
                floors::steps(&options),
                a.output,
                |progress| Ok(floors::run(&options, || progress.step())),
            )
        }
    }
}
