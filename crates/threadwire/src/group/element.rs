//! What collectives carry and combine: elements, built-in operations, user
//! reductions.
//!
//! Elements travel little-endian whatever the host, so that nodes of
//! different byte orders agree; on little-endian hosts encoding is a copy.

use super::CollError;
use std::fmt;
use std::rc::Rc;

mod sealed {
    pub trait Sealed {}
}

/// A value collectives can carry: the numeric primitives and
/// [`ValueLoc`]. Sealed: the set is the runtime's.
pub trait Element: Copy + 'static + sealed::Sealed {
    /// Bytes of one element on the wire.
    const SIZE: usize;
    /// The type's name, for errors.
    const NAME: &'static str;
    /// Appends `values` to `out`, little-endian.
    fn write(values: &[Self], out: &mut Vec<u8>);
    /// Reads one element from exactly [`SIZE`](Self::SIZE) bytes.
    fn read(bytes: &[u8]) -> Self;
    /// Reads every element of `bytes`, a multiple of
    /// [`SIZE`](Self::SIZE) long.
    fn read_all(bytes: &[u8]) -> Vec<Self> {
        bytes.chunks_exact(Self::SIZE).map(Self::read).collect()
    }
    /// `bytes` seen as elements without a copy, where the wire's layout is
    /// the host's and `bytes` is aligned for them; `None` otherwise.
    fn view(bytes: &[u8]) -> Option<&[Self]> {
        let _ = bytes;
        None
    }
    /// Reads `out.len()` elements from `bytes`, exactly that many
    /// [`SIZE`](Self::SIZE)s long, into `out`.
    fn read_into(bytes: &[u8], out: &mut [Self]) {
        for (v, b) in out.iter_mut().zip(bytes.chunks_exact(Self::SIZE)) {
            *v = Self::read(b);
        }
    }
    /// `values`' memory as bytes, where it is exactly their encoding (the
    /// host is little-endian and the type has no padding), so that another
    /// process of this host may read them in place; `None` otherwise.
    fn memory_mut(values: &mut [Self]) -> Option<&mut [u8]> {
        let _ = values;
        None
    }
}

/// An [`Element`] the built-in [`Op`]s combine.
pub trait Reducible: Element {
    /// `acc[i] = acc[i] op other[i]`, or why `op` does not apply.
    fn combine(op: Op, acc: &mut [Self], other: &[Self]) -> Result<(), CollError>;
}

/// The built-in reduction operations. All are commutative and associative
/// (integer sums and products wrap; float ones round, so a float result
/// depends on the algorithm's order, but is the same at every member).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// Sum.
    Sum,
    /// Product.
    Product,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers).
    BitAnd,
    /// Bitwise or (integers).
    BitOr,
    /// Bitwise exclusive or (integers).
    BitXor,
    /// Logical and: 1 if both are non-zero, else 0.
    LogicalAnd,
    /// Logical or.
    LogicalOr,
    /// Logical exclusive or.
    LogicalXor,
    /// The smaller value with its location ([`ValueLoc`]); on a tie the
    /// smaller location.
    MinLoc,
    /// The larger value with its location ([`ValueLoc`]); on a tie the
    /// smaller location.
    MaxLoc,
}

fn unsupported<T: Element>(op: Op) -> CollError {
    CollError::Unsupported {
        op,
        element: T::NAME,
    }
}

