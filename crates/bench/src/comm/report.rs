//! The report of `bench comm`: one row per path, one column per size,
//! with the 1998 figures under the paths they compare with.

use super::{reference_1998_label, reference_1998_ms, Cell, Measured, Path, Report, Row, SIZES};
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;

/// `--json`: the repetitions asked for, then per path its `cells`, per size
/// measured the one-way ns, median, min and max, the repetitions they are
/// of and the 1998 figure of the same kind (`reference_1998_ns`); a path
/// without figures has no cells and says why in `missing` (null
/// otherwise).
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    repetitions: u32,
    seconds_per_size: Figure,
    rows: Vec<JsonRow<'a>>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    path: String,
    missing: Option<&'a str>,
    cells: Vec<JsonCell>,
}

#[derive(Serialize)]
struct JsonCell {
    size: usize,
    median_ns: u64,
    min_ns: u64,
    max_ns: u64,
    repetitions: u32,
    reference_1998_ns: Figure,
}

/// `--csv`: a line per path and size measured; a path without figures is
/// one line with only the path and, last, why it is `missing`.
pub const CSV_HEADER: [&str; 8] = [
    "path",
    "size",
    "median_ns",
    "min_ns",
    "max_ns",
    "repetitions",
    "reference_1998_ns",
    "missing",
];

#[derive(Serialize)]
struct CsvRow<'a> {
    path: String,
    size: Option<usize>,
    median_ns: Option<u64>,
    min_ns: Option<u64>,
    max_ns: Option<u64>,
    repetitions: Option<u32>,
    reference_1998_ns: Figure,
    missing: Option<&'a str>,
}

/// A row's cells, or none and why.
fn cells(row: &Row) -> (&[Cell], Option<&str>) {
    match &row.measured {
        Measured::Cells(cells) => (cells, None),
        Measured::Missing(why) => (&[], Some(why)),
    }
}

/// The 1998 figure of `path` at `size` in whole nanoseconds, if any.
fn reference_ns(path: Path, size: usize) -> Figure {
    Figure::of(reference_1998_ms(path, size).map(|ms| (ms * 1e6).round()))
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

impl crate::report::Report for Report {
    /// One row per path, one column per size, one-way ms; the 1998 figures
    /// in a row under the path they compare with.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        let heading = |size: usize| match size {
            1_000_000.. => format!("{} MB", size / 1_000_000),
            1000.. => format!("{} KB", size / 1000),
            _ => format!("{size} B"),
        };
        writeln!(
            out,
            "one-way ping-pong time in ms (half a round trip), median (min–max) of {} repetitions",
            self.repetitions
        )?;
        writeln!(
            out,
            "thread: two fibers of one node; shm: two nodes of one host, shared memory; \
             tcp/LINK: two emulated hosts joined by LINK, TCP"
        )?;
        write!(out, "{:<16}", "path")?;
        for size in SIZES {
            write!(out, " {:>29}", heading(size))?;
        }
        writeln!(out)?;
        let mut fewer = Vec::new();
        for row in &self.rows {
            let name = row.path.name();
            match &row.measured {
                Measured::Cells(cells) => {
                    write!(out, "{name:<16}")?;
                    for size in SIZES {
                        match cells.iter().find(|c| c.sample.size == size) {
                            Some(c) => {
                                let ms = |d: Duration| three_figures(d.as_secs_f64() * 1e3);
                                let s = &c.sample;
                                let cell =
                                    format!("{} ({}–{})", ms(s.one_way), ms(s.min), ms(s.max));
                                write!(out, " {cell:>29}")?;
                                if c.repetitions < self.repetitions {
                                    fewer.push(format!(
                                        "{name} {}: {}",
                                        heading(size),
                                        c.repetitions
                                    ));
                                }
                            }
                            None => write!(out, " {:>29}", "–")?,
                        }
                    }
                    writeln!(out)?;
                }
                Measured::Missing(why) => writeln!(out, "{name:<16} missing: {why}")?,
            }
            if let Some(label) = reference_1998_label(row.path) {
                write!(out, "{label:<16}")?;
                for size in SIZES {
                    let figure = reference_1998_ms(row.path, size)
                        .map_or_else(|| "–".to_string(), three_figures);
                    write!(out, " {figure:>29}")?;
                }
                writeln!(out)?;
            }
        }
        if !fewer.is_empty() {
            writeln!(
                out,
                "fewer repetitions, to fit {:.1} s per size at the link's rate: {}",
                self.per_size.as_secs_f64(),
                fewer.join(", ")
            )?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "comm",
            repetitions: self.repetitions,
            seconds_per_size: Figure(self.per_size.as_secs_f64()),
            rows: self
                .rows
                .iter()
                .map(|row| {
                    let (cells, missing) = cells(row);
                    JsonRow {
                        path: row.path.name(),
                        missing,
                        cells: cells
                            .iter()
                            .map(|c| JsonCell {
                                size: c.sample.size,
                                median_ns: nanos(c.sample.one_way),
                                min_ns: nanos(c.sample.min),
                                max_ns: nanos(c.sample.max),
                                repetitions: c.repetitions,
                                reference_1998_ns: reference_ns(row.path, c.sample.size),
                            })
                            .collect(),
                    }
                })
                .collect(),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut lines = Vec::new();
        for row in &self.rows {
            let (cells, missing) = cells(row);
            if let Some(why) = missing {
                lines.push(CsvRow {
                    path: row.path.name(),
                    size: None,
                    median_ns: None,
                    min_ns: None,
                    max_ns: None,
                    repetitions: None,
                    reference_1998_ns: Figure(f64::NAN),
                    missing: Some(why),
                });
            }
            for c in cells {
                lines.push(CsvRow {
                    path: row.path.name(),
                    size: Some(c.sample.size),
                    median_ns: Some(nanos(c.sample.one_way)),
                    min_ns: Some(nanos(c.sample.min)),
                    max_ns: Some(nanos(c.sample.max)),
                    repetitions: Some(c.repetitions),
                    reference_1998_ns: reference_ns(row.path, c.sample.size),
                    missing: None,
                });
            }
        }
        write_csv(out, &CSV_HEADER, lines)
    }
}
