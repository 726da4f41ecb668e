//! Emission of a region's nodes at an index: elementwise ops, views and loads ([`Lower::emit`]),
//! reductions as loop nests over their axes, and pairs of reductions folded in one pass
//! ([`Pair`]: softmax's max and sum, layer norm's moments).

use super::*;

/// Two reductions over a row region's space folded in one pass over the row: a softmax's max
/// and sum (module `online`), a layer norm's sum and sum of squared deviations (`moments`).
pub(super) enum Pair {
    Softmax(Online),
    Moments(Moments),
}

impl Pair {
    /// The pairs among `level1` (the reductions over a row region's axes of `shape`, the kept
    /// shape with those axes at 1 being `keep_ones`), no reduction in two. Softmaxes' rescale
    /// factors are float64 on the host only (see [`Online::find`]).
    pub(super) fn find(
        body: &Graph,
        shape: &[usize],
        keep_ones: &[usize],
        level1: &[NodeId],
        math: MathLib,
        target: Target,
    ) -> Vec<Pair> {
        let wide = target == Target::Host;
        let mut pairs: Vec<Pair> = Online::find(body, shape, keep_ones, level1, math, wide)
            .into_iter()
            .map(Pair::Softmax)
            .collect();
        for m in Moments::find(body, shape, keep_ones, level1) {
            if !pairs
                .iter()
                .any(|p| [p.first(), p.second()].iter().any(|&r| r == m.sum || r == m.squares))
            {
                pairs.push(Pair::Moments(m));
            }
        }
        pairs
    }

    /// The reduction at whose pass both fold.
    pub(super) fn first(&self) -> NodeId {
        match self {
            Pair::Softmax(o) => o.max,
            Pair::Moments(m) => m.sum,
        }
    }

    /// The reduction folded with it.
    pub(super) fn second(&self) -> NodeId {
        match self {
            Pair::Softmax(o) => o.sum,
            Pair::Moments(m) => m.squares,
        }
    }

    pub(super) fn combiner(&self) -> &dyn Combine {
        match self {
            Pair::Softmax(o) => o,
            Pair::Moments(m) => m,
        }
    }

    pub(super) fn init(&self, b: &mut Builder) -> Vec<String> {
        match self {
            Pair::Softmax(o) => o.init(b),
            Pair::Moments(m) => m.init(b),
        }
    }
}

/// Elements of a row each lane of a cooperative kernel takes at a step of a [`Pair`]'s fold.
pub(super) const PAIR_UNROLL: usize = 8;

