//! The distributed JPEG pipeline of NCS (1995, §5.2 and Table 2): half
//! the nodes compress an image, the other half decompress it, the master
//! puts it back together and checks it by PSNR; timed with one thread
//! per node against two.
//!
//! **Roles.** On N nodes (N even), nodes 0 … N/2 − 1 compress and nodes
//! N/2 … N − 1 decompress; compressing node i sends to node N − i, node 0
//! to node N/2 (the seed's pairing, Figures 17 and 18). On one node,
//! node 0 does both halves: its compressing threads send to its own
//! decompressing threads. The master is thread 0 of node 0 (the thread
//! that joined the job, an OS thread of its own); every node spawns T
//! compressing threads if it compresses, then T decompressing threads if
//! it decompresses, as fibers on the node's workers. A configuration of
//! t ≤ T threads per node uses the first t of each role.
//!
//! **Strips.** With P = max(1, N/2) compressing nodes, the image is cut
//! into S = P·t strips of whole rows, strip s being rows s·H/S to
//! (s+1)·H/S. Thread k of compressing node i takes strip s = k·P + i: as
//! in the seed, thread 1 of every node works on the first part of the
//! image and thread 2 on the second, and thread k of node i hands its
//! strip to thread k of node i's partner.
//!
//! 1. **Start.** For each round the master starts its clock and sends
//!    every thread of the configuration t, the image's width and height
//!    and the quality; each thread starts its own clock on receipt, the
//!    master's to within the start's latency.
//! 2. **Distribute.** The master sends strip s to its compressing thread,
//!    k = 0's strips of every node first, so every node's first strip
//!    leaves before any second one. A thread waits in its receive: the
//!    second thread of a node is held until its data is read (the seed's
//!    `NCS_block` until the host has read the file), while the first is
//!    already compressing.
//! 3. **Compress.** The thread encodes its rows with jpeg-encoder at the
//!    quality given (see **Codec** below for the crate and why).
//! 4. **Send.** It sends the JPEG bytes to its partner thread on the
//!    decompressing node.
//! 5. **Decompress.** The partner decodes the strip with jpeg-decoder,
//!    checks it has the strip's shape, and sends the pixels to the master.
//! 6. **Combine.** The master takes the decoded strips in the order it
//!    sent them, each straight into its rows of the output image. The
//!    clock stops at the last strip's last byte.
//! 7. **Verify and account.** The master computes the PSNR of the output
//!    against the original, of the whole and of every strip; under
//!    [`min_psnr`] for the quality the job fails. Every thread of the
//!    round reports when on its clock its strip arrived and left its
//!    hands, and the master splits each strip's time into the five
//!    stages ([`Round`]).
//!
//! **Where two threads win.** With one thread per node a pipeline runs
//! its stages one after another: node i's whole part is received, then
//! compressed, sent, decompressed and combined, and the decompressing
//! node idles while its partner compresses. With two, the first strip
//! of a node is compressed while the second is still arriving, and is
//! decompressed on the partner while the second is being compressed: the
//! stages of the two halves overlap, as the seed's Figure 16 shows.
//!
//! Reading the figures: the overlap gains only where there is something
//! idle to fill. On one host the strips move through shared memory in
//! microseconds, so communication hardly matters, and what two threads
//! can win is cores left idle: on one node, or two nodes (one
//! compressing, one decompressing) of a two-core host, one thread per
//! node leaves a core idle and two threads fill it; with more nodes than
//! cores every core is already busy, and the second thread's extra
//! messages and switches cost a little. Between emulated hosts on
//! shaped links (`threadwire net up --link gige`), the seed's case, the
//! strips' transfers overlap the codec. A stage's time is the mean over
//! the strips, waits included ([`Round`]), so the report's computation
//! (compress + decompress) and communication (distribute + send +
//! combine) show which of the two a configuration spends its time on.
//!
//! **Codec.** Strips are encoded by `jpeg-encoder` and decoded by
//! `jpeg-decoder`, rather than by a DCT pipeline of our own: the seed ran
//! the Independent JPEG Group's sequential codec, a real one, and the
//! app's point is the distribution around it, not the codec. Both crates
//! are pure Rust (no C toolchain on the nodes), single-threaded as used
//! here (jpeg-decoder's rayon feature is off, so a strip is decoded by the
//! thread the app gives it, and one thread per node means one core per
//! node), and bound what they allocate by the image's size. jpeg-encoder
//! is the encoder of the image-rs family. jpeg-decoder was already in the
//! workspace's lock file and decodes the baseline files jpeg-encoder
//! writes; the image crate has since moved to zune-jpeg, the one to swap
//! in should jpeg-decoder stop being kept up.
//!
//! Chroma is kept whole (4:4:4), not subsampled 4:2:0 as libjpeg and
//! jpeg-encoder do by default below quality 90: with 4:2:0 this encoder
//! and decoder bring short strips back badly at their edge rows
//! (measured at quality 75 on the synthetic image: 12.8 dB for a strip
//! of 64 x 2, 23.6 for 64 x 8, against 31.7 and 32.1 in 4:4:4), and on
//! many nodes with two threads the strips are short. It costs about half
//! again in JPEG bytes (15 449 for the 448 x 448 image at quality 75,
//! against 9 917).
//!
//! The master runs one untimed round per configuration (first touch of
//! the buffers), then `rounds` timed rounds of each, alternating, and
//! reports medians.
//!
//! **Failures.** Every receive names its sender, so a lost node fails
//! the receive or send waiting on it with `PeerLost`, and the failure
//! reaches the master through the chain of partners rather than hanging
//! it. A thread whose round fails otherwise (a strip the codec refuses,
//! a malformed message) tells the thread downstream of it before it
//! returns the error, a compressing thread its partner and that partner
//! the master, which fails naming the chain ("n3.t1 failed: n1.t1
//! failed: …"): nobody waits for a strip that will not come.

