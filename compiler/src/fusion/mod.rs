//! Fusion: the simplified graph partitioned into regions, each one kernel.
//!
//! A region has an iteration *space* and a body: a small graph whose `input {index=k}` nodes are
//! the region's inputs (buffers materialised by other regions, or the graph's inputs) and whose
//! outputs are the values it writes. Views and broadcasts inside a body are index maps on the
//! loads of its inputs, never copies.
//!
//! - An **elementwise** region iterates over its output shape: any connected set of elementwise,
//!   cast, broadcast and view ops, constants and index ramps.
//! - A **reduction** region iterates over a shape `S` and reduces axes `A`: an elementwise prologue
//!   feeding one or more reductions over `(S, A)`, which may feed each other through broadcasts
//!   (softmax, layernorm, var), an epilogue on their results, and reductions nested inside the
//!   prologue whose result has shape `S` (a k-means assignment step).
//! - Copies (concatenate, stack, contiguous), vendor ops (matmul, fft, rfft, irfft) and custom
//!   kernels are regions of their own: fusion boundaries. A vendor region also holds the views
//!   its operands are read through (strides for the library, no copy). The elementwise consumers
//!   of a matmul fuse into one kernel after it, which the report lists as its [`Epilogue`]; when
//!   that kernel is only a cuBLASLt epilogue (bias, relu, bias then relu) of the product, it is
//!   absorbed into the matmul's region: one library call with an epilogue.
//! - A gather (`take`, from a user kernel's raw argument) fuses like an elementwise op over its
//!   positions; the array it reads from is a region input (a buffer), never fused.
//! - A **scatter** region iterates over the positions of its index array: each position's index
//!   and row of values (their producers fused, reductions indexed by the position computed in
//!   it: k-means' labels) combine into the scatters' outputs. Scatters over the same positions
//!   sharing such a reduction are one region (k-means' sums and counts by one label). A small
//!   elementwise kernel reading their results runs after their combine in the same kernel
//!   (k-means' division of the sums by the counts: [`has_epilogue`]).
//! - A user kernel (ElementwiseKernel, ReductionKernel, `fuse`) is ordinary nodes, its results
//!   marked by `label {name=..}` nodes: it fuses with what surrounds it, and the report lists the
//!   kernels each region computes ([`Region::kernel_names`]).
//!
//! [`partition`] decides what is materialised (see its docs for the rules) and reports, for every
//! edge left unfused, why ([`UnfusedReason`]).

mod epilogue;
mod fft_callbacks;
mod partition;
mod run;
mod scatter_epilogue;
mod text;

pub use epilogue::{
    absorbed_form, epilogue_dtype, epilogues, Activation, Epilogue, LtEpilogue, GELU_C1, GELU_C2,
};
pub use fft_callbacks::{FftCallbackChoice, FftCallbackSite};
pub use partition::partition;
pub use run::run_regions;
pub use scatter_epilogue::{epilogue_fits, has_epilogue, EPILOGUE_BYTES, EPILOGUE_ELEMENTS};
pub use text::{parse_regions, print_regions};

use std::fmt;

use kiln_ir::graph::Axes;
use kiln_ir::shape::ShapeDisplay;
use kiln_ir::{DType, Graph, NodeId, Shape};

use crate::streams::{assign_streams, StreamEvent};

/// What a region iterates over.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// One work item per element of `shape`.
    Elementwise { shape: Shape },
    /// Reductions over `axes` of `shape`; one work group per element of the kept axes.
    Reduce { shape: Shape, axes: Axes },
    /// Scatters: one work item per position of their index array, of shape `items`; each
    /// combines its row of values into the row of the output its index names.
    Scatter { items: Shape },
    /// Scans along `axis` of `shape`: one work item per row (every index but the axis's), which
    /// runs along the axis in order.
    Scan { shape: Shape, axis: usize },
    /// A boundary op: its own launch (library call, copy or user kernel).
    Opaque,
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dims = |s: &[usize]| s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",");
        match self {
            Space::Elementwise { shape } => write!(f, "elementwise shape=[{}]", dims(shape)),
            Space::Reduce { shape, axes } => {
                write!(f, "reduce shape=[{}] axes=[{}]", dims(shape), dims(axes))
            }
            Space::Scatter { items } => write!(f, "scatter items=[{}]", dims(items)),
            Space::Scan { shape, axis } => write!(f, "scan shape=[{}] axis={axis}", dims(shape)),
            Space::Opaque => f.write_str("opaque"),
        }
    }
}

/// Why a region is the kind it is, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegionKind {
    Elementwise,
    Reduction,
    /// scatter_add, scatter_max, scatter_min, scatter (with their indices' and values'
    /// producers).
    Scatter,
    /// cumsum, cumprod, cummax, cummin (with their input's producers).
    Scan,
    /// sort, argsort (of their input seen through views).
    Sort,
    /// matmul (with an absorbed epilogue), fft.
    Vendor,
    /// A user's raw kernel.
    Custom,
}

