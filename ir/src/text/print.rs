//! The printer.

use std::fmt::Write;

use crate::dtype::{DType, DTypeKind};
use crate::graph::{Attrs, Graph, Literal, Node};

use super::{attr_names, type_string, HEADER, VERSION};

/// Prints a graph as text (see the [module docs](super) for the grammar). Deterministic; never
/// fails, even on a graph the verifier rejects (its attributes are printed as they are).
pub fn print(g: &Graph) -> String {
    let mut out = format!("{HEADER} {VERSION}\n");
    for (i, node) in g.nodes().iter().enumerate() {
        print_node(&mut out, i, node);
        out.push('\n');
    }
    out.push_str("return");
    for (k, o) in g.outputs().iter().enumerate() {
        out.push_str(if k == 0 { " " } else { ", " });
        let _ = write!(out, "{o}");
    }
    out.push('\n');
    out
}

fn print_node(out: &mut String, index: usize, node: &Node) {
    let _ = write!(out, "%{index} = {}", node.op.name());
    if !node.inputs.is_empty() {
        let ins: Vec<String> = node.inputs.iter().map(|i| i.to_string()).collect();
        let _ = write!(out, "({})", ins.join(", "));
    }
    let values = attr_values(&node.attrs, node.dtype);
    if !values.is_empty() {
        let names = attr_names(node.attrs.kind());
        debug_assert_eq!(names.len(), values.len());
        let fields: Vec<String> =
            names.iter().zip(&values).map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(out, " {{{}}}", fields.join(", "));
    }
    let _ = write!(out, " : {}", type_string(node.dtype, &node.shape));
}

/// The attribute values, in the order of [`attr_names`].
fn attr_values(attrs: &Attrs, dtype: DType) -> Vec<String> {
    match attrs {
        Attrs::None => vec![],
        Attrs::Input { index } => vec![index.to_string()],
        Attrs::Const { value } => vec![literal(*value, dtype)],
        Attrs::Iota { axis } | Attrs::Axis { axis } => vec![axis.to_string()],
        Attrs::DType { dtype } => vec![dtype.short_name().to_string()],
        Attrs::Shape { shape } => vec![list(shape)],
        Attrs::Perm { perm } => vec![list(perm)],
        Attrs::Reduce { axes, keepdims } => vec![list(axes), keepdims.to_string()],
        Attrs::Axes { axes } => vec![list(axes)],
        Attrs::Slice { dims } => vec![
            list(dims.iter().map(|d| d.start)),
            list(dims.iter().map(|d| d.step)),
            list(dims.iter().map(|d| d.len)),
        ],
        Attrs::Fft { axes, inverse, norm } => {
            vec![list(axes), inverse.to_string(), norm.name().to_string()]
        }
        Attrs::RealFft { axes, n, norm } => {
            vec![list(axes), n.to_string(), norm.name().to_string()]
        }
        Attrs::Linalg { output, full_matrices } => {
            vec![output.to_string(), full_matrices.to_string()]
        }
        Attrs::Custom { name } => vec![quote(name)],
        Attrs::TopK { axis, k, largest } => {
            vec![axis.to_string(), k.to_string(), largest.to_string()]
        }
        Attrs::Philox { per_call, words } => vec![per_call.to_string(), words.to_string()],
    }
}

fn list<T: ToString>(items: impl IntoIterator<Item = T>) -> String {
    let items: Vec<String> = items.into_iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(","))
}

/// A literal in the text of its node's dtype (see the module docs).
pub(super) fn literal(value: Literal, dtype: DType) -> String {
    match value {
        Literal::Bool(b) => b.to_string(),
        Literal::Int(i) => i.to_string(),
        Literal::UInt(u) => u.to_string(),
        Literal::Float(bits) => float(f64::from_bits(bits), dtype),
        Literal::Complex(re, im) => {
            format!("({}, {})", float(f64::from_bits(re), dtype), float(f64::from_bits(im), dtype))
        }
    }
}

/// A float as the shortest text that reads back exactly in the precision of `dtype` (`f32` text
/// for the dtypes of at most 32 bits, `f64` text otherwise).
fn float(x: f64, dtype: DType) -> String {
    if x.is_nan() {
        return "nan".to_string();
    }
    let narrow = dtype.kind() == DTypeKind::Float || dtype.kind() == DTypeKind::Complex;
    if narrow && dtype.real_dtype() != DType::Float64 {
        format!("{:?}", x as f32)
    } else {
        format!("{x:?}")
    }
}

/// A string in double quotes, escaped so that it stays on one line.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
