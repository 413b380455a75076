//! Why building, removing or inspecting a net failed.

use std::io;
use std::net::Ipv4Addr;
use std::process::ExitStatus;

use super::plan::{MAX_HOSTS, MAX_PREFIX_LEN};

/// Why building, removing or inspecting a net failed.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct NetError {
    kind: NetErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub(super) enum NetErrorKind {
    #[error("not root: {0} network namespaces needs CAP_NET_ADMIN (run as root)")]
    NotRoot(&'static str),
    #[error(
        "bad prefix {0:?}: use 1 to {MAX_PREFIX_LEN} ASCII letters or digits \
         (interface names are at most 15 bytes)"
    )]
    Prefix(String),
    #[error("bad host count {0}: use 1 to {MAX_HOSTS} (one /24 subnet)")]
    HostCount(u32),
    #[error(
        "--load needs a shaped link (ethernet10, fast100, atm155 or gige): \
         an unshaped veth has no rate to load"
    )]
    LoadUnshaped,
    #[error("bad host count {0} with --load: use at most 252 hosts (.253 is the load's source)")]
    LoadHostCount(u32),
    #[error(
        "--loss, --delay and --load need iptables, which is not installed (apt install iptables)"
    )]
    NoIptables,
    #[error("cannot start `{line}`")]
    HelperSpawn { line: String, source: io::Error },
    #[error("`{line}` did not start: {message}")]
    Helper { line: String, message: String },
    #[error(
        "no program for the net's helpers: this process ({0}) is not `threadwire`; \
         set NetConfig::helper"
    )]
    NoHelper(String),
    #[error("bad helper arguments {0:?} (`net delay-queue` and `net load-source` are started by `net up`)")]
    HelperArgs(Vec<String>),
    #[error("{what}")]
    Io { what: String, source: io::Error },
    #[error("cannot run `{line}`")]
    Spawn { line: String, source: io::Error },
    #[error("`{line}` failed ({status}): {stderr}")]
    Command {
        line: String,
        status: ExitStatus,
        stderr: String,
    },
    #[error(
        "subnet {subnet}/24 (derived from prefix {prefix:?}) is already used by \
         interface {device}: choose another prefix"
    )]
    SubnetInUse {
        prefix: String,
        subnet: Ipv4Addr,
        device: String,
    },
    #[error("net {prefix:?} is half-built ({what}): run up or down again to clean it")]
    HalfBuilt { prefix: String, what: String },
    #[error("interrupted by signal {0}: the partly built net was removed")]
    Interrupted(i32),
    #[error("{cause}; removing the partly built net then failed too: {cleanup}")]
    Cleanup {
        #[source]
        cause: Box<NetError>,
        cleanup: Box<NetError>,
    },
}

impl From<NetErrorKind> for NetError {
    fn from(kind: NetErrorKind) -> NetError {
        NetError { kind }
    }
}
