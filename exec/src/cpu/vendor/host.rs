//! The host executor of library calls: GEMM through the `gemm` crate (module `gemm`), FFTs
//! through `rustfft`/`realfft` (module `fft`), GEMM epilogues after the GEMM (module
//! `epilogue`); see [`crate::vendor`] for what each dtype does.

use kiln_ir::{HostArray, Layout};

use crate::ExecError;
use kiln_compiler::vendor::VendorCall;

/// Runs one call on host arrays; `inputs[k]` is region input `k`. Errors: inputs the call's
/// layouts do not fit, a library failure ([`ExecError::Library`]).
pub fn run(call: &VendorCall, inputs: &[&HostArray]) -> Result<HostArray, ExecError> {
    let input = |k: usize| {
        inputs.get(k).copied().ok_or_else(|| {
            ExecError::InvalidInput(format!("no input {k} ({} given)", inputs.len()))
        })
    };
    match call {
        VendorCall::MatMul(mm) => {
            let product = super::gemm::matmul(mm, input(mm.a.input)?, input(mm.b.input)?)?;
            match &mm.epilogue {
                Some(e) => super::epilogue::apply(e, mm.n, product, e.bias.map(input).transpose()?),
                None => Ok(product),
            }
        }
        VendorCall::Fft(f) => super::fft::fft(f, input(f.input.input)?),
        VendorCall::Linalg(l) => {
            let mut outs = run_all(call, inputs)?;
            if outs.len() != 1 {
                return Err(ExecError::InvalidInput(format!(
                    "a linear-algebra call with {} outputs run for one ({l:?})",
                    outs.len()
                )));
            }
            Ok(outs.remove(0))
        }
    }
}

/// Runs one call, every output: the matrix products and FFTs have one, a decomposition one
/// per output of it the region keeps (svd's U, s and Vh).
pub fn run_all(call: &VendorCall, inputs: &[&HostArray]) -> Result<Vec<HostArray>, ExecError> {
    let input = |k: usize| {
        inputs.get(k).copied().ok_or_else(|| {
            ExecError::InvalidInput(format!("no input {k} ({} given)", inputs.len()))
        })
    };
    match call {
        VendorCall::Linalg(l) => {
            let b = l.b.as_ref().map(|(s, _)| input(s.input)).transpose()?;
            super::linalg::run(l, input(l.a.input)?, b)
        }
        VendorCall::MatMul(_) | VendorCall::Fft(_) => Ok(vec![run(call, inputs)?]),
    }
}

/// Errors unless every element `layout` addresses lies in a buffer of `len` elements (the
/// precondition of reading an operand through raw pointers or unchecked strides).
pub fn in_bounds(layout: &Layout, len: usize) -> Result<(), ExecError> {
    if layout.numel() == 0 {
        return Ok(());
    }
    let (mut lo, mut hi) = (layout.offset, layout.offset);
    for (&n, &s) in layout.shape.iter().zip(&layout.strides) {
        let reach = (n as isize - 1) * s;
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    if lo < 0 || hi >= len as isize {
        return Err(ExecError::InvalidInput(format!(
            "a strided operand reaches elements {lo}..={hi} of a buffer of {len}: {layout:?}"
        )));
    }
    Ok(())
}
