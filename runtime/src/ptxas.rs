//! NVIDIA's `ptxas`, where a CUDA toolkit is installed: PTX compiled to a cubin as a whole
//! program, the way the driver's JIT compiles PTX that `cuModuleLoadDataEx` loads, so the
//! disk cache can keep the very code the driver would run, and a warm start loads it without
//! any JIT.
//!
//! `cuLinkAddData` and nvJitLink compile PTX as relocatable code (as `ptxas -c`): on an H200
//! their SASS of kiln's kernels was longer (ew_chain 880 instructions against 840, sum_all 840
//! against 720) and slower (sum_all 0.122 ms against 0.081). No library of the driver or the
//! toolkit's shared libraries compiles PTX as a whole program and hands the cubin back, so kiln
//! runs the `ptxas` program.
//!
//! Found by `kiln_cache::cuda_toolkit`: `KILN_PTXAS`, else `bin/ptxas` under the toolkit's roots
//! (`KILN_CUDA_PATH`, `CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda`), else `ptxas` on the `PATH`;
//! [`ptxas_path`] is `None` without a toolkit (the driver's JIT
//! then compiles the PTX, and the disk cache keeps the PTX only).

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{KernelError, Result};

/// Where `ptxas` is, if anywhere: `kiln_cache::cuda_toolkit::ptxas` (looked up once per
/// process).
pub fn ptxas_path() -> Option<&'static Path> {
    kiln_cache::cuda_toolkit::ptxas()
}

/// Compiles `ptx` to a cubin for `sm_{sm}` with `ptxas` at `-O{opt}` (0-3; more is 3, the
/// default) as a whole program (no `-c`). `name` names the code in errors.
///
/// Errors: no `ptxas` ([`ptxas_path`]); ptxas failing to start or rejecting the PTX, as
/// [`crate::RuntimeError::Kernel`] at [`crate::error::KernelStage::Link`] with ptxas's messages as the log.
pub fn ptxas_cubin(name: &str, ptx: &str, sm: u32, opt: u32) -> Result<Vec<u8>> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let error = |log: String| KernelError::link(name, log);
    let ptxas = ptxas_path().ok_or_else(|| {
        error(format!("ptxas not found ({})", kiln_cache::cuda_toolkit::PTXAS_SEARCH))
    })?;
    let stem = std::env::temp_dir().join(format!(
        "kiln-ptxas-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let (input, output) = (stem.with_extension("ptx"), stem.with_extension("cubin"));
    let result = (|| {
        std::fs::write(&input, ptx)
            .map_err(|e| error(format!("cannot write {}: {e}", input.display())))?;
        let out = Command::new(ptxas)
            .arg(format!("-arch=sm_{sm}"))
            .arg(format!("-O{}", opt.min(3)))
            .arg("-o")
            .arg(&output)
            .arg(&input)
            .output()
            .map_err(|e| error(format!("cannot run {}: {e}", ptxas.display())))?;
        if !out.status.success() {
            return Err(error(format!(
                "{} failed ({}): {}",
                ptxas.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        std::fs::read(&output).map_err(|e| error(format!("cannot read {}: {e}", output.display())))
    })();
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(&output);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PTX of a kernel that stores its thread index (sm_90, PTX 8.0).
    const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
        .visible .entry kiln_tid(.param .u64 out) {\n  .reg .b32 %r<2>;\n  .reg .b64 %rd<4>;\n\
        ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n\
        mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd2, %rd2, %rd3;\n  st.global.u32 [%rd2], %r1;\n  ret;\n}\n";

    #[test]
    fn compiles_ptx_to_an_elf_cubin_or_says_why_not() {
        match ptxas_path() {
            Some(_) => {
                let cubin = ptxas_cubin("kiln_tid", PTX, 90, 3).unwrap();
                assert_eq!(&cubin[..4], b"\x7fELF", "a cubin is an ELF file");
                let bad = ptxas_cubin("broken", "not ptx", 90, 1).unwrap_err().to_string();
                assert!(bad.contains("broken"), "{bad}");
            }
            None => {
                let e = ptxas_cubin("kiln_tid", PTX, 90, 3).unwrap_err().to_string();
                assert!(e.contains("ptxas not found"), "{e}");
            }
        }
    }
}
