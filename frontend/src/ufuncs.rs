//! NumPy's ufuncs and functions of issue 23: `deg2rad`, `rad2deg`, `round`/`around`, `fix`,
//! `ldexp`, `signbit`, `frexp`, `modf`, `angle`, `i0`, `sinc`, `divmod`, `gcd`, `lcm` and a scalar base of
//! `power` (the binary ufuncs `fmod`, `logaddexp2` and `nextafter` are with the others in
//! `elementwise.rs`).
//!
//! Each is written as NumPy computes it, so that the results are NumPy's bit for bit wherever
//! kiln's ops are: compositions of kiln's ops (`deg2rad` is `x * (π/180)` with NumPy's constant,
//! float16 through float32 as NumPy's half loops; `round` is NumPy's `PyArray_Round`: multiply,
//! `rint`, divide, each into the input's dtype; `modf`, `signbit`, `angle`, `i0` (NumPy's
//! Python code: Clenshaw's recurrence over Cephes' Chebyshev coefficients) and `sinc` likewise),
//! or a node of an op of the table where no composition is exact (`ldexp`, `frexp`'s two
//! outputs; `fmod`, `nextafter`, `logaddexp2`), with NumPy's loop selection around it.

use std::f64::consts::PI;

use kiln_ir::ops::Domain;
use kiln_ir::promote::Casting;
use kiln_ir::{Attrs, DType, IrError, OpKind, WeakScalar};

use crate::elementwise::{binary, float_for, prepare, scalar_literal, Operand};
use crate::error::Result;
use crate::inplace::ufunc_into;
use crate::Array;

/// The error of a ufunc with no loop for `dtypes` (NumPy's `TypeError`).
fn no_loop(op: &str, dtypes: Vec<DType>, accepted: &str) -> crate::Error {
    IrError::UnsupportedDType { op: op.to_string(), dtypes, accepted: accepted.to_string() }.into()
}

/// The dtype a float-only ufunc computes `d` in (NumPy's loop selection): a float itself, a
/// bool or integer the smallest float holding it (int8 → float16, int16 → float32, wider →
/// float64). Errors: complex (no loop).
fn float_loop(op: &str, d: DType) -> Result<DType> {
    if d.is_complex() {
        return Err(no_loop(op, vec![d], &Domain(1 | 2 | 4 | 8).describe()));
    }
    Ok(if d.is_float() { d } else { float_for(d) })
}

/// NumPy's `power_of_ten` (`PyArray_Round`): exact up to 10^8, then repeated multiplication by
/// 10 from 1e9 (which is what `np.round` scales by, not the nearest double to 10^n).
fn power_of_ten(n: u32) -> f64 {
    const P10: [f64; 9] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];
    if n < 9 {
        return P10[n as usize];
    }
    let mut r = 1e9f64;
    for _ in 9..n {
        r *= 10.0;
        if r.is_infinite() {
            break;
        }
    }
    r
}

/// Cephes' Chebyshev coefficients of exp(-x) I0(x) on [0, 8] (NumPy's `_i0A`).
const I0_A: [f64; 30] = [
    -4.4153416464793395e-18,
    3.3307945188222384e-17,
    -2.431279846547955e-16,
    1.715391285555133e-15,
    -1.1685332877993451e-14,
    7.676185498604936e-14,
    -4.856446783111929e-13,
    2.95505266312964e-12,
    -1.726826291441556e-11,
    9.675809035373237e-11,
    -5.189795601635263e-10,
    2.6598237246823866e-09,
    -1.300025009986248e-08,
    6.046995022541919e-08,
    -2.670793853940612e-07,
    1.1173875391201037e-06,
    -4.4167383584587505e-06,
    1.6448448070728896e-05,
    -5.754195010082104e-05,
    0.00018850288509584165,
    -0.0005763755745385824,
    0.0016394756169413357,
    -0.004324309995050576,
    0.010546460394594998,
    -0.02373741480589947,
    0.04930528423967071,
    -0.09490109704804764,
    0.17162090152220877,
    -0.3046826723431984,
    0.6767952744094761,
];

