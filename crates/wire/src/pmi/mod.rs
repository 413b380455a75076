//! The PMI-1 "simple" wire protocol, as spoken between an MPI-style process
//! manager (MPICH's Hydra, Slurm's `mpi/pmi2` plugin) and the processes it
//! starts: parsing and formatting only, no I/O.
//!
//! Every message is one line of ASCII, `cmd=NAME key=value key=value\n`:
//! space-separated `key=value` pairs, the first of them `cmd`. The same
//! types serve both ends, so that a client (a node started by `mpiexec`)
//! and, later, a server (`threadwire run` serving PMI to MPI programs)
//! share one codec:
//!
//! - [`PmiLine`] is any line: a command name and its pairs, in order.
//! - [`PmiCommand`] is a line this crate knows, requests and answers both
//!   ways; [`PmiCommand::parse`] and [`PmiCommand::encode`] convert.
//! - [`LineFramer`] cuts a byte stream into lines, bounded by
//!   [`MAX_LINE`], for whichever end reads a socket.
//!
//! What a value may hold: the protocol has no quoting, so a key or value
//! may not contain a space, a newline or any other control byte; a key may
//! not contain `=` either, and is never empty. Formatting also refuses `=`
//! in a value, because Hydra's parser cuts a value at its next `=`; parsing
//! accepts it (everything after the first `=` of a pair is the value), as
//! managers' own values never need it. The runtime's values are socket
//! addresses and hex, so these rules cost it nothing.
//!
//! Multi-line commands (`mcmd=spawn` … `endcmd`, used for dynamic process
//! creation) are refused with [`PmiLineError::MultiLine`].
//!
//! ```
//! use threadwire_wire::pmi::{PmiCommand, PmiStatus};
//!
//! let put = PmiCommand::Put {
//!     kvsname: "kvs_1".into(),
//!     key: "addr-0".into(),
//!     value: "10.0.0.1:4000".into(),
//! };
//! let bytes = put.encode().unwrap();
//! assert_eq!(bytes, b"cmd=put kvsname=kvs_1 key=addr-0 value=10.0.0.1:4000\n");
//! assert_eq!(PmiCommand::parse(&bytes).unwrap(), put);
//!
//! // Answers omit what the manager leaves out: Hydra sends no `rc` here.
//! let answer = PmiCommand::parse(b"cmd=barrier_out\n").unwrap();
//! assert_eq!(answer, PmiCommand::BarrierOut { status: PmiStatus::OK });
//! ```

use std::fmt;

/// Longest line accepted or formatted, newline included: far above any
/// manager's `vallen_max` (Hydra and Slurm: 1024) plus its key and
/// command, so a longer line is a broken or hostile peer.
pub const MAX_LINE: usize = 4096;

/// Why a line was refused, parsing or formatting.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PmiLineError {
    /// The line is longer than [`MAX_LINE`] bytes.
    #[error("PMI line of {len} bytes or more exceeds the limit of {max}")]
    TooLong {
        /// Bytes seen (at least).
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A byte that no PMI line holds: a control byte, a newline inside
    /// the line, or a byte outside ASCII.
    #[error("PMI line has byte {byte:#04x} at offset {at}")]
    BadByte {
        /// The byte.
        byte: u8,
        /// Its offset in the line.
        at: usize,
    },
    /// The line does not start with `cmd=`.
    #[error("PMI line does not start with cmd=: `{0}`")]
    NoCommand(String),
    /// A multi-line command (`mcmd=`), which this codec does not speak.
    #[error("multi-line PMI commands (mcmd=) are not supported")]
    MultiLine,
    /// A word without `=`, or with an empty key.
    #[error("PMI line has `{0}`, not a key=value pair")]
    NotAPair(String),
    /// A key given twice.
    #[error("PMI line gives key {0} twice")]
    DuplicateKey(String),
    /// A command this codec does not know.
    #[error("unknown PMI command {0}")]
    UnknownCommand(String),
    /// A known command without a key it needs.
    #[error("PMI command {command} lacks key {key}")]
    MissingKey {
        /// The command.
        command: String,
        /// The key.
        key: &'static str,
    },
    /// A key whose value should be a number and is not.
    #[error("PMI key {key} has `{value}`, not a number")]
    NotANumber {
        /// The key.
        key: String,
        /// Its value.
        value: String,
    },
    /// A key or value that cannot be written on a line (module docs: what
    /// a value may hold).
    #[error(
        "`{0}` cannot be written in a PMI line (no spaces, `=`, control bytes; keys not empty)"
    )]
    Unwritable(String),
}

