//! Elementwise operations: NumPy's ufuncs with promotion and broadcasting made explicit.
//!
//! For every op the frontend (1) finds the compute dtype: `result_type` of the operands, Rust
//! scalars being NEP 50 weak scalars; (2) coerces it to a dtype the op's table row accepts
//! (integers to float for float-only ufuncs, anything to bool for logical ones), as NumPy's loop
//! selection does; (3) inserts `cast` and `broadcast_to` nodes; (4) builds the node, whose rules
//! the op table checks.

use kiln_ir::ops::Domain;
use kiln_ir::promote::{result_type, result_type_weak};
use kiln_ir::shape::broadcast_shapes;
use kiln_ir::{Attrs, DType, Literal, OpKind, WeakScalar};
use num_complex::{Complex32, Complex64};
use smallvec::SmallVec;

use crate::array::Array;
use crate::error::Result;

/// An operand of an elementwise op: an array or a weak Rust scalar.
#[derive(Clone, Debug)]
pub enum Operand {
    Array(Array),
    Scalar(WeakScalar),
}

impl Operand {
    /// The operand as an array: the array itself, or a rank-0 array of a scalar in its default
    /// dtype (`Array::scalar`: int64, float64, complex128, bool), which is strong where the
    /// scalar is weak (NEP 50).
    pub fn to_array(&self) -> Array {
        Array::scalar(self.clone())
    }
}

impl From<Array> for Operand {
    fn from(a: Array) -> Operand {
        Operand::Array(a)
    }
}
impl From<&Array> for Operand {
    fn from(a: &Array) -> Operand {
        Operand::Array(a.clone())
    }
}
impl From<&&Array> for Operand {
    fn from(a: &&Array) -> Operand {
        Operand::Array((*a).clone())
    }
}
macro_rules! weak_int {
    ($($t:ty),*) => {$(
        impl From<$t> for Operand {
            fn from(v: $t) -> Operand { Operand::Scalar(WeakScalar::Int(v as i128)) }
        }
    )*};
}
weak_int!(i8, i16, i32, i64, u8, u16, u32, u64, isize, usize);
impl From<f64> for Operand {
    fn from(v: f64) -> Operand {
        Operand::Scalar(WeakScalar::Float(v))
    }
}
impl From<f32> for Operand {
    fn from(v: f32) -> Operand {
        Operand::Scalar(WeakScalar::Float(v as f64))
    }
}
impl From<bool> for Operand {
    fn from(v: bool) -> Operand {
        Operand::Scalar(WeakScalar::Bool(v))
    }
}
impl From<Complex64> for Operand {
    fn from(v: Complex64) -> Operand {
        Operand::Scalar(WeakScalar::Complex(v))
    }
}
impl From<Complex32> for Operand {
    fn from(v: Complex32) -> Operand {
        Operand::Scalar(WeakScalar::Complex(Complex64::new(v.re as f64, v.im as f64)))
    }
}

/// The literal of `dtype` for a weak scalar (its dtype already decided by promotion).
pub(crate) fn scalar_literal(dtype: DType, s: WeakScalar) -> Literal {
    match s {
        WeakScalar::Bool(b) => Literal::from_i128(dtype, b as i128),
        WeakScalar::Int(v) => Literal::from_i128(dtype, v),
        WeakScalar::Float(x) => Literal::from_f64(dtype, x),
        WeakScalar::Complex(z) => {
            if dtype.is_complex() {
                Literal::complex(dtype, z)
            } else {
                Literal::from_f64(dtype, z.re)
            }
        }
    }
}

/// The smallest float dtype NumPy's float ufuncs use for an integer or bool input.
pub(crate) fn float_for(d: DType) -> DType {
    match d.itemsize() {
        1 => DType::Float16,
        2 => DType::Float32,
        _ => DType::Float64,
    }
}

/// The dtype `op` computes in when its operands promote to `d` (NumPy's loop selection):
/// bools take int8 loops where the ufunc has integer loops, integers and bools take float loops
/// (int8 → float16, int16 → float32, wider → float64; true division always float64) where it
/// has only float loops, and logical ufuncs test truth. NumPy has no bool loop for negative,
/// subtract and sign, so bools stay bool there and the op table rejects them.
fn coerce(op: OpKind, d: DType) -> DType {
    let domain = op.info().domain;
    if domain.contains(d) {
        return d;
    }
    if domain == Domain::B {
        return DType::Bool;
    }
    if d.is_bool() && matches!(op, OpKind::Neg | OpKind::Sub | OpKind::Sign) {
        return d;
    }
    if d.is_bool() && domain.contains(DType::Int8) {
        return DType::Int8;
    }
    if (d.is_bool() || d.is_integer()) && domain.contains(DType::Float64) {
        return if op == OpKind::Div { DType::Float64 } else { float_for(d) };
    }
    d
}

