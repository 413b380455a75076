//! SUMMA (van de Geijn and Watts, 1997; the thesis §4.2.1) on an R × C
//! mesh of nodes.
//!
//! Node i is at mesh row `i / C`, column `i mod C`. Rows of A and C are
//! split over mesh rows (`I_r`), columns of B and C over mesh columns
//! (`J_c`), each in near-equal parts; the inner dimension is split over
//! mesh columns for A (`KA_c`) and over mesh rows for B (`KB_r`). Node
//! (r, c) holds `A[I_r, KA_c]`, `B[KB_r, J_c]` and computes
//! `C[I_r, J_c] = Σ A[I_r, p] · B[p, J_c]` over the panels p.
//!
//! 1. **Groups.** The world group of the nodes' thread 0 is split by
//!    [`Group::mesh`] into the caller's row group (ranked by column) and
//!    column group (ranked by row).
//! 2. **Blocks.** Each node makes its blocks of A and B from the seed
//!    ([`super::element`]), already cut into the panels of step 3 (for
//!    the first round B = I). A barrier, and the clock starts.
//! 3. **Panels.** The inner dimension is cut at every boundary of `KA`
//!    and `KB` and every `panel` columns, so that a panel has one owner
//!    column (of A) and one owner row (of B). For each panel the owner
//!    column broadcasts its columns of `A[I_r, ·]` along each mesh row and
//!    the owner row its rows of `B[·, J_c]` along each mesh column (both
//!    started at once, [`Group::ibcast`], the owner's panel moved in and
//!    back out, not copied); every node then adds their
//!    product to its block of C with the kernel on T threads.
//! 4. **Overlap.** Threaded, the multiply of panel p runs on a compute
//!    thread (and the kernel's threads) while this thread, the node's
//!    endpoint, broadcasts panel p + 1: communication hides behind
//!    computation. Serial, one thread fetches and multiplies in turn.
//! 5. **Verify and account.** The clock stops. In the identity round each
//!    node compares its block of C with its block of A; every node's
//!    times and that verdict are gathered at node 0 with the blocks of C
//!    ([`Group::gatherv`]), and node 0 — the master — checks the whole C:
//!    equal to A, then, in the random round, within
//!    [`tolerance`](super::tolerance) of the blas kernel's product.
//!
//! Times are per node: *computation* is the time in the kernel,
//! *communication* the time in broadcasts; with overlap they add up to
//! more than the elapsed time, and the difference is what overlap saved.

use super::{seeds, verify_identity, verify_random, Config, Error, Kernel, Matrix, Report};
use std::ops::Range;
use std::time::{Duration, Instant};
use threadwire::{Endpoint, Group};

/// An R × C arrangement of the job's nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mesh {
    /// Mesh rows R.
    pub rows: usize,
    /// Mesh columns C.
    pub cols: usize,
}

impl Mesh {
    /// The mesh of `nodes` with the fewest more columns than rows: 4 is
    /// 2x2, 6 is 2x3, 7 is 1x7.
    pub fn squarest(nodes: u32) -> Mesh {
        let n = nodes.max(1) as usize;
        let rows = (1..=n)
            .take_while(|r| r * r <= n)
            .filter(|r| n.is_multiple_of(*r))
            .last()
            .unwrap_or(1);
        Mesh {
            rows,
            cols: n / rows,
        }
    }

    /// Mesh (row, column) of node `i`.
    pub fn place(&self, i: usize) -> (usize, usize) {
        (i / self.cols, i % self.cols)
    }
}

impl std::fmt::Display for Mesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.rows, self.cols)
    }
}

/// A mesh that is not `RxC` with R, C ≥ 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: a mesh is RxC, rows x columns, each at least 1 (e.g. 2x3)")]
pub struct ParseMeshError(pub String);

impl std::str::FromStr for Mesh {
    type Err = ParseMeshError;

    fn from_str(s: &str) -> Result<Mesh, ParseMeshError> {
        let bad = || ParseMeshError(s.to_string());
        let (r, c) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        let (rows, cols) = (
            r.trim().parse().map_err(|_| bad())?,
            c.trim().parse().map_err(|_| bad())?,
        );
        match rows >= 1 && cols >= 1 {
            true => Ok(Mesh { rows, cols }),
            false => Err(bad()),
        }
    }
}

/// Part `index` of `len` split in `parts` near-equal parts (the first
/// `len mod parts` one longer).
pub fn part(len: usize, parts: usize, index: usize) -> Range<usize> {
    let (per, extra) = (len / parts, len % parts);
    let start = index * per + index.min(extra);
    start..start + per + usize::from(index < extra)
}

