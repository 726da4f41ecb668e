//! The structural key of an expression, kept as the expression is built (issue 22 §1).
//!
//! Each node built gets a [`Structure`]: a number that stands for everything materialisation
//! would see of it (its op, attributes, dtype and shape, and its operands' numbers, a held
//! operand as its dtype and shape), interned per thread, so two nodes built on one thread with
//! one number lower to the same graph. It is interned, not hashed: the
//! table compares the words written here, and an operand appears by its own number, so a node
//! costs one lookup of a few words, not a walk of what is below it.
//!
//! The held arrays a node reads (its *leaves*) are kept beside the number, distinct nodes in the
//! order lowering meets them (operands first, in order). The number records which leaf each
//! operand's leaves are, so aliasing between expressions is in it; whether two distinct leaf
//! nodes hold one value (lowering's inputs are values) is checked at the call
//! ([`Structure::leaf_pattern`]), as it can change after the build (a device value copied to
//! the host changes an array's identity).
//!
//! A number is valid only where it was made, as it was made:
//! - on the thread whose table made it, in the same generation of that table (emptied when it
//!   grows past [`MAX_ENTRIES`]);
//! - in the same *epoch*: materialising a node that some other handle holds may change the walk
//!   of every expression above it (it becomes an input), so it starts a new epoch
//!   ([`held_intermediate`]), and nodes built before it lose their numbers. The common call,
//!   an expression built and materialised through its one handle, starts none.
//!
//! A node with more than [`MAX_LEAVES`] leaves, a description longer than [`MAX_WORDS`], or an
//! operand without a valid number has none: its call takes the dispatch walk
//! (`crate::dispatch`), as every call did before (and every call does with
//! `KILN_DISPATCH_STRUCTURE=off`).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

use kiln_ir::{Attrs, DType, OpKind};
use rustc_hash::FxHashMap;

use super::{Array, Expr};

/// Most distinct leaf nodes an expression with a number reads.
const MAX_LEAVES: usize = 4;

/// Most numbers a thread's table holds before it is emptied (a program that builds ever new
/// structures, such as one whose constants change every call).
const MAX_ENTRIES: usize = 1 << 16;

/// Most words of a node's description (a node with a longer one, such as a slice of many
/// axes, has no number).
const MAX_WORDS: usize = 24;

/// A held array read by an expression: a node its expression holds through its operands.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Leaf(*const Expr);

// SAFETY: a `Leaf` is only dereferenced through the `Structure` of a live node (`leaves`),
// which holds the leaf's node alive through its operands (a live node's operands never
// change: only a node being dropped, or a spare one with no other handle, loses them), and
// `Expr` is `Sync`.
unsafe impl Send for Leaf {}
// SAFETY: as for `Send`: shared access to an `Expr` from any thread is safe.
unsafe impl Sync for Leaf {}

/// A node's structural number, where it has one (see the module docs).
#[derive(Clone, Copy)]
pub(crate) struct Structure {
    /// The number in its table; 0: none. (Whole words: a narrower field written and then
    /// copied as part of a word stalled the copy on store forwarding.)
    id: u64,
    /// How many of `leaves` are leaves.
    count: u64,
    /// The table's thread and generation.
    table: u64,
    /// The epoch it was made in.
    epoch: u64,
    /// The distinct leaf nodes, in lowering's order.
    leaves: [Leaf; MAX_LEAVES],
}

impl Default for Structure {
    fn default() -> Structure {
        Structure {
            id: 0,
            count: 0,
            table: 0,
            epoch: 0,
            leaves: [Leaf(std::ptr::null()); MAX_LEAVES],
        }
    }
}

/// The current epoch (see the module docs).
static EPOCH: AtomicU64 = AtomicU64::new(1);

/// Numbers threads' tables.
static TABLES: AtomicU64 = AtomicU64::new(1);

/// Records that a node some other handle holds was materialised: numbers made before now are
/// no longer valid.
pub(crate) fn held_intermediate() {
    EPOCH.fetch_add(1, Ordering::Release);
}

/// A thread's numbers.
struct Table {
    /// The thread's table number (high half) and generation (low half); 0 until first used.
    tag: u64,
    ids: Option<FxHashMap<Box<[u64]>, u32>>,
    /// Recent short descriptions and their numbers, direct-mapped by a hash of the words: most
    /// nodes are found here with one compare, not through `ids`' hashing and probing.
    front: Vec<Front>,
}

/// Slots of [`Table::front`].
const FRONT: usize = 1024;
/// Most words of a description kept in [`Table::front`].
const FRONT_WORDS: usize = 6;

#[derive(Clone, Copy)]
struct Front {
    words: [u64; FRONT_WORDS],
    /// The description's length; 0: empty (a description has at least its op's word).
    len: usize,
    id: u32,
}

