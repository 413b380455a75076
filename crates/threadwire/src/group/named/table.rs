//! The state of the names a node serves or keeps a copy of, and the
//! functions that change it: every request goes through [`Table::apply`]
//! (at the name's home, under the home's lock, and in the same order at
//! its backup), so the joins, leaves and freezes of each name are
//! serialized and every later request sees them. A snapshot of the
//! table travels as bytes ([`Table::encode`], [`Table::decode`]).

use super::protocol::{DecodeError, Op, Reply, Status};
use crate::Address;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Names and their states, and each thread's last change with its reply
/// (so that a change retried at a new home after a loss is applied once).
#[derive(Default, Clone, Debug, PartialEq)]
pub(crate) struct Table {
    names: HashMap<String, Name>,
    /// Per thread: its last change's request number and reply.
    last: HashMap<Address, (u32, Reply)>,
}

#[derive(Default, Clone, Debug, PartialEq)]
struct Name {
    /// Members by instance; the lowest free instance is reused on join.
    members: BTreeMap<u32, Address>,
    /// Freezes under way: the membership each captured, and who has not
    /// collected it yet. A member takes the first one it is pending in.
    freezes: Vec<Freeze>,
}

#[derive(Clone, Debug, PartialEq)]
struct Freeze {
    members: Vec<Address>,
    pending: HashSet<Address>,
}

impl Name {
    fn instance_of(&self, a: Address) -> Option<u32> {
        self.members.iter().find(|(_, &m)| m == a).map(|(&i, _)| i)
    }

    /// Forgets `a`: its instance becomes free, and it collects no freeze.
    fn remove(&mut self, a: Address) -> bool {
        let Some(i) = self.instance_of(a) else {
            return false;
        };
        self.members.remove(&i);
        for f in &mut self.freezes {
            f.pending.remove(&a);
        }
        self.freezes.retain(|f| !f.pending.is_empty());
        true
    }
}

/// Whether `op` changes a name (and so is applied once per request).
pub(crate) fn changes(op: Op) -> bool {
    matches!(op, Op::Join | Op::Leave | Op::Freeze)
}

impl Table {
    /// Applies request `id` of thread `from` to `name`. A change the same
    /// thread made under the same number is not applied again: its reply
    /// is given again (the thread retried it at a new home).
    pub(crate) fn apply(&mut self, from: Address, id: u32, op: Op, name: &str) -> Reply {
        if !changes(op) {
            return self.apply_once(op, name, from);
        }
        if let Some((last, reply)) = self.last.get(&from) {
            if *last == id {
                return reply.clone();
            }
        }
        let reply = self.apply_once(op, name, from);
        self.last.insert(from, (id, reply.clone()));
        reply
    }

