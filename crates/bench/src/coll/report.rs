//! The reports of `bench coll`: the measured rows and, with `--peers`,
//! Open MPI's and MPICH's beside them ([`Report`]); and `--explain`'s
//! choices ([`Explanation`]).

use super::explain::Explanation;
use super::{Layout, Operation, Sample};
use crate::peers::coll::{self as peers, Configuration, Measured};
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;
use threadwire::group::Algorithms;

/// One layout's operation at one size.
#[derive(Clone, Debug)]
pub struct Row {
    /// The layout.
    pub layout: Layout,
    /// The slowest member's times.
    pub sample: Sample,
}

/// The result of `bench coll`.
#[derive(Debug)]
pub struct Report {
    /// Per layout, operation and size, in the order measured.
    pub rows: Vec<Row>,
    /// Layout, operation and size not run for their buffers.
    pub skipped: Vec<(Layout, Operation, usize)>,
    /// The emulated link between the nodes' hosts (`--link`), if any.
    pub link: Option<String>,
    /// The channel forced between nodes (`--channel`), if any.
    pub channel: Option<String>,
    /// The algorithms forced (`--algorithm`).
    pub algorithms: Algorithms,
    /// The MPI peers (`--peers`), or none.
    pub peers: Vec<peers::Report>,
}

/// A peer's row beside one of ours.
pub struct PeerRow<'a> {
    /// Ours.
    pub ours: &'a Row,
    /// The peer's, at the same operation and size.
    pub peer: &'a Measured,
    /// Our median ÷ the peer's: below 1, threadwire is faster.
    pub ratio: f64,
}

/// Every peer row matching one of `rows`: the same operation and size, in
/// one of the configurations of its layout
/// ([`Layout::peer_configurations`]).
pub fn peer_rows<'a>(rows: &'a [Row], reports: &'a [peers::Report]) -> Vec<PeerRow<'a>> {
    let measured = measured(reports);
    rows.iter()
        .flat_map(|ours| {
            let configurations = ours.layout.peer_configurations();
            measured
                .iter()
                .filter(move |m| {
                    configurations.contains(&m.configuration)
                        && m.operation == ours.sample.operation
                        && m.size == ours.sample.size
                })
                .map(move |peer| PeerRow {
                    ours,
                    peer,
                    ratio: ours.sample.median.as_secs_f64() / peer.median.as_secs_f64(),
                })
        })
        .collect()
}

/// Every row the peers measured, failures left out.
pub(super) fn measured(reports: &[peers::Report]) -> Vec<&Measured> {
    reports
        .iter()
        .filter_map(|r| r.result.as_ref().ok())
        .flatten()
        .filter_map(|o| o.result.as_ref().ok())
        .flatten()
        .collect()
}

/// Each MPI that could not be built, and each launch that failed:
/// (MPI, configuration or none, operation or none, the error's first line).
fn peer_failures(reports: &[peers::Report]) -> Vec<(&'static str, String, String, String)> {
    let first_line =
        |e: &dyn std::fmt::Display| e.to_string().lines().next().unwrap_or_default().to_string();
    let mut failures = Vec::new();
    for report in reports {
        match &report.result {
            Err(e) => failures.push((
                report.mpi.name(),
                String::new(),
                String::new(),
                first_line(e),
            )),
            Ok(outcomes) => {
                for o in outcomes {
                    if let Err(e) = &o.result {
                        failures.push((
                            o.mpi.name(),
                            o.configuration.to_string(),
                            o.operation.to_string(),
                            first_line(e),
                        ));
                    }
                }
            }
        }
    }
    failures
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

fn micros(d: Duration) -> String {
    three_figures(d.as_secs_f64() * 1e6)
}

/// `2 nodes × 8 threads`, `1 node × 1 thread`.
fn layout_name(l: Layout) -> String {
    let plural = |n: u32, what: &str| match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    };
    format!(
        "{} × {}",
        plural(l.nodes, "node"),
        plural(l.threads, "thread")
    )
}

