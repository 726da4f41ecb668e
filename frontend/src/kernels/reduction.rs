//! `ReductionKernel`: CuPy's user-defined reductions, traced into the graph.

use kiln_ir::shape::normalize_axes;
use kiln_ir::{Attrs, DType, Literal, OpKind, Shape};
use smallvec::SmallVec;

use super::ast::{Expr, ExprKind, Function, Span, Stmt, TypeName};
use super::bind::{arg_dtype, decide_types, loop_shape};
use super::diag::Diag;
use super::elementwise::{
    bind_inputs, collect_outputs, end_of, flat_index, parse_outputs, placeholders, CallOptions,
};
use super::params::{parse_params, Param, ParamType};
use super::parser::{parse_body, parse_expr, parse_preamble, parse_type};
use super::trace::{Tracer, Var, VarKind};
use super::values::{cast, Val};
use crate::array::Array;
use crate::elementwise::Operand;
use crate::error::{Error, Result};
use crate::reduce::AxisArg;

/// The reductions of kiln a `reduce_expr` maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reducer {
    Sum,
    Prod,
    Max,
    Min,
}

impl Reducer {
    fn op(self) -> OpKind {
        match self {
            Reducer::Sum => OpKind::Sum,
            Reducer::Prod => OpKind::Prod,
            Reducer::Max => OpKind::Max,
            Reducer::Min => OpKind::Min,
        }
    }
}

/// The reducer of `a + b`, `a * b`, `max(a, b)`, `min(a, b)` (`fmax`, `fmin`), `a > b ? a : b`
/// and the like (either operand order).
fn reducer(e: &Expr) -> Option<Reducer> {
    use super::ast::BinOp::*;
    fn name(e: &Expr) -> Option<&str> {
        match &e.kind {
            ExprKind::Name(n) if n == "a" || n == "b" => Some(n.as_str()),
            _ => None,
        }
    }
    let pair = |x: &Expr, y: &Expr| {
        matches!((name(x), name(y)), (Some("a"), Some("b")) | (Some("b"), Some("a")))
    };
    match &e.kind {
        ExprKind::Binary(Add, x, y) if pair(x, y) => Some(Reducer::Sum),
        ExprKind::Binary(Mul, x, y) if pair(x, y) => Some(Reducer::Prod),
        ExprKind::Call { name: f, args } if args.len() == 2 && pair(&args[0], &args[1]) => {
            match f.as_str() {
                "max" | "fmax" | "fmaxf" => Some(Reducer::Max),
                "min" | "fmin" | "fminf" => Some(Reducer::Min),
                _ => None,
            }
        }
        ExprKind::Ternary(c, t, f) => {
            let ExprKind::Binary(op, x, y) = &c.kind else { return None };
            let (x, y, t, f) = (name(x)?, name(y)?, name(t)?, name(f)?);
            if x == y || t == f {
                return None;
            }
            // `x > y ? x : y` is a maximum; swapping the branches or the comparison flips it.
            let greater = match op {
                Gt | Ge => true,
                Lt | Le => false,
                _ => return None,
            };
            let picks_left = t == x;
            Some(if greater == picks_left { Reducer::Max } else { Reducer::Min })
        }
        _ => None,
    }
}

