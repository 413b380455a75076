//! Detection, a scripted manager for the answers no real one gives on
//! demand (failures, silence), and the real thing: the test binary run
//! again under `mpiexec.hydra`.

use super::*;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, IntoRawFd};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Instant;

/// An environment of `vars` alone, for the detections' `from_lookup`.
pub(super) fn environment(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.get(name).cloned()
}

fn detect(vars: &[(&str, &str)]) -> Result<Option<PmiEnv>, PmiError> {
    PmiEnv::from_lookup(environment(vars))
}

fn variable_error(vars: &[(&str, &str)]) -> (&'static str, VariableProblem) {
    match detect(vars) {
        Err(PmiError::Variable { name, problem }) => (name, problem),
        other => panic!("{vars:?}: {other:?}"),
    }
}

#[test]
fn detection_finds_the_manager_or_names_the_wrong_variable() {
    assert!(detect(&[("PMI_DEBUG", "1"), ("PATH", "/bin")]).unwrap().is_none());
    let env = detect(&[("PMI_FD", "6"), ("PMI_RANK", "1"), ("PMI_SIZE", "4"), ("PMI_JOBID", "7.0")])
        .unwrap()
        .unwrap();
    assert_eq!(env.endpoint, PmiEndpoint::Fd(6));
    assert_eq!(env.rank_size, Some((1, 4)));
    assert_eq!(env.job_id.as_deref(), Some("7.0"));
    let env = detect(&[("PMI_PORT", "vm:43671"), ("PMI_ID", "2")]).unwrap().unwrap();
    assert_eq!(
        env.endpoint,
        PmiEndpoint::Port {
            host: "vm".into(),
            port: 43671,
            pmi_id: 2
        }
    );
    let env = detect(&[("PMI_PORT", "[::1]:9"), ("PMI_ID", "0")]).unwrap().unwrap();
    assert!(matches!(env.endpoint, PmiEndpoint::Port { ref host, port: 9, .. } if host == "::1"));

    use VariableProblem as P;
    /// Variables, the one the error must name, what it must say of it.
    type Case = (&'static [(&'static str, &'static str)], &'static str, fn(&P) -> bool);
    let cases: [Case; 9] = [
        (&[("PMI_FD", "6"), ("PMI_SIZE", "4")], "PMI_RANK", |p| {
            matches!(p, P::Missing { needed_by: "PMI_SIZE" })
        }),
        (&[("PMI_FD", "6")], "PMI_RANK", |p| matches!(p, P::Missing { needed_by: "PMI_FD" })),
        (&[("PMI_RANK", "0"), ("PMI_SIZE", "2")], "PMI_FD", |p| matches!(p, P::Missing { .. })),
        (&[("PMI_FD", "six"), ("PMI_RANK", "0"), ("PMI_SIZE", "2")], "PMI_FD", |p| {
            matches!(p, P::Malformed { .. })
        }),
        (&[("PMI_FD", "6"), ("PMI_RANK", "-1"), ("PMI_SIZE", "2")], "PMI_RANK", |p| {
            matches!(p, P::Malformed { .. })
        }),
        (&[("PMI_FD", "6"), ("PMI_RANK", "2"), ("PMI_SIZE", "2")], "PMI_RANK", |p| {
            matches!(p, P::RankOutOfRange { rank: 2, size: 2 })
        }),
        (&[("PMI_FD", "6"), ("PMI_RANK", "0"), ("PMI_SIZE", "0")], "PMI_SIZE", |p| {
            matches!(p, P::Malformed { .. })
        }),
        (&[("PMI_PORT", "vm:1")], "PMI_ID", |p| matches!(p, P::Missing { needed_by: "PMI_PORT" })),
        (&[("PMI_PORT", "vm"), ("PMI_ID", "0")], "PMI_PORT", |p| matches!(p, P::Malformed { .. })),
    ];
    for (vars, name, expected) in cases {
        let (got, problem) = variable_error(vars);
        assert_eq!(got, name, "{vars:?}: {problem}");
        assert!(expected(&problem), "{vars:?}: {problem}");
    }
}

#[test]
fn a_pmi_fd_that_is_no_socket_is_refused_and_left_open() {
    let file = std::fs::File::open("/dev/null").unwrap();
    for fd in [file.as_raw_fd(), 1_000_000] {
        let env = PmiEnv {
            endpoint: PmiEndpoint::Fd(fd),
            rank_size: Some((0, 1)),
            job_id: None,
        };
        let e = PmiClient::connect(env, DEFAULT_TIMEOUT).unwrap_err();
        assert!(
            matches!(e, PmiError::Variable { name: "PMI_FD", problem: VariableProblem::NotASocket(_) }),
            "{e}"
        );
    }
    // SAFETY: fcntl(F_GETFD) takes no pointers.
    assert_ne!(unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFD) }, -1);
}

