//! Elementwise ops on complex values: each value is a pair (real, imag) of `f64` SSA values; a
//! complex64 result's parts are rounded to f32 (and held in f64), as in the evaluator (see
//! [`super::types`]).
//!
//! The formulas are NumPy's (and the reference evaluator's, `kiln_ir::eval::cmath`):
//! - `z * w = (a c - b d, a d + b c)`;
//! - `z / w` by Smith's algorithm; a zero divisor divides each part by +0 (inf or NaN parts);
//! - `abs(z) = hypot(a, b)`, a float of the parts' dtype (float32 for complex64);
//! - `exp(z) = e^a (cos b, sin b)` (so `exp(1000 + 0i) = inf + NaN i`, as in NumPy), with
//!   num-complex's special cases for `a = ±inf` or NaN;
//! - `isnan`: either part NaN; `isinf`: either part infinite; `isfinite`: both finite;
//! - `==` compares both parts, `!=` is true when either part differs.
//!
//! - `rint` rounds each part; `complex(x, y)` makes x + y·i of two floats.
//!
//! Other functions of a complex argument (`log`, `sqrt`, the trigonometric functions, `power`,
//! orderings) are [`Unsupported`]: their regions run on the reference evaluator.
//!
//! So `+ - * /`, `abs`'s rounding aside, give the evaluator's bits; `exp` is within the math
//! library's error (libm or libdevice).

use kiln_ir::{DType, Node, OpKind};

use super::builder::Builder;
use super::cast::cast;
use super::scalar::{bin, cmp, math, native, select};
use super::types::{float_const, Val};
use super::Unsupported;

/// The float dtype of a complex dtype's parts.
pub(crate) fn component(dt: DType) -> DType {
    match dt {
        DType::Complex128 => DType::Float64,
        _ => DType::Float32,
    }
}

/// `v` (of any dtype) converted to `to`, where one of the two is complex. NumPy's rules: a real
/// value becomes the real part (imag +0); complex to real keeps the real part (NumPy warns);
/// complex to bool is true when either part is non-zero (NaN included).
pub(crate) fn cast_complex(b: &mut Builder, v: &Val, to: DType) -> Result<Val, Unsupported> {
    let from = v.dt;
    if from == to {
        return Ok(v.clone());
    }
    match (from.is_complex(), to.is_complex()) {
        (false, true) => {
            // To the part's dtype first (one rounding), then held in f64.
            let re = cast(b, v, component(to))?;
            let re = cast(b, &re, DType::Float64)?;
            let im = float_const(b, 0.0, "f64");
            Ok(Val::complex(re.ssa, im, to))
        }
        (true, true) => {
            let (re, im) = (v.ssa.clone(), v.imag().to_string());
            Ok(finish(b, re, im, to))
        }
        (true, false) if to == DType::Bool => {
            let z = float_const(b, 0.0, "f64");
            let r = b.op(&format!("arith.cmpf une, {}, {z} : f64", v.ssa));
            let i = b.op(&format!("arith.cmpf une, {}, {z} : f64", v.imag()));
            Ok(Val::new(b.op(&format!("arith.ori {r}, {i} : i1")), DType::Bool))
        }
        // The real part (exact in f64 registers), converted.
        (true, false) => cast(b, &Val::new(v.ssa.clone(), DType::Float64), to),
        (false, false) => unreachable!("one side is complex"),
    }
}