/// Cephes' Chebyshev coefficients of exp(-x) sqrt(x) I0(x) in 8/x on (8, inf) (NumPy's
/// `_i0B`).
const I0_B: [f64; 25] = [
    -7.233180487874754e-18,
    -4.830504485944182e-18,
    4.46562142029676e-17,
    3.461222867697461e-17,
    -2.8276239805165836e-16,
    -3.425485619677219e-16,
    1.7725601330565263e-15,
    3.8116806693526224e-15,
    -9.554846698828307e-15,
    -4.150569347287222e-14,
    1.54008621752141e-14,
    3.8527783827421426e-13,
    7.180124451383666e-13,
    -1.7941785315068062e-12,
    -1.3215811840447713e-11,
    -3.1499165279632416e-11,
    1.1889147107846439e-11,
    4.94060238822497e-10,
    3.3962320257083865e-09,
    2.266668990498178e-08,
    2.0489185894690638e-07,
    2.8913705208347567e-06,
    6.889758346916825e-05,
    0.0033691164782556943,
    0.8044904110141088,
];

/// NumPy's `_chbevl(x, vals)` (Clenshaw's recurrence), operand for operand: its first steps
/// combine `x` with Python floats, which are weak scalars (the result keeps `x`'s dtype).
fn chbevl(x: &Array, vals: &[f64]) -> Result<Array> {
    let mut b0 = Operand::from(vals[0]);
    let mut b1 = Operand::from(0.0);
    let mut b2 = Operand::from(0.0);
    for &v in &vals[1..] {
        b2 = b1;
        b1 = b0;
        b0 = Operand::Array(x.try_multiply(b1.clone())?.try_subtract(b2.clone())?.try_add(v)?);
    }
    binary(OpKind::Sub, b0, b2)?.try_multiply(0.5)
}

impl Array {
    /// `x * c` in a float dtype as NumPy's `deg2rad`/`rad2deg` loops compute it: float64 with
    /// the double constant, float32 with the float one (`c32`, NumPy's `NPY_PIf`-based
    /// constant), float16 (and bfloat16) in float32, rounded back.
    fn angle_scaled(&self, op: &str, c: f64, c32: f32) -> Result<Array> {
        let d = float_loop(op, self.dtype())?;
        let x = self.cast_to(d);
        match d {
            DType::Float64 => x.try_multiply(c),
            DType::Float32 => x.try_multiply(c32),
            _ => Ok(x.cast_to(DType::Float32).try_multiply(c32)?.cast_to(d)),
        }
    }

    /// `np.deg2rad(x)` (`np.radians`): `x * (π/180)` with NumPy's constant of the dtype
    /// (float16 computes in float32, rounded once), bit for bit NumPy's. Integers and bools
    /// compute in float (int8 → float16, int16 → float32, wider → float64).
    ///
    /// Errors: complex (no loop).
    pub fn try_deg2rad(&self) -> Result<Array> {
        self.angle_scaled("deg2rad", PI / 180.0, std::f32::consts::PI / 180.0)
    }

    /// `np.deg2rad(x)`. Panics where [`Array::try_deg2rad`] errs.
    #[track_caller]
    pub fn deg2rad(&self) -> Array {
        crate::unwrap(self.try_deg2rad())
    }

    /// `np.rad2deg(x)` (`np.degrees`): `x * (180/π)`, as [`Array::try_deg2rad`].
    pub fn try_rad2deg(&self) -> Result<Array> {
        self.angle_scaled("rad2deg", 180.0 / PI, 180.0 / std::f32::consts::PI)
    }

    /// `np.rad2deg(x)`. Panics where [`Array::try_rad2deg`] errs.
    #[track_caller]
    pub fn rad2deg(&self) -> Array {
        crate::unwrap(self.try_rad2deg())
    }

    /// `np.round(x, decimals)` (`np.around`, `ndarray.round`): round half to even at `decimals`
    /// digits (negative: to tens, hundreds, ...), NumPy's `PyArray_Round` step for step:
    /// `decimals == 0` is `rint` (a bool becomes float16, as `np.rint`); otherwise x times (or,
    /// for negative `decimals`, divided by) NumPy's power of ten as a weak scalar, `rint`, then
    /// the inverse, each into x's dtype (`same_kind`). So the results are NumPy's, including
    /// its artefacts (`round(1.005, 2)` is 1.0, a power of ten that overflows the dtype gives
    /// NaN). Integers are returned unchanged for `decimals >= 0`; for negative `decimals` they
    /// round in float64 and are cast back (wrapping as NumPy's cast). Complex rounds its real
    /// and imaginary parts so, as NumPy (an `inf` part stays, where a complex product would
    /// make it NaN).
    ///
    /// Errors: bool with `decimals != 0` (NumPy's: the float64 product does not cast back to
    /// bool under `same_kind`).
    pub fn try_round(&self, decimals: i32) -> Result<Array> {
        self.rounded(decimals).map_err(|e| e.within("round"))
    }

