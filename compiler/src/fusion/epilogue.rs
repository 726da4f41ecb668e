//! What runs after a matrix product.
//!
//! The elementwise consumers of a matmul's product fuse into one kernel after it. When that
//! kernel is one of cuBLASLt's GEMM epilogue forms (`p + bias`, `maximum(p, 0)`,
//! `maximum(p + bias, 0)`, the tanh GELU of `p` or `p + bias`, `bias` a vector along the
//! product's last axis), is the product's only
//! reader, and the dtype is a real float one, the partitioner *absorbs* it into the matmul's
//! vendor region ([`absorbable`]): the region's body is the matmul followed by the epilogue, its
//! output the epilogue's, and its library call carries the form and the bias operand
//! ([`crate::vendor::GemmEpilogue`]). The GPU executor runs it as one `cublasLtMatmul` with that
//! epilogue; the host executor applies the same epilogue after its GEMM. Both backends get the
//! same plan. The report lists every matmul's epilogue, absorbed or in a kernel of its own
//! ([`epilogues`]).

use std::fmt;

use kiln_ir::{DType, Graph, Node, NodeId, OpKind};

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
    /// `gelu_tanh(p)`: `(0.5 * p) * (1 + tanh(sqrt(2/pi) * (p + 0.044715 * p³)))`, the tanh
    /// approximation of GELU (`torch.nn.functional.gelu(approximate="tanh")`,
    /// `kiln::nn::gelu_tanh`), which is what `CUBLASLT_EPILOGUE_GELU` computes.
    Gelu,
    /// `gelu_tanh(p + bias)`.
    BiasGelu,
}

impl LtEpilogue {
    pub fn name(self) -> &'static str {
        match self {
            LtEpilogue::Bias => "bias",
            LtEpilogue::Relu => "relu",
            LtEpilogue::BiasRelu => "bias_relu",
            LtEpilogue::Gelu => "gelu",
            LtEpilogue::BiasGelu => "bias_gelu",
        }
    }

    /// Whether the form reads a bias vector.
    pub fn has_bias(self) -> bool {
        matches!(self, LtEpilogue::Bias | LtEpilogue::BiasRelu | LtEpilogue::BiasGelu)
    }

    /// The activation after the bias.
    pub fn activation(self) -> Activation {
        match self {
            LtEpilogue::Bias => Activation::None,
            LtEpilogue::Relu | LtEpilogue::BiasRelu => Activation::Relu,
            LtEpilogue::Gelu | LtEpilogue::BiasGelu => Activation::GeluTanh,
        }
    }
}

/// What an epilogue applies after its bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    None,
    /// `maximum(x, 0)`.
    Relu,
    /// `(0.5 * x) * (1 + tanh(GELU_C1 * (x + GELU_C2 * x³)))`, each op rounded to the dtype.
    GeluTanh,
}

/// `sqrt(2/pi)`, the tanh GELU's outer factor.
pub const GELU_C1: f64 = 0.797_884_560_802_865_4;
/// The tanh GELU's cubic coefficient.
pub const GELU_C2: f64 = 0.044_715;

/// A matmul's product and what reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Epilogue {
    /// The matmul node (of the partitioned graph).
    pub product: NodeId,
    /// The vendor region computing it.
    pub region: usize,
    /// The elementwise region its consumers fused into; `None` when the epilogue is absorbed
    /// into the vendor region (one library call: `lt` says which form).
    pub kernel: Option<usize>,
    /// The epilogue's ops, in body order.
    pub ops: Vec<&'static str>,
    /// The cuBLASLt epilogue the epilogue's whole work matches, if any.
    pub lt: Option<LtEpilogue>,
}

impl fmt::Display for Epilogue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "epilogue of {} (region {}): ", self.product, self.region)?;
        match (self.kernel, self.lt) {
            (None, Some(lt)) => {
                write!(f, "{} in the GEMM call (cuBLASLt) [{}]", lt.name(), self.ops.join(" "))
            }
            (None, None) => write!(f, "in the GEMM call [{}]", self.ops.join(" ")),
            (Some(k), lt) => {
                write!(f, "region {k} [{}]", self.ops.join(" "))?;
                match lt {
                    Some(lt) => write!(f, ", cublaslt {} (not absorbed)", lt.name()),
                    None => f.write_str(", no cublaslt form"),
                }
            }
        }
    }
}

