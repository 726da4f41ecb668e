//! An elementwise region next to an FFT, as a cuFFT JIT callback: CUDA C++ computing the
//! region's value at the element cuFFT reads or writes, so no intermediate is materialised.
//! - A **load callback** ([`load_callback`]): the region is read only by the FFT; the callback
//!   computes the FFT's input element from the region's inputs (`fft(w * z)` reads `w` and `z`).
//! - A **store callback** ([`store_callback`]): the region is the only reader of the FFT's
//!   output; the callback gets each output element (`element`), computes the region's value from
//!   it and the region's other inputs, and writes the region's output (`abs(fft(x))` writes the
//!   magnitudes; the transform's own output is never written). The norm's factor, which the
//!   executor otherwise applies to the output after the transform (a cuBLAS scale), is applied
//!   to `element` first, as that scale computes it (one product per part).
//!
//! The executor compiles it (NVRTC `-dlto`), measures it against the kernel and the plain FFT,
//! and keeps the faster (`kiln_exec`'s FFT fusion); [`super::fft_callback_sites`] finds where in
//! a plan a region may be one.
//!
//! The callback's `offset` is the flat index of the element in the region's C-contiguous output
//! (the executor only uses it where the FFT reads its operand, or writes its output, from the
//! start in one call). `callerInfo` points at a table of the region inputs' device addresses, in
//! input order, then (store) the region output's.
//!
//! What is accepted: every value float32, float64, complex64 or complex128; inputs of the
//! output's shape (read at `offset`) or of one element (read at 0); constants; broadcasts of
//! one element; and the ops of the tables below, written as kiln's GPU code computes them
//! (`kiln_compiler::codegen`'s complex.rs: the same IEEE operations in the same order, complex64
//! parts computed in double and rounded to float after each op, `abs` of a complex value as
//! libdevice's double `hypot`; NVRTC is given `-fmad=false` so no product is contracted into an
//! FMA). Anything else is refused with the reason.

use kiln_ir::{Attrs, DType, Graph, Literal, NodeId, OpKind};

use crate::fusion::{Region, RegionKind};

/// Which side of the transform a callback is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// Computes each input element cuFFT reads.
    Load,
    /// Takes each output element cuFFT computes.
    Store,
}

impl Side {
    /// `load` / `store`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Load => "load",
            Side::Store => "store",
        }
    }
}

/// A generated callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Callback {
    pub side: Side,
    /// The CUDA C++ source (self-contained: no header).
    pub source: String,
    /// The `__device__` function's name.
    pub name: &'static str,
    /// How many input addresses the caller-info table holds (the region's inputs); a store
    /// callback's table holds the output's address after them.
    pub inputs: usize,
    /// The element's dtype: the FFT's input (load), or its output (store).
    pub dtype: DType,
}

impl Callback {
    /// Addresses in the caller-info table.
    pub fn table_len(&self) -> usize {
        self.inputs + usize::from(self.side == Side::Store)
    }
}

/// A generated load callback (the name it had before store callbacks).
pub type LoadCallback = Callback;

/// The load callback's function name.
pub const LOAD_NAME: &str = "kiln_fft_load";
/// The store callback's function name.
pub const STORE_NAME: &str = "kiln_fft_store";

/// Real functions of one argument: (op, float32 function, float64 function).
const REAL_UNARY: &[(OpKind, &str, &str)] = &[
    (OpKind::Sqrt, "sqrtf", "sqrt"),
    (OpKind::Exp, "expf", "exp"),
    (OpKind::Log, "logf", "log"),
    (OpKind::Sin, "sinf", "sin"),
    (OpKind::Cos, "cosf", "cos"),
    (OpKind::Abs, "fabsf", "fabs"),
];

/// Binary ops: (op, real infix operator, complex helper or "" where complex is refused).
const BINARY: &[(OpKind, &str, &str)] = &[
    (OpKind::Add, "+", "c_add"),
    (OpKind::Sub, "-", "c_sub"),
    (OpKind::Mul, "*", "c_mul"),
    (OpKind::Div, "/", ""),
];

fn ctype(d: DType) -> Option<&'static str> {
    match d {
        DType::Float32 => Some("float"),
        DType::Float64 => Some("double"),
        DType::Complex64 => Some("float2"),
        DType::Complex128 => Some("double2"),
        _ => None,
    }
}

/// The helpers the complex ops use, for both precisions, computed as kiln's GPU code computes
/// them: parts in double (a * b as (ac - bd, ad + bc)), complex64's rounded to float after
/// the op; `abs` as double `hypot`.
const PRELUDE: &str = "\
#define KILN_COMPLEX_OPS(C, R, make) \\
  __device__ __forceinline__ C c_add(C a, C b) { return make((R)((double)a.x + (double)b.x), (R)((double)a.y + (double)b.y)); } \\
  __device__ __forceinline__ C c_sub(C a, C b) { return make((R)((double)a.x - (double)b.x), (R)((double)a.y - (double)b.y)); } \\
  __device__ __forceinline__ C c_mul(C a, C b) { \\
    double ax = a.x, ay = a.y, bx = b.x, by = b.y; \\
    return make((R)(ax * bx - ay * by), (R)(ax * by + ay * bx)); } \\
  __device__ __forceinline__ R c_abs(C a) { return (R)hypot((double)a.x, (double)a.y); }
