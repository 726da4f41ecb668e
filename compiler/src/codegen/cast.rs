//! `cast`: NumPy's `astype` with unsafe casting, as the reference evaluator defines it
//! (`kiln_ir::eval::cast`):
//! - to bool: `x != 0` (NaN is true);
//! - integer to integer: two's complement wrap-around; bool is 0/1;
//! - float to integer: truncation toward zero; NaN, ±inf and out-of-range values give what x86-64
//!   gives (`kiln_ir::eval::float_to_int`): narrow types convert through a 32-bit register, int64
//!   and uint32 through a 64-bit one, uint64 subtracts 2**63 from large values first;
//! - to a float: correctly rounded (nearest, ties to even), from integers too: float16 and
//!   bfloat16 targets round to odd in f32 first so that nothing double-rounds.

use kiln_ir::{DType, DTypeKind};

use super::builder::Builder;
use super::types::{float_const, int_const, int_width, round, round_f64_to_narrow, work_ty, Val};
use super::Unsupported;

/// `v` converted to `to`.
pub(crate) fn cast(b: &mut Builder, v: &Val, to: DType) -> Result<Val, Unsupported> {
    let from = v.dt;
    if from.is_complex() || to.is_complex() {
        return super::complex::cast_complex(b, v, to);
    }
    let fty = work_ty(from)?;
    let tty = work_ty(to)?;
    let x = &v.ssa;
    if from == to {
        return Ok(v.clone());
    }
    let s = match (from.kind(), to.kind()) {
        (_, DTypeKind::Bool) => {
            if from.is_float() {
                let z = float_const(b, 0.0, fty);
                b.op(&format!("arith.cmpf une, {x}, {z} : {fty}"))
            } else {
                let z = int_const(b, 0, fty);
                b.op(&format!("arith.cmpi ne, {x}, {z} : {fty}"))
            }
        }
        (
            DTypeKind::Bool | DTypeKind::SignedInt | DTypeKind::UnsignedInt,
            DTypeKind::SignedInt | DTypeKind::UnsignedInt,
        ) => {
            let (fw, tw) = (int_width(from), int_width(to));
            if fw == tw {
                x.clone()
            } else if fw > tw {
                b.op(&format!("arith.trunci {x} : {fty} to {tty}"))
            } else if from.is_signed_integer() {
                b.op(&format!("arith.extsi {x} : {fty} to {tty}"))
            } else {
                b.op(&format!("arith.extui {x} : {fty} to {tty}"))
            }
        }
        (DTypeKind::Bool | DTypeKind::SignedInt | DTypeKind::UnsignedInt, DTypeKind::Float) => {
            int_to_float(b, x, from, to)
        }
        (DTypeKind::Float, DTypeKind::SignedInt | DTypeKind::UnsignedInt) => {
            float_to_int(b, x, from, to)
        }
        (DTypeKind::Float, DTypeKind::Float) => match (from, to) {
            (DType::Float64, DType::Float32) => b.op(&format!("arith.truncf {x} : f64 to f32")),
            (DType::Float64, _) => round_f64_to_narrow(b, x, to),
            (_, DType::Float64) => b.op(&format!("arith.extf {x} : f32 to f64")),
            // f16/bf16/f32 to f16/bf16/f32: widening is exact, narrowing rounds once from f32.
            _ => round(b, x, to),
        },
        (DTypeKind::Complex, _) | (_, DTypeKind::Complex) => {
            unreachable!("complex casts return above")
        }
    };
    Ok(Val::new(s, to))
}

