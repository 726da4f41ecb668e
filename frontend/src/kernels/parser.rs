//! A recursive-descent parser for the subset of CUDA C++ that kernels are written in.
//!
//! ```text
//! body      := stmt*
//! stmt      := ";" | "{" stmt* "}" | "if" "(" expr ")" stmt ("else" stmt)?
//!            | "for" "(" (decl | expr)? ";" expr? ";" expr? ")" stmt
//!            | "return" expr? ";" | decl ";" | expr ";"
//! decl      := "const"? type declarator ("," declarator)*
//! declarator:= NAME ("=" assign)?
//! type      := C type words ("unsigned long long", "float", "int64_t" ...) | "complex" "<" type ">"
//!            | PLACEHOLDER | "auto"
//! expr      := assign ("," assign)*
//! assign    := ternary (("=" | "+=" | "-=" | "*=" | "/=" | "%=" | "&=" | "|=" | "^=" | "<<=" | ">>=") assign)?
//! ternary   := binary ("?" expr ":" ternary)?
//! binary    := unary (BINOP unary)*          (C's precedences, left associative)
//! unary     := ("-" | "+" | "!" | "~" | "++" | "--") unary | "(" type ")" unary | postfix
//! postfix   := primary ("[" expr "]" | "." NAME ("(" args ")")? | "++" | "--")*
//! primary   := INT | FLOAT | "true" | "false" | NAME | NAME "(" args ")" | type "(" expr ")"
//!            | "static_cast" "<" type ">" "(" expr ")" | "(" expr ")"
//! preamble  := function*
//! function  := ("template" "<" ("typename" | "class") NAME ("," ..)* ">")? SPECIFIER*
//!              (type | "void") NAME "(" (type NAME ("," type NAME)*)? ")" "{" stmt* "}"
//! ```
//!
//! `std::` and `thrust::` prefixes are accepted on function and type names. Constructs of C++
//! outside the subset (`while`, `break`, pointers, `sizeof`, ...) are errors naming them.

use kiln_ir::DType;

use super::ast::*;
use super::ctypes::{c_type, int_literal_type, is_type_word};
use super::diag::{DResult, Diag};
use super::lexer::{lex, Tok, Token};

/// Keywords of C++ outside the subset, with how an error names them.
fn unsupported_keyword(w: &str) -> Option<&'static str> {
    Some(match w {
        "while" => "a `while` loop (only `for` loops with a trip count known when the kernel is traced)",
        "do" => "a `do`-`while` loop (only `for` loops with a trip count known when the kernel is traced)",
        "switch" | "case" | "default" => "`switch` (use `if`/`else`)",
        "break" => "`break`",
        "continue" => "`continue`",
        "goto" => "`goto`",
        "struct" | "class" | "union" | "enum" => "a type definition",
        "typedef" | "using" => "a type alias",
        "sizeof" => "`sizeof`",
        "new" | "delete" => "dynamic memory",
        "asm" | "__asm__" => "inline assembly",
        "__shared__" | "__constant__" | "extern" | "volatile" => "a storage qualifier",
        "reinterpret_cast" | "const_cast" | "dynamic_cast" => "a cast other than `static_cast` and C casts",
        "throw" | "try" | "catch" => "exceptions",
        _ => return None,
    })
}

/// Deepest nesting of statements and expressions a kernel's code may have (each operator of a
/// chain such as `a + b + c`, whose tree leans left, counts as a level). The parser, the tracer
/// and the tree's drop recurse once per level: a few thousand parentheses overflowed the stack
/// (found by the `kernel_code` fuzz target); this many fit a thread's default 2 MiB.
pub(crate) const MAX_NESTING: usize = 256;

pub(crate) struct Parser<'p> {
    toks: Vec<Token>,
    pos: usize,
    /// The nesting at the cursor (see [`MAX_NESTING`]).
    depth: usize,
    /// The type placeholders in scope (`T` of the parameter lists, template parameters).
    placeholders: &'p [String],
    /// Template parameters of the function being parsed.
    local_types: Vec<String>,
    /// Where the text ends (for "expected X, found the end").
    end: Span,
}

