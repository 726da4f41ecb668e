//! kiln-compiler

pub mod fusion;
