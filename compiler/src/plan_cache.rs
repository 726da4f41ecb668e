//! The plan cache: a graph with the same structure as one compiled before reuses its compiled
//! plan without running the e-graph again.
//!
//! The key is the graph with its *sizes* renamed: every extent in a node's shape, a `reshape` or
//! `broadcast_to` target, a slice length or a real FFT's length `n` becomes a symbol, numbered by first appearance, so two
//! graphs share a key exactly when they differ only by a consistent renaming of sizes (0 and 1
//! stay literal: they decide broadcasting). Ops, attributes, dtypes, ranks, constants and slice
//! starts and steps are part of the key. A hit maps the cached plan's sizes to the new graph's;
//! a plan holding a size the input graph does not (made by a rewrite) is reused only for the
//! same sizes. The instantiated plan is verified before use, and compiled again where a scatter
//! epilogue it absorbed no longer fits its limits at the new sizes
//! ([`crate::fusion::epilogue_fits`]).

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use kiln_ir::{Attrs, Graph, Node, Shape};

use crate::error::CompileError;
use crate::fusion::{Region, Space};
use crate::pipeline::{compile, Compiled, Options};

/// Sizes of a graph in order of first appearance, and the key built from them.
struct Signature {
    key: String,
    sizes: Vec<usize>,
}

fn signature(g: &Graph) -> Signature {
    let mut sym: FxHashMap<usize, usize> = FxHashMap::default();
    let mut sizes = Vec::new();
    let mut key = String::with_capacity(g.len() * 48);
    let mut name = |v: usize, key: &mut String| {
        if v <= 1 {
            let _ = write!(key, "{v}");
        } else {
            let next = sym.len();
            let s = *sym.entry(v).or_insert_with(|| {
                sizes.push(v);
                next
            });
            let _ = write!(key, "s{s}");
        }
    };
    for n in g.nodes() {
        let _ = write!(key, "{}:{}[", n.op.name(), n.dtype.short_name());
        for &d in &n.shape {
            name(d, &mut key);
            key.push(',');
        }
        key.push(']');
        match &n.attrs {
            Attrs::Shape { shape } => {
                key.push('{');
                for &d in shape {
                    name(d, &mut key);
                    key.push(',');
                }
                key.push('}');
            }
            Attrs::Slice { dims } => {
                for d in dims {
                    let _ = write!(key, "{{{}:{}:", d.start, d.step);
                    name(d.len, &mut key);
                    key.push('}');
                }
            }
            Attrs::RealFft { axes, n, norm } => {
                let _ = write!(key, "{{{axes:?}:{}:", norm.name());
                name(*n, &mut key);
                key.push('}');
            }
            other => {
                let _ = write!(key, "{other:?}");
            }
        }
        let _ = write!(key, "{:?};", n.inputs.as_slice());
    }
    let _ = write!(key, "->{:?}", g.outputs());
    Signature { key, sizes }
}

/// Applies a size map to every size position of a graph; `None` if a size has no image.
fn map_graph(g: &Graph, f: &dyn Fn(usize) -> Option<usize>) -> Option<Graph> {
    let shape = |s: &Shape| -> Option<Shape> { s.iter().map(|&d| f(d)).collect() };
    let mut out = Graph::new();
    for n in g.nodes() {
        let attrs = match &n.attrs {
            Attrs::Shape { shape: s } => Attrs::Shape { shape: shape(s)? },
            Attrs::Slice { dims } => Attrs::Slice {
                dims: dims
                    .iter()
                    .map(|d| Some(kiln_ir::SliceDim { len: f(d.len)?, ..*d }))
                    .collect::<Option<_>>()?,
            },
            Attrs::RealFft { axes, n, norm } => {
                Attrs::RealFft { axes: axes.clone(), n: f(*n)?, norm: *norm }
            }
            other => other.clone(),
        };
        out.insert(Node {
            op: n.op,
            attrs,
            inputs: n.inputs.clone(),
            dtype: n.dtype,
            shape: shape(&n.shape)?,
        });
    }
    out.set_outputs(g.outputs().to_vec());
    Some(out)
}

fn map_plan(c: &Compiled, f: &dyn Fn(usize) -> Option<usize>) -> Option<Compiled> {
    let shape = |s: &Shape| -> Option<Shape> { s.iter().map(|&d| f(d)).collect() };
    let mut plan = c.clone();
    plan.simplified = map_graph(&c.simplified, f)?;
    for r in &mut plan.partition.regions {
        let Region { body, space, .. } = r;
        *body = map_graph(body, f)?;
        *space = match space {
            Space::Elementwise { shape: s } => Space::Elementwise { shape: shape(s)? },
            Space::Reduce { shape: s, axes } => {
                Space::Reduce { shape: shape(s)?, axes: axes.clone() }
            }
            Space::Scatter { items } => Space::Scatter { items: shape(items)? },
            Space::Scan { shape: s, axis } => Space::Scan { shape: shape(s)?, axis: *axis },
            Space::Opaque => Space::Opaque,
        };
    }
    for b in &mut plan.schedule.buffers {
        b.shape = shape(&b.shape)?;
    }
    // Which regions are small depends on the sizes.
    plan.schedule.streams = crate::streams::assign_streams(&plan.partition.regions);
    Some(plan)
}

