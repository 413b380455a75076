//! Setting up a shared-memory channel over the pair's TCP connection.
//!
//! The higher-numbered node of a pair (the one that connected) creates the
//! region; the lower one attaches. Every message travels as a
//! [`FrameKind::Shm`] frame whose `aux` word names it:
//!
//! 1. The creator sends [`Setup::Offer`] (its pid, the memfd's descriptor
//!    number and length, its host identity and the address of its
//!    cross-memory-attach probe), or [`Setup::NoOffer`] when it will not use
//!    shared memory, so that the peer never waits in vain.
//! 2. The attacher compares host identities (boot id and network
//!    namespace: nodes in different namespaces emulate different hosts),
//!    opens `/proc/<pid>/fd/<fd>`, attaches both rings (which checks their
//!    job tag), and reads the creator's probe with `process_vm_readv`. It
//!    answers [`Setup::Accept`] (whether it can read the creator's memory,
//!    its own pid and probe) or [`Setup::Decline`] with the reason; either
//!    way nothing is left mapped on a decline.
//! 3. The creator, on `Accept`, closes its descriptor (only the two
//!    mappings keep the memory now), reads the attacher's probe and sends
//!    [`Setup::Ready`] with the result. From here on it sends data through
//!    the ring.
//! 4. The attacher, on `Ready`, starts sending through the ring too.
//!
//! Neither side sends user data before its step 3 or 4 completes (the
//! runtime finishes setup inside `init`), so nothing sent over TCP can be
//! overtaken by the ring. Large frames go by cross-memory attach in a
//! direction only if the receiving side could read the probe in step 2 or
//! 3; otherwise they go in chunks through the ring, and the runtime logs
//! which.

use super::channel::{ShmChannel, ShmConfig};
use super::doorbell::Doorbell;
use super::region::Region;
use super::ring::{required_len, Ring, RingMemory};
use std::io;
use threadwire_wire::{FrameHeader, FrameKind};

/// A setup message (module docs, steps 1–4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setup {
    /// Step 1: the region is ready to be attached.
    Offer(Offer),
    /// Step 1: the creator will not use shared memory with this peer.
    NoOffer(String),
    /// Step 2: attached.
    Accept(Accept),
    /// Step 2: not attached, and why.
    Decline(String),
    /// Step 3: whether the creator can read the attacher's memory.
    Ready {
        /// The creator's probe read of the attacher succeeded.
        can_read: bool,
    },
}

/// Where the region is and who offers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    pid: u32,
    fd: i32,
    len: u64,
    probe: u64,
    host: HostId,
}

/// The attacher's side of the bargain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accept {
    can_read: bool,
    pid: u32,
    probe: u64,
}

/// Which kernel and network namespace a node runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HostId {
    boot_id: [u8; 16],
    netns: u64,
}

impl HostId {
    fn here() -> io::Result<HostId> {
        use std::os::unix::fs::MetadataExt;
        let text = std::fs::read_to_string("/proc/sys/kernel/random/boot_id")?;
        let hex: Vec<u8> = text
            .bytes()
            .filter(u8::is_ascii_hexdigit)
            .map(|c| (c as char).to_digit(16).expect("a hex digit") as u8)
            .collect();
        if hex.len() != 32 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "unreadable boot id",
            ));
        }
        let mut boot_id = [0u8; 16];
        for (i, b) in boot_id.iter_mut().enumerate() {
            *b = hex[2 * i] << 4 | hex[2 * i + 1];
        }
        let netns = std::fs::metadata("/proc/self/ns/net")?.ino();
        Ok(HostId { boot_id, netns })
    }
}

