//! The report of `bench comm`: the thesis' Table 5.2, one row per path
//! and one column per size, its figures under the paths they compare
//! with; then, for the `tcp/LINK` paths, its Table 5.3 (bandwidth) and
//! Tables 5.5 and 5.6 (t0 and r_max) beside ours likewise.

use super::{
    reference_1998_ms, seed_settings, Cell, Measured, Path, Report, Row, BANDWIDTH_SIZES,
    PEAK_FROM, SIZES, STARTUP_SIZE,
};
use crate::report::{three_figures, write_csv, write_grid, write_json, Figure};
use crate::seeds::{self, Quoted};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;

/// `--json`: the repetitions asked for, then per path its `cells`, per size
/// measured the one-way ns, median, min and max, the repetitions they are
/// of and Table 5.2's figure where the path has one column of it
/// (`reference_1998_ns`); a path without figures has no cells and says why
/// in `missing` (null otherwise). Then `seeds`: every figure of the
/// thesis' Tables 5.2, 5.3, 5.5 and 5.6 beside a path of the run, with
/// ours in the same unit and ours ÷ the thesis' ([`Comparison`]).
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    repetitions: u32,
    seconds_per_size: Figure,
    rows: Vec<JsonRow<'a>>,
    seeds: Vec<Comparison>,
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
/// one line with only the path and, last, why it is `missing`. As in the
/// JSON's cells, `reference_1998_ns` is Table 5.2's figure where the path
/// has one column of it; `tcp/atm155`'s two, and Tables 5.3–5.6, are in
/// the JSON's `seeds` only, as a CSV holds one table.
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

/// Table 5.2's figure of `path` at `size` in whole nanoseconds, if any.
fn reference_ns(path: Path, size: usize) -> Figure {
    Figure::of(reference_1998_ms(path, size).map(|ms| (ms * 1e6).round()))
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

/// A column heading: `1 B`, `1 KB`, `32 KB`, `1 MB`, `5120 KB`, KB being
/// 1000 B ([`seeds::KB`]).
fn heading(size: usize) -> String {
    const MB: usize = seeds::KB * seeds::KB;
    match size {
        _ if size >= MB && size.is_multiple_of(MB) => format!("{} MB", size / MB),
        _ if size >= seeds::KB && size.is_multiple_of(seeds::KB) => {
            format!("{} KB", size / seeds::KB)
        }
        _ => format!("{size} B"),
    }
}

/// Our median one-way time at `size`, if measured.
fn one_way(cells: &[Cell], size: usize) -> Option<Duration> {
    let cell = cells.iter().find(|c| c.sample.size == size)?;
    Some(cell.sample.one_way)
}

/// Our bandwidth at `size` in Mbit/s (10^6 bit/s), if measured.
fn mbit_s(cells: &[Cell], size: usize) -> Option<f64> {
    let seconds = one_way(cells, size)?.as_secs_f64();
    Some(size as f64 * 8.0 / seconds / 1e6)
}

/// Our r_max: the highest bandwidth of Table 5.3's sizes measured from
/// [`PEAK_FROM`] up.
fn peak_mbit_s(cells: &[Cell]) -> Option<f64> {
    BANDWIDTH_SIZES
        .iter()
        .filter(|&&size| size >= PEAK_FROM)
        .filter_map(|&size| mbit_s(cells, size))
        .reduce(f64::max)
}

/// The thesis' figure, and ours ÷ it in brackets where we have ours.
fn beside(seed: Quoted, ours: Option<f64>) -> String {
    match ours {
        Some(ours) => format!("{seed} ({}×)", three_figures(ours / seed.value)),
        None => seed.to_string(),
    }
}

fn or_dash(figure: Option<f64>) -> String {
    figure.map_or_else(|| "–".to_string(), three_figures)
}

/// One figure of the thesis beside ours (`--json`'s `seeds`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The thesis' table: `5.2`, `5.3`, `5.5`, `5.6`.
    pub table: &'static str,
    /// Our path.
    pub path: String,
    /// The thesis' column (Tables 5.2, 5.3) or environment (5.5, 5.6).
    pub seed: &'static str,
    /// The message size in bytes; none for r_max, the peak over sizes.
    pub size: Option<usize>,
    /// `ms` (one way), `Mbit/s`, `us` (t0, one way).
    pub unit: &'static str,
    /// The thesis' figure.
    pub seed_figure: Figure,
    /// Ours, in the same unit, if measured.
    pub ours: Figure,
    /// Ours ÷ the thesis'.
    pub ours_over_seed: Figure,
}

