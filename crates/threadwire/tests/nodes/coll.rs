//! Collectives between the threads of a job, checked against a sequential
//! reference that every member computes alone (everyone's data is a
//! function of its rank).
//!
//! `node-coll MODE THREADS [SEED] [fibers|os]`: the first THREADS threads
//! of every node (thread 0 and THREADS − 1 fibers, or OS threads with
//! `os`) form `Group::world_threads`. Members sharing a node combine
//! through the per-node stage for small blocking calls by default, and
//! every mode forces it (and the flat algorithms) at least once.
//! MODE is one of
//! - `all`: every collective, every algorithm forced at least once, sizes
//!   across the thresholds, non-commutative reductions, on the world group
//!   and on split (non-power-of-two, reversed) groups, a dup and a mesh;
//! - `world`: the same on the world group at small sizes (for the largest
//!   layouts), then on groups of 1, 2, 3, … consecutive ranks at once;
//! - `isolation`: plain and group point-to-point messages with the tags a
//!   collective uses, around collectives, never match one;
//! - `overlap`: nonblocking collectives overlapped with point-to-point
//!   traffic on the same endpoints, completed by test, wait and wait_all;
//! - `errors`: bad arguments give typed errors at every member;
//! - `disagree`: with the argument check on, arguments that are bad or
//!   differ at only some members fail the call at every member;
//! - `mixed`: members mix blocking and nonblocking forms of one call;
//!   calls of the per-node stage under way together and waited in
//!   reverse order, or dropped; a group freed while a call on it is under
//!   way keeps its id;
//! - `kill`, `kill-small`, `kill-large`: the last node kills itself when
//!   the others enter an allreduce (blocking at even threads, nonblocking
//!   at odd) of 8000 B (flat), 8 B (the per-node stage) or 1 MiB (the
//!   host stage's cross-memory reads, where the nodes share a host); each
//!   survivor thread prints `<address>: PeerLost n<last>`.
//!
//! Thread 0 of each node prints `coll n<id>: ok mode=<MODE> checks=<n>`.

mod common;

use threadwire::group::{
    Algorithms, AllgatherAlgorithm, AllreduceAlgorithm, AlltoallAlgorithm, BarrierAlgorithm,
    BcastAlgorithm, ReduceScatterAlgorithm,
};
use threadwire::{
    wait_all, Address, CollError, Endpoint, Group, Op, Reduction, ValueLoc, ANY_SOURCE,
};

/// Everyone's data: small values, so products stay interesting.
fn value(rank: usize, i: usize, salt: u64) -> i64 {
    let mut x = (rank as u64 + 1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add((i as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9))
        .wrapping_add(salt.wrapping_mul(0x94d0_49bb_1331_11eb));
    x ^= x >> 31;
    (x % 2001) as i64 - 1000
}

fn data(rank: usize, n: usize, salt: u64) -> Vec<i64> {
    (0..n).map(|i| value(rank, i, salt)).collect()
}

/// Affine maps x -> m·x + c mod 2^32 packed (m, c): composition is
/// associative and not commutative.
fn compose(l: u64, r: u64) -> u64 {
    let (m1, c1, m2, c2) = (l >> 32, l & 0xffff_ffff, r >> 32, r & 0xffff_ffff);
    ((m1.wrapping_mul(m2) & 0xffff_ffff) << 32)
        | (m2.wrapping_mul(c1).wrapping_add(c2) & 0xffff_ffff)
}

fn affine(rank: usize, n: usize, salt: u64) -> Vec<u64> {
    data(rank, n, salt)
        .iter()
        .map(|&v| ((v as u64 & 0xffff) << 32) | (v as u64).wrapping_mul(7) & 0xffff_ffff)
        .collect()
}

fn ordered() -> Reduction<u64> {
    Reduction::ordered(|acc: &mut [u64], b: &[u64]| {
        for (x, y) in acc.iter_mut().zip(b) {
            *x = compose(*x, *y);
        }
    })
}

/// Whether every node's members of `g` are consecutive ranks (the
/// per-node stage then combines non-commutative reductions too).
fn nodes_consecutive(g: &Group) -> bool {
    let m = g.members();
    (0..m.len()).all(|i| {
        i == 0 || m[i - 1].node == m[i].node || !m[..i].iter().any(|a| a.node == m[i].node)
    })
}

/// The sequential reference: ranks `ranks` combined in order.
fn fold<T: Copy>(
    ranks: std::ops::Range<usize>,
    of: impl Fn(usize) -> Vec<T>,
    f: impl Fn(T, T) -> T,
) -> Option<Vec<T>> {
    ranks.map(of).reduce(|mut acc, b| {
        for (x, y) in acc.iter_mut().zip(b) {
            *x = f(*x, y);
        }
        acc
    })
}

/// The last above `tuning::ALLREDUCE_NODE_SLICES_MIN` in `i64`s (the
/// per-node stage by slices, in three chunks of `NODE_STAGE_CHUNK`, the
/// last short).
const SIZES: [usize; 6] = [0, 1, 7, 600, 5000, 32771];
/// For the largest layouts: below the allreduce thresholds (the forced
/// algorithms still run).
const SMALL_SIZES: [usize; 4] = [0, 1, 7, 300];
/// Broadcast sizes in `i64`s: below one chain segment (4096 of them at
/// `tuning::BCAST_CHAIN_SEGMENT`), exactly one, and four and a bit.
const BCAST_SIZES: [usize; 6] = [0, 1, 9, 3000, 4096, 16389];
/// For the largest layouts: within one chain segment.
const SMALL_BCAST_SIZES: [usize; 4] = [0, 1, 9, 3000];

struct Checker<'g> {
    g: &'g Group,
    checks: u64,
    sizes: &'static [usize],
    bcast_sizes: &'static [usize],
}

