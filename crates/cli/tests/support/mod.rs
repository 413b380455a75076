//! Helpers shared by the command's integration tests.

pub mod json;
