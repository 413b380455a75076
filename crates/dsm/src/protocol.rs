//! The engine's messages, as threadwire active messages, and their bytes.
//!
//! | handler        | request                         | reply                          | runs |
//! |----------------|---------------------------------|--------------------------------|------|
//! | `dsm.fetch`    | unit (u32)                      | version (u64), the unit's bytes | inline, at the unit's home |
//! | `dsm.diff`     | `[unit u32][len u32][diff]`…    | `0`, new versions (u64)…; or `1`, why | inline, at the units' home |
//! | `dsm.barrier`  | epoch, allocated bytes (u64), notices | `0`, every node's notices; or `1` | fiber, at node 0 (module `barrier`) |
//! | `dsm.acquire`  | lock (u32)                      | `0` granted, or `1`, the node to follow (u32) | inline, at the lock's manager (module `lock`) |
//! | `dsm.follow`   | lock (u32)                      | epoch (u64), notices           | fiber, at the node followed (module `lock`) |
//!
//! A notice is `[unit u32][version u64]`. Every decoder checks lengths and
//! gives `None` (or a typed error) for bytes that do not parse: a peer's
//! bad message fails the operation that waits for it, never the node.

use crate::barrier::Meeting;
use crate::consistency::Consistency;
use crate::engine::Engine;
use crate::lock::Locks;
use crate::DsmError;
use std::sync::{Arc, OnceLock};
use threadwire::{ActiveMessage, AmError, Endpoint, Handler, Node};

/// First byte of a reply that succeeded.
pub const OK: u8 = 0;
/// First byte of a reply that refused (diff, barrier), or of an acquire's
/// reply naming a node to follow.
pub const OTHER: u8 = 1;

/// Bytes of one notice.
const NOTICE: usize = 12;

/// The handlers of one node.
#[derive(Clone, Debug)]
pub struct Handlers {
    pub fetch: Handler,
    pub diff: Handler,
    pub barrier: Handler,
    pub acquire: Handler,
    pub follow: Handler,
}

/// What a node's handlers reach.
pub struct Parts<'a> {
    pub node: &'a Node,
    pub engine: &'a Arc<Engine>,
    pub consistency: &'a Arc<Consistency>,
    pub meeting: &'a Arc<Meeting>,
    pub locks: &'a Arc<Locks>,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Appends notices' bytes.
