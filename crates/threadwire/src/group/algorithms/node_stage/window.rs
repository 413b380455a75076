//! A member's buffer shown to the other members of its node for one call,
//! so that they read it where it is instead of through a copy in a slot.
//!
//! 1. The owner opens its window for call `s` with its buffer
//!    ([`Window::open`]): the address and length, then a state word
//!    holding the call, an *open* bit and a count of pins.
//! 2. A reader pins the window for call `s` ([`Window::pin`]): one
//!    compare-and-swap raises the count if the window is open for that
//!    very call, and fails otherwise (closed, or open for another call),
//!    so a reader never reads a buffer its owner has given back.
//! 3. It reads (or, where the stage gives it a range of the owner's
//!    buffer, writes) the elements it needs and drops the pin, never
//!    across a wait (a pin is held only while memory is copied or
//!    combined).
//! 4. The owner closes the window before its call returns, on every path
//!    (the [`Open`] guard): it clears the open bit, then spins until the
//!    pins are gone — a few copies at most, on other threads.
//!
//! What may be read when is the stage's protocol, not the window's: the
//! counters order every write to a range before any read of it, and
//! every read before the range's next write (the module docs of
//! `node_stage`). The window only guarantees that the buffer is alive and
//! belongs to the call while it is read. The owner makes every access of
//! its own to the buffer, while the window is open, through the one raw
//! pointer it published ([`Open::part`]), never through the borrow it
//! came from, so that other threads' reads of other ranges derive from
//! the same pointer.

use crate::group::element::Element;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

const OPEN: u64 = 1 << 31;
const PINS: u64 = OPEN - 1;

/// The low 32 bits of a call's number, as the state word holds it.
fn call_bits(s: u64) -> u64 {
    (s & 0xFFFF_FFFF) << 32
}

/// One member's window (in its slot).
#[derive(Default)]
pub(super) struct Window {
    state: AtomicU64,
    address: AtomicUsize,
    /// In elements of the call's type.
    len: AtomicUsize,
}

/// The owner's open window: gives the owner its own ranges, closes on drop.
pub(super) struct Open<'w, T> {
    window: &'w Window,
    base: *mut T,
    len: usize,
}

/// A reader's pin on another member's open window.
pub(super) struct Pin<'w, T> {
    window: &'w Window,
    base: *const T,
    len: usize,
    _elements: PhantomData<T>,
}

impl Window {
    /// Step 1: opens the window for call `s` on `buf`, which the owner
    /// then reaches only through the returned guard until it closes.
    pub(super) fn open<'w, T: Element>(&'w self, s: u64, buf: &'w mut [T]) -> Open<'w, T> {
        let base = buf.as_mut_ptr();
        self.address.store(base as usize, Ordering::Relaxed);
        self.len.store(buf.len(), Ordering::Relaxed);
        self.state.store(call_bits(s) | OPEN, Ordering::Release);
        Open {
            window: self,
            base,
            len: buf.len(),
        }
    }

    /// Step 2: a pin on the window if it is open for call `s`.
    pub(super) fn pin<T: Element>(&self, s: u64) -> Option<Pin<'_, T>> {
        let mut state = self.state.load(Ordering::Acquire);
        loop {
            if state & !PINS != call_bits(s) | OPEN || state & PINS == PINS {
                return None;
            }
            match self.state.compare_exchange_weak(
                state,
                state + 1,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        Some(Pin {
            window: self,
            base: self.address.load(Ordering::Relaxed) as *const T,
            len: self.len.load(Ordering::Relaxed),
            _elements: PhantomData,
        })
    }
}

impl<T> Open<'_, T> {
    /// The owner's elements `range` (which no other member reads or
    /// writes now, by the stage's protocol).
    pub(super) fn part(&mut self, range: Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.len, "inside the buffer");
        // SAFETY: `base` is the owner's buffer of `len` elements, borrowed
        // mutably for the guard's life; the range is inside it; the stage's
        // protocol keeps other members from this range while the owner
        // holds it (module docs), and `&mut self` keeps the owner from
        // holding two parts at once.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(range.start), range.len()) }
    }

    /// The whole buffer (when no other member reads it, by the protocol).
    pub(super) fn all(&mut self) -> &mut [T] {
        self.part(0..self.len)
    }
}

