//! The op set, declared once.
//!
//! Every op of kiln is one row of the table in [`ops!`] below: its IR name, class, arity, the
//! dtypes it accepts, the rule for its result dtype, the attributes it carries and a one-line doc.
//! The textual IR, the verifier ([`crate::infer`]), the reference evaluator and the compiler's
//! e-graph language all read this table; adding an op is adding a row (and its semantics in the
//! evaluator, which an exhaustive `match` enforces). [`ops_of!`] and [`ops_not_of!`] give the ops
//! of classes as a pattern, so that a `match` on ops can treat whole classes alike and still be
//! exhaustive.
//!
//! Elementwise ops in the IR take operands of one dtype and one shape: the frontend makes
//! promotion (`cast`) and broadcasting (`broadcast_to`) explicit before it builds a node.

use crate::dtype::{DType, DTypeKind};

/// What an op does to memory, which decides how it fuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// No inputs: materialised arrays, constants, index ramps.
    Leaf,
    /// One output element from the same element of each input.
    Elementwise,
    /// Reduces over axes.
    Reduce,
    /// Re-indexes its input without computing (reshape, transpose, broadcast, slice ...).
    View,
    /// Builds a new array from whole inputs (concatenate, stack, contiguous copy).
    Copy,
    /// Reads its first input at positions computed from its second (`take`): it fuses with what
    /// computes the positions, but the input it reads from must be a buffer in memory.
    Gather,
    /// Combines its third input into a copy of its first at rows chosen by its second
    /// (`np.add.at`, `np.maximum.at`, `a[idx] = v`): a kernel over the positions, whose values
    /// and positions fuse into it; the rows written are the result.
    Scatter,
    /// Accumulates along one axis (`np.cumsum`, `np.maximum.accumulate`): element `i` combines
    /// elements `0..=i` of its row in order. A kernel over the rows, whose input's producers
    /// fuse into it.
    Scan,
    /// Orders the elements along one axis (`np.sort`, `np.argsort`): element `i` of a row is
    /// the row's `i`-th smallest (or its position), NaN last, ties in their order (stable). A
    /// kernel over the rows, whose input's producers fuse into it.
    Sort,
    /// Handed to a vendor library (cuBLAS, cuFFT): a fusion boundary.
    Vendor,
    /// A user's raw kernel: a fusion boundary.
    Custom,
}

/// Number of inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arity {
    Fixed(usize),
    /// One or more.
    Variadic,
}

/// A set of dtype kinds, as a bit mask over [`DTypeKind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Domain(pub u8);

impl Domain {
    pub const B: Domain = Domain(1);
    pub const I: Domain = Domain(2);
    pub const U: Domain = Domain(4);
    pub const F: Domain = Domain(8);
    pub const C: Domain = Domain(16);
    pub const ANY: Domain = Domain(31);
    pub const INT: Domain = Domain(2 | 4);
    pub const INT_BOOL: Domain = Domain(1 | 2 | 4);
    pub const NUM: Domain = Domain(2 | 4 | 8 | 16);
    pub const REAL_NUM: Domain = Domain(2 | 4 | 8);
    pub const INEXACT: Domain = Domain(8 | 16);
    /// Every dtype with an order: all but complex.
    pub const ORDERED: Domain = Domain(1 | 2 | 4 | 8);

    pub const fn contains(self, d: DType) -> bool {
        let bit = match d.kind() {
            DTypeKind::Bool => 1,
            DTypeKind::SignedInt => 2,
            DTypeKind::UnsignedInt => 4,
            DTypeKind::Float => 8,
            DTypeKind::Complex => 16,
        };
        self.0 & bit != 0
    }

    /// Names of the kinds in the set, for error messages: `"int, uint, float"`.
    pub fn describe(self) -> String {
        let names = ["bool", "int", "uint", "float", "complex"];
        (0..5).filter(|b| self.0 & (1 << b) != 0).map(|b| names[b]).collect::<Vec<_>>().join(", ")
    }
}

