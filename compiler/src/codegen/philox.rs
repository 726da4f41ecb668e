//! The `philox` op in the arith dialect: ten rounds of Philox4x32 on 32-bit words. Each
//! 32×32→64 product is, on the host, an `i64` multiply of zero-extended words (x86's 64-bit
//! `imul`, `pmuludq` when vectorised); on the GPU an `i32` multiply for the low word and
//! `llvm.nvvm.mulhi.ui` for the high word (`mul.lo.u32`, `mul.hi.u32`), so that every word
//! of the round stays a 32-bit register: through the truncations of an `i64` product LLVM
//! widened the rounds' xors to 64 bits and NVPTX emitted `mul.lo.s64` (several instructions
//! each). The reference is `kiln_ir::eval::random`; the bits are the same on every target.

use kiln_ir::eval::random::{COS_F32, PHILOX_M, PHILOX_W, SIN_F32};
use kiln_ir::DType;

use super::builder::Builder;
use super::scalar::{bin, math, native, select};
use super::types::{float_const, int_const, work_ty};
use super::Unsupported;

/// Words `first` and `first + 1` of Philox4x32-10 of counter `(lo x, hi x, 0, 0)` under key
/// `(lo y, hi y)`, as `w[first + 1] · 2^32 + w[first]` in `dt`'s width (`x`, `y` of unsigned
/// dtype `dt`). `philox` and `philox_high` of one counter emit the same rounds, which LLVM
/// computes once.
pub(crate) fn philox(b: &mut Builder, x: &str, y: &str, dt: DType, first: usize) -> String {
    let ty = work_ty(dt).expect("an unsigned integer dtype");
    let wide = |b: &mut Builder, v: &str| -> String {
        if ty == "i64" {
            v.to_string()
        } else {
            b.op(&format!("arith.extui {v} : {ty} to i64"))
        }
    };
    let (x, y) = (wide(b, x), wide(b, y));
    let c32 = int_const(b, 32, "i64");
    let lo = |b: &mut Builder, v: &str| b.op(&format!("arith.trunci {v} : i64 to i32"));
    let hi = |b: &mut Builder, v: &str| {
        let s = bin(b, "arith.shrui", v, &c32, "i64");
        b.op(&format!("arith.trunci {s} : i64 to i32"))
    };
    let zero = int_const(b, 0, "i32");
    let mut c = [lo(b, &x), hi(b, &x), zero.clone(), zero];
    let mut k = [lo(b, &y), hi(b, &y)];
    let m = PHILOX_M.map(|v| int_const(b, i128::from(v), "i64"));
    let m32 = PHILOX_M.map(|v| int_const(b, i128::from(v), "i32"));
    let w = PHILOX_W.map(|v| int_const(b, i128::from(v), "i32"));
    for round in 0..10 {
        if round > 0 {
            k = [
                bin(b, "arith.addi", &k[0], &w[0], "i32"),
                bin(b, "arith.addi", &k[1], &w[1], "i32"),
            ];
        }
        let (hi0, lo0) = product(b, &m[0], &m32[0], &c[0]);
        let (hi1, lo1) = product(b, &m[1], &m32[1], &c[2]);
        let t1 = bin(b, "arith.xori", &hi1, &c[1], "i32");
        let t3 = bin(b, "arith.xori", &hi0, &c[3], "i32");
        c = [
            bin(b, "arith.xori", &t1, &k[0], "i32"),
            lo1,
            bin(b, "arith.xori", &t3, &k[1], "i32"),
            lo0,
        ];
    }
    let w0 = b.op(&format!("arith.extui {} : i32 to i64", c[first]));
    let w1 = b.op(&format!("arith.extui {} : i32 to i64", c[first + 1]));
    let w1 = bin(b, "arith.shli", &w1, &c32, "i64");
    let bits = bin(b, "arith.ori", &w1, &w0, "i64");
    if ty == "i64" {
        bits
    } else {
        b.op(&format!("arith.trunci {bits} : i64 to {ty}"))
    }
}

/// `(hi, lo)` words of the 32×32→64 product `m · c` (`m` the multiplier as `i64` and as
/// `i32`, `c` an `i32` word).
fn product(b: &mut Builder, m64: &str, m32: &str, c: &str) -> (String, String) {
    if b.target == super::Target::Gpu {
        let lo = bin(b, "arith.muli", m32, c, "i32");
        let hi = b.op(&format!(
            "llvm.call_intrinsic \"llvm.nvvm.mulhi.ui\"({m32}, {c}) : (i32, i32) -> i32"
        ));
        return (hi, lo);
    }
    let c = b.op(&format!("arith.extui {c} : i32 to i64"));
    let p = bin(b, "arith.muli", m64, &c, "i64");
    let c32 = int_const(b, 32, "i64");
    let s = bin(b, "arith.shrui", &p, &c32, "i64");
    let hi = b.op(&format!("arith.trunci {s} : i64 to i32"));
    let lo = b.op(&format!("arith.trunci {p} : i64 to i32"));
    (hi, lo)
}