/// Whether `op` compares (its result is bool from operands of one dtype).
fn is_comparison(op: OpKind) -> bool {
    op.info().dtype_rule == kiln_ir::ops::DTypeRule::Bool
        && op.info().arity == kiln_ir::ops::Arity::Fixed(2)
}

impl Array {
    /// `self` as `dtype`, adding a cast only when the dtype differs. A cast accepts every dtype;
    /// one to a wider dtype whose bytes no array can hold (an int8 array of 2^62 elements as
    /// float64: 2^65 bytes) is still made, unchecked: inside a composite it is a loop dtype
    /// fused into its reader (`mean`'s float64 sum of int8, as NumPy's accumulator), and read
    /// on its own it is materialisation's out-of-memory error, not a panic here.
    pub(crate) fn cast_to(&self, dtype: DType) -> Array {
        if self.dtype() == dtype {
            return self.clone();
        }
        let attrs = Attrs::DType { dtype };
        Array::apply(OpKind::Cast, attrs.clone(), &[self]).unwrap_or_else(|_| {
            let input = std::iter::once(self.clone()).collect();
            Array::node(OpKind::Cast, attrs, input, dtype, self.shape().into())
        })
    }

    /// `self` broadcast to `shape`, adding a node only when the shape differs.
    pub(crate) fn broadcast_to_shape(&self, shape: &[usize]) -> Result<Array> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        Array::apply(OpKind::BroadcastTo, Attrs::Shape { shape: shape.into() }, &[self])
    }

    /// Applies an elementwise op of the table to `self` (NumPy's unary ufunc).
    pub(crate) fn unary(&self, op: OpKind) -> Result<Array> {
        let d = coerce(op, self.dtype());
        Array::apply(op, Attrs::None, &[&self.cast_to(d)])
    }
}

/// Entries of the [`splat`] cache (direct-mapped).
const SPLATS: usize = 256;

/// What a [`splat`] cache entry answers, as words: a literal of a dtype ([`splat`]), or a weak
/// scalar operand of an op on an array of a dtype ([`scalar_op`]); the shape is the entry's
/// array's.
type SplatKey = [u64; 3];

type SplatEntry = Option<(SplatKey, Array, DType)>;

thread_local! {
    static SPLAT_CACHE: std::cell::RefCell<[SplatEntry; SPLATS]> =
        const { std::cell::RefCell::new([const { None }; SPLATS]) };
}

/// The cached array and dtype of `key` at `shape`, else `make`'s (kept where it gives one).
/// An array found materialised, or made before its structural number went stale, is made
/// again (the nodes built on it would read it held, or have no number).
fn splat_cached(
    key: SplatKey,
    shape: &[usize],
    make: impl FnOnce() -> Option<(Array, DType)>,
) -> Option<(Array, DType)> {
    // The slot: the key's words mixed by multiplies (splitmix64's constant), the top bits
    // taken. Not the shape: `fuse` traces a closure at two shapes and keeps it only if both
    // traces build the same nodes, so which requests share a slot (and make their arrays
    // again) must not depend on the shape.
    let mix = |h: u64, x: u64| (h ^ x).wrapping_mul(0xbf58_476d_1ce4_e5b9).rotate_left(31);
    let x = key.iter().fold(0, |h, &w| mix(h, w));
    let slot = (x.wrapping_mul(0x94d0_49bb_1331_11eb) >> 56) as usize % SPLATS;
    let found = SPLAT_CACHE.with(|c| {
        let c = c.borrow();
        let (k, a, d) = c[slot].as_ref()?;
        let same_shape = crate::array::same_extents(a.shape(), shape);
        (*k == key && same_shape && !a.is_materialized() && a.e.structure.is_current())
            .then(|| (a.clone(), *d))
    });
    if found.is_some() {
        return found;
    }
    // (Made outside the borrow: `make` may ask the cache for a literal's splat.)
    let made = make()?;
    SPLAT_CACHE.with(|c| c.borrow_mut()[slot] = Some((key, made.0.clone(), made.1)));
    Some(made)
}

