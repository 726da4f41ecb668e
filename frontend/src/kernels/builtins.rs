//! CUDA's math functions and constants, as graph ops.
//!
//! Overloads follow CUDA C++: a `float` argument calls the `float` function, `double` the
//! `double` one, integers the `double` one, float16/bfloat16 convert to `float`; the `f`-suffixed
//! names (`sinf`, `powf` ...) convert their arguments to `float`. Results are correctly rounded
//! (the evaluator's functions) where CUDA's are within a few ulps. Differences:
//!
//! - `min`/`max` and `fmin`/`fmax` on floats ignore a NaN operand (CUDA's `fminf`/`fmaxf`); on
//!   integers they are the integer minimum and maximum.
//! - `fma(a, b, c)` is `a * b + c` without the single rounding (kiln has no fused op): computed in
//!   `double` for `float` operands (the product is then exact, one extra rounding at most), twice
//!   rounded for `double`.
//! - `round` rounds half away from zero (C's), `rint`/`nearbyint` half to even.

use kiln_ir::{DType, Literal, OpKind};

use super::ast::{BinOp, Span};
use super::ctypes::{common, math_type, promote};
use super::diag::{DResult, Diag};
use super::values::{binary, call_op, cast, select, Val};

/// A named constant of CUDA's headers (`INFINITY`, `FLT_MAX`, `CUDART_PI_F` ...).
pub(crate) fn constant(name: &str) -> Option<Val> {
    let f = |x: f64| Some(Val::Const(Literal::float(DType::Float32, x), DType::Float32));
    let d = |x: f64| Some(Val::Const(Literal::float(DType::Float64, x), DType::Float64));
    let i = |x: i128, t: DType| Some(Val::Const(Literal::from_i128(t, x), t));
    match name {
        "INFINITY" | "HUGE_VALF" | "CUDART_INF_F" => f(f64::INFINITY),
        "NAN" | "CUDART_NAN_F" => f(f64::NAN),
        "HUGE_VAL" | "CUDART_INF" => d(f64::INFINITY),
        "CUDART_NAN" => d(f64::NAN),
        "FLT_MAX" => f(f32::MAX as f64),
        "FLT_MIN" => f(f32::MIN_POSITIVE as f64),
        "FLT_EPSILON" => f(f32::EPSILON as f64),
        "DBL_MAX" => d(f64::MAX),
        "DBL_MIN" => d(f64::MIN_POSITIVE),
        "DBL_EPSILON" => d(f64::EPSILON),
        "CUDART_PI_F" => f(std::f64::consts::PI),
        "CUDART_PI" | "M_PI" => d(std::f64::consts::PI),
        "M_E" => d(std::f64::consts::E),
        "INT_MAX" => i(i32::MAX as i128, DType::Int32),
        "INT_MIN" => i(i32::MIN as i128, DType::Int32),
        "UINT_MAX" => i(u32::MAX as i128, DType::UInt32),
        "LLONG_MAX" => i(i64::MAX as i128, DType::Int64),
        "LLONG_MIN" => i(i64::MIN as i128, DType::Int64),
        "ULLONG_MAX" => i(u64::MAX as i128, DType::UInt64),
        _ => None,
    }
}

/// The op of a one-argument float function (`sin`, `expf` ...), and whether the name forces
/// `float` (the `f` suffix).
fn unary_float(name: &str) -> Option<(OpKind, bool)> {
    let base = |n: &str| -> Option<OpKind> {
        use OpKind::*;
        Some(match n {
            "sqrt" => Sqrt,
            "cbrt" => Cbrt,
            "exp" => Exp,
            "exp2" => Exp2,
            "expm1" => Expm1,
            "log" => Log,
            "log2" => Log2,
            "log10" => Log10,
            "log1p" => Log1p,
            "sin" => Sin,
            "cos" => Cos,
            "tan" => Tan,
            "asin" => Arcsin,
            "acos" => Arccos,
            "atan" => Arctan,
            "sinh" => Sinh,
            "cosh" => Cosh,
            "tanh" => Tanh,
            "asinh" => Arcsinh,
            "acosh" => Arccosh,
            "atanh" => Arctanh,
            "floor" => Floor,
            "ceil" => Ceil,
            "trunc" => Trunc,
            "rint" | "nearbyint" => Rint,
            "erf" => Erf,
            "fabs" => Abs,
            _ => return None,
        })
    };
    if let Some(op) = base(name) {
        return Some((op, false));
    }
    name.strip_suffix('f').and_then(base).map(|op| (op, true))
}

/// The names `call` knows, for the error about an unknown one.
const NAMES: &str = "sqrt rsqrt cbrt exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan atan2 sinh cosh \
tanh asinh acosh atanh floor ceil trunc rint nearbyint round erf fabs abs pow hypot copysign fmin fmax min max fma \
isnan isinf isfinite real imag conj (and the `f`-suffixed float forms)";

fn arity(name: &str, args: &[Val], n: usize, span: Span) -> DResult<()> {
    if args.len() != n {
        return Err(Diag::code(
            span,
            format!("`{name}` takes {n} argument(s), got {}", args.len()),
        ));
    }
    Ok(())
}

/// The type a math function computes in: `float` for the `f` forms, else by overload.
fn compute_type(d: DType, single: bool) -> DType {
    if single && !d.is_complex() {
        DType::Float32
    } else {
        math_type(d)
    }
}

