//! A program run against a virtual machine (module docs, step 2): its
//! standard input from bytes, its output captured through pipes by a
//! reader thread each, and a deadline.
//!
//! 1. Input is written to a file in the scratch directory first, so a
//!    program that reads it to its end gets end-of-file, never a hang.
//! 2. Each of stdout and stderr is read into memory as it comes, at most
//!    [`OUTPUT_LIMIT`] bytes: past that the pipe is closed, and a program
//!    that keeps writing (a prompt repeated at end-of-file) dies of
//!    `SIGPIPE` instead of filling the disk until its deadline.
//! 3. Whoever waits for a text ([`Task::wait_for_output`]) is woken by the
//!    reader on every chunk and at end-of-file: a condition variable, not
//!    a poll.
//! 4. [`Task::finish`] waits for the program on its pidfd until the
//!    deadline, then kills its process group and every descendant; what
//!    it printed until then is kept either way.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use super::{io, Error};
use crate::group::ProcessGroup;
use crate::process::Finished;

/// The most of each stream that is kept (module docs, step 2).
pub const OUTPUT_LIMIT: usize = 4 << 20;

/// coreutils' `stdbuf` library, which sets a program's stdio buffering
/// from `_STDBUF_*` as it starts.
const STDBUF: [&str; 2] = [
    "/usr/libexec/coreutils/libstdbuf.so",
    "/usr/lib/coreutils/libstdbuf.so",
];

/// Has `cmd`'s C stdio write stdout line by line, as `stdbuf -oL` would,
/// without putting `stdbuf` between the caller and the program: on a
/// pipe, stdio otherwise keeps what a program prints until it exits, and
/// [`Task::wait_for_output`] could not see a server say that it is ready.
/// Says whether coreutils' library was found.
pub fn line_buffered(cmd: &mut Command) -> bool {
    match STDBUF.iter().find(|path| Path::new(path).is_file()) {
        Some(library) => {
            cmd.env("LD_PRELOAD", library).env("_STDBUF_O", "L");
            true
        }
        None => false,
    }
}

/// A running program, killed with its process group when dropped.
pub struct Task {
    group: ProcessGroup,
    stdout: Capture,
    stderr: Capture,
    started: Instant,
}

/// What a program did.
#[derive(Clone, Debug)]
pub struct Ran {
    /// How it ended: by itself, or killed at its deadline.
    pub finished: Finished,
    /// Its standard output, as far as read.
    pub stdout: String,
    /// Its standard error, as far as read.
    pub stderr: String,
    /// Whether a stream was cut at [`OUTPUT_LIMIT`], or still open when
    /// the deadline came.
    pub truncated: bool,
}

impl Ran {
    /// Whether it ended by itself with status 0.
    pub fn success(&self) -> bool {
        matches!(self.finished, Finished::Exited(status) if status.success())
    }
}

