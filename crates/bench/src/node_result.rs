//! The one channel from a benchmark's nodes to the command that launched
//! them: a [`NodeResult`], encoded as JSON, sent with
//! [`Node::report`](threadwire::Node::report) on the node's control
//! connection and read back from the launcher's
//! [`Event::Report`] by [`NodeResult::decode`].
//!
//! 1. A node measures one cell of its benchmark's table (a size, a thread
//!    count, an encoding at a size) and calls [`NodeResult::send`] at once,
//!    so the command can show progress as the results come.
//! 2. The launcher hands each report to the benchmark's `run` as an event,
//!    in the order the node made them; `run` decodes it into its report
//!    and counts it as a step of the progress bar.
//! 3. Every other event (a node's stray output, a failure) is passed on to
//!    be shown. A report that does not decode is shown too, never guessed
//!    at.
//!
//! Nothing a node measures is printed and parsed back.

use crate::pingpong::{Receive, Sample};
use crate::{am, coll, comm, dsm, flood, overlap, rate};
use serde::{Deserialize, Serialize};
use threadwire::ReportError;
use threadwire_launch::Event;

/// A result a benchmark's node reports to the launcher.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum NodeResult {
    /// `bench pingpong`: a path's sample of one size.
    Pingpong {
        /// `thread`, `shm` or `tcp`.
        path: String,
        /// How the sides received.
        #[serde(default)]
        receive: Receive,
        /// The one-way times.
        sample: Sample,
    },
    /// `bench rate`: one kind and thread count.
    Rate(rate::Sample),
    /// `bench am`: a size's round trips, or a kind and thread count of
    /// the rate (the path is the job's).
    Am(am::Cell),
    /// `bench comm`: one size of one path.
    Comm {
        /// The path's name ([`comm::Path::name`]).
        path: String,
        /// The size's figures.
        cell: comm::Cell,
    },
    /// `bench dsm`: one operation's times per operation.
    Dsm(dsm::Sample),
    /// `bench encodings`: one encoding at one size.
    Encodings {
        /// The encoding's name ([`crate::encodings::name`]).
        encoding: String,
        /// The one-way times; `size` is the values' bytes.
        sample: Sample,
    },
    /// `bench coll`: one operation at one size, the slowest member's
    /// times (the layout is the job's).
    Coll(coll::Sample),
    /// `bench flood`: one end's counts, time and peak resident set.
    Flood(flood::Side),
    /// `bench overlap`: the comm-only run or one mode at one ratio.
    Overlap(overlap::Sample),
    /// `bench bcast`: the root's times of every timed broadcast of one
    /// size, each until every receiver had acknowledged it, in ns.
    Bcast {
        /// Bytes broadcast.
        size: usize,
        /// One time per broadcast.
        ns: Vec<u64>,
    },
    /// `bench spawn`: a node of a process row has joined, on its clock
    /// (`CLOCK_MONOTONIC`, ns): when its code started and when it was past
    /// `init`. The launcher's reading on arrival is the third time.
    Joined {
        /// When the node's code started running.
        started_ns: u64,
        /// When it was past `init`.
        joined_ns: u64,
    },
    /// An app's timed run: `apps matmul`'s multiply, from the start to
    /// the last node's end; `apps splash`'s computation, initialization
    /// excluded.
    Timed {
        /// The elapsed time.
        seconds: f64,
    },
    /// `apps splash`: the seed's Table 3 of the run
    /// (`threadwire_apps::splash::Utilization`), sent with its
    /// [`NodeResult::Timed`].
    DsmTraffic {
        /// Bytes a message.
        mean_message: f64,
        /// Mbit/s a node.
        mbps: f64,
        /// ms a request.
        latency_ms: f64,
    },
    /// `bench spawn`, added-nodes rows: node 0's milliseconds to add N
    /// nodes to the running job, per repetition.
    NodesAdded {
        /// Per repetition.
        ms: Vec<f64>,
    },
    /// `bench spawn`, remote rows: node 0's milliseconds to start N fibers
    /// on node 1 by name and join them, per repetition, and the
    /// microseconds of an active-message round trip (request and empty
    /// reply) between the same nodes, per batch.
    RemoteSpawned {
        /// Per repetition.
        ms: Vec<f64>,
        /// Per batch of round trips.
        am_round_trip_us: Vec<f64>,
    },
}

