//! The reference evaluator: a plain host interpreter of the graph with NumPy's semantics. It is
//! the oracle every later stage is checked against: simple and obviously correct, not fast.
//!
//! Every intermediate is a `Tensor`: a dtype, a shape and its elements in C order as
//! [`Value`]s in the canonical form of the dtype (see [`Value`]). Nodes are evaluated in
//! order (the graph is topological); nodes that no output depends on are skipped, and each
//! intermediate is dropped after its last use. Every node is type-checked again
//! ([`crate::infer::infer`]) before it is evaluated, so the op functions can rely on their
//! operands' dtypes and shapes.
//!
//! Semantics that differ from NumPy (where NumPy errors or leaves the result undefined):
//! - integer `power` with a negative exponent (an error in NumPy) gives 1/x**|y| truncated;
//! - integer `reciprocal` of 0 (undefined in NumPy; x86 gives the dtype's minimum) gives 0;
//! - float → integer casts of NaN, ±inf and out-of-range values reproduce NumPy on x86-64
//!   ([`float_to_int`]);
//! - float16/bfloat16/float32 ops compute in f64 and round once, so they are correctly rounded
//!   where NumPy's float32 loops (SIMD, libm's float functions) may be off by an ulp; likewise
//!   complex64 computes in `Complex<f64>`. Float sums are compensated (nearly exact) where
//!   NumPy's are pairwise; matmul and the FFTs accumulate in f64 (the FFTs with the evaluator's
//!   own transform, not the host library's, so the two check each other).
//! - complex functions are accurate (Kahan's formulas for the inverse trigonometric and hyperbolic
//!   ones, `cmath`) with C99 Annex G's special values, as glibc's that NumPy uses on Linux;
//!   complex `log1p` is accurate near 0 where NumPy's formula is not.

mod cmath;
mod decompose;
mod elementwise;
mod linalg;
pub mod random;
mod reduce;
pub mod sort;
pub mod special;
mod value;
mod vendor;
mod view;

pub use value::{cast, float_to_int, int_to_float, Value};

use crate::dtype::DType;
use crate::error::{IrError, Result};
use crate::graph::{Attrs, Graph, Node};
use crate::host::HostArray;
use crate::infer::infer;
use crate::ops::OpKind;
use crate::shape::{c_strides, numel, Shape};

/// An intermediate array: its elements in C order, in the canonical form of `dtype`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Tensor {
    pub dtype: DType,
    pub shape: Shape,
    pub vals: Vec<Value>,
}

impl Tensor {
    fn from_host(a: &HostArray) -> Tensor {
        Tensor { dtype: a.dtype(), shape: a.shape().into(), vals: value::load(a.data()) }
    }

    fn to_host(&self) -> HostArray {
        HostArray::new(&self.shape, value::store(self.dtype, &self.vals))
            .expect("a tensor's length matches its shape")
    }
}

/// Computes the graph's outputs, in order, as C-contiguous arrays of each output node's dtype and
/// shape. `inputs[k]` is the array of `input {index=k}`; it must have that node's dtype and shape.
///
/// Errors ([`IrError::Eval`], naming the node): a missing or mistyped input, a node whose dtype or
/// shape does not follow from its op's rules, a custom kernel (it has no reference body), and the
/// max/min/argmax/argmin of an empty axis.
pub fn evaluate(g: &Graph, inputs: &[&HostArray]) -> Result<Vec<HostArray>> {
    let nodes = g.nodes();
    // Liveness: only nodes some output depends on are evaluated, and only their uses count.
    let mut live = vec![false; nodes.len()];
    for o in g.outputs() {
        live[o.index()] = true;
    }
    for i in (0..nodes.len()).rev() {
        if live[i] {
            for inp in &nodes[i].inputs {
                live[inp.index()] = true;
            }
        }
    }
    let mut uses = vec![0usize; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if live[i] {
            for inp in &n.inputs {
                uses[inp.index()] += 1;
            }
        }
    }
    for o in g.outputs() {
        uses[o.index()] += 1;
    }

    let mut vals: Vec<Option<Tensor>> = vec![None; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        let args: Vec<&Tensor> = node
            .inputs
            .iter()
            .map(|inp| {
                vals.get(inp.index()).and_then(Option::as_ref).ok_or_else(|| {
                    eval_err(i, node.op, format!("operand {inp} is not computed before its use"))
                })
            })
            .collect::<Result<_>>()?;
        let t = eval_node(i, node, &args, inputs)?;
        debug_assert!(
            t.dtype == node.dtype && t.shape == node.shape && t.vals.len() == numel(&t.shape),
            "node %{i}"
        );
        drop(args);
        for inp in &node.inputs {
            let k = inp.index();
            uses[k] -= 1;
            if uses[k] == 0 {
                vals[k] = None;
            }
        }
        vals[i] = Some(t);
    }
    Ok(g.outputs()
        .iter()
        .map(|o| vals[o.index()].as_ref().expect("outputs stay live").to_host())
        .collect())
}

fn eval_err(node: usize, op: OpKind, message: impl Into<String>) -> IrError {
    IrError::Eval { node, op: op.name().into(), message: message.into() }
}

/// Checks that a non-leaf node's dtype and shape follow from its operands by the op's rules.
fn check_types(i: usize, node: &Node, args: &[&Tensor]) -> Result<()> {
    let types: Vec<(DType, &[usize])> =
        args.iter().map(|a| (a.dtype, a.shape.as_slice())).collect();
    let (dtype, shape) =
        infer(node.op, &node.attrs, &types).map_err(|e| eval_err(i, node.op, e.to_string()))?;
    if dtype != node.dtype || shape != node.shape {
        return Err(eval_err(
            i,
            node.op,
            format!(
                "node declares {} {:?} but its operands give {} {:?}",
                node.dtype, node.shape, dtype, shape
            ),
        ));
    }
    Ok(())
}

