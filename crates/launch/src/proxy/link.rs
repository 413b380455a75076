//! The launcher's side of the proxies: one ssh connection per ssh host of
//! the job, opened when the host gets its first node (steps 1, 2, 6–8 of
//! the protocol in the `proxy` module docs).
//!
//! The job's loop never waits on a connection: requests go through a
//! channel to a writer thread per connection, and a reader thread turns
//! the proxy's replies into the loop's [`Internal`] messages. A reply
//! about a node the connection was not asked to start is ignored, so a
//! confused or hostile proxy cannot make the launcher index a node that
//! does not exist.

use super::frame;
use super::{Reply, Request, END_WAIT, VERSION};
use crate::event::OutputStream;
use crate::job::Internal;
use crate::process::{self, NodeExit};
use crate::SshConfig;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// ssh's last lines on standard error kept to explain a lost connection.
const SSH_WORDS: usize = 4;

/// The job's proxies, by ssh host.
pub(crate) struct Proxies {
    links: HashMap<String, Link>,
    ssh: SshConfig,
    events: Sender<Internal>,
}

/// One ssh connection and the threads serving it.
struct Link {
    handle: ProxyHandle,
    ssh: Child,
    /// Disconnected when the reader thread has ended.
    reader_done: Receiver<()>,
}

/// What the job keeps to reach a node on a proxy: a cheap handle.
#[derive(Clone)]
pub(crate) struct ProxyHandle {
    requests: Sender<Request>,
    nodes: Arc<Mutex<Nodes>>,
}

/// The nodes of one connection, as the reader thread and the job share
/// them.
#[derive(Default)]
struct Nodes {
    /// Asked to start, not yet reported ended.
    live: BTreeSet<u32>,
    /// Ever asked to start here.
    started: BTreeSet<u32>,
    /// The connection has ended: no more nodes start on it.
    closed: bool,
}

impl ProxyHandle {
    /// Step 6: kills `node` on its host.
    pub(crate) fn kill(&self, node: u32) {
        let _ = self.requests.send(Request::Kill { node });
    }

    fn nodes(&self) -> std::sync::MutexGuard<'_, Nodes> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Proxies {
    pub(crate) fn new(ssh: SshConfig, events: Sender<Internal>) -> Proxies {
        Proxies {
            links: HashMap::new(),
            ssh,
            events,
        }
    }

    /// Step 2: starts `node` on ssh host `host` with `env`, connecting to
    /// the host first if it has no proxy yet, or a new one if its
    /// connection has ended. Whether it did start comes later, as the
    /// job's messages.
    pub(crate) fn start(
        &mut self,
        host: &str,
        node: u32,
        program: &Path,
        args: &[OsString],
        env: Vec<(String, String)>,
    ) -> io::Result<ProxyHandle> {
        if self
            .links
            .get(host)
            .is_some_and(|link| link.handle.nodes().closed)
        {
            self.end_host(host);
        }
        let handle = match self.links.get(host) {
            Some(link) => link.handle.clone(),
            None => {
                let link = self.connect(host)?;
                let handle = link.handle.clone();
                self.links.insert(host.to_string(), link);
                handle
            }
        };
        let request = Request::Start {
            node,
            program: program.as_os_str().as_bytes().to_vec(),
            args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
            env,
        };
        // Under the lock, so that the reader, which closes the set under
        // it, reports the node lost if the connection ends from now on.
        let mut nodes = handle.nodes();
        if nodes.closed || handle.requests.send(request).is_err() {
            return Err(io::Error::other(format!(
                "the ssh connection to {host} has ended"
            )));
        }
        nodes.live.insert(node);
        nodes.started.insert(node);
        drop(nodes);
        Ok(handle)
    }

