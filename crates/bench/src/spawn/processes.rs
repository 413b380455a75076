//! The process rows of `bench spawn`: jobs of N nodes under
//! [`threadwire_launch::run`], each split into a [`Timeline`] by the
//! nodes' clocks (the parent module's docs).

use super::{Error, Kind, Millis, Options, Row, Timeline, JOB_TIMEOUT};
use crate::node_result::NodeResult;
use threadwire_launch::{Event, JobSpec};

/// One job's milliseconds from the call of `run`.
struct Job {
    running: f64,
    initialized: f64,
    joined: f64,
    finished: f64,
}

pub(super) fn processes(
    options: &Options,
    count: u32,
    repetitions: u32,
    on_event: &mut impl FnMut(&Event),
) -> Result<Row, Error> {
    let mut spec = JobSpec::new(count, &options.program)
        .args(options.args.iter().cloned())
        .timeout(JOB_TIMEOUT);
    if !options.hosts.is_empty() {
        spec = spec.hosts(options.hosts.clone());
    }
    launch_once(&spec, on_event)?;
    let mut jobs = Vec::with_capacity(repetitions as usize);
    for _ in 0..repetitions {
        jobs.push(launch_once(&spec, on_event)?);
    }
    let column = |of: fn(&Job) -> f64| Millis::of(&mut jobs.iter().map(of).collect::<Vec<_>>());
    Ok(Row {
        kind: Kind::Processes,
        count,
        joined: column(|j| j.joined),
        finished: Some(column(|j| j.finished)),
        timeline: Some(Timeline {
            running: column(|j| j.running),
            initialized: column(|j| j.initialized),
        }),
    })
}

fn launch_once(spec: &JobSpec, on_event: &mut impl FnMut(&Event)) -> Result<Job, Error> {
    // Per node: its code running, past init (its clock), report read (ours).
    let mut stamps: Vec<Option<[u64; 3]>> = vec![None; spec.nodes as usize];
    let t0 = monotonic_ns();
    let report = threadwire_launch::run(spec, |ev| {
        let read = monotonic_ns();
        match NodeResult::decode(ev) {
            Some((
                node,
                NodeResult::Joined {
                    started_ns,
                    joined_ns,
                },
            )) if (node as usize) < stamps.len() => {
                stamps[node as usize] = Some([started_ns, joined_ns, read])
            }
            _ => on_event(ev),
        }
    })
    .map_err(Error::Launch)?;
    let finished = monotonic_ns();
    if report.status != 0 {
        return Err(Error::Job {
            status: report.status,
            failure: report.failure.map(|(_, cause)| cause),
        });
    }
    let mut last = [0u64; 3];
    for (node, s) in stamps.iter().enumerate() {
        let s = s.ok_or(Error::NoReport { node: node as u32 })?;
        for (l, s) in last.iter_mut().zip(s) {
            *l = (*l).max(s);
        }
    }
    let ms = |t: u64| t.saturating_sub(t0) as f64 / 1e6;
    Ok(Job {
        running: ms(last[0]),
        initialized: ms(last[1]),
        joined: ms(last[2]),
        finished: ms(finished),
    })
}

/// Nanoseconds of `CLOCK_MONOTONIC`, the clock all processes of a host share.
pub(super) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a writable timespec; CLOCK_MONOTONIC always exists on
    // Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotonic_clock_moves_forward() {
        // A nanosecond clock changes within a few readings: no need to
        // wait for it.
        let a = monotonic_ns();
        let b = (0..1_000_000).map(|_| monotonic_ns()).find(|&b| b != a);
        assert!(b.is_some_and(|b| b > a), "{a} then {b:?}");
    }
}
