//! A sweep's times as the seed printed them: NCS' Table 1 (host–node,
//! serial against two threads per node), the thesis' Table 5.4 (SUMMA on
//! a 2 × 3 mesh, serial against multithreaded real time) and its Figure
//! 5.7 (one host, serial against 2, 4 and 8 threads), each with the
//! seed's figures beside ours.

use super::{Kernel, Layout, Mesh};
use crate::figures::{improvement, SeedRow, NYNET};
use std::fmt;
use threadwire_testbed::net::Link;

/// NCS (1995), Table 1: Execution times of Matrix Multiplication in
/// seconds (128 × 128, host–node: the host sends B and rows of A to each
/// node's threads, which send rows of C back; the threaded column is
/// NCS_MTS/p4 with two threads per node), typed in as printed. Its "%
/// Improvement" column is [`improvement`] of the two (18.76%, 25.93%,
/// 21.69%; 20.06%, 28.05%); it prints "-" for one node.
pub const NCS_TABLE_1: [SeedRow; 4] = [
    SeedRow {
        nodes: 1,
        ethernet: (25.77, 25.85),
        nynet: Some((24.89, 25.03)),
    },
    SeedRow {
        nodes: 2,
        ethernet: (16.89, 13.72),
        nynet: Some((14.4, 11.51)),
    },
    SeedRow {
        nodes: 4,
        ethernet: (10.64, 7.88),
        nynet: Some((7.52, 5.41)),
    },
    SeedRow {
        nodes: 8,
        ethernet: (5.90, 4.62),
        nynet: None,
    },
];

/// The matrix size of NCS' Table 1.
pub const NCS_TABLE_1_SIZE: usize = 128;

/// One row of the thesis' Table 5.4: (Serial, MT) real time in seconds
/// on each of its networks. Unlike NCS' rows ([`SeedRow`]) a row is a
/// matrix size on one fixed mesh, and there are three networks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThesisRow {
    /// Matrices are `size × size`.
    pub size: usize,
    /// PVM over TCP on 10 Mbit Ethernet.
    pub ethernet: (f64, f64),
    /// PVM over ATM AAL 3/4 (155 Mbit/s OC-3).
    pub aal34: (f64, f64),
    /// PVM over ATM AAL 5.
    pub aal5: (f64, f64),
}

impl ThesisRow {
    /// The networks to print beside ours on `link`: Ethernet beside
    /// `ethernet10`, both AALs beside `atm155`, all three elsewhere.
    pub fn beside(&self, link: Option<Link>) -> Vec<(&'static str, (f64, f64))> {
        let ethernet = ("Ethernet", self.ethernet);
        let atm = [("ATM AAL 3/4", self.aal34), ("ATM AAL 5", self.aal5)];
        match link {
            Some(Link::Ethernet10) => vec![ethernet],
            Some(Link::Atm155) => atm.to_vec(),
            _ => [&[ethernet][..], &atm].concat(),
        }
    }
}

/// The thesis (1998), Table 5.4: Real-time speedup of a Multithreaded
/// (MT) Algorithm over a Serial Algorithm on Ethernet and ATM networks
/// (SUMMA on a 2 × 3 mesh of SPARC workstations), typed in as printed.
pub const THESIS_TABLE_5_4: [ThesisRow; 5] = [
    ThesisRow {
        size: 100,
        ethernet: (0.23, 0.31),
        aal34: (0.18, 0.17),
        aal5: (0.17, 0.15),
    },
    ThesisRow {
        size: 200,
        ethernet: (0.95, 0.92),
        aal34: (0.95, 0.89),
        aal5: (0.96, 0.88),
    },
    ThesisRow {
        size: 400,
        ethernet: (7.08, 6.23),
        aal34: (7.01, 6.11),
        aal5: (6.99, 6.02),
    },
    ThesisRow {
        size: 800,
        ethernet: (57.68, 50.5),
        aal34: (53.47, 42.80),
        aal5: (50.25, 39.28),
    },
    ThesisRow {
        size: 1600,
        ethernet: (657.19, 519.14),
        aal34: (601.93, 401.17),
        aal5: (532.28, 320.67),
    },
];

/// The thesis' Figure 5.7 in words: the figure prints no numbers.
pub const THESIS_FIGURE_5_7: &str = "The seed's Figure 5.7 gives no numbers; its finding \
(thesis §5.4, §5.7): on a single-processor SPARC Ultra every threaded run beat the serial \
code, 4 threads were fastest, and 8 were slower than 4 (\"the thread management overhead \
became very high\").";