impl Checker<'_> {
    fn force(&self, a: Algorithms) {
        self.g.set_algorithms(a);
    }

    fn allreduce(&mut self, salt: u64) {
        let (p, r) = (self.g.size(), self.g.rank());
        let forced = [
            None,
            Some(AllreduceAlgorithm::RecursiveDoubling),
            Some(AllreduceAlgorithm::Rabenseifner),
            Some(AllreduceAlgorithm::Ring),
            Some(AllreduceAlgorithm::Hierarchical),
            Some(AllreduceAlgorithm::HostStage),
        ];
        for (k, &algorithm) in forced.iter().enumerate() {
            let mut a = Algorithms::new();
            a.allreduce = algorithm;
            self.force(a);
            for &n in self.sizes {
                let salt = salt + (k * 10 + n) as u64;
                let mut v = data(r, n, salt);
                self.g.allreduce(&mut v, Op::Sum).unwrap();
                let want = fold(0..p, |q| data(q, n, salt), i64::wrapping_add).unwrap();
                assert_eq!(v, want, "allreduce sum n={n} {algorithm:?}");
                let mut v: Vec<u32> = data(r, n, salt).iter().map(|&x| x as u32).collect();
                self.g.allreduce(&mut v, Op::BitXor).unwrap();
                let want = fold(
                    0..p,
                    |q| data(q, n, salt).iter().map(|&x| x as u32).collect(),
                    |a, b| a ^ b,
                )
                .unwrap();
                assert_eq!(v, want, "allreduce xor n={n}");
                let mut v: Vec<ValueLoc<f64>> = data(r, n, salt)
                    .iter()
                    .map(|&x| ValueLoc {
                        value: (x % 10) as f64,
                        location: r as u64,
                    })
                    .collect();
                self.g.allreduce(&mut v, Op::MinLoc).unwrap();
                for (i, got) in v.iter().enumerate() {
                    let (best, at) = (0..p)
                        .map(|q| ((value(q, i, salt) % 10) as f64, q as u64))
                        .fold((f64::INFINITY, 0), |b, c| if c.0 < b.0 { c } else { b });
                    assert_eq!((got.value, got.location), (best, at), "minloc");
                }
                let mut v: Vec<f64> = data(r, n, salt).iter().map(|&x| x as f64).collect();
                self.g.allreduce(&mut v, Op::Max).unwrap();
                let want = fold(0..p, |q| data(q, n, salt), i64::max).unwrap();
                assert!(v.iter().zip(&want).all(|(a, b)| *a == *b as f64), "max");
                let mut v: Vec<i64> = data(r, n, salt).iter().map(|&x| x % 3).collect();
                self.g
                    .allreduce(
                        &mut v,
                        Reduction::commutative(|a: &mut [i64], b: &[i64]| {
                            for (x, y) in a.iter_mut().zip(b) {
                                *x = x.wrapping_mul(*y);
                            }
                        }),
                    )
                    .unwrap();
                let want = fold(
                    0..p,
                    |q| data(q, n, salt).iter().map(|&x| x % 3).collect(),
                    i64::wrapping_mul,
                )
                .unwrap();
                assert_eq!(v, want, "commutative user op");
                let mut v = affine(r, n, salt);
                let result = self.g.allreduce(&mut v, ordered());
                let staged = matches!(
                    algorithm,
                    Some(AllreduceAlgorithm::Hierarchical | AllreduceAlgorithm::HostStage)
                );
                let flat_only = staged && !nodes_consecutive(self.g);
                match algorithm {
                    Some(AllreduceAlgorithm::Rabenseifner) | Some(AllreduceAlgorithm::Ring) => {
                        assert!(
                            matches!(result, Err(CollError::NotApplicable { .. })),
                            "{result:?}"
                        );
                    }
                    _ if flat_only => {
                        assert!(
                            matches!(result, Err(CollError::NotApplicable { .. })),
                            "{result:?}"
                        );
                    }
                    _ => {
                        result.unwrap();
                        let want = fold(0..p, |q| affine(q, n, salt), compose).unwrap();
                        assert_eq!(v, want, "ordered allreduce n={n}");
                    }
                }
                self.checks += 6;
            }
        }
        if p <= 8 {
            // Blocks large enough for the ring's allgather half to go by
            // multicast streams on a multicast job.
            let mut a = Algorithms::new();
            a.allreduce = Some(AllreduceAlgorithm::Ring);
            self.force(a);
            let n = p * (threadwire::group::tuning::ALLREDUCE_MULTICAST_BLOCK / 8) + 3;
            let mut v = data(r, n, salt + 99);
            self.g.allreduce(&mut v, Op::Sum).unwrap();
            let want = fold(0..p, |q| data(q, n, salt + 99), i64::wrapping_add).unwrap();
            assert!(v == want, "large ring allreduce n={n}");
            self.checks += 1;
        }
        self.force(Algorithms::new());
    }

    fn rooted(&mut self, salt: u64) {
        let (p, r) = (self.g.size(), self.g.rank());
        let roots = [0, p - 1, p / 2];
        for (k, &algorithm) in [
            None,
            Some(BcastAlgorithm::Binomial),
            Some(BcastAlgorithm::ScatterAllgather),
            Some(BcastAlgorithm::Chain),
            Some(BcastAlgorithm::Hierarchical),
            Some(BcastAlgorithm::HostStage),
            Some(BcastAlgorithm::Multicast),
        ]
        .iter()
        .enumerate()
        {
            let mut a = Algorithms::new();
            a.bcast = algorithm;
            self.force(a);
            for &n in self.bcast_sizes {
                for &root in &roots {
                    let salt = salt + (k * 100 + n + root) as u64;
                    let mut v = if r == root {
                        data(root, n, salt)
                    } else {
                        vec![0; n]
                    };
                    self.g.bcast(&mut v, root).unwrap();
                    assert_eq!(
                        v,
                        data(root, n, salt),
                        "bcast n={n} root={root} {algorithm:?} p={p}"
                    );
                    self.checks += 1;
                }
            }
        }
        self.force(Algorithms::new());
        for &n in &[0, 3, 700] {
            for &root in &roots {
                let salt = salt + (n * 7 + root) as u64;
                let got = self.g.reduce(&data(r, n, salt), Op::Sum, root).unwrap();
                let want = fold(0..p, |q| data(q, n, salt), i64::wrapping_add);
                assert_eq!(got, (r == root).then(|| want.unwrap()), "reduce");
                let got = self.g.reduce(&affine(r, n, salt), ordered(), root).unwrap();
                let want = fold(0..p, |q| affine(q, n, salt), compose);
                assert_eq!(got, (r == root).then(|| want.unwrap()), "ordered reduce");

                let got = self.g.gather(&data(r, n, salt), root).unwrap();
                let want: Vec<i64> = (0..p).flat_map(|q| data(q, n, salt)).collect();
                assert_eq!(got, (r == root).then(|| want.clone()), "gather");

                let counts: Vec<usize> = (0..p).map(|q| (q * n) % 5).collect();
                let got = self
                    .g
                    .gatherv(&data(r, counts[r], salt), &counts, root)
                    .unwrap();
                let want: Vec<Vec<i64>> = (0..p).map(|q| data(q, counts[q], salt)).collect();
                assert_eq!(got, (r == root).then_some(want), "gatherv");

                let all: Vec<i64> = (0..p).flat_map(|q| data(q, n, salt)).collect();
                let mine = self
                    .g
                    .scatter(if r == root { &all } else { &[] }, n, root)
                    .unwrap();
                assert_eq!(mine, data(r, n, salt), "scatter");

                let flat: Vec<i64> = (0..p).flat_map(|q| data(q, counts[q], salt)).collect();
                let mine = self
                    .g
                    .scatterv(
                        if r == root { &flat } else { &[] },
                        if r == root { &counts } else { &[] },
                        root,
                    )
                    .unwrap();
                assert_eq!(mine, data(r, counts[r], salt), "scatterv");
                self.checks += 6;
            }
        }
    }

    fn exchanges(&mut self, salt: u64) {
        let (p, r) = (self.g.size(), self.g.rank());
        for (k, &(ag, aa)) in [
            (None, None),
            (
                Some(AllgatherAlgorithm::Bruck),
                Some(AlltoallAlgorithm::Bruck),
            ),
            (
                Some(AllgatherAlgorithm::Ring),
                Some(AlltoallAlgorithm::Pairwise),
            ),
            (
                Some(AllgatherAlgorithm::Multicast),
                Some(AlltoallAlgorithm::Pairwise),
            ),
        ]
        .iter()
        .enumerate()
        {
            let mut a = Algorithms::new();
            a.allgather = ag;
            a.alltoall = aa;
            self.force(a);
            if matches!(ag, None | Some(AllgatherAlgorithm::Multicast)) {
                // Past Bruck's threshold: by multicast on a multicast job.
                let (n, salt) = (12_000, salt + 77 + k as u64);
                let got = self.g.allgather(&data(r, n, salt)).unwrap();
                let want: Vec<i64> = (0..p).flat_map(|q| data(q, n, salt)).collect();
                assert!(got == want, "allgather n={n} {ag:?}");
                self.checks += 1;
            }
            for &n in &[0, 1, 5, 100] {
                let salt = salt + (k * 1000 + n) as u64;
                let got = self.g.allgather(&data(r, n, salt)).unwrap();
                let want: Vec<i64> = (0..p).flat_map(|q| data(q, n, salt)).collect();
                assert_eq!(got, want, "allgather n={n} {ag:?}");
                // Block j of member q's alltoall data: data(q·p + j).
                let send: Vec<i64> = (0..p).flat_map(|j| data(r * p + j, n, salt)).collect();
                let got = self.g.alltoall(&send).unwrap();
                let want: Vec<i64> = (0..p).flat_map(|q| data(q * p + r, n, salt)).collect();
                assert_eq!(got, want, "alltoall n={n} {aa:?}");
                self.checks += 2;
            }
        }
        self.force(Algorithms::new());
        let counts_of = |q: usize| -> Vec<usize> { (0..p).map(|j| (q + 2 * j) % 4).collect() };
        let got = self.g.allgatherv(&data(r, r % 3, salt)).unwrap();
        let want: Vec<Vec<i64>> = (0..p).map(|q| data(q, q % 3, salt)).collect();
        assert_eq!(got, want, "allgatherv");
        let send: Vec<i64> = (0..p)
            .flat_map(|j| data(r * p + j, counts_of(r)[j], salt))
            .collect();
        let got = self.g.alltoallv(&send, &counts_of(r)).unwrap();
        let want: Vec<Vec<i64>> = (0..p)
            .map(|q| data(q * p + r, counts_of(q)[r], salt))
            .collect();
        assert_eq!(got, want, "alltoallv");
        self.checks += 2;
    }

    fn prefixes(&mut self, salt: u64) {
        let (p, r) = (self.g.size(), self.g.rank());
        for (k, &algorithm) in [
            None,
            Some(ReduceScatterAlgorithm::Ring),
            Some(ReduceScatterAlgorithm::ReduceScatterv),
        ]
        .iter()
        .enumerate()
        {
            let mut a = Algorithms::new();
            a.reduce_scatter = algorithm;
            self.force(a);
            for &n in &[0, 2, 300] {
                let salt = salt + (k * 10_000 + n) as u64;
                let counts: Vec<usize> = (0..p).map(|q| (q + n) % 4).collect();
                let total: usize = counts.iter().sum();
                let before: usize = counts[..r].iter().sum();
                let got = self
                    .g
                    .reduce_scatter(&data(r, total, salt), &counts, Op::Sum)
                    .unwrap();
                let want = fold(0..p, |q| data(q, total, salt), i64::wrapping_add).unwrap();
                assert_eq!(got, want[before..before + counts[r]], "reduce_scatter");
                let got = self
                    .g
                    .reduce_scatter(&affine(r, total, salt), &counts, ordered());
                if algorithm == Some(ReduceScatterAlgorithm::Ring) {
                    assert!(matches!(got, Err(CollError::NotApplicable { .. })));
                } else {
                    let want = fold(0..p, |q| affine(q, total, salt), compose).unwrap();
                    assert_eq!(got.unwrap(), want[before..before + counts[r]]);
                }
                self.checks += 2;
            }
        }
        self.force(Algorithms::new());
        for &n in &[0, 1, 50] {
            let got = self.g.scan(&data(r, n, salt), Op::Sum).unwrap();
            let want = fold(0..r + 1, |q| data(q, n, salt), i64::wrapping_add).unwrap();
            assert_eq!(got, want, "scan");
            let got = self.g.scan(&affine(r, n, salt), ordered()).unwrap();
            assert_eq!(
                got,
                fold(0..r + 1, |q| affine(q, n, salt), compose).unwrap()
            );
            let got = self.g.exscan(&affine(r, n, salt), ordered()).unwrap();
            assert_eq!(got, fold(0..r, |q| affine(q, n, salt), compose), "exscan");
            self.checks += 3;
        }
    }

    fn nonblocking(&mut self, salt: u64) {
        let (p, r) = (self.g.size(), self.g.rank());
        let n = 40;
        let sum = self.g.iallreduce(data(r, n, salt), Op::Sum);
        let bcast = self.g.ibcast(
            if r == p - 1 {
                data(p - 1, n, salt)
            } else {
                vec![0; n]
            },
            p - 1,
        );
        let scan = self.g.iscan(affine(r, n, salt), ordered());
        let barrier = self.g.ibarrier();
        let gathered = self.g.iallgather(data(r, 3, salt));
        let results = wait_all(vec![sum, bcast]);
        assert_eq!(
            results[0].as_ref().unwrap(),
            &fold(0..p, |q| data(q, n, salt), i64::wrapping_add).unwrap()
        );
        assert_eq!(results[1].as_ref().unwrap(), &data(p - 1, n, salt));
        // Above the per-node stage's slices and copies thresholds, the
        // later call waited first.
        let big = 32771;
        let sum = self.g.iallreduce(data(r, big, salt), Op::Sum);
        let root = p / 2;
        let own = if r == root {
            data(root, big, salt)
        } else {
            vec![0; big]
        };
        let bcast = self.g.ibcast(own, root);
        let results = wait_all(vec![bcast, sum]);
        assert_eq!(results[0].as_ref().unwrap(), &data(root, big, salt));
        assert_eq!(
            results[1].as_ref().unwrap(),
            &fold(0..p, |q| data(q, big, salt), i64::wrapping_add).unwrap()
        );
        let mut gathered = gathered;
        while !gathered.test() {
            // A fiber that polls must let the others run.
            threadwire::fiber::yield_now();
        }
        let want: Vec<i64> = (0..p).flat_map(|q| data(q, 3, salt)).collect();
        assert_eq!(gathered.wait().unwrap(), want);
        barrier.wait().unwrap();
        assert_eq!(
            scan.wait().unwrap(),
            fold(0..r + 1, |q| affine(q, n, salt), compose).unwrap()
        );
        let others = [
            self.g.ireduce(data(r, n, salt), Op::Sum, 0).wait().unwrap(),
            self.g.iexscan(data(r, n, salt), Op::Sum).wait().unwrap(),
        ];
        assert_eq!(others[0].is_some(), r == 0);
        assert_eq!(others[1].is_some(), r > 0);
        let v = self.g.ialltoall(data(r, p, salt)).wait().unwrap();
        assert_eq!(v.len(), p);
        let v = self.g.igather(data(r, 2, salt), 0).wait().unwrap();
        assert_eq!(v.is_some(), r == 0);
        let counts = vec![1; p];
        let v = self
            .g
            .igatherv(data(r, 1, salt), counts.clone(), 0)
            .wait()
            .unwrap();
        assert_eq!(v.is_some(), r == 0);
        let v = self.g.iscatter(data(r, p, salt), 1, 0).wait().unwrap();
        assert_eq!(v, vec![value(0, r, salt)]);
        let v = self
            .g
            .iscatterv(data(r, p, salt), counts.clone(), 0)
            .wait()
            .unwrap();
        assert_eq!(v, vec![value(0, r, salt)]);
        let v = self.g.iallgatherv(data(r, 1, salt)).wait().unwrap();
        assert_eq!(v.len(), p);
        let v = self
            .g
            .ialltoallv(data(r, p, salt), counts.clone())
            .wait()
            .unwrap();
        assert_eq!(v.len(), p);
        let v = self
            .g
            .ireduce_scatter(data(r, p, salt), counts, Op::Sum)
            .wait()
            .unwrap();
        assert_eq!(v.len(), 1);
        self.checks += 16;
    }

    fn trace(&self, what: &str) {
        if std::env::var_os("COLL_TRACE").is_some() {
            eprintln!("rank {} of {}: {what} done", self.g.rank(), self.g.size());
        }
    }

    fn everything(&mut self, salt: u64) {
        self.g.barrier().unwrap();
        for algorithm in [
            BarrierAlgorithm::Hierarchical,
            BarrierAlgorithm::Dissemination,
            BarrierAlgorithm::HostStage,
        ] {
            let mut a = Algorithms::new();
            a.barrier = Some(algorithm);
            self.force(a);
            self.g.barrier().unwrap();
            self.g.barrier().unwrap();
        }
        self.force(Algorithms::new());
        self.allreduce(salt);
        self.trace("allreduce");
        self.rooted(salt + 1);
        self.trace("rooted");
        self.exchanges(salt + 2);
        self.trace("exchanges");
        self.prefixes(salt + 3);
        self.trace("prefixes");
        self.nonblocking(salt + 4);
        self.trace("nonblocking");
        self.g.barrier().unwrap();
        self.checks += 2;
    }
}

