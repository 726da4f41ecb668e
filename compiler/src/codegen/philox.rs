//! The `philox` op in the arith dialect: ten rounds of Philox4x32 on 32-bit words. Each
//! 32×32→64 product is, on the host, an `i64` multiply of zero-extended words (x86's 64-bit
//! `imul`, `pmuludq` when vectorised); on the GPU an `i32` multiply for the low word and
//! `llvm.nvvm.mulhi.ui` for the high word (`mul.lo.u32`, `mul.hi.u32`), so that every word
//! of the round stays a 32-bit register: through the truncations of an `i64` product LLVM
//! widened the rounds' xors to 64 bits and NVPTX emitted `mul.lo.s64` (several instructions
//! each). The reference is `kiln_ir::eval::random`; the bits are the same on every target.

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