/// The epilogues of every matmul region among `regions` (of a partition of `g`).
pub fn epilogues(g: &Graph, regions: &[Region]) -> Vec<Epilogue> {
    let mut out = Vec::new();
    for (r, region) in regions.iter().enumerate() {
        let [result] = region.outputs[..] else { continue };
        let body_out = region.body.outputs()[0];
        if region.kind != RegionKind::Vendor {
            continue;
        }
        if region.body.node(body_out).op != OpKind::MatMul {
            // An absorbed epilogue: the product is the matmul under the form's ops.
            let Some((lt, _, _, _)) = peel(&region.body, body_out, |_| true) else { continue };
            let Some((_, product, _, _)) = peel(g, result, |_| true) else { continue };
            out.push(Epilogue {
                product,
                region: r,
                kernel: None,
                ops: absorbed_ops(&region.body),
                lt: Some(lt),
            });
            continue;
        }
        let shape = &region.body.node(body_out).shape;
        for (c, consumer) in regions.iter().enumerate() {
            let Some(k) = consumer.inputs.iter().position(|&i| i == result) else { continue };
            if consumer.kind != RegionKind::Elementwise {
                continue;
            }
            out.push(Epilogue {
                product: result,
                region: r,
                kernel: Some(c),
                ops: consumer.op_names(),
                lt: lt_form(&consumer.body, k as u32, shape),
            });
        }
    }
    out
}

/// The ops of an absorbing vendor region's body outside the matmul's cone (its operands' views).
fn absorbed_ops(body: &Graph) -> Vec<&'static str> {
    let Some(mm) = body.nodes().iter().position(|n| n.op == OpKind::MatMul) else {
        return Vec::new();
    };
    let mut cone = vec![false; body.len()];
    cone[mm] = true;
    for i in (0..=mm).rev() {
        if cone[i] {
            for inp in &body.nodes()[i].inputs {
                cone[inp.index()] = true;
            }
        }
    }
    body.nodes()
        .iter()
        .enumerate()
        .filter(|(i, n)| !cone[*i] && !matches!(n.op, OpKind::Input | OpKind::Label))
        .map(|(_, n)| n.op.name())
        .collect()
}

/// Whether a product of `dtype` may take a cuBLASLt epilogue: the real float types cuBLASLt's
/// epilogues support, the bias of the output's type.
pub fn epilogue_dtype(dtype: DType) -> bool {
    matches!(dtype, DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64)
}

/// Whether the elementwise region `consumer` may be absorbed into the matmul region `producer`:
/// `producer` computes one matmul of an epilogue dtype, `consumer` reads that product (as its
/// input `k`) and computes exactly one cuBLASLt form of it, and no other region and no graph
/// output reads the product (checked by the caller).
pub(super) fn absorbable(producer: &Region, consumer: &Region) -> bool {
    let [product] = producer.outputs[..] else { return false };
    let mm = producer.body.node(producer.body.outputs()[0]);
    if producer.kind != RegionKind::Vendor || mm.op != OpKind::MatMul || !epilogue_dtype(mm.dtype) {
        return false;
    }
    let Some(k) = consumer.inputs.iter().position(|&i| i == product) else { return false };
    consumer.kind == RegionKind::Elementwise
        && consumer.outputs.len() == 1
        && lt_form(&consumer.body, k as u32, &mm.shape).is_some()
}

/// The form of an absorbing vendor region's body: its one output is a cuBLASLt form over its
/// matmul, with a bias read straight from a region input, and it computes nothing else.
/// Returns the form, the matmul node and the bias's region input.
pub fn absorbed_form(body: &Graph) -> Option<(LtEpilogue, NodeId, Option<u32>)> {
    let [out] = body.outputs() else { return None };
    let (lt, product, bias, ops) = peel(body, *out, |n| n.op == OpKind::Input)?;
    let input_index = |id: NodeId| match body.node(id).attrs {
        kiln_ir::Attrs::Input { index } => Some(index),
        _ => None,
    };
    let bias = match bias {
        Some(b) => Some(input_index(b)?),
        None => None,
    };
    (body.node(product).op == OpKind::MatMul && only_ops(body, ops)).then_some((lt, product, bias))
}

