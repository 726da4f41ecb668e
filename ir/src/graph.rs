//! The expression graph: a hash-consed DAG of [`Node`]s in topological order.

use std::fmt;

use num_complex::Complex64;
use smallvec::SmallVec;

use crate::dtype::{DType, DTypeKind};
use crate::error::{IrError, Result};
use crate::infer::infer;
use crate::ops::OpKind;
use crate::shape::Shape;

/// A node's position in its [`Graph`]; printed `%N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// A scalar constant, already converted to its node's dtype. Floats are kept as the bits of an
/// `f64` (exact for every float dtype), so literals hash and compare bit-wise; NaNs are
/// canonicalised to one NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Literal {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(u64),
    Complex(u64, u64),
}

fn canon(x: f64) -> u64 {
    if x.is_nan() {
        f64::NAN.to_bits()
    } else {
        x.to_bits()
    }
}

/// Rounds an f64 to the precision of a float dtype (f16, bf16, f32 or f64), to nearest with ties
/// to even, correctly (one rounding: `half`'s `from_f64` drops the low 32 bits of the f64 first,
/// which double-rounds some ties).
pub fn round_to(dtype: DType, x: f64) -> f64 {
    match dtype.real_dtype() {
        DType::Float16 => round_significand(x, 11, -14, 15),
        DType::BFloat16 => round_significand(x, 8, -126, 127),
        DType::Float32 => x as f32 as f64,
        _ => x,
    }
}

/// `x` rounded to nearest-even in a binary format with `p` significand bits (implicit bit
/// included), smallest normal exponent `emin` and largest exponent `emax` (gradual underflow,
/// overflow to ±inf). Exact for `p <= 53` and formats narrower than f64.
fn round_significand(x: f64, p: i32, emin: i32, emax: i32) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    // f64 subnormals are far below every narrower format's smallest subnormal.
    let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
    if biased == 0 {
        return 0.0f64.copysign(x);
    }
    let e = biased - 1023;
    // The weight of the last significand bit at x's magnitude.
    let q = e.max(emin) - (p - 1);
    let scale = 2f64.powi(q);
    // Division and multiplication by a power of two are exact here; the quotient is < 2^p.
    let r = (x / scale).round_ties_even() * scale;
    let max = (2.0 - 2f64.powi(1 - p)) * 2f64.powi(emax);
    if r.abs() > max {
        f64::INFINITY.copysign(x)
    } else if r == 0.0 {
        0.0f64.copysign(x)
    } else {
        r
    }
}

impl Literal {
    /// A float literal of `dtype`, rounded to it.
    pub fn float(dtype: DType, x: f64) -> Literal {
        Literal::Float(canon(round_to(dtype, x)))
    }

    /// A complex literal of `dtype` (complex64 rounds each part to float32).
    pub fn complex(dtype: DType, z: Complex64) -> Literal {
        Literal::Complex(canon(round_to(dtype, z.re)), canon(round_to(dtype, z.im)))
    }

    /// The literal of `dtype` nearest to the value `v` (NumPy's conversion of a scalar to
    /// `dtype`: integers wrap, floats round, bool is `v != 0`).
    pub fn from_f64(dtype: DType, v: f64) -> Literal {
        match dtype.kind() {
            DTypeKind::Bool => Literal::Bool(v != 0.0),
            DTypeKind::SignedInt => Literal::Int(wrap_signed(dtype, v as i64 as i128)),
            DTypeKind::UnsignedInt => Literal::UInt(wrap_unsigned(dtype, v as i128)),
            DTypeKind::Float => Literal::float(dtype, v),
            DTypeKind::Complex => Literal::complex(dtype, Complex64::new(v, 0.0)),
        }
    }

    /// An integer converted to `dtype` (wrapping for integers, rounding for floats).
    pub fn from_i128(dtype: DType, v: i128) -> Literal {
        match dtype.kind() {
            DTypeKind::Bool => Literal::Bool(v != 0),
            DTypeKind::SignedInt => Literal::Int(wrap_signed(dtype, v)),
            DTypeKind::UnsignedInt => Literal::UInt(wrap_unsigned(dtype, v)),
            DTypeKind::Float => Literal::float(dtype, v as f64),
            DTypeKind::Complex => Literal::complex(dtype, Complex64::new(v as f64, 0.0)),
        }
    }