/// A user-defined reduction (CuPy's `cupy.ReductionKernel`), traced into kiln's graph: the map
/// expression over the broadcast inputs, one of kiln's reductions for the reduce expression, and
/// the post-map statements writing the outputs, all ordinary nodes that fuse with what
/// surrounds them (the fusion report names the kernel in its region).
///
/// ```
/// use kiln_frontend::{arange, DType, ReductionKernel};
/// let l2norm = ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")?;
/// let x = arange(10).astype(DType::Float32).reshape(&[2, 5]);
/// let y = l2norm.try_call(&[(&x).into()], 1)?;
/// assert_eq!(y.to_vec::<f32>(), vec![5.477226, 15.9687195]);
/// # Ok::<(), kiln_frontend::Error>(())
/// ```
///
/// - `map_expr` is an expression of the inputs (non-raw arrays broadcast together, scalars,
///   raw arrays indexed), and of `_j` (the element's position in the input, reduced axes first),
///   `_i` (its output's position), `_in_ind.size()`, `_out_ind.size()`; its value is converted to
///   the reduce type (`reduce_type`, by default the first output's type).
/// - `reduce_expr` over `a` and `b` must be `a + b`, `a * b`, `max(a, b)` or `min(a, b)` (also
///   `fmax`/`fmin` and ternary forms such as `a > b ? a : b`): kiln's sum, product, maximum and
///   minimum. Another expression is an [`Error::KernelUnsupported`] naming it. Maxima and minima
///   propagate NaN (NumPy's `max`), where CUDA's `fmaxf` would skip one.
/// - `identity`: `""` for none (an empty reduction is then an error); for `a + b` it must be 0
///   and for `a * b` 1 (CuPy folds it in once per thread, so another value would make the result
///   depend on the launch); for maxima and minima it is combined with the result once (and is the
///   result of an empty reduction).
/// - `post_map_expr` assigns the outputs from `a` (the reduced value), scalar and raw inputs, `_i`
///   and `_out_ind.size()`.
/// - `axis` ([`AxisArg`]: an int, a tuple, `None` for all) and `keepdims` as NumPy's. Raw inputs
///   follow CuPy's rule: the reduced axes must come first (CuPy transposes the inputs to put them
///   there, which it cannot do to raw arrays), else an [`Error::KernelRaw`].
///
/// - `block_size` ([`ReductionKernel::try_call_with`]'s [`CallOptions`]): checked (a power of
///   two, 1 to 1024) and without other effect: the reduction runs as kiln's own reduction
///   kernels, whose launches kiln picks per fused region (CuPy's call takes no `block_size`; its
///   reductions use 512 threads a block).
///
/// Errors: as [`crate::ElementwiseKernel`]'s, and those above.
#[derive(Clone, Debug)]
pub struct ReductionKernel {
    name: String,
    ins: Vec<Param>,
    outs: Vec<Param>,
    map: Expr,
    reducer: Reducer,
    post: Vec<Stmt>,
    post_end: Span,
    identity: Option<Expr>,
    reduce_type: TypeName,
    functions: Vec<Function>,
    placeholders: Vec<String>,
    variants: super::elementwise::Variants,
}

impl ReductionKernel {
    /// How many variants of the kernel its calls have made: one per signature (the
    /// arguments' dtypes, which are scalars, and the input's rank), as CuPy compiles and caches
    /// one kernel per signature. Shared by clones.
    pub fn variants(&self) -> usize {
        self.variants.count()
    }

    /// `cupy.ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr,
    /// identity, name)`. Errors: a `name` that is not a C identifier ([`Error::Value`], as
    /// CuPy's `ValueError`), code that does not parse, a reduce expression kiln has no
    /// reduction for, constructs outside the subset.
    pub fn new(
        in_params: &str,
        out_params: &str,
        map_expr: &str,
        reduce_expr: &str,
        post_map_expr: &str,
        identity: &str,
        name: &str,
    ) -> Result<ReductionKernel> {
        super::elementwise::check_kernel_name("ReductionKernel", name)?;
        let ins = parse_params(in_params, &[]).map_err(|d| d.into_error(name, "in_params"))?;
        let outs = parse_outputs(name, out_params, &ins, false)?;
        let placeholders = placeholders(&[&ins, &outs]);
        let map =
            parse_expr(map_expr, &placeholders).map_err(|d| d.into_error(name, "map_expr"))?;
        let red = parse_expr(reduce_expr, &placeholders)
            .map_err(|d| d.into_error(name, "reduce_expr"))?;
        let reducer = reducer(&red).ok_or_else(|| {
            Diag::unsupported(
                red.span,
                format!("the reduce expression `{}` (kiln reduces with `a + b`, `a * b`, `max(a, b)` and `min(a, b)`)", reduce_expr.trim()),
            )
            .into_error(name, "reduce_expr")
        })?;
        let post = parse_body(post_map_expr, &placeholders)
            .map_err(|d| d.into_error(name, "post_map_expr"))?;
        let identity = if identity.trim().is_empty() {
            None
        } else {
            Some(parse_expr(identity, &placeholders).map_err(|d| d.into_error(name, "identity"))?)
        };
        let reduce_type = match &outs[0].ty {
            ParamType::Fixed(d) => TypeName::C(*d),
            ParamType::Placeholder(t) => TypeName::Placeholder(t.clone()),
        };
        Ok(ReductionKernel {
            name: name.to_string(),
            ins,
            outs,
            map,
            reducer,
            post,
            post_end: end_of(post_map_expr),
            identity,
            reduce_type,
            functions: Vec::new(),
            placeholders,
            variants: Default::default(),
        })
    }