/// Why a setup message was refused.
#[derive(Debug, thiserror::Error)]
#[error("malformed shared-memory setup message: {0}")]
pub struct SetupMessageError(&'static str);

/// Why step 2 declined an offer; its text (which includes any underlying
/// error's) is what [`Setup::Decline`] carries back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// This host's identity could not be read.
    #[error("cannot tell which host this is: {0}")]
    HostUnknown(io::Error),
    /// The creator runs on another host.
    #[error("another host (boot id differs)")]
    OtherHost,
    /// The creator runs in another network namespace (an emulated host).
    #[error("another network namespace")]
    OtherNamespace,
    /// The offered length does not fit this address space.
    #[error("region too large")]
    TooLarge,
    /// The creator's region could not be opened and mapped.
    #[error("cannot open the peer's region: {0}")]
    Open(io::Error),
    /// The offered length cannot hold two rings.
    #[error("region length not a multiple of 128")]
    BadLength,
    /// A ring is not this pair's (another job, pair or direction) or is
    /// malformed.
    #[error("ring {ring}: {why}")]
    Ring {
        /// 0 for the creator's ring, 1 for the attacher's.
        ring: usize,
        /// What the ring's header said.
        why: super::ring::SetupError,
    },
}

const OFFER: u32 = 1;
const NO_OFFER: u32 = 2;
const ACCEPT: u32 = 3;
const DECLINE: u32 = 4;
const READY: u32 = 5;
const MAX_REASON: usize = 512;

/// `why`, cut to at most [`MAX_REASON`] bytes at a character boundary.
fn reason_bytes(why: &str) -> &[u8] {
    let mut end = why.len().min(MAX_REASON);
    while !why.is_char_boundary(end) {
        end -= 1;
    }
    &why.as_bytes()[..end]
}

impl Setup {
    /// The frame header and payload that carry this message.
    pub fn encode(&self) -> (FrameHeader, Vec<u8>) {
        let mut b = Vec::new();
        let aux = match self {
            Setup::Offer(o) => {
                b.extend_from_slice(&o.pid.to_le_bytes());
                b.extend_from_slice(&o.fd.to_le_bytes());
                b.extend_from_slice(&o.len.to_le_bytes());
                b.extend_from_slice(&o.probe.to_le_bytes());
                b.extend_from_slice(&o.host.boot_id);
                b.extend_from_slice(&o.host.netns.to_le_bytes());
                OFFER
            }
            Setup::NoOffer(why) => {
                b.extend_from_slice(reason_bytes(why));
                NO_OFFER
            }
            Setup::Accept(a) => {
                b.push(a.can_read as u8);
                b.extend_from_slice(&[0; 3]);
                b.extend_from_slice(&a.pid.to_le_bytes());
                b.extend_from_slice(&a.probe.to_le_bytes());
                ACCEPT
            }
            Setup::Decline(why) => {
                b.extend_from_slice(reason_bytes(why));
                DECLINE
            }
            Setup::Ready { can_read } => {
                b.push(*can_read as u8);
                READY
            }
        };
        (FrameHeader::control(FrameKind::Shm, aux, b.len() as u64), b)
    }

