//! kiln-compiler

pub mod fusion;
pub mod schedule;
