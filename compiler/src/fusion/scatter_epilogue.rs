//! What runs after a scatter.
//!
//! A scatter's results are complete only once every position is combined into them: the GPU
//! kernel's last block combines the blocks' partials in block order, the host combines its
//! chunks' private copies in chunk order. An elementwise kernel that reads them (k-means'
//! `sums / maximum(counts, 1)[:, None]`) therefore cannot fuse into the scatter like a
//! producer does; but when it is small, it can run *after* the combine, in the same kernel: the
//! partitioner *absorbs* it into the scatter's region ([`absorbable`]). The region stays a
//! scatter region over the same positions; its body is the scatters followed by the epilogue,
//! its outputs the scatters' results still read elsewhere (or requested), then the epilogue's.
//! Code generation (`codegen::lower::scatter`) combines the scatters as before, into the
//! outputs or, for results only the epilogue reads, into scratch (GPU) or extra buffers (host),
//! then computes the epilogue's elements from the combined values: on the GPU the last block,
//! after its fixed-order combine and a barrier; on the host a call of the same kernel over the
//! work items past the positions, after the chunks' copies are combined. The epilogue reads the
//! combined values, so it gives the evaluator's bits.
//!
//! Not absorbed (the edge stays `scatter_result`): a consumer that is not an elementwise
//! kernel (a reduction, a copy, a gather), one with more than [`EPILOGUE_ELEMENTS`] elements or
//! reading an input larger than its result (a large array next to the small results), and
//! scatters whose results together exceed [`EPILOGUE_BYTES`] (bins that may not fit a GPU
//! block's shared memory, where blocks add into the outputs by atomics and no block runs last).

use kiln_ir::shape::numel;
use kiln_ir::{Graph, NodeId, OpClass};

use super::{Region, RegionKind, Space};

/// Most bytes of a scatter region's results (all of them together) an epilogue may follow.
pub const EPILOGUE_BYTES: usize = 16 * 1024;

/// Most elements of an absorbed epilogue: one GPU block computes them all.
pub const EPILOGUE_ELEMENTS: usize = 8192;

/// Whether `region` is a scatter region with an absorbed epilogue (outputs that are not
/// scatters).
pub fn has_epilogue(region: &Region) -> bool {
    region.kind == RegionKind::Scatter
        && region.body.outputs().iter().any(|&o| region.body.node(o).op.class() != OpClass::Scatter)
}

/// Whether a scatter region's absorbed epilogue is within the limits at the region's sizes: its
/// scatters' results together at most [`EPILOGUE_BYTES`], its elements at most
/// [`EPILOGUE_ELEMENTS`] (true for a region without one). The plan cache asks it of a plan
/// reused at other sizes: a plan whose epilogue no longer fits is compiled again.
pub fn epilogue_fits(region: &Region) -> bool {
    if !has_epilogue(region) {
        return true;
    }
    let body = &region.body;
    let sized = |n: &kiln_ir::Node| numel(&n.shape) * n.dtype.itemsize();
    let bytes: usize =
        body.nodes().iter().filter(|n| n.op.class() == OpClass::Scatter).map(sized).sum();
    let elements = body
        .outputs()
        .iter()
        .filter(|&&o| body.node(o).op.class() != OpClass::Scatter)
        .map(|&o| numel(&body.node(o).shape))
        .max()
        .unwrap_or(0);
    within_limits(bytes, elements)
}

/// Whether scatter results of `bytes` in all and an epilogue of `elements` are within
/// [`EPILOGUE_BYTES`] and [`EPILOGUE_ELEMENTS`].
fn within_limits(bytes: usize, elements: usize) -> bool {
    bytes <= EPILOGUE_BYTES && elements <= EPILOGUE_ELEMENTS
}

/// Whether elementwise region `consumer` may run after scatter region `producer`'s combine, in
/// its kernel (see the module docs). `g` is the partitioned graph.
pub(super) fn absorbable(g: &Graph, producer: &Region, consumer: &Region) -> bool {
    let body = &producer.body;
    if producer.kind != RegionKind::Scatter
        || has_epilogue(producer)
        || !matches!(producer.space, Space::Scatter { .. })
    {
        return false;
    }
    let bytes: usize = body
        .outputs()
        .iter()
        .map(|&o| numel(&body.node(o).shape) * body.node(o).dtype.itemsize())
        .sum();
    let Space::Elementwise { shape } = &consumer.space else { return false };
    let elements = numel(shape);
    let elementwise = consumer
        .body
        .nodes()
        .iter()
        .all(|n| matches!(n.op.class(), OpClass::Leaf | OpClass::Elementwise | OpClass::View));
    let reads = |i: &NodeId| producer.outputs.contains(i);
    consumer.kind == RegionKind::Elementwise
        && elementwise
        && within_limits(bytes, elements)
        && consumer.inputs.iter().any(reads)
        && consumer.inputs.iter().all(|i| reads(i) || numel(&g.node(*i).shape) <= elements)
}