impl<T> Drop for Open<'_, T> {
    /// Step 4.
    fn drop(&mut self) {
        self.window.state.fetch_and(!OPEN, Ordering::AcqRel);
        let mut spins = 0u32;
        while self.window.state.load(Ordering::Acquire) & PINS != 0 {
            spins = spins.wrapping_add(1);
            match spins % 64 {
                0 => std::thread::yield_now(),
                _ => std::hint::spin_loop(),
            }
        }
    }
}

impl<T> Pin<'_, T> {
    /// The pinned buffer's length in elements.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Elements `range` of the pinned buffer (which its owner does not
    /// write now, by the stage's protocol); `None` outside it.
    pub(super) fn part(&self, range: Range<usize>) -> Option<&[T]> {
        (range.start <= range.end && range.end <= self.len).then(|| {
            // SAFETY: the pin keeps the buffer alive and its owner's call
            // under way (the owner waits for pins before returning); the
            // range is inside it; the stage's protocol keeps every writer
            // away from this range while it is read.
            unsafe { std::slice::from_raw_parts(self.base.add(range.start), range.len()) }
        })
    }
}

impl<T> Pin<'_, T> {
    /// Elements `range` of the pinned buffer to write into, for the one
    /// member the stage's protocol gives that range to now (no one else
    /// reads or writes it meanwhile); `None` outside it.
    pub(super) fn part_mut(&mut self, range: Range<usize>) -> Option<&mut [T]> {
        (range.start <= range.end && range.end <= self.len).then(|| {
            // SAFETY: as for `part`; the protocol gives this range to this
            // member alone (the owner too keeps out of it), and `&mut self`
            // keeps it from holding two parts of one pin at once.
            unsafe { std::slice::from_raw_parts_mut(self.base.cast_mut().add(range.start), range.len()) }
        })
    }
}

impl<T> Drop for Pin<'_, T> {
    /// Step 3's end.
    fn drop(&mut self) {
        self.window.state.fetch_sub(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_only_the_open_call() {
        let w = Window::default();
        let mut buf = vec![1u32, 2, 3];
        {
            let mut open = w.open(7, &mut buf);
            open.part(0..1)[0] = 9;
            assert!(w.pin::<u32>(6).is_none());
            let pin = w.pin::<u32>(7).expect("open for call 7");
            assert_eq!(pin.part(0..3), Some(&[9u32, 2, 3][..]));
            assert_eq!(pin.part(2..4), None);
            drop(pin);
        }
        assert!(w.pin::<u32>(7).is_none(), "closed");
    }

    #[test]
    fn close_waits_for_a_reader() {
        use std::sync::atomic::AtomicBool;
        let w = Window::default();
        let mut buf = vec![5u64; 1024];
        let (pinned, unpinning) = (AtomicBool::new(false), AtomicBool::new(false));
        let sum = std::thread::scope(|scope| {
            let open = w.open(1, &mut buf);
            let reader = scope.spawn(|| {
                let pin = w.pin::<u64>(1).expect("open");
                pinned.store(true, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(20));
                let sum: u64 = pin.part(0..1024).expect("inside").iter().sum();
                unpinning.store(true, Ordering::SeqCst);
                sum
            });
            while !pinned.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            drop(open);
            assert!(unpinning.load(Ordering::SeqCst), "closed under a pin");
            reader.join().expect("reader")
        });
        assert_eq!(sum, 5 * 1024);
        assert!(w.pin::<u64>(1).is_none());
    }
}
