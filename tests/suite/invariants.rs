//! Invariants of the source tree, checked by reading it.
//!
//! `op_matches_are_exhaustive`: outside `ir/`, every `match` on an [`OpKind`] lists its ops, so a
//! new row in the op table is a compile error wherever an op picks a behaviour. A `match` names
//! `OpKind` when one of its own arm patterns does (`OpKind::Add`, or a bare `Add` under a
//! `use OpKind::*` or `use OpKind::{..}` in scope); such a match may have no arm that catches
//! every op: `_`, a lone binding (`other`), or a tuple of those (`(_, _)`). A wildcard that
//! truly cannot be avoided carries a `// catch-all: <why>` comment on its arm's line or one of
//! the two lines above it. Yes/no questions are `matches!` (not a `match`) or the table's
//! properties (`class()`, `is_elementwise()`...).
//!
//! The scanner is a tokenizer (strings, raw strings, chars, lifetimes, nested block comments)
//! and a brace-aware reader of `match` bodies; its own tests are below.

use kiln_ir::{OpClass, OpKind};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Punct(&'static str),
    /// A string, char or number literal (its text does not matter here).
    Lit,
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

/// The tokens of Rust source `src`, and the lines holding a `// catch-all:` comment.
fn tokenize(src: &str) -> (Vec<Token>, BTreeSet<usize>) {
    const PUNCTS: [&str; 28] = [
        "=>", "::", "..=", "...", "..", "->", "==", "!=", "<=", ">=", "&&", "||", "(", ")", "[",
        "]", "{", "}", ",", ";", "|", ".", "@", "#", "&", "_", "*", "!",
    ];
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut line) = (0, 1);
    let mut toks = Vec::new();
    let mut catch_all = BTreeSet::new();
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            let end = c[i..].iter().position(|&x| x == '\n').map_or(c.len(), |p| i + p);
            let text: String = c[i + 2..end].iter().collect();
            if text.trim_start_matches('/').trim_start().starts_with("catch-all:") {
                catch_all.insert(line);
            }
            i = end;
        } else if ch == '/' && at(i + 1) == '*' {
            // Block comments nest.
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some(len) = raw_string_start(&c, i) {
            // r"..", r#".."#, br#".."#, cr".." : no escapes, ends at `"` and as many `#`.
            let hashes = len - 1 - usize::from(ch != 'r');
            let start = line;
            i += len + 1;
            loop {
                if i >= c.len() {
                    panic!("unterminated raw string from line {start}");
                }
                if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(c[i] == '\n');
                i += 1;
            }
            toks.push(Token { tok: Tok::Lit, line: start });
        } else if ch == '"' || ((ch == 'b' || ch == 'c') && at(i + 1) == '"') {
            let start = line;
            i += if ch == '"' { 1 } else { 2 };
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                line += usize::from(at(i) == '\n');
                i += 1;
            }
            i += 1;
            toks.push(Token { tok: Tok::Lit, line: start });
        } else if ch == '\'' || (ch == 'b' && at(i + 1) == '\'') {
            // A char literal ('x', '\n', '\u{1F600}', b'x'), else a lifetime or label ('a).
            let q = if ch == 'b' { i + 1 } else { i };
            if at(q + 1) == '\\' {
                i = q + 3; // past the escaped character: '\'' is one char
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                toks.push(Token { tok: Tok::Lit, line });
            } else if at(q + 2) == '\'' {
                i = q + 3;
                toks.push(Token { tok: Tok::Lit, line });
            } else {
                i = q + 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                toks.push(Token { tok: Tok::Lit, line });
            }
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            if at(i) == '.' && at(i + 1).is_ascii_digit() {
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
            toks.push(Token { tok: Tok::Lit, line });
        } else if ch.is_alphabetic()
            || (ch == '_' && (at(i + 1).is_alphanumeric() || at(i + 1) == '_'))
        {
            let start = i;
            if ch == 'r' && at(i + 1) == '#' {
                i += 2; // a raw identifier: r#match is not the keyword
            }
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            toks.push(Token { tok: Tok::Ident(c[start..i].iter().collect()), line });
        } else {
            let rest: String = c[i..(i + 3).min(c.len())].iter().collect();
            match PUNCTS.iter().find(|p| rest.starts_with(**p)) {
                Some(p) => {
                    toks.push(Token { tok: Tok::Punct(p), line });
                    i += p.chars().count();
                }
                None => {
                    // Operators no pattern holds (+, <, !, ...): one char, of no interest.
                    toks.push(Token { tok: Tok::Punct("?"), line });
                    i += 1;
                }
            }
        }
    }
    (toks, catch_all)
}