fn mode_all(ep: &Endpoint, threads: u32, seed: u64) -> u64 {
    let world = Group::world_threads(ep, threads).unwrap();
    let mut c = Checker {
        g: &world,
        checks: 0,
        sizes: &SIZES,
        bcast_sizes: &BCAST_SIZES,
    };
    c.everything(seed);
    let mut checks = c.checks;
    let (p, r) = (world.size(), world.rank());
    // Split into three groups (non-power-of-two sizes), ranked backwards.
    let sub = world
        .split(Some((r % 3) as u32), -(r as i64))
        .unwrap()
        .expect("a colour");
    let want: Vec<Address> = (0..p)
        .rev()
        .filter(|q| q % 3 == r % 3)
        .map(|q| world.members()[q])
        .collect();
    assert_eq!(sub.members(), want);
    let mut c = Checker {
        g: &sub,
        checks: 0,
        sizes: &SIZES,
        bcast_sizes: &BCAST_SIZES,
    };
    c.allreduce(seed + 10);
    c.exchanges(seed + 11);
    c.prefixes(seed + 12);
    checks += c.checks;
    // Members that pass no colour get no group.
    let odd = world.split((r % 2 == 1).then_some(1), 0).unwrap();
    assert_eq!(odd.is_some(), r % 2 == 1);
    let dup = world.dup().unwrap();
    assert_eq!(dup.members(), world.members());
    let mut c = Checker {
        g: &dup,
        checks: 0,
        sizes: &SIZES,
        bcast_sizes: &BCAST_SIZES,
    };
    c.rooted(seed + 20);
    checks += c.checks;
    // The rooted collectives on the first 1, 2, 3 and 5 members: the
    // chain's shortest chains and an odd one.
    for k in [1, 2, 3, 5].into_iter().filter(|&k| k <= p) {
        let Some(first) = world.split((r < k).then_some(0), r as i64).unwrap() else {
            continue;
        };
        assert_eq!(first.size(), k);
        let mut c = Checker {
            g: &first,
            checks: 0,
            sizes: &SIZES,
            bcast_sizes: &BCAST_SIZES,
        };
        c.rooted(seed + 30 + k as u64);
        checks += c.checks;
    }
    // A mesh: rows × cols with cols the largest divisor ≤ √p.
    let cols = (1..=p).filter(|d| p % d == 0 && d * d <= p).max().unwrap();
    let (row, col) = world.mesh(p / cols, cols).unwrap();
    assert_eq!((row.size(), col.size()), (cols, p / cols));
    assert_eq!(row.rank(), r % cols);
    assert_eq!(col.rank(), r / cols);
    let mut v = [r as i64];
    row.allreduce(&mut v, Op::Sum).unwrap();
    let base = r / cols * cols;
    assert_eq!(v[0], (base..base + cols).sum::<usize>() as i64);
    let mut v = [r as i64];
    col.allreduce(&mut v, Op::Sum).unwrap();
    assert_eq!(
        v[0],
        (0..p / cols).map(|i| i * cols + r % cols).sum::<usize>() as i64
    );
    checks + 4
}

