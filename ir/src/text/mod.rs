//! The textual IR: a versioned, deterministic printer and its parser (`parse(print(g)) == g`).
//!
//! One node per line, named `%N` after its index in the graph, then one `return` line:
//!
//! ```text
//! kiln.graph v1
//! %0 = input {index=0} : f32[1797,64]
//! %1 = const {value=2.5} : f32[]
//! %2 = broadcast_to(%1) {shape=[1797,64]} : f32[1797,64]
//! %3 = multiply(%0, %2) : f32[1797,64]
//! %4 = sum(%3) {axes=[0], keepdims=false} : f32[64]
//! return %4
//! ```
//!
//! # Grammar
//!
//! ```text
//! graph    := header line* return line*      (the lines after `return`: blank or comments)
//! header   := "kiln.graph" "v1"
//! line     := node | (blank) | comment
//! node     := ref "=" OPNAME inputs? attrs? ":" type
//! inputs   := "(" (ref ("," ref)*)? ")"
//! attrs    := "{" attr ("," attr)* "}"
//! attr     := NAME "=" value
//! value    := atom | STRING | "[" (value ("," value)*)? "]" | "(" value "," value ")"
//! atom     := NUMBER | NAME                  (e.g. 3, -2.5e-7, nan, inf, -inf, true, f32, ortho)
//! type     := DTYPE "[" (INT ("," INT)*)? "]"
//! return   := "return" (ref ("," ref)*)?
//! ref      := "%" INT
//! comment  := "//" to the end of the line
//! ```
//!
//! * `OPNAME` is an op's name in the op table ([`crate::ops::OpKind::name`]); `DTYPE` a short
//!   dtype name ([`crate::dtype::DType::short_name`]: `f32`, `i8` (= int8), `bf16`, `c64` ...).
//! * Node `%N` is the graph's N-th node: nodes are numbered 0, 1, 2, ... in order and use only
//!   earlier nodes. A line identical to an earlier one (the graph is hash-consed) is an error.
//! * The attributes an op takes are its table row's [`AttrKind`]; the printer writes them in
//!   the order of [`attr_names`], the parser takes them in any order, each exactly once:
//!   `input {index=N}`, `const {value=V}`, `iota {axis=N}`, `cast {dtype=f32}`,
//!   `{shape=[..]}`, `{perm=[..]}`, reductions `{axes=[..], keepdims=true|false}`,
//!   `{axes=[..]}`, `{axis=N}`, `slice {start=[..], step=[..], len=[..]}`,
//!   `fft {axes=[..], inverse=true|false, norm=backward|ortho|forward}`,
//!   `rfft`/`irfft {axes=[..], n=N, norm=..}`, `custom {name="..."}`,
//!   `label {name="..."}`.
//!   Ops without attributes print no braces, leaves no parentheses.
//! * A constant's value is written in its node's dtype: `true`/`false`, a decimal integer, a
//!   float (`f16`, `bf16` and `f32` as the shortest `f32` text that reads back exactly, `f64`
//!   likewise as `f64`; `nan`, `inf`, `-inf`, `-0.0`), or a complex `(re, im)` of two such floats.
//! * Strings are in double quotes; `\"`, `\\`, `\n`, `\r`, `\t` and `\u{HEX}` are escapes.
//!
//! The parser checks syntax and references only: it builds nodes as declared with
//! [`Graph::insert`], and [`crate::verify::verify`] checks their types.

mod lex;
mod parse;
mod print;

pub use parse::parse;
pub use print::print;

use crate::dtype::DType;
use crate::ops::AttrKind;

#[cfg(test)]
mod tests;

/// The first line of every text graph.
pub const HEADER: &str = "kiln.graph";
/// The format version written after [`HEADER`].
pub const VERSION: &str = "v1";

/// The attribute names of a schema, in the order the printer writes them.
pub fn attr_names(kind: AttrKind) -> &'static [&'static str] {
    match kind {
        AttrKind::None => &[],
        AttrKind::Input => &["index"],
        AttrKind::Const => &["value"],
        AttrKind::Iota | AttrKind::Axis => &["axis"],
        AttrKind::DType => &["dtype"],
        AttrKind::Shape => &["shape"],
        AttrKind::Perm => &["perm"],
        AttrKind::Reduce => &["axes", "keepdims"],
        AttrKind::Axes => &["axes"],
        AttrKind::Slice => &["start", "step", "len"],
        AttrKind::Fft => &["axes", "inverse", "norm"],
        AttrKind::RealFft => &["axes", "n", "norm"],
        AttrKind::Linalg => &["output", "full_matrices"],
        AttrKind::Custom => &["name"],
        AttrKind::TopK => &["axis", "k", "largest"],
        AttrKind::Philox => &["per_call", "words"],
    }
}

/// A type as the text IR writes it: `f32[2,3]`, `bool[]`.
pub fn type_string(dtype: DType, shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("{}[{}]", dtype.short_name(), dims.join(","))
}
