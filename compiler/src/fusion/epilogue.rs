//! What runs after a matrix product: the elementwise kernel its consumers fused into, and
//! whether that kernel's work is one of cuBLASLt's GEMM epilogues (bias, relu, bias then relu),
//! which a GPU executor may fold into the GEMM call. On the host the kernel runs after the
//! product, one kernel for all the consumers.

use std::fmt;

use kiln_ir::{Graph, Node, NodeId, OpKind};

use super::{Region, RegionKind};

/// A cuBLASLt epilogue form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LtEpilogue {
    /// `p + bias`, `bias` a vector along the product's last axis.
    Bias,
    /// `maximum(p, 0)`.
    Relu,
    /// `maximum(p + bias, 0)`.
    BiasRelu,
}

impl LtEpilogue {
    pub fn name(self) -> &'static str {
        match self {
            LtEpilogue::Bias => "bias",
            LtEpilogue::Relu => "relu",
            LtEpilogue::BiasRelu => "bias_relu",
        }
    }
}

/// A matmul's product and the elementwise kernel that reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Epilogue {
    /// The matmul node (of the partitioned graph).
    pub product: NodeId,
    /// The vendor region computing it.
    pub region: usize,
    /// The elementwise region its consumers fused into.
    pub kernel: usize,
    /// That kernel's ops, in body order.
    pub ops: Vec<&'static str>,
    /// The cuBLASLt epilogue the kernel's whole work matches, if any.
    pub lt: Option<LtEpilogue>,
}

impl fmt::Display for Epilogue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "epilogue of {} (region {}): region {} [{}]", self.product, self.region, self.kernel, self.ops.join(" "))?;
        match self.lt {
            Some(lt) => write!(f, ", cublaslt {}", lt.name()),
            None => f.write_str(", no cublaslt form"),
        }
    }
}

/// The epilogues of every matmul region among `regions`.
pub fn epilogues(regions: &[Region]) -> Vec<Epilogue> {
    let mut out = Vec::new();
    for (r, region) in regions.iter().enumerate() {
        let [product] = region.outputs[..] else { continue };
        let body_out = region.body.node(region.body.outputs()[0]);
        if region.kind != RegionKind::Vendor || body_out.op != OpKind::MatMul {
            continue;
        }
        for (c, consumer) in regions.iter().enumerate() {
            let Some(k) = consumer.inputs.iter().position(|&i| i == product) else { continue };
            if consumer.kind != RegionKind::Elementwise {
                continue;
            }
            out.push(Epilogue {
                product,
                region: r,
                kernel: c,
                ops: consumer.op_names(),
                lt: lt_form(&consumer.body, k as u32, &body_out.shape),
            });
        }
    }
    out
}

fn is_input(n: &Node, k: u32) -> bool {
    n.attrs == kiln_ir::Attrs::Input { index: k }
}

/// Whether `id` is the constant 0 (possibly broadcast).
fn is_zero(g: &Graph, id: NodeId) -> bool {
    let n = g.node(id);
    match (&n.op, &n.attrs) {
        (OpKind::BroadcastTo, _) => is_zero(g, n.inputs[0]),
        (OpKind::Const, kiln_ir::Attrs::Const { value }) => value.to_f64() == 0.0,
        _ => false,
    }
}

/// Whether `id` is a region input broadcast along every axis but the last, whose extent is the
/// product's (a bias vector).
fn is_bias(g: &Graph, id: NodeId, product: &[usize]) -> bool {
    let n = g.node(id);
    if n.op != OpKind::BroadcastTo {
        return false;
    }
    let src = g.node(n.inputs[0]);
    let (last, rest) = src.shape.split_last().map_or((0, &[][..]), |(l, r)| (*l, r));
    src.op == OpKind::Input && last == *product.last().unwrap_or(&0) && rest.iter().all(|&d| d == 1)
}

/// The cuBLASLt form of a kernel reading the product as its input `k`: its one output is
/// `[maximum(] p [+ bias] [, 0)]` and it computes nothing else.
fn lt_form(body: &Graph, k: u32, product: &[usize]) -> Option<LtEpilogue> {
    let [out] = body.outputs() else { return None };
    let mut x = *out;
    let mut computed = 0;
    let mut relu = false;
    let node = body.node(x);
    if node.op == OpKind::Maximum {
        let (a, b) = (node.inputs[0], node.inputs[1]);
        x = if is_zero(body, b) { a } else if is_zero(body, a) { b } else { return None };
        relu = true;
        computed += 1;
    }
    let mut bias = false;
    let node = body.node(x);
    if node.op == OpKind::Add {
        let (a, b) = (node.inputs[0], node.inputs[1]);
        x = if is_bias(body, b, product) { a } else if is_bias(body, a, product) { b } else { return None };
        bias = true;
        computed += 1;
    }
    let arithmetic = body.nodes().iter().filter(|n| n.op.is_elementwise()).count();
    if !is_input(body.node(x), k) || arithmetic != computed {
        return None;
    }
    match (bias, relu) {
        (true, false) => Some(LtEpilogue::Bias),
        (false, true) => Some(LtEpilogue::Relu),
        (true, true) => Some(LtEpilogue::BiasRelu),
        (false, false) => None,
    }
}
