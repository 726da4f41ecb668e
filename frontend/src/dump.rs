//! `KILN_DUMP`: writes the text of each pipeline stage of every materialisation to files.
//!
//! `KILN_DUMP=graph,simplified,regions,...` (or `all`: the names of
//! [`Stage`](kiln_compiler::pipeline::Stage)) selects stages; files go to `KILN_DUMP_DIR`
//! (default `./kiln-dump/`), named `NNNN-S-stage.ext`: `NNNN` counts materialisations in the
//! process, `S` is the stage's position in the pipeline, so names sort in the order things
//! happened; `ext` is the stage's ([`Stage::extension`]).
//!
//! The code stages (`mlir`, `llvm`, `ptx`, `asm`) are written after the run, from the code that
//! ran ([`ran_code`]): each region under a comment naming its kernel shape and tier, or what
//! ran it instead (a library, the host's sort, the reference evaluator).
//!
//! The texts are canonical: the same program writes the same bytes, on any machine, except
//! `asm`, which is this machine's CPU code, for reading.

use std::path::PathBuf;

use kiln_cache::config;
use kiln_compiler::codegen::{self, LowerOptions, Tier};
use kiln_compiler::fusion::Region;
use kiln_compiler::pipeline::Stage;
use kiln_compiler::toolchain::ptx::PtxTarget;
use kiln_compiler::CompileError;
use kiln_exec::RanCode;
use kiln_ir::Graph;

/// Whether `KILN_DUMP` asks for `stage`.
pub fn enabled(stage: Stage) -> bool {
    config().dump.iter().any(|s| s == stage.name())
}

/// The path a stage's dump of materialisation `seq` is written to.
pub fn path(seq: usize, stage: Stage) -> PathBuf {
    config().dump_dir.join(format!(
        "{seq:04}-{}-{}.{}",
        stage.position(),
        stage.name(),
        stage.extension()
    ))
}

/// Writes `text` as the dump of `stage` if asked for. A failure to write is reported on stderr
/// and does not stop the computation.
pub fn write(seq: usize, stage: Stage, text: impl FnOnce() -> String) {
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
    write(seq, Stage::Graph, || kiln_ir::text::print(g));
}

/// Dumps the code stages of a run from the code that ran (`ran`: by region, as
/// [`kiln_exec::last_run_code`] gives it): `mlir` (canonical and shape-generic), `llvm` (its
/// LLVM IR as translated, before optimisation: canonical), `ptx` (GPU kernels' PTX as loaded;
/// a region the bytecode interpreter ran, its program as comments) and `asm` (host kernels' assembly at the tier that ran, for reading). One file per stage, the
/// regions in order, each under a comment naming its kernel shape and tier and separated by a
/// `-----` comment line (`// -----` in MLIR, which `mlir-opt --split-input-file` reads).
pub fn ran_code(seq: usize, ran: &[(usize, RanCode)]) {
    let gpu = ran.iter().any(|(_, c)| matches!(c, RanCode::Gpu(_) | RanCode::GpuInterpreted(_)));
    let host = ran.iter().any(|(_, c)| matches!(c, RanCode::Host(_)));
    // PTX where a GPU kernel ran, assembly where a host kernel did.
    let stages = [(Stage::Mlir, true), (Stage::Llvm, true), (Stage::Ptx, gpu), (Stage::Asm, host)];
    for stage in stages.into_iter().filter_map(|(s, ran)| ran.then_some(s)) {
        write(seq, stage, || {
            let comment = comment(stage);
            let mut out = String::new();
            for (i, (region, code)) in ran.iter().enumerate() {
                if i > 0 {
                    out += &format!("{comment} -----\n");
                }
                out += &format!("{comment} region {region}: {}\n", code.describe());
                let text = match (stage, code.kernel()) {
                    // What the interpreter ran: its program, one instruction a line.
                    (Stage::Ptx, None) if let RanCode::GpuInterpreted(p) = code => {
                        Ok(p.text().lines().map(|l| format!("{comment} {l}\n")).collect())
                    }
                    (_, None) => continue,
                    (Stage::Mlir, Some(k)) => Ok(k.mlir.clone()),
                    (Stage::Llvm, Some(k)) => codegen::llvm_ir_of_mlir(&k.mlir),
                    (Stage::Ptx, Some(_)) => Ok(code
                        .ptx()
                        .map_or_else(|| "// no PTX: a host kernel\n".into(), Into::into)),
                    (Stage::Asm, Some(k)) if code.ptx().is_none() => {
                        codegen::asm_of_mlir(&k.mlir, code.tier().unwrap_or(Tier::Optimized))
                    }
                    (_, Some(_)) => Ok(format!("{comment} no host assembly: a GPU kernel\n")),
                };
                match text {
                    Ok(t) => out += &t,
                    Err(e) => out += &format!("{comment} compilation failed: {e}\n"),
                }
            }
            out
        });
    }
}