type Unary = fn(DType, Value) -> Value;
type Binary = fn(DType, Value, Value) -> Value;

/// An elementwise op of one operand: `f` on each element, converted to the node's dtype.
fn map1(node: &Node, x: &Tensor, f: Unary) -> Tensor {
    let (dt, out) = (x.dtype, node.dtype);
    Tensor {
        dtype: out,
        shape: node.shape.clone(),
        vals: x.vals.iter().map(|&v| cast(f(dt, v), out)).collect(),
    }
}

/// An elementwise op of two operands of one dtype and shape.
fn map2(node: &Node, x: &Tensor, y: &Tensor, f: Binary) -> Tensor {
    let (dt, out) = (x.dtype, node.dtype);
    let vals = x.vals.iter().zip(&y.vals).map(|(&a, &b)| cast(f(dt, a, b), out)).collect();
    Tensor { dtype: out, shape: node.shape.clone(), vals }
}

fn eval_node(i: usize, node: &Node, args: &[&Tensor], inputs: &[&HostArray]) -> Result<Tensor> {
    use elementwise as ew;
    use OpKind::*;
    let err = |message: String| eval_err(i, node.op, message);
    if !node.op.is_leaf() && node.op != CustomKernel {
        check_types(i, node, args)?;
    }
    let shape = || node.shape.clone();
    let reduce_attrs = || match &node.attrs {
        Attrs::Reduce { axes, .. } => axes.as_slice(),
        _ => unreachable!("checked by infer"),
    };
    let axes_attr = || match &node.attrs {
        Attrs::Axes { axes } => axes.as_slice(),
        _ => unreachable!("checked by infer"),
    };
    let axis_attr = || match &node.attrs {
        Attrs::Axis { axis } => *axis,
        _ => unreachable!("checked by infer"),
    };
    let un = |f: Unary| -> Result<Tensor> { Ok(map1(node, args[0], f)) };
    let bin = |f: Binary| -> Result<Tensor> { Ok(map2(node, args[0], args[1], f)) };
    match node.op {
        // ---- leaves
        Input => {
            let Attrs::Input { index } = node.attrs else {
                return Err(err(format!("input with attributes {:?}", node.attrs)));
            };
            let a = inputs
                .get(index as usize)
                .ok_or_else(|| err(format!("input {index} not given ({} inputs)", inputs.len())))?;
            if a.dtype() != node.dtype || a.shape() != node.shape.as_slice() {
                return Err(err(format!(
                    "input {index} is {} {:?}, the graph expects {} {:?}",
                    a.dtype(),
                    a.shape(),
                    node.dtype,
                    node.shape
                )));
            }
            Ok(Tensor::from_host(a))
        }
        Const => {
            let Attrs::Const { value } = node.attrs else {
                return Err(err(format!("const with attributes {:?}", node.attrs)));
            };
            if !node.shape.is_empty() || !value.fits(node.dtype) {
                return Err(err(format!("const {value:?} is not a rank-0 {}", node.dtype)));
            }
            Ok(Tensor {
                dtype: node.dtype,
                shape: shape(),
                vals: vec![Value::from_literal(value, node.dtype)],
            })
        }
        Iota => {
            let Attrs::Iota { axis } = node.attrs else {
                return Err(err(format!("iota with attributes {:?}", node.attrs)));
            };
            if axis >= node.shape.len() {
                return Err(err(format!("iota axis {axis} for shape {:?}", node.shape)));
            }
            let (stride, extent) = (c_strides(&node.shape)[axis] as usize, node.shape[axis]);
            let vals = (0..numel(&node.shape))
                .map(|f| cast(Value::Int(((f / stride) % extent) as i64), node.dtype))
                .collect();
            Ok(Tensor { dtype: node.dtype, shape: shape(), vals })
        }

        // ---- elementwise, one operand
        Neg => un(ew::neg),
        Abs => un(ew::abs),
        Sign => un(ew::sign),
        Sqrt => un(ew::sqrt),
        Cbrt => un(ew::cbrt),
        Square => un(ew::square),
        Reciprocal => un(ew::reciprocal),
        Exp => un(ew::exp),
        Exp2 => un(ew::exp2),
        Expm1 => un(ew::expm1),
        Log => un(ew::log),
        Log2 => un(ew::log2),
        Log10 => un(ew::log10),
        Log1p => un(ew::log1p),
        Sin => un(ew::sin),
        Cos => un(ew::cos),
        Tan => un(ew::tan),
        Arcsin => un(ew::arcsin),
        Arccos => un(ew::arccos),
        Arctan => un(ew::arctan),
        Sinh => un(ew::sinh),
        Cosh => un(ew::cosh),
        Tanh => un(ew::tanh),
        Arcsinh => un(ew::arcsinh),
        Arccosh => un(ew::arccosh),
        Arctanh => un(ew::arctanh),
        Floor => un(ew::floor),
        Ceil => un(ew::ceil),
        Trunc => un(ew::trunc),
        Rint => un(ew::rint),
        Erf => un(ew::erf),
        Erfc => un(special::erfc),
        Erfinv => un(special::erfinv),
        Gammaln => un(special::gammaln),
        Digamma => un(special::digamma),
        FrexpMantissa => un(ew::frexp_mantissa),
        FrexpExponent => un(ew::frexp_exponent),
        IsNan => un(ew::isnan),
        IsInf => un(ew::isinf),
        IsFinite => un(ew::isfinite),
        LogicalNot => un(ew::logical_not),
        Invert => un(ew::invert),
        Real => un(ew::real_part),
        Imag => un(ew::imag_part),
        Conj => un(ew::conjugate),
        Cast | Label => un(ew::identity),
        Bitcast => Ok(value::bitcast_tensor(args[0], node)),

        // ---- elementwise, two operands
        Add => bin(ew::add),
        Sub => bin(ew::subtract),
        Mul => bin(ew::multiply),
        Div => bin(ew::divide),
        FloorDiv => bin(ew::floor_divide),
        Remainder => bin(ew::remainder),
        Power => bin(ew::power),
        Maximum => bin(ew::maximum),
        Minimum => bin(ew::minimum),
        Fmax => bin(ew::fmax),
        Fmin => bin(ew::fmin),
        Arctan2 => bin(ew::arctan2),
        Hypot => bin(ew::hypot),
        LogAddExp => bin(ew::logaddexp),
        CopySign => bin(ew::copysign),
        Fmod => bin(ew::fmod),
        LogAddExp2 => bin(ew::logaddexp2),
        Ldexp => bin(ew::ldexp),
        NextAfter => bin(ew::nextafter),
        Gcd => bin(special::gcd),
        Lcm => bin(special::lcm),
        MakeComplex => bin(ew::make_complex),
        Eq => bin(ew::equal),
        Ne => bin(ew::not_equal),
        Lt => bin(ew::less),
        Le => bin(ew::less_equal),
        Gt => bin(ew::greater),
        Ge => bin(ew::greater_equal),
        LogicalAnd => bin(ew::logical_and),
        LogicalOr => bin(ew::logical_or),
        LogicalXor => bin(ew::logical_xor),
        BitwiseAnd => bin(ew::bitwise_and),
        BitwiseOr => bin(ew::bitwise_or),
        BitwiseXor => bin(ew::bitwise_xor),
        LeftShift => bin(ew::left_shift),
        RightShift => bin(ew::right_shift),
        Philox => bin(random::philox),
        PhiloxHigh => bin(random::philox_high),
        PhiloxBits => {
            let Attrs::Philox { per_call, words } = node.attrs else {
                unreachable!("philox_bits' attributes are Philox (verified)")
            };
            let (x, y) = (args[0], args[1]);
            let vals = x.vals.iter().zip(&y.vals).enumerate().map(|(i, (&c, &k))| {
                Value::UInt(random::philox_bits(i as u64, c, k, per_call, words))
            });
            Ok(Tensor { dtype: node.dtype, shape: shape(), vals: vals.collect() })
        }
        BoxMullerCos => un(random::box_muller_cos),
        BoxMullerSin => un(random::box_muller_sin),
        Where => {
            let (c, x, y) = (args[0], args[1], args[2]);
            let vals =
                c.vals
                    .iter()
                    .zip(x.vals.iter().zip(&y.vals))
                    .map(|(c, (&a, &b))| if c.truthy() { a } else { b });
            Ok(Tensor { dtype: node.dtype, shape: shape(), vals: vals.collect() })
        }

        // ---- reductions
        Sum => Ok(reduce::sum(args[0], reduce_attrs(), node.dtype, shape()).cast_to(node.dtype)),
        Prod => Ok(reduce::prod(args[0], reduce_attrs(), node.dtype, shape()).cast_to(node.dtype)),
        Max | Min => reduce::extreme(args[0], reduce_attrs(), node.dtype, shape(), node.op == Max)
            .map(|t| t.cast_to(node.dtype))
            .ok_or_else(|| err("zero-size array to a reduction which has no identity".into())),
        ArgMax | ArgMin => reduce::arg_extreme(args[0], reduce_attrs(), shape(), node.op == ArgMax)
            .ok_or_else(|| err("attempt to get argmax/argmin of an empty sequence".into())),
        All => Ok(reduce::all(args[0], reduce_attrs(), shape())),
        Any => Ok(reduce::any(args[0], reduce_attrs(), shape())),

        // ---- scans and sorts
        Cumsum | Cumprod | Cummax | Cummin => {
            Ok(scan(args[0], node, axis_attr(), combining(node.op)))
        }
        Compact | CompactCount => Ok(sort::compact(args, node, axis_attr())),
        Sort | Argsort => Ok(sort::sort(args[0], node, axis_attr())),
        SortTake => Ok(sort::sort_take(args[0], args[1], node, axis_attr())),
        Argtopk => Ok(sort::argtopk(args[0], node)),

        // ---- gathers
        Take => Ok(take(args[0], args[1], node)),

        // ---- scatters
        ScatterAdd | ScatterMax | ScatterMin => Ok(scatter(args, node, Some(combining(node.op)))),
        Scatter => Ok(scatter(args, node, None)),

        // ---- views
        Reshape | ExpandDims | Squeeze => Ok(view::reshape(args[0], &node.shape)),
        Permute => match &node.attrs {
            Attrs::Perm { perm } => Ok(view::permute(args[0], perm)),
            _ => unreachable!("checked by infer"),
        },
        BroadcastTo => Ok(view::broadcast_to(args[0], &node.shape)),
        Slice => match &node.attrs {
            Attrs::Slice { dims } => Ok(view::slice(args[0], dims)),
            _ => unreachable!("checked by infer"),
        },
        Flip => Ok(view::flip(args[0], axes_attr())),

        // ---- copies
        Concatenate => Ok(view::concatenate(args, axis_attr(), shape())),
        Stack => Ok(view::stack(args, axis_attr(), shape())),
        Contiguous => Ok(args[0].clone()),

        // ---- vendor
        MatMul => Ok(vendor::matmul(args[0], args[1], node.dtype, shape()).cast_to(node.dtype)),
        Fft => match &node.attrs {
            Attrs::Fft { axes, inverse, norm } => {
                Ok(vendor::fft(args[0], axes, *inverse, *norm, node.dtype))
            }
            _ => unreachable!("checked by infer"),
        },
        Rfft => match &node.attrs {
            Attrs::RealFft { axes, norm, .. } => {
                Ok(vendor::rfft(args[0], axes, *norm, node.dtype, shape()))
            }
            _ => unreachable!("checked by infer"),
        },
        Irfft => match &node.attrs {
            Attrs::RealFft { axes, n, norm } => {
                Ok(vendor::irfft(args[0], axes, *n, *norm, node.dtype, shape()))
            }
            _ => unreachable!("checked by infer"),
        },

        Cholesky | Solve | Inv | Det | Slogdet | Qr | Svd | Eigh => decompose::apply(node, args),

        // ---- custom
        CustomKernel => {
            let name = match &node.attrs {
                Attrs::Custom { name } => name.as_str(),
                _ => "?",
            };
            Err(err(format!("custom kernel {name} has no reference body")))
        }
    }
}

