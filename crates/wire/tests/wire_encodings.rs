//! Pack/unpack under all four encodings: round trips, the wire layout itself
//! (a hand-computed test vector), foreign byte orders and zero-copy in-place
//! vectors; what is promised for untrusted bytes is in `wire_untrusted.rs`.

mod support;

use std::fmt::Debug;
use support::{pack_mixed, read_mixed, HandWriter};
use threadwire_wire::{
    ByteOrder, Encoding, Format, Packer, Payload, Scalar, UnpackError, Unpacker,
};

const FOREIGN: ByteOrder = ByteOrder::NATIVE.opposite();

/// Compares by bytes so that NaN round trips count as equal.
fn same_bits<T: Scalar>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

/// Packs `values` one by one, as a slice, as a vec, and reads them all back.
fn round_trip<T: Scalar + Debug>(encoding: Encoding, values: &[T]) {
    let mut packer = Packer::new(encoding);
    for &value in values {
        packer.pack(value);
    }
    packer
        .pack_slice(values)
        .pack_vec(values.to_vec())
        .pack_slice(values);
    let payload = packer.finish();
    assert_eq!(payload.format().encoding, Some(encoding));

    let mut unpacker = payload.unpack().unwrap();
    let scalars: Vec<T> = values
        .iter()
        .map(|_| unpacker.unpack::<T>().unwrap())
        .collect();
    assert!(same_bits(&scalars, values), "{encoding:?} {}", T::NAME);
    let from_slice = unpacker.unpack_vec::<T>().unwrap();
    assert!(
        same_bits(&from_slice, values),
        "{encoding:?} {}",
        T::SLICE_NAME
    );
    let from_vec = unpacker.unpack_vec::<T>().unwrap();
    assert!(
        same_bits(&from_vec, values),
        "{encoding:?} {}",
        T::SLICE_NAME
    );
    let mut into = vec![T::zeroed(); values.len()];
    unpacker.unpack_into(&mut into).unwrap();
    assert!(same_bits(&into, values), "{encoding:?} {}", T::SLICE_NAME);
    assert!(unpacker.is_done());
}

/// Round trips of `values` and of their empty, one-element and long slices.
fn round_trip_all_lengths<T: Scalar + Debug>(values: &[T]) {
    let long: Vec<T> = values.iter().copied().cycle().take(1000).collect();
    for encoding in Encoding::ALL {
        round_trip::<T>(encoding, &[]);
        round_trip(encoding, &values[..1]);
        round_trip(encoding, values);
        round_trip(encoding, &long);
    }
}

#[test]
fn every_scalar_type_round_trips_in_every_encoding() {
    round_trip_all_lengths(&[0u8, 1, 0x7f, 0x80, u8::MAX]);
    round_trip_all_lengths(&[0i8, -1, i8::MIN, i8::MAX]);
    round_trip_all_lengths(&[0u16, 1, 0x1234, u16::MAX]);
    round_trip_all_lengths(&[0i16, -2, i16::MIN, i16::MAX]);
    round_trip_all_lengths(&[0u32, 1, 0x0102_0304, u32::MAX]);
    round_trip_all_lengths(&[0i32, -3, i32::MIN, i32::MAX]);
    round_trip_all_lengths(&[0u64, 1, 0x0102_0304_0506_0708, u64::MAX]);
    round_trip_all_lengths(&[0i64, -4, i64::MIN, i64::MAX]);
    round_trip_all_lengths(&[
        0.0f32,
        -0.0,
        1.5,
        f32::MIN_POSITIVE / 2.0,
        f32::INFINITY,
        f32::NAN,
    ]);
    round_trip_all_lengths(&[
        0.0f64,
        -0.0,
        -2.25,
        f64::MIN_POSITIVE / 2.0,
        f64::NEG_INFINITY,
        f64::NAN,
    ]);
}