/// The result of elementwise `node` on `args`, where an operand or the result is complex.
pub(crate) fn elementwise(b: &mut Builder, node: &Node, args: &[Val]) -> Result<Val, Unsupported> {
    use OpKind::*;
    let dt = args.iter().map(|a| a.dt).find(|d| d.is_complex()).unwrap_or(node.dtype);
    let t = "f64";
    let unsupported = || Unsupported::new(Some(node.op.name()), format!("{dt} operands"));
    let parts = |v: &Val| (v.ssa.clone(), v.imag().to_string());
    let boolean = |s: String| Val::new(s, DType::Bool);
    let v = match node.op {
        Cast => cast_complex(b, &args[0], node.dtype)?,
        Where => {
            let (c, x, y) = (&args[0].ssa, &args[1], &args[2]);
            let (re, im) = select_pair(b, c, &parts(x), &parts(y));
            Val::complex(re, im, dt)
        }
        Label => args[0].clone(),
        Neg => {
            let (re, im) = parts(&args[0]);
            let nr = b.op(&format!("arith.negf {re} : {t}"));
            let ni = b.op(&format!("arith.negf {im} : {t}"));
            Val::complex(nr, ni, dt)
        }
        Conj => {
            let (re, im) = parts(&args[0]);
            Val::complex(re, b.op(&format!("arith.negf {im} : {t}")), dt)
        }
        // Parts of the operands' precision (float32 or narrower for complex64): exact.
        MakeComplex => {
            let re = cast(b, &args[0], DType::Float64)?;
            let im = cast(b, &args[1], DType::Float64)?;
            finish(b, re.ssa, im.ssa, dt)
        }
        // Each part rounded (NumPy's `nc_rint`): complex64 parts stay float32 values.
        Rint => {
            let (re, im) = parts(&args[0]);
            let r = native(b, "roundeven", &[&re], t);
            let i = native(b, "roundeven", &[&im], t);
            Val::complex(r, i, dt)
        }
        Real => part(b, args[0].ssa.clone(), dt),
        Imag => part(b, args[0].imag().to_string(), dt),
        Abs => {
            let (re, im) = parts(&args[0]);
            let h = math(b, "hypot", &[&re, &im], t)?;
            part(b, h, dt)
        }
        Add | Sub => {
            let op = if node.op == Add { "arith.addf" } else { "arith.subf" };
            let ((a, c), (x, y)) = (parts(&args[0]), parts(&args[1]));
            let (re, im) = (bin(b, op, &a, &x, t), bin(b, op, &c, &y, t));
            finish(b, re, im, dt)
        }
        Mul | Square => {
            let z = parts(&args[0]);
            let w = if node.op == Mul { parts(&args[1]) } else { z.clone() };
            let (re, im) = mul(b, t, &z, &w);
            finish(b, re, im, dt)
        }
        Div | Reciprocal => {
            let (z, w) = if node.op == Div {
                (parts(&args[0]), parts(&args[1]))
            } else {
                ((float_const(b, 1.0, t), float_const(b, 0.0, t)), parts(&args[0]))
            };
            let (re, im) = div(b, t, &z, &w);
            finish(b, re, im, dt)
        }
        Exp => {
            let (a, y) = parts(&args[0]);
            let e = math(b, "exp", &[&a], t)?;
            let c = math(b, "cos", &[&y], t)?;
            let s = math(b, "sin", &[&y], t)?;
            let re = bin(b, "arith.mulf", &e, &c, t);
            let im = bin(b, "arith.mulf", &e, &s, t);
            // num-complex's special cases (the evaluator's; NumPy's too, which also gives
            // exp(1000 + 0i) = inf + NaN i): a = +inf or NaN with y = 0 gives (a, y); a = -inf
            // with y infinite or NaN gives (+0, +0); a = +inf with y infinite or NaN gives
            // (inf, NaN).
            let zero = float_const(b, 0.0, t);
            let inf = float_const(b, f64::INFINITY, t);
            let ninf = float_const(b, f64::NEG_INFINITY, t);
            let nan = float_const(b, f64::NAN, t);
            let y0 = cmp(b, "arith.cmpf", "oeq", &y, &zero, t);
            let ay = native(b, "absf", &[&y], t);
            let y_bad = cmp(b, "arith.cmpf", "uge", &ay, &inf, t);
            let a_neg = cmp(b, "arith.cmpf", "oeq", &a, &ninf, t);
            let a_pos = cmp(b, "arith.cmpf", "oeq", &a, &inf, t);
            let a_nan = cmp(b, "arith.cmpf", "uno", &a, &a, t);
            let a_pos_or_nan = b.op(&format!("arith.ori {a_pos}, {a_nan} : i1"));
            let keep = b.op(&format!("arith.andi {a_pos_or_nan}, {y0} : i1"));
            let to_zero = b.op(&format!("arith.andi {a_neg}, {y_bad} : i1"));
            let to_inf = b.op(&format!("arith.andi {a_pos}, {y_bad} : i1"));
            let r = select_pair(b, &keep, &(a.clone(), y.clone()), &(re, im));
            let r = select_pair(b, &to_zero, &(zero.clone(), zero), &r);
            let (re, im) = select_pair(b, &to_inf, &(inf, nan), &r);
            finish(b, re, im, dt)
        }
        Eq | Ne => {
            let ((a, c), (x, y)) = (parts(&args[0]), parts(&args[1]));
            let (pred, join) =
                if node.op == Eq { ("oeq", "arith.andi") } else { ("une", "arith.ori") };
            let r = cmp(b, "arith.cmpf", pred, &a, &x, t);
            let i = cmp(b, "arith.cmpf", pred, &c, &y, t);
            boolean(b.op(&format!("{join} {r}, {i} : i1")))
        }
        IsNan => {
            let (re, im) = parts(&args[0]);
            let r = cmp(b, "arith.cmpf", "uno", &re, &im, t);
            boolean(r)
        }
        IsInf | IsFinite => {
            let (re, im) = parts(&args[0]);
            let inf = float_const(b, f64::INFINITY, t);
            let (pred, join) =
                if node.op == IsInf { ("oeq", "arith.ori") } else { ("olt", "arith.andi") };
            let ar = native(b, "absf", &[&re], t);
            let ai = native(b, "absf", &[&im], t);
            let r = cmp(b, "arith.cmpf", pred, &ar, &inf, t);
            let i = cmp(b, "arith.cmpf", pred, &ai, &inf, t);
            boolean(b.op(&format!("{join} {r}, {i} : i1")))
        }
        // Defined for complex numbers, not generated yet.
        Sqrt | Exp2 | Expm1 | Log | Log2 | Log10 | Log1p | Sin | Cos | Tan | Arcsin | Arccos
        | Arctan | Sinh | Cosh | Tanh | Arcsinh | Arccosh | Arctanh | Sign | Power | Lt | Le
        | Gt | Ge | Maximum | Minimum | Fmax | Fmin | LogicalNot | LogicalAnd | LogicalOr
        | LogicalXor => return Err(unsupported()),
        // Refused for complex operands by the IR's dtype rules.
        Cbrt | Floor | Ceil | Trunc | Erf | Invert | FloorDiv | Remainder | Arctan2 | Hypot
        | LogAddExp | CopySign | BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift
        | FrexpMantissa | FrexpExponent | Fmod | LogAddExp2 | Ldexp | NextAfter | Erfc | Erfinv
        | Gammaln | Digamma | Gcd | Lcm | Philox | PhiloxHigh | PhiloxBits | BoxMullerCos
        | BoxMullerSin | Bitcast => return Err(unsupported()),
        Input
        | Const
        | Iota
        | Take
        | Sum
        | Prod
        | Max
        | Min
        | ArgMax
        | ArgMin
        | All
        | Any
        | Reshape
        | Permute
        | BroadcastTo
        | Slice
        | ExpandDims
        | Squeeze
        | Flip
        | Concatenate
        | Stack
        | Contiguous
        | CustomKernel
        | ScatterAdd
        | ScatterMax
        | ScatterMin
        | Scatter
        | Cumsum
        | Cumprod
        | Cummax
        | Cummin
        | Compact
        | CompactCount
        | Sort
        | Argsort
        | SortTake
        | Argtopk
        | kiln_ir::ops_of!(Vendor) => {
            unreachable!("{} is not elementwise", node.op.name())
        }
    };
    Ok(v)
}

