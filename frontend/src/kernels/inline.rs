//! Device functions of the preamble, inlined where they are called.
//!
//! A call binds the function's template parameters from its arguments' types (C++'s deduction,
//! without conversions), converts the arguments to the parameters' types and traces the body in
//! a scope of its own (a device function sees only its parameters). A `return` may end any branch
//! of an `if`: the statements after the `if` are traced on both sides, and the returned values
//! are selected by the condition. Calls nest at most [`MAX_DEPTH`] deep.

use std::collections::VecDeque;

use kiln_ir::DType;

use super::ast::*;
use super::ctypes::{c_name, common};
use super::diag::{DResult, Diag};
use super::trace::{Scope, Tracer, Var, VarKind};
use super::values::{cast, select, truth, Val};

/// Deepest nesting of device function calls (recursion is unrolled too).
const MAX_DEPTH: usize = 32;

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
        StmtKind::If { then, els, .. } => {
            contains_return(then) || els.as_deref().is_some_and(contains_return)
        }
        StmtKind::For { body, .. } => contains_return(body),
        StmtKind::Decl { .. } | StmtKind::Expr(_) | StmtKind::Empty => false,
    }
}

impl Tracer<'_> {
    // ---- device functions

    /// A device function of the preamble, inlined: its template parameters bound by the
    /// arguments' types, its body traced with the arguments as its parameters.
    pub(super) fn inline(&mut self, f: &Function, args: Vec<Val>, span: Span) -> DResult<Val> {
        if args.len() != f.params.len() {
            return Err(Diag::code(
                span,
                format!("`{}` takes {} argument(s), got {}", f.name, f.params.len(), args.len()),
            ));
        }
        if self.depth >= MAX_DEPTH {
            return Err(Diag::unsupported(
                span,
                format!("calls nested more than {MAX_DEPTH} deep (recursion)"),
            ));
        }
        let Some(ret) = &f.ret else {
            return Err(Diag::unsupported(
                f.span,
                format!("the void function `{}` (device functions return a value)", f.name),
            ));
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
                            return Err(Diag::code(
                                span,
                                format!(
                                    "`{}`: template parameter `{t}` deduced as both {} and {}",
                                    f.name,
                                    c_name(d),
                                    c_name(a.dtype())
                                ),
                            ))
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
            sub.define(
                &p.name,
                Var { ty, value: Some(cast(&a, ty)), kind: VarKind::Local { is_const: false } },
            );
        }
        let ret_ty = sub.resolve(ret, f.span)?;
        let items = f.body.iter().map(Item::Stmt).collect();
        let v = sub.returning(items, ret_ty)?;
        self.unrolled = sub.unrolled;
        let v = v.ok_or_else(|| {
            Diag::code(span, format!("`{}` does not return a value on every path", f.name))
        })?;
        Ok(match ret_ty {
            Some(t) => cast(&v, t),
            None => v,
        })
    }

    /// Traces a function body to its returned value (converted to `ret`); `None` if some path
    /// ends without `return`.
    fn returning<'s>(
        &mut self,
        items: VecDeque<Item<'s>>,
        ret: Option<DType>,
    ) -> DResult<Option<Val>> {
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
                    let Some(e) = e else {
                        return Err(Diag::code(s.span, "`return;` without a value"));
                    };
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
                            let ty = if t.dtype() == f.dtype() {
                                t.dtype()
                            } else {
                                common(t.dtype(), f.dtype())
                            };
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