/// `np.take(a.ravel(), idx, mode='wrap')`: position `k` reads element `k mod n` of `a` in C
/// order (Python's modulo: -1 is the last element).
fn take(a: &Tensor, idx: &Tensor, node: &Node) -> Tensor {
    let n = a.vals.len() as i64;
    let vals = idx
        .vals
        .iter()
        .map(|v| match *v {
            Value::Int(k) => a.vals[k.rem_euclid(n) as usize],
            other => unreachable!("take's positions are int64 (checked by infer), got {other:?}"),
        })
        .collect();
    Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }
}

/// `b = a.copy(); np.<combine>.at(b, idx, values)` along axis 0: position `i` (in C order of
/// `idx`) combines row `i` of `values` into row `idx[i] mod rows` of `b` (Python's modulo: -1
/// is the last row), one position after another, each result rounded to the dtype; `None`
/// replaces the row (the last position writing it wins).
/// The evaluator's function of the elementwise op scan or scatter `op` combines with
/// ([`OpKind::combine`]).
fn combining(op: OpKind) -> Binary {
    match op.combine() {
        Some(OpKind::Add) => elementwise::add,
        Some(OpKind::Mul) => elementwise::multiply,
        Some(OpKind::Maximum) => elementwise::maximum,
        Some(OpKind::Minimum) => elementwise::minimum,
        other => unreachable!("{} combines with {other:?}", op.name()),
    }
}

