//! The parser: lines of tokens into a [`Graph`], nodes inserted as declared.

use num_complex::Complex64;
use smallvec::SmallVec;

use crate::dtype::{parse_short_name, DType, DTypeKind};
use crate::error::Result;
use crate::graph::{Attrs, FftNorm, Graph, Literal, Node, NodeId, SliceDim};
use crate::ops::{AttrKind, OpKind};
use crate::IrError;

use super::lex::{err, lex_line, Spanned, Tok};
use super::{attr_names, HEADER, VERSION};

/// Parses the text [`super::print`] writes (grammar in the [module docs](super)). Every error is
/// an [`IrError::Parse`] with the line and column where it was found.
pub fn parse(s: &str) -> Result<Graph> {
    let mut g = Graph::new();
    let mut seen_header = false;
    let mut outputs: Option<Vec<NodeId>> = None;
    let mut last_line = 0;
    for (k, text) in s.lines().enumerate() {
        let line = k + 1;
        last_line = line;
        let (toks, end) = lex_line(text, line)?;
        if toks.is_empty() {
            continue;
        }
        let mut c = Cursor { toks, pos: 0, line, end };
        if !seen_header {
            c.header()?;
            seen_header = true;
        } else if outputs.is_some() {
            return Err(c.error("nothing but comments may follow the `return` line"));
        } else if c.peek_name() == Some("return") {
            outputs = Some(c.ret(g.len())?);
        } else {
            c.node(&mut g)?;
        }
        c.finish()?;
    }
    if !seen_header {
        return Err(err(1, 1, format!("expected the header `{HEADER} {VERSION}`, found no text")));
    }
    let Some(outputs) = outputs else {
        return Err(err(last_line + 1, 1, "missing the `return` line at the end"));
    };
    g.set_outputs(outputs);
    Ok(g)
}

/// Deepest nesting of attribute values (lists and pairs); the attributes of the op table nest 1.
const MAX_VALUE_DEPTH: usize = 32;

/// An attribute value before it is read as its attribute's type.
#[derive(Debug)]
enum Value {
    /// A name or a number.
    Atom(String),
    Str(String),
    List(Vec<(Value, usize)>),
    Pair(Box<(Value, usize)>, Box<(Value, usize)>),
}

impl Value {
    fn describe(&self) -> String {
        match self {
            Value::Atom(s) => format!("`{s}`"),
            Value::Str(_) => "a string".into(),
            Value::List(_) => "a list".into(),
            Value::Pair(..) => "a pair".into(),
        }
    }
}

/// The tokens of one line and a position in them.
struct Cursor {
    toks: Vec<Spanned>,
    pos: usize,
    line: usize,
    /// The column past the line's end, where errors about a missing token point.
    end: usize,
}

