//! The price of each [`Encoding`]: the ping-pong of [`pingpong`] between
//! two nodes, where every message is `size` bytes of `f64` values packed
//! by the sender and unpacked into a `Vec<f64>` by the receiver, so that
//! the conversion is part of the one-way time.
//!
//! Each side of a round trip holds a `Vec<f64>`, hands it to
//! [`Packer::pack_vec`] (moved under [`Encoding::InPlace`], copied by the
//! others, and byte-swapped on a little-endian machine under
//! [`Encoding::Portable`]), sends the payload, and reads the
//! reply with [`Unpacker::unpack_vec`](threadwire::Unpacker::unpack_vec)
//! (a new vector, swapped back under `Portable`). Between nodes an
//! in-place vector is written from where it lies, but still arrives as
//! bytes to copy out. A size is rounded up to whole values (1, 2 and 4 B
//! become 8 B); the figures count the values' bytes, not the 5 bytes of
//! item header a packed payload adds.
//!
//! **Jobs.** [`run`] starts one 2-node job over the job's channel: shared
//! memory, or TCP between two emulated hosts when given a
//! [`Net`]. Its nodes run [`node`], which measures every size with every
//! encoding in turn (so that a drift of the machine spreads over all of
//! them) and reports each encoding at each size as it is measured
//! ([`NodeResult`]).

pub mod node;
pub mod report;

pub use node::node;

use crate::node_result::NodeResult;
use crate::pingpong::{self, Bounce, Budget, Sample};
use std::ffi::OsString;
use std::path::PathBuf;
use threadwire::{Encoding, InitError, Message, Packer, Payload};
use threadwire_launch::{Event, JobSpec, LaunchError};
use threadwire_testbed::net::Net;

/// Bytes of one value.
const VALUE: usize = std::mem::size_of::<f64>();

/// Bytes a packed slice puts before its values: type code and count.
const ITEM_HEADER: usize = 1 + 4;

/// The name of an encoding in tables and results: `raw`, `portable`,
/// `in-place`, `receiver-makes-right`.
pub fn name(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Raw => "raw",
        Encoding::Portable => "portable",
        Encoding::InPlace => "in-place",
        Encoding::ReceiverMakesRight => "receiver-makes-right",
    }
}

pub(crate) fn parse(name: &str) -> Option<Encoding> {
    Encoding::ALL.into_iter().find(|&e| self::name(e) == name)
}

/// `sizes` rounded up to whole `f64` values, ascending, without duplicates.
pub fn payload_sizes(sizes: &[usize]) -> Vec<usize> {
    let mut sizes: Vec<usize> = sizes.iter().map(|&n| n.div_ceil(VALUE) * VALUE).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Sizes in bytes, rounded up by [`payload_sizes`].
    pub sizes: Vec<usize>,
    /// Repetitions and time of each size with each encoding.
    pub budget: Budget,
    /// The node program; it must call [`node`] with the same options.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// One encoding at one size.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    /// The encoding.
    pub encoding: Encoding,
    /// The one-way times; `size` is the values' bytes.
    pub sample: Sample,
}

/// The table.
#[derive(Clone, Debug)]
pub struct Report {
    /// What the two nodes talked over: `shm`, or `tcp/LINK`.
    pub path: String,
    /// Per size, ascending, one row per encoding in the order of
    /// [`Encoding::ALL`].
    pub rows: Vec<Row>,
    /// Repetitions per size and encoding.
    pub repetitions: u32,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `init` failed on a node.
    #[error("starting the node")]
    Init(#[source] InitError),
    /// A ping-pong failed.
    #[error("ping-pong with {} encoding", name(*.0))]
    Pingpong(Encoding, #[source] pingpong::Error),
    /// The job could not be started.
    #[error("starting the job")]
    Launch(#[source] LaunchError),
    /// The job failed.
    #[error("the job failed with status {0}")]
    JobFailed(i32),
    /// A node could not report a result to the launcher.
    #[error("reporting a result")]
    Report(#[source] threadwire::ReportError),
}

/// Packs the values a side holds with one encoding, unpacks them into a
/// new vector on receipt.
struct PackedValues {
    encoding: Encoding,
}

impl Bounce for PackedValues {
    type Held = Vec<f64>;

    fn initial(&mut self, size: usize) -> Vec<f64> {
        (0..size / VALUE).map(|i| i as f64 + 0.5).collect()
    }

    fn make_payload(&mut self, values: Vec<f64>) -> Payload {
        // In place, the values become a segment of their own; the packer's
        // buffer holds only the item header.
        let copied = match self.encoding {
            Encoding::InPlace => 0,
            _ => std::mem::size_of_val(values.as_slice()),
        };
        let mut packer = Packer::with_capacity(self.encoding, ITEM_HEADER + copied);
        packer.pack_vec(values);
        packer.finish()
    }

    fn read_message(&mut self, message: Message) -> Result<Vec<f64>, pingpong::Error> {
        message
            .unpack()
            .and_then(|mut unpacker| unpacker.unpack_vec::<f64>())
            .map_err(pingpong::Error::Unpack)
    }
}

/// Runs the job (module docs), its nodes on the two first hosts of `net`
/// if given, and returns the table; `on_step` is called for each row as it
/// comes, `on_event` sees every other event of the job.
pub fn run(
    options: &Options,
    net: Option<&Net>,
    mut on_step: impl FnMut(),
    mut on_event: impl FnMut(&Event),
) -> Result<Report, Error> {
    let mut job = JobSpec::new(2, &options.program).args(options.args.clone());
    let path = match net {
        Some(net) => {
            job = job
                .env(threadwire::env::CHANNEL, "tcp")
                .hosts(net.launch_hosts());
            format!("tcp/{}", net.link)
        }
        None => {
            job = job.env(threadwire::env::CHANNEL, "shm");
            "shm".to_string()
        }
    };
    let mut rows = Vec::new();
    let report = threadwire_launch::run(&job, |ev| match NodeResult::decode(ev) {
        Some((_, NodeResult::Encodings { encoding, sample })) if parse(&encoding).is_some() => {
            rows.push(Row {
                encoding: parse(&encoding).expect("a known encoding"),
                sample,
            });
            on_step();
        }
        _ => on_event(ev),
    })
    .map_err(Error::Launch)?;
    if report.status != 0 {
        return Err(Error::JobFailed(report.status));
    }
    Ok(Report {
        path,
        rows,
        repetitions: options.budget.repetitions.max(1),
    })
}

/// The number of rows a run of `options` measures, for progress.
pub fn rows(options: &Options) -> usize {
    payload_sizes(&options.sizes).len() * Encoding::ALL.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_up_to_whole_values() {
        assert_eq!(payload_sizes(&[1, 2, 4, 8, 20, 1000, 0]), [0, 8, 24, 1000]);
    }

    #[test]
    fn every_encoding_reads_back_what_it_packed() {
        for encoding in Encoding::ALL {
            let mut bounce = PackedValues { encoding };
            let values = bounce.initial(80);
            assert_eq!(values.len(), 10);
            let payload = bounce.make_payload(values.clone());
            assert_eq!(payload.len(), ITEM_HEADER + 80, "{encoding:?}");
            let back = payload.unpack().unwrap().unpack_vec::<f64>().unwrap();
            assert_eq!(back, values, "{encoding:?}");
        }
    }
}
