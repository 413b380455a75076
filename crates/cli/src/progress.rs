//! The progress bar of a benchmark: one step per cell or row of its table
//! as the result comes in.
//!
//! The bar is drawn on stderr only when stderr is a terminal (indicatif
//! draws nothing otherwise), so piped output, `--json` and `--csv` never
//! carry it. It is cleared when dropped, on success or error alike, so the
//! table or the error message is printed on a clean line. It has no ticker
//! thread: it is redrawn only when a step completes, between measurements,
//! so it takes no CPU from what is being measured (`bench threads` counts
//! its whole process's CPU time).

use indicatif::{ProgressBar, ProgressStyle};
use threadwire_launch::Event;
use threadwire_testbed::interrupt::Interrupted;

use crate::render;

/// A benchmark's progress bar.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar named after `benchmark` (`bench comm`) for `steps` steps.
    pub fn new(benchmark: &'static str, steps: usize) -> Progress {
        let style = ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} {elapsed}")
            .expect("a valid progress template");
        let bar = ProgressBar::new(steps as u64)
            .with_style(style)
            .with_message(benchmark);
        // Drawn at once, not only when the first step, maybe long, is done.
        bar.tick();
        Progress { bar }
    }

    /// One more step done.
    pub fn step(&self) {
        self.bar.inc(1);
    }

    /// Names what is being done now, in place of the benchmark's name.
    pub fn message(&self, message: String) {
        self.bar.set_message(message);
    }

    /// Redraws every second, for steps of minutes run by other processes
    /// (`bench suite`), so the elapsed time moves.
    pub fn tick_steadily(&self) {
        self.bar
            .enable_steady_tick(std::time::Duration::from_secs(1));
    }

    /// Shows an event of the job that is not a result, as
    /// [`render::aside`] does, with the bar lifted while it prints.
    pub fn aside(&self, ev: &Event) {
        self.bar.suspend(|| render::aside(ev));
    }

    /// Prints `line` on stderr, with the bar lifted while it prints.
    pub fn aside_line(&self, line: String) {
        self.bar.suspend(|| eprintln!("{line}"));
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// Says on stderr what the interrupt thread removed on a signal
/// (`threadwire_testbed::interrupt::install`), on a line of its own: on a
/// terminal, a progress bar's line is erased first.
pub fn report_interrupt(interrupted: &Interrupted) {
    // SAFETY: isatty takes no pointers.
    let on_terminal = unsafe { libc::isatty(libc::STDERR_FILENO) } == 1;
    let erase = if on_terminal { "\r\x1b[2K" } else { "" };
    eprintln!("{erase}threadwire: {interrupted}");
}