/// How an op's result dtype follows from its inputs and attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DTypeRule {
    /// Leaves: the node declares its dtype.
    Declared,
    /// All inputs share one dtype, which is the result's.
    Same,
    /// All inputs share one dtype; the result is bool (comparisons, predicates).
    Bool,
    /// The real dtype of the input (`abs`, `real`, `imag`: complex64 → float32).
    Real,
    /// NumPy's sum/prod accumulator: bool and signed ints → int64, unsigned → uint64, else same.
    SumLike,
    /// int64 indices (argmax, argmin).
    Index,
    /// `where(cond, x, y)`: cond is bool, x and y share the result's dtype.
    Select,
    /// The `dtype` attribute (`cast`).
    Attribute,
    /// The `dtype` attribute, which must be in the op's domain and of the input's item size
    /// (`bitcast`).
    Reinterpret,
    /// float32 whatever the input's dtype (Box-Muller's normals from random bits).
    Float32,
    /// The complex dtype of the input's precision (`rfft`): complex input keeps its dtype,
    /// float64 gives complex128, the narrower floats complex64.
    Complex,
    /// `take(a, idx)`: the dtype of `a`; `idx` is int64.
    Gathered,
    /// `scatter_*(a, idx, values)`: the dtype of `a`, which `values` shares; `idx` is int64.
    Scattered,
    /// One output of a matrix decomposition (`Attrs::Linalg`'s `output`): the input's dtype for
    /// the matrices (and slogdet's sign), its real dtype for singular values, eigenvalues and
    /// log|det|.
    Decomposed,
}

/// Which attributes an op carries (the schema; [`crate::graph::Attrs`] holds the values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AttrKind {
    None,
    /// `index`: position in the graph's list of materialised inputs.
    Input,
    /// `value`: a scalar literal.
    Const,
    /// `axis`: the axis along which the ramp counts 0, 1, 2, ...
    Iota,
    /// `dtype`: the target dtype.
    DType,
    /// `shape`: the result shape.
    Shape,
    /// `perm`: result axis k is input axis perm[k].
    Perm,
    /// `axes` (sorted, normalised) and `keepdims`.
    Reduce,
    /// `axes` (sorted, normalised).
    Axes,
    /// `axis` (normalised).
    Axis,
    /// `start`, `step`, `len` per axis (normalised: start in bounds, len the result extent).
    Slice,
    /// `axes` (sorted, normalised), `inverse`, `norm`: a complex-to-complex transform.
    Fft,
    /// `axes` (normalised: the others sorted, then the halved axis last), `n` (the real length
    /// along the last axis), `norm`: a real-to-complex or complex-to-real transform.
    RealFft,
    /// `output` (which result of a decomposition the node is) and `full_matrices` (svd's
    /// square U and Vh, qr's complete mode).
    Linalg,
    /// `name` of a user kernel.
    Custom,
    /// `axis` (normalised), `k` (the result's extent along it) and `largest` (the order: the
    /// largest first, else the smallest first).
    TopK,
    /// `per_call` (elements a Philox call serves: 4 or 2) and `words` (32-bit words an element
    /// takes: 1 or 2) of a lazy draw's bits.
    Philox,
}

/// One row of the op table.
#[derive(Debug)]
pub struct OpInfo {
    /// The op's name in the textual IR and the e-graph language (NumPy's ufunc name where one
    /// exists).
    pub name: &'static str,
    pub class: OpClass,
    pub arity: Arity,
    /// dtypes the inputs may have (for `where`, the dtypes of `x` and `y`).
    pub domain: Domain,
    pub dtype_rule: DTypeRule,
    pub attrs: AttrKind,
    /// One line: what it computes and its NumPy equivalent.
    pub doc: &'static str,
}

/// The table: the rows of each class in a block `Class { row; ... }`, a row being the op's
/// variant, name, arity, domain, dtype rule, attributes and doc.
macro_rules! ops {
    ($( $class:ident { $( $variant:ident, $name:literal, $arity:expr, $domain:ident, $rule:ident, $attrs:ident, $doc:literal; )* } )*) => {
        /// An op of the IR; [`OpKind::info`] gives its row of the table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum OpKind { $( $( #[doc = $doc] $variant, )* )* }

        impl OpKind {
            /// Every op, in table order.
            pub const ALL: &'static [OpKind] = &[ $( $( OpKind::$variant, )* )* ];

            /// The op's row of the table.
            pub fn info(self) -> &'static OpInfo {
                match self {
                    $( $( OpKind::$variant => &OpInfo {
                        name: $name,
                        class: OpClass::$class,
                        arity: $arity,
                        domain: Domain::$domain,
                        dtype_rule: DTypeRule::$rule,
                        attrs: AttrKind::$attrs,
                        doc: $doc,
                    }, )* )*
                }
            }
        }

        /// The ops of one class as a pattern, for [`ops_of!`].
        #[doc(hidden)]
        #[macro_export]
        macro_rules! __ops_of_class {
            $( ($class) => { $( $crate::OpKind::$variant )|* }; )*
        }
    };
}

