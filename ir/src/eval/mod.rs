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
mod tests;