macro_rules! numbers {
    ($kind:ident: $($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const NAME: &'static str = stringify!($t);
            #[inline]
            fn write(values: &[Self], out: &mut Vec<u8>) {
                // A copy where the wire's order is the host's (measured: an
                // element at a time, a 1 MiB bcast spent a quarter of its
                // time pushing bytes).
                if cfg!(target_endian = "little") {
                    return out.extend_from_slice(bytemuck::cast_slice(values));
                }
                out.reserve(values.len() * Self::SIZE);
                for v in values {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            #[inline]
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("SIZE bytes"))
            }
            fn read_all(bytes: &[u8]) -> Vec<Self> {
                if cfg!(target_endian = "little") {
                    return bytemuck::pod_collect_to_vec(bytes);
                }
                bytes.chunks_exact(Self::SIZE).map(Self::read).collect()
            }
            fn view(bytes: &[u8]) -> Option<&[Self]> {
                if cfg!(target_endian = "little") {
                    return bytemuck::try_cast_slice(bytes).ok();
                }
                None
            }
            fn read_into(bytes: &[u8], out: &mut [Self]) {
                if cfg!(target_endian = "little") {
                    return bytemuck::cast_slice_mut(out).copy_from_slice(bytes);
                }
                for (v, b) in out.iter_mut().zip(bytes.chunks_exact(Self::SIZE)) {
                    *v = Self::read(b);
                }
            }
            fn memory_mut(values: &mut [Self]) -> Option<&mut [u8]> {
                cfg!(target_endian = "little").then(|| bytemuck::cast_slice_mut(values))
            }
        }
        impl Reducible for $t {
            fn combine(op: Op, acc: &mut [Self], other: &[Self]) -> Result<(), CollError> {
                numbers!(@combine $kind, $t, op, acc, other)
            }
        }
    )*};
    (@combine int, $t:ty, $op:ident, $acc:ident, $other:ident) => {{
        let (acc, other) = ($acc, $other);
        match $op {
            Op::Sum => zip_with(acc, other, <$t>::wrapping_add),
            Op::Product => zip_with(acc, other, <$t>::wrapping_mul),
            Op::Min => zip_with(acc, other, |a, b| a.min(b)),
            Op::Max => zip_with(acc, other, |a, b| a.max(b)),
            Op::BitAnd => zip_with(acc, other, |a, b| a & b),
            Op::BitOr => zip_with(acc, other, |a, b| a | b),
            Op::BitXor => zip_with(acc, other, |a, b| a ^ b),
            Op::LogicalAnd => zip_with(acc, other, |a, b| <$t>::from((a != 0) & (b != 0))),
            Op::LogicalOr => zip_with(acc, other, |a, b| <$t>::from((a != 0) | (b != 0))),
            Op::LogicalXor => zip_with(acc, other, |a, b| <$t>::from((a != 0) ^ (b != 0))),
            Op::MinLoc | Op::MaxLoc => return Err(unsupported::<$t>($op)),
        }
        Ok(())
    }};
    (@combine float, $t:ty, $op:ident, $acc:ident, $other:ident) => {{
        let (acc, other) = ($acc, $other);
        match $op {
            Op::Sum => zip_with(acc, other, |a, b| a + b),
            Op::Product => zip_with(acc, other, |a, b| a * b),
            Op::Min => zip_with(acc, other, |a, b| if b < a { b } else { a }),
            Op::Max => zip_with(acc, other, |a, b| if b > a { b } else { a }),
            Op::LogicalAnd => zip_with(acc, other, |a, b| {
                <$t>::from(u8::from((a != 0.0) & (b != 0.0)))
            }),
            Op::LogicalOr => zip_with(acc, other, |a, b| {
                <$t>::from(u8::from((a != 0.0) | (b != 0.0)))
            }),
            Op::LogicalXor => zip_with(acc, other, |a, b| {
                <$t>::from(u8::from((a != 0.0) ^ (b != 0.0)))
            }),
            _ => return Err(unsupported::<$t>($op)),
        }
        Ok(())
    }};
}

/// `acc[i] = f(acc[i], other[i])`: one loop per operation and type, which
/// the compiler vectorizes (through a function pointer, an f64 sum of
/// 1 MiB cost a call per element).
#[inline]
fn zip_with<T: Copy>(acc: &mut [T], other: &[T], f: impl Fn(T, T) -> T) {
    for (a, b) in acc.iter_mut().zip(other) {
        *a = f(*a, *b);
    }
}

numbers!(int: i8, i16, i32, i64, i128, u8, u16, u32, u64, u128);
numbers!(float: f32, f64);

/// A value and where it came from (an index, a rank), for [`Op::MinLoc`]
/// and [`Op::MaxLoc`] — MPI's `MPI_2INT` and friends.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct ValueLoc<T> {
    /// The value compared.
    pub value: T,
    /// Its location.
    pub location: u64,
}

impl<T: Element> sealed::Sealed for ValueLoc<T> {}

