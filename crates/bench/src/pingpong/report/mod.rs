//! The report of `bench pingpong`: a row per path and size, the Hockney
//! fit per path and, with `--peers`, NetPIPE's figures beside ours.
//!
//! With `--into` each size has two rows, owned receives then receives into
//! a reused buffer, told apart by `receive` (`owned`, `into`): a field of
//! every JSON row and fit, and a column of the CSV and the table only when
//! there are `into` rows. The fits are per path and receive, and the peers
//! (NetPIPE receives into a reused buffer) are compared with our `into`
//! rows when there are some.
//!
//! On the `udp` path the peers are sockperf and iperf3
//! ([`peers::udp`]): sockperf's median one-way time beside our median at
//! each size, with the difference (the figure to reach is at most 2 µs)
//! and the ratio; iperf3's received bandwidth, the floor, beside ours at
//! 1 MB (or our largest size), with the ratio and ours as a share of the
//! link's nominal rate. On emulated hosts the table opens with the link
//! and its loss.

use super::{Receive, Sample};
use crate::fit::Fit;
use crate::peers;
use crate::report::{mbps, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::time::Duration;
use threadwire_testbed::net::{Link, Loss};

mod udp;

use udp::JsonUdpPeers;
pub use udp::{floor_row, latency_rows, FloorRow, LatencyRow, FLOOR_SIZE};

/// One path's sample of one size.
#[derive(Clone, Debug)]
pub struct Row {
    /// `thread`, `shm`, `tcp` or `tcp/LINK`.
    pub path: String,
    /// How the sides received.
    pub receive: Receive,
    /// The one-way times.
    pub sample: Sample,
}

/// The result of `bench pingpong`.
#[derive(Debug, Default)]
pub struct Report {
    /// Per path, in the order measured, one row per size.
    pub rows: Vec<Row>,
    /// The NetPIPE peers run beside (`--peers`), or none.
    pub peers: Vec<peers::Report>,
    /// sockperf and iperf3, run beside the `udp` path (`--peers`).
    pub udp_peers: Option<peers::udp::Report>,
    /// The emulated link the nodes ran on (`--link`).
    pub link: Option<Link>,
    /// The loss of each host on it (`--loss`).
    pub loss: Option<Loss>,
}

/// Each path and receive of `rows`, in the order they first appear, with
/// the line t(n) = α + β·n through its medians (`None` below two sizes).
pub fn fits(rows: &[Row]) -> Vec<(&str, Receive, Option<Fit>)> {
    let mut lines: Vec<(&str, Receive)> = Vec::new();
    for r in rows {
        if !lines.contains(&(r.path.as_str(), r.receive)) {
            lines.push((&r.path, r.receive));
        }
    }
    lines
        .into_iter()
        .map(|(path, receive)| {
            let samples: Vec<Sample> = rows
                .iter()
                .filter(|r| r.path == path && r.receive == receive)
                .map(|r| r.sample)
                .collect();
            (path, receive, super::fit(&samples))
        })
        .collect()
}

/// Whether `rows` have receives into a buffer (`--into`).
pub fn has_into(rows: &[Row]) -> bool {
    rows.iter().any(|r| r.receive == Receive::Into)
}

/// The receive of ours the peers are compared with: NetPIPE receives into
/// a reused buffer, so ours into one where measured, else owned.
pub fn compared_receive(rows: &[Row]) -> Receive {
    match has_into(rows) {
        true => Receive::Into,
        false => Receive::Owned,
    }
}

/// One line of the peers' table: a size of ours, the peer's row there
/// (or the nearest), our fastest repetition, and the ratio.
pub struct PeerRow {
    /// Our size.
    pub size: usize,
    /// The peer's row taken for it.
    pub peer: peers::Match,
    /// Our fastest repetition, ns.
    pub ours_ns: f64,
    /// threadwire's one-way time ÷ the peer's, per byte where the sizes differ.
    pub ratio: f64,
}

/// The lines of `report` beside our `rows` of its path.
pub fn peer_rows(rows: &[Row], report: &peers::Report) -> Vec<PeerRow> {
    let Ok(measured) = &report.result else {
        return Vec::new();
    };
    let compared = compared_receive(rows);
    rows.iter()
        .filter(|r| r.path == report.path && r.receive == compared)
        .filter_map(|r| {
            let peer = measured.at(r.sample.size)?;
            let peer_ns_per_byte =
                peer.point.one_way.as_secs_f64() * 1e9 / peer.point.size.max(1) as f64;
            let ours_ns = r.sample.min.as_secs_f64() * 1e9;
            Some(PeerRow {
                size: r.sample.size,
                peer,
                ours_ns,
                ratio: ours_ns / r.sample.size.max(1) as f64 / peer_ns_per_byte,
            })
        })
        .collect()
}

/// `--json`: `rows` (path, receive, size, median, min and max one-way ns,
/// MB/s at the median), per path and receive the Hockney `fits` and, with
/// `--peers`, the
/// `peers`: per peer its `error` (null when it ran) and per size of ours
/// the peer's row there or the nearest (`peer_size`, `exact`), its best
/// one-way ns and MB/s, our fastest repetition and `threadwire_over_peer`,
/// our time ÷ the peer's (per byte if not exact).
///
/// On emulated hosts, `link` and `loss_percent` (null without loss); with
/// `--peers` on the `udp` path, `udp_peers`: its `path`, `sockperf` (its
/// `error`, and per size of ours its `message_size`, median `one_way_ns`,
/// our `threadwire_median_ns`, `threadwire_minus_peer_ns` and
/// `threadwire_over_peer`) and `iperf3` (its `error`, `offered_mbit`
/// (null: unlimited), `received_mbit`, `lost_percent`, our `size`,
/// `threadwire_mbit` there, `threadwire_over_floor` and
/// `threadwire_percent_of_link`).
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    link: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    loss_percent: Option<Figure>,
    rows: Vec<JsonRow<'a>>,
    fits: Vec<JsonFit<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    peers: Vec<JsonPeer<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    udp_peers: Option<JsonUdpPeers<'a>>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    path: &'a str,
    receive: &'static str,
    size: usize,
    median_ns: u64,
    min_ns: u64,
    max_ns: u64,
    mbps: Figure,
}