    /// The value as f64 (complex: the real part; bool: 0 or 1).
    pub fn to_f64(self) -> f64 {
        match self {
            Literal::Bool(b) => b as u8 as f64,
            Literal::Int(i) => i as f64,
            Literal::UInt(u) => u as f64,
            Literal::Float(b) => f64::from_bits(b),
            Literal::Complex(re, _) => f64::from_bits(re),
        }
    }

    /// Whether the literal is of the right variant for `dtype` and exactly representable in it.
    pub fn fits(self, dtype: DType) -> bool {
        match (self, dtype.kind()) {
            (Literal::Bool(_), DTypeKind::Bool) => true,
            (Literal::Int(i), DTypeKind::SignedInt) => {
                let (lo, hi) = dtype.int_range().unwrap();
                (lo..=hi).contains(&(i as i128))
            }
            (Literal::UInt(u), DTypeKind::UnsignedInt) => {
                let (_, hi) = dtype.int_range().unwrap();
                (u as i128) <= hi
            }
            (Literal::Float(b), DTypeKind::Float) => {
                let x = f64::from_bits(b);
                x.is_nan() || round_to(dtype, x).to_bits() == b
            }
            (Literal::Complex(re, im), DTypeKind::Complex) => [re, im].iter().all(|&b| {
                let x = f64::from_bits(b);
                x.is_nan() || round_to(dtype, x).to_bits() == b
            }),
            _ => false,
        }
    }
}

/// Wraps an integer into a signed dtype's range (two's complement, as NumPy's casts).
pub fn wrap_signed(dtype: DType, v: i128) -> i64 {
    match dtype {
        DType::Int8 => v as i8 as i64,
        DType::Int16 => v as i16 as i64,
        DType::Int32 => v as i32 as i64,
        _ => v as i64,
    }
}

/// Wraps an integer into an unsigned dtype's range.
pub fn wrap_unsigned(dtype: DType, v: i128) -> u64 {
    match dtype {
        DType::UInt8 => v as u8 as u64,
        DType::UInt16 => v as u16 as u64,
        DType::UInt32 => v as u32 as u64,
        _ => v as u64,
    }
}

/// Normalisation of `np.fft`'s `norm` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FftNorm {
    /// No scaling forward, 1/n inverse.
    Backward,
    /// 1/sqrt(n) both ways.
    Ortho,
    /// 1/n forward, none inverse.
    Forward,
}

impl FftNorm {
    /// Every norm, in NumPy's order.
    pub const ALL: [FftNorm; 3] = [FftNorm::Backward, FftNorm::Ortho, FftNorm::Forward];

    /// The norm named `name` (`"backward"`, `"ortho"`, `"forward"`).
    pub fn from_name(name: &str) -> Option<FftNorm> {
        FftNorm::ALL.into_iter().find(|n| n.name() == name)
    }

    /// The factor a transform of `len` points is multiplied by (the product of the transformed
    /// axes' lengths for an n-dimensional one): 1, 1/sqrt(len) or 1/len.
    pub fn scale(self, inverse: bool, len: usize) -> f64 {
        match (self, inverse) {
            (FftNorm::Backward, false) | (FftNorm::Forward, true) => 1.0,
            (FftNorm::Backward, true) | (FftNorm::Forward, false) => 1.0 / len as f64,
            (FftNorm::Ortho, _) => 1.0 / (len as f64).sqrt(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            FftNorm::Backward => "backward",
            FftNorm::Ortho => "ortho",
            FftNorm::Forward => "forward",
        }
    }
}

/// One axis of a basic slice, normalised: the result has `len` elements along the axis, the
/// first at input index `start`, then every `step` (negative steps walk backwards).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceDim {
    pub start: usize,
    pub step: isize,
    pub len: usize,
}

