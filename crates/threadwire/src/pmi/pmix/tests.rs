//! The C layouts, detection, and the real thing: the test binary run
//! again under Open MPI's `mpirun`.

use super::ffi::{self, Info, Proc, Value};
use super::super::tests::{check_four, environment, run_job, CHILD};
use super::*;
use std::mem::{offset_of, size_of};
use std::process::Command;
use std::time::Instant;

/// What a C program compiled with PMIx 4.2.2's headers prints for
/// `sizeof` and `offsetof` of the structures mirrored in `ffi`.
#[test]
fn the_mirrors_have_the_c_layouts() {
    assert_eq!(size_of::<Proc>(), 260);
    assert_eq!(offset_of!(Proc, rank), 256);
    assert_eq!(size_of::<Value>(), 32);
    assert_eq!(offset_of!(Value, data), 8);
    assert_eq!(size_of::<Info>(), 552);
    assert_eq!(offset_of!(Info, flags), 512);
    assert_eq!(offset_of!(Info, value), 520);
    let info = Info::timeout(0);
    assert_eq!(info.value.kind, ffi::TYPE_INT);
    // SAFETY: the tag says `integer`.
    assert_eq!(unsafe { info.value.data.integer }, 1, "0 would mean never");
    assert_eq!(seconds(Duration::from_millis(1500)), 2);
    assert_eq!(seconds(Duration::from_secs(u64::MAX)), c_int::MAX);
}

fn detect(vars: &[(&str, &str)]) -> Result<Option<PmixEnv>, PmiError> {
    PmixEnv::from_lookup(environment(vars))
}

#[test]
fn detection_finds_the_server_or_names_the_wrong_variable() {
    assert_eq!(detect(&[]).unwrap(), None);
    let uri = ("PMIX_SERVER_URI41", "1.0;tcp4://127.0.0.1:5");
    assert_eq!(
        detect(&[("PMIX_NAMESPACE", "77"), ("PMIX_RANK", "3"), uri]).unwrap(),
        Some(PmixEnv {
            namespace: "77".into(),
            rank: 3
        })
    );
    let long = "n".repeat(256);
    for (vars, says) in [
        (&[("PMIX_NAMESPACE", "77"), uri][..], "PMIX_RANK: not set"),
        (&[("PMIX_RANK", "0"), uri][..], "PMIX_NAMESPACE: not set"),
        (
            &[("PMIX_NAMESPACE", "77"), ("PMIX_RANK", "x"), uri][..],
            "PMIX_RANK: `x` is not a process rank",
        ),
        (
            &[("PMIX_NAMESPACE", "77"), ("PMIX_RANK", "4294967294"), uri][..],
            "PMIX_RANK: `4294967294`",
        ),
        (
            &[("PMIX_NAMESPACE", long.as_str()), ("PMIX_RANK", "0"), uri][..],
            "PMIX_NAMESPACE: `nnn",
        ),
        (
            &[("PMIX_NAMESPACE", "77"), ("PMIX_RANK", "0")][..],
            "PMIX_SERVER_URI41: not set",
        ),
    ] {
        let e = detect(vars).unwrap_err().to_string();
        assert!(e.starts_with(says), "{vars:?}: {e}");
    }
}

#[test]
fn keys_are_checked_before_they_reach_the_library() {
    assert!(matches!(c_key(&"k".repeat(512)), Err(PmiError::TooLong { max: 511, .. })));
    assert!(matches!(c_key("a\0b"), Err(PmiError::Unwritable { .. })));
    assert!(matches!(c_key(""), Err(PmiError::Unwritable { .. })));
    assert_eq!(c_key("threadwire-addr-3").unwrap().as_bytes(), b"threadwire-addr-3");
}

#[test]
fn the_client_can_sit_behind_a_mutex() {
    fn send<T: Send>() {}
    send::<PmixClient>();
}

// ---- under the real server ----

/// `mpirun` and the library, or the reason printed why the tests skip.
fn mpirun() -> Option<&'static str> {
    let mpirun = "/usr/bin/mpirun.openmpi";
    if !std::path::Path::new(mpirun).exists() {
        println!("skipped: {mpirun} is not installed (Debian's openmpi-bin)");
        return None;
    }
    if let Err(e) = ffi::Pmix::get() {
        println!("skipped: {e}");
        return None;
    }
    Some(mpirun)
}

/// Runs this test binary's test `name` under `mpirun -n <nodes>`, with
/// the variables `vars` set too, and returns its exit status and the
/// lines the processes printed starting with `pmix-child`; `None`, with
/// the reason printed, without Open MPI.
fn under_mpirun(
    name: &str,
    nodes: u32,
    vars: &[(&str, &std::path::Path)],
) -> Option<(std::process::ExitStatus, Vec<String>)> {
    let mut cmd = Command::new(mpirun()?);
    // Root may run it (containers, CI); more processes than cores.
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-n", &nodes.to_string()])
        .envs(vars.iter().copied());
    Some(run_job(cmd, &format!("pmi::pmix::tests::{name}"), "pmix-child"))
}

