//! Plots of the sweeps, on log axes, one series per path or layout (thick,
//! with markers) and one per peer (thin): a ping-pong's one-way latency and
//! bandwidth against size, beside the 1998 figures where they measured the
//! same thing ([`pingpong`]); a collective's time against size, one chart
//! per collective ([`coll`]); a broadcast's time against receivers, one
//! chart per link and size ([`bcast`]).
//!
//! Both take plain points (series, size, median time), so whoever measured
//! them — a `threadwire bench` command, a test — only hands its rows over;
//! each chart is written as SVG and PNG.
//!
//! Text is drawn with [ab_glyph] from DejaVu Sans embedded in the binary
//! (`assets/DejaVuSans.ttf`, Bitstream Vera licence beside it) rather than
//! with plotters' default `ttf` feature, which links the system's freetype
//! and fontconfig and finds no font on a machine without one: this way a
//! clean machine builds with crates.io alone and its PNGs have labels. SVGs
//! name the family (`sans-serif`) and leave the glyphs to the viewer.
//!
//! [ab_glyph]: https://docs.rs/ab_glyph

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::Once;

use crate::seeds::{self, Setting};

/// One measurement: a path's median one-way time for one message size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point<'a> {
    /// The path measured: `thread`, `shm`, `tcp`, `tcp/<link>`.
    pub path: &'a str,
    /// Message size in bytes.
    pub size: usize,
    /// Median one-way time in seconds (half the round trip).
    pub one_way_seconds: f64,
}

/// A figure of the 1998 measurements measured the way `bench pingpong`
/// measures: one-way time of a ping-pong.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reference {
    /// What was measured, as the legend names it.
    pub label: &'static str,
    /// Message size in bytes.
    pub size: usize,
    /// One-way time in seconds.
    pub one_way_seconds: f64,
}

/// The 1998 ping-pong figures: 1 B and 1 MB (10^6 B) over 10 Mbit/s
/// Ethernet between two hosts, and between two threads of one process
/// (the thesis' Table 5.2, [`seeds::THESIS_TABLE_5_2`]).
pub const PINGPONG_1998: [Reference; 4] = [
    table_5_2(ETHERNET_1998, 0, Setting::Ethernet),
    table_5_2(ETHERNET_1998, 3, Setting::Ethernet),
    table_5_2(THREADS_1998, 0, Setting::Threads),
    table_5_2(THREADS_1998, 3, Setting::Threads),
];

/// The figure of Table 5.2's `row` and `column` as a [`Reference`].
const fn table_5_2(label: &'static str, row: usize, column: Setting) -> Reference {
    let row = &seeds::THESIS_TABLE_5_2[row];
    Reference {
        label,
        size: row.size,
        one_way_seconds: row.ms[column as usize].value * 1e-3,
    }
}

/// The label of the 1998 figures between two hosts over 10 Mbit/s Ethernet.
pub const ETHERNET_1998: &str = "1998, 10 Mbit/s Ethernet";
/// The label of the 1998 figures between two threads of one process.
pub const THREADS_1998: &str = "1998, threads of one process";

/// The files [`pingpong`] writes into its directory.
pub const PINGPONG_FILES: [&str; 4] = [
    "pingpong-latency.svg",
    "pingpong-latency.png",
    "pingpong-bandwidth.svg",
    "pingpong-bandwidth.png",
];

/// Why the plots could not be written.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct PlotError {
    kind: PlotErrorKind,
}

