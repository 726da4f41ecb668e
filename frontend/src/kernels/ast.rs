//! The syntax tree of kernel code: expressions and statements, each with its position.

use kiln_ir::DType;

/// A position in kernel code: 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Span {
    pub line: usize,
    pub column: usize,
}

/// A type as written: a C/CUDA type (resolved to its dtype) or a type placeholder (`T`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TypeName {
    /// A C type: `float`, `unsigned int`, `long long`, `int64_t`, `complex<float>` ...
    C(DType),
    /// A type placeholder of the parameter lists (`T`), bound when the kernel is called.
    Placeholder(String),
    /// `auto`: the type of the initialiser.
    Auto,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnOp {
    Neg,
    Plus,
    Not,
    BitNot,
}

impl UnOp {
    pub fn symbol(self) -> &'static str {
        match self {
            UnOp::Neg => "-",
            UnOp::Plus => "+",
            UnOp::Not => "!",
            UnOp::BitNot => "~",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Rem => "%",
            Shl => "<<",
            Shr => ">>",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            BitAnd => "&",
            BitXor => "^",
            BitOr => "|",
            And => "&&",
            Or => "||",
        }
    }
}

/// An expression and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ExprKind {
    /// An integer literal with its C type (`int`, `long`, `unsigned` ... by value and suffix).
    Int {
        value: u128,
        dtype: DType,
    },
    /// A floating literal: `double`, or `float` with an `f` suffix.
    Float {
        value: f64,
        dtype: DType,
    },
    Bool(bool),
    Name(String),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `target = value`, or `target op= value` (`op` is `Some`).
    Assign {
        op: Option<BinOp>,
        target: Box<Expr>,
        value: Box<Expr>,
    },
    /// `++x`, `x++`, `--x`, `x--`: `inc` for `++`, `prefix` for the prefix forms.
    Step {
        target: Box<Expr>,
        inc: bool,
        prefix: bool,
    },
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `(T) e`, `T(e)`, `static_cast<T>(e)`.
    Cast(TypeName, Box<Expr>),
    /// `f(args)`: a math function or a device function of the preamble.
    Call {
        name: String,
        args: Vec<Expr>,
    },
    /// `a[i]`: an element of a raw argument.
    Index(Box<Expr>, Box<Expr>),
    /// `a.f(args)`: `_ind.size()`, `y.size()`.
    Method {
        base: Box<Expr>,
        name: String,
        args: Vec<Expr>,
    },
    /// `a, b`: both evaluated, the value is `b`'s.
    Comma(Box<Expr>, Box<Expr>),
}

/// A statement and where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

/// One declarator of a declaration: `name = init`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Declarator {
    pub name: String,
    pub span: Span,
    pub init: Option<Expr>,
    /// A local array: `name[len]` (`Some(None)` for `name[]`, its length from the list).
    pub array: Option<Option<Expr>>,
    /// A brace-enclosed initialiser list: `= {a, b, c}`.
    pub list: Option<Vec<Expr>>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StmtKind {
    /// `T a = 1, b;` (`is_const` for `const T a = ..`).
    Decl {
        ty: TypeName,
        is_const: bool,
        vars: Vec<Declarator>,
    },
    Expr(Expr),
    If {
        cond: Expr,
        then: Box<Stmt>,
        els: Option<Box<Stmt>>,
    },
    For {
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        step: Option<Expr>,
        body: Box<Stmt>,
    },
    Block(Vec<Stmt>),
    /// `return e;` (device functions of the preamble only).
    Return(Option<Expr>),
    Empty,
}

/// A parameter of a device function.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FnParam {
    pub ty: TypeName,
    pub name: String,
}

/// A device function of the preamble: `__device__ T name(T a, ..) { body }`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Function {
    pub name: String,
    pub span: Span,
    /// `None` for `void`.
    pub ret: Option<TypeName>,
    /// Names of its template type parameters (`template <typename T>`), bound by the arguments.
    pub templates: Vec<String>,
    pub params: Vec<FnParam>,
    pub body: Vec<Stmt>,
}