#[derive(Serialize)]
struct JsonFit<'a> {
    path: &'a str,
    receive: &'static str,
    sizes: usize,
    startup_ns: Figure,
    ns_per_byte: Figure,
    bandwidth_mbps: Figure,
    half_bandwidth_bytes: Figure,
    rms_relative_error: Figure,
}

#[derive(Serialize)]
struct JsonPeer<'a> {
    peer: &'static str,
    path: &'a str,
    error: Option<String>,
    rows: Vec<JsonPeerRow>,
}

#[derive(Serialize)]
struct JsonPeerRow {
    size: usize,
    peer_size: usize,
    exact: bool,
    one_way_ns: Figure,
    mbps: Figure,
    threadwire_min_ns: Figure,
    threadwire_over_peer: Figure,
}

/// `--csv`: the table's rows. With `--into`, a column `receive` after
/// `path` (NetPIPE's rows are `into`). The UDP peers' rows: `sockperf`
/// per message size run, its median as `median_ns`; `iperf3`, one row
/// without a size, the receiver's bandwidth as `mbps`. With `--peers`, a first column `source`
/// (`threadwire` or the peer) and, per peer, the NetPIPE rows taken for our
/// sizes at the peer's own size, its best time as `min_ns` (NetPIPE
/// reports no median or maximum); a peer without figures is one row with
/// only source and path.
#[derive(Serialize)]
struct CsvRow<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a str>,
    path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    receive: Option<&'static str>,
    size: Option<usize>,
    median_ns: Option<u64>,
    min_ns: Figure,
    max_ns: Option<u64>,
    mbps: Figure,
}

/// The CSV header without and with peers.
pub const CSV_HEADER: [&str; 6] = ["path", "size", "median_ns", "min_ns", "max_ns", "mbps"];

fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

