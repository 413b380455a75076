//! The timed loop of a ping-pong: a [`Budget`] of repetitions per size,
//! each a run of round trips of a [`Bounce`] (or into one reused buffer),
//! its median one-way time a [`Sample`].

use super::*;

/// One size's result.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
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
    /// A received message could not be read as the [`Bounce`] expects.
    Unpack(UnpackError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Send(e) => e.fmt(f),
            Error::Recv(e) => e.fmt(f),
            Error::Unpack(e) => e.fmt(f),
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

impl Budget {
    /// `repetitions` of `ms` milliseconds each.
    pub fn from_millis(repetitions: u32, ms: u64) -> Budget {
        Budget {
            repetitions,
            per_repetition: Duration::from_millis(ms),
        }
    }
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

/// What the two sides of [`run_with`] do with the data they bounce: the
/// leader starts each size from [`initial`](Bounce::initial); then each
/// side makes the payload it sends from what it holds, and what it holds
/// from the message it receives. Both conversions are timed.
pub trait Bounce {
    /// What a side holds between a receive and its next send.
    type Held;
    /// What the leader sends first at `size` bytes.
    fn initial(&mut self, size: usize) -> Self::Held;
    /// The payload that carries `held`.
    fn make_payload(&mut self, held: Self::Held) -> Payload;
    /// What a received message leaves a side holding.
    fn read_message(&mut self, message: Message) -> Result<Self::Held, Error>;
}

/// [`run`]'s bounce: the bytes themselves, moved in and out of messages
/// without a copy.
struct OpaqueBytes;

impl Bounce for OpaqueBytes {
    type Held = Vec<u8>;

    fn initial(&mut self, size: usize) -> Vec<u8> {
        vec![0u8; size]
    }

    fn make_payload(&mut self, held: Vec<u8>) -> Payload {
        Payload::from_vec(held)
    }

    fn read_message(&mut self, message: Message) -> Result<Vec<u8>, Error> {
        Ok(message.into_vec())
    }
}

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
    run_with(ep, partner, leader, sizes, budget, &mut OpaqueBytes)
}

/// [`run`] with messages made and read by `bounce` on both sides.
pub fn run_with<B: Bounce>(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    sizes: &[usize],
    budget: Budget,
    bounce: &mut B,
) -> Result<Vec<Sample>, Error> {
    let mut samples = Vec::new();
    for &size in sizes {
        // The leader's data between round trips; the partner holds nothing
        // between an echo and the next.
        let held = leader.then(|| bounce.initial(size));
        let mut round = Bouncing { bounce, held };
        samples.extend(measure(ep, partner, leader, size, budget, &mut round)?);
    }
    Ok(samples)
}

/// [`run`] receiving as NetPIPE does ([`Receive::Into`]): each side keeps
/// one buffer of the size, sends from it by reference and receives into
/// it with [`Endpoint::recv_into`]. Both sides must pass the same sizes
/// and budget.
pub fn run_into(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    sizes: &[usize],
    budget: Budget,
) -> Result<Vec<Sample>, Error> {
    let mut samples = Vec::new();
    for &size in sizes {
        let mut round = IntoBuffer {
            buf: vec![0u8; size],
            leader,
        };
        samples.extend(measure(ep, partner, leader, size, budget, &mut round)?);
    }
    Ok(samples)
}

/// One round trip of a ping-pong, from either side.
trait Round {
    fn round(&mut self, ep: &Endpoint, partner: Address) -> Result<(), Error>;
}

/// The rounds of [`run_with`]: the leader holds data between rounds.
struct Bouncing<'a, B: Bounce> {
    bounce: &'a mut B,
    held: Option<B::Held>,
}

impl<B: Bounce> Round for Bouncing<'_, B> {
    fn round(&mut self, ep: &Endpoint, partner: Address) -> Result<(), Error> {
        self.held = step(ep, partner, self.bounce, self.held.take())?;
        Ok(())
    }
}

/// The rounds of [`run_into`]: one buffer per side, reused.
struct IntoBuffer {
    buf: Vec<u8>,
    leader: bool,
}

impl Round for IntoBuffer {
    fn round(&mut self, ep: &Endpoint, partner: Address) -> Result<(), Error> {
        let receive = |buf: &mut [u8]| {
            ep.recv_into(partner, TAG, buf)
                .map(drop)
                .map_err(Error::Recv)
        };
        let send = |buf: &[u8]| ep.send(partner, TAG, buf).map_err(Error::Send);
        if self.leader {
            send(&self.buf)?;
            receive(&mut self.buf)
        } else {
            receive(&mut self.buf)?;
            send(&self.buf)
        }
    }
}

