//! Distributed applications on threadwire, written against the public API
//! only, as a user would write them.
//!
//! - [`matmul`]: the distributed multithreaded matrix multiply of the
//!   thesis: host–node or SUMMA on a mesh, naive, BMM, Strassen–Winograd
//!   or blas kernels.
//! - [`fft`]: the host–node DIF FFT of NCS' Table 3, one thread per node
//!   against two.
//! - [`jpeg`]: the JPEG pipeline of NCS' Table 2: half the nodes
//!   compress strips of an image, the other half decompress them, the
//!   master combines and checks the PSNR; one thread per node against two.
//! - [`agenda`]: the agenda-parallel matrix multiply of SCALE's Figures
//!   16–17: a master serves tasks of rows of A to slaves by active
//!   message, swept over granularity and concurrency.
//!
//! - [`splash`]: the Strings DSM's ten programs (FFT, LU-c, LU-n, RADIX,
//!   OCEAN-c, WATER-n2, WATER-sp, MATMULT, SOR, MRI) on the distributed
//!   shared memory, over a PARMACS-like API ([`splash::parmacs`]) that
//!   also runs them on plain threads for comparison.
//!
//! [`hosts`] runs an app's jobs on emulated hosts joined by one of the
//! seeds' networks (`--link`), and removes the hosts after.
#![warn(missing_docs)]

pub mod agenda;
pub mod fft;
pub mod figures;
pub mod hosts;
pub mod jpeg;
pub mod matmul;
pub mod splash;
