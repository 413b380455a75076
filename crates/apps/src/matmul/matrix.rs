//! Row-major f64 matrices: an owned [`Matrix`] and a borrowed, possibly
//! strided [`View`] of a block of one, which the kernels multiply.

/// An owned row-major matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// `rows · cols` elements, row after row.
    pub data: Vec<f64>,
}

impl Matrix {
    /// A `rows × cols` matrix of zeros.
    pub fn zeros(rows: usize, cols: usize) -> Matrix {
        Matrix {
            rows,
            cols,
            data: vec![0.0; rows * cols],
        }
    }

    /// The `n × n` identity.
    pub fn identity(n: usize) -> Matrix {
        let mut m = Matrix::zeros(n, n);
        for i in 0..n {
            m.data[i * n + i] = 1.0;
        }
        m
    }

    /// A matrix whose element (i, j) is `f(i, j)`.
    pub fn from_fn(rows: usize, cols: usize, f: impl Fn(usize, usize) -> f64) -> Matrix {
        let data = (0..rows * cols).map(|x| f(x / cols, x % cols)).collect();
        Matrix { rows, cols, data }
    }

    /// The whole matrix as a view.
    pub fn view(&self) -> View<'_> {
        View {
            data: &self.data,
            rows: self.rows,
            cols: self.cols,
            stride: self.cols,
        }
    }

    /// The largest absolute difference from `other` (infinite if the
    /// shapes differ; NaN if either holds one).
    pub fn max_difference(&self, other: &Matrix) -> f64 {
        if (self.rows, self.cols) != (other.rows, other.cols) {
            return f64::INFINITY;
        }
        self.data
            .iter()
            .zip(&other.data)
            .map(|(x, y)| (x - y).abs())
            .fold(
                0.0,
                |worst: f64, d| if d.is_nan() { d } else { worst.max(d) },
            )
    }
}

/// A `rows × cols` block of a row-major matrix whose rows are `stride`
/// elements apart.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    /// From the block's first element to (at least) its last.
    pub data: &'a [f64],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Elements from one row's start to the next's.
    pub stride: usize,
}

impl<'a> View<'a> {
    /// A contiguous `rows × cols` slice as a view.
    pub fn new(data: &'a [f64], rows: usize, cols: usize) -> View<'a> {
        assert!(
            data.len() >= rows * cols,
            "{rows}x{cols} view of {} elements",
            data.len()
        );
        View {
            data,
            rows,
            cols,
            stride: cols,
        }
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &'a [f64] {
        &self.data[i * self.stride..i * self.stride + self.cols]
    }

    /// Element (i, j).
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.data[i * self.stride + j]
    }

    /// The `rows × cols` block starting at (`row`, `col`).
    pub fn block(&self, row: usize, col: usize, rows: usize, cols: usize) -> View<'a> {
        assert!(row + rows <= self.rows && col + cols <= self.cols);
        let start = row * self.stride + col;
        let end = match rows {
            0 => start,
            _ => start + (rows - 1) * self.stride + cols,
        };
        View {
            data: &self.data[start..end],
            rows,
            cols,
            stride: self.stride,
        }
    }

    /// A contiguous copy.
    pub fn to_matrix(&self) -> Matrix {
        let mut data = Vec::with_capacity(self.rows * self.cols);
        for i in 0..self.rows {
            data.extend_from_slice(self.row(i));
        }
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data,
        }
    }
}
