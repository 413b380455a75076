//! Where OCEAN-c's processes keep their subgrids (the module docs of
//! [`super`]): the process grid, each level's patches, their walls, and
//! the per-process slots of a level's array.

use super::super::share;

/// `f64`s in a coherence unit (`DsmConfig::unit`, 8 KiB).
const UNIT: usize = 8192 / std::mem::size_of::<f64>();

/// A process's subgrid on one level: its first interior row and column
/// in the level's grid, and its rows and columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Patch {
    pub(super) row: usize,
    pub(super) col: usize,
    pub(super) rows: usize,
    pub(super) cols: usize,
}

/// Which sides of a patch are the wall. Points are cell centres and the
/// wall lies half a spacing beyond the outermost ones, where ψ = 0: a
/// point beside it sees the mirror of itself there, −x, which adds 1 to
/// its diagonal (the ghost ring itself keeps zero at the wall).
#[derive(Clone, Copy, Debug)]
pub(super) struct Walls {
    pub(super) top: bool,
    pub(super) bottom: bool,
    pub(super) left: bool,
    pub(super) right: bool,
    pub(super) rows: usize,
    pub(super) cols: usize,
}

impl Walls {
    /// The 5-point Laplacian's diagonal at (i, j), h² factored out.
    #[inline(always)]
    pub(super) fn diagonal(self, i: usize, j: usize) -> f64 {
        let beside = u8::from(self.top && i == 1)
            + u8::from(self.bottom && i == self.rows)
            + u8::from(self.left && j == 1)
            + u8::from(self.right && j == self.cols);
        4.0 + f64::from(beside)
    }
}

/// Where every process's subgrids lie (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) n: usize,
    pub(super) processes: usize,
    /// The process grid.
    pub(super) grid_rows: usize,
    pub(super) grid_cols: usize,
    pub(super) levels: usize,
    /// Where a process's edge columns start in its part of a level's
    /// array: after the largest subgrid with its ghost ring.
    pub(super) edges: Vec<usize>,
    /// `f64`s per process in a level's array: that subgrid and two edge
    /// columns, in whole units.
    pub(super) strides: Vec<usize>,
}

impl Layout {
    pub(super) fn new(n: usize, processes: usize) -> Layout {
        let grid_rows = (1..=processes)
            .take_while(|r| r * r <= processes)
            .filter(|r| processes.is_multiple_of(*r))
            .last()
            .unwrap_or(1);
        let grid_cols = processes / grid_rows;
        let least = grid_rows.max(grid_cols).max(2);
        assert!(n >= least, "{processes} processes on a side of {n}");
        let levels = (0..).take_while(|l| n >> l >= least).count();
        let mut layout = Layout {
            n,
            processes,
            grid_rows,
            grid_cols,
            levels,
            edges: Vec::new(),
            strides: Vec::new(),
        };
        for level in 0..levels {
            let patches = (0..processes).map(|p| layout.patch(level, p));
            let largest = patches
                .clone()
                .map(|patch| (patch.rows + 2) * (patch.cols + 2));
            let edges = largest.max().unwrap_or(0);
            let tallest = patches.map(|patch| patch.rows).max().unwrap_or(0);
            layout.edges.push(edges);
            layout
                .strides
                .push((edges + 2 * tallest).div_ceil(UNIT) * UNIT);
        }
        layout
    }

    /// Interior points per side on `level`.
    pub(super) fn side(&self, level: usize) -> usize {
        self.n >> level
    }

    /// Process `p`'s subgrid on `level`.
    pub(super) fn patch(&self, level: usize, p: usize) -> Patch {
        let coarsest = self.side(self.levels - 1);
        let shift = self.levels - 1 - level;
        let rows = share(coarsest, self.grid_rows, p / self.grid_cols);
        let cols = share(coarsest, self.grid_cols, p % self.grid_cols);
        Patch {
            row: rows.start << shift,
            col: cols.start << shift,
            rows: rows.len() << shift,
            cols: cols.len() << shift,
        }
    }

    /// The sides of p's subgrid on `level` that are the wall.
    pub(super) fn walls(&self, level: usize, p: usize) -> Walls {
        let patch = self.patch(level, p);
        let side = self.side(level);
        Walls {
            top: patch.row == 0,
            bottom: patch.row + patch.rows == side,
            left: patch.col == 0,
            right: patch.col + patch.cols == side,
            rows: patch.rows,
            cols: patch.cols,
        }
    }

    /// The `f64`s of a level's array.
    pub(super) fn len(&self, level: usize) -> usize {
        self.strides[level] * self.processes
    }

    /// The processes above, below, left and right of `p`, where not a
    /// wall.
    pub(super) fn neighbours(&self, p: usize) -> [Option<usize>; 4] {
        let (r, c) = (p / self.grid_cols, p % self.grid_cols);
        let at = |r: usize, c: usize| r * self.grid_cols + c;
        [
            (r > 0).then(|| at(r - 1, c)),
            (r + 1 < self.grid_rows).then(|| at(r + 1, c)),
            (c > 0).then(|| at(r, c - 1)),
            (c + 1 < self.grid_cols).then(|| at(r, c + 1)),
        ]
    }
}

/// A subgrid with its ghost ring, rows of `cols + 2`; (1, 1) is its
/// first interior point.
#[derive(Clone, Copy)]
pub(super) struct View {
    pub(super) at: *mut f64,
    pub(super) width: usize,
}

impl View {
    /// # Safety
    ///
    /// (i, j) is in the subgrid or its ring, and the phase rules (module
    /// docs) keep writers of it away.
    #[inline(always)]
    pub(super) unsafe fn get(self, i: usize, j: usize) -> f64 {
        // SAFETY: the caller's.
        unsafe { *self.at.add(i * self.width + j) }
    }

    /// # Safety
    ///
    /// As [`View::get`], and no one else reads or writes it.
    #[inline(always)]
    pub(super) unsafe fn set(self, i: usize, j: usize, value: f64) {
        // SAFETY: the caller's.
        unsafe { *self.at.add(i * self.width + j) = value }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fine_points_of_a_coarse_point_are_one_process_s() {
        for processes in [1, 2, 3, 4, 6, 8, 13, 16] {
            let layout = Layout::new(64, processes);
            for level in 0..layout.levels - 1 {
                for p in 0..processes {
                    let (fine, coarse) = (layout.patch(level, p), layout.patch(level + 1, p));
                    assert_eq!((fine.row, fine.rows), (2 * coarse.row, 2 * coarse.rows));
                    assert_eq!((fine.col, fine.cols), (2 * coarse.col, 2 * coarse.cols));
                }
            }
            let area: usize = (0..processes)
                .map(|p| layout.patch(0, p))
                .map(|patch| patch.rows * patch.cols)
                .sum();
            assert_eq!(area, 64 * 64, "{processes} processes");
        }
    }
}