/// Every op of the given classes ([`OpClass`] variants), as a pattern: for the arm of a `match`
/// on [`OpKind`] that treats whole classes alike, so the match stays exhaustive without a
/// catch-all and a new row is a compile error only where its own class is matched op by op.
///
/// ```
/// use kiln_ir::{ops_of, OpKind};
/// fn is_leaf_or_view(op: OpKind) -> bool {
///     match op {
///         ops_of!(Leaf, View) => true,
///         ops_of!(Elementwise, Gather, Scatter, Scan, Sort, Reduce, Copy, Vendor, Custom) => false,
///     }
/// }
/// assert!(is_leaf_or_view(OpKind::Iota) && !is_leaf_or_view(OpKind::Add));
/// ```
#[macro_export]
macro_rules! ops_of {
    ($($class:ident),+ $(,)?) => { $( $crate::__ops_of_class!($class) )|+ };
}

/// [`ops_of!`] of classes written without commas (which `rustfmt` leaves on one line).
#[doc(hidden)]
#[macro_export]
macro_rules! __ops_of_classes {
    ($($class:ident)+) => { $( $crate::__ops_of_class!($class) )|+ };
}

/// Every op but those of the given class, as a pattern: the arm of a `match` on the ops of one
/// class that no other op reaches.
///
/// ```
/// use kiln_ir::{ops_not_of, OpKind};
/// fn leaf_name(op: OpKind) -> &'static str {
///     match op {
///         OpKind::Input => "input",
///         OpKind::Const => "const",
///         OpKind::Iota => "iota",
///         ops_not_of!(Leaf) => unreachable!("{} is not a leaf", op.name()),
///     }
/// }
/// assert_eq!(leaf_name(OpKind::Iota), "iota");
/// ```
#[macro_export]
macro_rules! ops_not_of {
    (Leaf) => {
        $crate::__ops_of_classes!(Elementwise Gather Scatter Scan Sort Reduce View Copy Vendor Custom)
    };
    (Elementwise) => {
        $crate::__ops_of_classes!(Leaf Gather Scatter Scan Sort Reduce View Copy Vendor Custom)
    };
    (Gather) => {
        $crate::__ops_of_classes!(Leaf Elementwise Scatter Scan Sort Reduce View Copy Vendor Custom)
    };
    (Scatter) => {
        $crate::__ops_of_classes!(Leaf Elementwise Gather Scan Sort Reduce View Copy Vendor Custom)
    };
    (Scan) => {
        $crate::__ops_of_classes!(Leaf Elementwise Gather Scatter Sort Reduce View Copy Vendor Custom)
    };
    (Sort) => {
        $crate::__ops_of_classes!(Leaf Elementwise Gather Scatter Scan Reduce View Copy Vendor Custom)
    };
    (Reduce) => {
        $crate::__ops_of_classes!(Leaf Elementwise Gather Scatter Scan Sort View Copy Vendor Custom)
    };
    (View) => {
        $crate::__ops_of_classes!(Leaf Elementwise Gather Scatter Scan Sort Reduce Copy Vendor Custom)
    };
    (Copy) => {
        $crate::__ops_of_classes!(Leaf Elementwise Gather Scatter Scan Sort Reduce View Vendor Custom)
    };
    (Vendor) => {
        $crate::__ops_of_classes!(Leaf Elementwise Gather Scatter Scan Sort Reduce View Copy Custom)
    };
    (Custom) => {
        $crate::__ops_of_classes!(Leaf Elementwise Gather Scatter Scan Sort Reduce View Copy Vendor)
    };
}

use Arity::{Fixed, Variadic};