#[test]
fn strings_and_bytes_round_trip_in_every_encoding() {
    let texts = ["", "a", "hello, world", "grüße, 日本, 🦀"];
    let all_bytes: Vec<u8> = (0..=255).collect();
    let byte_strings: [&[u8]; 3] = [&[], &[0], &all_bytes];
    for encoding in Encoding::ALL {
        let mut packer = Packer::new(encoding);
        for text in texts {
            packer.pack_str(text);
        }
        for bytes in byte_strings {
            packer.pack_bytes(bytes);
        }
        let mut unpacker = packer.finish().unpack().unwrap();
        for text in texts {
            assert_eq!(unpacker.unpack_string().unwrap(), text, "{encoding:?}");
        }
        for bytes in byte_strings {
            assert_eq!(unpacker.unpack_bytes().unwrap(), bytes, "{encoding:?}");
        }
        assert!(unpacker.is_done());
    }
}

fn check_mixed(unpacker: &mut Unpacker) {
    read_mixed(unpacker).unwrap();
    assert!(unpacker.is_done());
    assert_eq!(unpacker.remaining(), 0);
}

#[test]
fn mixed_sequences_round_trip_in_every_encoding() {
    for encoding in Encoding::ALL {
        let mut packer = Packer::new(encoding);
        pack_mixed(&mut packer);
        check_mixed(&mut packer.finish().unpack().unwrap());
    }
}

#[test]
fn mixed_sequences_survive_the_network() {
    // What a transport does: write the segments, read one buffer back.
    for encoding in Encoding::ALL {
        let mut packer = Packer::new(encoding);
        pack_mixed(&mut packer);
        let payload = packer.finish();
        let format = Format::from_byte(payload.format().to_byte()).unwrap();
        let written: Vec<u8> = payload.segments().flatten().copied().collect();
        assert_eq!(written.len(), payload.len());
        assert_eq!(written, payload.to_vec());
        let received = Payload::from_wire(format, written);
        check_mixed(&mut received.unpack().unwrap());
    }
}

#[test]
fn unaligned_values_are_read_correctly() {
    for encoding in Encoding::ALL {
        for lead in 0..8 {
            let mut packer = Packer::new(encoding);
            for _ in 0..lead {
                packer.pack(0u8);
            }
            packer.pack_slice(&[0.1f64, 0.2, 0.3]).pack(u64::MAX - 1);
            let mut unpacker = packer.finish().unpack().unwrap();
            for _ in 0..lead {
                assert_eq!(unpacker.unpack::<u8>().unwrap(), 0);
            }
            assert_eq!(unpacker.unpack_vec::<f64>().unwrap(), [0.1, 0.2, 0.3]);
            assert_eq!(unpacker.unpack::<u64>().unwrap(), u64::MAX - 1);
        }
    }
}

#[test]
fn in_place_vectors_come_back_without_a_copy() {
    let first = vec![1.0f64; 4096];
    let second: Vec<i32> = (0..100).collect();
    let (first_ptr, second_ptr) = (first.as_ptr(), second.as_ptr());

    let mut packer = Packer::new(Encoding::InPlace);
    packer
        .pack(3u8)
        .pack_vec(first)
        .pack_vec(second)
        .pack_str("after");
    let mut unpacker = packer.finish().unpack().unwrap();

    assert_eq!(unpacker.unpack::<u8>().unwrap(), 3);
    let first = unpacker.unpack_vec::<f64>().unwrap();
    assert_eq!(first.as_ptr(), first_ptr);
    assert_eq!(first, vec![1.0; 4096]);
    let second = unpacker.unpack_vec::<i32>().unwrap();
    assert_eq!(second.as_ptr(), second_ptr);
    assert_eq!(second, (0..100).collect::<Vec<_>>());
    assert_eq!(unpacker.unpack_string().unwrap(), "after");
    assert!(unpacker.is_done());
}