fn configuration_name(c: Configuration) -> String {
    c.to_string()
}

/// `--json`: `rows` (layout, nodes, threads, members, operation, size,
/// median, min and max ns per operation of the slowest member,
/// repetitions, iterations), `skipped` (layout, operation, size not run
/// for their buffers), the `link`, the `channel` if forced and the
/// forced `algorithms`; with
/// `--peers`, `peers`: per row of ours and matching MPI row, the MPI, its
/// configuration and figures, our median and `threadwire_over_peer`, and
/// `peer_errors`.
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    link: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    channel: Option<&'a str>,
    algorithms: Vec<String>,
    rows: Vec<JsonRow>,
    skipped: Vec<JsonSkipped>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peers: Option<Vec<JsonPeerRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peer_errors: Option<Vec<JsonPeerError>>,
}

#[derive(Serialize)]
struct JsonRow {
    layout: String,
    nodes: u32,
    threads: u32,
    members: u32,
    operation: Operation,
    size: usize,
    median_ns: u64,
    min_ns: u64,
    max_ns: u64,
    repetitions: u32,
    iterations: u64,
}

#[derive(Serialize)]
struct JsonSkipped {
    layout: String,
    operation: Operation,
    size: usize,
}

#[derive(Serialize)]
struct JsonPeerRow {
    layout: String,
    operation: Operation,
    size: usize,
    mpi: &'static str,
    configuration: String,
    ranks: u32,
    threads: u32,
    median_ns: u64,
    min_ns: u64,
    max_ns: u64,
    threadwire_median_ns: u64,
    threadwire_over_peer: Figure,
}

#[derive(Serialize)]
struct JsonPeerError {
    mpi: &'static str,
    configuration: String,
    operation: String,
    error: String,
}

/// `--csv`: a line per row of ours (`source` threadwire) and, with
/// `--peers`, per matching MPI row (`source` the MPI, `configuration` its
/// ranks and threads, `layout` the one it is beside, and the ratio).
#[derive(Serialize)]
struct CsvRow<'a> {
    source: &'a str,
    layout: String,
    configuration: String,
    members: u64,
    operation: Operation,
    size: usize,
    median_ns: u64,
    min_ns: u64,
    max_ns: u64,
    repetitions: u32,
    iterations: u64,
    threadwire_over_peer: Figure,
}

/// The CSV header.
pub const CSV_HEADER: [&str; 12] = [
    "source",
    "layout",
    "configuration",
    "members",
    "operation",
    "size",
    "median_ns",
    "min_ns",
    "max_ns",
    "repetitions",
    "iterations",
    "threadwire_over_peer",
];

