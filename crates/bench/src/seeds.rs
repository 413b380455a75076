//! The seed papers' tables that `threadwire bench` reproduces, typed in
//! once, figure for figure as printed (`shared/seeds/`, whose README says
//! which paper is which). Each benchmark prints the ones it reproduces
//! beside its own figures:
//!
//! | Table | Paper | Printed by |
//! |-------|-------|------------|
//! | [`SCALE_TABLE_1`]: thread benchmarks, µs | SCALE Suite (1998), SCALE and Solaris threads on a 167-MHz UltraSPARC-1 | `bench threads` |
//! | [`THESIS_TABLE_5_1`]: spawning N, ms | the thesis (1998), processes (`fork`) and threads (`thr_create`) | `bench spawn` |
//! | [`THESIS_TABLE_5_2`]: communication time, ms | the thesis, `pvm_send`/`pvm_recv` between processes, condition variables between threads | `bench comm` |
//! | [`THESIS_TABLE_5_3`]: bandwidth, Mbit/s | the thesis, PVM over Ethernet, ATM AAL 3/4 and AAL 5 | `bench comm` |
//! | [`THESIS_TABLE_5_5`]: start-up latency t0, µs | the thesis, half the round trip of 4 B | `bench comm` |
//! | [`THESIS_TABLE_5_6`]: peak throughput r_max, Mbit/s | the thesis, the peak of Table 5.3 | `bench comm` |
//! | [`STRINGS_TABLE_3`]: communication per node, 16 tasks | Strings DSM (1998), SPLASH-2 and others on 4 hosts × 4 threads | `apps splash --figure` |
//!
//! A figure keeps the decimals it was printed with ([`Quoted`]): the
//! thesis' 1.10 ms stays 1.10, and SCALE's estimate of a Solaris thread
//! switch stays ≈22.
//!
//! **Units as read here.** The thesis writes 1 KB and 1 MB without saying
//! which; `bench comm` reads them as 10^3 and 10^6 bytes ([`KB`]) in
//! Table 5.2 and in Table 5.3 alike, so that the 1 KB of both is one
//! measurement. Mbit/s are 10^6 bits per second.
//!
//! **The thesis disagrees with itself.** Table 5.2's 1 MB over Ethernet
//! in 3267.32 ms is 2.45 Mbit/s ([`megabyte_mbit_s`]); Tables 5.3 and 5.6
//! give Ethernet 9.12 Mbit/s at 320 and 1280 KB. ATM likewise: 5.41 and 6.37 Mbit/s
//! against 27.75 and 29.26. Both are kept as printed; `bench comm` says so
//! under its tables.

use std::fmt;

/// A figure as a seed prints it: its value, the decimals it was printed
/// with, and whether the paper gives it as an estimate (≈).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quoted {
    /// The value, in the table's unit.
    pub value: f64,
    /// Decimals as printed (`1.10` has 2).
    pub decimals: u8,
    /// Printed as an estimate, `≈ 22`.
    pub approximate: bool,
}

impl Quoted {
    const fn exact(value: f64, decimals: u8) -> Quoted {
        Quoted {
            value,
            decimals,
            approximate: false,
        }
    }

    const fn about(value: f64, decimals: u8) -> Quoted {
        Quoted {
            value,
            decimals,
            approximate: true,
        }
    }
}

/// As printed: `1.10`, `≈22`; padded as a whole.
impl fmt::Display for Quoted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let about = if self.approximate { "≈" } else { "" };
        let decimals = usize::from(self.decimals);
        f.pad(&format!("{about}{:.decimals$}", self.value))
    }
}

/// One row of [`SCALE_TABLE_1`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThreadsRow {
    /// The benchmark, as the paper names it.
    pub benchmark: &'static str,
    /// SCALE Threads, µs.
    pub scale_us: Quoted,
    /// Solaris threads, µs.
    pub solaris_us: Quoted,
}