/// `r cos θ` (or with `sin`, `r sin θ`) of float32 Box-Muller of the word pair `x` (unsigned
/// dtype `dt`): `kiln_ir::eval::random::box_muller_f32`, one arith op for each of its float32
/// operations, in its order (the log by [`math`]), so every target computes the evaluator's
/// values (up to the log's last bits and FMA contraction). An f32.
pub(crate) fn box_muller(
    b: &mut Builder,
    x: &str,
    dt: DType,
    sin: bool,
) -> Result<String, Unsupported> {
    let ty = work_ty(dt).expect("an unsigned integer dtype");
    let x =
        if ty == "i64" { x.to_string() } else { b.op(&format!("arith.extui {x} : {ty} to i64")) };
    let f = |b: &mut Builder, v: f32| float_const(b, f64::from(v), "f32");
    let i = |b: &mut Builder, v: i128| int_const(b, v, "i32");
    // The radius from the low word.
    let w1 = b.op(&format!("arith.trunci {x} : i64 to i32"));
    let c8 = i(b, 8);
    let k = bin(b, "arith.shrui", &w1, &c8, "i32");
    let k = b.op(&format!("arith.uitofp {k} : i32 to f32"));
    let scale = f(b, 1.0 / 16_777_216.0);
    let u = bin(b, "arith.mulf", &k, &scale, "f32");
    let one = f(b, 1.0);
    let v = bin(b, "arith.subf", &one, &u, "f32");
    let l = math(b, "log", &[&v], "f32")?;
    let m2 = f(b, -2.0);
    let l = bin(b, "arith.mulf", &l, &m2, "f32");
    let r = native(b, "sqrt", &[&l], "f32");
    // The angle from the high word, reduced to the nearest quarter turn.
    let c32 = int_const(b, 32, "i64");
    let w2 = bin(b, "arith.shrui", &x, &c32, "i64");
    let w2 = b.op(&format!("arith.trunci {w2} : i64 to i32"));
    let quarter = i(b, 1 << 29);
    let t = bin(b, "arith.addi", &w2, &quarter, "i32");
    let c2 = i(b, 2);
    let c10 = i(b, 10);
    let j = bin(b, "arith.shli", &w2, &c2, "i32");
    let j = bin(b, "arith.shrsi", &j, &c10, "i32");
    let j = b.op(&format!("arith.sitofp {j} : i32 to f32"));
    let step = f(b, (std::f64::consts::TAU / 16_777_216.0) as f32);
    let a = bin(b, "arith.mulf", &j, &step, "f32");
    let a2 = bin(b, "arith.mulf", &a, &a, "f32");
    let horner = |b: &mut Builder, c: [f32; 3]| {
        let c = c.map(|v| f(b, v));
        let p = bin(b, "arith.mulf", &a2, &c[2], "f32");
        let p = bin(b, "arith.addf", &p, &c[1], "f32");
        let p = bin(b, "arith.mulf", &p, &a2, "f32");
        bin(b, "arith.addf", &p, &c[0], "f32")
    };
    let a3 = bin(b, "arith.mulf", &a, &a2, "f32");
    let ps = horner(b, SIN_F32);
    let ps = bin(b, "arith.mulf", &a3, &ps, "f32");
    let sin_x = bin(b, "arith.addf", &a, &ps, "f32");
    let pc = horner(b, COS_F32);
    let pc = bin(b, "arith.mulf", &pc, &a2, "f32");
    let cos_x = bin(b, "arith.addf", &pc, &one, "f32");
    let bit30 = i(b, 1 << 30);
    let odd = bin(b, "arith.andi", &t, &bit30, "i32");
    let zero = i(b, 0);
    let odd = b.op(&format!("arith.cmpi ne, {odd}, {zero} : i32"));
    // cos θ: sin x for odd q, negative for q = 1, 2; sin θ: cos x for odd q, negative for q = 2, 3.
    let sign = i(b, 1 << 31);
    let (mag, bits) = if sin {
        (select(b, &odd, &cos_x, &sin_x, "f32"), bin(b, "arith.andi", &t, &sign, "i32"))
    } else {
        let c1 = i(b, 1);
        let t2 = bin(b, "arith.shli", &t, &c1, "i32");
        let t2 = bin(b, "arith.xori", &t, &t2, "i32");
        (select(b, &odd, &sin_x, &cos_x, "f32"), bin(b, "arith.andi", &t2, &sign, "i32"))
    };
    let mag = b.op(&format!("arith.bitcast {mag} : f32 to i32"));
    let s = bin(b, "arith.xori", &mag, &bits, "i32");
    let s = b.op(&format!("arith.bitcast {s} : i32 to f32"));
    Ok(bin(b, "arith.mulf", &r, &s, "f32"))
}
