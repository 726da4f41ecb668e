//! Elementwise ops on register values, with the reference evaluator's (NumPy's) semantics:
//! integers wrap, integer division by zero gives 0, `floor_divide`/`remainder` take the sign of
//! the divisor, `maximum`/`minimum` propagate NaN, shifts by the bit width or more saturate, and
//! float16/bfloat16 results are rounded to their dtype after every op.
//!
//! Transcendental functions go through [`math`]: `math` dialect ops where MLIR's MathToLLVM
//! lowers them to an accurate LLVM intrinsic (which the backend turns into a libm call or an
//! instruction), libm calls otherwise (MathToLLVM lowers `expm1` as `exp(x) - 1` and `log1p` as
//! `log(1 + x)`, which lose all precision near 0, and has no lowering for `cbrt`, `tan`, `erf`,
//! the inverse and hyperbolic functions, `atan2` or `hypot`).

use kiln_ir::{DType, Node, OpKind};

use super::builder::Builder;
use super::cast::cast;
use super::special;
use super::types::{float_bits, float_const, float_from_bits, int_const, int_width, round, Val};
use super::{MathLib, Unsupported};

/// The libm symbol of a function for a float type (`sinf` for f32, `sin` for f64).
fn libm_symbol(name: &str, ty: &str) -> String {
    if ty == "f32" {
        format!("{name}f")
    } else {
        name.to_string()
    }
}

/// Math ops every target has an instruction (or a short inline sequence) for.
const NATIVE: &[&str] = &["sqrt", "floor", "ceil", "trunc", "roundeven", "absf", "copysign"];

/// `name(args)` in `ty` for one of the [`NATIVE`] ops: a `math` op.
pub(crate) fn native(b: &mut Builder, name: &str, args: &[&str], ty: &str) -> String {
    debug_assert!(NATIVE.contains(&name), "{name} is not native");
    b.op(&format!("math.{name} {} : {ty}", args.join(", ")))
}

/// `name(args)` in `ty` (f32 or f64), by the builder's [`MathLib`]: a `math` op or a libm call
/// (see the module docs) with libm; a call to libdevice's `__nv_*` with libdevice; with the
/// polynomial approximations, [`super::polynomial::function`].
///
/// On the GPU every function but the few NVPTX has instructions for (sqrt, rounding, fabs,
/// copysign) is a call to libdevice's `__nv_*` (`__nv_sinf`) or a polynomial: LLVM's
/// `llvm.exp`/`llvm.log`/`llvm.pow` (and `sin`/`cos` without `afn`) abort the NVPTX backend, so
/// none may reach it.
///
/// Errors: with the polynomial approximations, a float64 function.
pub(crate) fn math(
    b: &mut Builder,
    name: &str,
    args: &[&str],
    ty: &str,
) -> Result<String, Unsupported> {
    if NATIVE.contains(&name) {
        return Ok(native(b, name, args, ty));
    }
    let sym = match b.math {
        MathLib::Polynomial => return super::polynomial::function(b, name, args, ty),
        MathLib::Libm
            if matches!(
                name,
                "exp" | "exp2" | "log" | "log2" | "log10" | "sin" | "cos" | "powf"
            ) =>
        {
            return Ok(b.op(&format!("math.{name} {} : {ty}", args.join(", "))));
        }
        MathLib::Libm => libm_symbol(name, ty),
        MathLib::Libdevice => {
            format!("__nv_{}", libm_symbol(if name == "powf" { "pow" } else { name }, ty))
        }
    };
    let tys = vec![ty; args.len()].join(", ");
    b.declare(
        &sym,
        format!("func.func private @{sym}({tys}) -> {ty} attributes {{llvm.readnone}}"),
    );
    Ok(b.op(&format!("func.call @{sym}({}) : ({tys}) -> {ty}", args.join(", "))))
}

pub(crate) fn bin(b: &mut Builder, op: &str, x: &str, y: &str, ty: &str) -> String {
    b.op(&format!("{op} {x}, {y} : {ty}"))
}

pub(crate) fn cmp(b: &mut Builder, op: &str, pred: &str, x: &str, y: &str, ty: &str) -> String {
    b.op(&format!("{op} {pred}, {x}, {y} : {ty}"))
}

pub(crate) fn select(b: &mut Builder, c: &str, x: &str, y: &str, ty: &str) -> String {
    b.op(&format!("arith.select {c}, {x}, {y} : {ty}"))
}

/// On the GPU, float `x` (f32 or f64) through an inline-assembly `mov`: the same value, of
/// which LLVM knows nothing (so no fold can use what it would prove of it); elsewhere `x`.
fn opaque(b: &mut Builder, x: &str, ty: &str) -> String {
    let (mov, constraint) = match ty {
        "f32" => ("mov.b32", "f"),
        "f64" => ("mov.b64", "d"),
        _ => return x.to_string(),
    };
    if b.target != super::Target::Gpu {
        return x.to_string();
    }
    b.op(&format!(
        "llvm.inline_asm \"{mov} $0, $1;\", \"={constraint},{constraint}\" {x} : ({ty}) -> {ty}"
    ))
}

/// `u` as the error of `node`'s op.
fn in_op(node: &Node, u: Unsupported) -> Unsupported {
    Unsupported::new(Some(node.op.name()), u.reason)
}

