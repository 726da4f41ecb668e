//! The partitioner: which values are materialised, and which kernels compute them.
//!
//! 1. **Materialised values** (`M`): the graph's outputs; reductions (at first); sorts, vendor
//!    ops and custom kernels, and every value they read, except that a vendor op reads its
//!    operands through views as strides ([`strided_operand`]): the view chain joins the vendor
//!    op's region and its base is materialised instead (a transposed operand reaches the GEMM as
//!    strides, not as a copy); the operand a gather (`take`) reads from, which is loaded at
//!    computed positions and so must be a buffer, not an index map of fused producers (its
//!    positions fuse as usual). `input` nodes are buffers already. Copies (concatenate, stack,
//!    contiguous) are index maps like views: they fuse with their producers and readers.
//! 2. **Kernels**: each value of `M` is the root of a kernel whose *cone* is every producer
//!    reachable without crossing `M` (constants and index ramps are recomputed in every cone).
//!    A value in the cones of several kernels is recomputed by each, unless its cone costs more
//!    than [`RECOMPUTE_LIMIT`] ops per extra kernel: then it joins `M`.
//! 3. **Reductions fuse** into the one kernel that reads them, when that kernel can iterate over
//!    the reduction's space: as its epilogue (the kernel's shape is the reduction's result), as a
//!    row pass (the kernel's shape is the reduction's input: softmax, layernorm), or nested (a
//!    reduction kernel whose every element needs one reduction: k-means' distance then argmin).
//!    A reduction read by several kernels stays materialised (reading its input again costs more
//!    than reading its result).
//! 4. **Siblings merge**: kernels of one space that share an input and do not depend on each
//!    other become one region with several outputs, unless that would make the regions cyclic.
//! 5. **GEMM epilogues**: a kernel that is only a cuBLASLt epilogue (bias, relu, bias then relu)
//!    of a matmul's product, and its only reader, joins the matmul's vendor region: one library
//!    call with an epilogue ([`super::epilogue`]).
//! 6. **Scatter epilogues**: a small elementwise kernel reading a scatter region's results (and
//!    inputs no larger than its own result) joins the scatter's region, computed after the
//!    combine of the positions in the same kernel ([`super::scatter_epilogue`]).

use std::collections::{BTreeSet, HashMap};

use kiln_ir::{Attrs, Graph, Node, NodeId, OpClass, OpKind};

use super::{Partition, Region, RegionKind, Space, UnfusedEdge, UnfusedReason};

/// Most elementwise ops a kernel may recompute, per extra kernel, rather than read a shared value
/// from memory.
pub const RECOMPUTE_LIMIT: usize = 8;

struct Ctx<'g> {
    g: &'g Graph,
    consumers: Vec<Vec<NodeId>>,
    /// `Some(reason)`: materialised, and why its consumers read it from memory.
    mat: Vec<Option<UnfusedReason>>,
    space: HashMap<NodeId, Space>,
}

fn is_external(g: &Graph, id: NodeId) -> bool {
    g.node(id).op == OpKind::Input
}

fn boundary_reason(class: OpClass) -> Option<UnfusedReason> {
    match class {
        OpClass::Sort => Some(UnfusedReason::SortBoundary),
        OpClass::Vendor => Some(UnfusedReason::VendorBoundary),
        OpClass::Custom => Some(UnfusedReason::CustomBoundary),
        OpClass::Leaf
        | OpClass::Elementwise
        | OpClass::Reduce
        | OpClass::View
        | OpClass::Copy
        | OpClass::Gather
        | OpClass::Scatter
        | OpClass::Scan => None,
    }
}

/// The node a vendor op's operand `id` is read from: the base of its chain of views when the
/// chain is a strided layout of the base's buffer (no reshape that needs a copy) and the base is
/// a buffer (not a constant or index ramp, which have none); otherwise `id` itself.
fn strided_operand(g: &Graph, id: NodeId) -> NodeId {
    match kiln_ir::strided::layout_over_base(g, id) {
        Some((base, _)) if !matches!(g.node(base).op, OpKind::Const | OpKind::Iota) => base,
        _ => id,
    }
}

