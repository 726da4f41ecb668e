//! kiln-compiler
pub mod cost;
pub mod error;
pub mod simplify;
