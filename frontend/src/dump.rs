//! `KILN_DUMP`: writes the text of each compiler stage of every materialisation to files.
//!
//! `KILN_DUMP=graph,simplified,regions,...` (or `all`) selects stages; files go to
//! `KILN_DUMP_DIR` (default `./kiln-dump/`), named `NNNN-S-stage.ext`: `NNNN` counts
//! materialisations in the process, `S` is the stage's position in the pipeline, so names sort
//! in the order things happened; `ext` is `kir` for kiln's own texts, `mlir`, `ll` (LLVM IR) and
//! `s` (assembly) for the code of the host path ([`host_code`]); on the GPU backend `mlir`,
//! `ll` and `ptx` are the GPU kernels' ([`gpu_code`]).
//!
//! The texts are canonical: the same program writes the same bytes, on any machine, except
//! `asm`, which is this machine's CPU code, for reading.

use std::path::PathBuf;

use kiln_cache::config;
use kiln_compiler::codegen;
use kiln_compiler::fusion::Region;
use kiln_compiler::toolchain::ptx::PtxTarget;
use kiln_compiler::CompileError;
use kiln_ir::Graph;

/// The pipeline's stages, in order; the position is the `S` of file names.
pub const STAGES: &[&str] = kiln_cache::config::DUMP_STAGES;

/// Whether `KILN_DUMP` asks for `stage`.
pub fn enabled(stage: &str) -> bool {
    config().dump.iter().any(|s| s == stage)
}

/// The path a stage's dump of materialisation `seq` is written to.
pub fn path(seq: usize, stage: &str) -> PathBuf {
    let pos = STAGES.iter().position(|s| *s == stage).unwrap_or(STAGES.len());
    let ext = match stage {
        "mlir" => "mlir",
        "llvm" => "ll",
        "ptx" => "ptx",
        "asm" => "s",
        _ => "kir",
    };
    config().dump_dir.join(format!("{seq:04}-{pos}-{stage}.{ext}"))
}

/// Writes `text` as the dump of `stage` if asked for. A failure to write is reported on stderr
/// and does not stop the computation.
pub fn write(seq: usize, stage: &str, text: impl FnOnce() -> String) {
    if !enabled(stage) {
        return;
    }
    let p = path(seq, stage);
    let result =
        std::fs::create_dir_all(&config().dump_dir).and_then(|_| std::fs::write(&p, text()));
    if let Err(e) = result {
        eprintln!("kiln: could not write dump {}: {e}", p.display());
    }
}

/// Dumps the input graph of a materialisation (stage `graph`).
pub fn graph(seq: usize, g: &Graph) {
    write(seq, "graph", || kiln_ir::text::print(g));
}

/// Dumps the host code of a plan's regions: stages `mlir` (each region's kernel, canonical and
/// shape-generic), `llvm` (its LLVM IR as translated, before optimisation for this CPU:
/// canonical too) and `asm` (this CPU's assembly of the optimised tier, for reading). One file
/// per stage, the regions in order, each under a comment naming it and separated by a
/// `-----` comment line (`// -----` in MLIR, which `mlir-opt --split-input-file` reads); a
/// region code generation does not support says why (the reference evaluator runs it).
pub fn host_code(seq: usize, regions: &[Region]) {
    for stage in ["mlir", "llvm", "asm"] {
        write(seq, stage, || code_text(regions, CodeStage::host(stage).expect("a host stage")));
    }
}

/// Dumps the GPU code of a plan's regions: stages `mlir` and `llvm` (as for the host, lowered
/// for the GPU: canonical) and `ptx` (the PTX for `target`, libdevice linked and optimised:
/// canonical for a given LLVM and libdevice), laid out as [`host_code`]'s.
pub fn gpu_code(seq: usize, regions: &[Region], target: PtxTarget) {
    for (stage, code) in [
        ("mlir", CodeStage::GpuMlir),
        ("llvm", CodeStage::GpuLlvm),
        ("ptx", CodeStage::Ptx(target)),
    ] {
        write(seq, stage, || code_text(regions, code));
    }
}

/// Which code of a region [`code_text`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeStage {
    /// The host kernel's MLIR (canonical, shape-generic).
    HostMlir,
    /// Its LLVM IR as translated, before optimisation (canonical).
    HostLlvm,
    /// This CPU's assembly of the optimised kernel (for reading; machine-dependent).
    HostAsm,
    /// The GPU kernel's MLIR (canonical, shape-generic).
    GpuMlir,
    /// Its LLVM IR as translated (canonical).
    GpuLlvm,
    /// Its PTX for a target.
    Ptx(PtxTarget),
}

impl CodeStage {
    fn host(stage: &str) -> Option<CodeStage> {
        Some(match stage {
            "mlir" => CodeStage::HostMlir,
            "llvm" => CodeStage::HostLlvm,
            "asm" => CodeStage::HostAsm,
            _ => return None,
        })
    }

    /// The comment leader of the stage's language.
    fn comment(self) -> &'static str {
        match self {
            CodeStage::HostLlvm | CodeStage::GpuLlvm => ";",
            CodeStage::HostAsm => "#",
            CodeStage::HostMlir | CodeStage::GpuMlir | CodeStage::Ptx(_) => "//",
        }
    }

    fn text(self, region: &Region) -> Result<String, CompileError> {
        match self {
            CodeStage::HostMlir => codegen::mlir_text(region),
            CodeStage::HostLlvm => codegen::llvm_ir_text(region),
            CodeStage::HostAsm => codegen::asm_text(region),
            CodeStage::GpuMlir => codegen::gpu::mlir_text(region),
            CodeStage::GpuLlvm => codegen::gpu::llvm_ir_text(region),
            CodeStage::Ptx(target) => codegen::gpu::ptx_text(region, target),
        }
    }
}

/// The code of every region, in order, each under a comment naming it and separated by a
/// `-----` comment line (`// -----` in MLIR, which `mlir-opt --split-input-file` reads); a
/// region code generation does not support says why (a library or the reference evaluator
/// runs it on the host). What `KILN_DUMP` writes and [`crate::kernel_code`] returns.
pub fn code_text(regions: &[Region], stage: CodeStage) -> String {
    let comment = stage.comment();
    let mut out = String::new();
    for (i, region) in regions.iter().enumerate() {
        if i > 0 {
            out += &format!("{comment} -----\n");
        }
        match stage.text(region) {
            Ok(t) => out += &format!("{comment} region {i}\n{t}"),
            Err(CompileError::Unsupported { op, reason, .. }) => {
                let e = CompileError::Unsupported { region: i, op, reason };
                out += &format!(
                    "{comment} {e}: it runs on the host (a library or the reference evaluator)\n"
                )
            }
            Err(e) => out += &format!("{comment} region {i}: compilation failed: {e}\n"),
        }
    }
    out
}
