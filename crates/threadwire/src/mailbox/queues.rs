//! The owner's side of a mailbox: posted receives, unexpected messages
//! and the results of matched receives, touched by the owner's thread
//! alone, so without a lock or an atomic.
//!
//! A posted receive is a [`Ticket`] into a table of cells, reused as
//! receives come and go: posting takes a free cell, a match stores the
//! result in it, and taking the result (or withdrawing the receive)
//! frees it. The ticket's generation tells a reused cell from the one it
//! was given, so a stale ticket finds nothing rather than another
//! receive's result.

use crate::error::{PeerLost, RecvError};
use crate::stats::Counters;
use crate::{Message, Source, Status, TagMatch};
use std::collections::VecDeque;

/// A posted receive's cell: its index and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    index: u32,
    generation: u32,
}

enum Cell {
    /// Unused; the next free cell's index (`NONE` ends the list).
    Free(u32),
    /// Waiting in the posted queue.
    Posted,
    /// Matched (or failed): the result, and the stamp of the message's
    /// arrival.
    Done(Result<Message, RecvError>, u64),
}

struct Slot {
    generation: u32,
    cell: Cell,
}

const NONE: u32 = u32::MAX;

struct Posted {
    context: u32,
    source: Source,
    tag: TagMatch,
    ticket: Ticket,
}

/// The owner's queues (`mailbox`, rules 3 and 5).
pub(super) struct Queues {
    posted: VecDeque<Posted>,
    /// Messages with their arrival stamps, in arrival order.
    unexpected: VecDeque<(u64, Message)>,
    /// The next arrival stamp: messages arrived so far.
    arrivals: u64,
    cells: Vec<Slot>,
    free: u32,
    /// Set while an operation of the owner runs: a delivery from inside
    /// one (never expected) goes the way of other threads' instead.
    pub(super) busy: bool,
}

impl Default for Queues {
    fn default() -> Self {
        Queues {
            posted: VecDeque::new(),
            unexpected: VecDeque::new(),
            arrivals: 0,
            cells: Vec::new(),
            free: NONE,
            busy: false,
        }
    }
}

fn matches(context: u32, source: Source, tag: TagMatch, m: &Message) -> bool {
    m.context == context && source.matches(m.source) && tag.matches(m.tag)
}

impl Queues {
    /// A message arrives (rule 3): to the first matching posted receive,
    /// else to the back of the unexpected queue.
    #[inline]
    pub(super) fn arrive(&mut self, message: Message, counters: &Counters) {
        counters.received(message.len());
        let arrival = self.arrivals;
        self.arrivals += 1;
        let at = self
            .posted
            .iter()
            .position(|p| matches(p.context, p.source, p.tag, &message));
        match at {
            Some(i) => {
                let posted = self.posted.remove(i).expect("index from position");
                self.complete(posted.ticket, Ok(message), arrival);
            }
            None => self.unexpected.push_back((arrival, message)),
        }
    }

    fn complete(&mut self, ticket: Ticket, result: Result<Message, RecvError>, arrival: u64) {
        let slot = &mut self.cells[ticket.index as usize];
        debug_assert!(slot.generation == ticket.generation && matches!(slot.cell, Cell::Posted));
        slot.cell = Cell::Done(result, arrival);
    }

    /// Removes and returns the first matching unexpected message.
    #[inline]
    pub(super) fn take_unexpected(
        &mut self,
        context: u32,
        source: Source,
        tag: TagMatch,
    ) -> Option<Message> {
        let i = self
            .unexpected
            .iter()
            .position(|(_, m)| matches(context, source, tag, m))?;
        self.unexpected.remove(i).map(|(_, m)| m)
    }

    /// Status of the first matching unexpected message.
    pub(super) fn probe(&self, context: u32, source: Source, tag: TagMatch) -> Option<Status> {
        self.unexpected
            .iter()
            .find(|(_, m)| matches(context, source, tag, m))
            .map(|(_, m)| m.status())
    }

