use num_complex::Complex64;
use smallvec::smallvec;

use super::{parse, print};
use crate::dtype::DType;
use crate::error::IrError;
use crate::graph::{Attrs, FftNorm, Graph, Literal, Node, NodeId, SliceDim};
use crate::ops::{AttrKind, OpKind};
use crate::verify::verify;

/// Prints `g`, checks the text is `expected`, parses it back to `g` and verifies it.
fn round_trip(g: &Graph, expected: &str) {
    let text = print(g);
    assert_eq!(text, expected);
    assert_eq!(parse(&text).unwrap(), *g);
    verify(g).unwrap();
}

#[test]
fn the_example_of_the_docs() {
    let mut g = Graph::new();
    let x = g.input(0, DType::Float32, &[1797, 64]);
    let c = g.constant(DType::Float32, Literal::float(DType::Float32, 2.5)).unwrap();
    let b = g.add(OpKind::BroadcastTo, Attrs::Shape { shape: smallvec![1797, 64] }, &[c]).unwrap();
    let m = g.add(OpKind::Mul, Attrs::None, &[x, b]).unwrap();
    let s =
        g.add(OpKind::Sum, Attrs::Reduce { axes: smallvec![0], keepdims: false }, &[m]).unwrap();
    g.push_output(s);
    round_trip(
        &g,
        "kiln.graph v1
%0 = input {index=0} : f32[1797,64]
%1 = const {value=2.5} : f32[]
%2 = broadcast_to(%1) {shape=[1797,64]} : f32[1797,64]
%3 = multiply(%0, %2) : f32[1797,64]
%4 = sum(%3) {axes=[0], keepdims=false} : f32[64]
return %4
",
    );
}

#[test]
fn every_attribute_kind() {
    let c64 = DType::Complex64;
    let mut g = Graph::new();
    let x = g.input(0, c64, &[4, 3]);
    let one = g.constant(c64, Literal::complex(c64, Complex64::new(1.5, -0.0))).unwrap();
    let i = g.iota(DType::Int32, &[4, 3], 1).unwrap();
    let ic = g.add(OpKind::Cast, Attrs::DType { dtype: c64 }, &[i]).unwrap();
    let a = g.add(OpKind::Add, Attrs::None, &[x, ic]).unwrap();
    let f = g
        .add(
            OpKind::Fft,
            Attrs::Fft { axes: smallvec![0], inverse: true, norm: FftNorm::Ortho },
            &[a],
        )
        .unwrap();
    let t = g.add(OpKind::Permute, Attrs::Perm { perm: smallvec![1, 0] }, &[f]).unwrap();
    let r = g.add(OpKind::Reshape, Attrs::Shape { shape: smallvec![12] }, &[t]).unwrap();
    let dims =
        smallvec![SliceDim::normalize(3, None, None, -1), SliceDim::normalize(4, Some(1), None, 2)];
    let sl = g.add(OpKind::Slice, Attrs::Slice { dims }, &[t]).unwrap();
    let e = g.add(OpKind::ExpandDims, Attrs::Axes { axes: smallvec![0] }, &[sl]).unwrap();
    let cat = g.add(OpKind::Concatenate, Attrs::Axis { axis: 0 }, &[e, e]).unwrap();
    let s = g
        .add(OpKind::Sum, Attrs::Reduce { axes: smallvec![0, 2], keepdims: true }, &[cat])
        .unwrap();
    let b = g.add(OpKind::BroadcastTo, Attrs::Shape { shape: smallvec![12] }, &[one]).unwrap();
    let m = g.add(OpKind::Mul, Attrs::None, &[r, b]).unwrap();
    let h = g
        .add(
            OpKind::Irfft,
            Attrs::RealFft { axes: smallvec![0, 1], n: 4, norm: FftNorm::Forward },
            &[x],
        )
        .unwrap();
    let k = g.insert(Node {
        op: OpKind::CustomKernel,
        attrs: Attrs::Custom { name: "my \"kernel\" \\ v2\n".into() },
        inputs: smallvec![m, s, h],
        dtype: DType::Float32,
        shape: smallvec![5],
    });
    g.set_outputs(vec![k, s]);
    round_trip(
        &g,
        r#"kiln.graph v1
%0 = input {index=0} : c64[4,3]
%1 = const {value=(1.5, -0.0)} : c64[]
%2 = iota {axis=1} : i32[4,3]
%3 = cast(%2) {dtype=c64} : c64[4,3]
%4 = add(%0, %3) : c64[4,3]
%5 = fft(%4) {axes=[0], inverse=true, norm=ortho} : c64[4,3]
%6 = permute(%5) {perm=[1,0]} : c64[3,4]
%7 = reshape(%6) {shape=[12]} : c64[12]
%8 = slice(%6) {start=[2,1], step=[-1,2], len=[3,2]} : c64[3,2]
%9 = expand_dims(%8) {axes=[0]} : c64[1,3,2]
%10 = concatenate(%9, %9) {axis=0} : c64[2,3,2]
%11 = sum(%10) {axes=[0,2], keepdims=true} : c64[1,3,1]
%12 = broadcast_to(%1) {shape=[12]} : c64[12]
%13 = multiply(%7, %12) : c64[12]
%14 = irfft(%0) {axes=[0,1], n=4, norm=forward} : f32[4,4]
%15 = custom(%13, %11, %14) {name="my \"kernel\" \\ v2\n"} : f32[5]
return %15, %11
"#,
    );
    let kinds: std::collections::HashSet<AttrKind> =
        g.nodes().iter().map(|n| n.attrs.kind()).collect();
    assert_eq!(kinds.len(), 14, "every AttrKind but {kinds:?}");
}

