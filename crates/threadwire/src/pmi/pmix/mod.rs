//! Starting under a PMIx server — Open MPI's `mpirun` (4.x: its ORTE
//! daemons serve PMIx to any program they start, MPI or not), PRRTE's
//! `prterun`, Slurm's `srun --mpi=pmix` — through the system's PMIx
//! client library, `libpmix.so.2`, loaded at run time.
//!
//! Why the library and not the wire: PMI-1 is a documented line protocol
//! (`threadwire_wire::pmi`), so this crate speaks it itself. PMIx has no
//! such protocol. Its standard defines the C API; what goes over the
//! socket is the library's private business — a binary, versioned
//! encoding (`bfrops` v12/v20/v21/v3/v4), a security handshake chosen at
//! run time (`psec`: `native`, `munge`), a server URI naming one of
//! several transports, and job data that the server may hand over in a
//! shared-memory store (`gds` `ds12`/`ds21`) rather than on the socket —
//! and it changes between releases without notice. A Rust client of the
//! wire would follow one release's internals and break on the next
//! server; no maintained crate does it. So the client calls the C API,
//! the supported interface, through `libloading`:
//!
//! - nothing is linked: threadwire builds and runs on a machine without
//!   PMIx, and the library is loaded only when a PMIx server started the
//!   process ([`PmixEnv`] found its variables);
//! - the calls made are few and stable since PMIx 2 (`ffi`), and each of
//!   the structures they pass is mirrored once with a layout test.
//!
//! How a node uses it (the steps of `node::managed`):
//!
//! 1. [`PmixEnv::from_env`]: `PMIX_NAMESPACE`, `PMIX_RANK` and a server
//!    URI set ([`env`](crate::env)); [`PmixClient::from_env`] then loads
//!    the library, or says why it cannot ([`PmiError::Library`]).
//! 2. [`init`](PmixClient::init): `PMIx_Init` connects to the server;
//!    the process it names must be the one the variables named; the job
//!    size is the job-level `PMIX_JOB_SIZE`.
//! 3. [`put`](PmixClient::put) (`PMIx_Put`, scope `PMIX_GLOBAL`) stores
//!    a value under the putting process's name: unlike PMI-1's, a key
//!    belongs to a process, and a get names the process
//!    ([`get`](PmixClient::get)`(owner, key)`).
//! 4. [`fence`](PmixClient::fence): `PMIx_Commit`, then `PMIx_Fence`
//!    over the whole job with `PMIX_COLLECT_DATA` (every process receives
//!    all values, so later gets are answered from local memory) and
//!    `PMIX_TIMEOUT`.
//! 5. [`get`](PmixClient::get): `PMIx_Get` from `owner`'s process, with
//!    `PMIX_TIMEOUT`, so that a key nobody put is an error in bounded
//!    time, not a wait for a put that never comes.
//!    [`node_ids`](PmixClient::node_ids): each process's `PMIX_NODEID`,
//!    the number of its host, which the server publishes for every
//!    process of the job (the host mapping, as PMI-1's
//!    `PMI_process_mapping`).
//! 6. [`finalize`](PmixClient::finalize) (`PMIx_Finalize`) when the node
//!    is done: `mpirun` takes a process that initialized and exits without
//!    it for a failure. [`abort`](PmixClient::abort) (`PMIx_Abort` for the
//!    whole namespace) ends the job instead.
//!
//! What Open MPI 4.1.4's `mpirun` (ORTE, PMIx 4.2.2) does, as seen from
//! here: a process that initialized and exits without `PMIx_Finalize`
//! ends the job with an error (exit 1, "exiting improperly");
//! `PMIx_Abort` returns, and ORTE ends the others once the aborting
//! process has exited — so, as `MPI_Abort` does, the caller exits; a
//! fence that a process leaves by dying fails at once
//! (`PMIX_ERR_PARTIAL_SUCCESS`); a get of a key its owner has not put
//! fails at once ("not found") if the owner has committed anything,
//! and otherwise waits for it until the timeout.
//!
//! Bounds: fences and gets carry `PMIX_TIMEOUT`, which the server
//! enforces. `PMIx_Init` takes no timeout: it connects to the server the
//! URI names, which fails at once when nothing listens there; a server
//! that accepts and never answers would hold it, as it would any PMIx
//! program. Errors from the library come back typed, with the library's
//! name for the status ([`PmiError::Pmix`]); nothing it returns is
//! trusted without a check of its type tag and pointer.