#[derive(Debug, thiserror::Error)]
enum PlotErrorKind {
    #[error("cannot create the plot directory {}", dir.display())]
    Directory {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot draw {}", file.display())]
    Draw {
        file: PathBuf,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Writes the latency and bandwidth charts of `points` (threadwire's) and
/// `peers` (each peer's, its `path` naming it: `NPmpich2 (shm)`) into `dir`
/// (created if missing) as the four [`PINGPONG_FILES`], with
/// [`PINGPONG_1998`] beside them; returns the files' paths. Points whose
/// time is not a positive number are left out, as a log axis has no place
/// for them.
pub fn pingpong(
    dir: &Path,
    points: &[Point<'_>],
    peers: &[Point<'_>],
) -> Result<Vec<PathBuf>, PlotError> {
    let charts = [
        Chart {
            file_stem: "pingpong-latency".into(),
            title: "bench pingpong: one-way latency".into(),
            y_description: "one-way time, median",
            y_unit: "s",
            y: |_, seconds| seconds,
            x_description: "message size",
            x_label: size_label,
        },
        Chart {
            file_stem: "pingpong-bandwidth".into(),
            title: "bench pingpong: bandwidth".into(),
            y_description: "bandwidth = size / one-way time",
            y_unit: "B/s",
            y: |size, seconds| size / seconds,
            x_description: "message size",
            x_label: size_label,
        },
    ];
    let series = ours_and_peers(
        series(points.iter().map(|p| (p.path, p.size, p.one_way_seconds))),
        series(peers.iter().map(|p| (p.path, p.size, p.one_way_seconds))),
    );
    let charts: Vec<_> = charts.into_iter().map(|c| (c, &series[..])).collect();
    write(dir, &charts, &PINGPONG_1998)
}

/// One measurement of a collective: a series' median time of one
/// operation at one size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CollPoint<'a> {
    /// The collective: `bcast`, `allreduce`, …
    pub operation: &'a str,
    /// The series: a layout (`4x1`) or a peer's configuration
    /// (`Open MPI, 4 ranks`).
    pub series: &'a str,
    /// Bytes per member, as the benchmark counts them.
    pub size: usize,
    /// Median time of one operation, in seconds.
    pub seconds: f64,
}

/// Writes one chart per collective of `points` (threadwire's, one series
/// per layout) and `peers` (thin lines), time against size, into `dir`
/// (created if missing) as `coll-<operation>.svg` and `.png`; returns the
/// files' paths. A collective measured at one size only (a barrier, whose
/// size is 0) has no line to draw and gets no chart; points whose size or
/// time is not positive are left out, as a log axis has no place for them.
pub fn coll(
    dir: &Path,
    points: &[CollPoint<'_>],
    peers: &[CollPoint<'_>],
) -> Result<Vec<PathBuf>, PlotError> {
    let operations = first_appearances(points.iter().map(|p| p.operation));
    fn of<'a>(points: &[CollPoint<'a>], operation: &str) -> Vec<Series<'a>> {
        series(
            points
                .iter()
                .filter(|p| p.operation == operation)
                .map(|p| (p.series, p.size, p.seconds)),
        )
    }
    let charts: Vec<(Chart, Vec<Series<'_>>)> = operations
        .into_iter()
        .map(|operation| {
            let series = ours_and_peers(of(points, operation), of(peers, operation));
            let chart = Chart {
                file_stem: format!("coll-{operation}"),
                title: format!("bench coll: {operation}"),
                y_description: "time per operation, slowest member, median",
                y_unit: "s",
                y: |_, seconds| seconds,
                x_description: "message size",
                x_label: size_label,
            };
            (chart, series)
        })
        .filter(|(_, series)| series.iter().any(|s| !s.peer && s.points.len() > 1))
        .collect();
    let charts: Vec<_> = charts.iter().map(|(c, s)| (c.clone(), &s[..])).collect();
    write(dir, &charts, &[])
}

/// One broadcast measurement: a system's median time to a number of
/// receivers, on one chart (a link and size).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BcastPoint<'a> {
    /// The chart, its file's stem: `bcast-fast100-1000000`.
    pub chart: &'a str,
    /// The system: `tw tree`, `pvm_mcast`, …
    pub series: &'a str,
    /// Receivers, one host each.
    pub receivers: u32,
    /// Median time of one broadcast, in seconds.
    pub seconds: f64,
}

/// Writes one chart per distinct [`BcastPoint::chart`], time against
/// receivers (log axes), a line per system, into `dir` (created if
/// missing) as `<chart>.svg` and `.png`; returns the files' paths.
pub fn bcast(dir: &Path, points: &[BcastPoint<'_>]) -> Result<Vec<PathBuf>, PlotError> {
    let stems = first_appearances(points.iter().map(|p| p.chart));
    let charts: Vec<(Chart, Vec<Series<'_>>)> = stems
        .into_iter()
        .map(|stem| {
            let series = series(
                points
                    .iter()
                    .filter(|p| p.chart == stem)
                    .map(|p| (p.series, p.receivers as usize, p.seconds)),
            );
            let chart = Chart {
                file_stem: stem.to_string(),
                title: format!(
                    "bench {}",
                    stem.replacen('-', ": ", 1).replacen('-', ", ", 1) + " B"
                ),
                y_description: "one broadcast until every receiver has it, median",
                y_unit: "s",
                y: |_, seconds| seconds,
                x_description: "receivers (one host each)",
                x_label: count_label,
            };
            (chart, series)
        })
        .collect();
    let charts: Vec<_> = charts.iter().map(|(c, s)| (c.clone(), &s[..])).collect();
    write(dir, &charts, &[])
}

/// Each of `keys` once, in the order they first appear: one chart each.
fn first_appearances<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut distinct: Vec<&str> = Vec::new();
    for key in keys {
        if !distinct.contains(&key) {
            distinct.push(key);
        }
    }
    distinct
}

/// `ours`, then `peers` marked as peers' (drawn thin).
fn ours_and_peers<'a>(mut ours: Vec<Series<'a>>, peers: Vec<Series<'a>>) -> Vec<Series<'a>> {
    ours.extend(peers.into_iter().map(|s| Series { peer: true, ..s }));
    ours
}

/// Writes each chart with its series and `references` into `dir` (created
/// if missing) as SVG and PNG; returns the files' paths.
fn write(
    dir: &Path,
    charts: &[(Chart, &[Series<'_>])],
    references: &[Reference],
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|source| PlotError {
        kind: PlotErrorKind::Directory {
            dir: dir.to_path_buf(),
            source,
        },
    })?;
    register_font();
    let mut written = Vec::new();
    for (chart, series) in charts {
        let svg = dir.join(format!("{}.svg", chart.file_stem));
        draw(
            &SVGBackend::new(&svg, SIZE).into_drawing_area(),
            chart,
            series,
            references,
        )
        .map_err(|e| PlotError::draw(&svg, e))?;
        written.push(svg);
        let png = dir.join(format!("{}.png", chart.file_stem));
        draw(
            &BitMapBackend::new(&png, SIZE).into_drawing_area(),
            chart,
            series,
            references,
        )
        .map_err(|e| PlotError::draw(&png, e))?;
        written.push(png);
    }
    Ok(written)
}

impl PlotError {
    fn draw<E: std::error::Error + Send + Sync + 'static>(
        file: &Path,
        source: DrawingAreaErrorKind<E>,
    ) -> Self {
        PlotError {
            kind: PlotErrorKind::Draw {
                file: file.to_path_buf(),
                source: Box::new(source),
            },
        }
    }
}

/// Pixels of every chart, width by height.
const SIZE: (u32, u32) = (1024, 680);

/// The family every text of a chart names, registered once from the
/// embedded font.
const FONT: &str = "sans-serif";

fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // A font that does not parse leaves the family unregistered; the
        // first text drawn then fails with `FontUnavailable`, a PlotError.
        // The unit test below parses this one.
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            include_bytes!("../assets/DejaVuSans.ttf"),
        );
    });
}

/// One chart: which file, and what its y axis shows of a (size, time).
#[derive(Clone)]
struct Chart {
    file_stem: String,
    title: String,
    y_description: &'static str,
    y_unit: &'static str,
    y: fn(f64, f64) -> f64,
    x_description: &'static str,
    x_label: fn(f64) -> String,
}

fn size_label(x: f64) -> String {
    si(x, "B")
}

/// A count on a log axis: whole numbers only.
fn count_label(x: f64) -> String {
    match (x - x.round()).abs() < 1e-6 {
        true => format!("{}", x.round()),
        false => String::new(),
    }
}

/// A path's points as (size, seconds), sorted by size.
struct Series<'a> {
    path: &'a str,
    points: Vec<(f64, f64)>,
    /// A peer's: drawn thin, without markers.
    peer: bool,
}

/// The series of `points` (series, size, seconds) in the order they first
/// appear, each with its plottable points.
fn series<'a>(points: impl Iterator<Item = (&'a str, usize, f64)>) -> Vec<Series<'a>> {
    let mut out: Vec<Series<'a>> = Vec::new();
    for (path, size, seconds) in points {
        if !(size > 0 && seconds.is_finite() && seconds > 0.0) {
            continue;
        }
        let point = (size as f64, seconds);
        match out.iter_mut().find(|s| s.path == path) {
            Some(s) => s.points.push(point),
            None => out.push(Series {
                path,
                points: vec![point],
                peer: false,
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Colours of the paths in order (Tableau 10), distinct from the black of
/// the 1998 markers.
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    series: &[Series<'_>],
    references: &[Reference],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let y_of = |(size, seconds): (f64, f64)| (chart.y)(size, seconds);
    let reference_points = references
        .iter()
        .map(|r| (r.size as f64, r.one_way_seconds));
    let all = || {
        series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .chain(reference_points.clone())
    };
    let x_range = log_range(all().map(|p| p.0));
    let y_range = log_range(all().map(y_of));

    let mut plot = ChartBuilder::on(root)
        .caption(&chart.title, (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range.log_scale(), y_range.log_scale())?;
    plot.configure_mesh()
        .x_desc(chart.x_description)
        .y_desc(chart.y_description)
        .x_label_formatter(&|x| (chart.x_label)(*x))
        .y_label_formatter(&|y| si(*y, chart.y_unit))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()?;

    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let width = if s.peer { 1 } else { 2 };
        let points = s.points.iter().map(|&p| (p.0, y_of(p)));
        plot.draw_series(LineSeries::new(points.clone(), colour.stroke_width(width)))?
            .label(s.path)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(width))
            });
        if !s.peer {
            plot.draw_series(points.map(|p| Circle::new(p, 3, colour.filled())))?;
        }
    }

    // The 1998 markers, each with its figure beside it: right of the small
    // sizes, left of the large, so that none runs off the plot.
    let black = BLACK.stroke_width(2);
    let label = |r: &Reference| {
        let y = y_of((r.size as f64, r.one_way_seconds));
        let (anchor, dx) = if r.size < 1000 {
            (HPos::Left, 10)
        } else {
            (HPos::Right, -10)
        };
        let style = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(anchor, VPos::Center));
        let text = format!("{}: {}", si(r.size as f64, "B"), si(y, chart.y_unit));
        ((r.size as f64, y), Text::new(text, (dx, 0), style))
    };
    let marked = |label: &'static str| references.iter().filter(move |r| r.label == label);
    if marked(ETHERNET_1998).next().is_some() {
        plot.draw_series(marked(ETHERNET_1998).map(|r| {
            let (at, text) = label(r);
            EmptyElement::at(at) + Cross::new((0, 0), 6, black) + text
        }))?
        .label(ETHERNET_1998)
        .legend(move |(x, y)| Cross::new((x + 10, y), 6, black));
    }
    if marked(THREADS_1998).next().is_some() {
        plot.draw_series(marked(THREADS_1998).map(|r| {
            let (at, text) = label(r);
            EmptyElement::at(at) + TriangleMarker::new((0, 0), 7, black) + text
        }))?
        .label(THREADS_1998)
        .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 7, black));
    }

    plot.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()
}

