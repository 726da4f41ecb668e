//! The checks of kiln's fuzz targets, one function per target (see [`TARGETS`]). Each takes the
//! fuzzer's bytes and returns for every input kiln handles, with a value or a typed error; it
//! panics where kiln is wrong: a panic inside kiln, or a result that breaks the target's
//! property (a parsed graph that does not print and parse back to itself, compiled host code
//! that disagrees with the reference evaluator ...).
//!
//! Shared by the fuzz targets (`fuzz/fuzz_targets/*.rs`, one line each, through `fuzz/src/lib.rs`) and the test suite's
//! replay of the committed corpora and crash regressions (`tests/suite/fuzz_corpora.rs`, which
//! includes this file by path), so that CI checks every committed input the way the fuzzer did.

use kiln_frontend::kernels::fuzzing::{load_npy_bytes, parse_params, ParsedParam};
use kiln_frontend::{Array, ElementwiseKernel, Operand, ReductionKernel};
use kiln_ir::host::Data;
use kiln_ir::ops::{AttrKind, DTypeRule};
use kiln_ir::{Attrs, DType, Graph, HostArray, Literal, Node, NodeId, OpClass, OpKind, SliceDim};

/// The targets: name (a directory of `fuzz/corpus/` and `fuzz/regressions/`, a binary of
/// `fuzz/fuzz_targets/`) and check.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("kernel_code", kernel_code),
    ("ir_text", ir_text),
    ("npy", npy),
    ("params", params),
    ("programs", programs),
];

// ------------------------------------------------------------------------------------------------
// User kernels: the lexer, parser and tracer of ElementwiseKernel and ReductionKernel code
// ------------------------------------------------------------------------------------------------

/// Parameter lists the kernel code is written against (inputs, outputs).
const SIGNATURES: &[(&str, &str)] = &[
    ("float32 x, float32 y", "float32 z"),
    ("T x, T y", "T z"),
    ("int32 a, raw int64 b", "float64 c"),
    ("T x, raw T y", "T z"),
    ("bool p, int8 q, uint16 r", "int64 s, float16 t"),
    ("complex64 x", "complex64 z"),
    ("float64 x", "float64 z, int32 w"),
    ("T x, U y", "U z"),
];

/// `kernel_code`: byte 0 picks an elementwise or a reduction kernel (bit 0), its signature (bits
/// 1-3, [`SIGNATURES`]) and its arguments' shape (bits 4-5); the rest is UTF-8 text, parts
/// separated by NUL: an elementwise kernel's operation and preamble; a reduction's map, reduce
/// and post-map expressions, identity, reduce type and preamble. A kernel that is built is
/// called (traced, lazily) on small arrays, and what it computes is lowered to a graph that must
/// pass the verifier and run in the reference evaluator.
pub fn kernel_code(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let parts: Vec<&str> = text.split('\0').collect();
    let part = |k: usize| parts.get(k).copied().unwrap_or("");
    let (ins, outs) = SIGNATURES[(mode >> 1) as usize % SIGNATURES.len()];
    let args = kernel_args(ins, mode >> 4);
    let results = if mode & 1 == 0 {
        let Ok(mut k) = ElementwiseKernel::new(ins, outs, part(0), "fuzz") else { return };
        if parts.len() > 1 {
            let Ok(with) = k.with_preamble(part(1)) else { return };
            k = with;
        }
        k.try_call_all(&args)
    } else {
        let Ok(mut k) = ReductionKernel::new(ins, outs, part(0), part(1), part(2), part(3), "fuzz")
        else {
            return;
        };
        if !part(4).trim().is_empty() {
            let Ok(with) = k.with_reduce_type(part(4)) else { return };
            k = with;
        }
        if parts.len() > 5 {
            let Ok(with) = k.with_preamble(part(5)) else { return };
            k = with;
        }
        match mode >> 6 {
            0 => k.try_call_all(&args, kiln_frontend::all_axes()),
            1 => k.try_call_all(&args, kiln_frontend::axis(0)),
            2 => k.try_call_all(&args, kiln_frontend::axis(-1).keepdims()),
            _ => k.try_call_all(&args, kiln_frontend::axis(vec![0, 1])),
        }
    };
    let Ok(results) = results else { return };
    let refs: Vec<&Array> = results.iter().collect();
    check_lowered(&refs, "a traced kernel");
}