mod ffi;

#[cfg(test)]
mod tests;

use super::detect::{malformed, missing};
use super::{PmiError, VariableProblem};
use crate::env::{PMIX_NAMESPACE, PMIX_RANK, PMIX_SERVER_URIS};
use ffi::{Info, Pmix, Proc, Value};
use std::ffi::{c_int, CStr, CString};
use std::time::Duration;

/// What the variables of a PMIx server say.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PmixEnv {
    /// `PMIX_NAMESPACE`: the job's namespace.
    pub(crate) namespace: String,
    /// `PMIX_RANK`: this process's rank in it.
    pub(crate) rank: u32,
}

impl PmixEnv {
    /// Reads the process's environment: `Ok(None)` when no PMIx variable
    /// is set; an error naming the variable when one is set but wrong or
    /// lacks its companions.
    pub(crate) fn from_env() -> Result<Option<PmixEnv>, PmiError> {
        PmixEnv::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), with the variables from `lookup`.
    pub(crate) fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<PmixEnv>, PmiError> {
        let (namespace, rank) = (lookup(PMIX_NAMESPACE), lookup(PMIX_RANK));
        let (namespace, rank) = match (namespace, rank) {
            (None, None) => return Ok(None),
            (Some(_), None) => return Err(missing(PMIX_RANK, PMIX_NAMESPACE)),
            (None, Some(_)) => return Err(missing(PMIX_NAMESPACE, PMIX_RANK)),
            (Some(namespace), Some(rank)) => (namespace, rank),
        };
        if namespace.is_empty() || namespace.len() > ffi::MAX_NSLEN || namespace.contains('\0') {
            return Err(malformed(
                PMIX_NAMESPACE,
                &namespace,
                "a namespace of 1 to 255 bytes",
            ));
        }
        let rank = rank
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|&r| r < ffi::RANK_WILDCARD)
            .ok_or_else(|| malformed(PMIX_RANK, &rank, "a process rank"))?;
        if !PMIX_SERVER_URIS.iter().any(|name| lookup(name).is_some()) {
            return Err(missing(PMIX_SERVER_URIS[0], PMIX_NAMESPACE));
        }
        Ok(Some(PmixEnv { namespace, rank }))
    }
}

/// A PMIx client: this process, known to the server after
/// [`init`](Self::init). `Send`: the library is thread-safe, and the
/// client may sit behind a mutex and serve any thread.
pub(crate) struct PmixClient {
    pmix: &'static Pmix,
    /// This process: after `init`, as the library named it too.
    env: PmixEnv,
    size: u32,
    /// The bound of every get.
    timeout: Duration,
}