/// The length of the prefix `r"`, `r#"`, `br##"`, `cr"` ... (the quote excluded) at `i`.
fn raw_string_start(c: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if matches!(c.get(j), Some('b' | 'c')) {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    // Not the tail of an identifier (`bar"` cannot be, but `for` followed by `#` is not a string).
    if i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_') {
        return None;
    }
    j += 1;
    while c.get(j) == Some(&'#') {
        j += 1;
    }
    (c.get(j) == Some(&'"')).then_some(j - i)
}

fn is_punct(t: &Token, p: &str) -> bool {
    matches!(&t.tok, Tok::Punct(q) if *q == p)
}

fn is_ident(t: &Token, name: &str) -> bool {
    matches!(&t.tok, Tok::Ident(s) if s == name)
}

/// The index of the token closing the group opened at `open` (`(`, `[` or `{`).
fn close_of(toks: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        if let Tok::Punct(p) = t.tok {
            match p {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => {
                    depth -= 1;
                    if depth == 0 {
                        return k;
                    }
                }
                _ => {}
            }
        }
    }
    toks.len()
}

fn opens(t: &Token) -> bool {
    matches!(t.tok, Tok::Punct("(" | "[" | "{"))
}

fn closes(t: &Token) -> bool {
    matches!(t.tok, Tok::Punct(")" | "]" | "}"))
}

/// One arm of a `match`: its pattern's alternatives (tokens), whether it has a guard, and the
/// line it starts on.
struct Arm {
    alternatives: Vec<Vec<Token>>,
    guarded: bool,
    line: usize,
}

/// The arms of the `match` whose body is the group opening at `open`.
fn arms(toks: &[Token], open: usize) -> Vec<Arm> {
    let end = close_of(toks, open);
    let mut arms = Vec::new();
    let mut k = open + 1;
    while k < end {
        // Attributes on the arm.
        while k < end && is_punct(&toks[k], "#") {
            k = close_of(toks, k + 1) + 1;
        }
        if k >= end {
            break;
        }
        // The pattern, up to `=>` (or the guard's `if`) at this depth.
        let line = toks[k].line;
        let mut alternatives = vec![Vec::new()];
        let mut in_guard = false;
        while k < end && !is_punct(&toks[k], "=>") {
            if opens(&toks[k]) {
                let c = close_of(toks, k);
                if !in_guard {
                    alternatives.last_mut().unwrap().extend_from_slice(&toks[k..=c]);
                }
                k = c + 1;
                continue;
            }
            if is_ident(&toks[k], "if") {
                in_guard = true;
            } else if !in_guard && is_punct(&toks[k], "|") {
                alternatives.push(Vec::new());
            } else if !in_guard {
                alternatives.last_mut().unwrap().push(toks[k].clone());
            }
            k += 1;
        }
        alternatives.retain(|a| !a.is_empty()); // a leading `|`
        arms.push(Arm { alternatives, guarded: in_guard, line });
        // Past the `=>`, the body: up to a `,` at this depth, or after a block that nothing
        // continues.
        k += 1;
        while k < end {
            if is_punct(&toks[k], ",") {
                k += 1;
                break;
            }
            if opens(&toks[k]) {
                let c = close_of(toks, k);
                k = c + 1;
                if is_punct(&toks[c], "}") && k < end && starts_arm(&toks[k]) {
                    break;
                }
                continue;
            }
            k += 1;
        }
    }
    arms
}

/// Whether a token after a block closes the arm (the next arm's pattern starts) rather than
/// continuing its expression (`else`, `.method()`, `?`, `as`, an operator).
fn starts_arm(t: &Token) -> bool {
    match &t.tok {
        Tok::Ident(s) => s != "else" && s != "as",
        Tok::Lit => true,
        Tok::Punct(p) => matches!(*p, "(" | "[" | "&" | "_" | "#" | "|" | ".."),
    }
}