impl<'g> Lower<'g> {
    /// The value of node `id` at index `ix` of its result.
    pub(super) fn emit(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        let key = (id, ix.key());
        if let Some(v) = self.lookup(&key) {
            return Ok(v);
        }
        let node: &'g Node = self.body.node(id);
        let v = match node.op.class() {
            OpClass::Leaf => match (&node.op, &node.attrs) {
                (OpKind::Input, Attrs::Input { index }) => {
                    let pos = match &ix.flat {
                        Some(f) => f.clone(),
                        None => ravel(&mut self.b, ix.dims()?, &node.shape),
                    };
                    let staged = self
                        .tile
                        .as_ref()
                        .and_then(|t| t.staged.iter().find(|s| s.index() == *index as usize))
                        .cloned();
                    // A held input (a GPU scatter kernel's small inputs) from shared memory.
                    match (staged, &ix.dims) {
                        _ if self.is_held(*index as usize) => {
                            self.held_load(*index as usize, ix.dims.as_deref(), &pos).expect("held")
                        }
                        (Some(st), Some(dims))
                            if self.tile.as_ref().is_some_and(|t| t.at.is_some()) =>
                        {
                            let dims = dims.clone();
                            self.staged_load(&st, &dims, &pos).expect("inside a tile")
                        }
                        // An input of no elements is never read: its load stays in the
                        // loop, which does not run.
                        _ if kiln_ir::shape::numel(&node.shape) > 0 => load_input(
                            &mut self.b,
                            &Self::in_ptr(*index as usize),
                            &pos,
                            node.dtype,
                        ),
                        _ => load(&mut self.b, &Self::in_ptr(*index as usize), &pos, node.dtype),
                    }
                }
                (OpKind::Const, Attrs::Const { value }) => {
                    literal(&mut self.b, *value, node.dtype)?
                }
                (OpKind::Iota, Attrs::Iota { axis }) => {
                    // A 1-D ramp is its flat position: no multi-index needed (a flat kernel).
                    let i = match (&ix.flat, node.shape.len()) {
                        (Some(f), 1) => Val::new(f.clone(), DType::Int64),
                        _ => Val::new(ix.dims()?[*axis].clone(), DType::Int64),
                    };
                    crate::codegen::cast::cast(&mut self.b, &i, node.dtype)?
                }
                (OpKind::Input | OpKind::Const | OpKind::Iota, _) => {
                    unreachable!("a leaf with the wrong attributes")
                }
                (kiln_ir::ops_not_of!(Leaf), _) => {
                    unreachable!("{} is not a leaf", node.op.name())
                }
            },
            // Computed now, by the evaluator (see `fold`).
            OpClass::Elementwise if self.constant[id.index()] => {
                crate::codegen::fold::constant_value(&mut self.b, self.body, id)?
            }
            OpClass::Elementwise => {
                let mut args = Vec::with_capacity(node.inputs.len());
                for &i in &node.inputs {
                    args.push(self.emit(i, ix)?);
                }
                scalar::elementwise(&mut self.b, node, &args)?
            }
            OpClass::View => {
                let input = self.body.node(node.inputs[0]);
                let inner = through_view(&mut self.b, node, input, ix)?;
                self.emit(node.inputs[0], &inner)?
            }
            OpClass::Reduce => self.reduction_value(id, ix)?,
            OpClass::Gather => {
                // Fusion leaves the gathered operand a region input: a buffer read at a position.
                let src = self.body.node(node.inputs[0]);
                let (OpKind::Input, Attrs::Input { index }) = (src.op, &src.attrs) else {
                    return Err(Unsupported::new(
                        Some(node.op.name()),
                        "gathering from a value computed in the region".into(),
                    )
                    .into());
                };
                let k = self.emit(node.inputs[1], ix)?;
                crate::codegen::gather::take(
                    &mut self.b,
                    &Self::in_ptr(*index as usize),
                    &src.shape,
                    &k,
                    node.dtype,
                )
            }
            OpClass::Copy => self.emit_copy(id, ix)?,
            // A scatter's combined result, read by the epilogue that runs after the combine.
            OpClass::Scatter if let Some(ptr) = self.combined.get(&id).cloned() => {
                let pos = match &ix.flat {
                    Some(f) => f.clone(),
                    None => ravel(&mut self.b, ix.dims()?, &node.shape),
                };
                load(&mut self.b, &ptr, &pos, node.dtype)
            }
            OpClass::Scatter
            | OpClass::Scan
            | OpClass::Sort
            | OpClass::Vendor
            | OpClass::Custom => {
                return Err(
                    Unsupported::new(Some(node.op.name()), "inside a fused region".into()).into()
                )
            }
        };
        self.memo.last_mut().expect("a memo scope is open").insert(key, v.clone());
        Ok(v)
    }

    /// A reduction's value at `ix`: the hoisted one if `ix` is the current work item's, else a
    /// loop nest right here.
    pub(super) fn reduction_value(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        if let Some(h) = self.hoisted.get(&id).cloned() {
            let node = self.body.node(id);
            let Attrs::Reduce { axes, keepdims } = &node.attrs else { unreachable!("verified") };
            let dims = ix.dims()?;
            let kept: Vec<&String> = if *keepdims {
                dims.iter().enumerate().filter(|(k, _)| !axes.contains(k)).map(|(_, d)| d).collect()
            } else {
                dims.iter().collect()
            };
            if kept.len() == self.work.len() && kept.iter().zip(&self.work).all(|(a, b)| *a == b) {
                match h {
                    Hoisted::Val(v) => return Ok(v),
                    Hoisted::Scratch { ptr, dt } => {
                        if let Some(jj) = self.block_jj.clone() {
                            let ty = work_ty(dt)?;
                            let addr = self.b.op(&format!(
                                "llvm.getelementptr inbounds {ptr}[{jj}] : (!llvm.ptr, i64) -> !llvm.ptr, {ty}"
                            ));
                            let v = self.b.op(&format!("llvm.load {addr} : !llvm.ptr -> {ty}"));
                            return Ok(Val::new(v, dt));
                        }
                    }
                }
            }
        }
        self.emit_reduction(id, ix)
    }