/// A complex result of `dt` from its f64 parts: complex64's rounded to f32 (held in f64).
fn finish(b: &mut Builder, re: String, im: String, dt: DType) -> Val {
    let [re, im] = [re, im].map(|x| {
        if dt == DType::Complex64 {
            let n = b.op(&format!("arith.truncf {x} : f64 to f32"));
            b.op(&format!("arith.extf {n} : f32 to f64"))
        } else {
            x
        }
    });
    Val::complex(re, im, dt)
}

/// A part (f64) of a complex value of `dt` as a value of the part's float dtype.
fn part(b: &mut Builder, x: String, dt: DType) -> Val {
    if dt == DType::Complex64 {
        Val::new(b.op(&format!("arith.truncf {x} : f64 to f32")), DType::Float32)
    } else {
        Val::new(x, DType::Float64)
    }
}

/// `(a + bi)(c + di) = (ac - bd) + (ad + bc)i`, in `t` (f64).
fn mul(b: &mut Builder, t: &str, z: &(String, String), w: &(String, String)) -> (String, String) {
    let ac = bin(b, "arith.mulf", &z.0, &w.0, t);
    let bd = bin(b, "arith.mulf", &z.1, &w.1, t);
    let ad = bin(b, "arith.mulf", &z.0, &w.1, t);
    let bc = bin(b, "arith.mulf", &z.1, &w.0, t);
    (bin(b, "arith.subf", &ac, &bd, t), bin(b, "arith.addf", &ad, &bc, t))
}