/// Small arguments for a parameter list: an array of each fixed dtype (float32 for a
/// placeholder), of shape (2, 3), (3,), (1, 3) or () by `shape`.
fn kernel_args(ins: &str, shape: u8) -> Vec<Operand> {
    let shape: &[usize] = match shape & 3 {
        0 => &[2, 3],
        1 => &[3],
        2 => &[1, 3],
        _ => &[],
    };
    let n: usize = shape.iter().product();
    ins.split(',')
        .map(|p| {
            let ty = p.split_whitespace().rev().nth(1).unwrap_or("float32");
            let dtype = ty.parse::<DType>().unwrap_or(DType::Float32);
            let values: Vec<f64> = (0..n).map(|k| k as f64 - 1.5).collect();
            Operand::from(&Array::from_vec(values, shape).astype(dtype))
        })
        .collect()
}

/// Lowers `arrays` (lazy, small) to a graph: it must pass the verifier and run in the reference
/// evaluator.
fn check_lowered(arrays: &[&Array], what: &str) {
    let lowered = kiln_frontend::lower(arrays);
    let text = kiln_ir::text::print(&lowered.graph);
    if let Err(e) = kiln_ir::verify::verify(&lowered.graph) {
        panic!("{what} lowers to a graph the verifier rejects: {e}\n{text}");
    }
    let inputs: Vec<&HostArray> = lowered.inputs.iter().map(|a| a.as_ref()).collect();
    if let Err(e) = kiln_ir::eval::evaluate(&lowered.graph, &inputs) {
        panic!("{what}: the evaluator fails on its verified graph: {e}\n{text}");
    }
}

// ------------------------------------------------------------------------------------------------
// The textual IR: parser, verifier, printer, evaluator
// ------------------------------------------------------------------------------------------------

/// Most elements of any node of a parsed graph that `ir_text` evaluates.
const IR_EVAL_ELEMENTS: usize = 4096;

/// `ir_text`: the bytes as IR text. A graph that parses prints to a text that parses back to the
/// same graph and prints the same; one that also passes the verifier (and is small) runs in the
/// reference evaluator on inputs of zeros without a panic (its errors are allowed: they are the
/// evaluator's typed errors).
pub fn ir_text(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let Ok(g) = kiln_ir::text::parse(s) else { return };
    let printed = kiln_ir::text::print(&g);
    let back = kiln_ir::text::parse(&printed)
        .unwrap_or_else(|e| panic!("the printed graph does not parse: {e}\n{printed}"));
    assert!(back == g, "print then parse changes the graph:\n{printed}");
    assert_eq!(kiln_ir::text::print(&back), printed, "printing is not deterministic");
    if kiln_ir::verify::verify(&g).is_err() {
        return;
    }
    if g.nodes().iter().any(|n| {
        n.shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .is_none_or(|n| n > IR_EVAL_ELEMENTS)
    }) {
        return;
    }
    if g.num_inputs() > 16 {
        return;
    }
    // Inputs of zeros, typed as each index's first `input` node.
    let mut inputs: Vec<Option<HostArray>> = vec![None; g.num_inputs()];
    for n in g.nodes() {
        if let Attrs::Input { index } = n.attrs {
            let slot = &mut inputs[index as usize];
            if slot.is_none() {
                *slot = Some(host_array(n.dtype, &n.shape, &mut |_| 0.0));
            }
        }
    }
    let Some(inputs) = inputs.into_iter().collect::<Option<Vec<HostArray>>>() else { return };
    let refs: Vec<&HostArray> = inputs.iter().collect();
    let _ = kiln_ir::eval::evaluate(&g, &refs);
}

