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
use crate::codegen::index::{extent, through_view};
use crate::codegen::types::Val;
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
        lane.then_some(LabelBlock { arg: idx, term, k, m })
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
        let (p0, _, _) = self.open_for_step(lo, &mid, Some(&width), &[], &[]);
        let sums = self.block_sums(plan, &p0)?;
        let max = self.body.node(plan.arg).op == OpKind::ArgMax;
        let chosen = block_pick(self, &sums, max, plan.m);
        self.b.stmt(&format!(
            "llvm.store {chosen}, {labels} {{alignment = 64 : i64}} : {ity}, !llvm.ptr"
        ));
        let (q, _, _) = self.open_for(&zero, &width, &[], &[]);
        let iv = self.b.op(&format!("arith.addi {p0}, {q} overflow<nsw, nuw> : i64"));
        let at = self.b.op(&format!(
            "llvm.getelementptr inbounds {labels}[{q}] : (!llvm.ptr, i64) -> !llvm.ptr, i64"
        ));
        let l = self.b.op(&format!("llvm.load {at} : !llvm.ptr -> i64"));
        let ok = self.b.op(&format!("arith.cmpi sge, {l}, {zero} : i64"));
        let res = self.open(1, &format!("scf.if {ok} -> (i64)"));
        self.b.stmt(&format!("scf.yield {l} : i64"));
        self.b.next_region("else");
        self.memo.pop();
        self.memo.push(HashMap::new());
        let one = Ix { dims: Some(vec![iv.clone()]), flat: Some(iv.clone()) };
        let exact = self.emit(plan.arg, &one)?;
        self.b.stmt(&format!("scf.yield {} : i64", exact.ssa));
        self.close();
        self.memo
            .last_mut()
            .expect("a memo scope is open")
            .insert((plan.arg, one.key()), Val::new(res[0].clone(), DType::Int64));
        each(self, &iv)?;
        // Not unrolled: the one-position code is in each position's branch.
        self.close_no_unroll();
        self.close();
        Ok(mid)
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