    /// Emits the loop nest computing reduction `id` at index `ix` of its result.
    pub(super) fn emit_reduction(&mut self, id: NodeId, ix: &Ix) -> Result<Val, Stop> {
        if let Some(v) = self.unrolled_reduction(id, ix)? {
            return Ok(v);
        }
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let input = node.inputs[0];
        let in_shape = self.body.node(input).shape.clone();
        let acc = Acc::new(node.op, self.body.node(input).dtype)?;
        let init = acc.init(&mut self.b);
        let tys = acc.tys.clone();
        let zero = self.b.i64(0);
        let (full, ivs, results, cur) = self.open_fold_loops(id, ix, init, &tys)?;
        if ivs.is_empty() {
            // No axis to reduce: one step from the identity.
            let v = self.emit(input, &Ix { dims: Some(full), flat: None })?;
            let next = acc.step(&mut self.b, &cur, &v, &zero)?;
            return Ok(acc.finish(&mut self.b, &next, node.dtype)?);
        }
        let full_ix = Ix { dims: Some(full), flat: None };
        let v = self.emit(input, &full_ix)?;
        // Values this loop computes for a full-shape output: keep them in its buffer.
        let staged: Vec<(NodeId, usize)> =
            self.staged.iter().filter(|s| Some(s.2) == self.hoisting).map(|s| (s.0, s.1)).collect();
        for (e, k) in staged {
            if let Some(val) = self.lookup(&(e, full_ix.key())) {
                let pos = ravel(&mut self.b, full_ix.dims.as_deref().expect("dims"), &in_shape);
                store(&mut self.b, &Self::out_ptr(k), &pos, &val);
            }
        }
        let reduced_shape: Vec<usize> = axes.iter().map(|&a| in_shape[a]).collect();
        let pos =
            if acc.needs_pos() { ravel(&mut self.b, &ivs, &reduced_shape) } else { zero.clone() };
        let next = acc.step(&mut self.b, &cur, &v, &pos)?;
        self.close_fold_loops(&next, &results, &tys);
        Ok(acc.finish(&mut self.b, &results[0], node.dtype)?)
    }

    /// Opens the loops of reduction `id` at index `ix` of its result, one per reduced axis,
    /// folding `init` (of types `tys`). Returns the input's full index, the loops' induction
    /// variables, their results (outermost first) and the innermost body's accumulators; none
    /// is opened when no axis is reduced. Close them with [`Lower::close_fold_loops`].
    #[allow(clippy::type_complexity)]
    pub(super) fn open_fold_loops(
        &mut self,
        id: NodeId,
        ix: &Ix,
        init: Vec<String>,
        tys: &[&str],
    ) -> Result<(Vec<String>, Vec<String>, Vec<Vec<String>>, Vec<String>), Stop> {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let in_shape = self.body.node(node.inputs[0]).shape.clone();
        let mut kept = self.kept_index(id, ix)?.into_iter();
        let zero = self.b.i64(0);
        let mut full: Vec<String> = Vec::with_capacity(in_shape.len());
        let mut ivs: Vec<String> = Vec::new();
        let mut results: Vec<Vec<String>> = Vec::new();
        let mut cur = init;
        for (k, &n) in in_shape.iter().enumerate() {
            if axes.contains(&k) {
                let ub = extent(&mut self.b, n);
                let (iv, args, res) = self.open_for(&zero, &ub, &cur, tys);
                full.push(iv.clone());
                ivs.push(iv);
                results.push(res);
                cur = args;
            } else {
                full.push(kept.next().expect("kept axes match the result's"));
            }
        }
        Ok((full, ivs, results, cur))
    }

    /// How many elements reduction `id` folds into each of its results (a kernel parameter).
    pub(super) fn reduced_count(&mut self, id: NodeId) -> String {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let in_shape = &self.body.node(node.inputs[0]).shape;
        self.b.param(axes.iter().map(|&a| in_shape[a]).product::<usize>() as i64)
    }

    /// The kept part of reduction `id`'s input index at index `ix` of its result, in input-axis
    /// order.
    pub(super) fn kept_index(&self, id: NodeId, ix: &Ix) -> Result<Vec<String>, Stop> {
        let Attrs::Reduce { axes, keepdims } = &self.body.node(id).attrs else {
            unreachable!("verified")
        };
        let dims = ix.dims()?;
        Ok(if *keepdims {
            dims.iter()
                .enumerate()
                .filter(|(k, _)| !axes.contains(k))
                .map(|(_, d)| d.clone())
                .collect()
        } else {
            dims.to_vec()
        })
    }

    /// Yields `next` from the innermost loop of [`Lower::open_fold_loops`] and closes the loops
    /// inside out, each outer body yielding its inner loop's results.
    pub(super) fn close_fold_loops(
        &mut self,
        next: &[String],
        results: &[Vec<String>],
        tys: &[&str],
    ) {
        self.yield_(next, tys);
        for level in (0..results.len()).rev() {
            self.close();
            if level > 0 {
                self.yield_(&results[level], tys);
            }
        }
    }

    /// One element of a softmax's one-pass fold (see [`Online`]) at the input's index `ix`:
    /// the running max raised by `x`, the sum rescaled to it, then `exp(x - max)` added (the
    /// region's own nodes, the max read as the running one).
    pub(super) fn online_step(
        &mut self,
        on: &Online,
        args: &[String],
        ix: &Ix,
    ) -> Result<Vec<String>, Stop> {
        let x = self.emit(on.x, ix)?;
        let m = on.raise(&mut self.b, &args[0], &x);
        let s = on.rescale(&mut self.b, &args[1], &args[0], &m)?;
        let e = self.online_terms(on, &m, std::slice::from_ref(ix))?;
        let s = on.add(&mut self.b, &s, &e[0], &m)?;
        Ok(vec![m, s])
    }

