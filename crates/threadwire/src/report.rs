//! Results a node program reports to its launcher: the one channel from a
//! node to whoever started the job, so that nothing a program measures has
//! to be printed and parsed back.
//!
//! 1. The program calls [`Node::report`] with bytes in a codec of its own
//!    choosing (the benchmarks use one typed codec for all of theirs).
//! 2. The bytes travel as a [`Control::Report`] on the node's
//!    authenticated control connection, in order with the node's other
//!    reports, and leave at the latest when the node finalizes.
//! 3. The launcher surfaces each as an event (`threadwire_launch::Event::Report`)
//!    with the node's number, before the job's end is reported.

use crate::control::{Control, MAX_CONTROL};
use crate::node::Node;
use std::sync::atomic::Ordering;

/// Why a report could not be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The node was not started by a launcher (a standalone node): there
    /// is no one to report to.
    #[error("this node has no launcher to report to")]
    NoLauncher,
    /// The report is larger than a control message may be.
    #[error("a report of {len} bytes is larger than the {max} a control message may carry")]
    TooLarge {
        /// The report's length.
        len: usize,
        /// The largest report.
        max: u64,
    },
    /// The node has finalized.
    #[error("the node has finalized")]
    Finalized,
    /// The connection to the launcher has failed.
    #[error("the launcher's connection failed")]
    Lost(#[source] threadwire_transport::ChannelError),
}

/// Bytes of a report frame's payload beyond the report itself (its length).
const REPORT_OVERHEAD: u64 = 16;

impl Node {
    /// Sends `data` to the launcher that started this job, which hands it
    /// to its caller as a report event with this node's number. Reports of
    /// one node arrive in the order they were made; each leaves at once
    /// when the connection is free, and at the latest when the node
    /// finalizes.
    ///
    /// ```
    /// let ep = threadwire::Config::new().standalone(true).init().unwrap();
    /// let refused = ep.node().report(b"{\"size\": 8}");
    /// assert!(matches!(refused, Err(threadwire::ReportError::NoLauncher)));
    /// ```
    pub fn report(&self, data: &[u8]) -> Result<(), ReportError> {
        let shared = &self.shared;
        if shared.router.finalized.load(Ordering::Acquire) {
            return Err(ReportError::Finalized);
        }
        let Some(control) = shared.router.control.get() else {
            return Err(ReportError::NoLauncher);
        };
        if data.len() as u64 + REPORT_OVERHEAD > MAX_CONTROL {
            return Err(ReportError::TooLarge {
                len: data.len(),
                max: MAX_CONTROL - REPORT_OVERHEAD,
            });
        }
        let (header, payload) = Control::Report {
            data: data.to_vec(),
        }
        .encode();
        control
            .send(&header, payload)
            .map_err(|(e, _)| ReportError::Lost(e))?;
        shared.engine.wake();
        Ok(())
    }
}
