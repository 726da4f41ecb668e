//! Tracing: kernel code run once, symbolically, its values lazy arrays of the loop's shape.
//!
//! Each statement updates an environment of typed variables. An `if` whose condition is an array
//! traces both branches and merges every variable they assign with `where(cond, then, else)`; an
//! `if` whose condition is known traces the branch taken. A `for` loop runs while its condition
//! is known (its trip count must be known when the kernel is traced), its body unrolled, at most
//! [`MAX_UNROLL`] iterations in all. Device functions of the preamble are inlined (the `inline`
//! module).

use std::collections::HashMap;

use kiln_ir::{DType, Literal};

use super::ast::*;
use super::builtins;
use super::diag::{DResult, Diag};
use super::values::{binary, cast, ir_err, select, truth, unary, Val};
use crate::array::Array;

/// Most `for` loop iterations one trace unrolls.
pub const MAX_UNROLL: usize = 1024;

/// What a name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VarKind {
    /// An input parameter: read-only (CuPy passes `const T&`).
    Input,
    /// An output parameter: assigned, and readable (its old value when an output argument was
    /// given).
    Output,
    /// A local variable.
    Local { is_const: bool },
    /// `i`, `_j` ...: read-only.
    Special,
    /// A local array (`ptrdiff_t idx[] = {..}`) of `len` elements, each the variable `name[k]`.
    LocalArray { len: usize, is_const: bool },
}

/// A variable: its C type and current value (`None` before it is assigned, or after an `if`
/// that assigns it on one side only).
#[derive(Clone, Debug)]
pub(crate) struct Var {
    pub ty: DType,
    pub value: Option<Val>,
    pub kind: VarKind,
}

pub(super) type Scope = HashMap<String, Var>;

pub(crate) struct Tracer<'f> {
    /// Bound type placeholders.
    pub(super) types: HashMap<String, DType>,
    pub(super) functions: &'f [Function],
    pub(super) scopes: Vec<Scope>,
    /// Raw arguments: whole arrays, read by indexing.
    pub(super) raws: HashMap<String, Array>,
    /// Raw output parameters: their current value, written by position (`z[k] = v`, a scatter).
    pub(super) raw_outs: HashMap<String, Array>,
    /// The loop's shape, where the code may write raw outputs.
    pub(super) loop_shape: Option<kiln_ir::Shape>,
    /// The conditions of the `if`s on arrays being traced (the else side's negated): a write to
    /// a raw output applies only where all hold.
    pub(super) conds: Vec<Val>,
    /// `name.size()`: `_ind` and friends.
    pub(super) sizes: HashMap<String, i64>,
    pub(super) unrolled: usize,
    pub(super) depth: usize,
}