KILN_COMPLEX_OPS(float2, float, make_float2)
KILN_COMPLEX_OPS(double2, double, make_double2)
";

/// A C++ literal of exactly `value` in `d` (floats by their bits).
fn literal(value: &Literal, d: DType) -> Option<String> {
    let real = |bits: u64, d: DType| match d {
        DType::Float32 | DType::Complex64 => {
            format!("((float)__longlong_as_double((long long){bits:#x}ULL))")
        }
        _ => format!("__longlong_as_double((long long){bits:#x}ULL)"),
    };
    match (*value, d) {
        (Literal::Float(b), DType::Float32 | DType::Float64) => Some(real(b, d)),
        (Literal::Complex(re, im), DType::Complex64) => {
            Some(format!("make_float2({}, {})", real(re, d), real(im, d)))
        }
        (Literal::Complex(re, im), DType::Complex128) => {
            Some(format!("make_double2({}, {})", real(re, d), real(im, d)))
        }
        _ => None,
    }
}

/// The expression of a cast of `x` (of `from`) to `to`.
fn cast(x: &str, from: DType, to: DType) -> Option<String> {
    let (fc, tc) = (from.is_complex(), to.is_complex());
    let make = if to == DType::Complex64 { "make_float2" } else { "make_double2" };
    let part = if tc {
        if to == DType::Complex64 {
            "float"
        } else {
            "double"
        }
    } else {
        ""
    };
    Some(match (fc, tc) {
        (false, false) => format!("({})({x})", ctype(to)?),
        (false, true) => format!("{make}(({part})({x}), ({part})0)"),
        (true, true) => format!("{make}(({part})({x}).x, ({part})({x}).y)"),
        // NumPy's complex-to-real cast keeps the real part.
        (true, false) => format!("({})({x}).x", ctype(to)?),
    })
}

/// `element` of `d` multiplied by the norm's factor `scale` as the executor's cuBLAS scale
/// does it (`cublas{S,D,Cs,Zd}scal`: each part times the factor in the part's precision).
fn scaled(d: DType, scale: f64) -> Option<String> {
    if scale == 1.0 {
        return Some("element".into());
    }
    let s = match d {
        DType::Float32 | DType::Complex64 => {
            literal(&Literal::Float((scale as f32 as f64).to_bits()), DType::Float32)?
        }
        _ => literal(&Literal::Float(scale.to_bits()), DType::Float64)?,
    };
    Some(match d {
        DType::Float32 | DType::Float64 => format!("element * {s}"),
        DType::Complex64 => format!("make_float2(element.x * {s}, element.y * {s})"),
        DType::Complex128 => format!("make_double2(element.x * {s}, element.y * {s})"),
        _ => return None,
    })
}