    /// [`Array::try_round`]'s steps (their errors name the ops they are made of).
    fn rounded(&self, decimals: i32) -> Result<Array> {
        let d = self.dtype();
        if d.is_complex() {
            // NumPy rounds the parts as float arrays (no complex multiply: inf parts stay).
            let (re, im) = (self.real().try_round(decimals)?, self.imag().try_round(decimals)?);
            return Array::apply(OpKind::MakeComplex, Attrs::None, &[&re, &im]);
        }
        if decimals >= 0 && d.is_integer() {
            return Ok(self.clone());
        }
        if decimals == 0 {
            return self.try_rint();
        }
        let f = power_of_ten(decimals.unsigned_abs());
        let (op1, op2) =
            if decimals > 0 { (OpKind::Mul, OpKind::Div) } else { (OpKind::Div, OpKind::Mul) };
        let out = if d.is_integer() { DType::Float64 } else { d };
        let shape = self.shape().to_vec();
        let step = |op: OpKind, a: &Array| {
            ufunc_into(op, a.into(), f.into(), out, &shape, Casting::SameKind)
        };
        let r = step(op1, self)?.try_rint()?;
        let r = step(op2, &r)?;
        Ok(r.cast_to(d))
    }

    /// `np.round(x, decimals)`. Panics where [`Array::try_round`] errs.
    #[track_caller]
    pub fn round(&self, decimals: i32) -> Array {
        crate::unwrap(self.try_round(decimals))
    }

    /// `np.around(x, decimals)`: [`Array::try_round`].
    pub fn try_around(&self, decimals: i32) -> Result<Array> {
        self.try_round(decimals)
    }

    /// `np.around(x, decimals)`. Panics where [`Array::try_round`] errs.
    #[track_caller]
    pub fn around(&self, decimals: i32) -> Array {
        crate::unwrap(self.try_round(decimals))
    }

    /// `np.fix(x)`: rounded toward zero, NumPy 2's `np.trunc` (integers and bools unchanged).
    ///
    /// Errors: complex.
    pub fn try_fix(&self) -> Result<Array> {
        self.try_trunc().map_err(|e| e.within("fix"))
    }

    /// `np.fix(x)`. Panics where [`Array::try_fix`] errs.
    #[track_caller]
    pub fn fix(&self) -> Array {
        crate::unwrap(self.try_fix())
    }

    /// `np.ldexp(x, n)`: `x * 2**n` exactly (rounded once where the result is subnormal,
    /// ±inf past the largest value). `n` is an integer array (not uint64: NumPy has no loop)
    /// or bool, or a Rust integer (weak: within int32's range, as NumPy's `int` loop takes it);
    /// exponents beyond int32 saturate (NumPy clamps them). x's float dtype is the result's;
    /// integers and bools compute in float (int8 → float16, ...); float16 (and bfloat16)
    /// compute in float32 and round once, as NumPy's half loop.
    ///
    /// Errors: complex x; a float, complex or uint64 n; a Rust integer outside int32
    /// ([`IrError::ScalarOutOfBounds`], NumPy's `OverflowError`); shapes that do not broadcast.
    pub fn try_ldexp(&self, n: impl Into<Operand>) -> Result<Array> {
        const OP: &str = "ldexp";
        const TAKES: &str = "a bool, int, uint or float x and a bool or integer n (not uint64)";
        let n = n.into();
        let xd = self.dtype();
        let nd = match &n {
            Operand::Array(a) => a.dtype(),
            Operand::Scalar(s) => s.default_dtype(),
        };
        let n_ok = nd.is_bool() || (nd.is_integer() && nd != DType::UInt64);
        if xd.is_complex() || !n_ok {
            return Err(no_loop(OP, vec![xd, nd], TAKES));
        }
        if let Operand::Scalar(WeakScalar::Int(v)) = n {
            if i32::try_from(v).is_err() {
                return Err(IrError::ScalarOutOfBounds {
                    op: OP.to_string(),
                    value: v.to_string(),
                    dtype: DType::Int32,
                }
                .into());
            }
        }
        let d = float_loop(OP, xd)?;
        let w = if d.itemsize() == 2 { DType::Float32 } else { d };
        let x = self.cast_to(w);
        let n = match n {
            Operand::Array(a) => a.cast_to(w),
            Operand::Scalar(s) => Array::literal(w, scalar_literal(w, s)),
        };
        let shape = kiln_ir::shape::broadcast_shapes(OP, x.shape(), n.shape())?;
        let (x, n) = (x.broadcast_to_shape(&shape)?, n.broadcast_to_shape(&shape)?);
        Ok(Array::apply(OpKind::Ldexp, Attrs::None, &[&x, &n])?.cast_to(d))
    }