/// Parses statements (an ElementwiseKernel's operation, a post-map expression).
pub(crate) fn parse_body(src: &str, placeholders: &[String]) -> DResult<Vec<Stmt>> {
    let mut p = Parser::new(src, placeholders)?;
    let mut out = Vec::new();
    while !p.at_end() {
        out.push(p.stmt()?);
    }
    Ok(out)
}

/// Parses one expression that must take the whole text (a map or reduce expression, an identity).
pub(crate) fn parse_expr(src: &str, placeholders: &[String]) -> DResult<Expr> {
    let mut p = Parser::new(src, placeholders)?;
    if p.at_end() {
        return Err(Diag::syntax(p.end, "expected an expression, found nothing"));
    }
    let e = p.expr()?;
    p.eat(";");
    if !p.at_end() {
        return Err(p.expected("the end of the expression"));
    }
    Ok(e)
}

/// Parses a type that must take the whole text (a reduction's `reduce_type`).
pub(crate) fn parse_type(src: &str, placeholders: &[String]) -> DResult<TypeName> {
    let mut p = Parser::new(src, placeholders)?;
    let t = p.type_name()?;
    if !p.at_end() {
        return Err(p.expected("the end of the type"));
    }
    Ok(t)
}

/// Parses a preamble: device functions.
pub(crate) fn parse_preamble(src: &str, placeholders: &[String]) -> DResult<Vec<Function>> {
    let mut p = Parser::new(src, placeholders)?;
    let mut out = Vec::new();
    while !p.at_end() {
        out.push(p.function()?);
    }
    Ok(out)
}