mod codec;
mod image;
mod master;
mod pipeline;
mod report;

pub use codec::{compress, decompress, CodecError};
pub use image::{psnr, strip_rows, Image, ImageError, CHANNELS, MAX_IMAGE_BYTES, MAX_SIDE};
pub use report::{improvement, Measured, Report, Round, SeedRow, NCS_TABLE_2};

use pipeline::{pipeline_thread, unexpected};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use threadwire::{Address, Encoding, Endpoint, Packer, RecvError, SendError, UnpackError, ANY_TAG};

const TAG_START: u32 = 1;
const TAG_STRIP: u32 = 2;
const TAG_JPEG: u32 = 3;
const TAG_DECODED: u32 = 4;
const TAG_TIMES: u32 = 5;
const TAG_FAILED: u32 = 6;

const MASTER: Address = Address::new(0, 0);

/// The most nodes of a job.
pub const MAX_NODES: u32 = 64;
/// The most threads per node in each role.
pub const MAX_THREADS: u32 = 8;

/// The PSNR that the image and each of its strips must reach at
/// `quality`, in dB: 10 + quality/5 (10.2 at quality 1, 25 at 75, 30 at
/// 100). Measured on the synthetic image, the whole of it comes back at
/// 24 dB at quality 1, 42 at 75 and 50 at 100; a strip of 64 x 40 at
/// 19.7, 35 and 50, and the shortest, 64 x 2, at 12.7, 31.7 and 49. A
/// strip lost or garbled falls far below the bar (a zeroed one under
/// 10 dB); one put in its neighbour's place falls to 17 dB at best,
/// under the bar from quality 35. An image of noise, which JPEG cannot
/// compress, can fall under it at low qualities.
pub fn min_psnr(quality: u8) -> f64 {
    10.0 + f64::from(quality) / 5.0
}

/// Where the image comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Picture {
    /// [`Image::synthetic`] of this size and seed.
    Synthetic {
        /// Pixels of a row.
        width: usize,
        /// Rows.
        height: usize,
        /// Seed of its discs and noise.
        seed: u64,
    },
    /// A binary PPM file, read by the master.
    Ppm(PathBuf),
}

/// The image, the codec's quality and the configurations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// The image.
    pub picture: Picture,
    /// JPEG quality, 1–100.
    pub quality: u8,
    /// Threads per node in each role in the threaded configuration, from
    /// 1 to [`MAX_THREADS`]; 1 runs only one thread per node.
    pub threads: u32,
    /// Timed rounds of each configuration.
    pub rounds: usize,
}

impl Default for Config {
    /// The seed's size: 448 x 448 RGB (602 112 bytes, its "600 Kbyte
    /// image"), quality 75, two threads per node.
    fn default() -> Self {
        Config {
            picture: Picture::Synthetic {
                width: 448,
                height: 448,
                seed: 1995,
            },
            quality: 75,
            threads: 2,
            rounds: 5,
        }
    }
}

