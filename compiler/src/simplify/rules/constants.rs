//! Constants: folding of elementwise ops on constants, computed exactly as NumPy does in the
//! result's dtype; constant arrays reached through views written as `broadcast_to(const)`; `where`
//! with a constant condition.

use egg::Id;
use kiln_ir::graph::{round_to, wrap_signed, wrap_unsigned, Attrs, Literal};
use kiln_ir::ops::OpKind;
use kiln_ir::{DType, DTypeKind};
use num_complex::Complex64;
use smallvec::SmallVec;

use super::{data, nodes_of, splat, Build, Idx, NodeRule, Rewrite};
use crate::simplify::lang::ENode;

/// The ops [`fold`] computes.
const FOLDED: &[OpKind] = &[
    OpKind::Neg,
    OpKind::Add,
    OpKind::Sub,
    OpKind::Mul,
    OpKind::Div,
    OpKind::Sqrt,
    OpKind::Cast,
    OpKind::Eq,
    OpKind::Ne,
    OpKind::Lt,
    OpKind::Le,
    OpKind::Gt,
    OpKind::Ge,
    OpKind::LogicalNot,
    OpKind::LogicalAnd,
    OpKind::LogicalOr,
    OpKind::LogicalXor,
];

pub fn rules() -> Vec<Rewrite> {
    vec![
        // f(c1, c2, ..) = c for f in neg, add, sub, mul, div, sqrt, cast, comparisons and logical
        // ops on constants (rank 0, or broadcast), computed exactly in the result dtype
        NodeRule::rewrite("fold", FOLDED, fold_rule),
        // view(broadcast_to(c)) = broadcast_to(c) (any array known to be one constant)
        NodeRule::rewrite("splat-view", &[], splat_view),
        // where(true, x, y) = x; where(false, x, y) = y; where(c, x, x) = x
        NodeRule::rewrite("where-known", &[OpKind::Where], where_known),
    ]
}

fn fold_rule(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let args: SmallVec<[Literal; 2]> =
        node.children.iter().map(|&c| splat(eg, c)).collect::<Option<_>>()?;
    let input = data(eg, node.children[0]).dtype;
    let out = data(eg, class);
    let value = fold(node.op, &node.attrs, input, out.dtype, &args)?;
    b.splat(out.dtype, &out.shape.clone(), value)
}

fn splat_view(b: &mut Build, class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let d = data(eg, class);
    let value = d.splat?;
    // Once per class (on its first node), and only where it is not yet `const` or
    // `broadcast_to(const)`.
    if eg[class].nodes.first() != Some(node) {
        return None;
    }
    let canonical = |n: &ENode| {
        n.op == OpKind::Const
            || (n.op == OpKind::BroadcastTo
                && data(eg, n.children[0]).shape.is_empty()
                && nodes_of(eg, n.children[0], OpKind::Const).next().is_some())
    };
    if eg[class].iter().any(canonical) {
        return None;
    }
    b.splat(d.dtype, &d.shape.clone(), value)
}

fn where_known(b: &mut Build, _class: Id, node: &ENode) -> Option<Idx> {
    let eg = b.egraph;
    let (cond, x, y) = (node.children[0], node.children[1], node.children[2]);
    let pick = match splat(eg, cond) {
        Some(Literal::Bool(true)) => x,
        Some(Literal::Bool(false)) => y,
        _ if eg.find(x) == eg.find(y) => x,
        _ => return None,
    };
    Some(b.class(pick))
}

/// A literal as an integer (bools are 0 and 1), for integer and bool dtypes.
fn int(v: Literal) -> Option<i128> {
    match v {
        Literal::Bool(b) => Some(b as i128),
        Literal::Int(i) => Some(i as i128),
        Literal::UInt(u) => Some(u as i128),
        Literal::Float(_) | Literal::Complex(..) => None,
    }
}

fn float(v: Literal) -> Option<f64> {
    match v {
        Literal::Float(bits) => Some(f64::from_bits(bits)),
        _ => None,
    }
}

fn complex(v: Literal) -> Option<Complex64> {
    match v {
        Literal::Complex(re, im) => Some(Complex64::new(f64::from_bits(re), f64::from_bits(im))),
        _ => None,
    }
}

/// An integer wrapped into `dtype` (integers) or as a bool.
fn int_literal(dtype: DType, v: i128) -> Literal {
    match dtype.kind() {
        DTypeKind::SignedInt => Literal::Int(wrap_signed(dtype, v)),
        DTypeKind::UnsignedInt => Literal::UInt(wrap_unsigned(dtype, v)),
        _ => Literal::Bool(v != 0),
    }
}