/// One line: a command name and its `key=value` pairs, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PmiLine {
    command: String,
    pairs: Vec<(String, String)>,
}

impl PmiLine {
    /// A line `cmd=command` without pairs.
    pub fn new(command: impl Into<String>) -> PmiLine {
        PmiLine {
            command: command.into(),
            pairs: Vec::new(),
        }
    }

    /// Adds `key=value` after the pairs so far; checked when encoded.
    pub fn with(mut self, key: impl Into<String>, value: impl ToString) -> PmiLine {
        self.pairs.push((key.into(), value.to_string()));
        self
    }

    /// The command name.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The pairs after `cmd`, in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The value of `key`, if the line has it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Parses one line, with or without its final newline.
    pub fn parse(line: &[u8]) -> Result<PmiLine, PmiLineError> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        if line.len() >= MAX_LINE {
            return Err(PmiLineError::TooLong {
                len: line.len() + 1,
                max: MAX_LINE,
            });
        }
        if let Some(at) = line
            .iter()
            .position(|&b| !(b == b' ' || b.is_ascii_graphic()))
        {
            return Err(PmiLineError::BadByte { byte: line[at], at });
        }
        // Checked above: every byte is ASCII.
        let text = std::str::from_utf8(line).expect("ASCII is UTF-8");
        if text.starts_with("mcmd=") {
            return Err(PmiLineError::MultiLine);
        }
        let mut words = text.split(' ').filter(|w| !w.is_empty());
        let command = match words.next().and_then(|w| w.strip_prefix("cmd=")) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => return Err(PmiLineError::NoCommand(text.to_owned())),
        };
        let mut pairs: Vec<(String, String)> = Vec::new();
        for word in words {
            match word.split_once('=') {
                Some((key, value)) if !key.is_empty() => {
                    if key == "cmd" || pairs.iter().any(|(k, _)| k == key) {
                        return Err(PmiLineError::DuplicateKey(key.to_owned()));
                    }
                    pairs.push((key.to_owned(), value.to_owned()));
                }
                _ => return Err(PmiLineError::NotAPair(word.to_owned())),
            }
        }
        Ok(PmiLine { command, pairs })
    }

    /// The line's bytes, newline included; refuses keys and values that
    /// cannot be written (module docs) and lines over [`MAX_LINE`].
    pub fn encode(&self) -> Result<Vec<u8>, PmiLineError> {
        let writable = |s: &str, key: bool| {
            (!key || !s.is_empty()) && s.bytes().all(|b| b.is_ascii_graphic() && b != b'=')
        };
        if !writable(&self.command, true) {
            return Err(PmiLineError::Unwritable(self.command.clone()));
        }
        let mut out = format!("cmd={}", self.command);
        for (key, value) in &self.pairs {
            if !writable(key, true) || key == "cmd" {
                return Err(PmiLineError::Unwritable(key.clone()));
            }
            if !writable(value, false) {
                return Err(PmiLineError::Unwritable(value.clone()));
            }
            out.push(' ');
            out.push_str(key);
            out.push('=');
            out.push_str(value);
        }
        out.push('\n');
        if out.len() > MAX_LINE {
            return Err(PmiLineError::TooLong {
                len: out.len(),
                max: MAX_LINE,
            });
        }
        Ok(out.into_bytes())
    }

    fn required(&self, key: &'static str) -> Result<&str, PmiLineError> {
        self.get(key).ok_or_else(|| PmiLineError::MissingKey {
            command: self.command.clone(),
            key,
        })
    }

    fn number<T: std::str::FromStr>(&self, key: &'static str) -> Result<T, PmiLineError> {
        let value = self.required(key)?;
        value.parse().map_err(|_| PmiLineError::NotANumber {
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }

    /// `rc` and `msg`, as answers carry them; a missing `rc` is success
    /// (Hydra sends none on most answers).
    fn status(&self) -> Result<PmiStatus, PmiLineError> {
        let rc = match self.get("rc") {
            Some(_) => self.number("rc")?,
            None => 0,
        };
        Ok(PmiStatus {
            rc,
            msg: self.get("msg").map(str::to_owned),
        })
    }
}

impl fmt::Display for PmiLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cmd={}", self.command)?;
        for (key, value) in &self.pairs {
            write!(f, " {key}={value}")?;
        }
        Ok(())
    }
}

