//! The host path: MLIR -> `llvm` dialect -> LLVM IR -> MCJIT, with a smoke kernel.

use inkwell::OptimizationLevel;
use melior::{
    dialect::{arith, func, memref, scf},
    ir::{
        attribute::{IntegerAttribute, StringAttribute, TypeAttribute},
        operation::OperationBuilder,
        r#type::{FunctionType, MemRefType},
        Attribute, Block, BlockLike, Identifier, Location, Module, Region, RegionLike, Type,
    },
    Context,
};

use super::mlir::{new_context, run_pipeline, translate_to_llvm, verify, HOST_PIPELINE};
use crate::CompileError;

/// Name of the smoke kernel built by [`build_add_sqrt_module`].
pub const ADD_SQRT_FN: &str = "kiln_add_sqrt";

/// `memref<?xf32>` as passed to an `llvm.emit_c_interface` wrapper (`_mlir_ciface_*`).
#[repr(C)]
struct MemRef1D {
    allocated: *mut f32,
    aligned: *mut f32,
    offset: i64,
    size: i64,
    stride: i64,
}

impl MemRef1D {
    fn new(data: *mut f32, len: usize) -> Self {
        let len = i64::try_from(len).expect("slice length fits in i64");
        Self { allocated: data, aligned: data, offset: 0, size: len, stride: 1 }
    }
}

/// Builds, with melior's builders, a module holding
///
/// ```mlir
/// func.func @kiln_add_sqrt(%a: memref<?xf32>, %b: memref<?xf32>, %out: memref<?xf32>)
///     attributes {llvm.emit_c_interface} {
///   // for i in 0..dim(out): out[i] = a[i] + math.sqrt(b[i])
/// }
/// ```
///
/// exercising func, arith, math, scf, memref and index.
pub fn build_add_sqrt_module(context: &Context) -> Result<Module<'_>, CompileError> {
    let location = Location::unknown(context);
    let module = Module::new(location);
    let f32_type = Type::float32(context);
    let index_type = Type::index(context);
    let memref_type: Type = MemRefType::new(f32_type, &[i64::MIN], None, None).into();

    let body = Block::new(&[(memref_type, location); 3]);
    let (a, b, out) =
        (body.argument(0)?.into(), body.argument(1)?.into(), body.argument(2)?.into());
    let zero = body.append_operation(arith::constant(
        context,
        IntegerAttribute::new(index_type, 0).into(),
        location,
    ));
    let one = body.append_operation(arith::constant(
        context,
        IntegerAttribute::new(index_type, 1).into(),
        location,
    ));
    let zero = zero.result(0)?.into();
    let len = body.append_operation(memref::dim(out, zero, location));

    let loop_body = Block::new(&[(index_type, location)]);
    let i = loop_body.argument(0)?.into();
    let x = loop_body.append_operation(memref::load(a, &[i], location));
    let y = loop_body.append_operation(memref::load(b, &[i], location));
    let root = loop_body.append_operation(
        OperationBuilder::new("math.sqrt", location)
            .add_operands(&[y.result(0)?.into()])
            .add_results(&[f32_type])
            .build()?,
    );
    let sum = loop_body.append_operation(arith::addf(
        x.result(0)?.into(),
        root.result(0)?.into(),
        location,
    ));
    loop_body.append_operation(memref::store(sum.result(0)?.into(), out, &[i], location));
    loop_body.append_operation(scf::r#yield(&[], location));
    let loop_region = Region::new();
    loop_region.append_block(loop_body);
    body.append_operation(scf::r#for(
        zero,
        len.result(0)?.into(),
        one.result(0)?.into(),
        loop_region,
        location,
    ));
    body.append_operation(func::r#return(&[], location));

    let region = Region::new();
    region.append_block(body);
    module.body().append_operation(func::func(
        context,
        StringAttribute::new(context, ADD_SQRT_FN),
        TypeAttribute::new(FunctionType::new(context, &[memref_type; 3], &[]).into()),
        region,
        &[(Identifier::new(context, "llvm.emit_c_interface"), Attribute::unit(context))],
        location,
    ));
    verify(&module)?;
    Ok(module)
}

