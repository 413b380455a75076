//! What the unpacker promises for untrusted bytes: opaque payloads are not
//! packed, wrong types and unknown codes are reported, every truncation is
//! an error and never a misread, huge counts are refused before
//! allocating, and random or corrupted payloads never panic.

mod support;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::{pack_mixed, read_mixed, HandWriter};
use threadwire_wire::{
    ByteOrder, Encoding, Format, FormatError, Packer, Payload, UnpackError, Unpacker,
};

#[test]
fn opaque_payloads_are_not_packed() {
    for payload in [
        Payload::from("text"),
        Payload::from(vec![5u8, 1, 0, 0, 0]),
        Payload::from_vec(Vec::new()),
    ] {
        assert_eq!(Unpacker::new(payload).err(), Some(UnpackError::NotPacked));
    }
}

fn rmr(bytes: Vec<u8>) -> Unpacker {
    let format = Format {
        encoding: Some(Encoding::ReceiverMakesRight),
        order: ByteOrder::NATIVE,
    };
    Payload::from_wire(format, bytes).unpack().unwrap()
}

#[test]
fn reading_the_wrong_type_is_a_type_mismatch() {
    let mut packer = Packer::new(Encoding::Raw);
    packer.pack(1u32).pack_slice(&[1u32]).pack_str("s");
    let mut unpacker = packer.finish().unpack().unwrap();

    let mismatch = |expected, found| UnpackError::TypeMismatch { expected, found };
    assert_eq!(unpacker.unpack::<i32>(), Err(mismatch("i32", "u32")));
    assert_eq!(unpacker.unpack_vec::<u32>(), Err(mismatch("[u32]", "u32")));
    assert_eq!(unpacker.unpack_string(), Err(mismatch("string", "u32")));
    assert_eq!(unpacker.unpack::<u32>(), Ok(1));
    assert_eq!(unpacker.unpack::<u32>(), Err(mismatch("u32", "[u32]")));
    let mut out = [0u64; 1];
    assert_eq!(
        unpacker.unpack_into(&mut out),
        Err(mismatch("[u64]", "[u32]"))
    );
    assert_eq!(unpacker.unpack_vec::<u32>(), Ok(vec![1]));
    assert_eq!(unpacker.unpack_bytes(), Err(mismatch("bytes", "string")));
    assert_eq!(unpacker.unpack_string().as_deref(), Ok("s"));
}

#[test]
fn unknown_codes_are_reported() {
    for code in [0u8, 13, 0x80, 0x8b, 0xff] {
        let mut unpacker = rmr(vec![code, 0, 0, 0, 0]);
        assert_eq!(
            unpacker.unpack::<u8>(),
            Err(UnpackError::UnknownCode {
                expected: "u8",
                code
            })
        );
    }
}

#[test]
fn every_truncation_is_reported_not_misread() {
    for encoding in Encoding::ALL {
        let mut packer = Packer::new(encoding);
        pack_mixed(&mut packer);
        let payload = packer.finish();
        let bytes = payload.to_vec();
        for cut in 0..bytes.len() {
            let mut unpacker = Payload::from_wire(payload.format(), bytes[..cut].to_vec())
                .unpack()
                .unwrap();
            let outcome = read_mixed(&mut unpacker);
            assert!(
                matches!(outcome, Err(UnpackError::Truncated { .. })),
                "{encoding:?} cut at {cut}: {outcome:?}"
            );
        }
    }
}

#[test]
fn truncated_items_give_truncated() {
    let mut unpacker = rmr(vec![7, 1, 2, 3]);
    assert_eq!(
        unpacker.unpack::<u64>(),
        Err(UnpackError::Truncated {
            needed: 8,
            available: 3
        })
    );
    let mut unpacker = rmr(vec![0x85, 1, 0]);
    assert_eq!(
        unpacker.unpack_vec::<u32>(),
        Err(UnpackError::Truncated {
            needed: 4,
            available: 2
        })
    );
    let mut unpacker = rmr(Vec::new());
    assert_eq!(
        unpacker.unpack_string(),
        Err(UnpackError::Truncated {
            needed: 1,
            available: 0
        })
    );
}

#[test]
fn corrupt_huge_counts_are_truncated_before_allocating() {
    let huge = u32::MAX;
    let with_count = |code: u8| {
        let mut w = HandWriter::new(ByteOrder::NATIVE);
        w.code(code).count(huge).raw(&[0; 16]);
        rmr(w.bytes)
    };
    let truncated = |element_size: usize| UnpackError::Truncated {
        needed: huge as usize * element_size,
        available: 16,
    };
    assert_eq!(with_count(0x8a).unpack_vec::<f64>(), Err(truncated(8)));
    assert_eq!(with_count(0x81).unpack_vec::<u8>(), Err(truncated(1)));
    assert_eq!(with_count(11).unpack_string(), Err(truncated(1)));
    assert_eq!(with_count(12).unpack_bytes(), Err(truncated(1)));
    let mut out = [0u32; 4];
    assert_eq!(
        with_count(0x85).unpack_into(&mut out),
        Err(UnpackError::LengthMismatch {
            expected: 4,
            found: huge as usize
        })
    );
}