    /// Whether it holds nothing: no name, no request's record.
    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_empty() && self.last.is_empty()
    }

    /// Keeps only the names `keep` says to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.names.retain(|name, _| keep(name));
    }

    /// Takes every name of `other`, replacing its own, and each thread's
    /// record where it is newer (a thread's request numbers grow, modulo
    /// 2³²).
    pub(crate) fn merge(&mut self, other: Table) {
        self.names.extend(other.names);
        for (a, (id, reply)) in other.last {
            let newer = self
                .last
                .get(&a)
                .is_none_or(|&(mine, _)| (id.wrapping_sub(mine) as i32) > 0);
            if newer {
                self.last.insert(a, (id, reply));
            }
        }
    }

    /// Applies one request from `from` to `name`.
    fn apply_once(&mut self, op: Op, name: &str, from: Address) -> Reply {
        let names = &mut self.names;
        if let Op::Join = op {
            let state = names.entry(name.to_owned()).or_default();
            if let Some(i) = state.instance_of(from) {
                return Err((Status::AlreadyMember, i));
            }
            let free = (0..).zip(state.members.keys()).find(|(i, k)| i != *k);
            let instance = free.map_or(state.members.len() as u32, |(i, _)| i);
            state.members.insert(instance, from);
            return Ok(vec![instance]);
        }
        let Some(state) = names.get_mut(name) else {
            return Err((Status::UnknownName, 0));
        };
        match op {
            Op::Join => unreachable!("handled above"),
            Op::Leave => {
                if !state.remove(from) {
                    return Err((Status::NotMember, 0));
                }
                if state.members.is_empty() {
                    names.remove(name);
                }
                Ok(Vec::new())
            }
            Op::Size => Ok(vec![state.members.len() as u32]),
            Op::Members => Ok(state
                .members
                .iter()
                .flat_map(|(&i, a)| [i, a.node, a.thread])
                .collect()),
            Op::InstanceOf(a) => state
                .instance_of(a)
                .map(|i| vec![i])
                .ok_or((Status::NotMember, 0)),
            Op::AddressOf(i) => state
                .members
                .get(&i)
                .map(|a| vec![a.node, a.thread])
                .ok_or((Status::NoSuchInstance, i)),
            Op::Freeze => {
                if state.instance_of(from).is_none() {
                    return Err((Status::NotMember, 0));
                }
                let members = match state.freezes.iter().position(|f| f.pending.contains(&from)) {
                    Some(k) => {
                        let f = &mut state.freezes[k];
                        f.pending.remove(&from);
                        let members = f.members.clone();
                        if f.pending.is_empty() {
                            state.freezes.remove(k);
                        }
                        members
                    }
                    None => {
                        let members: Vec<Address> = state.members.values().copied().collect();
                        let pending: HashSet<Address> =
                            members.iter().copied().filter(|&a| a != from).collect();
                        if !pending.is_empty() {
                            state.freezes.push(Freeze {
                                members: members.clone(),
                                pending,
                            });
                        }
                        members
                    }
                };
                Ok(members.iter().flat_map(|a| [a.node, a.thread]).collect())
            }
        }
    }

    /// Node `node` is gone (finished or failed): its threads leave every
    /// name of `names` (those the caller serves).
    pub(crate) fn remove_node(&mut self, node: u32, mut names_of: impl FnMut(&str) -> bool) {
        self.last.retain(|a, _| a.node != node);
        let names = &mut self.names;
        for (_, state) in names.iter_mut().filter(|(n, _)| names_of(n)) {
            let gone: Vec<Address> = state
                .members
                .values()
                .copied()
                .filter(|a| a.node == node)
                .collect();
            for a in gone {
                state.remove(a);
            }
        }
        names.retain(|_, s| !s.members.is_empty());
    }

    /// The table as bytes: names (length-prefixed UTF-8) with their
    /// members and freezes, then the threads' last changes, all as `u32`
    /// words, little-endian, after the name bytes.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        fn put(out: &mut Vec<u8>, x: usize) {
            out.extend((x as u32).to_le_bytes());
        }
        fn put_address(out: &mut Vec<u8>, a: Address) {
            out.extend(a.node.to_le_bytes());
            out.extend(a.thread.to_le_bytes());
        }
        put(out, self.names.len());
        for (name, state) in &self.names {
            put(out, name.len());
            out.extend(name.as_bytes());
            put(out, state.members.len());
            for (&i, &a) in &state.members {
                put(out, i as usize);
                put_address(out, a);
            }
            put(out, state.freezes.len());
            for f in &state.freezes {
                put(out, f.members.len());
                for &a in &f.members {
                    put_address(out, a);
                }
                put(out, f.pending.len());
                for &a in &f.pending {
                    put_address(out, a);
                }
            }
        }
        put(out, self.last.len());
        for (&a, (id, reply)) in &self.last {
            put_address(out, a);
            put(out, *id as usize);
            let bytes = super::protocol::encode_reply(reply);
            put(out, bytes.len());
            out.extend(bytes);
        }
    }

    /// A table from [`encode`](Self::encode)'s bytes, which must be used
    /// up exactly.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Table, DecodeError> {
        let mut r = Reader { bytes, at: 0 };
        let mut t = Table::default();
        for _ in 0..r.count()? {
            let len = r.word()? as usize;
            if len > super::protocol::MAX_NAME {
                return Err(DecodeError::Name);
            }
            let name = std::str::from_utf8(r.take(len)?).map_err(|_| DecodeError::Name)?;
            let mut state = Name::default();
            for _ in 0..r.count()? {
                let i = r.word()?;
                state.members.insert(i, r.address()?);
            }
            for _ in 0..r.count()? {
                let members = (0..r.count()?).map(|_| r.address()).collect::<Result<_, _>>()?;
                let pending = (0..r.count()?).map(|_| r.address()).collect::<Result<_, _>>()?;
                state.freezes.push(Freeze { members, pending });
            }
            t.names.insert(name.to_owned(), state);
        }
        for _ in 0..r.count()? {
            let a = r.address()?;
            let id = r.word()?;
            let len = r.word()? as usize;
            let reply = super::protocol::decode_reply(r.take(len)?)?;
            t.last.insert(a, (id, reply));
        }
        if r.at != bytes.len() {
            return Err(DecodeError::Length(bytes.len()));
        }
        Ok(t)
    }
}