/// A panel of the inner dimension and who owns it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Panel {
    /// Its columns of A, rows of B.
    pub range: Range<usize>,
    /// The mesh column holding these columns of A.
    pub a_owner: usize,
    /// The mesh row holding these rows of B.
    pub b_owner: usize,
}

/// The panels of an inner dimension `k` on `mesh`, at most `width` wide
/// (step 3).
pub fn panels(k: usize, mesh: Mesh, width: usize) -> Vec<Panel> {
    let mut cuts: Vec<usize> = (0..k).step_by(width.max(1)).collect();
    cuts.extend((0..mesh.cols).map(|c| part(k, mesh.cols, c).start));
    cuts.extend((0..mesh.rows).map(|r| part(k, mesh.rows, r).start));
    cuts.retain(|&x| x < k);
    cuts.sort_unstable();
    cuts.dedup();
    let owner = |parts: usize, at: usize| (0..parts).find(|&i| part(k, parts, i).contains(&at));
    cuts.iter()
        .enumerate()
        .map(|(i, &start)| Panel {
            range: start..cuts.get(i + 1).copied().unwrap_or(k),
            a_owner: owner(mesh.cols, start).expect("a cut is inside k"),
            b_owner: owner(mesh.rows, start).expect("a cut is inside k"),
        })
        .collect()
}

/// What one node measured in a round.
#[derive(Clone, Copy, Debug, Default)]
struct Times {
    elapsed: Duration,
    compute: Duration,
    communication: Duration,
}

/// This node's place and blocks.
struct Place {
    mesh: Mesh,
    /// The matrices are n × n.
    n: usize,
    row: usize,
    col: usize,
    /// `I_r`, `J_c`.
    rows: Range<usize>,
    cols: Range<usize>,
}

impl Place {
    fn new(mesh: Mesh, node: usize, n: usize) -> Place {
        let (row, col) = mesh.place(node);
        Place {
            mesh,
            n,
            row,
            col,
            rows: part(n, mesh.rows, row),
            cols: part(n, mesh.cols, col),
        }
    }
}

/// Runs SUMMA on this node (thread 0); the report on node 0.
pub fn run(ep: &Endpoint, cfg: Config) -> Result<Option<Report>, Error> {
    let nodes = ep.node().nodes();
    let mesh = cfg.mesh.unwrap_or_else(|| Mesh::squarest(nodes));
    let n = cfg.size;
    // Step 1.
    let world = Group::world(ep)?;
    let (row_group, col_group) = world.mesh(mesh.rows, mesh.cols)?;
    let place = Place::new(mesh, ep.node().id() as usize, n);
    let (a_seed, b_seed) = seeds(cfg.seed);
    let groups = Groups {
        world: &world,
        row: &row_group,
        col: &col_group,
    };
    let panels = panels(n, mesh, cfg.panel);
    let a = |i: usize, j: usize| super::element(a_seed, i, j);
    let identity = |i: usize, j: usize| f64::from(u8::from(i == j));
    let random = |i: usize, j: usize| super::element(b_seed, i, j);
    // The identity round, then the random one (step 2).
    let owned = Owned::make(&place, &panels, a, identity);
    let (c, times) = multiply(&groups, &place, &panels, owned, cfg)?;
    let expected = Matrix::from_fn(place.rows.len(), place.cols.len(), |i, j| {
        a(place.rows.start + i, place.cols.start + j)
    });
    let identity_here = c == expected;
    let first = gather(&groups, &place, &c, times, identity_here)?;
    let owned = Owned::make(&place, &panels, a, random);
    let (c, times) = multiply(&groups, &place, &panels, owned, cfg)?;
    let second = gather(&groups, &place, &c, times, true)?;
    let (Some(first), Some(second)) = (first, second) else {
        return Ok(None);
    };
    // Step 5, at the master.
    if let Some(node) = first.identity_failed {
        return Err(Error::Wrong(format!("A x I differs from A at node {node}")));
    }
    let a = Matrix::from_fn(n, n, a);
    verify_identity(&a, &first.c, "the master")?;
    let b = Matrix::from_fn(n, n, random);
    let max_error = verify_random(&a, &b, &second.c, cfg.threads as usize)?;
    Ok(Some(Report {
        size: n,
        layout: cfg.layout,
        mesh: Some(mesh),
        nodes,
        kernel: cfg.kernel,
        threads: cfg.threads,
        serial: cfg.serial,
        elapsed: second.elapsed,
        compute: second.compute,
        communication: second.communication,
        max_error,
    }))
}

struct Groups<'a> {
    world: &'a Group,
    row: &'a Group,
    col: &'a Group,
}

