//! A cache line ping-ponged between two threads through one `AtomicU64`:
//! the driver writes an odd value and waits for the next even one, the
//! partner waits for the odd value and writes the even one. One-way time
//! is half a round trip.

use super::cpus::Placement;
use super::{measured, on_two_threads, repeat, Measured, Options, Timed};
use std::hint;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Instant;

/// Written instead of the next odd value: the partner returns.
const STOP: u64 = u64::MAX;

/// The ball, alone on its cache line (128 bytes: adjacent-line prefetch
/// pairs 64-byte lines), so only the ping-pong moves it.
#[repr(align(128))]
struct Ball(AtomicU64);

/// How a thread waits for the other's write.
#[derive(Clone, Copy, Debug)]
enum Wait {
    /// Re-read at once, with the CPU's spin-wait hint, as a spinning
    /// receiver does.
    Spin,
    /// `sched_yield` between reads, so that a thread on the same core runs.
    Yield,
}

impl Wait {
    fn pause(self) {
        match self {
            Wait::Spin => hint::spin_loop(),
            Wait::Yield => thread::yield_now(),
        }
    }
}

/// Two spinning threads on two cores; missing with one CPU.
pub(super) fn two_cores(options: &Options, placement: &Placement) -> (Measured, String) {
    let note = format!(
        "spinning on one AtomicU64; round trip / 2; {}",
        placement.describe_two()
    );
    if let Placement::One(cpu) = placement {
        let why = format!("one CPU available (cpu {cpu}): no second core to pass a line to");
        return (Measured::Missing(why), note);
    }
    let timed = ping_pong(options, placement.two_cpus(), Wait::Spin);
    let result = timed.map(|t| t.nanoseconds(2.0));
    (measured(result, "pinning"), note)
}

/// Two yielding threads on one core: each one-way time is a hand-off by
/// the scheduler.
pub(super) fn one_core(options: &Options, placement: &Placement) -> (Measured, String) {
    let note = format!(
        "both on {}, each sched_yield()s until the other has written: a scheduler hand-off",
        placement.describe_one()
    );
    let timed = ping_pong(options, placement.one_cpu(), Wait::Yield);
    let result = timed.map(|t| t.nanoseconds(2.0));
    (measured(result, "pinning"), note)
}

/// The timed round trips, the threads on `cpus` (driver's, partner's).
fn ping_pong(options: &Options, cpus: Option<(usize, usize)>, wait: Wait) -> io::Result<Timed> {
    let ball = Ball(AtomicU64::new(0));
    let ball = &ball;
    on_two_threads(
        cpus,
        |_| {
            // The last even value seen: the partner's last reply.
            let mut value = 0;
            let timed = repeat(options, |round_trips| {
                let start = Instant::now();
                for _ in 0..round_trips {
                    ball.0.store(value + 1, Ordering::Release);
                    value += 2;
                    while ball.0.load(Ordering::Acquire) != value {
                        wait.pause();
                    }
                }
                Ok(start.elapsed())
            });
            ball.0.store(STOP, Ordering::Release);
            timed
        },
        |_| {
            let mut expected = 1;
            loop {
                match ball.0.load(Ordering::Acquire) {
                    STOP => return Ok(()),
                    v if v == expected => {
                        ball.0.store(v + 1, Ordering::Release);
                        expected += 2;
                    }
                    _ => wait.pause(),
                }
            }
        },
    )
}
