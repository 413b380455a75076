//! The receiving half: records out of the peer's ring into frames, the
//! rendezvous reads, and the consumer's sleeping steps.

use super::{
    cma, lock, Outgoing, Partial, Receiver, Record, ShmChannel, ShmError, FIN, FIRST, FRAME,
    MAX_RTS_SEGMENTS, MORE, RECEIVE_BUDGET, RTS,
};
use crate::{Frame, ReadOutcome};
use std::sync::atomic::Ordering;
use threadwire_wire::{FrameBytes, FrameHeader, HEADER_LEN, INLINE_LEN};

/// The longest record read as a short frame ([`ShmChannel::parse`]): a
/// header and [`INLINE_LEN`] bytes, whole words.
const SHORT_FRAME: usize = HEADER_LEN + INLINE_LEN;
// The header's 4 words, then the bytes' 3 (`from_words`).
const _: () = assert!(HEADER_LEN == 32 && INLINE_LEN == 24);

/// What one record asks of the engine once its slots are released.
enum Step {
    Deliver(Frame),
    /// Nothing to do (a chunk was stored, a rendezvous finished).
    None,
    Read {
        header: FrameHeader,
        cookie: u64,
        segments: Vec<(u64, u64)>,
    },
    Finished(u64),
}

/// What [`ShmChannel::receive_records`] left behind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[must_use = "ring the peer's doorbell when `doorbell` is set"]
pub(crate) struct Received {
    /// The budget ran out with records left: call again soon.
    pub more: bool,
    /// Ring the peer's doorbell (it waits for space, or sleeps on an
    /// answer this side sent).
    pub doorbell: bool,
    /// Records read: frames, chunks of one, rendezvous answers.
    pub records: usize,
}

impl ShmChannel {
    /// Reads the records the peer has published, hands each complete
    /// frame to `on_frame`, then moves this side's backlog on and rings
    /// the doorbell if the peer needs it (both always: the backlog moves on
    /// even when the doorbell is due anyway). An error means the peer broke
    /// the protocol (or its memory cannot be read): close the channel.
    #[inline]
    pub fn receive(&self, on_frame: impl FnMut(Frame)) -> Result<ReadOutcome, ShmError> {
        let received = self.receive_records(on_frame)?;
        let flushed = self.flush_backlog();
        self.ring_if(received.doorbell || flushed.doorbell);
        Ok(match received {
            Received { records: 0, .. } => ReadOutcome::Empty,
            Received { more: true, .. } => ReadOutcome::More,
            Received { .. } => ReadOutcome::Drained,
        })
    }

    /// [`receive`](Self::receive) without the flush and the doorbell.
    pub(crate) fn receive_records(
        &self,
        mut on_frame: impl FnMut(Frame),
    ) -> Result<Received, ShmError> {
        let mut rx = lock(&self.rx);
        let mut out = Received::default();
        let mut read = 0;
        while read < RECEIVE_BUDGET {
            let Receiver { consumer, partials } = &mut *rx;
            let step = consumer
                .try_recv_with(|record| self.parse(record, partials))
                .map_err(|e| ShmError::Corrupt(e.to_string()))?;
            let Some(step) = step else { break };
            read += 1;
            match step? {
                Step::Deliver(frame) => on_frame(frame),
                Step::None => {}
                Step::Read {
                    header,
                    cookie,
                    segments,
                } => {
                    // Rendezvous step 2, then 3.
                    let payload = cma::read(self.peer_pid, &segments, header.len as usize)
                        .map_err(ShmError::CrossMemory)?;
                    on_frame(Frame {
                        header,
                        payload: payload.into(),
                    });
                    out.doorbell |= self.enqueue(Outgoing::fin(cookie)).doorbell;
                }
                Step::Finished(cookie) => {
                    let Some(payload) = lock(&self.rendezvous).remove(&cookie) else {
                        return Err(ShmError::Corrupt(format!("unknown rendezvous {cookie}")));
                    };
                    self.rendezvous_bytes
                        .fetch_sub(payload.len(), Ordering::AcqRel);
                }
            }
        }
        out.more = read == RECEIVE_BUDGET;
        out.records = read;
        if read > 0 && rx.consumer.space_wanted() {
            out.doorbell = true;
        }
        Ok(out)
    }

