//! Dispatch: a repeated expression goes straight to its prepared plan.
//!
//! Materialisation walks the arrays' expression DAG once in a fixed order (the order lowering
//! numbers nodes and inputs: [`walk`]). The dispatch key is that walk written out exactly, as
//! 64-bit words: for each node met, its op, dtype, shape, the walk positions of its operands and
//! its attributes (constants bit-exact, view starts and steps, target shapes: `Attrs::encode`);
//! for each held array (an input), its dtype, shape and which distinct value it is (two handles
//! on one value are one input, so aliasing is in the key); then the outputs and the backend (the
//! compiler's options are fixed for the process). Keys are compared word by word, not by a hash
//! alone: equal keys are equal walks, which lower to equal graphs, so a key seen before maps to
//! the plan compiled for it: such a call costs the walk, the lookup and the run. Sizes are
//! literal in this key; the plan cache behind it (`kiln_compiler::plan_cache`) keys sizes as
//! symbols, so a structure seen at other sizes is resized there, not compiled again.

use std::sync::{Arc, Mutex, OnceLock};

use kiln_compiler::pipeline::Compiled;
use rustc_hash::FxHashMap;

use crate::array::{Array, Expr};

/// What a [`walk`] meets, in the order lowering numbers it.
pub(crate) trait Visit {
    /// What a node becomes (a graph node id, a walk position).
    type Id: Copy;
    /// A held array, met first: `index` numbers the distinct held values in order first met.
    fn held(&mut self, a: &Array, index: u32) -> Self::Id;
    /// An array computed from its operands (`inputs`, in order).
    fn node(&mut self, a: &Array, inputs: &[Self::Id]) -> Self::Id;
    /// One of the walked arrays, in order.
    fn output(&mut self, id: Self::Id);
}

