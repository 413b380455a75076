//! Killing process groups with every descendant, whatever its group: Open
//! MPI's orted and ranks and Hydra's proxies and ranks take groups of
//! their own, so killing a launcher's group alone leaves them to die with
//! their launcher, or not.
//!
//! 1. Every descendant of the groups is found in `/proc` and stopped
//!    (SIGSTOP), scanning again until no new one turns up: a stopped
//!    process forks nothing that a later scan would miss once orphaned.
//! 2. A pidfd is opened on each while it is stopped, so each names the
//!    process found (a stopped process cannot exit and free its id).
//! 3. The groups, then the descendants, are killed (SIGKILL).
//! 4. Wait, at most `grace`, until every one has ended.

use super::{descendants, wait_all_exited, Pidfd};
use std::time::{Duration, Instant};

/// How many times step 1 scans for processes forked since the last scan.
const MAX_SCANS: usize = 10;

/// Kills the process groups led by `groups` and every descendant of them
/// (module docs); returns how many descendants were found.
///
/// Every leader must be unreaped (a child not yet waited for, or a zombie),
/// so that its id, and its group's, is still its own.
pub fn kill_groups_and_descendants(groups: &[libc::pid_t], grace: Duration) -> usize {
    let mut stopped: Vec<libc::pid_t> = Vec::new();
    for _ in 0..MAX_SCANS {
        let mut fresh = descendants(groups);
        fresh.retain(|pid| !stopped.contains(pid));
        if fresh.is_empty() {
            break;
        }
        for &pid in &fresh {
            // SAFETY: kill(2) takes no pointers; `pid` was a live
            // descendant of an unreaped leader's group a moment ago.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
        }
        stopped.extend(fresh);
    }
    let pidfds: Vec<Pidfd> = stopped
        .iter()
        .filter_map(|&pid| Pidfd::open(pid as u32).ok())
        .collect();
    for &group in groups {
        // SAFETY: kill(2) takes no pointers; the leader is unreaped (the
        // caller's contract), so the id is still its group's.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    }
    for &pid in &stopped {
        // SAFETY: as for SIGSTOP above; a stopped process cannot exit by
        // itself, so the id is still the one found.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    if let Err(e) = wait_all_exited(&pidfds, Instant::now() + grace) {
        tracing::warn!("waiting for the killed processes: {e}");
    }
    stopped.len()
}
