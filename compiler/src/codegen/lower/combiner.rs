//! The combines of scatters and scans: their identities, and the shared-memory atomics that
//! combine integers into a GPU scatter's bins.

use kiln_ir::{ops_not_of, DType, OpKind};

/// The identity of `combine` in `dt`: -0.0 for float sums (so that a -0.0 stays -0.0), 0 for
/// integer sums, 1 for products, the lowest value for maxima, the highest for minima (false and
/// true for booleans).
pub(crate) fn identity(combine: OpKind, dt: DType) -> kiln_ir::Literal {
    use kiln_ir::Literal;
    if dt == DType::Bool {
        return Literal::from_i128(dt, i128::from(combine == OpKind::Minimum));
    }
    match (Combiner::of(combine), dt.is_float()) {
        (Combiner::Mul, true) => Literal::from_f64(dt, 1.0),
        (Combiner::Mul, false) => Literal::from_i128(dt, 1),
        (Combiner::Add, true) => Literal::from_f64(dt, -0.0),
        (Combiner::Add, false) => Literal::from_i128(dt, 0),
        (Combiner::Maximum, true) => Literal::from_f64(dt, f64::NEG_INFINITY),
        (Combiner::Minimum, true) => Literal::from_f64(dt, f64::INFINITY),
        (Combiner::Maximum, false) => Literal::from_i128(dt, dt.int_range().expect("an integer").0),
        (Combiner::Minimum, false) => Literal::from_i128(dt, dt.int_range().expect("an integer").1),
    }
}

/// The ops a scatter or a scan combines with ([`OpKind::combine`]).
#[derive(Clone, Copy)]
enum Combiner {
    Add,
    Mul,
    Maximum,
    Minimum,
}

impl Combiner {
    fn of(op: OpKind) -> Combiner {
        use OpKind::*;
        match op {
            Add => Combiner::Add,
            Mul => Combiner::Mul,
            Maximum => Combiner::Maximum,
            Minimum => Combiner::Minimum,
            Neg | Abs | Sign | Sqrt | Cbrt | Square | Reciprocal | Exp | Exp2 | Expm1 | Log
            | Log2 | Log10 | Log1p | Sin | Cos | Tan | Arcsin | Arccos | Arctan | Sinh | Cosh
            | Tanh | Arcsinh | Arccosh | Arctanh | Floor | Ceil | Trunc | Rint | Erf | IsNan
            | IsInf | IsFinite | LogicalNot | Invert | Real | Imag | Conj | Sub | Div
            | FloorDiv | Remainder | Power | Fmax | Fmin | Arctan2 | Hypot | LogAddExp
            | FrexpMantissa | FrexpExponent | Fmod | LogAddExp2 | Ldexp | NextAfter | Erfc
            | Erfinv | Gammaln | Digamma | Gcd | Lcm | Philox | PhiloxHigh | PhiloxBits
            | BoxMullerCos | BoxMullerSin | MakeComplex | CopySign | Eq | Ne | Lt | Le | Gt
            | Ge | LogicalAnd | LogicalOr | LogicalXor | BitwiseAnd | BitwiseOr | BitwiseXor
            | LeftShift | RightShift | Where | Cast | Bitcast | Label => {
                unreachable!("scatters and scans combine by add, multiply, maximum or minimum")
            }
            ops_not_of!(Elementwise) => unreachable!("{} is not elementwise", op.name()),
        }
    }
}

/// The `llvm.atomicrmw` operation combining an integer into shared memory.
pub(super) fn atomic_op(combine: OpKind, dt: DType) -> &'static str {
    match (Combiner::of(combine), dt.is_signed_integer()) {
        (Combiner::Add, _) => "add",
        (Combiner::Maximum, true) => "max",
        (Combiner::Maximum, false) => "umax",
        (Combiner::Minimum, true) => "min",
        (Combiner::Minimum, false) => "umin",
        (Combiner::Mul, _) => unreachable!("no scatter multiplies"),
    }
}