impl crate::report::Report for Report {
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        self.rows_table(out)?;
        self.peers_table(out)
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let with_peers = !self.peers.is_empty();
        let document = Document {
            benchmark: "coll",
            link: self.link.as_deref(),
            channel: self.channel.as_deref(),
            algorithms: self.algorithms.forced(),
            rows: self
                .rows
                .iter()
                .map(|r| JsonRow {
                    layout: r.layout.to_string(),
                    nodes: r.layout.nodes,
                    threads: r.layout.threads,
                    members: r.layout.members(),
                    operation: r.sample.operation,
                    size: r.sample.size,
                    median_ns: nanos(r.sample.median),
                    min_ns: nanos(r.sample.min),
                    max_ns: nanos(r.sample.max),
                    repetitions: r.sample.repetitions,
                    iterations: r.sample.iterations,
                })
                .collect(),
            skipped: self
                .skipped
                .iter()
                .map(|&(layout, operation, size)| JsonSkipped {
                    layout: layout.to_string(),
                    operation,
                    size,
                })
                .collect(),
            peers: with_peers.then(|| {
                peer_rows(&self.rows, &self.peers)
                    .into_iter()
                    .map(|p| JsonPeerRow {
                        layout: p.ours.layout.to_string(),
                        operation: p.peer.operation,
                        size: p.peer.size,
                        mpi: p.peer.mpi.name(),
                        configuration: configuration_name(p.peer.configuration),
                        ranks: p.peer.configuration.ranks,
                        threads: p.peer.configuration.threads,
                        median_ns: nanos(p.peer.median),
                        min_ns: nanos(p.peer.min),
                        max_ns: nanos(p.peer.max),
                        threadwire_median_ns: nanos(p.ours.sample.median),
                        threadwire_over_peer: Figure(p.ratio),
                    })
                    .collect()
            }),
            peer_errors: with_peers.then(|| {
                peer_failures(&self.peers)
                    .into_iter()
                    .map(|(mpi, configuration, operation, error)| JsonPeerError {
                        mpi,
                        configuration,
                        operation,
                        error,
                    })
                    .collect()
            }),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let ours = self.rows.iter().map(|r| CsvRow {
            source: "threadwire",
            layout: r.layout.to_string(),
            configuration: layout_name(r.layout),
            members: u64::from(r.layout.members()),
            operation: r.sample.operation,
            size: r.sample.size,
            median_ns: nanos(r.sample.median),
            min_ns: nanos(r.sample.min),
            max_ns: nanos(r.sample.max),
            repetitions: r.sample.repetitions,
            iterations: r.sample.iterations,
            threadwire_over_peer: Figure(f64::NAN),
        });
        let peers = peer_rows(&self.rows, &self.peers);
        let theirs = peers.iter().map(|p| CsvRow {
            source: p.peer.mpi.name(),
            layout: p.ours.layout.to_string(),
            configuration: configuration_name(p.peer.configuration),
            members: p.peer.configuration.members(),
            operation: p.peer.operation,
            size: p.peer.size,
            median_ns: nanos(p.peer.median),
            min_ns: nanos(p.peer.min),
            max_ns: nanos(p.peer.max),
            repetitions: p.peer.repetitions,
            iterations: p.peer.iterations,
            threadwire_over_peer: Figure(p.ratio),
        });
        write_csv(out, &CSV_HEADER, ours.chain(theirs))
    }
}

impl Report {
    /// Our rows, and the sizes not run.
    fn rows_table(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut link = self
            .link
            .as_deref()
            .unwrap_or("none (one host)")
            .to_string();
        if let Some(channel) = &self.channel {
            link += &format!("; channel: {channel}");
        }
        let forced = self.algorithms.forced();
        let forced = match forced.is_empty() {
            true => "none (the runtime's thresholds choose)".to_string(),
            false => forced.join(", "),
        };
        writeln!(
            out,
            "threadwire collectives: time per operation of the slowest member, median over \
             repetitions; link: {link}; algorithms forced: {forced}"
        )?;
        writeln!(
            out,
            "{:<7} {:>7} {:<10} {:>10} {:>11} {:>21} {:>16}",
            "layout", "members", "operation", "size (B)", "median µs", "min–max µs", "reps × iters"
        )?;
        for r in &self.rows {
            let s = &r.sample;
            writeln!(
                out,
                "{:<7} {:>7} {:<10} {:>10} {:>11} {:>21} {:>16}",
                r.layout.to_string(),
                r.layout.members(),
                s.operation.name(),
                s.size,
                micros(s.median),
                format!("{}–{}", micros(s.min), micros(s.max)),
                format!("{} × {}", s.repetitions, s.iterations)
            )?;
        }
        for (layout, operation, size) in &self.skipped {
            writeln!(
                out,
                "{:<7} {:>7} {:<10} {size:>10} not run: buffers over the cap",
                layout.to_string(),
                layout.members(),
                operation.name(),
            )?;
        }
        Ok(())
    }