/// One job of a sweep: a configuration and its timed multiply.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// Nodes of the job.
    pub nodes: u32,
    /// Matrices are `size × size`.
    pub size: usize,
    /// Threads per node; `None`: the serial baseline.
    pub threads: Option<u32>,
    /// The master's elapsed time of the timed round.
    pub seconds: f64,
}

/// Which of the seed's tables a sweep's times make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seed {
    /// NCS' Table 1: host–node, serial against one thread count.
    NcsTable1,
    /// The thesis' Table 5.4: SUMMA, serial against one thread count.
    ThesisTable54,
    /// The thesis' Figure 5.7: serial against several thread counts.
    ThesisFigure57,
}

/// A sweep's times, with what ran where.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// How the work was shared.
    pub layout: Layout,
    /// The SUMMA mesh asked for (`None`: the squarest of each node count).
    pub mesh: Option<Mesh>,
    /// Who multiplied.
    pub kernel: Kernel,
    /// Where the jobs ran (`4 emulated hosts joined by …`).
    pub hosts: String,
    /// The link joining the hosts, if emulated.
    pub link: Option<Link>,
    /// The threaded configurations' threads per node, beside the serial.
    pub threads: Vec<u32>,
    /// Cores of the machine that ran the sweep.
    pub cores: usize,
    /// Every job's time, in the order they ran.
    pub cells: Vec<Cell>,
}

impl Table {
    /// The seed's table these times are laid out as.
    pub fn seed(&self) -> Seed {
        match (self.threads.len(), self.layout) {
            (0 | 1, Layout::HostNode) => Seed::NcsTable1,
            (0 | 1, Layout::Summa) => Seed::ThesisTable54,
            _ => Seed::ThesisFigure57,
        }
    }

    /// The (nodes, size) pairs in the order they ran.
    fn rows(&self) -> Vec<(u32, usize)> {
        let mut rows: Vec<(u32, usize)> = Vec::new();
        for c in &self.cells {
            if !rows.contains(&(c.nodes, c.size)) {
                rows.push((c.nodes, c.size));
            }
        }
        rows
    }

    /// The time of one configuration, if it ran.
    pub fn seconds(&self, nodes: u32, size: usize, threads: Option<u32>) -> Option<f64> {
        self.cells
            .iter()
            .find(|c| (c.nodes, c.size, c.threads) == (nodes, size, threads))
            .map(|c| c.seconds)
    }

    fn layout_name(&self) -> String {
        match (self.layout, self.mesh) {
            (Layout::Summa, Some(mesh)) => format!("summa {mesh}"),
            (layout, _) => layout.to_string(),
        }
    }

    /// `NAME: matmul LAYOUT, kernel K, on HOSTS; UNIT`.
    fn title(&self, f: &mut fmt::Formatter<'_>, name: &str, unit: &str) -> fmt::Result {
        writeln!(
            f,
            "{name}: matmul {}, kernel {}, on {}; {unit}",
            self.layout_name(),
            self.kernel,
            self.hosts
        )
    }

    fn mt(&self) -> String {
        let t = self.threads.first().copied().unwrap_or(2);
        match self.layout {
            Layout::HostNode => format!("{t} worker threads/node"),
            Layout::Summa => format!("{t} kernel threads/node, broadcasts overlapped"),
        }
    }

    fn ncs_table_1(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.title(f, "NCS Table 1", "seconds")?;
        writeln!(
            f,
            "nodes: worker nodes, as the seed's; job: nodes of the job, node 0 the host that sends \
             B and rows of A and gathers C (on one node, to its own threads); serial: 1 thread/node, the seed's p4; MT: {}, the seed's \
             NCS_MTS/p4 (2 threads/node); the seed's at {NCS_TABLE_1_SIZE}x{NCS_TABLE_1_SIZE}",
            self.mt()
        )?;
        let networks: Vec<&str> = NCS_TABLE_1[0]
            .beside(self.link)
            .iter()
            .map(|n| n.0)
            .collect();
        write!(
            f,
            "{:>5} {:>4} {:>5} {:>10} {:>10} {:>8}",
            "size", "job", "nodes", "serial", "MT", "% impr."
        )?;
        for network in &networks {
            write!(
                f,
                " | {network:>8} p4 {:>10} {:>8}",
                "NCS_MTS/p4", "% impr."
            )?;
        }
        writeln!(f)?;
        for (nodes, size) in self.rows() {
            let workers = nodes.saturating_sub(1).max(1);
            let serial = self.seconds(nodes, size, None);
            let mt = self
                .threads
                .first()
                .and_then(|&t| self.seconds(nodes, size, Some(t)));
            write!(
                f,
                "{size:>5} {nodes:>4} {workers:>5} {} {} {:>8}",
                seconds(serial),
                seconds(mt),
                percent(serial.zip(mt))
            )?;
            let row = NCS_TABLE_1.iter().find(|r| r.nodes == workers);
            for (i, _) in networks.iter().enumerate() {
                let measured = row.and_then(|r| r.beside(self.link)[i].1);
                let gain = match row {
                    Some(r) if r.nodes > 1 => percent(measured),
                    _ => "-".into(),
                };
                let (p4, ncs) = measured.unzip();
                write!(f, " | {:>11} {:>10} {gain:>8}", figure(p4), figure(ncs))?;
            }
            writeln!(f)?;
        }
        if networks.contains(&"NYNET") {
            writeln!(f, "{NYNET}")?;
        }
        Ok(())
    }