/// The space a kernel rooted at `node` iterates over before any reduction fuses into it.
fn root_space(g: &Graph, node: &Node) -> Space {
    match node.op.class() {
        OpClass::Reduce => {
            let Attrs::Reduce { axes, .. } = &node.attrs else { unreachable!("verified graph") };
            Space::Reduce { shape: g.node(node.inputs[0]).shape.clone(), axes: axes.clone() }
        }
        OpClass::Scatter => Space::Scatter { items: g.node(node.inputs[1]).shape.clone() },
        OpClass::Scan => {
            let Attrs::Axis { axis } = &node.attrs else { unreachable!("verified graph") };
            // The scanned shape: the condition's for a compaction's count (its output keeps
            // the axis with extent 1), so that a compaction and its count are one kernel.
            Space::Scan { shape: g.node(node.inputs[0]).shape.clone(), axis: *axis }
        }
        OpClass::Sort | OpClass::Vendor | OpClass::Custom => Space::Opaque,
        OpClass::Leaf | OpClass::Elementwise | OpClass::View | OpClass::Copy | OpClass::Gather => {
            Space::Elementwise { shape: node.shape.clone() }
        }
    }
}

impl Ctx<'_> {
    fn is_boundary_input(&self, id: NodeId) -> bool {
        is_external(self.g, id) || self.mat[id.index()].is_some()
    }

    /// The nodes a kernel rooted at `root` computes, in graph order.
    fn cone(&self, root: NodeId) -> Vec<NodeId> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![root];
        seen.insert(root);
        while let Some(id) = stack.pop() {
            for &i in &self.g.node(id).inputs {
                if !self.is_boundary_input(i) && seen.insert(i) {
                    stack.push(i);
                }
            }
        }
        seen.into_iter().collect()
    }

    fn roots(&self) -> Vec<NodeId> {
        (0..self.g.len())
            .map(|i| NodeId(i as u32))
            .filter(|&id| self.mat[id.index()].is_some())
            .collect()
    }

    /// The kernels (roots, as node indices) whose cones hold node `i`, from its consumers'
    /// (already final) owners: a root owns itself, a value is owned by its consumers' owners.
    fn update_owners(&self, own: &mut [BitSet], i: usize) {
        if is_external(self.g, NodeId(i as u32)) {
            return;
        }
        if self.mat[i].is_some() {
            own[i].clear();
            own[i].insert(i);
            return;
        }
        let mut acc = BitSet::new(self.g.len());
        for c in &self.consumers[i] {
            acc.union_with(&own[c.index()]);
        }
        own[i] = acc;
    }

    /// Elementwise ops in the cone of `id` (stopping at materialised values), counted up to
    /// `limit + 1`.
    fn recompute_cost(&self, id: NodeId, limit: usize) -> usize {
        let mut seen = BTreeSet::new();
        let mut stack = vec![id];
        let mut cost = 0;
        while let Some(n) = stack.pop() {
            if cost > limit {
                break;
            }
            if !seen.insert(n) {
                continue;
            }
            let node = self.g.node(n);
            cost += match node.op.class() {
                OpClass::Elementwise | OpClass::Copy | OpClass::Gather => 1,
                OpClass::Reduce | OpClass::Scatter | OpClass::Scan => RECOMPUTE_LIMIT + 1,
                OpClass::Leaf
                | OpClass::View
                | OpClass::Sort
                | OpClass::Vendor
                | OpClass::Custom => 0,
            };
            stack.extend(node.inputs.iter().copied().filter(|&i| !self.is_boundary_input(i)));
        }
        cost
    }

    /// Whether every kernel of `readers` is a scatter over the same positions that can compute
    /// reduction `r` per position.
    fn scatters_share(&self, readers: &BitSet, r: NodeId) -> bool {
        let spaces: Vec<Space> = readers.iter().map(|k| self.space_of(NodeId(k as u32))).collect();
        matches!(&spaces[0], Space::Scatter { .. })
            && spaces.iter().all(|s| *s == spaces[0])
            && readers.iter().all(|k| self.space_with(NodeId(k as u32), r).is_some())
    }

    fn space_of(&self, root: NodeId) -> Space {
        self.space.get(&root).cloned().unwrap_or_else(|| root_space(self.g, self.g.node(root)))
    }

    /// The space of kernel `root` once reduction `r` is computed inside it, if it can be.
    fn space_with(&self, root: NodeId, r: NodeId) -> Option<Space> {
        let rn = self.g.node(r);
        let Attrs::Reduce { axes, .. } = &rn.attrs else { return None };
        let row =
            Space::Reduce { shape: self.g.node(rn.inputs[0]).shape.clone(), axes: axes.clone() };
        let Space::Reduce { shape: in_shape, .. } = &row else { unreachable!() };
        let reduced: Vec<usize> =
            (0..in_shape.len()).filter(|a| !axes.contains(a)).map(|a| in_shape[a]).collect();
        match self.space_of(root) {
            Space::Elementwise { shape } => {
                // A row pass (the kernel writes the reduction's whole input shape) needs rows to
                // spread over: a reduction over every axis would leave one work item for all.
                let row_pass = shape == *in_shape && reduced.iter().product::<usize>() > 1;
                (row_pass || shape == rn.shape || shape.as_slice() == reduced.as_slice())
                    .then_some(row)
            }
            // A scatter computes, per position, reductions indexed by the position first (its
            // labels: an argmin, and the distances inside it).
            Space::Scatter { items } => {
                rn.shape.starts_with(&items).then_some(Space::Scatter { items })
            }
            // A scan's rows are sequential: reductions are computed before it.
            Space::Scan { .. } => None,
            s @ Space::Reduce { .. } if s == row => Some(s),
            Space::Reduce { shape, axes: a } if shape == rn.shape => {
                Some(Space::Reduce { shape, axes: a })
            }
            Space::Reduce { .. } | Space::Opaque => None,
        }
    }
}