impl Report {
    /// Every figure of the thesis' Tables 5.2, 5.3, 5.5 and 5.6 beside a
    /// path of this run, with ours.
    pub fn comparisons(&self) -> Vec<Comparison> {
        let mut out = Vec::new();
        for row in &self.rows {
            let cells = cells(row).0;
            let mut push = |table, seed: &'static str, size, unit, figure: Quoted, ours| {
                out.push(Comparison {
                    table,
                    path: row.path.name(),
                    seed,
                    size,
                    unit,
                    seed_figure: Figure(figure.value),
                    ours: Figure::of(ours),
                    ours_over_seed: Figure::of(ours.map(|o| o / figure.value)),
                })
            };
            for &setting in seed_settings(row.path) {
                let ms = |size| one_way(cells, size).map(|d| d.as_secs_f64() * 1e3);
                for size in SIZES {
                    if let Some(figure) = seeds::communication_ms(setting, size) {
                        push("5.2", setting.name(), Some(size), "ms", figure, ms(size));
                    }
                }
                if !self.bandwidth {
                    continue;
                }
                for size in BANDWIDTH_SIZES {
                    if let Some(figure) = seeds::bandwidth_mbit_s(setting, size) {
                        let ours = mbit_s(cells, size);
                        push("5.3", setting.name(), Some(size), "Mbit/s", figure, ours);
                    }
                }
            }
            for &setting in seed_settings(row.path) {
                let environment = setting.environment();
                if let Some(figure) = seeds::startup_latency_us(setting) {
                    let us = one_way(cells, STARTUP_SIZE).map(|d| d.as_secs_f64() * 1e6);
                    push("5.5", environment, Some(STARTUP_SIZE), "us", figure, us);
                }
                if let Some(figure) =
                    seeds::peak_throughput_mbit_s(setting).filter(|_| self.bandwidth)
                {
                    push(
                        "5.6",
                        environment,
                        None,
                        "Mbit/s",
                        figure,
                        peak_mbit_s(cells),
                    );
                }
            }
        }
        out
    }

    /// The `tcp/LINK` rows, with their cells (none if missing).
    fn link_rows(&self) -> impl Iterator<Item = (&Row, &[Cell])> {
        self.rows
            .iter()
            .filter(|r| matches!(r.path, Path::Link(_)))
            .map(|r| (r, cells(r).0))
    }

    /// Table 5.3: per link our bandwidth at its sizes, each of the
    /// thesis' columns of the same kind under it.
    fn table_5_3(&self) -> Vec<Vec<String>> {
        let mut grid = vec![std::iter::once("path".to_string())
            .chain(BANDWIDTH_SIZES.map(heading))
            .collect::<Vec<_>>()];
        for (row, cells) in self.link_rows() {
            let ours = |size| mbit_s(cells, size);
            let mut line = vec![row.path.name()];
            line.extend(BANDWIDTH_SIZES.map(|size| or_dash(ours(size))));
            grid.push(line);
            for &setting in seed_settings(row.path) {
                let mut line = vec![format!("1998 {}", setting.name())];
                line.extend(BANDWIDTH_SIZES.map(|size| {
                    seeds::bandwidth_mbit_s(setting, size)
                        .map_or_else(|| "–".to_string(), |seed| beside(seed, ours(size)))
                }));
                grid.push(line);
            }
        }
        grid
    }

    /// Tables 5.5 and 5.6: per link our t0 and r_max, the thesis'
    /// environments of the same kind under it.
    fn tables_5_5_and_5_6(&self) -> Vec<Vec<String>> {
        let mut grid = vec![vec![
            "path".to_string(),
            "t0 µs (5.5)".to_string(),
            "r_max Mbit/s (5.6)".to_string(),
        ]];
        for (row, cells) in self.link_rows() {
            let t0 = one_way(cells, STARTUP_SIZE).map(|d| d.as_secs_f64() * 1e6);
            let peak = peak_mbit_s(cells).filter(|_| self.bandwidth);
            grid.push(vec![row.path.name(), or_dash(t0), or_dash(peak)]);
            for &setting in seed_settings(row.path) {
                let seed_t0 = seeds::startup_latency_us(setting);
                let seed_peak = seeds::peak_throughput_mbit_s(setting);
                grid.push(vec![
                    format!("1998 {}", setting.environment()),
                    seed_t0.map_or_else(String::new, |s| beside(s, t0)),
                    seed_peak.map_or_else(String::new, |s| beside(s, peak)),
                ]);
            }
        }
        grid
    }

    /// Where the thesis disagrees with itself (module docs of
    /// [`seeds`]): per network of the run, Table 5.2's 1 MB as Mbit/s
    /// against Table 5.6's r_max; and ours at 1 MB.
    fn disagreement(&self) -> Option<String> {
        let mut implied = Vec::new();
        let mut peaks = Vec::new();
        let mut ours = Vec::new();
        for (row, cells) in self.link_rows() {
            let settings = seed_settings(row.path);
            for &setting in settings {
                let (Some(ms), Some(mbit), Some(peak)) = (
                    seeds::communication_ms(setting, 1_000_000),
                    seeds::megabyte_mbit_s(setting),
                    seeds::peak_throughput_mbit_s(setting),
                ) else {
                    continue;
                };
                implied.push(format!("in {ms} ms over {} is {mbit:.2}", setting.name()));
                peaks.push(peak.to_string());
            }
            if let (Some(mbit), false) = (mbit_s(cells, 1_000_000), settings.is_empty()) {
                ours.push(format!("{} {}", row.path.name(), three_figures(mbit)));
            }
        }
        if implied.is_empty() {
            return None;
        }
        let mut line = format!(
            "the thesis disagrees with itself: Table 5.2's 1 MB {} Mbit/s, where Tables 5.3 and \
             5.6 say {} (r_max); both are printed as they are",
            implied.join(", "),
            peaks.join(", ")
        );
        if !ours.is_empty() {
            line.push_str(&format!("; ours at 1 MB: {} Mbit/s", ours.join(", ")));
        }
        Some(line)
    }

    /// The thesis' Tables 5.3, 5.5 and 5.6 beside our links, if any ran.
    fn link_tables(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.link_rows().next().is_none() {
            return Ok(());
        }
        if self.bandwidth {
            writeln!(
                out,
                "\nthe thesis' Table 5.3 (1998): bandwidth in Mbit/s (10^6 bit/s), the size over \
                 the one-way time, median; 1 KB = 1000 B as in Table 5.2; ours ÷ 1998 in brackets"
            )?;
            write_grid(out, &self.table_5_3())?;
            writeln!(
                out,
                "a message that fits an emulated link's token bucket (tc tbf burst) crosses at \
                 veth speed: below {}, ours can exceed the link's rate",
                heading(PEAK_FROM)
            )?;
            if let Some(line) = self.disagreement() {
                writeln!(out, "{line}")?;
            }
        }
        writeln!(
            out,
            "\nthe thesis' Tables 5.5 and 5.6 (1998): start-up latency t0, half the round trip \
             of {STARTUP_SIZE} B, median; peak throughput r_max, the highest of Table 5.3's \
             bandwidths from {}; ours ÷ 1998 in brackets",
            heading(PEAK_FROM)
        )?;
        write_grid(out, &self.tables_5_5_and_5_6())?;
        if !self.bandwidth {
            writeln!(out, "r_max: not measured (--no-bandwidth)")?;
        }
        Ok(())
    }
}