const EMPTY: Front = Front { words: [0; FRONT_WORDS], len: 0, id: 0 };

thread_local! {
    /// This thread's table's tag (as `Table::tag`), apart: checking a number reads only it.
    static TAG: Cell<u64> = const { Cell::new(0) };
    static TABLE: RefCell<Table> = const {
        RefCell::new(Table { tag: 0, ids: None, front: Vec::new() })
    };
}

/// The word of a held operand: its leaf slot, dtype and rank (its extents after it).
const HELD: u64 = 1 << 63;
/// The word of a lazy operand: its number, its leaves' count and where they are.
const LAZY: u64 = 1 << 62;

/// A node's description, as words (see [`Table::number`]).
struct Words {
    w: [u64; MAX_WORDS],
    /// Words written; past [`MAX_WORDS`] the description is too long (only counted).
    n: usize,
}

impl Words {
    #[inline(always)]
    fn push(&mut self, x: u64) {
        if self.n < MAX_WORDS {
            self.w[self.n] = x;
        }
        self.n += 1;
    }
}

impl Extend<u64> for Words {
    fn extend<I: IntoIterator<Item = u64>>(&mut self, xs: I) {
        for x in xs {
            self.push(x);
        }
    }
}

impl Structure {
    /// The number of a node of `op` on `inputs`, of `dtype` and `shape`, built now on this thread
    /// (none where an operand has none, or past [`MAX_LEAVES`] or [`MAX_WORDS`]).
    pub(crate) fn of(
        op: OpKind,
        attrs: &Attrs,
        inputs: &[Array],
        dtype: DType,
        shape: &[usize],
    ) -> Structure {
        let epoch = EPOCH.load(Ordering::Acquire);
        TABLE
            .try_with(|t| {
                let Ok(mut t) = t.try_borrow_mut() else { return Structure::default() };
                t.number(epoch, op, attrs, inputs, dtype, shape).unwrap_or_default()
            })
            .unwrap_or_default()
    }

    /// The number and the table it is valid in, where it is valid now on this thread.
    pub(crate) fn current(&self) -> Option<(u64, u32)> {
        if self.id == 0 || self.epoch != EPOCH.load(Ordering::Acquire) {
            return None;
        }
        let tag = TAG.try_with(Cell::get).ok()?;
        (tag == self.table).then_some((tag, self.id as u32))
    }

    /// Whether the number is valid now on this thread.
    pub(crate) fn is_current(&self) -> bool {
        self.current().is_some()
    }

    fn leaves(&self) -> &[Leaf] {
        &self.leaves[..self.count as usize]
    }

    /// Which leaves hold one value: for each leaf (2 bits each, in order) the first leaf with
    /// its held value's identity; and the count in the top byte. Leaves are held arrays, so
    /// each has an identity.
    pub(crate) fn leaf_pattern(&self) -> u16 {
        let mut ids = [None; MAX_LEAVES];
        for (id, l) in ids.iter_mut().zip(self.leaves()) {
            *id = leaf_array(*l, |a| a.held_identity());
        }
        let ids = &ids[..self.leaves().len()];
        let mut p = (self.count as u16) << 8;
        for (i, id) in ids.iter().enumerate() {
            let first = ids.iter().position(|x| x == id).expect("itself");
            p |= (first as u16) << (2 * i);
        }
        p
    }

    /// The held arrays the node reads, one per distinct value, in lowering's order (its inputs
    /// by index): the leaves that `pattern` ([`Structure::leaf_pattern`]) says come first.
    pub(crate) fn held(&self, pattern: u16) -> Vec<Array> {
        (0..self.leaves().len())
            .filter(|&i| usize::from(pattern >> (2 * i) & 3) == i)
            .map(|i| leaf_array(self.leaves[i], Array::clone))
            .collect()
    }
}

/// `f` of the array of `leaf`'s node.
fn leaf_array<R>(leaf: Leaf, f: impl FnOnce(&Array) -> R) -> R {
    // SAFETY: `leaf` is a leaf of a live node's `Structure` (the caller's `&self`), which keeps
    // its node alive (see `Leaf`). The handle made here is not dropped (`ManuallyDrop`): it
    // borrows the count, and `f` clones it where it keeps it.
    let a = std::mem::ManuallyDrop::new(Array { e: unsafe { std::sync::Arc::from_raw(leaf.0) } });
    f(&a)
}

