//! A host scatter's labels 16 positions at once (`KILN_HOST_LABEL_BLOCK`, on by default):
//! k-means' `argmin(sum((x[:, None] - c[None]) ** 2, 2), 1)` as the index of the scatters.
//!
//! One position at a time ([`super::screen`]), each point's distances are vectors along the
//! row, summed across their lanes, and its best and runner-up are a serial chain of compares
//! and selects: the host loop was bound by that chain's latency (two thirds of the perf samples,
//! session 26), not by its arithmetic. Here a vector lane is a position: the rows of 16
//! positions are loaded 16 elements at a time and transposed in registers (four stages of
//! two-source shuffles), each centre's element is broadcast, and each of the `k` sums of the 16
//! positions is one vector accumulated along the row (a fused multiply-add a term). The best,
//! the runner-up and the first position of the best are then the same chain as the screen's,
//! on vectors: 16 positions a step.
//!
//! The float32 sums are the screen's (any order of float32 additions, contracted or not), so
//! the same bound decides ([`super::screen::relative_bound`]): a lane whose best is not
//! provably apart from its runner-up, or any of whose sums is not finite, gets label -1 in the
//! block, and that position's label is then computed by the one-position code (screened, and
//! exact where the screen cannot decide): the evaluator's labels always. Positions past the
//! last whole block take the one-position code too.
//!
//! The expanded form (`KILN_HOST_DISTANCES=expanded`, the default; an argmin of `(x - c)²`
//! terms whose `x` is the rows read through views): each centre's `Σx·c` and the positions'
//! `Σx²` are vectors accumulated a fused multiply-add a term (no subtraction), the centres'
//! `Σc²` are computed once before the loop over blocks, and each sum is
//! `fma(Σx·c, -2, Σx² + Σc²)`. Its error is bounded absolutely, relative to `Σx² + Σc²`
//! ([`expanded_pick`]), so data far from the origin leaves more lanes to the one-position code.
//!
//! The scatter (`KILN_HOST_BLOCK_SCATTER=unrolled`, the default): under one branch a block
//! (taken where any lane is -1) the undecided positions' labels are computed and stored; then
//! the 16 positions' scatters follow unrolled, without a branch.
//!
//! Applies to an argmin/argmax over axis 1 of `[n, k]` (`2 <= k <= 16`) of a screened float32
//! sum over axis 2 of `[n, k, m]` terms (`m` a multiple of 16), the scatters' index, whose
//! terms read the positions' rows only as a float32 input `[n, m]` at `[position, j]` through
//! `expand_dims`, `squeeze`, `broadcast_to` and `permute`, with `-`, `+`, `*`, `square`,
//! `negative` and `abs` between; what does not read the position (the centres) may be any
//! expression, computed as a scalar and broadcast.

use std::collections::HashMap;

use kiln_ir::{Attrs, DType, NodeId, OpClass, OpKind};

use super::screen::{screen_pick, splat};
use super::{Ix, Lower, Stop};
use crate::codegen::builder::Builder;
use crate::codegen::index::{extent, through_view};
use crate::codegen::types::{float_const, Val};
use crate::codegen::Target;

/// Positions a block takes: float32 lanes of a 512-bit vector.
const LANES: usize = 16;

/// Positions ahead of a block whose rows it prefetches ([`Lower::transposed_rows`]), to the
/// second-level cache (`prefetcht1`): the next block. Measured on the dev machine (AMD EPYC,
/// Zen 4; 2^18×64, k = 10, one thread; one position at a time 9.8-10.0 ms): 16 or 32 rows
/// ahead 8.0-8.2 ms, 48-96 rows 8.6-8.8; to the first-level cache (`prefetcht0`) 9.9-11.4 ms
/// at 16-128 rows and 11.9 at 4; without prefetches 9.7-10.1. Again on the final code: 16
/// rows 7.61 ms, 32 rows 7.76-7.84, 64-256 rows 7.79-8.01.
const AHEAD: usize = LANES;

/// Undecided lanes of a block in the expanded form from which the next [`DIRECT_BLOCKS`]
/// blocks take the direct form: with data far from the origin the expanded form's bound
/// (relative to `Σx² + Σc²`) decides few lanes, and each undecided lane costs a one-position
/// label (2^15×64 points moved by 100 from the origin, one thread: 2.1 ms a call against 0.83
/// in the direct form, 2.5 times).
const WIDE_LANES: usize = 4;

/// Blocks taken in the direct form after a block with [`WIDE_LANES`] undecided lanes, before the
/// expanded form is tried again.
const DIRECT_BLOCKS: usize = 64;

/// Where an axis of an index comes from, for the analysis of the terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    /// The block's position (a lane each).
    Pos,
    /// The summed axis.
    Sum,
    /// Anything else (a centre, a broadcast axis's zero).
    Other,
}

/// A scatter region's labels that [`Lower::label_blocks`] computes a block at a time.
pub(super) struct LabelBlock {
    /// The argmin/argmax and its sum's terms.
    arg: NodeId,
    term: NodeId,
    /// Sums per position, and terms per sum.
    k: usize,
    m: usize,
    /// Under `KILN_HOST_DISTANCES=expanded`, for an argmin of terms `(x - c)²` whose `x` is the
    /// positions' rows read through views and whose `c` does not read the position: `x` and
    /// `c` (at the terms' index), whose sums are then taken expanded ([`Lower::expanded_sums`]).
    expanded: Option<(NodeId, NodeId)>,
}