/// Walks the DAG of `arrays` in post-order (operands first, in order; each expression once;
/// held arrays are leaves), calling `v`; returns the held arrays by input index (one per
/// value). Iterative: deep expression chains do not overflow the stack.
///
/// An operand that only its one reader holds (`Arc::strong_count` 1: each operand edge is a
/// strong reference) cannot be met twice, so it is not remembered: in a chain of ops only the
/// shared nodes (scalars' splats, reused subexpressions, the roots) go through the memo table.
pub(crate) fn walk<V: Visit>(arrays: &[&Array], v: &mut V) -> Vec<Array> {
    enum Step<'a> {
        Visit(&'a Array),
        Finish(&'a Array),
    }
    let mut held: Vec<Array> = Vec::new();
    // Sized for a typical small graph: growing the table was a sixth of the walk's time.
    let mut memo: FxHashMap<*const Expr, V::Id> =
        FxHashMap::with_capacity_and_hasher(64, Default::default());
    let mut input_index: FxHashMap<*const (), u32> = FxHashMap::default();
    // The ids of the operands finished and not yet read by their node, in order.
    let mut done: Vec<V::Id> = Vec::new();
    let mut stack: Vec<Step> = Vec::new();
    for root in arrays {
        stack.push(Step::Visit(root));
        while let Some(step) = stack.pop() {
            let a = match step {
                Step::Visit(a) => a,
                Step::Finish(a) => {
                    let first = done.len() - a.e.inputs.len();
                    let id = v.node(a, &done[first..]);
                    done.truncate(first);
                    if shared(a, root) {
                        memo.insert(Arc::as_ptr(&a.e), id);
                    }
                    done.push(id);
                    continue;
                }
            };
            let shared = shared(a, root);
            if let Some(&id) = shared.then(|| memo.get(&Arc::as_ptr(&a.e))).flatten() {
                done.push(id);
                continue;
            }
            if a.is_materialized() {
                let identity = a.held_identity().expect("materialised");
                let next = held.len() as u32;
                let index = *input_index.entry(identity).or_insert_with(|| {
                    held.push(a.clone());
                    next
                });
                let id = v.held(a, index);
                if shared {
                    memo.insert(Arc::as_ptr(&a.e), id);
                }
                done.push(id);
                continue;
            }
            stack.push(Step::Finish(a));
            stack.extend(a.e.inputs.iter().rev().map(Step::Visit));
        }
        v.output(done.pop().expect("the root's id"));
    }
    held
}

/// Whether the walk can meet `a` again, so remembers it (see [`walk`]): others hold it, or it
/// is the root (the same array may be asked for twice, or be another root's operand).
fn shared(a: &Array, root: &Array) -> bool {
    Arc::strong_count(&a.e) > 1 || std::ptr::eq(a, root)
}

/// The [`Visit`] that writes the walk as the dispatch key's words.
struct KeyWalk {
    words: Vec<u64>,
    next: u32,
}

impl KeyWalk {
    /// The header words of a node or held array: what it is (`tag`: 0 held, 1 computed, with
    /// the op), its dtype and rank, `n` (the input index, or the number of operands); then its
    /// shape.
    fn head(&mut self, tag: u64, n: u32, a: &Array) -> u32 {
        let shape = &a.e.shape;
        self.words.push(tag | (a.e.dtype as u64) << 32 | (shape.len() as u64) << 40);
        self.words.push(u64::from(n));
        self.words.extend(shape.iter().map(|&d| d as u64));
        self.next += 1;
        self.next - 1
    }
}

impl Visit for KeyWalk {
    type Id = u32;

    fn held(&mut self, a: &Array, index: u32) -> u32 {
        self.head(0, index, a)
    }

    fn node(&mut self, a: &Array, inputs: &[u32]) -> u32 {
        let id = self.head(1 | (a.e.op as u64) << 8, inputs.len() as u32, a);
        self.words.extend(inputs.iter().map(|&i| u64::from(i)));
        a.e.attrs.encode(&mut self.words);
        id
    }

    fn output(&mut self, id: u32) {
        self.words.push(2 | u64::from(id) << 8);
    }
}

/// The dispatch key of materialising `arrays` on `backend` (see the module docs), and the held
/// arrays the plan reads, by input index (as lowering numbers them).
pub(crate) fn key(arrays: &[&Array], backend: kiln_runtime::Backend) -> (Key, Vec<Array>) {
    // Sized for a chain of ~70 ops: regrowing (or shrinking into a box) copied the key again.
    let mut k = KeyWalk { words: Vec::with_capacity(512), next: 0 };
    let held = walk(arrays, &mut k);
    k.words.push(backend_word(backend));
    (Key(k.words), held)
}

/// A dispatch key: the walk, word by word.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key(Vec<u64>);

/// Most keys kept; the cache is emptied when it would grow past this (a program that builds
/// ever new structures, such as one whose constants change every call, compiles through the
/// plan cache as before).
const MAX_KEYS: usize = 4096;

/// A prepared plan: `cached` says whether the plan cache keeps it (so the executors may keep
/// its prepared kernels by its address).
#[derive(Clone)]
pub(crate) struct Dispatch {
    pub plan: Arc<Compiled>,
    pub cached: bool,
}

thread_local! {
    static STATS: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
    static BY_STRUCTURE_HITS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts a dispatch on this thread: a hit of a kept key, or a miss.
pub(crate) fn count(hit: bool) {
    STATS.with(|s| {
        let (h, m) = s.get();
        s.set(if hit { (h + 1, m) } else { (h, m + 1) });
    });
}

/// Materialisations on this thread so far that found their plan by dispatch key (hits) and
/// that lowered their graph and asked the plan cache (misses, compiled or not), for tests and
/// reports. `KILN_DUMP` makes every call a miss (the dumps are written from the lowered graph).
pub fn dispatch_stats() -> (usize, usize) {
    STATS.with(|s| s.get())
}

/// The hits of [`dispatch_stats`] on this thread that found their plan by the root's
/// structural number, kept as the expression was built (no walk), for tests and reports.
pub fn dispatch_structure_hits() -> usize {
    BY_STRUCTURE_HITS.with(|s| s.get())
}

/// Plans by dispatch key.
fn cache() -> &'static Mutex<FxHashMap<Key, Dispatch>> {
    static CACHE: OnceLock<Mutex<FxHashMap<Key, Dispatch>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The plan dispatched by `key`, if one was kept.
pub(crate) fn get(key: &Key) -> Option<Dispatch> {
    cache().lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
}

/// Keeps `d` as the plan of `key`.
pub(crate) fn insert(key: Key, d: Dispatch) {
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if c.len() >= MAX_KEYS {
        c.clear();
    }
    c.insert(key, d);
}

/// The key of a call by its root's structural number (`array/structure.rs`): the number's
/// table, the number, which leaves hold one value, the backend.
type StructureKey = (u64, u32, u16, u64);

thread_local! {
    /// Plans by structural number, this thread's (the numbers are its table's).
    static BY_STRUCTURE: std::cell::RefCell<FxHashMap<StructureKey, Dispatch>> =
        std::cell::RefCell::new(FxHashMap::default());
}

/// The word of `backend` in keys.
fn backend_word(backend: kiln_runtime::Backend) -> u64 {
    match backend {
        kiln_runtime::Backend::Cpu => 3,
        kiln_runtime::Backend::Cuda(ordinal) => 4 | (ordinal as u64) << 8,
    }
}

/// The key of materialising `root` alone on `backend` by its structural number, where it has
/// one valid now on this thread.
pub(crate) fn structure_key(root: &Array, backend: kiln_runtime::Backend) -> Option<StructureKey> {
    let s = &root.e.structure;
    let (table, id) = s.current()?;
    Some((table, id, s.leaf_pattern(), backend_word(backend)))
}

/// The plan kept for `key` ([`structure_key`]) and the held arrays it reads by input index
/// (`root`'s leaves, one per value), if a call of that structure ran on this thread.
pub(crate) fn get_by_structure(root: &Array, key: &StructureKey) -> Option<(Dispatch, Vec<Array>)> {
    let d = BY_STRUCTURE.with(|m| m.borrow().get(key).cloned())?;
    BY_STRUCTURE_HITS.with(|s| s.set(s.get() + 1));
    Some((d, root.e.structure.held(key.2)))
}

/// Keeps `d` as the plan of `key` ([`structure_key`]) on this thread.
pub(crate) fn insert_by_structure(key: StructureKey, d: Dispatch) {
    BY_STRUCTURE.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= MAX_KEYS {
            m.clear();
        }
        m.insert(key, d);
    });
}
