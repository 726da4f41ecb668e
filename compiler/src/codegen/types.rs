//! How each dtype lives in memory and in registers, and the conversions between the two.
//!
//! | dtype | memory | register (working type) |
//! |---|---|---|
//! | bool | `i8` (0 or 1) | `i1` |
//! | int8..int64, uint8..uint64 | `iN` | `iN` (signless; ops pick signed or unsigned forms) |
//! | float16, bfloat16 | `i16` (the bits) | `f32`, always holding a value of the dtype |
//! | float32, float64 | `f32`, `f64` | the same |
//! | complex64, complex128 | `f32`/`f64` pairs (real, imag) | two `f64` values |
//!
//! float16 and bfloat16 compute in `f32` and every result is rounded back to the dtype
//! ([`round`]), as NumPy does (and the reference evaluator, which computes in f64: for `+ - * /`
//! and `sqrt` the two agree exactly, because f32 has more than twice the precision plus two bits).
//! A complex value is a pair of SSA values ([`Val::im`] holds the imaginary part), both `f64`:
//! complex64 computes in f64 and rounds each result's parts to f32, as the reference evaluator
//! does (so `+ - * /` match it bit for bit; NumPy and CuPy compute complex64 in f32, which loses
//! digits to cancellation in `a c - b d`). Nothing that carries one register type per value
//! (loop-carried accumulators, scratch buffers) takes a complex value: [`work_ty`] refuses
//! complex dtypes.

use kiln_ir::{DType, DTypeKind, Literal};

use super::builder::Builder;
use super::Unsupported;

/// A value in registers: its SSA name and the dtype it holds (its working type follows); for a
/// complex dtype, `ssa` is the real part and `im` the imaginary part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Val {
    pub ssa: String,
    pub dt: DType,
    pub im: Option<String>,
}

impl Val {
    /// A value of a real (non-complex) dtype.
    pub fn new(ssa: String, dt: DType) -> Val {
        debug_assert!(!dt.is_complex(), "a {dt} value needs both parts");
        Val { ssa, dt, im: None }
    }

    /// A complex value from its real and imaginary parts (of the component type).
    pub fn complex(re: String, im: String, dt: DType) -> Val {
        debug_assert!(dt.is_complex());
        Val { ssa: re, dt, im: Some(im) }
    }

    /// The MLIR working type (`f64` for each part of a complex value).
    pub fn ty(&self) -> &'static str {
        if self.dt.is_complex() {
            return "f64";
        }
        work_ty(self.dt).expect("values exist only of supported dtypes")
    }

    /// The imaginary part of a complex value.
    pub fn imag(&self) -> &str {
        self.im.as_deref().expect("a complex value")
    }
}

/// The memory type of each part of a complex dtype's elements (`f32` for complex64).
pub(crate) fn complex_mem_ty(dt: DType) -> &'static str {
    match dt {
        DType::Complex128 => "f64",
        _ => "f32",
    }
}

/// Whether values of `dt` can live in registers (every dtype: complex ones as pairs).
pub(crate) fn check_dtype(dt: DType) -> Result<(), Unsupported> {
    if dt.is_complex() {
        return Ok(());
    }
    work_ty(dt).map(|_| ())
}

/// The register type of a dtype; complex dtypes (two registers) are refused.
pub(crate) fn work_ty(dt: DType) -> Result<&'static str, Unsupported> {
    Ok(match dt {
        DType::Bool => "i1",
        DType::Int8 | DType::UInt8 => "i8",
        DType::Int16 | DType::UInt16 => "i16",
        DType::Int32 | DType::UInt32 => "i32",
        DType::Int64 | DType::UInt64 => "i64",
        DType::Float16 | DType::BFloat16 | DType::Float32 => "f32",
        DType::Float64 => "f64",
        DType::Complex64 | DType::Complex128 => {
            return Err(Unsupported::new(
                None,
                format!(
                    "{dt} values where one register is needed (a reduction or a scratch buffer)"
                ),
            ))
        }
    })
}

/// The memory type of a dtype's elements.
pub(crate) fn mem_ty(dt: DType) -> &'static str {
    match dt {
        DType::Bool | DType::Int8 | DType::UInt8 => "i8",
        DType::Int16 | DType::UInt16 | DType::Float16 | DType::BFloat16 => "i16",
        DType::Int32 | DType::UInt32 => "i32",
        DType::Int64 | DType::UInt64 => "i64",
        DType::Float32 => "f32",
        DType::Float64 | DType::Complex64 => "f64",
        DType::Complex128 => "i128",
    }
}

/// Bit width of an integer (or bool) dtype's register type.
pub(crate) fn int_width(dt: DType) -> u32 {
    match dt {
        DType::Bool => 1,
        d => d.itemsize() as u32 * 8,
    }
}