impl Lower<'_> {
    /// The plan of a host scatter region over `items` whose every scatter (`outs`) has index
    /// `idx`, where [`Lower::label_blocks`] applies (see the module docs): each output has at
    /// least as many rows as there are labels.
    pub(super) fn label_block_plan(
        &self,
        idx: NodeId,
        items: &[usize],
        outs: &[NodeId],
    ) -> Option<LabelBlock> {
        let cfg = kiln_cache::config();
        if self.b.target != Target::Host || !cfg.host_label_block || cfg.arg_screen == Some(0) {
            return None;
        }
        let &[n] = items else { return None };
        let arg = self.body.node(idx);
        if !matches!(arg.op, OpKind::ArgMin | OpKind::ArgMax) || arg.shape.as_slice() != [n] {
            return None;
        }
        let Attrs::Reduce { axes, .. } = &arg.attrs else { return None };
        let sum = arg.inputs[0];
        let s = self.body.node(sum);
        let Attrs::Reduce { axes: s_axes, keepdims: false } = &s.attrs else { return None };
        if axes.as_slice() != [1] || s_axes.as_slice() != [2] || s.shape.len() != 2 {
            return None;
        }
        let terms = self.screenable_sum(sum)?;
        let term = s.inputs[0];
        let t = self.body.node(term);
        let (k, m) = (s.shape[1], t.shape[2]);
        if t.shape.as_slice() != [n, k, m] || !(2..=LANES).contains(&k) || terms != m {
            return None;
        }
        // Labels in `[0, k)` index every output's rows without wrapping.
        if outs.iter().any(|&o| self.body.node(o).shape.first().is_none_or(|&rows| rows < k)) {
            return None;
        }
        if n < LANES || m == 0 || !m.is_multiple_of(LANES) {
            return None;
        }
        let lane = self.lane_terms(term, &[Tag::Pos, Tag::Other, Tag::Sum], n, m)?;
        let expanded = (cfg.host_expanded_distances && arg.op == OpKind::ArgMin)
            .then(|| self.expanded_parts(term, n, m))
            .flatten();
        lane.then_some(LabelBlock { arg: idx, term, k, m, expanded })
    }

    /// The `x` and `c` of terms `term` that are `(x - c)²` (`square`, or a product of the
    /// difference by itself; `c - x` too), `x` the positions' rows read through views only and
    /// `c` not reading the position, both float32.
    fn expanded_parts(&self, term: NodeId, n: usize, m: usize) -> Option<(NodeId, NodeId)> {
        let t = self.body.node(term);
        let squared = t.op == OpKind::Square || (t.op == OpKind::Mul && t.inputs[0] == t.inputs[1]);
        if !squared {
            return None;
        }
        let d = t.inputs[0];
        let dn = self.body.node(d);
        if dn.op != OpKind::Sub || dn.dtype != DType::Float32 {
            return None;
        }
        let tags = [Tag::Pos, Tag::Other, Tag::Sum];
        let (a, b) = (dn.inputs[0], dn.inputs[1]);
        [(a, b), (b, a)].into_iter().find(|&(x, c)| {
            self.body.node(c).dtype == DType::Float32
                && self.rows_only(x, &tags, n, m)
                && self.lane_terms(c, &tags, n, m) == Some(false)
        })
    }

    /// Whether node `id` (at an index whose axes come from `tags`) is the positions' rows read
    /// through views only: its lane values are the rows' elements, exactly.
    fn rows_only(&self, id: NodeId, tags: &[Tag], n: usize, m: usize) -> bool {
        let node = self.body.node(id);
        match node.op.class() {
            OpClass::Leaf => self.lane_terms(id, tags, n, m) == Some(true),
            OpClass::View => view_tags(node, self.body.node(node.inputs[0]), tags)
                .is_some_and(|inner| self.rows_only(node.inputs[0], &inner, n, m)),
            OpClass::Elementwise
            | OpClass::Reduce
            | OpClass::Gather
            | OpClass::Copy
            | OpClass::Scatter
            | OpClass::Scan
            | OpClass::Sort
            | OpClass::Vendor
            | OpClass::Custom => false,
        }
    }

    /// Whether node `id` at an index whose axes come from `tags` reads the position
    /// (`Some(true)`: computed a lane a position), does not (`Some(false)`: one scalar), or
    /// reads it otherwise than the module docs allow (`None`).
    fn lane_terms(&self, id: NodeId, tags: &[Tag], n: usize, m: usize) -> Option<bool> {
        let node = self.body.node(id);
        if !tags.contains(&Tag::Pos) || self.constant[id.index()] || node.op == OpKind::Const {
            return Some(false);
        }
        match node.op.class() {
            OpClass::Leaf => {
                let input = matches!(node.attrs, Attrs::Input { .. }) && node.op == OpKind::Input;
                (input
                    && node.dtype == DType::Float32
                    && node.shape.as_slice() == [n, m]
                    && tags == [Tag::Pos, Tag::Sum])
                .then_some(true)
            }
            OpClass::Elementwise => {
                let mut lane = false;
                for &i in &node.inputs {
                    lane |= self.lane_terms(i, tags, n, m)?;
                }
                let float32 = node.dtype == DType::Float32
                    && node.inputs.iter().all(|&i| self.body.node(i).dtype == DType::Float32);
                (!lane || (float32 && lane_op(node.op).is_some())).then_some(lane)
            }
            OpClass::View => {
                let inner = view_tags(node, self.body.node(node.inputs[0]), tags)?;
                self.lane_terms(node.inputs[0], &inner, n, m)
            }
            OpClass::Reduce
            | OpClass::Gather
            | OpClass::Copy
            | OpClass::Scatter
            | OpClass::Scan
            | OpClass::Sort
            | OpClass::Vendor
            | OpClass::Custom => None,
        }
    }

    /// The loop over the whole blocks of positions `lo..hi` (16 a block), each block's labels
    /// computed together (see the module docs), then for each position its label (the
    /// one-position code where the block's is -1) and `each(position)`: the scatters' code.
    /// Returns where the whole blocks end.
    pub(super) fn label_blocks(
        &mut self,
        plan: &LabelBlock,
        lo: &str,
        hi: &str,
        each: &mut dyn FnMut(&mut Self, &str) -> Result<(), Stop>,
    ) -> Result<String, Stop> {
        let w = LANES;
        let ity = format!("vector<{w}xi64>");
        let width = self.b.i64(w as i64);
        let zero = self.b.i64(0);
        let span = self.b.op(&format!("arith.subi {hi}, {lo} : i64"));
        let span = self.b.op(&format!("arith.maxsi {span}, {zero} : i64"));
        let blocks = self.b.op(&format!("arith.divui {span}, {width} : i64"));
        let whole = self.b.op(&format!("arith.muli {blocks}, {width} : i64"));
        let mid = self.b.op(&format!("arith.addi {lo}, {whole} : i64"));
        let labels = self.b.alloca(w, "i64");
        // The centres' sums of squares for the expanded form, before the loop over blocks.
        let norms = match plan.expanded {
            Some((_, c)) => Some(self.centre_norms(plan, c)?),
            None => None,
        };
        // With the expanded form, the blocks left to take in the direct form (a loop-carried
        // count, [`DIRECT_BLOCKS`] after a block with [`WIDE_LANES`] undecided lanes).
        let carried = if norms.is_some() { vec![zero.clone()] } else { Vec::new() };
        let ctys = vec!["i64"; carried.len()];
        let (p0, args, _) = self.open_for_step(lo, &mid, Some(&width), &carried, &ctys);
        let max = self.body.node(plan.arg).op == OpKind::ArgMax;
        let (chosen, next) = match (&plan.expanded, &norms, args.first()) {
            (Some(parts), Some(norms), Some(left)) => {
                let direct = self.b.op(&format!("arith.cmpi sgt, {left}, {zero} : i64"));
                let res = self.open(1, &format!("scf.if {direct} -> ({ity})"));
                let sums = self.block_sums(plan, &p0)?;
                let chosen = block_pick(self, &sums, max, plan.m);
                self.b.stmt(&format!("scf.yield {chosen} : {ity}"));
                self.open_else();
                let (xc, xx) = self.expanded_sums(plan, *parts, &p0)?;
                let chosen = expanded_pick(self, &xc, &xx, norms, plan.m);
                self.b.stmt(&format!("scf.yield {chosen} : {ity}"));
                self.close();
                let chosen = res[0].clone();
                let next = self.direct_blocks_next(&chosen, left, &direct);
                (chosen, Some(next))
            }
            _ => {
                let sums = self.block_sums(plan, &p0)?;
                (block_pick(self, &sums, max, plan.m), None)
            }
        };
        let next: Vec<String> = next.into_iter().collect();
        self.b.stmt(&format!(
            "llvm.store {chosen}, {labels} {{alignment = 64 : i64}} : {ity}, !llvm.ptr"
        ));
        if kiln_cache::config().host_block_scatter_unrolled {
            self.block_scatter(plan, &chosen, &labels, &p0, each)?;
            self.yield_(&next, &ctys);
            self.close();
            return Ok(mid);
        }
        let (q, _, _) = self.open_for(&zero, &width, &[], &[]);
        let (iv, _, l) = self.block_label((&labels, &p0), &q);
        let ok = self.b.op(&format!("arith.cmpi sge, {l}, {zero} : i64"));
        let res = self.open(1, &format!("scf.if {ok} -> (i64)"));
        self.b.stmt(&format!("scf.yield {l} : i64"));
        self.open_else();
        let one = Ix { dims: Some(vec![iv.clone()]), flat: Some(iv.clone()) };
        let exact = self.emit(plan.arg, &one)?;
        self.b.stmt(&format!("scf.yield {} : i64", exact.ssa));
        self.close();
        self.known_label(plan, &iv, &res[0]);
        each(self, &iv)?;
        // Not unrolled: the one-position code is in each position's branch.
        self.close_no_unroll();
        self.yield_(&next, &ctys);
        self.close();
        Ok(mid)
    }

    /// The blocks left to take in the direct form after a block whose labels are `chosen`,
    /// taken in the direct form where `direct` (then `left - 1`), else in the expanded form:
    /// [`DIRECT_BLOCKS`] where [`WIDE_LANES`] or more of its lanes are undecided (data far from
    /// the origin, where the expanded form's bound is wide), else none.
    fn direct_blocks_next(&mut self, chosen: &str, left: &str, direct: &str) -> String {
        let w = LANES;
        let (ity, mty) = (format!("vector<{w}xi64>"), format!("vector<{w}xi1>"));
        let zeros = self.b.constant("dense<0>", &ity);
        let ones = self.b.constant("dense<1>", &ity);
        let neg = self.b.op(&format!("arith.cmpi slt, {chosen}, {zeros} : {ity}"));
        let marks = self.b.op(&format!("arith.select {neg}, {ones}, {zeros} : {mty}, {ity}"));
        let undecided =
            self.b.op(&format!("\"llvm.intr.vector.reduce.add\"({marks}) : ({ity}) -> i64"));
        let wide = self.b.i64(WIDE_LANES as i64);
        let wide = self.b.op(&format!("arith.cmpi sge, {undecided}, {wide} : i64"));
        let blocks = self.b.i64(DIRECT_BLOCKS as i64);
        let zero = self.b.i64(0);
        let after = self.b.op(&format!("arith.select {wide}, {blocks}, {zero} : i64"));
        let one = self.b.i64(1);
        let fewer = self.b.op(&format!("arith.subi {left}, {one} : i64"));
        self.b.op(&format!("arith.select {direct}, {fewer}, {after} : i64"))
    }

    /// The scatters of the block of 16 positions from `p0` (`KILN_HOST_BLOCK_SCATTER=unrolled`),
    /// whose block labels `chosen` are stored at `labels`: under one branch a block (taken where
    /// any lane is -1), the one-position code's label of each undecided position replaces its
    /// -1; then the 16 positions' scatters (`each`), unrolled, without a branch. With the
    /// one-position code inside the loop over positions, its registers were spilled around the
    /// scatter (the rows' and outputs' addresses reloaded from the stack every position).
    fn block_scatter(
        &mut self,
        plan: &LabelBlock,
        chosen: &str,
        labels: &str,
        p0: &str,
        each: &mut dyn FnMut(&mut Self, &str) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        let w = LANES;
        let (ity, mty) = (format!("vector<{w}xi64>"), format!("vector<{w}xi1>"));
        let zero = self.b.i64(0);
        let width = self.b.i64(w as i64);
        let zeros = self.b.constant("dense<0>", &ity);
        let neg = self.b.op(&format!("arith.cmpi slt, {chosen}, {zeros} : {ity}"));
        let any = self.b.op(&format!("\"llvm.intr.vector.reduce.or\"({neg}) : ({mty}) -> i1"));
        self.open_if(&any);
        let (q, _, _) = self.open_for(&zero, &width, &[], &[]);
        let (iv, at, l) = self.block_label((labels, p0), &q);
        let undecided = self.b.op(&format!("arith.cmpi slt, {l}, {zero} : i64"));
        self.open_if(&undecided);
        let one = Ix { dims: Some(vec![iv.clone()]), flat: Some(iv.clone()) };
        let exact = self.emit(plan.arg, &one)?;
        self.b.stmt(&format!("llvm.store {}, {at} : i64, !llvm.ptr", exact.ssa));
        self.close();
        self.close_no_unroll();
        self.close();
        for q in 0..w {
            let qc = self.b.i64(q as i64);
            let (iv, _, l) = self.block_label((labels, p0), &qc);
            self.known_label(plan, &iv, &l);
            each(self, &iv)?;
        }
        Ok(())
    }

    /// Position `p0 + q` of the block from `p0` whose labels are stored at `labels`, the
    /// address of its label and the label loaded.
    fn block_label(&mut self, (labels, p0): (&str, &str), q: &str) -> (String, String, String) {
        let iv = self.b.op(&format!("arith.addi {p0}, {q} overflow<nsw, nuw> : i64"));
        let at = self.b.op(&format!(
            "llvm.getelementptr inbounds {labels}[{q}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ));
        let l = self.b.op(&format!("llvm.load {at} : !llvm.ptr -> i64"));
        (iv, at, l)
    }

    /// Makes `label` (i64) the value of the block's argmin at position `iv` for the code the
    /// position runs after it (the scatter's index reads it there, not computed again).
    fn known_label(&mut self, plan: &LabelBlock, iv: &str, label: &str) {
        let one = Ix { dims: Some(vec![iv.to_string()]), flat: Some(iv.to_string()) };
        self.memo
            .last_mut()
            .expect("a memo scope is open")
            .insert((plan.arg, one.key()), Val::new(label.to_string(), DType::Int64));
    }

    /// The centres' `Σc²` of the expanded form (`c`: the terms' side that does not read the
    /// position), a float32 each, and their largest, computed once before the loop over blocks
    /// (in any order of float32 additions).
    fn centre_norms(
        &mut self,
        plan: &LabelBlock,
        c: NodeId,
    ) -> Result<(Vec<String>, String), Stop> {
        let zero = self.b.i64(0);
        let fzero = float_const(&mut self.b, 0.0, "f32");
        let init = vec![fzero; plan.k];
        let tys = vec!["f32"; plan.k];
        let m = extent(&mut self.b, plan.m);
        let (j, accs, res) = self.open_for(&zero, &m, &init, &tys);
        let mut next = Vec::with_capacity(plan.k);
        for (e, acc) in accs.iter().enumerate() {
            let ec = self.b.i64(e as i64);
            let v =
                self.emit(c, &Ix { dims: Some(vec![zero.clone(), ec, j.clone()]), flat: None })?;
            let sq =
                self.b.op(&format!("arith.mulf {}, {} fastmath<contract> : f32", v.ssa, v.ssa));
            next.push(
                self.b.op(&format!("arith.addf {acc}, {sq} fastmath<reassoc,contract> : f32")),
            );
        }
        self.yield_(&next, &tys);
        self.close();
        let mut largest = res[0].clone();
        for r in &res[1..] {
            let more = self.b.op(&format!("arith.cmpf ogt, {r}, {largest} : f32"));
            largest = self.b.op(&format!("arith.select {more}, {r}, {largest} : f32"));
        }
        Ok((res, largest))
    }

    /// The expanded form's sums of the block of 16 positions from `p0` (`parts`: the terms'
    /// `x` and `c`, [`LabelBlock::expanded`]): each centre's `Σx·c` (a vector, a lane a
    /// position) and the positions' `Σx²`, a fused multiply-add a term, the rows read and
    /// transposed as [`Lower::block_sums`] reads them. Where the direct form takes a
    /// subtraction and a fused multiply-add a term, this takes one (and one a column for `Σx²`).
    fn expanded_sums(
        &mut self,
        plan: &LabelBlock,
        (x, c): (NodeId, NodeId),
        p0: &str,
    ) -> Result<(Vec<String>, String), Stop> {
        let w = LANES;
        let vty = format!("vector<{w}xf32>");
        let zero_v = self.b.constant("dense<0.000000e+00>", &vty);
        let init = vec![zero_v; plan.k + 1];
        let tys = vec![vty.as_str(); plan.k + 1];
        let zero = self.b.i64(0);
        let m = extent(&mut self.b, plan.m);
        let step = self.b.i64(w as i64);
        let (j0, accs, res) = self.open_for_step(&zero, &m, Some(&step), &init, &tys);
        self.multiples.insert(j0.clone(), w);
        let mut columns: HashMap<usize, Vec<String>> = HashMap::new();
        let mut accs = accs;
        let tags = [Tag::Pos, Tag::Other, Tag::Sum];
        for col in 0..w {
            let off = self.b.i64(col as i64);
            let j = self.b.op(&format!("arith.addi {j0}, {off} overflow<nsw, nuw> : i64"));
            let dims = vec![p0.to_string(), zero.clone(), j.clone()];
            let xv = self.lane_value(x, dims, &tags, p0, &j0, col, &mut columns)?;
            for e in 0..=plan.k {
                let other = if e < plan.k {
                    // The centre's element as the evaluator computes it (a scalar, broadcast):
                    // not as lanes, where a square could be contracted into an add.
                    let ec = self.b.i64(e as i64);
                    let dims = vec![p0.to_string(), ec, j.clone()];
                    let v = self.emit(c, &Ix { dims: Some(dims), flat: None })?;
                    splat(&mut self.b, &v.ssa, "f32", w)
                } else {
                    xv.clone()
                };
                let acc = &accs[e];
                let t = self.b.op(&format!("arith.mulf {xv}, {other} fastmath<contract> : {vty}"));
                accs[e] =
                    self.b.op(&format!("arith.addf {acc}, {t} fastmath<reassoc,contract> : {vty}"));
            }
        }
        self.yield_(&accs, &tys);
        self.close();
        let xx = res[plan.k].clone();
        Ok((res[..plan.k].to_vec(), xx))
    }

    /// The `k` float32 sums of the block of 16 positions from `p0`, a vector each (a lane a
    /// position): the rows read 16 elements at a time and transposed, a fused multiply-add a
    /// term.
    fn block_sums(&mut self, plan: &LabelBlock, p0: &str) -> Result<Vec<String>, Stop> {
        let w = LANES;
        let vty = format!("vector<{w}xf32>");
        let zero_v = self.b.constant("dense<0.000000e+00>", &vty);
        let init = vec![zero_v; plan.k];
        let tys = vec![vty.as_str(); plan.k];
        let zero = self.b.i64(0);
        let m = extent(&mut self.b, plan.m);
        let step = self.b.i64(w as i64);
        let (j0, accs, res) = self.open_for_step(&zero, &m, Some(&step), &init, &tys);
        self.multiples.insert(j0.clone(), w);
        // The rows of the positions' inputs at `j0..j0 + 16`, transposed: a vector per column.
        let mut columns: HashMap<usize, Vec<String>> = HashMap::new();
        let mut accs = accs;
        for c in 0..w {
            let off = self.b.i64(c as i64);
            let j = self.b.op(&format!("arith.addi {j0}, {off} overflow<nsw, nuw> : i64"));
            for (e, acc) in accs.iter_mut().enumerate() {
                let ec = self.b.i64(e as i64);
                let dims = vec![p0.to_string(), ec, j.clone()];
                let tags = [Tag::Pos, Tag::Other, Tag::Sum];
                let t = self.lane_value(plan.term, dims, &tags, p0, &j0, c, &mut columns)?;
                *acc =
                    self.b.op(&format!("arith.addf {acc}, {t} fastmath<reassoc,contract> : {vty}"));
            }
        }
        self.yield_(&accs, &tys);
        self.close();
        Ok(res)
    }

    /// Node `id`'s values at the 16 positions from `p0` (index `dims`, whose axes come from
    /// `tags`; `c`: the column of the transposed rows, `j0 + c` the summed axis), a float32
    /// vector. What does not read the position is one scalar, broadcast.
    #[allow(clippy::too_many_arguments)]
    fn lane_value(
        &mut self,
        id: NodeId,
        dims: Vec<String>,
        tags: &[Tag],
        p0: &str,
        j0: &str,
        c: usize,
        columns: &mut HashMap<usize, Vec<String>>,
    ) -> Result<String, Stop> {
        let vty = format!("vector<{LANES}xf32>");
        let node = self.body.node(id);
        if !tags.contains(&Tag::Pos) || self.constant[id.index()] || node.op == OpKind::Const {
            let v = self.emit(id, &Ix { dims: Some(dims), flat: None })?;
            return Ok(splat(&mut self.b, &v.ssa, "f32", LANES));
        }
        match node.op.class() {
            OpClass::Leaf => {
                let Attrs::Input { index } = node.attrs else { unreachable!("checked: an input") };
                let index = index as usize;
                if !columns.contains_key(&index) {
                    let cols = self.transposed_rows(index, node.shape[1], p0, j0);
                    columns.insert(index, cols);
                }
                Ok(columns[&index][c].clone())
            }
            OpClass::Elementwise => {
                let mut args = Vec::with_capacity(node.inputs.len());
                for &i in &node.inputs {
                    args.push(self.lane_value(i, dims.clone(), tags, p0, j0, c, columns)?);
                }
                let op = lane_op(node.op).expect("checked: a lane op");
                let b = &mut self.b;
                Ok(match (op, args.as_slice()) {
                    ("square", [a]) => {
                        b.op(&format!("arith.mulf {a}, {a} fastmath<contract> : {vty}"))
                    }
                    ("arith.negf" | "math.absf", [a]) => b.op(&format!("{op} {a} : {vty}")),
                    (_, [a, x]) => b.op(&format!("{op} {a}, {x} : {vty}")),
                    _ => unreachable!("checked: the op's operands"),
                })
            }
            OpClass::View => {
                let input = node.inputs[0];
                let inner_tags =
                    view_tags(node, self.body.node(input), tags).expect("checked: the view");
                let ix = Ix { dims: Some(dims), flat: None };
                let inner = through_view(&mut self.b, node, self.body.node(input), &ix)?;
                let d = inner.dims.expect("a view of an index with dims has dims");
                self.lane_value(input, d, &inner_tags, p0, j0, c, columns)
            }
            OpClass::Reduce
            | OpClass::Gather
            | OpClass::Copy
            | OpClass::Scatter
            | OpClass::Scan
            | OpClass::Sort
            | OpClass::Vendor
            | OpClass::Custom => unreachable!("checked: no lane reads it"),
        }
    }

    /// Input `index`'s rows `p0..p0 + 16` (of `row` elements) at `j0..j0 + 16`, transposed:
    /// vector `c` holds element `j0 + c` of each row.
    fn transposed_rows(&mut self, index: usize, row: usize, p0: &str, j0: &str) -> Vec<String> {
        let w = LANES;
        let vty = format!("vector<{w}xf32>");
        let ptr = Self::in_ptr(index);
        let r = extent(&mut self.b, row);
        let base = self.b.op(&format!("arith.muli {p0}, {r} overflow<nsw, nuw> : i64"));
        let base = self.b.op(&format!("arith.addi {base}, {j0} overflow<nsw, nuw> : i64"));
        let mut rows: Vec<String> = (0..w)
            .map(|p| {
                let off = self.b.i64((p * row) as i64);
                let pos = self.b.op(&format!("arith.addi {base}, {off} overflow<nsw, nuw> : i64"));
                let at = self.b.op(&format!(
                    "llvm.getelementptr inbounds {ptr}[{pos}] : (!llvm.ptr, i64) -> !llvm.ptr, f32"
                ));
                // The same elements of the rows `AHEAD` positions on, to the second-level
                // cache: each block is a page of its own (16 rows of 64 float32s), which the
                // hardware's prefetchers do not enter before its first miss. A prefetch does not fault: past the input's end
                // it does nothing (the address is computed without `inbounds`).
                let next = self.b.i64((AHEAD * row * 4) as i64);
                let ahead = self.b.op(&format!(
                    "llvm.getelementptr {at}[{next}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
                ));
                self.b.stmt(&format!(
                    "\"llvm.intr.prefetch\"({ahead}) <{{cache = 1 : i32, hint = 2 : i32, rw = 0 : i32}}> : (!llvm.ptr) -> ()"
                ));
                self.b.op(&format!("llvm.load {at} {{alignment = 4 : i64}} : !llvm.ptr -> {vty}"))
            })
            .collect();
        transpose(&mut self.b, &mut rows);
        rows
    }
}

/// The elementwise ops a lane may compute, and their vector ops (`square`: a product
/// contracted into the sum's add).
const LANE_OPS: [(OpKind, &str); 6] = [
    (OpKind::Sub, "arith.subf"),
    (OpKind::Add, "arith.addf"),
    (OpKind::Mul, "arith.mulf"),
    (OpKind::Square, "square"),
    (OpKind::Neg, "arith.negf"),
    (OpKind::Abs, "math.absf"),
];

/// The vector op of elementwise op `op` where a lane may compute it ([`LANE_OPS`]).
fn lane_op(op: OpKind) -> Option<&'static str> {
    LANE_OPS.iter().find(|(o, _)| *o == op).map(|(_, v)| *v)
}