ops! {
    Leaf {
        // variant       name             arity     domain    dtype rule  attrs    doc
        Input,           "input",         Fixed(0), ANY,      Declared,  Input,   "an array already materialised: the graph's input number `index`";
        Const,           "const",         Fixed(0), ANY,      Declared,  Const,   "a scalar constant (rank 0)";
        Iota,            "iota",          Fixed(0), NUM,      Declared,  Iota,    "the index along `axis` at each element: 0, 1, 2, ... (np.arange broadcast along axis)";
    }

    Elementwise {
        Neg,             "negative",      Fixed(1), NUM,      Same,      None,    "-x (np.negative); wraps for integers";
        Abs,             "absolute",      Fixed(1), ANY,      Real,      None,    "|x| (np.absolute); complex gives its modulus";
        Sign,            "sign",          Fixed(1), NUM,      Same,      None,    "-1, 0 or 1 (np.sign); NaN stays NaN; complex gives x/|x|";
        Sqrt,            "sqrt",          Fixed(1), INEXACT,  Same,      None,    "square root (np.sqrt)";
        Cbrt,            "cbrt",          Fixed(1), F,        Same,      None,    "cube root (np.cbrt)";
        Square,          "square",        Fixed(1), NUM,      Same,      None,    "x*x (np.square)";
        Reciprocal,      "reciprocal",    Fixed(1), NUM,      Same,      None,    "1/x (np.reciprocal); integer division for integers";
        Exp,             "exp",           Fixed(1), INEXACT,  Same,      None,    "e**x (np.exp)";
        Exp2,            "exp2",          Fixed(1), INEXACT,  Same,      None,    "2**x (np.exp2)";
        Expm1,           "expm1",         Fixed(1), INEXACT,  Same,      None,    "e**x - 1, exact near 0 (np.expm1)";
        Log,             "log",           Fixed(1), INEXACT,  Same,      None,    "natural logarithm (np.log)";
        Log2,            "log2",          Fixed(1), INEXACT,  Same,      None,    "base-2 logarithm (np.log2)";
        Log10,           "log10",         Fixed(1), INEXACT,  Same,      None,    "base-10 logarithm (np.log10)";
        Log1p,           "log1p",         Fixed(1), INEXACT,  Same,      None,    "log(1 + x), exact near 0 (np.log1p)";
        Sin,             "sin",           Fixed(1), INEXACT,  Same,      None,    "sine, radians (np.sin)";
        Cos,             "cos",           Fixed(1), INEXACT,  Same,      None,    "cosine, radians (np.cos)";
        Tan,             "tan",           Fixed(1), INEXACT,  Same,      None,    "tangent, radians (np.tan)";
        Arcsin,          "arcsin",        Fixed(1), INEXACT,  Same,      None,    "inverse sine (np.arcsin)";
        Arccos,          "arccos",        Fixed(1), INEXACT,  Same,      None,    "inverse cosine (np.arccos)";
        Arctan,          "arctan",        Fixed(1), INEXACT,  Same,      None,    "inverse tangent (np.arctan)";
        Sinh,            "sinh",          Fixed(1), INEXACT,  Same,      None,    "hyperbolic sine (np.sinh)";
        Cosh,            "cosh",          Fixed(1), INEXACT,  Same,      None,    "hyperbolic cosine (np.cosh)";
        Tanh,            "tanh",          Fixed(1), INEXACT,  Same,      None,    "hyperbolic tangent (np.tanh)";
        Arcsinh,         "arcsinh",       Fixed(1), INEXACT,  Same,      None,    "inverse hyperbolic sine (np.arcsinh)";
        Arccosh,         "arccosh",       Fixed(1), INEXACT,  Same,      None,    "inverse hyperbolic cosine (np.arccosh)";
        Arctanh,         "arctanh",       Fixed(1), INEXACT,  Same,      None,    "inverse hyperbolic tangent (np.arctanh)";
        Floor,           "floor",         Fixed(1), F,        Same,      None,    "largest integer <= x (np.floor)";
        Ceil,            "ceil",          Fixed(1), F,        Same,      None,    "smallest integer >= x (np.ceil)";
        Trunc,           "trunc",         Fixed(1), F,        Same,      None,    "x rounded toward zero (np.trunc)";
        Rint,            "rint",          Fixed(1), INEXACT,  Same,      None,    "x rounded to nearest, ties to even (np.rint); complex rounds each part";
        Erf,             "erf",           Fixed(1), F,        Same,      None,    "the error function (scipy.special.erf)";
        Erfc,            "erfc",          Fixed(1), F,        Same,      None,    "1 - erf(x) without cancellation (scipy.special.erfc): 2 at -inf, 0 at inf";
        Erfinv,          "erfinv",        Fixed(1), F,        Same,      None,    "the inverse of erf (scipy.special.erfinv): ±inf at ±1, NaN beyond, erfinv(-0) = +0";
        Gammaln,         "gammaln",       Fixed(1), F,        Same,      None,    "log|Γ(x)| (scipy.special.gammaln, Cephes' lgam): inf at the poles 0, -1, -2, ... and at inf, -inf at -inf";
        Digamma,         "digamma",       Fixed(1), F,        Same,      None,    "ψ(x) = Γ'(x)/Γ(x) (scipy.special.digamma, psi): -inf at +0, inf at -0, NaN at the negative integers and -inf";
        FrexpMantissa,   "frexp_mantissa", Fixed(1), F,       Same,      None,    "m of x = m * 2**e with 0.5 <= |m| < 1 (np.frexp's first output); ±0, ±inf and NaN give x";
        FrexpExponent,   "frexp_exponent", Fixed(1), F,       Same,      None,    "e of x = m * 2**e as a value of x's dtype (np.frexp's second output, an int32 there); ±0, ±inf and NaN give 0";
        IsNan,           "isnan",         Fixed(1), INEXACT,  Bool,      None,    "x is NaN (np.isnan)";
        IsInf,           "isinf",         Fixed(1), INEXACT,  Bool,      None,    "x is ±inf (np.isinf)";
        IsFinite,        "isfinite",      Fixed(1), INEXACT,  Bool,      None,    "x is neither NaN nor ±inf (np.isfinite)";
        LogicalNot,      "logical_not",   Fixed(1), B,        Same,      None,    "not x, on bools (np.logical_not)";
        Invert,          "invert",        Fixed(1), INT_BOOL, Same,      None,    "bitwise not, ~x (np.invert)";
        Real,            "real",          Fixed(1), C,        Real,      None,    "real part (np.real)";
        Imag,            "imag",          Fixed(1), C,        Real,      None,    "imaginary part (np.imag)";
        Conj,            "conjugate",     Fixed(1), C,        Same,      None,    "complex conjugate (np.conjugate)";

        Add,             "add",           Fixed(2), ANY,      Same,      None,    "x + y (np.add); logical or on bools";
        Sub,             "subtract",      Fixed(2), NUM,      Same,      None,    "x - y (np.subtract)";
        Mul,             "multiply",      Fixed(2), ANY,      Same,      None,    "x * y (np.multiply); logical and on bools";
        Div,             "divide",        Fixed(2), INEXACT,  Same,      None,    "x / y (np.true_divide)";
        FloorDiv,        "floor_divide",  Fixed(2), REAL_NUM, Same,      None,    "floor(x / y) (np.floor_divide); integer division by 0 gives 0";
        Remainder,       "remainder",     Fixed(2), REAL_NUM, Same,      None,    "x mod y with the sign of y (np.remainder, Python's %)";
        Power,           "power",         Fixed(2), NUM,      Same,      None,    "x ** y (np.power)";
        Maximum,         "maximum",       Fixed(2), ANY,      Same,      None,    "larger of x, y; NaN propagates (np.maximum)";
        Minimum,         "minimum",       Fixed(2), ANY,      Same,      None,    "smaller of x, y; NaN propagates (np.minimum)";
        Fmax,            "fmax",          Fixed(2), ANY,      Same,      None,    "larger of x, y; NaN ignored (np.fmax)";
        Fmin,            "fmin",          Fixed(2), ANY,      Same,      None,    "smaller of x, y; NaN ignored (np.fmin)";
        Arctan2,         "arctan2",       Fixed(2), F,        Same,      None,    "angle of (x=y_arg, y=x_arg): arctan(x1/x2) by quadrant (np.arctan2)";
        Hypot,           "hypot",         Fixed(2), F,        Same,      None,    "sqrt(x*x + y*y) without overflow (np.hypot)";
        LogAddExp,       "logaddexp",     Fixed(2), F,        Same,      None,    "log(exp(x) + exp(y)) without overflow (np.logaddexp)";
        CopySign,        "copysign",      Fixed(2), F,        Same,      None,    "|x| with the sign of y (np.copysign)";
        Fmod,            "fmod",          Fixed(2), REAL_NUM, Same,      None,    "x - trunc(x / y) * y exactly, the sign of x (np.fmod, C's fmod); integer fmod by 0 gives 0";
        LogAddExp2,      "logaddexp2",    Fixed(2), F,        Same,      None,    "log2(2**x + 2**y) without overflow (np.logaddexp2)";
        Ldexp,           "ldexp",         Fixed(2), F,        Same,      None,    "x * 2**n exactly (one rounding where the result is subnormal), n an integer held in x's dtype, truncated (np.ldexp); a NaN n gives NaN";
        NextAfter,       "nextafter",     Fixed(2), F,        Same,      None,    "the next value of the dtype after x toward y (np.nextafter); x == y gives y (float16: x, as NumPy)";
        Gcd,             "gcd",           Fixed(2), INT,      Same,      None,    "greatest common divisor of |x| and |y| (np.gcd): gcd(0, 0) = 0; |min| wraps to min, as NumPy";
        Lcm,             "lcm",           Fixed(2), INT,      Same,      None,    "least common multiple of |x| and |y| (np.lcm): |x| / gcd * |y|, wrapping; 0 where either is 0";
        MakeComplex,     "complex",       Fixed(2), F,        Complex,   None,    "x + y·i from its real and imaginary parts, exactly (complex128 for float64, complex64 for narrower floats)";
        Eq,              "equal",         Fixed(2), ANY,      Bool,      None,    "x == y (np.equal)";
        Ne,              "not_equal",     Fixed(2), ANY,      Bool,      None,    "x != y (np.not_equal)";
        Lt,              "less",          Fixed(2), ANY,      Bool,      None,    "x < y (np.less); complex compares lexicographically";
        Le,              "less_equal",    Fixed(2), ANY,      Bool,      None,    "x <= y (np.less_equal)";
        Gt,              "greater",       Fixed(2), ANY,      Bool,      None,    "x > y (np.greater)";
        Ge,              "greater_equal", Fixed(2), ANY,      Bool,      None,    "x >= y (np.greater_equal)";
        LogicalAnd,      "logical_and",   Fixed(2), B,        Same,      None,    "x and y, on bools (np.logical_and)";
        LogicalOr,       "logical_or",    Fixed(2), B,        Same,      None,    "x or y, on bools (np.logical_or)";
        LogicalXor,      "logical_xor",   Fixed(2), B,        Same,      None,    "x xor y, on bools (np.logical_xor)";
        BitwiseAnd,      "bitwise_and",   Fixed(2), INT_BOOL, Same,      None,    "x & y (np.bitwise_and)";
        BitwiseOr,       "bitwise_or",    Fixed(2), INT_BOOL, Same,      None,    "x | y (np.bitwise_or)";
        BitwiseXor,      "bitwise_xor",   Fixed(2), INT_BOOL, Same,      None,    "x ^ y (np.bitwise_xor)";
        LeftShift,       "left_shift",    Fixed(2), INT,      Same,      None,    "x << y (np.left_shift); shifts of the bit width or more give 0";
        RightShift,      "right_shift",   Fixed(2), INT,      Same,      None,    "x >> y, arithmetic for signed (np.right_shift)";
        Philox,          "philox",        Fixed(2), U,        Same,      None,    "random bits: the first two words (w1·2^32 + w0) of Philox4x32-10 of counter (lo x, hi x, 0, 0) under key (lo y, hi y), wrapped to the dtype (cuRAND's and torch's generator; kiln::random's lazy draws)";
        PhiloxHigh,      "philox_high",   Fixed(2), U,        Same,      None,    "random bits: the last two words (w3·2^32 + w2) of the same Philox4x32-10 call as philox(x, y), wrapped to the dtype";
        PhiloxBits,      "philox_bits",   Fixed(2), U,        Same,      Philox,  "a lazy draw's bits at C-order position i of the result: of Philox4x32-10 call x[i] + i / per_call (wrapping) under key y[i], word i mod 4 (per_call 4, words 1), words 2k, 2k+1 with k = (i mod 4) / 2 (per_call 4, words 2) or k = i mod 2 (per_call 2, words 2), as w[2k+1]·2^32 + w[2k]; uint64 (kiln::random's draws; the compiler expands it into iota, philox and bit ops before simplifying)";
        BoxMullerCos,    "box_muller_cos", Fixed(1), U,       Float32,   None,    "a float32 standard normal from random bits x = w2·2^32 + w1: r cos θ with r = sqrt(-2 ln(1 - u)), u = (w1 >> 8)·2^-24, θ = 2π (w2 >> 8)/2^24 (Box-Muller; cos θ by an exact quarter-turn reduction and a polynomial)";
        BoxMullerSin,    "box_muller_sin", Fixed(1), U,       Float32,   None,    "r sin θ of the same Box-Muller pair as box_muller_cos(x), a float32 (the pair's second normal)";
        Where,           "where",         Fixed(3), ANY,      Select,    None,    "x where cond else y (np.where(cond, x, y))";
        Cast,            "cast",          Fixed(1), ANY,      Attribute, DType,   "x converted to `dtype` (ndarray.astype, unsafe casting)";
        Bitcast,         "bitcast",       Fixed(1), REAL_NUM, Reinterpret, DType, "x's bits read as `dtype`, an int, uint or float of x's item size (ndarray.view(dtype))";
        Label,           "label",         Fixed(1), ANY,      Same,      Custom,  "x unchanged, marked as a result of the user kernel `name` (ElementwiseKernel, ReductionKernel, fuse)";
    }

    Gather {
        Take,            "take",          Fixed(2), ANY,      Gathered,  None,    "a.ravel()[idx], idx (int64) wrapped into range: np.take(a, idx, mode='wrap'); the shape of idx";
    }

    Scatter {
        ScatterAdd,      "scatter_add",   Fixed(3), ANY,      Scattered, None,    "a copy of a with values[i] added to row idx[i] of axis 0, duplicates accumulating in position order (np.add.at); idx (int64) wrapped into range";
        ScatterMax,      "scatter_max",   Fixed(3), ANY,      Scattered, None,    "a copy of a, row idx[i] of axis 0 the maximum of itself and values[i], NaN propagating (np.maximum.at); idx wrapped into range";
        ScatterMin,      "scatter_min",   Fixed(3), ANY,      Scattered, None,    "a copy of a, row idx[i] of axis 0 the minimum of itself and values[i], NaN propagating (np.minimum.at); idx wrapped into range";
        Scatter,         "scatter",       Fixed(3), ANY,      Scattered, None,    "a copy of a with row idx[i] of axis 0 replaced by values[i], the last position writing a row winning (a[idx] = values); idx wrapped into range";
    }

    Scan {
        Cumsum,          "cumsum",        Fixed(1), ANY,      SumLike,   Axis,    "running sum along `axis`, each step rounded to the result dtype (np.cumsum, np.add.accumulate)";
        Cumprod,         "cumprod",       Fixed(1), ANY,      SumLike,   Axis,    "running product along `axis`, each step rounded to the result dtype (np.cumprod)";
        Cummax,          "cummax",        Fixed(1), ANY,      Same,      Axis,    "running maximum along `axis`; NaN propagates (np.maximum.accumulate)";
        Cummin,          "cummin",        Fixed(1), ANY,      Same,      Axis,    "running minimum along `axis`; NaN propagates (np.minimum.accumulate)";
        Compact,         "compact",       Fixed(2), ANY,      Select,    Axis,    "stream compaction along `axis`: each line's elements of x (input 1) where the bool cond (input 0, x's shape) is true, in order, then zeros (np.extract per line; compact_count gives how many are kept)";
        CompactCount,    "compact_count", Fixed(1), B,        Index,     Axis,    "the number of true elements of the bool cond along `axis`, the axis kept with extent 1 (int64; compact's kept elements per line)";
    }

    Sort {
        Sort,            "sort",          Fixed(1), ANY,      Same,      Axis,    "the elements along `axis` in ascending order, NaN last (complex: by real then imaginary part), ties stable (np.sort)";
        Argsort,         "argsort",       Fixed(1), ANY,      Index,     Axis,    "positions along `axis` that sort it as `sort` does, ties in their order (np.argsort(kind='stable'))";
        SortTake,        "sort_take",     Fixed(2), ANY,      Gathered,  Axis,    "take_along_axis(sort(a, axis), k, axis): the elements at sorted positions k (int64, wrapped into range; a's rank, any extent along `axis`, each other extent 1 or a's) of each line, in sort's order (np.partition(a, k) read at k; order statistics by selection)";
        Argtopk,         "argtopk",       Fixed(1), ORDERED,  Index,     TopK,    "the int64 positions of the `k` largest (`largest`; else smallest) elements of each line along `axis`, in that order, NaN the largest, equal elements in line order; `axis` k long (torch.topk's indices, sorted; np.argsort(a, kind='stable')[:k] for the smallest; a selection, not a sort)";
    }

    Reduce {
        Sum,             "sum",           Fixed(1), ANY,      SumLike,   Reduce,  "sum over `axes` (np.sum); float16/bfloat16 accumulate in float32";
        Prod,            "prod",          Fixed(1), ANY,      SumLike,   Reduce,  "product over `axes` (np.prod)";
        Max,             "max",           Fixed(1), ANY,      Same,      Reduce,  "maximum over `axes`; NaN propagates (np.max)";
        Min,             "min",           Fixed(1), ANY,      Same,      Reduce,  "minimum over `axes`; NaN propagates (np.min)";
        ArgMax,          "argmax",        Fixed(1), ANY,      Index,     Reduce,  "index of the first maximum along one axis; the first NaN wins (np.argmax)";
        ArgMin,          "argmin",        Fixed(1), ANY,      Index,     Reduce,  "index of the first minimum along one axis; the first NaN wins (np.argmin)";
        All,             "all",           Fixed(1), ANY,      Bool,      Reduce,  "every element is truthy (np.all)";
        Any,             "any",           Fixed(1), ANY,      Bool,      Reduce,  "some element is truthy (np.any)";
    }

    View {
        Reshape,         "reshape",       Fixed(1), ANY,      Same,      Shape,   "the same elements in C order with a new `shape` (np.reshape)";
        Permute,         "permute",       Fixed(1), ANY,      Same,      Perm,    "axes reordered by `perm` (np.transpose)";
        BroadcastTo,     "broadcast_to",  Fixed(1), ANY,      Same,      Shape,   "stretched to `shape` by NumPy's broadcasting (np.broadcast_to)";
        Slice,           "slice",         Fixed(1), ANY,      Same,      Slice,   "a basic slice start:stop:step per axis (x[a:b:c])";
        ExpandDims,      "expand_dims",   Fixed(1), ANY,      Same,      Axes,    "new axes of extent 1 at `axes` of the result (np.expand_dims)";
        Squeeze,         "squeeze",       Fixed(1), ANY,      Same,      Axes,    "axes of extent 1 at `axes` removed (np.squeeze)";
        Flip,            "flip",          Fixed(1), ANY,      Same,      Axes,    "order reversed along `axes` (np.flip)";
    }

    Copy {
        Concatenate,     "concatenate",   Variadic, ANY,      Same,      Axis,    "inputs joined along an existing `axis` (np.concatenate)";
        Stack,           "stack",         Variadic, ANY,      Same,      Axis,    "inputs joined along a new `axis` (np.stack)";
        Contiguous,      "contiguous",    Fixed(1), ANY,      Same,      None,    "a C-contiguous copy (np.ascontiguousarray)";
    }

    Vendor {
        MatMul,          "matmul",        Fixed(2), ANY,      Same,      None,    "matrix product over the last two axes, batch axes broadcast (np.matmul); integers wrap, bools are or-of-ands";
        Fft,             "fft",           Fixed(1), C,        Same,      Fft,     "discrete Fourier transform over `axes`, forward or `inverse` (np.fft.fftn / ifftn)";
        Rfft,            "rfft",          Fixed(1), F,        Complex,   RealFft, "forward transform of real input over `axes`; the last axis (length `n`) keeps n/2+1 terms (np.fft.rfftn)";
        Irfft,           "irfft",         Fixed(1), C,        Real,      RealFft, "inverse of rfft over `axes`: the last axis (n/2+1 terms) gives `n` real values (np.fft.irfftn)";
        Cholesky,        "cholesky",      Fixed(1), INEXACT,  Same,      None,    "L with a = L·Lᴴ, zeros above the diagonal, per matrix of the last two axes; reads the lower triangle (np.linalg.cholesky); not positive definite is an error";
        Solve,           "solve",         Fixed(2), INEXACT,  Same,      None,    "x with a·x = b per matrix: a (.., n, n), b (.., n, k) of the same batch shape (np.linalg.solve); a singular a is an error";
        Inv,             "inv",           Fixed(1), INEXACT,  Same,      None,    "the inverse of each matrix (np.linalg.inv); a singular matrix is an error";
        Det,             "det",           Fixed(1), INEXACT,  Same,      None,    "the determinant of each matrix, shape (..) (np.linalg.det); 0 for a singular matrix";
        Slogdet,         "slogdet",       Fixed(1), INEXACT,  Decomposed, Linalg, "output 0: the sign of det (|sign| = 1; 0 when singular), output 1: log|det| (real; -inf when singular), shape (..) (np.linalg.slogdet)";
        Qr,              "qr",            Fixed(1), INEXACT,  Same,      Linalg,  "output 0: Q, output 1: R of a = Q·R (Householder), reduced: Q (.., m, k), R (.., k, n), k = min(m, n); full_matrices: Q (.., m, m), R (.., m, n) (np.linalg.qr)";
        Svd,             "svd",           Fixed(1), INEXACT,  Decomposed, Linalg, "output 0: U, 1: s (real, descending), 2: Vh of a = U·diag(s)·Vh; U (.., m, k), Vh (.., k, n), or square with full_matrices (np.linalg.svd)";
        Eigh,            "eigh",          Fixed(1), INEXACT,  Decomposed, Linalg, "output 0: w (real, ascending), output 1: v (eigenvectors as columns) of Hermitian a, reading its lower triangle (np.linalg.eigh)";
    }

    Custom {
        CustomKernel,    "custom",        Variadic, ANY,      Declared,  Custom,  "a user's raw kernel named `name`: a fusion boundary";
    }
}

