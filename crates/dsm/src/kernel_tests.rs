//! What the engine relies on from the kernel, checked on this one.

use crate::space::Space;
use crate::uffd::{Access, Fault, Uffd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const PAGE: usize = 4096;
const BASE: usize = 0x5d00_0000_0000;

/// Serves every fault: maps unmapped pages (write-protected on a read) and
/// lifts protection on a write; records what it saw.
fn serve(space: Arc<Space>, uffd: Arc<Uffd>, stop: Arc<AtomicBool>, seen: Arc<Mutex<Vec<Fault>>>) {
    let mut faults = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&*uffd),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, 10 ms.
        unsafe { libc::poll(&mut pfd, 1, 10) };
        faults.clear();
        uffd.read(&mut faults, 16).unwrap();
        // Recorded before they are resolved: the faulting thread reads the
        // record as soon as it runs again.
        seen.lock().unwrap().extend_from_slice(&faults);
        for f in &faults {
            let page = f.address & !(PAGE - 1);
            if f.access != Access::Protected {
                space
                    .populate(page - space.program() as usize, PAGE)
                    .unwrap();
            }
            match f.access {
                Access::Read => uffd.map(page, PAGE, true).unwrap(),
                Access::Write => uffd.map(page, PAGE, false).unwrap(),
                Access::Protected => uffd.unprotect(page, PAGE).unwrap(),
            }
        }
    }
}

#[test]
fn faults_map_protect_and_invalidate_as_the_engine_expects() {
    let uffd = match Uffd::open(false) {
        Ok(u) => Arc::new(u),
        Err(e) => {
            eprintln!("skipped: userfaultfd unavailable here ({e})");
            return;
        }
    };
    let space = Arc::new(Space::new(BASE, 64 * PAGE).unwrap());
    uffd.register(space.program() as usize, space.len())
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = {
        let (sp, u, s, seen) = (space.clone(), uffd.clone(), stop.clone(), seen.clone());
        std::thread::spawn(move || serve(sp, u, s, seen))
    };
    let p = space.program();
    let e = space.engine();
    // SAFETY: both views are mapped for 64 pages; the server resolves faults.
    unsafe {
        // The engine writes page 0 through its view; the program reads it
        // after a fault (missing or minor).
        *e = 7;
        assert_eq!(*p, 7);
        // A write to the read-mapped page is a protection fault.
        *p.add(1) = 9;
        assert_eq!(*e.add(1), 9);
        // Page 1 never touched by anyone: a write fault, mapped writable.
        *p.add(PAGE) = 5;
        assert_eq!(*e.add(PAGE), 5);
        // Re-protect page 1: the next write faults again.
        uffd.protect(p as usize + PAGE, PAGE).unwrap();
        *p.add(PAGE + 8) = 6;
        // Invalidate page 0; the engine changes it; the program's next read
        // faults and sees the change.
        space.invalidate(0, PAGE).unwrap();
        *e = 42;
        assert_eq!(*p, 42);
    }
    let kinds: Vec<(usize, Access)> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|f| ((f.address - p as usize) / PAGE, f.access))
        .collect();
    assert_eq!(
        kinds,
        [
            (0, Access::Read),
            (0, Access::Protected),
            (1, Access::Write),
            (1, Access::Protected),
            (0, Access::Read),
        ]
    );
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
}
