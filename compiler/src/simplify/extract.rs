//! Extraction: one e-node per needed e-class, chosen by the [cost model](crate::cost), and the
//! graph rebuilt from those choices.
//!
//! egg's stock extractor costs trees: a subexpression used twice counts twice, which on a DAG
//! favours recomputation and grows exponentially with depth. This is extraction-gym's
//! "greedy DAG" extractor instead: every class keeps the set of classes its best e-node needs
//! (itself included), and an e-node costs the sum, over the union of its children's sets and
//! its own class, of each class's chosen node's own cost: a shared subexpression counts once.
//! The sets are bitsets over the classes. Classes are visited children-first where possible
//! (ascending ids, as the input graph was added in topological order), then a worklist
//! revisits the parents of every class whose choice changed, until nothing changes. An e-node
//! whose children's sets contain its own class would make a cycle, and is not chosen.
//!
//! Ties go to e-nodes of the input graph, so that a simplification that gains nothing changes
//! nothing.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use egg::{Id, Language};
use kiln_ir::graph::{Graph, Node, NodeId};
use kiln_ir::ops::OpKind;
use kiln_ir::DType;
use smallvec::SmallVec;

use super::lang::{ENode, EG};
use crate::cost::node_cost;
use crate::error::CompileError;

/// The chosen e-node of every class that has one, by class.
pub struct Choices {
    /// Dense index of each canonical class id (`usize::from(id)`), `u32::MAX` for others.
    dense: Vec<u32>,
    /// The canonical class ids, by dense index.
    classes: Vec<Id>,
    /// The chosen node's position in its class, by dense index (`u32::MAX`: none).
    chosen: Vec<u32>,
    /// The total (DAG) cost of each class's choice.
    pub totals: Vec<f64>,
}

impl Choices {
    fn index(&self, id: Id) -> usize {
        self.dense[usize::from(id)] as usize
    }

    /// The chosen e-node of class `id`, if any.
    pub fn node<'a>(&self, egraph: &'a EG, id: Id) -> Option<&'a ENode> {
        let id = egraph.find(id);
        let k = self.chosen[self.index(id)];
        (k != u32::MAX).then(|| &egraph[id].nodes[k as usize])
    }

    /// The total cost of class `id`'s choice (the sum over the classes it needs).
    pub fn total(&self, egraph: &EG, id: Id) -> f64 {
        self.totals[self.index(egraph.find(id))]
    }

    /// Number of classes.
    pub fn len(&self) -> usize {
        self.classes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }
}

