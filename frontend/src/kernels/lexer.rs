//! Tokens of the C-like code of user kernels, each with its line and column.
//!
//! Comments (`//`, `/* */`) and white space are skipped. Preprocessor lines, character and string
//! literals are outside the subset: they are errors at their position.

use super::ast::Span;
use super::diag::{Diag, DiagKind};

/// A token.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    /// An integer literal: its value and suffix (`u`, `l`, `ul`, `ll`, `ull`, any case), and
    /// whether it was written in hexadecimal or octal (such literals may take unsigned types).
    Int {
        value: u128,
        unsigned: bool,
        long: bool,
        radix_not_10: bool,
    },
    /// A floating literal; `single` with an `f` suffix.
    Float {
        value: f64,
        single: bool,
    },
    /// An operator or punctuation, longest match first (`<<=`, `&&`, `++`, ...).
    Punct(&'static str),
}

impl Tok {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int { value, .. } => format!("`{value}`"),
            Tok::Float { value, .. } => format!("`{value:?}`"),
            Tok::Punct(p) => format!("`{p}`"),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Operators and punctuation, longest first so that the first match is the longest.
const PUNCTS: &[&str] = &[
    "<<=", ">>=", "...", "->", "::", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "+", "-", "*", "/", "%", "<", ">", "=", "!",
    "~", "&", "|", "^", "?", ":", ";", ",", "(", ")", "{", "}", "[", "]", ".",
];

/// The tokens of `src`, or the first lexical error.
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, Diag> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1usize, 1usize);
    // Advances over `n` characters, keeping line and column.
    let advance = |i: &mut usize, line: &mut usize, col: &mut usize, n: usize| {
        for _ in 0..n {
            if chars[*i] == '\n' {
                *line += 1;
                *col = 1;
            } else {
                *col += 1;
            }
            *i += 1;
        }
    };
    let mut at_line_start = true;
    while i < chars.len() {
        let c = chars[i];
        let span = Span { line, column: col };
        if c == '\n' {
            at_line_start = true;
            advance(&mut i, &mut line, &mut col, 1);
            continue;
        }
        if c.is_whitespace() {
            advance(&mut i, &mut line, &mut col, 1);
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                advance(&mut i, &mut line, &mut col, 1);
            }
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'*') {
            advance(&mut i, &mut line, &mut col, 2);
            loop {
                if i >= chars.len() {
                    return Err(Diag::new(DiagKind::Syntax, span, "unterminated comment `/*`"));
                }
                if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    advance(&mut i, &mut line, &mut col, 2);
                    break;
                }
                advance(&mut i, &mut line, &mut col, 1);
            }
            continue;
        }
        let line_start = at_line_start;
        at_line_start = false;
        if c == '#' {
            let what = if line_start { "a preprocessor directive" } else { "`#`" };
            return Err(Diag::new(DiagKind::Unsupported, span, what));
        }
        if c == '"' {
            return Err(Diag::new(DiagKind::Unsupported, span, "a string literal"));
        }
        if c == '\'' {
            return Err(Diag::new(DiagKind::Unsupported, span, "a character literal"));
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                advance(&mut i, &mut line, &mut col, 1);
            }
            out.push(Token { tok: Tok::Ident(chars[start..i].iter().collect()), span });
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let (tok, n) = number(&chars[i..]).map_err(|m| Diag::new(DiagKind::Syntax, span, m))?;
            advance(&mut i, &mut line, &mut col, n);
            out.push(Token { tok, span });
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
        match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            Some(p) => {
                advance(&mut i, &mut line, &mut col, p.len());
                out.push(Token { tok: Tok::Punct(p), span });
            }
            None => {
                return Err(Diag::new(
                    DiagKind::Syntax,
                    span,
                    format!("unexpected character {c:?}"),
                ))
            }
        }
    }
    Ok(out)
}