/// `z / w` by Smith's algorithm (NumPy's), branch-free: both branches computed, one selected.
fn div(b: &mut Builder, t: &str, z: &(String, String), w: &(String, String)) -> (String, String) {
    let (ar, ai) = (&z.0, &z.1);
    let (br, bi) = (&w.0, &w.1);
    let one = float_const(b, 1.0, t);
    let zero = float_const(b, 0.0, t);
    let br_abs = native(b, "absf", &[br], t);
    let bi_abs = native(b, "absf", &[bi], t);
    // |br| >= |bi|: rat = bi/br, scl = 1/(br + bi rat), ((ar + ai rat) scl, (ai - ar rat) scl).
    let rat = bin(b, "arith.divf", bi, br, t);
    let den = bin(b, "arith.mulf", bi, &rat, t);
    let den = bin(b, "arith.addf", br, &den, t);
    let scl = bin(b, "arith.divf", &one, &den, t);
    let t1 = bin(b, "arith.mulf", ai, &rat, t);
    let t1 = bin(b, "arith.addf", ar, &t1, t);
    let re1 = bin(b, "arith.mulf", &t1, &scl, t);
    let t2 = bin(b, "arith.mulf", ar, &rat, t);
    let t2 = bin(b, "arith.subf", ai, &t2, t);
    let im1 = bin(b, "arith.mulf", &t2, &scl, t);
    // Else: rat = br/bi, scl = 1/(bi + br rat), ((ar rat + ai) scl, (ai rat - ar) scl).
    let rat = bin(b, "arith.divf", br, bi, t);
    let den = bin(b, "arith.mulf", br, &rat, t);
    let den = bin(b, "arith.addf", bi, &den, t);
    let scl = bin(b, "arith.divf", &one, &den, t);
    let t1 = bin(b, "arith.mulf", ar, &rat, t);
    let t1 = bin(b, "arith.addf", &t1, ai, t);
    let re2 = bin(b, "arith.mulf", &t1, &scl, t);
    let t2 = bin(b, "arith.mulf", ai, &rat, t);
    let t2 = bin(b, "arith.subf", &t2, ar, t);
    let im2 = bin(b, "arith.mulf", &t2, &scl, t);
    // A zero divisor: each part divided by +0.
    let re0 = bin(b, "arith.divf", ar, &br_abs, t);
    let im0 = bin(b, "arith.divf", ai, &br_abs, t);
    let first = cmp(b, "arith.cmpf", "oge", &br_abs, &bi_abs, t);
    let br0 = cmp(b, "arith.cmpf", "oeq", &br_abs, &zero, t);
    let bi0 = cmp(b, "arith.cmpf", "oeq", &bi_abs, &zero, t);
    let both0 = b.op(&format!("arith.andi {br0}, {bi0} : i1"));
    let r = select_pair(b, &both0, &(re0, im0), &(re1, im1));
    select_pair(b, &first, &r, &(re2, im2))
}

/// `c ? x : y` for a pair of f64 parts.
fn select_pair(
    b: &mut Builder,
    c: &str,
    x: &(String, String),
    y: &(String, String),
) -> (String, String) {
    (select(b, c, &x.0, &y.0, "f64"), select(b, c, &x.1, &y.1, "f64"))
}