/// The tags of a view's input's index from its own (as [`through_view`] maps the index); `None`
/// for views that may move the position.
fn view_tags(view: &kiln_ir::Node, input: &kiln_ir::Node, tags: &[Tag]) -> Option<Vec<Tag>> {
    let (out_shape, in_shape) = (&view.shape, &input.shape);
    if kiln_ir::shape::numel(out_shape) == 0 {
        return None;
    }
    match view.op {
        OpKind::ExpandDims => {
            let Attrs::Axes { axes } = &view.attrs else { return None };
            Some(
                tags.iter()
                    .enumerate()
                    .filter(|(k, _)| !axes.contains(k))
                    .map(|(_, &t)| t)
                    .collect(),
            )
        }
        OpKind::Squeeze => {
            let Attrs::Axes { axes } = &view.attrs else { return None };
            let mut it = tags.iter();
            (0..in_shape.len())
                .map(|k| if axes.contains(&k) { Some(Tag::Other) } else { it.next().copied() })
                .collect()
        }
        OpKind::BroadcastTo if in_shape == out_shape => Some(tags.to_vec()),
        OpKind::BroadcastTo if in_shape.iter().all(|&n| n == 1) => {
            Some(vec![Tag::Other; in_shape.len()])
        }
        OpKind::BroadcastTo => {
            let pad = out_shape.len() - in_shape.len();
            Some(
                (0..in_shape.len())
                    .map(|i| if in_shape[i] == 1 { Tag::Other } else { tags[i + pad] })
                    .collect(),
            )
        }
        OpKind::Permute => {
            let Attrs::Perm { perm } = &view.attrs else { return None };
            let mut out = vec![Tag::Other; tags.len()];
            for (k, &p) in perm.iter().enumerate() {
                out[p] = tags[k];
            }
            Some(out)
        }
        // A reshape, slice or flip may move the position: not taken.
        OpKind::Reshape | OpKind::Slice | OpKind::Flip => None,
        kiln_ir::ops_not_of!(View) => None,
    }
}