impl Table {
    /// The number of a node (see [`Structure::of`]); `None` where it has none.
    ///
    /// The description: the op, dtype and rank, the extents, the attributes
    /// (`Attrs::encode`); then per operand, a held one as [`HELD`] (its leaf slot, dtype,
    /// rank) and its extents, a lazy one as [`LAZY`] (its number, and the slot among this
    /// node's leaves of each of its leaves). Every part is self-delimiting, so equal words are
    /// equal nodes.
    fn number(
        &mut self,
        epoch: u64,
        op: OpKind,
        attrs: &Attrs,
        inputs: &[Array],
        dtype: DType,
        shape: &[usize],
    ) -> Option<Structure> {
        if self.tag == 0 {
            self.tag = TABLES.fetch_add(1, Ordering::Relaxed) << 32;
            TAG.with(|t| t.set(self.tag));
        }
        let mut s = Structure { table: self.tag, epoch, ..Structure::default() };
        // (The words in a local array and count, not a `Words` behind a reference: its count
        // then lived in memory, each word a store and a reload.)
        let mut w = [0u64; MAX_WORDS];
        let mut n = 0;
        let mut push = |x: u64| {
            if n < MAX_WORDS {
                w[n] = x;
            }
            n += 1;
        };
        push(op as u64 | (dtype as u64) << 16 | (shape.len() as u64) << 24);
        for &x in shape {
            push(x as u64);
        }
        match attrs {
            Attrs::None => push(0),
            other => {
                let mut a = Words { w: [0; MAX_WORDS], n: 0 };
                other.encode(&mut a);
                a.w[..a.n.min(MAX_WORDS)].iter().for_each(|&x| push(x));
                (a.n > MAX_WORDS).then(|| push(0));
            }
        }
        // The first lazy operand's number: it picks the description's slot in `front`.
        let mut first = 0;
        for a in inputs {
            if a.is_materialized() {
                let e = &a.e;
                let slot = s.slot(Leaf(std::sync::Arc::as_ptr(e)))?;
                push(HELD | slot << 8 | (e.dtype as u64) << 16 | (e.shape.len() as u64) << 24);
                for &x in e.shape.iter() {
                    push(x as u64);
                }
            } else {
                let o = &a.e.structure;
                if o.id == 0 || o.table != self.tag || o.epoch != epoch {
                    return None;
                }
                // Where the operand's leaves are among this node's, 2 bits each.
                let mut at = 0u64;
                for (k, l) in o.leaves().iter().enumerate() {
                    at |= s.slot(*l)? << (2 * k);
                }
                push(LAZY | o.id | o.count << 32 | at << 40);
                if first == 0 {
                    first = o.id;
                }
            }
        }
        if n > MAX_WORDS {
            return None;
        }
        s.id = u64::from(self.id(&w[..n], first)?);
        Some(s)
    }

    /// The number of description `w` whose first lazy operand is number `first` (0: none),
    /// made if new; `None` where the table was just emptied.
    fn id(&mut self, w: &[u64], first: u64) -> Option<u32> {
        if self.front.is_empty() {
            self.front = vec![EMPTY; FRONT];
        }
        // The slot: by the first lazy operand's number where there is one (numbers are dense,
        // so a repeated expression's descriptions sit together), with 2 bits of the op's word
        // and the last word (two readers of one operand); else by a hash of the words
        // (splitmix64's multipliers, the top bits).
        let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_left(31);
        let slot = if first != 0 {
            let low = mix(w[0], w[w.len() - 1]) >> 62;
            (first << 2 | low) as usize % FRONT
        } else {
            let h = w.iter().fold(w.len() as u64, |h, &x| mix(h, x));
            (h.wrapping_mul(0x94d0_49bb_1331_11eb) >> 54) as usize % FRONT
        };
        let f = &self.front[slot];
        // (Compared in a loop: `==` on slices calls `memcmp`, slower for a few words.)
        if f.len == w.len() && f.words.iter().zip(w).all(|(a, b)| a == b) {
            return Some(f.id);
        }
        let ids = self.ids.get_or_insert_with(FxHashMap::default);
        let id = match ids.get(w) {
            Some(&id) => id,
            None => {
                if ids.len() >= MAX_ENTRIES {
                    // A new generation: the old numbers are no longer this table's.
                    ids.clear();
                    self.front.fill(EMPTY);
                    self.tag += 1;
                    TAG.with(|t| t.set(self.tag));
                    return None;
                }
                let id = ids.len() as u32 + 1;
                ids.insert(w.into(), id);
                id
            }
        };
        if w.len() <= FRONT_WORDS {
            let mut words = [0; FRONT_WORDS];
            words[..w.len()].copy_from_slice(w);
            self.front[slot] = Front { words, len: w.len(), id };
        }
        Some(id)
    }
}

impl Structure {
    /// The slot of `leaf` among this node's leaves, added if new; `None` past [`MAX_LEAVES`].
    fn slot(&mut self, leaf: Leaf) -> Option<u64> {
        let n = self.count as usize;
        if let Some(k) = self.leaves[..n].iter().position(|l| *l == leaf) {
            return Some(k as u64);
        }
        if n == MAX_LEAVES {
            return None;
        }
        self.leaves[n] = leaf;
        self.count += 1;
        Some(n as u64)
    }
}