/// A value of each attribute schema (types are not checked by the printer or the parser).
fn some_attrs(kind: AttrKind) -> Attrs {
    match kind {
        AttrKind::None => Attrs::None,
        AttrKind::Input => Attrs::Input { index: 3 },
        AttrKind::Const => Attrs::Const { value: Literal::float(DType::Float32, 0.1) },
        AttrKind::Iota => Attrs::Iota { axis: 1 },
        AttrKind::DType => Attrs::DType { dtype: DType::BFloat16 },
        AttrKind::Shape => Attrs::Shape { shape: smallvec![0, 2] },
        AttrKind::Perm => Attrs::Perm { perm: smallvec![] },
        AttrKind::Reduce => Attrs::Reduce { axes: smallvec![1], keepdims: true },
        AttrKind::Axes => Attrs::Axes { axes: smallvec![0, 1, 2] },
        AttrKind::Axis => Attrs::Axis { axis: 2 },
        AttrKind::Slice => {
            Attrs::Slice { dims: smallvec![SliceDim { start: 0, step: -3, len: 0 }] }
        }
        AttrKind::Fft => {
            Attrs::Fft { axes: smallvec![0, 1], inverse: false, norm: FftNorm::Forward }
        }
        AttrKind::RealFft => {
            Attrs::RealFft { axes: smallvec![2, 0], n: 7, norm: FftNorm::Backward }
        }
        AttrKind::Linalg => Attrs::Linalg { output: 1, full_matrices: true },
        AttrKind::Custom => Attrs::Custom { name: String::new() },
        AttrKind::TopK => Attrs::TopK { axis: 1, k: 3, largest: true },
        AttrKind::Philox => Attrs::Philox { per_call: 2, words: 2 },
    }
}