impl Task {
    /// Starts `cmd` in a process group of its own, `input` as its standard
    /// input (a file in `dir`), its output captured (module docs).
    pub fn start(mut cmd: Command, input: &[u8], dir: &Path) -> Result<Task, Error> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = dir.join(format!("stdin-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        std::fs::write(&path, input).map_err(io("writing a program's input"))?;
        let input = File::open(&path).map_err(io("writing a program's input"))?;
        cmd.stdin(input)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut group = ProcessGroup::spawn(cmd).map_err(io("starting a program"))?;
        let stdout = Capture::start(group.take_stdout().map(|p| Box::new(p) as _));
        let stderr = Capture::start(group.take_stderr().map(|p| Box::new(p) as _));
        Ok(Task {
            group,
            stdout,
            stderr,
            started: Instant::now(),
        })
    }

    /// Waits until its standard output holds `text`: `Ok(true)`; or until
    /// that stream ends without it, `Ok(false)`; past `deadline`,
    /// [`Error::TimedOut`] (the task left running).
    pub fn wait_for_output(&self, text: &str, deadline: Instant) -> Result<bool, Error> {
        let shared = &self.stdout.shared;
        let mut state = shared.lock();
        loop {
            if String::from_utf8_lossy(&state.bytes).contains(text) {
                return Ok(true);
            }
            if state.ended {
                return Ok(false);
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Err(Error::TimedOut(self.started.elapsed()));
            };
            state = shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Waits for it to end, at most until `deadline`; then kills its
    /// group and every descendant (module docs, step 4).
    pub fn finish(mut self, deadline: Instant) -> Result<Ran, Error> {
        let finished = match self.group.wait_deadline(deadline) {
            Ok(Some(status)) => Finished::Exited(status),
            Ok(None) => {
                self.group.kill();
                Finished::Stopped
            }
            Err(source) => {
                return Err(Error::Io {
                    what: "waiting for a program",
                    source,
                })
            }
        };
        // Whatever it forked may hold the pipes a little longer; not past
        // the deadline (or a moment after it, once killed).
        let drained = deadline.max(Instant::now() + crate::pvm::HALT_GRACE);
        let (stdout, out_cut) = self.stdout.take(drained);
        let (stderr, err_cut) = self.stderr.take(drained);
        Ok(Ran {
            finished,
            stdout,
            stderr,
            truncated: out_cut || err_cut,
        })
    }

    /// The program's process id, which is also its group's.
    pub fn id(&self) -> u32 {
        self.group.id()
    }
}

/// One stream, read by a thread of its own (module docs, steps 2 and 3).
struct Capture {
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<Captured>,
    changed: Condvar,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    ended: bool,
    truncated: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Captured> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Capture {
    fn start(pipe: Option<Box<dyn Read + Send>>) -> Capture {
        let shared = Arc::new(Shared {
            state: Mutex::new(Captured::default()),
            changed: Condvar::new(),
        });
        let Some(mut pipe) = pipe else {
            shared.lock().ended = true;
            return Capture {
                shared,
                reader: None,
            };
        };
        let theirs = Arc::clone(&shared);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                let n = pipe.read(&mut buf).unwrap_or(0);
                let mut state = theirs.lock();
                let room = OUTPUT_LIMIT - state.bytes.len();
                state.bytes.extend_from_slice(&buf[..n.min(room)]);
                if n > room {
                    state.truncated = true;
                }
                if n == 0 || n > room {
                    // Dropping the pipe closes it (step 2).
                    state.ended = true;
                    theirs.changed.notify_all();
                    return;
                }
                theirs.changed.notify_all();
            }
        });
        Capture {
            shared,
            reader: Some(reader),
        }
    }

    /// What was read, once the stream ended or `deadline` passed, and
    /// whether it was cut short.
    fn take(&mut self, deadline: Instant) -> (String, bool) {
        let mut state = self.shared.lock();
        while !state.ended {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let ended = state.ended;
        let text = String::from_utf8_lossy(&state.bytes).into_owned();
        let cut = state.truncated || !ended;
        drop(state);
        if ended {
            if let Some(reader) = self.reader.take() {
                let _ = reader.join();
            }
        }
        (text, cut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scratch() -> std::path::PathBuf {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "threadwire-task-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn sh(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        cmd
    }

    #[test]
    fn input_is_fed_and_both_streams_are_captured() {
        let dir = scratch();
        let task = Task::start(
            sh("read a; read b; echo $b; echo $a >&2; exit 3"),
            b"1\n2\n",
            &dir,
        );
        let ran = task
            .unwrap()
            .finish(Instant::now() + Duration::from_secs(30))
            .unwrap();
        assert_eq!((ran.stdout.as_str(), ran.stderr.as_str()), ("2\n", "1\n"));
        assert!(matches!(ran.finished, Finished::Exited(s) if s.code() == Some(3)));
        assert!(!ran.truncated && !ran.success());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_program_that_hangs_is_killed_at_its_deadline_keeping_its_output() {
        let dir = scratch();
        let task = Task::start(sh("echo started; exec sleep 60"), b"", &dir).unwrap();
        let started = Instant::now();
        let ran = task.finish(started + Duration::from_millis(300)).unwrap();
        assert_eq!(ran.finished, Finished::Stopped);
        assert_eq!(ran.stdout, "started\n");
        assert!(started.elapsed() < Duration::from_secs(30), "not killed");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn endless_output_is_cut_at_the_limit() {
        let dir = scratch();
        let task = Task::start(Command::new("yes"), b"", &dir).unwrap();
        let ran = task
            .finish(Instant::now() + Duration::from_secs(30))
            .unwrap();
        assert!(ran.truncated);
        assert_eq!(ran.stdout.len(), OUTPUT_LIMIT);
        // Killed by SIGPIPE once the pipe closed, long before the deadline.
        assert!(matches!(ran.finished, Finished::Exited(_)));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_printed_text_is_seen_while_the_program_runs() {
        let dir = scratch();
        let task = Task::start(sh("echo ready; read line; echo $line"), b"", &dir).unwrap();
        let soon = Instant::now() + Duration::from_secs(30);
        assert!(task.wait_for_output("ready", soon).unwrap());
        assert!(!task.wait_for_output("never printed", soon).unwrap());
        task.finish(soon).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
