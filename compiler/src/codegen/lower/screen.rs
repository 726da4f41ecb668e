//! An unrolled argmin or argmax over float32 sums of non-negative terms (k-means' labels:
//! `argmin(sum((x[:, None] - c[None]) ** 2, 2), 1)`), decided by a float32 pass where that is
//! provably the exact answer, the exact fold ([`Lower::exact_unrolled_fold`]) elsewhere.
//!
//! A float32 sum is the evaluator's compensated f64 sum rounded once to float32 (the fold's
//! unscreened code sums in f64 too): on a GPU each term is then widened, and Hopper widens at
//! 16 per clock per SM, a quarter of its float32 rate. The screening pass sums the same terms
//! in f32, in any order (`fastmath<reassoc>`; a term `t·t` contracted with its add into one
//! fused multiply-add, `fastmath<contract>`), and tracks the best and the runner-up of its
//! sums. Its error is bounded: for `n` non-negative terms `t` of exact sum `T`, any order of
//! float32 additions (contracted with the terms' products or not) gives `s` with
//! `|s - T| <= (n + 1)·u·T` plus `(n + 1)·2^-150` for subnormal roundings (`u = 2^-24`), and
//! the evaluator's value (and the unscreened kernel's) is within `1.01·u·T` of `T` plus
//! `2^-150`. So with `δ = (n + 8)·2^-23` and `ε = 2^-120`, the true value behind each `s` lies
//! in `[s·(1 - δ) - ε, s·(1 + δ) + ε]`, with room for the roundings of these bounds in f32.
//! When every screened sum is finite and the runner-up's interval lies strictly beyond the
//! best's, the best is the evaluator's strict argmin (argmax): no tie, no NaN, the same
//! index. Otherwise (near ties, ties, NaN, infinities, overflow) the position folds exactly,
//! in a branch: the same bits as without the screen, always.
//!
//! Only sums of float32 terms that are non-negative by construction (`square`, `abs`, `x * x`)
//! are screened: with terms of both signs the bound is relative to the sum of magnitudes,
//! which would need a second accumulator.

use std::collections::HashMap;

use kiln_ir::{Attrs, DType, NodeId, OpClass, OpKind};

use super::{Lower, Stop};
use crate::codegen::index::Ix;
use crate::codegen::reduce::Acc;
use crate::codegen::types::{float_const, Val};

/// Most terms of a screened sum (its relative bound `δ` then stays below 0.8%).
const MAX_TERMS: usize = 1 << 16;

/// Terms of each sum the screening pass takes a step, by default (`KILN_ARG_SCREEN=N` for
/// another). On an H200 (k-means 2^20×64, k = 10) 4 and 8 made the centres' loads vector loads
/// and the kernel 60% slower (0.51 ms against 0.32).
const SCREEN_UNROLL: usize = 1;

/// Consecutive terms of each sum a lane takes a step where a position's sums are split between
/// lanes (a GPU scatter's label phase) and a block takes several tiles, by default
/// (`KILN_ARG_SCREEN=N` for another). On an H200 (k-means 2^20×64, k = 10, session 22, one
/// call): 2 took 0.242 ms against 0.254-0.256 at 1 (56 registers, 4 blocks a multiprocessor);
/// 4 made the centres' and the staged rows' loads 16-byte ones and the instructions 30% fewer
/// (session 21) but took 72 registers (3 blocks a multiprocessor, 0.353 ms), or with launch
/// bounds of 4 blocks 64 registers and spills (0.266 ms).
const LANE_UNROLL: usize = 2;

/// Terms of each sum a lane takes a step in a screened argmin split between lanes (see
/// [`LANE_UNROLL`]) where a block takes `tiles` tiles of positions; 0 where the screen is off.
/// Blocks of one tile (the digits, 1797 positions: 15 blocks) keep 1: at 2 the digits' update
/// took 0.037 ms against 0.030-0.036 at 1 in two calls.
pub(super) fn lane_unroll(tiles: usize) -> usize {
    kiln_cache::config().arg_screen.unwrap_or(if tiles > 1 { LANE_UNROLL } else { 1 })
}

