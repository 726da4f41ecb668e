//! `ElementwiseKernel`: CuPy's user-defined elementwise kernels, traced into the graph.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use kiln_ir::{Attrs, DType, Literal, OpKind, Shape};

use super::ast::{Function, Span, Stmt};
use super::bind::{arg_dtype, decide_types, loop_shape, scalar};
use super::diag::Diag;
use super::params::{parse_params, Param, ParamType};
use super::parser::{parse_body, parse_preamble};
use super::trace::{Tracer, Var, VarKind};
use super::values::Val;
use crate::array::Array;
use crate::creation::iota;
use crate::elementwise::Operand;
use crate::error::{Error, Result};

/// A user-defined elementwise kernel (CuPy's `cupy.ElementwiseKernel`), whose C-like code is
/// traced into kiln's lazy graph rather than compiled as written: its results are ordinary
/// arrays, which fuse with the operations around them (one kernel for
/// `squared_diff(&x * 2.0, &y).sum(1)`), and the fusion report names the kernel in its region.
///
/// ```
/// use kiln_frontend::{Array, ElementwiseKernel};
/// let squared_diff = ElementwiseKernel::new("float32 x, float32 y", "float32 z", "z = (x - y) * (x - y)", "squared_diff")?;
/// let x = Array::from_vec((0..10).map(|v| v as f32).collect::<Vec<_>>(), &[2, 5]);
/// let y = Array::from_vec((0..5).map(|v| v as f32).collect::<Vec<_>>(), &[5]);
/// let z = squared_diff.try_call(&[(&x).into(), (&y).into()])?;          // broadcast (2, 5) with (5,)
/// assert_eq!(z.to_vec::<f32>(), vec![0., 0., 0., 0., 0., 25., 25., 25., 25., 25.]);
/// let z = squared_diff.try_call(&[(&x).into(), 5.into()])?;             // a scalar, converted to float32
/// assert_eq!(z.to_vec::<f32>()[..3], [25., 16., 9.]);
/// # Ok::<(), kiln_frontend::Error>(())
/// ```
///
/// # Parameters
/// CuPy's lists (see [`crate::kernels`]): `'float32 x, float32 y'`, `'T x, T y'` (one-letter
/// placeholders), `'raw T y'` (the whole array, indexed by the code; not broadcast; a raw
/// output is written by position, `y[k] = v`, a scatter: see [`crate::kernels`]). Placeholders
/// are bound by the output arguments first, then by the array inputs; a fixed type must match its
/// array argument's dtype exactly; scalars take their parameter's type (NumPy's conversion).
///
/// # Calls
/// Non-raw array arguments (inputs and outputs) broadcast to the loop's shape; `i` is an element's
/// C-order position in it and `_ind.size()` its size. `size=` ([`ElementwiseKernel::try_call_sized`])
/// gives the loop a shape `(size,)` when every array argument is raw;
/// [`ElementwiseKernel::try_call_with`] takes output arguments, `size=` and `block_size=`
/// together ([`CallOptions`]). [`ElementwiseKernel::variants`] counts the signatures called
/// (CuPy's per-signature kernel cache). An empty operation is a no-op: given outputs keep their
/// values (without them its outputs are unassigned, an error where CuPy returns uninitialised
/// memory). Output arguments
/// ([`ElementwiseKernel::try_call_out`]): kiln's arrays are values, so "writing into `z`" replaces
/// `z` by a new array holding the result (clones of the old `z` keep the old value); the code
/// reads `z`'s old elements where it reads `z` before assigning it. Without output arguments a
/// placeholder used only by outputs is an error, as in CuPy.
///
/// # Errors
/// Construction: a parameter list or code that does not parse ([`Error::KernelSyntax`], with line
/// and column), a construct outside the subset ([`Error::KernelUnsupported`]). Calls: the wrong
/// number of arguments ([`Error::KernelArgCount`]), a dtype that does not match
/// ([`Error::KernelDType`]), an unbound placeholder ([`Error::KernelPlaceholder`]), raw arguments
/// where the loop's shape must come from broadcasting ([`Error::KernelRaw`]), shapes that do not
/// broadcast, and errors of the code found while tracing it ([`Error::KernelCode`]).
#[derive(Clone, Debug)]
pub struct ElementwiseKernel {
    name: String,
    ins: Vec<Param>,
    outs: Vec<Param>,
    body: Vec<Stmt>,
    functions: Vec<Function>,
    /// Where the operation ends (errors about outputs left unassigned point there).
    end: Span,
    placeholders: Vec<String>,
    /// The signatures it was called with (CuPy's per-signature kernel cache).
    variants: Variants,
}

