//! Pack/unpack under all four encodings: round trips, the wire layout itself
//! (a hand-computed test vector), foreign byte orders, zero-copy in-place
//! vectors, and the errors and robustness promised for untrusted bytes.

use std::fmt::Debug;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use threadwire_wire::{
    ByteOrder, Encoding, Format, FormatError, Packer, Payload, Scalar, UnpackError, Unpacker,
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

/// One of everything, at odd alignments: the leading `u8` puts the `f64`
/// slice's elements at offset 6.
fn pack_mixed(packer: &mut Packer) {
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
fn read_mixed(unpacker: &mut Unpacker) -> Result<(), UnpackError> {
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

/// Writes items by hand, in any byte order: the reference the encoder is
/// checked against, independent of its code.
struct HandWriter {
    bytes: Vec<u8>,
    big: bool,
}

impl HandWriter {
    fn new(order: ByteOrder) -> HandWriter {
        HandWriter {
            bytes: Vec::new(),
            big: order == ByteOrder::Big,
        }
    }

    fn put(&mut self, be_bytes: &[u8]) {
        if self.big {
            self.bytes.extend_from_slice(be_bytes);
        } else {
            self.bytes.extend(be_bytes.iter().rev());
        }
    }

    fn code(&mut self, code: u8) -> &mut Self {
        self.bytes.push(code);
        self
    }

    fn count(&mut self, count: u32) -> &mut Self {
        self.put(&count.to_be_bytes());
        self
    }

    fn u32(&mut self, value: u32) -> &mut Self {
        self.put(&value.to_be_bytes());
        self
    }

    fn i16(&mut self, value: i16) -> &mut Self {
        self.put(&value.to_be_bytes());
        self
    }

    fn f64(&mut self, value: f64) -> &mut Self {
        self.put(&value.to_be_bytes());
        self
    }

    fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(bytes);
        self
    }
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