    fn thesis_table_5_4(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.title(f, "Thesis Table 5.4", "real time, s")?;
        writeln!(
            f,
            "serial: 1 thread/node, no overlap; MT: {}; speedup: serial / MT; the seed's on a 2x3 \
             mesh of SPARC workstations",
            self.mt()
        )?;
        let networks: Vec<&str> = THESIS_TABLE_5_4[0]
            .beside(self.link)
            .iter()
            .map(|n| n.0)
            .collect();
        write!(
            f,
            "{:>5} {:>5} {:>10} {:>10} {:>7}",
            "size", "nodes", "serial", "MT", "speedup"
        )?;
        for network in &networks {
            write!(f, " | {network:>11} serial {:>7} {:>7}", "MT", "speedup")?;
        }
        writeln!(f)?;
        for (nodes, size) in self.rows() {
            let serial = self.seconds(nodes, size, None);
            let mt = self
                .threads
                .first()
                .and_then(|&t| self.seconds(nodes, size, Some(t)));
            write!(
                f,
                "{size:>5} {nodes:>5} {} {} {:>7}",
                seconds(serial),
                seconds(mt),
                speedup(serial.zip(mt))
            )?;
            let row = THESIS_TABLE_5_4.iter().find(|r| r.size == size);
            for (i, _) in networks.iter().enumerate() {
                let measured = row.map(|r| r.beside(self.link)[i].1);
                let (serial, mt) = measured.unzip();
                write!(
                    f,
                    " | {:>18} {:>7} {:>7}",
                    figure(serial),
                    figure(mt),
                    speedup(measured)
                )?;
            }
            writeln!(f)?;
        }
        Ok(())
    }

    fn thesis_figure_5_7(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.title(f, "Thesis Figure 5.7", "real time, s")?;
        write!(f, "{:>5} {:>5} {:>10}", "size", "nodes", "serial")?;
        for t in &self.threads {
            write!(f, " {:>10}", format!("{t} threads"))?;
        }
        writeln!(f, "  fastest")?;
        for (nodes, size) in self.rows() {
            let serial = self.seconds(nodes, size, None);
            write!(f, "{size:>5} {nodes:>5} {}", seconds(serial))?;
            let mut fastest = serial.map(|s| (s, "serial".to_string()));
            for &t in &self.threads {
                let time = self.seconds(nodes, size, Some(t));
                write!(f, " {}", seconds(time))?;
                let faster = match (&fastest, time) {
                    (_, None) => false,
                    (None, Some(_)) => true,
                    (Some((best, _)), Some(time)) => time < *best,
                };
                if faster {
                    fastest = time.map(|time| (time, format!("{t} threads")));
                }
            }
            writeln!(f, "  {}", fastest.map_or("-".into(), |(_, which)| which))?;
        }
        write!(
            f,
            "{THESIS_FIGURE_5_7} This machine has {} cores.",
            self.cores
        )
    }
}

/// ```text
/// NCS Table 1: matmul host-node, kernel blas, on 3 emulated hosts joined by ethernet10 (10 Mbit/s); seconds
/// nodes: worker nodes beside node 0, …
///  size  job nodes     serial         MT  % impr. | Ethernet p4 NCS_MTS/p4  % impr.
///   128    3     2   0.043100   0.051200  -18.80% |       16.89      13.72   18.77%
/// ```
impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.seed() {
            Seed::NcsTable1 => self.ncs_table_1(f),
            Seed::ThesisTable54 => self.thesis_table_5_4(f),
            Seed::ThesisFigure57 => self.thesis_figure_5_7(f),
        }
    }
}

