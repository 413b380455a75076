//! Ping-pong: one endpoint sends `size` bytes, the other sends them back;
//! one-way time is half the round trip. Each size runs for a time budget,
//! in several repetitions; the median repetition is reported with min–max.

use std::time::{Duration, Instant};
use threadwire::{Address, Endpoint, RecvError, SendError};

/// Sizes from 8 B to 16 MiB, powers of two.
pub fn default_sizes() -> Vec<usize> {
    (3..=24).map(|p| 1usize << p).collect()
}

/// One size's result.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// Message size in bytes.
    pub size: usize,
    /// Median one-way time.
    pub one_way: Duration,
    /// Fastest repetition.
    pub min: Duration,
    /// Slowest repetition.
    pub max: Duration,
}

impl Sample {
    /// Bandwidth at the median, in MB/s (10^6 bytes per second).
    pub fn mbps(&self) -> f64 {
        self.size as f64 / self.one_way.as_secs_f64() / 1e6
    }
}

/// Why a run failed.
#[derive(Debug)]
pub enum Error {
    /// A send failed.
    Send(SendError),
    /// A receive failed.
    Recv(RecvError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Send(e) => e.fmt(f),
            Error::Recv(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

/// How long and how often.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Repetitions per size.
    pub repetitions: u32,
    /// Time per repetition (the round count is calibrated to it).
    pub per_repetition: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            repetitions: 5,
            per_repetition: Duration::from_millis(100),
        }
    }
}

const TAG: u32 = 0x7070;

/// Runs the ping-pong with `partner`; the `leader` times and returns the
/// samples, the partner returns an empty list. Both sides must pass the
/// same sizes and budget.
pub fn run(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    sizes: &[usize],
    budget: Budget,
) -> Result<Vec<Sample>, Error> {
    let mut samples = Vec::new();
    for &size in sizes {
        let mut buf = vec![0u8; size];
        // Calibrate: the leader times 4 round trips and tells the partner
        // how many rounds fill a repetition.
        let rounds = if leader {
            let t = Instant::now();
            for _ in 0..4 {
                buf = round_trip(ep, partner, buf)?;
            }
            let per = t.elapsed() / 4;
            let rounds = (budget.per_repetition.as_secs_f64() / per.as_secs_f64().max(1e-9))
                .clamp(2.0, 1e6) as u64;
            ep.send(partner, TAG + 1, rounds.to_le_bytes().to_vec())
                .map_err(Error::Send)?;
            rounds
        } else {
            for _ in 0..4 {
                buf = echo(ep, partner)?;
            }
            let m = ep.recv(partner, TAG + 1).map_err(Error::Recv)?.into_vec();
            u64::from_le_bytes(m.try_into().unwrap_or([0; 8]))
        };
        let mut reps = Vec::new();
        for _ in 0..budget.repetitions {
            let t = Instant::now();
            for _ in 0..rounds {
                buf = if leader {
                    round_trip(ep, partner, buf)?
                } else {
                    echo(ep, partner)?
                };
            }
            reps.push(t.elapsed() / (2 * rounds as u32));
        }
        if leader {
            let (one_way, min, max) = crate::spread(&mut reps);
            samples.push(Sample {
                size,
                one_way,
                min,
                max,
            });
        }
    }
    Ok(samples)
}

fn round_trip(ep: &Endpoint, partner: Address, buf: Vec<u8>) -> Result<Vec<u8>, Error> {
    ep.send(partner, TAG, buf).map_err(Error::Send)?;
    Ok(ep.recv(partner, TAG).map_err(Error::Recv)?.into_vec())
}

fn echo(ep: &Endpoint, partner: Address) -> Result<Vec<u8>, Error> {
    let m = ep.recv(partner, TAG).map_err(Error::Recv)?.into_vec();
    ep.send(partner, TAG, m).map_err(Error::Send)?;
    Ok(Vec::new())
}