/// Transposes the 16 × 16 float32s of `rows` (a vector a row) in place: four stages, each
/// exchanging bit `s` of the row's index with bit `s` of the lane's (two two-source shuffles a
/// pair of rows).
fn transpose(b: &mut crate::codegen::builder::Builder, rows: &mut [String]) {
    let w = LANES;
    let vty = format!("vector<{w}xf32>");
    let mut s = w / 2;
    while s >= 1 {
        for i in (0..w).filter(|i| i & s == 0) {
            let (u, v) = (rows[i].clone(), rows[i | s].clone());
            let lo: Vec<String> =
                (0..w).map(|j| if j & s == 0 { j } else { w + j - s }.to_string()).collect();
            let hi: Vec<String> =
                (0..w).map(|j| if j & s == 0 { j + s } else { w + j }.to_string()).collect();
            rows[i] = b.op(&format!("llvm.shufflevector {u}, {v} [{}] : {vty}", lo.join(", ")));
            rows[i | s] = b.op(&format!("llvm.shufflevector {u}, {v} [{}] : {vty}", hi.join(", ")));
        }
        s /= 2;
    }
}

/// Each lane's label from its `sums` (of `m` terms each; the least under `max = false`): the
/// first best where it is provably the evaluator's (every sum finite, the runner-up's interval
/// beyond the best's: [`super::screen`]'s test, on vectors), else -1. A `vector<16xi64>`.
fn block_pick(l: &mut Lower<'_>, sums: &[String], max: bool, m: usize) -> String {
    let (safe, at) = screen_pick(&mut l.b, sums, max, m, Some(LANES));
    let (ity, mty) = (format!("vector<{LANES}xi64>"), format!("vector<{LANES}xi1>"));
    let none = l.b.constant("dense<-1>", &ity);
    l.b.op(&format!("arith.select {safe}, {at}, {none} : {mty}, {ity}"))
}

