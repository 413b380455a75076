//! Helpers shared by the command's integration tests. Each test file
//! compiles its own copy and uses some of them, hence `dead_code`.
#![allow(dead_code)]

pub mod cdylib;
pub mod command;
pub mod lost_node;
pub mod pvm;
pub mod report;
pub mod sshd;
