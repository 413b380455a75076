//! Which CPUs the two-thread rows run on, and the cache sizes the memcpy
//! rows are placed against: CPU affinity through libc and the topology in
//! sysfs (Linux only; elsewhere the threads run unpinned and the caches
//! are unknown).
//!
//! `threads::system` wraps the same two affinity calls for its own rows;
//! the copies are kept apart so each benchmark module stays
//! self-contained.

use crate::system::allowed_cpus;
pub(super) use crate::system::pin_current_thread;

/// Where the two threads of a ping-pong go.
#[derive(Clone, Debug)]
pub(super) enum Placement {
    /// Two different CPUs, the first two allowed that are not SMT siblings
    /// if there are such.
    Two {
        first: usize,
        second: usize,
        /// The two are hardware threads of one core.
        siblings: bool,
    },
    /// The process may run on one CPU only.
    One(usize),
    /// Affinity could not be read or set here; why.
    Unpinned(String),
}

impl Placement {
    pub(super) fn choose() -> Placement {
        let cpus = match allowed_cpus() {
            Ok(cpus) => cpus,
            Err(e) => return Placement::Unpinned(format!("not pinned ({e})")),
        };
        match cpus[..] {
            [] => Placement::Unpinned("not pinned (empty affinity mask)".into()),
            [only] => Placement::One(only),
            [first, ..] => {
                let other_core = cpus[1..]
                    .iter()
                    .copied()
                    .find(|&cpu| siblings(first, cpu) == Some(false));
                let second = other_core.unwrap_or(cpus[1]);
                Placement::Two {
                    first,
                    second,
                    siblings: siblings(first, second) == Some(true),
                }
            }
        }
    }

    /// The driver's and the partner's CPU for a row across two cores.
    pub(super) fn two_cpus(&self) -> Option<(usize, usize)> {
        match *self {
            Placement::Two { first, second, .. } => Some((first, second)),
            Placement::One(_) | Placement::Unpinned(_) => None,
        }
    }

    /// Both threads' CPU for a row on one core.
    pub(super) fn one_cpu(&self) -> Option<(usize, usize)> {
        match *self {
            Placement::Two { first, .. } | Placement::One(first) => Some((first, first)),
            Placement::Unpinned(_) => None,
        }
    }

    /// `cpu 0 ↔ cpu 1` and whether they share a core, for notes.
    pub(super) fn describe_two(&self) -> String {
        match self {
            Placement::Two {
                first,
                second,
                siblings,
            } => format!(
                "cpu {first} ↔ cpu {second}{}",
                if *siblings { " (SMT siblings)" } else { "" }
            ),
            Placement::One(cpu) => format!("one CPU available: both on cpu {cpu}"),
            Placement::Unpinned(why) => why.clone(),
        }
    }

    /// `cpu 0`, for notes of rows on one core.
    pub(super) fn describe_one(&self) -> String {
        match self {
            Placement::Two { first: cpu, .. } | Placement::One(cpu) => format!("cpu {cpu}"),
            Placement::Unpinned(why) => why.clone(),
        }
    }
}

/// A data or unified cache of the first allowed CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cache {
    /// 1 for L1, and so on.
    pub(super) level: u32,
    pub(super) bytes: usize,
}

/// The data and unified caches of CPU 0, smallest level first; empty where
/// sysfs does not say.
pub(super) fn caches() -> Vec<Cache> {
    let mut caches = Vec::new();
    for index in 0.. {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let read = |file: &str| std::fs::read_to_string(format!("{dir}/{file}"));
        let Ok(kind) = read("type") else { break };
        if kind.trim() == "Instruction" {
            continue;
        }
        let level = read("level").ok().and_then(|l| l.trim().parse().ok());
        let bytes = read("size").ok().and_then(|s| parse_size(s.trim()));
        if let (Some(level), Some(bytes)) = (level, bytes) {
            caches.push(Cache { level, bytes });
        }
    }
    caches.sort_by_key(|c| c.level);
    caches
}

/// sysfs's cache size: `32K`, `1024K`, `32M`.
fn parse_size(s: &str) -> Option<usize> {
    let (digits, scale) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<usize>().ok().map(|n| n * scale)
}

/// Whether `a` and `b` are hardware threads of one core; `None` where
/// sysfs does not say.
fn siblings(a: usize, b: usize) -> Option<bool> {
    let path = format!("/sys/devices/system/cpu/cpu{a}/topology/thread_siblings_list");
    let list = std::fs::read_to_string(path).ok()?;
    parse_cpu_list(list.trim()).map(|cpus| cpus.contains(&b))
}

/// A kernel CPU list: `0`, `0-3`, `0,64`, `0-1,8-9`.
fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((lo, hi)) => cpus.extend(lo.parse::<usize>().ok()?..=hi.parse().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_lists_and_sizes_parse() {
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("0-1,8-9"), Some(vec![0, 1, 8, 9]));
        assert_eq!(parse_cpu_list("0,64"), Some(vec![0, 64]));
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
    }
}
