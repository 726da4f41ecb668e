//! `kiln::random`: random arrays, NumPy's `Generator` API (CuPy's `cupy.random`).
//!
//! `random`, `uniform`, `standard_normal`, `normal` and `integers` are **lazy**: an array whose elements
//! are computed from their positions by Philox4x32-10 (cuRAND's and torch's generator, the
//! `philox` op) in the kernel that reads them, so `x * (rng.random(shape, dt) >= p)` is one
//! kernel (see the `philox` module for how each distribution is made). A seed gives the same
//! numbers on every run, machine and backend (uniforms bit for bit; normals up to the last
//! bits of the math library's `log`, and in float64 `cos` and `sin`), with the same kiln
//! version; the numbers are **not** NumPy's for the same seed (NumPy has its own bit generator
//! and samplers).
//!
//! `integers` is lazy likewise. A generator's Philox key is the first word of PCG64 (`rand_pcg`)
//! seeded with the seed.
//!
//! `exponential`, `gamma`, `beta`, `poisson` and `binomial` are lazy too: the rejection
//! samplers (Marsaglia–Tsang, Hörmann's PTRS and BTRS) run a fixed number of rounds from fresh
//! draws, chosen so that no round accepting has probability below 10⁻¹⁵ (see
//! [`Generator::try_gamma`]'s, [`Generator::try_poisson`]'s and [`Generator::try_binomial`]'s
//! docs); gamma and beta compute in float64 whatever the dtype. `permutation`, `shuffle` and
//! `choice` without replacement sort random keys (`argsort`).
//!
//! Module functions draw from one global generator, seeded from the operating system until
//! [`seed`] is called; a [`Generator`] is an independent stream (`np.random.default_rng(seed)`).
//!
//! Dtypes: float32 or float64 for the float distributions (float32 draws are made in float32),
//! any integer dtype for [`integers`]. Errors: another dtype ([`IrError::UnsupportedDType`]);
//! bounds out of the dtype's range, `high <= low`, a negative or NaN scale ([`crate::Error::Value`]).

use std::sync::{Mutex, OnceLock};

use kiln_ir::{DType, IrError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::array::Array;
use crate::error::{value_err, Result};

pub use crate::distributions::{choice, permutation, try_choice, try_permutation, Population};

/// An independent stream of random numbers (`np.random.Generator`).
#[derive(Clone, Debug)]
pub struct Generator {
    /// The draws' Philox key and next counter.
    pub(crate) stream: crate::philox::Stream,
}

/// `np.random.default_rng(seed)`: a generator from a seed, or from the operating system's
/// entropy for `None`.
pub fn default_rng(seed: Option<u64>) -> Generator {
    match seed {
        Some(s) => Generator::new(s),
        None => Generator::from_pcg(Pcg64::from_rng(&mut rand::rng())),
    }
}

fn float_dtype(op: &str, dtype: DType) -> Result<()> {
    if matches!(dtype, DType::Float32 | DType::Float64) {
        Ok(())
    } else {
        Err(IrError::UnsupportedDType {
            op: op.into(),
            dtypes: vec![dtype],
            accepted: "float32, float64".into(),
        }
        .into())
    }
}

impl Generator {
    /// A generator seeded with `seed`: the same seed gives the same numbers.
    pub fn new(seed: u64) -> Generator {
        Generator::from_pcg(Pcg64::seed_from_u64(seed))
    }

    /// A generator whose Philox key is the first word of `rng`'s stream.
    fn from_pcg(mut rng: Pcg64) -> Generator {
        let key = rng.next_u64();
        Generator { stream: crate::philox::Stream { key, offset: 0 } }
    }

    /// `rng.random(size, dtype)`: uniform floats in [0, 1).
    pub fn try_random(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        float_dtype("random", dtype)?;
        check_draws("random", shape)?;
        self.stream.uniform(shape, dtype)
    }

    /// `rng.uniform(low, high, size)`: `low + (high - low) * u` for `u` uniform in [0, 1); as in
    /// NumPy, rounding may give `high` itself, and `high < low` draws from (high, low].
    /// Errors: a non-finite bound.
    pub fn try_uniform(
        &mut self,
        low: f64,
        high: f64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        if !(low.is_finite() && high.is_finite()) {
            return Err(value_err(
                "uniform",
                format!("low and high must be finite, got {low} and {high}"),
            ));
        }
        float_dtype("uniform", dtype)?;
        check_draws("uniform", shape)?;
        let u = self.stream.uniform(shape, dtype)?;
        Ok(if dtype == DType::Float64 {
            u * (high - low) + low
        } else {
            u * ((high - low) as f32) + low as f32
        })
    }

    /// `rng.standard_normal(size, dtype)`: normal with mean 0 and standard deviation 1.
    pub fn try_standard_normal(&mut self, shape: &[usize], dtype: DType) -> Result<Array> {
        float_dtype("standard_normal", dtype)?;
        check_draws("standard_normal", shape)?;
        self.stream.standard_normal(shape, dtype)
    }

    /// `rng.normal(loc, scale, size)`: `loc + scale * z`, `z` standard normal. Errors: a negative
    /// or NaN `scale` (NumPy's "scale < 0").
    pub fn try_normal(
        &mut self,
        loc: f64,
        scale: f64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        if scale.is_nan() || scale < 0.0 {
            return Err(value_err("normal", format!("scale < 0 (got {scale})")));
        }
        float_dtype("normal", dtype)?;
        check_draws("normal", shape)?;
        let z = self.stream.standard_normal(shape, dtype)?;
        Ok(if dtype == DType::Float64 { z * scale + loc } else { z * (scale as f32) + loc as f32 })
    }

    /// `rng.integers(low, high, size, dtype)`: integers uniform in [low, high) (`endpoint=False`).
    /// Errors: `high <= low`, a bound outside the dtype's range, a dtype that is not an integer.
    pub fn try_integers(
        &mut self,
        low: i64,
        high: i64,
        shape: &[usize],
        dtype: DType,
    ) -> Result<Array> {
        let Some((lo, hi)) = dtype.int_range().filter(|_| dtype.is_integer()) else {
            return Err(IrError::UnsupportedDType {
                op: "integers".into(),
                dtypes: vec![dtype],
                accepted: "int, uint".into(),
            }
            .into());
        };
        if (low as i128) < lo {
            return Err(value_err("integers", format!("low is out of bounds for {dtype}")));
        }
        if (high as i128) - 1 > hi {
            return Err(value_err("integers", format!("high is out of bounds for {dtype}")));
        }
        if high <= low {
            return Err(value_err("integers", "low >= high"));
        }
        check_draws("integers", shape)?;
        self.stream.integers(low, high, shape, dtype)
    }
}

/// Errs where `op`'s draws of `shape` cannot exist: a draw computes in 64-bit words, so a
/// shape whose count of them overflows (NumPy's "array is too big") is refused here, before
/// any node is made.
fn check_draws(op: &str, shape: &[usize]) -> Result<()> {
    Ok(kiln_ir::shape::check_size(op, shape, 8)?)
}

/// The panicking forms of the generator's methods.
impl Generator {
    /// [`Generator::try_random`], panicking on error.
    #[track_caller]
    pub fn random(&mut self, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_random(shape, dtype))
    }
    /// [`Generator::try_uniform`], panicking on error.
    #[track_caller]
    pub fn uniform(&mut self, low: f64, high: f64, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_uniform(low, high, shape, dtype))
    }
    /// [`Generator::try_standard_normal`], panicking on error.
    #[track_caller]
    pub fn standard_normal(&mut self, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_standard_normal(shape, dtype))
    }
    /// [`Generator::try_normal`], panicking on error.
    #[track_caller]
    pub fn normal(&mut self, loc: f64, scale: f64, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_normal(loc, scale, shape, dtype))
    }
    /// [`Generator::try_integers`], panicking on error.
    #[track_caller]
    pub fn integers(&mut self, low: i64, high: i64, shape: &[usize], dtype: DType) -> Array {
        crate::unwrap(self.try_integers(low, high, shape, dtype))
    }
}