impl SliceDim {
    /// Python's `slice(start, stop, step).indices(n)` then the length: `None` bounds take their
    /// defaults, negative bounds count from the end, out-of-range bounds clip. `step` must be
    /// non-zero.
    pub fn normalize(n: usize, start: Option<isize>, stop: Option<isize>, step: isize) -> SliceDim {
        let n = n as isize;
        let (lo, hi) = if step > 0 { (0, n) } else { (-1, n - 1) };
        let clip = |v: isize| -> isize {
            let v = if v < 0 { v + n } else { v };
            v.clamp(lo, hi)
        };
        let start = start.map(clip).unwrap_or(if step > 0 { 0 } else { n - 1 });
        let stop = stop.map(clip).unwrap_or(if step > 0 { n } else { -1 });
        let len = if step > 0 {
            if stop > start {
                (stop - start + step - 1) / step
            } else {
                0
            }
        } else if start > stop {
            (start - stop + (-step) - 1) / (-step)
        } else {
            0
        };
        SliceDim { start: if len > 0 { start as usize } else { 0 }, step, len: len as usize }
    }
}

pub type Axes = SmallVec<[usize; 4]>;

/// The attribute values of a node; which variant an op takes is its table row's
/// [`crate::ops::AttrKind`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Attrs {
    None,
    Input { index: u32 },
    Const { value: Literal },
    Iota { axis: usize },
    DType { dtype: DType },
    Shape { shape: Shape },
    Perm { perm: Axes },
    Reduce { axes: Axes, keepdims: bool },
    Axes { axes: Axes },
    Axis { axis: usize },
    Slice { dims: SmallVec<[SliceDim; 4]> },
    Fft { axes: Axes, inverse: bool, norm: FftNorm },
    RealFft { axes: Axes, n: usize, norm: FftNorm },
    Linalg { output: u8, full_matrices: bool },
    Custom { name: String },
    TopK { axis: usize, k: usize, largest: bool },
    Philox { per_call: u8, words: u8 },
}

impl Attrs {
    /// Appends an exact encoding of the attributes to `out`, as 64-bit words: two values
    /// encode alike exactly when they are equal (literals bit-wise, as they compare), and an
    /// encoding is never a prefix of another's. For keys compared word by word (the frontend's
    /// dispatch key).
    pub fn encode<E: Extend<u64>>(&self, out: &mut E) {
        fn list<E: Extend<u64>>(tag: u64, xs: &[usize], out: &mut E) {
            out.extend([tag | (xs.len() as u64) << 8]);
            out.extend(xs.iter().map(|&x| x as u64));
        }
        match self {
            Attrs::None => out.extend([0]),
            Attrs::Input { index } => out.extend([1, u64::from(*index)]),
            Attrs::Const { value } => match *value {
                Literal::Bool(b) => out.extend([2, u64::from(b)]),
                Literal::Int(i) => out.extend([2 | 1 << 8, i as u64]),
                Literal::UInt(u) => out.extend([2 | 2 << 8, u]),
                Literal::Float(bits) => out.extend([2 | 3 << 8, bits]),
                Literal::Complex(re, im) => out.extend([2 | 4 << 8, re, im]),
            },
            Attrs::Iota { axis } => out.extend([3, *axis as u64]),
            Attrs::DType { dtype } => out.extend([4, *dtype as u64]),
            Attrs::Shape { shape } => list(5, shape, out),
            Attrs::Perm { perm } => list(6, perm, out),
            Attrs::Reduce { axes, keepdims } => list(7 | u64::from(*keepdims) << 32, axes, out),
            Attrs::Axes { axes } => list(8, axes, out),
            Attrs::Axis { axis } => out.extend([9, *axis as u64]),
            Attrs::Slice { dims } => {
                out.extend([10 | (dims.len() as u64) << 8]);
                for d in dims {
                    out.extend([d.start as u64, d.step as u64, d.len as u64]);
                }
            }
            Attrs::Fft { axes, inverse, norm } => {
                list(11 | u64::from(*inverse) << 32 | (*norm as u64) << 40, axes, out)
            }
            Attrs::RealFft { axes, n, norm } => {
                list(12 | (*norm as u64) << 40, axes, out);
                out.extend([*n as u64]);
            }
            Attrs::Linalg { output, full_matrices } => {
                out.extend([14, u64::from(*output) | u64::from(*full_matrices) << 8])
            }
            Attrs::TopK { axis, k, largest } => {
                out.extend([15 | u64::from(*largest) << 32, *axis as u64, *k as u64])
            }
            Attrs::Philox { per_call, words } => {
                out.extend([16 | u64::from(*per_call) << 8 | u64::from(*words) << 16])
            }
            Attrs::Custom { name } => {
                out.extend([13 | (name.len() as u64) << 8]);
                out.extend(name.as_bytes().chunks(8).map(|c| {
                    let mut w = [0u8; 8];
                    w[..c.len()].copy_from_slice(c);
                    u64::from_le_bytes(w)
                }));
            }
        }
    }