impl crate::report::Report for Report {
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        self.link_header(out)?;
        self.sweep_table(out)?;
        self.peers_table(out)?;
        self.udp_peers_table(out)
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let rows = &self.rows;
        let document = Document {
            benchmark: "pingpong",
            link: self.link.map(Link::name),
            loss_percent: self.link.map(|_| Figure::of(self.loss.map(Loss::percent))),
            rows: rows
                .iter()
                .map(|r| JsonRow {
                    path: &r.path,
                    receive: r.receive.name(),
                    size: r.sample.size,
                    median_ns: nanos(r.sample.one_way),
                    min_ns: nanos(r.sample.min),
                    max_ns: nanos(r.sample.max),
                    mbps: Figure(r.sample.mbps()),
                })
                .collect(),
            fits: fits(rows)
                .into_iter()
                .map(|(path, receive, fit)| {
                    let figure = |f: fn(&Fit) -> Option<f64>| Figure::of(fit.as_ref().and_then(f));
                    JsonFit {
                        path,
                        receive: receive.name(),
                        sizes: fit.map_or(0, |f| f.points),
                        startup_ns: figure(|f| Some(f.startup_seconds * 1e9)),
                        ns_per_byte: figure(|f| Some(f.seconds_per_byte * 1e9)),
                        bandwidth_mbps: figure(|f| f.bandwidth().map(|b| b / 1e6)),
                        half_bandwidth_bytes: figure(|f| f.half_bandwidth_size()),
                        rms_relative_error: figure(|f| Some(f.rms_relative_error)),
                    }
                })
                .collect(),
            peers: self
                .peers
                .iter()
                .map(|report| JsonPeer {
                    peer: report.peer.name(),
                    path: &report.path,
                    error: report.result.as_ref().err().map(|e| e.to_string()),
                    rows: peer_rows(rows, report)
                        .iter()
                        .map(|line| JsonPeerRow {
                            size: line.size,
                            peer_size: line.peer.point.size,
                            exact: line.peer.exact,
                            one_way_ns: Figure(line.peer.point.one_way.as_secs_f64() * 1e9),
                            mbps: Figure(line.peer.point.mbps()),
                            threadwire_min_ns: Figure(line.ours_ns),
                            threadwire_over_peer: Figure(line.ratio),
                        })
                        .collect(),
                })
                .collect(),
            udp_peers: self.udp_peers.as_ref().map(|udp| self.json_udp_peers(udp)),
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let with_source = !self.peers.is_empty() || self.udp_peers.is_some();
        let source = |name| with_source.then_some(name);
        let with_receive = has_into(&self.rows);
        let receive = |r: Receive| with_receive.then_some(r.name());
        let mut header = Vec::from(CSV_HEADER);
        if with_receive {
            header.insert(1, "receive");
        }
        if with_source {
            header.insert(0, "source");
        }
        let mut lines: Vec<CsvRow> = self
            .rows
            .iter()
            .map(|r| CsvRow {
                source: source("threadwire"),
                path: &r.path,
                receive: receive(r.receive),
                size: Some(r.sample.size),
                median_ns: Some(nanos(r.sample.one_way)),
                min_ns: Figure(nanos(r.sample.min) as f64),
                max_ns: Some(nanos(r.sample.max)),
                mbps: Figure(r.sample.mbps()),
            })
            .collect();
        for report in &self.peers {
            let matched = peer_rows(&self.rows, report);
            if matched.is_empty() {
                lines.push(CsvRow {
                    source: source(report.peer.name()),
                    path: &report.path,
                    receive: receive(Receive::Into),
                    size: None,
                    median_ns: None,
                    min_ns: Figure(f64::NAN),
                    max_ns: None,
                    mbps: Figure(f64::NAN),
                });
            }
            let mut written = Vec::new();
            for point in matched.iter().map(|l| l.peer.point) {
                if written.contains(&point.size) {
                    continue;
                }
                written.push(point.size);
                lines.push(CsvRow {
                    source: source(report.peer.name()),
                    path: &report.path,
                    receive: receive(Receive::Into),
                    size: Some(point.size),
                    median_ns: None,
                    min_ns: Figure(point.one_way.as_secs_f64() * 1e9),
                    max_ns: None,
                    mbps: Figure(point.mbps()),
                });
            }
        }
        if let Some(udp) = &self.udp_peers {
            lines.extend(self.csv_udp_peers(udp, with_receive));
        }
        write_csv(out, &header, lines)
    }
}

