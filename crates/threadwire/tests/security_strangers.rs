//! Strangers at a node's door: garbage, another job's Hello, a wrong
//! secret, a forged proof, a Hello that never ends, a flood of silent
//! connections, frame headers without a handshake. Each is refused with a
//! log line, and the node's real peer keeps exchanging messages with it
//! all along (see `nodes/strangers.rs`).

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use threadwire_launch::{Event, OutputStream};
use threadwire_transport::handshake::{self, Credentials, HandshakeError};
use threadwire_wire::{FrameHeader, FrameKind, PROTOCOL_VERSION};

/// Silent connections opened at once: more than the node keeps in
/// handshake (256), so that some are refused at once.
const FLOOD: usize = 300;
/// Longer than the node's handshake timeout (10 s), with room for a slow
/// machine: a connection not closed by then never will be.
const CLOSE_WAIT: Duration = Duration::from_secs(40);

/// Whether the node closed `stream` without ever answering: reads end of
/// stream (or a reset) before any byte, within [`CLOSE_WAIT`].
fn closed_without_answer(mut stream: TcpStream) -> Result<(), String> {
    stream.set_read_timeout(Some(CLOSE_WAIT)).unwrap();
    let mut buf = [0u8; 256];
    match stream.read(&mut buf) {
        Ok(0) => Ok(()),
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) => Ok(()),
        Ok(n) => Err(format!("the node answered a stranger with {n} bytes")),
        Err(e) => Err(format!("the node kept a stranger's connection open: {e}")),
    }
}

fn hello(job_id: u64, node: u32) -> [u8; 56] {
    let mut b = [0u8; 56];
    b[0..4].copy_from_slice(b"TWHS");
    b[4] = PROTOCOL_VERSION;
    b[5] = 1;
    b[8..16].copy_from_slice(&job_id.to_le_bytes());
    b[16..20].copy_from_slice(&node.to_le_bytes());
    b[24..].copy_from_slice(&[0x5a; 32]);
    b
}

fn connect(addr: SocketAddr) -> TcpStream {
    TcpStream::connect(addr).expect("connect to the node")
}

/// Writes what a stranger sends; the node may already have hung up.
fn send(stream: &mut TcpStream, bytes: &[u8]) {
    let _ = stream.write_all(bytes);
}

/// The attacks that run one after the other; each returns what it saw.
fn attacks(addr: SocketAddr, job_id: u64) -> Vec<Result<String, String>> {
    let mut results = Vec::new();

    // (a) Garbage instead of a Hello.
    let mut s = connect(addr);
    send(&mut s, &[0xa5; 200]);
    results.push(closed_without_answer(s).map(|()| "garbage refused".into()));

    // (b) A well-formed Hello from another job.
    let wrong_job = Credentials {
        job_id: job_id ^ 0x1,
        secret: [7; 32],
    };
    results.push(match handshake::connect(addr, &wrong_job, 1, CLOSE_WAIT) {
        Err(e) => Ok(format!("another job's Hello refused ({e})")),
        Ok(_) => Err("a connection with another job id was accepted".into()),
    });

    // (c) The right job id but the wrong secret: the node's own proof does
    // not verify, so the connector gives up.
    let wrong_secret = Credentials {
        job_id,
        secret: [7; 32],
    };
    results.push(
        match handshake::connect(addr, &wrong_secret, 1, CLOSE_WAIT) {
            Err(HandshakeError::BadProof) => Ok("wrong secret refused".into()),
            Err(e) => Err(format!("wrong secret: expected BadProof, got {e}")),
            Ok(_) => Err("a connection with the wrong secret was accepted".into()),
        },
    );

    // (c') The right job id and a forged proof: the node must not welcome it.
    let mut s = connect(addr);
    send(&mut s, &hello(job_id, 1));
    let mut challenge = [0u8; 88];
    s.set_read_timeout(Some(CLOSE_WAIT)).unwrap();
    results.push(match s.read_exact(&mut challenge) {
        Ok(()) if &challenge[0..4] == b"TWHS" && challenge[5] == 2 => {
            send(&mut s, &[0u8; 32]);
            closed_without_answer(s).map(|()| "forged proof refused".into())
        }
        Ok(()) => Err(format!("not a Challenge: {:02x?}", &challenge[..8])),
        Err(e) => Err(format!(
            "no Challenge for a Hello with the right job id: {e}"
        )),
    });

    // (e) Garbage, then a frame header claiming an enormous payload.
    let mut s = connect(addr);
    let huge = FrameHeader {
        len: u64::MAX,
        ..FrameHeader::control(FrameKind::Data, 0, 0)
    };
    send(&mut s, b"\x00\x01garbage");
    send(&mut s, &huge.encode());
    send(&mut s, &[0xff; 64]);
    results.push(closed_without_answer(s).map(|()| "garbage + huge frame header refused".into()));

    // (e') A frame header right away, as if the handshake had happened.
    let mut s = connect(addr);
    send(&mut s, &huge.encode());
    send(&mut s, &huge.encode());
    results.push(closed_without_answer(s).map(|()| "frame without handshake refused".into()));

    // A Hello cut short and closed at once.
    let mut s = connect(addr);
    send(&mut s, &hello(job_id, 1)[..30]);
    drop(s);
    results
}