/// Reads a snapshot's fields, each checked against the bytes left.
struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: usize) -> Result<&'b [u8], DecodeError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or(DecodeError::Length(self.bytes.len()))?;
        let b = &self.bytes[self.at..end];
        self.at = end;
        Ok(b)
    }

    fn word(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A count of items of at least 4 bytes each: never more than the
    /// bytes left could hold, so that no count allocates beyond them.
    fn count(&mut self) -> Result<usize, DecodeError> {
        let n = self.word()? as usize;
        if n > (self.bytes.len() - self.at) / 4 {
            return Err(DecodeError::Length(self.bytes.len()));
        }
        Ok(n)
    }

    fn address(&mut self) -> Result<Address, DecodeError> {
        Ok(Address::new(self.word()?, self.word()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(n: u32, t: u32) -> Address {
        Address::new(n, t)
    }

    /// Applies as a fresh request each time.
    fn apply(t: &mut Table, op: Op, name: &str, from: Address) -> Reply {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        t.apply(from, NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed), op, name)
    }

    #[test]
    fn instances_are_the_lowest_free() {
        let t = &mut Table::default();
        for (k, m) in [a(0, 0), a(1, 0), a(0, 1)].into_iter().enumerate() {
            assert_eq!(apply(t, Op::Join, "g", m), Ok(vec![k as u32]));
        }
        assert_eq!(apply(t, Op::Join, "g", a(1, 0)), Err((Status::AlreadyMember, 1)));
        assert_eq!(apply(t, Op::Leave, "g", a(1, 0)), Ok(vec![]));
        assert_eq!(apply(t, Op::Leave, "g", a(1, 0)), Err((Status::NotMember, 0)));
        assert_eq!(apply(t, Op::Size, "g", a(9, 9)), Ok(vec![2]));
        assert_eq!(apply(t, Op::Join, "g", a(2, 5)), Ok(vec![1]));
        assert_eq!(apply(t, Op::Join, "g", a(2, 6)), Ok(vec![3]));
        assert_eq!(apply(t, Op::AddressOf(1), "g", a(0, 0)), Ok(vec![2, 5]));
        assert_eq!(apply(t, Op::InstanceOf(a(0, 1)), "g", a(0, 0)), Ok(vec![2]));
        assert_eq!(apply(t, Op::AddressOf(7), "g", a(0, 0)), Err((Status::NoSuchInstance, 7)));
        assert_eq!(apply(t, Op::Size, "h", a(0, 0)), Err((Status::UnknownName, 0)));
        t.remove_node(2, |_| true);
        assert_eq!(apply(t, Op::Members, "g", a(0, 0)), Ok(vec![0, 0, 0, 2, 0, 1]));
        t.remove_node(0, |_| true);
        assert_eq!(apply(t, Op::Size, "g", a(0, 0)), Err((Status::UnknownName, 0)));
    }

    #[test]
    fn every_member_collects_the_same_freeze() {
        let t = &mut Table::default();
        for m in [a(0, 0), a(1, 0), a(1, 1)] {
            apply(t, Op::Join, "g", m).unwrap();
        }
        let first = apply(t, Op::Freeze, "g", a(1, 0)).unwrap();
        assert_eq!(first, vec![0, 0, 1, 0, 1, 1]);
        apply(t, Op::Join, "g", a(2, 0)).unwrap();
        apply(t, Op::Leave, "g", a(1, 1)).unwrap();
        assert_eq!(apply(t, Op::Freeze, "g", a(0, 0)).unwrap(), first);
        // Everyone pending has collected it (a(1, 1) left): the next freeze
        // captures the membership anew.
        assert_eq!(
            apply(t, Op::Freeze, "g", a(2, 0)).unwrap(),
            vec![0, 0, 1, 0, 2, 0]
        );
        assert_eq!(apply(t, Op::Freeze, "g", a(9, 0)), Err((Status::NotMember, 0)));
    }

    #[test]
    fn a_retried_change_is_applied_once() {
        let t = &mut Table::default();
        assert_eq!(t.apply(a(1, 0), 7, Op::Join, "g"), Ok(vec![0]));
        assert_eq!(t.apply(a(1, 0), 7, Op::Join, "g"), Ok(vec![0]));
        assert_eq!(t.apply(a(1, 0), 8, Op::Join, "g"), Err((Status::AlreadyMember, 0)));
        assert_eq!(t.apply(a(1, 0), 9, Op::Leave, "g"), Ok(vec![]));
        assert_eq!(t.apply(a(1, 0), 9, Op::Leave, "g"), Ok(vec![]));
    }

    #[test]
    fn snapshots_round_trip_and_refuse_bad_bytes() {
        let t = &mut Table::default();
        for m in [a(0, 0), a(1, 0), a(1, 1)] {
            apply(t, Op::Join, "g", m).unwrap();
        }
        apply(t, Op::Join, "wörk", a(2, 3)).unwrap();
        apply(t, Op::Freeze, "g", a(1, 0)).unwrap();
        let mut bytes = Vec::new();
        t.encode(&mut bytes);
        assert_eq!(Table::decode(&bytes).as_ref(), Ok(&*t));
        for cut in 0..bytes.len() {
            assert!(Table::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(Table::decode(&long).is_err());
        assert!(Table::decode(&[0xff; 8]).is_err());
    }
}
