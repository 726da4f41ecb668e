//! The screen of a GPU scatter's label phase by expanded distances
//! (`KILN_GPU_SCREEN_EXPANDED`, module `screen`): k-means' `argmin(sum((x[:, None] - c[None]) ** 2,
//! 2), 1)` screened by `‖x‖² − 2·x·c + ‖c‖²` in float32, one fused multiply-add a term (the
//! dot product) where the plain screen takes a subtract and a fused multiply-add; `‖x‖²` one
//! more a term of the position (not a centre's), each `‖c‖²` once a block before the first
//! tile (threads `0..k`, into shared memory).
//!
//! The bound. Let `m` be the terms of a sum, `u = 2^-24`, `γ = m·u / (1 − m·u)`, `X = ‖x‖²`,
//! `C = ‖c‖²`, `D = x·c` exactly (of the float32 inputs), `E = X − 2D + C = Σ (x − c)²`. Float32
//! sums of products in any order (contracted or not) are within `γ·Σ|products|` of the exact
//! ones: `|X̂ − X| ≤ γX`, `|Ĉ − C| ≤ γC`, `|2D̂ − 2D| ≤ 2γ·Σ|x·c| ≤ γ(X + C)` (as
//! `2|x·c| ≤ x² + c²`). `ĝ = Ĉ − 2D̂` and `Ê = ĝ + X̂` round once each, by at most
//! `u(C + X + C)(1 + γ)` and `u(2X + 2C)(1 + γ)`. So `|Ê − E| ≤ (2γ + 4u)(1 + γ)(X + C)`, which
//! for `m ≤` [`MAX_ROW`] is below `W = (m + 8)·2^-23·(X̂ + Ĉmax)` (computed in float32: the
//! margin covers `X̂`, `Ĉ` below `X`, `C` by `γ` and `W`'s two roundings), plus `m·2^-149` for
//! subnormal roundings. The evaluator's value `V` is within `4.02u·E` of `E` plus `(m + 1)·2^-150`
//! (its difference rounded to float32, its square, its sum: see `screen`). With the best `Ê_b`
//! and the runner-up `Ê_s`, every other centre's `E ≥ Ê_s − W` and `E_b ≤ Ê_b + W`; so when
//! `(Ê_s − W)(1 − δ) − ε > (Ê_b + W)(1 + δ) + ε` with `δ = 8·2^-23` (room for `4.02u` and the
//! three roundings of each side) and `ε = 2^-120`, the evaluator's `V_b` is strictly the least:
//! the label is `b`. Otherwise (near ties, ties, cancellation that widens `W`, NaN,
//! infinities, overflow anywhere: a non-finite `Ê` or side) the position folds exactly, in a
//! branch, as the plain screen's: the evaluator's label, always.
//!
//! Only where the shapes say the identity holds: an argmin over axis 1 of a float32 sum over
//! axis 2 of `(p − q)²` (either order), `p` a view of a region input constant along axis 1
//! (the point), `q` one constant along axis 0 (the centre), 2 to 16 centres of at most
//! [`MAX_ROW`] elements.

use std::collections::HashMap;

use kiln_ir::strided::layout_over_base;
use kiln_ir::{Attrs, DType, NodeId, OpKind};

use super::{relative_bound, screen_pick_with};
use crate::codegen::index::{extent, Ix};
use crate::codegen::lower::{Lower, Stop};
use crate::codegen::types::{float_const, load, store, Val};

/// Whether a GPU scatter's screened labels use expanded distances, by default
/// (`KILN_GPU_SCREEN_EXPANDED=on|off` for another): off where the block takes tiles together,
/// on where consumer warps take them from a queue (module `scatter::queue`). On an H200
/// (k-means 2^20×64, k = 10, session 29, three calls, off and on alternated) the block's
/// kernel's instructions fell by 15% (99 M to 84 M, 63 registers to 44) but not its time:
/// 0.166-0.178 ms on against 0.166-0.172 off (ncu: 200 µs against 204, issue slots busy 54%
/// against 62%: bound by the phases' latency and barriers, not by issue). The queued kernel,
/// whose warps wait on no barrier, is bound by issue: 0.1350-0.1374 ms on against
/// 0.1450-0.1494 off (session 37, `benches/runs/2026-11-29-session37/q3.sh`).
const EXPANDED: bool = false;
const EXPANDED_QUEUED: bool = true;

/// Most elements of a point (the bound's `m`; see the module docs).
const MAX_ROW: usize = 1024;

/// A GPU scatter's label argmin screened by expanded distances.
#[derive(Clone, Debug)]
pub(in crate::codegen::lower) struct Expanded {
    /// The argmin, and the sum of squares it reads.
    argmin: NodeId,
    sum: NodeId,
    /// The point's and the centre's operands of the difference.
    p: NodeId,
    q: NodeId,
    /// Centres, and elements of each.
    k: usize,
    m: usize,
    /// Byte offset of the centres' float32 `‖c‖²` in shared memory.
    pub(in crate::codegen::lower) norms: usize,
}