/// `op` applied to constants of dtype `input`, giving a value of dtype `out`, exactly as NumPy
/// computes it; `None` where that is not certain (or the op is not folded).
///
/// Integers compute in i128 and wrap. Floats compute in f64 and round once to the dtype: exact
/// for f64, and for f32, f16 and bf16 too, since for +, -, *, / and sqrt rounding the exact
/// result to f64 first and then to a format of at most 24 bits (53 >= 2·24 + 2) gives the same
/// value as rounding it directly. Complex folds only the ops computed part by part (negation,
/// addition, subtraction, (in)equality). A NaN result is not folded: its sign and payload are
/// the hardware's (x86's `0/0` has the sign bit set, which `copysign` shows), and a literal
/// keeps one canonical NaN.
pub fn fold(
    op: OpKind,
    attrs: &Attrs,
    input: DType,
    out: DType,
    args: &[Literal],
) -> Option<Literal> {
    let r = fold_value(op, attrs, input, out, args)?;
    let nan = |bits: u64| f64::from_bits(bits).is_nan();
    match r {
        Literal::Float(x) if nan(x) => None,
        Literal::Complex(re, im) if nan(re) || nan(im) => None,
        other => Some(other),
    }
}

fn fold_value(
    op: OpKind,
    attrs: &Attrs,
    input: DType,
    out: DType,
    args: &[Literal],
) -> Option<Literal> {
    use DTypeKind::*;
    let kind = input.kind();
    let a = args[0];
    let b = args.get(1).copied();
    let arith = |fi: fn(i128, i128) -> i128,
                 ff: fn(f64, f64) -> f64,
                 complex_ok: bool|
     -> Option<Literal> {
        let b = b?;
        match kind {
            Bool | SignedInt | UnsignedInt => Some(int_literal(out, fi(int(a)?, int(b)?))),
            Float => Some(Literal::float(out, ff(float(a)?, float(b)?))),
            Complex if complex_ok => {
                let (x, y) = (complex(a)?, complex(b)?);
                Some(Literal::complex(out, Complex64::new(ff(x.re, y.re), ff(x.im, y.im))))
            }
            Complex => None,
        }
    };
    let compare = |ordering: fn(std::cmp::Ordering) -> bool, nan: bool| -> Option<Literal> {
        let b = b?;
        let r = match kind {
            Bool | SignedInt | UnsignedInt => ordering(int(a)?.cmp(&int(b)?)),
            Float => match float(a)?.partial_cmp(&float(b)?) {
                Some(o) => ordering(o),
                None => nan,
            },
            Complex => return None,
        };
        Some(Literal::Bool(r))
    };
    match op {
        OpKind::Neg => match kind {
            SignedInt | UnsignedInt => Some(int_literal(out, -int(a)?)),
            Float => Some(Literal::float(out, -float(a)?)),
            Complex => Some(Literal::complex(out, -complex(a)?)),
            Bool => None,
        },
        OpKind::Add => arith(|x, y| x + y, |x, y| x + y, true),
        OpKind::Sub => arith(|x, y| x - y, |x, y| x - y, true),
        OpKind::Mul => arith(|x, y| x.wrapping_mul(y), |x, y| x * y, false),
        OpKind::Div => match kind {
            Float => Some(Literal::float(out, float(a)? / float(b?)?)),
            _ => None,
        },
        OpKind::Sqrt => match kind {
            Float => Some(Literal::float(out, float(a)?.sqrt())),
            _ => None,
        },
        OpKind::Cast => match attrs {
            Attrs::DType { dtype } => cast(a, input, *dtype),
            _ => None,
        },
        OpKind::Eq | OpKind::Ne if kind == Complex => {
            let (x, y) = (complex(a)?, complex(b?)?);
            let eq = x.re == y.re && x.im == y.im;
            Some(Literal::Bool(if op == OpKind::Eq { eq } else { !eq }))
        }
        OpKind::Eq => compare(|o| o.is_eq(), false),
        OpKind::Ne => compare(|o| o.is_ne(), true),
        OpKind::Lt => compare(|o| o.is_lt(), false),
        OpKind::Le => compare(|o| o.is_le(), false),
        OpKind::Gt => compare(|o| o.is_gt(), false),
        OpKind::Ge => compare(|o| o.is_ge(), false),
        OpKind::LogicalNot => Some(Literal::Bool(int(a)? == 0)),
        OpKind::LogicalAnd => Some(Literal::Bool(int(a)? != 0 && int(b?)? != 0)),
        OpKind::LogicalOr => Some(Literal::Bool(int(a)? != 0 || int(b?)? != 0)),
        OpKind::LogicalXor => Some(Literal::Bool((int(a)? != 0) != (int(b?)? != 0))),
        // Not folded: transcendental functions (libm results are not correctly rounded, and f64
        // has nothing wider to compute in), integer division and remainders, and the rest.
        OpKind::Input | OpKind::Const | OpKind::Iota => None,
        OpKind::Abs | OpKind::Sign | OpKind::Cbrt | OpKind::Square | OpKind::Reciprocal => None,
        OpKind::Exp
        | OpKind::Exp2
        | OpKind::Expm1
        | OpKind::Log
        | OpKind::Log2
        | OpKind::Log10
        | OpKind::Log1p => None,
        OpKind::Sin
        | OpKind::Cos
        | OpKind::Tan
        | OpKind::Arcsin
        | OpKind::Arccos
        | OpKind::Arctan => None,
        OpKind::Sinh
        | OpKind::Cosh
        | OpKind::Tanh
        | OpKind::Arcsinh
        | OpKind::Arccosh
        | OpKind::Arctanh => None,
        OpKind::Floor | OpKind::Ceil | OpKind::Trunc | OpKind::Rint | OpKind::Erf => None,
        OpKind::IsNan | OpKind::IsInf | OpKind::IsFinite | OpKind::Invert => None,
        OpKind::Real | OpKind::Imag | OpKind::Conj => None,
        OpKind::FloorDiv | OpKind::Remainder | OpKind::Power => None,
        OpKind::Maximum | OpKind::Minimum | OpKind::Fmax | OpKind::Fmin => None,
        OpKind::Arctan2 | OpKind::Hypot | OpKind::LogAddExp | OpKind::CopySign => None,
        OpKind::FrexpMantissa | OpKind::FrexpExponent => None,
        OpKind::Fmod | OpKind::LogAddExp2 | OpKind::Ldexp | OpKind::NextAfter => None,
        OpKind::MakeComplex => None,
        OpKind::Erfc | OpKind::Erfinv | OpKind::Gammaln | OpKind::Digamma => None,
        OpKind::Gcd | OpKind::Lcm | OpKind::Bitcast => None,
        OpKind::BitwiseAnd
        | OpKind::BitwiseOr
        | OpKind::BitwiseXor
        | OpKind::LeftShift
        | OpKind::RightShift
        | OpKind::Philox
        | OpKind::PhiloxHigh
        | OpKind::PhiloxBits
        | OpKind::BoxMullerCos
        | OpKind::BoxMullerSin => None,
        OpKind::Where => None,
        // A label names a user kernel's result: kept, even on a constant.
        OpKind::Label | OpKind::Take => None,
        OpKind::ScatterAdd | OpKind::ScatterMax | OpKind::ScatterMin | OpKind::Scatter => None,
        OpKind::Cumsum | OpKind::Cumprod | OpKind::Cummax | OpKind::Cummin => None,
        OpKind::Compact | OpKind::CompactCount => None,
        OpKind::Sort | OpKind::Argsort | OpKind::SortTake | OpKind::Argtopk => None,
        OpKind::Sum
        | OpKind::Prod
        | OpKind::Max
        | OpKind::Min
        | OpKind::ArgMax
        | OpKind::ArgMin
        | OpKind::All
        | OpKind::Any => None,
        OpKind::Reshape
        | OpKind::Permute
        | OpKind::BroadcastTo
        | OpKind::Slice
        | OpKind::ExpandDims
        | OpKind::Squeeze
        | OpKind::Flip => None,
        OpKind::Concatenate | OpKind::Stack | OpKind::Contiguous | OpKind::CustomKernel => None,
        kiln_ir::ops_of!(Vendor) => None,
    }
}

