//! Positions in traced code: raw arguments' `size()`, `shape()[k]` and `strides()[k]`, local
//! arrays (`ptrdiff_t idx[] = {i / 4, i % 4}`, a variable per element) and their use as a
//! multi-dimensional index (`x[idx]`, CuPy's `CArray::operator[](const ptrdiff_t*)`), and writes
//! by position into raw output parameters (`z[k] = v`): a scatter.
//!
//! A write `z[k] = v` traced for every element of the loop at once is one IR `scatter` of the
//! loop's positions and values into `z` (flattened, C order); positions wrap into range as reads
//! do. Where two elements of the loop write one position, the later in the loop's C order wins
//! (CUDA's threads race; CuPy's result is whichever wrote last). Under an `if` on an array, a
//! write applies only where the conditions of the enclosing `if`s hold: the other elements
//! write a spare slot past the end, which is then cut off. A read `z[k]` after a write reads
//! the written array.

use kiln_ir::{Attrs, DType, Literal, OpKind};

use super::ast::*;
use super::ctypes::c_name;
use super::diag::{DResult, Diag};
use super::trace::{Tracer, Var, VarKind};
use super::values::{binary, cast, ir_err, select, Val};
use crate::array::Array;

/// Most elements of a local array (each is a traced variable).
pub const MAX_LOCAL_ARRAY: usize = 1024;

/// The name of element `k` of the local array `name` (not a C identifier: no clash).
fn element(name: &str, k: usize) -> String {
    format!("{name}[{k}]")
}

/// C-order strides of `shape`, in elements.
fn c_strides(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1] as i64;
    }
    s
}

/// The known position `k` in the local array `name` of `len` elements, checked.
fn slot(name: &str, len: usize, k: i128, span: Span) -> DResult<usize> {
    usize::try_from(k)
        .ok()
        .filter(|&k| k < len)
        .ok_or_else(|| Diag::code(span, format!("index {k} is out of range for `{name}[{len}]`")))
}

fn int64(v: i64) -> Val {
    Val::Const(Literal::Int(v), DType::Int64)
}