impl NodeResult {
    /// Reports `self` to the launcher of `node`'s job.
    pub fn send(&self, node: &threadwire::Node) -> Result<(), ReportError> {
        let data = serde_json::to_vec(self).expect("a node result is plain data");
        node.report(&data)
    }

    /// The node and result of `ev`, if it is a node's result report.
    pub fn decode(ev: &Event) -> Option<(u32, NodeResult)> {
        match ev {
            Event::Report { node, data } => Some((*node, serde_json::from_slice(data).ok()?)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn event(result: &NodeResult) -> Event {
        Event::Report {
            node: 1,
            data: serde_json::to_vec(result).unwrap(),
        }
    }

    #[test]
    fn results_round_trip() {
        let sample = Sample {
            size: 1000,
            one_way: Duration::from_nanos(2500),
            min: Duration::from_nanos(2000),
            max: Duration::from_nanos(3000),
        };
        let times = am::Times {
            median: Duration::from_nanos(3100),
            min: Duration::from_nanos(2900),
            max: Duration::from_nanos(4000),
        };
        let results = [
            NodeResult::Pingpong {
                path: "shm".into(),
                receive: Receive::Into,
                sample,
            },
            NodeResult::Rate(rate::Sample {
                kind: rate::ThreadKind::Fibers,
                threads: 4,
                messages: 100,
                send: rate::Rate {
                    median: 1.5e6,
                    min: 1e6,
                    max: 2e6,
                },
                end_to_end: rate::Rate {
                    median: 0.1,
                    min: f64::MIN_POSITIVE,
                    max: 3.0,
                },
            }),
            NodeResult::Am(am::Cell::RoundTrip(am::RoundTrip {
                size: 8,
                pingpong: times,
                inline: times,
                fiber: times,
            })),
            NodeResult::Am(am::Cell::Rate(am::RateSample {
                kind: rate::ThreadKind::Os,
                threads: 8,
                messages: 1000,
                send: rate::Rate {
                    median: 3e6,
                    min: 2e6,
                    max: 4e6,
                },
                end_to_end: rate::Rate {
                    median: 2.5e6,
                    min: 2e6,
                    max: 3e6,
                },
            })),
            NodeResult::Comm {
                path: "tcp/ethernet10".into(),
                cell: comm::Cell {
                    sample,
                    repetitions: 2,
                },
            },
            NodeResult::Encodings {
                encoding: "in-place".into(),
                sample,
            },
            NodeResult::Coll(coll::Sample {
                operation: coll::Operation::Allreduce,
                size: 8,
                median: Duration::from_nanos(900),
                min: Duration::from_nanos(800),
                max: Duration::from_nanos(1200),
                repetitions: 5,
                iterations: 100_000,
            }),
            NodeResult::Dsm(dsm::Sample {
                path: "tcp/fast100".into(),
                operation: dsm::Operation::RemoteReadFault,
                nodes: 2,
                threads: 1,
                times,
                operations: 256,
                repetitions: 5,
                bytes: Some(8200.0),
            }),
            NodeResult::Timed { seconds: 0.125 },
            NodeResult::Joined {
                started_ns: u64::MAX,
                joined_ns: 1,
            },
            NodeResult::RemoteSpawned {
                ms: vec![0.5, 0.25],
                am_round_trip_us: vec![3.5],
            },
            NodeResult::Flood(flood::Side {
                role: flood::Role::Sender,
                messages: 2000,
                time: Duration::from_millis(910),
                start_bytes: 12 << 20,
                peak_bytes: 2100 << 20,
            }),
        ];
        for result in results {
            assert_eq!(NodeResult::decode(&event(&result)), Some((1, result)));
        }
    }

    #[test]
    fn other_events_and_other_bytes_are_not_results() {
        let line = Event::Output {
            node: 0,
            stream: threadwire_launch::OutputStream::Stdout,
            line: "pingpong-result shm 8 1 1 1".into(),
        };
        assert_eq!(NodeResult::decode(&line), None);
        let garbage = Event::Report {
            node: 0,
            data: b"{\"Pingpong\": 3}".to_vec(),
        };
        assert_eq!(NodeResult::decode(&garbage), None);
    }
}