impl Cursor {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_name(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Name(s)) => Some(s),
            _ => None,
        }
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    /// The column of the next token (or of the line's end).
    fn column(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.column)
    }

    fn error(&self, message: impl Into<String>) -> IrError {
        err(self.line, self.column(), message)
    }

    fn error_at(&self, column: usize, message: impl Into<String>) -> IrError {
        err(self.line, column, message)
    }

    /// "expected X, found Y" at the next token.
    fn expected(&self, what: &str) -> IrError {
        let found = self.peek().map_or("the end of the line".to_string(), Tok::describe);
        self.error(format!("expected {what}, found {found}"))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        let yes = self.is_punct(c);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn expect_punct(&mut self, c: char) -> Result<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{c}`")))
        }
    }

    fn expect_name(&mut self, what: &str) -> Result<(String, usize)> {
        let column = self.column();
        match self.peek() {
            Some(Tok::Name(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok((s, column))
            }
            _ => Err(self.expected(what)),
        }
    }

    /// A `%N` naming one of the first `defined` nodes.
    fn expect_use(&mut self, defined: usize) -> Result<NodeId> {
        let column = self.column();
        match self.peek() {
            Some(&Tok::Ref(n)) => {
                self.pos += 1;
                if n as usize >= defined {
                    return Err(self.error_at(
                        column,
                        format!(
                            "%{n} is used before it is defined (there are {defined} nodes so far)"
                        ),
                    ));
                }
                Ok(NodeId(n))
            }
            _ => Err(self.expected("a node `%N`")),
        }
    }

    fn finish(&self) -> Result<()> {
        match self.peek() {
            None => Ok(()),
            Some(t) => {
                Err(self.error(format!("expected the end of the line, found {}", t.describe())))
            }
        }
    }

    /// `kiln.graph v1`.
    fn header(&mut self) -> Result<()> {
        let want = format!("the header `{HEADER} {VERSION}`");
        match self.peek_name() {
            Some(h) if h == HEADER => self.pos += 1,
            _ => return Err(self.expected(&want)),
        }
        let (version, column) = self.expect_name(&format!("a version after `{HEADER}`"))?;
        if version != VERSION {
            return Err(self.error_at(
                column,
                format!("unsupported version `{version}` (this reader knows {VERSION})"),
            ));
        }
        Ok(())
    }

    /// `return %a, %b` (or `return` alone).
    fn ret(&mut self, defined: usize) -> Result<Vec<NodeId>> {
        self.pos += 1;
        let mut outputs = Vec::new();
        if self.peek().is_none() {
            return Ok(outputs);
        }
        loop {
            outputs.push(self.expect_use(defined)?);
            if !self.eat_punct(',') {
                return Ok(outputs);
            }
        }
    }

    /// `%N = op(%a, ..) {attrs} : type`, inserted into `g`.
    fn node(&mut self, g: &mut Graph) -> Result<()> {
        let n = g.len();
        let line_column = self.column();
        match self.peek() {
            Some(&Tok::Ref(k)) if k as usize == n => self.pos += 1,
            Some(&Tok::Ref(k)) => {
                return Err(
                    self.error(format!("node numbered out of order: expected %{n}, found %{k}"))
                );
            }
            _ => return Err(self.expected(&format!("a node `%{n} = ...` or `return`"))),
        }
        self.expect_punct('=')?;
        let (name, op_column) = self.expect_name("an op name")?;
        let op = OpKind::from_name(&name)
            .ok_or_else(|| self.error_at(op_column, format!("unknown op `{name}`")))?;

        let mut inputs = SmallVec::new();
        if self.eat_punct('(') && !self.eat_punct(')') {
            loop {
                inputs.push(self.expect_use(n)?);
                if self.eat_punct(')') {
                    break;
                }
                if !self.eat_punct(',') {
                    return Err(self.expected("`,` or `)`"));
                }
            }
        }

        let kind = op.info().attrs;
        let fields = if self.is_punct('{') {
            if kind == AttrKind::None {
                return Err(self.error(format!("`{name}` takes no attributes")));
            }
            self.fields(op)?
        } else {
            if kind != AttrKind::None {
                let names = attr_names(kind).join(", ");
                return Err(self.expected(&format!("the attributes {{{names}}} of `{name}`")));
            }
            Vec::new()
        };

        self.expect_punct(':')?;
        let dtype = self.dtype()?;
        let shape_column = self.column();
        let shape = self.usize_list("a shape `[d0,d1,...]`")?;
        self.countable(&shape, shape_column)?;

        let attrs = self.attrs(kind, fields, dtype)?;
        let id = g.insert(Node { op, attrs, inputs, dtype, shape: shape.into() });
        if id.index() != n {
            return Err(self.error_at(
                line_column,
                format!("duplicate of {id}: identical nodes are one node"),
            ));
        }
        Ok(())
    }

    /// `{k=v, ...}`: the values in the order of [`attr_names`], each named exactly once.
    fn fields(&mut self, op: OpKind) -> Result<Vec<(Value, usize)>> {
        let open = self.column();
        self.expect_punct('{')?;
        let names = attr_names(op.info().attrs);
        let mut slots: Vec<Option<(Value, usize)>> = names.iter().map(|_| None).collect();
        loop {
            let (key, key_column) = self.expect_name("an attribute name")?;
            let Some(slot) = names.iter().position(|&k| k == key) else {
                return Err(self.error_at(
                    key_column,
                    format!(
                        "unknown attribute `{key}` of `{}` (it takes {})",
                        op.name(),
                        names.join(", ")
                    ),
                ));
            };
            if slots[slot].is_some() {
                return Err(self.error_at(key_column, format!("attribute `{key}` given twice")));
            }
            self.expect_punct('=')?;
            slots[slot] = Some(self.value()?);
            if self.eat_punct('}') {
                break;
            }
            if !self.eat_punct(',') {
                return Err(self.expected("`,` or `}`"));
            }
        }
        names
            .iter()
            .zip(slots)
            .map(|(k, v)| {
                v.ok_or_else(|| {
                    self.error_at(open, format!("missing attribute `{k}` of `{}`", op.name()))
                })
            })
            .collect()
    }

    /// An error unless the elements of `shape` can be counted (in a `usize`): the verifier and
    /// every stage count them. (A reshape to more than 2^64 elements overflowed the verifier's
    /// count: found by the `ir_text` fuzz target.)
    fn countable(&self, shape: &[usize], column: usize) -> Result<()> {
        match shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) {
            Some(_) => Ok(()),
            None => Err(self.error_at(column, "a shape of more elements than a usize counts")),
        }
    }

    /// An attribute value and its column.
    fn value(&mut self) -> Result<(Value, usize)> {
        self.value_nested(0)
    }

    /// [`Cursor::value`] inside `depth` lists or pairs: an error past [`MAX_VALUE_DEPTH`] (the
    /// parser recurses once per level).
    fn value_nested(&mut self, depth: usize) -> Result<(Value, usize)> {
        if depth > MAX_VALUE_DEPTH {
            return Err(self.error(format!("values nested more than {MAX_VALUE_DEPTH} deep")));
        }
        let column = self.column();
        let v = match self.peek() {
            Some(Tok::Name(s) | Tok::Number(s)) => {
                let v = Value::Atom(s.clone());
                self.pos += 1;
                v
            }
            Some(Tok::Str(s)) => {
                let v = Value::Str(s.clone());
                self.pos += 1;
                v
            }
            Some(Tok::Punct('[')) => {
                self.pos += 1;
                let mut items = Vec::new();
                if !self.eat_punct(']') {
                    loop {
                        items.push(self.value_nested(depth + 1)?);
                        if self.eat_punct(']') {
                            break;
                        }
                        if !self.eat_punct(',') {
                            return Err(self.expected("`,` or `]`"));
                        }
                    }
                }
                Value::List(items)
            }
            Some(Tok::Punct('(')) => {
                self.pos += 1;
                let re = self.value_nested(depth + 1)?;
                self.expect_punct(',')?;
                let im = self.value_nested(depth + 1)?;
                self.expect_punct(')')?;
                Value::Pair(Box::new(re), Box::new(im))
            }
            _ => return Err(self.expected("a value")),
        };
        Ok((v, column))
    }

    fn dtype(&mut self) -> Result<DType> {
        let (name, column) = self.expect_name("a dtype")?;
        parse_short_name(&name)
            .ok_or_else(|| self.error_at(column, format!("unknown dtype `{name}`")))
    }

    fn usize_list(&mut self, what: &str) -> Result<Vec<usize>> {
        if !self.is_punct('[') {
            return Err(self.expected(what));
        }
        let v = self.value()?;
        self.list(&v, |c, v| c.int(v))
    }

    /// The attributes of schema `kind` from its fields (in [`attr_names`] order).
    fn attrs(&self, kind: AttrKind, fields: Vec<(Value, usize)>, dtype: DType) -> Result<Attrs> {
        let f = &fields;
        Ok(match kind {
            AttrKind::None => Attrs::None,
            AttrKind::Input => Attrs::Input { index: self.int(&f[0])? },
            AttrKind::Const => Attrs::Const { value: self.literal(&f[0], dtype)? },
            AttrKind::Iota => Attrs::Iota { axis: self.int(&f[0])? },
            AttrKind::DType => {
                let (v, column) = &f[0];
                let d = match v {
                    Value::Atom(s) => parse_short_name(s),
                    _ => None,
                };
                Attrs::DType {
                    dtype: d.ok_or_else(|| {
                        self.error_at(*column, format!("unknown dtype {}", v.describe()))
                    })?,
                }
            }
            AttrKind::Shape => {
                let shape = self.list(&f[0], |c, v| c.int(v))?;
                self.countable(&shape, f[0].1)?;
                Attrs::Shape { shape: shape.into() }
            }
            AttrKind::Perm => Attrs::Perm { perm: self.list(&f[0], |c, v| c.int(v))?.into() },
            AttrKind::Reduce => Attrs::Reduce {
                axes: self.list(&f[0], |c, v| c.int(v))?.into(),
                keepdims: self.bool(&f[1])?,
            },
            AttrKind::Axes => Attrs::Axes { axes: self.list(&f[0], |c, v| c.int(v))?.into() },
            AttrKind::Axis => Attrs::Axis { axis: self.int(&f[0])? },
            AttrKind::Slice => {
                let start: Vec<usize> = self.list(&f[0], |c, v| c.int(v))?;
                let step: Vec<isize> = self.list(&f[1], |c, v| c.int(v))?;
                let len: Vec<usize> = self.list(&f[2], |c, v| c.int(v))?;
                if step.len() != start.len() || len.len() != start.len() {
                    return Err(self.error_at(
                        f[0].1,
                        "`start`, `step` and `len` must have one entry per axis each",
                    ));
                }
                let dims = (0..start.len())
                    .map(|i| SliceDim { start: start[i], step: step[i], len: len[i] })
                    .collect();
                Attrs::Slice { dims }
            }
            AttrKind::Fft => Attrs::Fft {
                axes: self.list(&f[0], |c, v| c.int(v))?.into(),
                inverse: self.bool(&f[1])?,
                norm: self.norm(&f[2])?,
            },
            AttrKind::RealFft => Attrs::RealFft {
                axes: self.list(&f[0], |c, v| c.int(v))?.into(),
                n: self.int(&f[1])?,
                norm: self.norm(&f[2])?,
            },
            AttrKind::Linalg => {
                Attrs::Linalg { output: self.int(&f[0])?, full_matrices: self.bool(&f[1])? }
            }
            AttrKind::Philox => {
                Attrs::Philox { per_call: self.int(&f[0])?, words: self.int(&f[1])? }
            }
            AttrKind::TopK => Attrs::TopK {
                axis: self.int(&f[0])?,
                k: self.int(&f[1])?,
                largest: self.bool(&f[2])?,
            },
            AttrKind::Custom => match &f[0] {
                (Value::Str(s), _) => Attrs::Custom { name: s.clone() },
                (v, column) => {
                    return Err(self
                        .error_at(*column, format!("expected a string, found {}", v.describe())))
                }
            },
        })
    }

    fn norm(&self, (v, column): &(Value, usize)) -> Result<FftNorm> {
        let norm = match v {
            Value::Atom(s) => FftNorm::from_name(s),
            _ => None,
        };
        norm.ok_or_else(|| {
            self.error_at(
                *column,
                format!("expected backward, ortho or forward, found {}", v.describe()),
            )
        })
    }

    fn int<T: std::str::FromStr>(&self, (v, column): &(Value, usize)) -> Result<T> {
        match v {
            Value::Atom(s) if s.starts_with(|c: char| c.is_ascii_digit() || c == '-') => {
                s.parse().ok()
            }
            _ => None,
        }
        .ok_or_else(|| {
            let ty = std::any::type_name::<T>();
            self.error_at(*column, format!("expected an integer ({ty}), found {}", v.describe()))
        })
    }

    fn bool(&self, (v, column): &(Value, usize)) -> Result<bool> {
        match v {
            Value::Atom(s) if s == "true" => Ok(true),
            Value::Atom(s) if s == "false" => Ok(false),
            _ => {
                Err(self
                    .error_at(*column, format!("expected true or false, found {}", v.describe())))
            }
        }
    }

    fn list<T>(
        &self,
        (v, column): &(Value, usize),
        item: impl Fn(&Self, &(Value, usize)) -> Result<T>,
    ) -> Result<Vec<T>> {
        match v {
            Value::List(items) => items.iter().map(|x| item(self, x)).collect(),
            _ => {
                Err(self
                    .error_at(*column, format!("expected a list `[..]`, found {}", v.describe())))
            }
        }
    }

    /// A float in the text of `dtype`'s precision (`f32` text for dtypes of at most 32 bits).
    fn float(&self, (v, column): &(Value, usize), dtype: DType) -> Result<f64> {
        let x = match v {
            Value::Atom(s) if s == "nan" => Some(f64::NAN),
            Value::Atom(s)
                if s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.')
                    || s == "inf" =>
            {
                if dtype.real_dtype() == DType::Float64 {
                    s.parse::<f64>().ok()
                } else {
                    s.parse::<f32>().ok().map(f64::from)
                }
            }
            _ => None,
        };
        x.ok_or_else(|| {
            self.error_at(
                *column,
                format!("expected a {} number, found {}", dtype.short_name(), v.describe()),
            )
        })
    }

    /// A constant's value, read in its node's dtype.
    fn literal(&self, field: &(Value, usize), dtype: DType) -> Result<Literal> {
        let (v, column) = field;
        Ok(match dtype.kind() {
            DTypeKind::Bool => Literal::Bool(self.bool(field)?),
            DTypeKind::SignedInt => Literal::Int(self.int(field)?),
            DTypeKind::UnsignedInt => Literal::UInt(self.int(field)?),
            DTypeKind::Float => Literal::float(dtype, self.float(field, dtype)?),
            DTypeKind::Complex => match v {
                Value::Pair(re, im) => Literal::complex(
                    dtype,
                    Complex64::new(self.float(re, dtype)?, self.float(im, dtype)?),
                ),
                _ => {
                    return Err(self.error_at(
                        *column,
                        format!("expected a complex `(re, im)`, found {}", v.describe()),
                    ));
                }
            },
        })
    }
}
