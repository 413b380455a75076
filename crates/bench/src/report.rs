//! One [`Report`] trait for every benchmark's result: a table for people,
//! and `--json` / `--csv` for programs, into any [`Write`].
//!
//! Units are in the names: one-way times and times per operation in
//! nanoseconds (`_ns`), start-up times in milliseconds (`_ms`), bandwidth
//! in MB/s (10^6 bytes per second, `_mbps`), sizes in bytes; rates in
//! messages per second over all threads; `bench floors` mixes times and
//! bandwidths, so each row names its `unit`. A figure that could not be
//! read or does not exist (no fit below two sizes, no r∞ for a falling
//! line, no 1998 figure) is `null` in JSON and an empty field in CSV
//! ([`Figure`]). The CSV has one header line and one line per row; the
//! pingpong fit and the threads idle cost are in the JSON only, as a CSV
//! holds one table.
//!
//! JSON and CSV are written by `serde` (`serde_json`, `csv`) from each
//! report's own serializable rows. The JSON keeps the layout the command
//! has always printed ([`JsonLayout`]): one member of the document per
//! line, one array element per line, each element on a line of its own;
//! numbers as Rust prints them (`312`, `0.25`).

use serde::{Serialize, Serializer};
use std::io::{self, Write};

/// How a report is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// The table, for people.
    #[default]
    Table,
    /// One JSON document.
    Json,
    /// A header line and one line per row.
    Csv,
}

/// A benchmark's result, writable in every [`Format`].
pub trait Report {
    /// The table, as the command prints it.
    fn table(&self, out: &mut dyn Write) -> io::Result<()>;

    /// One JSON document (module docs), ending in a newline.
    fn json(&self, out: &mut dyn Write) -> io::Result<()>;

    /// The CSV (module docs): a header line and one line per row.
    fn csv(&self, out: &mut dyn Write) -> io::Result<()>;

    /// Writes the report in `format`.
    fn write(&self, format: Format, out: &mut dyn Write) -> io::Result<()> {
        match format {
            Format::Table => self.table(out),
            Format::Json => self.json(out),
            Format::Csv => self.csv(out),
        }
    }
}

/// A figure of a report: `null` in JSON and empty in CSV when it is NaN or
/// infinite (not measured, does not exist), a whole number when it is one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figure(pub f64);

impl Figure {
    /// `x`, or a missing figure.
    pub fn of(x: Option<f64>) -> Figure {
        Figure(x.unwrap_or(f64::NAN))
    }
}

impl Serialize for Figure {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        // Whole numbers as integers, as `{x}` prints them (`312`, not
        // `312.0`), below 2^53 where an f64 holds every integer.
        if !x.is_finite() {
            serializer.serialize_none()
        } else if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
            serializer.serialize_i64(x as i64)
        } else {
            serializer.serialize_f64(x)
        }
    }
}

/// Writes `document` as JSON in the command's layout, and a newline.
pub fn write_json(out: &mut dyn Write, document: &impl Serialize) -> io::Result<()> {
    let mut serializer = serde_json::Serializer::with_formatter(&mut *out, JsonLayout::default());
    document
        .serialize(&mut serializer)
        .map_err(io::Error::from)?;
    writeln!(out)
}

/// Writes `header`, then each of `rows` serialized as a CSV record (their
/// fields in order, missing ones empty).
pub fn write_csv<R: Serialize>(
    out: &mut dyn Write,
    header: &[&str],
    rows: impl IntoIterator<Item = R>,
) -> io::Result<()> {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(&mut *out);
    writer.write_record(header).map_err(csv_error)?;
    for row in rows {
        writer.serialize(row).map_err(csv_error)?;
    }
    writer.flush()
}

fn csv_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::new(io::ErrorKind::InvalidData, format!("{other:?}")),
    }
}

/// The JSON layout of the command's documents: the outermost object one
/// member per line, every array one element per line (also when empty,
/// `[` and `]` then stand on two lines), every other object on one line
/// with `", "` and `": "` between its members; floats as Rust's `{}`
/// prints them.
#[derive(Default)]
pub struct JsonLayout {
    /// One entry per open array or object: whether it is laid out one
    /// element per line, and the indent of the line it was opened on.
    open: Vec<(bool, usize)>,
    /// The indent of the current line.
    indent: usize,
}

impl JsonLayout {
    fn new_line<W: ?Sized + Write>(&mut self, writer: &mut W, indent: usize) -> io::Result<()> {
        self.indent = indent;
        write!(writer, "\n{:indent$}", "")
    }

    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &str) -> io::Result<()> {
        let (lines, indent) = self.open.pop().unwrap_or((false, 0));
        if lines {
            self.new_line(writer, indent)?;
        }
        writer.write_all(bracket.as_bytes())
    }
}

