//! PTX emission for `nvptx64-nvidia-cuda` through LLVM's NVPTX backend, with a smoke kernel.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Once;
use std::time::Instant;

use inkwell::{
    builder::Builder,
    context::Context,
    module::{Linkage, Module},
    passes::PassBuilderOptions,
    targets::{
        CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple,
    },
    AddressSpace, IntPredicate, OptimizationLevel,
};

use crate::CompileError;

/// LLVM target triple of CUDA devices.
pub const NVPTX_TRIPLE: &str = "nvptx64-nvidia-cuda";
/// LLVM's `ptx_kernel` calling convention (`CallingConv::PTX_Kernel`): makes a function an
/// `.entry`. (LLVM 20+ dropped the `nvvm.annotations` "kernel" metadata in favour of it.)
pub const PTX_KERNEL_CC: u32 = 71;
/// Address space of CUDA global memory in NVPTX.
pub const GLOBAL_ADDRESS_SPACE: u16 = 1;
/// Name of the smoke kernel built by [`build_add_kernel`].
pub const ADD_KERNEL: &str = "kiln_add_f32";

/// What to generate PTX for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PtxTarget {
    /// Compute capability as `major * 10 + minor`: 90 for sm_90 (H100/H200).
    pub sm: u32,
    /// PTX ISA version as `major * 10 + minor`: 80 for PTX 8.0 (needs CUDA 12.0+ drivers).
    pub ptx_isa: u32,
}

impl Default for PtxTarget {
    fn default() -> Self {
        Self { sm: 90, ptx_isa: 80 }
    }
}

impl PtxTarget {
    /// The LLVM CPU name, e.g. `sm_90`.
    pub fn cpu(&self) -> String {
        format!("sm_{}", self.sm)
    }

    /// The LLVM feature string, e.g. `+ptx80`.
    pub fn features(&self) -> String {
        format!("+ptx{}", self.ptx_isa)
    }

    /// Creates an NVPTX target machine at O3.
    pub fn target_machine(&self) -> Result<TargetMachine, CompileError> {
        self.target_machine_at(OptimizationLevel::Aggressive)
    }

    /// Creates an NVPTX target machine whose code generation runs at `level`.
    pub fn target_machine_at(
        &self,
        level: OptimizationLevel,
    ) -> Result<TargetMachine, CompileError> {
        static INIT: Once = Once::new();
        INIT.call_once(|| Target::initialize_nvptx(&InitializationConfig::default()));
        let triple = TargetTriple::create(NVPTX_TRIPLE);
        let target = Target::from_triple(&triple).map_err(|e| CompileError::Llvm(e.to_string()))?;
        target
            .create_target_machine(
                &triple,
                &self.cpu(),
                &self.features(),
                level,
                RelocMode::Default,
                CodeModel::Default,
            )
            .ok_or_else(|| CompileError::Llvm(format!("no NVPTX target machine for {self:?}")))
    }
}

/// Where the time of one PTX compilation went, in milliseconds (`KILN_DUMP`-independent; the
/// GPU backend logs it with `tracing` at debug level, and `cargo bench --bench codegen` prints
/// the breakdown of the "to PTX" benchmark).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PtxTimes {
    /// MLIR text parsed and verified.
    pub parse: f64,
    /// MLIR passes down to the `llvm`/`nvvm` dialects.
    pub passes: f64,
    /// Translation to LLVM IR.
    pub translate: f64,
    /// libdevice loaded (lazily: only the called functions are read) and linked.
    pub link: f64,
    /// LLVM's optimisation pipeline.
    pub optimize: f64,
    /// NVPTX code generation (the PTX text).
    pub codegen: f64,
}

impl PtxTimes {
    /// The sum of the stages.
    pub fn total(&self) -> f64 {
        self.parse + self.passes + self.translate + self.link + self.optimize + self.codegen
    }
}

/// Milliseconds since `t`.
pub(crate) fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

thread_local! {
    /// NVPTX target machines by target and code-generation level (`true`: optimised), made once
    /// per thread (a target machine is used by one thread at a time).
    static MACHINES: RefCell<HashMap<(PtxTarget, bool), TargetMachine>> = RefCell::new(HashMap::new());
}

/// Runs `f` with this thread's target machine for `target` (optimised code generation).
pub fn with_target_machine<T>(
    target: PtxTarget,
    f: impl FnOnce(&TargetMachine) -> Result<T, CompileError>,
) -> Result<T, CompileError> {
    with_target_machine_at(target, true, f)
}