/// Loads element `pos` (an i64 SSA value) of the buffer `ptr` holding `dt` elements.
pub(crate) fn load(b: &mut Builder, ptr: &str, pos: &str, dt: DType) -> Val {
    load_with(b, ptr, pos, dt, false, None)
}

/// [`load`] of a real element whose address is a multiple of `align` bytes (so that LLVM
/// merges it with the next ones into a vector load: the first of a run must say so).
pub(crate) fn load_aligned(b: &mut Builder, ptr: &str, pos: &str, dt: DType, align: usize) -> Val {
    load_with(b, ptr, pos, dt, false, Some(align))
}

/// [`load`] of an element of a kernel input (a buffer the kernel does not write, of at least
/// one element): at a constant position, one invariant load at the function entry
/// ([`Builder::entry_load`]).
pub(crate) fn load_input(b: &mut Builder, ptr: &str, pos: &str, dt: DType) -> Val {
    let at_entry = b.i64_value(pos).is_some_and(|p| p >= 0);
    load_with(b, ptr, pos, dt, at_entry, None)
}

fn load_with(
    b: &mut Builder,
    ptr: &str,
    pos: &str,
    dt: DType,
    at_entry: bool,
    align: Option<usize>,
) -> Val {
    if dt.is_complex() {
        // One (re, im) vector load (see `complex_vec`): on the GPU, LLVM merges neighbours
        // into 16-byte loads.
        let (t, v, align) = complex_vec(b, dt);
        let addr = b.op(&format!(
            "llvm.getelementptr inbounds {ptr}[{pos}] : (!llvm.ptr, i64) -> !llvm.ptr, {v}"
        ));
        let pair =
            b.op(&format!("llvm.load {addr} {{alignment = {align} : i64}} : !llvm.ptr -> {v}"));
        let [re, im] = [0, 1].map(|k| {
            let i = b.constant(&k.to_string(), "i32");
            let x = b.op(&format!("llvm.extractelement {pair}[{i} : i32] : {v}"));
            if t == "f32" {
                b.op(&format!("arith.extf {x} : f32 to f64"))
            } else {
                x
            }
        });
        return Val::complex(re, im, dt);
    }
    let m = mem_ty(dt);
    let raw = if at_entry {
        b.entry_load(ptr, pos, m, dt.itemsize() as u64)
    } else {
        let addr = b.op(&format!(
            "llvm.getelementptr inbounds {ptr}[{pos}] : (!llvm.ptr, i64) -> !llvm.ptr, {m}"
        ));
        match align {
            Some(a) => {
                b.op(&format!("llvm.load {addr} {{alignment = {a} : i64}} : !llvm.ptr -> {m}"))
            }
            _ => b.op(&format!("llvm.load {addr} : !llvm.ptr -> {m}")),
        }
    };
    let ssa = match dt {
        DType::Bool => {
            let z = b.constant("0", "i8");
            b.op(&format!("arith.cmpi ne, {raw}, {z} : i8"))
        }
        DType::Float16 | DType::BFloat16 => float_from_bits(b, &raw, dt),
        _ => raw,
    };
    Val::new(ssa, dt)
}

/// The working value of a float dtype's bits (an `i16`, `i32` or `i64`; float16 and bfloat16
/// values are held in f32).
pub(crate) fn float_from_bits(b: &mut Builder, bits: &str, dt: DType) -> String {
    match dt {
        DType::Float16 => {
            let h = b.op(&format!("arith.bitcast {bits} : i16 to f16"));
            b.op(&format!("arith.extf {h} : f16 to f32"))
        }
        DType::BFloat16 => {
            let w = b.op(&format!("arith.extui {bits} : i16 to i32"));
            let s = b.constant("16", "i32");
            let sh = b.op(&format!("arith.shli {w}, {s} : i32"));
            b.op(&format!("arith.bitcast {sh} : i32 to f32"))
        }
        DType::Float32 => b.op(&format!("arith.bitcast {bits} : i32 to f32")),
        _ => b.op(&format!("arith.bitcast {bits} : i64 to f64")),
    }
}

/// The bits of a float dtype's working value (which holds a value of the dtype, so the
/// conversion is exact) and their integer type: the inverse of [`float_from_bits`].
pub(crate) fn float_bits(b: &mut Builder, x: &str, dt: DType) -> (String, &'static str) {
    match dt {
        DType::Float16 => {
            let h = b.op(&format!("arith.truncf {x} : f32 to f16"));
            (b.op(&format!("arith.bitcast {h} : f16 to i16")), "i16")
        }
        DType::BFloat16 => {
            // A bfloat16 value: its low 16 bits are zero.
            let w = b.op(&format!("arith.bitcast {x} : f32 to i32"));
            let s = b.constant("16", "i32");
            let sh = b.op(&format!("arith.shrui {w}, {s} : i32"));
            (b.op(&format!("arith.trunci {sh} : i32 to i16")), "i16")
        }
        DType::Float32 => (b.op(&format!("arith.bitcast {x} : f32 to i32")), "i32"),
        _ => (b.op(&format!("arith.bitcast {x} : f64 to i64")), "i64"),
    }
}