    /// `np.ldexp(x, n)`. Panics where [`Array::try_ldexp`] errs.
    #[track_caller]
    pub fn ldexp(&self, n: impl Into<Operand>) -> Array {
        crate::unwrap(self.try_ldexp(n))
    }

    /// `np.frexp(x)`: `(mantissa, exponent)` with `x = mantissa * 2**exponent`,
    /// `0.5 <= |mantissa| < 1` in x's float dtype, `exponent` int32; ±0, ±inf and NaN give
    /// `(x, 0)`. Integers and bools compute in float (int8 → float16, ...). Exact.
    ///
    /// Errors: complex.
    pub fn try_frexp(&self) -> Result<(Array, Array)> {
        let d = float_loop("frexp", self.dtype())?;
        let x = self.cast_to(d);
        let m = Array::apply(OpKind::FrexpMantissa, Attrs::None, &[&x])?;
        let e = Array::apply(OpKind::FrexpExponent, Attrs::None, &[&x])?.cast_to(DType::Int32);
        Ok((m, e))
    }

    /// `np.frexp(x)`. Panics where [`Array::try_frexp`] errs.
    #[track_caller]
    pub fn frexp(&self) -> (Array, Array) {
        crate::unwrap(self.try_frexp())
    }

    /// `np.signbit(x)` (bool): the sign bit, so `-0.0` and a NaN with its sign bit set are
    /// true (`copysign(1, x) < 0`; a NaN computed in the same kernel has the sign the machine
    /// gives it). Integers: `x < 0`; bools: false.
    ///
    /// Errors: complex.
    pub fn try_signbit(&self) -> Result<Array> {
        let d = float_loop("signbit", self.dtype())?;
        if !self.dtype().is_float() {
            return self.try_less(0);
        }
        crate::full(&[], 1.0, d).try_copysign(self)?.try_less(0.0)
    }

    /// `np.signbit(x)`. Panics where [`Array::try_signbit`] errs.
    #[track_caller]
    pub fn signbit(&self) -> Array {
        crate::unwrap(self.try_signbit())
    }

    /// `np.modf(x)`: `(fractional, integral)` parts, both with x's sign (`modf(-3.0)` is
    /// `(-0.0, -3.0)`, `modf(-inf)` is `(-0.0, -inf)`), exactly C's `modf`: `trunc(x)` and
    /// `x - trunc(x)` (exact) with x's sign. Integers and bools compute in float.
    ///
    /// Errors: complex.
    pub fn try_modf(&self) -> Result<(Array, Array)> {
        let d = float_loop("modf", self.dtype())?;
        let x = self.cast_to(d);
        let i = x.try_trunc()?;
        let f = crate::try_where_(x.try_isinf()?, 0.0, x.try_subtract(&i)?)?.try_copysign(&x)?;
        Ok((f, i))
    }

    /// `np.modf(x)`. Panics where [`Array::try_modf`] errs.
    #[track_caller]
    pub fn modf(&self) -> (Array, Array) {
        crate::unwrap(self.try_modf())
    }