/// Positions a thread of a GPU scatter's label phase takes at once, by default
/// (`KILN_GPU_SCATTER_POSITIONS=N` for another): one. On an H200 (k-means 2^20×64, k = 10,
/// session 23, one call, with 8 staged loads in flight): 2 (4 lanes a position) took 0.308 ms
/// against 0.233 at 1: each centre's load feeds two positions, but 71 registers (3 blocks a
/// multiprocessor, not 4); with launch bounds of 4 blocks 0.249; 4 positions 128 registers,
/// 0.365.
const LABEL_POSITIONS: usize = 1;

/// Positions a thread of a GPU scatter's label phase takes at once where a block takes `tiles`
/// tiles of positions: their screened sums in one loop, each centre's load used for all of
/// them (see [`Lower::screened_arg_fold`]).
pub(super) fn label_positions(tiles: usize) -> usize {
    kiln_cache::config().gpu_scatter_positions.unwrap_or(if tiles > 1 {
        LABEL_POSITIONS
    } else {
        1
    })
}

/// The relative half-width `δ` of the interval around a screened sum of `terms` terms.
pub(crate) fn relative_bound(terms: usize) -> f64 {
    (terms + 8) as f64 * (-23f64).exp2()
}

/// The absolute slack `ε` of the interval: subnormal roundings, `(n + 2)·2^-150` at most
/// for at most [`MAX_TERMS`] terms.
pub(crate) fn absolute_bound() -> f64 {
    (-120f64).exp2()
}

