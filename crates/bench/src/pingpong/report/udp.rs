//! The `udp` path's peers in the report of `bench pingpong`: sockperf's
//! one-way times beside our medians and iperf3's floor beside our
//! bandwidth, as a table, JSON and CSV.

use super::{compared_receive, nanos, CsvRow, Report, Row};
use crate::peers;
use crate::report::Figure;
use serde::Serialize;
use std::io::{self, Write};
use threadwire_testbed::net::Link;

/// The size our bandwidth is set against the iperf3 floor at.
pub const FLOOR_SIZE: usize = 1_000_000;

/// One line of sockperf beside ours.
pub struct LatencyRow {
    /// sockperf's figure at a size of ours.
    pub peer: peers::udp::Latency,
    /// Our median one-way time, ns.
    pub ours_ns: f64,
    /// Ours − sockperf's, ns.
    pub difference_ns: f64,
    /// Ours ÷ sockperf's.
    pub ratio: f64,
}

/// iperf3's floor beside our bandwidth.
pub struct FloorRow {
    /// The floor.
    pub floor: peers::udp::Floor,
    /// Our size: [`FLOOR_SIZE`] if measured, else our largest.
    pub size: usize,
    /// Our bandwidth there at the median, Mbit/s.
    pub ours_mbit: f64,
    /// Ours ÷ the floor.
    pub ratio: f64,
    /// Ours as a share of the link's nominal rate, percent; `None`
    /// unshaped.
    pub percent_of_link: Option<f64>,
}

/// Our rows on the UDP peers' path, of the receive compared.
fn udp_path_rows<'a>(
    rows: &'a [Row],
    udp: &'a peers::udp::Report,
) -> impl Iterator<Item = &'a Row> {
    let compared = compared_receive(rows);
    rows.iter()
        .filter(move |r| r.path == udp.path && r.receive == compared)
}

/// sockperf's lines beside our rows of its path.
pub fn latency_rows(rows: &[Row], udp: &peers::udp::Report) -> Vec<LatencyRow> {
    let Ok(latencies) = &udp.sockperf else {
        return Vec::new();
    };
    udp_path_rows(rows, udp)
        .filter_map(|r| {
            let peer = *latencies.iter().find(|l| l.size == r.sample.size)?;
            let ours_ns = r.sample.one_way.as_secs_f64() * 1e9;
            let peer_ns = peer.one_way.as_secs_f64() * 1e9;
            Some(LatencyRow {
                peer,
                ours_ns,
                difference_ns: ours_ns - peer_ns,
                ratio: ours_ns / peer_ns,
            })
        })
        .collect()
}

/// iperf3's floor beside our bandwidth at [`FLOOR_SIZE`] or our largest
/// size; `None` without a floor or rows.
pub fn floor_row(rows: &[Row], udp: &peers::udp::Report, link: Option<Link>) -> Option<FloorRow> {
    let floor = *udp.iperf.as_ref().ok()?;
    let ours =
        udp_path_rows(rows, udp).max_by_key(|r| (r.sample.size == FLOOR_SIZE, r.sample.size))?;
    let ours_mbit = ours.sample.mbps() * 8.0;
    Some(FloorRow {
        floor,
        size: ours.sample.size,
        ours_mbit,
        ratio: ours_mbit / floor.received_mbit,
        percent_of_link: link
            .and_then(|l| l.rate_mbit())
            .map(|rate| 100.0 * ours_mbit / rate),
    })
}

#[derive(Serialize)]
pub(super) struct JsonUdpPeers<'a> {
    path: &'a str,
    sockperf: JsonSockperf,
    iperf3: JsonIperf,
}

#[derive(Serialize)]
pub(super) struct JsonSockperf {
    error: Option<String>,
    rows: Vec<JsonLatency>,
}

#[derive(Serialize)]
pub(super) struct JsonLatency {
    size: usize,
    message_size: usize,
    one_way_ns: Figure,
    threadwire_median_ns: Figure,
    threadwire_minus_peer_ns: Figure,
    threadwire_over_peer: Figure,
}

#[derive(Serialize)]
pub(super) struct JsonIperf {
    error: Option<String>,
    offered_mbit: Figure,
    received_mbit: Figure,
    lost_percent: Figure,
    size: Option<usize>,
    threadwire_mbit: Figure,
    threadwire_over_floor: Figure,
    threadwire_percent_of_link: Figure,
}