#[test]
fn every_op_round_trips() {
    let mut g = Graph::new();
    let x = g.input(0, DType::Float32, &[2, 2]);
    for &op in OpKind::ALL {
        let inputs = if op.is_leaf() { smallvec![] } else { smallvec![x, x] };
        g.insert(Node {
            op,
            attrs: some_attrs(op.info().attrs),
            inputs,
            dtype: DType::Float32,
            shape: smallvec![2, 2],
        });
    }
    g.set_outputs(vec![NodeId(1), NodeId(0)]);
    let text = print(&g);
    assert_eq!(parse(&text).unwrap(), g);
    assert!(
        text.contains("\n%1 = input {index=3} : f32[2,2]\n%2 = const {value=0.1} : f32[2,2]\n"),
        "{text}"
    );
    assert!(text.contains("\n%3 = iota {axis=1} : f32[2,2]\n"), "{text}");
    assert!(text.contains("\n%4 = negative(%0, %0) : f32[2,2]\n"), "{text}");
    for line in [
        " = cast(%0, %0) {dtype=bf16} : f32[2,2]\n",
        " = slice(%0, %0) {start=[0], step=[-3], len=[0]} : f32[2,2]\n",
        " = permute(%0, %0) {perm=[]} : f32[2,2]\n",
        " = fft(%0, %0) {axes=[0,1], inverse=false, norm=forward} : f32[2,2]\n",
        " = rfft(%0, %0) {axes=[2,0], n=7, norm=backward} : f32[2,2]\n",
        " = custom(%0, %0) {name=\"\"} : f32[2,2]\n",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
}

/// The text of a constant of `dtype` with `value`, and the value read back from it.
fn const_text(dtype: DType, value: Literal) -> String {
    let mut g = Graph::new();
    g.constant(dtype, value).unwrap();
    let text = print(&g);
    assert_eq!(parse(&text).unwrap(), g);
    let line = text.lines().nth(1).unwrap();
    let v = line.strip_prefix("%0 = const {value=").unwrap();
    v[..v.rfind("} : ").unwrap()].to_string()
}

#[test]
fn literals() {
    use DType::*;
    let f = Literal::float;
    assert_eq!(const_text(Bool, Literal::Bool(true)), "true");
    assert_eq!(const_text(Int8, Literal::Int(-128)), "-128");
    assert_eq!(const_text(Int64, Literal::Int(i64::MIN)), "-9223372036854775808");
    assert_eq!(const_text(UInt64, Literal::UInt(u64::MAX)), "18446744073709551615");
    assert_eq!(const_text(Float32, f(Float32, 0.1)), "0.1");
    assert_eq!(const_text(Float64, f(Float64, 0.1)), "0.1");
    assert_eq!(const_text(Float64, f(Float64, 0.1f32 as f64)), "0.10000000149011612");
    assert_eq!(const_text(Float16, f(Float16, 0.1)), "0.099975586");
    assert_eq!(const_text(BFloat16, f(BFloat16, 0.1)), "0.100097656");
    assert_eq!(const_text(Float16, f(Float16, 65504.0)), "65504.0");
    assert_eq!(const_text(Float16, f(Float16, 1e6)), "inf");
    assert_eq!(const_text(Float32, f(Float32, -0.0)), "-0.0");
    assert_eq!(const_text(Float32, f(Float32, f64::NAN)), "nan");
    assert_eq!(const_text(Float64, f(Float64, f64::NEG_INFINITY)), "-inf");
    assert_eq!(const_text(Float32, f(Float32, 1e-45)), "1e-45");
    assert_eq!(const_text(Float64, f(Float64, 1e300)), "1e300");
    assert_eq!(const_text(Float64, f(Float64, 5e-324)), "5e-324");
    let z = Literal::complex(Complex128, num_complex::Complex64::new(f64::NAN, -1e-7));
    assert_eq!(const_text(Complex128, z), "(nan, -1e-7)");
    let z = Literal::complex(Complex64, num_complex::Complex64::new(1.0 / 3.0, f64::INFINITY));
    assert_eq!(const_text(Complex64, z), "(0.33333334, inf)");
}

#[test]
fn comments_blank_lines_and_free_spacing() {
    let text = "
// a comment before the header
kiln.graph v1   // trailing comment

%0=input{index=0}:f32[3]
   %1 = negative ( %0 ) : f32 [ 3 ]
%2 = custom(%1) {name=\"a//b\"} : f32[3]   // `//` in a string is not a comment
// return is last
return %1,%0, %2
// nothing but comments after it

";
    let g = parse(text).unwrap();
    assert_eq!(g.len(), 3);
    assert_eq!(g.outputs(), &[NodeId(1), NodeId(0), NodeId(2)]);
    assert_eq!(g.node(NodeId(2)).attrs, Attrs::Custom { name: "a//b".into() });
    let printed = print(&g);
    assert_eq!(parse(&printed).unwrap(), g);
    assert!(printed.ends_with("return %1, %0, %2\n"));

    let g = parse("kiln.graph v1\r\n%0 = input {keepdims=true} : f32[]\r\nreturn\r\n");
    assert!(g.is_err());
    let g = parse("kiln.graph v1\r\n%0 = input {index=0} : f32[]\r\nreturn\r\n").unwrap();
    assert_eq!(g.outputs(), &[]);
    assert_eq!(print(&g), "kiln.graph v1\n%0 = input {index=0} : f32[]\nreturn\n");
}

#[test]
fn attributes_in_any_order_and_unchecked_types() {
    let g = parse("kiln.graph v1\n%0 = input {index=0} : f32[2,3]\n%1 = sum(%0) {keepdims=true, axes=[1]} : f32[2,1]\nreturn %1\n").unwrap();
    assert_eq!(g.node(NodeId(1)).attrs, Attrs::Reduce { axes: smallvec![1], keepdims: true });
    verify(&g).unwrap();
    // The parser takes declared types as they are; the verifier judges them.
    let g = parse("kiln.graph v1\n%0 = input {index=0} : f32[2,3]\n%1 = sum(%0) {axes=[1], keepdims=true} : f64[9]\nreturn %1\n").unwrap();
    assert!(matches!(verify(&g), Err(IrError::Verify { node: 1, .. })));
    let g = parse("kiln.graph v1\n%0 = const {value=300} : i8[]\nreturn\n").unwrap();
    assert!(matches!(verify(&g), Err(IrError::Verify { node: 0, .. })));
}

/// The (line, column, message) of the parse error of `text`.
fn parse_err(text: &str) -> (usize, usize, String) {
    match parse(text) {
        Err(IrError::Parse { line, column, message }) => (line, column, message),
        other => panic!("expected a parse error for {text:?}, got {other:?}"),
    }
}

/// Checks the error of a graph whose second line is `node` (after a valid `%0 = input`).
fn node_err(node: &str) -> (usize, usize, String) {
    parse_err(&format!("kiln.graph v1\n%0 = input {{index=0}} : f32[2]\n{node}\nreturn\n"))
}

#[test]
fn header_errors() {
    let (l, c, m) = parse_err("");
    assert_eq!((l, c), (1, 1));
    assert!(m.contains("expected the header `kiln.graph v1`"), "{m}");
    let (l, c, m) = parse_err("\n// only a comment\n");
    assert_eq!((l, c), (1, 1), "{m}");
    let (l, c, m) = parse_err("%0 = input {index=0} : f32[2]\nreturn\n");
    assert_eq!((l, c, m.as_str()), (1, 1, "expected the header `kiln.graph v1`, found `%0`"));
    let (l, c, m) = parse_err("\nkiln.graph v2\nreturn\n");
    assert_eq!((l, c, m.as_str()), (2, 12, "unsupported version `v2` (this reader knows v1)"));
    let (l, c, m) = parse_err("kiln.graph\nreturn\n");
    assert_eq!(
        (l, c, m.as_str()),
        (1, 11, "expected a version after `kiln.graph`, found the end of the line")
    );
    let (l, c, m) = parse_err("kiln.graph v1 extra\nreturn\n");
    assert_eq!((l, c, m.as_str()), (1, 15, "expected the end of the line, found `extra`"));
}

#[test]
fn return_errors() {
    let (l, c, m) = parse_err("kiln.graph v1\n%0 = input {index=0} : f32[2]\n");
    assert_eq!((l, c, m.as_str()), (3, 1, "missing the `return` line at the end"));
    let (l, c, m) = parse_err("kiln.graph v1\n%0 = input {index=0} : f32[2]\nreturn %0, %1\n");
    assert_eq!(
        (l, c, m.as_str()),
        (3, 12, "%1 is used before it is defined (there are 1 nodes so far)")
    );
    let (l, c, m) = parse_err("kiln.graph v1\nreturn\n%0 = input {index=0} : f32[2]\n");
    assert_eq!((l, c, m.as_str()), (3, 1, "nothing but comments may follow the `return` line"));
    let (l, c, m) = parse_err("kiln.graph v1\nreturn %0 %0\n");
    assert_eq!((l, c), (2, 8), "{m}");
    let (l, c, m) = parse_err("kiln.graph v1\n%0 = input {index=0} : f32[2]\nreturn %0 %0\n");
    assert_eq!((l, c, m.as_str()), (3, 11, "expected the end of the line, found `%0`"));
}

#[test]
fn node_errors() {
    assert_eq!(node_err("%1 = frobnicate(%0) : f32[2]"), (3, 6, "unknown op `frobnicate`".into()));
    assert_eq!(node_err("%1 = negative(%0) : f33[2]"), (3, 21, "unknown dtype `f33`".into()));
    assert_eq!(
        node_err("%1 = negative(%0) : float32[2]"),
        (3, 21, "unknown dtype `float32`".into())
    );
    assert_eq!(
        node_err("%1 = negative(%1) : f32[2]"),
        (3, 15, "%1 is used before it is defined (there are 1 nodes so far)".into())
    );
    assert_eq!(
        node_err("%1 = add(%0, %5) : f32[2]"),
        (3, 14, "%5 is used before it is defined (there are 1 nodes so far)".into())
    );
    assert_eq!(
        node_err("%2 = negative(%0) : f32[2]"),
        (3, 1, "node numbered out of order: expected %1, found %2".into())
    );
    assert_eq!(
        node_err("%0 = negative(%0) : f32[2]"),
        (3, 1, "node numbered out of order: expected %1, found %0".into())
    );
    assert_eq!(
        node_err("%1 = input {index=0} : f32[2]"),
        (3, 1, "duplicate of %0: identical nodes are one node".into())
    );
    assert_eq!(
        node_err("= negative(%0) : f32[2]"),
        (3, 1, "expected a node `%1 = ...` or `return`, found `=`".into())
    );
    assert_eq!(
        node_err("%1 negative(%0) : f32[2]"),
        (3, 4, "expected `=`, found `negative`".into())
    );
    assert_eq!(
        node_err("%1 = negative(%0 : f32[2]"),
        (3, 18, "expected `,` or `)`, found `:`".into())
    );
    assert_eq!(
        node_err("%1 = negative(%0)"),
        (3, 18, "expected `:`, found the end of the line".into())
    );
    assert_eq!(
        node_err("%1 = negative(%0) : f32"),
        (3, 24, "expected a shape `[d0,d1,...]`, found the end of the line".into())
    );
    assert_eq!(
        node_err("%1 = negative(%0) : f32[2,x]"),
        (3, 27, "expected an integer (usize), found `x`".into())
    );
    assert_eq!(
        node_err("%1 = negative(%0) : f32[-2]"),
        (3, 25, "expected an integer (usize), found `-2`".into())
    );
    assert_eq!(
        node_err("%1 = negative(%0) : f32[2] $"),
        (3, 28, "unexpected character '$'".into())
    );
    assert_eq!(
        node_err("%1 = negative(%) : f32[2]"),
        (3, 15, "expected a node number after `%`".into())
    );
    assert_eq!(
        node_err("%99999999999 = negative(%0) : f32[2]"),
        (3, 1, "node number %99999999999 is too large".into())
    );
}

#[test]
fn attribute_errors() {
    assert_eq!(
        node_err("%1 = negative(%0) {axis=0} : f32[2]"),
        (3, 19, "`negative` takes no attributes".into())
    );
    assert_eq!(
        node_err("%1 = sum(%0) : f32[]"),
        (3, 14, "expected the attributes {axes, keepdims} of `sum`, found `:`".into())
    );
    assert_eq!(
        node_err("%1 = sum(%0) {axes=[0], keepdim=false} : f32[]"),
        (3, 25, "unknown attribute `keepdim` of `sum` (it takes axes, keepdims)".into())
    );
    assert_eq!(
        node_err("%1 = sum(%0) {axes=[0], axes=[0]} : f32[]"),
        (3, 25, "attribute `axes` given twice".into())
    );
    assert_eq!(
        node_err("%1 = sum(%0) {axes=[0]} : f32[]"),
        (3, 14, "missing attribute `keepdims` of `sum`".into())
    );
    assert_eq!(
        node_err("%1 = sum(%0) {axes=[0], keepdims=1} : f32[]"),
        (3, 34, "expected true or false, found `1`".into())
    );
    assert_eq!(
        node_err("%1 = sum(%0) {axes=0, keepdims=true} : f32[]"),
        (3, 20, "expected a list `[..]`, found `0`".into())
    );
    assert_eq!(
        node_err("%1 = sum(%0) {axes=[0] keepdims=true} : f32[]"),
        (3, 24, "expected `,` or `}`, found `keepdims`".into())
    );
    assert_eq!(
        node_err("%1 = sum(%0) {axes=[0,], keepdims=true} : f32[]"),
        (3, 23, "expected a value, found `]`".into())
    );
    assert_eq!(
        node_err("%1 = cast(%0) {dtype=float64} : f64[2]"),
        (3, 22, "unknown dtype `float64`".into())
    );
    assert_eq!(
        node_err("%1 = fft(%0) {axes=[0], inverse=false, norm=none} : c64[2]"),
        (3, 45, "expected backward, ortho or forward, found `none`".into())
    );
    assert_eq!(
        node_err("%1 = slice(%0) {start=[0], step=[1,1], len=[2]} : f32[2]"),
        (3, 23, "`start`, `step` and `len` must have one entry per axis each".into())
    );
    assert_eq!(
        node_err("%1 = custom(%0) {name=k} : f32[2]"),
        (3, 23, "expected a string, found `k`".into())
    );
    assert_eq!(
        node_err("%1 = custom(%0) {name=\"k} : f32[2]"),
        (3, 23, "unterminated string".into())
    );
    assert_eq!(
        node_err("%1 = custom(%0) {name=\"a\\qb\"} : f32[2]"),
        (3, 25, "unknown escape in string".into())
    );
    assert_eq!(
        node_err("%1 = input {index=-1} : f32[2]"),
        (3, 19, "expected an integer (u32), found `-1`".into())
    );
}

#[test]
fn literal_errors() {
    assert_eq!(
        node_err("%1 = const {value=2.5} : i32[]"),
        (3, 19, "expected an integer (i64), found `2.5`".into())
    );
    assert_eq!(
        node_err("%1 = const {value=-1} : u8[]"),
        (3, 19, "expected an integer (u64), found `-1`".into())
    );
    assert_eq!(
        node_err("%1 = const {value=99999999999999999999} : i64[]"),
        (3, 19, "expected an integer (i64), found `99999999999999999999`".into())
    );
    assert_eq!(
        node_err("%1 = const {value=1} : bool[]"),
        (3, 19, "expected true or false, found `1`".into())
    );
    assert_eq!(
        node_err("%1 = const {value=true} : f32[]"),
        (3, 19, "expected a f32 number, found `true`".into())
    );
    assert_eq!(
        node_err("%1 = const {value=1.0} : c64[]"),
        (3, 19, "expected a complex `(re, im)`, found `1.0`".into())
    );
    assert_eq!(
        node_err("%1 = const {value=(1.0, x)} : c128[]"),
        (3, 25, "expected a c128 number, found `x`".into())
    );
    assert_eq!(
        node_err("%1 = const {value=(1.0 2.0)} : c64[]"),
        (3, 24, "expected `,`, found number `2.0`".into())
    );
    // Values are read in the node's dtype: `0.1` is the f32 nearest to 0.1, then rounded to f16.
    let g = parse(
        "kiln.graph v1\n%0 = const {value=0.1} : f16[]\n%1 = const {value=1} : f64[]\nreturn\n",
    )
    .unwrap();
    assert_eq!(
        g.node(NodeId(0)).attrs,
        Attrs::Const { value: Literal::float(DType::Float16, 0.1) }
    );
    assert_eq!(
        g.node(NodeId(1)).attrs,
        Attrs::Const { value: Literal::float(DType::Float64, 1.0) }
    );
}

mod property {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    use super::*;
    use crate::ops::{Arity, OpClass};

    /// A leaf: (kind selector, dtype index, shape, and random bits for values and axes).
    #[derive(Clone, Debug)]
    struct Leaf {
        kind: u8,
        dtype: usize,
        shape: Vec<usize>,
        bits: [u64; 3],
    }

    #[derive(Clone, Debug)]
    struct Recipe {
        leaves: Vec<Leaf>,
        /// (op family, random bits).
        steps: Vec<(u8, u64)>,
        outputs: Vec<u64>,
    }

    fn recipe() -> impl Strategy<Value = Recipe> {
        let leaf = (
            any::<u8>(),
            0..DType::ALL.len(),
            prop::collection::vec(0usize..4, 0..4),
            any::<[u64; 3]>(),
        )
            .prop_map(|(kind, dtype, shape, bits)| Leaf { kind, dtype, shape, bits });
        (
            prop::collection::vec(leaf, 1..6),
            prop::collection::vec((any::<u8>(), any::<u64>()), 0..40),
            prop::collection::vec(any::<u64>(), 0..4),
        )
            .prop_map(|(leaves, steps, outputs)| Recipe { leaves, steps, outputs })
    }

    /// splitmix64: more random choices from one seed.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(state: &mut u64, n: usize) -> usize {
        (next(state) % n.max(1) as u64) as usize
    }

    /// A float from a few special values and several random distributions.
    fn float_of(sel: u64, bits: u64) -> f64 {
        match sel % 12 {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -0.0,
            4 => 0.0,
            5 => f64::from_bits(bits),
            6 => f32::from_bits(bits as u32) as f64,
            7 => half::f16::from_bits(bits as u16).to_f64(),
            8 => half::bf16::from_bits(bits as u16).to_f64(),
            9 => (bits as i64 as f64) / 1e3,
            10 => (bits % 4096) as f64 / 8.0 - 256.0,
            _ => f64::from_bits(bits & 0x800F_FFFF_FFFF_FFFF),
        }
    }

    fn literal_of(dtype: DType, b: [u64; 3]) -> Literal {
        use crate::dtype::DTypeKind as K;
        match dtype.kind() {
            K::Bool => Literal::Bool(b[0] & 1 == 1),
            K::SignedInt => Literal::from_i128(dtype, b[0] as i64 as i128),
            K::UnsignedInt => Literal::from_i128(dtype, b[0] as i128),
            K::Float => Literal::float(dtype, float_of(b[2], b[0])),
            K::Complex => Literal::complex(
                dtype,
                Complex64::new(float_of(b[2], b[0]), float_of(b[2] >> 8, b[1])),
            ),
        }
    }

    fn add_leaf(g: &mut Graph, leaf: &Leaf) {
        let dtype = DType::ALL[leaf.dtype];
        match leaf.kind % 3 {
            0 => {
                g.input((leaf.bits[0] % 4) as u32, dtype, &leaf.shape);
            }
            1 => {
                g.constant(dtype, literal_of(dtype, leaf.bits)).unwrap();
            }
            _ => {
                let dtype = if dtype == DType::Bool { DType::Int32 } else { dtype };
                let mut shape = leaf.shape.clone();
                if shape.is_empty() {
                    shape.push(2);
                }
                g.iota(dtype, &shape, leaf.bits[0] as usize % shape.len()).unwrap();
            }
        }
    }

    fn ops_where(f: impl Fn(OpKind) -> bool) -> Vec<OpKind> {
        OpKind::ALL.iter().copied().filter(|&op| f(op)).collect()
    }

    /// Nodes of `g` for which `f` holds, the first choice being `x`'s own kind.
    fn pick(g: &Graph, s: &mut u64, f: impl Fn(&Node) -> bool) -> Option<NodeId> {
        let c: Vec<NodeId> =
            (0..g.len()).map(|i| NodeId(i as u32)).filter(|&i| f(g.node(i))).collect();
        (!c.is_empty()).then(|| c[below(s, c.len())])
    }

    fn random_axes(s: &mut u64, rank: usize) -> smallvec::SmallVec<[usize; 4]> {
        let mask = next(s);
        (0..rank).filter(|i| mask >> i & 1 == 1).collect()
    }

    /// Applies one random op to a random node through `Graph::add` (the rules may refuse it).
    fn step(g: &mut Graph, family: u8, seed: u64) {
        let s = &mut { seed };
        let x = NodeId(below(s, g.len()) as u32);
        let (dtype, shape) = (g.node(x).dtype, g.node(x).shape.clone());
        let rank = shape.len();
        let ewise = |n: usize| {
            ops_where(|op| {
                op.is_elementwise()
                    && op != OpKind::Cast
                    && op != OpKind::Where
                    && op.info().arity == Arity::Fixed(n)
                    && op.info().domain.contains(dtype)
            })
        };
        let like_x = |n: &Node| n.dtype == dtype && n.shape == shape;
        let _ = match family % 20 {
            0 | 1 => {
                let ops = ewise(1);
                g.add(ops[below(s, ops.len())], Attrs::None, &[x])
            }
            2 | 3 => {
                let ops = ewise(2);
                let y = pick(g, s, like_x).unwrap();
                if ops.is_empty() {
                    return;
                }
                g.add(ops[below(s, ops.len())], Attrs::None, &[x, y])
            }
            4 => {
                let cond = match pick(g, s, |n| n.dtype == DType::Bool && n.shape == shape) {
                    Some(c) => c,
                    None => g.add(OpKind::Cast, Attrs::DType { dtype: DType::Bool }, &[x]).unwrap(),
                };
                let y = pick(g, s, like_x).unwrap();
                g.add(OpKind::Where, Attrs::None, &[cond, x, y])
            }
            5 => g.add(OpKind::Cast, Attrs::DType { dtype: DType::ALL[below(s, 15)] }, &[x]),
            6 => {
                let ops = ops_where(|op| op.is_reduction());
                let op = ops[below(s, ops.len())];
                let axes = if matches!(op, OpKind::ArgMax | OpKind::ArgMin) {
                    if rank == 0 {
                        return;
                    }
                    smallvec![below(s, rank)]
                } else {
                    random_axes(s, rank)
                };
                g.add(op, Attrs::Reduce { axes, keepdims: next(s) & 1 == 1 }, &[x])
            }
            7 => {
                let mut perm: smallvec::SmallVec<[usize; 4]> = (0..rank).collect();
                for i in (1..rank).rev() {
                    perm.swap(i, below(s, i + 1));
                }
                g.add(OpKind::Permute, Attrs::Perm { perm }, &[x])
            }
            8 => {
                let shape: crate::shape::Shape = match below(s, 3) {
                    0 => smallvec![shape.iter().product()],
                    1 => shape.iter().rev().copied().collect(),
                    _ => {
                        let mut t = shape.clone();
                        t.insert(below(s, rank + 1), 1);
                        t
                    }
                };
                g.add(OpKind::Reshape, Attrs::Shape { shape }, &[x])
            }
            9 => {
                let dims = shape
                    .iter()
                    .map(|&n| {
                        let step = [-3, -2, -1, 1, 2, 3][below(s, 6)];
                        let mut bound = || {
                            let b = below(s, 2 * n + 6) as isize - n as isize - 3;
                            (next(s) & 3 != 0).then_some(b)
                        };
                        let (start, stop) = (bound(), bound());
                        SliceDim::normalize(n, start, stop, step)
                    })
                    .collect();
                g.add(OpKind::Slice, Attrs::Slice { dims }, &[x])
            }
            10 => {
                let mut to: crate::shape::Shape = (0..below(s, 3)).map(|_| below(s, 4)).collect();
                to.extend(shape.iter().map(|&d| if d == 1 { below(s, 4) } else { d }));
                g.add(OpKind::BroadcastTo, Attrs::Shape { shape: to }, &[x])
            }
            11 => {
                let new = 1 + below(s, 2);
                let mut axes = random_axes(s, rank + new);
                axes.truncate(new);
                g.add(OpKind::ExpandDims, Attrs::Axes { axes }, &[x])
            }
            12 => {
                let axes = random_axes(s, rank).into_iter().filter(|&a| shape[a] == 1).collect();
                g.add(OpKind::Squeeze, Attrs::Axes { axes }, &[x])
            }
            13 => g.add(OpKind::Flip, Attrs::Axes { axes: random_axes(s, rank) }, &[x]),
            14 => {
                let stack = next(s) & 1 == 1;
                let axis = below(s, rank + stack as usize);
                let mut inputs = vec![x];
                for _ in 0..below(s, 3) {
                    let y = pick(g, s, |n| {
                        n.dtype == dtype
                            && n.shape.len() == rank
                            && (0..rank).all(|i| n.shape[i] == shape[i] || (!stack && i == axis))
                    });
                    inputs.extend(y);
                }
                let op = if stack { OpKind::Stack } else { OpKind::Concatenate };
                g.add(op, Attrs::Axis { axis }, &inputs)
            }
            15 => {
                if rank < 2 {
                    return;
                }
                let mut perm: smallvec::SmallVec<[usize; 4]> = (0..rank).collect();
                perm.swap(rank - 1, rank - 2);
                let t = g.add(OpKind::Permute, Attrs::Perm { perm }, &[x]).unwrap();
                g.add(OpKind::MatMul, Attrs::None, &[x, t])
            }
            16 => {
                let z = if dtype.is_complex() {
                    x
                } else {
                    let c = [DType::Complex64, DType::Complex128][below(s, 2)];
                    g.add(OpKind::Cast, Attrs::DType { dtype: c }, &[x]).unwrap()
                };
                if rank == 0 {
                    return;
                }
                let norm = FftNorm::ALL[below(s, 3)];
                let mut axes = random_axes(s, rank);
                if axes.is_empty() {
                    axes.push(below(s, rank));
                }
                match below(s, 3) {
                    0 => g.add(
                        OpKind::Fft,
                        Attrs::Fft { axes, inverse: next(s) & 1 == 1, norm },
                        &[z],
                    ),
                    // irfft of the half spectrum: n is 2(m-1) or 2(m-1)+1 for m terms.
                    1 => {
                        let last = axes.remove(below(s, axes.len()));
                        axes.push(last);
                        let n = (2 * shape[last]).saturating_sub(2) + below(s, 2);
                        g.add(OpKind::Irfft, Attrs::RealFft { axes, n, norm }, &[z])
                    }
                    // rfft of the real part.
                    _ => {
                        let last = axes.remove(below(s, axes.len()));
                        axes.push(last);
                        let re = g.add(OpKind::Real, Attrs::None, &[z]).unwrap();
                        g.add(OpKind::Rfft, Attrs::RealFft { axes, n: shape[last], norm }, &[re])
                    }
                }
            }
            17 => {
                let name = ["squared_diff", "l2norm", "a \"quoted\" name"][below(s, 3)].to_string();
                g.add(OpKind::Label, Attrs::Custom { name }, &[x])
            }
            18 => {
                let idx = g.add(OpKind::Cast, Attrs::DType { dtype: DType::Int64 }, &[x]).unwrap();
                let a = NodeId(below(s, g.len()) as u32);
                g.add(OpKind::Take, Attrs::None, &[a, idx])
            }
            _ => {
                let alphabet = [
                    'a', 'Z', '_', ' ', '"', '\\', '\n', '\t', '\u{1}', 'é', '{', '}', '%', '/',
                    '文',
                ];
                let name: String =
                    (0..below(s, 8)).map(|_| alphabet[below(s, alphabet.len())]).collect();
                let y = NodeId(below(s, g.len()) as u32);
                let out_shape: crate::shape::Shape =
                    (0..below(s, 3)).map(|_| below(s, 5)).collect();
                Ok(g.insert(Node {
                    op: OpKind::CustomKernel,
                    attrs: Attrs::Custom { name },
                    inputs: smallvec![x, y],
                    dtype: DType::ALL[below(s, 15)],
                    shape: out_shape,
                }))
            }
        };
    }

    fn build(r: &Recipe) -> Graph {
        let mut g = Graph::new();
        for leaf in &r.leaves {
            add_leaf(&mut g, leaf);
        }
        for &(family, seed) in &r.steps {
            step(&mut g, family, seed);
        }
        let n = g.len() as u64;
        g.set_outputs(r.outputs.iter().map(|&o| NodeId((o % n) as u32)).collect());
        g
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases.max(256), ..ProptestConfig::default() })]

        #[test]
        fn printed_graphs_parse_back_and_verify(r in recipe()) {
            let g = build(&r);
            prop_assert!(verify(&g).is_ok(), "{:?}", verify(&g));
            let text = print(&g);
            prop_assert_eq!(text.lines().count(), g.len() + 2);
            let back = parse(&text);
            prop_assert!(back.is_ok(), "{:?}\n{}", back, text);
            prop_assert_eq!(back.unwrap(), g, "{}", text);
        }

        #[test]
        fn constants_of_every_dtype_round_trip(dtype in 0..DType::ALL.len(), bits in any::<[u64; 3]>()) {
            let dtype = DType::ALL[dtype];
            let mut g = Graph::new();
            let c = g.constant(dtype, literal_of(dtype, bits)).unwrap();
            g.push_output(c);
            prop_assert!(verify(&g).is_ok());
            let text = print(&g);
            prop_assert_eq!(parse(&text).unwrap(), g, "{}", text);
        }
    }

    #[test]
    fn the_generator_reaches_every_op_class() {
        let mut classes = std::collections::HashSet::new();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        for _ in 0..64 {
            let r = recipe().new_tree(&mut runner).unwrap().current();
            for n in build(&r).nodes() {
                classes.insert(n.op.class());
            }
        }
        for c in [
            OpClass::Leaf,
            OpClass::Elementwise,
            OpClass::Reduce,
            OpClass::View,
            OpClass::Gather,
            OpClass::Copy,
            OpClass::Vendor,
            OpClass::Custom,
        ] {
            assert!(classes.contains(&c), "{c:?} never generated");
        }
    }
}