/// Stores `v` at element `pos` of the buffer `ptr` (of `v`'s dtype).
pub(crate) fn store(b: &mut Builder, ptr: &str, pos: &str, v: &Val) {
    store_with(b, ptr, pos, v, None)
}

/// [`store`] of a real element at an address a multiple of `align` bytes (see
/// [`load_aligned`]).
pub(crate) fn store_aligned(b: &mut Builder, ptr: &str, pos: &str, v: &Val, align: usize) {
    store_with(b, ptr, pos, v, Some(align))
}

fn store_with(b: &mut Builder, ptr: &str, pos: &str, v: &Val, align: Option<usize>) {
    if v.dt.is_complex() {
        let (t, vt, align) = complex_vec(b, v.dt);
        let mut pair = b.op(&format!("llvm.mlir.poison : {vt}"));
        for (k, x) in [&v.ssa, &v.imag().to_string()].into_iter().enumerate() {
            // complex64 parts hold f32 values already: the truncation is exact.
            let x = if t == "f32" {
                b.op(&format!("arith.truncf {x} : f64 to f32"))
            } else {
                x.clone()
            };
            let i = b.constant(&k.to_string(), "i32");
            pair = b.op(&format!("llvm.insertelement {x}, {pair}[{i} : i32] : {vt}"));
        }
        let addr = b.op(&format!(
            "llvm.getelementptr inbounds {ptr}[{pos}] : (!llvm.ptr, i64) -> !llvm.ptr, {vt}"
        ));
        b.stmt(&format!(
            "llvm.store {pair}, {addr} {{alignment = {align} : i64}} : {vt}, !llvm.ptr"
        ));
        return;
    }
    let m = mem_ty(v.dt);
    let raw = match v.dt {
        DType::Bool => b.op(&format!("arith.extui {} : i1 to i8", v.ssa)),
        DType::Float16 | DType::BFloat16 => float_bits(b, &v.ssa, v.dt).0,
        _ => v.ssa.clone(),
    };
    let addr = b.op(&format!(
        "llvm.getelementptr inbounds {ptr}[{pos}] : (!llvm.ptr, i64) -> !llvm.ptr, {m}"
    ));
    match align {
        Some(a) => {
            b.stmt(&format!("llvm.store {raw}, {addr} {{alignment = {a} : i64}} : {m}, !llvm.ptr"))
        }
        None => b.stmt(&format!("llvm.store {raw}, {addr} : {m}, !llvm.ptr")),
    }
}

/// A complex dtype's part type, its element as a vector of two parts, and the alignment the
/// loads claim: the element's size on the GPU (device buffers are 256-byte aligned and views
/// start at whole elements), the part's on the host (Rust's `Complex<f32>` is 4-byte aligned).
fn complex_vec(b: &Builder, dt: DType) -> (&'static str, &'static str, u32) {
    let gpu = b.target == super::Target::Gpu;
    match complex_mem_ty(dt) {
        "f32" => ("f32", "vector<2xf32>", if gpu { 8 } else { 4 }),
        _ => ("f64", "vector<2xf64>", if gpu { 16 } else { 8 }),
    }
}

/// An f32 or f64 constant, bit-exact (hexadecimal form).
pub(crate) fn float_const(b: &mut Builder, x: f64, ty: &str) -> String {
    match ty {
        "f32" => b.constant(&format!("0x{:08X}", (x as f32).to_bits()), "f32"),
        _ => b.constant(&format!("0x{:016X}", x.to_bits()), "f64"),
    }
}

/// A complex constant of `dt` (its parts rounded to f32 for complex64).
pub(crate) fn complex_const(b: &mut Builder, re: f64, im: f64, dt: DType) -> Val {
    let r = |x: f64| if dt == DType::Complex64 { x as f32 as f64 } else { x };
    let (re, im) = (float_const(b, r(re), "f64"), float_const(b, r(im), "f64"));
    Val::complex(re, im, dt)
}

/// An integer constant of a register type, from its two's complement bits.
pub(crate) fn int_const(b: &mut Builder, v: i128, ty: &str) -> String {
    let w: u32 = ty[1..].parse().expect("an integer type");
    if w == 1 {
        return b.constant(if v & 1 == 1 { "true" } else { "false" }, "i1");
    }
    // Print the value sign-extended from its width, as MLIR's parser wants it in range.
    let shift = 128 - w;
    let s = (v << shift) >> shift;
    b.constant(&s.to_string(), ty)
}