impl Report {
    /// The sweep's table and the fit per path.
    fn sweep_table(&self, out: &mut dyn Write) -> io::Result<()> {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        // The receive column only with `--into`: the table has always
        // been path first, size second.
        let with_receive = has_into(&self.rows);
        let path = |path: &str, receive: &str| match with_receive {
            true => format!("{path:<12} {receive:<7}"),
            false => format!("{path:<12}"),
        };
        writeln!(
            out,
            "{} {:>10} {:>12} {:>22} {:>12}",
            path("path", "receive"),
            "size (B)",
            "one-way µs",
            "min–max µs",
            "MB/s"
        )?;
        for r in &self.rows {
            writeln!(
                out,
                "{} {:>10} {:>12.3} {:>22} {:>12}",
                path(&r.path, r.receive.name()),
                r.sample.size,
                us(r.sample.one_way),
                format!("{:.3}–{:.3}", us(r.sample.min), us(r.sample.max)),
                mbps(r.sample.mbps())
            )?;
        }
        writeln!(
            out,
            "Hockney's t(n) = α + β·n, least squares over all sizes weighted by 1/t² \
             (threadwire_bench::fit):"
        )?;
        writeln!(
            out,
            "{} {:>16} {:>18} {:>14} {:>10}",
            path("path", "receive"),
            "start-up α µs",
            "r∞ = 1/β MB/s",
            "n½ = α/β B",
            "rms error"
        )?;
        let or_dash = |x: Option<f64>, decimals: usize| {
            x.map_or_else(|| "–".to_string(), |x| format!("{x:.decimals$}"))
        };
        for (name, receive, fit) in fits(&self.rows) {
            let name = path(name, receive.name());
            match fit {
                Some(f) => writeln!(
                    out,
                    "{name} {:>16.3} {:>18} {:>14} {:>8.1} %",
                    f.startup_seconds * 1e6,
                    or_dash(f.bandwidth().map(|b| b / 1e6), 1),
                    or_dash(f.half_bandwidth_size(), 0),
                    f.rms_relative_error * 100.0
                )?,
                None => writeln!(out, "{name} {:>16}", "(needs two sizes)")?,
            }
        }
        Ok(())
    }

    /// `--peers`: per peer and size of ours, NetPIPE's row at that size (or
    /// the nearest, marked `*`) beside our fastest repetition, and
    /// threadwire's time ÷ the peer's; a peer without figures says why.
    fn peers_table(&self, out: &mut dyn Write) -> io::Result<()> {
        if self.peers.is_empty() {
            return Ok(());
        }
        writeln!(out)?;
        writeln!(
            out,
            "peers: NetPIPE 3.7.2, best of its trials, beside threadwire's fastest repetition \
             ({} receives); tw ÷ peer = threadwire's one-way time ÷ the peer's, per byte where \
             the peer's size differs (*): below 1, threadwire is faster",
            compared_receive(&self.rows).name()
        )?;
        writeln!(
            out,
            "{:<18} {:<12} {:>10} {:>11} {:>12} {:>12} {:>12} {:>9}",
            "peer", "path", "size (B)", "peer size", "one-way µs", "MB/s", "tw µs", "tw ÷ peer"
        )?;
        for report in &self.peers {
            let name = report.peer.name();
            if let Err(e) = &report.result {
                writeln!(out, "{name:<18} {:<12} {e}", report.path)?;
                continue;
            }
            for line in peer_rows(&self.rows, report) {
                let point = line.peer.point;
                writeln!(
                    out,
                    "{name:<18} {:<12} {:>10} {:>11} {:>12.3} {:>12} {:>12.3} {:>9.2}",
                    report.path,
                    line.size,
                    format!("{}{}", point.size, if line.peer.exact { "" } else { "*" }),
                    point.one_way.as_secs_f64() * 1e6,
                    mbps(point.mbps()),
                    line.ours_ns / 1e3,
                    line.ratio
                )?;
            }
        }
        Ok(())
    }

    /// On emulated hosts: the link, its rate and its loss.
    fn link_header(&self, out: &mut dyn Write) -> io::Result<()> {
        let Some(link) = self.link else {
            return Ok(());
        };
        let rate = link
            .rate_mbit()
            .map_or("unshaped".to_string(), |r| format!("{r} Mbit/s each way"));
        let loss = self.loss.map_or("no loss".to_string(), |l| {
            format!("{l} loss (each host drops {l} of the packets it receives)")
        });
        writeln!(out, "emulated link {link}: {rate}, {loss}")
    }
}