/// Whether `body` computes no elementwise op but the form's `ops` (distinct nodes).
fn only_ops(body: &Graph, ops: usize) -> bool {
    body.nodes().iter().filter(|n| n.op.is_elementwise()).count() == ops
}

fn is_input(n: &Node, k: u32) -> bool {
    n.attrs == kiln_ir::Attrs::Input { index: k }
}

/// Whether `id` is the constant `c` rounded to its dtype (possibly broadcast).
fn is_const(g: &Graph, id: NodeId, c: f64) -> bool {
    let n = g.node(id);
    if n.op == OpKind::BroadcastTo {
        return is_const(g, n.inputs[0], c);
    }
    match &n.attrs {
        kiln_ir::Attrs::Const { value } if n.op == OpKind::Const => {
            value.to_f64() == kiln_ir::Literal::from_f64(n.dtype, c).to_f64()
        }
        _ => false,
    }
}

fn is_zero(g: &Graph, id: NodeId) -> bool {
    is_const(g, id, 0.0)
}

/// The operands of `id` if it is the binary op `op`, in both orders for a commuting op.
fn operands(g: &Graph, id: NodeId, op: OpKind) -> impl Iterator<Item = (NodeId, NodeId)> {
    let n = g.node(id);
    let pair = (n.op == op).then(|| (n.inputs[0], n.inputs[1]));
    pair.into_iter().flat_map(|(a, b)| [(a, b), (b, a)])
}

/// `c * rest` (either order): `rest`.
fn times_const(g: &Graph, id: NodeId, c: f64) -> Option<NodeId> {
    operands(g, id, OpKind::Mul).find(|&(k, _)| is_const(g, k, c)).map(|(_, rest)| rest)
}

/// `id` as `x³` (`square(x) * x`, `(x * x) * x` in either order, or `x ** 3`): `x` and the
/// elementwise nodes of the cube.
fn cube(g: &Graph, id: NodeId) -> Option<(NodeId, Vec<NodeId>)> {
    let n = g.node(id);
    if n.op == OpKind::Power && is_const(g, n.inputs[1], 3.0) {
        return Some((n.inputs[0], vec![id]));
    }
    operands(g, id, OpKind::Mul).find_map(|(sq, x)| {
        let s = g.node(sq);
        let is_square = (s.op == OpKind::Square && s.inputs[0] == x)
            || (s.op == OpKind::Mul && s.inputs[..] == [x, x]);
        is_square.then(|| (x, vec![id, sq]))
    })
}

/// `out` as the tanh GELU of some `x`: `(0.5 * x) * (1 + tanh(c1 * (x + c2 * x³)))` with
/// [`GELU_C1`] and [`GELU_C2`] rounded to the dtype, each product and sum in either operand
/// order (the form `kiln::nn::gelu_tanh` builds). Returns `x` and the elementwise nodes.
fn gelu_tanh_of(g: &Graph, out: NodeId) -> Option<(NodeId, Vec<NodeId>)> {
    operands(g, out, OpKind::Mul).find_map(|(half_x, one_plus)| {
        let x = times_const(g, half_x, 0.5)?;
        let t = operands(g, one_plus, OpKind::Add).find(|&(one, _)| is_const(g, one, 1.0))?.1;
        let tn = g.node(t);
        if tn.op != OpKind::Tanh {
            return None;
        }
        let inner = times_const(g, tn.inputs[0], GELU_C1)?;
        let scaled = operands(g, inner, OpKind::Add).find(|&(a, _)| a == x)?.1;
        let (base, cube_nodes) = cube(g, times_const(g, scaled, GELU_C2)?)?;
        let mut nodes = vec![out, half_x, one_plus, t, tn.inputs[0], inner, scaled];
        nodes.extend(cube_nodes);
        (base == x).then_some((x, nodes))
    })
}