/// This node's own panels of A and B, by panel (`None` where another
/// node owns it): made before the clock starts, each moved into its
/// broadcast and back out of it, never copied.
struct Owned {
    a: Vec<Option<Vec<f64>>>,
    b: Vec<Option<Vec<f64>>>,
}

impl Owned {
    /// The panels of A (`a(i, j)`) and B (`b(i, j)`) that this node owns.
    fn make(
        place: &Place,
        panels: &[Panel],
        a: impl Fn(usize, usize) -> f64,
        b: impl Fn(usize, usize) -> f64,
    ) -> Owned {
        let (rows, cols) = (&place.rows, &place.cols);
        let a = panels
            .iter()
            .map(|p| {
                (p.a_owner == place.col).then(|| {
                    Matrix::from_fn(rows.len(), p.range.len(), |i, j| {
                        a(rows.start + i, p.range.start + j)
                    })
                    .data
                })
            })
            .collect();
        let b = panels
            .iter()
            .map(|p| {
                (p.b_owner == place.row).then(|| {
                    Matrix::from_fn(p.range.len(), cols.len(), |i, j| {
                        b(p.range.start + i, cols.start + j)
                    })
                    .data
                })
            })
            .collect();
        Owned { a, b }
    }
}

/// Steps 2–4: this node's block of `A × B` from its blocks, and its times.
fn multiply(
    groups: &Groups<'_>,
    place: &Place,
    panels: &[Panel],
    mut owned: Owned,
    cfg: Config,
) -> Result<(Matrix, Times), Error> {
    let mut c = Matrix::zeros(place.rows.len(), place.cols.len());
    // Mapped before the clock starts, as A and B are: zeros from the
    // allocator are fresh pages mapped at their first write, and taking
    // those faults inside the kernel cost it a third of its rate (one
    // node, n = 2048, two threads: 140 against 90 ms).
    c.data.fill(0.0);
    let threads = cfg.threads as usize;
    let mut compute = Duration::ZERO;
    let mut communication = Duration::ZERO;
    groups.world.barrier()?;
    let began = Instant::now();
    let mut fetch = |p: usize| -> Result<(Matrix, Matrix), Error> {
        let t = Instant::now();
        let (a, b) = (owned.a[p].take(), owned.b[p].take());
        let got = fetch(groups, place, &panels[p], a, b);
        communication += t.elapsed();
        got
    };
    if panels.is_empty() {
        return Ok((c, Times::default()));
    }
    let mut current = fetch(0)?;
    for p in 0..panels.len() {
        let next = (p + 1 < panels.len()).then_some(p + 1);
        let (pa, pb) = &current;
        if cfg.serial {
            let t = Instant::now();
            cfg.kernel
                .multiply_add(pa.view(), pb.view(), &mut c.data, threads);
            compute += t.elapsed();
            if let Some(next) = next {
                current = fetch(next)?;
            }
            continue;
        }
        let c_data = &mut c.data;
        let kernel: Kernel = cfg.kernel;
        let (took, fetched) = std::thread::scope(|scope| {
            let computing = scope.spawn(move || {
                let t = Instant::now();
                kernel.multiply_add(pa.view(), pb.view(), c_data, threads);
                t.elapsed()
            });
            let fetched = next.map(&mut fetch).transpose();
            (computing.join(), fetched)
        });
        compute +=
            took.map_err(|_| Error::Panicked(groups.world.members()[groups.world.rank()]))?;
        if let Some(next) = fetched? {
            current = next;
        }
    }
    Ok((
        c,
        Times {
            elapsed: began.elapsed(),
            compute,
            communication,
        },
    ))
}

/// One panel's blocks of A and B at this node (step 3): `a` and `b` are
/// this node's own, if it is the panel's owner column or row.
fn fetch(
    groups: &Groups<'_>,
    place: &Place,
    panel: &Panel,
    a: Option<Vec<f64>>,
    b: Option<Vec<f64>>,
) -> Result<(Matrix, Matrix), Error> {
    let width = panel.range.len();
    let (m, n) = (place.rows.len(), place.cols.len());
    let a_panel = a.unwrap_or_else(|| vec![0.0; m * width]);
    let b_panel = b.unwrap_or_else(|| vec![0.0; width * n]);
    // A group of one (a mesh one node wide) has nobody to send to: the
    // panel stays here (`Err`: not started).
    let start = |group: &Group, buf: Vec<f64>, root: usize| match group.size() {
        1 => Err(buf),
        _ => Ok(group.ibcast(buf, root)),
    };
    let a_request = start(groups.row, a_panel, panel.a_owner);
    let b_request = start(groups.col, b_panel, panel.b_owner);
    let a_panel = match a_request {
        Ok(request) => request.wait()?,
        Err(own) => own,
    };
    let b_panel = match b_request {
        Ok(request) => request.wait()?,
        Err(own) => own,
    };
    let check = |data: &[f64], rows: usize, cols: usize| match data.len() == rows * cols {
        true => Ok(()),
        false => Err(Error::Protocol(format!(
            "a panel of {} elements where {rows}x{cols} were expected",
            data.len()
        ))),
    };
    check(&a_panel, m, width)?;
    check(&b_panel, width, n)?;
    Ok((
        Matrix {
            rows: m,
            cols: width,
            data: a_panel,
        },
        Matrix {
            rows: width,
            cols: n,
            data: b_panel,
        },
    ))
}