/// The body lines computing `region`'s one output (`v<id>` values), its node; the input of
/// index `element` (with its dtype), if any, is the callback's element instead of a read.
fn body_lines(
    region: &Region,
    element: Option<(u32, DType, &str)>,
) -> Result<(Vec<String>, NodeId), String> {
    if region.kind != RegionKind::Elementwise {
        return Err(format!("a {} region", region.kind.name()));
    }
    let body: &Graph = &region.body;
    let [out] = body.outputs() else {
        return Err(format!("{} outputs", body.outputs().len()));
    };
    let out_node = body.node(*out);
    let out_numel: usize = out_node.shape.iter().product();
    let mut lines = Vec::new();
    let v = |id: NodeId| format!("v{}", id.0);
    for (i, n) in body.nodes().iter().enumerate() {
        let id = NodeId(i as u32);
        let t = ctype(n.dtype).ok_or_else(|| format!("a value of {}", n.dtype))?;
        let numel: usize = n.shape.iter().product();
        let arg = |k: usize| v(n.inputs[k]);
        let in_dtype = |k: usize| body.node(n.inputs[k]).dtype;
        let complex_in = n.inputs.first().is_some_and(|&a| body.node(a).dtype.is_complex());
        let expr = if n.op == OpKind::Input {
            let Attrs::Input { index } = n.attrs else {
                return Err("an input without index".into());
            };
            match element {
                Some((e, d, expr)) if e == index => {
                    if n.shape != out_node.shape || n.dtype != d {
                        return Err(format!(
                            "the FFT's output read as {} {:?} beside {:?}",
                            n.dtype, n.shape, out_node.shape
                        ));
                    }
                    expr.to_string()
                }
                _ => {
                    let at = if numel == 1 {
                        "0"
                    } else if n.shape == out_node.shape {
                        "offset"
                    } else {
                        return Err(format!(
                            "an input of shape {:?} beside {:?}",
                            n.shape, out_node.shape
                        ));
                    };
                    format!("((const {t}*)p[{index}])[{at}]")
                }
            }
        } else if n.op == OpKind::Const {
            let Attrs::Const { value } = &n.attrs else {
                return Err("a const without value".into());
            };
            literal(value, n.dtype).ok_or_else(|| format!("a constant of {}", n.dtype))?
        } else if matches!(n.op, OpKind::BroadcastTo | OpKind::Reshape) {
            let from: usize = body.node(n.inputs[0]).shape.iter().product();
            if from != 1 && !(n.op == OpKind::Reshape && numel == out_numel && from == numel) {
                return Err(format!("a {} of {from} elements", n.op.name()));
            }
            arg(0)
        } else if n.op == OpKind::Label {
            arg(0)
        } else if n.op == OpKind::Cast {
            cast(&arg(0), in_dtype(0), n.dtype).ok_or("a cast")?
        } else if n.op == OpKind::Neg {
            if n.dtype.is_complex() {
                format!("{{-{0}.x, -{0}.y}}", arg(0))
            } else {
                format!("-{}", arg(0))
            }
        } else if n.op == OpKind::Square {
            if n.dtype.is_complex() {
                format!("c_mul({0}, {0})", arg(0))
            } else {
                format!("{0} * {0}", arg(0))
            }
        } else if n.op == OpKind::Real || n.op == OpKind::Imag {
            format!("{}.{}", arg(0), if n.op == OpKind::Real { "x" } else { "y" })
        } else if n.op == OpKind::Conj {
            format!("{{{0}.x, -{0}.y}}", arg(0))
        } else if n.op == OpKind::MakeComplex {
            format!("{{{}, {}}}", arg(0), arg(1))
        } else if n.op == OpKind::Abs && complex_in {
            format!("c_abs({})", arg(0))
        } else if let Some(&(_, f32f, f64f)) =
            REAL_UNARY.iter().find(|r| r.0 == n.op).filter(|_| !complex_in)
        {
            format!("{}({})", if n.dtype == DType::Float32 { f32f } else { f64f }, arg(0))
        } else if let Some(&(_, infix, helper)) = BINARY.iter().find(|r| r.0 == n.op) {
            match (n.dtype.is_complex(), helper) {
                (false, _) => format!("{} {infix} {}", arg(0), arg(1)),
                (true, "") => return Err(format!("complex {}", n.op.name())),
                (true, h) => format!("{h}({}, {})", arg(0), arg(1)),
            }
        } else {
            return Err(format!("the op {}", n.op.name()));
        };
        lines.push(format!("  const {t} {} = {expr};", v(id)));
    }
    Ok((lines, *out))
}

/// The load callback computing `region`'s one output, or why it cannot be one.
pub fn load_callback(region: &Region) -> Result<Callback, String> {
    let (lines, out) = body_lines(region, None)?;
    let dtype = region.body.node(out).dtype;
    let t = ctype(dtype).expect("checked by body_lines");
    let source = format!(
        "{PRELUDE}\n__device__ {t} {LOAD_NAME}(void *dataIn, unsigned long long offset, void *callerInfo, void *sharedPtr)\n{{\n  const unsigned long long *p = (const unsigned long long *)callerInfo;\n{}\n  return v{};\n}}\n",
        lines.join("\n"),
        out.0
    );
    let inputs = region.body.num_inputs();
    Ok(Callback { side: Side::Load, source, name: LOAD_NAME, inputs, dtype })
}

/// The store callback of an FFT whose output (elements of `dtype`, multiplied by the norm's
/// factor `scale`) `region` reads as its input `element_input`: it computes the region's one
/// output from the element and the region's other inputs and writes it at `offset` (the
/// table's last address). Or why it cannot be one.
pub fn store_callback(
    region: &Region,
    element_input: usize,
    dtype: DType,
    scale: f64,
) -> Result<Callback, String> {
    let e = ctype(dtype).ok_or_else(|| format!("an FFT output of {dtype}"))?;
    let element = scaled(dtype, scale).ok_or_else(|| format!("a scale of {dtype}"))?;
    let index = u32::try_from(element_input).map_err(|_| "an input index".to_string())?;
    let (lines, out) = body_lines(region, Some((index, dtype, &element)))?;
    let out_dtype = region.body.node(out).dtype;
    let t = ctype(out_dtype).expect("checked by body_lines");
    let inputs = region.body.num_inputs();
    let source = format!(
        "{PRELUDE}\n__device__ void {STORE_NAME}(void *dataOut, unsigned long long offset, {e} element, void *callerInfo, void *sharedPtr)\n{{\n  const unsigned long long *p = (const unsigned long long *)callerInfo;\n{}\n  (({t}*)p[{inputs}])[offset] = v{};\n}}\n",
        lines.join("\n"),
        out.0
    );
    Ok(Callback { side: Side::Store, source, name: STORE_NAME, inputs, dtype })
}

/// NVRTC's options for a generated callback: no FMA contraction, IEEE division and square root.
pub const NVRTC_OPTIONS: [&str; 4] =
    ["-fmad=false", "-prec-div=true", "-prec-sqrt=true", "--std=c++17"];
