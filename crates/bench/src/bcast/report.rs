//! The report of `bench bcast`: per link, a table of sizes × receivers
//! with a column per system (ms), each system's ratio to threadwire
//! tree's `k = 1` time at the same size, and the 1998 figure; then each
//! system's min–max; then what was skipped and why. And the plots of time
//! against receivers ([`plot`]).

use super::System;
use crate::report::{three_figures, write_csv, write_json, Figure};
use serde::Serialize;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;
use threadwire_testbed::net::Link;

/// One system's broadcasts of one size to `receivers` over `link`.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The hosts' link.
    pub link: Link,
    /// `k`.
    pub receivers: u32,
    /// What broadcast.
    pub system: System,
    /// Bytes.
    pub size: usize,
    /// Median over every timed broadcast of every round.
    pub median: Duration,
    /// The fastest.
    pub min: Duration,
    /// The slowest.
    pub max: Duration,
    /// Timed broadcasts.
    pub broadcasts: usize,
}

/// Rows not measured, and why; `None` fields stand for every link,
/// every `k` or every system.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    /// The link.
    #[serde(serialize_with = "link_name")]
    pub link: Option<Link>,
    /// `k`.
    pub receivers: Option<u32>,
    /// The system.
    #[serde(serialize_with = "system_key")]
    pub system: Option<System>,
    /// Why.
    pub reason: String,
}

fn system_key<S: serde::Serializer>(system: &Option<System>, s: S) -> Result<S::Ok, S::Error> {
    match system {
        Some(system) => s.serialize_some(system.key()),
        None => s.serialize_none(),
    }
}

fn link_name<S: serde::Serializer>(link: &Option<Link>, s: S) -> Result<S::Ok, S::Error> {
    match link {
        Some(l) => s.serialize_some(l.name()),
        None => s.serialize_none(),
    }
}

/// The result of `bench bcast`.
#[derive(Debug)]
pub struct Report {
    /// Rounds run.
    pub repetitions: u32,
    /// Time of each size's timed broadcasts per run.
    pub per_size: Duration,
    /// What the multicast row forced.
    pub multicast_algorithm: String,
    /// Every measured row.
    pub rows: Vec<Row>,
    /// What was not measured.
    pub skipped: Vec<Skipped>,
}

impl Report {
    pub(super) fn skip(
        &mut self,
        link: Option<Link>,
        receivers: Option<u32>,
        system: Option<System>,
        reason: impl ToString,
    ) {
        self.skipped.push(Skipped {
            link,
            receivers,
            system,
            reason: reason.to_string(),
        });
    }

    fn links(&self) -> Vec<Link> {
        let mut links: Vec<Link> = Vec::new();
        for r in &self.rows {
            if !links.contains(&r.link) {
                links.push(r.link);
            }
        }
        links
    }

    fn row(&self, link: Link, receivers: u32, system: System, size: usize) -> Option<&Row> {
        self.rows.iter().find(|r| {
            r.link == link && r.receivers == receivers && r.system == system && r.size == size
        })
    }

    /// `row`'s median ÷ threadwire tree's at one receiver, same link and
    /// size.
    pub fn ratio(&self, row: &Row) -> Option<f64> {
        let base = self.row(row.link, 1, System::Tree, row.size)?;
        Some(row.median.as_secs_f64() / base.median.as_secs_f64())
    }
}

/// The 1998 figure (ms) for a size and `k` on a link, and where it is from.
///
/// The seed (`002_…`, "Communication characterization of a LAN with
/// PVM", C.10, CeTAD's 10 Mbit/s Ethernet) gives one figure in its text:
/// the UDP-based broadcast routine with a single receiver moves 10^6
/// bytes in "really close to a second (or 1000 milliseconds, such as
/// shown in Figure C.16)". Its broadcasts to several receivers (Fig.
/// C.18) are said to be "relatively constant and independent of the
/// quantity of computers involved", with no figure in the text: those
/// cells stay empty, as does every other size and link.
pub fn seed_ms(link: Link, receivers: u32, size: usize) -> Option<f64> {
    (link == Link::Ethernet10 && receivers == 1 && size == 1_000_000).then_some(1000.0)
}

