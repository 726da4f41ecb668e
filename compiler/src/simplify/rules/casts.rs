//! Casts: identity casts and exact cast chains.

use egg::Id;
use kiln_ir::graph::Attrs;
use kiln_ir::ops::OpKind;
use kiln_ir::{DType, DTypeKind};

use super::{data, Build, Idx, NodeRule, Rewrite};
use crate::simplify::lang::ENode;

pub fn rules() -> Vec<Rewrite> {
    vec![
        // cast(x: d → d) = x
        NodeRule::rewrite("cast-identity", &[OpKind::Cast], cast_identity),
        // cast(cast(x: a → b) → c) = cast(x: a → c) (= x when c = a), where a → b is exact and
        // b → c agrees with a → c on a's values (see `chain_is_exact`)
        NodeRule::nested("cast-chain", &[OpKind::Cast], |op| op == OpKind::Cast, cast_chain),
    ]
}

fn target(node: &ENode) -> DType {
    match node.attrs {
        Attrs::DType { dtype } => dtype,
        _ => unreachable!("cast has a dtype attribute"),
    }
}

/// Whether every value of `a` is a value of `b`, so that the cast `a → b` loses nothing.
pub fn is_exact(a: DType, b: DType) -> bool {
    use DTypeKind::*;
    if a == b || a == DType::Bool {
        return true;
    }
    match (a.kind(), b.kind()) {
        (SignedInt | UnsignedInt, SignedInt | UnsignedInt) => {
            let ((alo, ahi), (blo, bhi)) = (a.int_range().unwrap(), b.int_range().unwrap());
            blo <= alo && ahi <= bhi
        }
        (SignedInt | UnsignedInt, Float | Complex) => {
            let bits = (a.itemsize() * 8) as u32 - a.is_signed_integer() as u32;
            bits <= b.mantissa_bits().unwrap()
        }
        // Every f16 and bf16 is an f32; f16 and bf16 hold each other's values only in part.
        (Float | Complex, Float | Complex) if !(a.is_complex() && b.is_float()) => {
            let (ra, rb) = (a.real_dtype(), b.real_dtype());
            ra == rb
                || matches!(
                    (ra, rb),
                    (DType::Float16 | DType::BFloat16, DType::Float32 | DType::Float64)
                        | (DType::Float32, DType::Float64)
                )
        }
        _ => false,
    }
}

/// Whether `cast(cast(x: a → b) → c)` equals `cast(x: a → c)` for every x.
///
/// `a → b` must be exact, so `b → c` sees exactly the values of `a`. Conversions to bool, float
/// and complex depend on the value alone; so does integer wrap-around, so a chain of integers
/// (and bools) composes. A float or complex `b` converted to an integer `c` is NumPy's
/// out-of-range float-to-int conversion (undefined) where the value does not fit `c`: then the
/// chain composes only if every value of `a` fits `c`.
pub fn chain_is_exact(a: DType, b: DType, c: DType) -> bool {
    if !is_exact(a, b) {
        return false;
    }
    if !c.is_integer() || a == DType::Bool {
        return true;
    }
    let int_or_bool = |d: DType| d.is_integer() || d == DType::Bool;
    (int_or_bool(a) && int_or_bool(b)) || is_exact(a, c)
}

fn cast_identity(b: &mut Build, _class: Id, node: &ENode) -> Option<Idx> {
    let x = node.children[0];
    (data(b.egraph, x).dtype == target(node)).then(|| b.class(x))
}

fn cast_chain(b: &mut Build, _class: Id, node: &ENode, inner: &ENode) -> Option<Idx> {
    let c = target(node);
    let x = inner.children[0];
    let (a, bt) = (data(b.egraph, x).dtype, target(inner));
    if bt == c || !chain_is_exact(a, bt, c) {
        return None;
    }
    let xi = b.class(x);
    if a == c {
        Some(xi)
    } else {
        b.op(OpKind::Cast, Attrs::DType { dtype: c }, &[xi])
    }
}

#[cfg(test)]
mod tests {
    use kiln_ir::DType::*;

    use super::*;
    use crate::simplify::rules::testing::{check, unchanged};

    #[test]
    fn exactness_table() {
        assert!(is_exact(Float32, Float64) && !is_exact(Float64, Float32));
        assert!(is_exact(Int8, Int64) && is_exact(UInt8, Int16) && !is_exact(Int8, UInt64));
        assert!(is_exact(Int16, Float32) && !is_exact(Int32, Float32) && is_exact(UInt32, Float64));
        assert!(is_exact(UInt8, Float16) && !is_exact(UInt16, Float16) && is_exact(Int8, BFloat16));
        assert!(
            is_exact(Float16, Float32)
                && !is_exact(Float16, BFloat16)
                && !is_exact(BFloat16, Float16)
        );
        assert!(
            is_exact(Float32, Complex64)
                && is_exact(Complex64, Complex128)
                && !is_exact(Complex64, Float64)
        );
        assert!(is_exact(Bool, Int8) && !is_exact(Int8, Bool));
        // i8 → i32 → i64 = i8 → i64; u8 → f32 → u8 = x; i32 → f64 → i8 is not i32 → i8.
        assert!(chain_is_exact(Int8, Int32, Int64));
        assert!(chain_is_exact(UInt8, Float32, UInt8));
        assert!(!chain_is_exact(Int32, Float64, Int8));
        assert!(!chain_is_exact(Float32, Float64, Int32));
        assert!(chain_is_exact(Float16, Float32, BFloat16));
        assert!(chain_is_exact(Int16, Int64, Float16));
    }

    #[test]
    fn cast_identity() {
        check(
            "cast-identity",
            "
%0 = input {index=0} : f32[2]
%1 = cast(%0) {dtype=f32} : f32[2]
return %1
",
            "
%0 = input {index=0} : f32[2]
return %0
",
        );
    }

    #[test]
    fn cast_chain() {
        // f32 → f64 → f32 = identity.
        check(
            "cast-chain",
            "
%0 = input {index=0} : f32[2]
%1 = cast(%0) {dtype=f64} : f64[2]
%2 = cast(%1) {dtype=f32} : f32[2]
return %2
",
            "
%0 = input {index=0} : f32[2]
return %0
",
        );
        // i8 → i32 → i64 = i8 → i64.
        check(
            "cast-chain",
            "
%0 = input {index=0} : i8[2]
%1 = cast(%0) {dtype=i32} : i32[2]
%2 = cast(%1) {dtype=i64} : i64[2]
return %2
",
            "
%0 = input {index=0} : i8[2]
%1 = cast(%0) {dtype=i64} : i64[2]
return %1
",
        );
        // Not exact: f64 → f32 → f64 rounds, i64 → i8 → i64 wraps.
        unchanged(
            "
%0 = input {index=0} : f64[2]
%1 = cast(%0) {dtype=f32} : f32[2]
%2 = cast(%1) {dtype=f64} : f64[2]
%3 = input {index=1} : i64[2]
%4 = cast(%3) {dtype=i8} : i8[2]
%5 = cast(%4) {dtype=i64} : i64[2]
return %2, %5
",
        );
    }
}