/// Every collective on the world group only, at small sizes: for the
/// largest layouts, which oversubscribe two cores.
fn mode_world(ep: &Endpoint, threads: u32, seed: u64) -> u64 {
    let world = Group::world_threads(ep, threads).unwrap();
    let mut c = Checker {
        g: &world,
        checks: 0,
        sizes: &SMALL_SIZES,
        bcast_sizes: &SMALL_BCAST_SIZES,
    };
    c.everything(seed);
    // Groups of 1, 2, 3, … members (consecutive ranks; across nodes where
    // the layout spreads them), each checked alone, all at once.
    let r = world.rank();
    let bucket = (1..)
        .find(|b: &usize| r < b * (b + 1) / 2)
        .expect("a bucket")
        - 1;
    let part = world
        .split(Some(bucket as u32), r as i64)
        .unwrap()
        .expect("a colour");
    assert_eq!(
        part.size(),
        (bucket + 1).min(world.size() - bucket * (bucket + 1) / 2)
    );
    let mut c2 = Checker {
        g: &part,
        checks: 0,
        sizes: &SMALL_SIZES,
        bcast_sizes: &SMALL_BCAST_SIZES,
    };
    c2.everything(seed + 100);
    c.checks + c2.checks
}

/// Plain and group point-to-point messages carrying the tags of the
/// collectives around them never match the collectives' receives.
fn mode_isolation(ep: &Endpoint, threads: u32) -> u64 {
    let g = Group::world_threads(ep, threads).unwrap();
    let g2 = g.dup().unwrap();
    let (p, r) = (g.size(), g.rank());
    let right = (r + 1) % p;
    let left = (r + p - 1) % p;
    for tag in 0..20u32 {
        ep.send(g.address(right).unwrap(), tag, b"plain".to_vec())
            .unwrap();
        g.send(right, tag, b"group".to_vec()).unwrap();
        g2.send(right, tag, b"dup".to_vec()).unwrap();
    }
    for round in 0..20 {
        let mut v = [r as u64 + round];
        g.allreduce(&mut v, Op::Sum).unwrap();
        assert_eq!(v[0], (0..p as u64).map(|q| q + round).sum::<u64>());
        let mut v = [r as u64];
        g2.bcast(&mut v, 0).unwrap();
        assert_eq!(v[0], 0);
    }
    // The dup's messages first, though sent last: contexts, not order.
    for tag in 0..20u32 {
        let m = g2.recv(Some(left), tag).unwrap();
        assert_eq!(m.into_vec(), b"dup");
    }
    for tag in 0..20u32 {
        let m = g.recv(None, tag).unwrap();
        assert_eq!(g.rank_of(m.source()), Some(left));
        assert_eq!(m.into_vec(), b"group");
        let m = ep.recv(ANY_SOURCE, tag).unwrap();
        assert_eq!(m.into_vec(), b"plain");
    }
    assert!(ep
        .iprobe(ANY_SOURCE, threadwire::ANY_TAG)
        .unwrap()
        .is_none());
    g.barrier().unwrap();
    60
}