    /// Decodes a [`FrameKind::Shm`] frame.
    pub fn decode(header: &FrameHeader, payload: &[u8]) -> Result<Setup, SetupMessageError> {
        let u32_at = |at: usize| {
            payload
                .get(at..at + 4)
                .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
        };
        let u64_at = |at: usize| {
            payload
                .get(at..at + 8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        let reason = || {
            if payload.len() > MAX_REASON {
                return Err(SetupMessageError("reason too long"));
            }
            // What `encode` sends is whole characters: anything else is
            // not from a correct peer.
            String::from_utf8(payload.to_vec())
                .map_err(|_| SetupMessageError("reason is not UTF-8"))
        };
        let short = SetupMessageError("too short");
        let flag = |b: u8| match b {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(SetupMessageError("flag is neither 0 nor 1")),
        };
        match header.aux {
            OFFER if payload.len() == 48 => Ok(Setup::Offer(Offer {
                pid: u32_at(0).ok_or(short)?,
                fd: u32_at(4).ok_or(SetupMessageError("too short"))? as i32,
                len: u64_at(8).ok_or(SetupMessageError("too short"))?,
                probe: u64_at(16).ok_or(SetupMessageError("too short"))?,
                host: HostId {
                    boot_id: payload[24..40].try_into().expect("16 bytes"),
                    netns: u64_at(40).ok_or(SetupMessageError("too short"))?,
                },
            })),
            NO_OFFER => Ok(Setup::NoOffer(reason()?)),
            ACCEPT if payload.len() == 16 => Ok(Setup::Accept(Accept {
                can_read: flag(payload[0])?,
                pid: u32_at(4).ok_or(short)?,
                probe: u64_at(8).ok_or(SetupMessageError("too short"))?,
            })),
            DECLINE => Ok(Setup::Decline(reason()?)),
            READY if payload.len() == 1 => Ok(Setup::Ready {
                can_read: flag(payload[0])?,
            }),
            OFFER | ACCEPT | READY => Err(SetupMessageError("wrong length")),
            _ => Err(SetupMessageError("unknown message")),
        }
    }
}

/// Names the pair and direction a ring serves, so that attaching a ring of
/// another job, pair or direction fails.
pub(super) fn ring_tag(job_id: u64, from: u32, to: u32) -> u64 {
    let pair = (u64::from(from) << 32) | u64::from(to);
    (job_id ^ pair.rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x7477_7368_6d00_0000
}

/// The pair as the channel sees it.
#[derive(Clone, Copy, Debug)]
pub struct Pair {
    /// The job.
    pub job_id: u64,
    /// This node.
    pub me: u32,
    /// The other node.
    pub peer: u32,
}

/// A region offered and not yet accepted (the creator's side).
#[derive(Debug)]
pub struct Offering {
    region: Region,
    pair: Pair,
    config: ShmConfig,
}

/// A region attached, waiting for [`Setup::Ready`] (the attacher's side).
#[derive(Debug)]
pub struct Attached {
    region: Region,
    pair: Pair,
    config: ShmConfig,
    peer_pid: u32,
}

/// Step 1: creates the region and its two rings (creator → attacher
/// first) and the offer to send.
pub fn offer(pair: Pair, config: &ShmConfig) -> io::Result<(Offering, Setup)> {
    let half = required_len(config.ring_slots, config.slot_size)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let name = format!(
        "threadwire-job{:x}-n{}-n{}",
        pair.job_id, pair.me, pair.peer
    );
    let region = Region::create(&name, 2 * half)?;
    for (i, (from, to)) in [(pair.me, pair.peer), (pair.peer, pair.me)]
        .into_iter()
        .enumerate()
    {
        // SAFETY: each half of the fresh mapping, 64-aligned (the mapping
        // is page-aligned and `half` a multiple of 64), used only through
        // the ring while the region lives (the channel owns both).
        let memory = unsafe { RingMemory::from_raw(region.as_ptr().add(i * half), half) };
        Ring::create(memory, config.slot_size, ring_tag(pair.job_id, from, to))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    }
    let message = Setup::Offer(Offer {
        pid: std::process::id(),
        fd: region
            .raw_fd()
            .expect("a fresh region holds its descriptor"),
        len: region.len() as u64,
        probe: super::cma::probe_address(),
        host: HostId::here()?,
    });
    Ok((
        Offering {
            region,
            pair,
            config: config.clone(),
        },
        message,
    ))
}

/// Step 2: attaches to the offered region; `Err` carries the reason to send
/// back in [`Setup::Decline`].
pub fn attach(
    pair: Pair,
    offer: &Offer,
    config: &ShmConfig,
) -> Result<(Attached, Setup), AttachError> {
    let here = HostId::here().map_err(AttachError::HostUnknown)?;
    if here.boot_id != offer.host.boot_id {
        return Err(AttachError::OtherHost);
    }
    if here.netns != offer.host.netns {
        return Err(AttachError::OtherNamespace);
    }
    let len = usize::try_from(offer.len).map_err(|_| AttachError::TooLarge)?;
    let region = Region::open_peer(offer.pid, offer.fd, len).map_err(AttachError::Open)?;
    let half = region.len() / 2;
    for (i, (from, to)) in [(pair.peer, pair.me), (pair.me, pair.peer)]
        .into_iter()
        .enumerate()
    {
        if half % 64 != 0 {
            return Err(AttachError::BadLength);
        }
        // SAFETY: as in `offer`.
        let memory = unsafe { RingMemory::from_raw(region.as_ptr().add(i * half), half) };
        Ring::attach(memory, ring_tag(pair.job_id, from, to))
            .map_err(|why| AttachError::Ring { ring: i, why })?;
    }
    let can_read = config.cma && super::cma::probe(offer.pid, offer.probe).is_ok();
    let message = Setup::Accept(Accept {
        can_read,
        pid: std::process::id(),
        probe: super::cma::probe_address(),
    });
    Ok((
        Attached {
            region,
            pair,
            config: config.clone(),
            peer_pid: offer.pid,
        },
        message,
    ))
}

impl Offering {
    /// Step 3: the peer accepted; the channel and the [`Setup::Ready`] to send.
    pub fn complete(
        mut self,
        accept: &Accept,
        doorbell: Doorbell,
    ) -> io::Result<(ShmChannel, Setup)> {
        self.region.close_fd();
        let can_read = self.config.cma && super::cma::probe(accept.pid, accept.probe).is_ok();
        let channel = ShmChannel::new(
            self.region,
            0,
            self.pair,
            accept.pid,
            accept.can_read,
            self.config,
            doorbell,
        )?;
        Ok((channel, Setup::Ready { can_read }))
    }
}

impl Attached {
    /// Step 4: the creator is ready; the channel.
    pub fn complete(self, can_read: bool, doorbell: Doorbell) -> io::Result<ShmChannel> {
        ShmChannel::new(
            self.region,
            1,
            self.pair,
            self.peer_pid,
            can_read,
            self.config,
            doorbell,
        )
    }
}

#[cfg(test)]
impl Offer {
    /// A second mapping of the offered region, for tests that scribble.
    pub(crate) fn open_again(&self) -> Region {
        Region::open_peer(self.pid, self.fd, self.len as usize).expect("the region opens")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_reasons_are_cut_at_a_character_and_invalid_ones_refused() {
        // 'é' is two bytes: after one 'a', byte 512 splits a character.
        let long = format!("a{}", "é".repeat(400));
        let (h, p) = Setup::Decline(long).encode();
        assert_eq!(p.len(), 511);
        match Setup::decode(&h, &p).unwrap() {
            Setup::Decline(why) => assert_eq!(why, format!("a{}", "é".repeat(255))),
            other => panic!("{other:?}"),
        }
        let (h, _) = Setup::NoOffer(String::new()).encode();
        assert!(Setup::decode(&h, &[0xff, 0xfe]).is_err());
    }

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        let (_, offer) = offer(
            Pair {
                job_id: 9,
                me: 1,
                peer: 0,
            },
            &ShmConfig::small_for_tests(),
        )
        .unwrap();
        let all = [
            offer,
            Setup::NoOffer("forced tcp".into()),
            Setup::Accept(Accept {
                can_read: true,
                pid: 77,
                probe: 0x1234,
            }),
            Setup::Decline("another host".into()),
            Setup::Ready { can_read: false },
        ];
        for m in all {
            let (h, p) = m.encode();
            assert_eq!(Setup::decode(&h, &p).unwrap(), m);
            if !p.is_empty() && matches!(m, Setup::Offer(_) | Setup::Accept(_)) {
                assert!(Setup::decode(&h, &p[..p.len() - 1]).is_err());
            }
        }
        let mut h = FrameHeader::control(FrameKind::Shm, 99, 0);
        assert!(Setup::decode(&h, &[]).is_err());
        h.aux = READY;
        assert!(Setup::decode(&h, &[7]).is_err());
    }

    #[test]
    fn tags_differ_by_job_pair_and_direction() {
        let t = ring_tag(5, 1, 0);
        assert_ne!(t, ring_tag(6, 1, 0));
        assert_ne!(t, ring_tag(5, 0, 1));
        assert_ne!(t, ring_tag(5, 2, 0));
    }
}