/// The distinct signatures a kernel was called with: CuPy compiles (and caches) one kernel per
/// signature (its `_cached_codes`), kiln traces one graph per signature, whose code the plan
/// cache keeps. Shared by clones, as CuPy's cache is the kernel object's.
#[derive(Clone, Debug, Default)]
pub(crate) struct Variants(Arc<Mutex<HashSet<String>>>);

impl Variants {
    /// Notes a call's signature.
    pub(crate) fn note(&self, signature: String) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(signature);
    }

    /// How many distinct signatures were noted.
    pub(crate) fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// A call's signature: each argument's dtype (a scalar's after conversion, marked) and the
/// loop's rank, as CuPy's kernel cache keys its kernels.
pub(crate) fn signature(args: &[Operand], outs: &[DType], ins: &[DType], ndim: usize) -> String {
    let mut s = String::new();
    for (a, d) in args.iter().zip(ins) {
        let scalar = if matches!(a, Operand::Scalar(_)) { " scalar" } else { "" };
        s.push_str(&format!("{d}{scalar},"));
    }
    for d in outs {
        s.push_str(&format!("->{d},"));
    }
    s.push_str(&format!(" ndim {ndim}"));
    s
}

/// Options of a call, CuPy's keyword arguments: `size=` (a loop of that many elements, when
/// every array argument is raw) and `block_size=` (CuPy's threads per block; kiln fuses the
/// kernel into its own launches, so it is checked and has no other effect). A
/// [`crate::ReductionKernel`] takes them too ([`crate::ReductionKernel::try_call_with`]): no
/// `size`, and a `block_size` that is a power of two.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// `size=`.
    pub size: Option<usize>,
    /// `block_size=`: 1 to 1024 when given.
    pub block_size: Option<u32>,
}

impl CallOptions {
    /// `size=n`.
    pub fn size(self, n: usize) -> CallOptions {
        CallOptions { size: Some(n), ..self }
    }

    /// `block_size=n`.
    pub fn block_size(self, n: u32) -> CallOptions {
        CallOptions { block_size: Some(n), ..self }
    }

    /// CuPy's check of `block_size` (`ValueError` when not positive; CUDA's limit of 1024
    /// threads a block): an [`Error::Value`] naming the kernel.
    pub(crate) fn check(&self, kernel: &str) -> Result<()> {
        match self.block_size {
            Some(b) if b == 0 || b > 1024 => Err(Error::Value {
                op: kernel.to_string(),
                message: format!("block_size must be 1 to 1024 threads, got {b}"),
            }),
            _ => Ok(()),
        }
    }
}

/// The placeholders of parameter lists, in order of first use.
pub(crate) fn placeholders(lists: &[&[Param]]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in lists.iter().flat_map(|l| l.iter()) {
        if let ParamType::Placeholder(t) = &p.ty {
            if !out.contains(t) {
                out.push(t.clone());
            }
        }
    }
    out
}

/// Parses an output parameter list: like the inputs'. Raw outputs (written by position, a
/// scatter) are refused unless `allow_raw` (a reduction's outputs are its results).
pub(crate) fn parse_outputs(
    kernel: &str,
    src: &str,
    ins: &[Param],
    allow_raw: bool,
) -> Result<Vec<Param>> {
    let outs = parse_params(src, ins).map_err(|d| d.into_error(kernel, "out_params"))?;
    if let Some(p) = outs.iter().find(|p| p.raw && !allow_raw) {
        let d = Diag::unsupported(
            p.span,
            format!(
                "the raw output parameter `{}` of a reduction (its outputs are the reduced values)",
                p.name
            ),
        );
        return Err(d.into_error(kernel, "out_params"));
    }
    if outs.is_empty() {
        return Err(Diag::syntax(
            Span { line: 1, column: 1 },
            "a kernel needs at least one output parameter",
        )
        .into_error(kernel, "out_params"));
    }
    Ok(outs)
}