/// Nonblocking collectives in flight while the same endpoints exchange
/// point-to-point messages.
fn mode_overlap(ep: &Endpoint, threads: u32, seed: u64) -> u64 {
    let g = Group::world_threads(ep, threads).unwrap();
    let (p, r) = (g.size(), g.rank());
    let right = g.address((r + 1) % p).unwrap();
    let left = g.address((r + p - 1) % p).unwrap();
    let mut checks = 0;
    for round in 0..10u64 {
        let n = [1, 100, 3000][round as usize % 3];
        let mut sum = g.iallreduce(data(r, n, seed + round), Op::Sum);
        let gathered = g.iallgather(vec![r as u32]);
        let barrier = g.ibarrier();
        for hop in 0..5u32 {
            ep.send(
                right,
                hop,
                (round as u32 * 100 + hop).to_le_bytes().to_vec(),
            )
            .unwrap();
            let m = ep.recv(left, hop).unwrap();
            assert_eq!(m.into_vec(), (round as u32 * 100 + hop).to_le_bytes());
            sum.test();
        }
        barrier.wait().unwrap();
        let want = fold(0..p, |q| data(q, n, seed + round), i64::wrapping_add).unwrap();
        assert_eq!(sum.wait().unwrap(), want);
        assert_eq!(gathered.wait().unwrap(), (0..p as u32).collect::<Vec<_>>());
        checks += 3;
    }
    checks
}