#[test]
fn shapes_of_more_elements_than_a_usize_counts_are_parse_errors() {
    // Found by the `ir_text` fuzz target: the verifier's count of a reshape's elements overflowed.
    let big = "[4294967296,4294967296,2]";
    let (l, c, m) = node_err(&format!("%1 = reshape(%0) {{shape={big}}} : f32[2]"));
    assert_eq!((l, c, m.as_str()), (3, 25, "a shape of more elements than a usize counts"));
    let (l, c, m) = node_err(&format!("%1 = negative(%0) : f32{big}"));
    assert_eq!((l, c, m.as_str()), (3, 24, "a shape of more elements than a usize counts"));
    // Counted exactly: 2^32 * 2^31 fits.
    let g = parse(&format!(
        "kiln.graph v1\n%0 = input {{index=0}} : f32[2]\n%1 = reshape(%0) {{shape=[4294967296,2147483648]}} : f32[4294967296,2147483648]\nreturn %1\n"
    ))
    .unwrap();
    assert!(crate::verify::verify(&g).is_err());
}

#[test]
fn values_nested_too_deep_are_parse_errors() {
    let deep =
        format!("%1 = reshape(%0) {{shape={}2{}}} : f32[2]", "[".repeat(10000), "]".repeat(10000));
    let (_, _, m) = node_err(&deep);
    assert_eq!(m, "values nested more than 32 deep");
}