/// A log axis's range around the positive `values`: a fifth of a decade
/// beyond each end, so that no marker sits on the frame.
fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    const MARGIN: f64 = 1.585; // 10^0.2
    let (low, high) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !low.is_finite() {
        return 1.0..10.0;
    }
    low / MARGIN..high * MARGIN
}

/// `x` to three significant figures with an SI prefix on `unit`: 100 ns,
/// 2.5 µs, 1 MB/s.
fn si(x: f64, unit: &str) -> String {
    const PREFIXES: [(i32, &str); 9] = [
        (-9, "n"),
        (-6, "µ"),
        (-3, "m"),
        (0, ""),
        (3, "k"),
        (6, "M"),
        (9, "G"),
        (12, "T"),
        (15, "P"),
    ];
    if !(x.is_finite() && x > 0.0) {
        return format!("{x} {unit}");
    }
    // Round first, so that 999.96 is 1 k and not 1000.
    let magnitude = x.log10().floor() as i32;
    let rounded = {
        let unit = 10f64.powi(magnitude - 2);
        (x / unit).round() * unit
    };
    let exponent = (rounded.log10().floor() as i32).div_euclid(3) * 3;
    let (exponent, prefix) = PREFIXES
        .iter()
        .copied()
        .find(|(e, _)| *e == exponent)
        .unwrap_or(if exponent < 0 {
            PREFIXES[0]
        } else {
            PREFIXES[8]
        });
    let scaled = rounded / 10f64.powi(exponent);
    let decimals = (2 - scaled.log10().floor() as i32).clamp(0, 2) as usize;
    let text = format!("{scaled:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    format!("{text} {prefix}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_font_parses() {
        assert!(plotters::style::register_font(
            "test-font",
            FontStyle::Normal,
            include_bytes!("../assets/DejaVuSans.ttf"),
        )
        .is_ok());
    }

    #[test]
    fn labels_carry_si_prefixes() {
        assert_eq!(si(1e-7, "s"), "100 ns");
        assert_eq!(si(2.5e-6, "s"), "2.5 µs");
        assert_eq!(si(5.53e-3, "s"), "5.53 ms");
        assert_eq!(si(3.267, "s"), "3.27 s");
        assert_eq!(si(1.0, "B"), "1 B");
        assert_eq!(si(999.96, "B"), "1 kB");
        assert_eq!(si(1_000_000.0, "B"), "1 MB");
        assert_eq!(si(306_091.2, "B/s"), "306 kB/s");
        assert_eq!(si(16_777_216.0, "B"), "16.8 MB");
    }

    #[test]
    fn log_ranges_enclose_the_values() {
        let range = log_range([1.0, f64::NAN, 0.0, 1e6].into_iter());
        assert!(range.start < 1.0 && range.start > 0.5, "{range:?}");
        assert!(range.end > 1e6 && range.end < 2e6, "{range:?}");
        assert_eq!(log_range(std::iter::empty()), 1.0..10.0);
    }

    #[test]
    fn series_follow_first_appearance_and_drop_unplottable_points() {
        let points = [
            Point {
                path: "thread",
                size: 1000,
                one_way_seconds: 2e-6,
            },
            Point {
                path: "tcp",
                size: 8,
                one_way_seconds: 1e-5,
            },
            Point {
                path: "thread",
                size: 8,
                one_way_seconds: 1e-6,
            },
            Point {
                path: "tcp",
                size: 1000,
                one_way_seconds: f64::NAN,
            },
        ];
        let s = series(points.iter().map(|p| (p.path, p.size, p.one_way_seconds)));
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].path, "thread");
        assert_eq!(s[0].points, [(8.0, 1e-6), (1000.0, 2e-6)]);
        assert_eq!(s[1].path, "tcp");
        assert_eq!(s[1].points, [(8.0, 1e-5)]);
    }

    #[test]
    fn pingpong_writes_four_files() {
        let dir = std::env::temp_dir().join(format!("threadwire-plot-{}", std::process::id()));
        let points = [8, 1000, 100_000].map(|size| Point {
            path: "thread",
            size,
            one_way_seconds: 2e-7 + size as f64 * 1e-10,
        });
        let peer = [8, 1000, 100_000].map(|size| Point {
            path: "NPtcp (tcp)",
            size,
            one_way_seconds: 4e-7 + size as f64 * 1e-10,
        });
        let written = pingpong(&dir.join("nested"), &points, &peer).expect("plots");
        assert_eq!(written.len(), 4);
        for (file, name) in written.iter().zip(PINGPONG_FILES) {
            assert!(file.ends_with(name), "{}", file.display());
            let bytes = std::fs::read(file).expect("written");
            assert!(bytes.len() > 100, "{} is nearly empty", file.display());
        }
        let svg = std::fs::read_to_string(&written[0]).expect("svg");
        assert!(
            svg.contains(ETHERNET_1998),
            "the legend names the 1998 figures"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn coll_writes_a_chart_per_collective_with_sizes() {
        let dir = std::env::temp_dir().join(format!("threadwire-coll-plot-{}", std::process::id()));
        let point = |operation, series, size, seconds| CollPoint {
            operation,
            series,
            size,
            seconds,
        };
        let points = [
            point("barrier", "4x1", 0, 9e-6),
            point("bcast", "4x1", 8, 1e-6),
            point("bcast", "4x1", 1 << 20, 1e-3),
            point("bcast", "1x16", 8, 3e-6),
            point("bcast", "1x16", 1 << 20, 2e-3),
            point("allreduce", "4x1", 8, 9e-6),
            point("allreduce", "4x1", 1 << 20, 4e-3),
        ];
        let peers = [
            point("bcast", "Open MPI, 4 ranks", 8, 2e-6),
            point("bcast", "Open MPI, 4 ranks", 1 << 20, 5e-4),
            point("barrier", "Open MPI, 4 ranks", 0, 5e-6),
        ];
        let written = coll(&dir, &points, &peers).expect("plots");
        let names: Vec<_> = written
            .iter()
            .map(|f| {
                f.file_name()
                    .expect("a file")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            names,
            [
                "coll-bcast.svg",
                "coll-bcast.png",
                "coll-allreduce.svg",
                "coll-allreduce.png"
            ],
            "no chart for the barrier, which has no size"
        );
        let svg = std::fs::read_to_string(&written[0]).expect("svg");
        for series in ["4x1", "1x16", "Open MPI, 4 ranks"] {
            assert!(svg.contains(series), "the bcast legend names {series}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