    /// `np.angle(z, deg)`: `arctan2(imag, real)`, in degrees when `deg` (`a * (180/π)` in the
    /// result's dtype, as NumPy's `a *= 180/pi`). Complex gives its real dtype; a real x is
    /// `arctan2(0, x)` with 0 a weak integer (so int8 gives float16, bool float64).
    pub fn try_angle(&self, deg: bool) -> Result<Array> {
        let a = if self.dtype().is_complex() {
            self.imag().try_arctan2(self.real())?
        } else {
            binary(OpKind::Arctan2, Operand::from(0i64), self.into())?
        };
        if deg {
            a.try_multiply(180.0 / PI)
        } else {
            Ok(a)
        }
    }

    /// `np.angle(z, deg)`. Panics where [`Array::try_angle`] errs.
    #[track_caller]
    pub fn angle(&self, deg: bool) -> Array {
        crate::unwrap(self.try_angle(deg))
    }

    /// `np.i0(x)`: the modified Bessel function of the first kind, order 0, as NumPy's Python
    /// code computes it: `|x|`, then Cephes' Chebyshev series by Clenshaw's recurrence on
    /// [0, 8] (`exp(x) * chbevl(x/2 - 2, A)`) and beyond (`exp(x) * chbevl(32/x - 2, B) /
    /// sqrt(x)`), selected by `x <= 8` (NaN takes the second). Floats keep their dtype
    /// (float16 and float32 compute in it, as NumPy), integers and bools compute in float64.
    /// The arithmetic is NumPy's operation for operation; `exp` is within the math library's
    /// error.
    ///
    /// Errors: complex (NumPy: "i0 not supported for complex values").
    pub fn try_i0(&self) -> Result<Array> {
        let d = self.dtype();
        if d.is_complex() {
            return Err(no_loop("i0", vec![d], "bool, int, uint, float"));
        }
        let x = if d.is_float() { self.clone() } else { self.cast_to(DType::Float64) };
        let x = x.try_abs()?;
        let e = x.try_exp()?;
        let small = e.try_multiply(chbevl(&x.try_divide(2.0)?.try_subtract(2)?, &I0_A)?)?;
        let t = binary(OpKind::Div, Operand::from(32.0), (&x).into())?.try_subtract(2.0)?;
        let large = e.try_multiply(chbevl(&t, &I0_B)?)?.try_divide(x.try_sqrt()?)?;
        crate::try_where_(x.try_less_equal(8.0)?, &small, &large)
    }

    /// `np.i0(x)`. Panics where [`Array::try_i0`] errs.
    #[track_caller]
    pub fn i0(&self) -> Array {
        crate::unwrap(self.try_i0())
    }

    /// `np.sinc(x)`: `sin(πx) / (πx)`, NumPy's code: `y = π * x` (weak π: integers and bools
    /// give float64), zeros replaced by the dtype's machine epsilon (1e-20 for complex), then
    /// `sin(y) / y` (so `sinc(0)` is 1).
    pub fn try_sinc(&self) -> Result<Array> {
        let y = binary(OpKind::Mul, Operand::from(PI), self.into())?;
        let eps = match y.dtype() {
            DType::Float16 => 2f64.powi(-10),
            DType::BFloat16 => 2f64.powi(-7),
            DType::Float32 => 2f64.powi(-23),
            DType::Float64 => f64::EPSILON,
            _ => 1e-20,
        };
        let y = crate::try_where_(&y, &y, eps)?;
        y.try_sin()?.try_divide(&y)
    }

    /// `np.sinc(x)`. Panics where [`Array::try_sinc`] errs.
    #[track_caller]
    pub fn sinc(&self) -> Array {
        crate::unwrap(self.try_sinc())
    }

    /// `np.divmod(x, y)`: `(floor_divide(x, y), remainder(x, y))`, NumPy's two outputs (its
    /// loops compute them as its `floor_divide` and `remainder` do).
    ///
    /// Errors: as `floor_divide`.
    pub fn try_divmod(&self, other: impl Into<Operand>) -> Result<(Array, Array)> {
        try_divmod(self, other)
    }

    /// `np.divmod(x, y)`. Panics where [`Array::try_divmod`] errs.
    #[track_caller]
    pub fn divmod(&self, other: impl Into<Operand>) -> (Array, Array) {
        crate::unwrap(try_divmod(self, other))
    }
}

