//! How closely the compiled host code (kiln's default CPU path) must match the reference
//! evaluator, op by op: the bounds `codegen` and `fused_props` hold it to, and the distance in
//! units in the last place they measure.
//!
//! Every op is exact (bit for bit, NaN payloads aside) but the transcendental functions, whose
//! kernels call glibc's libm, and in vectorised loops glibc's vector math library (libmvec),
//! while the evaluator computes in f64 and rounds once:
//!
//! - float32 and float64: 4 ulps, glibc's accuracy requirement for its vector functions (its
//!   scalar ones are within 1 or 2 ulps; float64 scalar calls are the evaluator's own calls);
//! - float16 and bfloat16: 1 ulp of the narrow type (the kernel rounds a float32 result that is
//!   within 4 float32 ulps, the evaluator a float64 one: they can land on either side of a
//!   rounding boundary);
//! - `logaddexp` and `logaddexp2`: exact, for every float dtype: the kernel evaluates NumPy's
//!   formula in f64 with scalar libm calls, as the evaluator does (see
//!   `codegen::scalar::logaddexp_base`);
//! - `power` only for floats; complex dtypes are run by the evaluator itself.
//!
//! `codegen::ulp_table` measures the largest distance of each function over its domain and
//! checks it against these bounds (the table in `compiler/src/codegen/mod.rs`).

use kiln::ir::{DType, OpKind};

/// The largest distance, in ulps of the reference's value in `dt`, between the compiled host
/// code's result of `op` on operands of dtype `dt` and the reference evaluator's; 0 for an exact
/// op.
pub fn host_ulps(op: OpKind, dt: DType) -> u64 {
    use OpKind::*;
    let libm = match dt {
        DType::Float16 | DType::BFloat16 => 1,
        DType::Float32 | DType::Float64 => 4,
        DType::Bool
        | DType::Int8
        | DType::Int16
        | DType::Int32
        | DType::Int64
        | DType::UInt8
        | DType::UInt16
        | DType::UInt32
        | DType::UInt64
        | DType::Complex64
        | DType::Complex128 => 0,
    };
    match op {
        Cbrt | Exp | Exp2 | Expm1 | Log | Log2 | Log10 | Log1p | Sin | Cos | Tan | Arcsin
        | Arccos | Arctan | Sinh | Cosh | Tanh | Arcsinh | Arccosh | Arctanh | Erf | Power
        | Arctan2 | Hypot => libm,
        // In f64 with scalar libm calls, rounded once: erfc's and erfinv's erf/erfc are glibc's
        // against the evaluator's `libm` crate (2 ulps measured in float64); gammaln and
        // digamma are the evaluator's own formulas and calls (log, sin, tan), bit for bit.
        Erfc | Erfinv => libm,
        Gammaln | Digamma => 0,
        Gcd | Lcm => 0,
        // Float32 results (ulps of float32) from unsigned bits: libm's logf, magnified by
        // the radius's product (`random` checks them on every backend).
        BoxMullerCos | BoxMullerSin => 8,
        // NumPy's formulas in f64 with scalar libm calls (see `codegen::scalar`).
        LogAddExp | LogAddExp2 => 0,
        FrexpMantissa | FrexpExponent | Fmod | Ldexp | NextAfter | MakeComplex | Philox
        | PhiloxHigh | PhiloxBits | Bitcast => 0,
        Input | Const | Iota | Neg | Abs | Sign | Sqrt | Square | Reciprocal | Floor | Ceil
        | Trunc | Rint | IsNan | IsInf | IsFinite | LogicalNot | Invert | Real | Imag | Conj
        | Add | Sub | Mul | Div | FloorDiv | Remainder | Maximum | Minimum | Fmax | Fmin
        | CopySign | Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor
        | BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift | Where | Cast | Sum
        | Prod | Max | Min | ArgMax | ArgMin | All | Any | Reshape | Permute | BroadcastTo
        | Slice | ExpandDims | Squeeze | Flip | Concatenate | Stack | Contiguous | MatMul | Fft
        | Rfft | Irfft | CustomKernel | Take | Label | ScatterAdd | ScatterMax | ScatterMin
        | Scatter | Cumsum | Cumprod | Cummax | Cummin | Compact | CompactCount | Sort
        | Argsort | SortTake | Argtopk | Cholesky | Solve | Inv | Det | Slogdet | Qr | Svd
        | Eigh => 0,
    }
}