impl<'f> Tracer<'f> {
    pub fn new(types: HashMap<String, DType>, functions: &'f [Function]) -> Tracer<'f> {
        Tracer {
            types,
            functions,
            scopes: vec![Scope::new()],
            raws: HashMap::new(),
            raw_outs: HashMap::new(),
            loop_shape: None,
            conds: Vec::new(),
            sizes: HashMap::new(),
            unrolled: 0,
            depth: 0,
        }
    }

    /// Defines a variable in the outermost scope (parameters and special names).
    pub fn define(&mut self, name: &str, var: Var) {
        self.scopes[0].insert(name.to_string(), var);
    }

    /// A raw argument.
    pub fn raw(&mut self, name: &str, a: Array) {
        self.raws.insert(name.to_string(), a);
    }

    /// `name.size()` is `n`.
    pub fn size(&mut self, name: &str, n: usize) {
        self.sizes.insert(name.to_string(), n as i64);
    }

    /// A variable's current state.
    pub fn var(&self, name: &str) -> Option<&Var> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    pub(super) fn var_mut(&mut self, name: &str) -> Option<&mut Var> {
        self.scopes.iter_mut().rev().find_map(|s| s.get_mut(name))
    }

    /// The dtype of a type as written.
    pub(super) fn resolve(&self, ty: &TypeName, span: Span) -> DResult<Option<DType>> {
        match ty {
            TypeName::C(d) => Ok(Some(*d)),
            TypeName::Auto => Ok(None),
            TypeName::Placeholder(p) => match self.types.get(p) {
                Some(d) => Ok(Some(*d)),
                None => Err(Diag::code(span, format!("type placeholder `{p}` is not bound"))),
            },
        }
    }

    // ---- statements

    /// Traces statements in the current scope.
    pub fn run(&mut self, stmts: &[Stmt]) -> DResult<()> {
        for s in stmts {
            self.exec(s)?;
        }
        Ok(())
    }

    pub(super) fn exec(&mut self, s: &Stmt) -> DResult<()> {
        match &s.kind {
            StmtKind::Empty => Ok(()),
            StmtKind::Expr(e) => self.eval(e).map(drop),
            StmtKind::Decl { ty, is_const, vars } => {
                for d in vars {
                    if d.array.is_some() {
                        self.declare_array(ty, *is_const, d, s.span)?;
                        continue;
                    }
                    let declared = self.resolve(ty, s.span)?;
                    let value = match &d.init {
                        Some(e) => Some(self.eval(e)?),
                        None if declared.is_none() => {
                            return Err(Diag::code(
                                d.span,
                                format!("`auto {}` needs an initialiser", d.name),
                            ))
                        }
                        None if *is_const => {
                            return Err(Diag::code(
                                d.span,
                                format!("const `{}` needs an initialiser", d.name),
                            ))
                        }
                        None => None,
                    };
                    let ty = declared.or(value.as_ref().map(Val::dtype)).expect("checked above");
                    let value = value.map(|v| cast(&v, ty));
                    let scope = self.scopes.last_mut().expect("a scope");
                    if scope.contains_key(&d.name) {
                        return Err(Diag::code(d.span, format!("redeclaration of `{}`", d.name)));
                    }
                    scope.insert(
                        d.name.clone(),
                        Var { ty, value, kind: VarKind::Local { is_const: *is_const } },
                    );
                }
                Ok(())
            }
            StmtKind::Block(b) => {
                self.scopes.push(Scope::new());
                let r = self.run(b);
                self.scopes.pop();
                r
            }
            StmtKind::If { cond, then, els } => {
                let c = truth(&self.eval(cond)?, cond.span)?;
                if let Some(k) = c.known_int() {
                    return match (k != 0, els) {
                        (true, _) => self.exec_scoped(then),
                        (false, Some(e)) => self.exec_scoped(e),
                        (false, None) => Ok(()),
                    };
                }
                let before = self.scopes.clone();
                self.conds.push(c.clone());
                let r = self.exec_scoped(then);
                self.conds.pop();
                r?;
                let after_then = std::mem::replace(&mut self.scopes, before);
                if let Some(e) = els {
                    self.conds.push(unary(UnOp::Not, &c, cond.span)?);
                    let r = self.exec_scoped(e);
                    self.conds.pop();
                    r?;
                }
                self.merge(&c, after_then, s.span)
            }
            StmtKind::For { init, cond, step, body } => {
                self.scopes.push(Scope::new());
                let r = self.for_loop(s.span, init.as_deref(), cond.as_ref(), step.as_ref(), body);
                self.scopes.pop();
                r
            }
            StmtKind::Return(_) => Err(Diag::unsupported(
                s.span,
                "`return` in a kernel's code (it would end the loop over elements)",
            )),
        }
    }

    /// A statement in a scope of its own (an `if` branch, a loop body).
    fn exec_scoped(&mut self, s: &Stmt) -> DResult<()> {
        self.scopes.push(Scope::new());
        let r = self.exec(s);
        self.scopes.pop();
        r
    }

    /// After an `if` on the array `c`: `self.scopes` are the else side's, `then` the then side's;
    /// variables they left different become `where(c, then, else)`.
    fn merge(&mut self, c: &Val, then: Vec<Scope>, span: Span) -> DResult<()> {
        for (level, tscope) in then.into_iter().enumerate() {
            for (name, tv) in tscope {
                let Some(ev) = self.scopes[level].get_mut(&name) else { continue };
                ev.value = match (tv.value, ev.value.take()) {
                    (Some(t), Some(e)) => Some(select(c, &t, &e, span)?),
                    _ => None,
                };
            }
        }
        Ok(())
    }

    fn for_loop(
        &mut self,
        span: Span,
        init: Option<&Stmt>,
        cond: Option<&Expr>,
        step: Option<&Expr>,
        body: &Stmt,
    ) -> DResult<()> {
        if let Some(i) = init {
            self.exec(i)?;
        }
        let Some(cond) = cond else {
            return Err(Diag::unsupported(span, "a `for` loop without a condition"));
        };
        loop {
            let c = truth(&self.eval(cond)?, cond.span)?;
            let Some(k) = c.known_int() else {
                return Err(Diag::unsupported(
                    cond.span,
                    "a `for` loop whose condition depends on array values (its trip count must be known when the kernel is traced)",
                ));
            };
            if k == 0 {
                return Ok(());
            }
            self.unrolled += 1;
            if self.unrolled > MAX_UNROLL {
                return Err(Diag::unsupported(
                    span,
                    format!("`for` loops of more than {MAX_UNROLL} iterations in all (they are unrolled when the kernel is traced)"),
                ));
            }
            self.exec_scoped(body)?;
            if let Some(st) = step {
                self.eval(st)?;
            }
        }
    }

    // ---- expressions

    pub fn eval(&mut self, e: &Expr) -> DResult<Val> {
        let span = e.span;
        match &e.kind {
            ExprKind::Int { value, dtype } => {
                Ok(Val::Const(Literal::from_i128(*dtype, *value as i128), *dtype))
            }
            ExprKind::Float { value, dtype } => {
                Ok(Val::Const(Literal::float(*dtype, *value), *dtype))
            }
            ExprKind::Bool(b) => Ok(Val::Const(Literal::Bool(*b), DType::Bool)),
            ExprKind::Name(n) => self.read(n, span),
            ExprKind::Unary(op, x) => {
                let v = self.eval(x)?;
                unary(*op, &v, span)
            }
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                binary(*op, &x, &y, span)
            }
            ExprKind::Assign { op, target, value } => {
                if let ExprKind::Index(base, idx) = &target.kind {
                    let v = self.eval(value)?;
                    return self.write_element(base, idx, *op, v, span);
                }
                let name = self.target(target)?;
                let mut v = self.eval(value)?;
                if let Some(op) = op {
                    let old = self.read(&name, target.span)?;
                    v = binary(*op, &old, &v, span)?;
                }
                self.write(&name, v, target.span)
            }
            ExprKind::Step { target, inc, prefix } => {
                let one = Val::Const(Literal::Int(1), DType::Int32);
                let op = if *inc { BinOp::Add } else { BinOp::Sub };
                if let ExprKind::Index(base, idx) = &target.kind {
                    let old = self.index(base, idx, target.span)?;
                    let new = self.write_element(base, idx, Some(op), one, span)?;
                    return Ok(if *prefix { new } else { old });
                }
                let name = self.target(target)?;
                let old = self.read(&name, target.span)?;
                let new = binary(op, &old, &one, span)?;
                let new = self.write(&name, new, target.span)?;
                Ok(if *prefix { new } else { old })
            }
            ExprKind::Ternary(c, t, f) => {
                let c = truth(&self.eval(c)?, c.span)?;
                let (tv, fv) = (self.eval(t)?, self.eval(f)?);
                let ty = super::ctypes::common(tv.dtype(), fv.dtype());
                let ty = if tv.dtype() == fv.dtype() { tv.dtype() } else { ty };
                select(&c, &cast(&tv, ty), &cast(&fv, ty), span)
            }
            ExprKind::Cast(ty, x) => {
                let v = self.eval(x)?;
                match self.resolve(ty, span)? {
                    Some(d) => Ok(cast(&v, d)),
                    None => Ok(v),
                }
            }
            ExprKind::Call { name, args } => {
                let vals = args.iter().map(|a| self.eval(a)).collect::<DResult<Vec<_>>>()?;
                match self.functions.iter().find(|f| &f.name == name) {
                    Some(f) => self.inline(f, vals, span),
                    None => builtins::call(name, &vals, span),
                }
            }
            ExprKind::Index(base, idx) => self.index(base, idx, span),
            ExprKind::Method { base, name, args } => {
                let ExprKind::Name(b) = &base.kind else {
                    return Err(Diag::unsupported(
                        span,
                        format!("the method `{name}` of an expression"),
                    ));
                };
                self.method(b, name, args, span)
            }
            ExprKind::Comma(a, b) => {
                self.eval(a)?;
                self.eval(b)
            }
        }
    }

