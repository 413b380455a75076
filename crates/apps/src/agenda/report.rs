//! What the master measured and verified, and the tables it prints.

use crate::matmul::Kernel;
use std::time::Duration;

/// How some computing threads spent a round, on average.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Split {
    /// Mean time of a thread in the kernel.
    pub compute: Duration,
    /// Mean time of a thread in the rest of its round: for a slave,
    /// asking for tasks, sending results and waiting for either; for the
    /// master, taking tasks and storing rows. Both include waiting for a
    /// core.
    pub communication: Duration,
}

/// One timed round of one combination.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    /// From the start barrier to the end barrier, at the master: handing
    /// out A, computing, collecting C.
    pub elapsed: Duration,
    /// The master's computing threads.
    pub master: Split,
    /// The slaves' computing threads; `None` on one node.
    pub slaves: Option<Split>,
}

/// The timed rounds of one granularity and concurrency.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Rows of A in a task.
    pub granularity: usize,
    /// Computing threads per node.
    pub concurrency: u32,
    /// Its timed rounds, in order.
    pub rounds: Vec<Round>,
}

impl Measured {
    /// Median, least and greatest of a round's figure, in milliseconds.
    pub fn millis(&self, figure: impl Fn(&Round) -> Duration) -> (f64, f64, f64) {
        spread(self.rounds.iter().map(|r| millis(figure(r))).collect())
    }

    /// The median of a round's figure where there is one, in milliseconds.
    fn median_of(&self, figure: impl Fn(&Round) -> Option<Duration>) -> Option<f64> {
        let values: Vec<f64> = self.rounds.iter().filter_map(&figure).map(millis).collect();
        (!values.is_empty()).then(|| spread(values).0)
    }

    /// The median elapsed time, in milliseconds.
    pub fn median(&self) -> f64 {
        self.millis(|r| r.elapsed).0
    }
}

/// One size: the serial baseline and every combination of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeReport {
    /// Matrices are `size × size`.
    pub size: usize,
    /// The kernel on the whole product, one node, one thread.
    pub serial: Vec<Duration>,
    /// Every granularity × concurrency, granularity major.
    pub measured: Vec<Measured>,
    /// Largest difference from blas's product over every round.
    pub max_error: f64,
}

impl SizeReport {
    /// Median, least and greatest serial time, in milliseconds.
    pub fn serial_millis(&self) -> (f64, f64, f64) {
        spread(self.serial.iter().copied().map(millis).collect())
    }

    /// The combination of least median time.
    pub fn best(&self) -> Option<&Measured> {
        self.measured
            .iter()
            .filter(|m| !m.rounds.is_empty())
            .min_by(|a, b| a.median().total_cmp(&b.median()))
    }

    /// The serial median time over `m`'s.
    pub fn speedup(&self, m: &Measured) -> f64 {
        self.serial_millis().0 / m.median()
    }

    /// At the best combination's granularity: the fastest concurrency
    /// above 1, concurrency 1, and the % improvement of the first over
    /// the second — threaded against serial where communication matters.
    pub fn threaded_vs_serial(&self) -> Option<(&Measured, &Measured, f64)> {
        let granularity = self.best()?.granularity;
        let at = |m: &&Measured| m.granularity == granularity && !m.rounds.is_empty();
        let serial = self
            .measured
            .iter()
            .filter(at)
            .find(|m| m.concurrency == 1)?;
        let threaded = self
            .measured
            .iter()
            .filter(at)
            .filter(|m| m.concurrency > 1)
            .min_by(|a, b| a.median().total_cmp(&b.median()))?;
        let gain = improvement(serial.median(), threaded.median());
        Some((threaded, serial, gain))
    }
}

/// What the master measured and verified.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Nodes of the job.
    pub nodes: u32,
    /// Who multiplied.
    pub kernel: Kernel,
    /// Timed rounds of each combination.
    pub rounds: usize,
    /// One report per size, in the order asked.
    pub sizes: Vec<SizeReport>,
}

pub use crate::figures::improvement;
use crate::figures::{millis, spread};