/// SCALE Suite, Table 1, "Thread Benchmark Results", µs. The Solaris
/// thread switch is the paper's estimate: "voluntary thread yields in
/// Solaris threads do not always force a thread switch".
pub const SCALE_TABLE_1: [ThreadsRow; 5] = [
    ThreadsRow {
        benchmark: "Mutex",
        scale_us: Quoted::exact(0.126, 3),
        solaris_us: Quoted::exact(0.706, 3),
    },
    ThreadsRow {
        benchmark: "Semaphore",
        scale_us: Quoted::exact(0.354, 3),
        solaris_us: Quoted::exact(5.82, 2),
    },
    ThreadsRow {
        benchmark: "Context Switch",
        scale_us: Quoted::exact(0.81, 2),
        solaris_us: Quoted::exact(21.7, 1),
    },
    ThreadsRow {
        benchmark: "Thread Switch",
        scale_us: Quoted::exact(2.33, 2),
        solaris_us: Quoted::about(22.0, 0),
    },
    ThreadsRow {
        benchmark: "Thread Synchronization",
        scale_us: Quoted::exact(2.54, 2),
        solaris_us: Quoted::exact(44.79, 2),
    },
];

/// One row of [`THESIS_TABLE_5_1`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpawnRow {
    /// "Number Spawned".
    pub spawned: u32,
    /// "PVM Processes", ms.
    pub processes_ms: Quoted,
    /// "PVM Threads", ms.
    pub threads_ms: Quoted,
}

const fn spawned(spawned: u32, processes_ms: f64, threads_ms: f64) -> SpawnRow {
    SpawnRow {
        spawned,
        processes_ms: Quoted::exact(processes_ms, 2),
        threads_ms: Quoted::exact(threads_ms, 2),
    }
}

/// The thesis, Table 5.1, "Spawning Times for a Process and Thread", ms:
/// processes started with `fork()`, threads with `thr_create()`, on one
/// host.
pub const THESIS_TABLE_5_1: [SpawnRow; 4] = [
    spawned(1, 57.75, 1.75),
    spawned(4, 110.24, 3.78),
    spawned(8, 200.27, 5.67),
    spawned(16, 852.54, 20.94),
];

/// Table 5.1's row for `count` spawned, if it has one.
pub fn spawn_ms(count: u32) -> Option<&'static SpawnRow> {
    THESIS_TABLE_5_1.iter().find(|r| r.spawned == count)
}

/// A column of the thesis' communication tables: processes on two hosts
/// over a network (the three networks are the columns of Tables 5.3, 5.5
/// and 5.6 too), processes of one host, threads of one process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// PVM over TCP, 10 Mbit/s Ethernet.
    Ethernet,
    /// PVM-ATM on AAL 3/4 (155 Mbit/s).
    AtmAal34,
    /// PVM-ATM on AAL 5 (155 Mbit/s).
    AtmAal5,
    /// Processes of one host.
    LocalProcesses,
    /// Threads of one process.
    Threads,
}

impl Setting {
    /// Table 5.2's columns, in its order.
    pub const ALL: [Setting; 5] = [
        Setting::Ethernet,
        Setting::AtmAal34,
        Setting::AtmAal5,
        Setting::LocalProcesses,
        Setting::Threads,
    ];

    /// The networks, the columns of Tables 5.3, 5.5 and 5.6.
    pub const NETWORKS: [Setting; 3] = [Setting::Ethernet, Setting::AtmAal34, Setting::AtmAal5];

    /// The column's name in Tables 5.2 and 5.3: `Ethernet`, `ATM AAL 3/4`,
    /// `ATM AAL 5`, `local processes`, `threads`.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Ethernet => "Ethernet",
            Setting::AtmAal34 => "ATM AAL 3/4",
            Setting::AtmAal5 => "ATM AAL 5",
            Setting::LocalProcesses => "local processes",
            Setting::Threads => "threads",
        }
    }

    /// The row's name in Tables 5.5 and 5.6 ("PVM Environment").
    pub fn environment(self) -> &'static str {
        match self {
            Setting::Ethernet => "PVM/TCP/Ethernet",
            Setting::AtmAal34 => "PVM-ATM on AAL 3/4",
            Setting::AtmAal5 => "PVM-ATM on AAL 5",
            Setting::LocalProcesses => "PVM on one host",
            Setting::Threads => "threads of one process",
        }
    }

    fn network(self) -> Option<usize> {
        Setting::NETWORKS.iter().position(|&s| s == self)
    }
}

