//! The client: one connection to the manager, one request and its answer
//! at a time (steps 2–6 of the module docs).

use super::{PmiEndpoint, PmiEnv, PmiError, VariableProblem};
use crate::env::{PMI_FD, PMI_RANK, PMI_SIZE};
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};
use threadwire_wire::pmi::{LineFramer, PmiCommand, PmiLine, PmiLineError, PmiMaxes, PmiStatus};

/// How long the client waits for an answer unless told otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest request the client writes: Slurm's plugin reads a request with
/// one `read` of at most 1024 bytes and takes what it got as the whole.
pub(crate) const MAX_REQUEST: usize = 1024;

/// The socket to the manager: a closed set (STYLE rule 3).
#[derive(Debug)]
enum Connection {
    /// An inherited socket pair end (Hydra's and Slurm's `PMI_FD`).
    Unix(UnixStream),
    /// A TCP connection (`PMI_PORT`, or a `PMI_FD` that is one).
    Tcp(TcpStream),
}

impl Connection {
    fn set_timeouts(&self, timeout: Duration) -> io::Result<()> {
        // A zero timeout means "block for ever" to the kernel.
        let timeout = Some(timeout.max(Duration::from_millis(1)));
        match self {
            Connection::Unix(s) => s.set_read_timeout(timeout).and(s.set_write_timeout(timeout)),
            Connection::Tcp(s) => s.set_read_timeout(timeout).and(s.set_write_timeout(timeout)),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Connection::Unix(s) => s.read(buf),
            Connection::Tcp(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Connection::Unix(s) => s.write_all(bytes),
            Connection::Tcp(s) => s.write_all(bytes),
        }
    }

    fn shutdown(&self) {
        let _ = match self {
            Connection::Unix(s) => s.shutdown(Shutdown::Both),
            Connection::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }
}

/// A connection to the process manager that started this process (module
/// docs). `Send`: it may sit behind a mutex and serve any thread.
#[derive(Debug)]
pub(crate) struct PmiClient {
    connection: Connection,
    framer: LineFramer,
    timeout: Duration,
    rank: u32,
    size: u32,
    job_id: Option<String>,
    maxes: Option<PmiMaxes>,
    kvsname: Option<String>,
    /// A request failed midway: answers no longer match requests.
    unusable: bool,
}

impl PmiClient {
    /// Detects the manager and connects to it (steps 1 and 2): `Ok(None)`
    /// when no PMI variable is set. Call it once per process: it takes the
    /// inherited descriptor.
    pub(crate) fn from_env(timeout: Duration) -> Result<Option<PmiClient>, PmiError> {
        PmiEnv::from_env()?
            .map(|env| PmiClient::connect(env, timeout))
            .transpose()
    }

    /// Connects to the manager `env` names (step 2); every answer is then
    /// awaited at most `timeout`, barriers excepted. Takes ownership of an
    /// inherited descriptor, once it is known to be a socket.
    pub(crate) fn connect(env: PmiEnv, timeout: Duration) -> Result<PmiClient, PmiError> {
        let connection = match &env.endpoint {
            PmiEndpoint::Fd(fd) => inherited_socket(*fd)?,
            PmiEndpoint::Port { host, port, .. } => connect_tcp(host, *port, timeout)?,
        };
        let (rank, size) = env.rank_size.unwrap_or((0, 1));
        let mut client = PmiClient {
            connection,
            framer: LineFramer::new(),
            timeout,
            rank,
            size,
            job_id: env.job_id,
            maxes: None,
            kvsname: None,
            unusable: false,
        };
        if let PmiEndpoint::Port { pmi_id, .. } = env.endpoint {
            client.initack(pmi_id, env.rank_size)?;
        }
        Ok(client)
    }

    /// This process's rank, `0..size`.
    pub(crate) fn rank(&self) -> u32 {
        self.rank
    }

    /// The number of processes the manager started.
    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    /// Slurm's `PMI_JOBID`, if set.
    #[cfg_attr(not(test), allow(dead_code))] // for logs and a PMI server's tests
    pub(crate) fn job_id(&self) -> Option<&str> {
        self.job_id.as_deref()
    }

    /// `PMI_PORT` mode: announce `pmi_id`, learn rank and size.
    fn initack(&mut self, pmi_id: u32, env: Option<(u32, u32)>) -> Result<(), PmiError> {
        const REQUEST: &str = "initack";
        self.send(REQUEST, &PmiCommand::InitAck { pmi_id })?;
        match self.receive(REQUEST, self.timeout)? {
            (PmiCommand::InitAcked, _) => {}
            (_, line) => return Err(self.unexpected(REQUEST, line)),
        }
        let (mut rank, mut size, mut debug) = (None, None, None);
        while rank.is_none() || size.is_none() || debug.is_none() {
            let (command, line) = self.receive(REQUEST, self.timeout)?;
            let PmiCommand::Set { key, value } = command else {
                return Err(self.unexpected(REQUEST, line));
            };
            let slot = match key.as_str() {
                "rank" => &mut rank,
                "size" => &mut size,
                "debug" => &mut debug,
                _ => return Err(self.unexpected(REQUEST, line)),
            };
            *slot = Some(value.parse::<u32>().map_err(|_| self.unexpected(REQUEST, line))?);
        }
        let (rank, size) = (rank.unwrap_or(0), size.unwrap_or(0));
        if size == 0 || rank >= size {
            return Err(self.unexpected(REQUEST, format!("cmd=set rank={rank} size={size}")));
        }
        if let Some((env_rank, env_size)) = env {
            for (name, value, manager) in [(PMI_RANK, env_rank, rank), (PMI_SIZE, env_size, size)] {
                if value != manager {
                    return Err(PmiError::Variable {
                        name,
                        problem: VariableProblem::Disagrees { value, manager },
                    });
                }
            }
        }
        (self.rank, self.size) = (rank, size);
        Ok(())
    }

    /// `init`: the first request (step 3).
    pub(crate) fn init(&mut self) -> Result<(), PmiError> {
        const REQUEST: &str = "init";
        let request = PmiCommand::Init {
            version: 1,
            subversion: 1,
        };
        match self.request(REQUEST, &request, self.timeout)? {
            (PmiCommand::ResponseToInit { status, .. }, _) if !status.is_ok() => {
                Err(refused(REQUEST, status))
            }
            (PmiCommand::ResponseToInit { version: 1, .. }, _) => Ok(()),
            (_, line) => Err(self.unexpected(REQUEST, line)),
        }
    }

    /// The manager's limits on names, keys and values (fetched once).
    pub(crate) fn get_maxes(&mut self) -> Result<PmiMaxes, PmiError> {
        const REQUEST: &str = "get_maxes";
        if let Some(maxes) = self.maxes {
            return Ok(maxes);
        }
        match self.request(REQUEST, &PmiCommand::GetMaxes, self.timeout)? {
            (PmiCommand::Maxes { status, .. }, _) if !status.is_ok() => Err(refused(REQUEST, status)),
            (PmiCommand::Maxes { maxes, .. }, _) => {
                self.maxes = Some(maxes);
                Ok(maxes)
            }
            (_, line) => Err(self.unexpected(REQUEST, line)),
        }
    }

    /// The job's key-value space name (fetched once).
    pub(crate) fn get_my_kvsname(&mut self) -> Result<String, PmiError> {
        const REQUEST: &str = "get_my_kvsname";
        if let Some(name) = &self.kvsname {
            return Ok(name.clone());
        }
        match self.request(REQUEST, &PmiCommand::GetMyKvsname, self.timeout)? {
            (PmiCommand::MyKvsname { status, .. }, _) if !status.is_ok() => {
                Err(refused(REQUEST, status))
            }
            (PmiCommand::MyKvsname { kvsname, .. }, _) => {
                self.kvsname = Some(kvsname.clone());
                Ok(kvsname)
            }
            (_, line) => Err(self.unexpected(REQUEST, line)),
        }
    }

    /// Publishes `value` under `key`; the others see it after the next
    /// [`barrier`](Self::barrier). Checked against the manager's maxes and
    /// the protocol's alphabet before anything is sent.
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        const REQUEST: &str = "put";
        let maxes = self.get_maxes()?;
        let kvsname = self.get_my_kvsname()?;
        check("key", key, maxes.keylen_max)?;
        check("value", value, maxes.vallen_max)?;
        let request = PmiCommand::Put {
            kvsname,
            key: key.to_owned(),
            value: value.to_owned(),
        };
        match self.request(REQUEST, &request, self.timeout)? {
            (PmiCommand::PutResult { status }, _) if !status.is_ok() => Err(refused(REQUEST, status)),
            (PmiCommand::PutResult { .. }, _) => Ok(()),
            (_, line) => Err(self.unexpected(REQUEST, line)),
        }
    }

    /// Waits until every process has entered the barrier, at most
    /// `timeout` (a slow process may legitimately take long); afterwards
    /// every value put before it is visible.
    pub(crate) fn barrier(&mut self, timeout: Duration) -> Result<(), PmiError> {
        const REQUEST: &str = "barrier";
        match self.request(REQUEST, &PmiCommand::BarrierIn, timeout)? {
            (PmiCommand::BarrierOut { status }, _) if !status.is_ok() => Err(refused(REQUEST, status)),
            (PmiCommand::BarrierOut { .. }, _) => Ok(()),
            (_, line) => Err(self.unexpected(REQUEST, line)),
        }
    }

    /// The value put under `key` before the last barrier;
    /// [`PmiError::NotFound`] if there is none.
    pub(crate) fn get(&mut self, key: &str) -> Result<String, PmiError> {
        const REQUEST: &str = "get";
        let maxes = self.get_maxes()?;
        let kvsname = self.get_my_kvsname()?;
        check("key", key, maxes.keylen_max)?;
        let request = PmiCommand::Get {
            kvsname,
            key: key.to_owned(),
        };
        match self.request(REQUEST, &request, self.timeout)? {
            (PmiCommand::GetResult { status, .. }, _) if !status.is_ok() => Err(PmiError::NotFound {
                key: key.to_owned(),
                msg: status.msg,
            }),
            (PmiCommand::GetResult { value: Some(value), .. }, _) => Ok(value),
            (_, line) => Err(self.unexpected(REQUEST, line)),
        }
    }

    /// Tells the manager this process is done (step 6); the connection
    /// closes.
    pub(crate) fn finalize(mut self) -> Result<(), PmiError> {
        const REQUEST: &str = "finalize";
        match self.request(REQUEST, &PmiCommand::Finalize, self.timeout)? {
            (PmiCommand::FinalizeAck { status }, _) if !status.is_ok() => Err(refused(REQUEST, status)),
            (PmiCommand::FinalizeAck { .. }, _) => Ok(()),
            (_, line) => Err(self.unexpected(REQUEST, line)),
        }
    }

    /// Asks the manager to end the whole job with `exit_code`, logging
    /// `message` (PMI-1 carries none). No answer comes: the manager kills
    /// the job's processes, this one included; a caller still running
    /// afterwards should exit with `exit_code`.
    pub(crate) fn abort(mut self, exit_code: i32, message: &str) -> Result<(), PmiError> {
        tracing::error!(exit_code, "aborting the job through the process manager: {message}");
        self.send("abort", &PmiCommand::Abort { exit_code })
    }

    /// Sends `request` and reads its answer.
    fn request(
        &mut self,
        name: &'static str,
        request: &PmiCommand,
        timeout: Duration,
    ) -> Result<(PmiCommand, String), PmiError> {
        self.send(name, request)?;
        self.receive(name, timeout)
    }

    /// Writes one request with one `write` (Slurm reads it with one).
    fn send(&mut self, name: &'static str, request: &PmiCommand) -> Result<(), PmiError> {
        if self.unusable {
            return Err(PmiError::Unusable);
        }
        let bytes = request.encode().map_err(|e| match e {
            PmiLineError::Unwritable(text) => PmiError::Unwritable { what: "value", text },
            other => PmiError::Malformed {
                request: name,
                source: other,
            },
        })?;
        if bytes.len() > MAX_REQUEST {
            return Err(PmiError::TooLong {
                what: "request",
                len: bytes.len(),
                max: MAX_REQUEST,
            });
        }
        let written = self
            .connection
            .set_timeouts(self.timeout)
            .and_then(|()| self.connection.write_all(&bytes));
        written.map_err(|e| self.fail(name, e, self.timeout))
    }

    /// Reads the next line within `timeout`: the command, and the line as
    /// text for errors.
    fn receive(
        &mut self,
        name: &'static str,
        timeout: Duration,
    ) -> Result<(PmiCommand, String), PmiError> {
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 1024];
        loop {
            match self.framer.next_line() {
                Some(Ok(bytes)) => {
                    let parsed = PmiLine::parse(&bytes).and_then(|line| {
                        PmiCommand::from_line(&line).map(|command| (command, line.to_string()))
                    });
                    return parsed.map_err(|source| {
                        self.unusable = true;
                        PmiError::Malformed {
                            request: name,
                            source,
                        }
                    });
                }
                Some(Err(source)) => {
                    self.unusable = true;
                    return Err(PmiError::Malformed {
                        request: name,
                        source,
                    });
                }
                None => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.fail(name, io::ErrorKind::TimedOut.into(), timeout));
            }
            let read = self
                .connection
                .set_timeouts(left)
                .and_then(|()| self.connection.read(&mut buf));
            match read {
                Ok(0) => {
                    self.unusable = true;
                    return Err(PmiError::Closed { request: name });
                }
                Ok(n) => self.framer.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(name, e, timeout)),
            }
        }
    }

    /// A request failed midway: the client becomes unusable (module docs).
    fn fail(&mut self, request: &'static str, e: io::Error, timeout: Duration) -> PmiError {
        self.unusable = true;
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => PmiError::TimedOut {
                request,
                after: timeout,
            },
            _ => PmiError::Io { request, source: e },
        }
    }

    /// An answer that is not the one expected; later ones cannot be
    /// trusted to match their requests.
    fn unexpected(&mut self, request: &'static str, line: String) -> PmiError {
        self.unusable = true;
        PmiError::Unexpected { request, line }
    }
}