/// Partitions a verified graph into regions (see the module docs for the rules).
pub fn partition(g: &Graph) -> Partition {
    let n = g.len();
    let mut consumers = vec![Vec::new(); n];
    for (i, node) in g.nodes().iter().enumerate() {
        for &inp in &node.inputs {
            if !consumers[inp.index()].contains(&NodeId(i as u32)) {
                consumers[inp.index()].push(NodeId(i as u32));
            }
        }
    }
    let mut cx = Ctx { g, consumers, mat: vec![None; n], space: HashMap::new() };

    // 1. Values that must be materialised.
    for (i, node) in g.nodes().iter().enumerate() {
        let class = node.op.class();
        if class == OpClass::Reduce {
            cx.mat[i] = Some(UnfusedReason::ReductionSpaceMismatch);
        }
        if let Some(reason) = boundary_reason(class) {
            cx.mat[i] = Some(reason);
            for &inp in &node.inputs {
                let inp = if class == OpClass::Vendor { strided_operand(g, inp) } else { inp };
                if !is_external(g, inp) && cx.mat[inp.index()].is_none() {
                    cx.mat[inp.index()] = Some(reason);
                }
            }
        }
        if class == OpClass::Scatter {
            cx.mat[i] = Some(UnfusedReason::ScatterResult);
        }
        if class == OpClass::Scan {
            cx.mat[i] = Some(UnfusedReason::ScanResult);
        }
        if class == OpClass::Gather {
            let source = node.inputs[0];
            let m = &mut cx.mat[source.index()];
            if !is_external(g, source)
                && matches!(m, None | Some(UnfusedReason::ReductionSpaceMismatch))
            {
                *m = Some(UnfusedReason::GatherSource);
            }
        }
    }
    let mut pinned = vec![false; n];
    for &o in g.outputs() {
        if !is_external(g, o) {
            cx.mat[o.index()] = Some(UnfusedReason::GraphOutput);
        }
    }
    for (i, m) in cx.mat.iter().enumerate() {
        pinned[i] = matches!(
            m,
            Some(
                UnfusedReason::GraphOutput
                    | UnfusedReason::SortBoundary
                    | UnfusedReason::VendorBoundary
                    | UnfusedReason::CustomBoundary
                    | UnfusedReason::GatherSource
                    | UnfusedReason::ScatterResult
                    | UnfusedReason::ScanResult
            )
        );
    }

    // 2 and 3, in one pass, consumers first (each value is judged with its consumers' kernels
    // final): reductions fuse into the one kernel that reads them when its space allows, and
    // shared values too costly to recompute become materialised.
    let mut own: Vec<BitSet> = vec![BitSet::new(n); n];
    for i in (0..n).rev() {
        let id = NodeId(i as u32);
        cx.update_owners(&mut own, i);
        let class = g.node(id).op.class();
        if class == OpClass::Reduce && !pinned[i] {
            let mut readers = BitSet::new(n);
            for c in &cx.consumers[i] {
                readers.union_with(&own[c.index()]);
            }
            if readers.len() > 1 && cx.scatters_share(&readers, id) {
                // Scatters over the same positions (k-means' sums and counts by one label)
                // each compute it: sibling merging makes them one kernel that computes it once.
                cx.mat[i] = None;
                cx.update_owners(&mut own, i);
                continue;
            }
            if readers.len() != 1 {
                cx.mat[i] = Some(UnfusedReason::ReductionShared);
                continue;
            }
            let root = NodeId(readers.iter().next().expect("one reader") as u32);
            match cx.space_with(root, id) {
                Some(space) => {
                    cx.mat[i] = None;
                    cx.space.insert(root, space);
                    cx.update_owners(&mut own, i);
                }
                None => cx.mat[i] = Some(UnfusedReason::ReductionSpaceMismatch),
            }
        } else if own[i].len() >= 2 && cx.mat[i].is_none() && class != OpClass::Leaf {
            let k = own[i].len();
            let cost = cx.recompute_cost(id, RECOMPUTE_LIMIT);
            if cost * (k - 1) > RECOMPUTE_LIMIT {
                cx.mat[i] = Some(UnfusedReason::RecomputeTooCostly);
                cx.update_owners(&mut own, i);
            }
        }
    }

    // 4. Siblings merge.
    let roots = cx.roots();
    let cones: HashMap<NodeId, Vec<NodeId>> = roots.iter().map(|&r| (r, cx.cone(r))).collect();
    let reads = |r: NodeId| -> BTreeSet<NodeId> {
        let cone = &cones[&r];
        cone.iter()
            .flat_map(|&c| g.node(c).inputs.iter().copied())
            .filter(|i| cone.binary_search(i).is_err())
            .collect()
    };
    let root_reads: HashMap<NodeId, BTreeSet<NodeId>> =
        roots.iter().map(|&r| (r, reads(r))).collect();
    let mut group_of: HashMap<NodeId, usize> = HashMap::new();
    let mut groups: Vec<Vec<NodeId>> = Vec::new();
    // For each group, the groups it reads from.
    let mut group_preds: Vec<BTreeSet<usize>> = Vec::new();
    let spaces: HashMap<NodeId, Space> = roots.iter().map(|&r| (r, cx.space_of(r))).collect();
    for &r in &roots {
        let space = &spaces[&r];
        let mut placed = false;
        if *space != Space::Opaque {
            for gi in 0..groups.len() {
                if spaces[&groups[gi][0]] != *space {
                    continue;
                }
                let shares = groups[gi].iter().any(|m| !root_reads[m].is_disjoint(&root_reads[&r]));
                if !shares {
                    continue;
                }
                let new_preds: BTreeSet<usize> = root_reads[&r]
                    .iter()
                    .filter_map(|i| group_of.get(i).copied())
                    .filter(|&p| p != gi)
                    .collect();
                if would_cycle(&group_preds, gi, &new_preds) {
                    continue;
                }
                groups[gi].push(r);
                group_of.insert(r, gi);
                group_preds[gi].extend(new_preds);
                placed = true;
                break;
            }
        }
        if *space == Space::Opaque {
            // Outputs of one decomposition of one operand (svd's U, s and Vh) are one call.
            if let Some(gi) = groups.iter().position(|m| same_decomposition(g, m[0], r)) {
                groups[gi].push(r);
                group_of.insert(r, gi);
                placed = true;
            }
        }
        if !placed {
            group_of.insert(r, groups.len());
            groups.push(vec![r]);
            group_preds
                .push(root_reads[&r].iter().filter_map(|i| group_of.get(i).copied()).collect());
        }
    }

    // Regions in dependency order (ties by first root).
    let deps: Vec<BTreeSet<usize>> = groups
        .iter()
        .map(|members| {
            members
                .iter()
                .flat_map(|m| root_reads[m].iter())
                .filter_map(|i| group_of.get(i).copied())
                .collect()
        })
        .collect();
    let mut order = Vec::new();
    let mut done = vec![false; groups.len()];
    while order.len() < groups.len() {
        let next = (0..groups.len())
            .find(|&gi| !done[gi] && deps[gi].iter().all(|&d| done[d] || d == gi))
            .expect("regions are acyclic");
        done[next] = true;
        order.push(next);
    }

    let mut built: Vec<(Region, BTreeSet<NodeId>)> = Vec::new();
    for gi in order {
        let members = &groups[gi];
        let mut body_nodes: BTreeSet<NodeId> = BTreeSet::new();
        for m in members {
            body_nodes.extend(cones[m].iter().copied());
        }
        built.push((build_region(g, &cx, members, &body_nodes), body_nodes));
    }
    absorb_epilogues(g, &cx, &mut built);
    absorb_scatter_epilogues(g, &cx, &mut built);

    let mut regions = Vec::new();
    let mut unfused = BTreeSet::new();
    for (region, body_nodes) in built {
        for &c in &body_nodes {
            for &p in &g.node(c).inputs {
                if !body_nodes.contains(&p) && !is_external(g, p) {
                    let reason = cx.mat[p.index()].expect("region inputs are materialised");
                    unfused.insert((p, c, reason));
                }
            }
        }
        regions.push(region);
    }
    Partition {
        regions,
        unfused: unfused
            .into_iter()
            .map(|(producer, consumer, reason)| UnfusedEdge { producer, consumer, reason })
            .collect(),
    }
}

