//! What the master measured, and the seed's Table 2 to print beside it.

use std::time::Duration;

pub use crate::figures::SeedRow;

/// NCS (1995), Table 2: Total execution times (Seconds), typed in as
/// printed, its multithreaded column headed "NCS_MPS/p4" (the text calls
/// it NCS_MTS/p4). It has no row for one node. Its "% Improvement"
/// column is (p4 − NCS_MPS/p4) / p4, which [`improvement`] recomputes
/// (15.71%, 42.26%, 62.28%; 22.58%, 59.88%).
pub const NCS_TABLE_2: [SeedRow; 3] = [
    SeedRow {
        nodes: 2,
        ethernet: (10.721, 9.037),
        nynet: Some((6.248, 4.837)),
    },
    SeedRow {
        nodes: 4,
        ethernet: (15.325, 8.849),
        nynet: Some((10.154, 4.074)),
    },
    SeedRow {
        nodes: 8,
        ethernet: (17.343, 6.541),
        nynet: None,
    },
];

pub use crate::figures::improvement;
use crate::figures::{millis, spread};

/// One round: the image through the five stages once.
///
/// Each strip's time, from the master's clock start to its last byte in
/// place at the master, is cut at the moments its threads saw: it
/// arrived at its compressing thread, was encoded, arrived at its
/// decompressing thread, was decoded. A stage is the mean over the
/// strips of their time in it, waits included: a strip whose thread is
/// busy with another, or whose link carries another, waits in the stage
/// it is in. The five add up to a strip's mean time through the
/// pipeline; the total is the last strip's. The threads' clocks start
/// when the start reaches them, so a stage that ends on one node and
/// starts on another is off by the difference of the starts' latencies
/// (microseconds on one host), and clamped at zero.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Round {
    /// From the clock's start to the strip's arrival at its compressing
    /// thread: the start, the strip's bytes, and waits for the link.
    pub distribute: Duration,
    /// Encoding, at the compressing thread.
    pub compress: Duration,
    /// From encoded to the JPEG's arrival at the decompressing thread.
    pub send: Duration,
    /// Decoding, at the decompressing thread.
    pub decompress: Duration,
    /// From decoded to the strip's last byte in place at the master.
    pub combine: Duration,
    /// From the clock's start to the last strip in place.
    pub total: Duration,
}

impl Round {
    /// Compress and decompress: the computation.
    pub fn computation(&self) -> Duration {
        self.compress + self.decompress
    }

    /// Distribute, send and combine: the communication.
    pub fn communication(&self) -> Duration {
        self.distribute + self.send + self.combine
    }
}

/// The timed rounds of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Threads per node in each role (compressing, decompressing).
    pub threads: u32,
    /// Its timed rounds, in order.
    pub rounds: Vec<Round>,
}

impl Measured {
    /// The median of a round's figure, in milliseconds (0 with no rounds).
    pub fn millis(&self, figure: impl Fn(&Round) -> Duration) -> f64 {
        spread(self.rounds.iter().map(|r| millis(figure(r))).collect()).0
    }
}

/// What the master measured and verified.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Pixels of a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Where the image came from: "synthetic" or the file's name.
    pub source: String,
    /// JPEG quality, 1–100.
    pub quality: u8,
    /// Nodes of the job.
    pub nodes: u32,
    /// One thread per node first, then the threaded configuration if any.
    pub configurations: Vec<Measured>,
    /// The lowest PSNR of any round, in dB.
    pub psnr: f64,
    /// The lowest PSNR of any strip of any round, in dB.
    pub strip_psnr: f64,
    /// The PSNR the image and every strip had to reach, in dB.
    pub min_psnr: f64,
    /// Bytes of JPEG in the last round of one thread per node.
    pub compressed: usize,
}

impl Report {
    /// The % improvement of the threaded configuration's median total
    /// over one thread per node's, if both ran.
    pub fn improvement(&self) -> Option<f64> {
        match self.configurations.as_slice() {
            [serial, threaded, ..] => Some(improvement(
                serial.millis(|r| r.total),
                threaded.millis(|r| r.total),
            )),
            _ => None,
        }
    }
}