/// Whether a pattern alternative matches every value: `_`, a binding, or a tuple/slice of those.
fn catches_all(alt: &[Token]) -> bool {
    alt.iter().all(|t| match &t.tok {
        Tok::Ident(s) => {
            s != "true" && s != "false" && s.starts_with(|c: char| c.is_lowercase() || c == '_')
        }
        Tok::Punct(p) => matches!(*p, "_" | "(" | ")" | "[" | "]" | "," | ".." | "&"),
        Tok::Lit => false,
    })
}

/// Whether a pattern alternative names an op: `OpKind::X`, `ops_of!(..)`, `ops_not_of!(..)`,
/// or a bare variant in `bare`.
fn names_op(alt: &[Token], bare: &BTreeSet<String>) -> bool {
    alt.iter().enumerate().any(|(k, t)| {
        let Tok::Ident(s) = &t.tok else { return false };
        let next = |p: &str| alt.get(k + 1).is_some_and(|n| is_punct(n, p));
        let path_prev = k > 0 && (is_punct(&alt[k - 1], "::") || is_punct(&alt[k - 1], "."));
        (s == "OpKind" && next("::"))
            || ((s == "ops_of" || s == "ops_not_of") && next("!"))
            || (!next("::") && !path_prev && bare.contains(s))
    })
}