/// The largest distance, in ulps of the reference's value in `dt`, between the polynomial math
/// functions (`MathLib::Polynomial`: GPU kernels without libdevice) and the reference evaluator,
/// for float16, bfloat16 and float32 (float64 has none: a typed error); 0 for an exact op.
pub fn polynomial_ulps(op: OpKind, dt: DType) -> u64 {
    use OpKind::*;
    let narrow = matches!(dt, DType::Float16 | DType::BFloat16);
    match op {
        // MLIR's float32 polynomial.
        Erf => {
            if narrow {
                1
            } else {
                4
            }
        }
        // kiln's expansions in f64, rounded once (twice for float16/bfloat16).
        Exp | Expm1 | Log | Log2 | Log1p | Arctan | Arctan2 | Arcsin | Arccos | Cbrt | Exp2
        | Log10 | Sin | Cos | Tan | Sinh | Cosh | Tanh | Arcsinh | Arccosh | Arctanh | Power
        | Hypot | LogAddExp => 1,
        // Exact ops: no polynomial of their own, the host code's bound.
        Neg | Abs | Sign | Sqrt | Square | Reciprocal | Floor | Ceil | Trunc | Rint | IsNan
        | IsInf | IsFinite | LogicalNot | Invert | Real | Imag | Conj | Add | Sub | Mul | Div
        | FloorDiv | Remainder | Maximum | Minimum | Fmax | Fmin | CopySign | Eq | Ne | Lt | Le
        | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor | BitwiseAnd | BitwiseOr | BitwiseXor
        | LeftShift | RightShift | Where | Cast | Label => host_ulps(op, dt),
        // No polynomial form (logaddexp2: the evaluator runs it) or exact.
        FrexpMantissa | FrexpExponent | Fmod | LogAddExp2 | Ldexp | NextAfter | MakeComplex => {
            host_ulps(op, dt)
        }
        // No polynomial form (the evaluator runs them) or exact.
        Erfc | Erfinv | Gammaln | Digamma | Gcd | Lcm | Philox | PhiloxHigh | PhiloxBits
        | Bitcast | BoxMullerCos | BoxMullerSin => host_ulps(op, dt),
        kiln::ir::ops_not_of!(Elementwise) => host_ulps(op, dt),
    }
}

/// Significand bits (the implicit one included) and least normal exponent of a float dtype.
pub fn float_format(dt: DType) -> Option<(u32, i32)> {
    match dt {
        DType::Float16 => Some((11, -14)),
        DType::BFloat16 => Some((8, -126)),
        DType::Float32 => Some((24, -126)),
        DType::Float64 => Some((53, -1022)),
        _ => None,
    }
}

/// The distance between `got` and the reference `want` (both values of a float dtype of
/// `(mantissa, min_exp)` format, given as f64) in ulps of `want`'s binade: 0 for two NaNs or
/// equal values, 1 for zeros of opposite signs, infinite for a NaN or an infinity against
/// anything else.
pub fn ulp_distance(got: f64, want: f64, (mantissa, min_exp): (u32, i32)) -> f64 {
    if got.is_nan() && want.is_nan()
        || got == want && got.is_sign_negative() == want.is_sign_negative()
    {
        return 0.0;
    }
    if got == want {
        return 1.0;
    }
    if !got.is_finite() || !want.is_finite() {
        return f64::INFINITY;
    }
    let e = if want == 0.0 { min_exp } else { (want.abs().log2().floor() as i32).max(min_exp) };
    (got - want).abs() / pow2(e - (mantissa as i32 - 1))
}

/// 2^k for k in f64's range, subnormals included (`powi` computes 2^-k and overflows).
pub fn pow2(k: i32) -> f64 {
    assert!((-1074..=1023).contains(&k), "2^{k} is not a finite f64");
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

/// A float array's elements as f64, with its format; `None` for other dtypes.
pub fn float_values(a: &kiln::HostArray) -> Option<(Vec<f64>, (u32, i32))> {
    use kiln::ir::host::Data;
    let v: Vec<f64> = match a.data() {
        Data::Float32(v) => v.iter().map(|&x| x as f64).collect(),
        Data::Float64(v) => v.clone(),
        Data::Float16(v) => v.iter().map(|x| x.to_f64()).collect(),
        Data::BFloat16(v) => v.iter().map(|x| x.to_f64()).collect(),
        _ => return None,
    };
    Some((v, float_format(a.dtype()).expect("a float dtype")))
}
