//! Tracing: kernel code run once, symbolically, its values lazy arrays of the loop's shape.
//!
//! Each statement updates an environment of typed variables. An `if` whose condition is an array
//! traces both branches and merges every variable they assign with `where(cond, then, else)`; an
//! `if` whose condition is known traces the branch taken. A `for` loop runs while its condition
//! is known (its trip count must be known when the kernel is traced), its body unrolled, at most
//! [`MAX_UNROLL`] iterations in all. Device functions of the preamble are inlined; a `return`
//! may end any branch of an `if` (the rest of the function is traced on both sides).

use std::collections::{HashMap, VecDeque};

use kiln_ir::{DType, Literal};

use super::ast::*;
use super::builtins;
use super::ctypes::c_name;
use super::diag::{DResult, Diag};
use super::values::{binary, cast, ir_err, select, truth, unary, Val};
use crate::array::Array;

/// Most `for` loop iterations one trace unrolls.
pub const MAX_UNROLL: usize = 1024;

/// Deepest nesting of device function calls (recursion is unrolled too).
const MAX_DEPTH: usize = 32;

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
}

/// A variable: its C type and current value (`None` before it is assigned, or after an `if`
/// that assigns it on one side only).
#[derive(Clone, Debug)]
pub(crate) struct Var {
    pub ty: DType,
    pub value: Option<Val>,
    pub kind: VarKind,
}

type Scope = HashMap<String, Var>;

pub(crate) struct Tracer<'f> {
    /// Bound type placeholders.
    types: HashMap<String, DType>,
    functions: &'f [Function],
    scopes: Vec<Scope>,
    /// Raw arguments: whole arrays, read by indexing.
    raws: HashMap<String, Array>,
    /// `name.size()`: `_ind` and friends.
    sizes: HashMap<String, i64>,
    unrolled: usize,
    depth: usize,
}

/// A statement still to trace in a function body, or the end of a block's scope.
#[derive(Clone, Copy)]
enum Item<'s> {
    Stmt(&'s Stmt),
    Pop,
}

/// A branch `b` (in a scope of its own) followed by the statements `rest`.
fn branch<'s>(b: Option<&'s Stmt>, rest: &VecDeque<Item<'s>>) -> VecDeque<Item<'s>> {
    let mut v = rest.clone();
    if let Some(b) = b {
        v.push_front(Item::Pop);
        v.push_front(Item::Stmt(b));
    }
    v
}

fn contains_return(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Return(_) => true,
        StmtKind::Block(b) => b.iter().any(contains_return),
        StmtKind::If { then, els, .. } => contains_return(then) || els.as_deref().is_some_and(contains_return),
        StmtKind::For { body, .. } => contains_return(body),
        StmtKind::Decl { .. } | StmtKind::Expr(_) | StmtKind::Empty => false,
    }
}