/// Our seconds, to the microsecond (at small sizes on one host a run
/// takes less than a millisecond), or `-`.
fn seconds(s: Option<f64>) -> String {
    s.map_or(format!("{:>10}", "-"), |s| format!("{s:>10.6}"))
}

/// A seed's figure to the hundredth, the most its tables print, or `-`.
fn figure(s: Option<f64>) -> String {
    s.map_or("-".into(), |s| format!("{s:.2}"))
}

fn percent(pair: Option<(f64, f64)>) -> String {
    pair.map_or("-".into(), |(serial, mt)| {
        format!("{:.2}%", improvement(serial, mt))
    })
}

fn speedup(pair: Option<(f64, f64)>) -> String {
    pair.map_or("-".into(), |(serial, mt)| format!("{:.2}", serial / mt))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(layout: Layout, link: Option<Link>, threads: Vec<u32>, cells: Vec<Cell>) -> Table {
        Table {
            layout,
            mesh: (layout == Layout::Summa).then_some(Mesh { rows: 2, cols: 3 }),
            kernel: Kernel::Blas,
            hosts: "test hosts".into(),
            link,
            threads,
            cores: 2,
            cells,
        }
    }

    fn cell(nodes: u32, size: usize, threads: Option<u32>, seconds: f64) -> Cell {
        Cell {
            nodes,
            size,
            threads,
            seconds,
        }
    }

    #[test]
    fn the_seeds_improvement_columns_are_recomputed() {
        let pct = |(p4, ncs)| (improvement(p4, ncs) * 100.0).round() / 100.0;
        let ethernet: Vec<f64> = NCS_TABLE_1[1..].iter().map(|r| pct(r.ethernet)).collect();
        assert_eq!(ethernet, [18.77, 25.94, 21.69]);
        let nynet: Vec<f64> = NCS_TABLE_1[1..3]
            .iter()
            .map(|r| pct(r.nynet.unwrap()))
            .collect();
        assert_eq!(nynet, [20.07, 28.06]);
    }

    #[test]
    fn table_1_puts_ethernet_beside_ethernet10_and_nynet_beside_atm155() {
        let cells = vec![cell(3, 128, None, 2.0), cell(3, 128, Some(2), 1.5)];
        let text = table(
            Layout::HostNode,
            Some(Link::Ethernet10),
            vec![2],
            cells.clone(),
        )
        .to_string();
        assert!(text.starts_with("NCS Table 1: matmul host-node"), "{text}");
        assert!(
            text.contains("25.00% |       16.89      13.72   18.77%"),
            "{text}"
        );
        assert!(!text.contains("NYNET"), "{text}");
        let text = table(Layout::HostNode, Some(Link::Atm155), vec![2], cells).to_string();
        assert!(text.contains("NYNET p4"), "{text}");
        assert!(text.contains("14.40      11.51   20.07%"), "{text}");
        assert!(text.contains("ATM wide-area testbed"), "{text}");
    }

    #[test]
    fn table_5_4_puts_both_aals_beside_atm155() {
        let cells = vec![cell(6, 800, None, 3.0), cell(6, 800, Some(2), 2.0)];
        let text = table(Layout::Summa, Some(Link::Atm155), vec![2], cells).to_string();
        assert!(
            text.starts_with("Thesis Table 5.4: matmul summa 2x3"),
            "{text}"
        );
        assert!(
            text.contains("  800     6   3.000000   2.000000    1.50"),
            "{text}"
        );
        assert!(text.contains("53.47   42.80    1.25"), "{text}");
        assert!(text.contains("50.25   39.28    1.28"), "{text}");
        assert!(!text.contains("Ethernet"), "{text}");
    }

    #[test]
    fn figure_5_7_marks_the_fastest_and_quotes_the_finding() {
        let cells = vec![
            cell(1, 100, None, 4.0),
            cell(1, 100, Some(2), 2.0),
            cell(1, 100, Some(4), 3.0),
        ];
        let text = table(Layout::Summa, None, vec![2, 4], cells).to_string();
        assert!(text.starts_with("Thesis Figure 5.7"), "{text}");
        assert!(text.contains("4 threads were fastest"), "{text}");
        assert!(
            text.contains("  100     1   4.000000   2.000000   3.000000  2 threads"),
            "{text}"
        );
    }
}