/// The thesis' kilobyte as `bench comm` reads it (module docs).
pub const KB: usize = 1000;

/// One row of [`THESIS_TABLE_5_2`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CommunicationRow {
    /// "Message Size", in bytes as read here ([`KB`]).
    pub size: usize,
    /// ms, one per [`Setting::ALL`] in order.
    pub ms: [Quoted; 5],
}

/// `values`, each printed with `decimals` decimals.
const fn printed<const N: usize>(values: [f64; N], decimals: u8) -> [Quoted; N] {
    let mut quoted = [Quoted::exact(0.0, 0); N];
    let mut i = 0;
    while i < N {
        quoted[i] = Quoted::exact(values[i], decimals);
        i += 1;
    }
    quoted
}

const fn communicated(size: usize, ms: [f64; 5]) -> CommunicationRow {
    CommunicationRow {
        size,
        ms: printed(ms, 2),
    }
}

/// The thesis, Table 5.2, "Communication Times for Processes and
/// Threads", ms, at 1 B, 1 KB, 32 KB and 1 MB.
pub const THESIS_TABLE_5_2: [CommunicationRow; 4] = [
    communicated(1, [5.53, 1.10, 1.11, 1.04, 1.01]),
    communicated(KB, [9.24, 4.09, 4.12, 2.92, 1.09]),
    communicated(32 * KB, [120.69, 72.29, 68.67, 39.27, 15.25]),
    communicated(KB * KB, [3267.32, 1477.75, 1256.79, 897.17, 238.44]),
];

/// Table 5.2's figure of `setting` at `size` bytes, if it has one.
pub fn communication_ms(setting: Setting, size: usize) -> Option<Quoted> {
    let column = Setting::ALL.iter().position(|&s| s == setting)?;
    let row = THESIS_TABLE_5_2.iter().find(|r| r.size == size)?;
    Some(row.ms[column])
}

/// One row of [`THESIS_TABLE_5_3`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandwidthRow {
    /// "Message Size (KB)".
    pub kb: usize,
    /// Mbit/s, one per [`Setting::NETWORKS`] in order.
    pub mbit_s: [Quoted; 3],
}

const fn bandwidth(kb: usize, mbit_s: [f64; 3]) -> BandwidthRow {
    BandwidthRow {
        kb,
        mbit_s: printed(mbit_s, 2),
    }
}

/// The thesis, Table 5.3, "Bandwidth for PVM over Ethernet and ATM for
/// different message sizes", Mbit/s.
pub const THESIS_TABLE_5_3: [BandwidthRow; 5] = [
    bandwidth(1, [6.41, 9.94, 11.78]),
    bandwidth(80, [8.53, 23.39, 27.26]),
    bandwidth(320, [9.12, 27.22, 29.17]),
    bandwidth(1280, [9.12, 27.75, 29.26]),
    bandwidth(5120, [8.98, 27.01, 28.85]),
];

/// Table 5.3's figure of `setting` (a network) at `size` bytes, if it
/// has one.
pub fn bandwidth_mbit_s(setting: Setting, size: usize) -> Option<Quoted> {
    let column = setting.network()?;
    let row = THESIS_TABLE_5_3.iter().find(|r| r.kb * KB == size)?;
    Some(row.mbit_s[column])
}

/// The message of Table 5.5's start-up latency, bytes.
pub const STARTUP_BYTES: usize = 4;

/// The thesis, Table 5.5, "Start-up Latency for PVM Environments", t0 in
/// µs, half the round trip of a 4-byte message; one per
/// [`Setting::NETWORKS`].
pub const THESIS_TABLE_5_5: [Quoted; 3] = [
    Quoted::exact(1595.0, 0),
    Quoted::exact(1910.3, 1),
    Quoted::exact(1915.4, 1),
];