/// Runs `f` with this thread's target machine for `target`, whose code generation is
/// optimised (`-O3`) or not (`-O0`: no DAG combining or machine-code optimisation, a third of
/// the time; ptxas optimises what it is given either way).
pub fn with_target_machine_at<T>(
    target: PtxTarget,
    optimized: bool,
    f: impl FnOnce(&TargetMachine) -> Result<T, CompileError>,
) -> Result<T, CompileError> {
    MACHINES.with(|machines| {
        let key = (target, optimized);
        if !machines.borrow().contains_key(&key) {
            let level =
                if optimized { OptimizationLevel::Aggressive } else { OptimizationLevel::None };
            let machine = target.target_machine_at(level)?;
            machines.borrow_mut().insert(key, machine);
        }
        let machines = machines.borrow();
        f(&machines[&key])
    })
}

/// Gives every function and global variable `module` defines internal linkage but the
/// function `keep` (external), so the optimiser inlines them and drops what is not called.
pub fn internalize(module: &Module<'_>, keep: &str) {
    for f in module.get_functions() {
        if f.get_name().to_bytes() == keep.as_bytes() {
            f.set_linkage(Linkage::External);
        } else if f.count_basic_blocks() > 0 {
            f.set_linkage(Linkage::Internal);
        }
    }
    for g in module.get_globals() {
        if g.get_initializer().is_some() {
            g.set_linkage(Linkage::Internal);
        }
    }
}

/// Sets `module`'s triple and data layout for `target` (before it is optimised or linked).
pub fn set_target(module: &Module<'_>, target: PtxTarget) -> Result<(), CompileError> {
    with_target_machine(target, |machine| {
        module.set_triple(&machine.get_triple());
        module.set_data_layout(&machine.get_target_data().get_data_layout());
        Ok(())
    })
}

/// Runs the textual LLVM pass `pipeline` on `module` with `target`'s machine (which adds
/// NVPTX's passes, NVVMReflect among them, to the default pipelines).
pub fn run_pipeline(
    module: &Module<'_>,
    target: PtxTarget,
    pipeline: &str,
) -> Result<(), CompileError> {
    with_target_machine(target, |machine| {
        module
            .run_passes(pipeline, machine, PassBuilderOptions::create())
            .map_err(|e| CompileError::Llvm(format!("{pipeline}: {e}")))
    })
}

/// The PTX of an optimised `module` (NVPTX code generation).
pub fn codegen(module: &Module<'_>, target: PtxTarget) -> Result<String, CompileError> {
    codegen_at(module, target, true)
}

/// The PTX of `module`, its code generation optimised or not (see [`with_target_machine_at`]).
pub fn codegen_at(
    module: &Module<'_>,
    target: PtxTarget,
    optimized: bool,
) -> Result<String, CompileError> {
    let buffer = with_target_machine_at(target, optimized, |machine| {
        machine
            .write_to_memory_buffer(module, FileType::Assembly)
            .map_err(|e| CompileError::Llvm(e.to_string()))
    })?;
    String::from_utf8(buffer.as_slice().to_vec())
        .map_err(|e| CompileError::Llvm(format!("PTX is not UTF-8: {e}")))
}

/// Sets `module`'s triple and data layout for `target`, runs `default<O3>` and returns the PTX.
pub fn emit_ptx(module: &Module<'_>, target: PtxTarget) -> Result<String, CompileError> {
    set_target(module, target)?;
    module.verify().map_err(|e| CompileError::Llvm(e.to_string()))?;
    run_pipeline(module, target, "default<O3>")?;
    codegen(module, target)
}