    /// `--peers`: per row of ours, each MPI's row of the same operation
    /// and size in the configurations of its layout, and the ratio; then
    /// what could not be run.
    fn peers_table(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.peers.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(
            out,
            "peers: Open MPI and MPICH running bench-peers/coll/coll.c, timed alike; \
             tw ÷ peer = threadwire's median ÷ the peer's: below 1, threadwire is faster"
        )?;
        writeln!(
            out,
            "{:<7} {:<10} {:>10} {:>11} {:<9} {:<20} {:>11} {:>21} {:>9}",
            "layout",
            "operation",
            "size (B)",
            "tw µs",
            "MPI",
            "configuration",
            "median µs",
            "min–max µs",
            "tw ÷ peer"
        )?;
        for p in peer_rows(&self.rows, &self.peers) {
            writeln!(
                out,
                "{:<7} {:<10} {:>10} {:>11} {:<9} {:<20} {:>11} {:>21} {:>9}",
                p.ours.layout.to_string(),
                p.peer.operation.name(),
                p.peer.size,
                micros(p.ours.sample.median),
                p.peer.mpi.name(),
                configuration_name(p.peer.configuration),
                micros(p.peer.median),
                format!("{}–{}", micros(p.peer.min), micros(p.peer.max)),
                three_figures(p.ratio)
            )?;
        }
        for (mpi, configuration, operation, error) in peer_failures(&self.peers) {
            writeln!(out, "{mpi} {configuration} {operation}: {error}")?;
        }
        Ok(())
    }
}

/// `--json` of `--explain`: the `thresholds` (name, bytes) and a choice
/// per layout, operation and size (`algorithm`, `forced`, `rule`).
#[derive(Serialize)]
struct ExplainDocument {
    benchmark: &'static str,
    source: &'static str,
    thresholds: Vec<JsonThreshold>,
    choices: Vec<JsonChoice>,
}

#[derive(Serialize)]
struct JsonThreshold {
    name: &'static str,
    bytes: usize,
}

#[derive(Serialize)]
struct JsonChoice {
    layout: String,
    members: u32,
    operation: Operation,
    size: usize,
    algorithm: &'static str,
    forced: bool,
    rule: String,
}

/// Where `--explain`'s choices come from.
const EXPLAIN_SOURCE: &str = "the documented rules of threadwire::group applied to the \
     thresholds of threadwire::group::tuning (the runtime does not expose its choice)";

impl Explanation {
    fn json_choices(&self) -> Vec<JsonChoice> {
        self.choices
            .iter()
            .map(|c| JsonChoice {
                layout: c.layout.to_string(),
                members: c.layout.members(),
                operation: c.operation,
                size: c.size,
                algorithm: c.algorithm,
                forced: c.forced,
                rule: c.rule.clone(),
            })
            .collect()
    }
}

impl crate::report::Report for Explanation {
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "algorithms: {EXPLAIN_SOURCE}")?;
        writeln!(out, "thresholds:")?;
        for (name, bytes) in &self.thresholds {
            writeln!(out, "  {name:<26} {bytes:>8} B")?;
        }
        writeln!(
            out,
            "{:<7} {:>7} {:<10} {:>10} {:<19} rule",
            "layout", "members", "operation", "size (B)", "algorithm"
        )?;
        for c in &self.choices {
            writeln!(
                out,
                "{:<7} {:>7} {:<10} {:>10} {:<19} {}",
                c.layout.to_string(),
                c.layout.members(),
                c.operation.name(),
                c.size,
                c.algorithm,
                c.rule
            )?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = ExplainDocument {
            benchmark: "coll --explain",
            source: EXPLAIN_SOURCE,
            thresholds: self
                .thresholds
                .iter()
                .map(|&(name, bytes)| JsonThreshold { name, bytes })
                .collect(),
            choices: self.json_choices(),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let header = [
            "layout",
            "members",
            "operation",
            "size",
            "algorithm",
            "forced",
            "rule",
        ];
        write_csv(out, &header, self.json_choices())
    }
}
