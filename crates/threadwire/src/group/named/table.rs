//! The state of the names a node is home to, and the one function that
//! changes it: every request, local or from the network, goes through
//! [`HomeTable::apply`] under one lock, so the home serializes the joins,
//! leaves and freezes of each name and every later request sees them.

use super::protocol::{Op, Reply, Status};
use crate::{lock, Address};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

/// The names homed on this node.
#[derive(Default)]
pub(crate) struct HomeTable {
    names: Mutex<HashMap<String, Name>>,
}

#[derive(Default)]
struct Name {
    /// Members by instance; the lowest free instance is reused on join.
    members: BTreeMap<u32, Address>,
    /// Freezes under way: the membership each captured, and who has not
    /// collected it yet. A member takes the first one it is pending in.
    freezes: Vec<Freeze>,
}

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

impl HomeTable {
    /// Applies one request from `from` to `name`.
    pub(crate) fn apply(&self, op: Op, name: &str, from: Address) -> Reply {
        let mut names = lock(&self.names);
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
    /// name.
    pub(crate) fn remove_node(&self, node: u32) {
        let mut names = lock(&self.names);
        for state in names.values_mut() {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(n: u32, t: u32) -> Address {
        Address::new(n, t)
    }

    #[test]
    fn instances_are_the_lowest_free() {
        let t = HomeTable::default();
        for (k, m) in [a(0, 0), a(1, 0), a(0, 1)].into_iter().enumerate() {
            assert_eq!(t.apply(Op::Join, "g", m), Ok(vec![k as u32]));
        }
        assert_eq!(t.apply(Op::Join, "g", a(1, 0)), Err((Status::AlreadyMember, 1)));
        assert_eq!(t.apply(Op::Leave, "g", a(1, 0)), Ok(vec![]));
        assert_eq!(t.apply(Op::Leave, "g", a(1, 0)), Err((Status::NotMember, 0)));
        assert_eq!(t.apply(Op::Size, "g", a(9, 9)), Ok(vec![2]));
        assert_eq!(t.apply(Op::Join, "g", a(2, 5)), Ok(vec![1]));
        assert_eq!(t.apply(Op::Join, "g", a(2, 6)), Ok(vec![3]));
        assert_eq!(t.apply(Op::AddressOf(1), "g", a(0, 0)), Ok(vec![2, 5]));
        assert_eq!(t.apply(Op::InstanceOf(a(0, 1)), "g", a(0, 0)), Ok(vec![2]));
        assert_eq!(t.apply(Op::AddressOf(7), "g", a(0, 0)), Err((Status::NoSuchInstance, 7)));
        assert_eq!(t.apply(Op::Size, "h", a(0, 0)), Err((Status::UnknownName, 0)));
        t.remove_node(2);
        assert_eq!(t.apply(Op::Members, "g", a(0, 0)), Ok(vec![0, 0, 0, 2, 0, 1]));
        t.remove_node(0);
        assert_eq!(t.apply(Op::Size, "g", a(0, 0)), Err((Status::UnknownName, 0)));
    }

    #[test]
    fn every_member_collects_the_same_freeze() {
        let t = HomeTable::default();
        for m in [a(0, 0), a(1, 0), a(1, 1)] {
            t.apply(Op::Join, "g", m).unwrap();
        }
        let first = t.apply(Op::Freeze, "g", a(1, 0)).unwrap();
        assert_eq!(first, vec![0, 0, 1, 0, 1, 1]);
        t.apply(Op::Join, "g", a(2, 0)).unwrap();
        t.apply(Op::Leave, "g", a(1, 1)).unwrap();
        assert_eq!(t.apply(Op::Freeze, "g", a(0, 0)).unwrap(), first);
        // Everyone pending has collected it (a(1, 1) left): the next freeze
        // captures the membership anew.
        assert_eq!(
            t.apply(Op::Freeze, "g", a(2, 0)).unwrap(),
            vec![0, 0, 1, 0, 2, 0]
        );
        assert_eq!(t.apply(Op::Freeze, "g", a(9, 0)), Err((Status::NotMember, 0)));
    }
}