impl RegionKind {
    pub fn name(self) -> &'static str {
        match self {
            RegionKind::Elementwise => "elementwise",
            RegionKind::Reduction => "reduction",
            RegionKind::Scatter => "scatter",
            RegionKind::Scan => "scan",
            RegionKind::Sort => "sort",
            RegionKind::Vendor => "vendor",
            RegionKind::Custom => "custom",
        }
    }
}

/// One fused kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    pub kind: RegionKind,
    pub space: Space,
    /// The computation; its `input {index=k}` reads `inputs[k]`, its outputs are `outputs`.
    pub body: Graph,
    /// Nodes of the partitioned graph the region reads (materialised elsewhere).
    pub inputs: Vec<NodeId>,
    /// Nodes of the partitioned graph the region writes, in the order of the body's outputs.
    pub outputs: Vec<NodeId>,
}

impl Region {
    /// Bytes the region must move at the least: each input read once, each output written once.
    pub fn bytes(&self) -> usize {
        let nbytes = |id: NodeId| {
            let n = self.body.node(id);
            n.shape.iter().product::<usize>() * n.dtype.itemsize()
        };
        let inputs: usize = self
            .body
            .nodes()
            .iter()
            .filter(|n| n.op == kiln_ir::OpKind::Input)
            .map(|n| n.shape.iter().product::<usize>() * n.dtype.itemsize())
            .sum();
        inputs + self.body.outputs().iter().map(|&o| nbytes(o)).sum::<usize>()
    }

    /// The names of the ops the region computes (not its inputs, nor the `label`s naming user
    /// kernels: see [`Region::kernel_names`]), in body order.
    pub fn op_names(&self) -> Vec<&'static str> {
        use kiln_ir::OpKind::{Input, Label};
        self.body
            .nodes()
            .iter()
            .filter(|n| !matches!(n.op, Input | Label))
            .map(|n| n.op.name())
            .collect()
    }

    /// The user kernels (ElementwiseKernel, ReductionKernel, fuse) whose results the region
    /// computes: the names of its `label` nodes, in body order, each once.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for n in self.body.nodes() {
            if let (kiln_ir::OpKind::Label, kiln_ir::Attrs::Custom { name }) = (n.op, &n.attrs) {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
        names
    }
}

/// Why an edge of the graph was not fused: the producer is materialised and the consumer reads
/// it from memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnfusedReason {
    /// The producer is a requested result, written to memory anyway.
    GraphOutput,
    /// The producer or consumer is a library call (matmul, fft).
    VendorBoundary,
    /// The producer or consumer is a sort, which reads its input from memory.
    SortBoundary,
    /// The producer or consumer is a user's raw kernel.
    CustomBoundary,
    /// A reduction whose consumers iterate over a space it cannot be computed in.
    ReductionSpaceMismatch,
    /// A reduction read by several kernels: recomputing it would read its input again.
    ReductionShared,
    /// A shared elementwise value too costly to recompute in each kernel that reads it.
    RecomputeTooCostly,
    /// The operand a gather (`take`, a user kernel's raw argument) reads at computed positions:
    /// it must be a buffer in memory, not an index map of fused producers.
    GatherSource,
    /// A scatter's result: its rows are written by the scatter's own kernel, which combines
    /// every position into them before any reader may run.
    ScatterResult,
    /// A scan's result: its kernel writes it whole.
    ScanResult,
}

impl UnfusedReason {
    pub fn name(self) -> &'static str {
        match self {
            UnfusedReason::GraphOutput => "graph_output",
            UnfusedReason::VendorBoundary => "vendor_boundary",
            UnfusedReason::SortBoundary => "sort_boundary",
            UnfusedReason::CustomBoundary => "custom_boundary",
            UnfusedReason::ReductionSpaceMismatch => "reduction_space_mismatch",
            UnfusedReason::ReductionShared => "reduction_shared",
            UnfusedReason::RecomputeTooCostly => "recompute_too_costly",
            UnfusedReason::GatherSource => "gather_source",
            UnfusedReason::ScatterResult => "scatter_result",
            UnfusedReason::ScanResult => "scan_result",
        }
    }
}

/// An edge left unfused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnfusedEdge {
    pub producer: NodeId,
    pub consumer: NodeId,
    pub reason: UnfusedReason,
}

/// A summary of one region, for reports.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionSummary {
    pub kind: RegionKind,
    pub space: Space,
    pub ops: Vec<&'static str>,
    /// The user kernels whose results the region computes ([`Region::kernel_names`]).
    pub kernels: Vec<String>,
    pub inputs: Vec<(NodeId, DType, Shape)>,
    pub outputs: Vec<(NodeId, DType, Shape)>,
    /// Fewest bytes moved: inputs read once, outputs written once.
    pub bytes: usize,
    /// The stream it runs on: 0 the caller's current stream, `1..` the device's pool streams
    /// (see [`crate::streams`]; the CPU runs regions in order on one thread).
    pub stream: u32,
    /// A scatter region: how its values are combined on the GPU (bins in shared memory, or
    /// global atomics into the output when they do not fit, or the host when neither applies),
    /// from code generation's decision for these sizes.
    pub scatter: Option<String>,
    /// The kernel shape it is lowered to on each target, or what runs it instead
    /// ([`crate::codegen::kernel_shapes`]).
    pub code: String,
}