    /// The schema this value belongs to.
    pub fn kind(&self) -> crate::ops::AttrKind {
        use crate::ops::AttrKind as K;
        match self {
            Attrs::None => K::None,
            Attrs::Input { .. } => K::Input,
            Attrs::Const { .. } => K::Const,
            Attrs::Iota { .. } => K::Iota,
            Attrs::DType { .. } => K::DType,
            Attrs::Shape { .. } => K::Shape,
            Attrs::Perm { .. } => K::Perm,
            Attrs::Reduce { .. } => K::Reduce,
            Attrs::Axes { .. } => K::Axes,
            Attrs::Axis { .. } => K::Axis,
            Attrs::Slice { .. } => K::Slice,
            Attrs::Fft { .. } => K::Fft,
            Attrs::RealFft { .. } => K::RealFft,
            Attrs::Linalg { .. } => K::Linalg,
            Attrs::Custom { .. } => K::Custom,
            Attrs::TopK { .. } => K::TopK,
            Attrs::Philox { .. } => K::Philox,
        }
    }
}

/// One operation: op, attributes, inputs, and its result's dtype and shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    pub op: OpKind,
    pub attrs: Attrs,
    pub inputs: SmallVec<[NodeId; 3]>,
    pub dtype: DType,
    pub shape: Shape,
}

/// A hash-consed DAG: adding a node identical to one already present (same op, attributes,
/// inputs, dtype and shape) returns the existing id, so a common subexpression is one node.
/// Nodes are kept in topological order (inputs before users); `outputs` are the values the graph
/// computes, in order.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    nodes: Vec<Node>,
    /// Hash-consing table (FxHash: lowering inserts every node of every materialisation, and
    /// SipHash was a sixth of a small graph's host time).
    dedup: rustc_hash::FxHashMap<Node, NodeId>,
    outputs: Vec<NodeId>,
}

impl PartialEq for Graph {
    fn eq(&self, other: &Graph) -> bool {
        self.nodes == other.nodes && self.outputs == other.outputs
    }
}
impl Eq for Graph {}

