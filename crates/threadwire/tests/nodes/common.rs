//! What every node program of the integration tests shares.
#![allow(dead_code)] // each node program uses its own subset

/// Makes a panic on any thread end the whole process at once (status 101),
/// after the usual message: a failed check in a spawned thread must fail
/// the job, not leave its peers waiting for messages until the job timeout.
pub fn exit_on_panic() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        std::process::exit(101);
    }));
}

/// Positional argument `i` (from 1) parsed, or `default` when absent.
pub fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    match std::env::args().nth(i) {
        Some(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("argument {i} ({s:?}) does not parse")),
        None => default,
    }
}

/// This process's peak resident memory, in kB.
pub fn vm_hwm() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}