/// One process's part: everything a node's bootstrap does, with checks.
fn exchange_addresses() {
    let mut client = PmixClient::from_env(Duration::from_secs(5))
        .unwrap()
        .expect("started by mpirun, yet no PMIx variable");
    client.init().unwrap();
    let (rank, size) = (client.rank(), client.size());
    let address = |r: u32| format!("10.0.{r}.1:{}", 4000 + r);
    client.put(&format!("addr-{rank}"), &address(rank)).unwrap();
    client.fence(Duration::from_secs(30)).unwrap();
    for peer in 0..size {
        assert_eq!(client.get(peer, &format!("addr-{peer}")).unwrap(), address(peer));
    }
    // A key belongs to its owner: rank 0's is not rank 1's.
    if size > 1 {
        let started = Instant::now();
        let e = client.get(1, "addr-0").unwrap_err();
        assert!(
            matches!(e, PmiError::NotFound { .. } | PmiError::TimedOut { .. }),
            "{e}"
        );
        assert!(started.elapsed() < Duration::from_secs(30), "{e}");
    }
    assert!(matches!(client.get(size, "addr-0"), Err(PmiError::NotFound { .. })));
    let hosts = client.node_ids().unwrap();
    assert_eq!(hosts.len(), size as usize);
    client.finalize().unwrap();
    println!("pmix-child rank={rank} size={size} hosts={hosts:?} ok");
}

#[test]
fn four_processes_exchange_addresses_under_mpirun() {
    if std::env::var_os(CHILD).is_some() {
        return exchange_addresses();
    }
    check_four(under_mpirun("four_processes_exchange_addresses_under_mpirun", 4, &[]));
}

/// Set to a FIFO's path for the fence test's processes.
const FIFO: &str = "THREADWIRE_PMIX_TEST_FIFO";

/// Rank 1 waits in a fence rank 0 never enters: the fence ends with
/// `TimedOut` once its timeout has passed, not never. Rank 0 stays until
/// rank 1 says it is done, through a FIFO (a PMIx get would not wait: a
/// key its owner on this host has not put yet is "not found" at once,
/// unless the owner has committed nothing at all).
#[test]
fn a_fence_nobody_joins_times_out_under_mpirun() {
    if let Some(fifo) = std::env::var_os(FIFO).filter(|_| std::env::var_os(CHILD).is_some()) {
        let mut client = PmixClient::from_env(Duration::from_secs(5)).unwrap().unwrap();
        client.init().unwrap();
        if client.rank() == 1 {
            let started = Instant::now();
            let e = client.fence(Duration::from_secs(2)).unwrap_err();
            println!("pmix-child fence: {e} ({:?})", started.elapsed());
            std::fs::write(&fifo, b"done").unwrap();
        } else {
            assert_eq!(std::fs::read(&fifo).unwrap(), b"done");
        }
        client.finalize().unwrap();
        return;
    }
    let fifo = std::env::temp_dir().join(format!("threadwire-pmix-fifo-{}", std::process::id()));
    let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo");
    let ran = under_mpirun("a_fence_nobody_joins_times_out_under_mpirun", 2, &[(FIFO, &fifo)]);
    let _ = std::fs::remove_file(&fifo);
    let Some((status, lines)) = ran else {
        return;
    };
    assert!(status.success(), "{status}: {lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("pmix-child fence: no answer from the process manager to PMIx_Fence within 2s"),
        "{lines:?}"
    );
}

/// Rank 0 aborts while rank 1 waits in a fence: `mpirun` ends the job
/// with rank 0's code. As Open MPI's own `MPI_Abort` does, the aborting
/// process exits after `PMIx_Abort` returns (ORTE ends the others once it
/// has).
#[test]
fn abort_ends_the_job_under_mpirun() {
    if std::env::var_os(CHILD).is_some() {
        let mut client = PmixClient::from_env(Duration::from_secs(5)).unwrap().unwrap();
        client.init().unwrap();
        if client.rank() == 0 {
            let _ = client.abort(7, "test abort");
            std::process::exit(7);
        }
        let _ = client.fence(Duration::from_secs(60));
        // Until mpirun kills the job (the parent's deadline bounds it).
        loop {
            std::thread::park();
        }
    }
    let Some((status, _)) = under_mpirun("abort_ends_the_job_under_mpirun", 2, &[]) else {
        return;
    };
    assert_eq!(status.code(), Some(7));
}
