//! Nested reductions over a short axis, unrolled: `argmin(sum((x[:, None] - c[None]) ** 2, 2), 1)`
//! (k-means' labels) reduces over `k` the sums over `d`. Emitted as written, that is `k` loops
//! over `d` one after the other: one chain of dependent adds `k·d` long per result, each
//! element of `x` loaded `k` times. When the outer reduction folds at most [`UNROLL_MAX`]
//! elements, the inner reductions at all of them are computed in one loop over `d` (`k`
//! independent accumulators, each element of `x` loaded once), and the outer fold is unrolled
//! over their results.
//!
//! The same bits as the loops: each accumulator folds the same elements in the same order, and
//! the outer fold takes the same values in the same order.

use kiln_ir::{Attrs, NodeId, OpClass};

use super::{Lower, Stop};
use crate::codegen::index::{extent, ravel, through_view, Ix};
use crate::codegen::reduce::Acc;

/// Most elements an outer reduction folds for its inner reductions to be computed together
/// (their accumulators live in registers).
pub(super) const UNROLL_MAX: usize = 16;

impl Lower<'_> {
    /// Reduction `id` at `ix` with its fold unrolled and the inner reductions at all its
    /// elements computed together; `None` when it folds one or more than [`UNROLL_MAX`]
    /// elements, or reads no reduction.
    pub(super) fn unrolled_reduction(
        &mut self,
        id: NodeId,
        ix: &Ix,
    ) -> Result<Option<crate::codegen::types::Val>, Stop> {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        let input = node.inputs[0];
        let in_shape = self.body.node(input).shape.clone();
        let reduced: Vec<usize> = axes.iter().map(|&a| in_shape[a]).collect();
        let count: usize = reduced.iter().product();
        // A fold whose loop stores values for a full-shape output (see `staged_values`) stays one.
        let stores = self.staged.iter().any(|s| Some(s.2) == self.hoisting);
        if !(2..=UNROLL_MAX).contains(&count) || stores || !self.reads_reduction(input) {
            return Ok(None);
        }
        // Where this is a scatter label phase's first argmin at a thread's first position, its
        // other positions too (see `co_items`): their results memoised.
        let mut at = vec![ix.clone()];
        if let Some((item, others)) = self.co_items.take() {
            if ix.dims.as_ref().is_some_and(|d| d.contains(&item)) {
                let swap = |s: &String, o: &String| if *s == item { o.clone() } else { s.clone() };
                at.extend(others.iter().map(|o| Ix {
                    dims: ix.dims.as_ref().map(|d| d.iter().map(|s| swap(s, o)).collect()),
                    flat: ix.flat.as_ref().map(|s| swap(s, o)),
                }));
            }
        }
        let mut positions = Vec::with_capacity(at.len());
        for ix in &at {
            let kept = self.kept_index(id, ix)?;
            // The input's full index at each folded element, the reduced axes' indices
            // constants.
            let fulls: Vec<Ix> = (0..count)
                .map(|e| {
                    let mut at = unravel_const(&mut self.b, e, &reduced).into_iter();
                    let mut kept = kept.iter();
                    let dims = (0..in_shape.len())
                        .map(|a| {
                            if axes.contains(&a) { at.next() } else { kept.next().cloned() }
                                .expect("kept axes match the result's")
                        })
                        .collect();
                    Ix { dims: Some(dims), flat: None }
                })
                .collect();
            // The inner reductions each element reads, and where.
            let mut inner: Vec<(NodeId, Vec<Ix>)> = Vec::new();
            for full in &fulls {
                self.inner_reductions(input, full, &mut inner)?;
            }
            positions.push((fulls, inner));
        }
        if let Some(vs) = self.screened_arg_fold(id, &positions)? {
            let mut vs = vs.into_iter();
            let first = vs.next().expect("one per position");
            for (ix, v) in at[1..].iter().zip(vs) {
                self.memo.last_mut().expect("a memo scope is open").insert((id, ix.key()), v);
            }
            return Ok(Some(first));
        }
        let (fulls, inner) = positions.swap_remove(0);
        self.exact_unrolled_fold(id, &fulls, &inner).map(Some)
    }

    /// The unrolled fold of reduction `id` over `fulls` (its input's index at each folded
    /// element), the inner reductions `inner` computed together first.
    pub(super) fn exact_unrolled_fold(
        &mut self,
        id: NodeId,
        fulls: &[Ix],
        inner: &[(NodeId, Vec<Ix>)],
    ) -> Result<crate::codegen::types::Val, Stop> {
        let node = self.body.node(id);
        let input = node.inputs[0];
        for (r, ixs) in inner {
            if ixs.len() > 1 {
                self.reductions_together(*r, ixs, None, 1, None)?;
            }
        }
        let acc = Acc::new(node.op, self.body.node(input).dtype)?;
        let mut cur = acc.init(&mut self.b);
        for (e, full) in fulls.iter().enumerate() {
            let v = self.emit(input, full)?;
            let pos = self.b.i64(e as i64);
            cur = acc.step(&mut self.b, &cur, &v, &pos)?;
        }
        Ok(acc.finish(&mut self.b, &cur, node.dtype)?)
    }

    /// Whether node `id`'s value reads a reduction through elementwise ops and views.
    fn reads_reduction(&self, id: NodeId) -> bool {
        let node = self.body.node(id);
        match node.op.class() {
            OpClass::Reduce => !self.hoisted.contains_key(&id),
            OpClass::Elementwise if !self.constant[id.index()] => {
                node.inputs.iter().any(|&i| self.reads_reduction(i))
            }
            OpClass::View => self.reads_reduction(node.inputs[0]),
            _ => false,
        }
    }

    /// Appends to `found` the reductions node `id` at `ix` reads through elementwise ops and
    /// views, with the index each is read at (each index once).
    fn inner_reductions(
        &mut self,
        id: NodeId,
        ix: &Ix,
        found: &mut Vec<(NodeId, Vec<Ix>)>,
    ) -> Result<(), Stop> {
        let node = self.body.node(id);
        match node.op.class() {
            OpClass::Reduce if !self.hoisted.contains_key(&id) => {
                match found.iter_mut().find(|(r, _)| *r == id) {
                    Some((_, ixs)) if ixs.iter().any(|i| i.key() == ix.key()) => {}
                    Some((_, ixs)) => ixs.push(ix.clone()),
                    None => found.push((id, vec![ix.clone()])),
                }
                Ok(())
            }
            OpClass::Elementwise if !self.constant[id.index()] => {
                for &i in &node.inputs {
                    self.inner_reductions(i, ix, found)?;
                }
                Ok(())
            }
            OpClass::View => {
                let inner = through_view(&mut self.b, node, self.body.node(node.inputs[0]), ix)?;
                self.inner_reductions(node.inputs[0], &inner, found)
            }
            _ => Ok(()),
        }
    }

    /// Reduction `id` at each of `ixs` in one loop nest (one accumulator each); the results
    /// are memoised, so that emitting `id` at one of `ixs` reads them.
    /// With `acc`, that accumulator in place of the reduction's own (the screening pass's
    /// float32 sums, see [`Lower::screened_arg_fold`]); the innermost loop takes `unroll`
    /// elements a step where its extent is a multiple of it (their loads side by side, which
    /// LLVM may combine into vector loads). With `lanes = (lane, L)` (GPU, the screening pass's
    /// sums only): `L` lanes of a warp share the work, lane `lane` taking elements
    /// `unroll·lane .. unroll·(lane + 1)` of every `unroll·L` of the innermost axis (16-byte
    /// loads for 4 float32s where the extent is a multiple), and their partial sums are added by
    /// butterfly shuffles (every lane of the warp takes part), so each lane ends with the same
    /// bits (float addition commutes).
    pub(super) fn reductions_together(
        &mut self,
        id: NodeId,
        ixs: &[Ix],
        acc: Option<Acc>,
        unroll: usize,
        lanes: Option<(&str, usize)>,
    ) -> Result<(), Stop> {
        let node = self.body.node(id);
        let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified") };
        if axes.is_empty() {
            // No loop to share: each is one step, emitted where it is read.
            return Ok(());
        }
        let input = node.inputs[0];
        let in_shape = self.body.node(input).shape.clone();
        let acc = match acc {
            Some(acc) => acc,
            None => Acc::new(node.op, self.body.node(input).dtype)?,
        };
        let width = acc.tys.len();
        let mut init = Vec::with_capacity(width * ixs.len());
        let mut tys = Vec::with_capacity(width * ixs.len());
        for _ in ixs {
            init.extend(acc.init(&mut self.b));
            tys.extend(acc.tys.iter().copied());
        }
        let kept: Vec<Vec<String>> =
            ixs.iter().map(|ix| self.kept_index(id, ix)).collect::<Result<_, _>>()?;
        let zero = self.b.i64(0);
        let mut ivs: Vec<String> = Vec::new();
        let mut results: Vec<Vec<String>> = Vec::new();
        let mut cur = init;
        let last = *axes.last().expect("not empty");
        let lanes = lanes.filter(|&(_, l)| l > 1 && acc.is_f32_screen());
        // Split between lanes: lane `i` takes terms `u·i .. u·(i + 1)` of each `u·lanes`.
        let per_step = unroll * lanes.map_or(1, |(_, l)| l);
        let unroll = if unroll > 1 && in_shape[last].is_multiple_of(per_step) { unroll } else { 1 };
        for &a in axes.iter() {
            let ub = extent(&mut self.b, in_shape[a]);
            let (from, step) = match lanes {
                Some((lane, l)) if a == last => {
                    let u = self.b.i64(unroll as i64);
                    (self.b.op(&format!("arith.muli {lane}, {u} : i64")), l * unroll)
                }
                _ => (zero.clone(), if a == last { unroll } else { 1 }),
            };
            let step = self.b.i64(step as i64);
            let (iv, args, res) = self.open_for_step(&from, &ub, Some(&step), &cur, &tys);
            ivs.push(iv);
            results.push(res);
            cur = args;
        }
        let reduced: Vec<usize> = axes.iter().map(|&a| in_shape[a]).collect();
        let first = ivs.pop().expect("not empty");
        if unroll > 1 {
            self.multiples.insert(first.clone(), unroll);
        }
        for u in 0..unroll {
            let off = self.b.i64(u as i64);
            let iv = if u == 0 {
                first.clone()
            } else {
                self.b.op(&format!("arith.addi {first}, {off} : i64"))
            };
            ivs.push(iv);
            let pos =
                if acc.needs_pos() { ravel(&mut self.b, &ivs, &reduced) } else { zero.clone() };
            let mut next = Vec::with_capacity(cur.len());
            for (k, kept) in kept.iter().enumerate() {
                let (mut at, mut kept) = (ivs.iter(), kept.iter());
                let dims = (0..in_shape.len())
                    .map(|a| {
                        if axes.contains(&a) { at.next() } else { kept.next() }
                            .cloned()
                            .expect("kept axes match the result's")
                    })
                    .collect();
                let ix = Ix { dims: Some(dims), flat: None };
                let a = &cur[k * width..(k + 1) * width];
                match self.squared_term(input, acc.is_f32_screen()) {
                    // t·t + a, contracted to one fused multiply-add where the target has
                    // one (the screen's bound allows it).
                    Some(t) => {
                        let t = self.emit(t, &ix)?.ssa;
                        let sq =
                            self.b.op(&format!("arith.mulf {t}, {t} fastmath<contract> : f32"));
                        next.push(self.b.op(&format!(
                            "arith.addf {}, {sq} fastmath<reassoc,contract> : f32",
                            a[0]
                        )));
                    }
                    None => {
                        let v = self.emit(input, &ix)?;
                        next.extend(acc.step(&mut self.b, a, &v, &pos)?);
                    }
                }
            }
            ivs.pop();
            cur = next;
        }
        let next = cur;
        self.close_fold_loops(&next, &results, &tys);
        let mut sums = results[0].clone();
        if let Some((_, l)) = lanes {
            for s in sums.iter_mut() {
                let mut off = 1;
                while off < l {
                    let other = self.shfl_xor(s, "f32", off);
                    *s = self.b.op(&format!("arith.addf {s}, {other} fastmath<reassoc> : f32"));
                    off *= 2;
                }
            }
        }
        for (k, ix) in ixs.iter().enumerate() {
            let v = acc.finish(&mut self.b, &sums[k * width..(k + 1) * width], node.dtype)?;
            self.memo.last_mut().expect("a memo scope is open").insert((id, ix.key()), v);
        }
        Ok(())
    }
}

impl Lower<'_> {
    /// With `f32`, the `t` of a float32 term `t·t` (`square(t)`, `t * t`), which the screening
    /// pass folds by a fused multiply-add.
    fn squared_term(&self, term: NodeId, f32: bool) -> Option<NodeId> {
        let n = self.body.node(term);
        let squared = n.op == kiln_ir::OpKind::Square
            || (n.op == kiln_ir::OpKind::Mul && n.inputs[0] == n.inputs[1]);
        (f32 && squared && n.dtype == kiln_ir::DType::Float32).then(|| n.inputs[0])
    }
}

/// The index of element `e` of `shape` (C order), as constants.
fn unravel_const(
    b: &mut crate::codegen::builder::Builder,
    e: usize,
    shape: &[usize],
) -> Vec<String> {
    let mut rest = e;
    let mut dims: Vec<String> = shape
        .iter()
        .rev()
        .map(|&n| {
            let d = rest % n;
            rest /= n;
            b.i64(d as i64)
        })
        .collect();
    dims.reverse();
    dims
}