/// `name(args)`: a CUDA math function.
pub(crate) fn call(name: &str, args: &[Val], span: Span) -> DResult<Val> {
    if let Some((op, single)) = unary_float(name) {
        arity(name, args, 1, span)?;
        let t = compute_type(args[0].dtype(), single);
        return call_op(op, &[&cast(&args[0], t)], span);
    }
    let two = |op: OpKind, single: bool| -> DResult<Val> {
        arity(name, args, 2, span)?;
        let t =
            common(compute_type(args[0].dtype(), single), compute_type(args[1].dtype(), single));
        call_op(op, &[&cast(&args[0], t), &cast(&args[1], t)], span)
    };
    let one_value = |args: &[Val]| -> DResult<Val> {
        arity(name, args, 1, span)?;
        Ok(args[0].clone())
    };
    match name {
        "rsqrt" | "rsqrtf" => {
            let x = one_value(args)?;
            let t = compute_type(x.dtype(), name.ends_with('f'));
            let s = call_op(OpKind::Sqrt, &[&cast(&x, t)], span)?;
            binary(BinOp::Div, &Val::Const(Literal::float(t, 1.0), t), &s, span)
        }
        "round" | "roundf" => {
            // Half away from zero: trunc(x), plus copysign(1, x) where |x - trunc(x)| >= 0.5.
            let x = one_value(args)?;
            let t = compute_type(x.dtype(), name.ends_with('f'));
            let x = cast(&x, t);
            let tr = call_op(OpKind::Trunc, &[&x], span)?;
            let frac = call_op(OpKind::Abs, &[&binary(BinOp::Sub, &x, &tr, span)?], span)?;
            let half = binary(BinOp::Ge, &frac, &Val::Const(Literal::float(t, 0.5), t), span)?;
            let one =
                call_op(OpKind::CopySign, &[&Val::Const(Literal::float(t, 1.0), t), &x], span)?;
            let up = binary(BinOp::Add, &tr, &one, span)?;
            select(&half, &up, &tr, span)
        }
        "pow" | "powf" => two(OpKind::Power, name == "powf"),
        "atan2" | "atan2f" => two(OpKind::Arctan2, name == "atan2f"),
        "hypot" | "hypotf" => two(OpKind::Hypot, name == "hypotf"),
        "copysign" | "copysignf" => two(OpKind::CopySign, name == "copysignf"),
        "fmin" | "fminf" => two(OpKind::Fmin, name == "fminf"),
        "fmax" | "fmaxf" => two(OpKind::Fmax, name == "fmaxf"),
        "min" | "max" => {
            arity(name, args, 2, span)?;
            let t = common(args[0].dtype(), args[1].dtype());
            let op = match (t.is_integer(), name == "max") {
                (true, true) => OpKind::Maximum,
                (true, false) => OpKind::Minimum,
                (false, true) => OpKind::Fmax,
                (false, false) => OpKind::Fmin,
            };
            let t = if t.is_integer() { t } else { compute_type(t, false) };
            call_op(op, &[&cast(&args[0], t), &cast(&args[1], t)], span)
        }
        "fma" | "fmaf" => {
            arity(name, args, 3, span)?;
            let single = name == "fmaf";
            let t = args
                .iter()
                .map(|a| compute_type(a.dtype(), single))
                .reduce(common)
                .expect("three arguments");
            // float operands: the product is exact in double, the sum rounds once to double.
            let w = if t == DType::Float32 { DType::Float64 } else { t };
            let p = binary(BinOp::Mul, &cast(&args[0], w), &cast(&args[1], w), span)?;
            Ok(cast(&binary(BinOp::Add, &p, &cast(&args[2], w), span)?, t))
        }
        "abs" => {
            let x = one_value(args)?;
            let t = if x.dtype().is_integer() || x.dtype().is_bool() {
                promote(x.dtype())
            } else {
                math_type(x.dtype())
            };
            call_op(OpKind::Abs, &[&cast(&x, t)], span)
        }
        "isnan" | "isinf" | "isfinite" => {
            let x = one_value(args)?;
            let t = math_type(x.dtype());
            let op = match name {
                "isnan" => OpKind::IsNan,
                "isinf" => OpKind::IsInf,
                _ => OpKind::IsFinite,
            };
            call_op(op, &[&cast(&x, t)], span)
        }
        "real" | "imag" | "conj" => {
            let x = one_value(args)?;
            if !x.dtype().is_complex() {
                return match name {
                    "imag" => Ok(cast(&Val::Const(Literal::Int(0), DType::Int64), x.dtype())),
                    _ => Ok(x),
                };
            }
            let op = match name {
                "real" => OpKind::Real,
                "imag" => OpKind::Imag,
                _ => OpKind::Conj,
            };
            call_op(op, &[&x], span)
        }
        _ => Err(Diag::unsupported(span, format!("the function `{name}` (known: {NAMES})"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Span = Span { line: 1, column: 1 };

    #[test]
    fn overloads_pick_the_compute_type() {
        let i = Val::Const(Literal::Int(2), DType::Int32);
        let one = std::slice::from_ref(&i);
        assert_eq!(call("sqrt", one, AT).unwrap().dtype(), DType::Float64);
        assert_eq!(call("sqrtf", one, AT).unwrap().dtype(), DType::Float32);
        let h = Val::Const(Literal::float(DType::Float16, 2.0), DType::Float16);
        assert_eq!(call("exp", &[h], AT).unwrap().dtype(), DType::Float32);
        assert_eq!(call("max", &[i.clone(), i.clone()], AT).unwrap().dtype(), DType::Int32);
        assert_eq!(
            call("abs", &[Val::Const(Literal::Int(-2), DType::Int8)], AT).unwrap().dtype(),
            DType::Int32
        );
        assert!(call("pow", one, AT).is_err());
        let e = call("fmod", &[i.clone(), i], AT).unwrap_err();
        assert!(e.message.contains("`fmod`"), "{}", e.message);
    }
}
