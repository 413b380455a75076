//! The report of `bench floors`: one row per floor, in its unit.

use super::{Figures, Measured, Report, Row, Unit};
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};

/// `--json`: per floor its `unit` (`ns` one-way, or `MB/s`), median, min
/// and max over the repetitions, the iterations per repetition, why it is
/// `missing` (null when measured) and its `note`.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    repetitions: u32,
    ms_per_repetition: Figure,
    rows: Vec<FloorRow<'a>>,
}

/// A row of the JSON and of the CSV.
#[derive(Serialize)]
struct FloorRow<'a> {
    floor: String,
    unit: &'static str,
    median: Figure,
    min: Figure,
    max: Figure,
    iterations: Figure,
    missing: Option<&'a str>,
    note: &'a str,
}

/// `--csv`: the table's rows, times in ns.
pub const CSV_HEADER: [&str; 8] = [
    "floor",
    "unit",
    "median",
    "min",
    "max",
    "iterations",
    "missing",
    "note",
];

impl Row {
    fn serializable(&self) -> FloorRow<'_> {
        let (figures, missing) = match &self.measured {
            Measured::Figures(f) => (Some(f), None),
            Measured::Missing(why) => (None, Some(why.as_str())),
        };
        let figure = |f: fn(&Figures) -> f64| Figure::of(figures.map(f));
        FloorRow {
            floor: self.floor.name(),
            unit: self.floor.unit().symbol(),
            median: figure(|f| f.median),
            min: figure(|f| f.min),
            max: figure(|f| f.max),
            iterations: figure(|f| f.iterations as f64),
            missing,
            note: &self.note,
        }
    }
}

impl crate::report::Report for Report {
    /// One row per floor, median and min–max in the row's unit (times of a
    /// microsecond or more in µs), and how it ran.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "physical floors of this machine: median (min–max) of {} repetitions of ~{} ms, \
             after one warm-up",
            self.repetitions,
            self.per_repetition.as_millis()
        )?;
        writeln!(
            out,
            "{:<22} {:>10} {:>21}  {:<5} note",
            "floor", "median", "min–max", "unit"
        )?;
        for row in &self.rows {
            let name = row.floor.name();
            match &row.measured {
                Measured::Figures(f) => {
                    let (unit, scale) = match row.floor.unit() {
                        Unit::Nanoseconds if f.median >= 1e3 => ("µs", 1e-3),
                        unit => (unit.symbol(), 1.0),
                    };
                    writeln!(
                        out,
                        "{name:<22} {:>10} {:>21}  {unit:<5} {}",
                        three_figures(f.median * scale),
                        format!(
                            "{}–{}",
                            three_figures(f.min * scale),
                            three_figures(f.max * scale)
                        ),
                        row.note
                    )?;
                }
                Measured::Missing(why) => writeln!(
                    out,
                    "{name:<22} {:>10} {:>21}  {:<5} missing: {why}; {}",
                    "–", "–", "", row.note
                )?,
            }
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "floors",
            repetitions: self.repetitions,
            ms_per_repetition: Figure(self.per_repetition.as_secs_f64() * 1e3),
            rows: self.rows.iter().map(Row::serializable).collect(),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        write_csv(out, &CSV_HEADER, self.rows.iter().map(Row::serializable))
    }
}
