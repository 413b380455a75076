//! A received message's elements, seen in place where they can be.

use crate::group::element::Element;

/// A received message's elements: its bytes seen in place, or decoded
/// where they cannot be (a big-endian host, misaligned bytes,
/// [`ValueLoc`](crate::ValueLoc)).
pub(crate) enum Received<T> {
    /// Bytes [`Element::view`] accepts.
    InPlace(Vec<u8>, std::marker::PhantomData<T>),
    Decoded(Vec<T>),
}

impl<T: Element> std::ops::Deref for Received<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Received::InPlace(bytes, _) => T::view(bytes).expect("checked when received"),
            Received::Decoded(values) => values,
        }
    }
}

impl<T: Element> Received<T> {
    /// The elements, owned.
    pub(crate) fn into_vec(self) -> Vec<T> {
        match self {
            Received::InPlace(..) => self.to_vec(),
            Received::Decoded(values) => values,
        }
    }
}