impl<T: Element> Element for ValueLoc<T> {
    const SIZE: usize = T::SIZE + 8;
    const NAME: &'static str = "ValueLoc";
    fn write(values: &[Self], out: &mut Vec<u8>) {
        out.reserve(values.len() * Self::SIZE);
        for v in values {
            T::write(std::slice::from_ref(&v.value), out);
            out.extend_from_slice(&v.location.to_le_bytes());
        }
    }
    fn read(bytes: &[u8]) -> Self {
        let (value, location) = bytes.split_at(T::SIZE);
        ValueLoc {
            value: T::read(value),
            location: u64::from_le_bytes(location.try_into().expect("8 bytes")),
        }
    }
}

impl<T: Element + PartialOrd> Reducible for ValueLoc<T> {
    fn combine(op: Op, acc: &mut [Self], other: &[Self]) -> Result<(), CollError> {
        let min = match op {
            Op::MinLoc => true,
            Op::MaxLoc => false,
            _ => return Err(unsupported::<Self>(op)),
        };
        for (a, b) in acc.iter_mut().zip(other) {
            let better = if min {
                b.value < a.value
            } else {
                b.value > a.value
            };
            if better || (b.value == a.value && b.location < a.location) {
                *a = *b;
            }
        }
        Ok(())
    }
}

/// A reduction: a built-in [`Op`] or a user function.
///
/// A user function `f(acc, other)` sets `acc[i] = acc[i] ∘ other[i]`,
/// where `acc` holds the contributions of lower ranks than `other`'s. It
/// must be associative; if it is not commutative
/// ([`Reduction::ordered`]), the collectives combine in rank order —
/// `x0 ∘ x1 ∘ … ∘ x(p-1)` — and the result is the same on every run.
///
/// ```
/// use threadwire::{Op, Reduction};
/// let sum: Reduction<i64> = Op::Sum.into();
/// // 2×2 matrix products, row-major: associative, not commutative.
/// let chain = Reduction::<i64>::ordered(|acc, b| {
///     for (x, y) in acc.chunks_mut(4).zip(b.chunks(4)) {
///         let m = [x[0], x[1], x[2], x[3]];
///         x[0] = m[0] * y[0] + m[1] * y[2];
///         x[1] = m[0] * y[1] + m[1] * y[3];
///         x[2] = m[2] * y[0] + m[3] * y[2];
///         x[3] = m[2] * y[1] + m[3] * y[3];
///     }
/// });
/// assert!(sum.is_commutative() && !chain.is_commutative());
/// ```
pub struct Reduction<T> {
    kind: Kind<T>,
}

type UserFn<T> = Rc<dyn Fn(&mut [T], &[T])>;

enum Kind<T> {
    Builtin(Op),
    User { f: UserFn<T>, commutative: bool },
}

impl<T> Clone for Reduction<T> {
    fn clone(&self) -> Self {
        Reduction {
            kind: match &self.kind {
                Kind::Builtin(op) => Kind::Builtin(*op),
                Kind::User { f, commutative } => Kind::User {
                    f: f.clone(),
                    commutative: *commutative,
                },
            },
        }
    }
}

impl<T> fmt::Debug for Reduction<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Builtin(op) => write!(f, "Reduction({op:?})"),
            Kind::User { commutative, .. } => {
                write!(f, "Reduction(user, commutative: {commutative})")
            }
        }
    }
}

impl<T> From<Op> for Reduction<T> {
    fn from(op: Op) -> Self {
        Reduction {
            kind: Kind::Builtin(op),
        }
    }
}

impl<T: Reducible> Reduction<T> {
    /// A commutative user reduction: the collectives may combine in any order.
    pub fn commutative(f: impl Fn(&mut [T], &[T]) + 'static) -> Self {
        Reduction {
            kind: Kind::User {
                f: Rc::new(f),
                commutative: true,
            },
        }
    }

    /// A non-commutative user reduction, combined in rank order.
    pub fn ordered(f: impl Fn(&mut [T], &[T]) + 'static) -> Self {
        Reduction {
            kind: Kind::User {
                f: Rc::new(f),
                commutative: false,
            },
        }
    }

    /// Whether it may be applied in any order.
    pub fn is_commutative(&self) -> bool {
        match &self.kind {
            Kind::Builtin(_) => true,
            Kind::User { commutative, .. } => *commutative,
        }
    }