/// Compiles [`build_add_sqrt_module`] through [`HOST_PIPELINE`], translates it to LLVM IR,
/// JIT-compiles it with MCJIT and runs it: returns `a[i] + sqrt(b[i])` for every `i`.
pub fn jit_add_sqrt(a: &[f32], b: &[f32]) -> Result<Vec<f32>, CompileError> {
    if a.len() != b.len() {
        return Err(CompileError::InvalidInput(format!(
            "operands differ in length: {} and {}",
            a.len(),
            b.len()
        )));
    }
    let context = new_context();
    let mut module = build_add_sqrt_module(&context)?;
    run_pipeline(&mut module, HOST_PIPELINE)?;

    let llvm = inkwell::context::Context::create();
    let llvm_module = translate_to_llvm(&module, &llvm)?;
    llvm_module.verify().map_err(|e| CompileError::Llvm(e.to_string()))?;
    let engine = llvm_module
        .create_jit_execution_engine(OptimizationLevel::Default)
        .map_err(|e| CompileError::Jit(e.to_string()))?;

    type Kernel = unsafe extern "C" fn(*mut MemRef1D, *mut MemRef1D, *mut MemRef1D);
    let symbol = format!("_mlir_ciface_{ADD_SQRT_FN}");
    // SAFETY: the `_mlir_ciface_` wrapper MLIR generated for the function built above takes three
    // pointers to `memref<?xf32>` descriptors, whose C layout `MemRef1D` reproduces.
    let kernel = unsafe { engine.get_function::<Kernel>(&symbol) }
        .map_err(|e| CompileError::Jit(format!("{symbol}: {e}")))?;

    let mut out = vec![0.0f32; a.len()];
    let mut a_desc = MemRef1D::new(a.as_ptr().cast_mut(), a.len());
    let mut b_desc = MemRef1D::new(b.as_ptr().cast_mut(), b.len());
    let mut out_desc = MemRef1D::new(out.as_mut_ptr(), out.len());
    // SAFETY: each descriptor describes a live, contiguous buffer of `len` f32s; the kernel reads
    // `a` and `b` (never writes them, so the `cast_mut` is sound) and writes `out` within bounds.
    unsafe { kernel.call(&mut a_desc, &mut b_desc, &mut out_desc) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_lowers_to_llvm_dialect() {
        let context = new_context();
        let mut module = build_add_sqrt_module(&context).unwrap();
        run_pipeline(&mut module, HOST_PIPELINE).unwrap();
        let text = module.as_operation().to_string();
        assert!(text.contains("llvm.func @kiln_add_sqrt"), "{text}");
        assert!(text.contains("llvm.intr.sqrt"), "{text}");
        assert!(!text.contains("scf.for") && !text.contains("memref.load"), "{text}");
    }

    #[test]
    fn jit_computes_add_sqrt() {
        let a = [1.0f32, 2.0, -3.5, 0.0, 10.0];
        let b = [4.0f32, 9.0, 0.25, 2.0, 0.0];
        let out = jit_add_sqrt(&a, &b).unwrap();
        let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y.sqrt()).collect();
        assert_eq!(out, want);
    }

    #[test]
    fn jit_handles_empty_input() {
        assert_eq!(jit_add_sqrt(&[], &[]).unwrap(), Vec::<f32>::new());
    }

    #[test]
    fn bad_pipeline_is_an_error_not_a_crash() {
        let context = new_context();
        let mut module = build_add_sqrt_module(&context).unwrap();
        let err = run_pipeline(&mut module, "builtin.module(no-such-pass)").unwrap_err();
        assert!(matches!(err, CompileError::Pipeline { .. }), "{err}");
        assert!(err.to_string().contains("no-such-pass"), "{err}");
    }

    #[test]
    fn unlowered_ops_fail_translation_with_diagnostics() {
        let context = new_context();
        let module = build_add_sqrt_module(&context).unwrap();
        let llvm = inkwell::context::Context::create();
        let err = translate_to_llvm(&module, &llvm).unwrap_err();
        assert!(matches!(err, CompileError::Translate(ref d) if !d.is_empty()), "{err}");
    }

    #[test]
    fn mismatched_lengths_are_rejected() {
        assert!(matches!(jit_add_sqrt(&[1.0], &[]), Err(CompileError::InvalidInput(_))));
    }
}
