//! kiln-std
