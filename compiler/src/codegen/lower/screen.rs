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
use crate::codegen::builder::Builder;
use crate::codegen::index::Ix;
use crate::codegen::reduce::Acc;
use crate::codegen::types::{float_const, Val};

mod expanded;
pub(super) use expanded::Expanded;

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
        // A GPU scatter's labels by expanded distances where they apply (module `expanded`).
        let lanes = self.label_lanes.as_ref().map(|(l, n, _)| (l.clone(), *n));
        if let Some(v) = self.expanded_screen(id, positions, unroll, lanes)? {
            self.label_lanes = None;
            return Ok(Some(v));
        }
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
        let (safe, at) = screen_pick(&mut self.b, sums, max, terms, None);
        self.pick_or_fold(id, &safe, &at, fulls, inner)
    }

    /// Position `at` (an `i64`) where `safe` (an `i1`) holds, else the exact fold of argmin or
    /// argmax `id` over `fulls` (in a branch).
    fn pick_or_fold(
        &mut self,
        id: NodeId,
        safe: &str,
        at: &str,
        fulls: &[Ix],
        inner: &[(NodeId, Vec<Ix>)],
    ) -> Result<Val, Stop> {
        let res = self.open(1, &format!("scf.if {safe} -> (i64)"));
        self.b.stmt(&format!("scf.yield {at} : i64"));
        self.open_else();
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
    pub(super) fn screenable_sum(&self, r: NodeId) -> Option<usize> {
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

/// The screen's decision over float32 `sums` (of `terms` terms each; the least under
/// `max = false`): whether every sum is finite and the runner-up's interval lies beyond the
/// best's (an `i1`), and the first best's position (an `i64`). With `lanes`, each of `sums` is
/// a vector of that many lanes (a position each, [`super::label_block`]), and so are the
/// results.
pub(super) fn screen_pick(
    b: &mut Builder,
    sums: &[String],
    max: bool,
    terms: usize,
    lanes: Option<usize>,
) -> (String, String) {
    pick(b, sums, max, relative_bound(terms), None, lanes)
}

/// [`screen_pick`] of scalar `sums` whose values are within `slack` (an `f32`) of the exact
/// sums they stand for, beside their relative bound `delta` (module `expanded`): the best's
/// interval widened by `slack` above, the runner-up's below.
pub(super) fn screen_pick_with(
    b: &mut Builder,
    sums: &[String],
    max: bool,
    delta: f64,
    slack: Option<&str>,
) -> (String, String) {
    pick(b, sums, max, delta, slack, None)
}

fn pick(
    b: &mut Builder,
    sums: &[String],
    max: bool,
    delta: f64,
    slack: Option<&str>,
    lanes: Option<usize>,
) -> (String, String) {
    let of = |t: &str| lanes.map_or(t.to_string(), |w| format!("vector<{w}x{t}>"));
    let (fty, mty, ity) = (of("f32"), of("i1"), of("i64"));
    // A float constant, in every lane.
    let lift = |b: &mut Builder, v: f64| {
        let c = float_const(b, v, "f32");
        match lanes {
            Some(w) => splat(b, &c, "f32", w),
            None => c,
        }
    };
    let sel = |c: &str, x: &str, y: &str, t: &str| match lanes {
        Some(_) => format!("arith.select {c}, {x}, {y} : {mty}, {t}"),
        None => format!("arith.select {c}, {x}, {y} : {t}"),
    };
    let int = |b: &mut Builder, v: i64| match lanes {
        Some(_) => b.constant(&format!("dense<{v}>"), &ity),
        None => b.i64(v),
    };
    let inf = lift(b, f64::INFINITY);
    let worst = lift(b, if max { f64::NEG_INFINITY } else { f64::INFINITY });
    let (mut best, mut second, mut at) = (worst.clone(), worst, int(b, 0));
    let mut finite = match lanes {
        Some(_) => b.constant("dense<true>", &mty),
        None => b.constant("true", "i1"),
    };
    let pred = if max { "ogt" } else { "olt" };
    for (e, s) in sums.iter().enumerate() {
        let abs = b.op(&format!("math.absf {s} : {fty}"));
        let fin = b.op(&format!("arith.cmpf olt, {abs}, {inf} : {fty}"));
        finite = b.op(&format!("arith.andi {finite}, {fin} : {mty}"));
        let better = b.op(&format!("arith.cmpf {pred}, {s}, {best} : {fty}"));
        let runner = b.op(&format!("arith.cmpf {pred}, {s}, {second} : {fty}"));
        let demoted = b.op(&sel(&runner, s, &second, &fty));
        second = b.op(&sel(&better, &best, &demoted, &fty));
        best = b.op(&sel(&better, s, &best, &fty));
        let pos = int(b, e as i64);
        at = b.op(&sel(&better, &pos, &at, &ity));
    }
    // Apart: the lower end of one interval beyond the upper end of the other.
    let lo_f = lift(b, 1.0 - delta);
    let hi_f = lift(b, 1.0 + delta);
    let eps = lift(b, absolute_bound());
    let (mut low, mut high) = if max { (best, second) } else { (second, best) };
    if let Some(w) = slack {
        low = b.op(&format!("arith.subf {low}, {w} : {fty}"));
        high = b.op(&format!("arith.addf {high}, {w} : {fty}"));
    }
    let lo = b.op(&format!("arith.mulf {low}, {lo_f} : {fty}"));
    let lo = b.op(&format!("arith.subf {lo}, {eps} : {fty}"));
    let hi = b.op(&format!("arith.mulf {high}, {hi_f} : {fty}"));
    let hi = b.op(&format!("arith.addf {hi}, {eps} : {fty}"));
    let apart = b.op(&format!("arith.cmpf ogt, {lo}, {hi} : {fty}"));
    let safe = b.op(&format!("arith.andi {finite}, {apart} : {mty}"));
    (safe, at)
}

/// Scalar `s` (of type `ty`) in every lane of a vector of `w`.
pub(super) fn splat(b: &mut Builder, s: &str, ty: &str, w: usize) -> String {
    let vty = format!("vector<{w}x{ty}>");
    let zero = b.i64(0);
    let one = b.op(&format!("llvm.mlir.poison : {vty}"));
    let one = b.op(&format!("llvm.insertelement {s}, {one}[{zero} : i64] : {vty}"));
    b.op(&format!("llvm.shufflevector {one}, {one} [{}] : {vty}", vec!["0"; w].join(", ")))
}