impl<'p> Parser<'p> {
    fn new(src: &str, placeholders: &'p [String]) -> DResult<Parser<'p>> {
        let toks = lex(src)?;
        let lines: Vec<&str> = src.split('\n').collect();
        let end =
            Span { line: lines.len(), column: lines.last().map_or(0, |l| l.chars().count()) + 1 };
        Ok(Parser { toks, pos: 0, depth: 0, placeholders, local_types: Vec::new(), end })
    }

    fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    /// One level deeper (a caller restores `depth` when it returns); an error past
    /// [`MAX_NESTING`].
    fn deeper(&mut self) -> DResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(Diag::unsupported(
                self.span(),
                format!("code nested more than {MAX_NESTING} deep (statements, parentheses, operators of one chain)"),
            ));
        }
        Ok(())
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }

    fn span(&self) -> Span {
        self.toks.get(self.pos).map_or(self.end, |t| t.span)
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
    }

    fn is_at(&self, k: usize, p: &str) -> bool {
        matches!(self.peek_at(k), Some(Tok::Punct(q)) if *q == p)
    }

    fn ident_at(&self, k: usize) -> Option<&str> {
        match self.peek_at(k) {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    fn is_word(&self, w: &str) -> bool {
        self.ident_at(0) == Some(w)
    }

    fn eat(&mut self, p: &str) -> bool {
        let yes = self.is(p);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn eat_word(&mut self, w: &str) -> bool {
        let yes = self.is_word(w);
        if yes {
            self.pos += 1;
        }
        yes
    }

    fn expected(&self, what: &str) -> Diag {
        let found = self.peek().map_or("the end of the code".to_string(), Tok::describe);
        Diag::syntax(self.span(), format!("expected {what}, found {found}"))
    }

    /// The `;` ending a statement; CuPy appends one to the code, so the last may be left out.
    fn end_stmt(&mut self) -> DResult<()> {
        if self.at_end() {
            return Ok(());
        }
        self.expect(";")
    }

    fn expect(&mut self, p: &str) -> DResult<()> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }

    fn name(&mut self) -> DResult<(String, Span)> {
        let span = self.span();
        match self.peek() {
            Some(Tok::Ident(s)) => {
                let s = s.clone();
                self.pos += 1;
                Ok((s, span))
            }
            _ => Err(self.expected("a name")),
        }
    }

    fn is_placeholder(&self, w: &str) -> bool {
        self.placeholders.iter().any(|p| p == w) || self.local_types.iter().any(|p| p == w)
    }

    /// Skips `std::` / `thrust::` at the cursor.
    fn skip_namespace(&mut self) {
        while matches!(self.ident_at(0), Some("std" | "thrust" | "cuda")) && self.is_at(1, "::") {
            self.pos += 2;
        }
    }

    /// Whether a type starts at the cursor (after any namespace).
    fn type_starts(&self) -> bool {
        let mut k = 0;
        while matches!(self.ident_at(k), Some("std" | "thrust" | "cuda")) && self.is_at(k + 1, "::")
        {
            k += 2;
        }
        match self.ident_at(k) {
            Some(w) => is_type_word(w) || self.is_placeholder(w),
            None => false,
        }
    }

    /// A type (see the grammar).
    fn type_name(&mut self) -> DResult<TypeName> {
        let depth = self.depth;
        let t = self.type_name_inner();
        self.depth = depth;
        t
    }

    fn type_name_inner(&mut self) -> DResult<TypeName> {
        self.deeper()?;
        self.skip_namespace();
        let span = self.span();
        let first = self.ident_at(0).map(str::to_string);
        match first.as_deref() {
            Some("auto") => {
                self.pos += 1;
                return Ok(TypeName::Auto);
            }
            Some("complex") => {
                self.pos += 1;
                self.expect("<")?;
                let inner = self.type_name()?;
                self.expect(">")?;
                return match inner {
                    TypeName::C(DType::Float32) => Ok(TypeName::C(DType::Complex64)),
                    TypeName::C(DType::Float64) => Ok(TypeName::C(DType::Complex128)),
                    _ => Err(Diag::unsupported(
                        span,
                        "complex of a type other than float and double",
                    )),
                };
            }
            Some(w) if self.is_placeholder(w) => {
                self.pos += 1;
                return Ok(TypeName::Placeholder(w.to_string()));
            }
            _ => {}
        }
        let mut words: Vec<String> = Vec::new();
        while let Some(w) = self.ident_at(0) {
            if !is_type_word(w) || matches!(w, "auto" | "complex") {
                break;
            }
            words.push(w.to_string());
            self.pos += 1;
        }
        if words.is_empty() {
            return Err(self.expected("a type"));
        }
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        let ty = c_type(&refs)
            .ok_or_else(|| Diag::code(span, format!("unknown type `{}`", words.join(" "))))?;
        if self.is("*") || self.is("&") {
            return Err(Diag::unsupported(self.span(), "pointers and references"));
        }
        Ok(TypeName::C(ty))
    }

    // ---- statements

    fn stmt(&mut self) -> DResult<Stmt> {
        let depth = self.depth;
        let s = self.stmt_inner();
        self.depth = depth;
        s
    }

    fn stmt_inner(&mut self) -> DResult<Stmt> {
        self.deeper()?;
        let span = self.span();
        if let Some(w) = self.ident_at(0) {
            if let Some(what) = unsupported_keyword(w) {
                return Err(Diag::unsupported(span, what));
            }
        }
        let kind = if self.eat(";") {
            StmtKind::Empty
        } else if self.eat("{") {
            let mut body = Vec::new();
            while !self.eat("}") {
                if self.at_end() {
                    return Err(self.expected("`}`"));
                }
                body.push(self.stmt()?);
            }
            StmtKind::Block(body)
        } else if self.eat_word("if") {
            self.expect("(")?;
            let cond = self.expr()?;
            self.expect(")")?;
            let then = Box::new(self.stmt()?);
            let els = if self.eat_word("else") { Some(Box::new(self.stmt()?)) } else { None };
            StmtKind::If { cond, then, els }
        } else if self.eat_word("for") {
            self.expect("(")?;
            let init = if self.is(";") {
                None
            } else if self.decl_starts() {
                Some(Box::new(self.decl()?))
            } else {
                let s = self.span();
                Some(Box::new(Stmt { kind: StmtKind::Expr(self.expr()?), span: s }))
            };
            self.expect(";")?;
            let cond = if self.is(";") { None } else { Some(self.expr()?) };
            self.expect(";")?;
            let step = if self.is(")") { None } else { Some(self.expr()?) };
            self.expect(")")?;
            let body = Box::new(self.stmt()?);
            StmtKind::For { init, cond, step, body }
        } else if self.eat_word("return") {
            let e = if self.is(";") { None } else { Some(self.expr()?) };
            self.end_stmt()?;
            StmtKind::Return(e)
        } else if self.decl_starts() {
            let d = self.decl()?;
            self.end_stmt()?;
            return Ok(d);
        } else {
            let e = self.expr()?;
            self.end_stmt()?;
            StmtKind::Expr(e)
        };
        Ok(Stmt { kind, span })
    }

    /// Whether a declaration starts at the cursor: `const`, or a type followed by a name.
    fn decl_starts(&self) -> bool {
        if self.is_word("const") {
            return true;
        }
        if !self.type_starts() {
            return false;
        }
        // A type followed by `(` is a functional cast in an expression.
        let mut k = 0;
        while matches!(self.ident_at(k), Some("std" | "thrust" | "cuda")) && self.is_at(k + 1, "::")
        {
            k += 2;
        }
        if self.ident_at(k) == Some("complex") {
            return !self.toks[self.pos + k..]
                .iter()
                .position(|t| t.tok == Tok::Punct(">"))
                .is_some_and(|g| {
                    matches!(
                        self.toks.get(self.pos + k + g + 1).map(|t| &t.tok),
                        Some(Tok::Punct("("))
                    )
                });
        }
        while self.ident_at(k).is_some_and(|w| is_type_word(w) || self.is_placeholder(w)) {
            k += 1;
        }
        !self.is_at(k, "(")
    }

    fn decl(&mut self) -> DResult<Stmt> {
        let span = self.span();
        let mut is_const = self.eat_word("const");
        let ty = self.type_name()?;
        if self.eat_word("const") {
            is_const = true;
        }
        let mut vars = Vec::new();
        loop {
            if self.is("*") || self.is("&") {
                return Err(Diag::unsupported(self.span(), "pointers and references"));
            }
            let (name, nspan) = self.name()?;
            let array = if self.eat("[") {
                let len = if self.is("]") { None } else { Some(self.expr()?) };
                self.expect("]")?;
                if self.is("[") {
                    return Err(Diag::unsupported(self.span(), "local arrays of arrays"));
                }
                Some(len)
            } else {
                None
            };
            if self.is("(") {
                return Err(Diag::unsupported(
                    self.span(),
                    "a function declaration or constructor call syntax",
                ));
            }
            let (mut init, mut list) = (None, None);
            if self.eat("=") {
                if self.eat("{") {
                    let mut items = Vec::new();
                    while !self.eat("}") {
                        items.push(self.assign()?);
                        if !self.eat(",") {
                            self.expect("}")?;
                            break;
                        }
                    }
                    list = Some(items);
                } else {
                    init = Some(self.assign()?);
                }
            }
            if array.is_some() && init.is_some() {
                return Err(Diag::code(
                    nspan,
                    format!("the array `{name}` is initialised by a list (`= {{..}}`)"),
                ));
            }
            if array.is_none() && list.is_some() {
                return Err(Diag::unsupported(
                    nspan,
                    "a brace initialiser of a variable that is not an array",
                ));
            }
            if array == Some(None) && list.is_none() {
                return Err(Diag::code(
                    nspan,
                    format!("the array `{name}[]` needs a list to give its length"),
                ));
            }
            vars.push(Declarator { name, span: nspan, init, array, list });
            if !self.eat(",") {
                break;
            }
        }
        Ok(Stmt { kind: StmtKind::Decl { ty, is_const, vars }, span })
    }

    // ---- expressions

    pub(crate) fn expr(&mut self) -> DResult<Expr> {
        let depth = self.depth;
        let e = self.expr_inner();
        self.depth = depth;
        e
    }

    fn expr_inner(&mut self) -> DResult<Expr> {
        let mut e = self.assign()?;
        while self.is(",") {
            self.deeper()?;
            let span = self.span();
            self.pos += 1;
            let r = self.assign()?;
            e = Expr { kind: ExprKind::Comma(Box::new(e), Box::new(r)), span };
        }
        Ok(e)
    }

    fn assign(&mut self) -> DResult<Expr> {
        let lhs = self.ternary()?;
        let op = match self.peek() {
            Some(Tok::Punct(p)) => match *p {
                "=" => Some(None),
                "+=" => Some(Some(BinOp::Add)),
                "-=" => Some(Some(BinOp::Sub)),
                "*=" => Some(Some(BinOp::Mul)),
                "/=" => Some(Some(BinOp::Div)),
                "%=" => Some(Some(BinOp::Rem)),
                "&=" => Some(Some(BinOp::BitAnd)),
                "|=" => Some(Some(BinOp::BitOr)),
                "^=" => Some(Some(BinOp::BitXor)),
                "<<=" => Some(Some(BinOp::Shl)),
                ">>=" => Some(Some(BinOp::Shr)),
                _ => None,
            },
            _ => None,
        };
        let Some(op) = op else { return Ok(lhs) };
        let span = self.span();
        let depth = self.depth;
        self.deeper()?;
        self.pos += 1;
        let value = self.assign()?;
        self.depth = depth;
        Ok(Expr {
            kind: ExprKind::Assign { op, target: Box::new(lhs), value: Box::new(value) },
            span,
        })
    }

    fn ternary(&mut self) -> DResult<Expr> {
        let c = self.binary(0)?;
        if !self.is("?") {
            return Ok(c);
        }
        let span = self.span();
        let depth = self.depth;
        self.deeper()?;
        self.pos += 1;
        let t = self.expr()?;
        self.expect(":")?;
        let f = self.ternary()?;
        self.depth = depth;
        Ok(Expr { kind: ExprKind::Ternary(Box::new(c), Box::new(t), Box::new(f)), span })
    }

    /// The binary operator at the cursor and its precedence (higher binds tighter).
    fn binop(&self) -> Option<(BinOp, u8)> {
        let Some(Tok::Punct(p)) = self.peek() else { return None };
        use BinOp::*;
        Some(match *p {
            "||" => (Or, 1),
            "&&" => (And, 2),
            "|" => (BitOr, 3),
            "^" => (BitXor, 4),
            "&" => (BitAnd, 5),
            "==" => (Eq, 6),
            "!=" => (Ne, 6),
            "<" => (Lt, 7),
            "<=" => (Le, 7),
            ">" => (Gt, 7),
            ">=" => (Ge, 7),
            "<<" => (Shl, 8),
            ">>" => (Shr, 8),
            "+" => (Add, 9),
            "-" => (Sub, 9),
            "*" => (Mul, 10),
            "/" => (Div, 10),
            "%" => (Rem, 10),
            _ => return None,
        })
    }

    /// Operators of precedence above `min`, by precedence climbing.
    fn binary(&mut self, min: u8) -> DResult<Expr> {
        let depth = self.depth;
        let mut lhs = self.unary()?;
        while let Some((op, prec)) = self.binop() {
            if prec <= min {
                break;
            }
            // The tree leans left: one level more per operator.
            self.deeper()?;
            let span = self.span();
            self.pos += 1;
            let rhs = self.binary(prec)?;
            lhs = Expr { kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span };
        }
        self.depth = depth;
        Ok(lhs)
    }

    fn unary(&mut self) -> DResult<Expr> {
        let depth = self.depth;
        let e = self.unary_inner();
        self.depth = depth;
        e
    }

    fn unary_inner(&mut self) -> DResult<Expr> {
        self.deeper()?;
        let span = self.span();
        let op = match self.peek() {
            Some(Tok::Punct("-")) => Some(UnOp::Neg),
            Some(Tok::Punct("+")) => Some(UnOp::Plus),
            Some(Tok::Punct("!")) => Some(UnOp::Not),
            Some(Tok::Punct("~")) => Some(UnOp::BitNot),
            _ => None,
        };
        if let Some(op) = op {
            self.pos += 1;
            let e = self.unary()?;
            return Ok(Expr { kind: ExprKind::Unary(op, Box::new(e)), span });
        }
        if self.is("++") || self.is("--") {
            let inc = self.is("++");
            self.pos += 1;
            let e = self.unary()?;
            return Ok(Expr {
                kind: ExprKind::Step { target: Box::new(e), inc, prefix: true },
                span,
            });
        }
        if self.is("*") || self.is("&") {
            return Err(Diag::unsupported(span, "pointers (`*`, `&` as unary operators)"));
        }
        if self.is_word("sizeof") {
            return Err(Diag::unsupported(span, "`sizeof`"));
        }
        // A C cast: `(type) unary`.
        if self.is("(") && {
            self.pos += 1;
            let t = self.type_starts();
            self.pos -= 1;
            t
        } {
            self.pos += 1;
            let ty = self.type_name()?;
            self.expect(")")?;
            let e = self.unary()?;
            return Ok(Expr { kind: ExprKind::Cast(ty, Box::new(e)), span });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> DResult<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.is("[") || self.is(".") || self.is("++") || self.is("--") {
                // The tree leans left: one level more per postfix operator (`unary` restores).
                self.deeper()?;
            }
            // A postfix expression is where its base starts.
            let span = e.span;
            if self.eat("[") {
                let i = self.expr()?;
                self.expect("]")?;
                e = Expr { kind: ExprKind::Index(Box::new(e), Box::new(i)), span };
            } else if self.eat(".") {
                let (name, _) = self.name()?;
                let args = if self.eat("(") {
                    self.args()?
                } else {
                    return Err(Diag::unsupported(self.span(), "member access"));
                };
                e = Expr { kind: ExprKind::Method { base: Box::new(e), name, args }, span };
            } else if self.is("++") || self.is("--") {
                let inc = self.is("++");
                self.pos += 1;
                e = Expr { kind: ExprKind::Step { target: Box::new(e), inc, prefix: false }, span };
            } else if self.is("->") {
                return Err(Diag::unsupported(self.span(), "pointers (`->`)"));
            } else if self.is("(") {
                return Err(Diag::unsupported(
                    self.span(),
                    "calling an expression that is not a function name",
                ));
            } else {
                return Ok(e);
            }
        }
    }

    /// Arguments after `(`, through `)`.
    fn args(&mut self) -> DResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.eat(")") {
            return Ok(args);
        }
        loop {
            args.push(self.assign()?);
            if self.eat(")") {
                return Ok(args);
            }
            self.expect(",")?;
        }
    }

    fn primary(&mut self) -> DResult<Expr> {
        let span = self.span();
        let Some(tok) = self.peek().cloned() else { return Err(self.expected("an expression")) };
        let kind = match tok {
            Tok::Int { value, unsigned, long, radix_not_10 } => {
                self.pos += 1;
                ExprKind::Int {
                    value,
                    dtype: int_literal_type(value, unsigned, long, radix_not_10),
                }
            }
            Tok::Float { value, single } => {
                self.pos += 1;
                ExprKind::Float {
                    value,
                    dtype: if single { DType::Float32 } else { DType::Float64 },
                }
            }
            Tok::Punct("(") => {
                self.pos += 1;
                let e = self.expr()?;
                self.expect(")")?;
                return Ok(e);
            }
            Tok::Ident(w) => {
                if let Some(what) = unsupported_keyword(&w) {
                    return Err(Diag::unsupported(span, what));
                }
                if w == "static_cast" {
                    self.pos += 1;
                    self.expect("<")?;
                    let ty = self.type_name()?;
                    self.expect(">")?;
                    self.expect("(")?;
                    let e = self.expr()?;
                    self.expect(")")?;
                    return Ok(Expr { kind: ExprKind::Cast(ty, Box::new(e)), span });
                }
                if self.type_starts() {
                    // A functional cast: `float(x)`, `T(x)`, `complex<float>(x)`.
                    let ty = self.type_name()?;
                    if !self.eat("(") {
                        return Err(self.expected("`(` after a type in an expression"));
                    }
                    let mut args = self.args()?;
                    if args.len() != 1 {
                        return Err(Diag::unsupported(
                            span,
                            "a constructor call with other than one argument",
                        ));
                    }
                    return Ok(Expr { kind: ExprKind::Cast(ty, Box::new(args.remove(0))), span });
                }
                self.skip_namespace();
                let (name, _) = self.name()?;
                match name.as_str() {
                    "true" => ExprKind::Bool(true),
                    "false" => ExprKind::Bool(false),
                    _ if self.eat("(") => ExprKind::Call { name, args: self.args()? },
                    _ if self.is("::") => {
                        return Err(Diag::unsupported(self.span(), "a qualified name"))
                    }
                    _ => ExprKind::Name(name),
                }
            }
            Tok::Punct(_) => return Err(self.expected("an expression")),
        };
        Ok(Expr { kind, span })
    }

    // ---- the preamble

    fn function(&mut self) -> DResult<Function> {
        let span = self.span();
        let mut templates = Vec::new();
        if self.eat_word("template") {
            self.expect("<")?;
            loop {
                if !(self.eat_word("typename") || self.eat_word("class")) {
                    return Err(self.expected("`typename`"));
                }
                templates.push(self.name()?.0);
                if self.eat(">") {
                    break;
                }
                self.expect(",")?;
            }
        }
        self.local_types = templates.clone();
        while matches!(
            self.ident_at(0),
            Some(
                "__device__"
                    | "__host__"
                    | "__forceinline__"
                    | "__inline__"
                    | "inline"
                    | "static"
                    | "__noinline__"
            )
        ) {
            self.pos += 1;
        }
        if let Some(w) = self.ident_at(0) {
            if let Some(what) = unsupported_keyword(w) {
                return Err(Diag::unsupported(self.span(), what));
            }
        }
        let ret = if self.eat_word("void") { None } else { Some(self.type_name()?) };
        let (name, _) = self.name()?;
        self.expect("(")?;
        let mut params = Vec::new();
        if !self.eat(")") {
            loop {
                self.eat_word("const");
                let ty = self.type_name()?;
                self.eat_word("const");
                if self.is("&") || self.is("*") {
                    return Err(Diag::unsupported(self.span(), "pointer and reference parameters"));
                }
                params.push(FnParam { ty, name: self.name()?.0 });
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        self.expect("{")?;
        let mut body = Vec::new();
        while !self.eat("}") {
            if self.at_end() {
                return Err(self.expected("`}`"));
            }
            body.push(self.stmt()?);
        }
        self.local_types.clear();
        Ok(Function { name, span, ret, templates, params, body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::diag::DiagKind;

    fn ph() -> Vec<String> {
        vec!["T".to_string()]
    }

    /// The expression as fully parenthesised text.
    fn show(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Int { value, .. } => value.to_string(),
            ExprKind::Float { value, .. } => format!("{value:?}"),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Name(n) => n.clone(),
            ExprKind::Unary(op, x) => format!("({}{})", op.symbol(), show(x)),
            ExprKind::Binary(op, a, b) => format!("({} {} {})", show(a), op.symbol(), show(b)),
            ExprKind::Assign { op, target, value } => {
                format!("({} {}= {})", show(target), op.map_or("", |o| o.symbol()), show(value))
            }
            ExprKind::Step { target, inc, prefix } => {
                let s = if *inc { "++" } else { "--" };
                if *prefix {
                    format!("({s}{})", show(target))
                } else {
                    format!("({}{s})", show(target))
                }
            }
            ExprKind::Ternary(c, t, f) => format!("({} ? {} : {})", show(c), show(t), show(f)),
            ExprKind::Cast(t, x) => format!("(({t:?}) {})", show(x)),
            ExprKind::Call { name, args } => {
                format!("{name}({})", args.iter().map(show).collect::<Vec<_>>().join(", "))
            }
            ExprKind::Index(a, i) => format!("{}[{}]", show(a), show(i)),
            ExprKind::Method { base, name, args } => {
                format!(
                    "{}.{name}({})",
                    show(base),
                    args.iter().map(show).collect::<Vec<_>>().join(", ")
                )
            }
            ExprKind::Comma(a, b) => format!("({}, {})", show(a), show(b)),
        }
    }

    fn e(s: &str) -> String {
        show(&parse_expr(s, &ph()).unwrap())
    }

    #[test]
    fn precedence_and_associativity() {
        assert_eq!(e("a + b * c - d"), "((a + (b * c)) - d)");
        assert_eq!(e("a < b == c < d && e || f"), "((((a < b) == (c < d)) && e) || f)");
        assert_eq!(e("x = y += 2"), "(x = (y += 2))");
        assert_eq!(e("c ? a : d ? b : e"), "(c ? a : (d ? b : e))");
        assert_eq!(e("-x * !y"), "((-x) * (!y))");
        assert_eq!(e("a & b ^ c | d << 1"), "(((a & b) ^ c) | (d << 1))");
    }

    #[test]
    fn casts_calls_indexing_and_special_names() {
        assert_eq!(e("(float)x + T(y)"), "(((C(Float32)) x) + ((Placeholder(\"T\")) y))");
        assert_eq!(e("static_cast<long long>(i)"), "((C(Int64)) i)");
        assert_eq!(e("y[_ind.size() - i - 1]"), "y[((_ind.size() - i) - 1)]");
        assert_eq!(e("std::max(a, fma(a, b, c))"), "max(a, fma(a, b, c))");
        assert_eq!(e("(x - y) * (x - y)"), "((x - y) * (x - y))");
        assert_eq!(e("x++ + --y"), "((x++) + (--y))");
    }

    #[test]
    fn statements() {
        let body = parse_body(
            "T diff = x - y;\nif (diff > 0) { z = diff; } else z = -diff;\nfor (int k = 0; k < 4; ++k) z += k;",
            &ph(),
        )
        .unwrap();
        assert_eq!(body.len(), 3);
        assert!(
            matches!(&body[0].kind, StmtKind::Decl { ty: TypeName::Placeholder(t), vars, .. } if t == "T" && vars[0].name == "diff")
        );
        assert!(matches!(&body[1].kind, StmtKind::If { els: Some(_), .. }));
        assert!(matches!(
            &body[2].kind,
            StmtKind::For { init: Some(_), cond: Some(_), step: Some(_), .. }
        ));
        assert_eq!(body[2].span, Span { line: 3, column: 1 });
        let d = parse_body("unsigned long long a = 1, b; const float c = 2.f;", &[]).unwrap();
        assert!(
            matches!(&d[0].kind, StmtKind::Decl { ty: TypeName::C(DType::UInt64), vars, .. } if vars.len() == 2)
        );
        assert!(matches!(
            &d[1].kind,
            StmtKind::Decl { ty: TypeName::C(DType::Float32), is_const: true, .. }
        ));
    }

    #[test]
    fn errors_have_positions() {
        let err = parse_body("z = x +;", &[]).unwrap_err();
        assert_eq!((err.kind, err.span), (DiagKind::Syntax, Span { line: 1, column: 8 }));
        assert_eq!(err.message, "expected an expression, found `;`");
        let err = parse_body("z = x\ny = 2;", &[]).unwrap_err();
        assert_eq!((err.span.line, err.span.column), (2, 1));
        assert_eq!(err.message, "expected `;`, found `y`");
        let err = parse_body("int k = 0;\n  while (k < 3) k++;", &[]).unwrap_err();
        assert_eq!((err.kind, err.span), (DiagKind::Unsupported, Span { line: 2, column: 3 }));
        assert!(err.message.contains("`while`"), "{}", err.message);
        let err = parse_body("float *p;", &[]).unwrap_err();
        assert_eq!(err.kind, DiagKind::Unsupported);
        // The last `;` may be left out, as in CuPy.
        assert_eq!(parse_body("z = x", &[]).unwrap().len(), 1);
        let err = parse_body("{ z = x", &[]).unwrap_err();
        assert_eq!(err.message, "expected `}`, found the end of the code");
    }

    #[test]
    fn device_functions() {
        let f = parse_preamble(
            "template <typename U> __device__ inline U twice(U a) { return a + a; }\n__device__ float one() { return 1.0f; }",
            &[],
        )
        .unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].templates, vec!["U".to_string()]);
        assert_eq!(
            f[0].params,
            vec![FnParam { ty: TypeName::Placeholder("U".into()), name: "a".into() }]
        );
        assert_eq!(f[1].ret, Some(TypeName::C(DType::Float32)));
    }
}
