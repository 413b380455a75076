//! Which process manager started this process, from its variables (step 1
//! of the module docs).

use super::{PmiError, VariableProblem};
use crate::env::{PMI_FD, PMI_ID, PMI_JOBID, PMI_PORT, PMI_RANK, PMI_SIZE};
use std::os::fd::RawFd;

/// Where the manager listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PmiEndpoint {
    /// A socket inherited as this descriptor (`PMI_FD`).
    Fd(RawFd),
    /// A TCP address (`PMI_PORT`), and the id to announce there
    /// (`PMI_ID`).
    Port {
        /// Host name or address, without brackets.
        host: String,
        /// The port.
        port: u16,
        /// The process's id for `initack`.
        pmi_id: u32,
    },
}

/// What the variables say: where the manager is, and — except in
/// `PMI_PORT` mode, where the manager tells — this process's rank and the
/// number of processes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PmiEnv {
    /// Where the manager listens.
    pub(crate) endpoint: PmiEndpoint,
    /// `PMI_RANK` and `PMI_SIZE`, if set (both or neither).
    pub(crate) rank_size: Option<(u32, u32)>,
    /// Slurm's `PMI_JOBID`, if set.
    pub(crate) job_id: Option<String>,
}

impl PmiEnv {
    /// Reads the process's environment (module docs, step 1).
    pub(crate) fn from_env() -> Result<Option<PmiEnv>, PmiError> {
        PmiEnv::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`from_env`](Self::from_env), with the variables from `lookup`.
    pub(crate) fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<PmiEnv>, PmiError> {
        let [fd, port, id, rank, size] = [PMI_FD, PMI_PORT, PMI_ID, PMI_RANK, PMI_SIZE].map(&lookup);
        let Some(set) = [(PMI_FD, &fd), (PMI_PORT, &port), (PMI_ID, &id), (PMI_RANK, &rank), (PMI_SIZE, &size)]
            .into_iter()
            .find_map(|(name, value)| value.is_some().then_some(name))
        else {
            return Ok(None);
        };
        let job_id = lookup(PMI_JOBID);
        let rank_size = match (rank, size) {
            (None, None) => None,
            (Some(_), None) => return Err(missing(PMI_SIZE, PMI_RANK)),
            (None, Some(_)) => return Err(missing(PMI_RANK, PMI_SIZE)),
            (Some(rank), Some(size)) => {
                let rank = number(PMI_RANK, &rank)?;
                let size = number(PMI_SIZE, &size)?;
                if size == 0 {
                    return Err(malformed(PMI_SIZE, &size.to_string(), "a positive number"));
                }
                if rank >= size {
                    return Err(PmiError::Variable {
                        name: PMI_RANK,
                        problem: VariableProblem::RankOutOfRange { rank, size },
                    });
                }
                Some((rank, size))
            }
        };
        let endpoint = match (fd, port) {
            // Both set: the inherited socket wins, as in MPICH's own client.
            (Some(fd), _) => {
                if rank_size.is_none() {
                    return Err(missing(PMI_RANK, PMI_FD));
                }
                let fd = fd
                    .trim()
                    .parse::<RawFd>()
                    .ok()
                    .filter(|&fd| fd >= 0)
                    .ok_or_else(|| malformed(PMI_FD, &fd, "a file descriptor number"))?;
                PmiEndpoint::Fd(fd)
            }
            (None, Some(port)) => {
                let id = id.ok_or_else(|| missing(PMI_ID, PMI_PORT))?;
                let (host, port_number) = host_port(&port)
                    .ok_or_else(|| malformed(PMI_PORT, &port, "host:port"))?;
                PmiEndpoint::Port {
                    host,
                    port: port_number,
                    pmi_id: number(PMI_ID, &id)?,
                }
            }
            (None, None) => return Err(missing(PMI_FD, set)),
        };
        Ok(Some(PmiEnv {
            endpoint,
            rank_size,
            job_id,
        }))
    }
}

/// `host:port`, `[v6]:port` or `v4:port`.
fn host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = text.trim().rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    let port = port.parse().ok().filter(|&p| p != 0)?;
    (!host.is_empty()).then(|| (host.to_owned(), port))
}

fn number(name: &'static str, value: &str) -> Result<u32, PmiError> {
    value
        .trim()
        .parse()
        .map_err(|_| malformed(name, value, "a non-negative number"))
}

pub(super) fn missing(name: &'static str, needed_by: &'static str) -> PmiError {
    PmiError::Variable {
        name,
        problem: VariableProblem::Missing { needed_by },
    }
}

pub(super) fn malformed(name: &'static str, value: &str, expected: &'static str) -> PmiError {
    PmiError::Variable {
        name,
        problem: VariableProblem::Malformed {
            value: value.to_owned(),
            expected,
        },
    }
}