/// A scan along `axis`: each element converted to the result dtype, then combined in order
/// with the running value of its row, each step rounded to the result dtype (NumPy's
/// `ufunc.accumulate`).
fn scan(x: &Tensor, node: &Node, axis: usize, combine: Binary) -> Tensor {
    let n = x.shape[axis];
    let inner: usize = x.shape[axis + 1..].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let mut vals: Vec<Value> = x.vals.iter().map(|&v| cast(v, node.dtype)).collect();
    for o in 0..outer {
        for i in 0..inner {
            let base = o * n * inner + i;
            for k in 1..n {
                let (prev, at) = (base + (k - 1) * inner, base + k * inner);
                vals[at] = cast(combine(node.dtype, vals[prev], vals[at]), node.dtype);
            }
        }
    }
    Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }
}

fn scatter(args: &[&Tensor], node: &Node, combine: Option<Binary>) -> Tensor {
    let (a, idx, values) = (args[0], args[1], args[2]);
    let rows = a.shape[0] as i64;
    let row = a.shape[1..].iter().product::<usize>();
    let mut vals = a.vals.clone();
    for (i, v) in idx.vals.iter().enumerate() {
        let Value::Int(k) = *v else {
            unreachable!("scatter's positions are int64 (checked by infer), got {v:?}")
        };
        let r = k.rem_euclid(rows) as usize;
        for j in 0..row {
            let (dst, src) = (&mut vals[r * row + j], values.vals[i * row + j]);
            *dst = match combine {
                Some(f) => cast(f(node.dtype, *dst, src), node.dtype),
                None => src,
            };
        }
    }
    Tensor { dtype: node.dtype, shape: node.shape.clone(), vals }
}

