//! The system calls the benchmarks need, wrapped once (`threads` and
//! `floors`): CPU affinity (Linux only; elsewhere it reports `Unsupported`) and the
//! process's CPU time.

use std::io;
use std::time::Duration;

#[cfg(not(unix))]
compile_error!("threadwire-bench: the thread benchmarks need getrusage (a Unix system)");

/// The CPUs the calling thread may run on, lowest first.
#[cfg(target_os = "linux")]
pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of the size passed; pid 0 is
    // the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, the bounds of `set`.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// The lowest-numbered CPU the calling thread may run on.
pub(crate) fn first_allowed_cpu() -> io::Result<usize> {
    allowed_cpus()?
        .first()
        .copied()
        .ok_or_else(|| io::Error::other("the affinity mask is empty"))
}

/// Restricts the calling thread to `cpu`.
#[cfg(target_os = "linux")]
pub(crate) fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` was checked against CPU_SETSIZE above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is an initialized cpu_set_t of the size passed; pid 0
    // is the calling thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn pin_current_thread(_cpu: usize) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

/// User plus system CPU time of the whole process so far.
pub(crate) fn process_cpu_time() -> io::Result<Duration> {
    // SAFETY: an all-zero rusage is a valid value for getrusage to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Ok(time(usage.ru_utime) + time(usage.ru_stime))
}

/// The peak resident set of this process (`VmHWM` of `/proc/self/status`),
/// in bytes.
pub(crate) fn peak_resident_bytes() -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    parse_vm_hwm(&status).ok_or_else(|| io::Error::other("no VmHWM line in /proc/self/status"))
}

/// The `VmHWM:  1234 kB` line of a `/proc/PID/status` text, in bytes.
fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod peak_tests {
    use super::*;

    #[test]
    fn the_peak_is_read_in_bytes() {
        let status = "Name:\tx\nVmPeak:\t  99 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(1234 * 1024));
        assert_eq!(parse_vm_hwm("VmRSS: 1 kB\n"), None);
        assert!(peak_resident_bytes().is_ok_and(|b| b > 0));
    }
}