    /// The kernel with CuPy's `reduce_type`: the C type `a` and `b` have (`"double"`, `"T"`).
    pub fn with_reduce_type(mut self, reduce_type: &str) -> Result<ReductionKernel> {
        self.reduce_type = parse_type(reduce_type, &self.placeholders)
            .map_err(|d| d.into_error(&self.name, "reduce_type"))?;
        Ok(self)
    }

    /// The kernel with CuPy's `preamble` of device functions (see
    /// [`crate::ElementwiseKernel::with_preamble`]).
    pub fn with_preamble(mut self, preamble: &str) -> Result<ReductionKernel> {
        self.functions = parse_preamble(preamble, &self.placeholders)
            .map_err(|d| d.into_error(&self.name, "preamble"))?;
        Ok(self)
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `kernel(*args, axis=.., keepdims=..)` for a kernel of one output; a kernel of several
    /// outputs is an [`Error::Value`] (use [`ReductionKernel::try_call_all`]).
    pub fn try_call(&self, args: &[Operand], axis: impl Into<AxisArg>) -> Result<Array> {
        if self.outs.len() != 1 {
            return Err(Error::Value {
                op: self.name.clone(),
                message: format!(
                    "the kernel has {} outputs: call_all returns them",
                    self.outs.len()
                ),
            });
        }
        Ok(self.run(args, axis.into(), &[])?.remove(0))
    }

    /// [`ReductionKernel::try_call`], panicking on error.
    #[track_caller]
    pub fn call(&self, args: &[Operand], axis: impl Into<AxisArg>) -> Array {
        crate::unwrap(self.try_call(args, axis))
    }

    /// `kernel(*args, axis=.., keepdims=..)`: one array per output parameter.
    pub fn try_call_all(&self, args: &[Operand], axis: impl Into<AxisArg>) -> Result<Vec<Array>> {
        self.run(args, axis.into(), &[])
    }

    /// `kernel(*args, *outs, axis=..)`: each `outs[k]` is replaced by the result for output
    /// parameter `k` (as [`crate::ElementwiseKernel::try_call_out`]).
    pub fn try_call_out(
        &self,
        args: &[Operand],
        axis: impl Into<AxisArg>,
        outs: &mut [&mut Array],
    ) -> Result<()> {
        let given: Vec<Array> = outs.iter().map(|o| (**o).clone()).collect();
        let results = self.run(args, axis.into(), &given)?;
        for (o, r) in outs.iter_mut().zip(results) {
            **o = r;
        }
        Ok(())
    }

    /// `kernel(*args, *outs, axis=.., keepdims=..)` with call options, every form in one: `outs`
    /// empty or one array per output parameter (each replaced by its result, as
    /// [`ReductionKernel::try_call_out`]); returns the results.
    ///
    /// `options.block_size` is the reduction's threads per block: checked by
    /// [`check_reduction_options`] (a power of two, 1 to 1024) and otherwise without effect,
    /// since the kernel is traced into kiln's graph and its reduction runs as kiln's own reduction
    /// kernels (their launches picked per fused region). CuPy's `ReductionKernel.__call__` takes
    /// no `block_size` (a `TypeError`, "Wrong arguments"): its reductions run 512 threads a block,
    /// tuned only by `cupyx.optimizing.optimize` (powers of two, 32 to 512); kiln accepts it so
    /// a call written for either kind of user kernel carries over. `options.size` is refused
    /// (CuPy's "Wrong arguments"). On error every array is left as it was.
    pub fn try_call_with(
        &self,
        args: &[Operand],
        axis: impl Into<AxisArg>,
        outs: &mut [&mut Array],
        options: CallOptions,
    ) -> Result<Vec<Array>> {
        check_reduction_options(&self.name, &options)?;
        let given: Vec<Array> = outs.iter().map(|o| (**o).clone()).collect();
        let results = self.run(args, axis.into(), &given)?;
        for (o, r) in outs.iter_mut().zip(&results) {
            **o = r.clone();
        }
        Ok(results)
    }

    fn run(&self, args: &[Operand], axis: AxisArg, out_args: &[Array]) -> Result<Vec<Array>> {
        let name = &self.name;
        if args.len() != self.ins.len()
            || !(out_args.is_empty() || out_args.len() == self.outs.len())
        {
            let expected = if out_args.is_empty() {
                format!("{} inputs", self.ins.len())
            } else {
                format!("{} inputs and {} outputs", self.ins.len(), self.outs.len())
            };
            return Err(Error::KernelArgCount {
                kernel: name.clone(),
                expected,
                got: args.len() + out_args.len(),
            });
        }
        let in_dtypes: Vec<Option<DType>> = args.iter().map(arg_dtype).collect();
        let out_dtypes: Vec<DType> = out_args.iter().map(Array::dtype).collect();
        let types = decide_types(name, &self.ins, &self.outs, &in_dtypes, &out_dtypes)?;
        let params: Vec<&Param> = self.ins.iter().collect();
        let all: Vec<&Operand> = args.iter().collect();
        let shape = loop_shape(name, &params, &all, None)?;
        let rank = shape.len();
        self.variants.note(super::elementwise::signature(args, &types.outs, &types.ins, rank));
        let axes: SmallVec<[usize; 4]> = match &axis.axes {
            None => (0..rank).collect(),
            Some(a) => normalize_axes(name, a, rank)?,
        };
        let kept: Vec<usize> = (0..rank).filter(|a| !axes.contains(a)).collect();
        let order: Vec<usize> = axes.iter().copied().chain(kept.iter().copied()).collect();
        if let Some(p) = self.ins.iter().find(|p| p.raw) {
            if order.iter().enumerate().any(|(k, &a)| k != a) {
                return Err(Error::KernelRaw {
                    kernel: name.clone(),
                    param: Some(p.name.clone()),
                    message: format!(
                        "raw argument `{}`: reducing axes {:?} of a {rank}-d input needs them first, which CuPy does by transposing the inputs and cannot do to raw ones",
                        p.name,
                        axes.as_slice()
                    ),
                });
            }
        }
        let kept_shape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
        let out_shape: Shape = if axis.keepdims {
            (0..rank).map(|a| if axes.contains(&a) { 1 } else { shape[a] }).collect()
        } else {
            kept_shape.iter().copied().collect()
        };
        for (p, o) in self.outs.iter().zip(out_args) {
            if o.shape() != out_shape.as_slice() {
                return Err(Error::Value {
                    op: name.clone(),
                    message: format!(
                        "output `{}` has shape {:?}, the reduction's is {:?}",
                        p.name,
                        o.shape(),
                        out_shape.as_slice()
                    ),
                });
            }
        }
        let reduce_ty = match &self.reduce_type {
            TypeName::C(d) => *d,
            TypeName::Placeholder(t) => {
                *types.bound.get(t).ok_or_else(|| Error::KernelPlaceholder {
                    kernel: name.clone(),
                    placeholder: t.clone(),
                    param: "reduce_type".into(),
                    in_outputs_only: false,
                })?
            }
            TypeName::Auto => unreachable!("a reduce type is never auto"),
        };
        let (n_in, n_out) = (shape.iter().product::<usize>(), kept_shape.iter().product::<usize>());

        // The map, over the broadcast input shape.
        let mut tr = Tracer::new(types.bound.clone(), &self.functions);
        bind_inputs(&mut tr, name, &self.ins, &types.ins, args, &shape)?;
        let special =
            |v: Array| Var { ty: DType::Int64, value: Some(Val::Array(v)), kind: VarKind::Special };
        tr.define("_j", special(position_reduced_first(&shape, &order)?));
        tr.define("_i", special(output_position(&shape, &axes, &kept_shape)?));
        tr.size("_in_ind", n_in);
        tr.size("_out_ind", n_out);
        let m = tr.eval(&self.map).map_err(|d| d.into_error(name, "map_expr"))?;
        let m = cast(&m, reduce_ty).to_array().broadcast_to_shape(&shape)?;

        // The reduction, and the identity.
        let identity = self.identity_value(&types.bound, reduce_ty)?;
        let reduced_size: usize = axes.iter().map(|&a| shape[a]).product();
        let a = if reduced_size == 0 {
            match &identity {
                Some(v) => v.to_array().broadcast_to_shape(&out_shape)?,
                None => {
                    return Err(Error::Value {
                        op: name.clone(),
                        message: format!(
                            "zero-size array to reduction operation {name} which has no identity"
                        ),
                    })
                }
            }
        } else {
            let attrs = Attrs::Reduce { axes: axes.clone(), keepdims: axis.keepdims };
            let r = Array::apply(self.reducer.op(), attrs, &[&m])?.cast_to(reduce_ty);
            match (&identity, self.reducer) {
                (Some(v), Reducer::Max | Reducer::Min) if !neutral(v, self.reducer) => {
                    let op = if self.reducer == Reducer::Max {
                        OpKind::Maximum
                    } else {
                        OpKind::Minimum
                    };
                    let v = v.to_array().broadcast_to_shape(&out_shape)?;
                    Array::apply(op, Attrs::None, &[&v, &r])?
                }
                _ => r,
            }
        };

        // The post-map, over the output shape.
        let mut post = Tracer::new(types.bound.clone(), &self.functions);
        for ((p, &d), arg) in self.ins.iter().zip(&types.ins).zip(args) {
            match arg {
                Operand::Array(x) if p.raw => post.raw(&p.name, x.clone()),
                Operand::Scalar(s) => {
                    let v = super::bind::scalar(name, &p.name, *s, d)?;
                    post.define(&p.name, Var { ty: d, value: Some(v), kind: VarKind::Input });
                }
                Operand::Array(_) => {}
            }
        }
        for ((p, &d), k) in self.outs.iter().zip(&types.outs).zip(0..) {
            let value = out_args.get(k).map(|a| Val::Array(a.clone()));
            post.define(&p.name, Var { ty: d, value, kind: VarKind::Output });
        }
        post.define(
            "a",
            Var {
                ty: reduce_ty,
                value: Some(Val::Array(a)),
                kind: VarKind::Local { is_const: false },
            },
        );
        post.define("_i", special(flat_index(&out_shape)));
        post.size("_in_ind", n_in);
        post.size("_out_ind", n_out);
        post.run(&self.post).map_err(|d| d.into_error(name, "post_map_expr"))?;
        collect_outputs(&post, name, "post_map_expr", &self.outs, &out_shape, self.post_end)
    }

    /// The identity converted to the reduce type; it must be known when traced, and be the
    /// reduction's neutral element for sums and products.
    fn identity_value(
        &self,
        bound: &std::collections::HashMap<String, DType>,
        ty: DType,
    ) -> Result<Option<Val>> {
        let Some(e) = &self.identity else { return Ok(None) };
        let mut tr = Tracer::new(bound.clone(), &self.functions);
        let v = tr.eval(e).map_err(|d| d.into_error(&self.name, "identity"))?;
        let v = cast(&v, ty);
        let known = match &v {
            Val::Const(l, _) => Some(*l),
            Val::Array(_) => None,
        };
        let want = match self.reducer {
            Reducer::Sum => Some((0, "a + b")),
            Reducer::Prod => Some((1, "a * b")),
            Reducer::Max | Reducer::Min => None,
        };
        let bad =
            |message: String| Err(Diag::code(e.span, message).into_error(&self.name, "identity"));
        match (known, want) {
            (None, _) if !ty.is_complex() => bad("the identity must be a constant".into()),
            (Some(l), Some((n, op))) if l.to_f64() != n as f64 => bad(format!(
                "the identity of `{op}` must be {n} (CuPy folds the identity in once per thread, so another value makes the result depend on the launch)"
            )),
            _ => Ok(Some(v)),
        }
    }
}

/// Whether `v` is the neutral element of a maximum (the lowest value) or minimum (the highest).
/// The call options a reduction accepts ([`ReductionKernel::try_call_with`]): no `size=`, and a
/// `block_size=` that is a power of two from 1 to 1024 (CUDA's threads a block; a tree reduction
/// in shared memory, CuPy's reduction kernel, halves the block each step, so it needs a power of
/// two). Either is an [`Error::Value`] naming the kernel.
pub(crate) fn check_reduction_options(kernel: &str, options: &CallOptions) -> Result<()> {
    let value = |message: String| Err(Error::Value { op: kernel.to_string(), message });
    if let Some(n) = options.size {
        return value(format!(
            "Wrong arguments: a ReductionKernel takes no size= (got size={n}); its loop is its inputs' broadcast shape"
        ));
    }
    match options.block_size {
        Some(b) if !b.is_power_of_two() || b > 1024 => value(format!(
            "block_size of a reduction must be a power of two from 1 to 1024 threads, got {b}"
        )),
        _ => Ok(()),
    }
}

fn neutral(v: &Val, r: Reducer) -> bool {
    let Val::Const(l, d) = v else { return false };
    let max = r == Reducer::Max;
    match (l, d.int_range()) {
        (Literal::Bool(b), _) => *b != max,
        (Literal::Float(bits), _) => {
            f64::from_bits(*bits) == if max { f64::NEG_INFINITY } else { f64::INFINITY }
        }
        (_, Some((lo, hi))) => l.to_f64() == if max { lo as f64 } else { hi as f64 },
        _ => false,
    }
}

/// `_j`: each element's C-order position in the input transposed to `order` (reduced axes
/// first), as int64 of the input's shape.
fn position_reduced_first(shape: &[usize], order: &[usize]) -> Result<Array> {
    let permuted: Vec<usize> = order.iter().map(|&a| shape[a]).collect();
    let j = flat_index(&permuted);
    let mut inverse = vec![0i64; order.len()];
    for (k, &a) in order.iter().enumerate() {
        inverse[a] = k as i64;
    }
    if inverse.iter().enumerate().all(|(k, &a)| k as i64 == a) {
        return Ok(j);
    }
    j.try_permute(&inverse)
}

/// `_i` in the map: the C-order position of each element's output, over the input's shape.
fn output_position(shape: &[usize], axes: &[usize], kept_shape: &[usize]) -> Result<Array> {
    let ones: Vec<i64> =
        (0..shape.len()).map(|a| if axes.contains(&a) { 1 } else { shape[a] as i64 }).collect();
    flat_index(kept_shape).try_reshape(&ones)?.try_broadcast_to(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Option<Reducer> {
        reducer(&parse_expr(s, &[]).unwrap())
    }

    #[test]
    fn reduce_expressions_map_to_reductions() {
        assert_eq!(r("a + b"), Some(Reducer::Sum));
        assert_eq!(r("b * a"), Some(Reducer::Prod));
        assert_eq!(r("max(a, b)"), Some(Reducer::Max));
        assert_eq!(r("fmin(b, a)"), Some(Reducer::Min));
        assert_eq!(r("a > b ? a : b"), Some(Reducer::Max));
        assert_eq!(r("(a < b) ? a : b"), Some(Reducer::Min));
        assert_eq!(r("a >= b ? b : a"), Some(Reducer::Min));
        assert_eq!(r("b < a ? a : b"), Some(Reducer::Max));
        assert_eq!(r("a - b"), None);
        assert_eq!(r("a + a"), None);
        assert_eq!(r("a > b ? a : a"), None);
        assert_eq!(r("a == b ? a : b"), None);
    }
}
