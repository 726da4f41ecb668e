//! Library calls ([`VendorCall`]) on the host: GEMM through the `gemm` crate (module `gemm`;
//! float32, float64, complex64, complex128 with any strides; float16 and bfloat16 gathered to
//! float32, accumulated in float32 and rounded once; integers and bools by a plain loop that
//! wraps as NumPy does), FFTs through `rustfft` and `realfft` (module `fft`; float16/bfloat16
//! computed in float32), a GEMM's epilogue applied to its result afterwards in the evaluator's
//! arithmetic (module `epilogue`), sorts by an LSD radix sort (module `sort`).

mod epilogue;
mod fft;
#[cfg(test)]
mod fft_steps_tests;
mod gemm;
pub mod host;
pub mod linalg;
mod select;
pub mod sort;

use kiln_compiler::fusion::Region;
use kiln_compiler::vendor::{plan, VendorCall};
use kiln_ir::HostArray;

use crate::{check_inputs, region_inputs, ExecError};

/// Runs a vendor region on the host: its [`VendorCall`] ([`plan`]), then [`host::run`].
///
/// Errors: a region that is not a library call ([`kiln_compiler::CompileError::Unsupported`]),
/// inputs of the wrong dtypes or shapes, a library failure.
pub fn run_region(region: &Region, inputs: &[&HostArray]) -> Result<Vec<HostArray>, ExecError> {
    let call: VendorCall = plan(region).map_err(|u| u.into_error(0))?;
    check_inputs(0, &region_inputs(&region.body), inputs)?;
    host::run_all(&call, inputs)
}