/// Step 5, GEMM epilogues: an elementwise region computing one of cuBLASLt's epilogue forms of a
/// matmul's product, the product's only reader (and the product no graph output), joins the
/// matmul's vendor region, in the elementwise region's place (its other inputs are written by
/// then; nothing between the two reads the product). See [`super::epilogue`].
fn absorb_epilogues(g: &Graph, cx: &Ctx, built: &mut Vec<(Region, BTreeSet<NodeId>)>) {
    let mut c = 0;
    while c < built.len() {
        let consumer = &built[c].0;
        let producer = consumer.inputs.iter().find_map(|&i| {
            let r = built[..c].iter().position(|(r, _)| r.outputs == [i])?;
            let only_reader = built.iter().filter(|(o, _)| o.inputs.contains(&i)).count() == 1;
            (only_reader
                && !g.outputs().contains(&i)
                && super::epilogue::absorbable(&built[r].0, consumer))
            .then_some(r)
        });
        let Some(r) = producer else {
            c += 1;
            continue;
        };
        let (_, mm_nodes) = built.remove(r);
        c -= 1;
        let (consumer, nodes) = &built[c];
        let nodes: BTreeSet<NodeId> = nodes.union(&mm_nodes).copied().collect();
        let mut region = build_region(g, cx, &consumer.outputs, &nodes);
        region.kind = RegionKind::Vendor;
        region.space = Space::Opaque;
        built[c] = (region, nodes);
        c += 1;
    }
}