impl Report {
    /// `--peers` on the `udp` path: sockperf beside our medians, and the
    /// iperf3 floor beside our bandwidth; a peer without figures says why.
    pub(super) fn udp_peers_table(&self, out: &mut dyn Write) -> io::Result<()> {
        let Some(udp) = &self.udp_peers else {
            return Ok(());
        };
        let path = &udp.path;
        writeln!(out)?;
        let mode = match self.loss {
            None => "UDP ping-pong",
            Some(_) => {
                "under load, one message at a time, each answered (its ping-pong stalls \
                        at a lost datagram)"
            }
        };
        writeln!(
            out,
            "sockperf: {mode}, its median one-way time (half the round trip) at its message size \
             (14 B at least, * where it differs from ours), beside threadwire's median \
             repetition (each a mean); to reach: tw − peer ≤ 2 µs"
        )?;
        writeln!(
            out,
            "{:<10} {:<12} {:>10} {:>11} {:>12} {:>12} {:>13} {:>9}",
            "peer",
            "path",
            "size (B)",
            "peer size",
            "one-way µs",
            "tw µs",
            "tw − peer µs",
            "tw ÷ peer"
        )?;
        match &udp.sockperf {
            Err(e) => writeln!(out, "{:<10} {path:<12} {e}", "sockperf")?,
            Ok(_) => {
                for line in latency_rows(&self.rows, udp) {
                    let peer = line.peer;
                    writeln!(
                        out,
                        "{:<10} {path:<12} {:>10} {:>11} {:>12.3} {:>12.3} {:>13.3} {:>9.2}",
                        "sockperf",
                        peer.size,
                        format!(
                            "{}{}",
                            peer.message,
                            if peer.message == peer.size { "" } else { "*" }
                        ),
                        peer.one_way.as_secs_f64() * 1e6,
                        line.ours_ns / 1e3,
                        line.difference_ns / 1e3,
                        line.ratio
                    )?;
                }
            }
        }
        writeln!(
            out,
            "iperf3 -u: the floor, what the receiver got of 1472-byte datagrams offered at the \
             link's rate, beside threadwire's bandwidth at 1 MB (or its largest size); to reach: \
             ≥ 90% of the link, 80% at 1% loss"
        )?;
        writeln!(
            out,
            "{:<10} {:<12} {:>10} {:>11} {:>7} {:>10} {:>10} {:>10} {:>9}",
            "peer",
            "path",
            "offered",
            "floor Mb/s",
            "lost %",
            "size (B)",
            "tw Mb/s",
            "tw ÷ floor",
            "% of link"
        )?;
        if let Err(e) = &udp.iperf {
            return writeln!(out, "{:<10} {path:<12} {e}", "iperf3");
        }
        let Some(line) = floor_row(&self.rows, udp, self.link) else {
            return writeln!(
                out,
                "{:<10} {path:<12} (no threadwire row on this path)",
                "iperf3"
            );
        };
        let floor = line.floor;
        writeln!(
            out,
            "{:<10} {path:<12} {:>10} {:>11.1} {:>7.2} {:>10} {:>10.1} {:>10.2} {:>9}",
            "iperf3",
            floor
                .offered_mbit
                .map_or("unlimited".to_string(), |m| format!("{m}M")),
            floor.received_mbit,
            floor.lost_percent,
            line.size,
            line.ours_mbit,
            line.ratio,
            line.percent_of_link
                .map_or("–".to_string(), |p| format!("{p:.1} %"))
        )
    }

    pub(super) fn json_udp_peers<'a>(&'a self, udp: &'a peers::udp::Report) -> JsonUdpPeers<'a> {
        let floor = floor_row(&self.rows, udp, self.link);
        let of_floor = |f: fn(&FloorRow) -> f64| Figure::of(floor.as_ref().map(f));
        JsonUdpPeers {
            path: &udp.path,
            sockperf: JsonSockperf {
                error: udp.sockperf.as_ref().err().map(|e| e.to_string()),
                rows: latency_rows(&self.rows, udp)
                    .iter()
                    .map(|line| JsonLatency {
                        size: line.peer.size,
                        message_size: line.peer.message,
                        one_way_ns: Figure(line.peer.one_way.as_secs_f64() * 1e9),
                        threadwire_median_ns: Figure(line.ours_ns),
                        threadwire_minus_peer_ns: Figure(line.difference_ns),
                        threadwire_over_peer: Figure(line.ratio),
                    })
                    .collect(),
            },
            iperf3: JsonIperf {
                error: udp.iperf.as_ref().err().map(|e| e.to_string()),
                offered_mbit: Figure::of(udp.iperf.as_ref().ok().and_then(|f| f.offered_mbit)),
                received_mbit: Figure::of(udp.iperf.as_ref().ok().map(|f| f.received_mbit)),
                lost_percent: Figure::of(udp.iperf.as_ref().ok().map(|f| f.lost_percent)),
                size: floor.as_ref().map(|f| f.size),
                threadwire_mbit: of_floor(|f| f.ours_mbit),
                threadwire_over_floor: of_floor(|f| f.ratio),
                threadwire_percent_of_link: Figure::of(
                    floor.as_ref().and_then(|f| f.percent_of_link),
                ),
            },
        }
    }

    pub(super) fn csv_udp_peers<'a>(
        &self,
        udp: &'a peers::udp::Report,
        with_receive: bool,
    ) -> Vec<CsvRow<'a>> {
        let receive = with_receive.then_some(compared_receive(&self.rows).name());
        let row = |source, size, median_ns, mbps| CsvRow {
            source: Some(source),
            path: &udp.path,
            receive,
            size,
            median_ns,
            min_ns: Figure(f64::NAN),
            max_ns: None,
            mbps: Figure(mbps),
        };
        let mut lines = Vec::new();
        match &udp.sockperf {
            Err(_) => lines.push(row("sockperf", None, None, f64::NAN)),
            Ok(_) => {
                for l in udp.sockperf_runs() {
                    let mbps = l.message as f64 / l.one_way.as_secs_f64() / 1e6;
                    lines.push(row(
                        "sockperf",
                        Some(l.message),
                        Some(nanos(l.one_way)),
                        mbps,
                    ));
                }
            }
        }
        lines.push(match &udp.iperf {
            Err(_) => row("iperf3", None, None, f64::NAN),
            Ok(floor) => row("iperf3", None, None, floor.received_mbit / 8.0),
        });
        lines
    }
}