// ------------------------------------------------------------------------------------------------
// .npy files
// ------------------------------------------------------------------------------------------------

/// `npy`: the bytes as a `.npy` file. One that loads reads back as a host array whose element
/// count is its shape's, and saves to a file that loads again to the same dtype, shape and values.
pub fn npy(data: &[u8]) {
    let Ok(a) = load_npy_bytes(data) else { return };
    let h = a.try_to_host().unwrap_or_else(|e| panic!("a loaded array does not read back: {e}"));
    assert_eq!(h.len(), h.shape().iter().product::<usize>(), "element count and shape disagree");
    let path = std::env::temp_dir().join(format!("kiln-fuzz-npy-{}.npy", std::process::id()));
    a.save_npy(&path).unwrap_or_else(|e| panic!("a loaded array does not save: {e}"));
    let back = kiln_frontend::load_npy(&path)
        .unwrap_or_else(|e| panic!("a saved array does not load: {e}"));
    let _ = std::fs::remove_file(&path);
    let b =
        back.try_to_host().unwrap_or_else(|e| panic!("a reloaded array does not read back: {e}"));
    assert_eq!((h.dtype(), h.shape()), (b.dtype(), b.shape()), "save then load changes the type");
    assert_eq!(
        format!("{:?}", h.data()),
        format!("{:?}", b.data()),
        "save then load changes the values"
    );
}

// ------------------------------------------------------------------------------------------------
// Parameter lists
// ------------------------------------------------------------------------------------------------

