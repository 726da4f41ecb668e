//! The `philox` op in the arith dialect: ten rounds of Philox4x32 on 32-bit words, each
//! 32×32→64 product an `i64` multiply of zero-extended words (NVPTX selects `mul.wide.u32`,
//! x86 a 64-bit `imul`). The reference is `kiln_ir::eval::random`; the bits are the same on
//! every target.

use kiln_ir::eval::random::{PHILOX_M, PHILOX_W};
use kiln_ir::DType;

use super::builder::Builder;
use super::scalar::bin;
use super::types::{int_const, work_ty};

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
    let w = PHILOX_W.map(|v| int_const(b, i128::from(v), "i32"));
    for round in 0..10 {
        if round > 0 {
            k = [
                bin(b, "arith.addi", &k[0], &w[0], "i32"),
                bin(b, "arith.addi", &k[1], &w[1], "i32"),
            ];
        }
        // (hi, lo) of m · c as one 64-bit product of the zero-extended words.
        let product = |b: &mut Builder, m: &str, c: &str| {
            let c = b.op(&format!("arith.extui {c} : i32 to i64"));
            let p = bin(b, "arith.muli", m, &c, "i64");
            (hi(b, &p), lo(b, &p))
        };
        let (hi0, lo0) = product(b, &m[0], &c[0]);
        let (hi1, lo1) = product(b, &m[1], &c[2]);
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
