//! `apps matmul` swept into a seed's table: the serial baseline against
//! threaded runs, over node counts and sizes, one job each, on this host
//! or on emulated hosts ([`Hosts`]).
//!
//! 1. [`Sweep::check`] checks every configuration before any job starts.
//! 2. For each node count, then each size: a job of the serial baseline
//!    (one thread per node, no overlap), then one job per thread count,
//!    all on the same hosts (a net is built once for the sweep).
//! 3. Each job is `PROGRAM apps matmul …` with that configuration
//!    ([`Config::node_args`]) and `--result-only`: node 0 reports its timed
//!    multiply's elapsed time as a [`NodeResult::Matmul`] and prints
//!    nothing. A job that fails, or reports no time, ends the sweep.
//! 4. The times make a [`Table`], laid out as the seed's table they
//!    reproduce ([`Table::seed`]).

use super::table::{Cell, Table};
use super::{Config, ConfigError};
use crate::hosts::{Hosts, HostsError};
use std::path::Path;
use threadwire_bench::node_result::NodeResult;
use threadwire_launch::{Event, JobSpec};

/// The argument that makes a node of `apps matmul` report its time alone.
pub const RESULT_ONLY: &str = "--result-only";

/// What to sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    /// Nodes of each job, in order.
    pub nodes: Vec<u32>,
    /// Sizes, in order.
    pub sizes: Vec<usize>,
    /// Threads per node of the threaded configurations, run after the
    /// serial baseline at every node count and size.
    pub threads: Vec<u32>,
    /// Everything else (layout, mesh, kernel, panel, seed).
    pub base: Config,
}

/// Why a sweep stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// A configuration cannot run (step 1).
    #[error("{what}")]
    Config {
        /// The configuration.
        what: String,
        /// Why.
        #[source]
        source: ConfigError,
    },
    /// The hosts could not run a job.
    #[error(transparent)]
    Hosts(#[from] HostsError),
    /// A job failed (step 3).
    #[error("{what}: the job failed with status {status}")]
    Failed {
        /// The configuration.
        what: String,
        /// Its exit status.
        status: i32,
    },
    /// A job ended well but node 0 reported no time (step 3).
    #[error("{what}: node 0 reported no time")]
    NoTime {
        /// The configuration.
        what: String,
    },
}

impl Sweep {
    /// Every job, in the order it runs (step 2).
    pub fn jobs(&self) -> Vec<(u32, Config)> {
        let mut jobs = Vec::new();
        for &nodes in &self.nodes {
            for &size in &self.sizes {
                let serial = Config {
                    size,
                    threads: 1,
                    serial: true,
                    ..self.base
                };
                jobs.push((nodes, serial));
                for &threads in &self.threads {
                    let threaded = Config {
                        threads,
                        serial: false,
                        ..serial
                    };
                    jobs.push((nodes, threaded));
                }
            }
        }
        jobs
    }

    /// Whether every job can run (step 1).
    pub fn check(&self) -> Result<(), SweepError> {
        for (nodes, cfg) in self.jobs() {
            cfg.check(nodes).map_err(|source| SweepError::Config {
                what: describe(nodes, &cfg),
                source,
            })?;
        }
        Ok(())
    }

    /// Runs every job of `program` (this `threadwire`) on `hosts` (steps
    /// 2–4): each event but the nodes' results to `on_event`, each time to
    /// `on_cell` as it comes.
    pub fn run(
        &self,
        hosts: &Hosts,
        program: &Path,
        mut on_event: impl FnMut(&Event),
        mut on_cell: impl FnMut(&Cell),
    ) -> Result<Table, SweepError> {
        self.check()?;
        let mut cells = Vec::new();
        for (nodes, cfg) in self.jobs() {
            let spec = JobSpec::new(nodes, program)
                .args(cfg.node_args())
                .args([RESULT_ONLY])
                .env("MATMUL_NUM_THREADS", cfg.threads.to_string());
            let finished = hosts.run(spec, &mut on_event)?;
            let what = || describe(nodes, &cfg);
            if finished.report.status != 0 {
                return Err(SweepError::Failed {
                    what: what(),
                    status: finished.report.status,
                });
            }
            let seconds = finished
                .results
                .iter()
                .find_map(|r| match r {
                    NodeResult::Timed { seconds } => Some(*seconds),
                    _ => None,
                })
                .ok_or_else(|| SweepError::NoTime { what: what() })?;
            let cell = Cell {
                nodes,
                size: cfg.size,
                threads: (!cfg.serial).then_some(cfg.threads),
                seconds,
            };
            on_cell(&cell);
            cells.push(cell);
        }
        Ok(Table {
            layout: self.base.layout,
            mesh: self.base.mesh,
            kernel: self.base.kernel,
            hosts: hosts.to_string(),
            link: hosts.link(),
            threads: self.threads.clone(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cells,
        })
    }
}

/// `matmul 800x800 on 6 nodes, serial`.
fn describe(nodes: u32, cfg: &Config) -> String {
    let mode = match cfg.serial {
        true => "serial".to_string(),
        false => format!("{} threads/node", cfg.threads),
    };
    format!("matmul {n}x{n} on {nodes} nodes, {mode}", n = cfg.size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::Layout;

    #[test]
    fn the_serial_baseline_runs_first_at_every_node_count_and_size() {
        let sweep = Sweep {
            nodes: vec![2, 3],
            sizes: vec![64, 128],
            threads: vec![2, 4],
            base: Config {
                layout: Layout::HostNode,
                ..Config::default()
            },
        };
        let order: Vec<(u32, usize, bool, u32)> = sweep
            .jobs()
            .iter()
            .map(|(n, c)| (*n, c.size, c.serial, c.threads))
            .collect();
        assert_eq!(order.len(), 12);
        assert_eq!(
            order[..3],
            [(2, 64, true, 1), (2, 64, false, 2), (2, 64, false, 4)]
        );
        assert_eq!(order[9], (3, 128, true, 1));
        assert!(sweep.check().is_ok());
    }

    #[test]
    fn a_configuration_that_cannot_run_is_named() {
        let sweep = Sweep {
            nodes: vec![4],
            sizes: vec![100],
            threads: vec![2],
            base: Config {
                mesh: Some(super::super::Mesh { rows: 2, cols: 3 }),
                ..Config::default()
            },
        };
        let err = sweep.check().unwrap_err();
        assert_eq!(err.to_string(), "matmul 100x100 on 4 nodes, serial");
    }
}