    /// Checks that it applies to `T`, before any message leaves.
    pub(crate) fn check(&self) -> Result<(), CollError> {
        match &self.kind {
            Kind::Builtin(op) => T::combine(*op, &mut [], &[]),
            Kind::User { .. } => Ok(()),
        }
    }

    /// `acc = acc ∘ higher`.
    pub(crate) fn apply(&self, acc: &mut [T], higher: &[T]) -> Result<(), CollError> {
        match &self.kind {
            Kind::Builtin(op) => T::combine(*op, acc, higher),
            Kind::User { f, .. } => {
                f(acc, higher);
                Ok(())
            }
        }
    }

    /// `acc = lower ∘ acc`.
    pub(crate) fn apply_before(&self, lower: &[T], acc: &mut [T]) -> Result<(), CollError> {
        if self.is_commutative() {
            return self.apply(acc, lower);
        }
        let mut out = lower.to_vec();
        self.apply(&mut out, acc)?;
        acc.copy_from_slice(&out);
        Ok(())
    }

    /// Combines `other`, from rank `other_rank`, into `acc`, which holds
    /// a block of ranks on the other side of it.
    pub(crate) fn merge(
        &self,
        acc: &mut [T],
        other: &[T],
        other_is_lower: bool,
    ) -> Result<(), CollError> {
        if other_is_lower {
            self.apply_before(other, acc)
        } else {
            self.apply(acc, other)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins() {
        let mut a = [1i32, 5, -3];
        i32::combine(Op::Sum, &mut a, &[2, 2, 2]).unwrap();
        assert_eq!(a, [3, 7, -1]);
        i32::combine(Op::Max, &mut a, &[4, 4, 4]).unwrap();
        assert_eq!(a, [4, 7, 4]);
        i32::combine(Op::LogicalXor, &mut a, &[0, 1, 0]).unwrap();
        assert_eq!(a, [1, 0, 1]);
        let mut f = [1.5f64];
        assert!(f64::combine(Op::BitOr, &mut f, &[1.0]).is_err());
        f64::combine(Op::Min, &mut f, &[0.5]).unwrap();
        assert_eq!(f, [0.5]);
        let mut v = [ValueLoc {
            value: 3.0f32,
            location: 7,
        }];
        ValueLoc::combine(
            Op::MinLoc,
            &mut v,
            &[ValueLoc {
                value: 3.0,
                location: 2,
            }],
        )
        .unwrap();
        assert_eq!(v[0].location, 2);
        assert!(ValueLoc::<f32>::combine(Op::Sum, &mut v, &[]).is_err());
        assert!(u8::combine(Op::MinLoc, &mut [], &[]).is_err());
    }

    #[test]
    fn encoding_round_trips() {
        let mut b = Vec::new();
        i16::write(&[-2, 300], &mut b);
        assert_eq!(b, [0xfe, 0xff, 0x2c, 0x01]);
        let v = [ValueLoc {
            value: -1i64,
            location: 9,
        }];
        let mut b = Vec::new();
        ValueLoc::write(&v, &mut b);
        assert_eq!(b.len(), 16);
        assert_eq!(ValueLoc::<i64>::read(&b), v[0]);
    }

    #[test]
    fn ordered_user_reduction_keeps_order() {
        // Affine maps x -> m·x + c packed (m, c) into a u64, composed
        // left then right: associative, not commutative.
        let compose = |l: u64, r: u64| {
            let (m1, c1, m2, c2) = (l >> 32, l & 0xffff_ffff, r >> 32, r & 0xffff_ffff);
            (m1.wrapping_mul(m2) & 0xffff_ffff) << 32 | (m2.wrapping_mul(c1).wrapping_add(c2) & 0xffff_ffff)
        };
        let r = Reduction::<u64>::ordered(move |acc, b| {
            for (x, y) in acc.iter_mut().zip(b) {
                *x = compose(*x, *y);
            }
        });
        let (a, b, c) = (2 << 32 | 1, 3 << 32 | 5, 7 << 32);
        let mut acc = [b];
        r.apply_before(&[a], &mut acc).unwrap();
        assert_eq!(acc, [compose(a, b)]);
        r.merge(&mut acc, &[c], false).unwrap();
        assert_eq!(acc, [compose(compose(a, b), c)]);
        assert_ne!(compose(a, b), compose(b, a));
    }
}