/// ```text
/// agenda-matmul on 4 nodes (node 0 the master, computing too), kernel blas: medians of 3 rounds (min-max), ms
///
/// size 256: C verified against blas's product in every round (max error 1.2e-14); serial (one node, one thread) 10.120 (10.010-10.300)
///   granularity  concurrency  elapsed                   slave: compute / comm   master: compute / rest  speedup
///             1            1  ...
/// *          16            2  3.213 (3.100-3.500)       0.980 / 0.041           1.100 / 0.002           3.15x
/// best: granularity 16, concurrency 2, 3.213 ms, speedup 3.15x over serial
/// concurrency 2 vs 1 at granularity 16: 12.3% improvement
///
/// SCALE (1998) Figs 16-17 chart the best combination's speedup and time per size; they give no numbers to print beside these.
/// ```
impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "agenda-matmul on {} node{} (node 0 the master, computing too), kernel {}: medians of {} round{} (min-max), ms",
            self.nodes,
            if self.nodes == 1 { "" } else { "s" },
            self.kernel,
            self.rounds,
            if self.rounds == 1 { "" } else { "s" },
        )?;
        let cell = |(median, min, max): (f64, f64, f64)| format!("{median:.3} ({min:.3}-{max:.3})");
        for size in &self.sizes {
            writeln!(f)?;
            writeln!(
                f,
                "size {}: C verified against blas's product in every round (max error {:.1e}); serial (one node, one thread) {}",
                size.size,
                size.max_error,
                cell(size.serial_millis())
            )?;
            writeln!(
                f,
                "  {:>11}  {:>11}  {:<26}{:<24}{:<24}speedup",
                "granularity",
                "concurrency",
                "elapsed",
                "slave: compute / comm",
                "master: compute / rest"
            )?;
            let best = size.best();
            for m in &size.measured {
                let mark = match best.is_some_and(|b| std::ptr::eq(b, m)) {
                    true => '*',
                    false => ' ',
                };
                let split = |of: fn(&Round) -> Option<Split>| {
                    let compute = m.median_of(|r| of(r).map(|s| s.compute));
                    let communication = m.median_of(|r| of(r).map(|s| s.communication));
                    match (compute, communication) {
                        (Some(compute), Some(communication)) => {
                            format!("{compute:.3} / {communication:.3}")
                        }
                        _ => "-".into(),
                    }
                };
                writeln!(
                    f,
                    "{mark} {:>11}  {:>11}  {:<26}{:<24}{:<24}{:.2}x",
                    m.granularity,
                    m.concurrency,
                    cell(m.millis(|r| r.elapsed)),
                    split(|r| r.slaves),
                    split(|r| Some(r.master)),
                    size.speedup(m)
                )?;
            }
            if let Some(b) = best {
                writeln!(
                    f,
                    "best: granularity {}, concurrency {}, {:.3} ms, speedup {:.2}x over serial",
                    b.granularity,
                    b.concurrency,
                    b.median(),
                    size.speedup(b)
                )?;
            }
            if let Some((threaded, serial, gain)) = size.threaded_vs_serial() {
                writeln!(
                    f,
                    "concurrency {} vs {} at granularity {}: {gain:.1}% improvement",
                    threaded.concurrency, serial.concurrency, serial.granularity
                )?;
            }
        }
        writeln!(f)?;
        write!(
            f,
            "SCALE (1998) Figs 16-17 chart the best combination's speedup and time per size; they give no numbers to print beside these."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(granularity: usize, concurrency: u32, ms: &[u64]) -> Measured {
        Measured {
            granularity,
            concurrency,
            rounds: ms
                .iter()
                .map(|&ms| Round {
                    elapsed: Duration::from_millis(ms),
                    master: Split {
                        compute: Duration::from_millis(ms / 2),
                        communication: Duration::ZERO,
                    },
                    slaves: Some(Split {
                        compute: Duration::from_millis(ms / 4),
                        communication: Duration::from_millis(ms / 2),
                    }),
                })
                .collect(),
        }
    }

    fn size() -> SizeReport {
        SizeReport {
            size: 100,
            serial: vec![Duration::from_millis(40); 3],
            measured: vec![
                measured(1, 1, &[30, 31, 29]),
                measured(1, 2, &[25, 26, 27]),
                measured(4, 1, &[20, 21, 22]),
                measured(4, 2, &[16, 15, 14]),
                measured(4, 4, &[18, 18, 18]),
            ],
            max_error: 1e-14,
        }
    }

    #[test]
    fn the_best_combination_its_speedup_and_the_threads_improvement() {
        let size = size();
        let best = size.best().unwrap();
        assert_eq!((best.granularity, best.concurrency), (4, 2));
        assert_eq!(size.speedup(best), 40.0 / 15.0);
        let (threaded, serial, gain) = size.threaded_vs_serial().unwrap();
        assert_eq!((threaded.concurrency, serial.concurrency), (2, 1));
        assert_eq!(gain, improvement(21.0, 15.0));
    }

    #[test]
    fn the_table_marks_the_best_and_says_the_seed_has_only_charts() {
        let report = Report {
            nodes: 4,
            kernel: Kernel::Blas,
            rounds: 3,
            sizes: vec![size()],
        };
        let text = report.to_string();
        assert!(
            text.contains(
                "elapsed                   slave: compute / comm   master: compute / rest  speedup"
            ),
            "{text}"
        );
        let marked: Vec<&str> = text.lines().filter(|l| l.starts_with('*')).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(marked[0].contains("15.000 (14.000-16.000)"), "{text}");
        assert!(marked[0].contains("3.000 / 7.000"), "{text}");
        assert!(marked[0].contains("7.000 / 0.000"), "{text}");
        assert!(marked[0].ends_with("2.67x"), "{text}");
        assert!(
            text.contains(
                "best: granularity 4, concurrency 2, 15.000 ms, speedup 2.67x over serial"
            ),
            "{text}"
        );
        assert!(
            text.contains("concurrency 2 vs 1 at granularity 4: 28.6% improvement"),
            "{text}"
        );
        assert!(text.contains("give no numbers"), "{text}");
    }
}
