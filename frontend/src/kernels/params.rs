//! CuPy's parameter lists: `'float32 x, float32 y'`, `'T x, raw T y'`, `'X x, Y y'`.
//!
//! A parameter is `[raw] TYPE NAME`. `TYPE` of one character is a type placeholder, bound when
//! the kernel is called; any longer `TYPE` must be a NumPy dtype name exactly (`float32`,
//! `int64`, `bool`, `complex64`, `bfloat16` ...; CuPy rejects `float` for `float64` too). `raw`
//! passes the whole array: the code indexes it (`y[k]`, C order over the flattened array) and it
//! takes no part in broadcasting. Names must be C identifiers, distinct, and not `i`, `n` or
//! names starting with `_` (CuPy reserves them).

use kiln_ir::DType;

use super::ast::Span;
use super::diag::{DResult, Diag};

/// The type of a parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ParamType {
    Fixed(DType),
    Placeholder(String),
}

/// One parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Param {
    pub name: String,
    pub ty: ParamType,
    pub raw: bool,
    /// Where the parameter starts in its list.
    pub span: Span,
}

impl Param {
    pub fn placeholder(&self) -> Option<&str> {
        match &self.ty {
            ParamType::Placeholder(p) => Some(p),
            ParamType::Fixed(_) => None,
        }
    }
}

fn dtype_named(name: &str) -> Option<DType> {
    DType::ALL.iter().copied().find(|d| d.name() == name)
}

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// Parses a parameter list. `seen` holds names already taken (the input parameters, when the
/// output list is parsed). An empty string is an empty list.
pub(crate) fn parse_params(src: &str, seen: &[Param]) -> DResult<Vec<Param>> {
    let mut out: Vec<Param> = Vec::new();
    if src.trim().is_empty() {
        return Ok(out);
    }
    // Words with their columns, parameter by parameter (the list is one line in practice; a
    // newline counts as white space and restarts the column).
    let mut params: Vec<Vec<(String, Span)>> = vec![Vec::new()];
    let (mut line, mut col) = (1, 1);
    let mut word = String::new();
    let mut start = Span { line, column: col };
    let flush = |word: &mut String, params: &mut Vec<Vec<(String, Span)>>, start: Span| {
        if !word.is_empty() {
            params.last_mut().expect("a parameter").push((std::mem::take(word), start));
        }
    };
    for c in src.chars() {
        if c == ',' || c.is_whitespace() {
            flush(&mut word, &mut params, start);
            if c == ',' {
                params.push(Vec::new());
            }
        } else {
            if word.is_empty() {
                start = Span { line, column: col };
            }
            word.push(c);
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    flush(&mut word, &mut params, start);
    let end = Span { line, column: col };
    for words in params {
        let at = words.first().map_or(end, |w| w.1);
        if words.len() < 2 {
            let found = words.first().map_or("nothing".to_string(), |w| format!("`{}`", w.0));
            return Err(Diag::syntax(
                at,
                format!("expected a parameter `[raw] TYPE NAME`, found {found}"),
            ));
        }
        let (ty, tspan) = &words[words.len() - 2];
        let (name, nspan) = &words[words.len() - 1];
        let mut raw = false;
        for (w, span) in &words[..words.len() - 2] {
            match w.as_str() {
                "raw" if !raw => raw = true,
                other => {
                    return Err(Diag::syntax(
                        *span,
                        format!("unknown keyword `{other}` (only `raw` may precede the type)"),
                    ))
                }
            }
        }
        let ty = if ty.chars().count() == 1 {
            if !is_ident(ty) {
                return Err(Diag::syntax(
                    *tspan,
                    format!("`{ty}` is not a type placeholder (a letter)"),
                ));
            }
            ParamType::Placeholder(ty.clone())
        } else {
            match dtype_named(ty) {
                Some(d) => ParamType::Fixed(d),
                None => {
                    return Err(Diag::code(*tspan, format!("`{ty}` is neither a NumPy dtype name (float32, int64, bool ...) nor a one-letter type placeholder")));
                }
            }
        };
        if !is_ident(name) {
            return Err(Diag::syntax(*nspan, format!("`{name}` is not a parameter name")));
        }
        if name == "i" || name == "n" || name.starts_with('_') {
            return Err(Diag::code(
                *nspan,
                format!("`{name}` is reserved (`i`, `n` and names starting with `_`)"),
            ));
        }
        if out.iter().chain(seen).any(|p| &p.name == name) {
            return Err(Diag::code(*nspan, format!("parameter `{name}` is declared twice")));
        }
        out.push(Param { name: name.clone(), ty, raw, span: at });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::diag::DiagKind;

    #[test]
    fn cupy_parameter_lists() {
        let p = parse_params("float32 x, raw T y,X z", &[]).unwrap();
        let got: Vec<(&str, ParamType, bool, usize)> =
            p.iter().map(|p| (p.name.as_str(), p.ty.clone(), p.raw, p.span.column)).collect();
        assert_eq!(
            got,
            vec![
                ("x", ParamType::Fixed(DType::Float32), false, 1),
                ("y", ParamType::Placeholder("T".into()), true, 12),
                ("z", ParamType::Placeholder("X".into()), false, 20),
            ]
        );
        assert!(parse_params("  ", &[]).unwrap().is_empty());
    }

    #[test]
    fn errors_point_at_the_word() {
        let e = parse_params("float32 x, float y", &[]).unwrap_err();
        assert_eq!((e.kind, e.span.column), (DiagKind::Code, 12));
        let e = parse_params("float32 x, y", &[]).unwrap_err();
        assert_eq!((e.kind, e.span.column), (DiagKind::Syntax, 12));
        let e = parse_params("float32 x, float32 x", &[]).unwrap_err();
        assert_eq!(e.span.column, 20);
        let e = parse_params("const T x", &[]).unwrap_err();
        assert_eq!(e.span.column, 1);
        let e = parse_params("T i", &[]).unwrap_err();
        assert!(e.message.contains("reserved"));
        let x = parse_params("T x", &[]).unwrap();
        assert!(parse_params("T x", &x).is_err());
    }
}