impl Graph {
    pub fn new() -> Graph {
        Graph::default()
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    pub fn set_outputs(&mut self, outputs: Vec<NodeId>) {
        self.outputs = outputs;
    }

    pub fn push_output(&mut self, id: NodeId) {
        self.outputs.push(id);
    }

    /// Number of `input` nodes' distinct indices expected by the graph (max index + 1).
    pub fn num_inputs(&self) -> usize {
        self.nodes
            .iter()
            .filter_map(|n| match n.attrs {
                Attrs::Input { index } => Some(index as usize + 1),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// Inserts a node as given, without checking its type (the verifier checks later), deduplicated.
    /// Inputs must already be in the graph.
    pub fn insert(&mut self, node: Node) -> NodeId {
        debug_assert!(node.inputs.iter().all(|i| i.index() < self.nodes.len()));
        if let Some(&id) = self.dedup.get(&node) {
            return id;
        }
        let id = NodeId(self.nodes.len() as u32);
        self.dedup.insert(node.clone(), id);
        self.nodes.push(node);
        id
    }

    /// Appends a node with no checks and no deduplication, for tests of the verifier.
    #[cfg(test)]
    pub(crate) fn push_unchecked(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        NodeId(self.nodes.len() as u32 - 1)
    }

    /// Adds a non-leaf node, its dtype and shape inferred from the op table's rules.
    /// Errors: the op's dtype, shape, arity or attribute rules ([`crate::infer::infer`]).
    pub fn add(&mut self, op: OpKind, attrs: Attrs, inputs: &[NodeId]) -> Result<NodeId> {
        let types: Vec<(DType, &[usize])> =
            inputs.iter().map(|&i| (self.node(i).dtype, self.node(i).shape.as_slice())).collect();
        let (dtype, shape) = infer(op, &attrs, &types)?;
        Ok(self.insert(Node { op, attrs, inputs: inputs.into(), dtype, shape }))
    }

    /// Adds a materialised input of the given dtype and shape.
    pub fn input(&mut self, index: u32, dtype: DType, shape: &[usize]) -> NodeId {
        self.insert(Node {
            op: OpKind::Input,
            attrs: Attrs::Input { index },
            inputs: SmallVec::new(),
            dtype,
            shape: shape.into(),
        })
    }

    /// Adds a rank-0 constant. Error if the literal does not fit the dtype.
    pub fn constant(&mut self, dtype: DType, value: Literal) -> Result<NodeId> {
        if !value.fits(dtype) {
            return Err(IrError::InvalidAttrs {
                op: "const".into(),
                message: format!("{value:?} is not a {dtype} value"),
            });
        }
        Ok(self.insert(Node {
            op: OpKind::Const,
            attrs: Attrs::Const { value },
            inputs: SmallVec::new(),
            dtype,
            shape: Shape::new(),
        }))
    }

    /// Adds an index ramp along `axis` of `shape`.
    pub fn iota(&mut self, dtype: DType, shape: &[usize], axis: usize) -> Result<NodeId> {
        if axis >= shape.len() {
            return Err(IrError::AxisOutOfBounds {
                op: "iota".into(),
                axis: axis as i64,
                rank: shape.len(),
            });
        }
        Ok(self.insert(Node {
            op: OpKind::Iota,
            attrs: Attrs::Iota { axis },
            inputs: SmallVec::new(),
            dtype,
            shape: shape.into(),
        }))
    }

    /// For each node, the number of uses by other nodes and outputs.
    pub fn use_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.nodes.len()];
        for n in &self.nodes {
            for i in &n.inputs {
                counts[i.index()] += 1;
            }
        }
        for o in &self.outputs {
            counts[o.index()] += 1;
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_consing_shares_identical_subexpressions() {
        let mut g = Graph::new();
        let x = g.input(0, DType::Float32, &[4]);
        let a = g.add(OpKind::Sin, Attrs::None, &[x]).unwrap();
        let b = g.add(OpKind::Sin, Attrs::None, &[x]).unwrap();
        assert_eq!(a, b);
        let c = g.add(OpKind::Add, Attrs::None, &[a, b]).unwrap();
        assert_eq!(g.len(), 3);
        assert_eq!(g.node(c).dtype, DType::Float32);
        assert_eq!(g.use_counts()[a.index()], 2);
    }

    #[test]
    fn slice_normalisation_matches_python() {
        // list(range(10))[::-2] == [9, 7, 5, 3, 1]
        assert_eq!(
            SliceDim::normalize(10, None, None, -2),
            SliceDim { start: 9, step: -2, len: 5 }
        );
        // range(10)[2:-1:3] == [2, 5, 8]
        assert_eq!(
            SliceDim::normalize(10, Some(2), Some(-1), 3),
            SliceDim { start: 2, step: 3, len: 3 }
        );
        // range(10)[20:] is empty; range(10)[-20:3] == [0, 1, 2]
        assert_eq!(SliceDim::normalize(10, Some(20), None, 1).len, 0);
        assert_eq!(
            SliceDim::normalize(10, Some(-20), Some(3), 1),
            SliceDim { start: 0, step: 1, len: 3 }
        );
        // range(5)[3:0:-1] == [3, 2, 1]
        assert_eq!(
            SliceDim::normalize(5, Some(3), Some(0), -1),
            SliceDim { start: 3, step: -1, len: 3 }
        );
        assert_eq!(SliceDim::normalize(0, None, None, -1).len, 0);
    }

    #[test]
    fn literals_fit_their_dtype() {
        assert!(Literal::float(DType::Float32, 0.1).fits(DType::Float32));
        assert!(!Literal::Float(0.1f64.to_bits()).fits(DType::Float32));
        assert_eq!(
            Literal::from_i128(DType::Int32, -(1i128 << 31) - 1),
            Literal::Int(i32::MAX as i64)
        );
        assert!(!Literal::Int(300).fits(DType::Int8));
    }
}