/// Step 6, scatter epilogues: an elementwise region that [`super::scatter_epilogue::absorbable`]
/// allows joins the scatter region whose results it reads. The merged region takes the
/// scatter's place when the epilogue's other inputs are written before it, else the epilogue's
/// place when no region between the two reads the scatter's results; otherwise nothing is
/// merged. Its outputs: the scatter's results still read by another region or requested, then
/// the epilogue's.
fn absorb_scatter_epilogues(g: &Graph, cx: &Ctx, built: &mut Vec<(Region, BTreeSet<NodeId>)>) {
    let mut c = 0;
    while c < built.len() {
        let consumer = &built[c].0;
        let Some(r) =
            (0..c).find(|&r| super::scatter_epilogue::absorbable(g, &built[r].0, consumer))
        else {
            c += 1;
            continue;
        };
        let producer = &built[r].0;
        let written_before: BTreeSet<NodeId> =
            built[..r].iter().flat_map(|(x, _)| x.outputs.iter().copied()).collect();
        let at_scatter = consumer.inputs.iter().all(|i| {
            producer.outputs.contains(i) || is_external(g, *i) || written_before.contains(i)
        });
        let read_between = built[r + 1..c]
            .iter()
            .any(|(x, _)| x.inputs.iter().any(|i| producer.outputs.contains(i)));
        if !at_scatter && read_between {
            c += 1;
            continue;
        }
        let mut members: Vec<NodeId> = producer
            .outputs
            .iter()
            .copied()
            .filter(|o| {
                g.outputs().contains(o)
                    || built.iter().enumerate().any(|(j, (x, _))| j != c && x.inputs.contains(o))
            })
            .collect();
        members.extend(consumer.outputs.iter().copied());
        let nodes: BTreeSet<NodeId> = built[r].1.union(&built[c].1).copied().collect();
        let mut region = build_region(g, cx, &members, &nodes);
        region.kind = RegionKind::Scatter;
        region.space = producer.space.clone();
        let (keep, drop) = if at_scatter { (r, c) } else { (c, r) };
        built[keep] = (region, nodes);
        built.remove(drop);
        // Index `c` now holds the region after the consumer's old place.
    }
}