/// The thesis, Table 5.6, "Maximum Communication Throughput for Ethernet
/// and ATM networks", r_max in Mbit/s; one per [`Setting::NETWORKS`].
pub const THESIS_TABLE_5_6: [Quoted; 3] = printed([9.12, 27.75, 29.26], 2);

/// Table 5.5's t0 of `setting`, if a network.
pub fn startup_latency_us(setting: Setting) -> Option<Quoted> {
    Some(THESIS_TABLE_5_5[setting.network()?])
}

/// Table 5.6's r_max of `setting`, if a network.
pub fn peak_throughput_mbit_s(setting: Setting) -> Option<Quoted> {
    Some(THESIS_TABLE_5_6[setting.network()?])
}

/// The bandwidth Table 5.2's 1 MB implies for `setting`, in Mbit/s: the
/// figure Tables 5.3 and 5.6 contradict (module docs).
pub fn megabyte_mbit_s(setting: Setting) -> Option<f64> {
    let ms = communication_ms(setting, KB * KB)?.value;
    Some((KB * KB) as f64 * 8.0 / (ms * 1e-3) / 1e6)
}

/// One row of [`STRINGS_TABLE_3`]: a program's communication per node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UtilizationRow {
    /// The program, as the paper names it (`LU-c`).
    pub program: &'static str,
    /// The paper's figure of its times on 1, 2 and 4 hosts (Figs 3–12).
    pub figure: u32,
    /// "Average Msg. Size (bytes)".
    pub mean_message: Quoted,
    /// Per network of [`STRINGS_NETWORKS`]: "BW (Mbps)" and "Latency
    /// (ms)".
    pub by_network: [(Quoted, Quoted); 3],
}

/// The networks of [`STRINGS_TABLE_3`]'s columns, as the paper names
/// them, with the emulated links `threadwire` runs them as: 10 Mbit/s
/// Ethernet, Fast Ethernet, OC-3 ATM.
pub const STRINGS_NETWORKS: [(&str, &str); 3] = [
    ("Ethernet", "ethernet10"),
    ("FastEthernet", "fast100"),
    ("OC-3 ATM", "atm155"),
];

const fn utilized(
    program: &'static str,
    figure: u32,
    mean_message: f64,
    by: [f64; 6],
) -> UtilizationRow {
    let q = printed(by, 2);
    UtilizationRow {
        program,
        figure,
        mean_message: Quoted::exact(mean_message, 2),
        by_network: [(q[0], q[1]), (q[2], q[3]), (q[4], q[5])],
    }
}

/// Strings DSM, Table 3, "Communication Utilization Per Node (16 tasks)":
/// 4 hosts × 4 threads.
pub const STRINGS_TABLE_3: [UtilizationRow; 10] = [
    utilized(
        "FFT",
        8,
        4945.50,
        [2.12, 134.23, 12.71, 174.16, 15.84, 111.68],
    ),
    utilized(
        "LU-c",
        3,
        5976.38,
        [1.93, 431.08, 3.71, 192.73, 4.68, 256.80],
    ),
    utilized(
        "LU-n",
        9,
        6223.95,
        [2.02, 178.30, 9.32, 146.84, 9.87, 148.68],
    ),
    utilized(
        "RADIX",
        10,
        4886.12,
        [2.16, 32.31, 12.85, 3.62, 14.83, 2.80],
    ),
    utilized(
        "OCEAN-c",
        11,
        4059.26,
        [1.91, 274.97, 8.44, 36.39, 8.42, 31.90],
    ),
    utilized(
        "WATER-n2",
        4,
        197.19,
        [0.62, 118.15, 0.77, 170.82, 0.71, 313.30],
    ),
    utilized("WATER-sp", 5, 893.56, [0.92, 15.36, 1.47, 4.69, 1.29, 5.27]),
    utilized("MATMULT", 6, 4385.72, [1.00, 48.57, 1.42, 7.03, 1.45, 5.24]),
    utilized(
        "SOR",
        12,
        7442.80,
        [2.14, 84.69, 15.44, 327.80, 14.41, 373.75],
    ),
    utilized("MRI", 7, 3440.01, [2.13, 7.31, 4.39, 1.70, 4.40, 1.62]),
];