fn global() -> &'static Mutex<Generator> {
    static GLOBAL: OnceLock<Mutex<Generator>> = OnceLock::new();
    GLOBAL.get_or_init(|| Mutex::new(default_rng(None)))
}

pub(crate) fn with_global<T>(f: impl FnOnce(&mut Generator) -> T) -> T {
    // A panic while drawing cannot leave the generator half-updated in a harmful way: keep going.
    let mut g = global().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(&mut g)
}

/// `np.random.seed(s)` / `cupy.random.seed(s)`: restarts the global generator from `s`.
pub fn seed(s: u64) {
    with_global(|g| *g = Generator::new(s));
}

macro_rules! global_fns {
    ($($(#[$doc:meta])* $name:ident, $try_name:ident ($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        pub fn $try_name($($arg: $ty),*) -> Result<Array> {
            with_global(|g| g.$try_name($($arg),*))
        }

        #[doc = concat!("[`", stringify!($try_name), "`], panicking on error.")]
        #[track_caller]
        pub fn $name($($arg: $ty),*) -> Array {
            crate::unwrap($try_name($($arg),*))
        }
    )*};
}

global_fns! {
    /// Uniform floats in [0, 1) from the global generator ([`Generator::try_random`]).
    random, try_random(shape: &[usize], dtype: DType);
    /// `low + (high - low) * u` from the global generator ([`Generator::try_uniform`]).
    uniform, try_uniform(low: f64, high: f64, shape: &[usize], dtype: DType);
    /// Standard normal floats from the global generator ([`Generator::try_standard_normal`]).
    standard_normal, try_standard_normal(shape: &[usize], dtype: DType);
    /// Normal floats of mean `loc` and deviation `scale` ([`Generator::try_normal`]).
    normal, try_normal(loc: f64, scale: f64, shape: &[usize], dtype: DType);
    /// Integers in [low, high) from the global generator ([`Generator::try_integers`]).
    integers, try_integers(low: i64, high: i64, shape: &[usize], dtype: DType);
    /// Exponential floats of mean `scale` ([`Generator::try_exponential`]).
    exponential, try_exponential(scale: f64, size: &[usize], dtype: DType);
    /// Gamma floats ([`Generator::try_gamma`]).
    gamma, try_gamma(shape_k: f64, scale: f64, size: &[usize], dtype: DType);
    /// Beta floats ([`Generator::try_beta`]).
    beta, try_beta(a: f64, b: f64, size: &[usize], dtype: DType);
    /// Poisson counts ([`Generator::try_poisson`]).
    poisson, try_poisson(lam: f64, size: &[usize]);
    /// Binomial counts ([`Generator::try_binomial`]).
    binomial, try_binomial(n: i64, p: f64, size: &[usize]);
    /// A shuffled copy of an array along axis 0 ([`Generator::try_shuffle`]).
    shuffle, try_shuffle(x: &Array);
}
