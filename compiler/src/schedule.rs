//! The schedule: regions in dependency order, the buffers they read and write, when each
//! intermediate buffer is freed, which outputs are written in place of an input that dies, and
//! the stream each region runs on on a GPU ([`crate::streams`]; the host runs steps in order).

use std::fmt;

use kiln_ir::shape::numel;
use kiln_ir::{Attrs, DType, Graph, NodeId, OpClass, OpKind, Shape};

use crate::fusion::{Region, RegionKind};
use crate::streams::{assign_streams, StreamPlan};

/// A buffer's index in [`Schedule::buffers`]; printed `bN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferId(pub u32);

impl fmt::Display for BufferId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b{}", self.0)
    }
}

/// Where a buffer's contents come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BufferSource {
    /// The graph's `input {index}`: owned by the caller, never freed or overwritten.
    Input(u32),
    /// Allocated for the outputs of a step.
    Step(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub dtype: DType,
    pub shape: Shape,
    pub source: BufferSource,
}

/// One kernel launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// Index into the partition's regions.
    pub region: usize,
    /// The buffer of each region input.
    pub reads: Vec<BufferId>,
    /// The buffer of each region output; a buffer also in `reads` is written in place.
    pub writes: Vec<BufferId>,
    /// Buffers whose last use is this step, freed after it.
    pub frees: Vec<BufferId>,
}

/// A whole materialisation's plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    pub buffers: Vec<Buffer>,
    pub steps: Vec<Step>,
    /// The buffer of each graph output.
    pub outputs: Vec<BufferId>,
    /// The stream of each step's region and the events between streams (steps run regions in
    /// order: step `s` runs region `s`).
    pub streams: StreamPlan,
}

/// Plans the regions of `g` (already in dependency order): one buffer per graph input and per
/// region output, each intermediate freed after its last reader, and an elementwise output written
/// in place of an intermediate input of the same dtype and size whose last reader it is and which
/// it reads element for element (no view between).
pub fn schedule(g: &Graph, regions: &[Region]) -> Schedule {
    let mut buffers: Vec<Buffer> = Vec::new();
    let mut buffer_of: std::collections::HashMap<NodeId, BufferId> =
        std::collections::HashMap::new();
    for (i, node) in g.nodes().iter().enumerate() {
        if let (OpKind::Input, Attrs::Input { index }) = (node.op, &node.attrs) {
            buffer_of.insert(NodeId(i as u32), BufferId(buffers.len() as u32));
            buffers.push(Buffer {
                dtype: node.dtype,
                shape: node.shape.clone(),
                source: BufferSource::Input(*index),
            });
        }
    }
    let is_output = |id: NodeId| g.outputs().contains(&id);
    // Last step reading each node's buffer.
    let mut last_read: std::collections::HashMap<NodeId, usize> = std::collections::HashMap::new();
    for (s, r) in regions.iter().enumerate() {
        for &i in &r.inputs {
            last_read.insert(i, s);
        }
    }
    let mut steps = Vec::new();
    for (s, r) in regions.iter().enumerate() {
        let reads: Vec<BufferId> = r.inputs.iter().map(|i| buffer_of[i]).collect();
        let mut dying: Vec<(usize, BufferId)> = r
            .inputs
            .iter()
            .enumerate()
            .filter(|(_, i)| {
                last_read[i] == s && !is_output(**i) && g.node(**i).op != OpKind::Input
            })
            .map(|(k, i)| (k, buffer_of[i]))
            .collect();
        let mut writes = Vec::new();
        for (o, &out) in r.outputs.iter().enumerate() {
            let node = g.node(out);
            let reuse = if r.kind == RegionKind::Elementwise {
                dying.iter().position(|&(k, b)| {
                    let buf = &buffers[b.0 as usize];
                    buf.dtype == node.dtype
                        && numel(&buf.shape) == numel(&node.shape)
                        && reads_pointwise(r, k, o)
                })
            } else {
                None
            };
            let b = match reuse {
                Some(pos) => dying.remove(pos).1,
                None => {
                    buffers.push(Buffer {
                        dtype: node.dtype,
                        shape: node.shape.clone(),
                        source: BufferSource::Step(s),
                    });
                    BufferId(buffers.len() as u32 - 1)
                }
            };
            buffer_of.insert(out, b);
            writes.push(b);
        }
        let frees = dying.into_iter().map(|(_, b)| b).collect();
        steps.push(Step { region: s, reads, writes, frees });
    }
    let outputs = g.outputs().iter().map(|o| buffer_of[o]).collect();
    Schedule { buffers, steps, outputs, streams: assign_streams(regions) }
}

/// Whether region input `k` is read only by elementwise ops at the same index as output `o` is
/// written (so writing `o` over it element by element is safe).
fn reads_pointwise(r: &Region, k: usize, o: usize) -> bool {
    let body = &r.body;
    let Some(input) = body.nodes().iter().position(|n| n.attrs == Attrs::Input { index: k as u32 })
    else {
        return false;
    };
    let out_shape = &body.node(body.outputs()[o]).shape;
    body.node(NodeId(input as u32)).shape == *out_shape
        && body
            .nodes()
            .iter()
            .filter(|n| n.inputs.iter().any(|i| i.index() == input))
            .all(|n| n.op.class() == OpClass::Elementwise && n.shape == *out_shape)
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "kiln.schedule v1")?;
        let ty = |b: BufferId| {
            let buf = &self.buffers[b.0 as usize];
            let dims = buf.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",");
            format!("{}[{dims}]", buf.dtype.short_name())
        };
        for (i, b) in self.buffers.iter().enumerate() {
            if let BufferSource::Input(index) = b.source {
                writeln!(f, "b{i} = input {{index={index}}} : {}", ty(BufferId(i as u32)))?;
            }
        }
        let list = |v: &[BufferId]| v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", ");
        for (s, step) in self.steps.iter().enumerate() {
            let writes = step
                .writes
                .iter()
                .map(|&b| {
                    if step.reads.contains(&b) {
                        format!("{b} in place")
                    } else {
                        format!("{b}: {}", ty(b))
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            write!(
                f,
                "step {s} = region {} reads({}) writes({writes})",
                step.region,
                list(&step.reads)
            )?;
            if !step.frees.is_empty() {
                write!(f, " frees({})", list(&step.frees))?;
            }
            if !self.streams.is_single_stream() {
                write!(f, " stream {}", self.streams.streams[step.region])?;
                let waits: Vec<String> =
                    self.streams.waits_of(step.region).map(|p| format!("region {p}")).collect();
                if !waits.is_empty() {
                    write!(f, " waits({})", waits.join(", "))?;
                }
            }
            writeln!(f)?;
        }
        writeln!(f, "return {}", list(&self.outputs))
    }
}