/// The token ranges where bare op names are in scope, from `use ...OpKind::*;` or
/// `use ...OpKind::{A, B};`: the block holding the `use` (the whole file at the top level), with
/// the names imported.
fn glob_scopes(
    toks: &[Token],
    variants: &BTreeSet<String>,
) -> Vec<(usize, usize, BTreeSet<String>)> {
    let mut scopes = Vec::new();
    for k in 0..toks.len() {
        if !is_ident(&toks[k], "use") {
            continue;
        }
        let semi = (k..toks.len()).find(|&j| is_punct(&toks[j], ";")).unwrap_or(toks.len());
        let Some(o) = (k..semi).find(|&j| {
            is_ident(&toks[j], "OpKind") && toks.get(j + 1).is_some_and(|t| is_punct(t, "::"))
        }) else {
            continue;
        };
        let names: BTreeSet<String> = match toks.get(o + 2).map(|t| &t.tok) {
            Some(Tok::Punct("{")) => toks[o + 3..semi]
                .iter()
                .filter_map(|t| match &t.tok {
                    Tok::Ident(s) if variants.contains(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            Some(Tok::Punct("*")) => variants.clone(),
            _ => continue,
        };
        // The innermost block around the `use`, else the whole file.
        let mut depth = 0usize;
        let mut block = None;
        for j in (0..k).rev() {
            if closes(&toks[j]) {
                depth += 1;
            } else if opens(&toks[j]) {
                if depth == 0 {
                    block = Some(j);
                    break;
                }
                depth -= 1;
            }
        }
        scopes.push(match block {
            Some(open) => (open, close_of(toks, open), names),
            None => (0, toks.len(), names),
        });
    }
    scopes
}

/// The line of each arm that catches every op in a `match` on ops in `src`.
fn violations(src: &str, variants: &BTreeSet<String>) -> Vec<usize> {
    let (toks, catch_all_lines) = tokenize(src);
    let scopes = glob_scopes(&toks, variants);
    let mut found = Vec::new();
    for k in 0..toks.len() {
        if !is_ident(&toks[k], "match") || (k > 0 && is_punct(&toks[k - 1], ".")) {
            continue;
        }
        // The body is the first `{` after the scrutinee outside its parentheses and brackets.
        let mut j = k + 1;
        while j < toks.len() && !is_punct(&toks[j], "{") {
            j = if opens(&toks[j]) { close_of(&toks, j) + 1 } else { j + 1 };
        }
        if j >= toks.len() {
            continue;
        }
        let mut bare = BTreeSet::new();
        for (s, e, names) in &scopes {
            if (*s..*e).contains(&k) {
                bare.extend(names.iter().cloned());
            }
        }
        let arms = arms(&toks, j);
        if !arms.iter().any(|a| a.alternatives.iter().any(|alt| names_op(alt, &bare))) {
            continue;
        }
        for arm in &arms {
            let justified =
                (arm.line.saturating_sub(2)..=arm.line).any(|l| catch_all_lines.contains(&l));
            // A guarded arm catches nothing for sure.
            if !justified && !arm.guarded && arm.alternatives.iter().any(|alt| catches_all(alt)) {
                found.push(arm.line);
            }
        }
    }
    found
}

fn variant_names() -> BTreeSet<String> {
    OpKind::ALL.iter().map(|op| format!("{op:?}")).collect()
}

/// The `.rs` files under `dir`, but in `target/`, hidden folders and (at the top) `ir/`.
fn rust_files(dir: &Path, top: bool, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if !name.starts_with('.') && name != "target" && !(top && name == "ir") {
                rust_files(&p, false, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

#[test]
fn op_matches_are_exhaustive() {
    let root = crate::repo_root();
    let variants = variant_names();
    let mut files = Vec::new();
    rust_files(&root, true, &mut files);
    assert!(files.len() > 50, "only {} .rs files under {}", files.len(), root.display());
    let mut bad = Vec::new();
    for f in &files {
        let path = f.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        let mut lines = violations(&std::fs::read_to_string(f).unwrap(), &variants);
        lines.sort();
        bad.extend(lines.iter().map(|l| format!("{path}:{l}")));
    }
    assert!(
        bad.is_empty(),
        "a match on OpKind catches every other op (list the ops, use matches! or the op \
         table's properties, or justify it with `// catch-all: <why>`):\n  {}",
        bad.join("\n  ")
    );
}

/// No weak handle on an expression node is ever made in the frontend: `array.rs`'s `unique`
/// takes a node with one strong handle as its own without `Arc::get_mut`'s check of the weak
/// count, which a `Weak<Expr>` would make unsound. (The frontend's `Arc`s of other types may
/// have weak handles; none is made there now either, so any `downgrade` or `Weak` is flagged.)
#[test]
fn no_weak_handle_on_an_expression_is_made() {
    let root = crate::repo_root().join("frontend/src");
    let mut files = Vec::new();
    rust_files(&root, false, &mut files);
    assert!(files.len() > 20, "only {} .rs files under {}", files.len(), root.display());
    let mut bad = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        for (k, line) in src.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("downgrade") || code.contains("Weak<") || code.contains("Weak::") {
                bad.push(format!("{}:{}", f.display(), k + 1));
            }
        }
    }
    assert!(bad.is_empty(), "a weak handle in the frontend:\n  {}", bad.join("\n  "));
}

/// `ops_of!` and `ops_not_of!`, the table's classes as patterns (what replaces a catch-all where
/// whole classes are treated alike), against `OpKind::class`: each op in its own class's.
#[test]
fn class_patterns_follow_the_table() {
    let mut classes_of = vec![0; OpKind::ALL.len()];
    macro_rules! check {
        ($($class:ident)*) => {$(
            for (k, &op) in OpKind::ALL.iter().enumerate() {
                let of = matches!(op, kiln_ir::ops_of!($class));
                let name = (op.name(), stringify!($class));
                assert_eq!(of, op.class() == OpClass::$class, "{name:?}: ops_of!");
                assert_eq!(matches!(op, kiln_ir::ops_not_of!($class)), !of, "{name:?}: ops_not_of!");
                classes_of[k] += usize::from(of);
            }
        )*};
    }
    check!(Leaf Elementwise Gather Scatter Scan Sort Reduce View Copy Vendor Custom);
    assert!(classes_of.iter().all(|&n| n == 1), "an op of a class not checked here");
}

#[cfg(test)]
mod scanner {
    use super::*;

    fn scan(src: &str) -> Vec<usize> {
        violations(src, &variant_names())
    }

    #[test]
    fn wildcard_and_binding_arms_are_found() {
        let src = r#"
fn f(op: OpKind) -> u32 {
    match op {
        OpKind::Add => 1,
        _ => 2,
    }
}
fn g(op: OpKind) -> u32 {
    match op {
        OpKind::Add | OpKind::Sub => { 1 }
        other => other as u32,
    }
}
fn h(op: OpKind, d: DType) -> u32 {
    match (op, d) {
        (OpKind::Add, DType::Bool) => 1,
        (_, _) => 2,
    }
}
"#;
        assert_eq!(scan(src), [5, 11, 17]);
    }

    #[test]
    fn exhaustive_matches_and_predicates_pass() {
        let src = r#"
fn f(op: OpKind) -> u32 {
    match op {
        OpKind::Add | OpKind::Sub => 1,
        OpKind::Mul => { 2 }
        OpKind::Div if true => 3, // a guard
        OpKind::Div => 4,
        x if x.is_view() => 5, // a guarded binding catches nothing for sure
        _ if false => 6,
    }
}
fn g(op: OpKind) -> bool {
    matches!(op, OpKind::Add | OpKind::Sub)
}
fn h(op: Option<OpKind>) -> u32 {
    match op {
        Some(OpKind::Add) => 1,
        Some(_) => 2,
        None => 3,
    }
}
fn i(op: OpKind) -> u32 {
    match op {
        OpKind::Input | OpKind::Const | OpKind::Iota => 1,
        kiln_ir::ops_not_of!(Leaf) => 2,
    }
}
"#;
        assert_eq!(scan(src), Vec::<usize>::new());
    }

    #[test]
    fn nested_matches_on_other_enums_may_have_wildcards() {
        let src = r#"
fn f(op: OpKind, d: DType) -> u32 {
    match op {
        OpKind::Add => match d {
            DType::Bool => 1,
            _ => 2,
        },
        OpKind::Sub => {
            let c = |x: u8| match x { b'}' => 1, _ => 0 };
            match (d, "}") { (DType::Int8, _) => 3, _ => 4 }
        }
        OpKind::Mul => if d.is_float() { 5 } else { 6 }
        OpKind::Div => { 7 }
    }
}
fn g(op: OpKind, d: DType) -> u32 {
    match op {
        OpKind::Add => match d { DType::Bool => 1, _ => 2 }
        x => 3,
    }
}
fn i(op: OpKind) -> u32 {
    match op {
        ops_of!(View) => 1,
        _ => 2,
    }
}
fn h(x: &Array) -> Option<usize> {
    match (x.op, &x.attrs) {
        (OpKind::ArgMin | OpKind::ArgMax, Attrs::Reduce { axes, .. }) if axes.len() == 1 => {
            Some(axes[0])
        }
        (_, _) => None,
    }
}
"#;
        assert_eq!(scan(src), [19, 25, 33]);
    }

    #[test]
    fn strings_chars_and_comments_are_not_code() {
        let src = r##"
// match op { OpKind::Add => 1, _ => 2 }
/* match op { /* nested */ OpKind::Add => 1, _ => 2 } */
fn f(op: OpKind) -> (&'static str, char, u32) {
    let s = "match op { OpKind::Add => 1, _ => 2 } \" {";
    let r = r#"match op { OpKind::Add => 1, _ => 2 } " {"#;
    let c = '{';
    let q = '\'';
    let n = match op {
        OpKind::Add => 1, // _ => in a comment
        OpKind::Sub => '}' as u32,
        _ => 'x' as u32,
    };
    (s, c, n)
}
"##;
        assert_eq!(scan(src), [12]);
    }

    #[test]
    fn glob_imported_variants_count_in_their_scope() {
        let src = r#"
fn f(op: OpKind) -> u32 {
    use OpKind::*;
    match op {
        Add => 1,
        _ => 2,
    }
}
fn g(c: OpClass) -> u32 {
    // Outside the scope of the `use`: `Scatter` is OpClass's here.
    match c {
        OpClass::Scatter => 1,
        _ => 2,
    }
}
fn h(op: OpKind) -> u32 {
    use kiln_ir::OpKind::{Input, Label};
    match op {
        Input | Label => 1,
        // catch-all: every other op passes through unchanged, whatever it is
        _ => 2,
    }
}
"#;
        assert_eq!(scan(src), [6]);
    }
}