/// A manager that answers each request line with the next of `answers`
/// (`None`: stays silent and keeps the connection open until the test
/// ends), and returns the requests it read.
fn scripted_manager(
    stream: UnixStream,
    answers: Vec<Option<&'static str>>,
) -> JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let mut requests = Vec::new();
        for answer in answers {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            requests.push(line.trim_end().to_owned());
            match answer {
                Some(answer) => writer.write_all(answer.as_bytes()).unwrap(),
                None => {
                    let mut rest = String::new();
                    let _ = reader.read_line(&mut rest);
                    break;
                }
            }
        }
        requests
    })
}

fn client_with(answers: Vec<Option<&'static str>>, timeout: Duration) -> (PmiClient, JoinHandle<Vec<String>>) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let manager = scripted_manager(theirs, answers);
    let env = PmiEnv {
        endpoint: PmiEndpoint::Fd(ours.into_raw_fd()),
        rank_size: Some((1, 2)),
        job_id: Some("12.0".into()),
    };
    (PmiClient::connect(env, timeout).unwrap(), manager)
}

#[test]
fn the_client_speaks_to_slurms_answers() {
    // Slurm's plugin puts `rc` first, answers a miss with `rc=1` alone.
    let answers = [
        "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n",
        "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n",
        "cmd=my_kvsname rc=0 kvsname=12.0\n",
        "cmd=put_result rc=0\n",
        "cmd=barrier_out rc=0\n",
        "cmd=get_result rc=0 value=10.0.0.1:4000\n",
        "cmd=get_result rc=1\n",
        "cmd=finalize_ack rc=0\n",
    ];
    let (mut client, manager) = client_with(answers.map(Some).to_vec(), DEFAULT_TIMEOUT);
    assert_eq!((client.rank(), client.size(), client.job_id()), (1, 2, Some("12.0")));
    client.init().unwrap();
    assert_eq!(client.get_maxes().unwrap().vallen_max, 1024);
    assert_eq!(client.get_my_kvsname().unwrap(), "12.0");
    client.put("addr-1", "10.0.0.2:4000").unwrap();
    client.barrier(DEFAULT_TIMEOUT).unwrap();
    assert_eq!(client.get("addr-0").unwrap(), "10.0.0.1:4000");
    assert!(matches!(client.get("addr-9"), Err(PmiError::NotFound { ref key, msg: None }) if key == "addr-9"));
    client.finalize().unwrap();
    assert_eq!(
        manager.join().unwrap(),
        [
            "cmd=init pmi_version=1 pmi_subversion=1",
            "cmd=get_maxes",
            "cmd=get_my_kvsname",
            "cmd=put kvsname=12.0 key=addr-1 value=10.0.0.2:4000",
            "cmd=barrier_in",
            "cmd=get kvsname=12.0 key=addr-0",
            "cmd=get kvsname=12.0 key=addr-9",
            "cmd=finalize",
        ]
    );
}

#[test]
fn puts_are_checked_before_they_are_sent() {
    let answers = vec![
        Some("cmd=maxes kvsname_max=256 keylen_max=8 vallen_max=16\n"),
        Some("cmd=my_kvsname kvsname=k\n"),
    ];
    let (mut client, manager) = client_with(answers, DEFAULT_TIMEOUT);
    let long = "x".repeat(17);
    assert!(matches!(client.put("addr-1", &long), Err(PmiError::TooLong { what: "value", len: 17, max: 16 })));
    assert!(matches!(client.put("a-very-long-key", "v"), Err(PmiError::TooLong { what: "key", .. })));
    for value in ["a b", "a=b", "a\nb"] {
        assert!(matches!(client.put("k", value), Err(PmiError::Unwritable { what: "value", .. })), "{value:?}");
    }
    drop(client);
    assert_eq!(manager.join().unwrap(), ["cmd=get_maxes", "cmd=get_my_kvsname"]);
}