impl serde_json::ser::Formatter for JsonLayout {
    fn write_f64<W: ?Sized + Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        write!(writer, "{value}")
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open.push((true, self.indent));
        writer.write_all(b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, "]")
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if !first {
            writer.write_all(b",")?;
        }
        let indent = self.open.last().map_or(0, |&(_, i)| i) + 2;
        self.new_line(writer, indent)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open.push((self.open.is_empty(), self.indent));
        writer.write_all(b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, "}")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        let (lines, indent) = self.open.last().copied().unwrap_or((false, 0));
        match (lines, first) {
            (true, true) => self.new_line(writer, indent + 2),
            (true, false) => {
                writer.write_all(b",")?;
                self.new_line(writer, indent + 2)
            }
            (false, true) => Ok(()),
            (false, false) => writer.write_all(b", "),
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        Ok(())
    }
}

/// A positive figure to three significant digits, so that a microsecond
/// shows in milliseconds as 0.00123 rather than as zero.
pub fn three_figures(x: f64) -> String {
    let decimals = if x > 0.0 && x.is_finite() {
        (2.0 - x.log10().floor()).clamp(0.0, 9.0) as usize
    } else {
        2
    };
    format!("{x:.decimals$}")
}

/// Writes `rows` as aligned columns, the first row the header: the first
/// column left-aligned, the others right-aligned, two spaces between;
/// each column as wide as its widest cell (counted in characters, so that
/// `–`, `×` and `≈` take one). A short row leaves its last columns empty.
pub fn write_grid(out: &mut dyn Write, rows: &[Vec<String>]) -> io::Result<()> {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let n = cell.chars().count();
            match widths.get_mut(i) {
                Some(w) => *w = (*w).max(n),
                None => widths.push(n),
            }
        }
    }
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let width = widths[i];
            match i {
                0 => line.push_str(&format!("{cell:<width$}")),
                _ => line.push_str(&format!("  {cell:>width$}")),
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// MB/s in a table: tenths from 100 up, else three significant digits, so
/// that 8 B in 187 µs shows as 0.0427 rather than as zero.
pub fn mbps(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.1}")
    } else {
        three_figures(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(value: &impl Serialize) -> String {
        let mut out = Vec::new();
        write_json(&mut out, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn grids_align_their_columns_by_characters() {
        let rows = vec![
            vec!["path".to_string(), "1 KB".to_string(), "t0".to_string()],
            vec![
                "tcp/atm155".to_string(),
                "–".to_string(),
                "12.5".to_string(),
            ],
            vec!["1998 ≈".to_string(), "1.10".to_string()],
        ];
        let mut out = Vec::new();
        write_grid(&mut out, &rows).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "path        1 KB    t0\n\
             tcp/atm155     –  12.5\n\
             1998 ≈      1.10\n"
        );
    }

    #[test]
    fn figures_json_lacks_are_null_and_whole_ones_integers() {
        assert_eq!(json(&Figure(312.0)), "312\n");
        assert_eq!(json(&Figure(0.25)), "0.25\n");
        assert_eq!(json(&Figure(0.0000125)), "0.0000125\n");
        assert_eq!(json(&Figure(f64::NAN)), "null\n");
        assert_eq!(json(&Figure(f64::INFINITY)), "null\n");
        let mut out = Vec::new();
        write_csv(
            &mut out,
            &["a", "b", "c"],
            [(Figure(f64::NAN), Figure(2.0), 0.5)],
        )
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "a,b,c\n,2,0.5\n");
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(json(&"a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"\n");
        let mut out = Vec::new();
        write_csv(&mut out, &["x", "y"], [("tcp", "a,\"b\"")]).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "x,y\ntcp,\"a,\"\"b\"\"\"\n"
        );
    }

    #[derive(Serialize)]
    struct Inner {
        median: f64,
        min: Option<u32>,
    }

    #[derive(Serialize)]
    struct Row {
        path: &'static str,
        cells: Vec<Inner>,
    }

    #[derive(Serialize)]
    struct Document {
        benchmark: &'static str,
        rows: Vec<Row>,
        empty: Vec<u32>,
        idle: Inner,
    }

    #[test]
    fn the_layout_is_the_commands() {
        let document = Document {
            benchmark: "x",
            rows: vec![
                Row {
                    path: "shm",
                    cells: vec![
                        Inner {
                            median: 1.5,
                            min: None,
                        },
                        Inner {
                            median: 2.0,
                            min: Some(1),
                        },
                    ],
                },
                Row {
                    path: "tcp",
                    cells: vec![],
                },
            ],
            empty: vec![],
            idle: Inner {
                median: 3.0,
                min: Some(2),
            },
        };
        assert_eq!(
            json(&document),
            "{\n  \"benchmark\": \"x\",\n  \"rows\": [\n    {\"path\": \"shm\", \"cells\": [\n      \
             {\"median\": 1.5, \"min\": null},\n      {\"median\": 2, \"min\": 1}\n    ]},\n    \
             {\"path\": \"tcp\", \"cells\": [\n    ]}\n  ],\n  \"empty\": [\n  ],\n  \
             \"idle\": {\"median\": 3, \"min\": 2}\n}\n"
        );
    }
}