/// Why a configuration cannot run on a number of nodes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The nodes are neither 1 nor an even number up to [`MAX_NODES`].
    #[error("{0} nodes: the JPEG pipeline runs on 1 node or an even number of nodes up to {MAX_NODES} (half compress, half decompress)")]
    Nodes(u32),
    /// The threads per node are not from 1 to [`MAX_THREADS`].
    #[error("{0} threads per node: from 1 to {MAX_THREADS}")]
    Threads(u32),
    /// The quality is not from 1 to 100.
    #[error("quality {0}: from 1 to 100")]
    Quality(u8),
    /// No rounds.
    #[error("at least one round")]
    NoRounds,
    /// A side is zero or longer than baseline JPEG's [`MAX_SIDE`].
    #[error("a {width}x{height} image: each side from 1 to {MAX_SIDE} pixels")]
    Side {
        /// Pixels of a row.
        width: usize,
        /// Rows.
        height: usize,
    },
    /// More than [`MAX_IMAGE_BYTES`] of pixels.
    #[error("a {width}x{height} RGB image is more than {MAX_IMAGE_BYTES} bytes (64 MiB)")]
    TooLarge {
        /// Pixels of a row.
        width: usize,
        /// Rows.
        height: usize,
    },
    /// Fewer rows than strips.
    #[error("{height} rows for {strips} strips: each compressing thread takes at least one row")]
    TooFewRows {
        /// Rows of the image.
        height: usize,
        /// Strips of the threaded configuration.
        strips: usize,
    },
    /// The image file cannot be used.
    #[error(transparent)]
    Image(#[from] ImageError),
}

impl Config {
    /// The image's width and height: the synthetic size, or the file's
    /// header.
    pub fn size(&self) -> Result<(usize, usize), ConfigError> {
        match &self.picture {
            Picture::Synthetic { width, height, .. } => Ok((*width, *height)),
            Picture::Ppm(path) => Ok(Image::ppm_size(path)?),
        }
    }

    /// Whether this configuration runs on `nodes` nodes.
    pub fn check(&self, nodes: u32) -> Result<(), ConfigError> {
        if nodes == 0 || nodes > MAX_NODES || (nodes > 1 && nodes % 2 == 1) {
            return Err(ConfigError::Nodes(nodes));
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return Err(ConfigError::Threads(self.threads));
        }
        if self.quality == 0 || self.quality > 100 {
            return Err(ConfigError::Quality(self.quality));
        }
        if self.rounds == 0 {
            return Err(ConfigError::NoRounds);
        }
        let (width, height) = self.size()?;
        check_size(width, height)?;
        let strips = compressing_nodes(nodes) as usize * self.threads as usize;
        if height < strips {
            return Err(ConfigError::TooFewRows { height, strips });
        }
        Ok(())
    }
}

fn check_size(width: usize, height: usize) -> Result<(), ConfigError> {
    if !(1..=MAX_SIDE).contains(&width) || !(1..=MAX_SIDE).contains(&height) {
        return Err(ConfigError::Side { width, height });
    }
    if width * height * CHANNELS > MAX_IMAGE_BYTES {
        return Err(ConfigError::TooLarge { width, height });
    }
    Ok(())
}