impl std::fmt::Debug for PmixClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PmixClient")
            .field("env", &self.env)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl PmixClient {
    /// Detects a PMIx server and loads the library (step 1): `Ok(None)`
    /// when no PMIx variable is set. Every get is then bounded by
    /// `timeout`.
    pub(crate) fn from_env(timeout: Duration) -> Result<Option<PmixClient>, PmiError> {
        let Some(env) = PmixEnv::from_env()? else {
            return Ok(None);
        };
        let pmix = Pmix::get()?;
        tracing::debug!(version = %pmix.version(), "PMIx library loaded");
        Ok(Some(PmixClient {
            pmix,
            env,
            size: 0,
            timeout,
        }))
    }

    /// This process's rank, `0..size`.
    pub(crate) fn rank(&self) -> u32 {
        self.env.rank
    }

    /// The number of processes in the job (known after `init`).
    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    /// `PMIx_Init` and the job's size (step 2).
    pub(crate) fn init(&mut self) -> Result<(), PmiError> {
        let mut me = Proc::new(b"", 0);
        // SAFETY: `me` is a `pmix_proc_t` the call fills in; no info.
        let status = unsafe { (self.pmix.init)(&mut me, std::ptr::null_mut(), 0) };
        self.check("PMIx_Init", status)?;
        if me.nspace_bytes() != self.env.namespace.as_bytes() {
            return Err(PmiError::Unexpected {
                request: "PMIx_Init",
                line: format!(
                    "namespace {:?}, but {PMIX_NAMESPACE} is {:?}",
                    String::from_utf8_lossy(&me.nspace_bytes()),
                    self.env.namespace
                ),
            });
        }
        if me.rank != self.env.rank {
            return Err(PmiError::Variable {
                name: PMIX_RANK,
                problem: VariableProblem::Disagrees {
                    value: self.env.rank,
                    manager: me.rank,
                },
            });
        }
        let job = Proc::new(self.env.namespace.as_bytes(), ffi::RANK_WILDCARD);
        let key = CStr::from_bytes_with_nul(ffi::KEY_JOB_SIZE).expect("a C string");
        let size = self.get_value(&job, key, "a uint32", read_uint32)?;
        if size == 0 || self.env.rank >= size {
            return Err(PmiError::Variable {
                name: PMIX_RANK,
                problem: VariableProblem::RankOutOfRange {
                    rank: self.env.rank,
                    size,
                },
            });
        }
        self.size = size;
        Ok(())
    }

    /// Stores `value` under `key` as this process's (step 3); the others
    /// see it after the next [`fence`](Self::fence).
    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<(), PmiError> {
        let key = c_key(key)?;
        let value = CString::new(value).map_err(|_| PmiError::Unwritable {
            what: "value",
            text: value.to_owned(),
        })?;
        let mut value = Value {
            kind: ffi::TYPE_STRING,
            data: ffi::ValueData {
                string: value.as_ptr().cast_mut(),
            },
        };
        // SAFETY: key and value are NUL-terminated and outlive the call;
        // PMIx_Put copies the value (pmix.h: "the client library will
        // cache the information locally") and writes nothing through the
        // string pointer.
        let status = unsafe { (self.pmix.put)(ffi::SCOPE_GLOBAL, key.as_ptr(), &mut value) };
        self.check("PMIx_Put", status)
    }

    /// Publishes the values put and waits, at most `timeout`, until every
    /// process of the job has done the same (step 4).
    pub(crate) fn fence(&mut self, timeout: Duration) -> Result<(), PmiError> {
        // SAFETY: PMIx_Commit takes nothing.
        let status = unsafe { (self.pmix.commit)() };
        self.check("PMIx_Commit", status)?;
        let job = Proc::new(self.env.namespace.as_bytes(), ffi::RANK_WILDCARD);
        let info = [Info::collect_data(), Info::timeout(seconds(timeout))];
        // SAFETY: one proc and `info.len()` infos, all plain values that
        // outlive the call, which only reads them.
        let status = unsafe { (self.pmix.fence)(&job, 1, info.as_ptr(), info.len()) };
        self.check_timed("PMIx_Fence", status, timeout)
    }

    /// The string `owner` put under `key` before the last fence (step 5).
    pub(crate) fn get(&mut self, owner: u32, key: &str) -> Result<String, PmiError> {
        let proc = self.proc(owner)?;
        let c_key = c_key(key)?;
        self.get_value(&proc, &c_key, "a string", read_string)
            .map_err(|e| match e {
                PmiError::NotFound { msg, .. } => PmiError::NotFound {
                    key: format!("{key} of rank {owner}"),
                    msg,
                },
                other => other,
            })
    }

    /// The number of every process's host (`PMIX_NODEID`), by rank.
    pub(crate) fn node_ids(&mut self) -> Result<Vec<u32>, PmiError> {
        let key = CStr::from_bytes_with_nul(ffi::KEY_NODEID).expect("a C string");
        (0..self.size)
            .map(|rank| {
                let proc = self.proc(rank)?;
                self.get_value(&proc, key, "a uint32", read_uint32)
            })
            .collect()
    }

    /// `PMIx_Finalize` (step 6).
    pub(crate) fn finalize(self) -> Result<(), PmiError> {
        // SAFETY: no info.
        let status = unsafe { (self.pmix.finalize)(std::ptr::null(), 0) };
        self.check("PMIx_Finalize", status)
    }

    /// Asks the server to end every process of the job, logging `message`
    /// and exiting with `exit_code`; a caller still running afterwards
    /// should exit with it.
    pub(crate) fn abort(self, exit_code: i32, message: &str) -> Result<(), PmiError> {
        tracing::error!(exit_code, "aborting the job through the PMIx server: {message}");
        let message = CString::new(message.replace('\0', " ")).expect("no NUL left");
        // SAFETY: the message is NUL-terminated and outlives the call; no
        // procs means every process of this one's namespace.
        let status =
            unsafe { (self.pmix.abort)(exit_code, message.as_ptr(), std::ptr::null_mut(), 0) };
        self.check("PMIx_Abort", status)
    }

    /// The process of rank `rank` in this job; refused past the job's
    /// end, which the server would wait on until a timeout.
    fn proc(&self, rank: u32) -> Result<Proc, PmiError> {
        if rank >= self.size {
            return Err(PmiError::NotFound {
                key: format!("rank {rank}"),
                msg: Some(format!("the job has {} processes", self.size)),
            });
        }
        Ok(Proc::new(self.env.namespace.as_bytes(), rank))
    }

    /// `PMIx_Get` of `key` from `proc`, read by `read` if its type is the
    /// one expected; the value is freed either way.
    fn get_value<T>(
        &self,
        proc: &Proc,
        key: &CStr,
        expected: &'static str,
        read: fn(&Value) -> Option<T>,
    ) -> Result<T, PmiError> {
        let info = [Info::timeout(seconds(self.timeout))];
        let mut value: *mut Value = std::ptr::null_mut();
        // SAFETY: proc, key and info outlive the call, which only reads
        // them and, on success, stores in `value` a value it allocated.
        let status = unsafe {
            (self.pmix.get)(proc, key.as_ptr(), info.as_ptr(), info.len(), &mut value)
        };
        let key_text = || key.to_string_lossy().into_owned();
        if status == ffi::ERR_NOT_FOUND {
            return Err(PmiError::NotFound {
                key: key_text(),
                msg: None,
            });
        }
        self.check_timed("PMIx_Get", status, self.timeout)?;
        if value.is_null() {
            return Err(PmiError::Unexpected {
                request: "PMIx_Get",
                line: format!("success without a value for {}", key_text()),
            });
        }
        // SAFETY: the library allocated `value` for this call and gave it
        // to the caller; it is read here and freed once, below.
        let (read, kind) = unsafe { (read(&*value), (*value).kind) };
        // SAFETY: PMIX_VALUE_RELEASE: the library frees what the value
        // holds, then the value itself is freed with `free`, as the
        // library's own `pmix_free` does.
        unsafe {
            (self.pmix.value_destruct)(value);
            libc::free(value.cast());
        }
        read.ok_or(PmiError::WrongType {
            key: key_text(),
            kind,
            expected,
        })
    }

    fn check(&self, call: &'static str, status: ffi::Status) -> Result<(), PmiError> {
        match status {
            ffi::SUCCESS => Ok(()),
            _ => Err(PmiError::Pmix {
                call,
                status,
                name: self.pmix.error_string(status),
            }),
        }
    }

    fn check_timed(
        &self,
        call: &'static str,
        status: ffi::Status,
        after: Duration,
    ) -> Result<(), PmiError> {
        match status {
            ffi::ERR_TIMEOUT => Err(PmiError::TimedOut {
                request: call,
                after,
            }),
            _ => self.check(call, status),
        }
    }
}

