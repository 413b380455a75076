//! Addresses of thread endpoints, and what a receive matches on.

use std::fmt;
use std::str::FromStr;

/// A user tag carried by every message.
pub type Tag = u32;

/// A thread endpoint: `(node, thread)`, printed `n2.t5`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    /// The node (process) number, `0..nodes`.
    pub node: u32,
    /// The thread number within the node, dense from 0.
    pub thread: u32,
}

impl Address {
    /// The address of `thread` on `node`.
    pub const fn new(node: u32, thread: u32) -> Address {
        Address { node, thread }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "n{}.t{}", self.node, self.thread)
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A string that is not of the form `n<node>.t<thread>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an address of the form n<node>.t<thread>: {0:?}")]
pub struct ParseAddressError(String);

impl FromStr for Address {
    type Err = ParseAddressError;
    fn from_str(s: &str) -> Result<Address, ParseAddressError> {
        let err = || ParseAddressError(s.to_string());
        let (n, t) = s
            .strip_prefix('n')
            .and_then(|r| r.split_once(".t"))
            .ok_or_else(err)?;
        Ok(Address {
            node: n.parse().map_err(|_| err())?,
            thread: t.parse().map_err(|_| err())?,
        })
    }
}

/// Which senders a receive or probe accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// Any thread of any node.
    Any,
    /// Any thread of this node.
    Node(u32),
    /// Exactly this thread.
    Thread(Address),
}

/// Matches any sender.
pub const ANY_SOURCE: Source = Source::Any;

impl Source {
    /// Whether a message from `from` is accepted.
    #[inline]
    pub fn matches(self, from: Address) -> bool {
        match self {
            Source::Any => true,
            Source::Node(n) => n == from.node,
            Source::Thread(a) => a == from,
        }
    }

    /// The one node this source can come from, if it names one.
    pub fn node(self) -> Option<u32> {
        match self {
            Source::Any => None,
            Source::Node(n) => Some(n),
            Source::Thread(a) => Some(a.node),
        }
    }
}

impl From<Address> for Source {
    fn from(a: Address) -> Source {
        Source::Thread(a)
    }
}

/// Which tags a receive or probe accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TagMatch {
    /// Any tag.
    Any,
    /// Exactly this tag.
    Is(Tag),
}

/// Matches any tag.
pub const ANY_TAG: TagMatch = TagMatch::Any;

impl TagMatch {
    /// Whether `tag` is accepted.
    #[inline]
    pub fn matches(self, tag: Tag) -> bool {
        match self {
            TagMatch::Any => true,
            TagMatch::Is(t) => t == tag,
        }
    }
}

impl From<Tag> for TagMatch {
    fn from(t: Tag) -> TagMatch {
        TagMatch::Is(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_and_parses() {
        let a = Address::new(2, 5);
        assert_eq!(a.to_string(), "n2.t5");
        assert_eq!("n2.t5".parse::<Address>().unwrap(), a);
        assert!("2.5".parse::<Address>().is_err());
        assert!("n2.tx".parse::<Address>().is_err());
    }

    #[test]
    fn matching() {
        let a = Address::new(1, 3);
        assert!(ANY_SOURCE.matches(a));
        assert!(Source::Node(1).matches(a));
        assert!(!Source::Node(0).matches(a));
        assert!(Source::from(a).matches(a));
        assert!(!Source::from(Address::new(1, 4)).matches(a));
        assert!(ANY_TAG.matches(9) && TagMatch::from(9).matches(9) && !TagMatch::Is(8).matches(9));
    }
}