const SEED_NOTE: &str = "1998: the UDP-based broadcast of the seed (C.10, 10 Mbit/s Ethernet): \
     10^6 B to one receiver \"really close to a second\" (Fig. C.16); to more receivers \
     \"relatively constant and independent of the quantity of computers involved\" (Fig. C.18, \
     no figures in the text); PVM's pvm_mcast/pvm_bcast \"directly proportional to the quantity \
     of receptors\" at 60000 and 10^6 B";

fn ms(d: Duration) -> String {
    three_figures(d.as_secs_f64() * 1e3)
}

impl crate::report::Report for Report {
    fn table(&self, out: &mut dyn Write) -> io::Result<()> {
        let systems: Vec<System> = System::ALL
            .into_iter()
            .filter(|&s| self.rows.iter().any(|r| r.system == s))
            .collect();
        for link in self.links() {
            writeln!(
                out,
                "bcast over {link}: ms from the root's call until every receiver has acknowledged \
                 the whole message, median of every timed broadcast of {} rounds; \
                 ÷k1 = ÷ threadwire tree's k = 1 time at the size",
                self.repetitions
            )?;
            write!(out, "{:>9} {:>2}", "size (B)", "k")?;
            for s in &systems {
                write!(out, " {:>12}", s.name())?;
            }
            for s in &systems {
                write!(out, " {:>9}", format!("{}÷k1", short(*s)))?;
            }
            writeln!(out, " {:>8}", "1998 ms")?;
            let mut keys: Vec<(usize, u32)> = self
                .rows
                .iter()
                .filter(|r| r.link == link)
                .map(|r| (r.size, r.receivers))
                .collect();
            keys.sort();
            keys.dedup();
            for (size, k) in keys {
                write!(out, "{size:>9} {k:>2}")?;
                for &s in &systems {
                    let cell = self.row(link, k, s, size).map(|r| ms(r.median));
                    write!(out, " {:>12}", cell.unwrap_or_else(|| "–".into()))?;
                }
                for &s in &systems {
                    let cell = self
                        .row(link, k, s, size)
                        .and_then(|r| self.ratio(r))
                        .map(three_figures);
                    write!(out, " {:>9}", cell.unwrap_or_else(|| "–".into()))?;
                }
                let seed = seed_ms(link, k, size)
                    .map(three_figures)
                    .unwrap_or_default();
                writeln!(out, " {seed:>8}")?;
            }
            writeln!(out, "min–max ms:")?;
            for r in self.rows.iter().filter(|r| r.link == link) {
                writeln!(
                    out,
                    "  {:>9} B k={:<2} {:<13} {:>21} ({} broadcasts)",
                    r.size,
                    r.receivers,
                    r.system.name(),
                    format!("{}–{}", ms(r.min), ms(r.max)),
                    r.broadcasts
                )?;
            }
            writeln!(out)?;
        }
        writeln!(out, "{SEED_NOTE}")?;
        for s in &self.skipped {
            let mut what = Vec::new();
            what.push(
                s.system
                    .map_or("every system".to_string(), |s| s.name().to_string()),
            );
            if let Some(link) = s.link {
                what.push(link.to_string());
            }
            if let Some(k) = s.receivers {
                what.push(format!("k={k}"));
            }
            let reason: Vec<&str> = s.reason.lines().filter(|l| !l.trim().is_empty()).collect();
            writeln!(out, "skipped: {}: {}", what.join(", "), reason.join(" / "))?;
        }
        Ok(())
    }

    fn json(&self, out: &mut dyn Write) -> io::Result<()> {
        let document = Document {
            benchmark: "bcast",
            timing: "from the root's call until every receiver has acknowledged the whole message",
            repetitions: self.repetitions,
            per_size_ms: self.per_size.as_millis() as u64,
            multicast_algorithm: &self.multicast_algorithm,
            rows: self.json_rows(),
            skipped: &self.skipped,
        };
        write_json(out, &document)
    }

    fn csv(&self, out: &mut dyn Write) -> io::Result<()> {
        write_csv(out, &CSV_HEADER, self.json_rows())
    }
}