    /// A softmax's terms `exp(x - m)` at `ixs`, the max read as the running one `m` (the
    /// region's own nodes).
    pub(super) fn online_terms(
        &mut self,
        on: &Online,
        m: &str,
        ixs: &[Ix],
    ) -> Result<Vec<Val>, Stop> {
        self.hoisted.insert(on.max, Hoisted::Val(on.running(m)));
        let terms = ixs.iter().map(|ix| self.emit(on.exp, ix)).collect();
        self.hoisted.remove(&on.max);
        terms
    }

    /// Two reductions at the work item `ix` in one loop nest (see [`Pair`]).
    pub(super) fn emit_pair(&mut self, p: &Pair, ix: &Ix) -> Result<(Val, Val), Stop> {
        let shift = self.pair_prelude(p, ix)?;
        let init = p.init(&mut self.b);
        let tys = p.combiner().tys().to_vec();
        let (full, _, results, cur) = self.open_fold_loops(p.first(), ix, init, &tys)?;
        let next =
            self.pair_step(p, &cur, &Ix { dims: Some(full), flat: None }, shift.as_deref())?;
        self.close_fold_loops(&next, &results, &tys);
        self.pair_finish(p, &results[0], ix, shift.as_deref())
    }

    /// Before a pair's loop: a layer norm's shift, the row's first element (see [`Moments`]).
    pub(super) fn pair_prelude(&mut self, p: &Pair, ix: &Ix) -> Result<Option<String>, Stop> {
        let Pair::Moments(m) = p else { return Ok(None) };
        let Attrs::Reduce { axes, .. } = &self.body.node(m.sum).attrs else {
            unreachable!("verified")
        };
        let rank = self.body.node(m.x).shape.len();
        let zero = self.b.i64(0);
        let mut kept = self.kept_index(m.sum, ix)?.into_iter();
        let full: Vec<String> = (0..rank)
            .map(|a| if axes.contains(&a) { zero.clone() } else { kept.next().expect("kept axes") })
            .collect();
        // An empty row has no first element: its shift is 0, and the load is not executed
        // (the extents may be parameters, so the test is in the kernel).
        let x_shape = self.body.node(m.x).shape.clone();
        let mut n = self.b.i64(1);
        for &a in axes {
            let e = extent(&mut self.b, x_shape[a]);
            n = self.b.op(&format!("arith.muli {n}, {e} : i64"));
        }
        let nonempty = self.b.op(&format!("arith.cmpi ne, {n}, {zero} : i64"));
        let t = m.ty();
        let res = self.open(1, &format!("scf.if {nonempty} -> ({t})"));
        let first = self.emit(m.x, &Ix { dims: Some(full), flat: None })?;
        let c = m.shift(&mut self.b, &first)?;
        self.b.stmt(&format!("scf.yield {c} : {t}"));
        self.open_else();
        let none = float_const(&mut self.b, 0.0, t);
        self.b.stmt(&format!("scf.yield {none} : {t}"));
        self.close();
        Ok(Some(res[0].clone()))
    }

    /// One element of a pair's fold at the input's index `ix`.
    pub(super) fn pair_step(
        &mut self,
        p: &Pair,
        args: &[String],
        ix: &Ix,
        shift: Option<&str>,
    ) -> Result<Vec<String>, Stop> {
        match p {
            Pair::Softmax(on) => self.online_step(on, args, ix),
            Pair::Moments(m) => {
                let x = self.emit(m.x, ix)?;
                Ok(m.step(&mut self.b, args, &x, shift.expect("a layer norm's shift"))?)
            }
        }
    }

    /// A pair's two values from its fold `acc` (a layer norm's mean computed from its sum at
    /// `ix`, by the region's own ops, for its sum of squares).
    pub(super) fn pair_finish(
        &mut self,
        p: &Pair,
        acc: &[String],
        ix: &Ix,
        shift: Option<&str>,
    ) -> Result<(Val, Val), Stop> {
        match p {
            Pair::Softmax(on) => Ok(on.finish(&mut self.b, acc)?),
            Pair::Moments(m) => {
                let c = shift.expect("a layer norm's shift");
                let n = self.reduced_count(m.sum);
                let s1 = m.sum_value(&mut self.b, acc, c, &n)?;
                self.hoisted.insert(m.sum, Hoisted::Val(s1.clone()));
                let mu = self.emit(m.mean, ix)?;
                let s2 = m.squares_value(&mut self.b, acc, c, &n, &mu)?;
                Ok((s1, s2))
            }
        }
    }
}
