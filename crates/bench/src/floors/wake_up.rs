//! The cache-line ping-pong of `cache_line`, but each thread sleeps in
//! `thread::park` (a futex on Linux) until the other has written and
//! unparked it: every one-way trip wakes a sleeping thread on another
//! core. This is what a receive costs once it stops spinning, and why the
//! runtime spins before it sleeps.

use super::cpus::Placement;
use super::{measured, on_two_threads, repeat, Measured, Options};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Instant;

/// Written instead of the next odd value: the partner returns.
const STOP: u64 = u64::MAX;

pub(super) fn measure(options: &Options, placement: &Placement) -> (Measured, String) {
    let note = format!(
        "thread::park / unpark (a futex); round trip / 2; {}",
        placement.describe_two()
    );
    let ball = AtomicU64::new(0);
    let ball = &ball;
    let timed = on_two_threads(
        placement.two_cpus(),
        |partner| {
            // The last even value seen: the partner's last reply.
            let mut value = 0;
            let timed = repeat(options, |round_trips| {
                let start = Instant::now();
                for _ in 0..round_trips {
                    ball.store(value + 1, Ordering::Release);
                    partner.unpark();
                    value += 2;
                    // park may return spuriously, or at once for an
                    // earlier unpark: the ball says whether it is ours.
                    while ball.load(Ordering::Acquire) != value {
                        thread::park();
                    }
                }
                Ok(start.elapsed())
            });
            ball.store(STOP, Ordering::Release);
            partner.unpark();
            timed
        },
        |driver| {
            let mut expected = 1;
            loop {
                match ball.load(Ordering::Acquire) {
                    STOP => return Ok(()),
                    v if v == expected => {
                        ball.store(v + 1, Ordering::Release);
                        driver.unpark();
                        expected += 2;
                    }
                    _ => thread::park(),
                }
            }
        },
    );
    let result = timed.map(|t| t.nanoseconds(2.0));
    (measured(result, "pinning"), note)
}