impl Drop for PmiClient {
    fn drop(&mut self) {
        self.connection.shutdown();
    }
}

fn refused(request: &'static str, status: PmiStatus) -> PmiError {
    PmiError::Refused {
        request,
        rc: status.rc,
        msg: status.msg,
    }
}

/// Whether `text` fits the manager's limit and the protocol's alphabet.
fn check(what: &'static str, text: &str, max: usize) -> Result<(), PmiError> {
    if text.len() > max {
        return Err(PmiError::TooLong {
            what,
            len: text.len(),
            max,
        });
    }
    let writable = !text.is_empty() || what == "value";
    if !writable || !text.bytes().all(|b| b.is_ascii_graphic() && b != b'=') {
        return Err(PmiError::Unwritable {
            what,
            text: text.to_owned(),
        });
    }
    Ok(())
}

/// The socket `fd` names, made close-on-exec; refused, and left open, if
/// it is no socket.
fn inherited_socket(fd: RawFd) -> Result<Connection, PmiError> {
    let not_a_socket = |e: io::Error| PmiError::Variable {
        name: PMI_FD,
        problem: VariableProblem::NotASocket(e),
    };
    let mut domain: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `domain` and `len` outlive the call and `len` is its size;
    // getsockopt on a descriptor that is not ours or not a socket fails
    // with EBADF or ENOTSOCK and changes nothing.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_DOMAIN,
            (&mut domain as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(not_a_socket(io::Error::last_os_error()));
    }
    // SAFETY: fcntl on a descriptor just seen open takes no pointers.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
        return Err(not_a_socket(io::Error::last_os_error()));
    }
    // SAFETY: the manager handed this process the descriptor for PMI
    // alone; detection runs once per process (`PmiClient::from_env`), so
    // nothing else owns or closes it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // Reads wait in the kernel with a timeout (`set_timeouts`), which a
    // descriptor inherited non-blocking would turn into instant failures.
    let blocking = |e| PmiError::Io {
        request: "connect",
        source: e,
    };
    Ok(match domain {
        libc::AF_UNIX => {
            let stream = UnixStream::from(owned);
            stream.set_nonblocking(false).map_err(blocking)?;
            Connection::Unix(stream)
        }
        _ => {
            let stream = TcpStream::from(owned);
            stream.set_nonblocking(false).map_err(blocking)?;
            Connection::Tcp(stream)
        }
    })
}

fn connect_tcp(host: &str, port: u16, timeout: Duration) -> Result<Connection, PmiError> {
    const REQUEST: &str = "connect";
    let io_error = |source| PmiError::Io {
        request: REQUEST,
        source,
    };
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host} has no address"));
    for addr in (host, port).to_socket_addrs().map_err(io_error)? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => {
                // Requests are single small lines awaiting an answer.
                let _ = stream.set_nodelay(true);
                return Ok(Connection::Tcp(stream));
            }
            Err(e) => last = e,
        }
    }
    Err(io_error(last))
}