/// Builds, with inkwell, a module holding
///
/// ```llvm
/// define ptx_kernel void @kiln_add_f32(ptr addrspace(1) %a, ptr addrspace(1) %b,
///                                      ptr addrspace(1) %out, i32 %n)
/// ; i = ctaid.x * ntid.x + tid.x; if (i < n) out[i] = a[i] + b[i]
/// ```
pub fn build_add_kernel(context: &Context) -> Result<Module<'_>, CompileError> {
    let llvm = |e: inkwell::builder::BuilderError| CompileError::Llvm(e.to_string());
    let module = context.create_module("kiln_add");
    let f32_type = context.f32_type();
    let i32_type = context.i32_type();
    let ptr = context.ptr_type(AddressSpace::from(GLOBAL_ADDRESS_SPACE));
    let fn_type =
        context.void_type().fn_type(&[ptr.into(), ptr.into(), ptr.into(), i32_type.into()], false);
    let function = module.add_function(ADD_KERNEL, fn_type, None);
    function.set_call_conventions(PTX_KERNEL_CC);

    let sreg = |name: &str| {
        module
            .get_function(name)
            .unwrap_or_else(|| module.add_function(name, i32_type.fn_type(&[], false), None))
    };
    let builder: Builder = context.create_builder();
    let entry = context.append_basic_block(function, "entry");
    let body = context.append_basic_block(function, "body");
    let exit = context.append_basic_block(function, "exit");

    builder.position_at_end(entry);
    let read = |name: &str| -> Result<_, CompileError> {
        let call = builder.build_call(sreg(name), &[], "").map_err(llvm)?;
        call.try_as_basic_value()
            .basic()
            .map(|v| v.into_int_value())
            .ok_or_else(|| CompileError::Llvm(format!("{name} returned no value")))
    };
    let tid = read("llvm.nvvm.read.ptx.sreg.tid.x")?;
    let ntid = read("llvm.nvvm.read.ptx.sreg.ntid.x")?;
    let ctaid = read("llvm.nvvm.read.ptx.sreg.ctaid.x")?;
    let block_start = builder.build_int_nuw_mul(ctaid, ntid, "block_start").map_err(llvm)?;
    let i = builder.build_int_nuw_add(block_start, tid, "i").map_err(llvm)?;
    let n = function.get_nth_param(3).expect("4 params").into_int_value();
    let in_bounds =
        builder.build_int_compare(IntPredicate::ULT, i, n, "in_bounds").map_err(llvm)?;
    builder.build_conditional_branch(in_bounds, body, exit).map_err(llvm)?;

    builder.position_at_end(body);
    let i64_index = builder.build_int_z_extend(i, context.i64_type(), "i64").map_err(llvm)?;
    let element = |param: u32, name: &str| -> Result<_, CompileError> {
        let base = function.get_nth_param(param).expect("4 params").into_pointer_value();
        // SAFETY: `inbounds` only promises LLVM that the address stays inside the buffer, which
        // the `i < n` guard gives for buffers of `n` floats (the kernel's contract).
        unsafe { builder.build_in_bounds_gep(f32_type, base, &[i64_index], name) }.map_err(llvm)
    };
    let (pa, pb, pout) = (element(0, "pa")?, element(1, "pb")?, element(2, "pout")?);
    let x = builder.build_load(f32_type, pa, "x").map_err(llvm)?.into_float_value();
    let y = builder.build_load(f32_type, pb, "y").map_err(llvm)?.into_float_value();
    let sum = builder.build_float_add(x, y, "sum").map_err(llvm)?;
    builder.build_store(pout, sum).map_err(llvm)?;
    builder.build_unconditional_branch(exit).map_err(llvm)?;

    builder.position_at_end(exit);
    builder.build_return(None).map_err(llvm)?;
    module.verify().map_err(|e| CompileError::Llvm(e.to_string()))?;
    Ok(module)
}

/// PTX of [`build_add_kernel`] for `target`.
pub fn add_kernel_ptx(target: PtxTarget) -> Result<String, CompileError> {
    let context = Context::create();
    let module = build_add_kernel(&context)?;
    emit_ptx(&module, target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_has_entry_and_target() {
        let ptx = add_kernel_ptx(PtxTarget::default()).unwrap();
        assert!(ptx.contains(&format!(".visible .entry {ADD_KERNEL}(")), "{ptx}");
        assert!(ptx.contains(".target sm_90"), "{ptx}");
        assert!(ptx.contains(".version 8.0"), "{ptx}");
        assert!(ptx.contains(".address_size 64"), "{ptx}");
        assert!(ptx.contains("add.rn.f32") || ptx.contains("add.f32"), "{ptx}");
    }

    /// MLIR `llvm` + `nvvm` dialects -> LLVM IR -> PTX: checks the NVVM translation is
    /// registered and that `nvvm.kernel` becomes an `.entry`.
    #[test]
    fn mlir_nvvm_module_to_ptx() {
        let context = crate::toolchain::mlir::new_context();
        let source = r#"
            llvm.func @kiln_tid(%out: !llvm.ptr<1>) attributes {nvvm.kernel} {
              %tid = nvvm.read.ptx.sreg.tid.x : i32
              %p = llvm.getelementptr inbounds %out[%tid] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, i32
              llvm.store %tid, %p : i32, !llvm.ptr<1>
              llvm.return
            }"#;
        let module = melior::ir::Module::parse(&context, source).expect("parses");
        let llvm = Context::create();
        let llvm_module = crate::toolchain::mlir::translate_to_llvm(&module, &llvm).unwrap();
        let ptx = emit_ptx(&llvm_module, PtxTarget::default()).unwrap();
        assert!(ptx.contains(".visible .entry kiln_tid("), "{ptx}");
        assert!(ptx.contains("%tid.x"), "{ptx}");
    }

    #[test]
    fn other_targets() {
        let ptx = add_kernel_ptx(PtxTarget { sm: 80, ptx_isa: 78 }).unwrap();
        assert!(ptx.contains(".target sm_80") && ptx.contains(".version 7.8"), "{ptx}");
    }
}