/// The outcome an answer reports: `rc` (0 is success) and the manager's
/// optional `msg` (words joined by `_`, as the protocol has no spaces).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmiStatus {
    /// The return code; 0 is success.
    pub rc: i32,
    /// The manager's message, if it sent one.
    pub msg: Option<String>,
}

impl PmiStatus {
    /// Success without a message.
    pub const OK: PmiStatus = PmiStatus { rc: 0, msg: None };

    /// Whether `rc` is 0.
    pub fn is_ok(&self) -> bool {
        self.rc == 0
    }

    fn append(&self, line: PmiLine) -> PmiLine {
        let line = line.with("rc", self.rc);
        match &self.msg {
            Some(msg) => line.with("msg", msg),
            None => line,
        }
    }
}

/// The limits a manager announces in answer to `get_maxes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PmiMaxes {
    /// Longest key-value space name.
    pub kvsname_max: usize,
    /// Longest key.
    pub keylen_max: usize,
    /// Longest value.
    pub vallen_max: usize,
}

/// A line this codec knows: a process's request or a manager's answer.
///
/// Requests (process → manager) come first, then answers. Answers carry a
/// [`PmiStatus`]; formatting writes `rc` always and `msg` when set, parsing
/// takes a missing `rc` as 0.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PmiCommand {
    /// `cmd=init pmi_version=V pmi_subversion=S`: the first request.
    Init {
        /// Protocol version (1).
        version: u32,
        /// Protocol subversion (1).
        subversion: u32,
    },
    /// `cmd=initack pmiid=ID`: the first line on a connection made to
    /// `PMI_PORT`, telling Hydra which process connected.
    InitAck {
        /// The process's `PMI_ID`.
        pmi_id: u32,
    },
    /// `cmd=get_maxes`.
    GetMaxes,
    /// `cmd=get_my_kvsname`.
    GetMyKvsname,
    /// `cmd=get_universe_size`.
    GetUniverseSize,
    /// `cmd=get_appnum`.
    GetAppnum,
    /// `cmd=put kvsname=K key=K value=V`: publish a value, visible to the
    /// others after the next barrier.
    Put {
        /// The key-value space.
        kvsname: String,
        /// The key.
        key: String,
        /// The value.
        value: String,
    },
    /// `cmd=get kvsname=K key=K`.
    Get {
        /// The key-value space.
        kvsname: String,
        /// The key.
        key: String,
    },
    /// `cmd=barrier_in`.
    BarrierIn,
    /// `cmd=finalize`.
    Finalize,
    /// `cmd=abort exitcode=N`: end the whole job; no answer comes.
    Abort {
        /// The exit code the job should end with.
        exit_code: i32,
    },

    /// `cmd=response_to_init pmi_version=V pmi_subversion=S rc=N`.
    ResponseToInit {
        /// Outcome.
        status: PmiStatus,
        /// Version the manager speaks.
        version: u32,
        /// Subversion the manager speaks.
        subversion: u32,
    },
    /// `cmd=initack`: Hydra's answer to [`InitAck`](Self::InitAck),
    /// followed by [`Set`](Self::Set) lines for `size`, `rank`, `debug`.
    InitAcked,
    /// `cmd=set KEY=VALUE`: one fact after `initack`.
    Set {
        /// The key (`size`, `rank`, `debug`).
        key: String,
        /// The value.
        value: String,
    },
    /// `cmd=maxes kvsname_max=N keylen_max=N vallen_max=N`.
    Maxes {
        /// Outcome.
        status: PmiStatus,
        /// The limits.
        maxes: PmiMaxes,
    },
    /// `cmd=my_kvsname kvsname=K`.
    MyKvsname {
        /// Outcome.
        status: PmiStatus,
        /// The job's key-value space.
        kvsname: String,
    },
    /// `cmd=universe_size size=N` (Hydra: -1 when unbounded).
    UniverseSize {
        /// Outcome.
        status: PmiStatus,
        /// The size.
        size: i64,
    },
    /// `cmd=appnum appnum=N` (Slurm: -1).
    Appnum {
        /// Outcome.
        status: PmiStatus,
        /// The application number.
        appnum: i64,
    },
    /// `cmd=put_result rc=N`.
    PutResult {
        /// Outcome.
        status: PmiStatus,
    },
    /// `cmd=get_result rc=N value=V`: the value when `rc` is 0 (Hydra
    /// sends `value=unknown` with a failure, Slurm no value).
    GetResult {
        /// Outcome.
        status: PmiStatus,
        /// The value.
        value: Option<String>,
    },
    /// `cmd=barrier_out`.
    BarrierOut {
        /// Outcome (Slurm reports a failed exchange here).
        status: PmiStatus,
    },
    /// `cmd=finalize_ack`.
    FinalizeAck {
        /// Outcome.
        status: PmiStatus,
    },
}