/// An integer (or bool) correctly rounded to a float dtype.
fn int_to_float(b: &mut Builder, x: &str, from: DType, to: DType) -> String {
    let fty = work_ty(from).expect("integer");
    let w = int_width(from);
    let unsigned = !from.is_signed_integer();
    let conv = if unsigned { "arith.uitofp" } else { "arith.sitofp" };
    match to {
        DType::Float32 | DType::Float64 => {
            let tty = if to == DType::Float32 { "f32" } else { "f64" };
            b.op(&format!("{conv} {x} : {fty} to {tty}"))
        }
        _ if w <= 16 => {
            // Exact in f32, then one rounding.
            let f = b.op(&format!("{conv} {x} : {fty} to f32"));
            round(b, &f, to)
        }
        _ => {
            // |x| rounded to odd at 24 bits: keep the top 24 significant bits and OR the rest
            // into the last one, so the rounding to 11 or 8 bits after sees every bit.
            let x64 = if w == 64 {
                x.to_string()
            } else if unsigned {
                b.op(&format!("arith.extui {x} : {fty} to i64"))
            } else {
                b.op(&format!("arith.extsi {x} : {fty} to i64"))
            };
            let z = b.i64(0);
            let neg = if unsigned {
                b.constant("false", "i1")
            } else {
                b.op(&format!("arith.cmpi slt, {x64}, {z} : i64"))
            };
            let nx = b.op(&format!("arith.subi {z}, {x64} : i64"));
            let a = b.op(&format!("arith.select {neg}, {nx}, {x64} : i64"));
            let lz = b.op(&format!("math.ctlz {a} : i64"));
            let c40 = b.i64(40);
            // shift = max(64 - lz - 24, 0) = max(40 - lz, 0)
            let sh = b.op(&format!("arith.subi {c40}, {lz} : i64"));
            let sh = b.op(&format!("arith.maxsi {sh}, {z} : i64"));
            let q = b.op(&format!("arith.shrui {a}, {sh} : i64"));
            let one = b.i64(1);
            let bit = b.op(&format!("arith.shli {one}, {sh} : i64"));
            let mask = b.op(&format!("arith.subi {bit}, {one} : i64"));
            let low = b.op(&format!("arith.andi {a}, {mask} : i64"));
            let sticky = b.op(&format!("arith.cmpi ne, {low}, {z} : i64"));
            let sticky = b.op(&format!("arith.extui {sticky} : i1 to i64"));
            let q = b.op(&format!("arith.ori {q}, {sticky} : i64"));
            let f = b.op(&format!("arith.uitofp {q} : i64 to f32"));
            // Scale by 2**shift exactly: the f32 with exponent field shift + 127.
            let bias = b.i64(127);
            let e = b.op(&format!("arith.addi {sh}, {bias} : i64"));
            let e = b.op(&format!("arith.trunci {e} : i64 to i32"));
            let c23 = b.constant("23", "i32");
            let e = b.op(&format!("arith.shli {e}, {c23} : i32"));
            let scale = b.op(&format!("arith.bitcast {e} : i32 to f32"));
            let mag = b.op(&format!("arith.mulf {f}, {scale} : f32"));
            let nmag = b.op(&format!("arith.negf {mag} : f32"));
            let signed = b.op(&format!("arith.select {neg}, {nmag}, {mag} : f32"));
            round(b, &signed, to)
        }
    }
}

/// A float converted to an integer dtype as x86-64 does it (see the module docs).
fn float_to_int(b: &mut Builder, x: &str, from: DType, to: DType) -> String {
    let tty = work_ty(to).expect("integer");
    // Range checks are exact in f64.
    let x = if from == DType::Float64 {
        x.to_string()
    } else {
        b.op(&format!("arith.extf {x} : f32 to f64"))
    };
    let t = b.op(&format!("math.trunc {x} : f64"));
    let narrow = |b: &mut Builder, v: &str, w: u32| -> String {
        let vty = format!("i{w}");
        if int_width(to) == w {
            v.to_string()
        } else {
            b.op(&format!("arith.trunci {v} : {vty} to {tty}"))
        }
    };
    // trunc(x) as a signed integer of `bits` bits if in range, else that type's minimum.
    let cvt = |b: &mut Builder, t: &str, bits: u32| -> String {
        let ity = format!("i{bits}");
        let (lo, hi) = if bits == 32 {
            (-2147483648.0, 2147483647.0)
        } else {
            (-9223372036854775808.0, 9223372036854775807.0)
        };
        let lo_c = float_const(b, lo, "f64");
        let hi_c = float_const(b, hi, "f64");
        let ge = b.op(&format!("arith.cmpf oge, {t}, {lo_c} : f64"));
        // 2**63 - 1 rounds to 2**63 in f64: the 64-bit range is [-2**63, 2**63).
        let le = if bits == 32 {
            b.op(&format!("arith.cmpf ole, {t}, {hi_c} : f64"))
        } else {
            b.op(&format!("arith.cmpf olt, {t}, {hi_c} : f64"))
        };
        let ok = b.op(&format!("arith.andi {ge}, {le} : i1"));
        let zero = float_const(b, 0.0, "f64");
        let safe = b.op(&format!("arith.select {ok}, {t}, {zero} : f64"));
        let i = b.op(&format!("arith.fptosi {safe} : f64 to {ity}"));
        let min = int_const(b, if bits == 32 { i32::MIN as i128 } else { i64::MIN as i128 }, &ity);
        b.op(&format!("arith.select {ok}, {i}, {min} : {ity}"))
    };
    match to {
        DType::Int8 | DType::Int16 | DType::Int32 | DType::UInt8 | DType::UInt16 => {
            let i = cvt(b, &t, 32);
            narrow(b, &i, 32)
        }
        DType::Int64 | DType::UInt32 => {
            let i = cvt(b, &t, 64);
            narrow(b, &i, 64)
        }
        DType::UInt64 => {
            let two63 = float_const(b, 9223372036854775808.0, "f64");
            let big = b.op(&format!("arith.cmpf oge, {x}, {two63} : f64"));
            let xs = b.op(&format!("arith.subf {x}, {two63} : f64"));
            let ts = b.op(&format!("math.trunc {xs} : f64"));
            let hi = cvt(b, &ts, 64);
            let top = int_const(b, i64::MIN as i128, "i64");
            let hi = b.op(&format!("arith.xori {hi}, {top} : i64"));
            let lo = cvt(b, &t, 64);
            b.op(&format!("arith.select {big}, {hi}, {lo} : i64"))
        }
        _ => unreachable!("float_to_int to {to}"),
    }
}
