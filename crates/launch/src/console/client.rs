//! The console's other end: finding this user's running jobs and asking
//! one of them (what `threadwire vm` does), over the protocol of
//! [`super`]'s steps 2–4.

use super::*;
use std::os::fd::FromRawFd;

/// A job whose console answers ([`running_jobs`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningJob {
    /// The job id (`THREADWIRE_JOB`).
    pub id: u64,
    /// Its console socket.
    pub socket: PathBuf,
}

/// The jobs of this user whose console is in [`dir`] and accepts a
/// connection, by id. A socket nobody listens on any more (its launcher
/// was killed) is removed.
pub fn running_jobs() -> io::Result<Vec<RunningJob>> {
    let dir = dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut jobs = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .filter(|n| n.len() == 16 && n.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|n| u64::from_str_radix(n, 16).ok())
        else {
            continue;
        };
        if !entry.file_type().is_ok_and(|t| t.is_socket()) {
            continue;
        }
        let socket = entry.path();
        match UnixStream::connect(&socket) {
            Ok(_) => jobs.push(RunningJob { id, socket }),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                let _ = std::fs::remove_file(&socket);
            }
            Err(_) => {}
        }
    }
    jobs.sort_by_key(|j| j.id);
    Ok(jobs)
}

/// [`running_jobs`], waiting until `deadline` for one to start while
/// none runs: the console directory is watched (inotify) for a socket
/// moved into place (the console's step 1), not polled.
pub fn await_running_jobs(deadline: Instant) -> io::Result<Vec<RunningJob>> {
    let dir = dir();
    private_dir(&dir)?;
    // SAFETY: inotify_init1 takes flags only; the descriptor is owned below.
    let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let events = libc::IN_MOVED_TO | libc::IN_CREATE;
    // SAFETY: `path` is a NUL-terminated string alive for the call.
    if unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), events) } < 0 {
        return Err(io::Error::last_os_error());
    }
    loop {
        let jobs = running_jobs()?;
        let left = deadline.saturating_duration_since(Instant::now());
        if !jobs.is_empty() || left.is_zero() {
            return Ok(jobs);
        }
        let mut poll = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one pollfd, valid for the call.
        unsafe { libc::poll(&mut poll, 1, ms) };
        let mut buf = [0u8; 4096];
        // SAFETY: reads at most `buf.len()` bytes into `buf`; the events
        // only wake this loop, which looks at the directory itself.
        while unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    }
}

/// Why [`ask`] has no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsoleError {
    /// The console could not be reached or read.
    #[error("the job's console at {}: {source}", path.display())]
    Io {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A field of the request has a tab or a line end.
    #[error("a request's words may not contain tabs or line ends: {0:?}")]
    BadField(String),
    /// The job refused the request, and says why.
    #[error("{0}")]
    Refused(String),
    /// The answer does not follow the protocol.
    #[error("the job's console answered something else than the protocol: {0:?}")]
    Garbled(String),
}

/// Sends `request` (its fields) to the console at `socket` and returns
/// the rows of its `ok` answer, each a list of fields.
pub fn ask<S: AsRef<str>>(socket: &Path, request: &[S]) -> Result<Vec<Vec<String>>, ConsoleError> {
    let io_error = |source| ConsoleError::Io {
        path: socket.to_path_buf(),
        source,
    };
    let mut line = String::new();
    for (i, f) in request.iter().enumerate() {
        let f = f.as_ref();
        if f.contains(['\t', '\n', '\r']) {
            return Err(ConsoleError::BadField(f.to_string()));
        }
        if i > 0 {
            line.push('\t');
        }
        line += f;
    }
    line.push('\n');
    let mut stream = UnixStream::connect(socket).map_err(io_error)?;
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT + REQUEST_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(REQUEST_TIMEOUT)))
        .and_then(|()| stream.write_all(line.as_bytes()))
        .map_err(io_error)?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(io_error)?;
    let mut lines = answer.lines();
    match lines.next() {
        Some("ok") => Ok(lines
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()),
        Some(l) if l.starts_with("error: ") => Err(ConsoleError::Refused(l[7..].to_string())),
        _ => Err(ConsoleError::Garbled(answer.chars().take(200).collect())),
    }
}