/// The comment leader of a code stage's language.
fn comment(stage: Stage) -> &'static str {
    match stage {
        Stage::Llvm => ";",
        Stage::Asm => "#",
        Stage::Graph
        | Stage::Simplified
        | Stage::IntMatmul
        | Stage::Regions
        | Stage::Schedule
        | Stage::Mlir
        | Stage::Ptx => "//",
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
    /// The pipeline stage it shows.
    pub fn stage(self) -> Stage {
        match self {
            CodeStage::HostMlir | CodeStage::GpuMlir => Stage::Mlir,
            CodeStage::HostLlvm | CodeStage::GpuLlvm => Stage::Llvm,
            CodeStage::HostAsm => Stage::Asm,
            CodeStage::Ptx(_) => Stage::Ptx,
        }
    }

    /// The region's kernel lowered for the stage's target (optimised tier), and the stage's text
    /// of it.
    fn text(self, region: &Region) -> Result<(codegen::Kernel, String), CompileError> {
        let options = match self {
            CodeStage::HostMlir | CodeStage::HostLlvm | CodeStage::HostAsm => LowerOptions::host(),
            CodeStage::GpuMlir | CodeStage::GpuLlvm => LowerOptions::gpu(),
            CodeStage::Ptx(target) => LowerOptions::gpu().for_sm(target.sm),
        };
        let kernel = codegen::lower(region, &options)?;
        let text = match self {
            CodeStage::HostMlir | CodeStage::GpuMlir => kernel.mlir.clone(),
            CodeStage::HostLlvm | CodeStage::GpuLlvm => codegen::llvm_ir_of_mlir(&kernel.mlir)?,
            CodeStage::HostAsm => codegen::asm_of_mlir(&kernel.mlir, Tier::Optimized)?,
            CodeStage::Ptx(target) => {
                let code = codegen::compile(
                    kernel.clone(),
                    codegen::CodeTarget::Ptx(target),
                    Tier::Optimized,
                )?;
                code.into_ptx().expect("a PTX target gives PTX").ptx.to_string()
            }
        };
        Ok((kernel, text))
    }
}

/// The code of every region at the optimised tier (what a kernel runs once hot; a cold one
/// starts with fast code: see [`ran_code`] for what ran), in order, each under a comment naming
/// it, its kernel shape and tier, separated by a `-----` comment line (`// -----` in MLIR, which
/// `mlir-opt --split-input-file` reads); a region code generation does not support says why (a
/// library or the reference evaluator runs it on the host). What [`crate::kernel_code`]
/// returns.
pub fn code_text(regions: &[Region], stage: CodeStage) -> String {
    let comment = comment(stage.stage());
    let mut out = String::new();
    for (i, region) in regions.iter().enumerate() {
        if i > 0 {
            out += &format!("{comment} -----\n");
        }
        match stage.text(region) {
            Ok((k, t)) => out += &format!("{comment} region {i}: {}, optimized tier\n{t}", k.shape),
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
