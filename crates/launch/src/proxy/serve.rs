//! The proxy's side (`threadwire proxy`): steps 1 and 3–7 of the protocol
//! in the `proxy` module docs.
//!
//! The thread that calls [`serve`] reads the requests and starts the
//! nodes, so it is the parent `PR_SET_PDEATHSIG` watches: it must live as
//! long as the nodes may (it does, until [`serve`] returns). Per node, two
//! threads forward its output and one waits for its end. Replies are
//! written whole under one lock.
//!
//! A node's pid stays in the table of running nodes until its waiter has
//! seen it end (`waitid` with `WNOWAIT`) and taken it out; only then is it
//! reaped. A kill looks the pid up under the same lock, so it never hits a
//! reaped pid the kernel may have given to another process.

use super::frame;
use super::{Reply, Request, END_WAIT, OUTPUT_LINGER, VERSION};
use crate::process::{self, NodeExit};
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Where replies go: the connection to the launcher, one frame at a time.
struct Replies<W>(Arc<Mutex<W>>);

impl<W> Clone for Replies<W> {
    fn clone(&self) -> Self {
        Replies(self.0.clone())
    }
}

impl<W: Write> Replies<W> {
    /// Sends `reply`; a launcher that is gone will also end the input,
    /// which ends the proxy, so a failed write is only logged.
    fn send(&self, reply: &Reply) {
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = frame::write(&mut *out, reply) {
            tracing::debug!("proxy: writing to the launcher: {e}");
        }
    }
}

/// The running nodes' pids, by node number (module docs).
type Running = Arc<Mutex<HashMap<u32, u32>>>;