    /// The variable an assignment writes.
    fn target(&self, t: &Expr) -> DResult<String> {
        match &t.kind {
            ExprKind::Name(n) => Ok(n.clone()),
            _ => Err(Diag::code(t.span, "the left side of an assignment must be a variable")),
        }
    }

    fn read(&self, name: &str, span: Span) -> DResult<Val> {
        if let Some(v) = self.var(name) {
            return v.value.clone().ok_or_else(|| {
                let hint = match v.kind {
                    VarKind::Output => " (give an output argument to read its old value)",
                    VarKind::LocalArray { .. } => {
                        return Diag::code(
                            span,
                            format!("`{name}` is a local array: read its elements (`{name}[k]`)"),
                        )
                    }
                    _ => "",
                };
                Diag::code(
                    span,
                    format!("`{name}` is read before it is assigned on every path{hint}"),
                )
            });
        }
        if self.raws.contains_key(name) || self.raw_outs.contains_key(name) {
            return Err(Diag::code(
                span,
                format!("`{name}` is a raw argument: read its elements (`{name}[k]`)"),
            ));
        }
        if let Some(c) = builtins::constant(name) {
            return Ok(c);
        }
        if self.sizes.contains_key(name) {
            return Err(Diag::code(span, format!("`{name}` is only used as `{name}.size()`")));
        }
        Err(Diag::code(span, format!("unknown name `{name}`")))
    }

