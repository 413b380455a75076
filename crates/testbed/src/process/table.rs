//! The process table as `/proc` shows it: for processes that are not our
//! children (a peer's ranks, in process groups of their own), which no
//! wait of ours can follow.

use std::path::{Path, PathBuf};

/// The fields of a `/proc/<pid>/stat` used here.
struct ProcessStat {
    pid: libc::pid_t,
    parent: libc::pid_t,
    group: libc::pid_t,
    /// Neither a zombie nor dead.
    live: bool,
}

fn process_stat(pid: libc::pid_t) -> Option<ProcessStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and ')'.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    Some(ProcessStat {
        pid,
        parent: fields.next()?.parse().ok()?,
        group: fields.next()?.parse().ok()?,
        live: !matches!(state, "Z" | "X"),
    })
}

/// Whether `pid` runs: false once it has ended (a zombie) or is gone.
pub fn is_live(pid: libc::pid_t) -> bool {
    process_stat(pid).is_some_and(|p| p.live)
}

/// The live processes of the process groups `groups` and their
/// descendants, whatever group those are in (Open MPI's orted and ranks,
/// Hydra's proxies and ranks take groups of their own).
pub fn descendants(groups: &[libc::pid_t]) -> Vec<libc::pid_t> {
    let table: Vec<ProcessStat> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| process_stat(entry.file_name().to_str()?.parse().ok()?))
        .collect();
    let mut found: Vec<libc::pid_t> = table
        .iter()
        .filter(|p| groups.contains(&p.group))
        .map(|p| p.pid)
        .collect();
    // Children of found processes, until a pass finds none.
    loop {
        let before = found.len();
        for p in &table {
            if found.contains(&p.parent) && !found.contains(&p.pid) {
                found.push(p.pid);
            }
        }
        if found.len() == before {
            break;
        }
    }
    found.retain(|&pid| table.iter().any(|p| p.pid == pid && p.live));
    found
}

/// The process groups of the live processes working in `dir` or below it
/// (their working directory, even once `dir` is deleted): daemons'
/// children that leave the process tree, as slurmd's slurmstepds do
/// ([`crate::slurm`]), are found by the directory their daemon gave them.
pub fn groups_working_in(dir: &Path) -> Vec<libc::pid_t> {
    let mut groups: Vec<libc::pid_t> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let pid: libc::pid_t = entry.file_name().to_str()?.parse().ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            // The kernel marks a deleted directory so.
            let cwd = match cwd.to_str()?.strip_suffix(" (deleted)") {
                Some(path) => PathBuf::from(path),
                None => cwd,
            };
            let stat = process_stat(pid)?;
            (stat.live && cwd.starts_with(dir)).then_some(stat.group)
        })
        .collect();
    groups.sort_unstable();
    groups.dedup();
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::{wait_all_exited, Pidfd};
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    #[test]
    fn a_group_and_its_descendants_in_other_groups_are_found() {
        // sh leads the group; its child takes a session (and group) of
        // its own, as Open MPI's ranks take a group, and says so on the
        // pipe once it has, so that nothing needs to poll for it.
        let mut child = Command::new("sh")
            .args(["-c", "setsid sh -c 'echo apart; exec sleep 30' & wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "apart\n");
        let group = child.id() as libc::pid_t;
        let found = descendants(&[group]);
        let pidfds: Vec<Pidfd> = found
            .iter()
            .filter_map(|&pid| Pidfd::open(pid as u32).ok())
            .collect();
        for &pid in &found {
            // SAFETY: kill(2) takes no pointers; these are this test's.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        child.wait().unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.contains(&group));
        let deadline = Instant::now() + Duration::from_secs(10);
        assert!(
            wait_all_exited(&pidfds, deadline).unwrap(),
            "{found:?} outlived SIGKILL"
        );
        assert!(!found.iter().any(|&pid| is_live(pid)), "{found:?}");
    }

    #[test]
    fn processes_are_found_by_the_directory_they_work_in() {
        let dir = std::env::temp_dir().join(format!("threadwire-cwd-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let mut child = Command::new("sleep")
            .arg("30")
            .current_dir(dir.join("sub"))
            .process_group(0)
            .spawn()
            .unwrap();
        let group = child.id() as libc::pid_t;
        assert_eq!(groups_working_in(&dir), [group]);
        // Still found once the directory is gone (the kernel's "(deleted)").
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(groups_working_in(&dir), [group]);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(groups_working_in(&dir).is_empty());
    }
}