/// Serves one launcher: reads its requests from `input` and writes the
/// replies to `output` until it says `End` or `input` ends,
/// then kills the nodes still running and returns once they are reaped
/// (or after [`END_WAIT`]). An unreadable request ends it the same way,
/// and is returned as the error.
pub fn serve(mut input: impl Read, output: impl Write + Send + 'static) -> io::Result<()> {
    let replies = Replies(Arc::new(Mutex::new(output)));
    replies.send(&Reply::Ready {
        version: VERSION,
        pid: std::process::id(),
    });
    let running: Running = Arc::default();
    let (waiter_done, waiters_done) = mpsc::channel::<()>();
    let mut waiters = 0usize;
    let result = loop {
        match frame::read::<Request>(&mut input) {
            Ok(Some(Request::Start {
                node,
                program,
                args,
                env,
            })) => match start(node, program, args, env, &replies, &running, &waiter_done) {
                Ok(()) => waiters += 1,
                Err(why) => replies.send(&Reply::Failed { node, why }),
            },
            Ok(Some(Request::Kill { node })) => {
                let running = running.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(&pid) = running.get(&node) {
                    process::kill(pid);
                }
            }
            Ok(Some(Request::End)) | Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    for &pid in running.lock().unwrap_or_else(|e| e.into_inner()).values() {
        process::kill(pid);
    }
    drop(waiter_done);
    let until = Instant::now() + END_WAIT;
    for _ in 0..waiters {
        let left = until.saturating_duration_since(Instant::now());
        if waiters_done.recv_timeout(left).is_err() {
            tracing::warn!("proxy: nodes not reaped within {END_WAIT:?} of the end");
            break;
        }
    }
    result
}

/// Step 3: starts `node` and says so, then starts threads forwarding its
/// output and waiting for its end; or says why it did not start.
fn start<W: Write + Send + 'static>(
    node: u32,
    program: Vec<u8>,
    args: Vec<Vec<u8>>,
    env: Vec<(String, String)>,
    replies: &Replies<W>,
    running: &Running,
    waiter_done: &Sender<()>,
) -> Result<(), String> {
    if running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(&node)
    {
        return Err(format!("node n{node} runs already"));
    }
    let program = OsString::from_vec(program);
    let mut cmd = Command::new(&program);
    cmd.args(args.into_iter().map(OsString::from_vec))
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    process::die_with_parent(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
    let pid = child.id();
    running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(node, pid);
    replies.send(&Reply::Started { node, pid });
    let (linger, lingering) = mpsc::channel::<()>();
    let pipes: [(Option<Box<dyn Read + Send>>, bool); 2] = [
        (child.stdout.take().map(|p| Box::new(p) as _), false),
        (child.stderr.take().map(|p| Box::new(p) as _), true),
    ];
    for (pipe, stderr) in pipes {
        let Some(pipe) = pipe else { continue };
        let (replies, linger) = (replies.clone(), linger.clone());
        spawn(format!("out-n{node}"), move || {
            forward(node, stderr, pipe, &replies);
            drop(linger);
        });
    }
    drop(linger);
    let (replies, running, waiter_done) = (replies.clone(), running.clone(), waiter_done.clone());
    spawn(format!("wait-n{node}"), move || {
        let seen = process::wait_exited(pid);
        running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&node);
        let exit = match (seen, child.wait()) {
            (Ok(()), Ok(status)) => NodeExit::from_status(status),
            _ => NodeExit::Code(-1),
        };
        linger_for_output(&lingering);
        replies.send(&Reply::Exited { node, exit });
        let _ = waiter_done.send(());
    });
    Ok(())
}

/// Step 4: each line of `pipe` as a reply, until it closes.
fn forward<W: Write>(node: u32, stderr: bool, pipe: impl Read, replies: &Replies<W>) {
    process::for_each_line(pipe, |line| {
        replies.send(&Reply::Output { node, stderr, line });
        true
    });
}

/// Step 5: waits until both output threads have ended (their senders are
/// dropped), at most [`OUTPUT_LINGER`].
fn linger_for_output(lingering: &Receiver<()>) {
    let until = Instant::now() + OUTPUT_LINGER;
    loop {
        match lingering.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(()) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                tracing::debug!("proxy: a node's output outlives it");
                return;
            }
        }
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = std::thread::Builder::new().name(name).spawn(f) {
        tracing::error!("proxy: cannot start a thread: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::frame;
    use super::*;
    use std::os::unix::net::UnixStream;

    /// Runs `serve` on a socket pair; the requests' end and the replies'.
    fn proxy() -> (
        UnixStream,
        UnixStream,
        std::thread::JoinHandle<io::Result<()>>,
    ) {
        let (requests, request_end) = UnixStream::pair().unwrap();
        let (replies, reply_end) = UnixStream::pair().unwrap();
        let served = std::thread::spawn(move || serve(request_end, reply_end));
        (requests, replies, served)
    }

    fn start_sh(node: u32, script: &str) -> Request {
        Request::Start {
            node,
            program: b"/bin/sh".to_vec(),
            args: vec![b"-c".to_vec(), script.as_bytes().to_vec()],
            env: vec![("GREETING".into(), "hello".into())],
        }
    }

    /// Replies until node `node` has exited, which comes last.
    fn until_exit(replies: &mut UnixStream, node: u32) -> Vec<Reply> {
        let mut seen = Vec::new();
        loop {
            let reply = frame::read::<Reply>(replies)
                .unwrap()
                .expect("the proxy ended early");
            let last = matches!(reply, Reply::Exited { node: n, .. } if n == node);
            seen.push(reply);
            if last {
                return seen;
            }
        }
    }

    #[test]
    fn a_node_runs_prints_and_exits_then_the_end_of_input_ends_the_proxy() {
        let (mut requests, mut replies, served) = proxy();
        assert!(matches!(
            frame::read::<Reply>(&mut replies).unwrap(),
            Some(Reply::Ready {
                version: VERSION,
                ..
            })
        ));
        frame::write(
            &mut requests,
            &start_sh(4, "echo $GREETING; echo oops >&2; exit 3"),
        )
        .unwrap();
        let seen = until_exit(&mut replies, 4);
        assert!(
            matches!(seen[0], Reply::Started { node: 4, .. }),
            "{seen:?}"
        );
        assert_eq!(seen.len(), 4, "{seen:?}");
        for (stderr, text) in [(false, "hello"), (true, "oops")] {
            let line = text.as_bytes().to_vec();
            assert!(
                seen.contains(&Reply::Output {
                    node: 4,
                    stderr,
                    line
                }),
                "{seen:?}"
            );
        }
        assert_eq!(
            seen.last(),
            Some(&Reply::Exited {
                node: 4,
                exit: NodeExit::Code(3)
            })
        );
        frame::write(
            &mut requests,
            &Request::Start {
                node: 5,
                program: b"/nonexistent/node".to_vec(),
                args: Vec::new(),
                env: Vec::new(),
            },
        )
        .unwrap();
        match frame::read::<Reply>(&mut replies).unwrap() {
            Some(Reply::Failed { node: 5, why }) => assert!(why.contains("/nonexistent"), "{why}"),
            other => panic!("{other:?}"),
        }
        drop(requests);
        served.join().unwrap().unwrap();
        assert!(frame::read::<Reply>(&mut replies).unwrap().is_none());
    }

    #[test]
    fn kill_and_end_leave_no_node_running() {
        let (mut requests, mut replies, served) = proxy();
        let _ready = frame::read::<Reply>(&mut replies).unwrap();
        frame::write(&mut requests, &start_sh(0, "exec sleep 100")).unwrap();
        frame::write(&mut requests, &start_sh(1, "exec sleep 100")).unwrap();
        let mut pids = Vec::new();
        while pids.len() < 2 {
            if let Some(Reply::Started { pid, .. }) = frame::read::<Reply>(&mut replies).unwrap() {
                pids.push(pid);
            }
        }
        frame::write(&mut requests, &Request::Kill { node: 0 }).unwrap();
        let seen = until_exit(&mut replies, 0);
        assert_eq!(
            seen.last(),
            Some(&Reply::Exited {
                node: 0,
                exit: NodeExit::Signal(libc::SIGKILL)
            })
        );
        frame::write(&mut requests, &Request::End).unwrap();
        let seen = until_exit(&mut replies, 1);
        assert!(
            matches!(
                seen.last(),
                Some(Reply::Exited {
                    exit: NodeExit::Signal(9),
                    ..
                })
            ),
            "{seen:?}"
        );
        served.join().unwrap().unwrap();
        for pid in pids {
            // Reaped: no such process (or, rarely, another process now).
            let stat = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            assert!(!stat.contains("sleep"), "n? pid {pid} still runs");
        }
    }
}