/// The result of elementwise `node` on `args` (values of the operands' dtype).
pub(crate) fn elementwise(b: &mut Builder, node: &Node, args: &[Val]) -> Result<Val, Unsupported> {
    use OpKind::*;
    let dt = args[0].dt;
    let out = node.dtype;
    if args.iter().any(|a| a.dt.is_complex()) || out.is_complex() {
        return super::complex::elementwise(b, node, args);
    }
    let ty = args[0].ty().to_string();
    let x = args[0].ssa.clone();
    let y = args.get(1).map(|v| v.ssa.clone()).unwrap_or_default();
    let is_float = dt.is_float();
    let signed = dt.is_signed_integer();
    // A float result in the working type, rounded to the dtype (float16/bfloat16).
    let fin = |b: &mut Builder, s: String| Val::new(round(b, &s, dt), dt);
    let same = |s: String| Val::new(s, dt);
    let boolean = |s: String| Val::new(s, DType::Bool);
    // A math function of x (`math` or libm), rounded to the dtype.
    let unary_math = |b: &mut Builder, name: &str| -> Result<Val, Unsupported> {
        let r = math(b, name, &[&x], &ty).map_err(|u| in_op(node, u))?;
        Ok(fin(b, r))
    };
    // A comparison by its float, signed and unsigned predicates.
    let compare = |b: &mut Builder, fp: &str, sp: &str, up: &str| {
        if is_float {
            boolean(cmp(b, "arith.cmpf", fp, &x, &y, &ty))
        } else {
            boolean(cmp(b, "arith.cmpi", if signed { sp } else { up }, &x, &y, &ty))
        }
    };

    let v = match node.op {
        Neg => {
            if is_float {
                same(b.op(&format!("arith.negf {x} : {ty}")))
            } else {
                let z = int_const(b, 0, &ty);
                same(bin(b, "arith.subi", &z, &x, &ty))
            }
        }
        Abs => {
            if is_float {
                same(native(b, "absf", &[&x], &ty))
            } else if signed {
                let z = int_const(b, 0, &ty);
                let neg = bin(b, "arith.subi", &z, &x, &ty);
                let lt = cmp(b, "arith.cmpi", "slt", &x, &z, &ty);
                same(select(b, &lt, &neg, &x, &ty))
            } else {
                same(x)
            }
        }
        Sign => {
            if is_float {
                let z = float_const(b, 0.0, &ty);
                let one = float_const(b, 1.0, &ty);
                let m1 = float_const(b, -1.0, &ty);
                let gt = cmp(b, "arith.cmpf", "ogt", &x, &z, &ty);
                let lt = cmp(b, "arith.cmpf", "olt", &x, &z, &ty);
                let eq = cmp(b, "arith.cmpf", "oeq", &x, &z, &ty);
                // NaN stays NaN; -0.0 gives +0.0.
                let r = select(b, &eq, &z, &x, &ty);
                let r = select(b, &lt, &m1, &r, &ty);
                same(select(b, &gt, &one, &r, &ty))
            } else {
                let z = int_const(b, 0, &ty);
                let one = int_const(b, 1, &ty);
                let gt_pred = if signed { "sgt" } else { "ugt" };
                let gt = cmp(b, "arith.cmpi", gt_pred, &x, &z, &ty);
                if signed {
                    let m1 = int_const(b, -1, &ty);
                    let lt = cmp(b, "arith.cmpi", "slt", &x, &z, &ty);
                    let r = select(b, &lt, &m1, &z, &ty);
                    same(select(b, &gt, &one, &r, &ty))
                } else {
                    same(select(b, &gt, &one, &z, &ty))
                }
            }
        }
        Square => {
            if is_float {
                let r = bin(b, "arith.mulf", &x, &x, &ty);
                fin(b, r)
            } else {
                same(bin(b, "arith.muli", &x, &x, &ty))
            }
        }
        Reciprocal => {
            if is_float {
                let one = float_const(b, 1.0, &ty);
                let r = bin(b, "arith.divf", &one, &x, &ty);
                fin(b, r)
            } else {
                // 1 and -1 map to themselves, everything else (0 included) to 0.
                let z = int_const(b, 0, &ty);
                let one = int_const(b, 1, &ty);
                let is1 = cmp(b, "arith.cmpi", "eq", &x, &one, &ty);
                if signed {
                    let m1 = int_const(b, -1, &ty);
                    let ism1 = cmp(b, "arith.cmpi", "eq", &x, &m1, &ty);
                    let keep = bin(b, "arith.ori", &is1, &ism1, "i1");
                    same(select(b, &keep, &x, &z, &ty))
                } else {
                    same(select(b, &is1, &one, &z, &ty))
                }
            }
        }
        Sqrt => unary_math(b, "sqrt")?,
        Cbrt => unary_math(b, "cbrt")?,
        Exp => unary_math(b, "exp")?,
        Exp2 => unary_math(b, "exp2")?,
        Expm1 => unary_math(b, "expm1")?,
        Log => unary_math(b, "log")?,
        Log2 => unary_math(b, "log2")?,
        Log10 => unary_math(b, "log10")?,
        Log1p => unary_math(b, "log1p")?,
        Sin => unary_math(b, "sin")?,
        Cos => unary_math(b, "cos")?,
        Tan => unary_math(b, "tan")?,
        Arcsin => unary_math(b, "asin")?,
        Arccos => unary_math(b, "acos")?,
        Arctan => unary_math(b, "atan")?,
        Sinh => unary_math(b, "sinh")?,
        Cosh => unary_math(b, "cosh")?,
        Tanh => unary_math(b, "tanh")?,
        Arcsinh => unary_math(b, "asinh")?,
        Arccosh => unary_math(b, "acosh")?,
        Arctanh => unary_math(b, "atanh")?,
        Floor => unary_math(b, "floor")?,
        Ceil => unary_math(b, "ceil")?,
        Trunc => unary_math(b, "trunc")?,
        Rint => unary_math(b, "roundeven")?,
        Erf => unary_math(b, "erf")?,
        Erfc => special::function(b, node.op.name(), special::Function::Erfc, &x, dt)?,
        Erfinv => special::function(b, node.op.name(), special::Function::Erfinv, &x, dt)?,
        Gammaln => special::function(b, node.op.name(), special::Function::Gammaln, &x, dt)?,
        Digamma => special::function(b, node.op.name(), special::Function::Digamma, &x, dt)?,
        // Exact: the parts of a float16/bfloat16 value (held in f32) are values of its dtype.
        FrexpMantissa => same(frexp(b, &x, &ty).0),
        FrexpExponent => same(frexp(b, &x, &ty).1),
        IsNan => boolean(cmp(b, "arith.cmpf", "uno", &x, &x, &ty)),
        IsInf => {
            let a = native(b, "absf", &[&x], &ty);
            let inf = float_const(b, f64::INFINITY, &ty);
            boolean(cmp(b, "arith.cmpf", "oeq", &a, &inf, &ty))
        }
        IsFinite => {
            let a = native(b, "absf", &[&x], &ty);
            let inf = float_const(b, f64::INFINITY, &ty);
            boolean(cmp(b, "arith.cmpf", "olt", &a, &inf, &ty))
        }
        LogicalNot | Invert => {
            let ones = int_const(b, -1, &ty);
            same(bin(b, "arith.xori", &x, &ones, &ty))
        }
        Cast => return cast(b, &args[0], out),
        // The bits of the operand (a float's working value holds a value of its dtype, so they
        // are exact), read as the result's dtype of the same width.
        Bitcast => {
            let bits = if is_float { float_bits(b, &x, dt).0 } else { x };
            let r = if out.is_float() { float_from_bits(b, &bits, out) } else { bits };
            return Ok(Val::new(r, out));
        }
        // Of a real value: itself, 0, itself (NumPy).
        Real | Conj => same(x),
        Imag => {
            if is_float {
                same(float_const(b, 0.0, &ty))
            } else {
                same(int_const(b, 0, &ty))
            }
        }

        Add => {
            if dt == DType::Bool {
                same(bin(b, "arith.ori", &x, &y, &ty))
            } else if is_float {
                let r = bin(b, "arith.addf", &x, &y, &ty);
                fin(b, r)
            } else {
                same(bin(b, "arith.addi", &x, &y, &ty))
            }
        }
        Sub => {
            if is_float {
                let r = bin(b, "arith.subf", &x, &y, &ty);
                fin(b, r)
            } else {
                same(bin(b, "arith.subi", &x, &y, &ty))
            }
        }
        Mul => {
            if dt == DType::Bool {
                same(bin(b, "arith.andi", &x, &y, &ty))
            } else if is_float {
                let r = bin(b, "arith.mulf", &x, &y, &ty);
                fin(b, r)
            } else {
                same(bin(b, "arith.muli", &x, &y, &ty))
            }
        }
        Div => {
            // Correctly rounded, in the cheapest form the context allows (`division.rs`).
            let r = super::division::divide(b, &x, &y, &ty);
            fin(b, r)
        }
        FloorDiv | Remainder => {
            if is_float {
                float_divmod(b, node.op == FloorDiv, &x, &y, dt)
            } else {
                same(int_divmod(b, node.op == FloorDiv, &x, &y, &ty, signed))
            }
        }
        Power => {
            if is_float {
                let r = math(b, "powf", &[&x, &y], &ty).map_err(|u| in_op(node, u))?;
                fin(b, r)
            } else {
                same(int_power(b, &x, &y, &ty, signed))
            }
        }
        Maximum | Minimum | Fmax | Fmin => {
            let max = matches!(node.op, Maximum | Fmax);
            // NaN propagates (maximum, minimum) or is ignored (fmax, fmin).
            let propagate = matches!(node.op, Maximum | Minimum);
            if is_float {
                let pred = match (max, propagate) {
                    (true, true) => "ogt",
                    (false, true) => "olt",
                    (true, false) => "oge",
                    (false, false) => "ole",
                };
                // maximum: x if x is NaN or x > y, else y (NaN propagates, ties give y);
                // fmax: x if y is NaN or x >= y, else y (NaN ignored, ties give x).
                // On the GPU the operands go through an opaque copy first: LLVM otherwise proves
                // x is not NaN (a converted integer or bool, a constant) and folds both selects
                // below into `llvm.maxnum`, which NVPTX emits as `max.f64`: +0 for (+0, -0)
                // where NumPy gives the tie's operand (the property test's finds on an H200:
                // maximum(+0.0, -0.0), maximum(float64(False), -0.0)).
                let (x, y) = (opaque(b, &x, &ty), opaque(b, &y, &ty));
                let c = cmp(b, "arith.cmpf", pred, &x, &y, &ty);
                let nan = if propagate { &x } else { &y };
                let isnan = cmp(b, "arith.cmpf", "uno", nan, nan, &ty);
                let take_x = bin(b, "arith.ori", &c, &isnan, "i1");
                let r = select(b, &take_x, &x, &y, &ty);
                // Equal operands (+0 and -0) give the tie's operand, said again: LLVM turns the
                // select above into `maxnum`/`minnum` where it proves x is not NaN, and NVPTX's
                // `max.f64` returns +0 for (+0, -0) (found on an H200: maximum(+0.0, -0.0)).
                let eq = cmp(b, "arith.cmpf", "oeq", &x, &y, &ty);
                let tie = if propagate { &y } else { &x };
                same(select(b, &eq, tie, &r, &ty))
            } else if dt == DType::Bool {
                same(bin(b, if max { "arith.ori" } else { "arith.andi" }, &x, &y, &ty))
            } else {
                let op = match (max, signed) {
                    (true, true) => "arith.maxsi",
                    (true, false) => "arith.maxui",
                    (false, true) => "arith.minsi",
                    (false, false) => "arith.minui",
                };
                same(bin(b, op, &x, &y, &ty))
            }
        }
        Arctan2 => {
            let r = math(b, "atan2", &[&x, &y], &ty).map_err(|u| in_op(node, u))?;
            fin(b, r)
        }
        Hypot => {
            let r = math(b, "hypot", &[&x, &y], &ty).map_err(|u| in_op(node, u))?;
            fin(b, r)
        }
        CopySign => same(native(b, "copysign", &[&x, &y], &ty)),
        Fmod => {
            if is_float {
                same(float_fmod(b, &x, &y, &ty))
            } else {
                same(int_fmod(b, &x, &y, &ty, signed))
            }
        }
        Ldexp => {
            let r = ldexp(b, &x, &y, &ty);
            fin(b, r)
        }
        NextAfter => same(nextafter(b, &x, &y, dt)),
        Gcd | Lcm => same(special::gcd_lcm(b, node.op == Lcm, &x, &y, dt)),
        LogAddExp | LogAddExp2 => {
            // In f64 for every float dtype, rounded once: the f32 formula loses up to 3 ulps.
            // logaddexp2 is NumPy's base-2 form of the same formula.
            let base2 = node.op == LogAddExp2;
            if b.math == MathLib::Polynomial {
                if base2 {
                    return Err(Unsupported::new(
                        Some(node.op.name()),
                        "without libdevice (no polynomial form of logaddexp2)".to_string(),
                    ));
                }
                // f64 arithmetic on the float32 arguments (float64: unsupported).
                let r = math(b, "logaddexp", &[&x, &y], &ty).map_err(|u| in_op(node, u))?;
                fin(b, r)
            } else if dt == DType::Float64 {
                same(logaddexp_base(b, &x, &y, base2)?)
            } else {
                let xd = b.op(&format!("arith.extf {x} : f32 to f64"));
                let yd = b.op(&format!("arith.extf {y} : f32 to f64"));
                let r = logaddexp_base(b, &xd, &yd, base2)?;
                let r = if dt == DType::Float32 {
                    b.op(&format!("arith.truncf {r} : f64 to f32"))
                } else {
                    super::types::round_f64_to_narrow(b, &r, dt)
                };
                same(r)
            }
        }
        Eq => compare(b, "oeq", "eq", "eq"),
        Ne => compare(b, "une", "ne", "ne"),
        Lt => compare(b, "olt", "slt", "ult"),
        Le => compare(b, "ole", "sle", "ule"),
        Gt => compare(b, "ogt", "sgt", "ugt"),
        Ge => compare(b, "oge", "sge", "uge"),
        LogicalAnd | BitwiseAnd => same(bin(b, "arith.andi", &x, &y, &ty)),
        LogicalOr | BitwiseOr => same(bin(b, "arith.ori", &x, &y, &ty)),
        LogicalXor | BitwiseXor => same(bin(b, "arith.xori", &x, &y, &ty)),
        LeftShift | RightShift => same(shift(b, node.op == LeftShift, &x, &y, dt)),
        Philox => same(super::philox::philox(b, &x, &y, dt, 0)),
        PhiloxHigh => same(super::philox::philox(b, &x, &y, dt, 2)),
        // Its value depends on the element's position: `crate::expand` rewrites it into
        // `iota`, `philox` and bit ops before the pipeline simplifies, so no region holds it.
        PhiloxBits => {
            return Err(Unsupported::new(
                Some(node.op.name()),
                "expanded before code generation".into(),
            ))
        }
        BoxMullerCos | BoxMullerSin => Val::new(
            super::philox::box_muller(b, &x, dt, node.op == BoxMullerSin)
                .map_err(|u| in_op(node, u))?,
            DType::Float32,
        ),
        Where => {
            let (c, t, f) = (&args[0].ssa, &args[1].ssa, &args[2].ssa);
            Val::new(select(b, c, t, f, args[1].ty()), args[1].dt)
        }
        Label => args[0].clone(),
        MakeComplex => unreachable!("a complex result is complex::elementwise's"),
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
    if v.dt != out {
        // Comparisons and predicates give bool; everything else keeps its dtype.
        debug_assert!(out == DType::Bool, "{}: {} -> {}", node.op.name(), v.dt, out);
    }
    Ok(v)
}

/// NumPy's integer `//` and `%`: the quotient rounded toward -inf, the remainder with the sign of
/// the divisor; division by zero gives 0 for both, and MIN // -1 wraps to MIN.
fn int_divmod(
    b: &mut Builder,
    floor_div: bool,
    x: &str,
    y: &str,
    ty: &str,
    signed: bool,
) -> String {
    let z = int_const(b, 0, ty);
    let one = int_const(b, 1, ty);
    let y0 = cmp(b, "arith.cmpi", "eq", y, &z, ty);
    if !signed {
        let safe = select(b, &y0, &one, y, ty);
        let r = bin(b, if floor_div { "arith.divui" } else { "arith.remui" }, x, &safe, ty);
        return select(b, &y0, &z, &r, ty);
    }
    // Divide by 1 where y is 0 or -1 (MIN / -1 is undefined in LLVM), and fix those up after.
    let m1 = int_const(b, -1, ty);
    let ym1 = cmp(b, "arith.cmpi", "eq", y, &m1, ty);
    let bad = bin(b, "arith.ori", &y0, &ym1, "i1");
    let safe = select(b, &bad, &one, y, ty);
    let q = bin(b, "arith.divsi", x, &safe, ty);
    let r = bin(b, "arith.remsi", x, &safe, ty);
    // The remainder and divisor differ in sign: step the quotient down, the remainder over.
    let rnz = cmp(b, "arith.cmpi", "ne", &r, &z, ty);
    let rneg = cmp(b, "arith.cmpi", "slt", &r, &z, ty);
    let yneg = cmp(b, "arith.cmpi", "slt", y, &z, ty);
    let differ = bin(b, "arith.xori", &rneg, &yneg, "i1");
    let adjust = bin(b, "arith.andi", &rnz, &differ, "i1");
    if floor_div {
        let q1 = bin(b, "arith.subi", &q, &one, ty);
        let q = select(b, &adjust, &q1, &q, ty);
        let negx = bin(b, "arith.subi", &z, x, ty);
        let q = select(b, &ym1, &negx, &q, ty);
        select(b, &y0, &z, &q, ty)
    } else {
        let r1 = bin(b, "arith.addi", &r, y, ty);
        let r = select(b, &adjust, &r1, &r, ty);
        select(b, &bad, &z, &r, ty)
    }
}

/// NumPy's float `divmod` (`npy_divmod`), computed in f64 for every float dtype (as the
/// evaluator does) and rounded once: the floor quotient, or the remainder with the divisor's
/// sign; division by zero gives x/0 for the quotient and fmod(x, 0) = NaN for the remainder.
fn float_divmod(b: &mut Builder, floor_div: bool, x: &str, y: &str, dt: DType) -> Val {
    let (a, d) = if dt == DType::Float64 {
        (x.to_string(), y.to_string())
    } else {
        (
            b.op(&format!("arith.extf {x} : f32 to f64")),
            b.op(&format!("arith.extf {y} : f32 to f64")),
        )
    };
    let t = "f64";
    let zero = float_const(b, 0.0, t);
    let one = float_const(b, 1.0, t);
    let half = float_const(b, 0.5, t);
    // On the GPU, libdevice's exact `__nv_fmod`: NVPTX lowers `frem` to x - y*trunc(x/y),
    // which is inexact once |x/y| > 2^53 and gives -inf for remainder(1.5, -5e-324).
    let m = if b.math == MathLib::Libdevice {
        math(b, "fmod", &[&a, &d], t).expect("libdevice has fmod")
    } else {
        bin(b, "arith.remf", &a, &d, t)
    };
    // fmod(±inf, y) is NaN; NVPTX's lowering of `frem` returns x when y is infinite, x
    // included (remainder(-inf, -inf) gave -inf on the GPU).
    let abs_a = native(b, "absf", &[&a], t);
    let inf = float_const(b, f64::INFINITY, t);
    let a_inf = cmp(b, "arith.cmpf", "oeq", &abs_a, &inf, t);
    let nan = float_const(b, f64::NAN, t);
    let m = select(b, &a_inf, &nan, &m, t);
    let d0 = cmp(b, "arith.cmpf", "oeq", &d, &zero, t);
    let r = if floor_div {
        // div = (a - m) / d; if m != 0 and sign(d) != sign(m): div -= 1.
        let am = bin(b, "arith.subf", &a, &m, t);
        let div = bin(b, "arith.divf", &am, &d, t);
        let mnz = cmp(b, "arith.cmpf", "une", &m, &zero, t);
        let dneg = cmp(b, "arith.cmpf", "olt", &d, &zero, t);
        let mneg = cmp(b, "arith.cmpf", "olt", &m, &zero, t);
        let differ = bin(b, "arith.xori", &dneg, &mneg, "i1");
        let adj = bin(b, "arith.andi", &mnz, &differ, "i1");
        let div1 = bin(b, "arith.subf", &div, &one, t);
        let div = select(b, &adj, &div1, &div, t);
        // q = floor(div), plus 1 if div - floor(div) > 0.5; a zero div gives 0 with a/d's sign.
        let f = native(b, "floor", &[&div], t);
        let frac = bin(b, "arith.subf", &div, &f, t);
        let up = cmp(b, "arith.cmpf", "ogt", &frac, &half, t);
        let f1 = bin(b, "arith.addf", &f, &one, t);
        let q = select(b, &up, &f1, &f, t);
        let quot = bin(b, "arith.divf", &a, &d, t);
        let z_signed = native(b, "copysign", &[&zero, &quot], t);
        let dnz = cmp(b, "arith.cmpf", "une", &div, &zero, t);
        let q = select(b, &dnz, &q, &z_signed, t);
        select(b, &d0, &quot, &q, t)
    } else {
        // m += d if m != 0 and signs differ; m == 0 gives 0 with d's sign.
        let mnz = cmp(b, "arith.cmpf", "une", &m, &zero, t);
        let dneg = cmp(b, "arith.cmpf", "olt", &d, &zero, t);
        let mneg = cmp(b, "arith.cmpf", "olt", &m, &zero, t);
        let differ = bin(b, "arith.xori", &dneg, &mneg, "i1");
        let adj = bin(b, "arith.andi", &mnz, &differ, "i1");
        let md = bin(b, "arith.addf", &m, &d, t);
        let m2 = select(b, &adj, &md, &m, t);
        let zd = native(b, "copysign", &[&zero, &d], t);
        let m3 = select(b, &mnz, &m2, &zd, t);
        select(b, &d0, &m, &m3, t)
    };
    let s = match dt {
        DType::Float64 => r,
        DType::Float32 => b.op(&format!("arith.truncf {r} : f64 to f32")),
        _ => super::types::round_f64_to_narrow(b, &r, dt),
    };
    Val::new(s, dt)
}

/// `x ** y` for integers: wrapping square-and-multiply over the exponent's bits; a negative
/// exponent gives 1 for x = 1, ±1 for x = -1 (by parity), 0 otherwise.
fn int_power(b: &mut Builder, x: &str, y: &str, ty: &str, signed: bool) -> String {
    let bits = ty[1..].parse::<i64>().expect("integer type");
    let z = int_const(b, 0, ty);
    let one = int_const(b, 1, ty);
    let lb = b.i64(0);
    let ub = b.i64(bits);
    let step = b.i64(1);
    let acc = b.fresh();
    let base = b.fresh();
    let e = b.fresh();
    let iv = b.fresh();
    let r = b.open(
        3,
        &format!("scf.for {iv} = {lb} to {ub} step {step} iter_args({acc} = {one}, {base} = {x}, {e} = {y}) -> ({ty}, {ty}, {ty}) : i64"),
    );
    let bit = bin(b, "arith.andi", &e, &one, ty);
    let odd = cmp(b, "arith.cmpi", "ne", &bit, &z, ty);
    let prod = bin(b, "arith.muli", &acc, &base, ty);
    let acc2 = select(b, &odd, &prod, &acc, ty);
    let base2 = bin(b, "arith.muli", &base, &base, ty);
    let e2 = bin(b, "arith.shrui", &e, &one, ty);
    b.stmt(&format!("scf.yield {acc2}, {base2}, {e2} : {ty}, {ty}, {ty}"));
    b.close();
    let pow = r[0].clone();
    if !signed {
        return pow;
    }
    let m1 = int_const(b, -1, ty);
    let neg = cmp(b, "arith.cmpi", "slt", y, &z, ty);
    let is1 = cmp(b, "arith.cmpi", "eq", x, &one, ty);
    let ism1 = cmp(b, "arith.cmpi", "eq", x, &m1, ty);
    let ybit = bin(b, "arith.andi", y, &one, ty);
    let yodd = cmp(b, "arith.cmpi", "ne", &ybit, &z, ty);
    let pm1 = select(b, &yodd, &m1, &one, ty);
    let negres = select(b, &ism1, &pm1, &z, ty);
    let negres = select(b, &is1, &one, &negres, ty);
    select(b, &neg, &negres, &pow, ty)
}

/// `x << y` and `x >> y` (arithmetic for signed): a count outside `[0, width)` gives 0, or -1 for
/// a right shift of a negative signed x.
fn shift(b: &mut Builder, left: bool, x: &str, y: &str, dt: DType) -> String {
    let ty = super::types::work_ty(dt).expect("integer");
    let w = int_width(dt) as i128;
    let z = int_const(b, 0, ty);
    let width = int_const(b, w, ty);
    // On the GPU a 64-bit count is first clamped to the width (unsigned): PTX's `shl.b64`
    // takes a 32-bit count and clamps it, and LLVM's NVPTX back end turns `y < 64 ? x << y : 0`
    // into a bare `shl.b64` of the count truncated to 32 bits (2^62 became 0: `3 << -2^62`
    // gave 3, not 0). A count of at most 64 truncates to itself.
    let clamped;
    let y = if b.target == super::Target::Gpu && ty == "i64" {
        clamped = bin(b, "arith.minui", y, &width, ty);
        clamped.as_str()
    } else {
        y
    };
    // In range iff 0 <= y < w: one unsigned comparison covers negative counts too.
    let ok = cmp(b, "arith.cmpi", "ult", y, &width, ty);
    let safe = select(b, &ok, y, &z, ty);
    let signed = dt.is_signed_integer();
    if left {
        let s = bin(b, "arith.shli", x, &safe, ty);
        select(b, &ok, &s, &z, ty)
    } else if signed {
        let s = bin(b, "arith.shrsi", x, &safe, ty);
        let wm1 = int_const(b, w - 1, ty);
        let fill = bin(b, "arith.shrsi", x, &wm1, ty);
        select(b, &ok, &s, &fill, ty)
    } else {
        let s = bin(b, "arith.shrui", x, &safe, ty);
        select(b, &ok, &s, &z, ty)
    }
}

/// NumPy's `npy_logaddexp` on f64 values: x + log 2 when x == y (keeps ±inf), else
/// max(x, y) + log1p(exp(-|x - y|)); a NaN difference is returned as is (its sign survives, as
/// in NumPy).
///
/// Where the result is near 0 (max(x, y) in (-log 2, 0)) the sum cancels, and any error in
/// `exp` or `log1p` grows by the ratio of max(x, y) to the result: glibc's vector functions
/// (libmvec, within 4 ulps), which the loop vectoriser would call, put the result 16 to 128
/// ulps away from NumPy's. So the formula is a function of the module, `@kiln_logaddexp`,
/// called with `no_inline`: its `exp` and `log1p` are the scalar libm calls NumPy and the
/// reference evaluator make, and the result is theirs bit for bit (a vectorised loop calls it
/// once per lane).
///
/// `base2`: NumPy's `npy_logaddexp2` the same way (`@kiln_logaddexp2`): x + 1 when x == y, else
/// max(x, y) + log2(e)·log1p(2^-|x - y|).
fn logaddexp_base(b: &mut Builder, x: &str, y: &str, base2: bool) -> Result<String, Unsupported> {
    let sym = if base2 { "kiln_logaddexp2" } else { "kiln_logaddexp" };
    module_function(b, sym, &[x, y], "f64", |h, p| {
        let (hx, hy, t) = (p[0], p[1], "f64");
        let log_base = float_const(h, if base2 { 1.0 } else { std::f64::consts::LN_2 }, t);
        let zero = float_const(h, 0.0, t);
        let eq = cmp(h, "arith.cmpf", "oeq", hx, hy, t);
        let same = bin(h, "arith.addf", hx, &log_base, t);
        let d = bin(h, "arith.subf", hx, hy, t);
        let pos = cmp(h, "arith.cmpf", "ogt", &d, &zero, t);
        let max = select(h, &pos, hx, hy, t);
        let ad = native(h, "absf", &[&d], t);
        let nad = h.op(&format!("arith.negf {ad} : {t}"));
        let e = math(h, if base2 { "exp2" } else { "exp" }, &[&nad], t)?;
        let l = math(h, "log1p", &[&e], t)?;
        let l = if base2 {
            let log2e = float_const(h, std::f64::consts::LOG2_E, t);
            bin(h, "arith.mulf", &log2e, &l, t)
        } else {
            l
        };
        let r = bin(h, "arith.addf", &max, &l, t);
        let nan = cmp(h, "arith.cmpf", "uno", &d, &d, t);
        let r = select(h, &nan, &d, &r, t);
        Ok(select(h, &eq, &same, &r, t))
    })
}

/// `body(params)` as a function of the module, `@sym` (the arguments `args` and the result of
/// type `t`), called with `no_inline`: its math calls are the scalar libm calls the evaluator
/// makes (a vectorised loop calls the function once per lane, never glibc's vector functions)
/// and its code is in the module once however often it is used. Its declarations join the
/// module's.
pub(crate) fn module_function(
    b: &mut Builder,
    sym: &str,
    args: &[&str],
    t: &str,
    body: impl FnOnce(&mut Builder, &[&str]) -> Result<String, Unsupported>,
) -> Result<String, Unsupported> {
    let mut h = Builder::new("%params", b.target);
    h.math = b.math;
    let names: Vec<String> = (0..args.len()).map(|i| format!("%a{i}")).collect();
    let params: Vec<&str> = names.iter().map(String::as_str).collect();
    let r = body(&mut h, &params)?;
    h.stmt(&format!("return {r} : {t}"));
    let (entry, text, decls) = h.finish();
    // The helper's own declarations (libm) join the module's, once per symbol.
    for d in decls {
        let name = d
            .split('@')
            .nth(1)
            .and_then(|s| s.split('(').next())
            .expect("a declaration names its symbol");
        b.declare(name, d.clone());
    }
    let sig: Vec<String> = params.iter().map(|p| format!("{p}: {t}")).collect();
    b.declare(
        sym,
        format!("func.func private @{sym}({}) -> {t} {{\n{entry}{text}  }}", sig.join(", ")),
    );
    let tys = vec![t; args.len()].join(", ");
    Ok(b.op(&format!("func.call @{sym}({}) {{no_inline}} : ({tys}) -> {t}", args.join(", "))))
}

/// The integer type of a float working type's bits, its significand bits (stored), exponent
/// mask, and exponent bias.
fn float_layout(ty: &str) -> (&'static str, i128, i128, i128) {
    match ty {
        "f32" => ("i32", 23, 0xff, 127),
        _ => ("i64", 52, 0x7ff, 1023),
    }
}

/// C's `frexp` of `x` (f32 or f64): (m, e) with x = m·2^e, 0.5 <= |m| < 1, e as a float of
/// `ty`; ±0, ±inf and NaN give (x, 0). On the bits: a subnormal is scaled into the normal range
/// first; m is x with the exponent field of 0.5.
fn frexp(b: &mut Builder, x: &str, ty: &str) -> (String, String) {
    let (ity, mbits, emask, bias) = float_layout(ty);
    let scale_bits: i128 = if ty == "f32" { 25 } else { 54 };
    let zero = float_const(b, 0.0, ty);
    let inf = float_const(b, f64::INFINITY, ty);
    let tiny =
        float_const(b, if ty == "f32" { f32::MIN_POSITIVE as f64 } else { f64::MIN_POSITIVE }, ty);
    let scale = float_const(b, (scale_bits as f64).exp2(), ty);
    let ax = native(b, "absf", &[x], ty);
    let finite = cmp(b, "arith.cmpf", "olt", &ax, &inf, ty);
    let nonzero = cmp(b, "arith.cmpf", "one", &ax, &zero, ty);
    let regular = bin(b, "arith.andi", &finite, &nonzero, "i1");
    let sub = cmp(b, "arith.cmpf", "olt", &ax, &tiny, ty);
    let scaled = bin(b, "arith.mulf", x, &scale, ty);
    let xs = select(b, &sub, &scaled, x, ty);
    let bits = b.op(&format!("arith.bitcast {xs} : {ty} to {ity}"));
    let shift = int_const(b, mbits, ity);
    let mask = int_const(b, emask, ity);
    let field = bin(b, "arith.shrui", &bits, &shift, ity);
    let e = bin(b, "arith.andi", &field, &mask, ity);
    let clear = int_const(b, !(emask << mbits), ity);
    let half_exp = int_const(b, (bias - 1) << mbits, ity);
    let m = bin(b, "arith.andi", &bits, &clear, ity);
    let m = bin(b, "arith.ori", &m, &half_exp, ity);
    let m = b.op(&format!("arith.bitcast {m} : {ity} to {ty}"));
    let off = int_const(b, bias - 1, ity);
    let off_sub = int_const(b, bias - 1 + scale_bits, ity);
    let off = select(b, &sub, &off_sub, &off, ity);
    let e = bin(b, "arith.subi", &e, &off, ity);
    let e = b.op(&format!("arith.sitofp {e} : {ity} to {ty}"));
    let m = select(b, &regular, &m, x, ty);
    let e = select(b, &regular, &e, &zero, ty);
    (m, e)
}

/// C's `fmod` of floats (f32 or f64; float16/bfloat16 values in f32, exactly): LLVM's `frem`
/// (glibc's `fmod` on the host), libdevice's exact `__nv_fmod` on the GPU (NVPTX lowers `frem`
/// to x - y*trunc(x/y), inexact once |x/y| > 2^24 or 2^53); fmod(±inf, y) is NaN everywhere.
fn float_fmod(b: &mut Builder, x: &str, y: &str, ty: &str) -> String {
    let m = if b.math == MathLib::Libdevice {
        math(b, "fmod", &[x, y], ty).expect("libdevice has fmod")
    } else {
        bin(b, "arith.remf", x, y, ty)
    };
    let ax = native(b, "absf", &[x], ty);
    let inf = float_const(b, f64::INFINITY, ty);
    let x_inf = cmp(b, "arith.cmpf", "oeq", &ax, &inf, ty);
    let nan = float_const(b, f64::NAN, ty);
    select(b, &x_inf, &nan, &m, ty)
}

/// NumPy's integer `fmod`: the remainder of truncating division (the sign of x); 0 for a zero
/// divisor, and for a divisor of -1 (MIN % -1 is undefined in LLVM).
fn int_fmod(b: &mut Builder, x: &str, y: &str, ty: &str, signed: bool) -> String {
    let z = int_const(b, 0, ty);
    let one = int_const(b, 1, ty);
    let mut bad = cmp(b, "arith.cmpi", "eq", y, &z, ty);
    if signed {
        let m1 = int_const(b, -1, ty);
        let ym1 = cmp(b, "arith.cmpi", "eq", y, &m1, ty);
        bad = bin(b, "arith.ori", &bad, &ym1, "i1");
    }
    let safe = select(b, &bad, &one, y, ty);
    let r = bin(b, if signed { "arith.remsi" } else { "arith.remui" }, x, &safe, ty);
    select(b, &bad, &z, &r, ty)
}

/// x·2^n (f32 or f64), n a float holding an integer: truncated and clamped to ±100000 (past
/// every dtype's range), then musl's `scalbn` without branches: at most two exact steps of
/// 2^±(emax) toward the range, so that the last multiplication by a power of two rounds once
/// (a subnormal result) or overflows. A NaN n gives NaN (x + n).
fn ldexp(b: &mut Builder, x: &str, n: &str, ty: &str) -> String {
    let (ity, mbits, _, bias) = float_layout(ty);
    let i32t = "i32";
    let nan_n = cmp(b, "arith.cmpf", "uno", n, n, ty);
    let zero = float_const(b, 0.0, ty);
    let nn = select(b, &nan_n, &zero, n, ty);
    let lo = float_const(b, -100_000.0, ty);
    let hi = float_const(b, 100_000.0, ty);
    let below = cmp(b, "arith.cmpf", "olt", &nn, &lo, ty);
    let nn = select(b, &below, &lo, &nn, ty);
    let above = cmp(b, "arith.cmpf", "ogt", &nn, &hi, ty);
    let nn = select(b, &above, &hi, &nn, ty);
    let mut k = b.op(&format!("arith.fptosi {nn} : {ty} to {i32t}"));
    // emax = bias, emin = 1 - bias; a step down multiplies by 2^(emin + p - 1) (stays normal).
    let emax = bias;
    let emin = 1 - bias;
    let down = emin + mbits + 1; // -969 for f64, -102 for f32
    let up_c = float_const(b, (emax as f64).exp2(), ty);
    let down_c = float_const(b, (down as f64).exp2(), ty);
    let emax_i = int_const(b, emax, i32t);
    let emin_i = int_const(b, emin, i32t);
    let down_i = int_const(b, down, i32t);
    let mut y = x.to_string();
    // Up past emax, then down past emin: two steps at most each, then the clamp.
    for (pred, limit, scale, step, clamp) in [
        ("sgt", &emax_i, &up_c, &emax_i, "arith.minsi"),
        ("slt", &emin_i, &down_c, &down_i, "arith.maxsi"),
    ] {
        for _ in 0..2 {
            let c = cmp(b, "arith.cmpi", pred, &k, limit, i32t);
            let ys = bin(b, "arith.mulf", &y, scale, ty);
            y = select(b, &c, &ys, &y, ty);
            let ks = bin(b, "arith.subi", &k, step, i32t);
            k = select(b, &c, &ks, &k, i32t);
        }
        k = bin(b, clamp, &k, limit, i32t);
    }
    // 2^k from its bits: (k + bias) << mbits.
    let kw = if ity == i32t { k } else { b.op(&format!("arith.extsi {k} : {i32t} to {ity}")) };
    let bias_c = int_const(b, bias, ity);
    let biased = bin(b, "arith.addi", &kw, &bias_c, ity);
    let shift = int_const(b, mbits, ity);
    let bits = bin(b, "arith.shli", &biased, &shift, ity);
    let p = b.op(&format!("arith.bitcast {bits} : {ity} to {ty}"));
    let r = bin(b, "arith.mulf", &y, &p, ty);
    let nan = bin(b, "arith.addf", x, n, ty);
    select(b, &nan_n, &nan, &r, ty)
}

/// np.nextafter on the bits of `dt` (see the evaluator's `nextafter`): one step of the bits
/// toward y (up in magnitude where y is beyond x from zero), the smallest subnormal with y's
/// sign from ±0; x == y gives y (float16: x); NaN gives x + y (float16: NumPy's quiet NaN).
fn nextafter(b: &mut Builder, x: &str, y: &str, dt: DType) -> String {
    let ty = super::types::work_ty(dt).expect("a float dtype");
    let (xb, ity) = float_bits(b, x, dt);
    let (yb, _) = float_bits(b, y, dt);
    let width: i128 = ity[1..].parse().expect("an integer type");
    let one = int_const(b, 1, ity);
    let sign = int_const(b, 1 << (width - 1), ity);
    let zero = float_const(b, 0.0, ty);
    let lt = cmp(b, "arith.cmpf", "olt", x, y, ty);
    let pos = cmp(b, "arith.cmpf", "ogt", x, &zero, ty);
    let up = cmp(b, "arith.cmpi", "eq", &lt, &pos, "i1");
    let inc = bin(b, "arith.addi", &xb, &one, ity);
    let dec = bin(b, "arith.subi", &xb, &one, ity);
    let r = select(b, &up, &inc, &dec, ity);
    let ysign = bin(b, "arith.andi", &yb, &sign, ity);
    let tiny = bin(b, "arith.ori", &ysign, &one, ity);
    let xz = cmp(b, "arith.cmpf", "oeq", x, &zero, ty);
    let r = select(b, &xz, &tiny, &r, ity);
    let r = float_from_bits(b, &r, dt);
    let eq = cmp(b, "arith.cmpf", "oeq", x, y, ty);
    let r = select(b, &eq, if dt == DType::Float16 { x } else { y }, &r, ty);
    let nan = if dt == DType::Float16 {
        float_const(b, f64::NAN, ty)
    } else {
        bin(b, "arith.addf", x, y, ty)
    };
    let unordered = cmp(b, "arith.cmpf", "uno", x, y, ty);
    select(b, &unordered, &nan, &r, ty)
}