    /// Assigns `v` (converted to the variable's type) to `name`; returns the stored value.
    fn write(&mut self, name: &str, v: Val, span: Span) -> DResult<Val> {
        let Some(var) = self.var_mut(name) else {
            return Err(match self.raws.contains_key(name) || self.raw_outs.contains_key(name) {
                true => Diag::code(
                    span,
                    format!("`{name}` is a raw argument: assign its elements (`{name}[k] = ..`)"),
                ),
                false => Diag::code(span, format!("unknown name `{name}`")),
            });
        };
        match var.kind {
            VarKind::Input => {
                return Err(Diag::code(
                    span,
                    format!("`{name}` is an input parameter: it is read-only"),
                ))
            }
            VarKind::Special => return Err(Diag::code(span, format!("`{name}` is read-only"))),
            VarKind::Local { is_const: true } => {
                return Err(Diag::code(span, format!("`{name}` is const")))
            }
            VarKind::LocalArray { .. } => {
                return Err(Diag::code(
                    span,
                    format!("`{name}` is a local array: assign its elements (`{name}[k] = ..`)"),
                ))
            }
            VarKind::Output | VarKind::Local { is_const: false } => {}
        }
        let v = cast(&v, var.ty);
        var.value = Some(v.clone());
        Ok(v)
    }

    /// `base[idx]`: an element of a raw argument, in C order over its flattened elements
    /// (`take`, positions wrapped into range).
    pub(super) fn index(&mut self, base: &Expr, idx: &Expr, span: Span) -> DResult<Val> {
        if let Some(v) = self.dims_element(base, idx)? {
            return Ok(v);
        }
        let ExprKind::Name(name) = &base.kind else {
            return Err(Diag::unsupported(
                span,
                "indexing an expression (only raw arguments are indexed)",
            ));
        };
        if let Some(v) = self.local_element(name, idx, span)? {
            return Ok(v);
        }
        let Some(a) = self.raws.get(name).or_else(|| self.raw_outs.get(name)).cloned() else {
            let what = if self.var(name).is_some() {
                "it is not a raw argument (declare it `raw`)"
            } else {
                "it is unknown"
            };
            return Err(Diag::code(span, format!("`{name}` cannot be indexed: {what}")));
        };
        let k = self.position(&a, idx)?;
        // The raw array is read whole: no broadcasting between it and the positions.
        let k = cast(&k, DType::Int64).to_array();
        let t = Array::apply(kiln_ir::OpKind::Take, kiln_ir::Attrs::None, &[&a, &k])
            .map_err(|e| ir_err(span, e))?;
        Ok(Val::Array(t))
    }
}
