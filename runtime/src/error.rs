//! Errors of the runtime.

use thiserror::Error;

/// Everything that can go wrong in the runtime.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RuntimeError {
    /// `KILN_DEVICE` (or another device string) is not `cpu`, `cuda` or `cuda:N`.
    #[error("invalid device `{0}`: expected `cpu`, `cuda` or `cuda:N`")]
    InvalidDevice(String),
    /// A CUDA device was asked for but is not there.
    #[error("CUDA device {requested} is not available ({available} device(s) found)")]
    DeviceUnavailable {
        /// The ordinal asked for.
        requested: usize,
        /// How many CUDA devices the driver reports (0 without a driver).
        available: usize,
    },
    /// The CUDA driver returned an error.
    #[error("CUDA driver: {0}")]
    Driver(String),
}