/// A numeric literal at the start of `s`: the token and the number of characters it takes.
fn number(s: &[char]) -> Result<(Tok, usize), String> {
    let text_of = |n: usize| s[..n].iter().collect::<String>();
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    let mut n = 0;
    // Hexadecimal integers.
    if s[0] == '0' && matches!(s.get(1), Some('x' | 'X')) {
        n = 2;
        while n < s.len() && s[n].is_ascii_hexdigit() {
            n += 1;
        }
        let digits = text_of(n)[2..].to_string();
        let value = u128::from_str_radix(&digits, 16)
            .map_err(|_| format!("bad hexadecimal literal `{}`", text_of(n)))?;
        return int_suffix(s, n, value, true);
    }
    while n < s.len() && s[n].is_ascii_digit() {
        n += 1;
    }
    let mut float = false;
    if n < s.len() && s[n] == '.' {
        float = true;
        n += 1;
        while n < s.len() && s[n].is_ascii_digit() {
            n += 1;
        }
    }
    if n < s.len() && matches!(s[n], 'e' | 'E') {
        let mut m = n + 1;
        if m < s.len() && matches!(s[m], '+' | '-') {
            m += 1;
        }
        if m < s.len() && s[m].is_ascii_digit() {
            float = true;
            n = m;
            while n < s.len() && s[n].is_ascii_digit() {
                n += 1;
            }
        }
    }
    let text = text_of(n);
    if float {
        let value: f64 = text.parse().map_err(|_| format!("bad floating literal `{text}`"))?;
        let single = n < s.len() && matches!(s[n], 'f' | 'F');
        let end = n + single as usize;
        if end < s.len() && is_ident(s[end]) {
            return Err(format!(
                "bad suffix on the floating literal `{}`",
                s[..end + 1].iter().collect::<String>()
            ));
        }
        return Ok((Tok::Float { value, single }, end));
    }
    // A leading 0 is octal in C.
    let (value, radix_not_10) = if text.len() > 1 && text.starts_with('0') {
        (
            u128::from_str_radix(&text[1..], 8)
                .map_err(|_| format!("bad octal literal `{text}`"))?,
            true,
        )
    } else {
        (text.parse::<u128>().map_err(|_| format!("integer literal `{text}` is too large"))?, false)
    };
    int_suffix(s, n, value, radix_not_10)
}

/// Reads the suffix of an integer literal whose digits end at `n`.
fn int_suffix(
    s: &[char],
    mut n: usize,
    value: u128,
    radix_not_10: bool,
) -> Result<(Tok, usize), String> {
    let (mut unsigned, mut long) = (false, false);
    while n < s.len() {
        match s[n] {
            'u' | 'U' if !unsigned => unsigned = true,
            'l' | 'L' => long = true,
            _ => break,
        }
        n += 1;
    }
    if n < s.len() && (s[n].is_ascii_alphanumeric() || s[n] == '_' || s[n] == '.') {
        return Err(format!(
            "bad suffix on the integer literal `{}`",
            s[..=n].iter().collect::<String>()
        ));
    }
    if value > u64::MAX as u128 {
        return Err("integer literal is too large for any integer type".into());
    }
    Ok((Tok::Int { value, unsigned, long, radix_not_10 }, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn operators_take_the_longest_match() {
        assert_eq!(
            toks("a<<=b>>c&&d"),
            vec![
                Tok::Ident("a".into()),
                Tok::Punct("<<="),
                Tok::Ident("b".into()),
                Tok::Punct(">>"),
                Tok::Ident("c".into()),
                Tok::Punct("&&"),
                Tok::Ident("d".into())
            ]
        );
    }

    #[test]
    fn numbers_and_suffixes() {
        assert_eq!(toks("1.5f")[0], Tok::Float { value: 1.5, single: true });
        assert_eq!(toks("2e3")[0], Tok::Float { value: 2000.0, single: false });
        assert_eq!(toks(".5")[0], Tok::Float { value: 0.5, single: false });
        assert_eq!(
            toks("10ull")[0],
            Tok::Int { value: 10, unsigned: true, long: true, radix_not_10: false }
        );
        assert_eq!(
            toks("0x1F")[0],
            Tok::Int { value: 31, unsigned: false, long: false, radix_not_10: true }
        );
        assert_eq!(
            toks("017")[0],
            Tok::Int { value: 15, unsigned: false, long: false, radix_not_10: true }
        );
        assert!(lex("1.5q").is_err());
        assert!(lex("12abc").is_err());
    }

    #[test]
    fn positions_count_lines_and_columns_past_comments() {
        let t = lex("x = 1; // one\n/* two\n */  y").unwrap();
        assert_eq!(t.last().unwrap().span, Span { line: 3, column: 6 });
        let e = lex("x = 1;\n  #define N 3").unwrap_err();
        assert_eq!((e.span.line, e.span.column, e.kind), (2, 3, DiagKind::Unsupported));
        assert!(lex("s = \"a\";").is_err());
    }
}