/// Each lane's label from the expanded form's sums (`xc`: each centre's `Σx·c`, `xx`: `Σx²`, a
/// vector each; `norms`: the centres' `Σc²` and their largest, scalars; `m` terms a sum): the
/// first least of `s = fma(Σx·c, -2, Σx² + Σc²)` where that is provably the evaluator's argmin,
/// else -1. A `vector<16xi64>`.
///
/// The bound is session 26's for the one-position expanded form
/// (`benches/runs/2026-11-28-session26/lead-cpukm-expanded-distances.patch`, `gemm_bound` and
/// `gemm_apart`). Each of `Σx²`, `Σc²`, `Σx·c` of `m` products in any order (fused or not) is
/// within `γ_m ≤ 1.01·m·u` (`u = 2^-24`) of its exact value relative to `Σx²`, `Σc²` and
/// `Σ|x·c| ≤ (Σx² + Σc²)/2`; the two roundings after them are within `u` of `Σx² + Σc²` and of
/// `|Σx² + Σc² - 2·Σx·c| ≤ 2·(Σx² + Σc²)`: in all `s` is within `(2.02·m + 3.1)·u·(Σx² + Σc²)`
/// of the exact `D = Σ(x - c)²`, plus `(3m + 3)·2^-150` for subnormal products. A lane's
/// `E = (2m + 32)·2^-23·(Σx² + max Σc²)` (computed sums: twice the bound and more, which covers
/// their own roundings) bounds that for every centre. The evaluator's float32 value of `D` (the
/// differences and squares rounded to float32, summed exactly, rounded once) is within
/// `4.1·u·D + 2^-150` of `D`, so within `W(s) = E + δ·(|s| + E) + ε` of `s` (`δ = 2^-20`, more
/// than `5u`; `ε = 2^-119`). `s - W(s)` grows with `s`, so the runner-up's interval is the
/// lowest of the others'; apart when `(second - best)·(1 - 2^-20) > W(best) + W(second)`, and
/// every `s` finite. A bound that is not finite (or NaN) is never apart: -1.
fn expanded_pick(
    l: &mut Lower<'_>,
    xc: &[String],
    xx: &str,
    (norms, largest): &(Vec<String>, String),
    m: usize,
) -> String {
    let w = LANES;
    let b = &mut l.b;
    let (fty, ity, mty) =
        (format!("vector<{w}xf32>"), format!("vector<{w}xi64>"), format!("vector<{w}xi1>"));
    let lift = |b: &mut Builder, v: f64| {
        let c = float_const(b, v, "f32");
        splat(b, &c, "f32", w)
    };
    let m2 = lift(b, -2.0);
    let inf = lift(b, f64::INFINITY);
    let mut finite = b.constant("dense<true>", &mty);
    let (mut best, mut second, mut at) = (inf.clone(), inf.clone(), b.constant("dense<0>", &ity));
    for (e, (p, n)) in xc.iter().zip(norms).enumerate() {
        let nv = splat(b, n, "f32", w);
        let both = b.op(&format!("arith.addf {xx}, {nv} : {fty}"));
        let s = b.op(&format!("math.fma {p}, {m2}, {both} : {fty}"));
        let abs = b.op(&format!("math.absf {s} : {fty}"));
        let fin = b.op(&format!("arith.cmpf olt, {abs}, {inf} : {fty}"));
        finite = b.op(&format!("arith.andi {finite}, {fin} : {mty}"));
        let better = b.op(&format!("arith.cmpf olt, {s}, {best} : {fty}"));
        let runner = b.op(&format!("arith.cmpf olt, {s}, {second} : {fty}"));
        let demoted = b.op(&format!("arith.select {runner}, {s}, {second} : {mty}, {fty}"));
        second = b.op(&format!("arith.select {better}, {best}, {demoted} : {mty}, {fty}"));
        best = b.op(&format!("arith.select {better}, {s}, {best} : {mty}, {fty}"));
        let pos = b.constant(&format!("dense<{e}>"), &ity);
        at = b.op(&format!("arith.select {better}, {pos}, {at} : {mty}, {ity}"));
    }
    let kappa = lift(b, (2 * m + 32) as f64 * (-23f64).exp2());
    let delta = lift(b, (-20f64).exp2());
    let eps = lift(b, (-119f64).exp2());
    let shrink = lift(b, 1.0 - (-20f64).exp2());
    let top = splat(b, largest, "f32", w);
    let e = b.op(&format!("arith.addf {xx}, {top} : {fty}"));
    let e = b.op(&format!("arith.mulf {e}, {kappa} : {fty}"));
    let width = |b: &mut Builder, s: &str| {
        let a = b.op(&format!("math.absf {s} : {fty}"));
        let a = b.op(&format!("arith.addf {a}, {e} : {fty}"));
        let a = b.op(&format!("arith.mulf {a}, {delta} : {fty}"));
        let a = b.op(&format!("arith.addf {a}, {e} : {fty}"));
        b.op(&format!("arith.addf {a}, {eps} : {fty}"))
    };
    let wb = width(b, &best);
    let wr = width(b, &second);
    let widths = b.op(&format!("arith.addf {wb}, {wr} : {fty}"));
    let gap = b.op(&format!("arith.subf {second}, {best} : {fty}"));
    let gap = b.op(&format!("arith.mulf {gap}, {shrink} : {fty}"));
    let apart = b.op(&format!("arith.cmpf ogt, {gap}, {widths} : {fty}"));
    let safe = b.op(&format!("arith.andi {finite}, {apart} : {mty}"));
    let none = b.constant("dense<-1>", &ity);
    b.op(&format!("arith.select {safe}, {at}, {none} : {mty}, {ity}"))
}
