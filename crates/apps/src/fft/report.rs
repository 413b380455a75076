//! What the host measured, and the seed's Table 3 to print beside it.

use std::time::Duration;

pub use crate::figures::SeedRow;

/// NCS (1995), Table 3: Execution times of FFT in seconds (512 points ×
/// 8 sets, host–node DIF FFT; the threaded column is NCS_MTS/p4), typed
/// in as printed. Its "% Improvement" column is (p4 − NCS_MTS/p4) / p4, which
/// [`improvement`] recomputes (6.5%, 5.7%, 11.25%; 8.49%, 10.66%); it
/// prints "-" for one node.
pub const NCS_TABLE_3: [SeedRow; 4] = [
    SeedRow {
        nodes: 1,
        ethernet: (5.76, 5.84),
        nynet: Some((5.25, 5.32)),
    },
    SeedRow {
        nodes: 2,
        ethernet: (5.09, 4.76),
        nynet: Some((3.65, 3.34)),
    },
    SeedRow {
        nodes: 4,
        ethernet: (4.58, 4.32),
        nynet: Some((2.72, 2.43)),
    },
    SeedRow {
        nodes: 8,
        ethernet: (3.91, 3.47),
        nynet: None,
    },
];

pub use crate::figures::improvement;
use crate::figures::{millis, spread};

/// One round: every set transformed once by one configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    /// From the first input sent to the last result received, at the host.
    pub elapsed: Duration,
    /// Mean over the worker threads of their time in butterflies.
    pub compute: Duration,
    /// Mean over the worker threads of the rest of their round: receiving
    /// input, exchanging, sending results, and waiting for any of these.
    pub communication: Duration,
}

/// The timed rounds of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Worker threads per node.
    pub threads: u32,
    /// Its timed rounds, in order.
    pub rounds: Vec<Round>,
}

impl Measured {
    /// Median, least and greatest of a round's figure, in milliseconds.
    pub fn millis(&self, figure: impl Fn(&Round) -> Duration) -> (f64, f64, f64) {
        spread(self.rounds.iter().map(|r| millis(figure(r))).collect())
    }
}

/// What the host measured and verified.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Points M of a set.
    pub points: usize,
    /// Sets transformed in a round.
    pub sets: usize,
    /// Nodes of the job.
    pub nodes: u32,
    /// One thread per node first, then the threaded configuration if any.
    pub configurations: Vec<Measured>,
    /// Largest difference from rustfft over every set of every round.
    pub max_error: f64,
}

impl Report {
    /// The % improvement of the threaded configuration's median elapsed
    /// time over one thread per node's, if both ran.
    pub fn improvement(&self) -> Option<f64> {
        match self.configurations.as_slice() {
            [serial, threaded, ..] => Some(improvement(
                serial.millis(|r| r.elapsed).0,
                threaded.millis(|r| r.elapsed).0,
            )),
            _ => None,
        }
    }
}

/// ```text
/// fft 512 points x 8 sets on 4 nodes: verified against rustfft (max error 8.9e-16); medians of 5 rounds (min-max), ms
///  threads/node  workers  elapsed             compute/thread      communication/thread
///             1        4  1.203 (1.1-1.4)     ...
///             2        8  ...
/// 2 threads/node vs 1: 12.3% improvement
/// NCS Table 3, 4 nodes, 512 x 8, s: Ethernet p4 4.58, NCS_MTS/p4 4.32 (5.7%); NYNET p4 2.72, NCS_MTS/p4 2.43 (10.7%)
/// ```
impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rounds = self.configurations.first().map_or(0, |c| c.rounds.len());
        writeln!(
            f,
            "fft {} points x {} sets on {} nodes: verified against rustfft (max error {:.1e}); medians of {rounds} rounds (min-max), ms",
            self.points, self.sets, self.nodes, self.max_error
        )?;
        writeln!(
            f,
            "{:>13} {:>8}  {:<26} {:<26} communication/thread",
            "threads/node", "workers", "elapsed", "compute/thread"
        )?;
        let cell = |(median, min, max): (f64, f64, f64)| format!("{median:.3} ({min:.3}-{max:.3})");
        for c in &self.configurations {
            writeln!(
                f,
                "{:>13} {:>8}  {:<26} {:<26} {}",
                c.threads,
                c.threads * self.nodes,
                cell(c.millis(|r| r.elapsed)),
                cell(c.millis(|r| r.compute)),
                cell(c.millis(|r| r.communication)),
            )?;
        }
        if let (Some(gain), Some(threaded)) = (self.improvement(), self.configurations.get(1)) {
            writeln!(
                f,
                "{} threads/node vs 1: {gain:.1}% improvement",
                threaded.threads
            )?;
        }
        match NCS_TABLE_3.iter().find(|r| r.nodes == self.nodes) {
            Some(row) => {
                let (p4, ncs) = row.ethernet;
                write!(
                    f,
                    "NCS Table 3, {} nodes, 512 x 8, s: Ethernet p4 {p4}, NCS_MTS/p4 {ncs} ({:.1}%)",
                    row.nodes,
                    improvement(p4, ncs)
                )?;
                match row.nynet {
                    Some((p4, ncs)) => write!(
                        f,
                        "; NYNET p4 {p4}, NCS_MTS/p4 {ncs} ({:.1}%)",
                        improvement(p4, ncs)
                    ),
                    None => write!(f, "; NYNET not measured"),
                }
            }
            None => write!(
                f,
                "NCS Table 3 has no row for {} nodes (1, 2, 4, 8)",
                self.nodes
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_improvement_column_is_recomputed() {
        let pct = |(p4, ncs)| (improvement(p4, ncs) * 100.0).round() / 100.0;
        let ethernet: Vec<f64> = NCS_TABLE_3[1..].iter().map(|r| pct(r.ethernet)).collect();
        assert_eq!(ethernet, [6.48, 5.68, 11.25]);
        assert_eq!(pct(NCS_TABLE_3[2].nynet.unwrap()), 10.66);
    }

    #[test]
    fn the_report_prints_the_improvement_and_the_seeds_row() {
        let round = |ms| Round {
            elapsed: Duration::from_millis(ms),
            compute: Duration::from_millis(ms / 2),
            communication: Duration::from_millis(ms / 2),
        };
        let report = Report {
            points: 512,
            sets: 8,
            nodes: 4,
            configurations: vec![
                Measured {
                    threads: 1,
                    rounds: vec![round(10), round(12)],
                },
                Measured {
                    threads: 2,
                    rounds: vec![round(9), round(9)],
                },
            ],
            max_error: 1e-15,
        };
        let text = report.to_string();
        assert!(
            text.contains("2 threads/node vs 1: 18.2% improvement"),
            "{text}"
        );
        assert!(
            text.contains("Ethernet p4 4.58, NCS_MTS/p4 4.32 (5.7%)"),
            "{text}"
        );
    }
}