impl Tensor {
    /// Brings wide results (f64 sums, wrapped i64 accumulators) to the canonical form of `dtype`.
    fn cast_to(mut self, dtype: DType) -> Tensor {
        for v in &mut self.vals {
            *v = cast(*v, dtype);
        }
        self.dtype = dtype;
        self
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use num_complex::Complex64;

    use super::value::{load, Value};
    use crate::graph::{Attrs, Graph};
    use crate::host::{HostArray, HostElement};
    use crate::ops::OpKind;

    pub fn arr<T: HostElement>(shape: &[usize], v: Vec<T>) -> HostArray {
        HostArray::from_vec(shape, v).unwrap()
    }

    /// A rank-1 array.
    pub fn vec1<T: HostElement>(v: Vec<T>) -> HostArray {
        let n = v.len();
        arr(&[n], v)
    }

    pub fn run(g: &Graph, inputs: &[HostArray]) -> Vec<HostArray> {
        let refs: Vec<&HostArray> = inputs.iter().collect();
        super::evaluate(g, &refs).unwrap()
    }

    /// `op` applied to the inputs (no attributes).
    pub fn apply(op: OpKind, inputs: &[HostArray]) -> HostArray {
        apply_with(op, Attrs::None, inputs)
    }

    pub fn apply_with(op: OpKind, attrs: Attrs, inputs: &[HostArray]) -> HostArray {
        let mut g = Graph::new();
        let ids: Vec<_> = inputs
            .iter()
            .enumerate()
            .map(|(i, a)| g.input(i as u32, a.dtype(), a.shape()))
            .collect();
        let r = g.add(op, attrs, &ids).unwrap();
        g.push_output(r);
        run(&g, inputs).pop().unwrap()
    }

    pub fn values(a: &HostArray) -> Vec<Value> {
        load(a.data())
    }

    /// The elements of a float array as f64.
    pub fn f64s(a: &HostArray) -> Vec<f64> {
        values(a)
            .into_iter()
            .map(|v| match v {
                Value::Float(x) => x,
                other => panic!("{other:?} is not a float"),
            })
            .collect()
    }

    pub fn c64s(a: &HostArray) -> Vec<Complex64> {
        values(a)
            .into_iter()
            .map(|v| match v {
                Value::Complex(z) => z,
                other => panic!("{other:?} is not complex"),
            })
            .collect()
    }

    pub fn bools(a: &HostArray) -> Vec<bool> {
        a.as_slice::<bool>().unwrap().to_vec()
    }

    /// Exact equality, NaN equal to NaN, and the sign of zero checked.
    #[track_caller]
    pub fn assert_same(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            let ok = (g.is_nan() && w.is_nan())
                || (g == w && g.is_sign_negative() == w.is_sign_negative());
            assert!(ok, "got {got:?}, want {want:?}");
        }
    }

    /// Within `rel` relative error (NaN equal to NaN, infinities exact).
    #[track_caller]
    pub fn assert_close(got: &[f64], want: &[f64], rel: f64) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= rel * w.abs();
            assert!(ok, "got {got:?}, want {want:?} (rel {rel})");
        }
    }

    #[track_caller]
    pub fn assert_close_c(got: &[Complex64], want: &[Complex64], rel: f64) {
        assert_eq!(got.len(), want.len());
        let scale = want.iter().map(|z| z.norm()).fold(0.0, f64::max);
        for (g, w) in got.iter().zip(want) {
            let ok = (g - w).norm() <= rel * scale.max(1e-300) || (g.re.is_nan() && w.re.is_nan());
            assert!(ok, "got {got:?}, want {want:?} (rel {rel})");
        }
    }
}

#[cfg(test)]
#[allow(clippy::approx_constant, clippy::excessive_precision)]
mod tests {
    use half::bf16;
    use smallvec::smallvec;

    use super::testutil::*;
    use super::*;
    use crate::graph::{Literal, NodeId};

    #[test]
    fn leaves_const_and_iota() {
        let mut g = Graph::new();
        // np.arange(3)[None, :] broadcast to (2, 3) as float16, and along axis 0 as int8
        let i1 = g.iota(DType::Float16, &[2, 3], 1).unwrap();
        let i0 = g.iota(DType::Int8, &[2, 3], 0).unwrap();
        let k = g.constant(DType::BFloat16, Literal::float(DType::BFloat16, 0.1)).unwrap();
        g.set_outputs(vec![i1, i0, k]);
        let out = evaluate(&g, &[]).unwrap();
        assert_eq!(f64s(&out[0]), vec![0., 1., 2., 0., 1., 2.]);
        assert_eq!(out[1].as_slice::<i8>().unwrap(), &[0, 0, 0, 1, 1, 1]);
        assert_eq!(out[2].shape(), &[] as &[usize]);
        // ml_dtypes.bfloat16(0.1) -> 0.10009765625
        assert_eq!(out[2].as_slice::<bf16>().unwrap(), &[bf16::from_f64(0.10009765625)]);
        // iota rounds to its dtype: np.arange(2050).astype(np.float16)[2049] -> 2048.0
        let mut g = Graph::new();
        let i = g.iota(DType::Float16, &[2050], 0).unwrap();
        g.push_output(i);
        assert_eq!(f64s(&evaluate(&g, &[]).unwrap()[0])[2049], 2048.0);
    }

