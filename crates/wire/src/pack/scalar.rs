//! The closed set of element types a payload can carry.
//!
//! The set is sealed because its type codes are wire format: a peer must
//! know every code it may receive, so a new scalar is a protocol change made
//! here, not an impl a user adds.

/// A fixed-size number that can be packed: `u8`, `i8`, `u16`, `i16`, `u32`,
/// `i32`, `u64`, `i64`, `f32` or `f64`.
///
/// Sealed: it cannot be implemented outside this crate.
pub trait Scalar: bytemuck::Pod + Send + Sync + sealed::Sealed + 'static {
    /// The type code that marks this type on the wire (1..=10; see the
    /// layout table in the `src/pack.rs` module docs).
    const CODE: u8;
    /// The Rust name of the type, as error messages print it.
    const NAME: &'static str;
    /// The name of a slice of this type, e.g. `"[u32]"`.
    const SLICE_NAME: &'static str;

    /// The value with its bytes in reverse order: the same number as seen
    /// by a machine of the other byte order.
    fn swap_byte_order(self) -> Self;
}

mod sealed {
    /// Keeps [`Scalar`](super::Scalar) closed to this crate.
    pub trait Sealed {}
}

macro_rules! scalars {
    ($($ty:ident = $code:literal, $swap:expr;)*) => {
        $(
            impl sealed::Sealed for $ty {}

            impl Scalar for $ty {
                const CODE: u8 = $code;
                const NAME: &'static str = stringify!($ty);
                const SLICE_NAME: &'static str = concat!("[", stringify!($ty), "]");

                fn swap_byte_order(self) -> Self {
                    $swap(self)
                }
            }
        )*

        /// The name of the scalar with type code `code`.
        pub(super) fn scalar_name(code: u8) -> Option<&'static str> {
            match code {
                $($code => Some(<$ty as Scalar>::NAME),)*
                _ => None,
            }
        }

        /// The name of a slice of the scalar with type code `code`.
        pub(super) fn slice_name(code: u8) -> Option<&'static str> {
            match code {
                $($code => Some(<$ty as Scalar>::SLICE_NAME),)*
                _ => None,
            }
        }
    };
}

scalars! {
    u8 = 1, u8::swap_bytes;
    i8 = 2, i8::swap_bytes;
    u16 = 3, u16::swap_bytes;
    i16 = 4, i16::swap_bytes;
    u32 = 5, u32::swap_bytes;
    i32 = 6, i32::swap_bytes;
    u64 = 7, u64::swap_bytes;
    i64 = 8, i64::swap_bytes;
    f32 = 9, |v: f32| f32::from_bits(v.to_bits().swap_bytes());
    f64 = 10, |v: f64| f64::from_bits(v.to_bits().swap_bytes());
}

/// Converts every element between native order and the other one, in place.
pub(super) fn swap_all<T: Scalar>(values: &mut [T]) {
    // One-byte elements read the same either way; skip the pass.
    if std::mem::size_of::<T>() > 1 {
        for value in values {
            *value = value.swap_byte_order();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_reverses_bytes() {
        assert_eq!(0x1234u16.swap_byte_order(), 0x3412);
        assert_eq!(
            (-2i32).swap_byte_order(),
            i32::from_be_bytes((-2i32).to_le_bytes())
        );
        let x = 1.5f64;
        assert_eq!(x.swap_byte_order().to_bits(), x.to_bits().swap_bytes());
        assert_eq!(x.swap_byte_order().swap_byte_order(), x);
    }

    #[test]
    fn codes_are_distinct_and_in_range() {
        let codes = [
            u8::CODE,
            i8::CODE,
            u16::CODE,
            i16::CODE,
            u32::CODE,
            i32::CODE,
            u64::CODE,
            i64::CODE,
            f32::CODE,
            f64::CODE,
        ];
        assert_eq!(codes, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    }

    #[test]
    fn names() {
        assert_eq!(scalar_name(10), Some("f64"));
        assert_eq!(slice_name(2), Some("[i8]"));
        assert_eq!(scalar_name(0), None);
        assert_eq!(slice_name(11), None);
    }
}