/// A key as PMIx takes it: NUL-terminated, at most `PMIX_MAX_KEYLEN`.
fn c_key(key: &str) -> Result<CString, PmiError> {
    if key.len() > ffi::MAX_KEYLEN {
        return Err(PmiError::TooLong {
            what: "key",
            len: key.len(),
            max: ffi::MAX_KEYLEN,
        });
    }
    CString::new(key)
        .ok()
        .filter(|k| !k.as_bytes().is_empty())
        .ok_or_else(|| PmiError::Unwritable {
            what: "key",
            text: key.to_owned(),
        })
}

/// `PMIX_TIMEOUT`'s whole seconds, rounded up.
fn seconds(timeout: Duration) -> c_int {
    let whole = timeout.as_secs() + u64::from(timeout.subsec_nanos() > 0);
    c_int::try_from(whole).unwrap_or(c_int::MAX)
}

fn read_string(value: &Value) -> Option<String> {
    if value.kind != ffi::TYPE_STRING {
        return None;
    }
    // SAFETY: the type tag says the union holds `string`.
    let text = unsafe { value.data.string };
    // SAFETY: a PMIX_STRING value's string is NUL-terminated (or NULL,
    // refused), owned by the value, which outlives this read.
    (!text.is_null()).then(|| unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
}

fn read_uint32(value: &Value) -> Option<u32> {
    if value.kind != ffi::TYPE_UINT32 {
        return None;
    }
    // SAFETY: the type tag says the union holds `uint32`.
    Some(unsafe { value.data.uint32 })
}