/// CuPy's check of a user kernel's name (`compiler.is_valid_kernel_name`): a C identifier,
/// `[A-Za-z_][A-Za-z0-9_]*`. Errors: [`Error::Value`] naming the constructor (`kind`), as
/// CuPy's `ValueError('Invalid kernel name')`.
pub(crate) fn check_kernel_name(kind: &str, name: &str) -> Result<()> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(crate::error::value_err(kind, format!("Invalid kernel name: \"{name}\"")))
    }
}

/// The end of a text, as a position (past its last character).
pub(crate) fn end_of(src: &str) -> Span {
    let lines: Vec<&str> = src.split('\n').collect();
    Span { line: lines.len(), column: lines.last().map_or(0, |l| l.chars().count()) + 1 }
}

/// `a` marked as a result of the user kernel `name` (a `label` node: free, kept by the
/// simplifier, shown in dumps and the fusion report).
pub(crate) fn label(a: &Array, name: &str) -> Array {
    Array::apply(OpKind::Label, Attrs::Custom { name: name.to_string() }, &[a])
        .expect("label takes every dtype")
}

/// The C-order flat position of each element of `shape`, as int64.
pub(crate) fn flat_index(shape: &[usize]) -> Array {
    let n: usize = shape.iter().product();
    let i = iota(DType::Int64, &[n], 0);
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    i.try_reshape(&dims).expect("the same number of elements")
}

impl ElementwiseKernel {
    /// `cupy.ElementwiseKernel(in_params, out_params, operation, name)`. Errors as the type's
    /// docs say (construction); a `name` that is not a C identifier is an [`Error::Value`], as
    /// CuPy's `ValueError`.
    pub fn new(
        in_params: &str,
        out_params: &str,
        operation: &str,
        name: &str,
    ) -> Result<ElementwiseKernel> {
        check_kernel_name("ElementwiseKernel", name)?;
        let ins = parse_params(in_params, &[]).map_err(|d| d.into_error(name, "in_params"))?;
        let outs = parse_outputs(name, out_params, &ins, true)?;
        let placeholders = placeholders(&[&ins, &outs]);
        let body =
            parse_body(operation, &placeholders).map_err(|d| d.into_error(name, "operation"))?;
        Ok(ElementwiseKernel {
            name: name.to_string(),
            ins,
            outs,
            body,
            functions: Vec::new(),
            end: end_of(operation),
            placeholders,
            variants: Variants::default(),
        })
    }

    /// The kernel with CuPy's `preamble`: device functions the operation calls, inlined where
    /// they are called (`template <typename T> __device__ T twice(T a) { return a + a; }`).
    /// Errors: a preamble that does not parse, or a construct outside the subset.
    pub fn with_preamble(mut self, preamble: &str) -> Result<ElementwiseKernel> {
        self.functions = parse_preamble(preamble, &self.placeholders)
            .map_err(|d| d.into_error(&self.name, "preamble"))?;
        Ok(self)
    }

    /// The kernel's name (labels its results in the graph).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of input parameters (`nin`).
    pub fn nin(&self) -> usize {
        self.ins.len()
    }

    /// Number of output parameters (`nout`).
    pub fn nout(&self) -> usize {
        self.outs.len()
    }

    /// How many variants of the kernel its calls have made: one per signature (the arguments'
    /// dtypes, which are scalars, and the loop's rank), as CuPy compiles and caches one kernel
    /// per signature (`len(kernel._cached_codes)`). Shared by clones.
    pub fn variants(&self) -> usize {
        self.variants.count()
    }