fn mode_errors(ep: &Endpoint, threads: u32) -> u64 {
    let me = ep.address();
    let nodes = ep.node().nodes();
    assert_eq!(
        Group::new(ep, &[Address::new(nodes, 0)]).unwrap_err(),
        CollError::NoSuchEndpoint(Address::new(nodes, 0))
    );
    assert_eq!(Group::new(ep, &[]).unwrap_err(), CollError::Empty);
    assert_eq!(
        Group::new(ep, &[me, me]).unwrap_err(),
        CollError::DuplicateMember(me)
    );
    let stranger = Address::new(me.node, me.thread + 1000);
    assert_eq!(
        Group::new(ep, &[stranger]).unwrap_err(),
        CollError::NotMember(me)
    );
    let g = Group::world_threads(ep, threads).unwrap();
    // Without the argument check (as in release builds): the abort alone
    // (the `disagree` mode has the check).
    g.set_checks(false);
    let (p, r) = (g.size(), g.rank());
    let out_of_range = CollError::RankOutOfRange { rank: p, size: p };
    assert_eq!(g.bcast(&mut [1u8], p).unwrap_err(), out_of_range);
    assert_eq!(g.send(p, 0, vec![]).unwrap_err(), out_of_range);
    // Only the last member passes a bad root: it fails, and so does every
    // member that depends on it; none hangs.
    let root = if r == p - 1 { p } else { 0 };
    match g.bcast(&mut [1u8; 4], root) {
        Err(e) => assert_eq!(e, out_of_range),
        Ok(()) => assert!(r != p - 1),
    }
    g.barrier().unwrap();
    let mut checks = 6;
    if p > 1 {
        // Rank 0's buffer is shorter than everyone else's.
        let mut v = vec![1u64; if r == 0 { 3 } else { 4 }];
        let e = g.allreduce(&mut v, Op::Sum).unwrap_err();
        assert!(matches!(e, CollError::LengthMismatch { .. }), "{e:?}");
        let e = g.alltoall(&vec![0u8; p + 1]).unwrap_err();
        assert!(matches!(e, CollError::LengthMismatch { .. }), "{e:?}");
        // The root's counts do not cover the group.
        let e = g.scatterv(&[1u8, 2], &[1, 1, 1][..p.min(3) - 1], 0);
        assert!(matches!(e, Err(CollError::LengthMismatch { .. })), "{e:?}");
        // The chain's root has one segment more than everyone else: each
        // segment is well formed, the root's count says otherwise.
        let mut forced = Algorithms::new();
        forced.bcast = Some(BcastAlgorithm::Chain);
        g.set_algorithms(forced);
        let segment = threadwire::group::tuning::BCAST_CHAIN_SEGMENT;
        let mut v = vec![1u8; if r == 0 { 2 * segment } else { segment }];
        match g.bcast(&mut v, 0) {
            Err(e) => assert!(matches!(e, CollError::LengthMismatch { .. }), "{e:?}"),
            Ok(()) => assert_eq!(r, 0, "only the root, which only sends, may finish"),
        }
        g.set_algorithms(Algorithms::new());
        // Large buffers (where the nodes share a host: the host stage's
        // reads), rank 0's shorter, then the root's shorter.
        let mut v = vec![1u64; if r == 0 { 8191 } else { 8192 }];
        let e = g.allreduce(&mut v, Op::Sum).unwrap_err();
        assert!(matches!(e, CollError::LengthMismatch { .. }), "{e:?}");
        let mut v = vec![1u64; if r == 0 { 8192 } else { 8200 }];
        if let Ok(()) = g.bcast(&mut v, 0) {
            assert_eq!(r, 0, "only the root may finish");
        }
        checks += 6;
    }
    let e = g.allreduce(&mut [1.0f64], Op::BitAnd).unwrap_err();
    assert!(matches!(e, CollError::Unsupported { op: Op::BitAnd, .. }));
    let mut forced = Algorithms::new();
    forced.allreduce = Some(AllreduceAlgorithm::Ring);
    g.set_algorithms(forced);
    let e = g.allreduce(&mut affine(r, 2, 1), ordered()).unwrap_err();
    assert!(matches!(e, CollError::NotApplicable { .. }));
    g.set_algorithms(Algorithms::new());
    assert!(matches!(
        g.mesh(p + 1, 1).unwrap_err(),
        CollError::LengthMismatch { .. }
    ));
    // The group still works after all that.
    let mut v = [1u32];
    g.allreduce(&mut v, Op::Sum).unwrap();
    assert_eq!(v[0] as usize, p);
    checks + 4
}