/// A round as node 0 gathered it.
struct Gathered {
    c: Matrix,
    elapsed: Duration,
    compute: Duration,
    communication: Duration,
    /// The first node whose block of C was not its block of A (identity
    /// round only).
    identity_failed: Option<usize>,
}

/// Step 5: every node's block of C and times at node 0, which assembles
/// them; `None` elsewhere. Elapsed is the slowest node's; computation
/// and communication are means over the nodes.
fn gather(
    groups: &Groups<'_>,
    place: &Place,
    c: &Matrix,
    times: Times,
    verified: bool,
) -> Result<Option<Gathered>, Error> {
    let world = groups.world;
    let nodes = world.size();
    let mine = [
        times.elapsed.as_secs_f64(),
        times.compute.as_secs_f64(),
        times.communication.as_secs_f64(),
        f64::from(u8::from(verified)),
    ];
    let all_times = world.gather(&mine, 0)?;
    let size = place.n;
    let counts: Vec<usize> = (0..nodes)
        .map(|i| {
            let there = Place::new(place.mesh, i, size);
            there.rows.len() * there.cols.len()
        })
        .collect();
    let blocks = world.gatherv(&c.data, &counts, 0)?;
    let (Some(all_times), Some(blocks)) = (all_times, blocks) else {
        return Ok(None);
    };
    let mut whole = Matrix::zeros(size, size);
    for (i, block) in blocks.iter().enumerate() {
        let there = Place::new(place.mesh, i, size);
        let width = there.cols.len();
        if block.len() != there.rows.len() * width {
            return Err(Error::Protocol(format!("node {i}'s block of C")));
        }
        for (r, row) in there.rows.clone().zip(block.chunks(width.max(1))) {
            whole.data[r * size + there.cols.start..r * size + there.cols.end].copy_from_slice(row);
        }
    }
    let seconds = |x: f64| Duration::try_from_secs_f64(x).unwrap_or_default();
    let column = |k: usize| all_times.chunks(4).map(move |t| t[k]);
    let mean = |k: usize| seconds(column(k).sum::<f64>() / nodes as f64);
    Ok(Some(Gathered {
        c: whole,
        elapsed: seconds(column(0).fold(0.0, f64::max)),
        compute: mean(1),
        communication: mean(2),
        identity_failed: column(3).position(|ok| ok != 1.0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_cover_the_length_in_near_equal_pieces() {
        let parts: Vec<_> = (0..3).map(|i| part(13, 3, i)).collect();
        assert_eq!(parts, [0..5, 5..9, 9..13]);
        assert_eq!(part(1, 2, 1), 1..1);
    }

    #[test]
    fn panels_have_one_owner_column_and_row() {
        let mesh = Mesh { rows: 2, cols: 3 };
        let panels = panels(13, mesh, 4);
        let starts: Vec<usize> = panels.iter().map(|p| p.range.start).collect();
        // Cuts of KA (0, 5, 9), KB (0, 7) and every 4 columns (0, 4, 8, 12).
        assert_eq!(starts, [0, 4, 5, 7, 8, 9, 12]);
        for p in &panels {
            assert!(part(13, 3, p.a_owner).start <= p.range.start);
            assert!(p.range.end <= part(13, 3, p.a_owner).end);
            assert!(p.range.end <= part(13, 2, p.b_owner).end);
        }
        assert_eq!(panels.last().map(|p| p.range.end), Some(13));
    }

    #[test]
    fn meshes_parse_print_and_default_to_the_squarest() {
        assert_eq!("2x3".parse(), Ok(Mesh { rows: 2, cols: 3 }));
        assert!("2x0".parse::<Mesh>().is_err());
        assert!("6".parse::<Mesh>().is_err());
        assert_eq!(Mesh::squarest(4).to_string(), "2x2");
        assert_eq!(Mesh::squarest(6).to_string(), "2x3");
        assert_eq!(Mesh::squarest(7).to_string(), "1x7");
        assert_eq!(Mesh { rows: 2, cols: 3 }.place(4), (1, 1));
    }
}