/// Times `round` at `size`: warm-up, calibration, the repetitions; the
/// leader returns the sample.
fn measure(
    ep: &Endpoint,
    partner: Address,
    leader: bool,
    size: usize,
    budget: Budget,
    round: &mut impl Round,
) -> Result<Option<Sample>, Error> {
    // Warm up, then calibrate: the leader times a few round trips and
    // tells the partner how many rounds fill a repetition. Small sizes
    // (microseconds each) first run untimed and are calibrated over
    // more rounds: the first round trips after a job starts or a path
    // changes are far slower (cold caches, a partner still waking), and
    // calibrating on them made repetitions much shorter than the budget.
    // Large sizes keep 4 rounds: on a 10 Mbit/s link one takes seconds.
    let (warm_up, calibrate) = if size < 64 * 1024 { (32, 32) } else { (0, 4) };
    for _ in 0..warm_up {
        round.round(ep, partner)?;
    }
    let rounds = if leader {
        let t = Instant::now();
        for _ in 0..calibrate {
            round.round(ep, partner)?;
        }
        let per = t.elapsed() / calibrate;
        let rounds = (budget.per_repetition.as_secs_f64() / per.as_secs_f64().max(1e-9))
            .clamp(2.0, 1e6) as u64;
        ep.send(partner, TAG + 1, rounds.to_le_bytes().to_vec())
            .map_err(Error::Send)?;
        rounds
    } else {
        for _ in 0..calibrate {
            round.round(ep, partner)?;
        }
        let m = ep.recv(partner, TAG + 1).map_err(Error::Recv)?.into_vec();
        u64::from_le_bytes(m.try_into().unwrap_or([0; 8]))
    };
    let mut reps = Vec::new();
    for _ in 0..budget.repetitions {
        let t = Instant::now();
        for _ in 0..rounds {
            round.round(ep, partner)?;
        }
        reps.push(t.elapsed() / (2 * rounds as u32));
    }
    if !leader {
        return Ok(None);
    }
    let (one_way, min, max) = crate::spread(&mut reps);
    Ok(Some(Sample {
        size,
        one_way,
        min,
        max,
    }))
}

/// One round: the leader (holding data) sends and receives, the partner
/// receives and sends back.
fn step<B: Bounce>(
    ep: &Endpoint,
    partner: Address,
    bounce: &mut B,
    held: Option<B::Held>,
) -> Result<Option<B::Held>, Error> {
    match held {
        Some(held) => {
            ep.send(partner, TAG, bounce.make_payload(held))
                .map_err(Error::Send)?;
            let m = ep.recv(partner, TAG).map_err(Error::Recv)?;
            bounce.read_message(m).map(Some)
        }
        None => {
            let m = ep.recv(partner, TAG).map_err(Error::Recv)?;
            let held = bounce.read_message(m)?;
            ep.send(partner, TAG, bounce.make_payload(held))
                .map_err(Error::Send)?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_merges_classic_sizes_into_the_powers_of_two() {
        assert_eq!(
            sizes(10),
            [1, 2, 4, 8, 16, 20, 32, 64, 100, 128, 256, 512, 1000, 1024]
        );
        let full = sizes(24);
        assert_eq!(
            full.len(),
            25 + 7,
            "powers 2^0..=2^24 and 7 classic sizes not powers"
        );
        assert_eq!((full[0], full[full.len() - 1]), (1, 1 << 24));
        assert!(full.windows(2).all(|w| w[0] < w[1]), "{full:?}");
        assert!(CLASSIC_SIZES.iter().all(|n| full.contains(n)));
    }

    #[test]
    fn classic_sizes_above_the_largest_power_are_dropped() {
        assert_eq!(sizes(0), [1]);
        assert_eq!(sizes(3), [1, 2, 4, 8]);
        let up_to_8_mib = sizes(23);
        assert!(up_to_8_mib.contains(&1_000_000));
        assert!(!up_to_8_mib.contains(&10_000_000));
        assert_eq!(up_to_8_mib.last(), Some(&(1 << 23)));
    }

    #[test]
    fn the_fit_reads_the_medians() {
        // 1 µs + 1 ns/B at the median; min and max say otherwise.
        let samples: Vec<Sample> = [8usize, 1000, 60_000]
            .into_iter()
            .map(|size| Sample {
                size,
                one_way: Duration::from_nanos(1000 + size as u64),
                min: Duration::from_nanos(1),
                max: Duration::from_secs(1),
            })
            .collect();
        let fit = fit(&samples).unwrap();
        assert!((fit.startup_seconds - 1e-6).abs() < 1e-15, "{fit:?}");
        assert!((fit.seconds_per_byte - 1e-9).abs() < 1e-18, "{fit:?}");
    }
}