    /// Step 1: `ssh … HOST 'EXE' proxy`, and its threads.
    fn connect(&self, host: &str) -> io::Result<Link> {
        let exe = match &self.ssh.proxy {
            Some(exe) => exe.clone(),
            None => std::env::current_exe()?,
        };
        let mut cmd = Command::new("ssh");
        // No terminal, whatever the config says: a terminal's line
        // discipline would mangle the frames.
        cmd.args(["-T", "-o", "BatchMode=yes"])
            .args(&self.ssh.options)
            .arg(host)
            .arg(format!("{} proxy", shell_quoted(&exe)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        process::die_with_parent(&mut cmd);
        let mut ssh = cmd
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot run ssh to {host}: {e}")))?;
        let stdin = ssh.stdin.take().expect("piped");
        let stdout = ssh.stdout.take().expect("piped");
        let stderr = ssh.stderr.take().expect("piped");
        let (requests, pending) = mpsc::channel();
        let handle = ProxyHandle {
            requests,
            nodes: Arc::default(),
        };
        let said = Arc::new(Mutex::new(VecDeque::new()));
        let (stderr_open, stderr_done) = mpsc::channel::<()>();
        let (reader_open, reader_done) = mpsc::channel::<()>();
        let reader = Reader {
            host: host.to_string(),
            handle: handle.clone(),
            events: self.events.clone(),
            said: said.clone(),
        };
        let threads = [
            spawn(format!("ssh-w-{host}"), move || {
                write_requests(stdin, pending)
            }),
            spawn(format!("ssh-e-{host}"), move || {
                keep_last_words(stderr, &said);
                drop(stderr_open);
            }),
            spawn(format!("ssh-r-{host}"), move || {
                reader.serve(stdout, &stderr_done);
                drop(reader_open);
            }),
        ];
        if let Some(Err(e)) = threads.into_iter().find(Result::is_err) {
            let _ = ssh.kill();
            let _ = ssh.wait();
            return Err(e);
        }
        Ok(Link {
            handle,
            ssh,
            reader_done,
        })
    }

    /// Step 7 from the launcher: asks every proxy to end, waits (at most
    /// [`END_WAIT`]) for their connections to close, then makes sure no
    /// ssh client is left.
    pub(crate) fn end(&mut self) {
        let until = Instant::now() + END_WAIT;
        for link in self.links.values() {
            let _ = link.handle.requests.send(Request::End);
        }
        for (host, link) in self.links.drain() {
            link.finish(&host, until);
        }
    }

    /// Step 7 for one host, removed from the job: its proxy kills its
    /// nodes (their exits come as usual) and ends, seen out by a thread of
    /// its own, as the job's loop does not wait. A node started on the
    /// host later gets a new connection.
    pub(crate) fn end_host(&mut self, host: &str) {
        let Some(link) = self.links.remove(host) else {
            return;
        };
        let _ = link.handle.requests.send(Request::End);
        let host = host.to_string();
        let name = format!("ssh-end-{host}");
        let ending = spawn(name, move || link.finish(&host, Instant::now() + END_WAIT));
        if let Err(e) = ending {
            // The ssh client, unreaped, goes with the launcher.
            tracing::warn!("launcher: cannot start a thread to end a proxy: {e}");
        }
    }
}

impl Link {
    /// Waits (until `until`) for the proxy, asked to end, to close the
    /// connection; then makes sure the ssh client is gone — cut off if it
    /// is not, so that the proxy sees its input end and kills its nodes.
    fn finish(mut self, host: &str, until: Instant) {
        let left = until.saturating_duration_since(Instant::now());
        if let Err(RecvTimeoutError::Timeout) = self.reader_done.recv_timeout(left) {
            tracing::warn!("launcher: the proxy on {host} did not end within {END_WAIT:?}");
        }
        let _ = self.ssh.kill();
        let _ = self.ssh.wait();
    }
}

/// The thread that writes one connection's requests, until [`Request::End`]
/// or a broken connection; closing the proxy's input then ends it too.
fn write_requests(mut stdin: ChildStdin, pending: Receiver<Request>) {
    for request in pending {
        if let Err(e) = frame::write(&mut stdin, &request) {
            tracing::debug!("launcher: writing to a proxy: {e}");
            return;
        }
        if request == Request::End {
            return;
        }
    }
}

/// Logs what ssh says on standard error and keeps its last lines.
fn keep_last_words(stderr: impl Read, said: &Mutex<VecDeque<String>>) {
    process::for_each_line(stderr, |line| {
        let line = String::from_utf8_lossy(&line).into_owned();
        tracing::debug!("ssh: {line}");
        let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
        if said.len() == SSH_WORDS {
            said.pop_front();
        }
        said.push_back(line);
        true
    });
}

/// The reader thread of one connection (steps 1, 3–5, 8).
struct Reader {
    host: String,
    handle: ProxyHandle,
    events: Sender<Internal>,
    said: Arc<Mutex<VecDeque<String>>>,
}

impl Reader {
    fn serve(self, mut stdout: impl Read, stderr_done: &Receiver<()>) {
        let why = match self.greeting(&mut stdout) {
            Ok(()) => loop {
                match frame::read::<Reply>(&mut stdout) {
                    Ok(Some(reply)) => {
                        if !self.forward(reply) {
                            break "the launcher has ended".to_string();
                        }
                    }
                    Ok(None) => break "it closed".to_string(),
                    Err(e) => break format!("the proxy said something unreadable: {e}"),
                }
            },
            Err(why) => why,
        };
        // ssh's last words, once it has said them (it ends with the
        // connection).
        let _ = stderr_done.recv_timeout(END_WAIT);
        let said: Vec<String> = self
            .said
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        let why = match said.is_empty() {
            true => why,
            false => format!("{why}; ssh: {}", said.join(" / ")),
        };
        let lost = {
            let mut nodes = self.handle.nodes();
            nodes.closed = true;
            std::mem::take(&mut nodes.live)
        };
        for node in lost {
            let _ = self.events.send(Internal::Lost {
                node,
                exit: NodeExit::Code(255),
                why: format!(
                    "node n{node} was lost with the ssh connection to {} ({why})",
                    self.host
                ),
            });
        }
    }

    /// Step 1: the proxy's first reply must be its greeting.
    fn greeting(&self, stdout: &mut impl Read) -> Result<(), String> {
        match frame::read::<Reply>(stdout) {
            Ok(Some(Reply::Ready { version, pid })) if version == VERSION => {
                tracing::debug!("launcher: proxy on {} is pid {pid}", self.host);
                Ok(())
            }
            Ok(Some(Reply::Ready { version, .. })) => Err(format!(
                "its proxy speaks version {version}, this launcher {VERSION}"
            )),
            Ok(Some(_)) => Err("its proxy did not greet first".into()),
            Ok(None) => Err("it closed before the proxy started".into()),
            Err(e) => Err(format!("no threadwire proxy answered: {e}")),
        }
    }

    /// Steps 3–5: a reply as the job's message; false once the job's
    /// loop is gone.
    fn forward(&self, reply: Reply) -> bool {
        let message = {
            let mut nodes = self.handle.nodes();
            match reply {
                Reply::Started { node, pid } if nodes.live.contains(&node) => {
                    Internal::Started { node, pid }
                }
                Reply::Failed { node, why } if nodes.live.remove(&node) => Internal::Lost {
                    node,
                    exit: NodeExit::Code(127),
                    why: format!("node n{node} could not start on ssh:{}: {why}", self.host),
                },
                Reply::Output { node, stderr, line } if nodes.started.contains(&node) => {
                    Internal::Output {
                        node,
                        stream: match stderr {
                            true => OutputStream::Stderr,
                            false => OutputStream::Stdout,
                        },
                        line: String::from_utf8_lossy(&line).into_owned(),
                    }
                }
                Reply::Exited { node, exit } if nodes.live.remove(&node) => {
                    Internal::Exited { node, exit }
                }
                other => {
                    tracing::warn!(
                        "launcher: ignored from the proxy on {}: {other:?}",
                        self.host
                    );
                    return true;
                }
            }
        };
        self.events.send(message).is_ok()
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) -> io::Result<()> {
    std::thread::Builder::new().name(name).spawn(f).map(drop)
}

/// `path` quoted for the remote shell that runs ssh's command.
fn shell_quoted(path: &Path) -> String {
    let text = path.to_string_lossy();
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A proxy that greets, then speaks of nodes it was not given, then
    /// says something unreadable: the reader ignores the strangers, passes
    /// on what concerns its node, and reports that node lost, naming the
    /// host and ssh's last words.
    #[test]
    fn a_confused_proxy_costs_its_nodes_and_nothing_else() {
        let mut stream = Vec::new();
        for reply in [
            Reply::Ready {
                version: VERSION,
                pid: 1,
            },
            Reply::Exited {
                node: 99,
                exit: NodeExit::Code(0),
            },
            Reply::Started { node: 7, pid: 70 },
            Reply::Started { node: 3, pid: 30 },
            Reply::Output {
                node: 3,
                stderr: false,
                line: b"hi".to_vec(),
            },
        ] {
            frame::write(&mut stream, &reply).unwrap();
        }
        stream.extend_from_slice(&[0xff; 8]);
        let (requests, _pending) = mpsc::channel();
        let handle = ProxyHandle {
            requests,
            nodes: Arc::default(),
        };
        handle.nodes().live.insert(3);
        handle.nodes().started.insert(3);
        let (events, news) = mpsc::channel();
        let said = Arc::new(Mutex::new(VecDeque::from(["Connection reset".to_string()])));
        let reader = Reader {
            host: "node17".into(),
            handle: handle.clone(),
            events,
            said,
        };
        // ssh has said its last words.
        let (stderr_open, stderr_done) = mpsc::channel::<()>();
        drop(stderr_open);
        reader.serve(&stream[..], &stderr_done);
        let news: Vec<Internal> = news.try_iter().collect();
        assert_eq!(news.len(), 3);
        assert!(matches!(news[0], Internal::Started { node: 3, pid: 30 }));
        assert!(matches!(&news[1], Internal::Output { node: 3, line, .. } if line == "hi"));
        match &news[2] {
            Internal::Lost {
                node: 3,
                exit: NodeExit::Code(255),
                why,
            } => {
                assert!(why.contains("ssh connection to node17"), "{why}");
                assert!(why.contains("unreadable"), "{why}");
                assert!(why.contains("ssh: Connection reset"), "{why}");
            }
            _ => panic!("node 3 is not reported lost"),
        }
        assert!(handle.nodes().closed);
    }

    #[test]
    fn paths_are_quoted_for_the_remote_shell() {
        assert_eq!(
            shell_quoted(Path::new("/opt/tw bin/it's")),
            r"'/opt/tw bin/it'\''s'"
        );
    }
}
