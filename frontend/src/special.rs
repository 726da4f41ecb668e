//! `kiln::special`: the `scipy.special` functions CuPy users reach for most
//! (`cupyx.scipy.special`), each one row of the op table: [`erfc`], [`erfinv`], [`gammaln`],
//! [`digamma`] (and its other name [`psi`]); also methods of [`Array`] (`a.erfc()`, ...).
//!
//! Elementwise, any shape; the result has the input's shape. Loop selection is SciPy 1.17's
//! (its ufuncs' loop lists: an exact loop, else the first the input casts to safely): float32
//! and float64 stay; for `erfc`, `gammaln`, `digamma` (loops `d->d`, `f->f`) everything else
//! computes in float64 (float16 and `int8` too); for `erfinv` (loops `f->f`, `d->d`) bool,
//! int8, uint8, int16, uint16 and float16 compute in float32, wider integers in float64.
//! bfloat16, which SciPy does not know, is taken as float16. Complex inputs are a typed error
//! (SciPy's complex `erfc` and `psi` loops are not implemented here).
//!
//! SciPy's float64 `erfc` (Cephes) loses up to about x²/2 ulps in its tail (it takes `exp` of
//! the rounded -x²; 91 ulps at x = 22.1 against mpmath); kiln's is glibc's/musl's there, within
//! 1 ulp, and 0 from x = 26.64 on as SciPy's.
//!
//! Special values are SciPy's:
//!
//! | function | SciPy | values |
//! |---|---|---|
//! | [`erfc`] | `scipy.special.erfc` | 2 at -inf, 0 at inf, NaN at NaN |
//! | [`erfinv`] | `scipy.special.erfinv` | ±inf at ±1, NaN for \|x\| > 1, +0 at ±0 |
//! | [`gammaln`] | `scipy.special.gammaln` | log\|Γ(x)\|; inf at 0, -1, -2, ... and at ±inf |
//! | [`digamma`] | `scipy.special.digamma` | -inf at +0, inf at -0, NaN at -1, -2, ... and -inf, inf at inf |
//!
//! Accuracy: the reference evaluator (`kiln_ir::eval::special`) is within 3 ulps of SciPy
//! (`erfinv`; digamma near its negative root -0.504: within 2 ulps of the exact value where
//! SciPy's series is 11 away); the host kernels follow the bounds of the suite's ulp table.

use kiln_ir::ops::Domain;
use kiln_ir::{Attrs, DType, IrError, OpKind};

use crate::error::Result;
use crate::Array;

/// The dtype SciPy's loop selection computes `op` of a `d` input in (see the module docs).
/// Errors: complex (no loop).
fn loop_dtype(op: OpKind, d: DType) -> Result<DType> {
    if d.is_complex() {
        return Err(IrError::UnsupportedDType {
            op: op.name().to_string(),
            dtypes: vec![d],
            accepted: Domain(1 | 2 | 4 | 8).describe(),
        }
        .into());
    }
    // An exact loop, else the first the input casts to safely: erfinv's list is f->f, d->d,
    // the others' d->d, f->f.
    let to_f32 = matches!(
        d,
        DType::Bool
            | DType::Int8
            | DType::UInt8
            | DType::Int16
            | DType::UInt16
            | DType::Float16
            | DType::BFloat16
    );
    Ok(match d {
        DType::Float32 | DType::Float64 => d,
        _ if op == OpKind::Erfinv && to_f32 => DType::Float32,
        _ => DType::Float64,
    })
}

fn apply(op: OpKind, x: &Array) -> Result<Array> {
    let d = loop_dtype(op, x.dtype())?;
    Array::apply(op, Attrs::None, &[&x.cast_to(d)])
}

macro_rules! special_functions {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident => $op:ident;)*) => {
        impl Array {$(
            $(#[$doc])*
            ///
            /// Errors: a complex array (no loop).
            pub fn $try_name(&self) -> Result<Array> {
                apply(OpKind::$op, self)
            }
            $(#[$doc])*
            ///
            /// Panics where the `try_` form errs.
            #[track_caller]
            pub fn $name(&self) -> Array {
                crate::unwrap(self.$try_name())
            }
        )*}
        $(
            $(#[$doc])*
            ///
            /// Errors: a complex array (no loop).
            pub fn $try_name(x: &Array) -> Result<Array> {
                x.$try_name()
            }
            $(#[$doc])*
            ///
            /// Panics where the `try_` form errs.
            #[track_caller]
            pub fn $name(x: &Array) -> Array {
                x.$name()
            }
        )*
    };
}

special_functions! {
    /// `scipy.special.erfc(x)`: `1 - erf(x)` without cancellation (2 at -inf, 0 at inf).
    /// Bools and integers compute in float64, float16/bfloat16 in float64.
    erfc, try_erfc => Erfc;
    /// `scipy.special.erfinv(x)`: `y` with `erf(y) = x` for -1 <= x <= 1; ±inf at ±1, NaN beyond.
    /// Bools, 8- and 16-bit integers and float16/bfloat16 compute in float32, wider integers in
    /// float64.
    erfinv, try_erfinv => Erfinv;
    /// `scipy.special.gammaln(x)`: `log|Γ(x)|`; inf at the poles 0, -1, -2, ... and at ±inf.
    /// Bools and integers compute in float64, float16/bfloat16 in float64.
    gammaln, try_gammaln => Gammaln;
    /// `scipy.special.digamma(x)` (`psi`): `Γ'(x)/Γ(x)`; -inf at +0, inf at -0, NaN at the
    /// negative integers and -inf. Bools and integers compute in float64, float16/bfloat16 in
    /// float64.
    digamma, try_digamma => Digamma;
}

/// `scipy.special.psi(x)`, SciPy's other name of [`digamma`].
///
/// Errors: as [`try_digamma`].
pub fn try_psi(x: &Array) -> Result<Array> {
    x.try_digamma()
}

/// `scipy.special.psi(x)`. Panics where [`try_psi`] errs.
#[track_caller]
pub fn psi(x: &Array) -> Array {
    x.digamma()
}