pub fn put_notices(out: &mut Vec<u8>, notices: &[(u32, u64)]) {
    out.reserve(NOTICE * notices.len());
    for &(u, v) in notices {
        out.extend_from_slice(&u.to_le_bytes());
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Notices from bytes that hold nothing else.
pub fn notices(b: &[u8]) -> Option<Vec<(u32, u64)>> {
    if !b.len().is_multiple_of(NOTICE) {
        return None;
    }
    (0..b.len() / NOTICE)
        .map(|i| Some((u32_at(b, i * NOTICE)?, u64_at(b, i * NOTICE + 4)?)))
        .collect()
}

/// The versions of a diff batch's reply, or the home's refusal.
pub fn versions(b: &[u8]) -> Result<Vec<u64>, DsmError> {
    match b.split_first() {
        Some((&OK, rest)) if rest.len().is_multiple_of(8) => Ok((0..rest.len() / 8)
            .filter_map(|i| u64_at(rest, 8 * i))
            .collect()),
        Some((&OTHER, why)) => Err(DsmError::Refused(String::from_utf8_lossy(why).into_owned())),
        _ => Err(DsmError::Refused("a diff's reply does not parse".into())),
    }
}

/// A 4-byte payload as a u32.
pub fn id(b: &[u8]) -> Option<u32> {
    (b.len() == 4).then(|| u32_at(b, 0)).flatten()
}

/// Registers every handler of the engine on `node`.
pub fn register(parts: Parts<'_>) -> Result<Handlers, AmError> {
    let node = parts.node;
    // Handlers stay registered after the space is dropped (threadwire
    // has no unregistering): they hold the engine weakly, so that it goes
    // (and its memory is unmapped) with the node's last handle, and answer
    // with nothing afterwards.
    let e = Arc::downgrade(parts.engine);
    let fetch = node.register_inline("dsm.fetch", move |am: &mut ActiveMessage<'_>| {
        let reply = match (id(&am.payload().to_vec()), e.upgrade()) {
            (Some(u), Some(e)) => e.serve_fetch(u),
            _ => Vec::new(),
        };
        let _ = am.reply(reply);
    })?;
    let e = Arc::downgrade(parts.engine);
    let diff = node.register_inline("dsm.diff", move |am: &mut ActiveMessage<'_>| {
        let batch = am.payload().to_vec();
        let Some(e) = e.upgrade() else {
            let _ = am.reply(vec![OTHER]);
            return;
        };
        if !e.placed_all(&batch) {
            let _ = am.reply(vec![crate::engine::NOT_YET]);
            return;
        }
        let reply = match e.apply(&batch) {
            Ok(versions) => {
                let mut r = Vec::with_capacity(1 + 8 * versions.len());
                r.push(OK);
                for v in versions {
                    r.extend_from_slice(&v.to_le_bytes());
                }
                r
            }
            Err(err) => {
                let mut r = vec![OTHER];
                r.extend_from_slice(err.to_string().as_bytes());
                r
            }
        };
        let _ = am.reply(reply);
    })?;
    let meeting = parts.meeting.clone();
    let barrier = node.register_fiber(
        "dsm.barrier",
        move |_ep: &Endpoint, am: &mut ActiveMessage<'_>| {
            let from = am.source().node;
            meeting.arrive(from, &am.payload().to_vec(), |reply| {
                let _ = am.reply(reply);
            });
        },
    )?;
    let locks = parts.locks.clone();
    let acquire = node.register_inline("dsm.acquire", move |am: &mut ActiveMessage<'_>| {
        let from = am.source().node;
        let reply = match id(&am.payload().to_vec()) {
            Some(lock) => locks.manage(lock, from),
            None => vec![OTHER, 0xff, 0xff, 0xff, 0xff],
        };
        let _ = am.reply(reply);
    })?;
    let locks = parts.locks.clone();
    let (engine, consistency) = (Arc::downgrade(parts.engine), parts.consistency.clone());
    // The follower's handler releases through the handlers it is one of.
    let all: Arc<OnceLock<Handlers>> = Arc::new(OnceLock::new());
    let mine = all.clone();
    let follow = node.register_fiber(
        "dsm.follow",
        move |ep: &Endpoint, am: &mut ActiveMessage<'_>| {
            let (Some(lock), Some(handlers), Some(engine)) =
                (id(&am.payload().to_vec()), mine.get(), engine.upgrade())
            else {
                let _ = am.reply(vec![OTHER]);
                return;
            };
            let reply = locks.hand_over(lock, &engine, &consistency, ep, handlers);
            let _ = am.reply(reply);
        },
    )?;
    let handlers = Handlers {
        fetch,
        diff,
        barrier,
        acquire,
        follow,
    };
    let _ = all.set(handlers.clone());
    Ok(handlers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_and_versions_round_trip_and_refuse_bad_bytes() {
        let n = vec![(1u32, 2u64), (7, 9)];
        let mut b = Vec::new();
        put_notices(&mut b, &n);
        assert_eq!(notices(&b), Some(n));
        assert_eq!(notices(&b[..13]), None);
        let mut r = vec![OK];
        r.extend_from_slice(&5u64.to_le_bytes());
        assert_eq!(versions(&r).unwrap(), vec![5]);
        assert!(matches!(versions(&[OTHER, b'x']), Err(DsmError::Refused(w)) if w == "x"));
        assert!(versions(&[OK, 1, 2]).is_err());
        assert_eq!(id(&[1, 0, 0, 0]), Some(1));
        assert_eq!(id(&[1, 0, 0]), None);
    }
}