impl Lower<'_> {
    /// Argmin/argmax `id` at each of `positions` (per position: its input's index at each
    /// folded element, and the inner reductions read there), screened in float32 (see the
    /// module docs), the sums of every position in one loop; `None` where the screen does not
    /// apply: another reduction, inputs other than one float32 sum of non-negative terms read
    /// through views.
    pub(super) fn screened_arg_fold(
        &mut self,
        id: NodeId,
        positions: &[(Vec<Ix>, Vec<(NodeId, Vec<Ix>)>)],
    ) -> Result<Option<Vec<Val>>, Stop> {
        let unroll = match (kiln_cache::config().arg_screen, &self.label_lanes) {
            (Some(0), _) => return Ok(None),
            (Some(u), _) => u,
            (None, Some((_, _, u))) => *u,
            (None, None) => SCREEN_UNROLL,
        };
        let node = self.body.node(id);
        if !matches!(node.op, OpKind::ArgMin | OpKind::ArgMax) {
            return Ok(None);
        }
        let input = node.inputs[0];
        let mut sum = None;
        let mut all = Vec::new();
        for (_, inner) in positions {
            let [(r, ixs)] = inner.as_slice() else { return Ok(None) };
            if self.through_views(input) != *r || ixs.len() < 2 || sum.is_some_and(|s| s != *r) {
                return Ok(None);
            }
            sum = Some(*r);
            all.extend(ixs.iter().cloned());
        }
        let Some(r) = sum else { return Ok(None) };
        let Some(terms) = self.screenable_sum(r) else { return Ok(None) };
        // The float32 pass: the sums together, in a memo scope of their own (the exact branch
        // must not read them), then per position the best, its position and the runner-up.
        self.memo.push(HashMap::new());
        let lanes = self.label_lanes.take();
        let lanes = lanes.as_ref().map(|(l, n, _)| (l.as_str(), *n));
        self.reductions_together(r, &all, Some(Acc::float32_sum_in_f32()), unroll, lanes)?;
        let mut sums = Vec::with_capacity(positions.len());
        for (fulls, _) in positions {
            let s: Vec<String> = fulls
                .iter()
                .map(|f| self.emit(input, f).map(|v| v.ssa))
                .collect::<Result<_, _>>()?;
            sums.push(s);
        }
        self.memo.pop();
        let mut results = Vec::with_capacity(positions.len());
        for (sums, (fulls, inner)) in sums.iter().zip(positions) {
            results.push(self.screened_pick(id, terms, sums, fulls, inner)?);
        }
        Ok(Some(results))
    }

    /// The screened argmin/argmax `id` of one position from its float32 `sums` (of `terms`
    /// terms each): the best where it is provably the evaluator's, else the exact fold over
    /// `fulls` (in a branch).
    fn screened_pick(
        &mut self,
        id: NodeId,
        terms: usize,
        sums: &[String],
        fulls: &[Ix],
        inner: &[(NodeId, Vec<Ix>)],
    ) -> Result<Val, Stop> {
        let max = self.body.node(id).op == OpKind::ArgMax;
        let b = &mut self.b;
        let inf = float_const(b, f64::INFINITY, "f32");
        let worst = float_const(b, if max { f64::NEG_INFINITY } else { f64::INFINITY }, "f32");
        let (mut best, mut second, mut at) = (worst.clone(), worst, b.i64(0));
        let mut finite = b.constant("true", "i1");
        let pred = if max { "ogt" } else { "olt" };
        for (e, s) in sums.iter().enumerate() {
            let abs = b.op(&format!("math.absf {s} : f32"));
            let fin = b.op(&format!("arith.cmpf olt, {abs}, {inf} : f32"));
            finite = b.op(&format!("arith.andi {finite}, {fin} : i1"));
            let better = b.op(&format!("arith.cmpf {pred}, {s}, {best} : f32"));
            let runner = b.op(&format!("arith.cmpf {pred}, {s}, {second} : f32"));
            let demoted = b.op(&format!("arith.select {runner}, {s}, {second} : f32"));
            second = b.op(&format!("arith.select {better}, {best}, {demoted} : f32"));
            best = b.op(&format!("arith.select {better}, {s}, {best} : f32"));
            let pos = b.i64(e as i64);
            at = b.op(&format!("arith.select {better}, {pos}, {at} : i64"));
        }
        // Apart: the lower end of one interval beyond the upper end of the other.
        let delta = relative_bound(terms);
        let lo_f = float_const(b, 1.0 - delta, "f32");
        let hi_f = float_const(b, 1.0 + delta, "f32");
        let eps = float_const(b, absolute_bound(), "f32");
        let (low, high) = if max { (&best, &second) } else { (&second, &best) };
        let lo = b.op(&format!("arith.mulf {low}, {lo_f} : f32"));
        let lo = b.op(&format!("arith.subf {lo}, {eps} : f32"));
        let hi = b.op(&format!("arith.mulf {high}, {hi_f} : f32"));
        let hi = b.op(&format!("arith.addf {hi}, {eps} : f32"));
        let apart = b.op(&format!("arith.cmpf ogt, {lo}, {hi} : f32"));
        let safe = b.op(&format!("arith.andi {finite}, {apart} : i1"));
        let res = self.open(1, &format!("scf.if {safe} -> (i64)"));
        self.b.stmt(&format!("scf.yield {at} : i64"));
        self.b.next_region("else");
        self.memo.pop();
        self.memo.push(HashMap::new());
        let exact = self.exact_unrolled_fold(id, fulls, inner)?;
        self.b.stmt(&format!("scf.yield {} : i64", exact.ssa));
        self.close();
        Ok(Val::new(res[0].clone(), DType::Int64))
    }

    /// The node `id` reads through views.
    fn through_views(&self, mut id: NodeId) -> NodeId {
        while self.body.node(id).op.class() == OpClass::View {
            id = self.body.node(id).inputs[0];
        }
        id
    }

    /// The number of terms of sum `r` when it can be screened: a float32 sum of float32 terms
    /// non-negative by construction, at most [`MAX_TERMS`] of them.
    fn screenable_sum(&self, r: NodeId) -> Option<usize> {
        let node = self.body.node(r);
        let Attrs::Reduce { axes, .. } = &node.attrs else { return None };
        let term = self.body.node(node.inputs[0]);
        if node.op != OpKind::Sum || node.dtype != DType::Float32 || term.dtype != DType::Float32 {
            return None;
        }
        let non_negative = matches!(term.op, OpKind::Square | OpKind::Abs)
            || (term.op == OpKind::Mul && term.inputs[0] == term.inputs[1]);
        let terms: usize = axes.iter().map(|&a| term.shape[a]).product();
        (non_negative && (1..=MAX_TERMS).contains(&terms)).then_some(terms)
    }
}