/// The Strings DSM's figure number of `program`'s times, if it has one.
pub fn strings_figure(program: &str) -> Option<u32> {
    STRINGS_TABLE_3
        .iter()
        .find(|r| r.program == program)
        .map(|r| r.figure)
}

/// Table 3's row of `program` and its figures on the network threadwire
/// emulates as `link`, if it has them.
pub fn strings_utilization(program: &str, link: &str) -> Option<(Quoted, Quoted, Quoted)> {
    let row = STRINGS_TABLE_3.iter().find(|r| r.program == program)?;
    let at = STRINGS_NETWORKS.iter().position(|(_, l)| *l == link)?;
    let (mbps, ms) = row.by_network[at];
    Some((row.mean_message, mbps, ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_print_as_the_papers_print_them() {
        let printed = |q: Quoted| q.to_string();
        assert_eq!(printed(SCALE_TABLE_1[3].solaris_us), "≈22");
        assert_eq!(printed(SCALE_TABLE_1[0].solaris_us), "0.706");
        assert_eq!(printed(SCALE_TABLE_1[2].scale_us), "0.81");
        assert_eq!(
            printed(communication_ms(Setting::AtmAal34, 1).unwrap()),
            "1.10"
        );
        assert_eq!(printed(THESIS_TABLE_5_5[0]), "1595");
        assert_eq!(printed(THESIS_TABLE_5_5[1]), "1910.3");
        assert_eq!(format!("{:>7}", THESIS_TABLE_5_6[0]), "   9.12");
    }

    #[test]
    fn lookups_find_the_cells_by_column_and_size() {
        assert_eq!(spawn_ms(16).unwrap().processes_ms.value, 852.54);
        assert_eq!(spawn_ms(2), None);
        let ms = |s, size| communication_ms(s, size).map(|q| q.value);
        assert_eq!(ms(Setting::Ethernet, 1_000_000), Some(3267.32));
        assert_eq!(ms(Setting::Threads, 1_000), Some(1.09));
        assert_eq!(ms(Setting::LocalProcesses, 32_000), Some(39.27));
        assert_eq!(ms(Setting::Threads, 4), None);
        let mbit = |s, size| bandwidth_mbit_s(s, size).map(|q| q.value);
        assert_eq!(mbit(Setting::AtmAal5, 5_120_000), Some(28.85));
        assert_eq!(mbit(Setting::Threads, 1_000), None);
        assert_eq!(startup_latency_us(Setting::AtmAal5).unwrap().value, 1915.4);
        assert_eq!(
            peak_throughput_mbit_s(Setting::AtmAal34).unwrap().value,
            27.75
        );
        assert_eq!(peak_throughput_mbit_s(Setting::LocalProcesses), None);
    }

    #[test]
    fn table_5_2s_megabyte_is_slower_than_tables_5_3_and_5_6_say() {
        let implied = megabyte_mbit_s(Setting::Ethernet).unwrap();
        assert_eq!(format!("{implied:.2}"), "2.45");
        assert_eq!(
            format!("{:.2}", megabyte_mbit_s(Setting::AtmAal34).unwrap()),
            "5.41"
        );
        assert_eq!(
            format!("{:.2}", megabyte_mbit_s(Setting::AtmAal5).unwrap()),
            "6.37"
        );
    }

    #[test]
    fn strings_table_3_is_found_by_program_and_link() {
        let (size, mbps, ms) = strings_utilization("SOR", "fast100").expect("a row");
        assert_eq!(size.to_string(), "7442.80");
        assert_eq!((mbps.value, ms.value), (15.44, 327.80));
        assert_eq!(
            strings_utilization("MRI", "atm155").map(|r| r.2.value),
            Some(1.62)
        );
        assert!(strings_utilization("SOR", "gige").is_none());
        assert!(strings_utilization("BARNES", "fast100").is_none());
        assert_eq!(strings_figure("LU-c"), Some(3));
        assert_eq!(strings_figure("SOR"), Some(12));
    }
}
