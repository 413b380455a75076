//! The one hash of a name every node computes alike: FNV-1a (64-bit) of
//! its UTF-8 bytes. Named groups take their home node from it, active
//! message handlers their id, so that every node agrees without asking.

/// FNV-1a (64-bit) of `name`'s UTF-8 bytes.
pub(crate) fn name_hash(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in name.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_values() {
        // The published FNV-1a test vectors.
        assert_eq!(super::name_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::name_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
