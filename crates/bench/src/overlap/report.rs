//! The report of `bench overlap`: per ratio, the serial sum and the ideal
//! overlap beside each mode's time, and the threaded modes' gain over
//! `serial` (the seeds' "% improvement": (serial − mode) ÷ serial).

use super::{Mode, Sample};
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};

/// The result of `bench overlap`, with the options that shape its heading.
#[derive(Clone, Debug)]
pub struct Report {
    /// Bytes per block.
    pub block: usize,
    /// Blocks per run.
    pub blocks: u32,
    /// Timed runs per cell.
    pub repetitions: u32,
    /// The emulated link, if any.
    pub link: Option<String>,
    /// The comm-only run first, then one per ratio and mode.
    pub samples: Vec<Sample>,
}

/// One row of the table, JSON or CSV.
#[derive(Serialize)]
struct Row {
    ratio: f64,
    mode: &'static str,
    median_ms: Figure,
    min_ms: Figure,
    max_ms: Figure,
    compute_ms: Figure,
    comm_ms: Figure,
    serial_sum_ms: Figure,
    ideal_ms: Figure,
    improvement_percent: Figure,
}

impl Report {
    fn comm_ms(&self) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s.mode.is_none())
            .map(|s| s.total.median)
    }

    fn rows(&self) -> Vec<Row> {
        let comm = self.comm_ms();
        let serial_at = |ratio: f64| {
            self.samples
                .iter()
                .find(|s| s.mode == Some(Mode::Serial) && s.ratio == ratio)
                .map(|s| s.total.median)
        };
        self.samples
            .iter()
            .map(|s| {
                let (sum, ideal) = match (s.mode, comm) {
                    (Some(_), Some(c)) => (Some(c + s.compute_ms), Some(c.max(s.compute_ms))),
                    _ => (None, None),
                };
                let improvement = match (s.mode, serial_at(s.ratio)) {
                    (Some(Mode::Serial) | None, _) | (_, None) => None,
                    (Some(_), Some(serial)) => Some((serial - s.total.median) / serial * 100.0),
                };
                Row {
                    ratio: s.ratio,
                    mode: s.mode.map_or("comm only", Mode::name),
                    median_ms: Figure(s.total.median),
                    min_ms: Figure(s.total.min),
                    max_ms: Figure(s.total.max),
                    compute_ms: Figure(s.compute_ms),
                    comm_ms: Figure::of(comm),
                    serial_sum_ms: Figure::of(sum),
                    ideal_ms: Figure::of(ideal),
                    improvement_percent: Figure::of(improvement),
                }
            })
            .collect()
    }
}

/// `x` to three figures, or `–` when missing.
fn cell(x: Figure) -> String {
    match x.0.is_finite() {
        true => three_figures(x.0),
        false => "–".to_string(),
    }
}

impl crate::report::Report for Report {
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        let link = self.link.as_deref().unwrap_or("none (one host)");
        writeln!(
            out,
            "n0 streams {} blocks of {} B to n1, which computes on each for ratio × the \
             communication time per block; ms from the first send until n1 is done, median \
             (min–max) of {} runs; link: {link}",
            self.blocks,
            self.block,
            self.repetitions.max(1)
        )?;
        writeln!(
            out,
            "{:>5} {:<9} {:>24} {:>10} {:>10} {:>10} {:>10} {:>9}",
            "ratio", "mode", "ms (min–max)", "compute", "comm", "sum", "ideal", "improved"
        )?;
        for r in self.rows() {
            let improved = match r.improvement_percent.0.is_finite() {
                true => format!("{:.0}%", r.improvement_percent.0),
                false => "–".to_string(),
            };
            writeln!(
                out,
                "{:>5} {:<9} {:>24} {:>10} {:>10} {:>10} {:>10} {:>9}",
                r.ratio,
                r.mode,
                format!(
                    "{} ({}–{})",
                    cell(r.median_ms),
                    cell(r.min_ms),
                    cell(r.max_ms)
                ),
                cell(r.compute_ms),
                cell(r.comm_ms),
                cell(r.serial_sum_ms),
                cell(r.ideal_ms),
                improved
            )?;
        }
        writeln!(
            out,
            "sum = comm + compute (no overlap), ideal = the larger (full overlap); improved = \
             (serial − mode) ÷ serial at the ratio"
        )
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        #[derive(Serialize)]
        struct Document<'a> {
            benchmark: &'static str,
            block: usize,
            blocks: u32,
            repetitions: u32,
            link: Option<&'a str>,
            rows: Vec<Row>,
        }
        write_json(
            out,
            &Document {
                benchmark: "overlap",
                block: self.block,
                blocks: self.blocks,
                repetitions: self.repetitions,
                link: self.link.as_deref(),
                rows: self.rows(),
            },
        )
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        write_csv(
            out,
            &[
                "ratio",
                "mode",
                "median_ms",
                "min_ms",
                "max_ms",
                "compute_ms",
                "comm_ms",
                "serial_sum_ms",
                "ideal_ms",
                "improvement_percent",
            ],
            self.rows(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overlap::Spread;
    use crate::report::Report as _;

    fn sample(mode: Option<Mode>, ratio: f64, ms: f64, compute_ms: f64) -> Sample {
        Sample {
            mode,
            ratio,
            total: Spread {
                median: ms,
                min: ms,
                max: ms,
            },
            compute_ms,
        }
    }

    #[test]
    fn the_gain_is_over_serial_at_the_same_ratio() {
        let report = Report {
            block: 1000,
            blocks: 4,
            repetitions: 1,
            link: None,
            samples: vec![
                sample(None, 0.0, 10.0, 0.0),
                sample(Some(Mode::Serial), 1.0, 20.0, 10.0),
                sample(Some(Mode::Fiber), 1.0, 12.0, 10.0),
            ],
        };
        let rows = report.rows();
        assert_eq!(rows[2].serial_sum_ms, Figure(20.0));
        assert_eq!(rows[2].ideal_ms, Figure(10.0));
        assert_eq!(rows[2].improvement_percent, Figure(40.0));
        assert!(!rows[1].improvement_percent.0.is_finite());
        let mut out = Vec::new();
        report.table(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("fiber") && text.contains("40%"), "{text}");
        let mut csv = Vec::new();
        report.csv(&mut csv).unwrap();
        assert_eq!(String::from_utf8(csv).unwrap().lines().count(), 4);
    }
}
