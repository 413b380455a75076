//! A multicast datagram's bytes (integers little-endian):
//!
//! ```text
//! 0   "TM", protocol version, kind (1 DATA, 2 HEARTBEAT)   4 B
//! 4   sender's node                                        4 B
//! 8   the sender's session, first 8 bytes                  8 B
//! 16  offset of the data in the sender's stream            8 B
//! 24  end of what the sender has sent                      8 B
//! 32  data (none in a heartbeat)
//! end tag: HMAC-SHA256 of all before, truncated            16 B
//! ```
//!
//! The session prefix drops another session's datagrams before the tag
//! is computed; the tag (the unicast channel's `append_tag` and
//! `check_tag`) proves the sender's key for its whole session.

use super::super::packet::{append_tag, check_tag, hmac_of, u32_at, u64_at, PacketError, TAG_LEN};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use threadwire_wire::PROTOCOL_VERSION;

pub(super) const HEADER_LEN: usize = 32;
const MAGIC: [u8; 2] = *b"TM";

/// What a datagram carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Data = 1,
    Heartbeat = 2,
}

/// A datagram's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) kind: Kind,
    pub(super) sender: u32,
    pub(super) session: [u8; 8],
    pub(super) offset: u64,
    pub(super) end: u64,
}

impl Header {
    pub(super) fn write(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&MAGIC);
        out[2] = PROTOCOL_VERSION;
        out[3] = self.kind as u8;
        out[4..8].copy_from_slice(&self.sender.to_le_bytes());
        out[8..16].copy_from_slice(&self.session);
        out[16..24].copy_from_slice(&self.offset.to_le_bytes());
        out[24..32].copy_from_slice(&self.end.to_le_bytes());
    }

    /// The header of `datagram`, if it is one of ours in shape: its data
    /// lies below its end (none in a heartbeat).
    pub(super) fn read(datagram: &[u8]) -> Result<Header, PacketError> {
        if datagram.len() < HEADER_LEN + TAG_LEN {
            return Err(PacketError::Short(datagram.len()));
        }
        if datagram[0..2] != MAGIC {
            return Err(PacketError::Magic);
        }
        if datagram[2] != PROTOCOL_VERSION {
            return Err(PacketError::Version(datagram[2]));
        }
        let kind = match datagram[3] {
            1 => Kind::Data,
            2 => Kind::Heartbeat,
            _ => return Err(PacketError::Magic),
        };
        let mut session = [0; 8];
        session.copy_from_slice(&datagram[8..16]);
        let header = Header {
            kind,
            sender: u32_at(datagram, 4),
            session,
            offset: u64_at(datagram, 16),
            end: u64_at(datagram, 24),
        };
        let len = (datagram.len() - HEADER_LEN - TAG_LEN) as u64;
        match kind {
            Kind::Heartbeat if len != 0 => Err(PacketError::Malformed("heartbeat with data")),
            Kind::Data if len == 0 => Err(PacketError::Malformed("data datagram without data")),
            _ if header
                .offset
                .checked_add(len)
                .is_none_or(|e| e > header.end) =>
            {
                Err(PacketError::Malformed("data beyond the sender's end"))
            }
            _ => Ok(header),
        }
    }
}

/// The key of `sender`'s datagrams in its session `session` of job `job`.
pub(super) fn key(secret: &[u8; 32], job: u64, sender: u32, session: &[u8; 16]) -> Hmac<Sha256> {
    let mut mac = hmac_of(secret);
    mac.update(b"threadwire mcast");
    mac.update(&job.to_le_bytes());
    mac.update(&sender.to_le_bytes());
    mac.update(session);
    hmac_of(&mac.finalize().into_bytes().into())
}

/// The first 8 bytes of a session, as headers carry it.
pub(super) fn prefix(session: &[u8; 16]) -> [u8; 8] {
    let mut p = [0; 8];
    p.copy_from_slice(&session[..8]);
    p
}

/// Writes `header` and `data` into `buf` and seals them: the length.
pub(super) fn seal(buf: &mut [u8], header: &Header, data: &[u8], key: &Hmac<Sha256>) -> usize {
    header.write(buf);
    buf[HEADER_LEN..HEADER_LEN + data.len()].copy_from_slice(data);
    append_tag(buf, HEADER_LEN + data.len(), key)
}

/// The data of `datagram` (whose header was read) if its tag proves `key`.
pub(super) fn open<'d>(datagram: &'d [u8], key: &Hmac<Sha256>) -> Result<&'d [u8], PacketError> {
    Ok(&check_tag(datagram, key)?[HEADER_LEN..])
}

/// A datagram of `sender`'s session `session` in job `job`, sealed with
/// its key: for fuzzing a receiver past the tag, and tests.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn seal_datagram(
    secret: &[u8; 32],
    job: u64,
    sender: u32,
    session: &[u8; 16],
    heartbeat: bool,
    offset: u64,
    end: u64,
    data: &[u8],
) -> Vec<u8> {
    let header = Header {
        kind: match heartbeat {
            true => Kind::Heartbeat,
            false => Kind::Data,
        },
        sender,
        session: prefix(session),
        offset,
        end,
    };
    let mut buf = vec![0; HEADER_LEN + data.len() + TAG_LEN];
    seal(&mut buf, &header, data, &key(secret, job, sender, session));
    buf
}