    /// Decodes one record, storing chunks; runs while the record's slots
    /// are held, so it copies and returns.
    fn parse(
        &self,
        record: &Record<'_>,
        partials: &mut std::collections::HashMap<u32, Partial>,
    ) -> Result<Step, ShmError> {
        let corrupt = |what: &str| Err(ShmError::Corrupt(what.to_string()));
        let max_frame = self.config.max_frame;
        let decode = |raw: &[u8; HEADER_LEN]| {
            FrameHeader::decode(raw, max_frame).map_err(|e| ShmError::Corrupt(e.to_string()))
        };
        let header = |record: &Record<'_>| -> Result<FrameHeader, ShmError> {
            if record.len() < HEADER_LEN {
                return Err(ShmError::Corrupt(
                    "record shorter than a frame header".into(),
                ));
            }
            let mut raw = [0u8; HEADER_LEN];
            record.read(0, &mut raw);
            decode(&raw)
        };
        let word = |record: &Record<'_>, at: usize| {
            let mut b = [0u8; 8];
            record.read(at, &mut b);
            u64::from_le_bytes(b)
        };
        match record.kind() {
            FRAME => {
                // A short frame (most are): header and bytes in one load
                // a word, the bytes kept in place.
                let short = (HEADER_LEN..=SHORT_FRAME)
                    .contains(&record.len())
                    .then(|| record.first_words::<{ SHORT_FRAME / 8 }>())
                    .flatten();
                let h = match &short {
                    Some(w) => {
                        let mut raw = [0u8; HEADER_LEN];
                        for (chunk, word) in raw.chunks_exact_mut(8).zip(w) {
                            chunk.copy_from_slice(&word.to_ne_bytes());
                        }
                        decode(&raw)?
                    }
                    None => header(record)?,
                };
                let len = h.len as usize;
                if len != record.len() - HEADER_LEN {
                    return corrupt("frame length differs from its record's");
                }
                let payload = match short {
                    Some(w) => FrameBytes::from_words(len, [w[4], w[5], w[6]]),
                    None => FrameBytes::short(len, |dst| record.read(HEADER_LEN, dst)),
                }
                .unwrap_or_else(|| record.to_vec(HEADER_LEN, len).into());
                Ok(Step::Deliver(Frame { header: h, payload }))
            }
            FIRST => {
                let h = header(record)?;
                let part = record.len() - HEADER_LEN;
                if part as u64 >= h.len {
                    return corrupt("first chunk holds the whole frame");
                }
                if partials.contains_key(&h.source_thread) {
                    return corrupt("second frame in chunks from one thread");
                }
                // Grown as chunks arrive: a claimed length is not trusted
                // with an allocation.
                let mut payload = Vec::with_capacity((h.len as usize).min(1 << 20));
                record.append_to(HEADER_LEN, part, &mut payload);
                partials.insert(h.source_thread, Partial { header: h, payload });
                Ok(Step::None)
            }
            MORE => {
                if record.len() < 8 {
                    return corrupt("chunk record too short");
                }
                let source = word(record, 0) as u32;
                let Some(p) = partials.get_mut(&source) else {
                    return corrupt("chunk of no frame");
                };
                let part = record.len() - 8;
                let have = p.payload.len();
                if (have + part) as u64 > p.header.len {
                    return corrupt("chunks overrun their frame");
                }
                record.append_to(8, part, &mut p.payload);
                if p.payload.len() as u64 == p.header.len {
                    let p = partials.remove(&source).expect("present");
                    return Ok(Step::Deliver(Frame {
                        header: p.header,
                        payload: p.payload.into(),
                    }));
                }
                Ok(Step::None)
            }
            RTS => {
                let h = header(record)?;
                if record.len() < HEADER_LEN + 16 {
                    return corrupt("rendezvous record too short");
                }
                let cookie = word(record, HEADER_LEN);
                let count = word(record, HEADER_LEN + 8);
                if count > MAX_RTS_SEGMENTS as u64
                    || record.len() != HEADER_LEN + 16 + 16 * count as usize
                {
                    return corrupt("rendezvous segment list malformed");
                }
                let segments: Vec<(u64, u64)> = (0..count as usize)
                    .map(|i| {
                        let at = HEADER_LEN + 16 + 16 * i;
                        (word(record, at), word(record, at + 8))
                    })
                    .collect();
                let total = segments
                    .iter()
                    .try_fold(0u64, |n, &(_, len)| n.checked_add(len));
                if total != Some(h.len) {
                    return corrupt("rendezvous segments do not add up to the frame");
                }
                Ok(Step::Read {
                    header: h,
                    cookie,
                    segments,
                })
            }
            FIN if record.len() == 8 => Ok(Step::Finished(word(record, 0))),
            _ => corrupt("unknown record kind"),
        }
    }

    /// Sleeping step 1 for this channel's receiving ring: `true` if the
    /// engine may sleep (the peer will ring the doorbell), `false` if a
    /// record arrived meanwhile.
    pub fn prepare_to_sleep(&self) -> bool {
        lock(&self.rx).consumer.prepare_to_sleep()
    }

    /// Sleeping step 4: awake again.
    pub fn woke(&self) {
        lock(&self.rx).consumer.woke()
    }
}
