//! Task ids: a PVM tid names a threadwire address.
//!
//! PVM 3.4 splits a tid into a host field (bits 18–29) and a local field
//! (bits 0–17). Here the host field holds the node number plus one and the
//! local field the thread number plus one, so node 0's first thread is
//! `t40001`, as the first task of a PVM virtual machine usually is, and no
//! tid is zero or negative (those are PVM's error codes and wildcard).
//! A host of the machine is named, as a pvmd is, by its host field with a
//! zero local field: host `h` is `(h + 1) << 18`.

use threadwire::Address;

const HOST_SHIFT: u32 = 18;
const LOCAL_MASK: i32 = (1 << HOST_SHIFT) - 1;
const HOST_MASK: i32 = 0x3ffc_0000;
/// Nodes a tid can name: the host field's 12 bits, less the zero.
pub const MAX_NODES: u32 = 4095;

/// The tid of `address`, or `None` if it has no tid (node or thread too
/// large for PVM's fields).
pub fn of(address: Address) -> Option<i32> {
    if address.node >= MAX_NODES || address.thread >= LOCAL_MASK as u32 {
        return None;
    }
    Some((((address.node + 1) << HOST_SHIFT) | (address.thread + 1)) as i32)
}

/// The address a tid names; `None` for a tid that names no task (zero,
/// negative, a host's, or bits outside the fields).
pub fn address(tid: i32) -> Option<Address> {
    if tid <= 0 || tid & !(HOST_MASK | LOCAL_MASK) != 0 {
        return None;
    }
    let (host, local) = ((tid & HOST_MASK) >> HOST_SHIFT, tid & LOCAL_MASK);
    match host > 0 && local > 0 {
        true => Some(Address::new(host as u32 - 1, local as u32 - 1)),
        false => None,
    }
}

/// The tid that names host `index` of the machine's host table.
pub fn of_host(index: usize) -> i32 {
    ((index as i32 + 1) << HOST_SHIFT) & HOST_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tids_and_addresses_round_trip() {
        assert_eq!(of(Address::new(0, 0)), Some(0x40001));
        assert_eq!(of(Address::new(2, 5)), Some(0xc0006));
        for a in [
            Address::new(0, 0),
            Address::new(7, 3),
            Address::new(4094, 0x3fffe),
        ] {
            assert_eq!(address(of(a).unwrap()), Some(a));
        }
        assert_eq!(of(Address::new(4095, 0)), None);
        for bad in [0, -1, 0x40000, 0x1, 0x4000_0001, -0x40001] {
            assert_eq!(address(bad), None, "{bad:#x}");
        }
        assert_eq!(of_host(0), 0x40000);
    }
}