/// The value of a literal of `dt` in registers.
pub(crate) fn literal(b: &mut Builder, lit: Literal, dt: DType) -> Result<Val, Unsupported> {
    let v = kiln_ir::eval::Value::from_literal(lit, dt);
    if let (true, kiln_ir::eval::Value::Complex(z)) = (dt.is_complex(), v) {
        return Ok(complex_const(b, z.re, z.im, dt));
    }
    let ty = work_ty(dt)?;
    let ssa = match (dt.kind(), v) {
        (DTypeKind::Bool, kiln_ir::eval::Value::Bool(x)) => int_const(b, x as i128, ty),
        (DTypeKind::SignedInt, kiln_ir::eval::Value::Int(x)) => int_const(b, x as i128, ty),
        (DTypeKind::UnsignedInt, kiln_ir::eval::Value::UInt(x)) => int_const(b, x as i128, ty),
        (DTypeKind::Float, kiln_ir::eval::Value::Float(x)) => float_const(b, x, ty),
        _ => return Err(Unsupported::new(Some("const"), format!("a {dt} literal {lit:?}"))),
    };
    Ok(Val::new(ssa, dt))
}

/// Rounds a working-type value to its float16/bfloat16 dtype (a no-op for other dtypes).
pub(crate) fn round(b: &mut Builder, ssa: &str, dt: DType) -> String {
    match dt {
        DType::Float16 => {
            let h = b.op(&format!("arith.truncf {ssa} : f32 to f16"));
            b.op(&format!("arith.extf {h} : f16 to f32"))
        }
        DType::BFloat16 => round_bf16(b, ssa),
        _ => ssa.to_string(),
    }
}

/// An f32 rounded to the nearest bfloat16 (ties to even), kept in f32. NaN stays a quiet NaN.
fn round_bf16(b: &mut Builder, x: &str) -> String {
    let bits = b.op(&format!("arith.bitcast {x} : f32 to i32"));
    let sixteen = b.constant("16", "i32");
    let one = b.constant("1", "i32");
    let bias = b.constant("32767", "i32");
    let hi = b.op(&format!("arith.shrui {bits}, {sixteen} : i32"));
    let lsb = b.op(&format!("arith.andi {hi}, {one} : i32"));
    let add = b.op(&format!("arith.addi {bits}, {bias} : i32"));
    let add = b.op(&format!("arith.addi {add}, {lsb} : i32"));
    let mask = b.constant(&(0xFFFF0000u32 as i32).to_string(), "i32");
    let rounded = b.op(&format!("arith.andi {add}, {mask} : i32"));
    let quiet = b.constant(&(0x0040_0000i32).to_string(), "i32");
    let nan_bits = b.op(&format!("arith.ori {bits}, {quiet} : i32"));
    let nan_bits = b.op(&format!("arith.andi {nan_bits}, {mask} : i32"));
    let is_nan = b.op(&format!("arith.cmpf uno, {x}, {x} : f32"));
    let r = b.op(&format!("arith.select {is_nan}, {nan_bits}, {rounded} : i32"));
    b.op(&format!("arith.bitcast {r} : i32 to f32"))
}

/// An f64 rounded once to float16 or bfloat16 (returned in f32): rounded to odd in f32 first
/// (truncation with the inexact bit kept as the last bit), then to nearest-even in the narrow
/// format; with 24 ≥ p + 2 bits the two roundings give the correctly rounded result.
pub(crate) fn round_f64_to_narrow(b: &mut Builder, x: &str, dt: DType) -> String {
    let t = b.op(&format!("arith.truncf {x} : f64 to f32"));
    let back = b.op(&format!("arith.extf {t} : f32 to f64"));
    let ax = b.op(&format!("math.absf {x} : f64"));
    let aback = b.op(&format!("math.absf {back} : f64"));
    let bits = b.op(&format!("arith.bitcast {t} : f32 to i32"));
    // Magnitude rounded up past x: step back toward zero (bits - 1 on the magnitude).
    let over = b.op(&format!("arith.cmpf ogt, {aback}, {ax} : f64"));
    let one = b.constant("1", "i32");
    let down = b.op(&format!("arith.subi {bits}, {one} : i32"));
    let trunc = b.op(&format!("arith.select {over}, {down}, {bits} : i32"));
    let inexact = b.op(&format!("arith.cmpf one, {back}, {x} : f64"));
    let odd = b.op(&format!("arith.ori {trunc}, {one} : i32"));
    let rto = b.op(&format!("arith.select {inexact}, {odd}, {trunc} : i32"));
    let f = b.op(&format!("arith.bitcast {rto} : i32 to f32"));
    // NaN: `one` comparisons are false, so the NaN passes through unchanged.
    round(b, &f, dt)
}