#[test]
fn failures_are_typed_and_a_broken_exchange_stops_the_client() {
    // A refusal is an answer: the client stays usable.
    let answers = vec![
        Some("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=version_mismatch\n"),
        Some("cmd=barrier_out rc=5 msg=failed_to_send_temp_kvs\n"),
        Some("cmd=finalize_ack\n"),
    ];
    let (mut client, _manager) = client_with(answers, DEFAULT_TIMEOUT);
    let e = client.init().unwrap_err();
    assert!(matches!(e, PmiError::Refused { request: "init", rc: -1, .. }), "{e}");
    assert!(e.to_string().contains("version_mismatch"), "{e}");
    assert!(matches!(client.barrier(DEFAULT_TIMEOUT), Err(PmiError::Refused { rc: 5, .. })));
    client.finalize().unwrap();

    // An answer to another question.
    let (mut client, _manager) = client_with(vec![Some("cmd=barrier_out\n")], DEFAULT_TIMEOUT);
    let e = client.init().unwrap_err();
    assert!(matches!(e, PmiError::Unexpected { request: "init", ref line } if line == "cmd=barrier_out"), "{e}");
    assert!(matches!(client.get_maxes(), Err(PmiError::Unusable)));

    // Silence: the deadline holds, and the late answer is never misread.
    let (mut client, _manager) = client_with(vec![None], Duration::from_millis(100));
    let started = Instant::now();
    let e = client.barrier(Duration::from_millis(200)).unwrap_err();
    assert!(matches!(e, PmiError::TimedOut { request: "barrier", .. }), "{e}");
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert!(matches!(client.get_maxes(), Err(PmiError::Unusable)));

    // The manager hangs up.
    let (mut client, manager) = client_with(vec![], DEFAULT_TIMEOUT);
    manager.join().unwrap();
    let e = client.init().unwrap_err();
    assert!(matches!(e, PmiError::Closed { .. } | PmiError::Io { .. }), "{e}");

    // Garbage, and a line without end.
    let (mut client, _manager) = client_with(vec![Some("cmd=maxes kvsname_max=x\n")], DEFAULT_TIMEOUT);
    assert!(matches!(client.get_maxes(), Err(PmiError::Malformed { request: "get_maxes", .. })));
    let endless: &'static str = Box::leak("x".repeat(5000).into_boxed_str());
    let (mut client, _manager) = client_with(vec![Some(endless)], DEFAULT_TIMEOUT);
    assert!(matches!(client.init(), Err(PmiError::Malformed { .. })));
}

#[test]
fn the_client_can_sit_behind_a_mutex() {
    fn send<T: Send>() {}
    send::<PmiClient>();
}

// ---- under the real process manager ----

/// Set in the environment of the test binary run again under Hydra: the
/// named test then plays one process of the job instead of starting it.
pub(super) const CHILD: &str = "THREADWIRE_PMI_TEST_CHILD";

/// Runs this test binary's test `name` under `mpiexec.hydra args`,
/// through `wrapper` (a command put before the binary), and returns its
/// exit status and the lines the processes printed starting with
/// `pmi-child`; `None`, with the reason printed, without Hydra.
fn under_hydra(name: &str, args: &[&str], wrapper: &[&str]) -> Option<(std::process::ExitStatus, Vec<String>)> {
    let hydra = "/usr/bin/mpiexec.hydra";
    if !std::path::Path::new(hydra).exists() {
        println!("skipped: {hydra} is not installed");
        return None;
    }
    let mut cmd = Command::new(hydra);
    cmd.args(args).args(wrapper);
    Some(run_job(cmd, &format!("pmi::tests::{name}"), "pmi-child"))
}

/// Runs this test binary's test `test` (its path) as every process of
/// the job `manager` starts (the manager, its arguments and variables
/// set; the binary is appended), with [`CHILD`] set; returns the job's
/// exit status and the lines the processes printed starting with
/// `marker`.
pub(super) fn run_job(
    mut manager: Command,
    test: &str,
    marker: &str,
) -> (std::process::ExitStatus, Vec<String>) {
    let exe = std::env::current_exe().unwrap();
    let name = test.rsplit("::").next().unwrap_or(test);
    let out_path = std::env::temp_dir().join(format!("threadwire-pmi-{}-{name}.out", std::process::id()));
    let out = std::fs::File::create(&out_path).unwrap();
    manager
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out);
    let shown = format!("{:?}", manager);
    let mut job = threadwire_testbed::group::ProcessGroup::spawn(manager).unwrap();
    let status = job
        .wait_deadline(Instant::now() + Duration::from_secs(120))
        .unwrap();
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    let Some(status) = status else {
        panic!("{shown} still running after 120 s; output:\n{text}");
    };
    let lines = text
        .lines()
        // The test harness may print its own words before ours.
        .filter_map(|l| l.find(marker).map(|at| l[at..].to_owned()))
        .collect();
    println!("{shown}: {status}\n{text}");
    (status, lines)
}