/// The scalar `value` of `dtype` broadcast to `shape` (a `const` and a `broadcast_to` node),
/// shared by the expressions that use the same scalar at the same shape on this thread: a chain
/// of scalar ops builds one node per op, not three, and materialisation walks fewer nodes.
/// Only [`prepare`] hands these out, to ops it builds, so a shared node is never materialised
/// (one found materialised is replaced all the same).
fn splat(dtype: DType, value: Literal, shape: &[usize]) -> Array {
    let (variant, bits, im) = match value {
        Literal::Bool(b) => (0, u64::from(b), 0),
        Literal::Int(i) => (1, i as u64, 0),
        Literal::UInt(u) => (2, u, 0),
        Literal::Float(u) => (3, u, 0),
        Literal::Complex(re, im) => (4, re, im),
    };
    let key = [(dtype as u64) << 8 | variant << 16, bits, im];
    let make = || {
        let a = Array::literal(dtype, value)
            .broadcast_to_shape(shape)
            .expect("a scalar broadcasts to any shape");
        Some((a, dtype))
    };
    splat_cached(key, shape, make).expect("a literal's splat").0
}

/// A weak scalar as three words (its kind, then its bits), and back: how a scalar operand
/// travels to [`binary_scalar`] (in registers, where a `WeakScalar` by value went through a
/// stack copy whose wide reloads stalled on the narrower stores that wrote it).
fn scalar_words(s: WeakScalar) -> [u64; 3] {
    match s {
        WeakScalar::Bool(b) => [0, u64::from(b), 0],
        WeakScalar::Int(i) => [1, i as u64, (i >> 64) as u64],
        WeakScalar::Float(f) => [2, f.to_bits(), 0],
        WeakScalar::Complex(z) => [3, z.re.to_bits(), z.im.to_bits()],
    }
}

/// The weak scalar of [`scalar_words`]' words.
fn words_scalar([kind, lo, hi]: [u64; 3]) -> WeakScalar {
    match kind {
        0 => WeakScalar::Bool(lo != 0),
        1 => WeakScalar::Int((u128::from(hi) << 64 | u128::from(lo)) as i128),
        2 => WeakScalar::Float(f64::from_bits(lo)),
        _ => WeakScalar::Complex(Complex64::new(f64::from_bits(lo), f64::from_bits(hi))),
    }
}

/// For `op` on `x` and the weak scalar of `words` ([`scalar_words`], either side) computing in
/// `x`'s dtype (as [`prepare`] finds it; `None` otherwise, errors included: `prepare` reports
/// them): the scalar's [`splat`] and the op's result dtype, remembered by op, dtype, scalar
/// and shape, so a repeated scalar op skips promotion, loop selection and the literal's
/// conversion.
fn scalar_op(op: OpKind, x: &Array, words: [u64; 3]) -> Option<(Array, DType)> {
    let d = x.dtype();
    let key = [1 | (op as u64) << 8 | (d as u64) << 24 | words[0] << 40, words[1], words[2]];
    splat_cached(key, x.shape(), || {
        let splat = scalar_keeps_dtype(op, x, words_scalar(words))?;
        Some((splat, kiln_ir::infer::uniform_elementwise_dtype(op, d, 2)?))
    })
}

/// The splat of weak scalar `s` at `x`'s shape where `op` on `x` and `s` computes in `x`'s
/// dtype (as [`prepare`] finds it); `None` otherwise, errors included (`prepare` reports them).
fn scalar_keeps_dtype(op: OpKind, x: &Array, s: WeakScalar) -> Option<Array> {
    let d = x.dtype();
    // (An error is dropped here, `prepare` names the op: no name looked up.)
    let promoted = result_type_weak("", d, s).ok()?;
    (coerce(op, promoted) == d && fits(x)).then(|| splat(d, scalar_literal(d, s), x.shape()))
}

/// Whether `prepare`'s size check passes for operands of `x`'s dtype and shape (a cast made
/// unchecked may hold more bytes than an array can: `prepare` then names the op).
fn fits(x: &Array) -> bool {
    kiln_ir::shape::fits(x.shape(), x.dtype().itemsize())
}