impl Report {
    fn json_rows(&self) -> Vec<JsonRow> {
        self.rows
            .iter()
            .map(|r| JsonRow {
                link: r.link.name(),
                receivers: r.receivers,
                system: r.system.key(),
                size: r.size,
                median_ns: r.median.as_nanos() as u64,
                min_ns: r.min.as_nanos() as u64,
                max_ns: r.max.as_nanos() as u64,
                broadcasts: r.broadcasts,
                over_tree_k1: Figure::of(self.ratio(r)),
                seed_ms: Figure::of(seed_ms(r.link, r.receivers, r.size)),
            })
            .collect()
    }
}

/// A column's short name for its ratio.
fn short(s: System) -> &'static str {
    match s {
        System::Tree => "tree",
        System::Multicast => "mcast",
        System::PvmMcast => "pvm_m",
        System::PvmBcast => "pvm_b",
        System::OpenMpi => "ompi",
        System::Mpich => "mpich",
    }
}

/// `--json`: `rows` (link, receivers, system, size, median, min and max
/// ns, broadcasts, `over_tree_k1` the ratio to threadwire tree's k = 1,
/// `seed_ms` the 1998 figure or null) and `skipped` (link, receivers,
/// system, each null for all, and the reason).
#[derive(Serialize)]
struct Document<'a> {
    benchmark: &'static str,
    timing: &'static str,
    repetitions: u32,
    per_size_ms: u64,
    multicast_algorithm: &'a str,
    rows: Vec<JsonRow>,
    skipped: &'a [Skipped],
}

#[derive(Serialize)]
struct JsonRow {
    link: &'static str,
    receivers: u32,
    system: &'static str,
    size: usize,
    median_ns: u64,
    min_ns: u64,
    max_ns: u64,
    broadcasts: usize,
    over_tree_k1: Figure,
    seed_ms: Figure,
}

/// The CSV header: [`JsonRow`]'s fields.
pub const CSV_HEADER: [&str; 10] = [
    "link",
    "receivers",
    "system",
    "size",
    "median_ns",
    "min_ns",
    "max_ns",
    "broadcasts",
    "over_tree_k1",
    "seed_ms",
];

/// Plots time against receivers, one chart per link and size, a line per
/// system, into `dir` ([`crate::plot::bcast`]); returns the files written.
pub fn plot(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, crate::plot::PlotError> {
    let charts: Vec<String> = report
        .rows
        .iter()
        .map(|r| format!("bcast-{}-{}", r.link.name(), r.size))
        .collect();
    let points: Vec<_> = report
        .rows
        .iter()
        .zip(&charts)
        .map(|(r, chart)| crate::plot::BcastPoint {
            chart,
            series: r.system.name(),
            receivers: r.receivers,
            seconds: r.median.as_secs_f64(),
        })
        .collect();
    crate::plot::bcast(dir, &points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Report as _;

    fn row(system: System, receivers: u32, ms: u64) -> Row {
        Row {
            link: Link::Ethernet10,
            receivers,
            system,
            size: 1_000_000,
            median: Duration::from_millis(ms),
            min: Duration::from_millis(ms),
            max: Duration::from_millis(ms),
            broadcasts: 1,
        }
    }

    #[test]
    fn the_table_has_ratios_to_the_tree_at_one_receiver_and_the_seed() {
        let report = Report {
            repetitions: 1,
            per_size: Duration::from_millis(1),
            multicast_algorithm: "bcast=multicast".into(),
            rows: vec![
                row(System::Tree, 1, 850),
                row(System::Tree, 2, 1700),
                row(System::PvmMcast, 2, 3400),
            ],
            skipped: vec![Skipped {
                link: None,
                receivers: None,
                system: Some(System::Multicast),
                reason: "refused".into(),
            }],
        };
        assert_eq!(report.ratio(&report.rows[2]), Some(4.0));
        let mut text = Vec::new();
        report.table(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let k1 = text
            .lines()
            .find(|l| l.trim_start().starts_with("1000000  1"))
            .unwrap();
        assert!(k1.ends_with("1000"), "{k1}");
        assert!(text.contains("skipped: tw multicast: refused"), "{text}");
    }
}
