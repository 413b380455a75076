//! The list of destination threads a multicast frame carries.
//!
//! A multicast frame ([`FrameKind::Mcast`](crate::FrameKind::Mcast)) is one
//! message for several threads of the receiving node: its header's
//! `dest_thread` word holds the number `n` of listed threads, `aux` the
//! context the copies are delivered in, and its payload is the message's
//! data followed by a *trailer* of `n` thread numbers (`u32`,
//! little-endian, strictly increasing — so no thread is listed twice):
//!
//! ```text
//! | data (len − 4n bytes) | thread 0 | thread 1 | … | thread n−1 |
//! ```
//!
//! The trailer goes last so that the receiver gets the data by truncating
//! the received buffer, without moving it, and the sender appends it as one
//! more payload segment, without copying the data.
//!
//! ```
//! use threadwire_wire::mcast::{decode_list, encode_list};
//!
//! let mut frame = b"hello".to_vec();
//! frame.extend(encode_list(&[1, 4, 9]));
//! assert_eq!(decode_list(&frame, 3), Ok((5, vec![1, 4, 9])));
//! ```

/// Bytes per listed thread in the trailer.
pub const THREAD_BYTES: usize = 4;

/// Why a multicast frame's list was refused: no correct peer sends one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McastListError {
    /// The header lists no thread.
    #[error("multicast frame lists no thread")]
    Empty,
    /// The payload is shorter than the list the header announces.
    #[error("multicast list of {count} threads does not fit in {len} payload bytes")]
    Truncated {
        /// Threads announced.
        count: u32,
        /// Payload bytes received.
        len: usize,
    },
    /// The list is not strictly increasing (a thread listed twice, or out
    /// of order).
    #[error("multicast list not strictly increasing at thread {0}")]
    Unordered(u32),
    /// A node's entry in a node list announces no thread, or more than
    /// the list holds.
    #[error("multicast node list with an entry of no threads or beyond its end")]
    BadNodeList,
}

/// The trailer for `threads`, which must be strictly increasing (the
/// sender sorts and deduplicates its list).
pub fn encode_list(threads: &[u32]) -> Vec<u8> {
    debug_assert!(threads.windows(2).all(|w| w[0] < w[1]));
    threads.iter().flat_map(|t| t.to_le_bytes()).collect()
}

/// Splits a multicast frame's payload announcing `count` threads into the
/// data's length and the listed threads. Allocates at most `payload.len() /
/// 4` numbers, so a hostile header cannot make it allocate more than the
/// frame it sent.
pub fn decode_list(payload: &[u8], count: u32) -> Result<(usize, Vec<u32>), McastListError> {
    if count == 0 {
        return Err(McastListError::Empty);
    }
    let truncated = McastListError::Truncated {
        count,
        len: payload.len(),
    };
    let trailer = (count as usize)
        .checked_mul(THREAD_BYTES)
        .ok_or_else(|| truncated.clone())?;
    let data_len = payload.len().checked_sub(trailer).ok_or(truncated)?;
    let mut threads = Vec::with_capacity(count as usize);
    for chunk in payload[data_len..].chunks_exact(THREAD_BYTES) {
        let t = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        if threads.last().is_some_and(|&last| last >= t) {
            return Err(McastListError::Unordered(t));
        }
        threads.push(t);
    }
    Ok((data_len, threads))
}

/// The trailer of a [`FrameKind::Bcast`](crate::FrameKind::Bcast) frame,
/// which lists threads of several nodes: for each node, in increasing
/// order, its number, how many of its threads are listed, and those
/// threads (increasing), all `u32` little-endian. The header's
/// `dest_thread` word holds the trailer's length in words.
///
/// ```
/// use threadwire_wire::mcast::{encode_nodes, threads_of};
///
/// let mut frame = b"hello".to_vec();
/// let trailer = encode_nodes(&[(1, &[0, 2]), (3, &[5])]);
/// let words = (trailer.len() / 4) as u32;
/// frame.extend(trailer);
/// assert_eq!(threads_of(&frame, words, 1), Ok((5, vec![0, 2])));
/// assert_eq!(threads_of(&frame, words, 2), Ok((5, vec![])));
/// ```
pub fn encode_nodes(nodes: &[(u32, &[u32])]) -> Vec<u8> {
    debug_assert!(nodes.windows(2).all(|w| w[0].0 < w[1].0));
    let mut out = Vec::new();
    for (node, threads) in nodes {
        out.extend(node.to_le_bytes());
        out.extend((threads.len() as u32).to_le_bytes());
        out.extend(encode_list(threads));
    }
    out
}