/// The bias vector `id` broadcasts: `id` is a broadcast to the product's shape of a node
/// `source` accepts, of shape `(.., 1, n)` with the product's last extent `n`, possibly through
/// reshapes that only add or drop leading unit axes (`bias.reshape(1, n)`).
fn bias_source(
    g: &Graph,
    id: NodeId,
    product: &[usize],
    source: impl Fn(&Node) -> bool,
) -> Option<NodeId> {
    let n = g.node(id);
    if n.op != OpKind::BroadcastTo || n.shape.as_slice() != product {
        return None;
    }
    let is_row = |shape: &[usize]| match shape.split_last() {
        Some((&last, rest)) => {
            last == *product.last().unwrap_or(&0) && rest.iter().all(|&d| d == 1)
        }
        None => false,
    };
    let mut src = n.inputs[0];
    while g.node(src).op == OpKind::Reshape && is_row(&g.node(src).shape) {
        src = g.node(src).inputs[0];
    }
    (source(g.node(src)) && is_row(&g.node(src).shape)).then_some(src)
}

/// `out` as `[act(] x [+ bias] [)]`, `act` relu (`maximum(_, 0)`) or the tanh GELU, the bias a
/// broadcast of a node `source` accepts: the form, `x`, the bias's source node, and the number
/// of distinct elementwise nodes the form computes.
fn peel(
    g: &Graph,
    out: NodeId,
    source: impl Fn(&Node) -> bool,
) -> Option<(LtEpilogue, NodeId, Option<NodeId>, usize)> {
    let mut x = out;
    let shape = &g.node(out).shape;
    let mut act = Activation::None;
    let mut nodes: Vec<NodeId> = Vec::new();
    let node = g.node(x);
    if node.op == OpKind::Maximum {
        let (a, b) = (node.inputs[0], node.inputs[1]);
        x = if is_zero(g, b) {
            a
        } else if is_zero(g, a) {
            b
        } else {
            return None;
        };
        act = Activation::Relu;
        nodes.push(out);
    } else if let Some((arg, gelu)) =
        gelu_tanh_of(g, out).filter(|_| g.node(out).dtype != DType::Float64)
    {
        // Not float64: cuBLASLt's GELU epilogue is not float64-accurate (2.6e-10 relative error
        // on an H200), so a float64 GELU is a kernel of kiln's after the product.
        x = arg;
        act = Activation::GeluTanh;
        nodes = gelu;
    }
    let mut bias = None;
    let node = g.node(x);
    if node.op == OpKind::Add {
        let (a, b) = (node.inputs[0], node.inputs[1]);
        let (rest, src) =
            match (bias_source(g, b, shape, &source), bias_source(g, a, shape, &source)) {
                (Some(src), _) => (a, src),
                (None, Some(src)) => (b, src),
                (None, None) => return None,
            };
        bias = Some(src);
        nodes.push(x);
        x = rest;
    }
    let lt = match (bias.is_some(), act) {
        (true, Activation::None) => LtEpilogue::Bias,
        (false, Activation::Relu) => LtEpilogue::Relu,
        (true, Activation::Relu) => LtEpilogue::BiasRelu,
        (false, Activation::GeluTanh) => LtEpilogue::Gelu,
        (true, Activation::GeluTanh) => LtEpilogue::BiasGelu,
        (false, Activation::None) => return None,
    };
    nodes.sort_unstable();
    nodes.dedup();
    Some((lt, x, bias, nodes.len()))
}

/// The cuBLASLt form of a kernel reading the product as its input `k`: its one output is
/// `[maximum(] p [+ bias] [, 0)]`, the bias a region input, and it computes nothing else.
fn lt_form(body: &Graph, k: u32, product: &[usize]) -> Option<LtEpilogue> {
    let [out] = body.outputs() else { return None };
    if body.node(*out).shape.as_slice() != product {
        return None;
    }
    let (lt, x, _, ops) = peel(body, *out, |n| n.op == OpKind::Input)?;
    (is_input(body.node(x), k) && only_ops(body, ops)).then_some(lt)
}