    /// `kernel(*args)` for a kernel of one output: the result array. Errors as the type's docs
    /// say; a kernel of several outputs is an [`Error::Value`] (use
    /// [`ElementwiseKernel::try_call_all`]).
    pub fn try_call(&self, args: &[Operand]) -> Result<Array> {
        if self.outs.len() != 1 {
            return Err(Error::Value {
                op: self.name.clone(),
                message: format!(
                    "the kernel has {} outputs: call_all returns them",
                    self.outs.len()
                ),
            });
        }
        Ok(self.run(args, &[], CallOptions::default())?.remove(0))
    }

    /// [`ElementwiseKernel::try_call`], panicking on error.
    #[track_caller]
    pub fn call(&self, args: &[Operand]) -> Array {
        crate::unwrap(self.try_call(args))
    }

    /// `kernel(*args)`: one array per output parameter.
    pub fn try_call_all(&self, args: &[Operand]) -> Result<Vec<Array>> {
        self.run(args, &[], CallOptions::default())
    }

    /// [`ElementwiseKernel::try_call_all`], panicking on error.
    #[track_caller]
    pub fn call_all(&self, args: &[Operand]) -> Vec<Array> {
        crate::unwrap(self.try_call_all(args))
    }

    /// `kernel(*args, size=size)`: a loop of `size` elements; every array argument must be raw
    /// (else an [`Error::KernelRaw`], CuPy's `ValueError`). Raw outputs are made of `size`
    /// elements, zeros.
    pub fn try_call_sized(&self, args: &[Operand], size: usize) -> Result<Vec<Array>> {
        self.run(args, &[], CallOptions::default().size(size))
    }

    /// [`ElementwiseKernel::try_call_sized`], panicking on error.
    #[track_caller]
    pub fn call_sized(&self, args: &[Operand], size: usize) -> Vec<Array> {
        crate::unwrap(self.try_call_sized(args, size))
    }

    /// `kernel(*args, *outs)`: each `outs[k]` is replaced by the result for output parameter `k`
    /// (see the type's docs). On error every array is left as it was.
    pub fn try_call_out(&self, args: &[Operand], outs: &mut [&mut Array]) -> Result<()> {
        self.try_call_with(args, outs, CallOptions::default()).map(drop)
    }

    /// `kernel(*args, *outs, size=.., block_size=..)`, every form in one: `outs` empty or one
    /// array per output parameter (each replaced by its result, as
    /// [`ElementwiseKernel::try_call_out`]); returns the results. With `size`, every array
    /// argument, outputs included, must be raw (CuPy's rule and error). On error every array
    /// is left as it was.
    pub fn try_call_with(
        &self,
        args: &[Operand],
        outs: &mut [&mut Array],
        options: CallOptions,
    ) -> Result<Vec<Array>> {
        let given: Vec<Array> = outs.iter().map(|o| (**o).clone()).collect();
        let results = self.run(args, &given, options)?;
        for (o, r) in outs.iter_mut().zip(&results) {
            **o = r.clone();
        }
        Ok(results)
    }

    /// [`ElementwiseKernel::try_call_out`], panicking on error.
    #[track_caller]
    pub fn call_out(&self, args: &[Operand], outs: &mut [&mut Array]) {
        crate::unwrap(self.try_call_out(args, outs))
    }

