//! The lexer: one line of text into tokens, each with its column.

use crate::error::{IrError, Result};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    /// A name: letters, digits, `_` and `.`, not starting with a digit (`add`, `kiln.graph`, `f32`,
    /// `nan`).
    Name(String),
    /// A number as written: an optional `-`, then digits, letters, `.`, `_`, and a sign after an
    /// exponent letter (`3`, `-0.0`, `1e-7`, `-inf`). Checked when it is read as a value.
    Number(String),
    /// `%N`.
    Ref(u32),
    /// A string, unescaped.
    Str(String),
    /// One of `= ( ) { } [ ] , :`.
    Punct(char),
}

impl Tok {
    /// How a token is named in error messages.
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Name(s) => format!("`{s}`"),
            Tok::Number(s) => format!("number `{s}`"),
            Tok::Ref(n) => format!("`%{n}`"),
            Tok::Str(_) => "a string".to_string(),
            Tok::Punct(c) => format!("`{c}`"),
        }
    }
}

/// A token and its 1-based column.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Spanned {
    pub tok: Tok,
    pub column: usize,
}

pub(super) fn err(line: usize, column: usize, message: impl Into<String>) -> IrError {
    IrError::Parse { line, column, message: message.into() }
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// The tokens of one line (`line` is its 1-based number, for errors); a `//` comment ends it.
/// Also returns the column just past the line's last character.
pub(super) fn lex_line(text: &str, line: usize) -> Result<(Vec<Spanned>, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            break;
        }
        let tok = if is_name_start(c) {
            let start = i;
            while i < chars.len() && is_name_char(chars[i]) {
                i += 1;
            }
            Tok::Name(chars[start..i].iter().collect())
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_alphanumeric()))
        {
            let start = i;
            i += 1;
            while i < chars.len() {
                let d = chars[i];
                let exponent_sign = (d == '+' || d == '-') && matches!(chars[i - 1], 'e' | 'E');
                if d.is_ascii_alphanumeric() || d == '.' || d == '_' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            Tok::Number(chars[start..i].iter().collect())
        } else if c == '%' {
            i += 1;
            let start = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            let digits: String = chars[start..i].iter().collect();
            if digits.is_empty() {
                return Err(err(line, column, "expected a node number after `%`"));
            }
            let n = digits
                .parse()
                .map_err(|_| err(line, column, format!("node number %{digits} is too large")))?;
            Tok::Ref(n)
        } else if c == '"' {
            let (s, next) = string(&chars, i, line)?;
            i = next;
            Tok::Str(s)
        } else if "=(){}[],:".contains(c) {
            i += 1;
            Tok::Punct(c)
        } else {
            return Err(err(line, column, format!("unexpected character {c:?}")));
        };
        toks.push(Spanned { tok, column });
    }
    Ok((toks, chars.len() + 1))
}

/// The string starting at the quote `chars[open]`: its text and the index after its closing
/// quote.
fn string(chars: &[char], open: usize, line: usize) -> Result<(String, usize)> {
    let mut s = String::new();
    let mut i = open + 1;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(err(line, open + 1, "unterminated string"));
        };
        match c {
            '"' => return Ok((s, i + 1)),
            '\\' => {
                let esc = chars.get(i + 1).copied();
                i += 2;
                match esc {
                    Some('"') => s.push('"'),
                    Some('\\') => s.push('\\'),
                    Some('n') => s.push('\n'),
                    Some('r') => s.push('\r'),
                    Some('t') => s.push('\t'),
                    Some('u') if chars.get(i) == Some(&'{') => {
                        let start = i + 1;
                        let close = (start..chars.len()).find(|&j| chars[j] == '}');
                        let hex: String =
                            close.map(|j| chars[start..j].iter().collect()).unwrap_or_default();
                        let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                        match (close, ch) {
                            (Some(j), Some(ch)) => {
                                s.push(ch);
                                i = j + 1;
                            }
                            _ => return Err(err(line, i - 1, "bad `\\u{...}` escape")),
                        }
                    }
                    _ => return Err(err(line, i - 1, "unknown escape in string")),
                }
            }
            c => {
                s.push(c);
                i += 1;
            }
        }
    }
}