impl OpKind {
    /// The binary elementwise op a scan or a scatter combines with (`cumsum` and `scatter_add`:
    /// `add`); `None` for every other op, and for `scatter`, which replaces.
    pub fn combine(self) -> Option<OpKind> {
        use OpKind::*;
        match self {
            Cumsum | ScatterAdd => Some(Add),
            Cumprod => Some(Mul),
            Cummax | ScatterMax => Some(Maximum),
            Cummin | ScatterMin => Some(Minimum),
            _ => None,
        }
    }

    /// The op's IR name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The op with this IR name.
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.iter().copied().find(|op| op.name() == name)
    }

    pub fn class(self) -> OpClass {
        self.info().class
    }

    pub fn is_elementwise(self) -> bool {
        self.class() == OpClass::Elementwise
    }

    pub fn is_reduction(self) -> bool {
        self.class() == OpClass::Reduce
    }

    pub fn is_view(self) -> bool {
        self.class() == OpClass::View
    }

    pub fn is_leaf(self) -> bool {
        self.class() == OpClass::Leaf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        let mut seen = std::collections::HashSet::new();
        for &op in OpKind::ALL {
            assert!(seen.insert(op.name()), "duplicate op name {}", op.name());
            assert_eq!(OpKind::from_name(op.name()), Some(op));
            assert!(!op.info().doc.is_empty());
        }
        assert_eq!(OpKind::from_name("nope"), None);
    }

    #[test]
    fn table_rows_are_consistent() {
        for &op in OpKind::ALL {
            let i = op.info();
            if i.class == OpClass::Leaf {
                assert_eq!(i.arity, Arity::Fixed(0), "{}", i.name);
            }
            if i.class == OpClass::Reduce {
                assert_eq!(i.attrs, AttrKind::Reduce, "{}", i.name);
            }
        }
    }
}
