//! Jobs and nodes as the Slurm clients print them: `sbatch --parsable`,
//! `scontrol -o show job`, `sinfo -N -o '%N %T'`.

use std::fmt;

/// A job's id, as `sbatch` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobId(pub u32);

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How a job ended (`JobState=` of `scontrol show job`, the terminal ones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Every step ended with status 0.
    Completed,
    /// A step, or the batch script, ended with another status.
    Failed,
    /// `scancel`, or a dependency that cannot be met.
    Cancelled,
    /// It ran past its time limit.
    Timeout,
    /// A node it ran on failed.
    NodeFail,
    /// Another ended state, as Slurm names it (`OUT_OF_MEMORY`, …).
    Other(String),
}

impl JobState {
    /// The ended state Slurm names so, `None` for a job still pending or
    /// running (or one of the transient states: completing, …).
    pub(super) fn ended(name: &str) -> Option<JobState> {
        Some(match name {
            "COMPLETED" => JobState::Completed,
            "FAILED" => JobState::Failed,
            "CANCELLED" => JobState::Cancelled,
            "TIMEOUT" => JobState::Timeout,
            "NODE_FAIL" => JobState::NodeFail,
            "BOOT_FAIL" | "DEADLINE" | "OUT_OF_MEMORY" | "PREEMPTED" => {
                JobState::Other(name.to_string())
            }
            _ => return None,
        })
    }
}

/// A batch job that has ended ([`super::SlurmCluster::wait_job`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedJob {
    /// How it ended.
    pub state: JobState,
    /// `ExitCode=` as Slurm prints it: `status:signal`, `0:0` on success.
    pub exit_code: String,
    /// What the batch script wrote to its standard output and error (one
    /// file, `--output`).
    pub output: String,
}

/// The job id `sbatch --parsable` printed: `ID` or `ID;CLUSTER`.
pub(super) fn parse_job_id(printed: &str) -> Option<JobId> {
    let id = printed.trim().split(';').next()?;
    id.parse().ok().map(JobId)
}

/// The job id of `salloc`'s `salloc: Granted job allocation ID` line.
pub(super) fn parse_allocation(printed: &str) -> Option<JobId> {
    printed.lines().find_map(|line| {
        let id = line.split("Granted job allocation ").nth(1)?;
        id.trim().parse().ok().map(JobId)
    })
}

/// The value of `key=` in a line of `scontrol -o show …`.
pub(super) fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
}

/// Whether every node in a listing of `sinfo -h -N -o '%N %T'` is idle,
/// and at least `nodes` are listed.
pub(super) fn all_idle(listing: &str, nodes: usize) -> bool {
    let states: Vec<&str> = listing
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .collect();
    states.len() >= nodes && states.iter().all(|s| *s == "idle")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_listings_are_read() {
        assert_eq!(parse_job_id("17\n"), Some(JobId(17)));
        assert_eq!(parse_job_id("18;sl1\n"), Some(JobId(18)));
        assert_eq!(parse_job_id("sbatch: error\n"), None);
        let granted = "salloc: Granted job allocation 9\n";
        assert_eq!(parse_allocation(granted), Some(JobId(9)));
        assert_eq!(parse_allocation("salloc: error: no\n"), None);
        let job = "JobId=3 JobName=x.sh UserId=root(0) JobState=COMPLETED Reason=None ExitCode=0:0";
        assert_eq!(field(job, "JobState"), Some("COMPLETED"));
        assert_eq!(field(job, "ExitCode"), Some("0:0"));
        assert_eq!(field(job, "Job"), None);
        assert_eq!(JobState::ended("RUNNING"), None);
        assert_eq!(JobState::ended("FAILED"), Some(JobState::Failed));
        assert!(all_idle("tw0 idle\ntw1 idle\n", 2));
        assert!(!all_idle("tw0 idle\ntw1 unknown\n", 2));
        assert!(!all_idle("tw0 idle\n", 2));
    }
}
