//! Helpers shared by the wire tests: one payload of every kind of item.
#![allow(dead_code)] // each test file uses its own subset

use threadwire_wire::{ByteOrder, Packer, UnpackError, Unpacker};

/// One of everything, at odd alignments: the leading `u8` puts the `f64`
/// slice's elements at offset 6.
pub fn pack_mixed(packer: &mut Packer) {
    packer
        .pack(0xabu8)
        .pack_slice(&[1.25f64, -3.5, 1e300])
        .pack(-7i16)
        .pack_vec(vec![10u32, 20, 30])
        .pack_str("mixed")
        .pack(2.5f32)
        .pack_vec(vec![-1i64; 5])
        .pack_bytes(&[1, 2, 3])
        .pack(u64::MAX)
        .pack_vec(Vec::<u16>::new())
        .pack(1i8);
}

/// Reads what `pack_mixed` wrote, checking each value; stops at the first
/// error, which a whole payload never gives.
pub fn read_mixed(unpacker: &mut Unpacker) -> Result<(), UnpackError> {
    assert_eq!(unpacker.unpack::<u8>()?, 0xab);
    assert_eq!(unpacker.unpack_vec::<f64>()?, [1.25, -3.5, 1e300]);
    assert_eq!(unpacker.unpack::<i16>()?, -7);
    assert_eq!(unpacker.unpack_vec::<u32>()?, [10, 20, 30]);
    assert_eq!(unpacker.unpack_string()?, "mixed");
    assert_eq!(unpacker.unpack::<f32>()?, 2.5);
    assert_eq!(unpacker.unpack_vec::<i64>()?, [-1; 5]);
    assert_eq!(unpacker.unpack_bytes()?, [1, 2, 3]);
    assert_eq!(unpacker.unpack::<u64>()?, u64::MAX);
    assert_eq!(unpacker.unpack_vec::<u16>()?, []);
    assert_eq!(unpacker.unpack::<i8>()?, 1);
    Ok(())
}

/// Writes items by hand, in any byte order: the reference the encoder is
/// checked against, independent of its code.
pub struct HandWriter {
    pub bytes: Vec<u8>,
    big: bool,
}

impl HandWriter {
    pub fn new(order: ByteOrder) -> HandWriter {
        HandWriter {
            bytes: Vec::new(),
            big: order == ByteOrder::Big,
        }
    }

    pub fn put(&mut self, be_bytes: &[u8]) {
        if self.big {
            self.bytes.extend_from_slice(be_bytes);
        } else {
            self.bytes.extend(be_bytes.iter().rev());
        }
    }

    pub fn code(&mut self, code: u8) -> &mut Self {
        self.bytes.push(code);
        self
    }

    pub fn count(&mut self, count: u32) -> &mut Self {
        self.put(&count.to_be_bytes());
        self
    }

    pub fn u32(&mut self, value: u32) -> &mut Self {
        self.put(&value.to_be_bytes());
        self
    }

    pub fn i16(&mut self, value: i16) -> &mut Self {
        self.put(&value.to_be_bytes());
        self
    }

    pub fn f64(&mut self, value: f64) -> &mut Self {
        self.put(&value.to_be_bytes());
        self
    }

    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(bytes);
        self
    }
}