impl PmiCommand {
    /// Parses one line, with or without its final newline.
    pub fn parse(line: &[u8]) -> Result<PmiCommand, PmiLineError> {
        PmiCommand::from_line(&PmiLine::parse(line)?)
    }

    /// The command a parsed line holds; unknown commands and keys a
    /// command needs but lacks are errors, keys it does not know are
    /// ignored (managers add their own, as Hydra's `msg=success`).
    pub fn from_line(line: &PmiLine) -> Result<PmiCommand, PmiLineError> {
        use PmiCommand as C;
        let text = |key| line.required(key).map(str::to_owned);
        Ok(match line.command() {
            "init" => C::Init {
                version: line.number("pmi_version")?,
                subversion: line.number("pmi_subversion")?,
            },
            "initack" if line.get("pmiid").is_some() => C::InitAck {
                pmi_id: line.number("pmiid")?,
            },
            "initack" => C::InitAcked,
            "get_maxes" => C::GetMaxes,
            "get_my_kvsname" => C::GetMyKvsname,
            "get_universe_size" => C::GetUniverseSize,
            "get_appnum" => C::GetAppnum,
            "put" => C::Put {
                kvsname: text("kvsname")?,
                key: text("key")?,
                value: text("value")?,
            },
            "get" => C::Get {
                kvsname: text("kvsname")?,
                key: text("key")?,
            },
            "barrier_in" => C::BarrierIn,
            "finalize" => C::Finalize,
            "abort" => C::Abort {
                exit_code: line.number("exitcode")?,
            },
            "response_to_init" => C::ResponseToInit {
                status: line.status()?,
                version: line.number("pmi_version")?,
                subversion: line.number("pmi_subversion")?,
            },
            "set" => match line.pairs() {
                [(key, value)] => C::Set {
                    key: key.clone(),
                    value: value.clone(),
                },
                _ => return Err(PmiLineError::NotAPair(line.to_string())),
            },
            "maxes" => C::Maxes {
                status: line.status()?,
                maxes: PmiMaxes {
                    kvsname_max: line.number("kvsname_max")?,
                    keylen_max: line.number("keylen_max")?,
                    vallen_max: line.number("vallen_max")?,
                },
            },
            "my_kvsname" => C::MyKvsname {
                status: line.status()?,
                kvsname: text("kvsname")?,
            },
            "universe_size" => C::UniverseSize {
                status: line.status()?,
                size: line.number("size")?,
            },
            "appnum" => C::Appnum {
                status: line.status()?,
                appnum: line.number("appnum")?,
            },
            "put_result" => C::PutResult {
                status: line.status()?,
            },
            "get_result" => C::GetResult {
                status: line.status()?,
                value: line.get("value").map(str::to_owned),
            },
            "barrier_out" => C::BarrierOut {
                status: line.status()?,
            },
            "finalize_ack" => C::FinalizeAck {
                status: line.status()?,
            },
            other => return Err(PmiLineError::UnknownCommand(other.to_owned())),
        })
    }