    /// Posts a receive at the back of the posted queue.
    #[inline]
    pub(super) fn post(&mut self, context: u32, source: Source, tag: TagMatch) -> Ticket {
        let index = match self.free {
            NONE => {
                self.cells.push(Slot {
                    generation: 0,
                    cell: Cell::Posted,
                });
                (self.cells.len() - 1) as u32
            }
            free => {
                let Cell::Free(next) = self.cells[free as usize].cell else {
                    unreachable!("the free list holds free cells")
                };
                self.free = next;
                free
            }
        };
        let slot = &mut self.cells[index as usize];
        slot.cell = Cell::Posted;
        let ticket = Ticket {
            index,
            generation: slot.generation,
        };
        self.posted.push_back(Posted {
            context,
            source,
            tag,
            ticket,
        });
        ticket
    }

    fn slot(&self, ticket: Ticket) -> Option<&Slot> {
        self.cells
            .get(ticket.index as usize)
            .filter(|s| s.generation == ticket.generation)
    }

    /// Whether the receive has its result.
    #[inline]
    pub(super) fn is_done(&self, ticket: Ticket) -> bool {
        matches!(self.slot(ticket).map(|s| &s.cell), Some(Cell::Done(..)))
    }

    /// The receive's result, left in place.
    pub(super) fn peek(&self, ticket: Ticket) -> Option<&Result<Message, RecvError>> {
        match self.slot(ticket).map(|s| &s.cell) {
            Some(Cell::Done(r, _)) => Some(r),
            _ => None,
        }
    }

    /// Takes the receive's result and frees its cell; `None` (and the cell
    /// kept) while it has none.
    #[inline]
    pub(super) fn take(&mut self, ticket: Ticket) -> Option<(Result<Message, RecvError>, u64)> {
        if !self.is_done(ticket) {
            return None;
        }
        match self.release(ticket.index) {
            Cell::Done(r, arrival) => Some((r, arrival)),
            _ => unreachable!("checked done above"),
        }
    }

    /// Frees cell `index` (a new generation), returning what it held.
    fn release(&mut self, index: u32) -> Cell {
        let slot = &mut self.cells[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        let held = std::mem::replace(&mut slot.cell, Cell::Free(self.free));
        self.free = index;
        held
    }

    /// Withdraws the receive if it is still posted: `true` if it was.
    pub(super) fn withdraw(&mut self, ticket: Ticket) -> bool {
        match self.posted.iter().position(|p| p.ticket == ticket) {
            Some(i) => {
                self.posted.remove(i);
                self.release(ticket.index);
                true
            }
            None => false,
        }
    }

    /// Withdraws the receive; if a message completed it meanwhile, the
    /// message goes back into the unexpected queue where it arrived (rule
    /// 5). Not simply to the front: messages of the same sender that
    /// arrived before it, but did not match this receive, may still be
    /// queued, and a wildcard receive must not see it overtake them.
    pub(super) fn cancel(&mut self, ticket: Ticket) {
        if self.withdraw(ticket) {
            return;
        }
        if let Some((Ok(m), arrival)) = self.take(ticket) {
            let at = self
                .unexpected
                .iter()
                .position(|(a, _)| *a > arrival)
                .unwrap_or(self.unexpected.len());
            self.unexpected.insert(at, (arrival, m));
        }
    }

    /// Fails posted receives that `lost` may have been meant to satisfy:
    /// those naming its node and, when it failed, the wildcard ones.
    pub(super) fn fail_for(&mut self, lost: &PeerLost) {
        let failed = matches!(lost.cause, crate::error::LossCause::Failed(_));
        self.fail_where(
            |p| match p.source.node() {
                Some(n) => n == lost.node,
                None => failed,
            },
            || RecvError::PeerLost(lost.clone()),
        );
    }

    /// Fails every posted receive in one of `contexts` with `error`.
    pub(super) fn fail_contexts(&mut self, contexts: &[u32], error: &RecvError) {
        self.fail_where(|p| contexts.contains(&p.context), || error.clone());
    }

    fn fail_where(&mut self, affected: impl Fn(&Posted) -> bool, error: impl Fn() -> RecvError) {
        let mut hit = Vec::new();
        self.posted.retain(|p| {
            let a = affected(p);
            if a {
                hit.push(p.ticket);
            }
            !a
        });
        for ticket in hit {
            // No stamp: a failed receive gives no message back.
            self.complete(ticket, Err(error()), 0);
        }
    }
}
