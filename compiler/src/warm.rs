//! What a process's first compile pays once, paid ahead on a thread of its own.
//!
//! The first [`simplify`] of a process builds the rewrite rules and starts egg's clock (the
//! `quanta` crate calibrates its counter against the OS clock on first use: ~0.7 ms), and the
//! first GPU lowering looks for libdevice and `ptxas` on the file system. A first call of a
//! new expression that finds its kernel in the disk cache would pay all of that (about half of
//! its ~3 ms on an H200 host); the frontend calls [`warm_up`] when it picks the backend, long
//! before the first materialisation (opening a CUDA device alone takes tens of ms). A compile
//! that starts before the warm-up ends waits for the state it needs (each is a `OnceLock`),
//! so the warm-up changes no result and no order, only when the cost is paid.
//!
//! On the GPU the warm-up then compiles a small program to PTX for the device's target, at the
//! fast tier, and throws the PTX away: the process's first kernel would otherwise pay MLIR's and
//! LLVM's first use (dialects, the NVPTX target, the pass pipelines) and the optimisation of
//! the libdevice functions it calls, each once per process and target
//! ([`crate::codegen::libdevice`]): the float32 `exp`, `log`, `sin`, `cos` and `tanh` of
//! [`GPU_PROGRAM`].

use std::sync::OnceLock;
use std::thread::JoinHandle;

use crate::codegen::gpu::ptx_of_mlir_tier;
use crate::codegen::{lower, LowerOptions, Tier};
use crate::pipeline::{compile, Options};
use crate::simplify::simplify;
use crate::toolchain::ptx::PtxTarget;
use crate::CompileError;

/// The program the warm-up simplifies: small, but it starts every piece of the simplifier's
/// one-time state (the rules of `opts`'s `fast_math` setting, the e-graph's clock).
const PROGRAM: &str = "kiln.graph v1
%0 = input {index=0} : f32[4]
%1 = const {value=0} : f32[]
%2 = broadcast_to(%1) {shape=[4]} : f32[4]
%3 = add(%0, %2) : f32[4]
return %3
";

/// The program whose GPU kernel the warm-up compiles (see the module's documentation): the
/// math functions of float32 a kernel calls most, one libdevice function each.
pub const GPU_PROGRAM: &str = "kiln.graph v1
%0 = input {index=0} : f32[4]
%1 = exp(%0) : f32[4]
%2 = log(%1) : f32[4]
%3 = sin(%2) : f32[4]
%4 = cos(%3) : f32[4]
%5 = tanh(%4) : f32[4]
return %5
";

/// Starts the warm-up once per process (later calls, and every call with `KILN_WARM_UP=off`,
/// return `None`): the simplifier's state for
/// `opts`, and with `gpu` (the device's PTX target) the CUDA toolkit's paths (libdevice,
/// `ptxas`), then [`GPU_PROGRAM`]'s kernel compiled to PTX at the fast tier. The handle is for
/// tests; the frontend lets the thread run on its own. Nothing it does can fail a later
/// compile: a failure here (none is expected) is left for that compile to meet and report.
pub fn warm_up(opts: &Options, gpu: Option<PtxTarget>) -> Option<JoinHandle<()>> {
    if !kiln_cache::config().warm_up {
        return None;
    }
    static STARTED: OnceLock<()> = OnceLock::new();
    let mut first = false;
    STARTED.get_or_init(|| first = true);
    if !first {
        return None;
    }
    let opts = opts.clone();
    std::thread::Builder::new()
        .name("kiln-warm-up".into())
        .spawn(move || {
            if let Ok(g) = kiln_ir::text::parse(PROGRAM) {
                let _ = simplify(&g, &opts.simplify);
            }
            if let Some(target) = gpu {
                let _ = kiln_cache::cuda_toolkit::libdevice();
                let _ = kiln_cache::cuda_toolkit::ptxas();
                let _ = gpu_program_ptx(&opts, target);
            }
        })
        .ok()
}

/// [`GPU_PROGRAM`]'s kernels at the fast tier: their PTX for `target`, in region order.
/// Errors: the pipeline's, the lowering's and LLVM's (libdevice missing among them).
pub fn gpu_program_ptx(opts: &Options, target: PtxTarget) -> Result<Vec<String>, CompileError> {
    let g = kiln_ir::text::parse(GPU_PROGRAM).map_err(|e| CompileError::Llvm(e.to_string()))?;
    let compiled = compile(&g, opts)?;
    let mut ptx = Vec::new();
    for region in &compiled.partition.regions {
        let kernel = lower(region, &LowerOptions::gpu_tier(Tier::Fast))?;
        ptx.push(ptx_of_mlir_tier(&kernel.mlir, target, Tier::Fast)?.0);
    }
    Ok(ptx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simplify::SimplifyOptions;

    #[test]
    fn the_warm_up_starts_once_and_its_program_simplifies() {
        let g = kiln_ir::text::parse(PROGRAM).expect("the warm-up's program parses");
        kiln_ir::verify::verify(&g).expect("and verifies");
        let s = simplify(&g, &SimplifyOptions::default()).expect("simplifies");
        kiln_ir::verify::verify(&s.graph).expect("its result verifies");
        let opts = Options { simplify: SimplifyOptions::default() };
        let first = warm_up(&opts, Some(PtxTarget::default()));
        let again = warm_up(&opts, Some(PtxTarget::default()));
        assert!(first.is_some(), "the first call starts the thread");
        assert!(again.is_none(), "later calls start nothing");
        first.unwrap().join().expect("the warm-up thread ends without a panic");
    }

    #[test]
    fn the_gpu_program_calls_every_libdevice_function_it_warms() {
        let opts = Options { simplify: SimplifyOptions::default() };
        let Ok(ptx) = gpu_program_ptx(&opts, PtxTarget::default()) else {
            // No libdevice on this machine (the GPU lowering needs it): nothing to check.
            assert!(kiln_cache::cuda_toolkit::libdevice().is_none());
            return;
        };
        assert_eq!(ptx.len(), 1, "one fused kernel");
        let g = kiln_ir::text::parse(GPU_PROGRAM).unwrap();
        let compiled = compile(&g, &opts).unwrap();
        let kernel =
            lower(&compiled.partition.regions[0], &LowerOptions::gpu_tier(Tier::Fast)).unwrap();
        for f in ["__nv_expf", "__nv_logf", "__nv_sinf", "__nv_cosf", "__nv_tanhf"] {
            assert!(kernel.mlir.contains(&format!("@{f}")), "{f} in {}", kernel.mlir);
        }
        assert!(ptx[0].contains(".entry"), "{}", ptx[0]);
    }
}