/// One process's part: everything a node's bootstrap does, with checks.
fn exchange_addresses() {
    let mut client = PmiClient::from_env(DEFAULT_TIMEOUT)
        .unwrap()
        .expect("started by mpiexec.hydra, yet no PMI variable");
    let (rank, size) = (client.rank(), client.size());
    client.init().unwrap();
    let maxes = client.get_maxes().unwrap();
    let kvsname = client.get_my_kvsname().unwrap();
    let address = |r: u32| format!("10.0.{r}.1:{}", 4000 + r);
    client.put(&format!("addr-{rank}"), &address(rank)).unwrap();
    let own_before_barrier = match client.get(&format!("addr-{rank}")) {
        Ok(_) => "visible",
        Err(PmiError::NotFound { .. }) => "not-found",
        Err(e) => panic!("{e}"),
    };
    client.barrier(DEFAULT_TIMEOUT).unwrap();
    for peer in 0..size {
        assert_eq!(client.get(&format!("addr-{peer}")).unwrap(), address(peer));
    }
    assert!(matches!(client.get("no-such-key"), Err(PmiError::NotFound { .. })));
    // Kept open for the node's life: a second round, then a late get.
    client.put(&format!("late-{rank}"), "x").unwrap();
    client.barrier(DEFAULT_TIMEOUT).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let next = (rank + 1) % size;
    assert_eq!(client.get(&format!("late-{next}")).unwrap(), "x");
    assert_eq!(client.get(&format!("addr-{next}")).unwrap(), address(next));
    client.finalize().unwrap();
    println!(
        "pmi-child rank={rank} size={size} maxes={}/{}/{} kvsname={kvsname} own-before-barrier={own_before_barrier} ok",
        maxes.kvsname_max, maxes.keylen_max, maxes.vallen_max
    );
}

/// Every one of four processes said it was done, once.
pub(super) fn check_four(result: Option<(std::process::ExitStatus, Vec<String>)>) {
    let Some((status, lines)) = result else {
        return;
    };
    assert!(status.success(), "{status}: {lines:?}");
    let mut ranks: Vec<&str> = lines
        .iter()
        .map(|l| {
            assert!(l.contains(" size=4 ") && l.ends_with(" ok"), "{l}");
            l.split(' ').nth(1).unwrap()
        })
        .collect();
    ranks.sort();
    assert_eq!(ranks, ["rank=0", "rank=1", "rank=2", "rank=3"], "{lines:?}");
}

#[test]
fn four_processes_exchange_addresses_under_hydra() {
    if std::env::var_os(CHILD).is_some() {
        return exchange_addresses();
    }
    check_four(under_hydra("four_processes_exchange_addresses_under_hydra", &["-n", "4"], &[]));
}

#[test]
fn four_processes_exchange_addresses_under_hydra_pmi_port() {
    if std::env::var_os(CHILD).is_some() {
        assert!(std::env::var_os("PMI_PORT").is_some() && std::env::var_os("PMI_FD").is_none());
        return exchange_addresses();
    }
    check_four(under_hydra(
        "four_processes_exchange_addresses_under_hydra_pmi_port",
        &["-pmi-port", "-n", "4"],
        &[],
    ));
}

#[test]
fn a_missing_variable_under_hydra_is_one_clear_error() {
    if std::env::var_os(CHILD).is_some() {
        let e = PmiClient::from_env(DEFAULT_TIMEOUT).unwrap_err();
        return println!("pmi-child error: {e}");
    }
    let Some((status, lines)) = under_hydra(
        "a_missing_variable_under_hydra_is_one_clear_error",
        &["-n", "1"],
        &["env", "-u", "PMI_RANK"],
    ) else {
        return;
    };
    assert!(status.success(), "{status}");
    assert_eq!(
        lines,
        ["pmi-child error: PMI_RANK: not set, but PMI_SIZE is (a process manager must set both)"]
    );
}

/// The job `name`: two processes under Hydra, rank 0 ending the job with
/// `end` while rank 1 waits in a barrier that never completes; `mpiexec`
/// must exit with `code`. What the processes printed is not asserted:
/// Hydra drops the output of processes it kills before forwarding it.
fn rank_zero_ends_the_job(name: &str, end: impl FnOnce(PmiClient), code: i32) {
    if std::env::var_os(CHILD).is_some() {
        let mut client = PmiClient::from_env(DEFAULT_TIMEOUT).unwrap().unwrap();
        client.init().unwrap();
        if client.rank() == 0 {
            end(client);
        } else {
            let _ = client.barrier(DEFAULT_TIMEOUT);
        }
        // Until Hydra kills the job (the parent's deadline bounds it).
        loop {
            std::thread::park();
        }
    }
    let Some((status, _)) = under_hydra(name, &["-n", "2"], &[]) else {
        return;
    };
    assert_eq!(status.code(), Some(code));
}

#[test]
fn abort_ends_the_job_with_its_exit_code_under_hydra() {
    rank_zero_ends_the_job(
        "abort_ends_the_job_with_its_exit_code_under_hydra",
        |client| client.abort(7, "test abort").unwrap(),
        7,
    );
}

#[test]
fn dropping_the_client_after_init_ends_the_job_under_hydra() {
    rank_zero_ends_the_job(
        "dropping_the_client_after_init_ends_the_job_under_hydra",
        drop,
        9,
    );
}
