//! What the master measured and verified.

use super::{Kernel, Layout, Mesh};
use std::time::Duration;

/// The timed (random) round of a verified multiply.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Matrices are `size × size`.
    pub size: usize,
    /// How the work was shared.
    pub layout: Layout,
    /// The SUMMA mesh.
    pub mesh: Option<Mesh>,
    /// Nodes of the job.
    pub nodes: u32,
    /// Who multiplied.
    pub kernel: Kernel,
    /// Threads per node.
    pub threads: u32,
    /// One thread per node, no overlap.
    pub serial: bool,
    /// From the start to the last node's end (SUMMA), or to the last block
    /// of C at the master (host–node).
    pub elapsed: Duration,
    /// Mean over the nodes (SUMMA) or worker threads (host–node) of the
    /// time in the kernel.
    pub compute: Duration,
    /// Mean time in broadcasts (SUMMA), or elapsed less the workers' mean
    /// computation (host–node: distribution, gathering, waiting).
    pub communication: Duration,
    /// Largest difference of the random product from the blas kernel's.
    pub max_error: f64,
}

impl Report {
    /// Floating-point operations per second of the timed round, 2n³ / t.
    pub fn gflops(&self) -> f64 {
        2.0 * (self.size as f64).powi(3) / self.elapsed.as_secs_f64() / 1e9
    }

    /// How the nodes ran: `serial`, or `T threads/node, overlapped`.
    pub fn mode(&self) -> String {
        match (self.serial, self.layout) {
            (true, _) => "serial (1 thread/node, no overlap)".into(),
            (false, Layout::Summa) => format!(
                "{} kernel thread{}/node, broadcasts overlapped",
                self.threads,
                if self.threads == 1 { "" } else { "s" }
            ),
            (false, Layout::HostNode) => format!("{} worker threads/node", self.threads),
        }
    }
}

/// ```text
/// matmul 512x512, summa 2x2 on 4 nodes, kernel blas, 2 kernel threads/node, broadcasts overlapped
/// verified: A x I = A at every node and at the master; random product within 3.4e-14 of blas
///  total ms  computation ms  communication ms  GFLOP/s  verified
///     41.20           30.10             18.70     6.51       yes
/// ```
impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let layout = match self.mesh {
            Some(mesh) => format!("{} {mesh}", self.layout),
            None => self.layout.to_string(),
        };
        writeln!(
            f,
            "matmul {n}x{n}, {layout} on {k} nodes, kernel {kernel}, {mode}",
            n = self.size,
            k = self.nodes,
            kernel = self.kernel,
            mode = self.mode()
        )?;
        let where_identity = match self.layout {
            Layout::Summa => "at every node and at the master",
            Layout::HostNode => "at the master",
        };
        writeln!(
            f,
            "verified: A x I = A {where_identity}; random product within {:.1e} of {}",
            self.max_error,
            Kernel::Blas
        )?;
        writeln!(
            f,
            "{:>9} {:>15} {:>17} {:>8} {:>9}",
            "total ms", "computation ms", "communication ms", "GFLOP/s", "verified"
        )?;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        // A report exists only for a verified product: a wrong one is an error.
        write!(
            f,
            "{:>9.2} {:>15.2} {:>17.2} {:>8.2} {:>9}",
            ms(self.elapsed),
            ms(self.compute),
            ms(self.communication),
            self.gflops(),
            "yes"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_the_times_and_the_rate() {
        let report = Report {
            size: 1000,
            layout: Layout::Summa,
            mesh: Some(Mesh { rows: 2, cols: 3 }),
            nodes: 6,
            kernel: Kernel::Bmm,
            threads: 2,
            serial: false,
            elapsed: Duration::from_millis(500),
            compute: Duration::from_millis(400),
            communication: Duration::from_millis(200),
            max_error: 1e-13,
        };
        assert_eq!(report.gflops(), 4.0);
        let text = report.to_string();
        assert!(text.contains("summa 2x3 on 6 nodes, kernel bmm"), "{text}");
        assert!(text.contains("at every node and at the master"), "{text}");
        assert!(
            text.ends_with("   500.00          400.00            200.00     4.00       yes"),
            "{text}"
        );
    }
}
