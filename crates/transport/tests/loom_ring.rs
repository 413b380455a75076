//! Loom models of the shared-memory ring's flow control: reservation by
//! several producers, publication, consumption and release across the
//! wrap-around, with records of one and two slots, the sleeping
//! handshake and the waiting-for-space handshake. A record word read while being written shows as a loom
//! access error, a lost wake-up as a deadlock (the consumer waits on a
//! doorbell nobody rings).
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p threadwire-transport --release --test loom_ring`
#![cfg(loom)]

use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;
use threadwire_transport::shm::ring::{
    required_len, Consumer, Publish, Ring, RingMemory, SendError,
};

/// 4 slots of 64 bytes: a record of up to 40 bytes takes one slot, up to
/// 96 bytes two.
const SLOTS: usize = 4;
const SLOT_SIZE: usize = 64;
const ONE_SLOT: usize = 5;
const TWO_SLOTS: usize = 60;

/// A producer's record `seq`: `len` bytes naming both.
fn body(producer: u32, seq: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (producer * 64 + seq * 8) as u8 ^ i as u8)
        .collect()
}

/// The consumer's doorbell (an eventfd in the channel).
#[derive(Default)]
struct Doorbell {
    rung: Mutex<bool>,
    bell: Condvar,
}

impl Doorbell {
    fn ring(&self) {
        *self.rung.lock().unwrap() = true;
        self.bell.notify_one();
    }

    fn wait(&self) {
        let mut rung = self.rung.lock().unwrap();
        while !*rung {
            rung = self.bell.wait(rung).unwrap();
        }
        *rung = false;
    }
}

fn new_ring() -> (Arc<Ring>, Consumer) {
    let memory = RingMemory::in_heap(required_len(SLOTS, SLOT_SIZE).unwrap());
    let ring = Ring::create(memory.clone(), SLOT_SIZE, 1).unwrap();
    let consumer = Consumer::new(Ring::attach(memory, 1).unwrap());
    (Arc::new(ring), consumer)
}

/// Sends the records of `lens` in order, yielding while the ring is full.
fn produce(ring: &Ring, doorbell: &Doorbell, producer: u32, lens: &[usize]) {
    for (seq, &len) in lens.iter().enumerate() {
        let bytes = body(producer, seq as u32, len);
        loop {
            match ring.try_send(producer, &[&bytes[..len / 2], &bytes[len / 2..]]) {
                Ok(Publish { wake_consumer }) => {
                    if wake_consumer {
                        doorbell.ring();
                    }
                    break;
                }
                Err(SendError::Full) => thread::yield_now(),
                Err(e) => panic!("send: {e}"),
            }
        }
    }
}

/// Receives `lens.len()` records per producer, checking bytes and order,
/// sleeping on the doorbell whenever the ring is empty.
fn consume(consumer: &mut Consumer, doorbell: &Doorbell, lens: &[&[usize]]) {
    let mut next = vec![0usize; lens.len()];
    let mut left: usize = lens.iter().map(|l| l.len()).sum();
    let mut out = Vec::new();
    while left > 0 {
        match consumer.try_recv(&mut out).unwrap() {
            Some(producer) => {
                let p = producer as usize;
                assert_eq!(out, body(producer, next[p] as u32, lens[p][next[p]]));
                next[p] += 1;
                left -= 1;
            }
            None => {
                if consumer.prepare_to_sleep() {
                    doorbell.wait();
                    consumer.woke();
                }
            }
        }
    }
}

fn model(preemption_bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemption_bound;
    builder.check(f);
}

/// One producer, one consumer, every interleaving: a one-slot and a
/// two-slot record, and the handshake around each.
#[test]
fn one_producer_sleeping_consumer() {
    model(None, || {
        const LENS: &[usize] = &[ONE_SLOT, TWO_SLOTS];
        let (ring, mut consumer) = new_ring();
        let doorbell = Arc::new(Doorbell::default());
        let producer = {
            let (ring, doorbell) = (ring.clone(), doorbell.clone());
            thread::spawn(move || produce(&ring, &doorbell, 0, LENS))
        };
        consume(&mut consumer, &doorbell, &[LENS]);
        producer.join().unwrap();
    });
}

/// Two producers racing for the tail of a four-slot ring with five slots'
/// worth of records, so that reservations wrap around and meet a full
/// ring; the consumer sleeps whenever it finds nothing.
#[test]
fn two_producers_wrap_around() {
    model(Some(2), || {
        const FIRST: &[usize] = &[ONE_SLOT, TWO_SLOTS];
        const SECOND: &[usize] = &[TWO_SLOTS];
        let (ring, mut consumer) = new_ring();
        let doorbell = Arc::new(Doorbell::default());
        let producers: Vec<_> = [FIRST, SECOND]
            .into_iter()
            .enumerate()
            .map(|(producer, lens)| {
                let (ring, doorbell) = (ring.clone(), doorbell.clone());
                thread::spawn(move || produce(&ring, &doorbell, producer as u32, lens))
            })
            .collect();
        consume(&mut consumer, &doorbell, &[FIRST, SECOND]);
        for producer in producers {
            producer.join().unwrap();
        }
    });
}

/// Slot reuse without the doorbell's mutex in between (which orders the
/// threads and would hide a missing release): the consumer polls, the
/// producer refills each slot as soon as `head` says it is free.
#[test]
fn slots_reused_across_laps() {
    model(Some(3), || {
        const LENS: &[usize] = &[TWO_SLOTS, TWO_SLOTS, ONE_SLOT, TWO_SLOTS];
        let (ring, mut consumer) = new_ring();
        let producer = {
            let ring = ring.clone();
            thread::spawn(move || produce(&ring, &Doorbell::default(), 0, LENS))
        };
        let mut out = Vec::new();
        for (seq, &len) in LENS.iter().enumerate() {
            while consumer.try_recv(&mut out).unwrap().is_none() {
                thread::yield_now();
            }
            assert_eq!(out, body(0, seq as u32, len));
        }
        producer.join().unwrap();
    });
}

/// A producer that meets a full ring waits for the consumer's doorbell
/// instead of retrying (the waiting-for-space steps); a lost wake-up shows
/// as a deadlock.
#[test]
fn producer_waits_for_space() {
    model(Some(3), || {
        const LENS: &[usize] = &[TWO_SLOTS, TWO_SLOTS, TWO_SLOTS];
        let (ring, mut consumer) = new_ring();
        let space = Arc::new(Doorbell::default());
        let producer = {
            let (ring, space) = (ring.clone(), space.clone());
            thread::spawn(move || {
                for (seq, &len) in LENS.iter().enumerate() {
                    let bytes = body(0, seq as u32, len);
                    loop {
                        match ring.try_send(0, &[&bytes]) {
                            Ok(_) => break,
                            Err(SendError::Full) => {
                                ring.want_space();
                                match ring.try_send(0, &[&bytes]) {
                                    Ok(_) => break,
                                    Err(SendError::Full) => space.wait(),
                                    Err(e) => panic!("send: {e}"),
                                }
                            }
                            Err(e) => panic!("send: {e}"),
                        }
                    }
                }
            })
        };
        // As the channel receives: `try_recv_with` leaves `head` to be
        // published by `space_wanted` after the batch (here, of one).
        for (seq, &len) in LENS.iter().enumerate() {
            let out = loop {
                let got = consumer.try_recv_with(|record| {
                    let mut out = vec![0; record.len()];
                    record.read(0, &mut out);
                    out
                });
                match got.unwrap() {
                    Some(out) => break out,
                    None => thread::yield_now(),
                }
            };
            assert_eq!(out, body(0, seq as u32, len));
            if consumer.space_wanted() {
                space.ring();
            }
        }
        producer.join().unwrap();
    });
}