/// `params`: the bytes as a parameter list (`"float32 x, raw T y"`). A list that parses holds
/// C identifiers, distinct and not reserved, dtype names or one-letter placeholders; written back
/// as `[raw] TYPE NAME, ...` it parses to the same parameters. The error of one that does not
/// parse names a line and column inside the text (or just past its end).
pub fn params(data: &[u8]) {
    let Ok(src) = std::str::from_utf8(data) else { return };
    match parse_params(src) {
        Ok(list) => {
            for (k, p) in list.iter().enumerate() {
                let ident = |s: &str| {
                    let mut c = s.chars();
                    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
                        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
                };
                assert!(ident(&p.name), "parameter name {:?} is not an identifier", p.name);
                assert!(
                    p.name != "i" && p.name != "n" && !p.name.starts_with('_'),
                    "reserved name {:?} accepted",
                    p.name
                );
                assert!(list[..k].iter().all(|q| q.name != p.name), "{:?} declared twice", p.name);
                if p.placeholder {
                    assert!(p.ty.len() == 1 && ident(&p.ty), "placeholder {:?}", p.ty);
                } else {
                    assert!(p.ty.parse::<DType>().is_ok(), "dtype {:?} does not parse", p.ty);
                }
            }
            let written: Vec<String> = list
                .iter()
                .map(|p| format!("{}{} {}", if p.raw { "raw " } else { "" }, p.ty, p.name))
                .collect();
            let written = written.join(", ");
            let again = parse_params(&written)
                .unwrap_or_else(|e| panic!("{written:?}, written back from {src:?}, fails: {e}"));
            let strip = |l: &[ParsedParam]| -> Vec<(bool, String, String)> {
                l.iter().map(|p| (p.raw, p.ty.clone(), p.name.clone())).collect()
            };
            assert_eq!(strip(&list), strip(&again), "{src:?} written back as {written:?}");
        }
        Err(e) => {
            let message = e.to_string();
            assert!(!message.is_empty(), "an empty error message");
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Programs from the op table, compiled host code against the reference evaluator
// ------------------------------------------------------------------------------------------------

/// Largest number of elements of a node of a generated program.
const MAX_ELEMENTS: usize = 64;

/// The fuzzer's bytes, read one at a time (zeros once they run out).
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n.max(1)
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, _| v << 8 | self.u8() as u64)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// An element value from a seeded xorshift: a multiple of 1/4 in [-8, 8) mostly, and (when
/// `special`) sometimes NaN, ±inf, ±0, huge or tiny, or an integer extreme (wrapped by the
/// input's dtype).
fn element(state: &mut u64, special: bool) -> f64 {
    const SPECIAL: [f64; 12] = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1e30,
        -1e-30,
        65504.0,
        3e38,
        2147483648.0,
        -9.3e18,
        255.0,
    ];
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    let r = *state;
    if special && r % 6 == 0 {
        return SPECIAL[(r >> 8) as usize % SPECIAL.len()];
    }
    ((r >> 16) % 64) as f64 / 4.0 - 8.0
}

/// A host array of `dtype` and `shape` whose elements `value(k)` gives as f64 (converted as a C
/// cast: integers wrap, through i64).
fn host_array(dtype: DType, shape: &[usize], value: &mut dyn FnMut(usize) -> f64) -> HostArray {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(&mut *value).collect();
    let int = |x: f64| if x.is_finite() { x as i64 } else { 0 };
    let data = match dtype {
        DType::Bool => Data::Bool(v.iter().map(|&x| x != 0.0).collect()),
        DType::Int8 => Data::Int8(v.iter().map(|&x| int(x) as i8).collect()),
        DType::Int16 => Data::Int16(v.iter().map(|&x| int(x) as i16).collect()),
        DType::Int32 => Data::Int32(v.iter().map(|&x| int(x) as i32).collect()),
        DType::Int64 => Data::Int64(v.iter().map(|&x| int(x)).collect()),
        DType::UInt8 => Data::UInt8(v.iter().map(|&x| int(x) as u8).collect()),
        DType::UInt16 => Data::UInt16(v.iter().map(|&x| int(x) as u16).collect()),
        DType::UInt32 => Data::UInt32(v.iter().map(|&x| int(x) as u32).collect()),
        DType::UInt64 => Data::UInt64(v.iter().map(|&x| int(x) as u64).collect()),
        DType::Float16 => Data::Float16(v.iter().map(|&x| half::f16::from_f64(x)).collect()),
        DType::BFloat16 => Data::BFloat16(v.iter().map(|&x| half::bf16::from_f64(x)).collect()),
        DType::Float32 => Data::Float32(v.iter().map(|&x| x as f32).collect()),
        DType::Float64 => Data::Float64(v),
        DType::Complex64 => Data::Complex64(
            v.iter().map(|&x| num_complex::Complex32::new(x as f32, -0.5 * x as f32)).collect(),
        ),
        DType::Complex128 => {
            Data::Complex128(v.iter().map(|&x| num_complex::Complex64::new(x, 0.25 - x)).collect())
        }
    };
    HostArray::new(shape, data).expect("data of the shape's size")
}

/// The ops a program step may apply: every row of the op table but leaves (inputs come first,
/// constants and ramps are steps of their own), library calls (`matmul`, FFTs) and custom
/// kernels.
fn step_ops() -> Vec<OpKind> {
    OpKind::ALL
        .iter()
        .copied()
        .filter(|op| {
            !matches!(op.class(), OpClass::Leaf | OpClass::Vendor | OpClass::Custom)
                && *op != OpKind::CustomKernel
        })
        .collect()
}

/// A generated program: its graph (outputs set) and input values.
pub struct Program {
    pub graph: Graph,
    pub inputs: Vec<HostArray>,
}

/// Decodes a program from bytes: a base shape (rank 0-3, extents 1-4), 1-3 inputs of random
/// dtypes whose shapes broadcast against it, then steps until the bytes run out (at most 24),
/// each an op of [`step_ops`] on operands picked from the nodes made so far, with attributes made
/// for the op's schema from the operand's shape; operands are first broadcast to a common shape
/// and cast to the dtype the op's rule asks for (int64 positions of gathers and scatters, a bool
/// condition of `where`, one dtype of the op's domain for the rest). A step the op's type rules
/// reject, or whose result exceeds [`MAX_ELEMENTS`], is skipped. Outputs: the latest node and up
/// to two more picks.
pub fn decode_program(data: &[u8]) -> Program {
    let mut b = Bytes(data);
    let base: Vec<usize> = (0..b.below(4)).map(|_| 1 + b.below(4)).collect();
    let mut g = Graph::new();
    let mut inputs = Vec::new();
    let mut pool: Vec<NodeId> = Vec::new();
    for index in 0..1 + b.below(3) {
        let dtype = DType::ALL[b.below(DType::ALL.len())];
        let drop = b.below(base.len() + 1);
        let ones = b.u8();
        let shape: Vec<usize> = base[drop..]
            .iter()
            .enumerate()
            .map(|(k, &d)| if bit(ones, k) { 1 } else { d })
            .collect();
        let mut state = b.u64() | 1;
        let special = b.u8() & 1 == 1;
        inputs.push(host_array(dtype, &shape, &mut |_| element(&mut state, special)));
        pool.push(g.input(index as u32, dtype, &shape));
    }
    let ops = step_ops();
    for _ in 0..24 {
        if b.is_empty() {
            break;
        }
        let code = b.u8();
        let made = match code % 16 {
            // A rank-0 constant of any dtype.
            0 => {
                let dtype = DType::ALL[b.below(DType::ALL.len())];
                let mut state = b.u64() | 1;
                g.constant(dtype, Literal::from_f64(dtype, element(&mut state, true))).ok()
            }
            // A ramp along an axis of the base shape.
            1 if !base.is_empty() => {
                let dtype = [DType::Int64, DType::Int32, DType::Float32, DType::UInt8][b.below(4)];
                let axis = b.below(base.len());
                Some(g.insert(Node {
                    op: OpKind::Iota,
                    attrs: Attrs::Iota { axis },
                    inputs: Default::default(),
                    dtype,
                    shape: base.as_slice().into(),
                }))
            }
            _ => {
                let op = ops[b.below(ops.len())];
                apply(&mut g, &mut b, &pool, op)
            }
        };
        if let Some(id) = made {
            if elements(&g.node(id).shape) <= MAX_ELEMENTS && !pool.contains(&id) {
                pool.push(id);
            }
        }
    }
    let mut outputs = vec![*pool.last().expect("an input")];
    for _ in 0..b.below(3) {
        let k = pick(&mut b, pool.len());
        if !outputs.contains(&pool[k]) {
            outputs.push(pool[k]);
        }
    }
    g.set_outputs(outputs);
    Program { graph: g, inputs }
}

/// Bit `k` of `mask` (false past bit 7).
fn bit(mask: u8, k: usize) -> bool {
    k < 8 && mask >> k & 1 == 1
}

fn elements(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// A pool position: mostly one of the 3 latest (deep chains), else any.
fn pick(b: &mut Bytes, len: usize) -> usize {
    let i = b.u8() as usize;
    if i < 160 {
        len - 1 - i % len.min(3)
    } else {
        len - 1 - i % len
    }
}

/// `op` on operands from the pool, with attributes for its schema; `None` where its rules reject
/// them.
fn apply(g: &mut Graph, b: &mut Bytes, pool: &[NodeId], op: OpKind) -> Option<NodeId> {
    let info = op.info();
    let arity = match info.arity {
        kiln_ir::ops::Arity::Fixed(n) => n,
        kiln_ir::ops::Arity::Variadic => 2 + b.below(2),
    };
    let mut operands: Vec<NodeId> = (0..arity).map(|_| pool[pick(b, pool.len())]).collect();
    if arity == 0 {
        return None;
    }
    // Elementwise operands (and a compaction's condition and values) broadcast to one shape.
    if (op.is_elementwise() || op == OpKind::Compact) && arity > 1 {
        let mut shape: Vec<usize> = g.node(operands[0]).shape.to_vec();
        for &o in &operands[1..] {
            shape = kiln_ir::shape::broadcast_shapes(info.name, &shape, &g.node(o).shape)
                .ok()?
                .to_vec();
        }
        for o in operands.iter_mut() {
            if g.node(*o).shape.as_slice() != shape.as_slice() {
                *o = g
                    .add(
                        OpKind::BroadcastTo,
                        Attrs::Shape { shape: shape.as_slice().into() },
                        &[*o],
                    )
                    .ok()?;
            }
        }
    }
    // Operand dtypes for the rule: positions int64, a bool condition, one domain dtype.
    let cast = |g: &mut Graph, o: NodeId, dtype: DType| -> Option<NodeId> {
        if g.node(o).dtype == dtype {
            Some(o)
        } else {
            g.add(OpKind::Cast, Attrs::DType { dtype }, &[o]).ok()
        }
    };
    let values: Vec<usize> = match info.dtype_rule {
        DTypeRule::Select => {
            operands[0] = cast(g, operands[0], DType::Bool)?;
            (1..arity).collect()
        }
        DTypeRule::Gathered => {
            operands[1] = cast(g, operands[1], DType::Int64)?;
            vec![0]
        }
        DTypeRule::Scattered => {
            operands[1] = cast(g, operands[1], DType::Int64)?;
            vec![0, 2]
        }
        _ => (0..arity).collect(),
    };
    if let Some(&first) = values.first() {
        let mut dtype = g.node(operands[first]).dtype;
        if !info.domain.contains(dtype) || b.u8() < 16 {
            let allowed: Vec<DType> =
                DType::ALL.iter().copied().filter(|&d| info.domain.contains(d)).collect();
            dtype = *allowed.get(b.below(allowed.len()))?;
        }
        for &k in &values {
            operands[k] = cast(g, operands[k], dtype)?;
        }
    }
    let attrs = attrs_for(b, info.attrs, &g.node(operands[0]).shape, op);
    g.add(op, attrs, &operands).ok()
}

/// Attributes of schema `kind` for an op whose (first) operand has `shape`: valid mostly, not
/// always (the op's rules reject the rest).
fn attrs_for(b: &mut Bytes, kind: AttrKind, shape: &[usize], op: OpKind) -> Attrs {
    let nd = shape.len();
    let mask = b.u8();
    let subset = |n: usize| -> kiln_ir::graph::Axes { (0..n).filter(|&k| bit(mask, k)).collect() };
    match kind {
        AttrKind::None => Attrs::None,
        AttrKind::DType => Attrs::DType { dtype: DType::ALL[b.below(DType::ALL.len())] },
        AttrKind::Shape => {
            let size = elements(shape);
            let mut target: Vec<usize> = if op == OpKind::Reshape {
                // A factorisation of the size into up to 3 extents.
                let rank = 1 + b.below(3);
                let mut dims = vec![1usize; rank];
                let (mut rest, mut p) = (size, 2);
                while rest > 1 {
                    while rest % p != 0 {
                        p += 1;
                    }
                    rest /= p;
                    dims[b.below(rank)] *= p;
                }
                if size == 0 {
                    dims[0] = 0;
                }
                dims
            } else {
                // Extents of 1 stretched, maybe a new leading axis.
                let mut s: Vec<usize> = shape
                    .iter()
                    .enumerate()
                    .map(|(k, &d)| if d == 1 && bit(mask, k) { 2 + b.below(2) } else { d })
                    .collect();
                if mask & 0x80 != 0 {
                    s.insert(0, 1 + b.below(3));
                }
                s
            };
            if mask & 0x40 != 0 && size == 1 && op == OpKind::Reshape {
                target.clear();
            }
            Attrs::Shape { shape: target.as_slice().into() }
        }
        AttrKind::Perm => {
            let mut left: Vec<usize> = (0..nd).collect();
            let mut perm = kiln_ir::graph::Axes::new();
            while !left.is_empty() {
                perm.push(left.remove(b.below(left.len())));
            }
            Attrs::Perm { perm }
        }
        AttrKind::Reduce => Attrs::Reduce { axes: subset(nd), keepdims: mask & 0x80 != 0 },
        AttrKind::Axes => {
            // expand_dims counts axes of its result; squeeze keeps to extents of 1.
            let axes = match op {
                OpKind::ExpandDims => subset(nd + 1),
                OpKind::Squeeze => (0..nd).filter(|&k| shape[k] == 1 && bit(mask, k)).collect(),
                // catch-all: any other op of `Axes` attributes takes any subset of its axes.
                _ => subset(nd),
            };
            Attrs::Axes { axes }
        }
        AttrKind::Axis => Attrs::Axis { axis: b.below(nd + 1) },
        AttrKind::Slice => Attrs::Slice {
            dims: shape
                .iter()
                .map(|&n| {
                    let step = [1, -1, 2, -2, 3][b.below(5)];
                    let bound = |v: u8| -> Option<isize> {
                        match v % 3 {
                            0 => None,
                            _ => Some(
                                (v as isize / 3) % (n as isize + 2) - (v as isize & 1) * n as isize,
                            ),
                        }
                    };
                    SliceDim::normalize(n, bound(b.u8()), bound(b.u8()), step)
                })
                .collect(),
        },
        AttrKind::Custom => Attrs::Custom { name: "fuzz".into() },
        AttrKind::Linalg => Attrs::Linalg { output: b.below(3) as u8, full_matrices: bit(mask, 0) },
        AttrKind::Philox => {
            // The three modes, or one the rules reject.
            let (per_call, words) = [(4, 1), (4, 2), (2, 2), (2, 1)][b.below(4)];
            Attrs::Philox { per_call, words }
        }
        AttrKind::TopK => {
            // k up to the axis's extent (nd + 1: an axis out of range, rejected by inference).
            let axis = b.below(nd + 1);
            let k = b.below(shape.get(axis).map_or(1, |&n| n + 1));
            Attrs::TopK { axis, k, largest: bit(mask, 1) }
        }
        AttrKind::Input | AttrKind::Const | AttrKind::Iota | AttrKind::Fft | AttrKind::RealFft => {
            Attrs::None
        }
    }
}

/// Whether the compiled host code computes node `n` bit for bit as the evaluator does, given
/// whether its inputs are: every op but the transcendental functions (libm, libmvec), float sums
/// (reassociated in a wider type), `copysign` (the sign of a NaN is not defined by compiled code)
/// and float scatter-adds (in another order); a node past one that is not exact is not compared.
fn exact(g: &Graph, n: &Node, inputs_exact: bool) -> bool {
    use OpKind::*;
    let float = n.inputs.first().map_or(n.dtype, |&i| g.node(i).dtype).is_inexact();
    inputs_exact
        && !matches!(
            n.op,
            Cbrt | Exp
                | Exp2
                | Expm1
                | Log
                | Log2
                | Log10
                | Log1p
                | Sin
                | Cos
                | Tan
                | Arcsin
                | Arccos
                | Arctan
                | Sinh
                | Cosh
                | Tanh
                | Arcsinh
                | Arccosh
                | Arctanh
                | Erf
                | Erfc
                | Erfinv
                | Gammaln
                | Digamma
                | Power
                | Arctan2
                | Hypot
                | MatMul
                | Fft
                | Rfft
                | Irfft
        )
        && !(float && matches!(n.op, Sum | CopySign | ScatterAdd))
}

/// Equal as the evaluator and the compiled code must agree: dtype, shape and every element bit
/// for bit, but any NaN equals any NaN.
pub fn same(a: &HostArray, b: &HostArray) -> bool {
    fn floats<T: Copy>(x: &[T], y: &[T], nan: impl Fn(T) -> bool, bits: impl Fn(T) -> u64) -> bool {
        x.iter()
            .zip(y)
            .all(|(&p, &q)| if nan(p) || nan(q) { nan(p) && nan(q) } else { bits(p) == bits(q) })
    }
    if a.dtype() != b.dtype() || a.shape() != b.shape() {
        return false;
    }
    match (a.data(), b.data()) {
        (Data::Float16(x), Data::Float16(y)) => {
            floats(x, y, |v| v.is_nan(), |v| v.to_bits() as u64)
        }
        (Data::BFloat16(x), Data::BFloat16(y)) => {
            floats(x, y, |v| v.is_nan(), |v| v.to_bits() as u64)
        }
        (Data::Float32(x), Data::Float32(y)) => {
            floats(x, y, |v| v.is_nan(), |v| v.to_bits() as u64)
        }
        (Data::Float64(x), Data::Float64(y)) => floats(x, y, |v| v.is_nan(), |v| v.to_bits()),
        (Data::Complex64(x), Data::Complex64(y)) => {
            floats(x, y, |v| v.re.is_nan(), |v| v.re.to_bits() as u64)
                && floats(x, y, |v| v.im.is_nan(), |v| v.im.to_bits() as u64)
        }
        (Data::Complex128(x), Data::Complex128(y)) => {
            floats(x, y, |v| v.re.is_nan(), |v| v.re.to_bits())
                && floats(x, y, |v| v.im.is_nan(), |v| v.im.to_bits())
        }
        (x, y) => x == y,
    }
}

/// `programs`: a program decoded by [`decode_program`] passes the verifier, runs in the reference
/// evaluator, compiles (`pipeline::compile`) and runs as compiled host code (kiln's default CPU
/// path, `HostRun::Compiled`); each output computed only by exact ops (see [`exact`]) equals the
/// evaluator's bit for bit, the others have its dtype and shape.
pub fn programs(data: &[u8]) {
    let Program { graph: g, inputs } = decode_program(data);
    let text = kiln_ir::text::print(&g);
    if let Err(e) = kiln_ir::verify::verify(&g) {
        panic!("a graph built by the type rules fails the verifier: {e}\n{text}");
    }
    let refs: Vec<&HostArray> = inputs.iter().collect();
    // The reference's value of every node.
    let mut all = g.clone();
    all.set_outputs((0..g.len()).map(|i| NodeId(i as u32)).collect());
    let values = kiln_ir::eval::evaluate(&all, &refs)
        .unwrap_or_else(|e| panic!("the evaluator fails on a verified graph: {e}\n{text}"));
    let mut exacts: Vec<bool> = Vec::with_capacity(g.len());
    for n in g.nodes() {
        let inputs_exact = n.inputs.iter().all(|i| exacts[i.index()]);
        exacts.push(exact(&g, n, inputs_exact));
    }
    let plan = kiln_compiler::pipeline::compile(&g, &kiln_compiler::pipeline::Options::from_env())
        .unwrap_or_else(|e| panic!("compile fails on a verified graph: {e}\n{text}"));
    let got = kiln_exec::cpu::run_plan(&plan, &refs, kiln_exec::cpu::HostRun::Compiled)
        .unwrap_or_else(|e| panic!("the compiled plan fails: {e}\n{text}"));
    assert_eq!(got.len(), g.outputs().len(), "one value per output");
    for (k, (&o, got)) in g.outputs().iter().zip(&got).enumerate() {
        let want = &values[o.index()];
        let ok = if exacts[o.index()] {
            same(want, got)
        } else {
            (want.dtype(), want.shape()) == (got.dtype(), got.shape())
        };
        assert!(
            ok,
            "output {k} ({}) of the compiled host code differs from the reference:\nwant {:?}\n got {:?}\n{text}",
            if exacts[o.index()] { "exact" } else { "type only" },
            want.data(),
            got.data()
        );
    }
}
