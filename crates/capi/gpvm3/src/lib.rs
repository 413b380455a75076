//! threadwire's `libgpvm3.so.3`: a library with PVM's group library's name
//! and nothing in it.
//!
//! PVM 3.4 kept its group functions (`pvm_joingroup`, `pvm_barrier`,
//! `pvm_reduce`, ...) in `libgpvm3`, a client of a group server task. On
//! threadwire they are served by `libpvm3.so.3` itself (crate
//! `threadwire-pvm3`), on threadwire's named groups, with no server. A
//! program linked with `-lgpvm3 -lpvm3` lists both libraries; the dynamic
//! loader finds each group function in `libpvm3.so.3`, which every PVM
//! program loads, so this one has only to exist.