/// All the strangers: (d) a Hello cut short and then silence stays
/// pending while the quick attacks run, then a flood of silent connections
/// follows. The flood's excess must be refused at once, the rest dropped
/// after the handshake timeout, while the real peers keep working.
fn strangers(
    addr: SocketAddr,
    job_id: u64,
    rounds: Arc<AtomicU64>,
) -> (Vec<Result<String, String>>, Result<String, String>) {
    let mut truncated = connect(addr);
    send(&mut truncated, &hello(job_id, 1)[..20]);
    let before = rounds.load(Ordering::SeqCst);
    // Before the flood, which would have them refused for another reason.
    let quick = attacks(addr, job_id);
    let flood: Vec<TcpStream> = (0..FLOOD).map(|_| connect(addr)).collect();
    let slow = (|| {
        closed_without_answer(truncated).map_err(|e| format!("truncated Hello: {e}"))?;
        let after = rounds.load(Ordering::SeqCst);
        for (i, s) in flood.into_iter().enumerate() {
            closed_without_answer(s).map_err(|e| format!("silent connection {i}: {e}"))?;
        }
        if after <= before {
            return Err(format!(
                "the ping-pong stalled while a handshake was pending (rounds {before} -> {after})"
            ));
        }
        Ok(format!(
            "truncated Hello dropped; the ping-pong went on meanwhile (rounds {before} -> {after})"
        ))
    })();
    (quick, slow)
}

/// Creates the stop file when dropped, so that the job ends even if an
/// attack panics.
struct StopOnDrop(PathBuf);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        std::fs::write(&self.0, b"stop").expect("create the stop file");
    }
}

type Attacker = JoinHandle<(Vec<Result<String, String>>, Result<String, String>)>;

fn start_attacker(line: &str, stop_file: PathBuf, rounds: Arc<AtomicU64>) -> Attacker {
    let mut words = line.split_whitespace();
    let (Some("listen"), Some(addr), Some("job"), Some(job)) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        panic!("bad listen line {line:?}");
    };
    let addr: SocketAddr = addr.parse().expect("listen address");
    let job_id = u64::from_str_radix(job, 16).expect("job id in hex");
    std::thread::spawn(move || {
        let _stop = StopOnDrop(stop_file);
        strangers(addr, job_id, rounds)
    })
}

#[test]
fn strangers_are_refused_and_peers_keep_working() {
    let stop_file = std::env::temp_dir().join(format!(
        "threadwire-strangers-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    let rounds = Arc::new(AtomicU64::new(0));
    let mut attacker: Option<Attacker> = None;
    let spec = support::job(2, "node-strangers").args([stop_file.as_os_str()]);
    let out = support::run_observed(spec, |ev| {
        if let Event::Output {
            node: 0,
            stream: OutputStream::Stdout,
            line,
        } = ev
        {
            if line.starts_with("listen ") && attacker.is_none() {
                attacker = Some(start_attacker(line, stop_file.clone(), rounds.clone()));
            } else if let Some(n) = line.strip_prefix("rounds ") {
                rounds.store(n.parse().expect("round count"), Ordering::SeqCst);
            }
        }
    });
    let _ = std::fs::remove_file(&stop_file);
    let t = out.transcript();
    let (quick, slow) = attacker
        .unwrap_or_else(|| panic!("node 0 never printed its address:\n{t}"))
        .join()
        .expect("attacker panicked");
    for result in quick.iter().chain([&slow]) {
        match result {
            Ok(seen) => println!("{seen}"),
            Err(e) => panic!("{e}\n{t}"),
        }
    }

    // The real peers kept working, and the job ended cleanly.
    out.assert_success();
    let done = out.line(0, "pingpong: ");
    assert!(
        done.ends_with(" rounds ok") && !done.starts_with("pingpong: 0 "),
        "{done}"
    );

    // Every kind of stranger was refused, with a log line saying why.
    let refusals: Vec<&String> = out.stderr[0]
        .iter()
        .filter(|l| l.contains("refused connection from"))
        .collect();
    for why in [
        "bad handshake magic",
        "belongs to job",
        "failed to prove the job secret",
        "handshake timed out",
        "too many handshakes in progress",
    ] {
        assert!(
            refusals.iter().any(|l| l.contains(why)),
            "no \"refused connection\" line saying {why:?}:\n{t}"
        );
    }
    // One line per stranger: 7 quick ones, the truncated Hello, the flood.
    for line in refusals.iter().take(10) {
        println!("{line}");
    }
    assert!(
        refusals.len() >= 7 + 1 + FLOOD,
        "{} refusals logged:\n{t}",
        refusals.len()
    );
}