/// Checks the whole node list of a [`FrameKind::Bcast`](crate::FrameKind::Bcast)
/// payload whose trailer is `words` words long, and returns the data's
/// length and the threads listed for `node` (none if it is not listed).
/// Allocates no more than the payload's size in numbers.
pub fn threads_of(
    payload: &[u8],
    words: u32,
    node: u32,
) -> Result<(usize, Vec<u32>), McastListError> {
    let truncated = McastListError::Truncated {
        count: words,
        len: payload.len(),
    };
    let trailer = (words as usize)
        .checked_mul(THREAD_BYTES)
        .ok_or_else(|| truncated.clone())?;
    let data_len = payload.len().checked_sub(trailer).ok_or(truncated)?;
    let mut rest = payload[data_len..]
        .chunks_exact(THREAD_BYTES)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    let (mut mine, mut last_node) = (Vec::new(), None);
    while let Some(n) = rest.next() {
        if last_node.is_some_and(|l| l >= n) {
            return Err(McastListError::Unordered(n));
        }
        last_node = Some(n);
        let count = rest.next().ok_or(McastListError::BadNodeList)?;
        if count == 0 || count as usize > rest.len() {
            return Err(McastListError::BadNodeList);
        }
        let threads: Vec<u32> = rest.by_ref().take(count as usize).collect();
        if let Some(w) = threads.windows(2).find(|w| w[0] >= w[1]) {
            return Err(McastListError::Unordered(w[1]));
        }
        if n == node {
            mine = threads;
        }
    }
    if last_node.is_none() {
        return Err(McastListError::Empty);
    }
    Ok((data_len, mine))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists() {
        let mut p = vec![9u8; 3];
        let t = encode_nodes(&[(0, &[1]), (4, &[0, 7, 9])]);
        let words = (t.len() / 4) as u32;
        p.extend(t);
        assert_eq!(threads_of(&p, words, 4), Ok((3, vec![0, 7, 9])));
        assert_eq!(threads_of(&p, words, 0), Ok((3, vec![1])));
        assert_eq!(threads_of(&p, words, 2), Ok((3, vec![])));
        assert_eq!(threads_of(&p, 0, 2), Err(McastListError::Empty));
        assert!(threads_of(&p, u32::MAX, 2).is_err());
        // A count beyond the trailer, a count of zero, nodes out of order.
        let bad = [1u32, 5, 3]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<_>>();
        assert_eq!(threads_of(&bad, 3, 1), Err(McastListError::BadNodeList));
        let bad = [1u32, 0]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<_>>();
        assert_eq!(threads_of(&bad, 2, 1), Err(McastListError::BadNodeList));
        let bad = [2u32, 1, 0, 1, 1, 0]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<_>>();
        assert_eq!(threads_of(&bad, 6, 1), Err(McastListError::Unordered(1)));
        let bad = [2u32, 2, 3, 3]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<_>>();
        assert_eq!(threads_of(&bad, 4, 2), Err(McastListError::Unordered(3)));
    }

    #[test]
    fn round_trip() {
        let mut p = vec![7u8; 10];
        p.extend(encode_list(&[0, 3, 70_000]));
        assert_eq!(decode_list(&p, 3), Ok((10, vec![0, 3, 70_000])));
        assert_eq!(decode_list(&encode_list(&[5]), 1), Ok((0, vec![5])));
    }

    #[test]
    fn refuses_malformed_lists() {
        assert_eq!(decode_list(b"abcdefgh", 0), Err(McastListError::Empty));
        assert_eq!(
            decode_list(b"abc", 1),
            Err(McastListError::Truncated { count: 1, len: 3 })
        );
        assert!(matches!(
            decode_list(b"", u32::MAX),
            Err(McastListError::Truncated { .. })
        ));
        let mut p = encode_list(&[4]);
        p.extend(4u32.to_le_bytes());
        assert_eq!(decode_list(&p, 2), Err(McastListError::Unordered(4)));
        let mut p = encode_list(&[4]);
        p.extend(2u32.to_le_bytes());
        assert_eq!(decode_list(&p, 2), Err(McastListError::Unordered(2)));
    }
}