impl crate::report::Report for Report {
    /// Table 5.2: one row per path, one column per size, one-way ms; the
    /// thesis' columns under the paths they compare with. Then Tables
    /// 5.3, 5.5 and 5.6 for the links.
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
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
        writeln!(
            out,
            "1998: the thesis' Table 5.2, pvm_send/pvm_recv between processes on two hosts \
             (Ethernet, ATM) or one (local), condition variables between threads; ours ÷ 1998 \
             in brackets"
        )?;
        write!(out, "{:<22}", "path")?;
        for size in SIZES {
            write!(out, " {:>29}", heading(size))?;
        }
        writeln!(out)?;
        let mut fewer = Vec::new();
        for row in &self.rows {
            let name = row.path.name();
            let (cells, missing) = cells(row);
            match missing {
                None => {
                    write!(out, "{name:<22}")?;
                    for size in SIZES {
                        match cells.iter().find(|c| c.sample.size == size) {
                            Some(c) => {
                                let ms = |d: Duration| three_figures(d.as_secs_f64() * 1e3);
                                let s = &c.sample;
                                let cell =
                                    format!("{} ({}–{})", ms(s.one_way), ms(s.min), ms(s.max));
                                write!(out, " {cell:>29}")?;
                            }
                            None => write!(out, " {:>29}", "–")?,
                        }
                    }
                    writeln!(out)?;
                }
                Some(why) => writeln!(out, "{name:<22} missing: {why}")?,
            }
            for c in cells.iter().filter(|c| c.repetitions < self.repetitions) {
                fewer.push(format!(
                    "{name} {}: {}",
                    heading(c.sample.size),
                    c.repetitions
                ));
            }
            for &setting in seed_settings(row.path) {
                write!(out, "{:<22}", format!("1998 {}", setting.name()))?;
                for size in SIZES {
                    let ours = one_way(cells, size).map(|d| d.as_secs_f64() * 1e3);
                    let figure = seeds::communication_ms(setting, size)
                        .map_or_else(|| "–".to_string(), |seed| beside(seed, ours));
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
        self.link_tables(out)
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
            seeds: self.comparisons(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pingpong::Sample;
    use crate::report::Report as _;
    use threadwire_testbed::net::Link;

    /// Cells at `sizes` whose one-way time is `ms_per_kb` per 1000 B (and
    /// at least 1 µs): a link of 8 / `ms_per_kb` Mbit/s.
    fn cells(sizes: &[usize], ms_per_kb: f64) -> Measured {
        Measured::Cells(
            sizes
                .iter()
                .map(|&size| {
                    let one_way =
                        Duration::from_secs_f64((size as f64 * ms_per_kb / 1e6).max(1e-6));
                    Cell {
                        sample: Sample {
                            size,
                            one_way,
                            min: one_way,
                            max: one_way,
                        },
                        repetitions: 5,
                    }
                })
                .collect(),
        )
    }

    fn report(bandwidth: bool) -> Report {
        let options = super::super::Options {
            bandwidth,
            ..super::super::Options::new("threadwire", Vec::new())
        };
        let row = |path| Row {
            path,
            measured: cells(&options.sizes(path), 0.8),
        };
        Report {
            rows: vec![
                row(Path::Thread),
                row(Path::Shm),
                row(Path::Link(Link::Ethernet10)),
                row(Path::Link(Link::Atm155)),
                Row {
                    path: Path::Link(Link::Gige),
                    measured: Measured::Missing("no emulated hosts: not root".into()),
                },
            ],
            repetitions: 5,
            per_size: Duration::from_secs(7),
            bandwidth,
        }
    }

    fn table(report: &Report) -> String {
        let mut out = Vec::new();
        report.table(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The words of the line starting with `label` (the first after
    /// `after`), less the label.
    fn line<'a>(text: &'a str, after: &str, label: &str) -> Vec<&'a str> {
        text.lines()
            .skip_while(|l| !l.starts_with(after))
            .find_map(|l| l.strip_prefix(label).filter(|r| r.starts_with(' ')))
            .unwrap_or_else(|| panic!("no {label:?} after {after:?}\n{text}"))
            .split_whitespace()
            .collect()
    }

    #[test]
    fn all_twenty_cells_of_table_5_2_sit_under_their_paths() {
        let text = table(&report(true));
        let seed = |label| {
            let words = line(&text, "path ", label);
            words.iter().step_by(2).copied().collect::<Vec<_>>()
        };
        assert_eq!(seed("1998 threads"), ["1.01", "1.09", "15.25", "238.44"]);
        assert_eq!(
            seed("1998 local processes"),
            ["1.04", "2.92", "39.27", "897.17"]
        );
        assert_eq!(seed("1998 Ethernet"), ["5.53", "9.24", "120.69", "3267.32"]);
        assert_eq!(
            seed("1998 ATM AAL 3/4"),
            ["1.10", "4.09", "72.29", "1477.75"]
        );
        assert_eq!(seed("1998 ATM AAL 5"), ["1.11", "4.12", "68.67", "1256.79"]);
        // Ours ÷ 1998: 1 MB in 800 ms against 3267.32.
        assert_eq!(line(&text, "path ", "1998 Ethernet")[7], "(0.245×)");
        let order: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("tcp/"))
            .take(5)
            .map(|l| l.split("  ").next().unwrap())
            .collect();
        assert_eq!(
            order,
            [
                "tcp/ethernet10",
                "1998 Ethernet",
                "tcp/atm155",
                "1998 ATM AAL 3/4",
                "1998 ATM AAL 5"
            ],
            "{text}"
        );
        assert!(
            text.contains("tcp/gige               missing: no emulated hosts"),
            "{text}"
        );
    }

    #[test]
    fn tables_5_3_5_5_and_5_6_sit_beside_the_links() {
        let text = table(&report(true));
        let after = "the thesis' Table 5.3 (1998)";
        // 0.8 ms per KB: 10 Mbit/s at every size.
        assert_eq!(line(&text, after, "tcp/ethernet10"), ["10.0"; 5]);
        assert_eq!(
            line(&text, after, "1998 Ethernet"),
            ["6.41", "(1.56×)", "8.53", "(1.17×)", "9.12", "(1.10×)"]
                .into_iter()
                .chain(["9.12", "(1.10×)", "8.98", "(1.11×)"])
                .collect::<Vec<_>>()
        );
        let seeds = |label| {
            let words = line(&text, after, label);
            words.iter().step_by(2).copied().collect::<Vec<_>>()
        };
        assert_eq!(
            seeds("1998 ATM AAL 3/4"),
            ["9.94", "23.39", "27.22", "27.75", "27.01"]
        );
        assert_eq!(
            seeds("1998 ATM AAL 5"),
            ["11.78", "27.26", "29.17", "29.26", "28.85"]
        );
        assert!(
            text.contains(
                "the thesis disagrees with itself: Table 5.2's 1 MB in 3267.32 ms over Ethernet is \
             2.45, in 1477.75 ms over ATM AAL 3/4 is 5.41, in 1256.79 ms over ATM AAL 5 is 6.37 \
             Mbit/s, where Tables 5.3 and 5.6 say 9.12, 27.75, 29.26 (r_max); both are printed \
             as they are; ours at 1 MB: tcp/ethernet10 10.0, tcp/atm155 10.0 Mbit/s"
            ),
            "{text}"
        );
        let after = "the thesis' Tables 5.5 and 5.6 (1998)";
        // 4 B in 3.2 µs.
        assert_eq!(line(&text, after, "tcp/ethernet10"), ["3.20", "10.0"]);
        assert_eq!(
            line(&text, after, "1998 PVM/TCP/Ethernet"),
            ["1595", "(0.00201×)", "9.12", "(1.10×)"]
        );
        assert_eq!(
            line(&text, after, "1998 PVM-ATM on AAL 3/4"),
            ["1910.3", "(0.00168×)", "27.75", "(0.360×)"]
        );
        assert_eq!(
            line(&text, after, "1998 PVM-ATM on AAL 5"),
            ["1915.4", "(0.00167×)", "29.26", "(0.342×)"]
        );
        assert_eq!(line(&text, after, "tcp/gige"), ["–", "–"]);
    }

    #[test]
    fn r_max_leaves_out_the_sizes_of_a_token_bucket() {
        let Measured::Cells(mut cells) = cells(&BANDWIDTH_SIZES, 0.8) else {
            unreachable!()
        };
        // 1 KB at 80 Mbit/s, inside the bucket; 1280 KB at 12.5.
        cells[0].sample.one_way = Duration::from_micros(100);
        cells[3].sample.one_way = Duration::from_micros(819_200);
        assert_eq!(mbit_s(&cells, 1000), Some(80.0));
        assert_eq!(peak_mbit_s(&cells), Some(12.5));
    }

    #[test]
    fn without_bandwidth_sizes_only_t0_is_beside_the_thesis() {
        let text = table(&report(false));
        assert!(!text.contains("Table 5.3 (1998)"), "{text}");
        let after = "the thesis' Tables 5.5 and 5.6 (1998)";
        assert_eq!(
            line(&text, after, "1998 PVM/TCP/Ethernet"),
            ["1595", "(0.00201×)", "9.12"]
        );
        assert!(
            text.contains("r_max: not measured (--no-bandwidth)"),
            "{text}"
        );
    }

    #[test]
    fn json_compares_every_figure_of_the_thesis_beside_the_run() {
        let comparisons = report(true).comparisons();
        let count = |table| comparisons.iter().filter(|c| c.table == table).count();
        assert_eq!(count("5.2"), 20);
        assert_eq!(count("5.3"), 15);
        assert_eq!((count("5.5"), count("5.6")), (3, 3));
        let aal5 = comparisons
            .iter()
            .find(|c| c.table == "5.6" && c.seed == "PVM-ATM on AAL 5")
            .unwrap();
        assert_eq!(aal5.path, "tcp/atm155");
        assert_eq!((aal5.seed_figure, aal5.unit), (Figure(29.26), "Mbit/s"));
        assert!((aal5.ours.0 - 10.0).abs() < 1e-6, "{aal5:?}");
        let without = report(false).comparisons();
        assert!(without.iter().all(|c| c.table == "5.2" || c.table == "5.5"));
    }
}