/// `np.power(x, y)` with either side an array or a Rust scalar (weak, NEP 50): `power(2.0, &a)`
/// is `2.0 ** a`; both scalars give a rank-0 array of their default dtypes.
///
/// Errors: as [`Array::try_power`].
pub fn try_power(x: impl Into<Operand>, y: impl Into<Operand>) -> Result<Array> {
    binary(OpKind::Power, x.into(), y.into())
}

/// `np.power(x, y)`. Panics where [`try_power`] errs.
#[track_caller]
pub fn power(x: impl Into<Operand>, y: impl Into<Operand>) -> Array {
    crate::unwrap(try_power(x, y))
}

/// `np.divmod(x, y)` with either side an array or a Rust scalar: `(x // y, x % y)`.
///
/// Errors: as [`Array::try_floor_divide`].
pub fn try_divmod(x: impl Into<Operand>, y: impl Into<Operand>) -> Result<(Array, Array)> {
    let (x, y) = (x.into(), y.into());
    let pair = || -> Result<(Array, Array)> {
        Ok((binary(OpKind::FloorDiv, x.clone(), y.clone())?, binary(OpKind::Remainder, x, y)?))
    };
    pair().map_err(|e| e.within("divmod"))
}

/// `np.divmod(x, y)`. Panics where [`try_divmod`] errs.
#[track_caller]
pub fn divmod(x: impl Into<Operand>, y: impl Into<Operand>) -> (Array, Array) {
    crate::unwrap(try_divmod(x, y))
}

/// `np.gcd` and `np.lcm`: NumPy's promotion of the operands (NEP 50 for scalars), then the
/// integer loop; a bool result dtype (NumPy has no bool loop) or a float one (floats,
/// `int64` with `uint64`) is NumPy's `TypeError`.
fn gcd_lcm(op: OpKind, x: Operand, y: Operand) -> Result<Array> {
    let dtypes: Vec<DType> = [&x, &y]
        .iter()
        .map(|o| match o {
            Operand::Array(a) => a.dtype(),
            Operand::Scalar(s) => s.default_dtype(),
        })
        .collect();
    let all_bool = dtypes.iter().all(|d| d.is_bool());
    let args = prepare(op, &[x, y])?;
    if all_bool || !args[0].dtype().is_integer() {
        return Err(no_loop(op.name(), dtypes, "integers (int8 .. int64, uint8 .. uint64)"));
    }
    Array::apply(op, Attrs::None, &[&args[0], &args[1]])
}

/// `np.gcd(x, y)`: the greatest common divisor of `|x|` and `|y|`, elementwise (broadcast),
/// non-negative; `gcd(0, 0) = 0`. Either side an array or a Rust integer (a weak scalar). The
/// result dtype is NumPy's promotion of the two (`int8` with `uint8`: `int16`). As NumPy, the
/// absolute value of a signed minimum wraps to itself: `gcd(int8(-128), 0) = -128`.
///
/// Errors: a bool result dtype, floats or complex (NumPy's `TypeError`: no loop), `int64` with
/// `uint64` (they promote to float64), shapes that do not broadcast, an integer scalar out of the
/// array dtype's range.
pub fn try_gcd(x: impl Into<Operand>, y: impl Into<Operand>) -> Result<Array> {
    gcd_lcm(OpKind::Gcd, x.into(), y.into())
}

/// `np.gcd(x, y)`. Panics where [`try_gcd`] errs.
#[track_caller]
pub fn gcd(x: impl Into<Operand>, y: impl Into<Operand>) -> Array {
    crate::unwrap(try_gcd(x, y))
}

/// `np.lcm(x, y)`: the least common multiple of `|x|` and `|y|`, elementwise (broadcast),
/// `|x| / gcd(x, y) * |y|` wrapping to the dtype as NumPy's (`lcm(int8(100), 3) = 44`); 0 where
/// either is 0. Dtypes as [`gcd`].
///
/// Errors: as [`try_gcd`].
pub fn try_lcm(x: impl Into<Operand>, y: impl Into<Operand>) -> Result<Array> {
    gcd_lcm(OpKind::Lcm, x.into(), y.into())
}

/// `np.lcm(x, y)`. Panics where [`try_lcm`] errs.
#[track_caller]
pub fn lcm(x: impl Into<Operand>, y: impl Into<Operand>) -> Array {
    crate::unwrap(try_lcm(x, y))
}