/// `v` of dtype `from` cast to `to` (NumPy's `astype`, unsafe casting); `None` where NumPy's
/// result is not defined (a float out of an integer's range, NaN to an integer) or where its
/// rounding path is not certain (a value of more than 24 bits to f16 or bf16 from an integer;
/// f64 to bf16, which ml_dtypes rounds through f32).
pub fn cast(v: Literal, from: DType, to: DType) -> Option<Literal> {
    use DTypeKind::*;
    // The value as a real number (complex: its real part, as NumPy's cast to a real dtype).
    let real = match v {
        Literal::Complex(re, _) => Literal::Float(re),
        other => other,
    };
    match to.kind() {
        Bool => Some(Literal::Bool(match v {
            Literal::Complex(re, im) => f64::from_bits(re) != 0.0 || f64::from_bits(im) != 0.0,
            Literal::Float(bits) => f64::from_bits(bits) != 0.0,
            other => int(other)? != 0,
        })),
        SignedInt | UnsignedInt => match real {
            Literal::Float(bits) => {
                let t = f64::from_bits(bits).trunc();
                let (lo, hi) = to.int_range()?;
                let i = t as i128;
                (t.is_finite() && lo <= i && i <= hi).then(|| int_literal(to, i))
            }
            other => Some(int_literal(to, int(other)?)),
        },
        Float | Complex => {
            let re = match real {
                Literal::Float(bits) => {
                    let x = f64::from_bits(bits);
                    if to.real_dtype() == DType::BFloat16
                        && from.real_dtype() == DType::Float64
                        && x as f32 as f64 != x
                        && !x.is_nan()
                    {
                        return None;
                    }
                    x
                }
                other => {
                    let i = int(other)?;
                    match to.real_dtype() {
                        DType::Float64 => i as f64,
                        DType::Float32 => i as f32 as f64,
                        _ if i.unsigned_abs() <= 1 << 24 => i as f64,
                        _ => return None,
                    }
                }
            };
            let im = match v {
                Literal::Complex(_, im) if to.is_complex() => f64::from_bits(im),
                _ => 0.0,
            };
            if to.is_complex() {
                Some(Literal::complex(to, Complex64::new(re, im)))
            } else {
                Some(Literal::float(to, round_to(to, re)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kiln_ir::graph::{Attrs, Literal};
    use kiln_ir::ops::OpKind;
    use kiln_ir::DType::{self, *};

    use super::{cast, fold};
    use crate::simplify::rules::testing::{check, unchanged};

    fn f(d: DType, x: f64) -> Literal {
        Literal::float(d, x)
    }

    #[test]
    fn folding_follows_numpy() {
        let none = &Attrs::None;
        // int8: 100 + 100 wraps to -56; uint8: 0 - 1 = 255; -(-128) = -128.
        assert_eq!(
            fold(OpKind::Add, none, Int8, Int8, &[Literal::Int(100), Literal::Int(100)]),
            Some(Literal::Int(-56))
        );
        assert_eq!(
            fold(OpKind::Sub, none, UInt8, UInt8, &[Literal::UInt(0), Literal::UInt(1)]),
            Some(Literal::UInt(255))
        );
        assert_eq!(
            fold(OpKind::Neg, none, Int8, Int8, &[Literal::Int(-128)]),
            Some(Literal::Int(-128))
        );
        assert_eq!(
            fold(
                OpKind::Mul,
                none,
                UInt64,
                UInt64,
                &[Literal::UInt(u64::MAX), Literal::UInt(u64::MAX)]
            ),
            Some(Literal::UInt(1))
        );
        // f32: 0.1 + 0.2 rounds in f32; 1/3 in f32; sqrt(2) in f16.
        let (a, b) = (f(Float32, 0.1), f(Float32, 0.2));
        assert_eq!(
            fold(OpKind::Add, none, Float32, Float32, &[a, b]),
            Some(f(Float32, (0.1f32 + 0.2f32) as f64))
        );
        assert_eq!(
            fold(OpKind::Div, none, Float32, Float32, &[f(Float32, 1.0), f(Float32, 3.0)]),
            Some(f(Float32, (1.0f32 / 3.0) as f64))
        );
        assert_eq!(
            fold(OpKind::Sqrt, none, Float16, Float16, &[f(Float16, 2.0)]),
            Some(Literal::float(Float16, half::f16::from_f32(2f32.sqrt()).to_f64()))
        );
        // NaN compares unequal; bool + bool is or.
        let nan = f(Float64, f64::NAN);
        assert_eq!(fold(OpKind::Eq, none, Float64, Bool, &[nan, nan]), Some(Literal::Bool(false)));
        assert_eq!(fold(OpKind::Ne, none, Float64, Bool, &[nan, nan]), Some(Literal::Bool(true)));
        assert_eq!(
            fold(OpKind::Add, none, Bool, Bool, &[Literal::Bool(true), Literal::Bool(true)]),
            Some(Literal::Bool(true))
        );
        // Not folded: complex products, transcendental functions.
        let c = Literal::complex(Complex64, num_complex::Complex64::new(1.0, 2.0));
        assert_eq!(fold(OpKind::Mul, none, Complex64, Complex64, &[c, c]), None);
        assert_eq!(fold(OpKind::Exp, none, Float32, Float32, &[a]), None);
    }

    #[test]
    fn casts_follow_numpy() {
        assert_eq!(cast(Literal::Int(300), Int32, UInt8), Some(Literal::UInt(44)));
        assert_eq!(cast(f(Float32, -2.7), Float32, Int8), Some(Literal::Int(-2)));
        assert_eq!(cast(f(Float32, 300.0), Float32, Int8), None);
        assert_eq!(cast(f(Float32, f64::NAN), Float32, Int32), None);
        assert_eq!(cast(f(Float32, f64::NAN), Float32, Bool), Some(Literal::Bool(true)));
        assert_eq!(cast(f(Float64, 0.1), Float64, Float32), Some(f(Float32, 0.1f32 as f64)));
        assert_eq!(cast(Literal::Int(16_777_217), Int64, Float32), Some(f(Float32, 16_777_216.0)));
        assert_eq!(
            cast(Literal::Int((1 << 53) + 1), Int64, Float64),
            Some(f(Float64, (1u64 << 53) as f64))
        );
        assert_eq!(cast(Literal::Int(1 << 30), Int64, BFloat16), None);
        assert_eq!(cast(f(Float64, 0.1), Float64, BFloat16), None);
        let z = Literal::complex(Complex128, num_complex::Complex64::new(1.5, -2.0));
        assert_eq!(cast(z, Complex128, Float32), Some(f(Float32, 1.5)));
        assert_eq!(cast(z, Complex128, Bool), Some(Literal::Bool(true)));
        assert_eq!(
            cast(Literal::UInt(7), UInt8, Complex64),
            Some(Literal::complex(Complex64, num_complex::Complex64::new(7.0, 0.0)))
        );
    }

    #[test]
    fn fold_scalars() {
        check(
            "fold",
            "
%0 = const {value=3} : i8[]
%1 = const {value=125} : i8[]
%2 = add(%0, %1) : i8[]
%3 = cast(%2) {dtype=f32} : f32[]
%4 = sqrt(%3) : f32[]
%5 = less(%3, %4) : bool[]
return %2, %4, %5
",
            // 3 + 125 wraps to -128 and folds; sqrt(-128.0) is NaN, which is not folded (its sign
            // is the hardware's), so the comparison reading it stays too.
            "
%0 = const {value=-128.0} : f32[]
%1 = sqrt(%0) : f32[]
%2 = less(%0, %1) : bool[]
%3 = const {value=-128} : i8[]
return %3, %1, %2
",
        );
    }

    #[test]
    fn fold_broadcast_constants() {
        check(
            "fold",
            "
%0 = const {value=2.0} : f32[]
%1 = broadcast_to(%0) {shape=[3]} : f32[3]
%2 = const {value=0.5} : f32[]
%3 = broadcast_to(%2) {shape=[3]} : f32[3]
%4 = divide(%1, %3) : f32[3]
%5 = input {index=0} : f32[3]
%6 = multiply(%5, %4) : f32[3]
return %6
",
            "
%0 = input {index=0} : f32[3]
%1 = const {value=4.0} : f32[]
%2 = broadcast_to(%1) {shape=[3]} : f32[3]
%3 = multiply(%0, %2) : f32[3]
return %3
",
        );
        // exp is not folded.
        unchanged(
            "
%0 = const {value=2.0} : f64[]
%1 = exp(%0) : f64[]
return %1
",
        );
    }

    #[test]
    fn splat_view() {
        check(
            "splat-view",
            "
%0 = const {value=7} : u16[]
%1 = broadcast_to(%0) {shape=[6]} : u16[6]
%2 = reshape(%1) {shape=[2,3]} : u16[2,3]
%3 = permute(%2) {perm=[1,0]} : u16[3,2]
return %3
",
            "
%0 = const {value=7} : u16[]
%1 = broadcast_to(%0) {shape=[3,2]} : u16[3,2]
return %1
",
        );
    }

    #[test]
    fn where_known() {
        check(
            "where-known",
            "
%0 = const {value=true} : bool[]
%1 = broadcast_to(%0) {shape=[2]} : bool[2]
%2 = input {index=0} : f32[2]
%3 = input {index=1} : f32[2]
%4 = where(%1, %2, %3) : f32[2]
%5 = input {index=2} : bool[2]
%6 = where(%5, %3, %3) : f32[2]
return %4, %6
",
            "
%0 = input {index=0} : f32[2]
%1 = input {index=1} : f32[2]
%2 = input {index=2} : bool[2]
return %0, %1
",
        );
    }
}