/// Most sizes kept per structure: the compiled plan and the plans resized from it. A size kept
/// is an exact hit next time, so the GPU's prepared kernels, kept by plan, are reused (a
/// resized plan not kept is prepared again on every call: 0.8–1.5 ms of host time for a k-means
/// iteration of 2^20 points after one on the digits, measured on an H200).
const SIZES_PER_PLAN: usize = 8;

/// The plans of one structure: (sizes, plan), the compiled one first.
type SizedPlans = Vec<(Vec<usize>, Arc<Compiled>)>;

/// Compiled plans by structure.
#[derive(Default)]
pub struct PlanCache {
    /// By signature text (FxHash: the key is long and hashed on every materialisation): the
    /// sizes and plan compiled first, then up to [`SIZES_PER_PLAN`] - 1 resized from it.
    plans: Mutex<FxHashMap<String, SizedPlans>>,
}

/// Whether a lookup reused a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Same structure and sizes: the plan as it was.
    Hit,
    /// Same structure, other sizes: the plan with its sizes mapped; `kept`: stored in the
    /// cache for these sizes (up to [`SIZES_PER_PLAN`] a structure), so it lives there as a
    /// [`Lookup::Hit`] plan does (the executor may keep work prepared for it).
    HitResized { kept: bool },
    /// Compiled now.
    Miss,
}

impl PlanCache {
    pub fn new() -> PlanCache {
        PlanCache::default()
    }

    /// The plan of `g`: reused when a graph of the same structure was compiled before, else
    /// compiled and kept.
    pub fn get_or_compile(
        &self,
        g: &Graph,
        opts: &Options,
    ) -> Result<(Arc<Compiled>, Lookup), CompileError> {
        let sig = signature(g);
        let first = {
            let plans = self.plans.lock().expect("plan cache lock");
            match plans.get(&sig.key) {
                Some(entries) => {
                    if let Some((_, plan)) = entries.iter().find(|(sizes, _)| *sizes == sig.sizes) {
                        return Ok((plan.clone(), Lookup::Hit));
                    }
                    Some(entries[0].clone())
                }
                None => None,
            }
        };
        if let Some((old_sizes, plan)) = first {
            let map: HashMap<usize, usize> =
                old_sizes.iter().copied().zip(sig.sizes.iter().copied()).collect();
            let f = |d: usize| if d <= 1 { Some(d) } else { map.get(&d).copied() };
            if let Some(resized) = map_plan(&plan, &f) {
                let ok = kiln_ir::verify::verify(&resized.simplified).is_ok()
                    && resized
                        .partition
                        .regions
                        .iter()
                        // (a scatter's epilogue is absorbed for small results only)
                        .all(|r| {
                            kiln_ir::verify::verify(&r.body).is_ok()
                                && crate::fusion::epilogue_fits(r)
                        });
                if ok {
                    let resized = Arc::new(resized);
                    let mut plans = self.plans.lock().expect("plan cache lock");
                    let entries = plans.entry(sig.key.clone()).or_default();
                    let kept = entries.len() < SIZES_PER_PLAN
                        && !entries.iter().any(|(s, _)| *s == sig.sizes);
                    if kept {
                        entries.push((sig.sizes.clone(), resized.clone()));
                    }
                    tracing::debug!(target: "kiln::plan", from = ?old_sizes, to = ?sig.sizes, "a plan reused at new sizes");
                    return Ok((resized, Lookup::HitResized { kept }));
                }
            }
        }
        if tracing::enabled!(target: "kiln::plan", tracing::Level::INFO) {
            let why = self.why_compile(g);
            tracing::info!(target: "kiln::plan", nodes = g.len(), "compiling a plan: {why}");
        }
        let plan = Arc::new(compile(g, opts)?);
        self.plans
            .lock()
            .expect("plan cache lock")
            .insert(sig.key, vec![(sig.sizes, plan.clone())]);
        Ok((plan, Lookup::Miss))
    }

    /// Why `g` has no plan here, in words (what the `kiln::plan` log says before compiling,
    /// as torch's recompilation log does): no plan yet; a plan of the same structure whose
    /// sizes could not be mapped; or the cached structure nearest to `g`'s (the longest common
    /// prefix of their keys) and the first node where they differ, as each key writes it
    /// (`op:dtype[sizes]attributes[operands]`, sizes as symbols `s0, s1...`).
    pub fn why_compile(&self, g: &Graph) -> String {
        let sig = signature(g);
        let plans = self.plans.lock().expect("plan cache lock");
        if plans.contains_key(&sig.key) {
            return "a plan of this structure exists, but its sizes could not be mapped to these \
                    (it holds a size a rewrite made)"
                .into();
        }
        let common = |k: &str| {
            let n = k.bytes().zip(sig.key.bytes()).take_while(|(a, b)| a == b).count();
            (0..=n).rev().find(|&i| sig.key.is_char_boundary(i)).unwrap_or(0)
        };
        let Some((near, n)) = plans.keys().map(|k| (k, common(k))).max_by_key(|(_, n)| *n) else {
            return "no plan has been compiled yet".into();
        };
        let node = sig.key[..n].matches(';').count();
        let part = |k: &str| k.split(';').nth(node).unwrap_or("(the end)").to_string();
        format!(
            "no plan of this structure among {}; the nearest differs first at node {node}: `{}` \
             where it has `{}`",
            plans.len(),
            part(&sig.key),
            part(near)
        )
    }

    /// Number of plans kept.
    pub fn len(&self) -> usize {
        self.plans.lock().expect("plan cache lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