#[test]
fn unpack_into_requires_the_exact_length() {
    let mut packer = Packer::new(Encoding::Portable);
    packer.pack_slice(&[1u16, 2, 3]);
    let mut unpacker = packer.finish().unpack().unwrap();
    let mut long = [9u16; 4];
    assert_eq!(
        unpacker.unpack_into(&mut long),
        Err(UnpackError::LengthMismatch {
            expected: 4,
            found: 3
        })
    );
    assert_eq!(long, [9; 4]);
    let mut exact = [0u16; 3];
    unpacker.unpack_into(&mut exact).unwrap();
    assert_eq!(exact, [1, 2, 3]);
}

#[test]
fn invalid_utf8_is_refused() {
    let mut w = HandWriter::new(ByteOrder::NATIVE);
    w.code(11).count(2).raw(&[0xc3, 0x28]);
    let mut unpacker = rmr(w.bytes);
    assert_eq!(unpacker.unpack_string(), Err(UnpackError::InvalidUtf8));
    assert_eq!(unpacker.remaining(), 7);
}

#[test]
fn errors_print_what_went_wrong() {
    let error = UnpackError::Truncated {
        needed: 8,
        available: 3,
    };
    assert_eq!(error.to_string(), "item needs 8 bytes, only 3 remain");
    let error = Format::from_byte(0x07).unwrap_err();
    assert_eq!(
        error.to_string(),
        "format byte 0x07 names unknown encoding 7"
    );
}

#[test]
fn format_bytes_round_trip_and_bad_ones_are_refused() {
    for byte in 0..=u8::MAX {
        let reserved = byte & 0b0111_1000 != 0;
        let encoding = byte & 0b111;
        match Format::from_byte(byte) {
            Ok(format) => {
                assert!(!reserved && encoding <= 4, "{byte:#04x} accepted");
                assert_eq!(format.to_byte(), byte);
                let big = byte & 0x80 != 0;
                assert_eq!(format.order == ByteOrder::Big, big);
                assert_eq!(format.encoding.is_none(), encoding == 0);
            }
            Err(FormatError::ReservedBits { byte: b }) => {
                assert!(reserved);
                assert_eq!(b, byte);
            }
            Err(FormatError::UnknownEncoding { byte: b, value }) => {
                assert!(!reserved && encoding > 4);
                assert_eq!((b, value), (byte, encoding));
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(Format::OPAQUE.encoding, None);
    assert_eq!(Format::OPAQUE.order, ByteOrder::NATIVE);
    let portable = Format {
        encoding: Some(Encoding::Portable),
        order: ByteOrder::Big,
    };
    assert_eq!(portable.to_byte(), 0x82);
}

/// Applies one randomly chosen read; returns whether it succeeded.
fn random_read(unpacker: &mut Unpacker, rng: &mut StdRng) -> bool {
    match rng.gen_range(0..16usize) {
        0 => unpacker.unpack::<u8>().is_ok(),
        1 => unpacker.unpack::<i16>().is_ok(),
        2 => unpacker.unpack::<u32>().is_ok(),
        3 => unpacker.unpack::<f64>().is_ok(),
        4 => unpacker.unpack_vec::<u8>().is_ok(),
        5 => unpacker.unpack_vec::<i32>().is_ok(),
        6 => unpacker.unpack_vec::<f64>().is_ok(),
        7 => unpacker.unpack_vec::<u16>().is_ok(),
        8 => unpacker.unpack_string().is_ok(),
        9 => unpacker.unpack_bytes().is_ok(),
        10 => unpacker.unpack::<i64>().is_ok(),
        11 => unpacker.unpack::<f32>().is_ok(),
        n => {
            let mut out = vec![0u32; n - 12];
            unpacker.unpack_into(&mut out).is_ok()
        }
    }
}

fn read_randomly(payload: Payload, rng: &mut StdRng) {
    let Ok(mut unpacker) = payload.unpack() else {
        return;
    };
    for _ in 0..32 {
        let before = unpacker.remaining();
        if !random_read(&mut unpacker, rng) {
            assert_eq!(unpacker.remaining(), before, "a failed read consumed bytes");
        }
        if unpacker.is_done() {
            break;
        }
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x7477_6972_6500);
    for _ in 0..4_000 {
        let len = rng.gen_range(0..48);
        // Mostly plausible codes and small counts, so reads get past the
        // first byte; sometimes anything at all.
        let bytes: Vec<u8> = (0..len)
            .map(|_| match rng.gen_range(0..4) {
                0 => rng.gen_range(0..=12),
                1 => 0x80 | rng.gen_range(1..=10),
                2 => rng.gen_range(0..4),
                _ => rng.gen(),
            })
            .collect();
        for encoding in Encoding::ALL {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let format = Format {
                    encoding: Some(encoding),
                    order,
                };
                read_randomly(Payload::from_wire(format, bytes.clone()), &mut rng);
            }
        }
    }
}

#[test]
fn corrupted_payloads_never_panic() {
    let mut rng = StdRng::seed_from_u64(42);
    for encoding in Encoding::ALL {
        let mut packer = Packer::new(encoding);
        pack_mixed(&mut packer);
        let payload = packer.finish();
        let bytes = payload.to_vec();
        for _ in 0..5_000 {
            let mut corrupt = bytes.clone();
            for _ in 0..rng.gen_range(1..4) {
                let at = rng.gen_range(0..corrupt.len());
                corrupt[at] = rng.gen();
            }
            corrupt.truncate(rng.gen_range(0..=corrupt.len()));
            read_randomly(Payload::from_wire(payload.format(), corrupt), &mut rng);
        }
    }
}