impl Expanded {
    /// Bytes of shared memory the centres' norms take (16-byte aligned).
    pub(in crate::codegen::lower) fn bytes(&self) -> usize {
        (4 * self.k).next_multiple_of(16)
    }
}

/// The input (its index) a view chain `id` reads, where that view is constant along `axis`.
fn constant_along(body: &kiln_ir::Graph, id: NodeId, axis: usize) -> Option<NodeId> {
    let (base, layout) = layout_over_base(body, id)?;
    let b = body.node(base);
    (b.op == OpKind::Input && layout.strides.get(axis) == Some(&0)).then_some(base)
}

impl Lower<'_> {
    /// The expanded screen of a GPU scatter over `n` positions whose index is node `idx`
    /// (see the module docs), its norms not yet placed; `None` where the knob is off (by
    /// default off unless the kernel is `queued`) or the shapes do not say the identity holds.
    pub(in crate::codegen::lower) fn expanded_plan(
        &self,
        idx: NodeId,
        n: usize,
        queued: bool,
    ) -> Option<Expanded> {
        let cfg = kiln_cache::config();
        let default = if queued { EXPANDED_QUEUED } else { EXPANDED };
        if !cfg.gpu_screen_expanded.unwrap_or(default) || cfg.arg_screen == Some(0) {
            return None;
        }
        let body = self.body;
        let a = body.node(idx);
        let Attrs::Reduce { axes, keepdims: false } = &a.attrs else { return None };
        if a.op != OpKind::ArgMin || axes.as_slice() != [1] {
            return None;
        }
        let sum = a.inputs[0];
        let r = body.node(sum);
        let Attrs::Reduce { axes, keepdims: false } = &r.attrs else { return None };
        if axes.as_slice() != [2] || self.screenable_sum(sum).is_none() {
            return None;
        }
        let t = body.node(r.inputs[0]);
        let square = t.op == OpKind::Square || (t.op == OpKind::Mul && t.inputs[0] == t.inputs[1]);
        if !square {
            return None;
        }
        let s = t.inputs[0];
        let d = body.node(s);
        if d.op != OpKind::Sub || d.dtype != DType::Float32 || d.shape.len() != 3 {
            return None;
        }
        let (k, m) = (d.shape[1], d.shape[2]);
        if d.shape[0] != n || !(2..=super::super::nested::UNROLL_MAX).contains(&k) || m > MAX_ROW {
            return None;
        }
        let (u, v) = (d.inputs[0], d.inputs[1]);
        let (p, q) = if constant_along(body, u, 1).is_some() && constant_along(body, v, 0).is_some()
        {
            (u, v)
        } else if constant_along(body, v, 1).is_some() && constant_along(body, u, 0).is_some() {
            (v, u)
        } else {
            return None;
        };
        Some(Expanded { argmin: idx, sum, p, q, k, m, norms: 0 })
    }

    /// The centres' float32 `‖c‖²` into shared memory, thread `e` the `e`-th (after the barrier
    /// that follows the held inputs' copy: the tile's barrier orders them before the label
    /// phase).
    pub(in crate::codegen::lower) fn expanded_norms(&mut self, ex: &Expanded) -> Result<(), Stop> {
        let kc = self.b.i64(ex.k as i64);
        let mine = self.b.op(&format!("arith.cmpi slt, %tid, {kc} : i64"));
        self.open_if(&mine);
        let zero = self.b.i64(0);
        let me = extent(&mut self.b, ex.m);
        let f0 = float_const(&mut self.b, 0.0, "f32");
        let (j, args, res) = self.open_for_step(&zero, &me, None, &[f0], &["f32"]);
        let ix = Ix { dims: Some(vec![zero.clone(), "%tid".into(), j]), flat: None };
        let c = self.emit(ex.q, &ix)?.ssa;
        let sq = self.b.op(&format!("arith.mulf {c}, {c} fastmath<contract> : f32"));
        let next = self.b.op(&format!("arith.addf {}, {sq} fastmath<contract> : f32", args[0]));
        self.yield_(&[next], &["f32"]);
        self.close();
        let base = self.shared_at(ex.norms);
        store(&mut self.b, &base, "%tid", &Val::new(res[0].clone(), DType::Float32));
        self.close();
        Ok(())
    }

    /// The labels of argmin `id` at `positions` (see [`Lower::screened_arg_fold`]) screened by
    /// expanded distances where `self.expanded` says so; `None` otherwise. `unroll`, `lanes`: as
    /// the plain screen's sums take them.
    pub(super) fn expanded_screen(
        &mut self,
        id: NodeId,
        positions: &[(Vec<Ix>, Vec<(NodeId, Vec<Ix>)>)],
        unroll: usize,
        lanes: Option<(String, usize)>,
    ) -> Result<Option<Vec<Val>>, Stop> {
        let Some(ex) = self.expanded.clone().filter(|e| e.argmin == id) else { return Ok(None) };
        let ok = |(_, inner): &(Vec<Ix>, Vec<(NodeId, Vec<Ix>)>)| matches!(inner.as_slice(), [(r, ixs)] if *r == ex.sum && ixs.len() == ex.k);
        if !positions.iter().all(ok) {
            return Ok(None);
        }
        let (k, m) = (ex.k, ex.m);
        // The float32 pass in a memo scope of its own (the exact branch must not read it).
        self.memo.push(HashMap::new());
        let l = lanes.as_ref().map_or(1, |(_, l)| *l);
        let unroll = if unroll > 1 && m.is_multiple_of(unroll * l) { unroll } else { 1 };
        let zero = self.b.i64(0);
        let from = match &lanes {
            Some((lane, _)) => {
                let u = self.b.i64(unroll as i64);
                self.b.op(&format!("arith.muli {lane}, {u} : i64"))
            }
            None => zero.clone(),
        };
        let step = self.b.i64((l * unroll) as i64);
        let ub = extent(&mut self.b, m);
        let kept: Vec<Vec<Vec<String>>> = positions
            .iter()
            .map(|(_, inner)| inner[0].1.iter().map(|ix| self.kept_index(ex.sum, ix)).collect())
            .collect::<Result<_, _>>()?;
        // Per position: the k dot products, then ‖x‖².
        let width = k + 1;
        let f0 = float_const(&mut self.b, 0.0, "f32");
        let init = vec![f0; width * positions.len()];
        let tys = vec!["f32"; init.len()];
        let (j, args, res) = self.open_for_step(&from, &ub, Some(&step), &init, &tys);
        if unroll > 1 {
            self.multiples.insert(j.clone(), unroll);
        }
        let mut cur = args;
        for u in 0..unroll {
            let ju = match u {
                0 => j.clone(),
                _ => {
                    let off = self.b.i64(u as i64);
                    self.b.op(&format!("arith.addi {j}, {off} : i64"))
                }
            };
            let mut next = Vec::with_capacity(cur.len());
            for (pk, kept) in kept.iter().enumerate() {
                let a = &cur[pk * width..(pk + 1) * width];
                let at = |e: usize| {
                    let mut dims = kept[e].clone();
                    dims.push(ju.clone());
                    Ix { dims: Some(dims), flat: None }
                };
                let x = self.emit(ex.p, &at(0))?.ssa;
                for (e, acc) in a[..k].iter().enumerate() {
                    let c = self.emit(ex.q, &at(e))?.ssa;
                    let xc = self.b.op(&format!("arith.mulf {x}, {c} fastmath<contract> : f32"));
                    next.push(
                        self.b.op(&format!(
                            "arith.addf {acc}, {xc} fastmath<reassoc,contract> : f32"
                        )),
                    );
                }
                let xx = self.b.op(&format!("arith.mulf {x}, {x} fastmath<contract> : f32"));
                next.push(
                    self.b
                        .op(&format!("arith.addf {}, {xx} fastmath<reassoc,contract> : f32", a[k])),
                );
            }
            cur = next;
        }
        self.yield_(&cur, &tys);
        self.close();
        let mut sums = res;
        for s in sums.iter_mut().filter(|_| l > 1) {
            let mut off = 1;
            while off < l {
                let other = self.shfl_xor(s, "f32", off);
                *s = self.b.op(&format!("arith.addf {s}, {other} fastmath<reassoc> : f32"));
                off *= 2;
            }
        }
        // The centres' norms, their largest, and each position's distances and slack.
        let base = self.shared_at(ex.norms);
        let norms: Vec<String> = (0..k)
            .map(|e| {
                let at = self.b.i64(e as i64);
                load(&mut self.b, &base, &at, DType::Float32).ssa
            })
            .collect();
        let mut cmax = norms[0].clone();
        for c in &norms[1..] {
            cmax = self.b.op(&format!("arith.maximumf {cmax}, {c} : f32"));
        }
        let minus_two = float_const(&mut self.b, -2.0, "f32");
        let kappa = float_const(&mut self.b, (m + 8) as f64 * (-23f64).exp2(), "f32");
        let mut picks = Vec::with_capacity(positions.len());
        for s in sums.chunks(width) {
            let xx = &s[k];
            let dists: Vec<String> = (0..k)
                .map(|e| {
                    let g = self.b.op(&format!("arith.mulf {}, {minus_two} : f32", s[e]));
                    let g = self.b.op(&format!("arith.addf {}, {g} : f32", norms[e]));
                    self.b.op(&format!("arith.addf {g}, {xx} : f32"))
                })
                .collect();
            let w = self.b.op(&format!("arith.addf {xx}, {cmax} : f32"));
            let w = self.b.op(&format!("arith.mulf {w}, {kappa} : f32"));
            picks.push(screen_pick_with(&mut self.b, &dists, false, relative_bound(0), Some(&w)));
        }
        self.memo.pop();
        let mut results = Vec::with_capacity(positions.len());
        for ((safe, at), (fulls, inner)) in picks.into_iter().zip(positions) {
            results.push(self.pick_or_fold(id, &safe, &at, fulls, inner)?);
        }
        Ok(Some(results))
    }
}