/// Chooses an e-node for every class (that has an acyclic choice), greedily by DAG cost.
/// `preferred` e-nodes win ties.
pub fn greedy_dag(egraph: &EG, preferred: &HashMap<ENode, usize>) -> Choices {
    let mut classes: Vec<Id> = egraph.classes().map(|c| c.id).collect();
    classes.sort_unstable();
    let n = classes.len();
    let max_id = classes.iter().map(|&c| usize::from(c)).max().map_or(0, |m| m + 1);
    let mut dense = vec![u32::MAX; max_id];
    for (i, &c) in classes.iter().enumerate() {
        dense[usize::from(c)] = i as u32;
    }
    let dense_of = |id: Id| dense[usize::from(egraph.find(id))];

    // Per class: its nodes' own costs, children (dense), and whether preferred; flattened.
    let mut node_start = Vec::with_capacity(n + 1);
    let mut own: Vec<f64> = Vec::new();
    let mut pref: Vec<bool> = Vec::new();
    let mut child_start: Vec<u32> = Vec::new();
    let mut children: Vec<u32> = Vec::new();
    let mut parents: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (ci, &c) in classes.iter().enumerate() {
        node_start.push(own.len());
        let class = &egraph[c];
        let out = (class.data.dtype, class.data.shape.as_slice());
        for node in class.iter() {
            let inputs: SmallVec<[(DType, &[usize]); 3]> = node
                .children()
                .iter()
                .map(|&ch| {
                    let d = &egraph[ch].data;
                    (d.dtype, d.shape.as_slice())
                })
                .collect();
            own.push(node_cost(node.op, &node.attrs, out, &inputs));
            pref.push(preferred.contains_key(node));
            child_start.push(children.len() as u32);
            for &ch in node.children() {
                let d = dense_of(ch);
                children.push(d);
                if parents[d as usize].last() != Some(&(ci as u32)) {
                    parents[d as usize].push(ci as u32);
                }
            }
        }
    }
    node_start.push(own.len());
    child_start.push(children.len() as u32);

    let words = n.div_ceil(64).max(1);
    let mut sets = vec![0u64; n * words];
    let mut chosen = vec![u32::MAX; n];
    let mut chosen_own = vec![0f64; n];
    let mut totals = vec![f64::INFINITY; n];
    let mut queue: VecDeque<u32> = (0..n as u32).collect();
    let mut queued = vec![true; n];
    let mut scratch = vec![0u64; words];
    let mut best_set = vec![0u64; words];
    let mut budget = 64 * n + 1024;

    while let Some(c) = queue.pop_front() {
        let c = c as usize;
        queued[c] = false;
        if budget == 0 {
            break;
        }
        budget -= 1;
        let (cw, cb) = (c / 64, 1u64 << (c % 64));
        let mut best: Option<(usize, f64, bool)> = None;
        'nodes: for k in node_start[c]..node_start[c + 1] {
            let kids = &children[child_start[k] as usize..child_start[k + 1] as usize];
            scratch.iter_mut().for_each(|w| *w = 0);
            for &ch in kids {
                let ch = ch as usize;
                if chosen[ch] == u32::MAX || ch == c {
                    continue 'nodes;
                }
                for (s, w) in scratch.iter_mut().zip(&sets[ch * words..(ch + 1) * words]) {
                    *s |= w;
                }
            }
            if scratch[cw] & cb != 0 {
                continue; // a cycle through this class
            }
            scratch[cw] |= cb;
            let mut total = 0.0;
            for (wi, &w) in scratch.iter().enumerate() {
                let mut w = w;
                while w != 0 {
                    let i = wi * 64 + w.trailing_zeros() as usize;
                    total += if i == c { own[k] } else { chosen_own[i] };
                    w &= w - 1;
                }
            }
            let better = match best {
                None => true,
                Some((_, t, p)) => total < t || (total == t && pref[k] && !p),
            };
            if better {
                best = Some((k, total, pref[k]));
                best_set.copy_from_slice(&scratch);
            }
        }
        let Some((k, total, _)) = best else { continue };
        let local = (k - node_start[c]) as u32;
        let set = &mut sets[c * words..(c + 1) * words];
        if chosen[c] != local || totals[c] != total || set != best_set.as_slice() {
            chosen[c] = local;
            chosen_own[c] = own[k];
            totals[c] = total;
            set.copy_from_slice(&best_set);
            for &p in &parents[c] {
                if !queued[p as usize] {
                    queued[p as usize] = true;
                    queue.push_back(p);
                }
            }
        }
    }
    Choices { dense, classes, chosen, totals }
}