impl Tracer<'_> {
    /// `b.name(args)`: `size()` of `_ind` and the like or of a raw argument; `shape()` and
    /// `strides()` are read by element (`x.shape()[k]`).
    pub(super) fn method(&self, b: &str, name: &str, args: &[Expr], span: Span) -> DResult<Val> {
        if !args.is_empty() || !matches!(name, "size" | "shape" | "strides") {
            return Err(Diag::unsupported(
                span,
                format!("`{b}.{name}(..)` (only `.size()`, `.shape()[k]`, `.strides()[k]`)"),
            ));
        }
        if name != "size" {
            return Err(Diag::code(
                span,
                format!("`{b}.{name}()` is read by element (`{b}.{name}()[k]`)"),
            ));
        }
        let n = match (self.sizes.get(b), self.raw_array(b)) {
            (Some(&n), _) => n,
            (None, Some(a)) => a.size() as i64,
            (None, None) => {
                return Err(Diag::code(
                    span,
                    format!("`{b}` has no `size()`: it is not a raw argument"),
                ))
            }
        };
        Ok(int64(n))
    }

    /// A raw input or output argument.
    fn raw_array(&self, name: &str) -> Option<&Array> {
        self.raws.get(name).or_else(|| self.raw_outs.get(name))
    }

    /// `x.shape()[k]` or `x.strides()[k]` of a raw argument: its extents, or its C-order
    /// strides in bytes (kiln hands raw arguments over contiguous); `None` if `base` is not
    /// such a call.
    pub(super) fn dims_element(&mut self, base: &Expr, idx: &Expr) -> DResult<Option<Val>> {
        let ExprKind::Method { base: b, name, args } = &base.kind else { return Ok(None) };
        let (ExprKind::Name(b), "shape" | "strides", true) =
            (&b.kind, name.as_str(), args.is_empty())
        else {
            return Ok(None);
        };
        let Some(a) = self.raw_array(b) else {
            return Err(Diag::code(
                base.span,
                format!("`{b}` has no `{name}()`: it is not a raw argument"),
            ));
        };
        let values: Vec<i64> = match name.as_str() {
            "shape" => a.shape().iter().map(|&d| d as i64).collect(),
            _ => c_strides(a.shape()).iter().map(|s| s * a.dtype().itemsize() as i64).collect(),
        };
        let values: Vec<Val> = values.into_iter().map(int64).collect();
        let what = format!("`{b}.{name}()`");
        let k = self.eval(idx)?;
        self.pick(&what, &values, &k, idx.span).map(Some)
    }

    /// Element `k` of `values` (a list of `what`): known `k` must be in range; an array `k`
    /// selects among them (out of range: the last).
    fn pick(&self, what: &str, values: &[Val], k: &Val, span: Span) -> DResult<Val> {
        if !(k.dtype().is_integer() || k.dtype().is_bool()) {
            return Err(Diag::code(
                span,
                format!("an index of type {} (it must be an integer)", c_name(k.dtype())),
            ));
        }
        if let Some(k) = k.known_int() {
            return usize::try_from(k).ok().and_then(|k| values.get(k)).cloned().ok_or_else(|| {
                Diag::code(
                    span,
                    format!("index {k} is out of range for {what} of {} elements", values.len()),
                )
            });
        }
        let Some(mut acc) = values.last().cloned() else {
            return Err(Diag::code(span, format!("{what} has no elements")));
        };
        for (j, v) in values.iter().enumerate().rev().skip(1) {
            let c = binary(BinOp::Eq, k, &int64(j as i64), span)?;
            let ty = super::ctypes::common(v.dtype(), acc.dtype());
            acc = select(&c, &cast(v, ty), &cast(&acc, ty), span)?;
        }
        Ok(acc)
    }

    // ---- local arrays

    /// `T name[len] = {..};`: a marker variable and one variable per element (zero where the
    /// list is shorter, as C++'s aggregate initialisation; unassigned without a list).
    pub(super) fn declare_array(
        &mut self,
        ty: &TypeName,
        is_const: bool,
        d: &Declarator,
        span: Span,
    ) -> DResult<()> {
        let Some(elem) = self.resolve(ty, span)? else {
            return Err(Diag::code(d.span, format!("`auto {}[]`: an array needs a type", d.name)));
        };
        let list = match &d.list {
            Some(items) => Some(items.iter().map(|e| self.eval(e)).collect::<DResult<Vec<_>>>()?),
            None => None,
        };
        let len = match d.array.as_ref().expect("an array declarator") {
            Some(e) => {
                let n = self.eval(e)?;
                match n.known_int() {
                    Some(n) if n > 0 => n as usize,
                    Some(n) => return Err(Diag::code(e.span, format!("an array of {n} elements"))),
                    None => {
                        return Err(Diag::unsupported(
                            e.span,
                            "an array whose length is not known when the kernel is traced",
                        ))
                    }
                }
            }
            None => list.as_ref().map_or(0, Vec::len),
        };
        if len == 0 || len > MAX_LOCAL_ARRAY {
            return Err(Diag::unsupported(
                d.span,
                format!("a local array of {len} elements (1 to {MAX_LOCAL_ARRAY}: each is traced)"),
            ));
        }
        if list.as_ref().is_some_and(|l| l.len() > len) {
            return Err(Diag::code(
                d.span,
                format!("too many initialisers for `{}[{len}]`", d.name),
            ));
        }
        if is_const && list.is_none() {
            return Err(Diag::code(d.span, format!("const `{}` needs an initialiser", d.name)));
        }
        // Known values are never complex (complex values are arrays, see `values`).
        let zero = match elem.is_complex() {
            true => Val::Array(Array::literal(elem, Literal::from_i128(elem, 0))),
            false => Val::Const(Literal::from_i128(elem, 0), elem),
        };
        let scope = self.scopes.last_mut().expect("a scope");
        if scope.contains_key(&d.name) {
            return Err(Diag::code(d.span, format!("redeclaration of `{}`", d.name)));
        }
        scope.insert(
            d.name.clone(),
            Var { ty: elem, value: None, kind: VarKind::LocalArray { len, is_const } },
        );
        for k in 0..len {
            let value = list.as_ref().map(|l| cast(l.get(k).unwrap_or(&zero), elem));
            scope.insert(
                element(&d.name, k),
                Var { ty: elem, value, kind: VarKind::Local { is_const } },
            );
        }
        Ok(())
    }

    /// The local array `name`'s length, if it is one.
    fn local_len(&self, name: &str) -> Option<usize> {
        match self.var(name)?.kind {
            VarKind::LocalArray { len, .. } => Some(len),
            _ => None,
        }
    }

    /// The elements of the local array `name` (of `len`), each assigned.
    fn local_values(&self, name: &str, len: usize, span: Span) -> DResult<Vec<Val>> {
        (0..len)
            .map(|k| {
                self.var(&element(name, k)).and_then(|v| v.value.clone()).ok_or_else(|| {
                    Diag::code(span, format!("`{name}[{k}]` is read before it is assigned"))
                })
            })
            .collect()
    }

    /// `name[idx]` when `name` is a local array: its element (`None` otherwise).
    pub(super) fn local_element(
        &mut self,
        name: &str,
        idx: &Expr,
        span: Span,
    ) -> DResult<Option<Val>> {
        let Some(len) = self.local_len(name) else { return Ok(None) };
        let k = self.eval(idx)?;
        if let Some(k) = k.known_int() {
            let var = self.var(&element(name, slot(name, len, k, idx.span)?)).expect("declared");
            return var.value.clone().map(Some).ok_or_else(|| {
                Diag::code(span, format!("`{name}[{k}]` is read before it is assigned"))
            });
        }
        let values = self.local_values(name, len, span)?;
        self.pick(&format!("`{name}`"), &values, &k, idx.span).map(Some)
    }

    /// The flat position `idx` names in the raw array `a`: an integer, or a local array of at
    /// least `a.ndim()` indices (CuPy's multi-dimensional index, C-order strides).
    pub(super) fn position(&mut self, a: &Array, idx: &Expr) -> DResult<Val> {
        if let ExprKind::Name(n) = &idx.kind {
            if let Some(len) = self.local_len(n) {
                if len < a.ndim() {
                    return Err(Diag::code(
                        idx.span,
                        format!("`{n}` has {len} indices for an array of {} dimensions", a.ndim()),
                    ));
                }
                let values = self.local_values(n, len, idx.span)?;
                let mut flat = int64(0);
                for (v, stride) in values.iter().zip(c_strides(a.shape())) {
                    let v = cast(v, DType::Int64);
                    let term = binary(BinOp::Mul, &v, &int64(stride), idx.span)?;
                    flat = binary(BinOp::Add, &flat, &term, idx.span)?;
                }
                return Ok(flat);
            }
        }
        let k = self.eval(idx)?;
        if !(k.dtype().is_integer() || k.dtype().is_bool()) {
            return Err(Diag::code(
                idx.span,
                format!("an index of type {} (it must be an integer)", c_name(k.dtype())),
            ));
        }
        Ok(k)
    }

    // ---- writes by position

    /// `base[idx] op= v`: an element of a local array, or of a raw output parameter (a scatter
    /// of every element of the loop). Returns the value written.
    pub(super) fn write_element(
        &mut self,
        base: &Expr,
        idx: &Expr,
        op: Option<BinOp>,
        v: Val,
        span: Span,
    ) -> DResult<Val> {
        let ExprKind::Name(name) = &base.kind else {
            return Err(Diag::code(base.span, "the left side of an assignment must be a variable"));
        };
        let v = match op {
            Some(op) => {
                let old = self.index(base, idx, span)?;
                binary(op, &old, &v, span)?
            }
            None => v,
        };
        if let Some(len) = self.local_len(name) {
            return self.write_local(name, len, idx, v, span);
        }
        if self.raws.contains_key(name) {
            return Err(Diag::unsupported(
                base.span,
                format!("writing to the raw input `{name}` (declare it a raw output parameter: writes by position are a scatter)"),
            ));
        }
        let Some(z) = self.raw_outs.get(name).cloned() else {
            let what = if self.var(name).is_some() {
                "it is not a raw argument (an output written by position is declared `raw`)"
            } else {
                "it is unknown"
            };
            return Err(Diag::code(base.span, format!("`{name}` cannot be indexed: {what}")));
        };
        let k = self.position(&z, idx)?;
        let v = cast(&v, z.dtype());
        let written = self.scatter(&z, &k, &v, span)?;
        self.raw_outs.insert(name.clone(), written);
        Ok(v)
    }

    fn write_local(
        &mut self,
        name: &str,
        len: usize,
        idx: &Expr,
        v: Val,
        span: Span,
    ) -> DResult<Val> {
        if matches!(
            self.var(name).map(|v| v.kind),
            Some(VarKind::LocalArray { is_const: true, .. })
        ) {
            return Err(Diag::code(span, format!("`{name}` is const")));
        }
        let ty = self.var(name).expect("declared").ty;
        let v = cast(&v, ty);
        let k = self.eval(idx)?;
        if let Some(k) = k.known_int() {
            let var =
                self.var_mut(&element(name, slot(name, len, k, idx.span)?)).expect("declared");
            var.value = Some(v.clone());
            return Ok(v);
        }
        // A position known only per element: each element of the array selects.
        let values = self.local_values(name, len, span)?;
        for (j, old) in values.iter().enumerate() {
            let c = binary(BinOp::Eq, &k, &int64(j as i64), span)?;
            let new = select(&c, &v, old, span)?;
            self.var_mut(&element(name, j)).expect("declared").value = Some(new);
        }
        Ok(v)
    }

    /// `z` with `v` written at positions `k` (wrapped) by every element of the loop where the
    /// enclosing conditions hold.
    fn scatter(&self, z: &Array, k: &Val, v: &Val, span: Span) -> DResult<Array> {
        let shape = self.loop_shape.clone().ok_or_else(|| {
            Diag::unsupported(span, "writing by position outside an elementwise kernel")
        })?;
        let n = z.size();
        let m: usize = shape.iter().product();
        if n == 0 {
            if m == 0 {
                return Ok(z.clone());
            }
            return Err(Diag::code(span, "writing to a raw output of no elements"));
        }
        let dims = [m as i64];
        let flat_loop = |a: &Array| -> DResult<Array> {
            a.broadcast_to_shape(&shape)
                .and_then(|b| b.try_reshape(&dims))
                .map_err(|e| ir_err(span, e))
        };
        let k = cast(k, DType::Int64).to_array();
        let mut pos = flat_loop(&k.try_remainder(n as i64).map_err(|e| ir_err(span, e))?)?;
        let values = flat_loop(&v.to_array())?;
        let flat = z.try_reshape(&[n as i64]).map_err(|e| ir_err(span, e))?;
        let mut mask: Option<Val> = None;
        for c in &self.conds {
            mask = Some(match mask {
                None => c.clone(),
                Some(m) => binary(BinOp::And, &m, c, span)?,
            });
        }
        let written = match mask {
            None => Array::apply(OpKind::Scatter, Attrs::None, &[&flat, &pos, &values]),
            Some(mask) => {
                // Elements where the conditions fail write a spare slot at `n`, cut off after.
                let mask = flat_loop(&mask.to_array())?;
                let spare = Array::literal(z.dtype(), Literal::from_i128(z.dtype(), 0))
                    .try_reshape(&[1])
                    .map_err(|e| ir_err(span, e))?;
                let ext = crate::views::try_concatenate(&[&flat, &spare], 0)
                    .map_err(|e| ir_err(span, e))?;
                pos = crate::elementwise::try_where_(&mask, &pos, n as i64)
                    .map_err(|e| ir_err(span, e))?;
                let head = crate::SliceArg::Range { start: Some(0), stop: Some(n as i64), step: 1 };
                Array::apply(OpKind::Scatter, Attrs::None, &[&ext, &pos, &values])
                    .and_then(|w| w.try_slice(&[head]))
            }
        }
        .map_err(|e| ir_err(span, e))?;
        let dims: Vec<i64> = z.shape().iter().map(|&d| d as i64).collect();
        written.try_reshape(&dims).map_err(|e| ir_err(span, e))
    }
}