/// ```text
/// jpeg 448x448 RGB (602112 bytes, synthetic) on 4 nodes at quality 75: verified, PSNR 41.9 dB, worst strip 40.1 (at least 25.0); 15449 bytes of JPEG; medians of 5 rounds, ms
///  threads/node  distribute  compress    send  decompress  combine  computation  communication   total
///             1       0.412     4.210   0.021       3.901    0.233        8.111          0.666  10.120
///             2       ...
/// 2 threads/node vs 1: 12.3% improvement in total
/// NCS Table 2, 4 nodes, 600 KB, s: Ethernet p4 15.325, NCS_MPS/p4 8.849 (42.26%); NYNET p4 10.154, NCS_MPS/p4 4.074 (59.88%)
/// ```
impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rounds = self.configurations.first().map_or(0, |c| c.rounds.len());
        let bytes = self.width * self.height * super::image::CHANNELS;
        writeln!(
            f,
            "jpeg {}x{} RGB ({bytes} bytes, {}) on {} nodes at quality {}: verified, PSNR {:.1} dB, worst strip {:.1} (at least {:.1}); {} bytes of JPEG; medians of {rounds} rounds, ms",
            self.width, self.height, self.source, self.nodes, self.quality, self.psnr, self.strip_psnr, self.min_psnr, self.compressed
        )?;
        writeln!(
            f,
            "{:>13} {:>11} {:>9} {:>7} {:>11} {:>8} {:>12} {:>14} {:>9}",
            "threads/node",
            "distribute",
            "compress",
            "send",
            "decompress",
            "combine",
            "computation",
            "communication",
            "total"
        )?;
        for c in &self.configurations {
            writeln!(
                f,
                "{:>13} {:>11.3} {:>9.3} {:>7.3} {:>11.3} {:>8.3} {:>12.3} {:>14.3} {:>9.3}",
                c.threads,
                c.millis(|r| r.distribute),
                c.millis(|r| r.compress),
                c.millis(|r| r.send),
                c.millis(|r| r.decompress),
                c.millis(|r| r.combine),
                c.millis(Round::computation),
                c.millis(Round::communication),
                c.millis(|r| r.total),
            )?;
        }
        if let (Some(gain), Some(threaded)) = (self.improvement(), self.configurations.get(1)) {
            writeln!(
                f,
                "{} threads/node vs 1: {gain:.1}% improvement in total",
                threaded.threads
            )?;
        }
        match NCS_TABLE_2.iter().find(|r| r.nodes == self.nodes) {
            Some(row) => {
                let (p4, ncs) = row.ethernet;
                write!(
                    f,
                    "NCS Table 2, {} nodes, 600 KB, s: Ethernet p4 {p4}, NCS_MPS/p4 {ncs} ({:.2}%)",
                    row.nodes,
                    improvement(p4, ncs)
                )?;
                match row.nynet {
                    Some((p4, ncs)) => write!(
                        f,
                        "; NYNET p4 {p4}, NCS_MPS/p4 {ncs} ({:.2}%)",
                        improvement(p4, ncs)
                    ),
                    None => write!(f, "; NYNET not measured"),
                }
            }
            None => write!(
                f,
                "NCS Table 2 has no row for {} nodes (2, 4, 8)",
                self.nodes
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_improvement_column_is_recomputed() {
        let pct = |(p4, ncs)| (improvement(p4, ncs) * 100.0).round() / 100.0;
        let ethernet: Vec<f64> = NCS_TABLE_2.iter().map(|r| pct(r.ethernet)).collect();
        assert_eq!(ethernet, [15.71, 42.26, 62.28]);
        let nynet: Vec<f64> = NCS_TABLE_2
            .iter()
            .filter_map(|r| r.nynet)
            .map(pct)
            .collect();
        assert_eq!(nynet, [22.58, 59.88]);
    }

    #[test]
    fn the_report_prints_the_stages_the_improvement_and_the_seeds_row() {
        let round = |ms| Round {
            distribute: Duration::from_millis(1),
            compress: Duration::from_millis(ms / 2),
            send: Duration::from_millis(1),
            decompress: Duration::from_millis(ms / 2),
            combine: Duration::from_millis(1),
            total: Duration::from_millis(ms),
        };
        let report = Report {
            width: 448,
            height: 448,
            source: "synthetic".into(),
            quality: 75,
            nodes: 4,
            configurations: vec![
                Measured {
                    threads: 1,
                    rounds: vec![round(10), round(12)],
                },
                Measured {
                    threads: 2,
                    rounds: vec![round(9), round(9)],
                },
            ],
            psnr: 35.0,
            strip_psnr: 33.0,
            min_psnr: 25.0,
            compressed: 40_000,
        };
        let text = report.to_string();
        assert!(
            text.contains("2 threads/node vs 1: 18.2% improvement in total"),
            "{text}"
        );
        assert!(
            text.contains("Ethernet p4 15.325, NCS_MPS/p4 8.849 (42.26%)"),
            "{text}"
        );
        assert!(text.contains("602112 bytes, synthetic"), "{text}");
        let one = Report { nodes: 1, ..report };
        assert!(one.to_string().contains("no row for 1 nodes"));
    }
}