/// Why the pipeline failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot run on this job.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The image file could not be read.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// A send failed.
    #[error(transparent)]
    Send(#[from] SendError),
    /// A receive failed.
    #[error(transparent)]
    Recv(#[from] RecvError),
    /// A message did not have the expected layout.
    #[error("malformed message: {0}")]
    Unpack(#[from] UnpackError),
    /// A message had the layout but not the expected contents.
    #[error("unexpected message: {0}")]
    Protocol(String),
    /// A strip could not be encoded or decoded.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// The image came back too far from the original.
    #[error("verification failed: {0}")]
    Wrong(String),
    /// A pipeline thread failed, as it told downstream.
    #[error("{at} failed: {reason}")]
    Failed {
        /// The thread that failed first.
        at: Address,
        /// Its error.
        reason: String,
    },
    /// A thread of the pipeline panicked.
    #[error("pipeline thread {0} panicked")]
    Panicked(Address),
    /// The node did not start.
    #[error("starting the node")]
    Init(#[from] threadwire::InitError),
}

/// A node of a JPEG job launched by `threadwire apps jpeg`: joins the
/// job, runs [`run`] on `cfg` and returns the master's report on node 0
/// (for the caller to show) and `None` elsewhere.
pub fn node(cfg: Config) -> Result<Option<Report>, Error> {
    let ep = threadwire::init()?;
    run(&ep, cfg)
}

/// What a pipeline thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Compress,
    Decompress,
}

/// Compressing nodes P: half the job, or the one node.
fn compressing_nodes(nodes: u32) -> u32 {
    (nodes / 2).max(1)
}

fn compresses(node: u32, nodes: u32) -> bool {
    nodes == 1 || node < nodes / 2
}

fn decompresses(node: u32, nodes: u32) -> bool {
    nodes == 1 || node >= nodes / 2
}

/// The decompressing node that compressing node `i` sends to: N − i,
/// node 0's being N/2 (itself on one node).
fn partner(i: u32, nodes: u32) -> u32 {
    match i {
        0 => nodes / 2,
        _ => nodes - i,
    }
}

/// The compressing node that sends to decompressing node `j`.
fn sender(j: u32, nodes: u32) -> u32 {
    match j == nodes / 2 {
        true => 0,
        false => nodes - j,
    }
}

/// Every (role, node) of the job: the compressing nodes, then the
/// decompressing ones.
fn pipeline_nodes(nodes: u32) -> impl Iterator<Item = (Role, u32)> {
    let compressing = (0..nodes)
        .filter(move |&n| compresses(n, nodes))
        .map(|n| (Role::Compress, n));
    let decompressing = (0..nodes)
        .filter(move |&n| decompresses(n, nodes))
        .map(|n| (Role::Decompress, n));
    compressing.chain(decompressing)
}

/// Thread `k` of `role` on `node`, with `threads` spawned per role.
fn address(role: Role, node: u32, k: u32, nodes: u32, threads: u32) -> Address {
    let before = match role {
        Role::Decompress if nodes == 1 => threads,
        _ => 0,
    };
    Address::new(node, 1 + before + k)
}

/// Runs the pipeline on this node; thread 0's endpoint must be passed.
/// Returns the master's report on node 0 and `None` elsewhere.
pub fn run(ep: &Endpoint, cfg: Config) -> Result<Option<Report>, Error> {
    let node = ep.node().clone();
    let (id, nodes) = (node.id(), node.nodes());
    cfg.check(nodes)?;
    // Spawned first, compressors before decompressors, so that `address`
    // names them on every node.
    let roles = [Role::Compress, Role::Decompress]
        .into_iter()
        .filter(|role| match role {
            Role::Compress => compresses(id, nodes),
            Role::Decompress => decompresses(id, nodes),
        })
        .flat_map(|role| (0..cfg.threads).map(move |k| (role, k)));
    let spawned = cfg.threads;
    let handles: Vec<_> = roles
        .map(|(role, k)| node.spawn(move |ep| pipeline_thread(&ep, role, k, spawned)))
        .collect();
    let report = match id {
        0 => {
            let report = master::master(ep, &cfg);
            // Every pipeline thread waits for a start: stop them even
            // after a failure.
            for (role, n) in pipeline_nodes(nodes) {
                for k in 0..cfg.threads {
                    let to = address(role, n, k, nodes, cfg.threads);
                    let _ = ep.send(to, TAG_START, start_message(0, 0, 0, 0));
                }
            }
            Some(report?)
        }
        _ => None,
    };
    for h in handles {
        let address = h.address();
        h.join().map_err(|_| Error::Panicked(address))??;
    }
    Ok(report)
}

fn start_message(threads: u32, width: usize, height: usize, quality: u8) -> Packer {
    let mut p = Packer::new(Encoding::InPlace);
    p.pack(threads)
        .pack(width as u64)
        .pack(height as u64)
        .pack(quality);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_size_runs_on_its_node_counts() {
        let cfg = Config::default();
        for nodes in [1, 2, 4, 8, 64] {
            assert!(cfg.check(nodes).is_ok(), "{nodes}");
        }
        assert_eq!(cfg.size().unwrap(), (448, 448));
    }

    #[test]
    fn bad_configurations_are_refused_with_their_reason() {
        let cfg = Config::default();
        let sized = |width, height| Config {
            picture: Picture::Synthetic {
                width,
                height,
                seed: 1,
            },
            ..cfg.clone()
        };
        assert!(matches!(cfg.check(3), Err(ConfigError::Nodes(3))));
        assert!(matches!(cfg.check(0), Err(ConfigError::Nodes(0))));
        assert!(matches!(cfg.check(66), Err(ConfigError::Nodes(66))));
        let threads = |threads| Config {
            threads,
            ..cfg.clone()
        };
        assert!(matches!(threads(0).check(2), Err(ConfigError::Threads(0))));
        assert!(matches!(threads(9).check(2), Err(ConfigError::Threads(9))));
        let quality = |quality| Config {
            quality,
            ..cfg.clone()
        };
        assert!(matches!(quality(0).check(2), Err(ConfigError::Quality(0))));
        assert!(matches!(
            quality(101).check(2),
            Err(ConfigError::Quality(101))
        ));
        let none = Config {
            rounds: 0,
            ..cfg.clone()
        };
        assert!(matches!(none.check(2), Err(ConfigError::NoRounds)));
        assert!(matches!(
            sized(0, 10).check(2),
            Err(ConfigError::Side { .. })
        ));
        assert!(matches!(
            sized(70000, 10).check(2),
            Err(ConfigError::Side { .. })
        ));
        assert!(matches!(
            sized(65535, 65535).check(2),
            Err(ConfigError::TooLarge { .. })
        ));
        assert!(matches!(
            sized(16, 7).check(8),
            Err(ConfigError::TooFewRows {
                height: 7,
                strips: 8
            })
        ));
        assert!(sized(16, 8).check(8).is_ok());
        let missing = Config {
            picture: Picture::Ppm("/nonexistent/image.ppm".into()),
            ..cfg.clone()
        };
        let message = missing.check(2).unwrap_err().to_string();
        assert!(message.contains("/nonexistent/image.ppm"), "{message}");
    }

    #[test]
    fn every_compressing_node_has_its_own_partner() {
        for nodes in [2u32, 4, 6, 8, 64] {
            let mut partners: Vec<u32> = (0..nodes / 2).map(|i| partner(i, nodes)).collect();
            for (i, &j) in partners.iter().enumerate() {
                assert!(decompresses(j, nodes) && !compresses(j, nodes));
                assert_eq!(sender(j, nodes), i as u32);
            }
            partners.sort();
            partners.dedup();
            assert_eq!(partners.len() as u32, nodes / 2);
        }
        assert_eq!(partner(1, 8), 7);
        assert_eq!(partner(0, 8), 4);
        assert_eq!((partner(0, 1), sender(0, 1)), (0, 0));
    }

    #[test]
    fn one_node_numbers_decompressors_after_compressors() {
        assert_eq!(address(Role::Compress, 0, 1, 1, 2), Address::new(0, 2));
        assert_eq!(address(Role::Decompress, 0, 0, 1, 2), Address::new(0, 3));
        assert_eq!(address(Role::Decompress, 3, 1, 4, 2), Address::new(3, 2));
    }

    #[test]
    fn a_strip_in_its_neighbours_place_falls_under_the_bar() {
        let image = Image::synthetic(448, 448, 1995);
        let strips = 8;
        let worst = (0..strips - 1)
            .map(|s| {
                let here = image.rows(strip_rows(448, strips, s));
                let next = image.rows(strip_rows(448, strips, s + 1));
                psnr(here, next)
            })
            .fold(0.0, f64::max);
        assert!(worst < min_psnr(35), "{worst:.1} dB");
        let zeroed = (0..strips)
            .map(|s| {
                let here = image.rows(strip_rows(448, strips, s));
                psnr(here, &vec![0; here.len()])
            })
            .fold(0.0, f64::max);
        assert!(zeroed < 10.0, "{zeroed:.1} dB");
    }

    #[test]
    fn verification_fails_on_a_zeroed_strip_naming_it() {
        let original = Image::synthetic(64, 32, 5);
        let (whole, worst) = master::verify(&original, &original, (4, 2), 75).unwrap();
        assert_eq!((whole, worst), (f64::INFINITY, f64::INFINITY));
        let mut decoded = original.clone();
        let rows = strip_rows(32, 4, 2);
        decoded.pixels[rows.start * 64 * 3..rows.end * 64 * 3].fill(0);
        let message = master::verify(&original, &decoded, (4, 2), 75)
            .unwrap_err()
            .to_string();
        assert!(message.contains(", strip 2 "), "{message}");
        assert!(message.contains("under the 25.0 dB"), "{message}");
    }

    #[test]
    fn the_threshold_rises_with_quality() {
        assert_eq!(min_psnr(75), 25.0);
        assert!(min_psnr(1) < min_psnr(100));
    }
}