/// Whether `a` and `b` are outputs of one decomposition: the same linear-algebra op with the
/// same options over the same operands (they differ only in `output`).
fn same_decomposition(g: &Graph, a: NodeId, b: NodeId) -> bool {
    let (x, y) = (g.node(a), g.node(b));
    match (&x.attrs, &y.attrs) {
        (Attrs::Linalg { full_matrices: fx, .. }, Attrs::Linalg { full_matrices: fy, .. }) => {
            x.op == y.op && fx == fy && x.inputs == y.inputs
        }
        _ => false,
    }
}

/// Whether giving group `gi` the extra predecessors `new_preds` would make the graph of groups
/// cyclic: the graph was acyclic, so a new cycle runs through a new edge, from some `p` of
/// `new_preds` back to `gi`. (Roots are placed in graph order, so no placed group reads the root
/// being placed.)
fn would_cycle(group_preds: &[BTreeSet<usize>], gi: usize, new_preds: &BTreeSet<usize>) -> bool {
    let mut seen = vec![false; group_preds.len()];
    let mut stack: Vec<usize> = new_preds.iter().copied().collect();
    while let Some(x) = stack.pop() {
        if x == gi {
            return true;
        }
        if !std::mem::replace(&mut seen[x], true) {
            stack.extend(group_preds[x].iter().copied());
        }
    }
    false
}

/// A fixed-size set of small integers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BitSet(Vec<u64>);

impl BitSet {
    fn new(n: usize) -> BitSet {
        BitSet(vec![0; n.div_ceil(64)])
    }
    fn clear(&mut self) {
        self.0.iter_mut().for_each(|w| *w = 0);
    }
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn union_with(&mut self, other: &BitSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
    fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0
            .iter()
            .enumerate()
            .flat_map(|(k, &w)| (0..64).filter(move |b| w & (1 << b) != 0).map(move |b| k * 64 + b))
    }
}

fn build_region(g: &Graph, cx: &Ctx, members: &[NodeId], body_nodes: &BTreeSet<NodeId>) -> Region {
    let mut body = Graph::new();
    let mut local: HashMap<NodeId, NodeId> = HashMap::new();
    let mut inputs: Vec<NodeId> = Vec::new();
    // Inputs first, in graph order, so the body's numbering is canonical.
    let outside: BTreeSet<NodeId> = body_nodes
        .iter()
        .flat_map(|&c| g.node(c).inputs.iter().copied())
        .filter(|i| !body_nodes.contains(i))
        .collect();
    for &p in &outside {
        let node = g.node(p);
        let id = body.input(inputs.len() as u32, node.dtype, &node.shape);
        local.insert(p, id);
        inputs.push(p);
    }
    for &c in body_nodes {
        let node = g.node(c);
        let mut copy = node.clone();
        copy.inputs = node.inputs.iter().map(|i| local[i]).collect();
        local.insert(c, body.insert(copy));
    }
    body.set_outputs(members.iter().map(|m| local[m]).collect());
    let space = cx.space_of(members[0]);
    let kind = match (&space, g.node(members[0]).op.class()) {
        (Space::Reduce { .. }, _) => RegionKind::Reduction,
        (Space::Elementwise { .. }, _) => RegionKind::Elementwise,
        (Space::Scatter { .. }, _) => RegionKind::Scatter,
        (Space::Scan { .. }, _) => RegionKind::Scan,
        (Space::Opaque, OpClass::Sort) => RegionKind::Sort,
        (Space::Opaque, OpClass::Vendor) => RegionKind::Vendor,
        (Space::Opaque, _) => RegionKind::Custom,
    };
    Region { kind, space, body, inputs, outputs: members.to_vec() }
}