/// What fusion did with a graph: users read it to tune, tests assert on it. Its text shows each
/// region's `stream` and the `event` lines between streams only when a pool stream is used
/// ([`crate::streams`]); without them every region runs on the caller's stream.
#[derive(Clone, Debug, PartialEq)]
pub struct FusionReport {
    pub regions: Vec<RegionSummary>,
    pub unfused: Vec<UnfusedEdge>,
    /// For each matmul, the kernel its elementwise consumers fused into, or the epilogue its
    /// library call absorbed.
    pub epilogues: Vec<Epilogue>,
    /// The events ordering regions on different streams: each consumer's stream waits for an
    /// event recorded after its producer.
    pub events: Vec<StreamEvent>,
    /// For each FFT, the elementwise neighbour that may run inside it as a cuFFT callback, with
    /// the executor's choice once measured (filled by the plan, [`crate::pipeline::Compiled::report`]).
    pub fft_callbacks: Vec<FftCallbackSite>,
}

impl FusionReport {
    /// Number of kernels (regions).
    pub fn kernel_count(&self) -> usize {
        self.regions.len()
    }

    /// Whether every region runs on the caller's stream.
    pub fn is_single_stream(&self) -> bool {
        self.regions.iter().all(|r| r.stream == 0)
    }
}

impl fmt::Display for FusionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ty = |v: &[(NodeId, DType, Shape)]| {
            v.iter()
                .map(|(id, d, s)| format!("{id}: {} {}", d.short_name(), ShapeDisplay(s)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // Streams are shown when a pool stream is used; otherwise every region is on stream 0.
        let streams = !self.is_single_stream();
        writeln!(f, "{} region(s)", self.regions.len())?;
        for (i, r) in self.regions.iter().enumerate() {
            write!(f, "region {i} {} {} ({} bytes)", r.kind.name(), r.space, r.bytes)?;
            if streams {
                write!(f, " stream {}", r.stream)?;
            }
            writeln!(f)?;
            writeln!(f, "  ops: {}", r.ops.join(" "))?;
            writeln!(f, "  code: {}", r.code)?;
            if let Some(s) = &r.scatter {
                writeln!(f, "  scatter: {s}")?;
            }
            if !r.kernels.is_empty() {
                writeln!(f, "  kernels: {}", r.kernels.join(" "))?;
            }
            writeln!(f, "  inputs: {}", ty(&r.inputs))?;
            writeln!(f, "  outputs: {}", ty(&r.outputs))?;
        }
        for e in &self.unfused {
            writeln!(f, "unfused {} -> {}: {}", e.producer, e.consumer, e.reason.name())?;
        }
        for e in &self.epilogues {
            writeln!(f, "{e}")?;
        }
        for c in &self.fft_callbacks {
            writeln!(f, "{c}")?;
        }
        let stream = |i: usize| self.regions.get(i).map_or(0, |r| r.stream);
        for e in &self.events {
            writeln!(f, "{e}: stream {} -> stream {}", stream(e.producer), stream(e.consumer))?;
        }
        Ok(())
    }
}

/// The regions of a graph, in an order in which each region's inputs are written before it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    pub regions: Vec<Region>,
    pub unfused: Vec<UnfusedEdge>,
}

impl Partition {
    /// The report of this partition, with the streams its schedule runs on
    /// ([`assign_streams`]).
    pub fn report(&self, g: &Graph) -> FusionReport {
        let ty = |id: NodeId| (id, g.node(id).dtype, g.node(id).shape.clone());
        let streams = assign_streams(&self.regions);
        FusionReport {
            regions: self
                .regions
                .iter()
                .zip(&streams.streams)
                .map(|(r, &stream)| RegionSummary {
                    kind: r.kind,
                    space: r.space.clone(),
                    ops: r.op_names(),
                    kernels: r.kernel_names(),
                    inputs: r.inputs.iter().map(|&i| ty(i)).collect(),
                    outputs: r.outputs.iter().map(|&o| ty(o)).collect(),
                    bytes: r.bytes(),
                    stream,
                    scatter: (r.kind == RegionKind::Scatter)
                        .then(|| crate::codegen::lower::scatter::gpu_strategy(r)),
                    code: crate::codegen::kernel_shapes(r),
                })
                .collect(),
            unfused: self.unfused.clone(),
            epilogues: epilogues(g, &self.regions),
            events: streams.events,
            fft_callbacks: Vec::new(),
        }
    }
}
