//! Reports of failed one-way active messages (protocol step 5), kept per
//! sending thread until [`Endpoint::am_check`](crate::Endpoint::am_check)
//! takes them: at most [`KEPT`] each, the rest only counted, so that a
//! thread that sends to a failing handler at full speed and never checks
//! holds a bounded amount of memory.

use super::ActiveMessage;
use crate::lock;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use threadwire_wire::Payload;

/// The built-in handler that receives reports for a thread of its node.
pub(crate) const REPORT_HANDLER: &str = "threadwire.report";

/// The built-in handler, inline: the report into the table of the thread
/// it was sent for.
pub(crate) fn serve(am: &mut ActiveMessage<'_>) {
    if let Some(target) = am.target() {
        let payload = am.take_payload();
        am.router().am.reports.add(target.thread, am.source().node, payload);
    }
}

/// Reports kept per thread; later ones are counted.
pub(crate) const KEPT: usize = 16;

#[derive(Default)]
struct Kept {
    /// (reporting node, the report's payload), oldest first.
    reports: VecDeque<(u32, Payload)>,
    dropped: u64,
}

/// What [`Reports::take`] found.
pub(crate) enum Taken {
    Report { node: u32, payload: Payload },
    Dropped(u64),
    Nothing,
}

#[derive(Default)]
pub(crate) struct Reports {
    by_thread: Mutex<HashMap<u32, Kept>>,
}

impl Reports {
    /// A report from `node` for this node's thread `thread`.
    pub(crate) fn add(&self, thread: u32, node: u32, payload: Payload) {
        let mut by_thread = lock(&self.by_thread);
        let kept = by_thread.entry(thread).or_default();
        if kept.reports.len() < KEPT {
            kept.reports.push_back((node, payload));
        } else {
            kept.dropped += 1;
        }
    }

    /// The oldest report for `thread`; once none is kept, how many were
    /// dropped (once).
    pub(crate) fn take(&self, thread: u32) -> Taken {
        let mut by_thread = lock(&self.by_thread);
        let Some(kept) = by_thread.get_mut(&thread) else {
            return Taken::Nothing;
        };
        let taken = match kept.reports.pop_front() {
            Some((node, payload)) => Taken::Report { node, payload },
            None if kept.dropped > 0 => Taken::Dropped(std::mem::take(&mut kept.dropped)),
            None => Taken::Nothing,
        };
        if kept.reports.is_empty() && kept.dropped == 0 {
            by_thread.remove(&thread);
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_a_bounded_number_and_counts_the_rest() {
        let r = Reports::default();
        for i in 0..(KEPT + 5) {
            r.add(3, 1, Payload::from_vec(vec![i as u8]));
        }
        for i in 0..KEPT {
            match r.take(3) {
                Taken::Report { node: 1, payload } => assert_eq!(payload.into_vec(), [i as u8]),
                _ => panic!("report {i}"),
            }
        }
        assert!(matches!(r.take(3), Taken::Dropped(5)));
        assert!(matches!(r.take(3), Taken::Nothing));
        assert!(matches!(r.take(4), Taken::Nothing));
    }
}