#[test]
fn in_place_vector_read_with_the_wrong_type_stays_available() {
    let values = vec![5u32, 6];
    let pointer = values.as_ptr();
    let mut packer = Packer::new(Encoding::InPlace);
    packer.pack_vec(values);
    let mut unpacker = packer.finish().unpack().unwrap();
    assert_eq!(
        unpacker.unpack_vec::<i32>(),
        Err(UnpackError::TypeMismatch {
            expected: "[i32]",
            found: "[u32]"
        })
    );
    let values = unpacker.unpack_vec::<u32>().unwrap();
    assert_eq!(values.as_ptr(), pointer);
}

/// `0x01020304u32, [1.5f64, -2.25], -2i16, "hé"` written by hand in `order`.
fn sample_by_hand(order: ByteOrder) -> Vec<u8> {
    let mut w = HandWriter::new(order);
    w.code(5).u32(0x0102_0304);
    w.code(0x80 | 10).count(2).f64(1.5).f64(-2.25);
    w.code(4).i16(-2);
    w.code(11).count(3).raw("hé".as_bytes());
    w.bytes
}

fn check_sample(unpacker: &mut Unpacker) {
    assert_eq!(unpacker.unpack::<u32>().unwrap(), 0x0102_0304);
    assert_eq!(unpacker.unpack_vec::<f64>().unwrap(), [1.5, -2.25]);
    assert_eq!(unpacker.unpack::<i16>().unwrap(), -2);
    assert_eq!(unpacker.unpack_string().unwrap(), "hé");
    assert!(unpacker.is_done());
}

fn pack_sample(encoding: Encoding) -> Payload {
    let mut packer = Packer::new(encoding);
    packer
        .pack(0x0102_0304u32)
        .pack_vec(vec![1.5f64, -2.25])
        .pack(-2i16)
        .pack_str("hé");
    packer.finish()
}

#[test]
fn portable_bytes_match_the_test_vector() {
    let payload = pack_sample(Encoding::Portable);
    assert_eq!(payload.format().order, ByteOrder::Big);
    let expected: &[u8] = &[
        0x05, 0x01, 0x02, 0x03, 0x04, // u32 0x01020304
        0x8a, 0x00, 0x00, 0x00, 0x02, // [f64], 2 elements
        0x3f, 0xf8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 1.5
        0xc0, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // -2.25
        0x04, 0xff, 0xfe, // i16 -2
        0x0b, 0x00, 0x00, 0x00, 0x03, b'h', 0xc3, 0xa9, // "hé"
    ];
    assert_eq!(payload.to_vec(), expected);
    assert_eq!(sample_by_hand(ByteOrder::Big), expected);
}

#[test]
fn native_encodings_write_native_bytes() {
    for encoding in [
        Encoding::Raw,
        Encoding::InPlace,
        Encoding::ReceiverMakesRight,
    ] {
        let payload = pack_sample(encoding);
        assert_eq!(payload.format().order, ByteOrder::NATIVE);
        assert_eq!(payload.to_vec(), sample_by_hand(ByteOrder::NATIVE));
    }
}

#[test]
fn receiver_makes_right_converts_a_foreign_byte_order() {
    for order in [FOREIGN, ByteOrder::NATIVE] {
        let format = Format {
            encoding: Some(Encoding::ReceiverMakesRight),
            order,
        };
        let payload = Payload::from_wire(format, sample_by_hand(order));
        check_sample(&mut payload.unpack().unwrap());
    }
}

#[test]
fn portable_reads_on_any_host() {
    let format = Format {
        encoding: Some(Encoding::Portable),
        order: ByteOrder::Big,
    };
    let payload = Payload::from_wire(format, sample_by_hand(ByteOrder::Big));
    check_sample(&mut payload.unpack().unwrap());
}

#[test]
fn raw_and_in_place_refuse_a_foreign_byte_order() {
    for encoding in [Encoding::Raw, Encoding::InPlace] {
        let format = Format {
            encoding: Some(encoding),
            order: FOREIGN,
        };
        let payload = Payload::from_wire(format, sample_by_hand(FOREIGN));
        assert_eq!(
            payload.unpack().err(),
            Some(UnpackError::ForeignByteOrder { found: FOREIGN })
        );
    }
}