    /// The line this command is written as.
    pub fn to_line(&self) -> PmiLine {
        use PmiCommand as C;
        match self {
            C::Init {
                version,
                subversion,
            } => PmiLine::new("init")
                .with("pmi_version", version)
                .with("pmi_subversion", subversion),
            C::InitAck { pmi_id } => PmiLine::new("initack").with("pmiid", pmi_id),
            C::GetMaxes => PmiLine::new("get_maxes"),
            C::GetMyKvsname => PmiLine::new("get_my_kvsname"),
            C::GetUniverseSize => PmiLine::new("get_universe_size"),
            C::GetAppnum => PmiLine::new("get_appnum"),
            C::Put {
                kvsname,
                key,
                value,
            } => PmiLine::new("put")
                .with("kvsname", kvsname)
                .with("key", key)
                .with("value", value),
            C::Get { kvsname, key } => PmiLine::new("get")
                .with("kvsname", kvsname)
                .with("key", key),
            C::BarrierIn => PmiLine::new("barrier_in"),
            C::Finalize => PmiLine::new("finalize"),
            C::Abort { exit_code } => PmiLine::new("abort").with("exitcode", exit_code),
            C::ResponseToInit {
                status,
                version,
                subversion,
            } => status.append(
                PmiLine::new("response_to_init")
                    .with("pmi_version", version)
                    .with("pmi_subversion", subversion),
            ),
            C::InitAcked => PmiLine::new("initack"),
            C::Set { key, value } => PmiLine::new("set").with(key.clone(), value),
            C::Maxes { status, maxes } => status
                .append(PmiLine::new("maxes"))
                .with("kvsname_max", maxes.kvsname_max)
                .with("keylen_max", maxes.keylen_max)
                .with("vallen_max", maxes.vallen_max),
            C::MyKvsname { status, kvsname } => status
                .append(PmiLine::new("my_kvsname"))
                .with("kvsname", kvsname),
            C::UniverseSize { status, size } => status
                .append(PmiLine::new("universe_size"))
                .with("size", size),
            C::Appnum { status, appnum } => {
                status.append(PmiLine::new("appnum")).with("appnum", appnum)
            }
            C::PutResult { status } => status.append(PmiLine::new("put_result")),
            C::GetResult { status, value } => {
                let line = status.append(PmiLine::new("get_result"));
                match value {
                    Some(value) => line.with("value", value),
                    None => line,
                }
            }
            C::BarrierOut { status } => status.append(PmiLine::new("barrier_out")),
            C::FinalizeAck { status } => status.append(PmiLine::new("finalize_ack")),
        }
    }

    /// The command's bytes, newline included ([`PmiLine::encode`]).
    pub fn encode(&self) -> Result<Vec<u8>, PmiLineError> {
        self.to_line().encode()
    }
}

/// Cuts a byte stream into lines: feed it what a read returned, take the
/// complete lines out. Holds at most [`MAX_LINE`] bytes of an unfinished
/// line, so a peer that never sends a newline cannot make it grow.
#[derive(Debug, Default)]
pub struct LineFramer {
    buf: Vec<u8>,
}

impl LineFramer {
    /// An empty framer.
    pub fn new() -> LineFramer {
        LineFramer::default()
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete line, newline stripped; `None` until one is
    /// complete; an error, the stream being unusable after it, if more
    /// than [`MAX_LINE`] bytes came without a newline.
    pub fn next_line(&mut self) -> Option<Result<Vec<u8>, PmiLineError>> {
        match self.buf.iter().position(|&b| b == b'\n') {
            Some(end) if end < MAX_LINE => {
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                line.pop();
                Some(Ok(line))
            }
            Some(end) => Some(Err(PmiLineError::TooLong {
                len: end + 1,
                max: MAX_LINE,
            })),
            None if self.buf.len() >= MAX_LINE => Some(Err(PmiLineError::TooLong {
                len: self.buf.len(),
                max: MAX_LINE,
            })),
            None => None,
        }
    }

    /// Bytes held of an unfinished line.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

#[cfg(test)]
mod tests;