    #[test]
    fn a_small_program_with_shared_intermediates() {
        // x = np.array([[1., 2., 3.], [4., 5., 6.]], np.float32); b = np.array([10., 20., 30.], np.float32)
        // y = x + b (broadcast); z = np.sum(y * y, axis=1) -> [1694., 2117.]; np.sqrt(z) -> [41.158234, 46.010868]
        // and y itself as a second output
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[2, 3]);
        let b = g.input(1, DType::Float32, &[3]);
        let bb = g.add(OpKind::BroadcastTo, Attrs::Shape { shape: smallvec![2, 3] }, &[b]).unwrap();
        let y = g.add(OpKind::Add, Attrs::None, &[x, bb]).unwrap();
        let yy = g.add(OpKind::Mul, Attrs::None, &[y, y]).unwrap();
        let z = g
            .add(OpKind::Sum, Attrs::Reduce { axes: smallvec![1], keepdims: false }, &[yy])
            .unwrap();
        let s = g.add(OpKind::Sqrt, Attrs::None, &[z]).unwrap();
        g.set_outputs(vec![s, y, s]);
        let out =
            run(&g, &[arr(&[2, 3], vec![1f32, 2., 3., 4., 5., 6.]), vec1(vec![10f32, 20., 30.])]);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].as_slice::<f32>().unwrap(), &[1694f32.sqrt(), 2117f32.sqrt()]);
        assert_eq!(out[1].as_slice::<f32>().unwrap(), &[11., 22., 33., 14., 25., 36.]);
        assert_eq!(out[2], out[0]);
    }

    #[test]
    fn take_reads_the_flattened_input_with_positions_wrapped() {
        // np.take(np.array([[1, 2, 3], [4, 5, 6]], np.int16), [[0, 5, -1], [6, -7, 2]], mode='wrap')
        // -> [[1, 6, 6], [1, 6, 3]]
        let mut g = Graph::new();
        let a = g.input(0, DType::Int16, &[2, 3]);
        let idx = g.input(1, DType::Int64, &[2, 3]);
        let t = g.add(OpKind::Take, Attrs::None, &[a, idx]).unwrap();
        let l = g.add(OpKind::Label, Attrs::Custom { name: "k".into() }, &[t]).unwrap();
        g.push_output(l);
        let out = run(
            &g,
            &[arr(&[2, 3], vec![1i16, 2, 3, 4, 5, 6]), arr(&[2, 3], vec![0i64, 5, -1, 6, -7, 2])],
        );
        assert_eq!(out[0].shape(), &[2, 3]);
        assert_eq!(out[0].as_slice::<i16>().unwrap(), &[1, 6, 6, 1, 6, 3]);
    }

    #[test]
    fn scatters_combine_duplicates_in_position_order_with_rows_wrapped() {
        // b = np.array([[1., 2.], [3., 4.], [5., 6.]], np.float32)
        // np.add.at(b, [0, -1, 0, 4], [[10, 20], [30, 40], [50, 60], [70, 80]])
        // -> [[61, 82], [73, 84], [35, 46]]  (4 wraps to row 1, -1 to row 2)
        let a = arr(&[3, 2], vec![1f32, 2., 3., 4., 5., 6.]);
        let idx = vec1(vec![0i64, -1, 0, 4]);
        let v = arr(&[4, 2], vec![10f32, 20., 30., 40., 50., 60., 70., 80.]);
        let run_op = |op: OpKind| {
            let mut g = Graph::new();
            let (x, i, y) = (
                g.input(0, DType::Float32, &[3, 2]),
                g.input(1, DType::Int64, &[4]),
                g.input(2, DType::Float32, &[4, 2]),
            );
            let s = g.add(op, Attrs::None, &[x, i, y]).unwrap();
            g.push_output(s);
            run(&g, &[a.clone(), idx.clone(), v.clone()]).remove(0)
        };
        assert_eq!(
            run_op(OpKind::ScatterAdd).as_slice::<f32>().unwrap(),
            &[61., 82., 73., 84., 35., 46.]
        );
        // np.maximum.at and np.minimum.at of the same.
        assert_eq!(
            run_op(OpKind::ScatterMax).as_slice::<f32>().unwrap(),
            &[50., 60., 70., 80., 30., 40.]
        );
        assert_eq!(
            run_op(OpKind::ScatterMin).as_slice::<f32>().unwrap(),
            &[1., 2., 3., 4., 5., 6.]
        );
        // b[[0, -1, 0, 4]] = v: the last write of row 0 (position 2) wins.
        assert_eq!(
            run_op(OpKind::Scatter).as_slice::<f32>().unwrap(),
            &[50., 60., 70., 80., 30., 40.]
        );
    }

    #[test]
    fn scatter_add_rounds_each_step_to_the_dtype() {
        // np.add.at(np.float16([0]), [0, 0, 0], np.float16([2048, 1, 1])) -> [2048]: 2049 is not
        // a float16, each 1 is lost, where a float64 sum would round 2050 to 2050.
        let mut g = Graph::new();
        let (x, i, y) = (
            g.input(0, DType::Float16, &[1]),
            g.input(1, DType::Int64, &[3]),
            g.input(2, DType::Float16, &[3]),
        );
        let s = g.add(OpKind::ScatterAdd, Attrs::None, &[x, i, y]).unwrap();
        g.push_output(s);
        let h = |v: f32| half::f16::from_f32(v);
        let out = run(
            &g,
            &[
                arr(&[1], vec![h(0.)]),
                vec1(vec![0i64, 0, 0]),
                arr(&[3], vec![h(2048.), h(1.), h(1.)]),
            ],
        );
        assert_eq!(out[0].as_slice::<half::f16>().unwrap(), &[h(2048.)]);
    }

    #[test]
    fn scans_run_along_their_axis_each_step_rounded() {
        let run_scan = |op: OpKind, dt: DType, shape: &[usize], axis: usize, x: HostArray| {
            let mut g = Graph::new();
            let i = g.input(0, x.dtype(), x.shape());
            let s = g.add(op, Attrs::Axis { axis }, &[i]).unwrap();
            assert_eq!((g.node(s).dtype, g.node(s).shape.as_slice()), (dt, shape));
            g.push_output(s);
            run(&g, &[x]).remove(0)
        };
        // np.cumsum(np.int8([[100, 100, 100], [-100, -100, -100]]), axis=1) -> int64, no wrap
        let x = arr(&[2, 3], vec![100i8, 100, 100, -100, -100, -100]);
        let out = run_scan(OpKind::Cumsum, DType::Int64, &[2, 3], 1, x.clone());
        assert_eq!(out.as_slice::<i64>().unwrap(), &[100, 200, 300, -100, -200, -300]);
        // np.cumsum(..., axis=0)
        let out = run_scan(OpKind::Cumsum, DType::Int64, &[2, 3], 0, x);
        assert_eq!(out.as_slice::<i64>().unwrap(), &[100, 100, 100, 0, 0, 0]);
        // np.cumsum(np.float16([2048, 1, 1, 2])) -> [2048, 2048, 2048, 2050]: each step rounded.
        let h = |v: f32| half::f16::from_f32(v);
        let out = run_scan(
            OpKind::Cumsum,
            DType::Float16,
            &[4],
            0,
            arr(&[4], vec![h(2048.), h(1.), h(1.), h(2.)]),
        );
        assert_eq!(out.as_slice::<half::f16>().unwrap(), &[h(2048.), h(2048.), h(2048.), h(2050.)]);
        // np.maximum.accumulate([1, nan, 3]) -> [1, nan, nan]; np.minimum.accumulate([3, -0., 0.])
        // -> [3, -0., 0.] (of equal values np.minimum returns the second)
        let out =
            run_scan(OpKind::Cummax, DType::Float64, &[3], 0, vec1(vec![1.0f64, f64::NAN, 3.0]));
        let v = out.as_slice::<f64>().unwrap();
        assert!(v[0] == 1.0 && v[1].is_nan() && v[2].is_nan(), "{v:?}");
        let out = run_scan(OpKind::Cummin, DType::Float64, &[3], 0, vec1(vec![3.0f64, -0.0, 0.0]));
        assert_eq!(
            out.as_slice::<f64>().unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            [3.0f64, -0.0, 0.0].map(f64::to_bits)
        );
        // np.cumprod(np.uint8([16, 16, 16])) -> uint64 [16, 256, 4096]; bool cumsum counts.
        let out = run_scan(OpKind::Cumprod, DType::UInt64, &[3], 0, vec1(vec![16u8, 16, 16]));
        assert_eq!(out.as_slice::<u64>().unwrap(), &[16, 256, 4096]);
        let out = run_scan(OpKind::Cumsum, DType::Int64, &[3], 0, vec1(vec![true, false, true]));
        assert_eq!(out.as_slice::<i64>().unwrap(), &[1, 1, 2]);
    }

    #[test]
    fn an_output_can_be_an_input() {
        let mut g = Graph::new();
        let x = g.input(0, DType::UInt16, &[2]);
        g.push_output(x);
        let out = run(&g, &[vec1(vec![1u16, 2])]);
        assert_eq!(out[0].as_slice::<u16>().unwrap(), &[1, 2]);
    }

    #[test]
    fn input_errors() {
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[2]);
        let y = g.add(OpKind::Neg, Attrs::None, &[x]).unwrap();
        g.push_output(y);
        let e = evaluate(&g, &[]).unwrap_err();
        assert!(matches!(&e, IrError::Eval { node: 0, op, .. } if op == "input"), "{e}");
        let wrong_dtype = vec1(vec![1.0f64, 2.0]);
        assert!(matches!(evaluate(&g, &[&wrong_dtype]), Err(IrError::Eval { node: 0, .. })));
        let wrong_shape = vec1(vec![1.0f32, 2.0, 3.0]);
        let e = evaluate(&g, &[&wrong_shape]).unwrap_err();
        assert!(e.to_string().contains("input 0 is float32"), "{e}");
    }

    #[test]
    fn custom_kernels_have_no_reference_body() {
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[2]);
        let k = g.insert(Node {
            op: OpKind::CustomKernel,
            attrs: Attrs::Custom { name: "my_kernel".into() },
            inputs: smallvec![x],
            dtype: DType::Float32,
            shape: smallvec![2],
        });
        g.push_output(k);
        let e = evaluate(&g, &[&vec1(vec![1.0f32, 2.0])]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "evaluator: node %1 (custom): custom kernel my_kernel has no reference body"
        );
    }

    #[test]
    fn mistyped_nodes_are_rejected() {
        // A node inserted unchecked whose declared dtype does not follow from its operands.
        let mut g = Graph::new();
        let x = g.input(0, DType::Int8, &[2]);
        let y = g.insert(Node {
            op: OpKind::Neg,
            attrs: Attrs::None,
            inputs: smallvec![x],
            dtype: DType::Int16,
            shape: smallvec![2],
        });
        g.push_output(y);
        let e = evaluate(&g, &[&vec1(vec![1i8, 2])]).unwrap_err();
        assert!(matches!(e, IrError::Eval { node: 1, .. }), "{e}");
        // An op applied outside its domain.
        let mut g = Graph::new();
        let x = g.input(0, DType::Int8, &[2]);
        let y = g.insert(Node {
            op: OpKind::Sin,
            attrs: Attrs::None,
            inputs: smallvec![x],
            dtype: DType::Int8,
            shape: smallvec![2],
        });
        g.push_output(y);
        assert!(matches!(evaluate(&g, &[&vec1(vec![1i8, 2])]), Err(IrError::Eval { node: 1, .. })));
    }

    #[test]
    fn dead_nodes_are_not_evaluated() {
        // A custom kernel no output needs does not fail the evaluation.
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[2]);
        g.insert(Node {
            op: OpKind::CustomKernel,
            attrs: Attrs::Custom { name: "unused".into() },
            inputs: smallvec![x],
            dtype: DType::Float32,
            shape: smallvec![2],
        });
        let y = g.add(OpKind::Neg, Attrs::None, &[x]).unwrap();
        g.push_output(y);
        let out = run(&g, &[vec1(vec![1.0f32, -2.0])]);
        assert_eq!(out[0].as_slice::<f32>().unwrap(), &[-1.0, 2.0]);
        assert_eq!(g.node(NodeId(2)).op, OpKind::Neg);
    }

    #[test]
    fn every_op_has_a_meaning() {
        // Build each non-leaf op of the table on small operands of an accepted dtype and
        // evaluate it; the exhaustive match in eval_node guarantees there is a case for it.
        for &op in OpKind::ALL {
            let info = op.info();
            if op.is_leaf() || op == OpKind::CustomKernel {
                continue;
            }
            let dt = [DType::Float64, DType::Complex128, DType::Int32, DType::Bool, DType::UInt64]
                .into_iter()
                .find(|&d| info.domain.contains(d))
                .unwrap();
            let mut g = Graph::new();
            let attrs = match info.attrs {
                crate::ops::AttrKind::None => Attrs::None,
                crate::ops::AttrKind::DType if op == OpKind::Bitcast => {
                    Attrs::DType { dtype: DType::Int64 }
                }
                crate::ops::AttrKind::DType => Attrs::DType { dtype: DType::Float32 },
                crate::ops::AttrKind::Shape => Attrs::Shape { shape: smallvec![2, 2] },
                crate::ops::AttrKind::Perm => Attrs::Perm { perm: smallvec![1, 0] },
                crate::ops::AttrKind::Reduce => {
                    Attrs::Reduce { axes: smallvec![1], keepdims: false }
                }
                crate::ops::AttrKind::Axes => Attrs::Axes { axes: smallvec![0] },
                crate::ops::AttrKind::Axis => Attrs::Axis { axis: 0 },
                crate::ops::AttrKind::Slice => Attrs::Slice {
                    dims: smallvec![
                        crate::SliceDim::normalize(2, None, None, -1),
                        crate::SliceDim::normalize(2, None, None, 1)
                    ],
                },
                crate::ops::AttrKind::Fft => Attrs::Fft {
                    axes: smallvec![1],
                    inverse: false,
                    norm: crate::FftNorm::Backward,
                },
                crate::ops::AttrKind::RealFft => {
                    Attrs::RealFft { axes: smallvec![0, 1], n: 2, norm: crate::FftNorm::Ortho }
                }
                crate::ops::AttrKind::Custom => Attrs::Custom { name: "k".into() },
                crate::ops::AttrKind::Linalg => Attrs::Linalg { output: 0, full_matrices: false },
                crate::ops::AttrKind::TopK => Attrs::TopK { axis: 1, k: 1, largest: true },
                crate::ops::AttrKind::Philox => Attrs::Philox { per_call: 4, words: 1 },
                other => unreachable!("{other:?}"),
            };
            let shape: &[usize] = match op {
                OpKind::ExpandDims => &[2],
                OpKind::Squeeze => &[1, 2],
                _ => &[2, 2],
            };
            let (n, inputs) = match (op, info.arity) {
                (OpKind::Take | OpKind::SortTake, _) => {
                    (2, vec![HostArray::zeros(dt, shape), HostArray::zeros(DType::Int64, shape)])
                }
                (
                    OpKind::ScatterAdd | OpKind::ScatterMax | OpKind::ScatterMin | OpKind::Scatter,
                    _,
                ) => (
                    3,
                    vec![
                        HostArray::zeros(dt, shape),
                        HostArray::zeros(DType::Int64, &[3]),
                        HostArray::zeros(dt, &[3, 2]),
                    ],
                ),
                (OpKind::Where | OpKind::Compact, crate::ops::Arity::Fixed(n)) => (
                    n,
                    std::iter::once(HostArray::zeros(DType::Bool, shape))
                        .chain((1..n).map(|_| HostArray::zeros(dt, shape)))
                        .collect(),
                ),
                // The identity: a matrix these take (positive definite, not singular).
                (OpKind::Cholesky | OpKind::Solve | OpKind::Inv, crate::ops::Arity::Fixed(n)) => {
                    let eye = HostArray::from_vec(shape, vec![1.0f64, 0.0, 0.0, 1.0]).unwrap();
                    (n, vec![eye; n])
                }
                (_, crate::ops::Arity::Fixed(n)) => {
                    (n, (0..n).map(|_| HostArray::zeros(dt, shape)).collect())
                }
                (_, crate::ops::Arity::Variadic) => {
                    (2, vec![HostArray::zeros(dt, shape), HostArray::zeros(dt, shape)])
                }
            };
            let ids: Vec<_> = inputs
                .iter()
                .enumerate()
                .map(|(i, a)| g.input(i as u32, a.dtype(), a.shape()))
                .collect();
            assert_eq!(ids.len(), n);
            let r = g.add(op, attrs, &ids).unwrap_or_else(|e| panic!("{}: {e}", op.name()));
            g.push_output(r);
            let out = run(&g, &inputs);
            assert_eq!(out[0].dtype(), g.node(r).dtype, "{}", op.name());
            assert_eq!(out[0].shape(), g.node(r).shape.as_slice(), "{}", op.name());
        }
    }

    #[test]
    fn a_million_elements_is_quick() {
        // Elementwise chain and a reduction over 1e6 float32 elements; generous bound for debug
        // builds on a shared machine (release is far faster).
        let n = 1_000_000;
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[1000, 1000]);
        let s = g.add(OpKind::Sin, Attrs::None, &[x]).unwrap();
        let m = g.add(OpKind::Mul, Attrs::None, &[s, x]).unwrap();
        let t = g.add(OpKind::Permute, Attrs::Perm { perm: smallvec![1, 0] }, &[m]).unwrap();
        let r = g
            .add(OpKind::Sum, Attrs::Reduce { axes: smallvec![0], keepdims: false }, &[t])
            .unwrap();
        g.push_output(r);
        let a = arr(&[1000, 1000], (0..n).map(|i| i as f32 * 1e-6).collect::<Vec<_>>());
        let t0 = std::time::Instant::now();
        let out = run(&g, &[a]);
        assert_eq!(out[0].shape(), &[1000]);
        eprintln!("1e6-element graph evaluated in {:?}", t0.elapsed());
        assert!(t0.elapsed().as_secs_f64() < 20.0, "{:?}", t0.elapsed());
    }
}
