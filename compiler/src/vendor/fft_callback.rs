//! An elementwise region read only by an FFT, as a cuFFT JIT load callback: CUDA C++ that
//! computes the region's value at the element cuFFT asks for, from the region's inputs, so the
//! FFT reads the region's inputs instead of a materialised intermediate (`fft(w * z)` reads `w`
//! and `z`). The executor compiles it (NVRTC `-dlto`), measures it against the kernel and the
//! plain FFT, and keeps the faster (`kiln_exec`'s FFT fusion).
//!
//! The callback's `offset` is the flat index of the element in the region's C-contiguous output
//! (the executor only uses it where the FFT reads that output from its start, in one call).
//! `callerInfo` points at a table of the region inputs' device addresses, in input order.
//!
//! What is accepted: every value float32, float64, complex64 or complex128; inputs of the
//! output's shape (read at `offset`) or of one element (read at 0); constants; broadcasts of
//! one element; and the ops of the tables below, written as kiln's GPU code computes them
//! (the same IEEE operations in the same order; NVRTC is given `-fmad=false` so no product is
//! contracted into an FMA). Anything else is refused with the reason.

use kiln_ir::{Attrs, DType, Graph, Literal, NodeId, OpKind};

use crate::fusion::{Region, RegionKind};

/// A generated load callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadCallback {
    /// The CUDA C++ source (self-contained: no header).
    pub source: String,
    /// The `__device__` function's name.
    pub name: &'static str,
    /// How many input addresses the caller-info table holds (the region's inputs).
    pub inputs: usize,
    /// The value's dtype (the FFT's input dtype).
    pub dtype: DType,
}

/// The callback's function name.
pub const LOAD_NAME: &str = "kiln_fft_load";

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

/// The helpers the complex ops use, for both precisions (a * b as (ac - bd, ad + bc), as kiln's
/// evaluator and GPU code compute it).
const PRELUDE: &str = "\
#define KILN_COMPLEX_OPS(C, make) \\
  __device__ __forceinline__ C c_add(C a, C b) { return make(a.x + b.x, a.y + b.y); } \\
  __device__ __forceinline__ C c_sub(C a, C b) { return make(a.x - b.x, a.y - b.y); } \\
  __device__ __forceinline__ C c_mul(C a, C b) { return make(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
KILN_COMPLEX_OPS(float2, make_float2)
KILN_COMPLEX_OPS(double2, make_double2)
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

/// The load callback computing `region`'s one output, or why it cannot be one.
pub fn load_callback(region: &Region) -> Result<LoadCallback, String> {
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
        let expr = if n.op == OpKind::Input {
            let Attrs::Input { index } = n.attrs else {
                return Err("an input without index".into());
            };
            let at = if numel == 1 {
                "0"
            } else if n.shape == out_node.shape {
                "offset"
            } else {
                return Err(format!("an input of shape {:?} beside {:?}", n.shape, out_node.shape));
            };
            format!("((const {t}*)p[{index}])[{at}]")
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
        } else if n.op == OpKind::Cast {
            cast(&arg(0), in_dtype(0), n.dtype).ok_or("a cast")?
        } else if n.op == OpKind::Neg {
            if n.dtype.is_complex() {
                format!("{{-{0}.x, -{0}.y}}", arg(0))
            } else {
                format!("-{}", arg(0))
            }
        } else if n.op == OpKind::Square && !n.dtype.is_complex() {
            format!("{0} * {0}", arg(0))
        } else if n.op == OpKind::Real || n.op == OpKind::Imag {
            format!("{}.{}", arg(0), if n.op == OpKind::Real { "x" } else { "y" })
        } else if n.op == OpKind::Conj {
            format!("{{{0}.x, -{0}.y}}", arg(0))
        } else if n.op == OpKind::MakeComplex {
            format!("{{{}, {}}}", arg(0), arg(1))
        } else if let Some(&(_, f32f, f64f)) =
            REAL_UNARY.iter().find(|r| r.0 == n.op).filter(|_| !n.dtype.is_complex())
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
    let t = ctype(out_node.dtype).expect("checked above");
    let source = format!(
        "{PRELUDE}\n__device__ {t} {LOAD_NAME}(void *dataIn, unsigned long long offset, void *callerInfo, void *sharedPtr)\n{{\n  const unsigned long long *p = (const unsigned long long *)callerInfo;\n{}\n  return {};\n}}\n",
        lines.join("\n"),
        v(*out)
    );
    Ok(LoadCallback { source, name: LOAD_NAME, inputs: body.num_inputs(), dtype: out_node.dtype })
}

/// NVRTC's options for a generated callback: no FMA contraction, IEEE division and square root.
pub const NVRTC_OPTIONS: [&str; 4] =
    ["-fmad=false", "-prec-div=true", "-prec-sqrt=true", "--std=c++17"];