/// The graph of the chosen e-nodes computing `roots` (its outputs, in order), hash-consed.
///
/// The order is the input's where it can be, so that an unchanged graph prints unchanged: e-nodes
/// of `original` (`original_index`: e-node → its index there) come in their original order, every
/// new e-node right after the latest original node it depends on, and new constants (e-nodes that
/// depend on no original node: `const`, `broadcast_to(const)`) just before their first use. Every
/// `input` node of `original` is kept, used or not, so that the inputs stay those of `original`.
pub fn build(
    egraph: &EG,
    choices: &Choices,
    roots: &[Id],
    original: &Graph,
    original_index: &HashMap<ENode, usize>,
) -> Result<Graph, CompileError> {
    let fail = |message: String| CompileError::Simplify { message };
    let n = choices.len();
    let chosen = |c: usize| -> Result<&ENode, CompileError> {
        let id = choices.classes[c];
        choices.node(egraph, id).ok_or_else(|| fail(format!("e-class {id} has no acyclic e-node")))
    };
    let kids = |node: &ENode| -> SmallVec<[usize; 3]> {
        node.children.iter().map(|&ch| choices.index(egraph.find(ch))).collect()
    };

    // The needed classes, children first (depth-first post-order from the roots).
    const NEW: u8 = 0;
    const OPEN: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; n];
    let mut post: Vec<usize> = Vec::new();
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for &root in roots {
        let r = choices.index(egraph.find(root));
        if state[r] != NEW {
            continue;
        }
        state[r] = OPEN;
        stack.push((r, 0));
        while let Some(top) = stack.last_mut() {
            let (c, next) = *top;
            let node = chosen(c)?;
            if let Some(&child) = node.children.get(next) {
                top.1 += 1;
                let ch = choices.index(egraph.find(child));
                match state[ch] {
                    NEW => {
                        state[ch] = OPEN;
                        stack.push((ch, 0));
                    }
                    OPEN => {
                        return Err(fail(format!(
                            "the chosen e-nodes have a cycle through e-class {child}"
                        )))
                    }
                    _ => {}
                }
                continue;
            }
            stack.pop();
            state[c] = DONE;
            post.push(c);
        }
    }

    // Sort keys: (original index, 0, _) for original e-nodes; (latest original index depended
    // on, 1, post-order position) for new ones; none for new constants ("floating").
    type Key = (usize, u8, usize);
    let mut key: Vec<Option<Key>> = vec![None; n];
    for (seq, &c) in post.iter().enumerate() {
        let node = chosen(c)?;
        key[c] = match original_index.get(node) {
            Some(&i) => Some((i, 0, 0)),
            None => {
                kids(node).iter().filter_map(|&k| key[k].map(|k| k.0)).max().map(|p| (p, 1, seq))
            }
        };
    }

    // Kahn's algorithm over the keyed classes, smallest key first.
    let mut parents: Vec<SmallVec<[usize; 2]>> = vec![SmallVec::new(); n];
    let mut waiting = vec![0usize; n];
    let mut heap: BinaryHeap<Reverse<(Key, usize)>> = BinaryHeap::new();
    for &c in &post {
        let Some(k) = key[c] else { continue };
        let mut ks = kids(chosen(c)?);
        ks.sort_unstable();
        ks.dedup();
        for &ch in ks.iter().filter(|&&ch| key[ch].is_some()) {
            parents[ch].push(c);
            waiting[c] += 1;
        }
        if waiting[c] == 0 {
            heap.push(Reverse((k, c)));
        }
    }
    // Unused inputs of the original graph, at their place.
    let inputs: Vec<(usize, &Node)> =
        original.nodes().iter().enumerate().filter(|(_, n)| n.op == OpKind::Input).collect();
    for (k, &(i, _)) in inputs.iter().enumerate() {
        heap.push(Reverse(((i, 0, 0), n + k)));
    }

    let mut g = Graph::new();
    let mut memo: Vec<Option<NodeId>> = vec![None; n];
    // Adds class `c` (its floating operands first).
    fn emit<'a>(
        c: usize,
        g: &mut Graph,
        memo: &mut Vec<Option<NodeId>>,
        chosen: &dyn Fn(usize) -> Result<&'a ENode, CompileError>,
        kids: &dyn Fn(&ENode) -> SmallVec<[usize; 3]>,
    ) -> Result<NodeId, CompileError> {
        if let Some(id) = memo[c] {
            return Ok(id);
        }
        let node = chosen(c)?;
        let mut inputs: SmallVec<[NodeId; 3]> = SmallVec::new();
        for k in kids(node) {
            inputs.push(emit(k, g, memo, chosen, kids)?);
        }
        let id = match &node.ty {
            Some(ty) => g.insert(Node {
                op: node.op,
                attrs: node.attrs.clone(),
                inputs,
                dtype: ty.0,
                shape: ty.1.clone(),
            }),
            None => g.add(node.op, node.attrs.clone(), &inputs)?,
        };
        memo[c] = Some(id);
        Ok(id)
    }
    while let Some(Reverse((_, c))) = heap.pop() {
        if c >= n {
            g.insert(inputs[c - n].1.clone());
            continue;
        }
        emit(c, &mut g, &mut memo, &chosen, &kids)?;
        for &p in &parents[c] {
            waiting[p] -= 1;
            if waiting[p] == 0 {
                heap.push(Reverse((key[p].expect("keyed"), p)));
            }
        }
    }
    let mut outputs = Vec::with_capacity(roots.len());
    for &root in roots {
        outputs.push(emit(choices.index(egraph.find(root)), &mut g, &mut memo, &chosen, &kids)?);
    }
    g.set_outputs(outputs);
    Ok(g)
}