/// The last node dies as the others enter an allreduce of `n` elements
/// (1: the per-node stage; 1000: flat).
fn mode_kill(ep: &Endpoint, threads: u32, n: usize) -> u64 {
    let g = Group::world_threads(ep, threads).unwrap();
    let last = ep.node().nodes() - 1;
    g.barrier().unwrap();
    if ep.address().node == last {
        if ep.address().thread == 0 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            println!("n{last}: killing myself");
            // SAFETY: kill(2) with our own pid; SIGKILL ends the process.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        // Fibers of the dying node wait to die with it.
        let _ = ep.recv(ANY_SOURCE, u32::MAX);
        unreachable!("the process was killed");
    }
    // Usually the dead node; a survivor that saw the loss first and
    // finished may be the member this one hears of first. Odd threads use
    // the nonblocking form, for the same call.
    let result = match ep.address().thread % 2 {
        0 => {
            let mut v = vec![1i64; n];
            g.allreduce(&mut v, Op::Sum)
        }
        _ => g.iallreduce(vec![1i64; n], Op::Sum).wait().map(|_| ()),
    };
    match result {
        Err(CollError::PeerLost(lost)) => {
            println!("{}: PeerLost n{} ({lost})", ep.address(), lost.node);
        }
        other => panic!(
            "{}: allreduce: expected PeerLost, got {other:?}",
            ep.address()
        ),
    }
    1
}

/// Blocking and nonblocking forms mixed across members for the same
/// calls: the per-node stage serves both, so each call still completes.
fn mode_mixed(ep: &Endpoint, threads: u32, seed: u64) -> u64 {
    let g = Group::world_threads(ep, threads).unwrap();
    let (p, r) = (g.size(), g.rank());
    let mut checks = 0;
    // The first half of the rounds without the argument check (as release
    // builds run), the second half with it.
    for round in 0..8u64 {
        g.set_checks(round >= 4);
        let blocking = (r as u64 + round).is_multiple_of(2);
        if blocking {
            g.barrier().unwrap();
        } else {
            g.ibarrier().wait().unwrap();
        }
        let n = [1, 8, 600][round as usize % 3];
        let salt = seed + round;
        let want = fold(0..p, |q| data(q, n, salt), i64::wrapping_add).unwrap();
        let got = if blocking {
            let mut v = data(r, n, salt);
            g.allreduce(&mut v, Op::Sum).unwrap();
            v
        } else {
            g.iallreduce(data(r, n, salt), Op::Sum).wait().unwrap()
        };
        assert_eq!(got, want, "mixed allreduce n={n}");
        let root = round as usize % p;
        let mine = if r == root {
            data(root, n, salt)
        } else {
            vec![0; n]
        };
        let got = if blocking {
            let mut v = mine;
            g.bcast(&mut v, root).unwrap();
            v
        } else {
            g.ibcast(mine, root).wait().unwrap()
        };
        assert_eq!(got, data(root, n, salt), "mixed bcast n={n}");
        checks += 3;
    }
    // Calls of the per-node stage under way together, waited in reverse
    // order: a later call advances the earlier ones it waits for.
    let n = 5;
    let barrier = g.ibarrier();
    let sum = g.iallreduce(data(r, n, seed), Op::Sum);
    let bcast = g.ibcast(if r == 0 { data(0, n, seed) } else { vec![0; n] }, 0);
    assert_eq!(bcast.wait().unwrap(), data(0, n, seed));
    let want = fold(0..p, |q| data(q, n, seed), i64::wrapping_add).unwrap();
    assert_eq!(sum.wait().unwrap(), want);
    barrier.wait().unwrap();
    // A dropped request's call still completes here (the others need it).
    drop(g.iallreduce(data(r, n, seed), Op::Sum));
    let mut v = data(r, n, seed);
    g.allreduce(&mut v, Op::Sum).unwrap();
    assert_eq!(v, want);
    checks + 3 + freed_group_keeps_its_id(&g, seed)
}

/// A group's id as its `Debug` shows it.
fn id_of(g: &Group) -> String {
    let shown = format!("{g:?}");
    shown[shown.find("id ").expect("an id")..].to_string()
}

/// A group dropped while a nonblocking call on it is under way keeps its
/// id until the call is over: a group built meanwhile gets another, and
/// the old call's messages never meet the new group's.
fn freed_group_keeps_its_id(g: &Group, seed: u64) -> u64 {
    let (p, r) = (g.size(), g.rank());
    let n = 3000;
    let old = g.dup().unwrap();
    let old_id = id_of(&old);
    // Large: flat, several rounds; the ring forced so that it really is.
    let mut ring = Algorithms::new();
    ring.allreduce = Some(AllreduceAlgorithm::Ring);
    old.set_algorithms(ring);
    let pending = old.iallreduce(data(r, n, seed), Op::Sum);
    drop(old);
    let new = g.dup().unwrap();
    assert_ne!(
        id_of(&new),
        old_id,
        "a freed group's id reused while in use"
    );
    new.set_algorithms(ring);
    let got = new
        .iallreduce(data(r, n, seed + 1), Op::Sum)
        .wait()
        .unwrap();
    let want = |salt| fold(0..p, |q| data(q, n, salt), i64::wrapping_add).unwrap();
    assert_eq!(got, want(seed + 1));
    assert_eq!(pending.wait().unwrap(), want(seed));
    2
}