impl<'f> Tracer<'f> {
    pub fn new(types: HashMap<String, DType>, functions: &'f [Function]) -> Tracer<'f> {
        Tracer {
            types,
            functions,
            scopes: vec![Scope::new()],
            raws: HashMap::new(),
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

    fn var_mut(&mut self, name: &str) -> Option<&mut Var> {
        self.scopes.iter_mut().rev().find_map(|s| s.get_mut(name))
    }

    /// The dtype of a type as written.
    fn resolve(&self, ty: &TypeName, span: Span) -> DResult<Option<DType>> {
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

    fn exec(&mut self, s: &Stmt) -> DResult<()> {
        match &s.kind {
            StmtKind::Empty => Ok(()),
            StmtKind::Expr(e) => self.eval(e).map(drop),
            StmtKind::Decl { ty, is_const, vars } => {
                for d in vars {
                    let declared = self.resolve(ty, s.span)?;
                    let value = match &d.init {
                        Some(e) => Some(self.eval(e)?),
                        None if declared.is_none() => {
                            return Err(Diag::code(d.span, format!("`auto {}` needs an initialiser", d.name)))
                        }
                        None if *is_const => {
                            return Err(Diag::code(d.span, format!("const `{}` needs an initialiser", d.name)))
                        }
                        None => None,
                    };
                    let ty = declared.or(value.as_ref().map(Val::dtype)).expect("checked above");
                    let value = value.map(|v| cast(&v, ty));
                    let scope = self.scopes.last_mut().expect("a scope");
                    if scope.contains_key(&d.name) {
                        return Err(Diag::code(d.span, format!("redeclaration of `{}`", d.name)));
                    }
                    scope.insert(d.name.clone(), Var { ty, value, kind: VarKind::Local { is_const: *is_const } });
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
                self.exec_scoped(then)?;
                let after_then = std::mem::replace(&mut self.scopes, before);
                if let Some(e) = els {
                    self.exec_scoped(e)?;
                }
                self.merge(&c, after_then, s.span)
            }
            StmtKind::For { init, cond, step, body } => {
                self.scopes.push(Scope::new());
                let r = self.for_loop(s.span, init.as_deref(), cond.as_ref(), step.as_ref(), body);
                self.scopes.pop();
                r
            }
            StmtKind::Return(_) => {
                Err(Diag::unsupported(s.span, "`return` in a kernel's code (it would end the loop over elements)"))
            }
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

    fn for_loop(&mut self, span: Span, init: Option<&Stmt>, cond: Option<&Expr>, step: Option<&Expr>, body: &Stmt) -> DResult<()> {
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
            ExprKind::Int { value, dtype } => Ok(Val::Const(Literal::from_i128(*dtype, *value as i128), *dtype)),
            ExprKind::Float { value, dtype } => Ok(Val::Const(Literal::float(*dtype, *value), *dtype)),
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
                let name = self.target(target)?;
                let mut v = self.eval(value)?;
                if let Some(op) = op {
                    let old = self.read(&name, target.span)?;
                    v = binary(*op, &old, &v, span)?;
                }
                self.write(&name, v, target.span)
            }
            ExprKind::Step { target, inc, prefix } => {
                let name = self.target(target)?;
                let old = self.read(&name, target.span)?;
                let one = Val::Const(Literal::Int(1), DType::Int32);
                let new = binary(if *inc { BinOp::Add } else { BinOp::Sub }, &old, &one, span)?;
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
                    return Err(Diag::unsupported(span, format!("the method `{name}` of an expression")));
                };
                if name != "size" || !args.is_empty() {
                    return Err(Diag::unsupported(span, format!("`{b}.{name}(..)` (only `.size()`)")));
                }
                let n = match (self.sizes.get(b), self.raws.get(b)) {
                    (Some(&n), _) => n,
                    (None, Some(a)) => a.size() as i64,
                    (None, None) => return Err(Diag::code(span, format!("`{b}` has no `size()`: it is not a raw argument"))),
                };
                Ok(Val::Const(Literal::Int(n), DType::Int64))
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
            ExprKind::Index(..) => Err(Diag::unsupported(
                t.span,
                "assigning to an element of a raw argument (a scatter: kiln's kernels compute each element of their outputs)",
            )),
            _ => Err(Diag::code(t.span, "the left side of an assignment must be a variable")),
        }
    }

    fn read(&self, name: &str, span: Span) -> DResult<Val> {
        if let Some(v) = self.var(name) {
            return v.value.clone().ok_or_else(|| {
                let hint = match v.kind {
                    VarKind::Output => " (give an output argument to read its old value)",
                    _ => "",
                };
                Diag::code(span, format!("`{name}` is read before it is assigned on every path{hint}"))
            });
        }
        if self.raws.contains_key(name) {
            return Err(Diag::code(span, format!("`{name}` is a raw argument: read its elements (`{name}[k]`)")));
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
            return Err(match self.raws.contains_key(name) {
                true => Diag::unsupported(span, "assigning to a raw argument"),
                false => Diag::code(span, format!("unknown name `{name}`")),
            });
        };
        match var.kind {
            VarKind::Input => return Err(Diag::code(span, format!("`{name}` is an input parameter: it is read-only"))),
            VarKind::Special => return Err(Diag::code(span, format!("`{name}` is read-only"))),
            VarKind::Local { is_const: true } => return Err(Diag::code(span, format!("`{name}` is const"))),
            VarKind::Output | VarKind::Local { is_const: false } => {}
        }
        let v = cast(&v, var.ty);
        var.value = Some(v.clone());
        Ok(v)
    }

    /// `base[idx]`: an element of a raw argument, in C order over its flattened elements
    /// (`take`, positions wrapped into range).
    fn index(&mut self, base: &Expr, idx: &Expr, span: Span) -> DResult<Val> {
        let ExprKind::Name(name) = &base.kind else {
            return Err(Diag::unsupported(span, "indexing an expression (only raw arguments are indexed)"));
        };
        let Some(a) = self.raws.get(name).cloned() else {
            let what = if self.var(name).is_some() { "it is not a raw argument (declare it `raw`)" } else { "it is unknown" };
            return Err(Diag::code(span, format!("`{name}` cannot be indexed: {what}")));
        };
        let k = self.eval(idx)?;
        if !(k.dtype().is_integer() || k.dtype().is_bool()) {
            return Err(Diag::code(idx.span, format!("an index of type {} (it must be an integer)", c_name(k.dtype()))));
        }
        // The raw array is read whole: no broadcasting between it and the positions.
        let k = cast(&k, DType::Int64).to_array();
        let t = Array::apply(kiln_ir::OpKind::Take, kiln_ir::Attrs::None, &[&a, &k]).map_err(|e| ir_err(span, e))?;
        Ok(Val::Array(t))
    }

    // ---- device functions

    /// A device function of the preamble, inlined: its template parameters bound by the
    /// arguments' types, its body traced with the arguments as its parameters.
    fn inline(&mut self, f: &Function, args: Vec<Val>, span: Span) -> DResult<Val> {
        if args.len() != f.params.len() {
            return Err(Diag::code(span, format!("`{}` takes {} argument(s), got {}", f.name, f.params.len(), args.len())));
        }
        if self.depth >= MAX_DEPTH {
            return Err(Diag::unsupported(span, format!("calls nested more than {MAX_DEPTH} deep (recursion)")));
        }
        let Some(ret) = &f.ret else {
            return Err(Diag::unsupported(f.span, format!("the void function `{}` (device functions return a value)", f.name)));
        };
        let mut types = self.types.clone();
        for t in &f.templates {
            types.remove(t);
        }
        for (p, a) in f.params.iter().zip(&args) {
            if let TypeName::Placeholder(t) = &p.ty {
                if f.templates.contains(t) {
                    match types.get(t) {
                        Some(&d) if d != a.dtype() => {
                            return Err(Diag::code(span, format!(
                                "`{}`: template parameter `{t}` deduced as both {} and {}",
                                f.name,
                                c_name(d),
                                c_name(a.dtype())
                            )))
                        }
                        _ => {
                            types.insert(t.clone(), a.dtype());
                        }
                    }
                }
            }
        }
        let mut sub = Tracer::new(types, self.functions);
        sub.depth = self.depth + 1;
        sub.unrolled = self.unrolled;
        for (p, a) in f.params.iter().zip(args) {
            let ty = sub.resolve(&p.ty, span)?.unwrap_or(a.dtype());
            sub.define(&p.name, Var { ty, value: Some(cast(&a, ty)), kind: VarKind::Local { is_const: false } });
        }
        let ret_ty = sub.resolve(ret, f.span)?;
        let items = f.body.iter().map(Item::Stmt).collect();
        let v = sub.returning(items, ret_ty)?;
        self.unrolled = sub.unrolled;
        let v = v.ok_or_else(|| Diag::code(span, format!("`{}` does not return a value on every path", f.name)))?;
        Ok(match ret_ty {
            Some(t) => cast(&v, t),
            None => v,
        })
    }

    /// Traces a function body to its returned value (converted to `ret`); `None` if some path
    /// ends without `return`.
    fn returning<'s>(&mut self, items: VecDeque<Item<'s>>, ret: Option<DType>) -> DResult<Option<Val>> {
        let mut items = items;
        while let Some(item) = items.pop_front() {
            let s = match item {
                Item::Pop => {
                    self.scopes.pop();
                    continue;
                }
                Item::Stmt(s) => s,
            };
            if !contains_return(s) {
                self.exec(s)?;
                continue;
            }
            match &s.kind {
                StmtKind::Return(e) => {
                    let Some(e) = e else { return Err(Diag::code(s.span, "`return;` without a value")) };
                    let v = self.eval(e)?;
                    return Ok(Some(match ret {
                        Some(t) => cast(&v, t),
                        None => v,
                    }));
                }
                StmtKind::Block(b) => {
                    self.scopes.push(Scope::new());
                    items.push_front(Item::Pop);
                    for st in b.iter().rev() {
                        items.push_front(Item::Stmt(st));
                    }
                }
                StmtKind::If { cond, then, els } => {
                    let c = truth(&self.eval(cond)?, cond.span)?;
                    if let Some(k) = c.known_int() {
                        let b = if k != 0 { Some(&**then) } else { els.as_deref() };
                        if b.is_some() {
                            self.scopes.push(Scope::new());
                        }
                        items = branch(b, &items);
                        continue;
                    }
                    let before = self.scopes.clone();
                    self.scopes.push(Scope::new());
                    let t = self.returning(branch(Some(then), &items), ret)?;
                    self.scopes = before.clone();
                    if els.is_some() {
                        self.scopes.push(Scope::new());
                    }
                    let f = self.returning(branch(els.as_deref(), &items), ret)?;
                    self.scopes = before;
                    return match (t, f) {
                        (Some(t), Some(f)) => {
                            let ty = if t.dtype() == f.dtype() { t.dtype() } else { super::ctypes::common(t.dtype(), f.dtype()) };
                            Ok(Some(select(&c, &cast(&t, ty), &cast(&f, ty), s.span)?))
                        }
                        _ => Ok(None),
                    };
                }
                _ => return Err(Diag::unsupported(s.span, "`return` inside a `for` loop")),
            }
        }
        Ok(None)
    }
}