/// Promotes, coerces and broadcasts operands for `op`; returns the arrays to feed the node.
pub(crate) fn prepare(op: OpKind, operands: &[Operand]) -> Result<SmallVec<[Array; 3]>> {
    let name = op.name();
    // Promotion: arrays are strong, scalars weak; all-scalar operands take their default dtypes.
    let strong: Option<DType> = operands
        .iter()
        .filter_map(|o| match o {
            Operand::Array(a) => Some(a.dtype()),
            Operand::Scalar(_) => None,
        })
        .reduce(result_type);
    let mut dtype = match strong {
        Some(d) => d,
        None => operands
            .iter()
            .filter_map(|o| match o {
                Operand::Scalar(s) => Some(s.default_dtype()),
                Operand::Array(_) => None,
            })
            .reduce(result_type)
            .expect("at least one operand"),
    };
    if strong.is_some() {
        for o in operands {
            if let Operand::Scalar(s) = o {
                dtype = match result_type_weak(name, dtype, *s) {
                    // NumPy 2 compares integers with out-of-range Python integers exactly.
                    Err(kiln_ir::IrError::ScalarOutOfBounds { .. }) if is_comparison(op) => {
                        let wide =
                            if dtype == DType::UInt64 { DType::Float64 } else { DType::Int64 };
                        result_type_weak(name, wide, *s).unwrap_or(DType::Float64)
                    }
                    other => other?,
                };
            }
        }
    }
    let dtype = coerce(op, dtype);
    // Broadcasting.
    let mut shape = kiln_ir::Shape::new();
    for o in operands {
        if let Operand::Array(a) = o {
            shape = broadcast_shapes(name, &shape, a.shape()).map_err(|e| match e {
                kiln_ir::IrError::Broadcast { op, .. } => kiln_ir::IrError::Broadcast {
                    op,
                    shapes: operands
                        .iter()
                        .filter_map(|o| match o {
                            Operand::Array(a) => Some(a.shape().into()),
                            Operand::Scalar(_) => None,
                        })
                        .collect(),
                },
                other => other,
            })?;
        }
    }
    // The operands broadcast (and cast) to the result's shape: refused here, naming the op,
    // where no array of that shape can exist.
    kiln_ir::shape::check_size(name, &shape, dtype.itemsize())?;
    operands
        .iter()
        .map(|o| {
            let a = match o {
                Operand::Array(a) if a.dtype() == dtype && a.shape() == &shape[..] => {
                    return Ok(a.clone())
                }
                Operand::Array(a) => a.cast_to(dtype),
                Operand::Scalar(s) => return Ok(splat(dtype, scalar_literal(dtype, *s), &shape)),
            };
            a.broadcast_to_shape(&shape)
        })
        .collect()
}

/// Applies a binary elementwise op (NumPy's binary ufunc).
#[inline]
pub(crate) fn binary(op: OpKind, a: Operand, b: Operand) -> Result<Array> {
    // (Inlined where an operator is written, so a scalar's kind is known there and its words
    // are made in registers.)
    match (a, b) {
        (Operand::Array(x), Operand::Scalar(s)) => binary_scalar(op, x, scalar_words(s), false),
        (Operand::Scalar(s), Operand::Array(x)) => binary_scalar(op, x, scalar_words(s), true),
        (a, b) => binary_general(op, a, b),
    }
}

/// [`binary`] of array `x` and the weak scalar of `words` ([`scalar_words`]), the scalar
/// first where `scalar_first`: where the scalar keeps `x`'s dtype and was seen before
/// ([`scalar_op`]), the node at once.
fn binary_scalar(op: OpKind, x: Array, words: [u64; 3], scalar_first: bool) -> Result<Array> {
    if let Some((splat, dtype)) = scalar_op(op, &x, words) {
        let shape = kiln_ir::Shape::from_slice(x.shape());
        let inputs = if scalar_first {
            smallvec::smallvec![splat, x]
        } else {
            smallvec::smallvec![x, splat]
        };
        return Array::checked_node(op, Attrs::None, inputs, dtype, shape);
    }
    let (x, s) = (Operand::Array(x), Operand::Scalar(words_scalar(words)));
    let (a, b) = if scalar_first { (s, x) } else { (x, s) };
    binary_general(op, a, b)
}

/// [`binary`] in general: promotion, loop selection and broadcasting ([`prepare`]), unless the
/// operands are already what they would make.
fn binary_general(op: OpKind, a: Operand, b: Operand) -> Result<Array> {
    let inputs = match prepared_as_they_are(op, a, b) {
        Ok(inputs) => inputs,
        Err((a, b)) => prepare(op, &[a, b])?,
    };
    Array::apply_owned(op, Attrs::None, inputs)
}