/// Asserts that `result` is the error `want` describes, at every member.
fn fails(
    what: &str,
    result: Result<impl std::fmt::Debug, CollError>,
    want: impl Fn(&CollError) -> bool,
) {
    match result {
        Err(e) if want(&e) => {}
        other => panic!("{what}: expected an error of the kind wanted, got {other:?}"),
    }
}

fn calls_differ(e: &CollError) -> bool {
    *e == CollError::CallsDiffer
}

fn length_mismatch(e: &CollError) -> bool {
    matches!(e, CollError::LengthMismatch { .. })
}

/// With the argument check on, bad or differing arguments at only some
/// members fail the call at every member with a typed error, none hangs
/// and the group works afterwards; blocking and nonblocking forms alike.
fn mode_disagree(ep: &Endpoint, threads: u32) -> u64 {
    let g = Group::world_threads(ep, threads).unwrap();
    g.set_checks(true);
    let (p, r) = (g.size(), g.rank());
    let last = r == p - 1;
    let out_of_range = |e: &CollError| *e == CollError::RankOutOfRange { rank: p, size: p };
    let root = if last { p } else { 0 };
    fails(
        "bcast root out of range",
        g.bcast(&mut [1u8; 4], root),
        out_of_range,
    );
    fails(
        "reduce root out of range",
        g.ireduce(vec![1u8; 4], Op::Sum, root).wait(),
        out_of_range,
    );
    let mut checks = 2;
    if p > 1 {
        // Lengths on either side of the per-node stage's limit: one member
        // would take the stage and the others run flat.
        let mut v = vec![1u64; if r == 0 { 1 } else { 1000 }];
        fails(
            "allreduce lengths",
            g.allreduce(&mut v, Op::Sum),
            calls_differ,
        );
        let v = vec![1u64; if r == 0 { 1 } else { 1000 }];
        let got = match r % 2 {
            0 => g.iallreduce(v, Op::Sum).wait(),
            _ => {
                let mut v = v;
                g.allreduce(&mut v, Op::Sum).map(|()| v)
            }
        };
        fails("mixed-form allreduce lengths", got, calls_differ);
        let root = if last { 1 } else { 0 };
        fails("bcast roots", g.bcast(&mut [1u8; 4], root), calls_differ);
        let n = if last { 5 } else { 4 };
        fails("bcast lengths", g.bcast(&mut vec![1u8; n], 0), calls_differ);
        let op = if last { Op::Max } else { Op::Sum };
        fails("reduce operations", g.reduce(&[1i32], op, 0), calls_differ);
        let ordered_or_not = match last {
            true => g.scan(&affine(r, 2, 1), ordered()),
            false => g.scan(&affine(r, 2, 1), Op::BitXor),
        };
        fails("scan operations", ordered_or_not, calls_differ);
        let got = if last {
            g.barrier().map(|()| Vec::new())
        } else {
            g.allgather(&[1u8])
        };
        fails("different collectives", got, calls_differ);
        // The last member sends one element more than the root expects.
        let counts = vec![2; p];
        let mine = vec![1u8; if last { 3 } else { 2 }];
        fails("gatherv counts", g.gatherv(&mine, &counts, 0), calls_differ);
        // The root's data does not fill the blocks.
        let all = vec![1u8; if r == 0 { 2 * p - 1 } else { 0 }];
        fails("scatter length", g.scatter(&all, 2, 0), length_mismatch);
        let counts = vec![1; if last { p + 1 } else { p }];
        fails(
            "alltoallv counts",
            g.ialltoallv(vec![1u8; counts.len()], counts).wait(),
            length_mismatch,
        );
        checks += 10;
    }
    // The group still works after all that.
    let mut v = [1u32];
    g.allreduce(&mut v, Op::Sum).unwrap();
    assert_eq!(v[0] as usize, p);
    checks + 1
}

fn run(ep: &Endpoint, mode: &str, threads: u32, seed: u64) -> u64 {
    match mode {
        "disagree" => mode_disagree(ep, threads),
        "mixed" => mode_mixed(ep, threads, seed),
        "all" => mode_all(ep, threads, seed),
        "world" => mode_world(ep, threads, seed),
        "isolation" => mode_isolation(ep, threads),
        "overlap" => mode_overlap(ep, threads, seed),
        "errors" => mode_errors(ep, threads),
        "kill" => mode_kill(ep, threads, 1000),
        "kill-small" => mode_kill(ep, threads, 1),
        "kill-large" => mode_kill(ep, threads, 1 << 17),
        _ => panic!("unknown mode {mode}"),
    }
}

fn main() {
    common::exit_on_panic();
    let mode: String = common::arg(1, "all".to_string());
    let threads: u32 = common::arg(2, 2);
    let seed: u64 = common::arg(3, 1);
    let os_threads = common::arg(4, "fibers".to_string()) == "os";
    let ep = threadwire::Config::new()
        .log(true)
        .init()
        .expect("join the job");
    let node = ep.node().clone();
    let workers: Vec<_> = (1..threads)
        .map(|_| {
            let mode = mode.clone();
            let body = move |ep: Endpoint| run(&ep, &mode, threads, seed);
            if os_threads {
                node.spawn_os(body)
            } else {
                node.spawn(body)
            }
        })
        .collect();
    let mut checks = run(&ep, &mode, threads, seed);
    for w in workers {
        checks += w.join().expect("worker panicked");
    }
    println!("coll n{}: ok mode={mode} checks={checks}", node.id());
}