    fn run(
        &self,
        args: &[Operand],
        out_args: &[Array],
        options: CallOptions,
    ) -> Result<Vec<Array>> {
        let name = &self.name;
        options.check(name)?;
        let size = options.size;
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
        // The loop's shape: inputs and outputs broadcast together (CuPy's rule).
        let out_ops: Vec<Operand> = out_args.iter().map(|a| Operand::Array(a.clone())).collect();
        let params: Vec<&Param> = self
            .ins
            .iter()
            .chain(if out_args.is_empty() { &[][..] } else { &self.outs[..] })
            .collect();
        let all: Vec<&Operand> = args.iter().chain(&out_ops).collect();
        let shape = loop_shape(name, &params, &all, size)?;
        for (p, o) in self.outs.iter().zip(out_args) {
            if !p.raw && o.shape() != shape.as_slice() {
                return Err(Error::Value {
                    op: name.clone(),
                    message: format!(
                        "output `{}` has shape {:?}, the loop's shape is {:?}",
                        p.name,
                        o.shape(),
                        shape.as_slice()
                    ),
                });
            }
        }
        self.variants.note(signature(args, &types.outs, &types.ins, shape.len()));
        let mut tr = Tracer::new(types.bound.clone(), &self.functions);
        tr.loop_shape = Some(shape.clone());
        bind_inputs(&mut tr, name, &self.ins, &types.ins, args, &shape)?;
        for ((p, &d), k) in self.outs.iter().zip(&types.outs).zip(0..) {
            if p.raw {
                tr.raw_outs.insert(p.name.clone(), raw_output(name, p, d, out_args.get(k), size)?);
                continue;
            }
            let value = out_args.get(k).map(|a| Val::Array(a.clone()));
            tr.define(&p.name, Var { ty: d, value, kind: VarKind::Output });
        }
        tr.define(
            "i",
            Var {
                ty: DType::Int64,
                value: Some(Val::Array(flat_index(&shape))),
                kind: VarKind::Special,
            },
        );
        tr.size("_ind", shape.iter().product());
        tr.run(&self.body).map_err(|d| d.into_error(name, "operation"))?;
        collect_outputs(&tr, name, "operation", &self.outs, &shape, self.end)
    }
}

/// The starting value of the raw output `p` (of dtype `d`): its output argument, or without
/// one `size` zeros (CuPy allocates them uninitialised); without either, CuPy's error.
fn raw_output(
    kernel: &str,
    p: &Param,
    d: DType,
    given: Option<&Array>,
    size: Option<usize>,
) -> Result<Array> {
    if let Some(a) = given {
        return Ok(a.clone());
    }
    let Some(n) = size else {
        return Err(Error::KernelRaw {
            kernel: kernel.to_string(),
            param: Some(p.name.clone()),
            message: format!(
                "output array size is undecided: the raw output `{}` needs an output argument or size=",
                p.name
            ),
        });
    };
    Array::literal(d, Literal::from_i128(d, 0)).broadcast_to_shape(&[n])
}

/// Defines the input parameters: raw ones as whole arrays, arrays broadcast to `shape`, scalars
/// converted to their parameter's dtype.
pub(crate) fn bind_inputs(
    tr: &mut Tracer,
    kernel: &str,
    ins: &[Param],
    dtypes: &[DType],
    args: &[Operand],
    shape: &Shape,
) -> Result<()> {
    for ((p, &d), a) in ins.iter().zip(dtypes).zip(args) {
        match (a, p.raw) {
            (Operand::Array(x), true) => tr.raw(&p.name, x.clone()),
            (Operand::Scalar(_), true) => {
                return Err(Error::KernelRaw {
                    kernel: kernel.to_string(),
                    param: Some(p.name.clone()),
                    message: format!("the raw parameter `{}` takes an array, got a scalar", p.name),
                })
            }
            (Operand::Array(x), false) => {
                let v = Val::Array(x.broadcast_to_shape(shape)?);
                tr.define(&p.name, Var { ty: d, value: Some(v), kind: VarKind::Input });
            }
            (Operand::Scalar(s), false) => {
                let v = scalar(kernel, &p.name, *s, d)?;
                tr.define(&p.name, Var { ty: d, value: Some(v), kind: VarKind::Input });
            }
        }
    }
    Ok(())
}

/// The outputs' final values, broadcast to `shape` and labelled with the kernel's name.
pub(crate) fn collect_outputs(
    tr: &Tracer,
    kernel: &str,
    part: &str,
    outs: &[Param],
    shape: &Shape,
    end: Span,
) -> Result<Vec<Array>> {
    outs.iter()
        .map(|p| {
            if let Some(z) = tr.raw_outs.get(&p.name) {
                return Ok(label(z, kernel));
            }
            let var = tr.var(&p.name).expect("outputs are defined");
            let v = var.value.as_ref().ok_or_else(|| {
                Diag::code(end, format!("output `{}` is not assigned on every path (give an output argument to keep its old value)", p.name))
                    .into_error(kernel, part)
            })?;
            Ok(label(&v.to_array().broadcast_to_shape(shape)?, kernel))
        })
        .collect()
}