/// What [`prepare`] gives for `op` on `a` and `b` where that is the operands themselves: two
/// arrays of one dtype and shape whose loop is that dtype (an array and a scalar that keeps
/// its dtype came through [`binary_scalar`]). These skip the general promotion and
/// broadcasting. Gives the operands back otherwise.
fn prepared_as_they_are(
    op: OpKind,
    a: Operand,
    b: Operand,
) -> std::result::Result<SmallVec<[Array; 3]>, (Operand, Operand)> {
    match (a, b) {
        (Operand::Array(x), Operand::Array(y)) => {
            let d = x.dtype();
            if y.dtype() == d
                && crate::array::same_extents(x.shape(), y.shape())
                && result_type(d, d) == d
                && coerce(op, d) == d
                && fits(&x)
            {
                Ok(smallvec::smallvec![x, y])
            } else {
                Err((Operand::Array(x), Operand::Array(y)))
            }
        }
        (a, b) => Err((a, b)),
    }
}

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $op:ident;)*) => {
        impl Array {$(
            $(#[$doc])*
            ///
            /// Errors: a dtype the ufunc has no loop for.
            pub fn $try_name(&self) -> Result<Array> {
                self.unary(OpKind::$op)
            }
            $(#[$doc])*
            ///
            /// Panics where the `try_` form errs.
            #[track_caller]
            pub fn $name(&self) -> Array {
                crate::unwrap(self.$try_name())
            }
        )*}
    };
}

unary_methods! {
    /// `np.negative(x)`, `-x`.
    negative, try_negative => Neg;
    /// `np.absolute(x)`; complex gives float.
    abs, try_abs => Abs;
    /// `np.sign(x)`.
    sign, try_sign => Sign;
    /// `np.sqrt(x)`; integers compute in float (int8 → float16, int16 → float32, wider → float64).
    sqrt, try_sqrt => Sqrt;
    /// `np.cbrt(x)`.
    cbrt, try_cbrt => Cbrt;
    /// `np.square(x)`.
    square, try_square => Square;
    /// `np.reciprocal(x)`; integer division for integers.
    reciprocal, try_reciprocal => Reciprocal;
    /// `np.exp(x)`.
    exp, try_exp => Exp;
    /// `np.exp2(x)`.
    exp2, try_exp2 => Exp2;
    /// `np.expm1(x)`.
    expm1, try_expm1 => Expm1;
    /// `np.log(x)`.
    log, try_log => Log;
    /// `np.log2(x)`.
    log2, try_log2 => Log2;
    /// `np.log10(x)`.
    log10, try_log10 => Log10;
    /// `np.log1p(x)`.
    log1p, try_log1p => Log1p;
    /// `np.sin(x)`, radians.
    sin, try_sin => Sin;
    /// `np.cos(x)`, radians.
    cos, try_cos => Cos;
    /// `np.tan(x)`, radians.
    tan, try_tan => Tan;
    /// `np.arcsin(x)`.
    arcsin, try_arcsin => Arcsin;
    /// `np.arccos(x)`.
    arccos, try_arccos => Arccos;
    /// `np.arctan(x)`.
    arctan, try_arctan => Arctan;
    /// `np.sinh(x)`.
    sinh, try_sinh => Sinh;
    /// `np.cosh(x)`.
    cosh, try_cosh => Cosh;
    /// `np.tanh(x)`.
    tanh, try_tanh => Tanh;
    /// `np.arcsinh(x)`.
    arcsinh, try_arcsinh => Arcsinh;
    /// `np.arccosh(x)`.
    arccosh, try_arccosh => Arccosh;
    /// `np.arctanh(x)`.
    arctanh, try_arctanh => Arctanh;
    /// `np.rint(x)`: round half to even.
    rint, try_rint => Rint;
    /// `scipy.special.erf(x)`.
    erf, try_erf => Erf;
    /// `np.isnan(x)` (bool).
    isnan, try_isnan => IsNan;
    /// `np.isinf(x)` (bool).
    isinf, try_isinf => IsInf;
    /// `np.isfinite(x)` (bool).
    isfinite, try_isfinite => IsFinite;
    /// `np.logical_not(x)` (bool; other dtypes test `x != 0`).
    logical_not, try_logical_not => LogicalNot;
    /// `np.invert(x)`, `~x`: bitwise not of integers, logical not of bools.
    invert, try_invert => Invert;
}

macro_rules! rounding_methods {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $op:ident;)*) => {
        impl Array {$(
            $(#[$doc])*
            /// Integers and bools are returned unchanged, as NumPy 2 does.
            pub fn $try_name(&self) -> Result<Array> {
                if self.dtype().is_integer() || self.dtype().is_bool() {
                    return Ok(self.clone());
                }
                self.unary(OpKind::$op)
            }
            $(#[$doc])*
            #[track_caller]
            pub fn $name(&self) -> Array {
                crate::unwrap(self.$try_name())
            }
        )*}
    };
}

rounding_methods! {
    /// `np.floor(x)`.
    floor, try_floor => Floor;
    /// `np.ceil(x)`.
    ceil, try_ceil => Ceil;
    /// `np.trunc(x)`.
    trunc, try_trunc => Trunc;
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $op:ident;)*) => {
        impl Array {$(
            $(#[$doc])*
            ///
            /// `other` is an array or a Rust scalar (a weak scalar, NEP 50). Errors: shapes that do
            /// not broadcast, dtypes without a loop, an integer scalar out of the array dtype's range.
            pub fn $try_name(&self, other: impl Into<Operand>) -> Result<Array> {
                binary(OpKind::$op, self.into(), other.into())
            }
            $(#[$doc])*
            ///
            /// Panics where the `try_` form errs.
            #[track_caller]
            pub fn $name(&self, other: impl Into<Operand>) -> Array {
                crate::unwrap(self.$try_name(other))
            }
        )*}
    };
}

binary_methods! {
    /// `np.add(x, y)`, `x + y`.
    add, try_add => Add;
    /// `np.subtract(x, y)`, `x - y`.
    subtract, try_subtract => Sub;
    /// `np.multiply(x, y)`, `x * y`.
    multiply, try_multiply => Mul;
    /// `np.true_divide(x, y)`, `x / y`; integers divide in float64.
    divide, try_divide => Div;
    /// `np.floor_divide(x, y)`, `x // y`.
    floor_divide, try_floor_divide => FloorDiv;
    /// `np.remainder(x, y)`, `x % y` (sign of `y`).
    remainder, try_remainder => Remainder;
    /// `np.power(x, y)`, `x ** y`.
    power, try_power => Power;
    /// `np.maximum(x, y)`: NaN propagates.
    maximum, try_maximum => Maximum;
    /// `np.minimum(x, y)`: NaN propagates.
    minimum, try_minimum => Minimum;
    /// `np.fmax(x, y)`: NaN ignored.
    fmax, try_fmax => Fmax;
    /// `np.fmin(x, y)`: NaN ignored.
    fmin, try_fmin => Fmin;
    /// `np.arctan2(self, other)`: the angle of the point (other, self).
    arctan2, try_arctan2 => Arctan2;
    /// `np.hypot(x, y)`.
    hypot, try_hypot => Hypot;
    /// `np.logaddexp(x, y)`.
    logaddexp, try_logaddexp => LogAddExp;
    /// `np.copysign(x, y)`.
    copysign, try_copysign => CopySign;
    /// `np.fmod(x, y)`: C's fmod, the remainder of truncating division with the sign of `x`
    /// (`remainder` takes `y`'s), exact; integers too (by 0: 0, as NumPy's result).
    fmod, try_fmod => Fmod;
    /// `np.logaddexp2(x, y)`: `log2(2**x + 2**y)` without overflow, NumPy's formula in f64.
    logaddexp2, try_logaddexp2 => LogAddExp2;
    /// `np.nextafter(x, y)`: the next value of the dtype after `x` toward `y` (float16 as
    /// NumPy's `npy_half_nextafter`: `x == y` gives `x`).
    nextafter, try_nextafter => NextAfter;
    /// `np.equal(x, y)`, `x == y` (bool).
    equal, try_equal => Eq;
    /// `np.not_equal(x, y)`, `x != y` (bool).
    not_equal, try_not_equal => Ne;
    /// `np.less(x, y)`, `x < y` (bool).
    less, try_less => Lt;
    /// `np.less_equal(x, y)`, `x <= y` (bool).
    less_equal, try_less_equal => Le;
    /// `np.greater(x, y)`, `x > y` (bool).
    greater, try_greater => Gt;
    /// `np.greater_equal(x, y)`, `x >= y` (bool).
    greater_equal, try_greater_equal => Ge;
    /// `np.logical_and(x, y)` (bool).
    logical_and, try_logical_and => LogicalAnd;
    /// `np.logical_or(x, y)` (bool).
    logical_or, try_logical_or => LogicalOr;
    /// `np.logical_xor(x, y)` (bool).
    logical_xor, try_logical_xor => LogicalXor;
    /// `np.bitwise_and(x, y)`, `x & y`.
    bitwise_and, try_bitwise_and => BitwiseAnd;
    /// `np.bitwise_or(x, y)`, `x | y`.
    bitwise_or, try_bitwise_or => BitwiseOr;
    /// `np.bitwise_xor(x, y)`, `x ^ y`.
    bitwise_xor, try_bitwise_xor => BitwiseXor;
    /// `np.left_shift(x, y)`, `x << y`.
    left_shift, try_left_shift => LeftShift;
    /// `np.right_shift(x, y)`, `x >> y`.
    right_shift, try_right_shift => RightShift;
}

impl Array {
    /// `x.astype(dtype)`: NumPy's unsafe casting (integers wrap, floats truncate toward zero
    /// into integers, anything to bool is `x != 0`, complex to real drops the imaginary part).
    pub fn astype(&self, dtype: DType) -> Array {
        self.cast_to(dtype)
    }

    /// `np.real(x)`: the real part (the array itself when not complex).
    pub fn real(&self) -> Array {
        if self.dtype().is_complex() {
            crate::unwrap(self.unary(OpKind::Real))
        } else {
            self.clone()
        }
    }

    /// `np.imag(x)`: the imaginary part (zeros when not complex).
    pub fn imag(&self) -> Array {
        if self.dtype().is_complex() {
            crate::unwrap(self.unary(OpKind::Imag))
        } else {
            crate::creation::zeros_like(self)
        }
    }

    /// `np.conjugate(x)` (the array itself when not complex).
    pub fn conj(&self) -> Array {
        if self.dtype().is_complex() {
            crate::unwrap(self.unary(OpKind::Conj))
        } else {
            self.clone()
        }
    }

    /// `np.clip(x, lo, hi)` = `minimum(maximum(x, lo), hi)`; NaN in `x` propagates.
    pub fn try_clip(&self, lo: impl Into<Operand>, hi: impl Into<Operand>) -> Result<Array> {
        self.try_maximum(lo)?.try_minimum(hi)
    }

    /// `np.clip(x, lo, hi)`. Panics where [`Array::try_clip`] errs.
    #[track_caller]
    pub fn clip(&self, lo: impl Into<Operand>, hi: impl Into<Operand>) -> Array {
        crate::unwrap(self.try_clip(lo, hi))
    }
}

/// `np.where(cond, x, y)`: `x` where `cond` is true, else `y`. `cond` is tested for truth
/// (`!= 0`); `x` and `y` promote together; all three broadcast.
pub fn try_where_(
    cond: impl Into<Operand>,
    x: impl Into<Operand>,
    y: impl Into<Operand>,
) -> Result<Array> {
    let c = match cond.into() {
        Operand::Array(a) => a.cast_to(DType::Bool),
        Operand::Scalar(s) => Array::literal(DType::Bool, scalar_literal(DType::Bool, s)),
    };
    let xy = prepare(OpKind::Where, &[x.into(), y.into()])?;
    let shape = broadcast_shapes("where", c.shape(), xy[0].shape())?;
    kiln_ir::shape::check_size("where", &shape, xy[0].dtype().itemsize())?;
    let c = c.broadcast_to_shape(&shape)?;
    let x = xy[0].broadcast_to_shape(&shape)?;
    let y = xy[1].broadcast_to_shape(&shape)?;
    Array::apply(OpKind::Where, Attrs::None, &[&c, &x, &y])
}

/// `np.where(cond, x, y)`. Panics where [`try_where_`] errs.
#[track_caller]
pub fn where_(cond: impl Into<Operand>, x: impl Into<Operand>, y: impl Into<Operand>) -> Array {
    crate::unwrap(try_where_(cond, x, y))
}

#[cfg(test)]
mod tests {
    use kiln_ir::ops::{Arity, OpClass};

    use super::*;

    /// A lazy ramp of `dtype` and `shape`.
    fn ramp(dtype: DType, shape: &[usize]) -> Array {
        let attrs = Attrs::Iota { axis: 0 };
        Array::node(OpKind::Iota, attrs, SmallVec::new(), dtype, kiln_ir::Shape::from_slice(shape))
    }

    /// What a node's operands are, to compare two preparations: each operand's op, dtype,
    /// shape and attributes, and the same for its operands (a splat's constant).
    fn describe(inputs: &[Array]) -> Vec<String> {
        fn one(a: &Array) -> String {
            let ins: Vec<String> = a.e.inputs.iter().map(one).collect();
            format!(
                "{:?} {} {:?} {:?} [{}]",
                a.e.op,
                a.dtype(),
                a.shape(),
                a.e.attrs,
                ins.join(", ")
            )
        }
        inputs.iter().map(one).collect()
    }

    /// The result dtypes remembered per elementwise op and dtype are `infer`'s, before and
    /// after they are remembered; errors are not remembered.
    #[test]
    fn remembered_result_dtypes_are_infers() {
        for &op in OpKind::ALL {
            let info = op.info();
            let Arity::Fixed(n) = info.arity else { continue };
            if info.class != OpClass::Elementwise || info.attrs != Attrs::None.kind() || n == 0 {
                continue;
            }
            for d in DType::ALL {
                let inputs: Vec<Array> = (0..n).map(|_| ramp(d, &[3, 2])).collect();
                let types: Vec<(DType, &[usize])> =
                    inputs.iter().map(|_| (d, &[3usize, 2][..])).collect();
                let want = kiln_ir::infer::infer(op, &Attrs::None, &types).ok().map(|r| r.0);
                for _ in 0..2 {
                    let got = crate::array::uniform_elementwise(op, &Attrs::None, &inputs);
                    assert_eq!(got, want, "{op:?} {d}");
                }
            }
        }
    }

    /// The shortcut of `binary` gives what the general preparation gives, for every binary
    /// elementwise op of the table, every dtype, scalars of every kind on either side (in and
    /// out of the dtype's range) and arrays of one or two dtypes and shapes; where it declines,
    /// the general path decides (errors included).
    #[test]
    fn the_shortcut_prepares_what_the_general_path_prepares() {
        let scalars = [
            WeakScalar::Bool(true),
            WeakScalar::Int(3),
            WeakScalar::Int(-300),
            WeakScalar::Int(1 << 40),
            WeakScalar::Float(0.5),
            WeakScalar::Float(1e300),
            WeakScalar::Complex(Complex64::new(1.0, -2.0)),
        ];
        let (mut taken, mut declined) = (0, 0);
        for &op in OpKind::ALL {
            let info = op.info();
            if info.class != OpClass::Elementwise || info.arity != Arity::Fixed(2) {
                continue;
            }
            for d in DType::ALL {
                let x = ramp(d, &[4]);
                let mut cases: Vec<(Operand, Operand)> = Vec::new();
                for &s in &scalars {
                    cases.push((Operand::Array(x.clone()), Operand::Scalar(s)));
                    cases.push((Operand::Scalar(s), Operand::Array(x.clone())));
                }
                let other = ramp(d, &[4]);
                let wide = ramp(DType::Float64, &[4]);
                let long = ramp(d, &[2, 4]);
                cases.push((Operand::Array(x.clone()), Operand::Array(other)));
                cases.push((Operand::Array(x.clone()), Operand::Array(wide)));
                cases.push((Operand::Array(x.clone()), Operand::Array(long)));
                for (a, b) in cases {
                    let general = prepare(op, &[a.clone(), b.clone()]);
                    // An array and a scalar: `binary_scalar`'s operands (`scalar_op`).
                    let fast = match (&a, &b) {
                        (Operand::Array(x), Operand::Scalar(s)) => {
                            scalar_op(op, x, scalar_words(*s)).map(|(splat, _)| {
                                SmallVec::<[Array; 3]>::from_iter([x.clone(), splat])
                            })
                        }
                        (Operand::Scalar(s), Operand::Array(x)) => {
                            scalar_op(op, x, scalar_words(*s)).map(|(splat, _)| {
                                SmallVec::<[Array; 3]>::from_iter([splat, x.clone()])
                            })
                        }
                        _ => prepared_as_they_are(op, a, b).ok(),
                    };
                    match fast {
                        Some(fast) => {
                            taken += 1;
                            let general = general.unwrap_or_else(|e| panic!("{op:?} {d}: {e}"));
                            assert_eq!(describe(&fast), describe(&general), "{op:?} {d}");
                        }
                        None => declined += 1,
                    }
                }
            }
        }
        assert!(taken > 1000 && declined > 1000, "taken {taken}, declined {declined}");
    }
}
